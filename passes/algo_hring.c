// algo_hring.c: the latency-optimised hierarchical ring on meshes.  A
// collective algorithm for the lowering pass (passes/lower.c registers it as
// algo_hring).
//
// Seed 004 s IV-A-2 ("Latency Optimized Ring Topology in ARIES"): instead of
// one ring through all N devices (N-1 steps to accumulate a chunk), rings
// run at once inside small groups, and the partial sums are then
// accumulated by rings across the groups: an L-level hierarchy whose
// reduction takes L x (N^(1/L) - 1) steps.  Here the levels are the mesh's
// dimensions (L = the number of dimensions of size >= 2; on a sqrt(N) x
// sqrt(N) mesh, the seed's L = 2 with rings of N^(1/2)):
//   level 0  every row (the devices that differ only in x) is a ring; a
//            ReduceScatter in it leaves row position p with piece p+1 of
//            the buffer, summed over the row;
//   level 1  every column is a ring over the piece its devices share (one
//            x, hence one piece); a ReduceScatter cuts that piece again;
//   level 2  (3-D meshes) the same along z;
// then AllGathers in the reverse order (z, y, x) rebuild every piece on
// every device.  The reduction takes sum_d (n_d - 1) steps instead of N-1,
// and the whole AllReduce 2 sum_d (n_d - 1); each device still sends about
// 2 D (1 - 1/N) bytes, like a flat ring.  A line is a ring in coordinate
// order; its closing hop (last -> first) is one bypass link when the mesh
// has them (docs/topology.md), otherwise routed back along the line, over
// the link directions the ring itself leaves idle (a unidirectional ring
// only sends towards +d), so it costs latency and never bandwidth.
//
// Chunks nest: the buffer is cut into C = prod n_d chunks (lower_chunk of C);
// a level-k piece is a run of consecutive chunks, so every transfer moves
// one contiguous range.  last[d][c] is the transfer that last wrote device
// d's chunk c; a send of a range waits for every write into it there.
// Each ring step waits for the chunk's arrival from the step before, as in
// algo_ring.c; a level's first step waits for the level before through
// last[], and the AllGather's overwrites land only after the owner's
// reduction, which transitively follows every send of the original data.
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>

// The most devices hring lowers (a named limit: it keeps a table of
// devices x chunks, N^2 ints, 64 MiB at the limit).
#define HRING_MAX_DEVICES 4096

typedef struct Hier {
  Lowering *l;
  const Topology *t;
  int nchunks;      // C = product of the dimensions
  int *last;        // [device * nchunks + chunk]: the last transfer writing it (-1: none)
  int *deps;        // scratch, nchunks long
  int stride[IR_MAX_TOPO_DIMS];
} Hier;

static bool hring_applies(const Lowering *l, char *why, size_t whylen) {
  const Topology *t = l->c->topo;
  if (t->family != FAMILY_MESH) {
    snprintf(why, whylen, "it needs a mesh topology (rings along rows and columns), not %s",
             ir_family_names[t->family]);
    return false;
  }
  if (l->op->kind != OP_ALLREDUCE) {
    snprintf(why, whylen, "it lowers allreduce only");
    return false;
  }
  if (l->ngroup != t->ndevices) {
    snprintf(why, whylen, "it needs every device of the mesh in the group (%d of %d are)", l->ngroup,
             t->ndevices);
    return false;
  }
  if (t->ndevices > HRING_MAX_DEVICES) {
    snprintf(why, whylen, "the mesh has %d devices, more than HRING_MAX_DEVICES (%d)", t->ndevices,
             HRING_MAX_DEVICES);
    return false;
  }
  int64_t transfers = 0;
  for (int d = 0; d < t->ndims; d++) transfers += 2 * (int64_t)(t->dims[d] - 1) * t->ndevices;
  if (transfers > LOWER_MAX_TRANSFERS) {
    snprintf(why, whylen, "it takes %lld transfers, more than LOWER_MAX_TRANSFERS (%d)", (long long)transfers,
             LOWER_MAX_TRANSFERS);
    return false;
  }
  return true;
}

// Sends chunks [first, first + count) from src to dst after every write
// into them at src and at dst (an overwrite replaces dst's copy; a
// reduction adds to it, and the next send of those chunks from dst must
// carry both this and dst's earlier additions, so this one waits for them
// and becomes the chunks' last write); records the transfer as their last
// write at dst.  Empty ranges send nothing.
static void send_range(Hier *h, int src, int dst, int first, int count, bool reduce) {
  int64_t offset, bytes;
  lower_chunk_span(h->l, first, first + count, h->nchunks, &offset, &bytes);
  if (bytes <= 0) return;
  int n = 0;
  for (int c = first; c < first + count; c++) {
    h->deps[n++] = h->last[src * h->nchunks + c];
    h->deps[n++] = h->last[dst * h->nchunks + c];
  }
  int id = lower_send(h->l, src, dst, offset, bytes, reduce, h->deps, n);
  for (int c = first; c < first + count; c++) h->last[dst * h->nchunks + c] = id;
}

// The device at position p of the line along dim d through device base
// (whose coordinate d is 0).
static int line_device(const Hier *h, int base, int d, int p) { return base + p * h->stride[d]; }

// The first chunk of device dev's level-k piece, and its length in chunks:
// level 0 is the whole buffer; after level j's ReduceScatter, position p
// of the line along j keeps sub-piece (p + 1) mod n_j of its piece.
static void piece_of(const Hier *h, int dev, int level, int *first, int *count) {
  *first = 0;
  *count = h->nchunks;
  for (int j = 0; j < level; j++) {
    int n = h->t->dims[j], p = h->t->devices[dev].coord[j];
    *count /= n;
    *first += ((p + 1) % n) * *count;
  }
}

// One ring step along every line of dim d: position p sends sub-piece
// (p + shift) mod n of its level-d piece to position p+1.
static void ring_step(Hier *h, int d, int shift, bool reduce) {
  int n = h->t->dims[d];
  for (int base = 0; base < h->t->ndevices; base++) {
    if (h->t->devices[base].coord[d] != 0) continue;
    int first, count;
    piece_of(h, base, d, &first, &count);
    int sub = count / n;
    for (int p = 0; p < n; p++) {
      int label = ((p + shift) % n + n) % n;
      send_range(h, line_device(h, base, d, p), line_device(h, base, d, (p + 1) % n), first + label * sub, sub,
                 reduce);
    }
  }
}

static void hring_lower(Lowering *l) {
  const Topology *t = l->c->topo;
  Hier h = {.l = l, .t = t, .nchunks = 1};
  for (int d = 0; d < t->ndims; d++) {
    h.stride[d] = h.nchunks;
    h.nchunks *= t->dims[d];
  }
  h.last = xmalloc(sizeof(int) * (size_t)t->ndevices * (size_t)h.nchunks);
  h.deps = xmalloc(sizeof(int) * 2 * (size_t)h.nchunks);
  for (int i = 0; i < t->ndevices * h.nchunks; i++) h.last[i] = -1;
  for (int d = 0; d < t->ndims; d++) {  // ReduceScatter, level by level
    l->lane = d;
    for (int s = 0; s < t->dims[d] - 1; s++) ring_step(&h, d, -s, true);
  }
  for (int d = t->ndims - 1; d >= 0; d--) {  // AllGather, in reverse
    l->lane = d;
    for (int s = 0; s < t->dims[d] - 1; s++) ring_step(&h, d, 1 - s, false);
  }
  for (int dev = 0; dev < t->ndevices; dev++)
    for (int c = 0; c < h.nchunks; c++) {
      int id = h.last[dev * h.nchunks + c];
      if (id >= 0 && (c == 0 || id != h.last[dev * h.nchunks + c - 1])) lower_done(l, dev, id);
    }
  free(h.last);
  free(h.deps);
}

const CollectiveAlgo algo_hring = {ALGO_HRING, hring_applies, hring_lower, NULL, NULL};
