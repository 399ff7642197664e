// algo_hier.c: the hierarchical AllReduce of a two-level dragonfly (racks of
// nodes of TSPs).  A collective algorithm for the lowering pass
// (passes/lower.c registers it as algo_hier).
//
// Seed 002 s2.2 and s5.6: the system follows its packaging hierarchy, and
// "a three-stage, hierarchical all-reduce uses the 8-way fully connected
// TSPs within each node as the first stage, the four global links between
// nodes for the second stage, and final 8-way fully connected network within
// each node to complete".  With racks that rule nests once more: inside
// each rack, dragonfly3's ReduceScatter (the node's local links, then the
// rack's node-pair cables); between the racks an AllReduce of each rack
// piece over the rack-pair cables; inside each rack the AllGather back.  On
// system10440 a rack piece is 1/72 of the data, so a 1 MiB allreduce moves
// 45-vector pieces between racks, not the sub-vector ones of a flat
// 10,440-way cut.
//
// A rack holds U = R nodes x T TSPs; piece t = m T + j belongs to TSP j of
// node m (its owner).  The buffer is cut into K parts (HIER_PARTS, fewer
// for small buffers), each into U pieces: chunk (k, t) is lower_chunk
// k U + t of K U, so node m's pieces (its node-group) are one range, cut
// into L sub-groups of positions, one per cable of a node pair (L =
// links_per_node_pair, at most T).
//
//   A   in node n, the TSP holding cable c to node m collects sub-group
//       (m, c): every other TSP of n sends it there, reduced; node n's own
//       pieces go to their owners (dragonfly3's stage 1);
//   B   each collector sends each piece of its sub-group to the owner in
//       node m, over its cable and at most one local hop: the owner then
//       holds its rack's sum (dragonfly3's stage 2, the reduction);
//   G   each chunk has a root rack, spread over the racks.  Every other
//       rack's owner sends its sum to the TSP of the root rack holding the
//       cable to its rack, which adds it to its own data (the root rack
//       skips A, B, B' and A' for that chunk, so every TSP there still holds
//       its own contribution); the root rack reduces the chunk to its owner
//       through each node's TSP j, and broadcasts the total back the same
//       way, then over the same cables to every other rack's owner;
//   B'  A' the AllGather: the owner sends the total to the collector of
//       its sub-group in every other node, which sends the sub-group to the
//       rest of its node; node n's own pieces go from their owners.
// Every stage waits only for its own chunk's data, so the parts pipeline.
// The emission order is the list scheduler's priority (hier_lower), and
// every transfer fills gaps (DagNode.fill_gaps, passes/schedule.c): the
// long local streams of A and A' are cut into the gaps the short cable
// stages leave, rather than wait for a gap as long as themselves.
//
// Hazards are ordered by dependencies: a TSP's copy of a chunk is written
// over (B', A', the broadcast) only after every transfer that read it in
// its old form (its own sends up the hierarchy, which the data it gets
// back depends on), and no reduction lands in a range its device still has
// to send unreduced.
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>

// Pipeline parts of the buffer: enough that one part's local-link stage
// (A) overlaps another's cable stages (B, G), and that the last part's
// chain (B, G, B', A') after every A is short.  Named setting; fewer when
// a chunk would fall under HIER_MIN_CHUNK_VECTORS.  On system10440 at
// 1 MiB: 2 parts 33,685 cycles, 3 30,116, 4 28,014 (docs/collectives.md).
#define HIER_PARTS 4
#define HIER_MIN_CHUNK_VECTORS 8

typedef struct Hier {
  Lowering *l;
  const Topology *t;
  int T, R, U, L;     // TSPs a node, nodes a rack, TSPs a rack, sub-groups a node-group
  int Q, K;           // racks in the group, parts
  int *rack;          // group rack index -> the topology's rack number
  int *land;          // [root * Q + r]: the device of group rack `root` holding a cable to rack r
  int *col;           // [((q * R + n) * R + m) * L + c]: the collector of sub-group (m, c) in node n of rack q
  IntList *a_into;    // by part, then group device q U + u: A's reductions into it (B' into it, gathering)
  IntList *b_into;    // ... B's into it (then the broadcast's write of the total)
  IntList *g_into;    // by rack device u: the chunk's gathering reductions into it (root rack)
  int *g_done;        // by rack device u: the broadcast's write of the total there (-1: holds it)
  IntList scratch;
} Hier;

static IntList *A(Hier *h, int k) { return h->a_into + (size_t)k * h->Q * h->U; }
static IntList *B(Hier *h, int k) { return h->b_into + (size_t)k * h->Q * h->U; }

static int device(const Hier *h, int q, int node, int tsp) { return h->rack[q] * h->U + node * h->T + tsp; }
static int collector(const Hier *h, int q, int n, int m, int c) { return h->col[((q * h->R + n) * h->R + m) * h->L + c]; }
static int root_of(const Hier *h, int k, int t) { return (k * h->U + t) % h->Q; }
// Sub-group c of a node-group: positions [first_pos(c), first_pos(c + 1)).
static int first_pos(const Hier *h, int c) { return c * h->T / h->L; }
static int group_of(const Hier *h, int j) {
  int c = 0;
  while (j >= first_pos(h, c + 1)) c++;
  return c;
}
// A device's index in the per-part lists: q U + its place in rack q.
static int slot(const Hier *h, int q, int dev) { return q * h->U + dev - h->rack[q] * h->U; }

static void chunk(const Hier *h, int k, int t, int64_t *offset, int64_t *bytes) {
  lower_chunk(h->l, k * h->U + t, h->K * h->U, offset, bytes);
}

// ---- applicability ----

// Transfers of one part, at most (a root chunk splits a range in two): A
// and A' 2 Q R T ((R - 1) L + T - 1) each doubled, B and B' 2 Q R T (R - 1),
// G per chunk 2 ((Q - 1) + R (T - 1) + R - 1).
static int64_t part_transfers(int64_t q, int64_t r, int64_t tpn, int64_t sub) {
  return 4 * q * r * tpn * ((r - 1) * sub + tpn - 1) + 2 * q * r * tpn * (r - 1) +
         2 * r * tpn * ((q - 1) + r * (tpn - 1) + r - 1);
}

static int parts_for(const Lowering *l, int u) {
  int64_t vb = l->c->topo->link.vector_bytes, vectors = (layout_bytes(l->c, l->buffer) + vb - 1) / vb;
  return (int)MAX(1, MIN(HIER_PARTS, vectors / ((int64_t)u * HIER_MIN_CHUNK_VECTORS)));
}

static int subgroups(const Topology *t) { return MAX(1, MIN(t->df.links_per_node_pair, t->df.tsps_per_node)); }

// Whether the group's devices all sit in one rack of u devices.
static bool one_rack(const Lowering *l, int u) {
  for (int g = 1; g < l->ngroup; g++)
    if (l->group[g] / u != l->group[0] / u) return false;
  return true;
}

static bool hier_applies(const Lowering *l, char *why, size_t whylen) {
  const Topology *t = l->c->topo;
  if (t->family != FAMILY_DRAGONFLY || !t->df.two_level) {
    snprintf(why, whylen, "it needs a two-level dragonfly (racks of nodes), not %s",
             t->family == FAMILY_DRAGONFLY ? "a one-level one" : ir_family_names[t->family]);
    return false;
  }
  if (l->op->kind != OP_ALLREDUCE) {
    snprintf(why, whylen, "it lowers allreduce only");
    return false;
  }
  int u = t->df.tsps_per_node * t->df.nodes_per_rack;
  if (one_rack(l, u)) {
    snprintf(why, whylen, "its group is one rack; the rack's own algorithms (dragonfly3, multitree) cover it");
    return false;
  }
  if (!lower_whole_blocks(l, u, "rack", why, whylen)) return false;
  int64_t transfers = parts_for(l, u) * part_transfers(l->ngroup / u, t->df.nodes_per_rack, t->df.tsps_per_node,
                                                       subgroups(t));
  if (transfers > LOWER_MAX_TRANSFERS) {
    snprintf(why, whylen, "it takes %lld transfers, more than LOWER_MAX_TRANSFERS (%d)", (long long)transfers,
             LOWER_MAX_TRANSFERS);
    return false;
  }
  return true;
}

// ---- the cables ----

// land[root * Q + r]: the first TSP of rack `root` (in id order) with a
// working cable to rack r; without one, the TSP at position r mod U (the
// router then finds a way).
static void find_landings(Hier *h) {
  int nracks = h->t->ndevices / h->U + 1;
  int *index = xmalloc(sizeof(int) * (size_t)nracks);
  for (int i = 0; i < nracks; i++) index[i] = -1;
  for (int q = 0; q < h->Q; q++) index[h->rack[q]] = q;
  for (int q = 0; q < h->Q; q++)
    for (int r = 0; r < h->Q; r++) h->land[q * h->Q + r] = h->rack[q] * h->U + r % h->U;
  char *set = xcalloc((size_t)h->Q * h->Q, 1);
  for (int q = 0; q < h->Q; q++)
    for (int u = 0; u < h->U; u++) {
      const Device *d = &h->t->devices[h->rack[q] * h->U + u];
      for (int p = 0; p < d->nports; p++) {
        const Port *port = &d->ports[p];
        if (port->link < 0 || h->t->links.data[port->link].failed) continue;
        int r = index[port->peer / h->U];
        if (r < 0 || r == q || set[q * h->Q + r]) continue;
        set[q * h->Q + r] = 1;
        h->land[q * h->Q + r] = d->id;
      }
    }
  free(set);
  free(index);
}

// col: in node n of rack q, the TSP holding the c-th working cable (mod
// their count, in TSP order) to node m; without one, position (m + c) mod
// T (the router then finds a way).
static void find_collectors(Hier *h) {
  int tsps[64];
  for (int q = 0; q < h->Q; q++)
    for (int n = 0; n < h->R; n++)
      for (int m = 0; m < h->R; m++) {
        int count = 0, far_node = h->rack[q] * h->R + m;
        for (int k = 0; k < h->T; k++) {
          const Device *d = &h->t->devices[device(h, q, n, k)];
          for (int p = h->T - 1; p < d->nports; p++) {
            const Port *port = &d->ports[p];
            if (port->link < 0 || h->t->links.data[port->link].failed || port->peer / h->T != far_node) continue;
            if (count < (int)ARRAY_LEN(tsps)) tsps[count++] = k;
          }
        }
        for (int c = 0; c < h->L; c++)
          h->col[((q * h->R + n) * h->R + m) * h->L + c] = device(h, q, n, count ? tsps[c % count] : (m + c) % h->T);
      }
}

// ---- sending ----

static int send(Hier *h, int src, int dst, int64_t offset, int64_t bytes, bool reduce, const IntList *deps) {
  return lower_send(h->l, src, dst, offset, bytes, reduce, deps ? deps->data : NULL, deps ? deps->len : 0);
}

// Sends pieces [t0, t1) of part k from src to dst in rack q, in as many
// transfers as the rack's root chunks (stage G's) cut the range into; each
// id is pushed to out (when given), and one written over marks dst's
// result done.
static void send_range(Hier *h, int q, int k, int t0, int t1, int src, int dst, bool reduce, const IntList *deps,
                       IntList *out) {
  if (src == dst) return;
  int first = -1;
  for (int t = t0; t <= t1; t++) {
    bool skip = t == t1 || root_of(h, k, t) == q;
    if (!skip && first < 0) first = t;
    if (!skip || first < 0) continue;
    int64_t offset, bytes;
    lower_chunk_span(h->l, k * h->U + first, k * h->U + t, h->K * h->U, &offset, &bytes);
    first = -1;
    if (!bytes) continue;
    int x = send(h, src, dst, offset, bytes, reduce, deps);
    if (out) VEC_PUSH(&h->l->c->arena, out, x);
    if (!reduce) lower_done(h->l, dst, x);
  }
}

// ---- A and B: the ReduceScatter inside every rack ----

static void stage_a(Hier *h, int k) {
  for (int q = 0; q < h->Q; q++)
    for (int n = 0; n < h->R; n++)
      for (int p = 0; p < h->T; p++) {
        int src = device(h, q, n, p);
        for (int m = 0; m < h->R; m++)
          for (int c = 0; c < (m == n ? h->T : h->L); c++) {
            int dst, t0, t1;
            if (m == n) {  // node n's own pieces, to their owners
              dst = device(h, q, n, c), t0 = n * h->T + c, t1 = t0 + 1;
            } else {
              dst = collector(h, q, n, m, c), t0 = m * h->T + first_pos(h, c), t1 = m * h->T + first_pos(h, c + 1);
            }
            send_range(h, q, k, t0, t1, src, dst, true, NULL, &A(h, k)[slot(h, q, dst)]);
          }
      }
}

static void stage_b(Hier *h, int k) {
  for (int q = 0; q < h->Q; q++)
    for (int n = 0; n < h->R; n++)
      for (int m = 0; m < h->R; m++) {
        if (m == n) continue;
        for (int j = 0; j < h->T; j++) {
          int t = m * h->T + j, src = collector(h, q, n, m, group_of(h, j)), owner = device(h, q, m, j);
          int64_t offset, bytes;
          chunk(h, k, t, &offset, &bytes);
          if (!bytes || root_of(h, k, t) == q) continue;
          int x = send(h, src, owner, offset, bytes, true, &A(h, k)[slot(h, q, src)]);
          VEC_PUSH(&h->l->c->arena, &B(h, k)[q * h->U + m * h->T + j], x);
        }
      }
}

// ---- G: one chunk across the racks ----

static IntList *deps_of(Hier *h, const IntList *a, const IntList *b) {
  h->scratch.len = 0;
  for (int i = 0; a && i < a->len; i++) VEC_PUSH(&h->l->c->arena, &h->scratch, a->data[i]);
  for (int i = 0; b && i < b->len; i++) VEC_PUSH(&h->l->c->arena, &h->scratch, b->data[i]);
  return &h->scratch;
}

static IntList *one_dep(Hier *h, int x) {
  h->scratch.len = 0;
  if (x >= 0) VEC_PUSH(&h->l->c->arena, &h->scratch, x);
  return &h->scratch;
}

// The root rack's device u has the total once these are done.
static IntList *total_at(Hier *h, int u, int owner_u) {
  return u == owner_u ? deps_of(h, &h->g_into[u], NULL) : one_dep(h, h->g_done[u]);
}

// Every rack's sum of chunk (k, t) into the root rack, reduced to the
// owner there, broadcast back to every TSP of the root rack and to every
// other rack's owner (whose b_into then holds that write alone).
static void stage_g(Hier *h, int k, int t) {
  int64_t offset, bytes;
  chunk(h, k, t, &offset, &bytes);
  if (!bytes) return;
  int root = root_of(h, k, t), j = t % h->T, m = t / h->T, owner_u = t, base = h->rack[root] * h->U;
  for (int u = 0; u < h->U; u++) h->g_into[u].len = 0, h->g_done[u] = -1;
  for (int r = 0; r < h->Q; r++) {  // up: each rack's owner to the root rack's TSP at the cable
    if (r == root) continue;
    int dst = h->land[root * h->Q + r], at = r * h->U + owner_u;
    int x = send(h, device(h, r, m, j), dst, offset, bytes, true, deps_of(h, &A(h, k)[at], &B(h, k)[at]));
    VEC_PUSH(&h->l->c->arena, &h->g_into[dst - base], x);
  }
  for (int n = 0; n < h->R; n++)  // through each node's TSP j
    for (int p = 0; p < h->T; p++) {
      if (p == j) continue;
      int x = send(h, base + n * h->T + p, base + n * h->T + j, offset, bytes, true,
                   deps_of(h, &h->g_into[n * h->T + p], NULL));
      VEC_PUSH(&h->l->c->arena, &h->g_into[n * h->T + j], x);
    }
  for (int n = 0; n < h->R; n++) {  // to the owner
    if (n == m) continue;
    int x = send(h, base + n * h->T + j, base + owner_u, offset, bytes, true, deps_of(h, &h->g_into[n * h->T + j], NULL));
    VEC_PUSH(&h->l->c->arena, &h->g_into[owner_u], x);
  }
  for (int i = 0; i < h->g_into[owner_u].len; i++) lower_done(h->l, base + owner_u, h->g_into[owner_u].data[i]);
  for (int n = 0; n < h->R; n++) {  // down: to TSP j of each node
    if (n == m) continue;
    int dst = base + n * h->T + j, x = send(h, base + owner_u, dst, offset, bytes, false, total_at(h, owner_u, owner_u));
    h->g_done[dst - base] = x;
    lower_done(h->l, dst, x);
  }
  for (int n = 0; n < h->R; n++)  // to the node's others
    for (int p = 0; p < h->T; p++) {
      if (p == j) continue;
      int dst = base + n * h->T + p;
      int x = send(h, base + n * h->T + j, dst, offset, bytes, false, total_at(h, n * h->T + j, owner_u));
      h->g_done[dst - base] = x;
      lower_done(h->l, dst, x);
    }
  for (int r = 0; r < h->Q; r++) {  // back over the cables
    if (r == root) continue;
    int src = h->land[root * h->Q + r], dst = device(h, r, m, j);
    int x = send(h, src, dst, offset, bytes, false, total_at(h, src - base, owner_u));
    lower_done(h->l, dst, x);
    B(h, k)[r * h->U + owner_u].len = 0;
    VEC_PUSH(&h->l->c->arena, &B(h, k)[r * h->U + owner_u], x);
  }
}

// ---- B' and A': the AllGather inside every rack ----

static void stage_b_back(Hier *h, int k) {
  for (int q = 0; q < h->Q; q++)
    for (int u = 0; u < h->U; u++) A(h, k)[q * h->U + u].len = 0;  // now: B' into each collector
  for (int q = 0; q < h->Q; q++)
    for (int m = 0; m < h->R; m++)
      for (int j = 0; j < h->T; j++) {
        int t = m * h->T + j;
        int64_t offset, bytes;
        chunk(h, k, t, &offset, &bytes);
        if (!bytes || root_of(h, k, t) == q) continue;
        for (int n = 0; n < h->R; n++) {
          if (n == m) continue;
          int dst = collector(h, q, n, m, group_of(h, j));
          int x = send(h, device(h, q, m, j), dst, offset, bytes, false, &B(h, k)[q * h->U + t]);
          lower_done(h->l, dst, x);
          VEC_PUSH(&h->l->c->arena, &A(h, k)[slot(h, q, dst)], x);
        }
      }
}

static void stage_a_back(Hier *h, int k) {
  for (int q = 0; q < h->Q; q++)
    for (int n = 0; n < h->R; n++)
      for (int m = 0; m < h->R; m++)
        for (int c = 0; c < (m == n ? h->T : h->L); c++) {
          int src, t0, t1;
          const IntList *deps;
          if (m == n) {  // node n's own pieces, from their owners
            src = device(h, q, n, c), t0 = n * h->T + c, t1 = t0 + 1, deps = &B(h, k)[q * h->U + t0];
          } else {
            src = collector(h, q, n, m, c), t0 = m * h->T + first_pos(h, c), t1 = m * h->T + first_pos(h, c + 1);
            deps = &A(h, k)[slot(h, q, src)];
          }
          for (int p = 0; p < h->T; p++) send_range(h, q, k, t0, t1, src, device(h, q, n, p), false, deps, NULL);
        }
}

static void hier_lower(Lowering *l) {
  const Topology *topo = l->c->topo;
  Hier h = {.l = l, .t = topo, .T = topo->df.tsps_per_node, .R = topo->df.nodes_per_rack, .L = subgroups(topo)};
  h.U = h.T * h.R;
  h.Q = l->ngroup / h.U;
  h.K = parts_for(l, h.U);
  h.rack = xmalloc(sizeof(int) * (size_t)h.Q);
  for (int q = 0; q < h.Q; q++) h.rack[q] = l->group[q * h.U] / h.U;
  h.land = xmalloc(sizeof(int) * (size_t)h.Q * h.Q);
  find_landings(&h);
  h.col = xmalloc(sizeof(int) * (size_t)h.Q * h.R * h.R * h.L);
  find_collectors(&h);
  h.a_into = xcalloc((size_t)h.K * h.Q * h.U, sizeof(IntList));
  h.b_into = xcalloc((size_t)h.K * h.Q * h.U, sizeof(IntList));
  h.g_into = xcalloc((size_t)h.U, sizeof(IntList));
  h.g_done = xmalloc(sizeof(int) * (size_t)h.U);
  // The order of emission is the list scheduler's priority: each part's
  // reduction (A, B, G) before the next part's, so a part's cable stages
  // are not queued behind the next part's local streams; then every
  // part's B', then every part's A' (the long local streams, cut into the
  // gaps the rest leaves: fill_gaps).
  l->fill_gaps = true;
  for (int k = 0; k < h.K; k++) {
    l->lane = 0;
    stage_a(&h, k);
    l->lane = 1;
    stage_b(&h, k);
    l->lane = 2;
    for (int t = 0; t < h.U; t++) stage_g(&h, k, t);
  }
  l->lane = 1;
  for (int k = 0; k < h.K; k++) stage_b_back(&h, k);
  l->lane = 0;
  for (int k = 0; k < h.K; k++) stage_a_back(&h, k);
  l->fill_gaps = false;
  free(h.rack);
  free(h.land);
  free(h.col);
  free(h.a_into);
  free(h.b_into);
  free(h.g_into);
  free(h.g_done);
}

const CollectiveAlgo algo_hier = {ALGO_HIER, hier_applies, hier_lower, NULL, NULL};
