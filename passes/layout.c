// layout.c: where each tensor's elements sit in its device's vectors.  Part
// of passes/: the dag pass sizes transfers with it, the scheduler and code
// generation address rows with it, and the manifest records it for tsp-emu.
//
// Row-padded is the default: every row of the last dimension starts on a
// vector, so the matrix unit takes an activation row as one vector (seed 002
// s5.2: [1 x K] x [K x 320] sub-operations) and the vector unit walks rows.
// The collectives cut their buffers by elements (passes/lower.c), so what
// they touch is packed; a copy or a same-shape element-wise op joins its
// operands and result into one layout, so packed spreads along them.  Rows
// that are whole vectors make the two layouts the same bytes.
#include "passes.h"

#include <stdlib.h>

// Ops whose result and operands must share a layout: they work on the
// tensor as one flat run of vectors.
static bool joins_layout(const Op *op) {
  if (op->kind == OP_COPY) return true;
  switch (op->kind) {
  case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
    return ir_shape_equal(&op->args[0]->shape, &op->args[1]->shape);
  case OP_RELU: case OP_GELU: case OP_EXP: case OP_RSQRT: return true;
  default: return false;
  }
}

// Marks packed every tensor a collective touches, then spreads the mark
// along layout-joining ops until nothing changes.
static void find_packed(const Graph *g, bool *packed) {
  for (int i = 0; i < g->ops.len; i++) {
    const Op *op = g->ops.data[i];
    if (ir_op_is_collective(op->kind)) packed[op->args[0]->id] = packed[op->result->id] = true;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < g->ops.len; i++) {
      const Op *op = g->ops.data[i];
      if (!joins_layout(op)) continue;
      bool any = packed[op->result->id];
      for (int a = 0; a < op->nargs; a++) any |= packed[op->args[a]->id];
      if (!any) continue;
      for (int a = 0; a < op->nargs; a++) changed |= !packed[op->args[a]->id], packed[op->args[a]->id] = true;
      changed |= !packed[op->result->id];
      packed[op->result->id] = true;
    }
  }
}

static int64_t last_dim(const Tensor *t) { return t->shape.dim[t->shape.rank - 1]; }

static void compute_pitches(Compilation *c) {
  const Graph *g = c->graph;
  int vb = c->topo->link.vector_bytes;
  bool *packed = xcalloc((size_t)g->tensors.len + 1, sizeof(bool));
  find_packed(g, packed);
  c->pitch = ARENA_ARRAY(&c->arena, int64_t, g->tensors.len + 1);
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *t = g->tensors.data[i];
    int64_t per = isa_elems_per_vector(t->dtype, vb), last = last_dim(t);
    bool whole = last % per == 0;
    c->pitch[i] = whole || !packed[i] ? (last + per - 1) / per : 0;
  }
  free(packed);
}

int64_t layout_pitch(Compilation *c, const Tensor *t) {
  if (!c->pitch) compute_pitches(c);
  return c->pitch[t->id];
}

int64_t layout_rows(const Tensor *t) { return ir_shape_elems(&t->shape) / last_dim(t); }

int64_t layout_vectors(Compilation *c, const Tensor *t) {
  int64_t pitch = layout_pitch(c, t), vb = c->topo->link.vector_bytes;
  return pitch ? layout_rows(t) * pitch : (ir_tensor_bytes(t) + vb - 1) / vb;
}

uint32_t layout_manifest_pitch(Compilation *c, const Tensor *t) {
  int64_t per = isa_elems_per_vector(t->dtype, c->topo->link.vector_bytes);
  if (t->shape.rank < 2 || last_dim(t) % per == 0) return 0;
  return (uint32_t)layout_pitch(c, t);
}
