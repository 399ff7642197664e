// algo_ring.c: the unidirectional ring.  A collective algorithm for the
// lowering pass (passes/lower.c registers it as algo_ring).
//
// Seed 003 s II-B, Fig. 1: the devices form a cycle; the data is cut into N
// chunks, one per device.  ReduceScatter: in step s (0 <= s < N-1) the
// device at position p sends chunk (p - s) mod N to position p+1, which
// reduces it into its own; after N-1 steps position p holds chunk p+1 fully
// reduced.  AllGather: in step s position p sends chunk (p + a - s) mod N on
// (a = 1 after a ReduceScatter, 0 when every device starts with its own
// shard), so after N-1 more steps every device holds every chunk.  Each
// step's send waits only for the arrival of that same chunk in the step
// before, so chunks pipeline round the ring: 2(N-1) timesteps of D/N bytes.
//
// The cycle is the topology's Hamiltonian cycle (passes/rings.c) restricted
// to the group when there is one, so consecutive devices are neighbours;
// on a mesh of odd dimensions the near cycle, one of whose hops crosses
// two links (rings.c); otherwise a cycle of neighbours through the group
// alone when there is one (ring_order), else the group in id order, and
// routing carries each hop over as many links as it takes.  Any group can
// be lowered.  lower_ring runs one ring over a part of the data; the
// bidirectional ring (algo_biring.c) runs two.
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool lower_ring_fits(const Lowering *l, int nrings, char *why, size_t whylen) {
  int64_t n = l->ngroup, transfers = 2 * (n - 1) * n * nrings;
  if (transfers <= LOWER_MAX_TRANSFERS) return true;
  snprintf(why, whylen,
           "%s over %lld devices takes %lld transfers, more than the %d a collective may "
           "(LOWER_MAX_TRANSFERS)",
           nrings == 1 ? "a ring" : "rings", (long long)n, (long long)transfers, LOWER_MAX_TRANSFERS);
  return false;
}

static bool ring_applies(const Lowering *l, char *why, size_t whylen) { return lower_ring_fits(l, 1, why, whylen); }

bool lower_ring_order(const Lowering *l, int *order, char *why, size_t whylen) {
  const Topology *t = l->c->topo;
  int *cycle = xmalloc(sizeof(int) * (size_t)t->ndevices);
  char *in_group = xcalloc((size_t)t->ndevices, 1);
  for (int g = 0; g < l->ngroup; g++) in_group[l->group[g]] = 1;
  bool found = ring_cycle_of(l->c, NULL, 0, cycle, why, whylen);
  int n = 0;
  if (found || ring_near_hamiltonian(t, cycle, l->ngroup == t->ndevices)) {
    for (int i = 0; i < t->ndevices; i++)
      if (in_group[cycle[i]]) order[n++] = cycle[i];
  } else {
    for (int g = 0; g < l->ngroup; g++) order[n++] = l->group[g];
  }
  free(cycle);
  free(in_group);
  return found;
}

// Group index of each device, by device id (-1 outside the group).
static int *group_index(const Lowering *l) {
  int *gi = xmalloc(sizeof(int) * (size_t)l->c->topo->ndevices);
  for (int d = 0; d < l->c->topo->ndevices; d++) gi[d] = -1;
  for (int g = 0; g < l->ngroup; g++) gi[l->group[g]] = g;
  return gi;
}

typedef struct Ring {
  Lowering *l;
  RingPlan *plan;
  int n;
  int *arrived;  // position -> the last transfer into it (-1: none yet)
  int *next;     // scratch for the step being made
  IntList deps;  // scratch: one send's dependencies
} Ring;

static int wrap(int x, int n) { return ((x % n) + n) % n; }

// The dependencies of position p sending `label`: the transfer that brought
// the label into p in the step before, what p's first phase waits for, and
// the merged device's contribution when p is the merging position.
static void send_deps(Ring *r, int p, int label) {
  const RingPlan *rp = r->plan;
  r->deps.len = 0;
  VEC_PUSH(&r->l->c->arena, &r->deps, r->arrived[p]);
  if (rp->start_deps)
    for (int i = 0; i < rp->nstart_deps[p]; i++) VEC_PUSH(&r->l->c->arena, &r->deps, rp->start_deps[p][i]);
  if (rp->merge_in && p == rp->merge_pos) VEC_PUSH(&r->l->c->arena, &r->deps, rp->merge_in[label]);
}

// One step: every position p sends label (p + shift) mod N to p+1.
static void ring_step(Ring *r, int shift, bool reduce) {
  RingPlan *rp = r->plan;
  int n = r->n;
  for (int p = 0; p < n; p++) {
    int label = wrap(p + shift, n), q = wrap(p + 1, n);
    r->next[q] = -1;
    if (!rp->bytes[label]) continue;
    send_deps(r, p, label);
    r->l->on_cycle = ring_link_between(r->l->c->topo, rp->order[p], rp->order[q], -1) >= 0;
    r->l->edge_link = rp->links ? rp->links[p] : -1;
    r->next[q] = lower_send(r->l, rp->order[p], rp->order[q], rp->offset[label], rp->bytes[label], reduce,
                            r->deps.data, r->deps.len);
    if (rp->complete && !reduce) rp->complete[q * n + label] = r->next[q];
  }
  for (int p = 0; p < n; p++) r->arrived[p] = r->next[p];
  r->l->on_cycle = false;
  r->l->edge_link = -1;
}

static void mark_done(Ring *r) {
  for (int p = 0; p < r->n; p++)
    if (r->arrived[p] >= 0) lower_done(r->l, r->plan->order[p], r->arrived[p]);
}

void lower_ring_plan(Lowering *l, RingPlan *rp) {
  int n = rp->n;
  if (n < 2) return;
  Ring r = {.l = l, .plan = rp, .n = n};
  r.arrived = xmalloc(sizeof(int) * (size_t)n);
  r.next = xmalloc(sizeof(int) * (size_t)n);
  for (int p = 0; p < n; p++) r.arrived[p] = -1;
  if (rp->complete)
    for (int i = 0; i < n * n; i++) rp->complete[i] = -1;
  if (rp->reduce_scatter) {
    // Step s: position p sends label p - s, reduced into p+1's copy; after
    // N-1 steps position p holds label p+1 complete.
    for (int s = 0; s < n - 1; s++) ring_step(&r, -s, true);
    mark_done(&r);
    if (rp->complete)
      for (int p = 0; p < n; p++) rp->complete[p * n + wrap(p + 1, n)] = r.arrived[p];
  }
  if (rp->all_gather) {
    // Step s: position p sends label p + lag - s, written over p+1's.
    for (int s = 0; s < n - 1; s++) {
      ring_step(&r, rp->lag - s, false);
      mark_done(&r);
    }
  }
  free(r.arrived);
  free(r.next);
}

void lower_ring(Lowering *l, const int *order, const int *links, int part, int nparts) {
  int n = l->ngroup;
  int *gi = group_index(l);
  int64_t *offset = xmalloc(sizeof(int64_t) * (size_t)n), *bytes = xmalloc(sizeof(int64_t) * (size_t)n);
  // ReduceScatter leaves label p+1 on position p; AllGather alone starts
  // with label p on position p.  Either way that must be p's own shard.
  int lag = l->op->kind == OP_ALL_GATHER ? 0 : 1;
  for (int c = 0; c < n; c++)
    lower_chunk(l, gi[order[wrap(c - lag, n)]] * nparts + part, n * nparts, &offset[c], &bytes[c]);
  RingPlan rp = {.n = n, .order = order, .links = links, .offset = offset, .bytes = bytes, .lag = lag,
                 .reduce_scatter = l->op->kind != OP_ALL_GATHER, .all_gather = l->op->kind != OP_REDUCE_SCATTER};
  lower_ring_plan(l, &rp);
  free(gi);
  free(offset);
  free(bytes);
}

// The ring's order: lower_ring_order's; but when that is the group's own
// order (the topology has no Hamiltonian cycle, nor a near cycle that does
// better) and some hop of it is between devices that are not neighbours,
// a cycle of neighbours through the group alone if there is one (rings.c:
// the near cycle without its corner, or a search), as the biring takes
// (9x9 with its corner device 80 failed: id order crossed 158 of 284 link
// directions, the cycle 80).  Not in place of a near cycle cut down to the
// group: with its one hop over two links it can be the faster (3x5 without
// device 0: 150,346 cycles against the group cycle's 157,252).
static void ring_order(Lowering *l, int *order) {
  const Topology *t = l->c->topo;
  char why[256];
  if (lower_ring_order(l, order, why, sizeof why) || l->ngroup == t->ndevices || l->ngroup < 3 ||
      memcmp(order, l->group, sizeof(int) * (size_t)l->ngroup) || ring_first_unlinked(t, order, l->ngroup) < 0)
    return;
  int *cycle = xmalloc(sizeof(int) * (size_t)l->ngroup);
  if (ring_cycle_of(l->c, l->group, l->ngroup, cycle, why, sizeof why))
    memcpy(order, cycle, sizeof(int) * (size_t)l->ngroup);
  free(cycle);
}

static void ring_lower(Lowering *l) {
  int *order = xmalloc(sizeof(int) * (size_t)l->ngroup);
  ring_order(l, order);
  lower_ring(l, order, NULL, 0, 1);
  free(order);
}

// Each nonempty label travels the whole ring: in every step the send of
// a label waits for its arrival in the step before (send_deps).
int64_t lower_ring_chain(const Lowering *l) {
  if (l->ngroup < 2 || layout_bytes(l->c, l->buffer) == 0) return 0;
  return (l->op->kind == OP_ALLREDUCE ? 2 : 1) * (int64_t)(l->ngroup - 1);
}

const CollectiveAlgo algo_ring = {ALGO_RING, ring_applies, ring_lower, NULL, lower_ring_chain};
