// partition_estimate.c: the cycles N inferences in flight take through a
// graph as partitioned, estimated before the DAG exists.  Part of the
// partition pass (partition.c), which weighs by it its partitions with and
// without the matmul splits made for speed (split_matmul.c).
//
// The inferences are list-scheduled one after another, each in definition
// order, as the DAG orders them (dag.c): an op runs compute_estimate_cycles
// on its device, at the earliest time the device is free for that long
// (a later inference's op may fill a gap an earlier one left) once its
// operands are there.  An operand from another device arrives
// part_send_cycles after it leaves, plus a link's latency for each hop
// past the first, and leaves when its source's ports are free
// (part_send_cycles counts every working port, so one send holds them
// all); a device receives each value once, a param once for all
// inferences.  Inference b's first op of a run (a device's ops that come
// one after another, a pipeline stage) starts after inference b - 1's ops
// of that run end; a device that does not interleave by runs
// (Compilation.runs_on) is one run.  So a device holding a piece of a
// late layer beside an early stage is held where it really is, and the
// stages before and after it wait on it across inferences, which an
// estimate from one inference's busy cycles did not see (three BERT-Large
// layers on node8 with 3 in flight and their speed splits: 564,891
// estimated so, 589,875 now, 631,560 compiled).  Past
// PARTITION_ESTIMATE_INFERENCES the rest follow one each last interval.
#include "partition.h"

#include <stdlib.h>
#include <string.h>

// The one device op runs on, or -1 (a group's copies, @ each, which hold
// no single device's time here).
static int op_device(const Op *op) {
  const Placement *pl = &op->result->place;
  return pl->kind == PLACE_DEVICE ? pl->index : -1;
}

// Where a value reached a device: tensor t is at device d from `at` on, in
// inference `batch` (a param in every one).
typedef struct Arrival {
  int tensor, device, batch;  // tensor -1: an empty slot
  int64_t at;
} Arrival;

typedef struct Estimate {
  const Partitioner *p;
  int nd;
  Reservations *device;  // by device: computing
  Reservations *ports;   // by device: sending
  int64_t *ready;        // by tensor id: when the current inference's copy is made
  Arrival *arrivals;     // open addressing, a power of two
  int arrivals_mask;
  int *run;              // by op: its run (-1: none)
  bool *run_first;       // by op: the first of its run
  int nruns;
  int64_t *run_end[2];   // by run: the end of its ops in the inference before, and in this one
  int *hops[PARTITION_ESTIMATE_HOP_ROWS];  // hops from hop_src[k] to every device (NULL: none yet)
  int hop_src[PARTITION_ESTIMATE_HOP_ROWS];  // a direct-mapped cache by source device
  int *queue;            // room for every device (ir_topo_hops_from)
} Estimate;

// Hops from device src to device dst over working links (at least 1): a
// BFS from src, kept in a cache of PARTITION_ESTIMATE_HOP_ROWS rows (on
// system10440 a row for every device would be 436 MB).
static int hops_between(Estimate *e, int src, int dst) {
  int k = src % PARTITION_ESTIMATE_HOP_ROWS;
  if (!e->hops[k]) e->hops[k] = xmalloc(sizeof(int) * (size_t)e->nd);
  else if (e->hop_src[k] == src) return MAX(1, e->hops[k][dst]);
  e->hop_src[k] = src;
  ir_topo_hops_from(e->p->t, src, e->hops[k], e->queue);
  return MAX(1, e->hops[k][dst]);
}

static uint32_t arrival_slot(const Estimate *e, int tensor, int device) {
  uint64_t h = ((uint64_t)(uint32_t)tensor << 32 | (uint32_t)device) * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> 32) & (uint32_t)e->arrivals_mask;
}

// The arrival of tensor `tensor` at `device`, made or found.
static Arrival *arrival(Estimate *e, int tensor, int device) {
  for (uint32_t i = arrival_slot(e, tensor, device);; i = (i + 1) & (uint32_t)e->arrivals_mask) {
    Arrival *a = &e->arrivals[i];
    if (a->tensor < 0) *a = (Arrival){tensor, device, -1, 0};
    if (a->tensor == tensor && a->device == device) return a;
  }
}

// When operand x of inference `batch` is on device d (d -1: wherever it
// is): when it is made there, or when it arrives.
static int64_t operand_at(Estimate *e, const Tensor *x, int d, int batch) {
  const Placement *pl = &x->place;
  int64_t made = x->def ? e->ready[x->id] : 0;  // inputs and params are there from the start
  if (d < 0 || pl->kind != PLACE_DEVICE || pl->index == d) return made;
  bool shared = x->kind == TENSOR_PARAM;
  Arrival *a = arrival(e, x->id, d);
  if (a->batch == batch || (shared && a->batch >= 0)) return a->at;
  int src = pl->index;
  int64_t send = part_send_cycles(e->p, src, part_tensor_bytes(e->p, x), 1);
  int64_t hold = MAX(1, send - e->p->t->link.latency_max);
  int64_t leaves = resv_earliest(&e->ports[src], made, hold);
  resv_take(&e->ports[src], leaves, hold);
  a->batch = batch, a->at = leaves + send + (int64_t)(hops_between(e, src, d) - 1) * e->p->t->link.latency_max;
  return a->at;
}

// Whether dag.c makes op a compute node, which counts in its runs: not a
// collective, nor a copy to another device (those are transfers).
static bool is_computed(const Op *op) {
  if (ir_op_is_collective(op->kind)) return false;
  if (op->kind != OP_COPY) return true;
  const Placement *from = &op->args[0]->place, *to = &op->result->place;
  return from->kind == PLACE_DEVICE && to->kind == PLACE_DEVICE && from->index == to->index;
}

// Each op's run (dag.c's order_inferences): a device's ops in definition
// order, a new run where another device's op came between (or only one
// run a device that does not work by runs: runs_on NULL or false).
static void find_runs(Estimate *e, const bool *runs_on) {
  const Graph *g = e->p->g;
  int *last_op = xmalloc(sizeof(int) * (size_t)e->nd), *run_of_device = xmalloc(sizeof(int) * (size_t)e->nd);
  for (int d = 0; d < e->nd; d++) last_op[d] = -2, run_of_device[d] = -1;
  int nruns = 0, prev = -2;  // prev: the last op computed on a device
  for (int i = 0; i < g->ops.len; i++) {
    const Op *op = g->ops.data[i];
    int d = op_device(op);
    e->run[i] = -1;
    if (!is_computed(op)) continue;
    if (d >= 0) {
      bool starts = run_of_device[d] < 0 || (runs_on && runs_on[d] && last_op[d] != prev);
      if (starts) run_of_device[d] = nruns++;
      e->run[i] = run_of_device[d];
      e->run_first[i] = starts;
      last_op[d] = i;
    }
    prev = i;
  }
  e->nruns = nruns;
  for (int k = 0; k < 2; k++) e->run_end[k] = xcalloc((size_t)nruns + 1, sizeof(int64_t));
  free(last_op), free(run_of_device);
}

// Inference `batch`'s ops placed; returns when its last one ends.
static int64_t place_inference(Estimate *e, int batch) {
  const Graph *g = e->p->g;
  int64_t finish = 0;
  for (int i = 0; i < g->ops.len; i++) {
    const Op *op = g->ops.data[i];
    int d = op_device(op), r = e->run[i];
    int64_t start = r >= 0 && e->run_first[i] ? e->run_end[0][r] : 0;
    for (int a = 0; a < op->nargs; a++) {
      int64_t at = operand_at(e, op->args[a], d, batch);
      start = MAX(start, at);
    }
    int64_t cost = compute_estimate_cycles(op, e->p->vb);
    if (d >= 0 && cost > 0) {
      start = resv_earliest(&e->device[d], start, cost);
      resv_take(&e->device[d], start, cost);
    }
    int64_t end = start + cost;
    e->ready[op->result->id] = end;
    if (r >= 0) e->run_end[1][r] = MAX(e->run_end[1][r], end);
    finish = MAX(finish, end);
  }
  int64_t *t = e->run_end[0];  // this inference's run ends are the next one's bounds
  e->run_end[0] = e->run_end[1], e->run_end[1] = t;
  memset(t, 0, sizeof(int64_t) * (size_t)e->nruns);
  return finish;
}

int64_t part_estimated_makespan(const Partitioner *p, const bool *runs_on) {
  const Graph *g = p->g;
  Estimate e = {.p = p, .nd = p->t->ndevices};
  int nargs = 0;
  for (int i = 0; i < g->ops.len; i++) nargs += g->ops.data[i]->nargs;
  int slots = 16;
  while (slots < 2 * nargs) slots *= 2;
  e.arrivals = xmalloc(sizeof(Arrival) * (size_t)slots), e.arrivals_mask = slots - 1;
  for (int i = 0; i < slots; i++) e.arrivals[i].tensor = -1;
  e.device = xcalloc((size_t)e.nd, sizeof(Reservations)), e.ports = xcalloc((size_t)e.nd, sizeof(Reservations));
  e.ready = xcalloc((size_t)g->tensors.len + 1, sizeof(int64_t));
  e.run = xmalloc(sizeof(int) * ((size_t)g->ops.len + 1)), e.run_first = xcalloc((size_t)g->ops.len + 1, sizeof(bool));
  e.queue = xmalloc(sizeof(int) * (size_t)e.nd);
  find_runs(&e, runs_on);
  int placed = MIN(p->batches, PARTITION_ESTIMATE_INFERENCES);
  int64_t finish = 0, before = 0;
  for (int b = 0; b < placed; b++) {
    int64_t end = place_inference(&e, b);  // (MAX would place it twice)
    before = finish, finish = MAX(finish, end);
  }
  int64_t makespan = finish + (int64_t)(p->batches - placed) * (placed > 1 ? finish - before : finish);
  for (int d = 0; d < e.nd; d++) resv_free(&e.device[d]), resv_free(&e.ports[d]);
  free(e.device), free(e.ports), free(e.ready), free(e.arrivals), free(e.run), free(e.run_first);
  free(e.run_end[0]), free(e.run_end[1]);
  for (int k = 0; k < PARTITION_ESTIMATE_HOP_ROWS; k++) free(e.hops[k]);
  free(e.queue);
  return makespan;
}
