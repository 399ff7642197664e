// algo_ctree.c: the concentrated multi-tree.  A collective algorithm for
// the lowering pass (passes/lower.c registers it as algo_ctree); the trees
// are built by MultiTree's greedy construction (algo_multitree.c) and
// lowered by the shared engine (algo_tree.c).
//
// Seed 004 s IV-B2 (ARIES, "tree concentration"): MultiTree's height is
// bounded by the network's diameter, so neighbouring devices are grouped
// into concentrated nodes of CTREE_CLUSTER_SIZE (a 2 x 2 block of a mesh)
// whose data is first accumulated inside the cluster, and the trees then
// run between clusters.  One tree a cluster would halve the links busy, so
// each cluster roots CTREE_ROOTS_PER_CLUSTER trees ("partition the gradient
// accumulation into two nodes within each concentrated tree node").  Here
// the trees are grown step by step as MultiTree's are (no link direction
// twice in one step), each taking its own cluster's devices first: they
// are the last level of its ReduceScatter and the first of its AllGather.
// Clusters and trees walk the topology's links, so bypass links (s III-B)
// join them where the topology has them, shortening the trees.  With K
// trees of T steps each phase takes T + C - 1 timesteps of D / KC.
// Allreduce only (its trees are not one per device).
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>

// Devices a concentrated node groups (seed 004 fig. 8: four), and the
// trees each one roots (two).  Named settings.
#define CTREE_CLUSTER_SIZE 4
#define CTREE_ROOTS_PER_CLUSTER 2

// Links from v into cluster c.
static int links_into(const Topology *t, const int *cluster, int v, int c) {
  int n = 0;
  for (int p = 0; p < t->devices[v].nports; p++) {
    const Port *port = &t->devices[v].ports[p];
    n += port->link >= 0 && !t->links.data[port->link].failed && cluster[port->peer] == c;
  }
  return n;
}

// The group member outside any cluster with the most links into cluster c
// (the lowest id on a tie), or -1.
static int best_joiner(const Topology *t, const bool *member, const int *cluster, int c, const int *in_c, int size) {
  int best = -1, best_links = 0;
  for (int i = 0; i < size; i++)
    for (int p = 0; p < t->devices[in_c[i]].nports; p++) {
      const Port *port = &t->devices[in_c[i]].ports[p];
      int v = port->peer;
      if (port->link < 0 || t->links.data[port->link].failed || !member[v] || cluster[v] >= 0) continue;
      int n = links_into(t, cluster, v, c);
      if (n > best_links || (n == best_links && v < best)) {
        best = v;
        best_links = n;
      }
    }
  return best;
}

// Greedy clusters over the group in id order; fills cluster (by device, -1
// outside the group) and roots (the first CTREE_ROOTS_PER_CLUSTER devices
// of each).  Returns the number of roots.
static int make_clusters(const Lowering *l, const bool *member, int *cluster, int *roots) {
  const Topology *t = l->c->topo;
  int nclusters = 0, nroots = 0, in_c[CTREE_CLUSTER_SIZE];
  for (int d = 0; d < t->ndevices; d++) cluster[d] = -1;
  for (int g = 0; g < l->ngroup; g++) {
    if (cluster[l->group[g]] >= 0) continue;
    int c = nclusters++, size = 0;
    in_c[size++] = l->group[g];
    cluster[l->group[g]] = c;
    while (size < CTREE_CLUSTER_SIZE) {
      int v = best_joiner(t, member, cluster, c, in_c, size);
      if (v < 0) break;
      cluster[v] = c;
      in_c[size++] = v;
    }
    for (int i = 0; i < size && i < CTREE_ROOTS_PER_CLUSTER; i++) roots[nroots++] = in_c[i];
  }
  return nroots;
}

// The trees, or NULL and why.
static TreeSet *ctree_trees(const Lowering *l, char *why, size_t whylen) {
  int64_t n = l->ngroup, transfers = 2 * n * (n - 1);
  if (transfers > LOWER_MAX_TRANSFERS) {
    snprintf(why, whylen, "its trees over %lld devices take up to %lld transfers, more than the %d a collective may "
             "(LOWER_MAX_TRANSFERS)", (long long)n, (long long)transfers, LOWER_MAX_TRANSFERS);
    return NULL;
  }
  const Topology *t = l->c->topo;
  bool *member = xcalloc((size_t)t->ndevices, sizeof(bool));
  for (int g = 0; g < l->ngroup; g++) member[l->group[g]] = true;
  int *cluster = xmalloc(sizeof(int) * (size_t)t->ndevices), *roots = xmalloc(sizeof(int) * (size_t)l->ngroup);
  int nroots = make_clusters(l, member, cluster, roots);
  TreeSet *ts = lower_trees_new(l, nroots);
  int steps = lower_multitree_build(t, member, roots, nroots, cluster, ts);
  free(member);
  free(cluster);
  free(roots);
  if (steps < 0)
    snprintf(why, whylen, "it builds its trees over links between the group's devices, and those do not connect the group");
  else if (lower_trees_fit(l, ts, why, whylen))
    return ts;
  lower_trees_free(ts);
  return NULL;
}

static bool ctree_applies(const Lowering *l, char *why, size_t whylen) {
  if (l->op->kind != OP_ALLREDUCE) {
    snprintf(why, whylen, "its trees are rooted at %d devices of each cluster, not one per device, so it lowers "
             "allreduce only", CTREE_ROOTS_PER_CLUSTER);
    return false;
  }
  return lower_trees_apply(l, ctree_trees, why, whylen);
}

static void ctree_lower(Lowering *l) { lower_trees_build(l, ctree_trees); }

const CollectiveAlgo algo_ctree = {ALGO_CTREE, ctree_applies, ctree_lower, ctree_trees, NULL};
