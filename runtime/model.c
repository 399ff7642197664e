// model.c: the model's data in the emulator.  Part of runtime/, between the
// loader (the graph, and where the manifest says its tensors live) and the
// reference evaluation (reference.c).  Before the run every home of an
// input or param gets its values, seeded or given by --input; after it
// every home of an output is compared, element by element, with what the
// graph computes.  Outputs reach 64 MiB on each of 72 devices, so the
// reference is computed a block at a time: once for all homes of a tensor
// that is the same on every device (an allreduce result), once per home
// otherwise, and a home stops being compared at its first difference.
#include "emu_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// Vectors of reference computed at a time (a few hundred KiB of doubles).
#define MODEL_BLOCK_VECTORS 1024

// ---- blocks and homes -----------------------------------------------------------------

// Elements first .. first + count of a tensor on one device (count <=
// block), as doubles and as the bytes its dtype stores.
typedef struct Block {
  int64_t first, count, block;
  double *want;
  uint8_t *bytes;
} Block;

static Block block_new(const Emu *e, DType dt) {
  int64_t block = (int64_t)isa_elems_per_vector(dt, e->vector_bytes) * MODEL_BLOCK_VECTORS;
  return (Block){.block = block, .want = xmalloc((size_t)block * sizeof(double)),
                 .bytes = xmalloc((size_t)block * (size_t)ir_dtype_bytes[dt])};
}

static void block_free(Block *b) {
  free(b->want);
  free(b->bytes);
}

// The block's reference values of t on `device`, and their bytes (f32, the
// common case, without num_set's dispatch on every element).
static void compute_block(Emu *e, const Tensor *t, int device, Block *b) {
  ref_block(e->opt.ref, t, device, b->first, b->count, b->want);
  if (t->dtype != DT_F32) {
    for (int64_t k = 0; k < b->count; k++) num_set(t->dtype, b->bytes, (int)k, b->want[k]);
    return;
  }
  for (int64_t k = 0; k < b->count; k++) {
    float f = (float)b->want[k];
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint8_t *p = b->bytes + 4 * k;
    p[0] = (uint8_t)u, p[1] = (uint8_t)(u >> 8), p[2] = (uint8_t)(u >> 16), p[3] = (uint8_t)(u >> 24);
  }
}

// The homes of every tensor, by a counting sort on tensor id:
// homes[first[id] .. first[id + 1]) hold the graph's tensor id, in manifest
// order.
typedef struct HomeIndex {
  int *first;
  const TensorHome **homes;
} HomeIndex;

static HomeIndex index_homes(const Emu *e) {
  const Program *p = e->in->prog;
  int nt = e->in->graph->tensors.len;
  HomeIndex x = {.first = xcalloc((size_t)nt + 2, sizeof(int)),
                 .homes = xcalloc((size_t)p->tensors.len + 1, sizeof(TensorHome *))};
  for (int h = 0; h < p->tensors.len; h++) x.first[e->in->home_tensor[h]->id + 2]++;
  for (int i = 2; i <= nt + 1; i++) x.first[i] += x.first[i - 1];  // first[id + 1]: where id starts
  for (int h = 0; h < p->tensors.len; h++)  // ... and counts on to where id + 1 starts
    x.homes[x.first[e->in->home_tensor[h]->id + 1]++] = &p->tensors.data[h];
  return x;
}

static void index_free(HomeIndex *x) {
  free(x->first);
  free(x->homes);
}

// ---- before the run -----------------------------------------------------------------

// The block into home th: the vectors written and landed at global time 0,
// the last vector's tail zero.
static void write_block(Emu *e, const TensorHome *th, DType dt, const Block *b) {
  Sram *s = &e->devs[th->device].sram;
  int per = isa_elems_per_vector(dt, e->vector_bytes), size = ir_dtype_bytes[dt];
  for (int64_t k = 0; k < b->count; k += per) {
    int64_t *lands;
    bool *written;
    uint8_t *vec = sram_vector(s, th->addr + (uint32_t)((b->first + k) / per), &lands, &written);
    size_t m = (size_t)MIN(per, b->count - k) * (size_t)size;
    memcpy(vec, b->bytes + k * size, m);
    memset(vec + m, 0, (size_t)e->vector_bytes - m);
    *lands = 0;
    *written = true;
  }
}

// Homes hs[0 .. n) of input or param t: one reference for all of them when
// t is the same on every device (given by --input, or not @ each).
static void seed_tensor(Emu *e, const Tensor *t, const TensorHome *const *hs, int n) {
  int group = ref_same_on_every_device(e->opt.ref, t) ? n : 1;
  int64_t elems = ir_shape_elems(&t->shape);
  Block b = block_new(e, t->dtype);
  for (int g = 0; g < n; g += group)
    for (b.first = 0; b.first < elems; b.first += b.block) {
      b.count = MIN(b.block, elems - b.first);
      compute_block(e, t, hs[g]->device, &b);
      for (int h = g; h < g + group; h++) write_block(e, hs[h], t->dtype, &b);
    }
  block_free(&b);
}

void emu_seed_model(Emu *e) {
  if (!e->opt.ref) return;
  const Graph *g = e->in->graph;
  HomeIndex x = index_homes(e);
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *t = g->tensors.data[i];
    if (t->kind == TENSOR_INPUT || t->kind == TENSOR_PARAM)
      seed_tensor(e, t, x.homes + x.first[i], x.first[i + 1] - x.first[i]);
  }
  index_free(&x);
}

// ---- after the run ---------------------------------------------------------------------

// One home of an output and the first difference found in it.
typedef struct HomeCheck {
  const TensorHome *th;
  bool bad;
  int64_t elem;     // the first element that differs, or the first of the vector never written
  uint32_t vector;  // that vector's SRAM address
  bool unwritten;
  double got, want;
} HomeCheck;

// Compares one home with a block: equal bytes match; otherwise values of
// the dtype must be equal, NaN matching NaN (so +0 matches -0).
static void compare_block(Emu *e, HomeCheck *hc, DType dt, const Block *b) {
  Sram *s = &e->devs[hc->th->device].sram;
  int per = isa_elems_per_vector(dt, e->vector_bytes), size = ir_dtype_bytes[dt];
  for (int64_t k = 0; k < b->count; k += per) {
    int64_t elem = b->first + k;
    uint32_t addr = hc->th->addr + (uint32_t)(elem / per);
    bool *written;
    const uint8_t *got = sram_peek(s, addr, NULL, &written);
    int m = (int)MIN(per, b->count - k);
    if (!got || !*written) {
      *hc = (HomeCheck){.th = hc->th, .bad = true, .elem = elem, .vector = addr, .unwritten = true};
      return;
    }
    if (!memcmp(got, b->bytes + k * size, (size_t)m * (size_t)size)) continue;
    for (int j = 0; j < m; j++) {
      double g = num_get(dt, got, j), w = b->want[k + j];
      if (g == w || (isnan(g) && isnan(w))) continue;
      *hc = (HomeCheck){.th = hc->th, .bad = true, .elem = elem + j, .vector = addr, .got = g, .want = w};
      return;
    }
  }
}

static bool all_bad(const HomeCheck *hc, int n) {
  for (int i = 0; i < n; i++)
    if (!hc[i].bad) return false;
  return true;
}

// Checks homes hc[0 .. n) of output t block by block.  same: t is the same
// on every device, so one reference serves them all; otherwise each home
// gets its own.
static void check_homes(Emu *e, const Tensor *t, HomeCheck *hc, int n, bool same) {
  int64_t elems = ir_shape_elems(&t->shape);
  int group = same ? n : 1;
  Block b = block_new(e, t->dtype);
  for (int g = 0; g < n; g += group)
    for (b.first = 0; b.first < elems && !all_bad(hc + g, group); b.first += b.block) {
      b.count = MIN(b.block, elems - b.first);
      compute_block(e, t, hc[g].th->device, &b);
      for (int h = g; h < g + group; h++)
        if (!hc[h].bad) compare_block(e, &hc[h], t->dtype, &b);
    }
  block_free(&b);
}

static bool has_home(const HomeCheck *hc, int n, int device) {
  for (int i = 0; i < n; i++)
    if (hc[i].th->device == device) return true;
  return false;
}

// An output needs a home on every device the graph places a copy on (on
// some device when the partitioner places it).  False if one is missing.
static bool check_placed(Emu *e, const Tensor *t, const HomeCheck *hc, int n) {
  const Placement *p = &t->place;
  if (p->kind != PLACE_EACH && p->kind != PLACE_DEVICE) {  // the partitioner's choice: anywhere
    if (n == 0) emu_violate(e, VIOL_DATA, -1, NULL, -1, -1, "output '%s' has no home in the manifest", t->name);
    return n > 0;
  }
  const int *devs = &p->index;
  int ndevs = p->kind == PLACE_EACH ? ref_group(e->opt.ref, t, &devs) : 1;
  bool ok = true;
  for (int i = 0; i < ndevs; i++)
    if (!has_home(hc, n, devs[i])) {
      emu_violate(e, VIOL_DATA, devs[i], NULL, -1, -1, "output '%s' has no home in the manifest", t->name);
      ok = false;
    }
  return ok;
}

static void report_home(Emu *e, const Tensor *t, const HomeCheck *hc) {
  if (hc->unwritten)
    emu_violate(e, VIOL_DATA, hc->th->device, NULL, -1, -1, "tensor '%s' element %lld: vector %u was never written",
                t->name, (long long)hc->elem, hc->vector);
  else
    emu_violate(e, VIOL_DATA, hc->th->device, NULL, -1, -1, "tensor '%s' element %lld: expected %.9g, got %.9g",
                t->name, (long long)hc->elem, hc->want, hc->got);
}

// Checks homes hs[0 .. n) of output t; false on any difference or missing home.
static bool check_output(Emu *e, const Tensor *t, const TensorHome *const *hs, int n) {
  HomeCheck *hc = xcalloc((size_t)n + 1, sizeof *hc);
  for (int i = 0; i < n; i++) hc[i].th = hs[i];
  bool ok = check_placed(e, t, hc, n);
  check_homes(e, t, hc, n, ref_same_on_every_device(e->opt.ref, t));
  for (int i = 0; i < n; i++) {
    if (hc[i].bad) report_home(e, t, &hc[i]);
    ok &= !hc[i].bad;
  }
  free(hc);
  return ok;
}

void model_check_outputs(Emu *e, bool *any, bool *all) {
  if (!e->opt.ref) return;
  const Graph *g = e->in->graph;
  HomeIndex x = index_homes(e);
  for (int i = 0; i < g->outputs.len; i++) {
    int id = g->outputs.data[i]->id;
    *any = true;
    *all &= check_output(e, g->outputs.data[i], x.homes + x.first[id], x.first[id + 1] - x.first[id]);
  }
  index_free(&x);
}
