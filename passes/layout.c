// layout.c: where each tensor's elements sit in its device's vectors.  Part
// of passes/: the dag pass sizes transfers with it, the scheduler and code
// generation address rows with it, and the manifest records it for tsp-emu.
//
// Every tensor is row-padded: every row of its last dimension starts on a
// vector, so the matrix unit takes an activation row as one vector (seed
// 002 s5.2: [1 x K] x [K x 320] sub-operations) and the vector unit walks
// rows.  The collectives work on the padded bytes too: a sum or maximum of
// pad lanes lands in pad lanes, and a shard of whole rows (dim 0 split
// over the group) is whole vectors.  No instruction lets a pad lane reach a
// real element (the matrix unit uses the first K lanes, reductions and
// conversions count elements).  A rank-1 tensor is one row; rows that are
// whole vectors are the packed bytes.
#include "passes.h"

#include <stdlib.h>

static int64_t last_dim(const Tensor *t) { return t->shape.dim[t->shape.rank - 1]; }

static void compute_pitches(Compilation *c) {
  const Graph *g = c->graph;
  int vb = c->topo->link.vector_bytes;
  c->pitch = ARENA_ARRAY(&c->arena, int64_t, g->tensors.len + 1);
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *t = g->tensors.data[i];
    int64_t per = isa_elems_per_vector(t->dtype, vb);
    c->pitch[i] = (last_dim(t) + per - 1) / per;
  }
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
  int *devices = ARENA_ARRAY(&c->arena, int, c->topo->ndevices);
  ir_place_devices(&t->place, c->topo->ndevices, devices);
  int device = devices[0];  // the first device holding it
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

int64_t layout_vectors(Compilation *c, const Tensor *t) { return layout_rows(t) * layout_pitch(c, t); }

int64_t layout_bytes(Compilation *c, const Tensor *t) {
  if (!layout_manifest_pitch(c, t)) return ir_tensor_bytes(t);
  return layout_vectors(c, t) * c->topo->link.vector_bytes;
}

void layout_units(Compilation *c, const Tensor *t, int64_t *units, int64_t *unit_bytes) {
  if (layout_manifest_pitch(c, t)) {
    *units = layout_rows(t);
    *unit_bytes = layout_pitch(c, t) * c->topo->link.vector_bytes;
  } else {
    *units = ir_shape_elems(&t->shape);
    *unit_bytes = ir_dtype_bytes[t->dtype];
  }
}

uint32_t layout_manifest_pitch(Compilation *c, const Tensor *t) {
  int64_t per = isa_elems_per_vector(t->dtype, c->topo->link.vector_bytes);
  if (t->shape.rank < 2 || last_dim(t) % per == 0) return 0;
  return (uint32_t)layout_pitch(c, t);
}
