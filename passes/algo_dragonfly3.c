// algo_dragonfly3.c: the three-stage hierarchical AllReduce of a dragonfly.
// A collective algorithm for the lowering pass (passes/lower.c registers it
// as algo_dragonfly3).
//
// Seed 002 s5.6: "A three-stage, hierarchical all-reduce uses the 8-way
// fully connected TSPs within each node as the first stage, the four global
// links between nodes for the second stage, and final 8-way fully connected
// network within each node to complete the hierarchical all-reduce."
//
// The group is M whole nodes of T TSPs.  The buffer is cut into K pipeline
// parts (DF3_PIPELINE_PARTS, fewer past DF3_TRANSFER_BUDGET), each into M node shards, each into T pieces:
// piece (j, t) of a part belongs to TSP t of the group's node j, its owner.
// Ownership follows the wiring (ir/topology_build.c): in node i, piece
// (j, t) of another node j is collected on the TSP of node i that holds a
// global cable to node j (copy t mod L of the L cables of the pair), so
// stage 2 leaves over a direct global link and lands one local hop (or
// none) from the owner.  On the examples this spreads the collecting evenly:
// a TSP of rack72 holds the cables to two nodes, collects 4 pieces of each
// and its own piece, 9 of the 72.
//   stage 1  in every node, each TSP sends every piece it does not collect
//            to its collector, which reduces it (a direct ReduceScatter over
//            the node's local links);
//   stage 2  each collector sends its node's sum of piece (j, t) to the
//            owner, which reduces it (ReduceScatter across the nodes); the
//            owner then sends the total back to every collector of it
//            (AllGather), overwriting;
//   stage 3  every collector (the owner, for its own node) sends the total
//            to the other TSPs of its node, overwriting.
// Each piece waits only for its own data, so parts pipeline: part p's
// stage 2 crosses the global links while other parts' stages 1 and 3 use
// the local ones.  The transfers are emitted as a wavefront (stage s of
// part p with stage s+1 of part p-1 ...), the order the list scheduler
// then fills the links in.
//
// Hazards: a collector never sends its own copy of a piece in its original
// form (it only reduces), a TSP's copy is overwritten in stage 3 only after
// the total, which follows its stage 1 send; the owner's copy is sent only
// after every reduction into it.  Failed links and two-level systems are
// handled by routing (a pair of nodes without a cable collects on TSP t).
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>

// Pipeline parts of the buffer (a named setting: enough that stage 2 of
// one part overlaps stages 1 and 3 of others; rack72, 64 MiB: measured in
// docs/notes-hier.md).
#define DF3_PIPELINE_PARTS 16
// Parts are fewer when a part's transfers (stages 1 and 3: 2 M^2 T (T-1);
// stage 2: 2 M (M-1) T) would take the collective past this many: the list
// scheduler's time grows faster than linearly in them.  rack72 keeps 16
// parts (10,224 transfers a part); system264 (138,864 a part) takes 1.
#define DF3_TRANSFER_BUDGET (1 << 18)

// Transfers of one part for M nodes of T TSPs.
static int64_t part_transfers(int64_t m, int64_t tpn) { return 2 * m * m * tpn * (tpn - 1) + 2 * m * (m - 1) * tpn; }

// The pipeline's parts for M nodes of T TSPs.
static int pipeline_parts(int64_t m, int64_t tpn) {
  return (int)MAX(1, MIN(DF3_PIPELINE_PARTS, DF3_TRANSFER_BUDGET / MAX(1, part_transfers(m, tpn))));
}

typedef struct Df3 {
  Lowering *l;
  const Topology *t;
  int tpn;          // T: TSPs a node
  int m;            // M: nodes in the group
  int parts;        // pipeline parts (pipeline_parts)
  int *node;        // group node index -> the topology's node number
  int *collector;   // [(i * M + j) * T + t]: the device collecting piece (j, t) in node i
  // Per part, by piece index (i * M + j) * T + t unless said otherwise:
  int *gathered;    // stage 1: [piece * T + k] the reductions into the collector (-1: none)
  int *reduced;     // stage 2: [(j * T + t) * M + i] node i's reduction into the owner (-1: none)
  int *returned;    // stage 2: the owner's total landing on the collector (-1: the owner itself)
  int *deps;        // scratch
  int *gathered_all, *reduced_all, *returned_all;  // the arrays above for every part
} Df3;

// Points the per-part arrays at part p's.
static void select_part(Df3 *d, int p) {
  int pieces = d->m * d->m * d->tpn;
  d->gathered = d->gathered_all + (size_t)p * pieces * d->tpn;
  d->reduced = d->reduced_all + (size_t)p * pieces;
  d->returned = d->returned_all + (size_t)p * pieces;
}

static int df3_node_of(const Df3 *d, int dev) { return dev / d->tpn; }

static bool df3_applies(const Lowering *l, char *why, size_t whylen) {
  const Topology *t = l->c->topo;
  if (t->family != FAMILY_DRAGONFLY) {
    snprintf(why, whylen, "it needs a dragonfly topology (nodes of fully connected TSPs), not %s",
             ir_family_names[t->family]);
    return false;
  }
  if (l->op->kind != OP_ALLREDUCE) {
    snprintf(why, whylen, "it lowers allreduce only");
    return false;
  }
  if (!lower_whole_blocks(l, t->df.tsps_per_node, "node", why, whylen)) return false;
  int64_t tpn = t->df.tsps_per_node, m = l->ngroup / tpn;
  // Per part: stage 1 and 3 (T-1) T M each, stage 2 2 M (M-1) T.
  int64_t transfers = pipeline_parts(m, tpn) * part_transfers(m, tpn);
  if (transfers > LOWER_MAX_TRANSFERS) {
    snprintf(why, whylen, "it takes %lld transfers, more than LOWER_MAX_TRANSFERS (%d)", (long long)transfers,
             LOWER_MAX_TRANSFERS);
    return false;
  }
  return true;
}

// The TSP of node `from` holding copy `copy` (mod the count) of the global
// cables to node `to` (working ones), or -1 if none joins them.
static int cable_tsp(const Df3 *d, int from, int to, int copy) {
  int tsps[64], n = 0;
  for (int k = 0; k < d->tpn; k++) {
    const Device *dev = &d->t->devices[from * d->tpn + k];
    for (int p = d->tpn - 1; p < dev->nports; p++) {
      const Port *port = &dev->ports[p];
      if (port->link < 0 || d->t->links.data[port->link].failed || port->peer / d->tpn != to) continue;
      if (n < (int)ARRAY_LEN(tsps)) tsps[n++] = k;
    }
  }
  return n ? tsps[copy % n] : -1;
}

static void choose_collectors(Df3 *d) {
  for (int i = 0; i < d->m; i++)
    for (int j = 0; j < d->m; j++)
      for (int t = 0; t < d->tpn; t++) {
        int tsp = i == j ? t : cable_tsp(d, d->node[i], d->node[j], t);
        d->collector[(i * d->m + j) * d->tpn + t] = d->node[i] * d->tpn + (tsp < 0 ? t : tsp);
      }
}

static int piece_index(const Df3 *d, int i, int j, int t) { return (i * d->m + j) * d->tpn + t; }
static int owner(const Df3 *d, int j, int t) { return d->node[j] * d->tpn + t; }

// The bytes of piece (j, t) of part p.
static void piece_bytes(const Df3 *d, int p, int j, int t, int64_t *offset, int64_t *bytes) {
  lower_chunk(d->l, (p * d->m + j) * d->tpn + t, d->parts * d->m * d->tpn, offset, bytes);
}

// Stage 1 of part p: every TSP of node i sends piece (j, t) to its collector.
static void stage1(Df3 *d, int p) {
  d->l->lane = 0;
  for (int i = 0; i < d->m; i++)
    for (int j = 0; j < d->m; j++)
      for (int t = 0; t < d->tpn; t++) {
        int pi = piece_index(d, i, j, t), col = d->collector[pi];
        int64_t offset, bytes;
        piece_bytes(d, p, j, t, &offset, &bytes);
        for (int k = 0; k < d->tpn; k++) {
          int src = d->node[i] * d->tpn + k;
          d->gathered[pi * d->tpn + k] = -1;
          if (src == col || !bytes) continue;
          d->gathered[pi * d->tpn + k] = lower_send(d->l, src, col, offset, bytes, true, NULL, 0);
        }
      }
}

// The node-i sum of piece (j, t) is complete on its collector after these.
static int collected_deps(Df3 *d, int pi, int *out) {
  int n = 0;
  for (int k = 0; k < d->tpn; k++) out[n++] = d->gathered[pi * d->tpn + k];
  return n;
}

// The total of piece (j, t) is complete on its owner after these.
static int total_deps(Df3 *d, int j, int t, int *out) {
  int n = collected_deps(d, piece_index(d, j, j, t), out);
  for (int i = 0; i < d->m; i++) out[n++] = d->reduced[(j * d->tpn + t) * d->m + i];
  return n;
}

// Stage 2 of part p, ReduceScatter: collectors send their node sums to the owner.
static void stage2_reduce(Df3 *d, int p) {
  d->l->lane = 1;
  for (int j = 0; j < d->m; j++)
    for (int t = 0; t < d->tpn; t++)
      for (int i = 0; i < d->m; i++) {
        int pi = piece_index(d, i, j, t), *slot = &d->reduced[(j * d->tpn + t) * d->m + i];
        int64_t offset, bytes;
        piece_bytes(d, p, j, t, &offset, &bytes);
        *slot = -1;
        if (i == j || !bytes) continue;
        int n = collected_deps(d, pi, d->deps);
        *slot = lower_send(d->l, d->collector[pi], owner(d, j, t), offset, bytes, true, d->deps, n);
      }
}

// Stage 2 of part p, AllGather: the owner returns the total to each collector.
static void stage2_return(Df3 *d, int p) {
  d->l->lane = 1;
  for (int j = 0; j < d->m; j++)
    for (int t = 0; t < d->tpn; t++) {
      int64_t offset, bytes;
      piece_bytes(d, p, j, t, &offset, &bytes);
      int n = total_deps(d, j, t, d->deps);
      for (int k = 0; k < n; k++)
        if (d->deps[k] >= 0) lower_done(d->l, owner(d, j, t), d->deps[k]);
      for (int i = 0; i < d->m; i++) {
        int pi = piece_index(d, i, j, t);
        d->returned[pi] = -1;
        if (i == j || !bytes) continue;
        d->returned[pi] = lower_send(d->l, owner(d, j, t), d->collector[pi], offset, bytes, false, d->deps, n);
        lower_done(d->l, d->collector[pi], d->returned[pi]);
      }
    }
}

// Stage 3 of part p: each collector sends the total to the rest of its node.
static void stage3(Df3 *d, int p) {
  d->l->lane = 2;
  for (int i = 0; i < d->m; i++)
    for (int j = 0; j < d->m; j++)
      for (int t = 0; t < d->tpn; t++) {
        int pi = piece_index(d, i, j, t), col = d->collector[pi];
        int64_t offset, bytes;
        piece_bytes(d, p, j, t, &offset, &bytes);
        if (!bytes) continue;
        int n = i == j ? total_deps(d, j, t, d->deps) : (d->deps[0] = d->returned[pi], 1);
        for (int k = 0; k < d->tpn; k++) {
          int dst = d->node[i] * d->tpn + k;
          if (dst != col) lower_done(d->l, dst, lower_send(d->l, col, dst, offset, bytes, false, d->deps, n));
        }
      }
}

// Each part keeps its own arrays (select_part): a stage reads what the
// stage before it wrote for the same part, steps of the wavefront earlier.
// ---- small buffers: all to all, three hops ----
//
// A buffer of at most DF3_LATENCY_MAX_VECTORS vectors is not cut: the
// pipeline above would take 2 local + 1 global + 1 local hops and the
// pieces would be too small to stream.  Instead, a lower bound's worth of
// hops (a dragonfly's diameter is local, global, local):
//   stage A  inside every node, each TSP sends its whole copy to every other
//            TSP of its node, which reduces it in: every TSP holds its node's
//            sum (one local hop);
//   stage B  for every other node j and every TSP t of j, the TSP of this
//            node holding the cable to j sends its node's sum to t, over the
//            cable and on through the TSP it lands on (cut-through), and t
//            reduces it in: every TSP then holds every node's sum added to
//            its own node's (one global and one local hop).
// Both stages reduce into copies that the same stage also reads (a TSP's
// copy is sent in stage A, then its node's sum is sent in stage B), so each
// reduction waits for the reads of its destination's sends in that stage
// (lower_after_reads), and a stage B send waits for stage A's reductions
// into its source.  Transfers: M T (T-1) + M (M-1) T.  One vector on
// system264 takes 1,157 cycles (the pipeline: 1,999), against a latency
// bound of 3 x 266 + 1 = 799.  The threshold is the measured crossover: at 4
// vectors this mode takes 1,735 cycles on rack72 and 1,998 on system264
// (the pipeline 2,061 and 2,419), at 8 vectors 2,535 and 3,186 (the
// pipeline 2,349 and 2,984): each cable carries the whole buffer T times.
#define DF3_LATENCY_MAX_VECTORS 4

// Stage A in node i: into[b * T + a] is the reduction into TSP b of node i
// from TSP a (-1 for a == b).
static void small_stage_a(Df3 *d, int i, int *into, int64_t bytes) {
  int tpn = d->tpn, base = d->node[i] * tpn;
  for (int a = 0; a < tpn; a++)
    for (int b = 0; b < tpn; b++)
      into[b * tpn + a] = a == b ? -1 : lower_send(d->l, base + a, base + b, 0, bytes, true, NULL, 0);
  // Every reduction into b waits for b's own sends: into[k * T + b], k != b.
  int *reads = xmalloc(sizeof(int) * (size_t)tpn);
  for (int b = 0; b < tpn; b++) {
    for (int k = 0; k < tpn; k++) reads[k] = into[k * tpn + b];
    for (int a = 0; a < tpn; a++)
      if (a != b) {
        lower_after_reads(d->l, into[b * tpn + a], reads, tpn);
        lower_done(d->l, base + b, into[b * tpn + a]);
      }
  }
  free(reads);
}

static void df3_lower_small(Df3 *d, int64_t bytes) {
  int tpn = d->tpn, m = d->m, ndev = d->t->ndevices;
  int *into = xmalloc(sizeof(int) * (size_t)m * (size_t)tpn * (size_t)tpn);
  for (int i = 0; i < m; i++) small_stage_a(d, i, into + (size_t)i * tpn * tpn, bytes);
  // Stage B: by device, the transfers into it, and every transfer out of it
  // (stage A's included: a stage B reduction must not land before any of
  // them has read the copy).
  IntList *in = xcalloc((size_t)ndev, sizeof(IntList)), *out = xcalloc((size_t)ndev, sizeof(IntList));
  for (int i = 0; i < m; i++)
    for (int b = 0; b < tpn; b++)
      for (int a = 0; a < tpn; a++)
        if (a != b) VEC_PUSH(&d->l->c->arena, &out[d->node[i] * tpn + a], into[((size_t)i * tpn + b) * tpn + a]);
  // Each cable carries T vectors: the T-1 that go on a local hop leave
  // first, the one for the TSP it lands on (no further hop) last.
  for (int r = 0; r < tpn; r++)
    for (int i = 0; i < m; i++)
      for (int j = 0; j < m; j++) {
        if (i == j) continue;
        int cable = cable_tsp(d, d->node[i], d->node[j], 0);
        int far = cable_tsp(d, d->node[j], d->node[i], 0);  // where the cable lands in node j
        int k = far < 0 ? r : (far + 1 + r) % tpn;
        int src = d->node[i] * tpn + (cable < 0 ? k : cable), dst = d->node[j] * tpn + k;
        const int *reduced = into + ((size_t)i * tpn + (size_t)(src % tpn)) * tpn;  // stage A into src
        int x = lower_send(d->l, src, dst, 0, bytes, true, reduced, tpn);
        VEC_PUSH(&d->l->c->arena, &in[dst], x);
        VEC_PUSH(&d->l->c->arena, &out[src], x);
      }
  for (int dev = 0; dev < ndev; dev++)
    for (int x = 0; x < in[dev].len; x++) {
      lower_after_reads(d->l, in[dev].data[x], out[dev].data, out[dev].len);
      lower_done(d->l, dev, in[dev].data[x]);
    }
  free(in);
  free(out);
  free(into);
}

static void df3_lower(Lowering *l) {
  const Topology *t = l->c->topo;
  Df3 d = {.l = l, .t = t, .tpn = t->df.tsps_per_node, .m = l->ngroup / t->df.tsps_per_node};
  int64_t bytes = layout_bytes(l->c, l->buffer), vb = t->link.vector_bytes;
  if ((bytes + vb - 1) / vb <= DF3_LATENCY_MAX_VECTORS) {
    d.node = xmalloc(sizeof(int) * (size_t)d.m);
    for (int i = 0; i < d.m; i++) d.node[i] = df3_node_of(&d, l->group[i * d.tpn]);
    df3_lower_small(&d, bytes);
    free(d.node);
    return;
  }
  int pieces = d.m * d.m * d.tpn;
  d.node = xmalloc(sizeof(int) * (size_t)d.m);
  for (int i = 0; i < d.m; i++) d.node[i] = df3_node_of(&d, l->group[i * d.tpn]);
  d.collector = xmalloc(sizeof(int) * (size_t)pieces);
  d.parts = pipeline_parts(d.m, d.tpn);
  d.gathered_all = xmalloc(sizeof(int) * (size_t)d.parts * (size_t)pieces * (size_t)d.tpn);
  d.reduced_all = xmalloc(sizeof(int) * (size_t)d.parts * (size_t)pieces);
  d.returned_all = xmalloc(sizeof(int) * (size_t)d.parts * (size_t)pieces);
  d.deps = xmalloc(sizeof(int) * (size_t)(d.tpn + d.m + 1));
  choose_collectors(&d);
  // The wavefront: in step w, stage 1 of part w, stage 2 of part w-1 and
  // stage 3 of part w-2.
  for (int w = 0; w < d.parts + 2; w++) {
    if (w < d.parts) select_part(&d, w), stage1(&d, w);
    if (w >= 1 && w - 1 < d.parts) select_part(&d, w - 1), stage2_reduce(&d, w - 1), stage2_return(&d, w - 1);
    if (w >= 2) select_part(&d, w - 2), stage3(&d, w - 2);
  }
  free(d.node);
  free(d.collector);
  free(d.gathered_all);
  free(d.reduced_all);
  free(d.returned_all);
  free(d.deps);
}

const CollectiveAlgo algo_dragonfly3 = {ALGO_DRAGONFLY3, df3_applies, df3_lower, NULL, NULL};
