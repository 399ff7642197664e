// verify.c: checks the graph IR's invariants.  Part of ir/; the pass
// pipeline runs it after every pass with --verify-each (and always in the
// sanitizer build), so a pass that breaks the IR is caught where it does.
//
// Invariants: tensor and op ids are their indices; names are unique;
// every op's result is a value tensor it defines, and its operands are
// defined earlier (definition order is a topological order); operand counts
// and keywords fit the op table; shapes are within IR_MAX_RANK with
// positive dimensions; placements name existing devices; outputs are marked.
// The ops from mul to concat also keep their results consistent with their
// operands (docs/dsl.md): one dtype, the shape their rule makes, an axis of
// the operand, slice bounds inside it, reshape's element count.
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

// The ops from mul on: every operand has the result's dtype.
static bool same_dtype_ok(Verifier *v, const Op *op, int index) {
  for (int i = 0; i < op->nargs; i++)
    if (op->args[i]->dtype != op->result->dtype)
      return fail(v, "op %d (%s): operand %d is %s, its result %s", index, ir_op_info[op->kind].name,
                  i, ir_dtype_names[op->args[i]->dtype], ir_dtype_names[op->result->dtype]);
  return true;
}

// op->axis counts from 0 and names a dimension of a rank-`rank` operand.
static bool axis_ok(Verifier *v, const Op *op, int index, int rank) {
  if (op->axis >= 0 && op->axis < rank) return true;
  return fail(v, "op %d (%s) has axis %d for a rank-%d operand", index, ir_op_info[op->kind].name,
              op->axis, rank);
}

// mul, sub, div: the second operand has the first's shape, or is a vector
// of its last dimension.
static bool bias_ok(Verifier *v, const Op *op, int index) {
  const Shape *a = &op->args[0]->shape, *b = &op->args[1]->shape;
  if (ir_shape_equal(a, b) || (b->rank == 1 && b->dim[0] == a->dim[a->rank - 1])) return true;
  return fail(v, "op %d (%s): operand 1 is neither operand 0's shape nor a vector of its last dimension",
              index, ir_op_info[op->kind].name);
}

// reduce_sum, reduce_max: the operand without the axis; rank 1 gives [1].
static bool reduced_shape(Verifier *v, const Op *op, int index, Shape *want) {
  if (!axis_ok(v, op, index, want->rank)) return false;
  if (want->rank == 1) {
    want->dim[0] = 1;
    return true;
  }
  for (int i = op->axis; i + 1 < want->rank; i++) want->dim[i] = want->dim[i + 1];
  want->rank--;
  return true;
}

// reshape: the shape asked for holds as many elements as the operand (and
// a rank-1 reduce_scatter's rows its zero elements after them).
static bool reshaped_shape(Verifier *v, const Op *op, int index, Shape *want) {
  int64_t have = ir_shape_elems(&op->args[0]->shape);
  if (op->pad_elems < 0 || !ir_shape_fits(&op->shape, 1, IR_MAX_TENSOR_BYTES) ||
      ir_shape_elems(&op->shape) != have + op->pad_elems) {
    if (op->pad_elems)
      return fail(v, "op %d (reshape) does not keep the %lld elements of its operand and %lld zeros after them", index,
                  (long long)have, (long long)op->pad_elems);
    return fail(v, "op %d (reshape) does not keep the %lld elements of its operand", index, (long long)have);
  }
  *want = op->shape;
  return true;
}

// slice: 0 <= start < end <= the dimension along the axis, which keeps end - start.
static bool sliced_shape(Verifier *v, const Op *op, int index, Shape *want) {
  if (!axis_ok(v, op, index, want->rank)) return false;
  int64_t dim = want->dim[op->axis];
  if (op->start < 0 || op->start >= op->end || op->end > dim)
    return fail(v, "op %d (slice) keeps [%lld, %lld) of a dimension of %lld", index,
                (long long)op->start, (long long)op->end, (long long)dim);
  want->dim[op->axis] = op->end - op->start;
  return true;
}

// concat: the operands agree outside the axis; the result adds them along it.
static bool joined_shape(Verifier *v, const Op *op, int index, Shape *want) {
  if (!axis_ok(v, op, index, want->rank)) return false;
  for (int i = 1; i < op->nargs; i++) {
    Shape part = op->args[i]->shape;
    part.dim[op->axis] = want->dim[op->axis];
    if (!ir_shape_equal(&part, want))
      return fail(v, "op %d (concat): operand %d differs from operand 0 outside axis %d", index, i, op->axis);
  }
  for (int i = 1; i < op->nargs; i++) want->dim[op->axis] += op->args[i]->shape.dim[op->axis];
  return true;
}

// The result shape of an op from mul on, from its operands and keywords;
// *checked is false for the older ops (their rules live in check.c alone).
static bool derived_shape(Verifier *v, const Op *op, int index, Shape *want, bool *checked) {
  *want = op->args[0]->shape;
  *checked = true;
  switch (op->kind) {
  case OP_MUL:
  case OP_SUB:
  case OP_DIV: return bias_ok(v, op, index);
  case OP_EXP:
  case OP_RSQRT: return true;
  case OP_CHOLESKY: *checked = op->chol.role == CHOL_WHOLE; return true;  // a piece's shape is split_cholesky's
  case OP_REDUCE_SUM:
  case OP_REDUCE_MAX: return reduced_shape(v, op, index, want);
  case OP_RESHAPE: return reshaped_shape(v, op, index, want);
  case OP_SLICE: return sliced_shape(v, op, index, want);
  case OP_CONCAT: return joined_shape(v, op, index, want);
  default: *checked = false; return true;
  }
}

// The ops from mul on: the result has the dtype and shape their rule makes.
static bool result_ok(Verifier *v, const Op *op, int index) {
  Shape want;
  bool checked;
  if (!derived_shape(v, op, index, &want, &checked)) return false;
  if (!checked) return true;
  if (!same_dtype_ok(v, op, index)) return false;
  if (ir_shape_equal(&want, &op->result->shape)) return true;
  char made[IR_TYPE_STR_MAX], is[IR_TYPE_STR_MAX];
  ir_format_type(made, sizeof made, op->result->dtype, &want);
  ir_format_type(is, sizeof is, op->result->dtype, &op->result->shape);
  return fail(v, "op %d (%s): its operands make %s, its result is %s", index, ir_op_info[op->kind].name,
              made, is);
}

// The operand counts op may have: its kind's, but a cholesky piece that
// updates a block takes the rows sent as well (passes/split_cholesky.c).
static unsigned arity_of(const Op *op) {
  if (op->kind == OP_CHOLESKY && op->chol.role == CHOL_PANEL) return ARITY(2) | ARITY(3);
  return ir_op_info[op->kind].arity;
}

// One op: its id, operand count, operands defined before it, its result and
// keywords, and for the ops from mul on, its result type.
static bool op_ok(Verifier *v, const Op *op, int index, const bool *defined) {
  const OpInfo *info = &ir_op_info[op->kind];
  if (op->id != index) return fail(v, "op %d has id %d", index, op->id);
  if (op->nargs < 0 || op->nargs > IR_MAX_OPERANDS || !(arity_of(op) & ARITY(op->nargs)))
    return fail(v, "op %d (%s) has %d operands", index, info->name, op->nargs);
  for (int i = 0; i < op->nargs; i++)
    if (!op->args[i] || !defined[op->args[i]->id])
      return fail(v, "op %d (%s) uses operand %d before it is defined", index, info->name, i);
  if (!op->result || op->result->def != op) return fail(v, "op %d (%s) has no result", index, info->name);
  if ((info->keywords & KW_ALGO) && (op->algo < 0 || op->algo >= ALGO_COUNT))
    return fail(v, "op %d (%s) names no algorithm", index, info->name);
  return result_ok(v, op, index);
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
