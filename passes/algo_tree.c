// algo_tree.c: the tree engine shared by the tree algorithms (dbtree,
// multitree, tto, ctree).  Part of the lowering pass (passes/lower.c): an
// algorithm builds a TreeSet and hands it to lower_trees, which emits the
// transfers.
//
// Seed 003 s II-B and s V-C: each tree carries 1/ntrees of the buffer.
// ReduceScatter traverses a tree bottom-up: a device sends its share to its
// parent, which adds it into its own copy, once every child's share has
// landed in it.  AllGather traverses it top-down: the root's result is
// sent to its children, which send it on.  Each tree's share is cut into C
// chunks that pipeline (s V-A, "overlapping of chunks"): chunk c + 1 may
// follow chunk c down a link at once, so a phase of a tree of height H
// takes H + C - 1 chunk times (timesteps).  The scheduler places every
// transfer; the emission order below is only its priority: chunk c at step
// s goes before chunk c' at step s' when c + s < c' + s' (a wavefront), the
// whole ReduceScatter before the AllGather.
//
// Hazards are ordered by dependencies: a send up waits for the children's
// reductions of that chunk into the sender, a send down for the chunk's
// completion at the sender.  A device's chunk is overwritten by the
// AllGather only after the root completed it, which is after every send up
// of it in the tree, so no reduction or broadcast lands on a chunk still to
// be read in its old form.
//
// A device of a tree that is not in the group (TTO's excluded corner)
// relays: the first child's share is written into its copy (it has no data
// of its own to add), later children's are added, and the sum is sent on;
// in the AllGather it stores and forwards.  Relaying through its own copy,
// rather than letting a route pass through it, keeps every edge of the
// tree on the link the tree was built over.  A relay whose subtree holds no
// group member is left out.
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TreeSet *lower_trees_new(const Lowering *l, int ntrees) {
  TreeSet *ts = xmalloc(sizeof *ts);
  ts->ntrees = ntrees;
  ts->ndevices = l->c->topo->ndevices;
  size_t n = (size_t)ntrees * (size_t)ts->ndevices;
  ts->parent = xmalloc(sizeof(int) * (n ? n : 1));
  ts->step = xmalloc(sizeof(int) * (n ? n : 1));
  ts->link = xmalloc(sizeof(int) * (n ? n : 1));
  for (size_t i = 0; i < n; i++) ts->parent[i] = ts->step[i] = ts->link[i] = -1;
  return ts;
}

void lower_trees_free(TreeSet *ts) {
  if (!ts) return;
  free(ts->parent);
  free(ts->step);
  free(ts->link);
  free(ts);
}

void lower_trees_depths(TreeSet *ts, int t, int root) {
  int nd = ts->ndevices, *parent = ts->parent + (size_t)t * nd, *step = ts->step + (size_t)t * nd;
  for (int d = 0; d < nd; d++) step[d] = -1;
  step[root] = 0;
  for (bool grew = true; grew;) {  // one level more each pass
    grew = false;
    for (int d = 0; d < nd; d++)
      if (step[d] < 0 && parent[d] >= 0 && step[parent[d]] >= 0) {
        step[d] = step[parent[d]] + 1;
        grew = true;
      }
  }
}

static int tree_root(const TreeSet *ts, int t) {
  for (int d = 0; d < ts->ndevices; d++)
    if (ts->step[(size_t)t * ts->ndevices + d] == 0) return d;
  return -1;
}

static bool *group_mask(const Lowering *l) {
  bool *in = xcalloc((size_t)l->c->topo->ndevices, sizeof(bool));
  for (int g = 0; g < l->ngroup; g++) in[l->group[g]] = true;
  return in;
}

// One tree's devices in step order, for walks from the leaves up or the
// root down (scratch for any tree of the set, refilled by by_step).
typedef struct TreeOrder {
  int *members;  // the tree's devices, in id order
  int *order;    // ... sorted by step, the root first, in id order within a step
  int *count;    // by step + 1 (the counting sort's), ncount of them
  int n, ncount; // how many devices; count's size
} TreeOrder;

static TreeOrder tree_order_new(int nd) {
  return (TreeOrder){.members = xmalloc(sizeof(int) * (size_t)nd), .order = xmalloc(sizeof(int) * (size_t)nd)};
}

static void tree_order_free(TreeOrder *o) {
  free(o->members);
  free(o->order);
  free(o->count);
}

// Tree t's devices into o, by step: one scan of the tree's row for its
// members, then a counting sort of them, which keeps id order within a
// step.  O(devices + depth), where walking the tree step by step over all
// devices was O(devices x depth).
static void by_step(const TreeSet *ts, int t, TreeOrder *o) {
  const int *step = ts->step + (size_t)t * ts->ndevices;
  int n = 0, deepest = -1;
  for (int d = 0; d < ts->ndevices; d++)
    if (step[d] >= 0) o->members[n++] = d, deepest = MAX(deepest, step[d]);
  if (deepest + 2 > o->ncount) {  // a step is when a device joined (multitree), not bounded by the devices
    o->ncount = deepest + 2;
    o->count = xrealloc(o->count, sizeof(int) * (size_t)o->ncount);
  }
  memset(o->count, 0, sizeof(int) * (size_t)(deepest + 2));
  for (int k = 0; k < n; k++) o->count[step[o->members[k]] + 1]++;
  for (int s = 0; s <= deepest; s++) o->count[s + 1] += o->count[s];
  for (int k = 0; k < n; k++) o->order[o->count[step[o->members[k]]]++] = o->members[k];
  o->n = n;
}

// carries[d] for tree t, in step order o (by_step): d's subtree holds a
// group member, so its edge up carries data.  Deepest first, each device
// marking its parent.
static void mark_carriers(const TreeSet *ts, int t, const TreeOrder *o, const bool *in_group, bool *carries) {
  const int *parent = ts->parent + (size_t)t * ts->ndevices, *step = ts->step + (size_t)t * ts->ndevices;
  memset(carries, 0, sizeof(bool) * (size_t)ts->ndevices);
  for (int k = 0; k < o->n; k++) carries[o->order[k]] = in_group[o->order[k]];
  for (int k = o->n - 1; k >= 0; k--) {
    int d = o->order[k];
    if (step[d] >= 1 && carries[d]) carries[parent[d]] = true;
  }
}

// Edges that carry data, over every tree.
static int64_t carrying_edges(const Lowering *l, const TreeSet *ts) {
  int nd = ts->ndevices;
  bool *in_group = group_mask(l), *carries = xmalloc(sizeof(bool) * (size_t)nd);
  TreeOrder o = tree_order_new(nd);
  int64_t edges = 0;
  for (int t = 0; t < ts->ntrees; t++) {
    by_step(ts, t, &o);
    mark_carriers(ts, t, &o, in_group, carries);
    for (int k = 0; k < o.n; k++) edges += carries[o.order[k]] && ts->parent[(size_t)t * nd + o.order[k]] >= 0;
  }
  free(in_group);
  free(carries);
  tree_order_free(&o);
  return edges;
}

static int phases(const Lowering *l) { return l->op->kind == OP_ALLREDUCE ? 2 : 1; }

// Whether tree t's root and members suit the collective; if not, why.
static bool tree_fits(const Lowering *l, const TreeSet *ts, int t, char *why, size_t whylen) {
  int root = tree_root(ts, t);
  const int *step = ts->step + (size_t)t * ts->ndevices;
  bool *in_group = group_mask(l);
  bool ok = root >= 0 && in_group[root];
  if (!ok) snprintf(why, whylen, "its tree %d has no root in the group", t);
  free(in_group);
  if (ok && l->op->kind != OP_ALLREDUCE && (ts->ntrees != l->ngroup || root != l->group[t])) {
    snprintf(why, whylen, "a %s needs tree k rooted at the group's k-th device, and tree %d is rooted at device %d",
             ir_op_info[l->op->kind].name, t, root);
    return false;
  }
  for (int g = 0; g < l->ngroup && ok; g++)
    if (step[l->group[g]] < 0) {
      snprintf(why, whylen, "its tree %d does not reach device %d of the group", t, l->group[g]);
      ok = false;
    }
  return ok;
}

bool lower_trees_fit(const Lowering *l, const TreeSet *ts, char *why, size_t whylen) {
  for (int t = 0; t < ts->ntrees; t++)
    if (!tree_fits(l, ts, t, why, whylen)) return false;
  int64_t transfers = carrying_edges(l, ts) * phases(l);
  if (transfers <= LOWER_MAX_TRANSFERS) return true;
  snprintf(why, whylen, "its %d trees take %lld transfers even uncut, more than the %d a collective may (LOWER_MAX_TRANSFERS)",
           ts->ntrees, (long long)transfers, LOWER_MAX_TRANSFERS);
  return false;
}

static int deepest_step(const TreeSet *ts) {
  int deepest = 0;
  for (size_t i = 0; i < (size_t)ts->ntrees * ts->ndevices; i++) deepest = MAX(deepest, ts->step[i]);
  return deepest;
}

// C = TREE_CHUNKS_PER_LEVEL x (H - 1) for trees H steps deep: a phase then
// takes (H + C - 1) chunk times, within 1/TREE_CHUNKS_PER_LEVEL of the C
// a stream of the share takes alone.  No chunk below TREE_MIN_CHUNK_VECTORS;
// no more than TREE_TRANSFER_BUDGET transfers in all.
// --tree-chunks N gives C = N, at most one vector a chunk and within the
// budget; otherwise the formula's C is divided by what the choose pass
// found fastest (tree_chunk_divisor).
static int chunks_per_tree(const Lowering *l, const TreeSet *ts) {
  int64_t offset, bytes, vb = l->c->topo->link.vector_bytes;
  lower_chunk(l, 0, ts->ntrees, &offset, &bytes);
  int64_t share_vectors = (bytes + vb - 1) / vb;
  int64_t per_chunk = MAX(1, carrying_edges(l, ts) * phases(l));
  int64_t most = MAX(1, MIN(share_vectors, TREE_TRANSFER_BUDGET / per_chunk));
  if (l->c->tree_chunks > 0) {
    if (l->c->tree_chunks > most)
      diag_note(&l->c->diag, l->op->loc,
                "--tree-chunks=%d cut to %lld: a tree's share is %lld vectors, and TREE_TRANSFER_BUDGET (%d) "
                "allows %lld chunks of %lld transfers each",
                l->c->tree_chunks, (long long)most, (long long)share_vectors, TREE_TRANSFER_BUDGET,
                (long long)(TREE_TRANSFER_BUDGET / per_chunk), (long long)per_chunk);
    return (int)MIN(l->c->tree_chunks, most);
  }
  int64_t chunks = (int64_t)TREE_CHUNKS_PER_LEVEL * MAX(1, deepest_step(ts) - 1);
  chunks = MIN(chunks, share_vectors / TREE_MIN_CHUNK_VECTORS);
  chunks = MIN(chunks, TREE_TRANSFER_BUDGET / per_chunk);
  int divisor = l->c->tree_chunk_divisor ? MAX(1, l->c->tree_chunk_divisor[l->op->id]) : 1;
  return (int)MAX(1, chunks / divisor);
}

// ---- emission ----

typedef struct TreeWalk {
  Lowering *l;
  const TreeSet *ts;
  int nd, chunks, steps;
  bool *in_group;       // by device
  bool *carries;        // by tree and device (mark_carriers)
  int *step_start;      // by tree: CSR of the carrying devices below the root by step, steps + 2 each
  int *at_step;         //   ... nd each, in id order within a step
  int *by_id;           // by tree: its carrying devices below the root in id order, nd each
  int *ncarry;          //   ... how many
  int *pick;            // scratch, nd: one key's devices of a tree (emit_phase)
  int *kid_start;       // by tree: CSR of the carrying children, nd + 1 each
  int *kids;            //   ... nd each
  int64_t *offset, *bytes;  // by tree and chunk: the chunk's byte range
  int *up;              // by tree, chunk, device: the transfer of the chunk to its parent (-1: none)
  int *last_in;         // ... the latest transfer up into it (see send_up)
  int *down;            // ... the transfer bringing the result to it
  int *deps;            // scratch, nd + 1
} TreeWalk;

static size_t at(const TreeWalk *w, int t, int c, int d) { return ((size_t)t * w->chunks + c) * w->nd + d; }
static int parent_of(const TreeWalk *w, int t, int d) { return w->ts->parent[(size_t)t * w->nd + d]; }
static int step_of(const TreeWalk *w, int t, int d) { return w->ts->step[(size_t)t * w->nd + d]; }
static int link_of(const TreeWalk *w, int t, int d) { return w->ts->link[(size_t)t * w->nd + d]; }

static void build_kids(TreeWalk *w) {
  int nd = w->nd;
  for (int t = 0; t < w->ts->ntrees; t++) {
    int *start = w->kid_start + (size_t)t * (nd + 1), *list = w->kids + (size_t)t * nd;
    const bool *carries = w->carries + (size_t)t * nd;
    memset(start, 0, sizeof(int) * (size_t)(nd + 1));
    for (int d = 0; d < nd; d++)
      if (carries[d] && parent_of(w, t, d) >= 0) start[parent_of(w, t, d) + 1]++;
    for (int d = 0; d < nd; d++) start[d + 1] += start[d];
    int *fill = xmalloc(sizeof(int) * (size_t)nd);
    memcpy(fill, start, sizeof(int) * (size_t)nd);
    for (int d = 0; d < nd; d++)
      if (carries[d] && parent_of(w, t, d) >= 0) list[fill[parent_of(w, t, d)]++] = d;
    free(fill);
  }
}

// Into w->deps: the children's sends up of chunk c into d; returns how many.
static int kids_up(const TreeWalk *w, int t, int c, int d) {
  const int *start = w->kid_start + (size_t)t * (w->nd + 1), *list = w->kids + (size_t)t * w->nd;
  int n = 0;
  for (int k = start[d]; k < start[d + 1]; k++) w->deps[n++] = w->up[at(w, t, c, list[k])];
  return n;
}

// Chunk c of tree t from d up to its parent, after d's children's.  Into
// a relay the first child's share is written and later ones added, each
// after the one before.  (Two additions into one group device need no
// order: the scheduler holds the vector unit until each one's sums land.)
static void send_up(TreeWalk *w, int t, int c, int d) {
  int p = parent_of(w, t, d), n = kids_up(w, t, c, d);
  int64_t offset = w->offset[t * w->chunks + c], bytes = w->bytes[t * w->chunks + c];
  int *last = &w->last_in[at(w, t, c, p)];
  bool into_relay = !w->in_group[p];
  if (into_relay && *last >= 0) w->deps[n++] = *last;
  bool reduce = !into_relay || *last >= 0;
  w->l->edge_link = link_of(w, t, d);
  int id = lower_send(w->l, d, p, offset, bytes, reduce, w->deps, n);
  *last = id;
  w->up[at(w, t, c, d)] = id;
  if (step_of(w, t, p) == 0 && w->l->op->kind != OP_ALL_GATHER) lower_done(w->l, p, id);
}

// Chunk c of tree t's result from d's parent to d, after it is complete there.
static void send_down(TreeWalk *w, int t, int c, int d) {
  int p = parent_of(w, t, d), n = 0;
  if (step_of(w, t, p) != 0)
    w->deps[n++] = w->down[at(w, t, c, p)];
  else if (w->l->op->kind == OP_ALLREDUCE)
    n = kids_up(w, t, c, p);
  w->l->edge_link = link_of(w, t, d);
  int id = lower_send(w->l, p, d, w->offset[t * w->chunks + c], w->bytes[t * w->chunks + c], false, w->deps, n);
  w->down[at(w, t, c, d)] = id;
  if (w->in_group[d]) lower_done(w->l, d, id);
}

// Tree t's carriers (mark_carriers) and its carrying devices below the
// root by step (at_step, step_start), from its step order o.
static void walk_tree(TreeWalk *w, int t, const TreeOrder *o) {
  int nd = w->nd, *start = w->step_start + (size_t)t * (w->steps + 2), *list = w->at_step + (size_t)t * nd, n = 0;
  bool *carries = w->carries + (size_t)t * nd;
  mark_carriers(w->ts, t, o, w->in_group, carries);
  memset(start, 0, sizeof(int) * (size_t)(w->steps + 2));
  for (int k = 0; k < o->n; k++) {
    int d = o->order[k], s = step_of(w, t, d);
    if (s >= 1 && carries[d]) list[n++] = d, start[s + 1]++;
  }
  for (int s = 0; s <= w->steps; s++) start[s + 1] += start[s];
  int *ids = w->by_id + (size_t)t * nd;
  w->ncarry[t] = 0;
  for (int k = 0; k < o->n; k++)  // members are in id order
    if (step_of(w, t, o->members[k]) >= 1 && carries[o->members[k]]) ids[w->ncarry[t]++] = o->members[k];
}

static int compare_ids(const void *a, const void *b) {
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

// Tree t's carrying devices at steps [lo, hi] in id order, into w->pick;
// n of them.  Where they are much of the tree, its id-ordered list is
// filtered (a shallow tree cut into many chunks: most keys span every
// step); else they are gathered from their steps and sorted.
static const int *in_id_order(TreeWalk *w, int t, int lo, int hi, const int *devs, int n) {
  const int *ids = w->by_id + (size_t)t * w->nd;
  int all = w->ncarry[t];
  if ((int64_t)n * 8 >= all) {  // a scan of all costs at most 8 a device, less than a sort's log
    int m = 0;
    for (int k = 0; k < all; k++) {
      int s = step_of(w, t, ids[k]);
      if (s >= lo && s <= hi) w->pick[m++] = ids[k];
    }
  } else {
    memcpy(w->pick, devs, sizeof(int) * (size_t)n);
    qsort(w->pick, (size_t)n, sizeof(int), compare_ids);
  }
  return w->pick;
}

// Every carrying edge of every tree, chunk by chunk, in wavefront order:
// key = c + (steps - step) going up, c + step - 1 going down; within a key
// tree by tree, and in a tree in device id order.  A key's chunks lie at
// the steps [lo, hi] whose chunk is in range, so only those devices are
// visited (a tree of N devices N deep, multitree's on a mesh, would
// otherwise visit N x N a key).
static void emit_phase(TreeWalk *w, bool up) {
  for (int key = 0; key < w->chunks + w->steps - 1; key++)
    for (int t = 0; t < w->ts->ntrees; t++) {
      w->l->lane = t;
      int lo = up ? w->steps - key : key - w->chunks + 2, hi = lo + w->chunks - 1;
      lo = MAX(lo, 1), hi = MIN(hi, w->steps);
      if (lo > hi) continue;
      const int *start = w->step_start + (size_t)t * (w->steps + 2);
      const int *devs = w->at_step + (size_t)t * w->nd + start[lo];
      int n = start[hi + 1] - start[lo];
      if (hi > lo && n > 1) devs = in_id_order(w, t, lo, hi, devs, n);  // several steps: back to id order
      for (int k = 0; k < n; k++) {
        int d = devs[k], s = step_of(w, t, d);
        int c = up ? key - (w->steps - s) : key - (s - 1);
        if (!w->bytes[t * w->chunks + c]) continue;
        if (up)
          send_up(w, t, c, d);
        else
          send_down(w, t, c, d);
      }
    }
}

void lower_trees(Lowering *l, const TreeSet *ts) {
  int nd = ts->ndevices, nt = ts->ntrees, chunks = chunks_per_tree(l, ts);
  TreeWalk w = {.l = l, .ts = ts, .nd = nd, .chunks = chunks, .steps = deepest_step(ts)};
  w.in_group = group_mask(l);
  w.carries = xmalloc(sizeof(bool) * (size_t)nt * nd);
  w.step_start = xmalloc(sizeof(int) * (size_t)nt * (w.steps + 2));
  w.at_step = xmalloc(sizeof(int) * (size_t)nt * nd);
  w.by_id = xmalloc(sizeof(int) * (size_t)nt * nd);
  w.ncarry = xmalloc(sizeof(int) * (size_t)(nt ? nt : 1));
  w.pick = xmalloc(sizeof(int) * (size_t)nd);
  TreeOrder o = tree_order_new(nd);
  for (int t = 0; t < nt; t++) {
    by_step(ts, t, &o);
    walk_tree(&w, t, &o);
  }
  tree_order_free(&o);
  w.kid_start = xmalloc(sizeof(int) * (size_t)nt * (nd + 1));
  w.kids = xmalloc(sizeof(int) * (size_t)nt * nd);
  build_kids(&w);
  w.offset = xmalloc(sizeof(int64_t) * (size_t)nt * chunks);
  w.bytes = xmalloc(sizeof(int64_t) * (size_t)nt * chunks);
  for (int k = 0; k < nt * chunks; k++) lower_chunk(l, k, nt * chunks, &w.offset[k], &w.bytes[k]);
  size_t cells = (size_t)nt * chunks * nd;
  w.up = xmalloc(sizeof(int) * cells);
  w.last_in = xmalloc(sizeof(int) * cells);
  w.down = xmalloc(sizeof(int) * cells);
  for (size_t i = 0; i < cells; i++) w.up[i] = w.last_in[i] = w.down[i] = -1;
  w.deps = xmalloc(sizeof(int) * (size_t)(nd + 1));
  if (l->op->kind != OP_ALL_GATHER) emit_phase(&w, true);
  if (l->op->kind != OP_REDUCE_SCATTER) emit_phase(&w, false);
  l->lane = 0;
  l->edge_link = -1;
  free(w.in_group);
  free(w.carries);
  free(w.step_start);
  free(w.at_step);
  free(w.by_id);
  free(w.ncarry);
  free(w.pick);
  free(w.kid_start);
  free(w.kids);
  free(w.offset);
  free(w.bytes);
  free(w.up);
  free(w.last_in);
  free(w.down);
  free(w.deps);
}

// One builder's trees for one group and collective kind (what the builders
// read of a Lowering), or why it has none.
typedef struct TreeCache {
  TreeBuilder *build;
  OpKind kind;
  int ngroup;
  int *group;
  TreeSet *ts;  // NULL: refused, for `why`
  char why[256];
  struct TreeCache *next;
} TreeCache;

static bool same_trees(const TreeCache *e, const Lowering *l, TreeBuilder *build) {
  return e->build == build && e->kind == l->op->kind && e->ngroup == l->ngroup &&
         !memcmp(e->group, l->group, sizeof(int) * (size_t)l->ngroup);
}

// The trees of `build` for l's group, built on the first request.  Tree
// building grows as N^2 a step, and choose's trials and lower ask for the
// same trees up to five times.
static const TreeSet *cached_trees(const Lowering *l, TreeBuilder *build, char *why, size_t whylen) {
  TreeCache **head = &l->c->trees, *e = *head;
  while (e && !same_trees(e, l, build)) e = e->next;
  if (!e) {
    e = xcalloc(1, sizeof *e);
    *e = (TreeCache){.build = build, .kind = l->op->kind, .ngroup = l->ngroup, .next = *head};
    e->group = xmalloc(sizeof(int) * (size_t)(l->ngroup ? l->ngroup : 1));
    memcpy(e->group, l->group, sizeof(int) * (size_t)l->ngroup);
    e->ts = build(l, e->why, sizeof e->why);
    *head = e;
  }
  if (!e->ts) snprintf(why, whylen, "%s", e->why);
  return e->ts;
}

void lower_trees_forget(Compilation *c) {
  for (TreeCache *e = c->trees, *next; e; e = next) {
    next = e->next;
    lower_trees_free(e->ts);
    free(e->group);
    free(e);
  }
  c->trees = NULL;
}

bool lower_trees_apply(const Lowering *l, TreeBuilder *build, char *why, size_t whylen) {
  return cached_trees(l, build, why, whylen) != NULL;
}

int lower_trees_chunks(const Lowering *l, TreeBuilder *build) {
  char why[256];
  const TreeSet *ts = cached_trees(l, build, why, sizeof why);
  return ts ? chunks_per_tree(l, ts) : 0;
}

void lower_trees_build(Lowering *l, TreeBuilder *build) {
  char why[256];
  const TreeSet *ts = cached_trees(l, build, why, sizeof why);
  if (!ts) die("%s: %s", ir_algo_names[l->c->algos[l->op->id]], why);  // applies() said yes
  lower_trees(l, ts);
}
