// batch.c: several inferences in flight (tspc --batches=N).  Part of
// passes/, after partition and before dag: the placed graph is copied N
// times, every input, value and output once per inference (Tensor.batch,
// named "x#1"), each copy where batch 0's lives, params shared.  Nothing
// orders the copies but their data and the units they use, so the
// scheduler runs inference b + 1's first pipeline stage while inference b
// is on the next (seed 002 s4.1: stages on devices, activations flowing
// between them), and --stats reports latency and steady-state throughput.
#include "passes.h"

typedef struct Batcher {
  Compilation *c;
  Graph *g;
  Tensor **copy;  // by batch-0 tensor id: its copy in the batch being made
} Batcher;

static Tensor *copy_tensor(Batcher *b, const Tensor *t, int batch) {
  Tensor *n = ARENA_NEW(&b->c->arena, Tensor);
  *n = *t;
  n->batch = batch;
  n->batch_of = t;
  n->name = arena_printf(&b->c->arena, "%s#%d", t->name, batch);
  return n;
}

// An operand in batch `batch`: a param is shared, anything else is copied.
static Tensor *operand(Batcher *b, Tensor *t) { return t->kind == TENSOR_PARAM ? t : b->copy[t->id]; }

static void add_batch(Batcher *b, int batch, int ntensors, int nops, int noutputs) {
  Graph *g = b->g;
  Arena *a = &b->c->arena;
  for (int i = 0; i < ntensors; i++) {
    Tensor *t = g->tensors.data[i];
    if (t->kind == TENSOR_PARAM) continue;
    b->copy[t->id] = copy_tensor(b, t, batch);
    if (t->def) continue;  // values follow their ops, below
    VEC_PUSH(a, &g->tensors, b->copy[t->id]);
  }
  for (int i = 0; i < nops; i++) {
    const Op *op = g->ops.data[i];
    Op *o = ARENA_NEW(a, Op);
    *o = *op;
    o->result = b->copy[op->result->id];
    o->result->def = o;
    for (int k = 0; k < op->nargs; k++) o->args[k] = operand(b, op->args[k]);
    VEC_PUSH(a, &g->tensors, o->result);
    VEC_PUSH(a, &g->ops, o);
  }
  for (int i = 0; i < noutputs; i++)  // a param output is shared: listed once, by batch 0
    if (g->outputs.data[i]->kind != TENSOR_PARAM) VEC_PUSH(a, &g->outputs, b->copy[g->outputs.data[i]->id]);
}

bool pass_batch(Compilation *c) {
  if (c->batches <= 1) return true;
  Graph *g = c->graph;
  Batcher b = {.c = c, .g = g, .copy = ARENA_ARRAY(&c->arena, Tensor *, g->tensors.len + 1)};
  int ntensors = g->tensors.len, nops = g->ops.len, noutputs = g->outputs.len;
  for (int batch = 1; batch < c->batches; batch++) add_batch(&b, batch, ntensors, nops, noutputs);
  for (int i = 0; i < g->tensors.len; i++) g->tensors.data[i]->id = i;
  for (int i = 0; i < g->ops.len; i++) g->ops.data[i]->id = i;
  return true;
}
