// reference.c: the reference evaluation of a .tg graph.  Part of runtime/:
// tsp-emu compares a compiled program's outputs against it, so it is
// computed from the graph (frontend -> Graph IR) and nothing the compiler
// decided.  See emu.h for the rules (seeded or given inputs, rounding,
// which tensors are the same on every device, the tolerance).
//
// Two ways to a value.  Inputs, collectives and element-wise ops are lazy:
// computed a block at a time from their operands' blocks, so a 64 MiB
// allreduce result on 72 devices never exists whole.  Ops that read their
// operands out of order (matmul, softmax, layernorm, reduce_*, transpose,
// slice, concat) and the operands they read are *dense*: materialised once
// as a whole array of doubles per (tensor, device), one array when the
// tensor is the same on every device; matmul is one cblas_dgemm.
//
// A lazy tensor read more than once (by two operands, or by an operand and
// the output checks) keeps the last block computed of it: a chain such as
// `repeat 28 { b = relu(a); a = add(a, b); }` asks each step's block of a
// twice, and without the memo every step would double the work (2^28
// evaluations of the input).
//
// A lazy block recurses through its operands, a frame or two a step, so a
// chain of lazy ops deeper than REF_MAX_LAZY_DEPTH (`repeat 100000 { a =
// relu(a); }` overflowed the stack) is cut by *checkpoints*: every
// REF_MAX_LAZY_DEPTH-th tensor of the chain is dense, and a checkpoint is
// materialised only after the checkpoints before it, so no evaluation
// recurses deeper than that.
//
// Batches (several inferences in flight, the manifest's `batches:`): batch
// 0's reference is the one ref_new makes; batch b's (ref_new_batch) seeds
// its inputs differently and leaves every tensor that depends on no input
// (params, and what is computed from params alone) to batch 0's: asked for
// one, it asks batch 0's, which materialises it once for every batch.
#include "emu.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// The last block computed of a lazy tensor read more than once.
typedef struct BlockMemo {
  int device;
  int64_t first, n;  // n 0: none yet
  double *v;
  int64_t cap;
} BlockMemo;

#define REF_MAX_LAZY_DEPTH 1024
// The most elements of a lazy tensor computed at once (ref_block's callers
// and a dense tensor of a lazy op are served this many at a time): each
// level of a chain of lazy ops holds at most this many doubles (an
// operand's block, a reduction's partial sums), and each shared tensor's
// memo as many.  A whole-tensor block a level took 11x the memory estimate
// (200 nested adds of f16[2048, 320] under a matmul: 1,030 MiB).
#define REF_BLOCK_ELEMS 16384

struct Reference {
  const Graph *g;
  const Topology *t;
  uint64_t seed;
  int **groups;          // by tensor id: the devices of an @ each tensor (NULL otherwise)
  int *ngroup;
  uint64_t *name_hash;   // by tensor id: FNV-1a of its name, the seed's share of it
  uint8_t **given;       // by tensor id: values set by ref_set_input (NULL: seeded)
  uint8_t ***given_on;   // by tensor id, then device: one copy's values (ref_set_input_on)
  bool *varies;          // by tensor id: its value may depend on the device
  bool *dense;           // by tensor id: materialised (read out of order, or such a result)
  BlockMemo *memo;       // by tensor id: a lazy tensor's last block, when it is read more than once (shared)
  bool *shared;
  bool *checkpoint;      // by tensor id: dense to cut a chain of lazy ops (REF_MAX_LAZY_DEPTH)
  double ***arrays;      // by tensor id, then device (0 when !varies): the dense values
  int *growth;           // by tensor id: G(t), the tolerance's growth factor
  bool *on_inputs;       // by tensor id: its value depends on an input (each batch has its own)
  bool *spd;             // by tensor id: an input or param a cholesky reads, seeded positive definite
  double **scales;       // by tensor id, then device: error_scale's answers (-1: not yet asked)
  double **rms;          // by tensor id, then device: rms_of's answers (-1: not yet asked)
  int lazy_depth;        // the most lazy ops a block recurses through (find_checkpoints)
  Reference *base;       // a batch's reference: batch 0's, which holds every tensor not on_inputs (NULL: batch 0's)
  int batch;             // which inference: its inputs are seeded with it
  bool has_batches;      // batch 0's, once ref_new_batch was made from it: its given values are final
};

// The tolerance convention (PyTorch's assert_close defaults), per dtype:
// relative and absolute parts; 0 for integers, which compare exactly.
#define REF_RTOL_F32 1.3e-6
#define REF_RTOL_F16 1e-3
#define REF_RTOL_BF16 1.6e-2
#define REF_ATOL_FLOAT 1e-5
// The growth g(op) of ops that round once after an exact operation (add,
// sub, mul, div), of transcendental ones (exp, rsqrt, gelu), of a sum of n
// terms (plus ceil(log2 n)) and of softmax and layernorm (plus ceil(log2 n)).
#define REF_GROWTH_ARITH 1
#define REF_GROWTH_TRANSCENDENTAL 2
#define REF_GROWTH_SUM 1
#define REF_GROWTH_NORMALISE 4
// cholesky: each element of L is a dot product of up to p terms, a
// subtraction and a reciprocal square root, and feeds every later column:
// g = REF_GROWTH_CHOLESKY + 2 ceil(log2 p) (docs/dsl.md, cholesky).
#define REF_GROWTH_CHOLESKY 4
// layernorm's epsilon, as in docs/dsl.md.
#define REF_LAYERNORM_EPS IR_LAYERNORM_EPSILON
// Batch b's inputs are seeded from seed_base() ^ b x this (odd, so batches
// never share a seed; 0 for batch 0, whose seeds stay those of one batch).
// A constant of splitmix64's family, like the others of seed_base.
#define REF_BATCH_SEED_STEP 0xc2b2ae3d27d4eb4full


// The reference that holds t's values: a batch's own for a tensor that
// depends on an input, batch 0's for every other (shared by all batches).
static Reference *owner(Reference *r, const Tensor *t) { return r->base && !r->on_inputs[t->id] ? r->base : r; }
static const Reference *owner_of(const Reference *r, const Tensor *t) {
  return r->base && !r->on_inputs[t->id] ? r->base : r;
}

// The maximum of IEEE 754-2019 (and of the vector unit's VMAX): NaN if
// either is NaN.
static double max_nan(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

// Whether any single copy of input t was given (ref_set_input_on).
static bool given_on_some_device(const Reference *r, const Tensor *t) {
  if (!r->given_on[t->id]) return false;
  for (int d = 0; d < r->t->ndevices; d++)
    if (r->given_on[t->id][d]) return true;
  return false;
}

// Whether t's value may differ between devices, by what compute() does
// with the device: ref_input uses it only for @ each tensors not given as
// a whole, or given one copy at a time; reduce_scatter picks the device's
// shard; allreduce and all_gather read every copy of their operand, on
// fixed devices; copy reads a tensor not @ each on device 0; every other
// op passes the device on to its operands.  Tensors come in a topological
// order: the operands' answers are known.
static bool varies(const Reference *r, const Tensor *t) {
  const Op *op = t->def;
  if (!op) return t->place.kind == PLACE_EACH && (!r->given[t->id] || given_on_some_device(r, t));
  switch (op->kind) {
  case OP_ALLREDUCE:
  case OP_ALL_GATHER: return false;
  case OP_REDUCE_SCATTER: return true;
  case OP_COPY: return op->args[0]->place.kind == PLACE_EACH && r->varies[op->args[0]->id];
  default:
    for (int i = 0; i < op->nargs; i++)
      if (r->varies[op->args[i]->id]) return true;
    return false;
  }
}

// A batch's answer for a tensor batch 0's reference holds is batch 0's.
static void find_varying(Reference *r) {
  for (int i = 0; i < r->g->tensors.len; i++) {
    const Tensor *t = r->g->tensors.data[i];
    r->varies[i] = owner(r, t) != r ? r->base->varies[i] : varies(r, t);
  }
}

// Which tensors depend on an input (in topological order): inputs, and
// the results of ops with such an operand.
static void find_on_inputs(Reference *r) {
  for (int i = 0; i < r->g->tensors.len; i++) {
    const Tensor *t = r->g->tensors.data[i];
    r->on_inputs[i] = t->kind == TENSOR_INPUT;
    for (int k = 0; t->def && k < t->def->nargs; k++) r->on_inputs[i] |= r->on_inputs[t->def->args[k]->id];
  }
}

// ceil(log2(n)) for n >= 1.
static int ceil_log2(int64_t n) {
  int k = 0;
  while (((int64_t)1 << k) < n) k++;
  return k;
}

// Whether op reads its operands out of order: they and its result are dense.
static bool reads_out_of_order(OpKind k) {
  switch (k) {
  case OP_MATMUL:
  case OP_SOFTMAX:
  case OP_LAYERNORM:
  case OP_REDUCE_SUM:
  case OP_REDUCE_MAX:
  case OP_TRANSPOSE:
  case OP_SLICE:
  case OP_CONCAT:
  case OP_CHOLESKY: return true;
  default: return false;
  }
}

// An element-wise op whose second operand is a vector over the last
// dimension of the first (a bias): that vector is read out of order.
static bool is_broadcast(const Op *op) {
  return op->nargs == 2 && op->args[1]->shape.rank == 1 && op->result->shape.rank != 1;
}

// Marks the tensors to materialise: results of out-of-order ops, their
// operands, and broadcast vectors.
static void find_dense(Reference *r) {
  for (int i = 0; i < r->g->ops.len; i++) {
    const Op *op = r->g->ops.data[i];
    if (reads_out_of_order(op->kind)) {
      r->dense[op->result->id] = true;
      for (int k = 0; k < op->nargs; k++) r->dense[op->args[k]->id] = true;
    } else if ((op->kind == OP_ADD || op->kind == OP_SUB || op->kind == OP_MUL || op->kind == OP_DIV) &&
               is_broadcast(op)) {
      r->dense[op->args[1]->id] = true;
    }
  }
}

// Marks the operands of collectives that are computed lazily, differ from
// device to device, and come from an earlier collective's result through
// lazy ops: a collective reads its operand on every device of its group,
// and each of those blocks asks the earlier collective, which asks every
// device again, so a chain of k collectives cost group size ^ k
// (`repeat 10 { s = allreduce(p, op=max); p = sub(p, s); }` on node8 ran
// for minutes; found by a sweep).  Dense, each is computed once a device.
static void find_collective_chains(Reference *r) {
  bool *after = xcalloc((size_t)r->g->tensors.len + 1, sizeof *after);  // lazily computed from a collective
  for (int i = 0; i < r->g->ops.len; i++) {
    const Op *op = r->g->ops.data[i];
    int t = op->result->id;
    for (int k = 0; k < op->nargs; k++) {
      const Tensor *x = op->args[k];
      if (ir_op_is_collective(op->kind) && x->def && !r->dense[x->id] && r->varies[x->id] && after[x->id])
        r->dense[x->id] = true;
      after[t] |= !r->dense[x->id] && after[x->id];
    }
    after[t] = !r->dense[t] && (after[t] || ir_op_is_collective(op->kind));
  }
  free(after);
}

// Marks the checkpoints: a lazy tensor REF_MAX_LAZY_DEPTH lazy ops above
// the nearest input or dense tensor (ops come in dependency order).
static void find_checkpoints(Reference *r) {
  int *depth = xcalloc((size_t)r->g->tensors.len + 1, sizeof *depth);  // lazy ops down to a dense or input tensor
  for (int i = 0; i < r->g->ops.len; i++) {
    const Op *op = r->g->ops.data[i];
    int t = op->result->id;
    if (r->dense[t]) continue;
    for (int k = 0; k < op->nargs; k++) depth[t] = MAX(depth[t], depth[op->args[k]->id]);
    r->lazy_depth = MAX(r->lazy_depth, ++depth[t]);
    if (depth[t] < REF_MAX_LAZY_DEPTH) continue;
    r->dense[t] = r->checkpoint[t] = true;
    depth[t] = 0;
  }
  free(depth);
}

// Marks the lazy tensors computed from others and read more than once:
// their blocks are kept (BlockMemo).
static void find_shared(Reference *r) {
  int *reads = xcalloc((size_t)r->g->tensors.len + 1, sizeof *reads);
  for (int i = 0; i < r->g->ops.len; i++) {
    const Op *op = r->g->ops.data[i];
    for (int k = 0; k < op->nargs; k++) reads[op->args[k]->id]++;
  }
  for (int i = 0; i < r->g->tensors.len; i++) {
    const Tensor *t = r->g->tensors.data[i];
    r->shared[i] = t->def && !r->dense[i] && reads[i] + t->is_output > 1;
  }
  free(reads);
}

// The elements whose sum or normalisation op computes, for its growth.
static int64_t axis_length(const Op *op) { return op->args[0]->shape.dim[op->axis]; }

// g(op): what one op adds to the growth factor (docs/isa.md, Data checks).
static int op_growth(const Reference *r, const Op *op) {
  switch (op->kind) {
  case OP_ADD:
  case OP_SUB:
  case OP_MUL:
  case OP_DIV: return REF_GROWTH_ARITH;
  case OP_EXP:
  case OP_RSQRT:
  case OP_GELU: return REF_GROWTH_TRANSCENDENTAL;
  case OP_MATMUL: return REF_GROWTH_SUM + ceil_log2(op->args[0]->shape.dim[op->args[0]->shape.rank - 1]);
  case OP_REDUCE_SUM: return REF_GROWTH_SUM + ceil_log2(axis_length(op));
  case OP_ALLREDUCE:
  case OP_REDUCE_SCATTER:
    return op->reduce == REDUCE_MAX ? 0 : REF_GROWTH_SUM + ceil_log2(MAX(r->ngroup[op->args[0]->id], 1));
  case OP_SOFTMAX:
  case OP_LAYERNORM: return REF_GROWTH_NORMALISE + ceil_log2(axis_length(op));
  case OP_CHOLESKY: return REF_GROWTH_CHOLESKY + 2 * ceil_log2(op->args[0]->shape.dim[0]);
  default: return 0;  // copy, transpose, reshape, slice, concat, relu, reduce_max, all_gather
  }
}

// G(t) for every tensor, in topological order: 0 for inputs and params,
// the largest of the operands' plus g(op) for results.
static void find_growth(Reference *r) {
  for (int i = 0; i < r->g->tensors.len; i++) {
    const Op *op = r->g->tensors.data[i]->def;
    if (!op) continue;
    int g = 0;
    for (int k = 0; k < op->nargs; k++) g = MAX(g, r->growth[op->args[k]->id]);
    r->growth[i] = g + op_growth(r, op);
  }
}

// The inputs and params a cholesky reads: seeded symmetric positive
// definite (seeded_spd), so a graph run without --input factors.
static void find_spd(Reference *r) {
  for (int i = 0; i < r->g->ops.len; i++) {
    const Op *op = r->g->ops.data[i];
    if (op->kind == OP_CHOLESKY && !op->args[0]->def) r->spd[op->args[0]->id] = true;
  }
}

// The devices of each @ each tensor's group, ascending.
static void find_groups(Reference *r) {
  for (int i = 0; i < r->g->tensors.len; i++) {
    const Tensor *x = r->g->tensors.data[i];
    const Placement *p = &x->place;
    r->name_hash[i] = digest_fnv1a64(x->name, strlen(x->name));
    if (p->kind != PLACE_EACH) continue;
    int *devs = xmalloc(sizeof(int) * (size_t)r->t->ndevices), n = 0;
    for (int d = 0; d < r->t->ndevices; d++)
      if (!p->nexcept || !bsearch(&d, p->except, (size_t)p->nexcept, sizeof(int), cmp_int)) devs[n++] = d;
    r->groups[i] = devs;
    r->ngroup[i] = n;
  }
}

Reference *ref_new(const Graph *g, const Topology *t, uint64_t seed) {
  Reference *r = xcalloc(1, sizeof *r);
  *r = (Reference){.g = g, .t = t, .seed = seed};
  size_t count = (size_t)g->tensors.len + 1;
  r->groups = xcalloc(count, sizeof *r->groups);
  r->ngroup = xcalloc(count, sizeof *r->ngroup);
  r->name_hash = xcalloc(count, sizeof *r->name_hash);
  r->given = xcalloc(count, sizeof *r->given);
  r->given_on = xcalloc(count, sizeof *r->given_on);
  r->varies = xcalloc(count, sizeof *r->varies);
  r->dense = xcalloc(count, sizeof *r->dense);
  r->memo = xcalloc(count, sizeof *r->memo);
  r->shared = xcalloc(count, sizeof *r->shared);
  r->checkpoint = xcalloc(count, sizeof *r->checkpoint);
  r->arrays = xcalloc(count, sizeof *r->arrays);
  r->growth = xcalloc(count, sizeof *r->growth);
  r->on_inputs = xcalloc(count, sizeof *r->on_inputs);
  r->spd = xcalloc(count, sizeof *r->spd);
  r->scales = xcalloc(count, sizeof *r->scales);
  r->rms = xcalloc(count, sizeof *r->rms);
  find_on_inputs(r);
  find_spd(r);
  find_groups(r);
  find_varying(r);
  find_dense(r);
  find_collective_chains(r);
  find_checkpoints(r);
  find_shared(r);
  find_growth(r);
  return r;
}

Reference *ref_new_batch(Reference *base, int batch) {
  assert(!base->base && batch > 0);
  Reference *r = ref_new(base->g, base->t, base->seed);
  r->base = base;
  r->batch = batch;
  base->has_batches = true;
  find_varying(r);  // now with batch 0's answers for the tensors it holds
  return r;
}

// Forgets tensor i's materialised array, kept block and answers.
static void drop_tensor(Reference *r, int i) {
  free(r->memo[i].v);
  r->memo[i] = (BlockMemo){0};
  free(r->scales[i]), free(r->rms[i]);
  r->scales[i] = r->rms[i] = NULL;
  if (!r->arrays[i]) return;
  for (int d = 0; d < r->t->ndevices; d++) free(r->arrays[i][d]);
  free(r->arrays[i]);
  r->arrays[i] = NULL;
}

// Forgets every materialised array and kept block (the inputs changed).
static void drop_arrays(Reference *r) {
  for (int i = 0; i < r->g->tensors.len; i++) drop_tensor(r, i);
}

// One of several inferences forgets the tensors an input reaches; batch
// 0's keeps the rest, which every batch shares.  A lone reference keeps
// all: its check reads what its seeding made.
void ref_forget(Reference *r) {
  if (!r->base && !r->has_batches) return;
  for (int i = 0; i < r->g->tensors.len; i++)
    if (r->on_inputs[i]) drop_tensor(r, i);
}

void ref_free(Reference *r) {
  if (!r) return;
  drop_arrays(r);
  for (int i = 0; i < r->g->tensors.len; i++) {
    free(r->groups[i]);
    free(r->given[i]);
    if (!r->given_on[i]) continue;
    for (int d = 0; d < r->t->ndevices; d++) free(r->given_on[i][d]);
    free(r->given_on[i]);
  }
  free(r->groups);
  free(r->ngroup);
  free(r->name_hash);
  free(r->given);
  free(r->given_on);
  free(r->varies);
  free(r->dense);
  free(r->memo);
  free(r->shared);
  free(r->checkpoint);
  free(r->arrays);
  free(r->growth);
  free(r->on_inputs);
  free(r->spd);
  free(r->scales);
  free(r->rms);
  free(r);
}

void ref_set_input(Reference *r, const Tensor *t, const void *data) {
  assert(!t->def && owner(r, t) == r && !r->has_batches);  // a batch's inputs only: its params are batch 0's
  size_t bytes = (size_t)ir_tensor_bytes(t);
  free(r->given[t->id]);
  r->given[t->id] = memcpy(xmalloc(bytes), data, bytes);
  drop_arrays(r);
  find_varying(r);  // given values are the same on every device
}

void ref_set_input_on(Reference *r, const Tensor *t, int device, const void *data) {
  assert(!t->def && owner(r, t) == r && !r->has_batches && device >= 0 && device < r->t->ndevices);
  size_t bytes = (size_t)ir_tensor_bytes(t);
  if (!r->given_on[t->id]) r->given_on[t->id] = xcalloc((size_t)r->t->ndevices, sizeof(uint8_t *));
  free(r->given_on[t->id][device]);
  r->given_on[t->id][device] = memcpy(xmalloc(bytes), data, bytes);
  drop_arrays(r);
  find_varying(r);
}

bool ref_same_on_every_device(const Reference *r, const Tensor *t) { return !owner_of(r, t)->varies[t->id]; }

size_t ref_held_bytes(const Reference *r) {
  size_t bytes = 0;
  for (int i = 0; i < r->g->tensors.len; i++)
    for (int d = 0; r->arrays[i] && d < r->t->ndevices; d++)
      if (r->arrays[i][d]) bytes += (size_t)ir_shape_elems(&r->g->tensors.data[i]->shape) * sizeof(double);
  return bytes;
}

uint64_t ref_dense_bytes(const Reference *r, RefArrays which) {
  // A block of scratch a level (one more where a dense tensor's own op is
  // lazy: compute_dense runs it above the chain), and a memo a shared
  // tensor: batch 0's counted with what it shares, a later batch's with
  // its inference.
  bool blocks_here = which == REF_ARRAYS_ALL || (which == REF_ARRAYS_SHARED) == !r->base;
  uint64_t blocks = blocks_here ? (uint64_t)r->lazy_depth + 1 : 0;
  for (int i = 0; blocks_here && i < r->g->tensors.len; i++)
    blocks += r->shared[i] && owner_of(r, r->g->tensors.data[i]) == r;
  uint64_t bytes = blocks * REF_BLOCK_ELEMS * sizeof(double);
  for (int i = 0; i < r->g->tensors.len; i++) {
    const Tensor *t = r->g->tensors.data[i];
    if (!r->dense[i] || owner_of(r, t) != r) continue;
    if (which != REF_ARRAYS_ALL && r->on_inputs[i] != (which == REF_ARRAYS_INFERENCE)) continue;
    uint64_t copies = !r->varies[i] ? 1 : r->ngroup[i] ? (uint64_t)r->ngroup[i] : (uint64_t)r->t->ndevices;
    bytes += copies * (uint64_t)ir_shape_elems(&t->shape) * sizeof(double);
  }
  return bytes;
}

int ref_group(const Reference *r, const Tensor *t, const int **devices) {
  *devices = r->groups[t->id];
  return r->ngroup[t->id];
}

// ---- tolerance ---------------------------------------------------------------------

int ref_growth(const Reference *r, const Tensor *t) { return r->growth[t->id]; }

static double rtol_of(DType dt);

RefTolerance ref_tolerance_of(const Reference *r, const Tensor *t) {
  return (RefTolerance){.growth = r->growth[t->id], .atol = REF_ATOL_FLOAT, .rtol = rtol_of(t->dtype)};  // rtol 0: integers
}

double ref_tolerance(const Reference *r, const Tensor *t, double want, double rms) {
  return ref_tolerance_at(ref_tolerance_of(r, t), want, rms);
}

// ---- inputs -------------------------------------------------------------------------

// A seeded element is -1, 0 or 1 from (seed, tensor name, device, batch,
// element): splitmix64's finaliser over seed_base() + elem * a constant,
// so the same graph gives the same inputs on any machine.  The batch counts
// for inputs only (params are shared by every batch).
static uint64_t seed_base(const Reference *r, const Tensor *t, int device) {
  uint64_t h = r->name_hash[t->id] ^ r->seed;
  if (t->kind == TENSOR_INPUT) h ^= (uint64_t)r->batch * REF_BATCH_SEED_STEP;
  return h ^ (uint64_t)(t->place.kind == PLACE_EACH ? device : 0) * 0x9e3779b97f4a7c15ull;
}

// splitmix64's finaliser over base + elem * a constant.
static inline uint64_t seed_hash(uint64_t base, int64_t elem) {
  uint64_t h = base + (uint64_t)elem * 0xd1b54a32d192ed03ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

// The value comes from a table: an int-to-double conversion would chain
// every iteration of input_block's loop to the one before (cvtsi2sd writes
// half a register), about 9 cycles an element instead of 6.
static double seeded(uint64_t base, int64_t elem) {
  static const double value[3] = {-1, 0, 1};
  return value[seed_hash(base, elem) % 3];
}

// Elements first .. first + n of a seeded tensor, and the same added to
// out[].  Where the CPU has AVX-512 (with its 64-bit multiply and byte
// sums), eight elements an instruction (0.38 ns an element here, against
// 0.72 for the compiler's vectorisation of a sum of 16-bit limbs before
// it): h mod 3 is the sum of h's eight bytes mod 3, since 2^8 = 1 (mod 3),
// which vpsadbw forms in one instruction; that sum s <= 2040 has s / 3 =
// s x 0xaaab >> 17 exactly.  The same values as seeded().
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define REF_SEED_WIDE 1
#define REF_SEED_WIDE_ATTRS __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))

// The hashes of elements first .. first + 7 before seed_hash's mixing.
REF_SEED_WIDE_ATTRS static inline __m512i seed_start8(uint64_t base, int64_t first) {
  __m512i elems = _mm512_add_epi64(_mm512_set1_epi64(first), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm512_add_epi64(_mm512_set1_epi64((long long)base),
                          _mm512_mullo_epi64(elems, _mm512_set1_epi64((long long)0xd1b54a32d192ed03ull)));
}

// seed_hash's mixing, then the hash mod 3 (0, 1 or 2), in each 64-bit lane.
REF_SEED_WIDE_ATTRS static inline __m512i seed_mod3_8(__m512i h) {
  h = _mm512_mullo_epi64(_mm512_xor_si512(h, _mm512_srli_epi64(h, 30)), _mm512_set1_epi64((long long)0xbf58476d1ce4e5b9ull));
  h = _mm512_mullo_epi64(_mm512_xor_si512(h, _mm512_srli_epi64(h, 27)), _mm512_set1_epi64((long long)0x94d049bb133111ebull));
  h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 31));
  __m512i sum = _mm512_sad_epu8(h, _mm512_setzero_si512());
  __m512i third = _mm512_srli_epi64(_mm512_mul_epu32(sum, _mm512_set1_epi64(0xaaab)), 17);
  return _mm512_sub_epi64(sum, _mm512_add_epi64(third, _mm512_add_epi64(third, third)));
}

// The step from one group of eight elements' hashes to the next.
#define REF_SEED_STEP8 ((long long)(8 * 0xd1b54a32d192ed03ull))

// Elements first .. first + n (n a multiple of 8) as doubles into out, or
// added to out.
REF_SEED_WIDE_ATTRS static void seed_doubles_wide(uint64_t base, int64_t first, int64_t n, double *out, bool add) {
  __m512i h = seed_start8(base, first), one = _mm512_set1_epi64(1);
  for (int64_t k = 0; k < n; k += 8, h = _mm512_add_epi64(h, _mm512_set1_epi64(REF_SEED_STEP8))) {
    __m512d v = _mm512_cvtepi64_pd(_mm512_sub_epi64(seed_mod3_8(h), one));
    _mm512_storeu_pd(out + k, add ? _mm512_add_pd(_mm512_loadu_pd(out + k), v) : v);
  }
}

// Elements first .. first + n (n a multiple of 16) as `size`-byte values:
// table[h mod 3], little-endian, sixteen at a time.
REF_SEED_WIDE_ATTRS static void seed_bytes_wide(uint64_t base, int64_t first, int64_t n, const uint32_t table[3],
                                                int size, uint8_t *out) {
  __m512i h = seed_start8(base, first), step = _mm512_set1_epi64(REF_SEED_STEP8);
  __m512i values = _mm512_castsi128_si512(_mm_setr_epi32((int)table[0], (int)table[1], (int)table[2], 0));
  __m512i low_halves = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int64_t k = 0; k < n; k += 16) {
    __m512i a = seed_mod3_8(h);
    h = _mm512_add_epi64(h, step);
    __m512i b = seed_mod3_8(h);
    h = _mm512_add_epi64(h, step);
    __m512i v = _mm512_permutexvar_epi32(_mm512_permutex2var_epi32(a, low_halves, b), values);
    if (size == 4)
      _mm512_storeu_si512(out + 4 * k, v);
    else if (size == 2)
      _mm256_storeu_si256((__m256i *)(out + 2 * k), _mm512_cvtepi32_epi16(v));
    else
      _mm_storeu_si128((__m128i *)(out + k), _mm512_cvtepi32_epi8(v));
  }
}

static bool seed_wide(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
}
#else
#define REF_SEED_WIDE 0
#endif

static void seed_block(uint64_t base, int64_t first, int64_t n, double *out) {
  int64_t k = 0;
#if REF_SEED_WIDE
  if (seed_wide()) seed_doubles_wide(base, first, k = n / 8 * 8, out, false);
#endif
  for (; k < n; k++) out[k] = seeded(base, first + k);
}

static void seed_block_add(uint64_t base, int64_t first, int64_t n, double *out) {
  int64_t k = 0;
#if REF_SEED_WIDE
  if (seed_wide()) seed_doubles_wide(base, first, k = n / 8 * 8, out, true);
#endif
  for (; k < n; k++) out[k] += seeded(base, first + k);
}

// The same as dtype dt stores them, `size` bytes each, into out.
static void seed_bytes(uint64_t base, int64_t first, int64_t n, DType dt, uint8_t *out) {
  uint32_t table[3];  // -1, 0 and 1 as dt stores them, little-endian
  uint8_t bytes[4] = {0};
  int size = ir_dtype_bytes[dt];
  for (int v = 0; v < 3; v++) {
    num_set(dt, bytes, 0, v - 1);
    table[v] = (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24;
  }
  int64_t k = 0;
#if REF_SEED_WIDE
  if (seed_wide() && (size == 4 || size == 2 || size == 1)) seed_bytes_wide(base, first, k = n / 16 * 16, table, size, out);
#endif
  for (; k < n; k++) {
    uint32_t v = table[seed_hash(base, first + k) % 3];
    for (int b = 0; b < size; b++) out[k * size + b] = (uint8_t)(v >> 8 * b);
  }
}

// A seeded element of a [p x p] tensor a cholesky reads: on the diagonal
// the least power of two >= p (exact in every dtype), off it the seeded -1,
// 0 or 1 of the element (min(i, j), max(i, j)), so the matrix is symmetric
// and strictly diagonally dominant with a positive diagonal: positive
// definite (Gershgorin's theorem).
static double seeded_spd(uint64_t base, int64_t p, int64_t elem) {
  int64_t i = elem / p, j = elem % p;
  return i == j ? ldexp(1, ceil_log2(p)) : seeded(base, MIN(i, j) * p + MAX(i, j));
}

// The seeded element elem of t (on the device base was made for).
static double seeded_of(const Reference *r, const Tensor *t, uint64_t base, int64_t elem) {
  return r->spd[t->id] ? seeded_spd(base, t->shape.dim[0], elem) : seeded(base, elem);
}

// The values given for t's copy on `device`: that copy's own, else the
// whole tensor's, else NULL (seeded).
static const uint8_t *given_values(const Reference *r, const Tensor *t, int device) {
  if (r->given_on[t->id] && device >= 0 && device < r->t->ndevices && r->given_on[t->id][device])
    return r->given_on[t->id][device];
  return r->given[t->id];
}

// The given value, or the seeded one: either is exact in the tensor's dtype.
double ref_input(const Reference *r, const Tensor *t, int device, int64_t elem) {
  r = owner_of(r, t);
  const uint8_t *given = given_values(r, t, device);
  if (given) return num_get(t->dtype, given + elem * ir_dtype_bytes[t->dtype], 0);
  return seeded_of(r, t, seed_base(r, t, device), elem);
}

static void input_block(const Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out) {
  const uint8_t *given = given_values(r, t, device);
  int size = ir_dtype_bytes[t->dtype];
  if (!given) {
    uint64_t base = seed_base(r, t, device);
    if (r->spd[t->id])  // a cholesky's operand: positive definite, an element at a time
      for (int64_t k = 0; k < n; k++) out[k] = seeded_spd(base, t->shape.dim[0], first + k);
    else
      seed_block(base, first, n, out);
  } else if (t->dtype == DT_F32) {  // the common case, without num_get's dispatch
    for (const uint8_t *p = given + first * size; n-- > 0; p += 4) {
      uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
      float f;
      memcpy(&f, &u, sizeof f);
      *out++ = f;
    }
  } else {
    for (int64_t k = 0; k < n; k++) out[k] = num_get(t->dtype, given + (first + k) * size, 0);
  }
}

// Whether t's elements on `device` are plain seeded values, -1, 0 or 1
// (exact in every dtype): an input or param given no values and no
// cholesky's operand (r: the reference that holds t).
static bool plain_seeded(const Reference *r, const Tensor *t, int device) {
  return !t->def && !given_values(r, t, device) && !r->spd[t->id];
}

bool ref_seeded_bytes(const Reference *r, const Tensor *t, int device, int64_t first, int64_t n, uint8_t *out) {
  r = owner_of(r, t);
  if (!plain_seeded(r, t, device)) return false;
  seed_bytes(seed_base(r, t, device), first, n, t->dtype, out);
  return true;
}

// ---- rounding -------------------------------------------------------------------------

// Rounds out[0 .. n) as dtype dt stores them (f32 without num_set's dispatch).
static void store_all(DType dt, double *out, int64_t n) {
  if (dt == DT_F32) {
    for (int64_t k = 0; k < n; k++) out[k] = (float)out[k];
    return;
  }
  uint8_t buf[8];
  for (int64_t k = 0; k < n; k++) {
    num_set(dt, buf, 0, out[k]);
    out[k] = num_get(dt, buf, 0);
  }
}

// ---- dense tensors --------------------------------------------------------------------

static void lazy_block(Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out);
static void by_chunks(Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out,
                      void (*one)(Reference *, const Tensor *, int, int64_t, int64_t, double *));
static void block_of(Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out);

// The extent of `axis` and the elements before and after it (row-major):
// t is [outer, extent, inner].
typedef struct AxisSpan {
  int64_t outer, extent, inner;
} AxisSpan;

static AxisSpan axis_span(const Shape *s, int axis) {
  AxisSpan a = {1, s->dim[axis], 1};
  for (int d = 0; d < axis; d++) a.outer *= s->dim[d];
  for (int d = axis + 1; d < s->rank; d++) a.inner *= s->dim[d];
  return a;
}

static const double *dense_values(Reference *r, const Tensor *t, int device);

// matmul: the whole [.., M, K] x [K, N] product as one [rows, K] x [K, N] dgemm.
static void dense_matmul(Reference *r, const Op *op, int device, double *out) {
  const Tensor *a = op->args[0], *b = op->args[1];
  int64_t k = b->shape.dim[0], n = b->shape.dim[1], rows = ir_shape_elems(&a->shape) / k;
  const double *av = dense_values(r, a, device), *bv = dense_values(r, b, device);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)rows, (blasint)n, (blasint)k, 1.0, av,
              (blasint)k, bv, (blasint)n, 0.0, out, (blasint)n);
}

// softmax and layernorm, each lane along the axis: exp(x - max) / sum, or
// (x - mean) / sqrt(var + eps) [* gamma + beta], in double.
static void dense_normalise(Reference *r, const Op *op, int device, double *out) {
  const double *x = dense_values(r, op->args[0], device);
  const double *gamma = op->nargs == 3 ? dense_values(r, op->args[1], device) : NULL;
  const double *beta = op->nargs == 3 ? dense_values(r, op->args[2], device) : NULL;
  AxisSpan s = axis_span(&op->args[0]->shape, op->axis);
  for (int64_t o = 0; o < s.outer; o++)
    for (int64_t i = 0; i < s.inner; i++) {
      const double *lane = x + o * s.extent * s.inner + i;
      double *res = out + o * s.extent * s.inner + i;
      double mx = -INFINITY, sum = 0, sq = 0;
      for (int64_t p = 0; p < s.extent; p++) mx = max_nan(mx, lane[p * s.inner]), sum += lane[p * s.inner];
      double mean = sum / (double)s.extent;
      for (int64_t p = 0; p < s.extent; p++) sq += (lane[p * s.inner] - mean) * (lane[p * s.inner] - mean);
      double z = 0, scale = 1 / sqrt(sq / (double)s.extent + REF_LAYERNORM_EPS);
      if (op->kind == OP_SOFTMAX)
        for (int64_t p = 0; p < s.extent; p++) z += exp(lane[p * s.inner] - mx);
      for (int64_t p = 0; p < s.extent; p++) {
        double v = lane[p * s.inner];
        double y = op->kind == OP_SOFTMAX ? exp(v - mx) / z : (v - mean) * scale;
        res[p * s.inner] = gamma ? y * gamma[p] + beta[p] : y;
      }
    }
}

// reduce_sum and reduce_max: the axis goes ([outer, inner], or [1]).
static void dense_reduce(Reference *r, const Op *op, int device, double *out) {
  const double *x = dense_values(r, op->args[0], device);
  AxisSpan s = axis_span(&op->args[0]->shape, op->axis);
  for (int64_t o = 0; o < s.outer; o++)
    for (int64_t i = 0; i < s.inner; i++) {
      const double *lane = x + o * s.extent * s.inner + i;
      double acc = lane[0];
      for (int64_t p = 1; p < s.extent; p++)
        acc = op->kind == OP_REDUCE_MAX ? max_nan(acc, lane[p * s.inner]) : acc + lane[p * s.inner];
      out[o * s.inner + i] = acc;
    }
}

// transpose: x [.., rows, cols] -> [.., cols, rows].
static void dense_transpose(Reference *r, const Op *op, int device, double *out) {
  const Tensor *x = op->args[0];
  const double *v = dense_values(r, x, device);
  int64_t rows = x->shape.dim[x->shape.rank - 2], cols = x->shape.dim[x->shape.rank - 1];
  int64_t planes = ir_shape_elems(&x->shape) / (rows * cols);
  for (int64_t p = 0; p < planes; p++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) out[p * rows * cols + j * rows + i] = v[p * rows * cols + i * cols + j];
}

// slice: [start, end) along the axis.
static void dense_slice(Reference *r, const Op *op, int device, double *out) {
  const double *x = dense_values(r, op->args[0], device);
  AxisSpan s = axis_span(&op->args[0]->shape, op->axis);
  int64_t run = (op->end - op->start) * s.inner;
  for (int64_t o = 0; o < s.outer; o++)
    memcpy(out + o * run, x + (o * s.extent + op->start) * s.inner, (size_t)run * sizeof(double));
}

// concat: the operands' runs along the axis, in operand order.
static void dense_concat(Reference *r, const Op *op, int device, double *out) {
  AxisSpan s = axis_span(&op->result->shape, op->axis);
  int64_t at = 0;
  for (int o = 0; o < op->nargs; o++) {
    const Tensor *x = op->args[o];
    const double *v = dense_values(r, x, device);
    int64_t run = x->shape.dim[op->axis] * s.inner;
    for (int64_t k = 0; k < s.outer; k++)
      memcpy(out + k * s.extent * s.inner + at, v + k * run, (size_t)run * sizeof(double));
    at += run;
  }
}

// cholesky: the lower-triangular L with L L^T = x, from x's lower
// triangle (the upper one is never read, as numpy.linalg.cholesky), column
// by column in double; zeros above the diagonal.  A pivot that is not
// positive gives NaN from there on, as the device's rsqrt does.
static void dense_cholesky(Reference *r, const Op *op, int device, double *out) {
  const double *x = dense_values(r, op->args[0], device);
  int64_t p = op->args[0]->shape.dim[0];
  memset(out, 0, (size_t)(p * p) * sizeof *out);
  for (int64_t j = 0; j < p; j++) {
    double d = x[j * p + j];
    for (int64_t k = 0; k < j; k++) d -= out[j * p + k] * out[j * p + k];
    double scale = 1 / sqrt(d);
    out[j * p + j] = d * scale;
    for (int64_t i = j + 1; i < p; i++) {
      double s = x[i * p + j];
      for (int64_t k = 0; k < j; k++) s -= out[i * p + k] * out[j * p + k];
      out[i * p + j] = s * scale;
    }
  }
}

// Computes t's values on `device` whole into out (unrounded for the
// out-of-order ops; lazy ones come rounded).
static void compute_dense(Reference *r, const Tensor *t, int device, double *out) {
  const Op *op = t->def;
  switch (op ? op->kind : OP_COUNT) {
  case OP_MATMUL: dense_matmul(r, op, device, out); break;
  case OP_SOFTMAX:
  case OP_LAYERNORM: dense_normalise(r, op, device, out); break;
  case OP_REDUCE_SUM:
  case OP_REDUCE_MAX: dense_reduce(r, op, device, out); break;
  case OP_TRANSPOSE: dense_transpose(r, op, device, out); break;
  case OP_SLICE: dense_slice(r, op, device, out); break;
  case OP_CONCAT: dense_concat(r, op, device, out); break;
  case OP_CHOLESKY: dense_cholesky(r, op, device, out); break;
  default: by_chunks(r, t, device, 0, ir_shape_elems(&t->shape), out, lazy_block); return;
  }
  store_all(t->dtype, out, ir_shape_elems(&t->shape));
}

// t's values on `device` as one array, computed on first use: one array for
// all devices when t is the same on every device.
static double **dense_slot(Reference *r, const Tensor *t, int device) {
  int slot = r->varies[t->id] ? device : 0;
  if (!r->arrays[t->id]) r->arrays[t->id] = xcalloc((size_t)r->t->ndevices, sizeof(double *));
  return &r->arrays[t->id][slot];
}

static const double *dense_values(Reference *r, const Tensor *t, int device) {
  r = owner(r, t);
  assert(r->dense[t->id]);
  double **a = dense_slot(r, t, device);
  if (!*a && r->checkpoint[t->id])  // the checkpoints below it first, each recursing only down to the last
    for (int i = 0; i < t->id; i++) {
      const Tensor *c = r->g->tensors.data[i];
      if (r->checkpoint[i] && owner(r, c) == r && !*dense_slot(r, c, device)) dense_values(r, c, device);
    }
  if (!*a) {
    *a = xmalloc((size_t)ir_shape_elems(&t->shape) * sizeof(double) + 1);
    compute_dense(r, t, device, *a);
  }
  return *a;
}

// ---- lazy tensors ---------------------------------------------------------------------

// Position of `device` in the group of x (shard order), -1 if absent.
static int group_position(Reference *r, const Tensor *x, int device) {
  const int *devs;
  int n = ref_group(r, x, &devs);
  for (int i = 0; i < n; i++)
    if (devs[i] == device) return i;
  return -1;
}

// allreduce and reduce_scatter: elements first .. first + n of the
// reduction over x's group, in ascending device order (an x the same on
// every device is computed once).
static void reduce_block(Reference *r, const Op *op, int64_t first, int64_t n, double *out) {
  const Tensor *x = op->args[0];
  const int *devs;
  int g = ref_group(r, x, &devs);
  double *v = xmalloc((size_t)n * sizeof *v + 1);
  const Reference *xr = owner_of(r, x);
  block_of(r, x, devs[0], first, n, out);
  if (!r->varies[x->id]) memcpy(v, out, (size_t)n * sizeof *v);
  for (int i = 1; i < g; i++) {
    if (r->varies[x->id] && op->reduce != REDUCE_MAX && plain_seeded(xr, x, devs[i])) {
      seed_block_add(seed_base(xr, x, devs[i]), first, n, out);  // the same sums, without v
      continue;
    }
    if (r->varies[x->id]) block_of(r, x, devs[i], first, n, v);
    if (op->reduce == REDUCE_MAX)
      for (int64_t k = 0; k < n; k++) out[k] = max_nan(out[k], v[k]);
    else
      for (int64_t k = 0; k < n; k++) out[k] += v[k];
  }
  free(v);
}

// reduce_scatter: device's shard of the reduction; the elements of its pad
// rows (past the operand's end: check.c) are zeros.
static void scatter_block(Reference *r, const Op *op, int device, int64_t first, int64_t n, double *out) {
  const Tensor *x = op->args[0];
  int64_t start = (int64_t)group_position(r, x, device) * ir_shape_elems(&op->result->shape) + first;
  int64_t real = MAX(0, MIN(n, ir_shape_elems(&x->shape) - start));
  if (real) reduce_block(r, op, start, real, out);
  for (int64_t k = real; k < n; k++) out[k] = 0;
}

// all_gather: the block crosses from one device's copy of x to the next.
static void gather_block(Reference *r, const Op *op, int64_t first, int64_t n, double *out) {
  const Tensor *x = op->args[0];
  const int *devs;
  ref_group(r, x, &devs);
  int64_t part = ir_shape_elems(&x->shape);
  for (int64_t k = 0; k < n;) {
    int64_t e = first + k, m = MIN(n - k, part - e % part);
    block_of(r, x, devs[e / part], e % part, m, out + k);
    k += m;
  }
}

// One element-wise function of one operand, in double.  relu keeps NaN
// (as max(x, 0) does under IEEE 754-2019's maximum).
static double unary(OpKind k, double v) {
  switch (k) {
  case OP_RELU: return isnan(v) || v > 0 ? v : 0;
  case OP_GELU: return 0.5 * v * (1 + erf(v / sqrt(2.0)));
  case OP_EXP: return exp(v);
  case OP_RSQRT: return 1 / sqrt(v);
  default: unreachable();
  }
}

// One element-wise function of two operands, in double.
static double binary(OpKind k, double a, double b) {
  switch (k) {
  case OP_ADD: return a + b;
  case OP_SUB: return a - b;
  case OP_MUL: return a * b;
  case OP_DIV: return a / b;
  default: unreachable();
  }
}

// The same on integers, exactly: in int64 (no i32 product overflows it)
// and wrapped by the store; x / 0 is 0 and MIN / -1 wraps (docs/dsl.md).
static double binary_int(OpKind k, double a, double b) {
  int64_t x = (int64_t)a, y = (int64_t)b;
  switch (k) {
  case OP_ADD: return (double)(x + y);
  case OP_SUB: return (double)(x - y);
  case OP_MUL: return (double)(int32_t)(uint32_t)((uint64_t)x * (uint64_t)y);  // exact mod 2^32, then stored
  case OP_DIV: return y == 0 ? 0 : (double)(x / y);
  default: unreachable();
  }
}

// binary or binary_int, by the result's dtype.
static double binary_of(DType dt, OpKind k, double a, double b) {
  return dt == DT_I32 || dt == DT_I8 ? binary_int(k, a, b) : binary(k, a, b);
}

// add, sub, mul, div: a's block with b's (the same elements, or b a
// vector over a's last dimension, read from its dense array).
static void binary_block(Reference *r, const Op *op, int device, int64_t first, int64_t n, double *out) {
  block_of(r, op->args[0], device, first, n, out);
  if (is_broadcast(op)) {
    const double *b = dense_values(r, op->args[1], device);
    int64_t len = op->args[1]->shape.dim[0];
    for (int64_t k = 0; k < n; k++) out[k] = binary_of(op->result->dtype, op->kind, out[k], b[(first + k) % len]);
    return;
  }
  double *b = xmalloc((size_t)n * sizeof *b + 1);
  block_of(r, op->args[1], device, first, n, b);
  for (int64_t k = 0; k < n; k++) out[k] = binary_of(op->result->dtype, op->kind, out[k], b[k]);
  free(b);
}

// reshape: the same row-major elements, and zeros after the operand's
// (Op.pad_elems: a rank-1 reduce_scatter's rows).
static void reshape_block(Reference *r, const Op *op, int device, int64_t first, int64_t n, double *out) {
  int64_t real = MAX(0, MIN(n, ir_shape_elems(&op->args[0]->shape) - first));
  if (real) block_of(r, op->args[0], device, first, real, out);
  for (int64_t k = real; k < n; k++) out[k] = 0;
}

// Elements first .. first + n of t on `device` without its dense array,
// rounded to t's dtype: inputs, collectives and element-wise ops.
static void lazy_block(Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out) {
  const Op *op = t->def;
  if (!op) {
    input_block(r, t, device, first, n, out);
    return;
  }
  const Tensor *x = op->args[0];
  switch (op->kind) {
  case OP_ALLREDUCE: reduce_block(r, op, first, n, out); break;
  case OP_REDUCE_SCATTER: scatter_block(r, op, device, first, n, out); break;
  case OP_ALL_GATHER: gather_block(r, op, first, n, out); break;
  case OP_COPY: block_of(r, x, x->place.kind == PLACE_EACH ? device : 0, first, n, out); break;
  case OP_RESHAPE: reshape_block(r, op, device, first, n, out); break;
  case OP_ADD:
  case OP_SUB:
  case OP_MUL:
  case OP_DIV: binary_block(r, op, device, first, n, out); break;
  case OP_RELU:
  case OP_GELU:
  case OP_EXP:
  case OP_RSQRT:
    block_of(r, x, device, first, n, out);
    for (int64_t k = 0; k < n; k++) out[k] = unary(op->kind, out[k]);
    break;
  default: unreachable();  // the out-of-order ops are always dense
  }
  store_all(t->dtype, out, n);
}

// A shared lazy tensor's block: the kept one when it is the same, else
// computed and kept.
static void memo_block(Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out) {
  BlockMemo *m = &r->memo[t->id];
  if (m->n == n && m->first == first && m->device == device) {
    memcpy(out, m->v, (size_t)n * sizeof *out);
    return;
  }
  lazy_block(r, t, device, first, n, out);
  if (n > m->cap) {
    free(m->v);
    m->v = xmalloc((size_t)n * sizeof *m->v);
    m->cap = n;
  }
  memcpy(m->v, out, (size_t)n * sizeof *out);
  *m = (BlockMemo){.device = device, .first = first, .n = n, .v = m->v, .cap = m->cap};
}

// t's elements first .. first + n, n at most REF_BLOCK_ELEMS: the dense
// array's, the memo's, or computed.
static void block_of(Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out) {
  r = owner(r, t);
  if (r->dense[t->id])
    memcpy(out, dense_values(r, t, device) + first, (size_t)n * sizeof *out);
  else if (r->shared[t->id])
    memo_block(r, t, device, first, n, out);
  else
    lazy_block(r, t, device, first, n, out);
}

// t's elements first .. first + n through `one` (block_of, or lazy_block
// for a dense tensor's own values), REF_BLOCK_ELEMS at a time on
// boundaries at multiples of it: every operand of one chunk is asked for
// the same elements, so a shared tensor's memo serves all its readers.
static void by_chunks(Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out,
                      void (*one)(Reference *, const Tensor *, int, int64_t, int64_t, double *)) {
  for (int64_t k = first, end = first + n; k < end;) {
    int64_t next = MIN(end, (k / REF_BLOCK_ELEMS + 1) * REF_BLOCK_ELEMS);
    one(r, t, device, k, next - k, out + (k - first));
    k = next;
  }
}

void ref_block(Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out) {
  by_chunks(r, t, device, first, n, out, block_of);
}

double ref_value(Reference *r, const Tensor *t, int device, int64_t elem) {
  r = owner(r, t);
  if (r->dense[t->id]) return dense_values(r, t, device)[elem];
  double v;
  lazy_block(r, t, device, elem, 1, &v);
  return v;
}

// ---- the floor of a sum's tolerance --------------------------------------------------
//
// E(t): the rounding error a copy of t carries from the sums it comes
// from, as an absolute figure, a unit of growth (the tolerance multiplies
// it by G(t), which counts the roundings).  A sum of n terms of magnitude
// M errs by sqrt(n) M (what n terms of random signs sum to) times the
// coarsest rounding involved: rtol(acc) of the dtype the device adds in
// (f32 for reduce_sum of any float dtype, the operand's for a collective,
// the coarser of f32 and the result's for matmul: a K-split over devices
// adds its partial products in the result's dtype), or the rounding each
// computed term carries from its own dtype (rtol(x) when G(x) > 0: an
// f16 y summed in f32 carries y's f16 errors).  add and sub combine their operands' E (root sum of squares),
// mul scales each by the other's magnitude, moves keep the largest; other
// ops 0.  A sum that cancels to near 0 still carries its terms' errors.

static double rtol_of(DType dt) {
  static const double rtol[DT_COUNT] = {[DT_F32] = REF_RTOL_F32, [DT_F16] = REF_RTOL_F16, [DT_BF16] = REF_RTOL_BF16};
  return rtol[dt];
}

// The rounding a term x brings into a sum besides the sum's own: its
// dtype's when x was computed (G(x) > 0), none for given values.
static double term_rtol(const Reference *r, const Tensor *x) { return r->growth[x->id] > 0 ? rtol_of(x->dtype) : 0; }

// The slot of (t, device) in a memo by tensor id then device, made on
// first use with every device's -1 (not yet asked).
static double *memo_slot(const Reference *r, double **memo, const Tensor *t, int device) {
  if (!memo[t->id]) {
    memo[t->id] = xmalloc((size_t)r->t->ndevices * sizeof **memo);
    for (int d = 0; d < r->t->ndevices; d++) memo[t->id][d] = -1;
  }
  return &memo[t->id][device];
}

// The root mean square of the finite values of t's copy on device.
static double rms_of_values(Reference *r, const Tensor *t, int device) {
  int64_t total = ir_shape_elems(&t->shape), finite = 0;
  double *v = xmalloc(REF_BLOCK_ELEMS * sizeof *v), sumsq = 0;
  for (int64_t first = 0; first < total; first += REF_BLOCK_ELEMS) {
    int64_t n = MIN(REF_BLOCK_ELEMS, total - first);
    ref_block(r, t, device, first, n, v);
    for (int64_t k = 0; k < n; k++)
      if (isfinite(v[k])) sumsq += v[k] * v[k], finite++;
  }
  free(v);
  return finite ? sqrt(sumsq / (double)finite) : 0;
}

// The same, read once a copy.
static double rms_of(Reference *r, const Tensor *t, int device) {
  double *slot = memo_slot(r, r->rms, t, device);
  if (*slot < 0) *slot = rms_of_values(r, t, device);
  return *slot;
}

static double error_scale(Reference *r, const Tensor *t, int device);

// The magnitude of t's values as a sum's term: the larger of their rms
// and of the sums' errors they carry, as a magnitude of their dtype.
static double magnitude(Reference *r, const Tensor *t, int device) {
  double rtol = rtol_of(t->dtype);
  return fmax(rms_of(r, t, device), rtol ? error_scale(r, t, device) / rtol : 0);
}

// A collective's sum: its terms are x's copies over the group, so their
// magnitudes squared are summed and rooted (an x the same everywhere:
// sqrt(g) x one).
static double group_scale(Reference *r, const Tensor *x, int device) {
  const int *devs;
  int g = ref_group(r, x, &devs);
  if (g == 0 || !r->varies[x->id]) return sqrt((double)MAX(g, 1)) * magnitude(r, x, g ? devs[0] : device);
  double sum = 0;
  for (int i = 0; i < g; i++) sum += pow(magnitude(r, x, devs[i]), 2);
  return sqrt(sum);
}

// add, sub: the operands' errors add, as random ones do.
static double added_scale(Reference *r, const Op *op, int device) {
  return hypot(error_scale(r, op->args[0], device), error_scale(r, op->args[1], device));
}

// mul: each operand's error scaled by the other's magnitude.
static double product_scale(Reference *r, const Op *op, int device) {
  const Tensor *a = op->args[0], *b = op->args[1];
  return error_scale(r, a, device) * magnitude(r, b, device) + error_scale(r, b, device) * magnitude(r, a, device);
}

// The largest E of the operands (all_gather: of x's copies over its group).
static double carried_scale(Reference *r, const Op *op, int device) {
  double e = 0;
  if (op->kind == OP_ALL_GATHER) {
    const int *devs;
    int g = ref_group(r, op->args[0], &devs);
    for (int i = 0; i < g; i++) e = fmax(e, error_scale(r, op->args[0], devs[i]));
    return e;
  }
  for (int k = 0; k < op->nargs; k++) e = fmax(e, error_scale(r, op->args[k], device));
  return e;
}

static double scale_of(Reference *r, const Tensor *t, int device) {
  const Op *op = t->def;
  if (!op) return 0;
  const Tensor *x = op->nargs ? op->args[0] : NULL;
  switch (op->kind) {
  case OP_REDUCE_SUM:
    return fmax(rtol_of(DT_F32), term_rtol(r, x)) * sqrt((double)axis_length(op)) * magnitude(r, x, device);
  case OP_MATMUL: {  // partial sums may be rounded to t's dtype: a K-split over devices adds them so
    const Tensor *w = op->args[1];
    double k = (double)x->shape.dim[x->shape.rank - 1];
    double rtol = fmax(fmax(rtol_of(DT_F32), rtol_of(t->dtype)), fmax(term_rtol(r, x), term_rtol(r, w)));
    return rtol * sqrt(k) * magnitude(r, x, device) * magnitude(r, w, device);
  }
  case OP_ALLREDUCE:
  case OP_REDUCE_SCATTER:
    if (op->reduce == REDUCE_MAX) return carried_scale(r, op, device);
    return fmax(rtol_of(x->dtype), term_rtol(r, x)) * group_scale(r, x, device);
  case OP_ADD:
  case OP_SUB: return added_scale(r, op, device);
  case OP_MUL: return product_scale(r, op, device);
  case OP_COPY:
  case OP_RESHAPE:
  case OP_TRANSPOSE:
  case OP_SLICE:
  case OP_CONCAT:
  case OP_RELU:
  case OP_REDUCE_MAX:
  case OP_ALL_GATHER: return carried_scale(r, op, device);
  default: return 0;  // div, the transcendentals, softmax, layernorm, cholesky: errors relative to the result
  }
}

// E(t), computed once a copy; a NaN (inf x 0 of an overflowed operand)
// is no floor.
static double error_scale(Reference *r, const Tensor *t, int device) {
  double *slot = memo_slot(r, r->scales, t, device);
  if (*slot < 0) {
    double e = scale_of(r, t, device);
    *slot = isnan(e) ? 0 : e;
  }
  return *slot;
}

double ref_sum_floor(Reference *r, const Tensor *t, int device) {
  double rtol = rtol_of(t->dtype);
  return rtol ? error_scale(r, t, device) / rtol : 0;
}
