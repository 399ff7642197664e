// algo_biring.c: the bidirectional ring.  A collective algorithm for the
// lowering pass (passes/lower.c registers it as algo_biring).
//
// Seed 003 s II-B and s III-B: the same cycle used in both directions, each
// ring carrying half of every shard, so both directions of every ring link
// are busy and the time halves.  Consecutive devices must be neighbours in
// both rings, so the topology must have a Hamiltonian cycle
// (passes/rings.c); one without (an odd mesh, which is bipartite with an odd
// number of devices) is refused with the reason.
#include "passes.h"

#include <stdlib.h>

static bool biring_applies(const Lowering *l, char *why, size_t whylen) {
  if (!lower_ring_fits(l, 2, why, whylen)) return false;
  int *order = xmalloc(sizeof(int) * (size_t)l->ngroup);
  char reason[200];
  bool found = lower_ring_order(l, order, reason, sizeof reason);
  free(order);
  if (!found) snprintf(why, whylen, "it needs a Hamiltonian cycle, and %s", reason);
  return found;
}

static void biring_lower(Lowering *l) {
  int n = l->ngroup;
  int *order = xmalloc(sizeof(int) * (size_t)n), *reversed = xmalloc(sizeof(int) * (size_t)n);
  char why[200];
  lower_ring_order(l, order, why, sizeof why);
  for (int i = 0; i < n; i++) reversed[i] = order[n - 1 - i];
  lower_ring(l, order, 0, 2);
  lower_ring(l, reversed, 1, 2);
  free(order);
  free(reversed);
}

const CollectiveAlgo algo_biring = {ALGO_BIRING, biring_applies, biring_lower};
