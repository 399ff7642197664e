// algo_direct.c: direct exchange in a fully connected group.  A collective
// algorithm for the lowering pass (passes/lower.c registers it as
// algo_direct).
//
// Seed 003 s II-B lists Direct among the AllReduce algorithms; seed 002
// s5.6 uses it inside a dragonfly node, whose TSPs are all linked.  Shard k
// belongs to the group's k-th device.  ReduceScatter: every device sends
// its copy of shard k straight to device k, which reduces it into its own:
// N-1 transfers into each device, all at once.  AllGather: device k sends
// its (reduced) shard k to every other device.  One step each way, every
// link of the group busy in both directions; it applies when every two
// devices of the group share a working link.
#include "passes.h"

#include <stdlib.h>

static bool direct_applies(const Lowering *l, char *why, size_t whylen) {
  int64_t n = l->ngroup;
  if (2 * n * (n - 1) > LOWER_MAX_TRANSFERS) {
    snprintf(why, whylen, "%lld devices exchange %lld transfers, more than LOWER_MAX_TRANSFERS (%d)",
             (long long)n, (long long)(2 * n * (n - 1)), LOWER_MAX_TRANSFERS);
    return false;
  }
  for (int i = 0; i < l->ngroup; i++)
    for (int j = i + 1; j < l->ngroup; j++)
      if (ring_link_between(l->c->topo, l->group[i], l->group[j], -1) < 0) {
        snprintf(why, whylen, "it needs every two devices of the group linked, and device %d and device %d are not",
                 l->group[i], l->group[j]);
        return false;
      }
  return true;
}

// Shard k of the buffer, as a byte range.
static void shard(const Lowering *l, int k, int64_t *offset, int64_t *bytes) {
  lower_chunk(l, k, l->ngroup, offset, bytes);
}

static void direct_lower(Lowering *l) {
  int n = l->ngroup;
  // reduced[k]: the transfers after which shard k is complete on device k.
  int *reduced = xmalloc(sizeof(int) * (size_t)n * (size_t)n);
  int *nreduced = xcalloc((size_t)n, sizeof(int));
  int64_t offset, bytes;
  if (l->op->kind != OP_ALL_GATHER) {
    for (int k = 0; k < n; k++) {
      shard(l, k, &offset, &bytes);
      for (int i = 0; i < n && bytes; i++) {
        if (i == k) continue;
        int t = lower_send(l, l->group[i], l->group[k], offset, bytes, true, NULL, 0);
        reduced[k * n + nreduced[k]++] = t;
        lower_done(l, l->group[k], t);
      }
    }
  }
  if (l->op->kind != OP_REDUCE_SCATTER) {
    for (int k = 0; k < n; k++) {
      shard(l, k, &offset, &bytes);
      for (int i = 0; i < n && bytes; i++)
        if (i != k) lower_done(l, l->group[i], lower_send(l, l->group[k], l->group[i], offset, bytes, false,
                                                          &reduced[k * n], nreduced[k]));
    }
  }
  free(reduced);
  free(nreduced);
}

const CollectiveAlgo algo_direct = {ALGO_DIRECT, direct_applies, direct_lower, NULL, NULL};
