// algo_ringbiodd.c: the bidirectional ring for odd-by-odd meshes.  A
// collective algorithm for the lowering pass (passes/lower.c registers it as
// algo_ringbiodd).
//
// Seed 003 s IV, Algorithm 1.  An m x n mesh with m and n odd has no
// Hamiltonian cycle (it is bipartite with an odd node count), so biring
// cannot run on it.  RingBiOdd leaves one corner X out of the ring: the other
// N-1 devices form a cycle R (below), and the data is cut in two halves, one
// for each direction round R, each half into N-1 labels.  In the forward ring
// X's neighbour M0 is the merging device, in the backward ring its other
// neighbour M1: before M sends (or finally holds) label k of its ring, X has
// sent its own copy of label k to M, reduced into M's (Algorithm 1 lines
// 5-9; X sends the labels in the order M needs them).  After the two rings'
// AllGather M sends every completed label of its half back to X (line 10,
// the reverse schedule).  Timesteps: 1 + 2(N-2) + 1 per direction, with
// D / (2(N-1)) bytes a step; X's two links each carry half of D each way.
//
// The cycle through every device but the corner X = (W-1, H-1), for W, H >= 3
// odd (x fastest in device ids): along row 0 from (0,0) to (W-1,0); then a
// snake right to left and back through rows 1 .. H-3 over x = 1 .. W-1,
// ending at (W-1, H-3) (an even number of rows); then the last two rows over
// x = 1 .. W-1 column pair by column pair, up column W-2, down W-3, ..., up
// column 1 to (1, H-1); and home down column 0.  Allreduce only: X holds no
// shard of the ring, so a reduce_scatter or all_gather is refused.
#include "passes.h"

#include <stdlib.h>

static int at(int w, int x, int y) { return x + w * y; }

// The cycle through every device of a W x H mesh but (W-1, H-1), into
// order (W*H - 1 entries).
static void corner_free_cycle(int w, int h, int *order) {
  int n = 0;
  for (int x = 0; x < w; x++) order[n++] = at(w, x, 0);
  for (int y = 1; y <= h - 3; y++)
    for (int i = 0; i < w - 1; i++) order[n++] = at(w, y % 2 ? w - 1 - i : 1 + i, y);
  order[n++] = at(w, w - 1, h - 2);
  for (int x = w - 2, up = 1; x >= 1; x--, up = !up) {
    order[n++] = at(w, x, up ? h - 2 : h - 1);
    order[n++] = at(w, x, up ? h - 1 : h - 2);
  }
  for (int y = h - 1; y >= 1; y--) order[n++] = at(w, 0, y);
}

static bool ringbiodd_applies(const Lowering *l, char *why, size_t whylen) {
  const Topology *t = l->c->topo;
  if (t->family != FAMILY_MESH || t->ndims != 2 || t->dims[0] % 2 == 0 || t->dims[1] % 2 == 0 || t->dims[0] < 3 ||
      t->dims[1] < 3) {
    snprintf(why, whylen, "it needs a two-dimensional mesh with both sides odd and at least 3 (use biring when "
                          "a side is even)");
    return false;
  }
  if (l->op->kind != OP_ALLREDUCE) {
    snprintf(why, whylen, "it lowers allreduce only (the left-out corner holds no shard of its rings)");
    return false;
  }
  if (l->ngroup != t->ndevices) {
    snprintf(why, whylen, "it needs every device of the mesh in the group, and the group has %d of %d",
             l->ngroup, t->ndevices);
    return false;
  }
  if (!lower_ring_fits(l, 2, why, whylen)) return false;
  int w = t->dims[0], h = t->dims[1], n = t->ndevices - 1;
  int *order = xmalloc(sizeof(int) * (size_t)n);
  corner_free_cycle(w, h, order);
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    int a = order[i], b = order[(i + 1) % n];
    if (ring_link_between(t, a, b, -1) < 0) {
      snprintf(why, whylen, "its ring needs the link between device %d and device %d, which has failed", a, b);
      ok = false;
    }
  }
  int corner = at(w, w - 1, h - 1), m0 = at(w, w - 2, h - 1), m1 = at(w, w - 1, h - 2);
  if (ok && (ring_link_between(t, corner, m0, -1) < 0 || ring_link_between(t, corner, m1, -1) < 0)) {
    snprintf(why, whylen, "the left-out corner, device %d, needs its links to devices %d and %d", corner, m0, m1);
    ok = false;
  }
  free(order);
  return ok;
}

static int position_of(const int *order, int n, int device) {
  for (int p = 0; p < n; p++)
    if (order[p] == device) return p;
  return -1;
}

static int wrap(int x, int n) { return ((x % n) + n) % n; }

// One direction: the ring over order (n positions) carrying half `half` of
// the data, merging the corner's copy through `merger`.
static void odd_ring(Lowering *l, const int *order, int n, int half, int corner, int merger) {
  int m = position_of(order, n, merger);
  int64_t *offset = xmalloc(sizeof(int64_t) * (size_t)n), *bytes = xmalloc(sizeof(int64_t) * (size_t)n);
  int *merge_in = xmalloc(sizeof(int) * (size_t)n), *complete = xmalloc(sizeof(int) * (size_t)n * (size_t)n);
  for (int k = 0; k < n; k++) lower_chunk(l, half * n + k, 2 * n, &offset[k], &bytes[k]);
  // The merger sends label m - s in ReduceScatter step s and ends holding
  // label m + 1: the corner sends its labels in that order.
  for (int s = 0; s < n; s++) {
    int k = wrap(m - s, n);
    merge_in[k] = bytes[k] ? lower_send(l, corner, merger, offset[k], bytes[k], true, NULL, 0) : -1;
    if (merge_in[k] >= 0) lower_done(l, merger, merge_in[k]);
  }
  RingPlan rp = {.n = n, .order = order, .offset = offset, .bytes = bytes, .reduce_scatter = true,
                 .all_gather = true, .lag = 1, .merge_pos = m, .merge_in = merge_in, .complete = complete};
  lower_ring_plan(l, &rp);
  // Back to the corner, in the order the labels complete at the merger.
  for (int s = -1; s < n - 1; s++) {
    int k = wrap(m - s, n);
    if (!bytes[k]) continue;
    int deps[2] = {complete[m * n + k], s < 0 ? merge_in[k] : -1};
    lower_done(l, corner, lower_send(l, merger, corner, offset[k], bytes[k], false, deps, 2));
  }
  free(offset);
  free(bytes);
  free(merge_in);
  free(complete);
}

static void ringbiodd_lower(Lowering *l) {
  const Topology *t = l->c->topo;
  int w = t->dims[0], h = t->dims[1], n = t->ndevices - 1;
  int *order = xmalloc(sizeof(int) * (size_t)n), *reversed = xmalloc(sizeof(int) * (size_t)n);
  corner_free_cycle(w, h, order);
  for (int i = 0; i < n; i++) reversed[i] = order[n - 1 - i];
  int corner = at(w, w - 1, h - 1);
  l->lane = 0;
  odd_ring(l, order, n, 0, corner, at(w, w - 2, h - 1));
  l->lane = 1;
  odd_ring(l, reversed, n, 1, corner, at(w, w - 1, h - 2));
  free(order);
  free(reversed);
}

const CollectiveAlgo algo_ringbiodd = {ALGO_RINGBIODD, ringbiodd_applies, ringbiodd_lower, NULL, NULL};
