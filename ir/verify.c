// verify.c: checks the graph IR's invariants.  Part of ir/; the pass
// pipeline runs it after every pass with --verify-each (and always in the
// sanitizer build), so a pass that breaks the IR is caught where it does.
//
// Invariants: tensor and op ids are their indices; names are unique;
// every op's result is a value tensor it defines, and its operands are
// defined earlier (definition order is a topological order); operand counts
// and keywords fit the op table; shapes are within IR_MAX_RANK with
// positive dimensions; placements name existing devices; outputs are marked.
#include "ir.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int compare_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct Verifier {
  const Graph *g;
  int ndevices;
  char *err;
  size_t errlen;
} Verifier;

static bool fail(Verifier *v, const char *fmt, ...) PRINTF_LIKE(2, 3);
static bool fail(Verifier *v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->err, v->errlen, fmt, ap);
  va_end(ap);
  return false;
}

static bool place_ok(Verifier *v, const Tensor *t) {
  const Placement *p = &t->place;
  if ((p->kind == PLACE_DEVICE || p->kind == PLACE_STAGE) && (p->index < 0 || p->index >= v->ndevices))
    return fail(v, "tensor %s is placed on %d, outside %d devices", t->name, p->index, v->ndevices);
  for (int i = 0; i < p->nexcept; i++)
    if (p->except[i] < 0 || p->except[i] >= v->ndevices || (i && p->except[i] <= p->except[i - 1]))
      return fail(v, "tensor %s excludes devices out of order or range", t->name);
  return true;
}

static bool tensor_ok(Verifier *v, const Tensor *t, int index) {
  if (t->id != index) return fail(v, "tensor %s has id %d at index %d", t->name, t->id, index);
  if (t->shape.rank < 1 || t->shape.rank > IR_MAX_RANK) return fail(v, "tensor %s has rank %d", t->name, t->shape.rank);
  for (int i = 0; i < t->shape.rank; i++)
    if (t->shape.dim[i] < 1) return fail(v, "tensor %s has dimension %d = %lld", t->name, i, (long long)t->shape.dim[i]);
  if ((t->kind == TENSOR_VALUE) != (t->def != NULL))
    return fail(v, "tensor %s: only values have a defining op", t->name);
  if (t->def && t->def->result != t) return fail(v, "tensor %s is not its op's result", t->name);
  return place_ok(v, t);
}

static bool op_ok(Verifier *v, const Op *op, int index, const bool *defined) {
  const OpInfo *info = &ir_op_info[op->kind];
  if (op->id != index) return fail(v, "op %d has id %d", index, op->id);
  if (op->nargs < 0 || op->nargs > IR_MAX_OPERANDS || !(info->arity & ARITY(op->nargs)))
    return fail(v, "op %d (%s) has %d operands", index, info->name, op->nargs);
  for (int i = 0; i < op->nargs; i++)
    if (!op->args[i] || !defined[op->args[i]->id])
      return fail(v, "op %d (%s) uses operand %d before it is defined", index, info->name, i);
  if (!op->result || op->result->def != op) return fail(v, "op %d (%s) has no result", index, info->name);
  if ((info->keywords & KW_ALGO) && (op->algo < 0 || op->algo >= ALGO_COUNT))
    return fail(v, "op %d (%s) names no algorithm", index, info->name);
  return true;
}

bool ir_graph_verify(const Graph *g, int ndevices, char *err, size_t errlen) {
  Verifier v = {g, ndevices, err, errlen};
  bool *defined = xcalloc((size_t)g->tensors.len + 1, sizeof(bool));
  bool ok = true;
  Arena scratch = {0};
  VEC(const char *) seen = {0};
  for (int i = 0; i < g->tensors.len && ok; i++) {
    const Tensor *t = g->tensors.data[i];
    ok = tensor_ok(&v, t, i) && (!t->def || op_ok(&v, t->def, t->def->id, defined));
    defined[i] = true;
    VEC_PUSH(&scratch, &seen, t->name);
  }
  for (int i = 0; i < g->ops.len && ok; i++)
    if (g->ops.data[i]->id != i) ok = fail(&v, "op at index %d has id %d", i, g->ops.data[i]->id);
  for (int i = 0; i < g->outputs.len && ok; i++)
    if (!g->outputs.data[i]->is_output) ok = fail(&v, "output %s is not marked", g->outputs.data[i]->name);
  if (seen.len > 1) qsort(seen.data, (size_t)seen.len, sizeof *seen.data, compare_names);  // then neighbours differ
  for (int i = 1; i < seen.len && ok; i++)
    if (!strcmp(seen.data[i - 1], seen.data[i])) ok = fail(&v, "two tensors are named %s", seen.data[i]);
  arena_free(&scratch);
  free(defined);
  return ok;
}
