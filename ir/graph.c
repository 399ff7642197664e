// graph.c: the graph IR's tables (dtypes, ops), shape and placement helpers,
// and the text dump printed by --dump-after=check.  Part of ir/.
#include "ir.h"

#include <string.h>

const char *const ir_dtype_names[DT_COUNT] = {
#define X(e, name, size) name,
    IR_DTYPES(X)
#undef X
};

const int ir_dtype_bytes[DT_COUNT] = {
#define X(e, name, size) size,
    IR_DTYPES(X)
#undef X
};

const OpInfo ir_op_info[OP_COUNT] = {
#define X(e, name, arity, kws) {name, arity, kws},
    IR_OPS(X)
#undef X
};

const char *const ir_algo_names[ALGO_COUNT] = {
#define X(e, name) name,
    IR_ALGOS(X)
#undef X
};

bool ir_algo_lookup(const char *name, AlgoKind *out) {
  for (int i = 0; i < ALGO_COUNT; i++)
    if (!strcmp(name, ir_algo_names[i])) {
      *out = (AlgoKind)i;
      return true;
    }
  return false;
}

bool ir_dtype_lookup(const char *name, DType *out) {
  for (int i = 0; i < DT_COUNT; i++)
    if (!strcmp(name, ir_dtype_names[i])) {
      *out = (DType)i;
      return true;
    }
  return false;
}

bool ir_op_is_collective(OpKind k) { return k == OP_ALLREDUCE || k == OP_REDUCE_SCATTER || k == OP_ALL_GATHER; }

bool ir_op_lookup(const char *name, OpKind *out) {
  for (int i = 0; i < OP_COUNT; i++)
    if (!strcmp(name, ir_op_info[i].name)) {
      *out = (OpKind)i;
      return true;
    }
  return false;
}

int64_t ir_shape_elems(const Shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) n *= s->dim[i];
  return n;
}

bool ir_shape_fits(const Shape *s, int elem_bytes, int64_t limit) {
  int64_t bytes = elem_bytes;
  for (int i = 0; i < s->rank; i++) {
    if (s->dim[i] < 1 || s->dim[i] > limit / bytes) return false;
    bytes *= s->dim[i];
  }
  return bytes <= limit;
}

int64_t ir_tensor_bytes(const Tensor *t) {
  return ir_shape_elems(&t->shape) * ir_dtype_bytes[t->dtype];
}

bool ir_shape_equal(const Shape *a, const Shape *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dim[i] != b->dim[i]) return false;
  return true;
}

void ir_format_index(char *dst, size_t n, const int64_t *v, int rank) {
  size_t at = (size_t)snprintf(dst, n, "[");
  for (int i = 0; i < rank && at < n; i++)
    at += (size_t)snprintf(dst + at, n - at, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (at < n) snprintf(dst + at, n - at, "]");
}

void ir_format_type(char *dst, size_t n, DType dt, const Shape *s) {
  size_t at = (size_t)snprintf(dst, n, "%s", ir_dtype_names[dt]);
  if (at < n) ir_format_index(dst + at, n - at, s->dim, s->rank);
}

const char *ir_place_str(Arena *a, const Placement *p) {
  switch (p->kind) {
  case PLACE_AUTO: return "auto";
  case PLACE_DEVICE: return arena_printf(a, "device(%d)", p->index);
  case PLACE_STAGE: return arena_printf(a, "stage(%d)", p->index);
  case PLACE_EACH: break;
  }
  Buf b = {0};
  buf_printf(&b, "each");
  for (int i = 0; i < p->nexcept; i++)
    buf_printf(&b, "%sdevice(%d)", i ? ", " : " except ", p->except[i]);
  const char *str = arena_strdup(a, b.data);
  buf_free(&b);
  return str;
}

bool ir_place_by_partitioner(const Tensor *t) {
  PlaceKind k = t->place.kind;
  return k == PLACE_AUTO || k == PLACE_STAGE || (k == PLACE_DEVICE && !t->place_written);
}

bool ir_place_equal(const Placement *a, const Placement *b) {
  if (a->kind != b->kind) return false;
  if (a->kind == PLACE_DEVICE || a->kind == PLACE_STAGE) return a->index == b->index;
  if (a->nexcept != b->nexcept) return false;
  for (int i = 0; i < a->nexcept; i++)
    if (a->except[i] != b->except[i]) return false;
  return true;
}

// reshape's shape keyword as the DSL spells it: ", shape=[4, 256]".
static void dump_shape_keyword(const Shape *s, FILE *out) {
  fprintf(out, ", shape=[");
  for (int i = 0; i < s->rank; i++) fprintf(out, "%s%lld", i ? ", " : "", (long long)s->dim[i]);
  fprintf(out, "]");
}

// "; own, panel 3, block 1": the part of a cholesky a piece computes
// (passes/split_cholesky.c).
static void dump_chol_piece(const CholPiece *pc, FILE *out) {
  static const char *const roles[] = {[CHOL_WHOLE] = "whole", [CHOL_INIT] = "init", [CHOL_OWN] = "own",
                                      [CHOL_ROWS] = "rows", [CHOL_ROWS_BEFORE] = "rows before",
                                      [CHOL_PANEL] = "update", [CHOL_OUT] = "out"};
  fprintf(out, "; %s", roles[pc->role]);
  if (pc->role != CHOL_INIT && pc->role != CHOL_OUT) fprintf(out, ", panel %lld", (long long)pc->panel);
  fprintf(out, ", block %d", pc->index);
}

// "slice(x, axis=1, start=0, end=4)": operands, then every keyword the op
// takes, defaults filled in, in the order of the OpKeyword bits.
static void dump_op_call(const Op *op, FILE *out) {
  fprintf(out, "%s(", ir_op_info[op->kind].name);
  for (int i = 0; i < op->nargs; i++) fprintf(out, "%s%s", i ? ", " : "", op->args[i]->name);
  unsigned kws = ir_op_info[op->kind].keywords;
  if (kws & KW_OP) fprintf(out, ", op=%s", op->reduce == REDUCE_MAX ? "max" : "sum");
  if (kws & KW_ALGO) fprintf(out, ", algo=%s", ir_algo_names[op->algo]);
  if (kws & KW_AXIS) fprintf(out, ", axis=%d", op->axis);
  if (kws & KW_SHAPE) dump_shape_keyword(&op->shape, out);
  if (kws & KW_START) fprintf(out, ", start=%lld", (long long)op->start);
  if (kws & KW_END) fprintf(out, ", end=%lld", (long long)op->end);
  if (op->kind == OP_CHOLESKY && op->chol.role != CHOL_WHOLE) dump_chol_piece(&op->chol, out);
  fprintf(out, ")");
}

// ", shard [0, 3072] of w": where a partitioner's piece sits in its tensor.
static void dump_shard(const Tensor *t, FILE *out) {
  fprintf(out, ", shard [");
  for (int i = 0; i < t->shape.rank; i++) fprintf(out, "%s%lld", i ? ", " : "", (long long)t->shard_start[i]);
  fprintf(out, "] of %s", t->shard_of->name);
}

// One tensor per line, in definition order, every name resolved, every
// repeat unrolled, every type and placement explicit:
//   param w1.0 : f16[1024, 4096] @ device(0);      // 8.0 MiB
//   h.0 : f16[8, 4096] = matmul(x, w1.0) @ device(0);
void ir_graph_dump(const Graph *g, FILE *out) {
  Arena scratch = {0};
  fprintf(out, "graph %s {  // %d tensors, %d ops\n", g->name, g->tensors.len, g->ops.len);
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *t = g->tensors.data[i];
    char type[IR_TYPE_STR_MAX], size[32];
    ir_format_type(type, sizeof type, t->dtype, &t->shape);
    const char *place = ir_place_str(&scratch, &t->place);
    str_human_bytes(size, sizeof size, (double)ir_tensor_bytes(t));
    if (t->kind == TENSOR_VALUE) {
      fprintf(out, "  %s : %s = ", t->name, type);
      dump_op_call(t->def, out);
    } else {
      fprintf(out, "  %s %s : %s", t->kind == TENSOR_INPUT ? "input" : "param", t->name, type);
    }
    fprintf(out, " @ %s;  // %s", place, size);
    if (t->def && t->def->pad_rows)
      fprintf(out, ", %lld pad row%s", (long long)t->def->pad_rows, t->def->pad_rows == 1 ? "" : "s");
    if (t->def && t->def->pad_elems)
      fprintf(out, ", %lld zero element%s after the operand's", (long long)t->def->pad_elems,
              t->def->pad_elems == 1 ? "" : "s");
    if (t->shard_of) dump_shard(t, out);
    fprintf(out, ", line %d\n", t->loc.line);
  }
  for (int i = 0; i < g->outputs.len; i++) fprintf(out, "  output %s;\n", g->outputs.data[i]->name);
  fprintf(out, "}\n");
  arena_free(&scratch);
}
