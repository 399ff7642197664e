// algo_ring2d.c: hierarchical rings along one axis of a 2-D mesh or torus,
// then the other.  A collective algorithm for the lowering pass
// (passes/lower.c registers it as algo_ring2d).
//
// Seed 003 s II-B ("Ring-2D"): the data is cut in two halves.  Half 0 runs a
// ReduceScatter along every row (a ring over the row's W devices), then a
// ReduceScatter along every column over the 1/W of the half each device now
// holds, then the columns' AllGather and the rows' AllGather; half 1 does
// the same with the axes swapped, at the same time.  Each device sees
// 2(W-1) + 2(H-1) timesteps per half, with D/(2W) then D/(2WH) bytes a step.
//
// A ring along a mesh line has no wrap-around link: its closing hop runs
// back over the line's W-1 links (routing carries it), which is what makes
// Ring-2D slow on meshes (003 Table I); on a torus every hop is one link.
//
// Labels: half h of the data is W*H pieces (chunks of lower_chunk, 2WH in
// all).  Along the first axis label a is pieces [a*n2, (a+1)*n2) of the
// half (contiguous, so one transfer); along the second, a device that
// ended the first ReduceScatter with label a moves piece a*n2 + b as label b.
// Allreduce only: the shards a reduce_scatter must leave are the op's
// element ranges, not these pieces.
#include "passes.h"

#include <stdlib.h>

static bool ring2d_applies(const Lowering *l, char *why, size_t whylen) {
  const Topology *t = l->c->topo;
  if (l->op->kind != OP_ALLREDUCE) {
    snprintf(why, whylen, "it lowers allreduce only");
    return false;
  }
  if ((t->family != FAMILY_MESH && t->family != FAMILY_TORUS) || t->ndims != 2) {
    snprintf(why, whylen, "it needs a two-dimensional mesh or torus");
    return false;
  }
  if (t->dims[0] < 2 || t->dims[1] < 2) {
    snprintf(why, whylen, "it needs at least 2 devices along both axes (this %s is %d x %d: use ring)",
             ir_family_names[t->family], t->dims[0], t->dims[1]);
    return false;
  }
  if (l->ngroup != t->ndevices) {
    snprintf(why, whylen, "it needs every device of the %s in the group, and the group has %d of %d",
             ir_family_names[t->family], l->ngroup, t->ndevices);
    return false;
  }
  int64_t w = t->dims[0], h = t->dims[1];
  int64_t transfers = 2 * (h * 2 * (w - 1) * w + w * 2 * (h - 1) * h);
  if (transfers > LOWER_MAX_TRANSFERS) {
    snprintf(why, whylen, "its rings take %lld transfers, more than LOWER_MAX_TRANSFERS (%d)",
             (long long)transfers, LOWER_MAX_TRANSFERS);
    return false;
  }
  return true;
}

typedef struct Grid {
  Lowering *l;
  int dims[2];
  int first;           // the axis of the outer rings (0: x, 1: y)
  int half;
  int *complete1;      // first axis, by device: n1 x n1 ring completions (RingPlan.complete)
  int *complete2;      // second axis, by device: n2 completions, by label, then complete1's
} Grid;

static int device_at(const Grid *g, int along, int line, int axis) {
  int c[2];
  c[axis] = along;
  c[1 - axis] = line;
  return c[0] + g->dims[0] * c[1];
}

static int wrap(int x, int n) { return ((x % n) + n) % n; }

// The outer phase's rings: ReduceScatter (rs) or AllGather along the first
// axis, over every line.  Labels are runs of n2 pieces.
static void outer_rings(Grid *g, bool rs) {
  int ax = g->first, n1 = g->dims[ax], n2 = g->dims[1 - ax], pieces = 2 * n1 * n2;
  int *order = xmalloc(sizeof(int) * (size_t)n1);
  int64_t *offset = xmalloc(sizeof(int64_t) * (size_t)n1), *bytes = xmalloc(sizeof(int64_t) * (size_t)n1);
  const int **start = xmalloc(sizeof(int *) * (size_t)n1);
  int *nstart = xmalloc(sizeof(int) * (size_t)n1);
  for (int a = 0; a < n1; a++) {
    int k0 = g->half * n1 * n2 + a * n2;
    lower_chunk_span(g->l, k0, k0 + n2, pieces, &offset[a], &bytes[a]);
  }
  for (int line = 0; line < n2; line++) {
    for (int p = 0; p < n1; p++) {
      order[p] = device_at(g, p, line, ax);
      // The AllGather starts once the position's label is complete there:
      // the inner rings have completed each of its pieces, and the outer
      // ReduceScatter's last sum into it has landed (the inner rings' sums
      // into a piece need not wait for that one, so do not stand for it).
      start[p] = rs ? NULL : &g->complete2[(size_t)order[p] * (size_t)(n2 + 1)];
      nstart[p] = rs ? 0 : n2 + 1;
    }
    RingPlan rp = {.n = n1, .order = order, .offset = offset, .bytes = bytes, .reduce_scatter = rs,
                   .all_gather = !rs, .lag = 1, .start_deps = start, .nstart_deps = nstart,
                   .complete = rs ? xmalloc(sizeof(int) * (size_t)n1 * (size_t)n1) : NULL};
    lower_ring_plan(g->l, &rp);
    if (rs)
      for (int p = 0; p < n1; p++) g->complete1[order[p]] = rp.complete[p * n1 + wrap(p + 1, n1)];
    free(rp.complete);
  }
  free(order);
  free(offset);
  free(bytes);
  free(start);
  free(nstart);
}

// The inner rings along the other axis: every device of line-position p
// holds outer label p + 1; its pieces go round as labels 0 .. n2-1.
static void inner_rings(Grid *g) {
  int ax = 1 - g->first, n2 = g->dims[ax], n1 = g->dims[1 - ax], pieces = 2 * n1 * n2;
  int *order = xmalloc(sizeof(int) * (size_t)n2);
  int64_t *offset = xmalloc(sizeof(int64_t) * (size_t)n2), *bytes = xmalloc(sizeof(int64_t) * (size_t)n2);
  const int **start = xmalloc(sizeof(int *) * (size_t)n2);
  int *nstart = xmalloc(sizeof(int) * (size_t)n2);
  int *complete = xmalloc(sizeof(int) * (size_t)n2 * (size_t)n2);
  for (int p = 0; p < n1; p++) {  // the line across the outer rings' position p
    int label = wrap(p + 1, n1);
    for (int b = 0; b < n2; b++)
      lower_chunk(g->l, g->half * n1 * n2 + label * n2 + b, pieces, &offset[b], &bytes[b]);
    for (int q = 0; q < n2; q++) {
      order[q] = device_at(g, q, p, ax);
      start[q] = &g->complete1[order[q]];
      nstart[q] = 1;
    }
    RingPlan rp = {.n = n2, .order = order, .offset = offset, .bytes = bytes, .reduce_scatter = true,
                   .all_gather = true, .lag = 1, .start_deps = start, .nstart_deps = nstart,
                   .complete = complete};
    lower_ring_plan(g->l, &rp);
    // Each device's completions are the outer AllGather's start dependencies.
    for (int q = 0; q < n2; q++) {
      int *done = &g->complete2[(size_t)order[q] * (size_t)(n2 + 1)];
      for (int b = 0; b < n2; b++) done[b] = complete[q * n2 + b];
      done[n2] = g->complete1[order[q]];
    }
  }
  free(order);
  free(offset);
  free(bytes);
  free(start);
  free(nstart);
  free(complete);
}

static void ring2d_lower(Lowering *l) {
  const Topology *t = l->c->topo;
  for (int half = 0; half < 2; half++) {
    Grid g = {.l = l, .dims = {t->dims[0], t->dims[1]}, .first = half, .half = half};
    int n2 = g.dims[1 - half];
    g.complete1 = xmalloc(sizeof(int) * (size_t)t->ndevices);
    g.complete2 = xmalloc(sizeof(int) * (size_t)t->ndevices * (size_t)(n2 + 1));
    l->lane = 2 * half;
    outer_rings(&g, true);
    l->lane = 2 * half + 1;
    inner_rings(&g);
    l->lane = 2 * half;
    outer_rings(&g, false);
    free(g.complete1);
    free(g.complete2);
  }
}

const CollectiveAlgo algo_ring2d = {ALGO_RING2D, ring2d_applies, ring2d_lower, NULL, NULL};
