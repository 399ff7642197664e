// split_matmul.c: tensor parallelism, step 2 of the partition pass (seed
// 002 s5.2, "column-wise weight splits ... row-wise weight splits").  Part
// of passes/, called by partition.c before anything else is placed.
//
// A matmul y = x w whose weight is an unplaced param only it reads, and
// whose result the .tg did not place, may be cut into a grid of R
// row-wise by C column-wise weight splits over R x C devices.  Device
// (r, c) holds rows K_r and columns N_c of w and multiplies x's columns
// K_r by them:
//
//   R = 1  its product is columns N_c of y: a shard of the output, left
//          where it is (the "concatenation" is the manifest's list of
//          shards);
//   R > 1  its product is a partial sum.  The R devices of column group c
//          (clustered on one node where the system has nodes: each TSP
//          reaches the other seven directly) reduce them as a
//          reduce-scatter written in ops: each cuts its partial into R
//          column pieces (slice), and device (q, c) adds piece q of every
//          partial, sent to it by the transfers the dag pass adds, into
//          columns q of N_c of y.
//
// When other ops read y, y is gathered whole: its pieces are values,
// joined by concats (CONCAT_MAX_PARTS at a time, a tree of them) on the
// device nearest device (0, 0) outside the grid, whose SRAM holds no
// shard of this weight (device (0, 0) itself when the grid takes every device),
// and y's readers are placed as any op is.
//
// x comes from its home: the C devices of row split r need columns K_r
// (sliced on the home when R > 1, then sent).  An unplaced input or param
// only this matmul reads is instead loaded by the host onto every device
// that needs it, as params are, and nothing is sent.
//
// Several matmuls that must be split share the devices out first (the
// section "several splits" below).  The grid is the one of least
// estimated cycles among those whose devices
// fit in SRAM, fewer devices unless more gain PARTITION_MIN_GAIN_PERCENT:
// distributing x, the widest product, then the reduction (slices, the R -
// 1 pieces arriving over the device's ports, the adds), and the gather
// (the pieces arriving, a pass over y a level of concats), in sequence.
// A split made for speed (the matmul fits one device whole) is judged
// alone; when the splits then put a device past the capacity planned,
// pass_partition undoes every such split and partitions again without
// them (p->no_speed_splits).
#include "partition.h"

#include <stdlib.h>
#include <string.h>

// The most row-wise splits a column group takes on a system without nodes
// (a dragonfly's groups are at most a node).
#define SPLIT_MAX_ROWS 8

typedef struct Grid {
  int R, C;
} Grid;

typedef struct SplitCost {
  int64_t cycles, bytes;  // estimated makespan; the fullest device's SRAM estimate
} SplitCost;

// The most operands of a concat (the DSL's arity, Op.args' room).
#define CONCAT_MAX_PARTS IR_MAX_OPERANDS

static bool splittable(const Partitioner *p, const Op *op) {
  if (op->kind != OP_MATMUL) return false;
  const Tensor *x = op->args[0], *w = op->args[1], *y = op->result;
  return w->kind == TENSOR_PARAM && part_is_free(w) && w->shape.rank == 2 && part_readers(p, w) == 1 && x != w &&
         part_movable(op) && (y->is_output || part_readers(p, y) > 0) &&
         (x->place.kind == PLACE_AUTO || x->place.kind == PLACE_DEVICE);
}

// Whether y is gathered whole after the split: other ops read it.
static bool gathered(const Partitioner *p, const Op *op) { return part_readers(p, op->result) > 0; }

// Levels of concats that join n pieces, CONCAT_MAX_PARTS at a time.
static int concat_levels(int64_t n) {
  int levels = 0;
  for (; n > 1; levels++) n = part_ceil_div(n, CONCAT_MAX_PARTS);
  return levels;
}

static bool host_loaded(const Partitioner *p, const Tensor *x) {
  return x->kind != TENSOR_VALUE && part_is_free(x) && part_readers(p, x) == 1;
}

// [*first, *first + *count) of n cut into `parts` as evenly as it goes.
static void cut(int64_t n, int parts, int j, int64_t *first, int64_t *count) {
  int64_t base = n / parts, extra = n % parts;
  *first = j * base + MIN(j, extra);
  *count = base + (j < extra);
}

static Shape with_last(const Shape *s, int64_t last) {
  Shape r = *s;
  r.dim[r.rank - 1] = last;
  return r;
}

// Vectors of a tensor of t's dtype shaped s.
static int64_t vectors_of(const Partitioner *p, DType dt, const Shape *s) {
  return part_padded_bytes(p, dt, s) / p->vb;
}

// The estimate of grid g for op (its x home src): see the top of the file.
static SplitCost grid_cost(const Partitioner *p, const Op *op, Grid g, int src) {
  const Tensor *x = op->args[0], *w = op->args[1], *y = op->result;
  int64_t k = w->shape.dim[0], n = w->shape.dim[1], k_r = part_ceil_div(k, g.R), n_c = part_ceil_div(n, g.C);
  Tensor xr = *x, wr = *w, yr = *y;
  xr.shape = with_last(&x->shape, k_r);
  wr.shape.dim[0] = k_r, wr.shape.dim[1] = n_c;
  yr.shape = with_last(&y->shape, n_c);
  Op part = *op;
  part.args[0] = &xr, part.args[1] = &wr, part.result = &yr;
  int devices = g.R * g.C;
  int64_t xdist = 0;
  if (!host_loaded(p, x)) {
    xdist = part_send_cycles(p, src, part_tensor_bytes(p, &xr), devices - 1);
    if (g.R > 1) xdist += vectors_of(p, x->dtype, &x->shape);  // the slices, on the home's switch unit
  }
  int64_t reduce = 0, pieces = 0;
  Shape piece = with_last(&y->shape, part_ceil_div(n_c, g.R));
  if (g.R > 1) {
    int64_t pv = vectors_of(p, y->dtype, &piece);
    pieces = (g.R - 1) * part_padded_bytes(p, y->dtype, &piece);
    reduce = vectors_of(p, y->dtype, &yr.shape) + part_send_cycles(p, src, pieces / (g.R - 1), g.R - 1) +
             (g.R - 1) * pv;
  }
  // Bytes: the weight's share once, what each inference has (x, the
  // products, the pieces, the gathered y) once for each in flight.
  int64_t nb = p->batches;
  int64_t share = part_tensor_bytes(p, &wr) + nb * (part_tensor_bytes(p, &yr) + 2 * pieces) + part_scratch_bytes(p, &part);
  int64_t gather = 0, gathering = 0;
  if (devices > 1 && gathered(p, op)) {  // the gathering device holds y and a level of concats more
    gather = part_send_cycles(p, src, part_tensor_bytes(p, y) / devices, devices) +
             concat_levels(devices) * vectors_of(p, y->dtype, &y->shape);
    gathering = nb * 2 * part_tensor_bytes(p, y);
    if (devices >= p->t->nin_service) share += gathering, gathering = 0;  // device (0, 0) gathers
  }
  int64_t bytes = MAX(nb * part_tensor_bytes(p, &xr) + share, gathering);
  if (!host_loaded(p, x))  // x's home, in the grid, holds all of x and, with R > 1, its R slices too
    bytes = MAX(bytes, nb * part_tensor_bytes(p, x) * (g.R > 1 ? 2 : 1) + share);
  return (SplitCost){.cycles = xdist + compute_estimate_cycles(&part, p->vb) + reduce + gather, .bytes = bytes};
}

static bool must_split(const Partitioner *p, const Op *op);

// The most row-wise splits a column group may take: none for a 16-bit
// float result that fits one device whole, since its partial products
// are added in its dtype and one past f16's range is inf though the whole
// sum is not (a split made for speed must not change what a model
// computes; one made for need may).
static int max_rows(const Partitioner *p, const Op *op) {
  DType dt = op->result->dtype;
  if ((dt == DT_F16 || dt == DT_BF16) && !must_split(p, op)) return 1;
  int rows = p->t->family == FAMILY_DRAGONFLY ? p->t->df.tsps_per_node : SPLIT_MAX_ROWS;
  int per = isa_elems_per_vector(op->args[0]->dtype, p->vb);
  return (int)MIN(rows, part_ceil_div(op->args[1]->shape.dim[0], per));  // a vector of K each, at least
}

// Whether the system has C groups of R devices that share a node.
static bool grid_fits_nodes(const Partitioner *p, Grid g) {
  if (p->t->family != FAMILY_DRAGONFLY) return g.R * g.C <= p->t->nin_service;
  int nodes = p->t->nin_service / p->t->df.tsps_per_node;  // whole nodes serve or stand by
  return (p->t->df.tsps_per_node / g.R) * nodes >= g.C;
}

// The grid of least estimate whose devices fit (ordered by devices, then
// rows); {0, 0} when none fits.
static Grid best_grid(const Partitioner *p, const Op *op, int src, int nd, SplitCost *best) {
  Grid bg = {0, 0};
  int rmax = max_rows(p, op);
  int64_t n = op->args[1]->shape.dim[1];
  for (int D = 1; D <= nd; D++)
    for (int R = 1; R <= rmax && R <= D; R++) {
      if (D % R) continue;
      Grid g = {R, D / R};
      if (n / g.C < R) continue;  // every piece of every column group at least one column
      SplitCost sc = grid_cost(p, op, g, src);
      if (sc.bytes > p->capacity || !grid_fits_nodes(p, g)) continue;
      if (!bg.R || sc.cycles * 100 < best->cycles * (100 - PARTITION_MIN_GAIN_PERCENT)) bg = g, *best = sc;
    }
  return bg;
}

// devs[c * R + r]: device (r, c).  Group c starts at the nearest unused
// device to src that has R - 1 unused devices of its node left (on a
// dragonfly: a group never spans nodes), and takes the R - 1 of them
// nearest to it; devices `taken` (NULL: none) count as used.  NULL when
// the system has too few.
static int *grid_devices(const Partitioner *p, Grid g, int src, const bool *taken) {
  int nd = p->t->ndevices, *devs = xmalloc(sizeof(int) * (size_t)(g.R * g.C)), n, m;
  bool *used = xcalloc((size_t)nd, sizeof(bool));
  if (taken) memcpy(used, taken, sizeof(bool) * (size_t)nd);
  int *order = part_devices_nearest(p->t, src, &n);
  for (int c = 0; c < g.C; c++) {
    bool placed = false;
    for (int i = 0; i < n && !placed; i++) {
      int lead = order[i], found = 0;
      if (used[lead]) continue;
      int *near = part_devices_nearest(p->t, lead, &m);
      for (int j = 0; j < m && found < g.R; j++)
        if (!used[near[j]] && part_same_node(p->t, lead, near[j])) devs[c * g.R + found++] = near[j];
      free(near);
      if (found < g.R) continue;
      for (int r = 0; r < g.R; r++) used[devs[c * g.R + r]] = true;
      placed = true;
    }
    if (!placed) {
      free(devs), devs = NULL;
      break;
    }
  }
  free(order), free(used);
  return devs;
}

// ---- the rewrite ------------------------------------------------------------------------------

// What replaces the matmul: new inputs and params (where w was), new values
// with their ops (where y was), the output's shards.
typedef struct Rewrite {
  Partitioner *p;
  const Op *op;
  bool gather;    // y is gathered (its pieces are values, joined by concats)
  PtrVec leaves, values, ops, outputs;
  PtrVec pieces;  // with gather: y's pieces, in column order
  PtrVec wshards; // w's shards, each on its device: the output's, when w is one
} Rewrite;

static Op *new_op(Rewrite *rw, OpKind kind, Tensor *result, Tensor *a, Tensor *b) {
  Op *o = ARENA_NEW(&rw->p->c->arena, Op);
  *o = (Op){.kind = kind, .result = result, .nargs = b ? 2 : 1, .args = {a, b}, .loc = rw->op->loc};
  result->def = o;
  result->kind = TENSOR_VALUE;
  result->place_written = true;  // the split's placement: the pipeline step keeps it
  VEC_PUSH(&rw->p->c->arena, &rw->values, result);
  VEC_PUSH(&rw->p->c->arena, &rw->ops, o);
  return o;
}

// A value of y's dtype that is not a box of a model tensor (a partial sum).
static Tensor *new_value(Rewrite *rw, const char *name, const Shape *s, int device) {
  Tensor *t = ARENA_NEW(&rw->p->c->arena, Tensor);
  *t = *rw->op->result;
  t->name = name;
  t->shape = *s;
  t->is_output = false;
  t->place = (Placement){.kind = PLACE_DEVICE, .index = device};
  t->place_written = false;
  t->shard_of = NULL;
  return t;
}

// y's columns [col0, col0 + cols) on device: an output shard, or with
// gather a value to be joined (y[.., col0:col0 + cols]).
static Tensor *result_piece(Rewrite *rw, int64_t col0, int64_t cols, int device) {
  const Tensor *y = rw->op->result;
  Arena *a = &rw->p->c->arena;
  Shape s = with_last(&y->shape, cols);
  if (rw->gather) {
    Tensor *t = new_value(rw, arena_printf(a, "%s[.., %lld:%lld]", y->name, (long long)col0, (long long)(col0 + cols)),
                          &s, device);
    VEC_PUSH(a, &rw->pieces, t);
    return t;
  }
  int64_t start[IR_MAX_RANK] = {0};
  start[y->shape.rank - 1] = col0;
  Tensor *t = part_new_shard(rw->p, y, TENSOR_VALUE, start, &s, device);
  t->is_output = true;
  VEC_PUSH(a, &rw->outputs, t);
  return t;
}

// result = concat(parts[0 .. n)) along the last axis (n <= CONCAT_MAX_PARTS).
static void new_concat(Rewrite *rw, Tensor *result, Tensor **parts, int n) {
  Op *o = new_op(rw, OP_CONCAT, result, parts[0], parts[1]);
  o->nargs = n;
  for (int k = 2; k < n; k++) o->args[k] = parts[k];
  o->axis = result->shape.rank - 1;
}

// y whole on device, from its pieces: concats of CONCAT_MAX_PARTS
// consecutive pieces, level by level, the last one y itself.
static void gather_pieces(Rewrite *rw, int device) {
  Arena *a = &rw->p->c->arena;
  Tensor *y = rw->op->result;
  int n = rw->pieces.len, level = 0;
  Tensor **cur = xmalloc(sizeof(Tensor *) * (size_t)n);
  memcpy(cur, rw->pieces.data, sizeof(Tensor *) * (size_t)n);
  for (; n > CONCAT_MAX_PARTS; level++) {
    int m = 0;
    for (int i = 0; i < n; i += CONCAT_MAX_PARTS, m++) {
      int parts = MIN(CONCAT_MAX_PARTS, n - i);
      if (parts == 1) {  // a piece left over joins the next level as it is
        cur[m] = cur[i];
        continue;
      }
      int64_t cols = 0;
      for (int k = 0; k < parts; k++) cols += cur[i + k]->shape.dim[y->shape.rank - 1];
      Shape s = with_last(&y->shape, cols);
      Tensor *joined = new_value(rw, arena_printf(a, "%s.cat%d.%d", y->name, level, m), &s, device);
      new_concat(rw, joined, &cur[i], parts);
      cur[m] = joined;  // m <= i: what is read next is not overwritten
    }
    n = m;
  }
  y->place = (Placement){.kind = PLACE_DEVICE, .index = device};
  new_concat(rw, y, cur, n);
  free(cur);
}

// The device x lives on, or will (an unplaced one: the first device in
// service, device(0) on a healthy system).
static int activation_home(const Partitioner *p, const Tensor *x) {
  return x->place.kind == PLACE_DEVICE ? x->place.index : part_first_device(p->t);
}

// x's columns K_r on device d: a host-loaded shard, a slice on x's home
// (made once per r, in *slice), or x itself.
static Tensor *activation_for(Rewrite *rw, Grid g, int64_t k0, int64_t k_r, int d, Tensor **slice) {
  Partitioner *p = rw->p;
  Tensor *x = rw->op->args[0];
  if (host_loaded(p, x)) {
    int64_t start[IR_MAX_RANK] = {0};
    start[x->shape.rank - 1] = k0;
    Shape s = with_last(&x->shape, k_r);
    Tensor *xs = part_new_shard(p, x, x->kind, start, &s, d);
    xs->name = arena_printf(&p->c->arena, "%s@device(%d)", g.R == 1 ? x->name : xs->name, d);
    VEC_PUSH(&p->c->arena, &rw->leaves, xs);
    return xs;
  }
  if (g.R == 1) return x;
  if (!*slice) {
    Shape s = with_last(&x->shape, k_r);
    Tensor *t = new_value(rw, arena_printf(&p->c->arena, "%s[.., %lld:%lld]", x->name, (long long)k0, (long long)(k0 + k_r)),
                          &s, activation_home(p, x));
    t->dtype = x->dtype;
    Op *o = new_op(rw, OP_SLICE, t, x, NULL);
    o->axis = x->shape.rank - 1, o->start = k0, o->end = k0 + k_r;
    *slice = t;
  }
  return *slice;
}

// Column group c's reduction: device (q, c) sums piece q of every partial.
static void reduce_group(Rewrite *rw, Grid g, const int *devs, int c, int64_t n0, int64_t n_c, Tensor **partials) {
  Partitioner *p = rw->p;
  const Tensor *y = rw->op->result;
  Tensor **pieces = xmalloc(sizeof(Tensor *) * (size_t)g.R * (size_t)g.R);  // [r * R + q]
  for (int r = 0; r < g.R; r++)
    for (int q = 0; q < g.R; q++) {
      int64_t q0, qn;
      cut(n_c, g.R, q, &q0, &qn);
      Shape s = with_last(&y->shape, qn);
      Tensor *t = new_value(rw, arena_printf(&p->c->arena, "%s.part%d[.., %lld:%lld]", y->name, r,
                                             (long long)(n0 + q0), (long long)(n0 + q0 + qn)),
                            &s, devs[c * g.R + r]);
      Op *o = new_op(rw, OP_SLICE, t, partials[r], NULL);
      o->axis = y->shape.rank - 1, o->start = q0, o->end = q0 + qn;
      pieces[r * g.R + q] = t;
    }
  for (int q = 0; q < g.R; q++) {
    int64_t q0, qn;
    cut(n_c, g.R, q, &q0, &qn);
    int d = devs[c * g.R + q];
    Tensor *acc = pieces[q * g.R + q];
    for (int r = 0, added = 0; r < g.R; r++) {
      if (r == q) continue;
      bool last = ++added == g.R - 1;
      Shape s = with_last(&y->shape, qn);
      Tensor *sum = last ? result_piece(rw, n0 + q0, qn, d)
                         : new_value(rw, arena_printf(&p->c->arena, "%s.sum%d[.., %lld:%lld]", y->name, added,
                                                      (long long)(n0 + q0), (long long)(n0 + q0 + qn)),
                                     &s, d);
      new_op(rw, OP_ADD, sum, acc, pieces[r * g.R + q]);
      acc = sum;
    }
  }
  free(pieces);
}

// Where y is gathered: the device nearest device (0, 0) that neither the
// grid nor an earlier split (`taken`) uses, else the nearest the grid does
// not use, else device (0, 0) when it uses every one.
static int gather_device(const Partitioner *p, Grid g, const int *devs, const bool *taken) {
  int n, *order = part_devices_nearest(p->t, devs[0], &n), fresh = -1, off_grid = -1;
  for (int i = 0; i < n && fresh < 0; i++) {
    bool in_grid = false;
    for (int j = 0; j < g.R * g.C && !in_grid; j++) in_grid = devs[j] == order[i];
    if (in_grid) continue;
    if (off_grid < 0) off_grid = order[i];
    if (!taken[order[i]]) fresh = order[i];
  }
  free(order);
  return fresh >= 0 ? fresh : off_grid >= 0 ? off_grid : devs[0];
}

// The ops after y whose results the checker put on y's old device because
// they read y (or such a result), and the .tg did not place, go where y
// now is: they run where their operands are, as they did before.
static void follow_gathered(Partitioner *p, const Tensor *y, Placement was, int device) {
  if (was.kind != PLACE_DEVICE) return;
  bool *moved = xcalloc((size_t)p->g->tensors.len + 1, sizeof(bool));
  moved[y->id] = true;
  for (int i = 0; i < p->g->ops.len; i++) {
    Tensor *r = p->g->ops.data[i]->result;
    bool reads = false;
    for (int a = 0; a < p->g->ops.data[i]->nargs && !reads; a++) reads = moved[p->g->ops.data[i]->args[a]->id];
    if (!reads || r->place_written || !ir_place_equal(&r->place, &was)) continue;
    r->place.index = device;
    moved[r->id] = true;
  }
  free(moved);
}

// at: where y is gathered (when other ops read it).
static void split_grid(Partitioner *p, Op *op, Grid g, const int *devs, int at) {
  Arena *a = &p->c->arena;
  Tensor *x = op->args[0], *w = op->args[1], *y = op->result;
  Rewrite rw = {.p = p, .op = op, .gather = gathered(p, op)};
  int64_t k = w->shape.dim[0], n = w->shape.dim[1];
  Tensor **slices = xcalloc((size_t)g.R, sizeof(Tensor *)), **partials = xmalloc(sizeof(Tensor *) * (size_t)g.R);
  for (int c = 0; c < g.C; c++) {
    int64_t n0, n_c;
    cut(n, g.C, c, &n0, &n_c);
    for (int r = 0; r < g.R; r++) {
      int64_t k0, k_r;
      cut(k, g.R, r, &k0, &k_r);
      int d = devs[c * g.R + r];
      Tensor *xr = activation_for(&rw, g, k0, k_r, d, &slices[r]);
      int64_t start[IR_MAX_RANK] = {k0, n0};
      Shape ws = {.rank = 2, .dim = {k_r, n_c}};
      Tensor *wr = part_new_shard(p, w, TENSOR_PARAM, start, &ws, d);
      wr->is_output = w->is_output;
      VEC_PUSH(a, &rw.leaves, wr);
      VEC_PUSH(a, &rw.wshards, wr);
      Shape ps = with_last(&y->shape, n_c);
      Tensor *prod = g.R == 1 ? result_piece(&rw, n0, n_c, d)
                              : new_value(&rw, arena_printf(a, "%s.part%d[.., %lld:%lld]", y->name, r, (long long)n0,
                                                            (long long)(n0 + n_c)),
                                          &ps, d);
      new_op(&rw, OP_MATMUL, prod, xr, wr);
      partials[r] = prod;
    }
    if (g.R > 1) reduce_group(&rw, g, devs, c, n0, n_c, partials);
  }
  free(slices), free(partials);
  Placement was = y->place;
  if (rw.gather) gather_pieces(&rw, at);
  Graph *gr = p->g;
  if (host_loaded(p, x)) part_splice(a, (PtrVec *)&gr->tensors, x, NULL, 0);
  part_splice(a, (PtrVec *)&gr->tensors, w, rw.leaves.data, rw.leaves.len);
  part_splice(a, (PtrVec *)&gr->tensors, y, rw.values.data, rw.values.len);
  part_splice(a, (PtrVec *)&gr->ops, op, rw.ops.data, rw.ops.len);
  if (!rw.gather) part_splice(a, (PtrVec *)&gr->outputs, y, rw.outputs.data, rw.outputs.len);  // else y stays whole
  if (w->is_output) part_splice(a, (PtrVec *)&gr->outputs, w, rw.wshards.data, rw.wshards.len);  // as its shards
  part_renumber(p);
  if (rw.gather) follow_gathered(p, y, was, at);
}

static void log_split(Partitioner *p, const Op *op, Grid g, const int *devs, int at, SplitCost best,
                      SplitCost whole) {
  buf_printf(&p->log, "// %s = matmul(%s, %s), line %d: split %d x %d (row-wise x column-wise) over %d devices (",
             op->result->name, op->args[0]->name, op->args[1]->name, op->loc.line, g.R, g.C, g.R * g.C);
  for (int j = 0; j < g.R * g.C; j++) buf_printf(&p->log, "%s%d", j ? ", " : "", devs[j]);
  buf_printf(&p->log, "): an estimated %lld cycles against %lld whole%s%s", (long long)best.cycles,
             (long long)whole.cycles, whole.bytes > p->capacity ? " (which does not fit)" : "",
             host_loaded(p, op->args[0]) ? "; the host loads the activation's columns onto each" : "");
  if (at >= 0) buf_printf(&p->log, "; %s is gathered on device %d for the ops that read it", op->result->name, at);
  buf_printf(&p->log, "\n");
}

// ---- several splits ----------------------------------------------------------------------
//
// Each split is sized as if the devices it takes held nothing else, so
// the splits of one model share the devices out first: split k may take
// up to its weight's share of the devices in service (shares_of), on
// devices no earlier split took.  A split that fits no grid within its
// share takes the best of any size on any devices, as a lone split does.
// Two big matmuls in a chain, the usual MLP, stacked their shards on the
// same SRAM and were refused: 24 MB of weights on eight 5 MiB TSPs.

// Whether op's matmul fits on no device whole, so it must be split (one
// that fits may still be split for speed, within any share left).
static bool must_split(const Partitioner *p, const Op *op) {
  return grid_cost(p, op, (Grid){1, 1}, activation_home(p, op->args[0])).bytes > p->capacity;
}

typedef struct Shares {
  int n;
  const Op **ops;  // the matmuls that must be split, in order
  int *devices;    // by entry: the devices its split may take
} Shares;

// Each weight that must be split gets a share of the devices in service
// (with several, less one for each result gathered): in proportion to its
// bytes, rounded down, and the devices left over to the largest
// remainders.
static Shares shares_of(const Partitioner *p) {
  Shares sh = {.ops = xmalloc(sizeof(Op *) * (size_t)(p->g->ops.len + 1))};
  int64_t weights = 0;
  int gathers = 0, devices = p->t->nin_service;
  for (int i = 0; i < p->g->ops.len; i++) {
    const Op *op = p->g->ops.data[i];
    if (!splittable(p, op) || !must_split(p, op)) continue;
    sh.ops[sh.n++] = op;
    weights += part_tensor_bytes(p, op->args[1]);
    gathers += gathered(p, op);
  }
  if (sh.n > 1) devices -= gathers;  // a lone split may take every device, gathering on one of them
  sh.devices = xcalloc((size_t)sh.n + 1, sizeof(int));
  double *left = xcalloc((size_t)sh.n + 1, sizeof(double));
  int given = 0;
  for (int k = 0; k < sh.n; k++) {
    double exact = (double)MAX(devices, 1) * (double)part_tensor_bytes(p, sh.ops[k]->args[1]) / (double)MAX(weights, 1);
    sh.devices[k] = (int)exact;
    left[k] = exact - sh.devices[k];
    given += sh.devices[k];
  }
  for (; given < devices && sh.n; given++) {  // the largest remainder first, the earlier of equals
    int best = 0;
    for (int k = 1; k < sh.n; k++)
      if (left[k] > left[best]) best = k;
    sh.devices[best]++, left[best] = -1;
  }
  for (int k = 0; k < sh.n; k++) sh.devices[k] = MAX(sh.devices[k], 1);
  free(left);
  return sh;
}

// The devices op's split may take: its share when it must split, else
// every device in service.
static int share_of(const Partitioner *p, const Shares *sh, const Op *op) {
  for (int k = 0; k < sh->n; k++)
    if (sh->ops[k] == op) return sh->devices[k];
  return p->t->nin_service;
}

// Bytes that x's producers keep where x is made besides x: the operands
// of the ops x comes from, transitively, that are unplaced or placed
// there (code generation puts an unplaced op with its operands), params
// once and the rest once for each inference in flight.  A split that
// takes x's home counted x alone there: `q = matmul(x, wq); f1 =
// matmul(q, w1)` put half of w1 beside x and wq, 5.9 MiB on a 5 MiB TSP.
static int64_t upstream_bytes(const Partitioner *p, const Tensor *x, int home) {
  int nt = p->g->tensors.len, n = 0;
  bool *seen = xcalloc((size_t)nt + 1, sizeof(bool));
  const Tensor **stack = xmalloc(sizeof(Tensor *) * ((size_t)nt + 1));
  int64_t bytes = 0;
  stack[n++] = x, seen[x->id] = true;
  while (n) {
    const Tensor *t = stack[--n];
    for (int a = 0; t->def && a < t->def->nargs; a++) {
      const Tensor *u = t->def->args[a];
      bool there = u->place.kind == PLACE_AUTO || (u->place.kind == PLACE_DEVICE && u->place.index == home);
      if (seen[u->id] || !there) continue;
      seen[u->id] = true, stack[n++] = u;
      bytes += part_tensor_bytes(p, u) * (u->kind == TENSOR_PARAM ? 1 : p->batches);
    }
  }
  free(seen), free(stack);
  return bytes;
}

// Grid g's devices for op (grid_devices; taken as there).  When x is an
// unplaced value whose home src would pass the capacity with the grid's
// share (best) and what x's producers keep there, but holds x and those
// alone, the grid leaves src to them and x is placed there (else its
// producers follow the grid's first device: the checker puts an op with
// its readers).  Otherwise, or when no grid fits without src, as before.
static int *devices_for(const Partitioner *p, Op *op, Grid g, SplitCost best, int src, const bool *taken) {
  Tensor *x = op->args[0];
  if (!x->def || !part_is_free(x)) return grid_devices(p, g, src, taken);
  int *devs = NULL, nd = p->t->ndevices;
  int64_t up = upstream_bytes(p, x, src), own = part_tensor_bytes(p, x) * p->batches;
  if (best.bytes + up > p->capacity && own + up <= p->capacity) {
    bool *avoid = xcalloc((size_t)nd, sizeof(bool));
    if (taken) memcpy(avoid, taken, sizeof(bool) * (size_t)nd);
    avoid[src] = true;
    devs = grid_devices(p, g, src, avoid);
    free(avoid);
    if (devs) x->place = (Placement){.kind = PLACE_DEVICE, .index = src};
  }
  return devs ? devs : grid_devices(p, g, src, taken);
}

void partition_split_matmuls(Partitioner *p) {
  Shares sh = shares_of(p);
  bool *taken = xcalloc((size_t)p->t->ndevices, sizeof(bool));  // by device: an earlier split's
  for (int i = 0; i < p->g->ops.len; i++) {
    Op *op = p->g->ops.data[i];
    if (!splittable(p, op)) continue;
    int src = activation_home(p, op->args[0]);
    SplitCost best = {0}, whole = grid_cost(p, op, (Grid){1, 1}, src);
    bool needed = whole.bytes > p->capacity;  // must_split
    if (!needed && p->no_speed_splits) continue;
    Grid g = best_grid(p, op, src, share_of(p, &sh, op), &best);
    int *devs = g.R * g.C > 1 ? devices_for(p, op, g, best, src, taken) : NULL;
    if (!devs) {  // within its share nothing fits on devices no earlier split took
      g = best_grid(p, op, src, p->t->nin_service, &best);
      if (g.R * g.C <= 1) continue;  // whole is best, or nothing fits: the capacity check says so
      devs = devices_for(p, op, g, best, src, NULL);
    }
    if (!devs) continue;  // best_grid checked the nodes hold the groups; kept whole if not
    int at = gathered(p, op) ? gather_device(p, g, devs, taken) : -1;
    log_split(p, op, g, devs, at, best, whole);
    p->speed_split |= !needed;
    for (int j = 0; j < g.R * g.C; j++) taken[devs[j]] = true;
    if (at >= 0) taken[at] = true;
    int before = p->g->ops.len;
    split_grid(p, op, g, devs, at);
    free(devs);
    i += p->g->ops.len - before;
  }
  free(taken), free(sh.ops), free(sh.devices);
}
