// algo_biring.c: the bidirectional ring.  A collective algorithm for the
// lowering pass (passes/lower.c registers it as algo_biring).
//
// Seed 003 s II-B and s III-B: the same cycle used in both directions, each
// ring carrying half of every shard, so both directions of every ring link
// are busy and the time halves.  Consecutive devices must be neighbours in
// both rings, so the topology must have a Hamiltonian cycle
// (passes/rings.c); one without (an odd mesh, which is bipartite with an odd
// number of devices) is refused with the reason.  A group of part of the
// devices takes that cycle's order, and must find its members neighbours
// in it; a group of two needs only a link between them (the two rings are
// then its two directions).
#include "passes.h"

#include <stdlib.h>
#include <string.h>

// Whether consecutive devices of order (and the last and the first) are
// linked; if not, which pair is not.
static bool neighbours_all_round(const Lowering *l, const int *order, char *why, size_t whylen) {
  for (int i = 0; i < l->ngroup; i++) {
    int a = order[i], b = order[(i + 1) % l->ngroup];
    if (ring_link_between(l->c->topo, a, b, -1) < 0) {
      snprintf(why, whylen, "device %d and device %d follow each other in its ring and are not linked", a, b);
      return false;
    }
  }
  return true;
}

static bool biring_applies(const Lowering *l, char *why, size_t whylen) {
  if (!lower_ring_fits(l, 2, why, whylen)) return false;
  if (l->ngroup == 2) return neighbours_all_round(l, l->group, why, whylen);
  int *order = xmalloc(sizeof(int) * (size_t)l->ngroup);
  char reason[200];
  bool ok = lower_ring_order(l, order, reason, sizeof reason);
  if (!ok)
    snprintf(why, whylen, "it needs a Hamiltonian cycle, and %s", reason);
  else
    ok = neighbours_all_round(l, order, why, whylen);
  free(order);
  return ok;
}

static void biring_lower(Lowering *l) {
  int n = l->ngroup;
  int *order = xmalloc(sizeof(int) * (size_t)n), *reversed = xmalloc(sizeof(int) * (size_t)n);
  char why[200];
  if (n == 2)
    memcpy(order, l->group, sizeof(int) * 2);
  else
    lower_ring_order(l, order, why, sizeof why);
  for (int i = 0; i < n; i++) reversed[i] = order[n - 1 - i];
  lower_ring(l, order, 0, 2);
  l->lane = 1;
  lower_ring(l, reversed, 1, 2);
  free(order);
  free(reversed);
}

const CollectiveAlgo algo_biring = {ALGO_BIRING, biring_applies, biring_lower, NULL};
