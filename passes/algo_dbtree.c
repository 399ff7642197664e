// algo_dbtree.c: the double binary tree.  A collective algorithm for the
// lowering pass (passes/lower.c registers it as algo_dbtree); the trees are
// lowered by the shared engine (algo_tree.c).
//
// Seed 003 s II-B and seed 004 s IV-B1 (Sanders, Speck and Traeff 2009; as
// in NCCL): two binary trees over the group's ranks, each carrying half of
// the data, in which every interior device of one tree is a leaf of the
// other, so each device sends and receives about one share's worth in
// each phase.  Tree 1 is the in-order binary tree over positions 1..N
// (rank r at position r + 1): position p, whose lowest set bit is b, hangs
// from p - b if p has bit 2b set and from p + b otherwise (from that
// one's parent if it is past N); the root is the largest power of two up to
// N, interior devices hold even positions, leaves odd ones.  Tree 2 shifts
// every rank one position on (rank r at position (r + 1) mod N + 1), which
// turns the interior set into even ranks: disjoint from tree 1's odd ones
// for any N.  Topology-oblivious: a tree edge between devices that are not
// linked is routed over several hops.  Height H = floor(log2 N); each phase
// takes H + C - 1 timesteps of D / 2C.  Allreduce only: each tree reduces
// half of every device's data to one root.
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>

// The parent position of position p in the in-order tree over 1..n (0: p
// is the root).
static int btree_parent(int p, int n) {
  int root = 1;
  while (root * 2 <= n) root *= 2;
  if (p == root) return 0;
  for (;;) {
    int b = p & -p, q = (p & (b << 1)) ? p - b : p + b;
    if (q <= n) return q;
    p = q;  // past n: hang from its parent instead
  }
}

// Tree t's position of group rank r (1-based).
static int position(int t, int r, int n) { return t == 0 ? r + 1 : (r + 1) % n + 1; }

static TreeSet *dbtree_trees(const Lowering *l) {
  int n = l->ngroup;
  TreeSet *ts = lower_trees_new(l, 2);
  int *rank_at = xmalloc(sizeof(int) * (size_t)(n + 1));  // position -> rank
  for (int t = 0; t < 2; t++) {
    for (int r = 0; r < n; r++) rank_at[position(t, r, n)] = r;
    int root = -1;
    for (int r = 0; r < n; r++) {
      int q = btree_parent(position(t, r, n), n);
      if (q)
        ts->parent[(size_t)t * ts->ndevices + l->group[r]] = l->group[rank_at[q]];
      else
        root = l->group[r];
    }
    lower_trees_depths(ts, t, root);
  }
  free(rank_at);
  return ts;
}

// The two trees, when they fit (lower_trees_fit); else NULL and why.
static TreeSet *fitting_trees(const Lowering *l, char *why, size_t whylen) {
  TreeSet *ts = dbtree_trees(l);
  if (lower_trees_fit(l, ts, why, whylen)) return ts;
  lower_trees_free(ts);
  return NULL;
}

static bool dbtree_applies(const Lowering *l, char *why, size_t whylen) {
  if (l->op->kind != OP_ALLREDUCE) {
    snprintf(why, whylen, "its two trees are rooted at 2 devices, not one per device, so it lowers allreduce only");
    return false;
  }
  return lower_trees_apply(l, fitting_trees, why, whylen);
}

static void dbtree_lower(Lowering *l) { lower_trees_build(l, fitting_trees); }

const CollectiveAlgo algo_dbtree = {ALGO_DBTREE, dbtree_applies, dbtree_lower, fitting_trees, NULL};
