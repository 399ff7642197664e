// algo_multitree.c: MultiTree AllReduce.  A collective algorithm for the
// lowering pass (passes/lower.c registers it as algo_multitree); the trees
// are lowered by the shared engine (algo_tree.c).
//
// Seed 003 s II-B (MultiTree, Huang et al., ISCA 2021) and seed 004 s IV-B2:
// one tree per group device, rooted there, tree k carrying shard k of the
// data (D/N), built greedily over the topology's links time step by time
// step, so that no link direction serves two trees in one step.  The
// AllGather follows the trees top-down in the order of their steps, the
// ReduceScatter bottom-up in the reverse order; with T steps each phase
// takes T timesteps of D/N per link (plus the pipeline of C chunks:
// T + C - 1 of D/NC).  Tree k belongs to the group's k-th device, so a
// reduce_scatter (the ReduceScatter alone) and an all_gather (the AllGather
// alone) lower too.  The trees use only links between group devices; a
// group those do not connect is refused.
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Grower {
  const Topology *t;
  const bool *member;
  const int *roots, *cluster;
  TreeSet *ts;
  int *order, *count;  // by tree: its devices in the order they joined, and how many
  int *any_from;       // by tree: where in its order this step's search for a free edge resumes
  int *cluster_from;   // ... for a free edge into its root's cluster (clusters only)
  int *skip;           // by tree and place in its order: where a search goes on from (next_open)
  bool *used;          // link direction (link * 2 + (from == a ? 0 : 1)) taken in this step
} Grower;

static int dir_index(const Topology *t, int link, int from) { return link * 2 + (t->links.data[link].a == from ? 0 : 1); }

#define NO_PORT_NOW (-1)  // free_port: none in this step
#define NO_PORT_EVER (-2) // ... and none in any later one: every member neighbour is in the tree

// Device u's first port over which tree k may take an edge in this step: a
// free link direction to a member the tree lacks (one in the root's cluster
// if `in_cluster`), or NO_PORT_NOW or NO_PORT_EVER.
static int free_port(const Grower *g, int k, int u, bool in_cluster) {
  const int *step = g->ts->step + (size_t)k * g->ts->ndevices;
  const Device *d = &g->t->devices[u];
  int none = NO_PORT_EVER;
  for (int p = 0; p < d->nports; p++) {
    int v = d->ports[p].peer, link = d->ports[p].link;
    if (link < 0 || g->t->links.data[link].failed || !g->member[v] || step[v] >= 0) continue;
    none = NO_PORT_NOW;
    if (g->used[dir_index(g->t, link, u)]) continue;
    if (in_cluster && g->cluster[v] != g->cluster[g->roots[k]]) continue;
    return p;
  }
  return none;
}

// The first place from i on in tree k's order whose device may still get
// a port (or count[k]): places whose device had NO_PORT_EVER are skipped,
// as a union-find skips joined sets, each search shortening the chains it
// walked.  Without it a 1,440-device dragonfly's 1,440 trees looked at
// every device of every tree in each of their 207 steps.
static int next_open(Grower *g, int k, int i) {
  int *skip = g->skip + (size_t)k * g->ts->ndevices, n = g->count[k], r = i;
  while (r < n && skip[r] != r) r = skip[r];
  while (i < r) {
    int next = skip[i];
    skip[i] = r;
    i = next;
  }
  return r;
}

// The earliest-joined device of tree k that joined before step s and has a
// free port (*port), searching from *from on, or -1.  The search skips for
// good, until the step ends, a device without one: within a step link
// directions are only taken and the tree only grows, so it stays without.
// This keeps the trees' construction near N^2 ports a step instead of N^3.
static int first_with_port(Grower *g, int k, int s, int *from, bool in_cluster, int *port) {
  int nd = g->ts->ndevices;
  const int *order = g->order + (size_t)k * nd, *step = g->ts->step + (size_t)k * nd;
  for (*from = next_open(g, k, *from); *from < g->count[k]; *from = next_open(g, k, *from + 1)) {
    int u = order[*from];
    if (step[u] >= s) break;  // joined in this step, and so did every later one
    if ((*port = free_port(g, k, u, in_cluster)) >= 0) return u;
    if (*port == NO_PORT_EVER) g->skip[(size_t)k * g->ts->ndevices + *from] = *from + 1;
  }
  return -1;
}

// Tree k takes one edge in step s: from the earliest-joined device that
// joined before s, over its first free link direction to a member the tree
// lacks (one of its root's cluster first, if clusters are given).
static bool grow_one(Grower *g, int k, int s) {
  int p = -1, u = -1;
  if (g->cluster) u = first_with_port(g, k, s, &g->cluster_from[k], true, &p);
  if (u < 0) u = first_with_port(g, k, s, &g->any_from[k], false, &p);
  if (u < 0) return false;
  int nd = g->ts->ndevices;
  const Port *port = &g->t->devices[u].ports[p];
  g->ts->parent[(size_t)k * nd + port->peer] = u;
  g->ts->step[(size_t)k * nd + port->peer] = s;
  g->ts->link[(size_t)k * nd + port->peer] = port->link;
  g->used[dir_index(g->t, port->link, u)] = true;
  g->skip[(size_t)k * nd + g->count[k]] = g->count[k];
  g->order[(size_t)k * nd + g->count[k]++] = port->peer;
  return true;
}

// Step s: rounds in which every unfinished tree takes an edge (starting
// with a different tree each step, for fairness) until none can.
static bool grow_step(Grower *g, int s, int members) {
  int n = g->ts->ntrees;
  bool any = false;
  memset(g->used, 0, sizeof(bool) * ((size_t)g->t->links.len * 2 + 1));
  memset(g->any_from, 0, sizeof(int) * (size_t)n);
  memset(g->cluster_from, 0, sizeof(int) * (size_t)n);
  for (bool grew = true; grew;) {
    grew = false;
    for (int i = 0; i < n; i++) {
      int k = (i + s) % n;
      if (g->count[k] < members && grow_one(g, k, s)) grew = any = true;
    }
  }
  return any;
}

int lower_multitree_build(const Topology *t, const bool *member, const int *roots, int nroots, const int *cluster,
                          TreeSet *ts) {
  int nd = t->ndevices, members = 0;
  for (int d = 0; d < nd; d++) members += member[d];
  Grower g = {.t = t, .member = member, .roots = roots, .cluster = cluster, .ts = ts};
  g.order = xmalloc(sizeof(int) * (size_t)nroots * nd);
  g.count = xcalloc((size_t)nroots, sizeof(int));
  g.any_from = xmalloc(sizeof(int) * (size_t)nroots);
  g.cluster_from = xmalloc(sizeof(int) * (size_t)nroots);
  g.skip = xmalloc(sizeof(int) * (size_t)nroots * nd);
  g.used = xmalloc(sizeof(bool) * ((size_t)t->links.len * 2 + 1));
  int finished = 0;
  for (int k = 0; k < nroots; k++) {
    ts->step[(size_t)k * nd + roots[k]] = 0;
    g.order[(size_t)k * nd] = roots[k];
    g.skip[(size_t)k * nd] = 0;
    g.count[k] = 1;
    finished += members == 1;
  }
  int s = 0;
  while (finished < nroots) {
    if (!grow_step(&g, ++s, members)) {
      s = -1;  // some member is out of reach
      break;
    }
    finished = 0;
    for (int k = 0; k < nroots; k++) finished += g.count[k] == members;
  }
  free(g.order);
  free(g.count);
  free(g.any_from);
  free(g.cluster_from);
  free(g.skip);
  free(g.used);
  return s;
}

// The group's trees, or NULL and why.
static TreeSet *multitree_trees(const Lowering *l, char *why, size_t whylen) {
  int64_t n = l->ngroup, transfers = n * (n - 1) * (l->op->kind == OP_ALLREDUCE ? 2 : 1);
  if (transfers > LOWER_MAX_TRANSFERS) {
    snprintf(why, whylen, "%lld trees over %lld devices take %lld transfers, more than the %d a collective may "
             "(LOWER_MAX_TRANSFERS)", (long long)n, (long long)n, (long long)transfers, LOWER_MAX_TRANSFERS);
    return NULL;
  }
  const Topology *t = l->c->topo;
  bool *member = xcalloc((size_t)t->ndevices, sizeof(bool));
  for (int g = 0; g < l->ngroup; g++) member[l->group[g]] = true;
  TreeSet *ts = lower_trees_new(l, l->ngroup);
  int steps = lower_multitree_build(t, member, l->group, l->ngroup, NULL, ts);
  free(member);
  if (steps < 0) {
    snprintf(why, whylen, "it builds its trees over links between the group's devices, and those do not connect the group");
  } else if (lower_trees_fit(l, ts, why, whylen)) {
    return ts;
  }
  lower_trees_free(ts);
  return NULL;
}

static bool multitree_applies(const Lowering *l, char *why, size_t whylen) {
  return lower_trees_apply(l, multitree_trees, why, whylen);
}

static void multitree_lower(Lowering *l) { lower_trees_build(l, multitree_trees); }

const CollectiveAlgo algo_multitree = {ALGO_MULTITREE, multitree_applies, multitree_lower, multitree_trees, NULL};
