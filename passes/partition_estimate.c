// partition_estimate.c: the cycles N inferences in flight take through a
// graph as partitioned, estimated before the DAG exists.  Part of the
// partition pass (partition.c), which weighs by it its partitions with and
// without the matmul splits made for speed (split_matmul.c).
//
// One inference is list-scheduled in definition order: an op starts when
// its device is free and its operands are there (an operand on another
// device after part_send_cycles), and runs compute_estimate_cycles.  Its
// finish is the latency; N - 1 more follow, one each interval.  The
// interval is the most any device is held by one inference: with the
// inferences interleaved by runs (dag.c, Compilation.batch_runs) its busy
// cycles, else the span from its first op's start to its last op's end,
// since it starts inference b + 1 only after inference b's last op there.
// A speed split's pieces then count where they run: a device holding a
// piece of a late layer beside an early stage is held for most of an
// inference (rnd02 on fc8 with 3 in flight: one piece of the last matmul
// on the second stage's device made the steady interval 71,100 cycles,
// against 42,601 without the split).  The longest value an inference
// sends bounds the interval too (its link carries one each inference).
#include "partition.h"

#include <stdlib.h>

// The one device op runs on, or -1 (a group's copies, @ each, which hold
// no single device's time here).
static int op_device(const Op *op) {
  const Placement *pl = &op->result->place;
  return pl->kind == PLACE_DEVICE ? pl->index : -1;
}

// Cycles to bring operand x to device d (0: it lives there, or d is none).
static int64_t bring_cycles(const Partitioner *p, const Tensor *x, int d) {
  const Placement *pl = &x->place;
  if (d < 0 || pl->kind != PLACE_DEVICE || pl->index == d) return 0;
  return part_send_cycles(p, pl->index, part_tensor_bytes(p, x), 1);
}

typedef struct Held {
  int64_t first, last, busy;  // first op's start (-1: none), last op's end, cycles computing
} Held;

int64_t part_estimated_makespan(const Partitioner *p, bool runs) {
  const Graph *g = p->g;
  int nd = p->t->ndevices;
  int64_t *ready = xcalloc((size_t)g->tensors.len + 1, sizeof(int64_t)), *free_at = xcalloc((size_t)nd, sizeof(int64_t));
  Held *held = xmalloc(sizeof(Held) * (size_t)nd);
  for (int d = 0; d < nd; d++) held[d] = (Held){-1, 0, 0};
  int64_t latency = 0, longest_send = 0;
  for (int i = 0; i < g->ops.len; i++) {
    const Op *op = g->ops.data[i];
    int d = op_device(op);
    int64_t start = d >= 0 ? free_at[d] : 0, cost = compute_estimate_cycles(op, p->vb);
    for (int a = 0; a < op->nargs; a++) {
      const Tensor *x = op->args[a];
      int64_t send = bring_cycles(p, x, d);
      start = MAX(start, ready[x->id] + send);
      if (x->kind != TENSOR_PARAM) longest_send = MAX(longest_send, send);
    }
    int64_t end = start + cost;
    ready[op->result->id] = end;
    latency = MAX(latency, end);
    if (d < 0) continue;
    free_at[d] = end;
    if (held[d].first < 0) held[d].first = start;
    held[d].last = end, held[d].busy += cost;
  }
  int64_t interval = longest_send;
  for (int d = 0; d < nd; d++)
    if (held[d].first >= 0) interval = MAX(interval, runs ? held[d].busy : held[d].last - held[d].first);
  free(ready), free(free_at), free(held);
  return latency + (int64_t)(p->batches - 1) * interval;
}
