// algo_biring.c: the bidirectional ring.  A collective algorithm for the
// lowering pass (passes/lower.c registers it as algo_biring).
//
// Seed 003 s II-B and s III-B: the same cycle used in both directions, each
// ring carrying half of every shard, so both directions of every ring link
// are busy and the time halves.  Consecutive devices must be neighbours in
// both rings, so the topology must have a Hamiltonian cycle
// (passes/rings.c); one without (an odd mesh, which is bipartite with an odd
// number of devices) is refused with the reason.  A group of part of the
// devices takes that cycle's order when its members are neighbours in it,
// else a cycle searched through its members alone; a group of two needs
// only a link between them (the two rings are then its two directions),
// and a group of one nothing.
#include "passes.h"

#include <stdlib.h>
#include <string.h>

// Whether consecutive devices of order (and the last and the first) are
// linked; if not, which pair is not.
static bool neighbours_all_round(const Lowering *l, const int *order, char *why, size_t whylen) {
  int i = ring_first_unlinked(l->c->topo, order, l->ngroup);
  if (i < 0) return true;
  snprintf(why, whylen, "device %d and device %d follow each other in its ring and are not linked", order[i],
           order[(i + 1) % l->ngroup]);
  return false;
}

// The group's ring: the order of the topology's Hamiltonian cycle when
// its members are neighbours in it, else a cycle through the members
// alone (8 devices of mesh3x3 without its centre: the mesh has no
// Hamiltonian cycle, the ring round the centre is the group's).
static bool biring_order(const Lowering *l, int *order, char *why, size_t whylen) {
  char reason[200], own[200];
  bool whole = lower_ring_order(l, order, reason, sizeof reason);
  if (whole && neighbours_all_round(l, order, why, whylen)) return true;
  if (l->ngroup < l->c->topo->ndevices &&
      ring_cycle_of(l->c, l->group, l->ngroup, order, own, sizeof own))
    return true;
  if (!whole && l->ngroup < l->c->topo->ndevices)
    snprintf(why, whylen, "it needs a cycle through the group: %s, and the topology has no Hamiltonian cycle", own);
  else if (!whole)
    snprintf(why, whylen, "it needs a Hamiltonian cycle, and %s", reason);
  else if (l->ngroup < l->c->topo->ndevices)
    snprintf(why + strlen(why), whylen - strlen(why), "; and %s", own);
  return false;
}

static bool biring_applies(const Lowering *l, char *why, size_t whylen) {
  if (!lower_ring_fits(l, 2, why, whylen)) return false;
  if (l->ngroup == 1) return true;  // nothing moves, as for ring
  if (l->ngroup == 2) return neighbours_all_round(l, l->group, why, whylen);
  int *order = xmalloc(sizeof(int) * (size_t)l->ngroup);
  bool ok = biring_order(l, order, why, whylen);
  free(order);
  return ok;
}

static bool alike(const LinkParams *x, const LinkParams *y) {
  return x->gbps == y->gbps && x->latency_min == y->latency_min && x->latency_max == y->latency_max &&
         x->vector_bytes == y->vector_bytes && x->wire_bytes == y->wire_bytes;
}

// A working cable between a and b other than `first`, alike in every
// parameter (a slower one would cost a short collective its latency); -1
// if none.
static int twin_cable(const Topology *t, int a, int b, int first) {
  const Device *d = &t->devices[a];
  for (int p = 0; p < d->nports; p++) {
    const Port *port = &d->ports[p];
    if (port->link >= 0 && port->peer == b && port->link != first && !t->links.data[port->link].failed &&
        alike(&t->links.data[port->link].p, &t->links.data[first].p))
      return port->link;
  }
  return -1;
}

// The two rings go round one cycle in opposite directions.  A group of two
// devices joined by two alike cables pins them (lower_ring's links): the
// first ring goes out over one and back over the other, the second the
// opposite ways, so all four link directions work, where both rings' 0 -> 1
// took the first cable (ring2 at 1 MiB: 81,162 cycles, as ring; now half).
// Elsewhere the router chooses, as before: a longer cycle uses each pair
// once either way, and whether a slower second cable pays depends on the
// size (a 1,000-cycle one: 1 KiB 639 cycles unpinned against 1,397, 32,000 B
// 3,073 against 2,421; found by a review), which this does not weigh.
static void biring_lower(Lowering *l) {
  int n = l->ngroup;
  int *order = xmalloc(sizeof(int) * (size_t)n), *reversed = xmalloc(sizeof(int) * (size_t)n);
  char why[400];
  if (n <= 2)
    memcpy(order, l->group, sizeof(int) * (size_t)n);
  else if (!biring_order(l, order, why, sizeof why))
    die("biring: lowering a group biring_applies refused (%s)", why);
  for (int i = 0; i < n; i++) reversed[i] = order[n - 1 - i];
  int out = -1, back = -1;
  if (n == 2 && (out = ring_link_between(l->c->topo, order[0], order[1], -1)) >= 0)
    back = twin_cable(l->c->topo, order[0], order[1], out);
  // The first ring: 0 -> 1 over out, 1 -> 0 over back; the second, from
  // 1, the same links the other way: 1 -> 0 over out, 0 -> 1 over back.
  int links[2] = {out, back};
  lower_ring(l, order, back >= 0 ? links : NULL, 0, 2);
  l->lane = 1;
  lower_ring(l, reversed, back >= 0 ? links : NULL, 1, 2);
  free(order), free(reversed);
}

const CollectiveAlgo algo_biring = {ALGO_BIRING, biring_applies, biring_lower, NULL, lower_ring_chain};  // two rings
