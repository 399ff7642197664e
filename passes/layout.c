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
// tensor as one flat run of vectors (a copy, a single vector-unit pass,
// gelu's chunks).
static bool joins_layout(Compilation *c, const Op *op) {
  return op->kind == OP_COPY || op->kind == OP_GELU || compute_pass_opcode(c, op) != OPC_COUNT;
}

// Marks packed every tensor a collective touches, then spreads the mark
// along layout-joining ops until nothing changes.
static void find_packed(Compilation *c, const Graph *g, bool *packed) {
  for (int i = 0; i < g->ops.len; i++) {
    const Op *op = g->ops.data[i];
    if (ir_op_is_collective(op->kind)) packed[op->args[0]->id] = packed[op->result->id] = true;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < g->ops.len; i++) {
      const Op *op = g->ops.data[i];
      if (!joins_layout(c, op)) continue;
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
  find_packed(c, g, packed);
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
  if (!c->pitch) die("layout: asked for a pitch before layout_plan");
  return c->pitch[t->id];
}

// A copy of t too big for a device's whole SRAM is refused before anything
// is scheduled for it, naming the tensor and its size.
static bool fits_sram(Compilation *c, const Tensor *t) {
  int64_t vectors = layout_vectors(c, t), vb = c->topo->link.vector_bytes;
  if (vectors <= c->topo->sram_vectors) return true;
  int device;
  ir_place_devices(&t->place, c->topo->ndevices, &device);  // the first device holding it
  char type[IR_TYPE_STR_MAX], size[32], all[32];
  ir_format_type(type, sizeof type, t->dtype, &t->shape);
  str_human_bytes(size, sizeof size, (double)vectors * (double)vb);
  str_human_bytes(all, sizeof all, (double)c->topo->sram_vectors * (double)vb);
  diag_tool_error(&c->diag, "tspc", "device %d: no room for tensor '%s' (%s): it needs %s, more than the device's %s of SRAM (sram_vectors %d)",
                  device, t->name, type, size, all, c->topo->sram_vectors);
  return false;
}

bool layout_plan(Compilation *c) {
  compute_pitches(c);
  bool ok = true;
  for (int i = 0; i < c->graph->tensors.len && ok; i++) ok = fits_sram(c, c->graph->tensors.data[i]);
  return ok;
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
