// reference.c: the reference evaluation of a .tg graph.  Part of runtime/:
// tsp-emu compares a compiled program's outputs against it, so it is
// computed from the graph (frontend -> Graph IR) and nothing the compiler
// decided.  See emu.h for the rules (seeded or given inputs, rounding,
// laziness, which tensors are the same on every device).
#include "emu.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct Reference {
  const Graph *g;
  const Topology *t;
  uint64_t seed;
  int **groups;   // by tensor id: the devices of an @ each tensor (NULL otherwise)
  int *ngroup;
  uint64_t *name_hash;  // by tensor id: FNV-1a of its name, the seed's share of it
  uint8_t **given;      // by tensor id: values set by ref_set_input (NULL: seeded)
  bool *varies;         // by tensor id: its value may depend on the device
};

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

// Whether t's value may differ between devices, by what compute() does
// with the device: ref_input uses it only for @ each tensors not given;
// reduce_scatter picks the device's shard; allreduce and all_gather read
// every copy of their operand, on fixed devices; copy reads a tensor not @
// each on device 0; every other op passes the device on to its operands.
// Tensors come in a topological order: the operands' answers are known.
static bool varies(const Reference *r, const Tensor *t) {
  const Op *op = t->def;
  if (!op) return t->place.kind == PLACE_EACH && !r->given[t->id];
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

static void find_varying(Reference *r) {
  for (int i = 0; i < r->g->tensors.len; i++) r->varies[i] = varies(r, r->g->tensors.data[i]);
}

Reference *ref_new(const Graph *g, const Topology *t, uint64_t seed) {
  Reference *r = xcalloc(1, sizeof *r);
  *r = (Reference){.g = g, .t = t, .seed = seed};
  size_t count = (size_t)g->tensors.len + 1;
  r->groups = xcalloc(count, sizeof *r->groups);
  r->ngroup = xcalloc(count, sizeof *r->ngroup);
  r->name_hash = xcalloc(count, sizeof *r->name_hash);
  r->given = xcalloc(count, sizeof *r->given);
  r->varies = xcalloc(count, sizeof *r->varies);
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *x = g->tensors.data[i];
    const Placement *p = &x->place;
    r->name_hash[i] = digest_fnv1a64(x->name, strlen(x->name));
    if (p->kind != PLACE_EACH) continue;
    int *devs = xmalloc(sizeof(int) * (size_t)t->ndevices), n = 0;
    for (int d = 0; d < t->ndevices; d++)
      if (!bsearch(&d, p->except, (size_t)p->nexcept, sizeof(int), cmp_int)) devs[n++] = d;
    r->groups[i] = devs;
    r->ngroup[i] = n;
  }
  find_varying(r);
  return r;
}

void ref_free(Reference *r) {
  if (!r) return;
  for (int i = 0; i < r->g->tensors.len; i++) free(r->groups[i]), free(r->given[i]);
  free(r->groups);
  free(r->ngroup);
  free(r->name_hash);
  free(r->given);
  free(r->varies);
  free(r);
}

void ref_set_input(Reference *r, const Tensor *t, const void *data) {
  assert(!t->def);
  size_t bytes = (size_t)ir_tensor_bytes(t);
  free(r->given[t->id]);
  r->given[t->id] = memcpy(xmalloc(bytes), data, bytes);
  find_varying(r);  // given values are the same on every device
}

bool ref_same_on_every_device(const Reference *r, const Tensor *t) { return !r->varies[t->id]; }

int ref_group(const Reference *r, const Tensor *t, const int **devices) {
  *devices = r->groups[t->id];
  return r->ngroup[t->id];
}

// Rounds v as the tensor's dtype stores it.
static double stored(DType dt, double v) {
  uint8_t buf[8];
  num_set(dt, buf, 0, v);
  return num_get(dt, buf, 0);
}

// A seeded element is -1, 0 or 1 from (seed, tensor name, device, element):
// splitmix64's finaliser over seed_base() + elem * a constant, so the same
// graph gives the same inputs on any machine.
static uint64_t seed_base(const Reference *r, const Tensor *t, int device) {
  uint64_t h = r->name_hash[t->id] ^ r->seed;
  return h ^ (uint64_t)(t->place.kind == PLACE_EACH ? device : 0) * 0x9e3779b97f4a7c15ull;
}

// The value comes from a table: an int-to-double conversion would chain
// every iteration of input_block's loop to the one before (cvtsi2sd writes
// half a register), about 9 cycles an element instead of 6.
static double seeded(uint64_t base, int64_t elem) {
  static const double value[3] = {-1, 0, 1};
  uint64_t h = base + (uint64_t)elem * 0xd1b54a32d192ed03ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  return value[h % 3];
}

// The given value, or the seeded one: either is exact in the tensor's dtype.
double ref_input(const Reference *r, const Tensor *t, int device, int64_t elem) {
  if (r->given[t->id]) return num_get(t->dtype, r->given[t->id] + elem * ir_dtype_bytes[t->dtype], 0);
  return seeded(seed_base(r, t, device), elem);
}

// ---- ops --------------------------------------------------------------------------

// Row-major index helpers: the last dimension's length and the row of elem.
static int64_t last_dim(const Tensor *t) { return t->shape.dim[t->shape.rank - 1]; }

static double reduce_group(Reference *r, const Op *op, const Tensor *x, int64_t elem) {
  const int *devs;
  int n = ref_group(r, x, &devs);
  double acc = ref_value(r, x, devs[0], elem);
  for (int i = 1; i < n; i++) {
    double v = ref_value(r, x, devs[i], elem);
    acc = op->reduce == REDUCE_MAX ? (v > acc ? v : acc) : acc + v;
  }
  return acc;
}

// Position of `device` in the group of x (shard order), -1 if absent.
static int group_position(Reference *r, const Tensor *x, int device) {
  const int *devs;
  int n = ref_group(r, x, &devs);
  for (int i = 0; i < n; i++)
    if (devs[i] == device) return i;
  return -1;
}

static double collective(Reference *r, const Op *op, int device, int64_t elem) {
  const Tensor *x = op->args[0];
  int64_t shard = ir_shape_elems(&op->result->shape);  // reduce_scatter: the result is one shard
  switch (op->kind) {
  case OP_ALLREDUCE: return reduce_group(r, op, x, elem);
  case OP_REDUCE_SCATTER: return reduce_group(r, op, x, (int64_t)group_position(r, x, device) * shard + elem);
  case OP_ALL_GATHER: {
    const int *devs;
    ref_group(r, x, &devs);
    int64_t part = ir_shape_elems(&x->shape);
    return ref_value(r, x, devs[elem / part], elem % part);
  }
  default: unreachable();
  }
}

static double matmul(Reference *r, const Op *op, int device, int64_t elem) {
  const Tensor *a = op->args[0], *b = op->args[1];
  int64_t n = last_dim(op->result), k = last_dim(a);
  int64_t row = elem / n, col = elem % n;
  double acc = 0;
  for (int64_t i = 0; i < k; i++) acc += ref_value(r, a, device, row * k + i) * ref_value(r, b, device, i * n + col);
  return acc;
}

// The axis-th coordinate's stride and extent, for softmax and layernorm.
static void axis_span(const Tensor *t, int axis, int64_t *stride, int64_t *extent) {
  *stride = 1;
  for (int d = t->shape.rank - 1; d > axis; d--) *stride *= t->shape.dim[d];
  *extent = t->shape.dim[axis];
}

static double normalised(Reference *r, const Op *op, int device, int64_t elem) {
  const Tensor *x = op->args[0];
  int64_t stride, extent;
  axis_span(x, op->axis, &stride, &extent);
  int64_t pos = (elem / stride) % extent, base = elem - pos * stride;
  double sum = 0, sq = 0, mx = -INFINITY;
  for (int64_t i = 0; i < extent; i++) {
    double v = ref_value(r, x, device, base + i * stride);
    sum += v, sq += v * v, mx = v > mx ? v : mx;
  }
  double v = ref_value(r, x, device, elem);
  if (op->kind == OP_SOFTMAX) {
    double z = 0;
    for (int64_t i = 0; i < extent; i++) z += exp(ref_value(r, x, device, base + i * stride) - mx);
    return exp(v - mx) / z;
  }
  double mean = sum / (double)extent, var = sq / (double)extent - mean * mean;
  double y = (v - mean) / sqrt(var + 1e-5);  // layernorm's epsilon, as in docs/dsl.md
  if (op->nargs == 3) y = y * ref_value(r, op->args[1], device, pos) + ref_value(r, op->args[2], device, pos);
  return y;
}

static double transpose(Reference *r, const Op *op, int device, int64_t elem) {
  const Tensor *x = op->args[0];
  int64_t rows = x->shape.dim[x->shape.rank - 2], cols = last_dim(x);  // x is [.., rows, cols]
  int64_t plane = rows * cols, in_plane = elem % plane;
  int64_t i = in_plane / rows, j = in_plane % rows;  // the result is [.., cols, rows]
  return ref_value(r, x, device, elem - in_plane + j * cols + i);
}

static double compute(Reference *r, const Op *op, int device, int64_t elem) {
  const Tensor *x = op->args[0];
  switch (op->kind) {
  case OP_ALLREDUCE:
  case OP_REDUCE_SCATTER:
  case OP_ALL_GATHER: return collective(r, op, device, elem);
  case OP_COPY: return ref_value(r, x, x->place.kind == PLACE_EACH ? device : 0, elem);
  case OP_MATMUL: return matmul(r, op, device, elem);
  case OP_ADD: {
    const Tensor *b = op->args[1];
    int64_t be = b->shape.rank == 1 && op->result->shape.rank != 1 ? elem % last_dim(op->result) : elem;
    return ref_value(r, x, device, elem) + ref_value(r, b, device, be);
  }
  case OP_RELU: {
    double v = ref_value(r, x, device, elem);
    return v > 0 ? v : 0;
  }
  case OP_GELU: {
    double v = ref_value(r, x, device, elem);
    return 0.5 * v * (1 + erf(v / sqrt(2.0)));
  }
  case OP_SOFTMAX:
  case OP_LAYERNORM: return normalised(r, op, device, elem);
  case OP_TRANSPOSE: return transpose(r, op, device, elem);
  default: break;  // the new ops: not evaluated yet
  }
  unreachable();
}

double ref_value(Reference *r, const Tensor *t, int device, int64_t elem) {
  if (!t->def) return ref_input(r, t, device, elem);  // already exact in its dtype
  return stored(t->dtype, compute(r, t->def, device, elem));
}

// ---- blocks -------------------------------------------------------------------------
//
// ref_block gives what ref_value gives, bit for bit, a block at a time:
// inputs and collectives (their operand read a block per device, reduced in
// the same order) in tight loops, every other op element by element.

static void input_block(const Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out) {
  const uint8_t *given = r->given[t->id];
  int size = ir_dtype_bytes[t->dtype];
  if (!given) {
    uint64_t base = seed_base(r, t, device);
    for (int64_t k = 0; k < n; k++) out[k] = seeded(base, first + k);
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

// allreduce and reduce_scatter: elements first .. first + n of the
// reduction over x's group, as reduce_group adds them (an x the same on
// every device is computed once).
static void reduce_block(Reference *r, const Op *op, int64_t first, int64_t n, double *out) {
  const Tensor *x = op->args[0];
  const int *devs;
  int g = ref_group(r, x, &devs);
  double *v = xmalloc((size_t)n * sizeof *v);
  ref_block(r, x, devs[0], first, n, out);
  if (!r->varies[x->id]) memcpy(v, out, (size_t)n * sizeof *v);
  for (int i = 1; i < g; i++) {
    if (r->varies[x->id]) ref_block(r, x, devs[i], first, n, v);
    if (op->reduce == REDUCE_MAX)
      for (int64_t k = 0; k < n; k++) out[k] = v[k] > out[k] ? v[k] : out[k];
    else
      for (int64_t k = 0; k < n; k++) out[k] += v[k];
  }
  free(v);
}

// all_gather: the block crosses from one device's copy of x to the next.
static void gather_block(Reference *r, const Op *op, int64_t first, int64_t n, double *out) {
  const Tensor *x = op->args[0];
  const int *devs;
  ref_group(r, x, &devs);
  int64_t part = ir_shape_elems(&x->shape);
  for (int64_t k = 0; k < n;) {
    int64_t e = first + k, m = MIN(n - k, part - e % part);
    ref_block(r, x, devs[e / part], e % part, m, out + k);
    k += m;
  }
}

void ref_block(Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out) {
  const Op *op = t->def;
  if (!op) {
    input_block(r, t, device, first, n, out);
    return;
  }
  switch (op->kind) {
  case OP_ALLREDUCE: reduce_block(r, op, first, n, out); break;
  case OP_REDUCE_SCATTER: {
    int64_t shard = ir_shape_elems(&t->shape);
    reduce_block(r, op, (int64_t)group_position(r, op->args[0], device) * shard + first, n, out);
    break;
  }
  case OP_ALL_GATHER: gather_block(r, op, first, n, out); break;
  default:
    for (int64_t k = 0; k < n; k++) out[k] = compute(r, op, device, first + k);
  }
  for (int64_t k = 0; k < n; k++) out[k] = stored(t->dtype, out[k]);
}
