// model.c: the model's data in the emulator.  Part of runtime/, between the
// loader (the graph, and where the manifest says its tensors live) and the
// reference evaluation (reference.c).  Before the run every home of an
// input or param gets its values, seeded or given by --input; after it
// every home of an output is compared, element by element, with what the
// graph computes, within the reference's tolerance (docs/isa.md section 5).
//
// Every access to a home goes through its layout (TensorHome.pitch):
// packed, or each row of the last dimension starting on a vector, `pitch`
// vectors apart.  A home holds the whole tensor, or a shard: the box
// [start, start + shape) of it, walked as runs contiguous in the tensor.
// Outputs reach 64 MiB on each of 72 devices, so the reference is computed
// a block at a time: once for all homes holding the same box of a tensor
// that is the same on every device (an allreduce result), once per home
// otherwise.  Equal bytes pass at once; the home's root mean square, which
// the tolerance may need, costs a second pass only when an element fails
// the tolerance without it.  Every element of an output must be in some
// home: the shards of one no whole home holds must cover it.
//
// With several inferences in flight (Program.batches) every home belongs
// to one batch (TensorHome.batch): it is seeded and checked with that
// batch's reference (EmuOptions.batch_ref), and the coverage of an output
// is a question per batch.  Batches go one after another; batch b's
// reference forgets what it materialised for its inference once b is
// seeded, and again once it is checked, so the memory is what every batch
// shares (batch 0's reference keeps it) and one inference's.
#include "emu_internal.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// Vectors of reference computed at a time (a few hundred KiB of doubles).
#define MODEL_BLOCK_VECTORS 1024

// ---- layouts ------------------------------------------------------------------------------

// A run of a home's elements sharing one vector: its address, the lane of
// the first, how many.
typedef struct Span {
  uint32_t vector;
  int lane;
  int64_t count;
} Span;

// Where element `elem` of home th lives (per elements a vector), and how
// many of the next `limit` elements share its vector: packed, element e is
// lane e % per of vector e / per; with a pitch P, row r = e / C (C the last
// dimension) starts at vector r P and column c is lane c % per of vector
// r P + c / per, and a run never crosses a row.
static Span home_span(const TensorHome *th, int per, int64_t elem, int64_t limit) {
  if (!th->pitch) {
    int lane = (int)(elem % per);
    return (Span){th->addr + (uint32_t)(elem / per), lane, MIN(limit, per - lane)};
  }
  int64_t cols = th->shape.dim[th->shape.rank - 1], row = elem / cols, col = elem % cols;
  int lane = (int)(col % per);
  return (Span){th->addr + (uint32_t)(row * th->pitch + col / per), lane, MIN(limit, MIN(per - lane, cols - col))};
}

// The vectors a packed run of `count` elements from lane `lane` on spans.
static uint32_t vectors_spanned(int lane, int64_t count, int per) {
  return (uint32_t)MIN((lane + count + per - 1) / per, (int64_t)EMU_SRAM_PAGE_VECTORS);
}

// Where written elements come from: `bytes` (th's dtype, packed), or with
// bytes NULL the seed of tensor t on `device` from its element `first` on
// (ref_seeded_bytes, straight into the SRAM).
typedef struct Source {
  const uint8_t *bytes;
  Reference *ref;
  const Tensor *t;
  int device;
  int64_t first;
} Source;

// Writes elements first .. first + count of home th, taken from src (whose
// element 0 is the home's element `first`), the vectors written and landed
// at global time 0.  A vector is
// zeroed when its lane 0 is written, so lanes past the data stay zero.  A
// packed home's elements are one run of bytes through the vectors of a
// page, written a page at a time; a pitched home's, a vector at a time.
static void write_from(Emu *e, const TensorHome *th, int64_t first, int64_t count, const Source *src) {
  Sram *s = &e->devs[th->device].sram;
  int per = isa_elems_per_vector(th->dtype, e->vector_bytes), size = ir_dtype_bytes[th->dtype];
  for (int64_t k = 0; k < count;) {
    Span sp = home_span(th, per, first + k, count - k);
    uint32_t n = th->pitch ? 1 : vectors_spanned(sp.lane, count - k, per);
    uint8_t *run = sram_write_run(s, sp.vector, &n, 0);
    int64_t m = th->pitch ? sp.count : MIN(count - k, (int64_t)n * per - sp.lane), end = sp.lane + m;
    if (src->bytes)
      memcpy(run + sp.lane * size, src->bytes + k * size, (size_t)(m * size));
    else
      ref_seeded_bytes(src->ref, src->t, src->device, src->first + k, m, run + sp.lane * size);
    int last = (int)(end - (int64_t)(n - 1) * per);  // lanes written in the last vector
    if ((n > 1 || sp.lane == 0) && last < per)       // its lane 0 was written: the rest is zero
      memset(run + ((size_t)(n - 1) * (size_t)per + (size_t)last) * (size_t)size, 0, (size_t)(per - last) * (size_t)size);
    k += m;
  }
}

// Writes elements first .. first + count (bytes of th's dtype, packed) into home th.
static void write_elems(Emu *e, const TensorHome *th, int64_t first, int64_t count, const uint8_t *bytes) {
  write_from(e, th, first, count, &(Source){.bytes = bytes});
}

// The home's device exists and its vectors lie inside that device's SRAM.
static bool home_fits(const Emu *e, const TensorHome *th, char *err, size_t errlen) {
  if (th->device < 0 || th->device >= e->ndevs) return snprintf(err, errlen, "tensor '%s' is on no device", th->name), false;
  uint64_t vectors = emu_home_vectors(th, e->vector_bytes);
  if (vectors > (uint64_t)e->topo->sram_vectors || th->addr > (uint64_t)e->topo->sram_vectors - vectors)
    return snprintf(err, errlen, "tensor '%s' runs past the SRAM", th->name), false;
  return true;
}

bool emu_write_home(Emu *e, const TensorHome *th, const void *data, char *err, size_t errlen) {
  if (!home_fits(e, th, err, errlen)) return false;
  write_elems(e, th, 0, ir_shape_elems(&th->shape), data);
  return true;
}

bool emu_read_home(Emu *e, const TensorHome *th, void *data, char *err, size_t errlen) {
  if (!home_fits(e, th, err, errlen)) return false;
  Sram *s = &e->devs[th->device].sram;
  int per = isa_elems_per_vector(th->dtype, e->vector_bytes), size = ir_dtype_bytes[th->dtype];
  int64_t elems = ir_shape_elems(&th->shape);
  for (int64_t k = 0; k < elems;) {
    Span sp = home_span(th, per, k, elems - k);
    bool *written;
    const uint8_t *vec = sram_peek(s, sp.vector, NULL, &written);
    uint8_t *dst = (uint8_t *)data + k * size;
    if (vec)
      memcpy(dst, vec + sp.lane * size, (size_t)(sp.count * size));
    else
      memset(dst, 0, (size_t)(sp.count * size));
    k += sp.count;
  }
  return true;
}

// ---- boxes: where a home's elements are in its tensor ----------------------------------

// A home's elements as runs contiguous in its tensor (row-major in shape
// `whole`): run k is the home's elements [k len, (k + 1) len), from the
// tensor's element run_first(k) on.  A whole home is one run.
typedef struct Runs {
  const TensorHome *th;
  const Shape *whole;
  int64_t len, count;
} Runs;

// A shard's runs go along the last dimension, and on across the trailing
// dimensions its box spans whole, up to the first it does not.
static Runs home_runs(const TensorHome *th, const Shape *whole) {
  int64_t elems = ir_shape_elems(&th->shape);
  Runs r = {.th = th, .whole = whole, .len = elems, .count = 1};
  if (!th->is_shard) return r;
  int d = th->shape.rank - 1;
  for (r.len = 1; d > 0 && th->shape.dim[d] == whole->dim[d]; d--) r.len *= th->shape.dim[d];
  r.len *= th->shape.dim[d];
  r.count = elems / r.len;
  return r;
}

// The tensor's index (per dimension) of element `elem` of shard th.
static void shard_index(const TensorHome *th, int64_t elem, int64_t *idx) {
  for (int d = th->shape.rank - 1; d >= 0; d--) {
    idx[d] = th->start[d] + elem % th->shape.dim[d];
    elem /= th->shape.dim[d];
  }
}

// The tensor's element (row-major) where run k starts.
static int64_t run_first(const Runs *r, int64_t k) {
  if (!r->th->is_shard) return 0;
  int64_t idx[IR_MAX_RANK], flat = 0;
  shard_index(r->th, k * r->len, idx);
  for (int d = 0; d < r->whole->rank; d++) flat = flat * r->whole->dim[d] + idx[d];
  return flat;
}

static int cmp_int64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

// Orders homes by the box they hold: whole homes first, then shards by
// start and shape; 0 when they hold the same elements.
static int box_order(const TensorHome *x, const TensorHome *y) {
  if (x->is_shard != y->is_shard) return x->is_shard ? 1 : -1;
  for (int d = 0; x->is_shard && d < x->shape.rank; d++) {
    if (x->start[d] != y->start[d]) return x->start[d] < y->start[d] ? -1 : 1;
    if (x->shape.dim[d] != y->shape.dim[d]) return x->shape.dim[d] < y->shape.dim[d] ? -1 : 1;
  }
  return 0;
}

// qsort: by box, then manifest order (homes live in one array).
static int cmp_home_box(const void *a, const void *b) {
  const TensorHome *x = *(const TensorHome *const *)a, *y = *(const TensorHome *const *)b;
  int c = box_order(x, y);
  return c ? c : (x > y) - (x < y);
}

// hs[0 .. n) ordered by cmp_home_box (malloc'd): homes holding the same
// box side by side.
static const TensorHome **homes_by_box(const TensorHome *const *hs, int n) {
  const TensorHome **v = xmalloc(((size_t)n + 1) * sizeof *v);
  memcpy(v, hs, (size_t)n * sizeof *v);
  qsort(v, (size_t)n, sizeof *v, cmp_home_box);
  return v;
}

// How many homes from hs[0] on (of n, ordered by box) share one reference:
// all that hold hs[0]'s box when the tensor is the same on every device
// (`shared`), else hs[0] alone.
static int group_size(const TensorHome *const *hs, int n, bool shared) {
  int k = 1;
  while (shared && k < n && !box_order(hs[0], hs[k])) k++;
  return k;
}

// The first element (row-major) of dimensions d.. that no box of shards
// bs[0 .. n) holds, given idx[0 .. d) which all of them hold: its index
// into idx[d ..].  Slabs between the boxes' edges along d, each recursed
// into with the boxes that span it; false when every element is held.
static bool uncovered_from(const TensorHome *const *bs, int n, const Shape *whole, int d, int64_t *idx) {
  if (d == whole->rank) return false;
  int64_t *cut = xmalloc((2 * (size_t)n + 2) * sizeof *cut);
  const TensorHome **sub = xmalloc(((size_t)n + 1) * sizeof *sub);
  int ncut = 0, nsub;
  cut[ncut++] = 0;
  for (int i = 0; i < n; i++) cut[ncut++] = bs[i]->start[d], cut[ncut++] = bs[i]->start[d] + bs[i]->shape.dim[d];
  qsort(cut, (size_t)ncut, sizeof *cut, cmp_int64);
  bool found = false;
  for (int c = 0; c < ncut && !found && cut[c] < whole->dim[d]; c++) {
    if (c && cut[c] == cut[c - 1]) continue;
    idx[d] = cut[c];
    nsub = 0;
    for (int i = 0; i < n; i++)
      if (bs[i]->start[d] <= cut[c] && cut[c] < bs[i]->start[d] + bs[i]->shape.dim[d]) sub[nsub++] = bs[i];
    for (int e = d + 1; !nsub && e < whole->rank; e++) idx[e] = 0;
    found = !nsub || uncovered_from(sub, nsub, whole, d + 1, idx);
  }
  free(cut);
  free(sub);
  return found;
}

bool emu_uncovered(const TensorHome *const *hs, int n, const Shape *whole, int64_t *idx) {
  for (int i = 0; i < n; i++)
    if (!hs[i]->is_shard) return false;
  return uncovered_from(hs, n, whole, 0, idx);
}

// Copies home th's elements (`size` bytes each) run by run from src to
// dst: from its packed box into the whole tensor when to_whole, else back.
static void copy_runs(const TensorHome *th, const Shape *whole, int size, uint8_t *dst, const uint8_t *src,
                      bool to_whole) {
  Runs runs = home_runs(th, whole);
  for (int64_t k = 0; k < runs.count; k++) {
    int64_t in_whole = run_first(&runs, k) * size, in_box = k * runs.len * size;
    memcpy(dst + (to_whole ? in_whole : in_box), src + (to_whole ? in_box : in_whole), (size_t)(runs.len * size));
  }
}

uint8_t *emu_read_whole(Emu *e, const TensorHome *const *hs, int n, const Shape *whole, char *err, size_t errlen) {
  int64_t idx[IR_MAX_RANK];
  if (emu_uncovered(hs, n, whole, idx)) {  // before sizing the tensor by its shape
    char at[IR_TYPE_STR_MAX];
    ir_format_index(at, sizeof at, idx, whole->rank);
    char batch[32] = "";
    if (hs[0]->batch) snprintf(batch, sizeof batch, " (batch %d)", hs[0]->batch);
    snprintf(err, errlen, "tensor '%s'%s is not covered: element %s is in no home", hs[0]->name, batch, at);
    return NULL;
  }
  int size = ir_dtype_bytes[hs[0]->dtype];
  uint8_t *data = xmalloc((size_t)ir_shape_elems(whole) * (size_t)size);
  bool ok = true;
  for (int h = n - 1; h >= 0 && ok; h--) {  // the first listed last: it wins
    uint8_t *box = xmalloc((size_t)ir_shape_elems(&hs[h]->shape) * (size_t)size);
    ok = emu_read_home(e, hs[h], box, err, errlen);
    if (ok) copy_runs(hs[h], whole, size, data, box, true);
    free(box);
  }
  if (!ok) free(data);
  return ok ? data : NULL;
}

bool emu_write_whole(Emu *e, const TensorHome *const *hs, int n, const Shape *whole, const void *data, char *err,
                     size_t errlen) {
  bool ok = true;
  for (int h = 0; h < n && ok; h++) {
    int size = ir_dtype_bytes[hs[h]->dtype];
    uint8_t *box = xmalloc((size_t)ir_shape_elems(&hs[h]->shape) * (size_t)size);
    copy_runs(hs[h], whole, size, box, data, false);
    ok = emu_write_home(e, hs[h], box, err, errlen);
    free(box);
  }
  return ok;
}

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

// The block's reference values of t on `device` (ref: its batch's), and
// their bytes.
static void compute_block(Reference *ref, const Tensor *t, int device, Block *b) {
  ref_block(ref, t, device, b->first, b->count, b->want);
  num_set_all(t->dtype, b->bytes, b->want, b->count);
}

// The homes of the model's tensors, ordered by batch, tensor id and then
// manifest order: homes_of() finds those of one (batch, tensor).
typedef struct HomeKey {
  int batch, id;
  const TensorHome *th;
} HomeKey;

typedef struct HomeIndex {
  HomeKey *keys;
  const TensorHome **homes;  // keys[i].th
  int n;
} HomeIndex;

static int key_order(int batch, int id, const HomeKey *k) {
  if (batch != k->batch) return batch < k->batch ? -1 : 1;
  return (id > k->id) - (id < k->id);
}

// qsort: by batch, tensor id, then manifest order (homes live in one array).
static int cmp_home_key(const void *a, const void *b) {
  const HomeKey *x = a, *y = b;
  int c = key_order(x->batch, x->id, y);
  return c ? c : (x->th > y->th) - (x->th < y->th);
}

static HomeIndex index_homes(const EmuInput *in) {
  const Program *p = in->prog;
  HomeIndex x = {.keys = xmalloc(((size_t)p->tensors.len + 1) * sizeof(HomeKey)),
                 .homes = xmalloc(((size_t)p->tensors.len + 1) * sizeof(TensorHome *)), .n = p->tensors.len};
  for (int h = 0; h < x.n; h++)
    x.keys[h] = (HomeKey){p->tensors.data[h].batch, in->home_tensor[h]->id, &p->tensors.data[h]};
  qsort(x.keys, (size_t)x.n, sizeof *x.keys, cmp_home_key);
  for (int h = 0; h < x.n; h++) x.homes[h] = x.keys[h].th;
  return x;
}

// The homes of tensor id in `batch` (*n of them, in manifest order): the
// first key not before (batch, id), by bisection, and those equal to it.
static const TensorHome *const *homes_of(const HomeIndex *x, int batch, int id, int *n) {
  int lo = 0, hi = x->n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (key_order(batch, id, &x->keys[mid]) > 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (hi = lo; hi < x->n && !key_order(batch, id, &x->keys[hi]);) hi++;
  *n = hi - lo;
  return x->homes + lo;
}

static void index_free(HomeIndex *x) {
  free(x->keys);
  free(x->homes);
}

// One inference of the model as seeded and checked: its reference, and
// how messages name it (" (batch 2)" after a tensor's name, " of batch 2"
// after an output's; nothing with one batch).
typedef struct Batch {
  Reference *ref;
  int index;
  char in[32], of[32];
} Batch;

static Batch batch_of(const Emu *e, int b) {
  assert(b == 0 || (e->opt.batch_ref && e->opt.batch_ref[0] == e->opt.ref));
  Batch bt = {.ref = b ? e->opt.batch_ref[b] : e->opt.ref, .index = b};
  if (e->in->prog->batches > 1) {
    snprintf(bt.in, sizeof bt.in, " (batch %d)", b);
    snprintf(bt.of, sizeof bt.of, " of batch %d", b);
  }
  return bt;
}

// After seeding or checking batch b: what its reference materialised for
// its own inference goes (batch 0's holds what every batch shares, which
// stays; one inference alone keeps all, ref_forget).
static void batch_done(Batch *bt) { ref_forget(bt->ref); }

// ---- before the run -----------------------------------------------------------------

// Homes hs[0 .. n) of input or param t that hold one box and share one
// reference (computed on hs[0]'s device): run by run, a block at a time,
// each home's pages made together first.  A seeded tensor's bytes come
// straight from the seed (ref_seeded_bytes): into the SRAM when the group
// has one home here, else into the block, copied to each.  (Ranks: only
// the homes on this rank's devices, and no reference computed for a group
// with none.)
static void seed_group(Emu *e, Reference *ref, const Tensor *t, const TensorHome *const *hs, int n) {
  int owned = 0;
  for (int h = 0; h < n; h++)
    if (emu_owns(e, hs[h]->device)) {
      sram_make(&e->devs[hs[h]->device].sram, hs[h]->addr, (uint32_t)emu_home_vectors(hs[h], e->vector_bytes));
      owned++;
    }
  if (!owned) return;
  bool seeded = ref_seeded_bytes(ref, t, hs[0]->device, 0, 0, NULL);
  Runs runs = home_runs(hs[0], &t->shape);
  Block b = block_new(e, t->dtype);
  for (int64_t k = 0; k < runs.count; k++)
    for (int64_t at = 0; at < runs.len; at += b.block) {
      b.first = run_first(&runs, k) + at;
      b.count = MIN(b.block, runs.len - at);
      Source src = {.bytes = b.bytes, .ref = ref, .t = t, .device = hs[0]->device, .first = b.first};
      if (seeded && owned == 1)
        src.bytes = NULL;
      else if (seeded)
        ref_seeded_bytes(ref, t, hs[0]->device, b.first, b.count, b.bytes);
      else
        compute_block(ref, t, hs[0]->device, &b);
      for (int h = 0; h < n; h++)
        if (emu_owns(e, hs[h]->device)) write_from(e, hs[h], k * runs.len + at, b.count, &src);
    }
  block_free(&b);
}

// One group of homes to seed (seed_group's arguments), and whether it
// may run on any thread: a single home (on this rank) whose bytes come
// straight from the seed, which writes its own device's SRAM and nothing
// else.
typedef struct SeedJob {
  Reference *ref;
  const Tensor *t;
  const TensorHome *const *hs;
  int n;
  bool alone;
} SeedJob;

typedef struct SeedJobs {
  SeedJob *job;
  int len, cap;
  const TensorHome ***orders;  // homes_by_box's arrays the jobs point into
  int norders;
  Emu *e;
  int nthreads;
} SeedJobs;

// Homes hs[0 .. n) of input or param t (ref: their batch's): one reference
// for all that hold the same box when t is the same on every device
// (given by --input, or not @ each); each group becomes a job.
static void seed_tensor(Emu *e, Reference *ref, const Tensor *t, const TensorHome *const *hs, int n, SeedJobs *js) {
  bool shared = ref_same_on_every_device(ref, t);
  const TensorHome **order = homes_by_box(hs, n);
  js->orders = xrealloc(js->orders, sizeof *js->orders * (size_t)(js->norders + 1));
  js->orders[js->norders++] = order;
  for (int g = 0, size; g < n; g += size) {
    size = group_size(order + g, n - g, shared);
    if (js->len == js->cap) js->job = xrealloc(js->job, sizeof *js->job * (size_t)(js->cap = 2 * js->cap + 16));
    bool alone = size == 1 && emu_owns(e, order[g]->device) && ref_seeded_bytes(ref, t, order[g]->device, 0, 0, NULL);
    js->job[js->len++] = (SeedJob){.ref = ref, .t = t, .hs = order + g, .n = size, .alone = alone};
  }
}

typedef struct SeedWorker {
  SeedJobs *js;
  int part;
  pthread_t thread;
} SeedWorker;

// The single-home jobs of one partition's devices, in order.
static void *seed_part(void *arg) {
  const SeedWorker *w = arg;
  const SeedJobs *js = w->js;
  for (int j = 0; j < js->len; j++) {
    const SeedJob *job = &js->job[j];
    if (job->alone && window_part_of(js->e->topo, js->e->ndevs, js->nthreads, job->hs[0]->device) == w->part)
      seed_group(js->e, job->ref, job->t, job->hs, job->n);
  }
  return NULL;
}

// Seeding on the run's threads (--threads): most of it is faulting SRAM
// pages in and filling them from the seed hash, device by device.  The
// jobs that touch several devices' SRAM, or compute their values, run
// first on this thread; then each thread seeds the single-home jobs of the
// devices its windows will run (window_part_of), in order.  Homes do not
// overlap, so the SRAM holds the same bytes in any order.
static void run_seed_jobs(SeedJobs *js) {
  for (int j = 0; j < js->len; j++)
    if (!js->job[j].alone) seed_group(js->e, js->job[j].ref, js->job[j].t, js->job[j].hs, js->job[j].n);
  int n = js->nthreads;
  SeedWorker *w = xmalloc(sizeof *w * (size_t)n);
  for (int k = 0; k < n; k++) {
    w[k] = (SeedWorker){.js = js, .part = k};
    if (k && pthread_create(&w[k].thread, NULL, seed_part, &w[k])) die("tsp-emu: cannot start a thread");
  }
  seed_part(&w[0]);
  for (int k = 1; k < n; k++) pthread_join(w[k].thread, NULL);
  free(w);
}

// The devices tensor t, which the .tg places, has a copy on (*devs, the
// count returned): its group's when @ each, else its one device.
static int placed_devices(const Reference *ref, const Tensor *t, const int **devs) {
  *devs = &t->place.index;
  return t->place.kind == PLACE_EACH ? ref_group(ref, t, devs) : 1;
}

// Whether input or param t has the homes of batch b, hs[0 .. n), that
// the model places: on every device of its group (ref's), or, when the
// partitioner places it, homes that cover it; if not, says what is
// missing into err.
static bool input_homed(const EmuInput *in, const Reference *ref, const Tensor *t, int b, const TensorHome *const *hs,
                        int n, char *err, size_t errlen) {
  char batch[32] = "", at[IR_TYPE_STR_MAX];
  if (in->prog->batches > 1 && t->kind == TENSOR_INPUT) snprintf(batch, sizeof batch, " (batch %d)", b);
  const char *kind = t->kind == TENSOR_PARAM ? "param" : "input";
  if (ir_place_by_partitioner(t)) {
    int64_t idx[IR_MAX_RANK];
    if (n == 0) {
      snprintf(err, errlen, "%s '%s'%s has no home in the manifest: nothing would seed it", kind, t->name, batch);
      return false;
    }
    if (!emu_uncovered(hs, n, &t->shape, idx)) return true;
    ir_format_index(at, sizeof at, idx, t->shape.rank);
    snprintf(err, errlen, "%s '%s'%s is not covered: element %s is in no home, and nothing would seed it", kind,
             t->name, batch, at);
    return false;
  }
  const int *devs;
  int ndevs = placed_devices(ref, t, &devs);
  for (int i = 0; i < ndevs; i++) {
    int h = 0;
    while (h < n && hs[h]->device != devs[i]) h++;
    if (h < n) continue;
    Arena a = {0};
    snprintf(err, errlen, "%s '%s'%s has no home on device %d, where the model places a copy (@ %s): nothing would "
             "seed it", kind, t->name, batch, devs[i], ir_place_str(&a, &t->place));
    arena_free(&a);
    return false;
  }
  return true;
}

bool model_inputs_homed(const EmuInput *in, const Reference *ref, char *err, size_t errlen) {
  const Graph *g = in->graph;
  HomeIndex x = index_homes(in);
  bool ok = true;
  for (int b = 0; b < in->prog->batches && ok; b++)
    for (int i = 0; i < g->tensors.len && ok; i++) {
      const Tensor *t = g->tensors.data[i];
      if (t->kind != TENSOR_INPUT && (t->kind != TENSOR_PARAM || b > 0)) continue;  // a param's homes are batch 0's
      int n;
      const TensorHome *const *hs = homes_of(&x, b, t->id, &n);
      ok = input_homed(in, ref, t, b, hs, n, err, errlen);
    }
  index_free(&x);
  return ok;
}

void emu_seed_model(Emu *e) {
  if (!e->opt.ref) return;
  const Graph *g = e->in->graph;
  HomeIndex x = index_homes(e->in);
  int threads = e->opt.threads > 0 ? e->opt.threads : emu_default_threads();
  for (int b = 0; b < e->in->prog->batches; b++) {
    Batch bt = batch_of(e, b);
    SeedJobs js = {.e = e, .nthreads = MAX(1, MIN(threads, e->ndevs))};
    for (int i = 0; i < g->tensors.len; i++) {
      const Tensor *t = g->tensors.data[i];
      int n;
      const TensorHome *const *hs = homes_of(&x, b, i, &n);
      if (t->kind == TENSOR_INPUT || t->kind == TENSOR_PARAM) seed_tensor(e, bt.ref, t, hs, n, &js);
    }
    run_seed_jobs(&js);
    for (int o = 0; o < js.norders; o++) free(js.orders[o]);
    free(js.orders);
    free(js.job);
    batch_done(&bt);
  }
  index_free(&x);
}

// ---- after the run ---------------------------------------------------------------------

// The element of a home furthest beyond its tolerance (largest error /
// tolerance, then largest error; the first of equals).
typedef struct Worst {
  int64_t elem;
  double got, want, error, tol, ratio;
} Worst;

// One home of an output, as compared so far.
typedef struct HomeCheck {
  const TensorHome *th;
  bool active;      // still compared in this pass
  bool unwritten;   // a vector of it was never written: elem, vector say which
  int64_t elem;
  uint32_t vector;
  int64_t beyond;   // elements beyond the tolerance of the pass
  double max_ratio; // the largest error / tolerance of the pass
  Worst worst;
} HomeCheck;

// |got - want| / tol into *ratio, the error into *error: 0 when equal as
// values (+0 matching -0, NaN matching NaN); +inf when only one is NaN or
// the tolerance is 0.
static double error_ratio(double got, double want, double tol, double *error) {
  *error = fabs(got - want);
  if (got == want || (isnan(got) && isnan(want))) return *error = 0, 0;
  if (isnan(*error) || tol == 0) return INFINITY;
  return *error / tol;
}

// v as the check compares it with other, its counterpart (the reference's
// value against the device's, or back): an infinity against a finite
// value is the overflow bound of the dtype, the least magnitude that rounds
// to it, so an f16 65504 against a reference infinity is 16 off (a sum
// rounded once in double may pass 65520 where the device's f32 partial
// sums stay below it), not infinitely far.
static double overflow_as_bound(DType dt, double v, double other) {
  return isinf(v) && isfinite(other) ? copysign(num_overflow_bound(dt), v) : v;
}

// Element i of a vector as a double: an f32 read as the float it is on a
// little-endian host (the common case, without num_get's dispatch).
static double elem_value(DType dt, const uint8_t *vec, int i) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (dt == DT_F32) {
    float f;
    memcpy(&f, vec + 4 * (size_t)i, sizeof f);
    return f;
  }
#endif
  return num_get(dt, vec, i);
}

// Judges the differing elements k .. k + m of a block (a vector run of a
// home whose element `at` is the block's first): counts those beyond
// tolerance, keeps the worst.  rms 0: the tolerance without the rms floor.
static void judge_run(const Reference *ref, const Tensor *t, HomeCheck *hc, const uint8_t *got, int lane,
                      const Block *b, int64_t at, int64_t k, int64_t m, double rms) {
  RefTolerance tl = ref_tolerance_of(ref, t);
  double max_ratio = hc->max_ratio;  // kept in registers through the loop
  int64_t beyond = hc->beyond;
  Worst wo = hc->worst;
  for (int64_t j = 0; j < m; j++) {
    double g = elem_value(t->dtype, got, lane + (int)j), w = b->want[k + j], err;
    double gb = overflow_as_bound(t->dtype, g, w), wb = overflow_as_bound(t->dtype, w, g);
    double tol = ref_tolerance_at(tl, wb, rms), ratio = error_ratio(gb, wb, tol, &err);
    if (ratio == 0) continue;
    max_ratio = fmax(max_ratio, ratio);
    if (ratio <= 1) continue;
    if (!beyond++ || ratio > wo.ratio || (ratio == wo.ratio && err > wo.error))
      wo = (Worst){.elem = at + k + j, .got = g, .want = w, .error = err, .tol = tol, .ratio = ratio};
  }
  hc->max_ratio = max_ratio, hc->beyond = beyond, hc->worst = wo;
}

// Compares one home, from its element `at` on, with a block, run by run
// through its layout: equal bytes pass; other elements are judged.  A
// vector never written ends the home's comparison.
static void compare_block(Emu *e, const Reference *ref, const Tensor *t, HomeCheck *hc, const Block *b, int64_t at,
                          double rms) {
  Sram *s = &e->devs[hc->th->device].sram;
  int per = isa_elems_per_vector(t->dtype, e->vector_bytes), size = ir_dtype_bytes[t->dtype];
  for (int64_t k = 0; k < b->count;) {
    Span sp = home_span(hc->th, per, at + k, b->count - k);
    if (!hc->th->pitch) {  // packed: the written run of the page compared at once, if equal
      uint32_t n = vectors_spanned(sp.lane, b->count - k, per);
      const uint8_t *run = sram_read_run(s, sp.vector, &n);
      int64_t m = MIN(b->count - k, (int64_t)n * per - sp.lane);
      if (n && !memcmp(run + sp.lane * size, b->bytes + k * size, (size_t)(m * size))) {
        k += m;
        continue;
      }
    }
    bool *written;
    const uint8_t *got = sram_peek(s, sp.vector, NULL, &written);
    if (!got || !*written) {
      hc->unwritten = true, hc->active = false, hc->elem = at + k, hc->vector = sp.vector;
      return;
    }
    if (memcmp(got + sp.lane * size, b->bytes + k * size, (size_t)(sp.count * size)))
      judge_run(ref, t, hc, got, sp.lane, b, at, k, sp.count, rms);
    k += sp.count;
  }
}

static bool any_active(const HomeCheck *hc, int n) {
  for (int i = 0; i < n; i++)
    if (hc[i].active) return true;
  return false;
}

// One pass over output t for its active homes hc[0 .. n), which hold one
// box and share one reference (ref, computed on hc[0]'s device), run by
// run; *sumsq (if not NULL) gets the sum of the squares of the reference
// values.
static void compare_pass(Emu *e, Reference *ref, const Tensor *t, HomeCheck *hc, int n, double rms, double *sumsq) {
  Runs runs = home_runs(hc[0].th, &t->shape);
  Block b = block_new(e, t->dtype);
  for (int64_t k = 0; k < runs.count && any_active(hc, n); k++)
    for (int64_t at = 0; at < runs.len && any_active(hc, n); at += b.block) {
      b.first = run_first(&runs, k) + at;
      b.count = MIN(b.block, runs.len - at);
      compute_block(ref, t, hc[0].th->device, &b);
      for (int64_t j = 0; sumsq && j < b.count; j++)  // the rms of the finite values (NaN and inf compare exactly)
        if (isfinite(b.want[j])) *sumsq += b.want[j] * b.want[j];
      for (int h = 0; h < n; h++)
        if (hc[h].active) compare_block(e, ref, t, &hc[h], &b, k * runs.len + at, rms);
    }
  block_free(&b);
}

// Checks homes hc[0 .. n) of output t, which hold one box and share one
// reference: a pass with the tolerance without the floor, and for the
// homes with elements beyond it, a second with the floor: the rms over
// the box, or the scale of the sums t comes from when larger.
static void check_group(Emu *e, Reference *ref, const Tensor *t, HomeCheck *hc, int n) {
  double sumsq = 0;
  for (int h = 0; h < n; h++) hc[h].active = true;
  compare_pass(e, ref, t, hc, n, 0, &sumsq);
  bool again = false;
  if (ref_tolerance(ref, t, 0, 1) == 0) return;  // exact (integers, G 0): the rms changes nothing
  for (int h = 0; h < n; h++) {
    hc[h].active = !hc[h].unwritten && hc[h].beyond > 0;
    if (hc[h].active) hc[h].beyond = 0, hc[h].max_ratio = 0, again = true;
  }
  if (!again) return;
  double rms = sqrt(sumsq / (double)ir_shape_elems(&hc[0].th->shape));
  compare_pass(e, ref, t, hc, n, fmax(rms, ref_sum_floor(ref, t, hc[0].th->device)), NULL);
}

static bool has_home(const HomeCheck *hc, int n, int device) {
  for (int i = 0; i < n; i++)
    if (hc[i].th->device == device) return true;
  return false;
}

// An output the partitioner placed needs a home somewhere in each batch,
// and every element of it in one: a whole home, or shards that cover it.
// False after reporting the first element none holds.
static bool check_covered(Emu *e, const Batch *bt, const Tensor *t, const TensorHome *const *hs, int n) {
  int64_t idx[IR_MAX_RANK];
  char at[IR_TYPE_STR_MAX];
  if (n == 0) {
    emu_violate(e, VIOL_DATA, -1, NULL, -1, -1, "output '%s'%s has no home in the manifest", t->name, bt->of);
    return false;
  }
  if (!emu_uncovered(hs, n, &t->shape, idx)) return true;
  ir_format_index(at, sizeof at, idx, t->shape.rank);
  emu_violate(e, VIOL_DATA, -1, NULL, -1, -1, "output '%s'%s is not covered: element %s is in no home", t->name,
              bt->of, at);
  return false;
}

// An output needs a home in each batch on every device the graph places a
// copy on (when the partitioner places it: check_covered).  False if one
// is missing.
static bool check_placed(Emu *e, const Batch *bt, const Tensor *t, const TensorHome *const *hs, const HomeCheck *hc,
                         int n) {
  if (ir_place_by_partitioner(t)) return check_covered(e, bt, t, hs, n);
  const int *devs;
  int ndevs = placed_devices(bt->ref, t, &devs);
  bool ok = true;
  for (int i = 0; i < ndevs; i++)
    if (!has_home(hc, n, devs[i])) {
      emu_violate(e, VIOL_DATA, devs[i], NULL, -1, -1, "output '%s'%s has no home in the manifest", t->name, bt->of);
      ok = false;
    }
  return ok;
}

// Element `elem` of home th as a reader finds it in the tensor, into
// what: its row-major index in a whole home ("13", with where = "of 320");
// in a shard, its index in the tensor ("[1, 5]", with where = "of [2, 8],
// in the shard [0, 4] + [2, 4]").
static void name_element(const Tensor *t, const TensorHome *th, int64_t elem, char *what, size_t nwhat, char *where,
                         size_t n) {
  if (!th->is_shard) {
    snprintf(what, nwhat, "%lld", (long long)elem);
    snprintf(where, n, "of %lld", (long long)ir_shape_elems(&t->shape));
    return;
  }
  int64_t idx[IR_MAX_RANK];
  char whole[IR_TYPE_STR_MAX], start[IR_TYPE_STR_MAX], shape[IR_TYPE_STR_MAX];
  shard_index(th, elem, idx);
  ir_format_index(what, nwhat, idx, t->shape.rank);
  ir_format_index(whole, sizeof whole, t->shape.dim, t->shape.rank);
  ir_format_index(start, sizeof start, th->start, t->shape.rank);
  ir_format_index(shape, sizeof shape, th->shape.dim, t->shape.rank);
  snprintf(where, n, "of %s, in the shard %s + %s", whole, start, shape);
}

// The violation of a home that failed: its first unwritten vector, or its
// worst element.
static void report_home(Emu *e, const Batch *bt, const Tensor *t, const HomeCheck *hc) {
  const Worst *w = &hc->worst;
  char what[IR_TYPE_STR_MAX], where[IR_TYPE_STR_MAX * 4];
  name_element(t, hc->th, hc->unwritten ? hc->elem : w->elem, what, sizeof what, where, sizeof where);
  if (hc->unwritten && hc->th->is_shard)
    emu_violate(e, VIOL_DATA, hc->th->device, NULL, -1, -1,
                "tensor '%s'%s element %s (%s): vector %u was never written", t->name, bt->in, what, where, hc->vector);
  else if (hc->unwritten)
    emu_violate(e, VIOL_DATA, hc->th->device, NULL, -1, -1, "tensor '%s'%s element %s: vector %u was never written",
                t->name, bt->in, what, hc->vector);
  else
    emu_violate(e, VIOL_DATA, hc->th->device, NULL, -1, -1,
                "tensor '%s'%s element %s (%s; %lld beyond tolerance): expected %.9g, got %.9g (error %.3g, "
                "tolerance %.3g)",
                t->name, bt->in, what, where, (long long)hc->beyond, w->want, w->got, w->error, w->tol);
}

// Home th's values into the [rows x cols] matrix out, at its box (a
// whole home: all of it); its elements are all written (check_output has
// compared them).
static void read_home(Emu *e, const TensorHome *th, int64_t cols, double *out) {
  Sram *s = &e->devs[th->device].sram;
  int per = isa_elems_per_vector(th->dtype, e->vector_bytes);
  int64_t r0 = th->is_shard ? th->start[0] : 0, c0 = th->is_shard ? th->start[1] : 0;
  int64_t hcols = th->shape.dim[1], count = th->shape.dim[0] * hcols;
  for (int64_t k = 0; k < count;) {
    Span sp = home_span(th, per, k, count - k);
    const uint8_t *vec = sram_peek(s, sp.vector, NULL, NULL);
    for (int64_t j = 0; j < sp.count; j++)
      out[(r0 + (k + j) / hcols) * cols + c0 + (k + j) % hcols] = num_get(th->dtype, vec, sp.lane + (int)j);
    k += sp.count;
  }
}

// The rows of the reference factor of t (a cholesky's [p, p] result on
// `device`) before its first NaN: a pivot that is not positive makes its
// row and every later one NaN (docs/dsl.md), and the element check has
// compared those NaNs already.  want: scratch of p x p.
static int64_t finite_factor_rows(Reference *ref, const Tensor *t, int device, int64_t p, double *want) {
  ref_block(ref, t, device, 0, p * p, want);
  for (int64_t i = 0; i < p; i++)
    for (int64_t j = 0; j <= i; j++)
      if (isnan(want[i * p + j])) return i;
  return p;
}

// A cholesky output is also checked as a factor (docs/dsl.md, cholesky):
// L, gathered from homes hc[0 .. n) that hold one copy of it (a whole
// home, or the shards of a split), times L^T, formed in double, against
// the lower triangle of the operand on hc[0]'s device, element by element within the output's tolerance (the
// operand's rms as the floor), over the rows whose reference factor is a
// number (all of them when the operand is positive definite).  False,
// reporting the worst, if any is beyond it; its largest error / tolerance
// joins *oc.
static bool check_factor(Emu *e, const Batch *bt, const Tensor *t, const HomeCheck *hc, int n, OutputCheck *oc) {
  const Tensor *a = t->def->args[0];
  int64_t p = t->shape.dim[0], count = p * p, beyond = 0, wi = 0, wj = 0;
  for (int h = 0; h < n; h++)
    if (hc[h].unwritten) return true;  // reported already
  double *l = xcalloc((size_t)count, sizeof *l), *want = xmalloc((size_t)count * sizeof *want);
  double *got = xmalloc((size_t)count * sizeof *got), sumsq = 0, worst = 0, werr = 0, wtol = 0;
  int64_t rows = finite_factor_rows(bt->ref, t, hc[0].th->device, p, want);
  for (int h = 0; h < n; h++) read_home(e, hc[h].th, p, l);
  ref_block(bt->ref, a, hc[0].th->device, 0, count, want);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)p, (blasint)p, (blasint)p, 1.0, l, (blasint)p, l,
              (blasint)p, 0.0, got, (blasint)p);
  for (int64_t k = 0; k < count; k++)
    if (isfinite(want[k])) sumsq += want[k] * want[k];
  double rms = sqrt(sumsq / (double)count);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j <= i; j++) {
      double err, tol = ref_tolerance(bt->ref, t, want[i * p + j], rms);
      double ratio = error_ratio(got[i * p + j], want[i * p + j], tol, &err);
      oc->max_ratio = fmax(oc->max_ratio, ratio);
      if (ratio <= 1 || (beyond++ && ratio <= worst)) continue;
      worst = ratio, werr = err, wtol = tol, wi = i, wj = j;
    }
  if (beyond)
    emu_violate(e, VIOL_DATA, n == 1 ? hc[0].th->device : -1, NULL, -1, -1,
                "tensor '%s'%s: L L^T differs from '%s' at [%lld, %lld] (%lld beyond tolerance): expected %.9g, got "
                "%.9g (error %.3g, tolerance %.3g)",
                t->name, bt->in, a->name, (long long)wi, (long long)wj, (long long)beyond, want[wi * p + wj],
                got[wi * p + wj], werr, wtol);
  oc->beyond += beyond;
  free(l), free(want), free(got);
  return beyond == 0;
}

// Every copy of L that a cholesky output's homes hold, checked as a
// factor: a whole home alone (an `@ each` operand gives each device its
// own a and so its own L), the shards of a split together.
static bool check_factors(Emu *e, const Batch *bt, const Tensor *t, const HomeCheck *hc, int n, OutputCheck *oc) {
  HomeCheck *shards = xcalloc((size_t)n + 1, sizeof *shards);
  int nshards = 0;
  bool ok = true;
  for (int h = 0; h < n; h++)
    if (hc[h].th->is_shard)
      shards[nshards++] = hc[h];
    else
      ok &= check_factor(e, bt, t, &hc[h], 1, oc);
  if (nshards) ok &= check_factor(e, bt, t, shards, nshards, oc);
  free(shards);
  return ok;
}

// Group hc[0 .. n): its homes on this rank's devices checked (ranks: the
// others' are their ranks' to check, and stay zero here).
static void check_owned(Emu *e, Reference *ref, const Tensor *t, HomeCheck *hc, int n) {
  HomeCheck *own = xcalloc((size_t)n, sizeof *own);
  int nown = 0;
  for (int h = 0; h < n; h++)
    if (emu_owns(e, hc[h].th->device)) own[nown++] = hc[h];
  if (nown) check_group(e, ref, t, own, nown);
  for (int h = 0, k = 0; h < n; h++)
    if (emu_owns(e, hc[h].th->device)) hc[h] = own[k++];
  free(own);
}

// The key of what is found about output `out` of batch b: its placement
// (home 0), then each home in box order (window.c: ranks merge by it).
static void key_output(Emu *e, int b, int out, int home) {
  window_key_after_run(e, EMU_AFTER_MODEL, (uint64_t)b << 40 | (uint64_t)out << 24 | (uint64_t)home);
}

// Checks homes hs[0 .. n) of output t (number `out`) in one batch, adding
// to *oc; false on any home beyond tolerance, unwritten or missing, or an
// element in no home.  Homes are checked and reported in box order (whole
// homes first, in manifest order); with ranks, each rank its own, and rank
// 0 the placement.
static bool check_output(Emu *e, const Batch *bt, int out, const Tensor *t, const TensorHome *const *hs, int n,
                         OutputCheck *oc) {
  const TensorHome **order = homes_by_box(hs, n);
  HomeCheck *hc = xcalloc((size_t)n + 1, sizeof *hc);
  for (int i = 0; i < n; i++) hc[i].th = order[i];
  key_output(e, bt->index, out, 0);
  bool ok = !emu_leads(e) || check_placed(e, bt, t, order, hc, n), shared = ref_same_on_every_device(bt->ref, t);
  for (int g = 0, size; g < n; g += size) {
    size = group_size(order + g, n - g, shared);
    check_owned(e, bt->ref, t, hc + g, size);
  }
  free(order);
  for (int i = 0; i < n; i++) {
    bool bad = hc[i].unwritten || hc[i].beyond > 0;
    key_output(e, bt->index, out, i + 1);
    if (bad) report_home(e, bt, t, &hc[i]);
    ok &= !bad;
    oc->max_ratio = fmax(oc->max_ratio, hc[i].max_ratio);
    oc->beyond += hc[i].beyond;
  }
  if (ok && n > 0 && t->def && t->def->kind == OP_CHOLESKY) ok = check_factors(e, bt, t, hc, n, oc);
  free(hc);
  return ok;
}

void model_check_outputs(Emu *e, bool *any, bool *all) {
  if (!e->opt.ref) return;
  const Graph *g = e->in->graph;
  HomeIndex x = index_homes(e->in);
  e->r->noutputs = g->outputs.len;
  e->r->outputs = ARENA_ARRAY(e->a, OutputCheck, (size_t)g->outputs.len + 1);
  for (int i = 0; i < g->outputs.len; i++) e->r->outputs[i] = (OutputCheck){.name = g->outputs.data[i]->name};
  *any |= g->outputs.len > 0;
  for (int b = 0; b < e->in->prog->batches; b++) {
    Batch bt = batch_of(e, b);
    for (int i = 0; i < g->outputs.len; i++) {
      if (b > 0 && g->outputs.data[i]->kind == TENSOR_PARAM) continue;  // shared: batch 0's homes are every batch's
      int n;
      const TensorHome *const *hs = homes_of(&x, b, g->outputs.data[i]->id, &n);
      *all &= check_output(e, &bt, i, g->outputs.data[i], hs, n, &e->r->outputs[i]);
    }
    batch_done(&bt);
  }
  index_free(&x);
}

void emu_write_data_report(const EmuResult *r, FILE *out) {
  if (!r->noutputs) return;
  fprintf(out, "outputs:\n");
  for (int i = 0; i < r->noutputs; i++) {
    const OutputCheck *oc = &r->outputs[i];
    fprintf(out, "  - {name: ");
    str_print_yaml(out, oc->name);
    if (isinf(oc->max_ratio))
      fprintf(out, ", max_error_ratio: .inf");
    else
      fprintf(out, ", max_error_ratio: %.6g", oc->max_ratio);
    fprintf(out, ", beyond_tolerance: %lld}\n", (long long)oc->beyond);
  }
}
