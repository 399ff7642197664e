// split_cholesky.c: a cholesky spread over the devices of a node (seed 002
// s5.5: "a block-cyclic distribution of 320 rows on each TSP").  Part of
// passes/, step 2 of the partition pass (partition.c), after the matmul
// splits; what each piece computes is compute.c's (the cholesky section).
//
// l = cholesky(a) whose operand is an unplaced input or param only it
// reads, and whose result is an unplaced output nothing else reads, is cut
// into pieces over D devices, D = the blocks of CHOL_BLOCK_ROWS rows (one
// column tile) or the devices of the first device's node (every device in
// service without nodes), whichever is fewer.  Block b goes to the device
// of index b mod D, the first device and those nearest it.  The host loads
// all of a onto each; device e then runs
//
//   T0 = INIT(a)                    its rows of a, transposed (T = L^T)
//   for each panel s of `per` columns (one K tile), owned by the device
//   of the panel's rows:
//     owner:  T = OWN(T)            the panel's columns of its rows
//             rows = ROWS(T)        those rows of L, columns 0 .. their last
//     others holding rows below the panel:
//             T = PANEL(T, rows)    the panel's columns of their rows
//   L[block b] = OUT(T)             each of its blocks, an output shard
//
// so the only data crossing devices is each panel's rows of L, sent by the
// transfers the dag pass adds, as the seed broadcasts each step's column;
// the owner goes on to its next panel while the others work on this one.
#include "partition.h"

#include <stdlib.h>
#include <string.h>

// More devices are taken only when their estimate is at least this many
// percent below the best over fewer: the estimates are within about 5 %
// of the schedule (order 640 on 2 TSPs is estimated 3 % faster split and
// runs 3 % slower), so a closer call keeps the devices.
#define CHOL_SPLIT_MIN_GAIN_PERCENT 5

typedef struct CholSplit {
  Partitioner *p;
  const Op *op;
  int D;
  const int *devs;
  int64_t nb, per, ncv;  // blocks of CHOL_BLOCK_ROWS rows; elements a vector; panels
  PtrVec leaves, values, ops, outputs;
} CholSplit;

static bool chol_splittable(const Partitioner *p, const Op *op) {
  if (op->kind != OP_CHOLESKY || op->chol.role != CHOL_WHOLE) return false;
  const Tensor *a = op->args[0], *l = op->result;
  return a->kind != TENSOR_VALUE && part_is_free(a) && part_readers(p, a) == 1 && part_movable(op) &&
         l->is_output && part_readers(p, l) == 0;
}

// The devices the blocks go to: the first device and those nearest it, of
// its node where the system has nodes; *n gets how many (at most want).
static int *chol_devices(const Partitioner *p, int want, int *n) {
  int src = part_first_device(p->t), all, *order = part_devices_nearest(p->t, src, &all);
  *n = 0;
  for (int i = 0; i < all && *n < want; i++)
    if (part_same_node(p->t, src, order[i])) order[(*n)++] = order[i];
  return order;
}

static Op *chol_op(CholSplit *cs, CholRole role, int64_t panel, int64_t block, Tensor *result, Tensor *a, Tensor *b) {
  Arena *ar = &cs->p->c->arena;
  Op *o = ARENA_NEW(ar, Op);
  *o = (Op){.kind = OP_CHOLESKY, .result = result, .nargs = b ? 2 : 1, .args = {a, b}, .loc = cs->op->loc};
  // One block a piece: index = the block, group = the blocks (compute.c's geometry then has one tile).
  o->chol = (CholPiece){.role = role, .order = cs->op->chol.order, .panel = panel, .index = (int)block,
                        .group = (int)cs->nb, .of = cs->op->result};
  result->def = o;
  result->kind = TENSOR_VALUE;
  result->place_written = true;  // the split's placement: the pipeline step keeps it
  if (!result->is_output) VEC_PUSH(ar, &cs->values, result);
  VEC_PUSH(ar, &cs->ops, o);
  return o;
}

// A working value of l's dtype on device d.
static Tensor *chol_value(CholSplit *cs, const char *name, int64_t rows, int64_t cols, int d) {
  Tensor *t = ARENA_NEW(&cs->p->c->arena, Tensor);
  *t = *cs->op->result;
  t->name = name;
  t->shape = (Shape){.rank = 2, .dim = {rows, cols}};
  t->is_output = false;
  t->place = (Placement){.kind = PLACE_DEVICE, .index = d};
  t->place_written = false;
  t->shard_of = NULL;
  return t;
}

static int64_t chol_block_rows(const CholSplit *cs, int64_t b) {
  return MIN(CHOL_BLOCK_ROWS, cs->op->chol.order - b * CHOL_BLOCK_ROWS);
}

// Block b's T after panel s (s = -1: T0), on its device.
static Tensor *chol_block_value(CholSplit *cs, int64_t b, int64_t s) {
  int d = cs->devs[b % cs->D];
  const char *name = arena_printf(&cs->p->c->arena, "%s.T%lld.b%lld@device(%d)", cs->op->result->name,
                                  (long long)s + 1, (long long)b, d);
  return chol_value(cs, name, cs->ncv * cs->per, chol_block_rows(cs, b), d);
}

// Panel s by its owner (block own): the rows before it (ready at its
// start), its columns, its rows of L; *sent and *before (NULL: none, for
// no block below, or none before panel 0).
static void chol_own_panel(CholSplit *cs, Tensor **T, int64_t own, int64_t s, Tensor **sent, Tensor **before) {
  Arena *ar = &cs->p->c->arena;
  const Tensor *l = cs->op->result;
  int64_t rows = MIN(cs->per, cs->op->chol.order - s * cs->per);
  int d = cs->devs[own % cs->D];
  *sent = *before = NULL;
  if (s > 0 && own + 1 < cs->nb) {
    *before = chol_value(cs, arena_printf(ar, "%s.before%lld", l->name, (long long)s), rows, s * cs->per, d);
    chol_op(cs, CHOL_ROWS_BEFORE, s, own, *before, T[own], NULL);
  }
  Tensor *next = chol_block_value(cs, own, s);
  chol_op(cs, CHOL_OWN, s, own, next, T[own], NULL);
  T[own] = next;
  if (own + 1 == cs->nb) return;
  *sent = chol_value(cs, arena_printf(ar, "%s.rows%lld", l->name, (long long)s), rows, rows, d);
  chol_op(cs, CHOL_ROWS, s, own, *sent, T[own], NULL);
}

// The whole split, in the order the pieces run (see the top of the file):
// a block's panels by their owner first, then their updates of the blocks
// below, nearest first, so the scheduler gives the owner's chain its units
// before the updates of the owner's own later blocks.
static void chol_pieces(CholSplit *cs) {
  Partitioner *p = cs->p;
  Arena *ar = &p->c->arena;
  Tensor *a = cs->op->args[0], *l = cs->op->result, **ae = ARENA_ARRAY(ar, Tensor *, cs->D);
  Tensor **T = ARENA_ARRAY(ar, Tensor *, cs->nb);
  int64_t pp = cs->op->chol.order;
  for (int e = 0; e < cs->D; e++) {
    int64_t start[IR_MAX_RANK] = {0};
    ae[e] = part_new_shard(p, a, a->kind, start, &a->shape, cs->devs[e]);
    ae[e]->name = arena_printf(ar, "%s@device(%d)", a->name, cs->devs[e]);
    VEC_PUSH(ar, &cs->leaves, ae[e]);
  }
  for (int64_t b = 0; b < cs->nb; b++) chol_op(cs, CHOL_INIT, 0, b, T[b] = chol_block_value(cs, b, -1), ae[b % cs->D], NULL);
  Tensor **sent = ARENA_ARRAY(ar, Tensor *, cs->ncv), **before = ARENA_ARRAY(ar, Tensor *, cs->ncv);
  for (int64_t own = 0; own < cs->nb; own++) {
    int64_t s0 = own * CHOL_BLOCK_ROWS / cs->per, s1 = MIN(cs->ncv, (own + 1) * CHOL_BLOCK_ROWS / cs->per);
    for (int64_t s = s0; s < s1; s++) chol_own_panel(cs, T, own, s, &sent[s], &before[s]);
    for (int64_t s = s0; s < s1; s++)
      for (int64_t b = own + 1; b < cs->nb; b++) {
        Tensor *next = chol_block_value(cs, b, s);
        Op *o = chol_op(cs, CHOL_PANEL, s, b, next, T[b], sent[s]);
        if (before[s]) o->args[o->nargs++] = before[s];
        T[b] = next;
      }
  }
  for (int64_t b = 0; b < cs->nb; b++) {
    int64_t start[IR_MAX_RANK] = {b * CHOL_BLOCK_ROWS, 0};
    Shape s = {.rank = 2, .dim = {chol_block_rows(cs, b), pp}};
    Tensor *shard = part_new_shard(p, l, TENSOR_VALUE, start, &s, cs->devs[b % cs->D]);
    shard->is_output = true;
    VEC_PUSH(ar, &cs->outputs, shard);
    VEC_PUSH(ar, &cs->values, shard);
    chol_op(cs, CHOL_OUT, b, b, shard, T[b], NULL);
  }
}

static void chol_splice(CholSplit *cs, Op *op) {
  Arena *a = &cs->p->c->arena;
  Graph *g = cs->p->g;
  part_splice(a, (PtrVec *)&g->tensors, op->args[0], cs->leaves.data, cs->leaves.len);
  part_splice(a, (PtrVec *)&g->tensors, op->result, cs->values.data, cs->values.len);
  part_splice(a, (PtrVec *)&g->ops, op, cs->ops.data, cs->ops.len);
  part_splice(a, (PtrVec *)&g->outputs, op->result, cs->outputs.data, cs->outputs.len);
  part_renumber(cs->p);
}

// ---- the estimate ----------------------------------------------------------------------------

// A piece's cycles alone (compute.c's estimate).
static int64_t chol_piece_cycles(const CholSplit *cs, CholRole role, int64_t panel, int64_t block) {
  Op o = *cs->op;
  o.chol = (CholPiece){.role = role, .order = o.chol.order, .panel = panel, .index = (int)block, .group = (int)cs->nb};
  return compute_estimate_cycles(&o, cs->p->vb);
}

// Cycles to send `vectors` vectors of the panel's rows from device index o.
static int64_t chol_send_cycles(const CholSplit *cs, int o, int64_t vectors) {
  return part_send_cycles(cs->p, cs->devs[o], vectors * cs->p->vb, 1);
}

// The split's estimated makespan: its pieces in the order chol_pieces
// makes them, each device running its own one after another, a piece
// starting when its device is free and its operands are there.
static int64_t chol_split_cycles(CholSplit *cs) {
  int64_t *free_at = xcalloc((size_t)cs->D, sizeof(int64_t)), *t = xcalloc((size_t)cs->nb, sizeof(int64_t));
  int64_t pp = cs->op->chol.order, end = 0;
  for (int64_t b = 0; b < cs->nb; b++) t[b] = free_at[b % cs->D] += chol_piece_cycles(cs, CHOL_INIT, 0, b);
  int64_t *sent = xcalloc((size_t)cs->ncv, sizeof(int64_t));
  for (int64_t own = 0; own < cs->nb; own++) {
    int64_t s0 = own * CHOL_BLOCK_ROWS / cs->per, s1 = MIN(cs->ncv, (own + 1) * CHOL_BLOCK_ROWS / cs->per);
    int o = (int)(own % cs->D);
    for (int64_t s = s0; s < s1; s++) {
      int64_t rows = MIN(cs->per, pp - s * cs->per);
      int64_t before = t[own] + chol_piece_cycles(cs, CHOL_ROWS_BEFORE, s, own) + chol_send_cycles(cs, o, rows * s);
      t[own] = free_at[o] = MAX(free_at[o], t[own]) + chol_piece_cycles(cs, CHOL_OWN, s, own);
      sent[s] = MAX(before, t[own] + chol_piece_cycles(cs, CHOL_ROWS, s, own) + chol_send_cycles(cs, o, rows));
    }
    for (int64_t s = s0; s < s1; s++)
      for (int64_t b = own + 1; b < cs->nb; b++) {
        int d = (int)(b % cs->D);
        int64_t ready = MAX(t[b], sent[s]);
        t[b] = free_at[d] = MAX(free_at[d], ready) + chol_piece_cycles(cs, CHOL_PANEL, s, b);
      }
  }
  free(sent);
  for (int64_t b = 0; b < cs->nb; b++) end = MAX(end, t[b] + chol_piece_cycles(cs, CHOL_OUT, b, b));
  free(free_at), free(t);
  return end;
}

static void log_split(Partitioner *p, const Op *op, int D, const int *devs, int64_t best, int64_t whole) {
  buf_printf(&p->log, "// %s = cholesky(%s), line %d: block-cyclic over %d devices (", op->result->name,
             op->args[0]->name, op->loc.line, D);
  for (int i = 0; i < D; i++) buf_printf(&p->log, "%s%d", i ? ", " : "", devs[i]);
  buf_printf(&p->log, "), %d-row block b on the device of index b mod %d: an estimated %lld cycles against %lld "
             "whole; the host loads %s onto each\n",
             CHOL_BLOCK_ROWS, D, (long long)best, (long long)whole, op->args[0]->name);
}

// The number of devices of least estimate, 1 (whole) to n, fewer unless
// more gain CHOL_SPLIT_MIN_GAIN_PERCENT; *best and *whole get estimates.
static int chol_best_devices(CholSplit *cs, int n, int64_t *best, int64_t *whole) {
  int D = 1;
  *best = *whole = compute_estimate_cycles(cs->op, cs->p->vb);
  for (cs->D = 2; cs->D <= n; cs->D++) {
    int64_t c = chol_split_cycles(cs);
    if (c * 100 < *best * (100 - CHOL_SPLIT_MIN_GAIN_PERCENT)) D = cs->D, *best = c;
  }
  return cs->D = D;
}

void partition_split_cholesky(Partitioner *p) {
  for (int i = 0; i < p->g->ops.len; i++) {
    Op *op = p->g->ops.data[i];
    if (!chol_splittable(p, op)) continue;
    int64_t blocks = part_ceil_div(op->chol.order, CHOL_BLOCK_ROWS), best, whole;
    int n, *devs = chol_devices(p, (int)MIN(blocks, p->t->ndevices), &n);
    int64_t per = isa_elems_per_vector(op->result->dtype, p->vb);
    CholSplit cs = {.p = p, .op = op, .devs = devs, .nb = blocks, .per = per, .ncv = part_ceil_div(op->chol.order, per)};
    if (n >= 2 && chol_best_devices(&cs, n, &best, &whole) >= 2) {
      log_split(p, op, cs.D, devs, best, whole);
      int before = p->g->ops.len;
      chol_pieces(&cs);
      chol_splice(&cs, op);
      i += p->g->ops.len - before;
    }
    free(devs);
  }
}
