// reference.c: the reference evaluation of a .tg graph.  Part of runtime/:
// tsp-emu compares a compiled program's outputs against it, so it is
// computed from the graph (frontend -> Graph IR) and nothing the compiler
// decided.  See emu.h for the rules (seeded inputs, rounding, laziness).
#include "emu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct Reference {
  const Graph *g;
  const Topology *t;
  uint64_t seed;
  int **groups;   // by tensor id: the devices of an @ each tensor (NULL otherwise)
  int *ngroup;
};

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

Reference *ref_new(const Graph *g, const Topology *t, uint64_t seed) {
  Reference *r = xcalloc(1, sizeof *r);
  *r = (Reference){.g = g, .t = t, .seed = seed};
  r->groups = xcalloc((size_t)g->tensors.len + 1, sizeof *r->groups);
  r->ngroup = xcalloc((size_t)g->tensors.len + 1, sizeof *r->ngroup);
  for (int i = 0; i < g->tensors.len; i++) {
    const Placement *p = &g->tensors.data[i]->place;
    if (p->kind != PLACE_EACH) continue;
    int *devs = xmalloc(sizeof(int) * (size_t)t->ndevices), n = 0;
    for (int d = 0; d < t->ndevices; d++)
      if (!bsearch(&d, p->except, (size_t)p->nexcept, sizeof(int), cmp_int)) devs[n++] = d;
    r->groups[i] = devs;
    r->ngroup[i] = n;
  }
  return r;
}

void ref_free(Reference *r) {
  if (!r) return;
  for (int i = 0; i < r->g->tensors.len; i++) free(r->groups[i]);
  free(r->groups);
  free(r->ngroup);
  free(r);
}

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

// -1, 0 or 1 from (seed, tensor name, device, element): splitmix64 over a
// hash of the name, so the same graph gives the same inputs on any machine.
double ref_input(const Reference *r, const Tensor *t, int device, int64_t elem) {
  uint64_t h = digest_fnv1a64(t->name, strlen(t->name)) ^ r->seed;
  h ^= (uint64_t)(t->place.kind == PLACE_EACH ? device : 0) * 0x9e3779b97f4a7c15ull;
  h += (uint64_t)elem * 0xd1b54a32d192ed03ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  return (double)(int)(h % 3) - 1;
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
  case OP_COUNT: break;
  }
  unreachable();
}

double ref_value(Reference *r, const Tensor *t, int device, int64_t elem) {
  if (!t->def) return stored(t->dtype, ref_input(r, t, device, elem));
  return stored(t->dtype, compute(r, t->def, device, elem));
}
