// partition.c: places every tensor the model left unplaced.  Part of
// passes/, after check and before dag.
//
// Pipeline stages map one to one onto devices: stage(k) is device(k) (check
// has verified k names a device).  A tensor placed nowhere (@ auto, or no
// annotation) lives where its first consumer other than a copy runs, so a
// parameter used by an op on an @ each tensor is replicated on every device
// of the group and a parameter feeding a stage lives on that stage; a tensor
// nothing consumes lives on device(0).  Tensors are visited last to first,
// so every consumer is placed before its operands.
#include "passes.h"

static void place_stage(Tensor *t) {
  if (t->place.kind == PLACE_STAGE) t->place = (Placement){.kind = PLACE_DEVICE, .index = t->place.index};
}

bool pass_partition(Compilation *c) {
  Graph *g = c->graph;
  Op **first_use = ARENA_ARRAY(&c->arena, Op *, g->tensors.len);
  for (int i = 0; i < g->ops.len; i++) {
    Op *op = g->ops.data[i];
    if (op->kind == OP_COPY) continue;
    for (int a = 0; a < op->nargs; a++)
      if (!first_use[op->args[a]->id]) first_use[op->args[a]->id] = op;
  }
  for (int i = g->tensors.len - 1; i >= 0; i--) {
    Tensor *t = g->tensors.data[i];
    place_stage(t);
    if (t->place.kind != PLACE_AUTO) continue;
    const Op *user = first_use[t->id];
    t->place = user ? user->result->place : (Placement){.kind = PLACE_DEVICE, .index = 0};
  }
  return true;
}
