// partition.c: decides where every tensor the model left unplaced lives,
// splitting what no single device holds.  Part of passes/, after check and
// before dag; placements written in the .tg are never changed.
//
// Seed 002 s5.1: "the input model is either automatically partitioned by
// the compiler or manually by the programmer".  In order:
//
//  1. stage(K) is device(K).
//  2. Tensor parallelism (002 s5.2; split_matmul.c): a matmul whose weight
//     is an unplaced param only it reads may be cut into a grid of R
//     row-wise by C column-wise weight splits, the pieces *shards* of the
//     model's tensors (Tensor.shard_of; the manifest's `start:`), chosen
//     by estimated cycles among the grids whose devices fit in SRAM; a
//     result other ops read is gathered whole by concats.
//  3. Placement: every other unplaced tensor lives with its first consumer
//     (a tensor nothing consumes, with its producer, or on device 0).
//  4. Pipeline (002 s4.1): if that leaves some device's SRAM over-full, or
//     several inferences are in flight (--batches), the unplaced ops are cut, in definition order, into as few consecutive
//     stages as fit, balanced by estimated cycles, stage k on the k-th
//     device of a path that steps to the nearest unused device; then step
//     3 again for the params and inputs.
//  5. Capacity: a device whose estimated SRAM use exceeds what it has is
//     refused, naming its largest tensor.
//
// Costs are estimates from shapes (compute_estimate_cycles; a transfer's
// vectors times the link's cycles a vector over the source's ports), as
// the partition must be chosen before the DAG exists.  --partition=none
// keeps steps 1 and 3 and the capacity check.
#include "partition.h"

#include <stdlib.h>
#include <string.h>


// ---- sizes -----------------------------------------------------------------------------

int64_t part_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// a x b and a + b, or INT64_MAX when that does not fit in 64 bits (sizes
// are never negative, and one past any SRAM is refused either way).
static int64_t mul_saturated(int64_t a, int64_t b) {
  int64_t x;
  return __builtin_mul_overflow(a, b, &x) ? INT64_MAX : x;
}

static int64_t add_saturated(int64_t a, int64_t b) {
  int64_t x;
  return __builtin_add_overflow(a, b, &x) ? INT64_MAX : x;
}

// Bytes of one copy of t as layout.c pads it: every row on whole vectors
// (INT64_MAX when that is more than 64 bits count: a row of 2^20-byte
// vectors times 2^44 rows fits no device, and must not wrap to one that
// fits).
int64_t part_padded_bytes(const Partitioner *p, DType dt, const Shape *s) {
  int64_t cols = s->dim[s->rank - 1];
  int64_t vectors = mul_saturated(ir_shape_elems(s) / cols, part_ceil_div(cols, isa_elems_per_vector(dt, p->vb)));
  return mul_saturated(vectors, p->vb);
}

int64_t part_tensor_bytes(const Partitioner *p, const Tensor *t) { return part_padded_bytes(p, t->dtype, &t->shape); }

// part_tensor_bytes in floating point, for messages: past 64 bits too.
static double tensor_bytes_as_double(const Partitioner *p, const Tensor *t) {
  int64_t cols = t->shape.dim[t->shape.rank - 1];
  return (double)(ir_shape_elems(&t->shape) / cols) *
         (double)part_ceil_div(cols, isa_elems_per_vector(t->dtype, p->vb)) * (double)p->vb;
}

// Scratch an op holds while it runs (compute.c's estimate).
int64_t part_scratch_bytes(const Partitioner *p, const Op *op) {
  if (ir_op_is_collective(op->kind) || op->kind == OP_COPY) return 0;
  return compute_estimate_scratch_vectors(op, p->vb) * p->vb;
}

bool part_is_free(const Tensor *t) { return t->place.kind == PLACE_AUTO; }

// Whether the partitioner may move op's result: the .tg did not place it
// and it is not one copy of a group (@ each).
bool part_movable(const Op *op) {
  const Tensor *y = op->result;
  return !y->place_written && (y->place.kind == PLACE_AUTO || y->place.kind == PLACE_DEVICE) &&
         !ir_op_is_collective(op->kind) && op->kind != OP_COPY;
}

// Whether a placed tensor has a copy on device d (an unplaced one: no).
static bool placed_on(const Placement *pl, int d) {
  return pl->kind == PLACE_DEVICE ? pl->index == d : pl->kind == PLACE_EACH && ir_place_has(pl, d);
}

// ---- the topology: distances for choosing devices ----------------------------------------

// Hops from `from` to every device over working links (-1: unreachable), malloc'd.
static int *hops_from(const Topology *t, int from) {
  int *dist = xmalloc(sizeof(int) * (size_t)t->ndevices), *queue = xmalloc(sizeof(int) * (size_t)t->ndevices);
  ir_topo_hops_from(t, from, dist, queue);
  free(queue);
  return dist;
}

// The devices in service (ir_device_in_service: not failed, not a spare
// standing by) by hops from `from`, then by id: the order shards and stages
// take; *n gets how many (unreachable ones last).
int *part_devices_nearest(const Topology *t, int from, int *n) {
  int *dist = hops_from(t, from), *order = xmalloc(sizeof(int) * (size_t)t->ndevices);
  *n = 0;
  for (int h = 0;; h++) {
    bool any = false;
    for (int d = 0; d < t->ndevices; d++)
      if (dist[d] == h) {
        any = true;
        if (ir_device_in_service(t, d)) order[(*n)++] = d;
      }
    if (!any) break;  // the rest are unreachable
  }
  for (int d = 0; d < t->ndevices; d++)
    if (dist[d] < 0 && ir_device_in_service(t, d)) order[(*n)++] = d;
  free(dist);
  return order;
}

// The device the model's device(0) names (the first in service if none).
int part_first_device(const Topology *t) {
  int d = ir_role_device(t, 0);
  for (int k = 0; d < 0 && k < t->ndevices; k++)
    if (ir_device_in_service(t, k)) d = k;
  return d < 0 ? 0 : d;
}

// Ports of device d with a working cable.
static int working_ports(const Topology *t, int d) {
  int n = 0;
  for (int q = 0; q < t->devices[d].nports; q++) {
    const Port *port = &t->devices[d].ports[q];
    n += port->link >= 0 && !t->links.data[port->link].failed;
  }
  return n;
}

// Estimated cycles to send `bytes` from device src to `copies` devices: the
// vectors leave over src's working ports, each a vector every
// cycles_per_vector, plus one link's latency.
int64_t part_send_cycles(const Partitioner *p, int src, int64_t bytes, int copies) {
  if (copies <= 0) return 0;
  int ports = MAX(working_ports(p->t, src), 1);
  int64_t vectors = part_ceil_div(bytes, p->vb);
  return part_ceil_div(vectors * copies, ports) * ir_cycles_per_vector(&p->t->link, p->t->clock_mhz) + p->t->link.latency_max;
}

// ---- graph surgery ---------------------------------------------------------------------

Tensor *part_new_shard(Partitioner *p, const Tensor *of, TensorKind kind, const int64_t *start, const Shape *shape,
                       int device) {
  Tensor *t = ARENA_NEW(&p->c->arena, Tensor);
  *t = *of;
  t->kind = kind;
  t->def = NULL;
  t->is_output = false;
  t->shape = *shape;
  t->place = (Placement){.kind = PLACE_DEVICE, .index = device};
  t->place_written = false;
  t->shard_of = of;
  memset(t->shard_start, 0, sizeof t->shard_start);
  Buf b = {0};
  buf_printf(&b, "%s[", of->name);
  for (int d = 0; d < shape->rank; d++) {
    t->shard_start[d] = start[d];
    if (start[d] == 0 && shape->dim[d] == of->shape.dim[d])
      buf_printf(&b, "%s:", d ? ", " : "");
    else
      buf_printf(&b, "%s%lld:%lld", d ? ", " : "", (long long)start[d], (long long)(start[d] + shape->dim[d]));
  }
  buf_printf(&b, "]");
  t->name = arena_strdup(&p->c->arena, b.data);
  buf_free(&b);
  return t;
}

// A vector of pointers with element `old` replaced by the n of `repl`, in
// order (old stays if it is absent).
void part_splice(Arena *a, PtrVec *v, const void *old, void *const *repl, int n) {
  PtrVec out = {0};
  for (int i = 0; i < v->len; i++) {
    if (v->data[i] != old) {
      VEC_PUSH(a, &out, v->data[i]);
      continue;
    }
    for (int j = 0; j < n; j++) VEC_PUSH(a, &out, repl[j]);
  }
  *v = out;
}

// The graph's readers, counted for every tensor at once and kept until the
// graph changes: the splitter asks for each matmul, and a count each time
// was quadratic (deep3k.tg's 3,000 matmuls: 0.7 s).
static const ReaderCounts *reader_counts(const Partitioner *p) {
  const Graph *g = p->g;
  ReaderCounts *r = p->readers;
  if (r->operands) return r;
  size_t n = (size_t)g->tensors.len + 1;
  *r = (ReaderCounts){xcalloc(n, sizeof(int)), xcalloc(n, sizeof(int)), xmalloc(sizeof(int) * n)};
  for (int i = 0; i < g->tensors.len; i++) r->last[i] = -1;
  for (int i = 0; i < g->ops.len; i++)
    for (int a = 0; a < g->ops.data[i]->nargs; a++) {
      int t = g->ops.data[i]->args[a]->id;
      r->operands[t]++;
      if (r->last[t] != i) r->ops[t]++, r->last[t] = i;
    }
  return r;
}

static void reader_counts_free(ReaderCounts *r) {
  free(r->operands), free(r->ops), free(r->last);
  *r = (ReaderCounts){0};
}

// Renumbers tensors and ops after surgery (ids are indices); the reader
// counts are made again when next asked for.
void part_renumber(Partitioner *p) {
  Graph *g = p->g;
  for (int i = 0; i < g->tensors.len; i++) g->tensors.data[i]->id = i;
  for (int i = 0; i < g->ops.len; i++) g->ops.data[i]->id = i;
  reader_counts_free(p->readers);
}

// Whether devices a and b share a node (every device of a system that is
// not a dragonfly counts as one node).
bool part_same_node(const Topology *t, int a, int b) {
  if (t->family != FAMILY_DRAGONFLY) return true;
  return t->devices[a].coord[0] == t->devices[b].coord[0] && t->devices[a].coord[1] == t->devices[b].coord[1];
}

// How many operands of ops name t (a copy counts: it moves t's bytes).
int part_readers(const Partitioner *p, const Tensor *t) { return reader_counts(p)->operands[t->id]; }

// ---- step 3: with the first consumer -----------------------------------------------------

static void place_stage(Tensor *t) {
  if (t->place.kind == PLACE_STAGE) t->place = (Placement){.kind = PLACE_DEVICE, .index = t->place.index};
}

// By tensor id: its first reader other than a copy (NULL: none).
static Op **first_uses(const Graph *g) {
  Op **first = xcalloc((size_t)g->tensors.len + 1, sizeof(Op *));
  for (int i = 0; i < g->ops.len; i++) {
    Op *op = g->ops.data[i];
    if (op->kind == OP_COPY) continue;
    for (int a = 0; a < op->nargs; a++)
      if (!first[op->args[a]->id]) first[op->args[a]->id] = op;
  }
  return first;
}

// The device every operand of t's producer lives on, when they all live on
// one (placed already: an earlier op's result the sweep has not reached is
// still free); -1 otherwise.
static int operands_home(const Tensor *t) {
  if (!t->def || !t->def->nargs) return -1;
  int home = -1;
  for (int a = 0; a < t->def->nargs; a++) {
    const Placement *pl = &t->def->args[a]->place;
    if (pl->kind != PLACE_DEVICE || (home >= 0 && pl->index != home)) return -1;
    home = pl->index;
  }
  return home;
}

// Every unplaced tensor where its first consumer other than a copy runs;
// tensors are visited last to first, so every consumer is placed before its
// operands.  A value whose producer's operands all live on one device
// stays there when nothing but copies reads it or ops on several devices
// do (the gathered result of a split, read by the next split's grid):
// moving its operands to the first reader and sending it on from there
// put one more transfer on every layer's path (two split layers: 4,795
// cycles, 3,561 now).  Any other tensor nothing consumes lives on device 0.
static void place_with_consumers(Partitioner *p) {
  Graph *g = p->g;
  Op **first_use = first_uses(g);
  // By tensor id, as the sweep places its readers: where one of them runs,
  // and whether another runs elsewhere.
  Placement *read_at = xcalloc((size_t)g->tensors.len + 1, sizeof(Placement));
  bool *several = xcalloc((size_t)g->tensors.len + 1, sizeof(bool));
  for (int i = g->tensors.len - 1; i >= 0; i--) {
    Tensor *t = g->tensors.data[i];
    if (part_is_free(t)) {
      const Op *user = first_use[t->id];
      int home = operands_home(t);
      if (home >= 0 && (!user || several[t->id]))
        t->place = (Placement){.kind = PLACE_DEVICE, .index = home};
      else
        t->place = user ? user->result->place : (Placement){.kind = PLACE_DEVICE, .index = part_first_device(p->t)};
    }
    for (int a = 0; t->def && t->def->kind != OP_COPY && a < t->def->nargs; a++) {
      int x = t->def->args[a]->id;
      if (read_at[x].kind == PLACE_AUTO) read_at[x] = t->place;
      else several[x] |= !ir_place_equal(&read_at[x], &t->place);
    }
  }
  free(first_use), free(read_at), free(several);
}

// ---- SRAM estimates --------------------------------------------------------------------

// Op indices [from, to] during which a tensor occupies a device.
typedef struct Span {
  int from, to;
} Span;

// The op of device d with the most scratch (NULL: none has any), and its
// bytes in *bytes.
static const Op *largest_scratch(const Partitioner *p, int d, int64_t *bytes) {
  const Op *most = NULL;
  *bytes = 0;
  for (int i = 0; i < p->g->ops.len; i++) {
    const Op *op = p->g->ops.data[i];
    int64_t b = placed_on(&op->result->place, d) ? part_scratch_bytes(p, op) : 0;
    if (b > *bytes) *bytes = b, most = op;
  }
  return most;
}

// Bytes device d holds at its fullest, estimated in definition order, as
// code generation allocates: params at home for the whole run, inputs and
// outputs too, once per inference in flight; a value at home from its
// producer to its last reader anywhere (it is sent until then), a received
// one from its first reader on d to its last.  A value only d's ops read
// counts once for each of PARTITION_LIVE_BATCHES inferences that may be
// in flight on d at once (d computes them in order, or each of its runs
// in order where plan_batch_runs allows it, dag.c); one that
// crosses to or from another device, once per inference (it may wait there
// for any of them).  Plus the largest scratch an op of d holds (one op
// runs at a time).  *largest: the biggest tensor d holds.  device_peak_as
// counts a value only d's ops read once for each of `in_flight`
// inferences, the largest scratch `programs` times, and, `as_sent`, a
// received value from its producer on (it may be sent as soon as it is
// made) rather than from its first reader here.
static int64_t device_peak_as(const Partitioner *p, int d, const Tensor **largest, int64_t in_flight, int programs,
                              bool as_sent) {
  const Graph *g = p->g;
  int nt = g->tensors.len, nops = g->ops.len;
  Span *on_d = xmalloc(sizeof(Span) * (size_t)(nt + 1)), *anywhere = xmalloc(sizeof(Span) * (size_t)(nt + 1));
  for (int i = 0; i < nt; i++) on_d[i] = anywhere[i] = (Span){-1, -1};
  // delta[0]: values only d's ops read; delta[1]: values that cross to or
  // from another device, which may wait there for any inference
  int64_t *delta[2] = {xcalloc((size_t)nops + 2, sizeof(int64_t)), xcalloc((size_t)nops + 2, sizeof(int64_t))};
  int64_t base = 0, scratch;
  largest_scratch(p, d, &scratch);
  for (int i = 0; i < nops; i++) {
    const Op *op = g->ops.data[i];
    bool here = placed_on(&op->result->place, d);
    for (int a = 0; a < op->nargs; a++) {
      Span *s = here ? &on_d[op->args[a]->id] : &anywhere[op->args[a]->id];
      if (s->from < 0) s->from = i;
      s->to = i;
    }
  }
  *largest = NULL;
  for (int i = 0; i < nt; i++) {
    const Tensor *t = g->tensors.data[i];
    bool home = placed_on(&t->place, d);
    if (!home && on_d[i].from < 0) continue;
    int64_t bytes = part_tensor_bytes(p, t);
    if (!*largest || bytes > part_tensor_bytes(p, *largest)) *largest = t;
    bytes = MIN(bytes, p->sram + 1);  // a tensor bigger than the SRAM is refused whatever its size: sums stay small
    if (home && (t->kind != TENSOR_VALUE || t->is_output)) {
      base = add_saturated(base, t->kind == TENSOR_PARAM ? bytes : mul_saturated(bytes, p->batches));  // params are shared
      continue;
    }
    Span s = on_d[i];  // received: from its first reader here to its last
    if (as_sent && t->def) s.from = MIN(s.from, t->def->id);
    if (home) s = (Span){t->def->id, MAX(MAX(on_d[i].to, anywhere[i].to), t->def->id)};  // sent until read
    int crosses = !home || anywhere[i].from >= 0;
    delta[crosses][s.from] += bytes, delta[crosses][s.to + 1] -= bytes;
  }
  int64_t local = 0, cross = 0, peak = 0;
  for (int i = 0; i < nops; i++) {
    local += delta[0][i], cross += delta[1][i];  // at most the tensors' count times SRAM + 1
    peak = MAX(peak, add_saturated(mul_saturated(local, in_flight), mul_saturated(cross, p->batches)));
  }
  free(delta[0]), free(delta[1]), free(on_d), free(anywhere);
  return add_saturated(add_saturated(base, peak), mul_saturated(scratch, programs));
}

static int64_t device_peak(const Partitioner *p, int d, const Tensor **largest) {
  return device_peak_as(p, d, largest, MIN(p->batches, PARTITION_LIVE_BATCHES), 1, false);
}

// With several inferences in flight, which devices' runs may work on
// different inferences at once (dag.c: inference b + 1's first stage
// while inference b is on a later stage of the same device), their
// matmuls filling gaps out of definition order (schedule.c): a device
// whose estimate holds every inference's working values at once, two
// programs' scratch, and what it receives from when it is sent, within
// the capacity planned.  The others compute one inference at a time, in
// order, as the estimate above assumes; but a device's runs send the next
// its values earlier, so each of them must also hold what it receives
// from when it is sent.  If one does not, every device computes one
// inference at a time.  The log names the devices that do.
// How many devices would pass the capacity by runs; fits[d] whether d
// would not.
static int devices_past_runs(const Partitioner *p, bool *fits) {
  int over = 0;
  for (int d = 0; d < p->t->ndevices; d++) {
    const Tensor *largest;
    fits[d] = device_peak_as(p, d, &largest, p->batches, 2, true) <= p->capacity;
    over += !fits[d];
  }
  return over;
}

// The first device that does not fit by runs (fits[d] false) and would not
// hold, one inference at a time, what it receives from when it is sent;
// -1 if none.
static int misses_early_sends(const Partitioner *p, const bool *fits) {
  for (int d = 0; d < p->t->ndevices; d++) {
    const Tensor *largest;
    if (!fits[d] && device_peak_as(p, d, &largest, MIN(p->batches, PARTITION_LIVE_BATCHES), 1, true) > p->capacity)
      return d;
  }
  return -1;
}

// "0-3, 7": the devices d with fits[d] == want.
static void log_devices(Buf *log, const bool *fits, int n, bool want) {
  for (int d = 0, first = 1; d < n; d++) {
    if (fits[d] != want || (d > 0 && fits[d - 1] == want)) continue;
    int last = d;
    while (last + 1 < n && fits[last + 1] == want) last++;
    buf_printf(log, first ? "%d" : ", %d", d);
    if (last > d) buf_printf(log, "-%d", last);
    first = 0;
  }
}

// Which devices hold every inference by runs, into fits; returns how many
// would not, *runs whether the others may work by runs (all fit, or the
// ones that do not hold what is sent them early), and *misses the first
// that would not hold it (-1: none, or none was asked).
static int plan_runs(const Partitioner *p, bool *fits, bool *runs, int *misses) {
  int n = p->t->ndevices, over = devices_past_runs(p, fits);
  *misses = over && over < n ? misses_early_sends(p, fits) : -1;
  *runs = !over || (over < n && *misses < 0);
  return over;
}

static void plan_batch_runs(Partitioner *p) {
  Compilation *c = p->c;
  if (p->batches <= 1) return;
  int n = p->t->ndevices;
  bool *fits = ARENA_ARRAY(&c->arena, bool, n), runs;
  int misses, over = plan_runs(p, fits, &runs, &misses);
  c->batch_runs = runs;
  c->runs_on = fits;  // read only with batch_runs
  if (!over) return;  // else runs: whether the others work by runs all the same
  buf_printf(&p->log, "// %s: with all %d in flight at once, the estimate%s of device%s ",
             runs ? "some devices compute one inference at a time" : "every device computes one inference at a time",
             p->batches, over == 1 ? "" : "s", over == 1 ? "" : "s");
  log_devices(&p->log, fits, n, false);
  buf_printf(&p->log, " would pass the capacity planned");
  if (runs) {
    buf_printf(&p->log, "; by runs on device%s ", n - over == 1 ? "" : "s");
    log_devices(&p->log, fits, n, true);
  } else if (misses >= 0) {
    buf_printf(&p->log, ", and device %d would not hold, one inference at a time, what the others' runs send it "
                        "as soon as it is made", misses);
  }
  buf_printf(&p->log, "\n");
}

// ---- the same estimate, kept as a pipeline stage grows ---------------------------------------
//
// A stage takes ops one at a time, and the cut asks after each whether its
// device still fits: device_peak there made deep3k.tg (3,000 layers) spend
// 45 s in this pass, each question a sweep over the whole graph, asked for
// every op of every cut the search for a limit tries.  StageSram keeps
// device_peak's figure for one device as ops join it: each tensor's share
// (a span of ops with its bytes times the inferences it counts for, or
// bytes always held) is what device_peak would give it, refreshed when an
// op that names it joins; the spans are range additions to a segment tree
// over the op indices, whose root holds the largest sum.  A stage starts
// from what no cut moves on its device (Fixed: what the model placed there)
// and ends by taking its shares back out, so a cut costs its ops, not its
// stages times the graph (a review's 24,000 ops in 113 stages on a 16x16
// mesh, --batches=4: 50.7 s when each stage swept the graph, 10.4 s).
// Only the fit is asked (at most the capacity, or not), so a share is
// capped one past the capacity: a sum with a capped share is over it
// either way, and with none, exact.  Where even capped shares could pass
// 64 bits between them (34,500 params of 256 TiB), every question asks
// device_peak, which saturates.

// A tensor's share of one device's estimate: held always (span.from < 0)
// or over the ops in span; 0 bytes: none.
typedef struct SramShare {
  Span span;
  int64_t bytes;
} SramShare;

// What the model (or an earlier step) placed, which no cut moves: by
// device, the ops whose results and the tensors that live there (rows of
// a CSR array), and those placed @ each apart (on every device of their
// group).
typedef struct Fixed {
  int *op_at, *ops, *tensor_at, *tensors;  // device d's: [op_at[d], op_at[d + 1]) of ops, likewise tensors
  IntList each_ops, each_tensors;
} Fixed;

typedef struct StageSram {
  const Partitioner *p;
  const ReaderCounts *readers;  // the graph's (it does not change while stages are cut)
  const int *unvisited;  // hopeful: by tensor, its free readers the cut has not come to yet (else NULL)
  Fixed fixed;           // made at the first stage, when every free op is unplaced
  bool fixed_made;
  bool sweep;            // the shares' sums could pass 64 bits: every question asks device_peak
  int d, nops;
  int64_t cap;           // a share's most: one past the capacity
  int64_t always;        // the shares held always
  int64_t scratch;       // the largest scratch of an op on d
  Span *here;            // by tensor: its first and last reader on d ({-1, -1}: none)
  int *nhere;            // by tensor: its readers on d
  SramShare *share;      // by tensor: as added
  bool *touched;         // by tensor: in `dirty`
  IntList dirty;         // the tensors this stage touched, to put back to nothing (stage_sram_clear)
  int64_t *top, *add;    // the segment tree, by node (root 1): largest sum below, and what was added to all below
} StageSram;

// Adds v to the sum of every op index in [l, r] under node k, which covers [lo, hi].
static void tree_add(StageSram *s, int k, int lo, int hi, int l, int r, int64_t v) {
  if (r < lo || hi < l) return;
  if (l <= lo && hi <= r) {
    s->top[k] += v, s->add[k] += v;
    return;
  }
  int mid = lo + (hi - lo) / 2;
  tree_add(s, 2 * k, lo, mid, l, r, v);
  tree_add(s, 2 * k + 1, mid + 1, hi, l, r, v);
  s->top[k] = MAX(s->top[2 * k], s->top[2 * k + 1]) + s->add[k];
}

static void share_apply(StageSram *s, SramShare sh, int sign) {
  if (!sh.bytes) return;
  if (sh.span.from < 0) s->always += sign * sh.bytes;
  else tree_add(s, 1, 0, s->nops - 1, sh.span.from, sh.span.to, sign * sh.bytes);
}

// Tensor t's share as device_peak gives it, from what is placed now; or,
// hopeful (s->unvisited), as if every free reader the cut has not come to
// yet joined the stage.
static SramShare share_now(const StageSram *s, const Tensor *t) {
  const Partitioner *p = s->p;
  bool home = placed_on(&t->place, s->d);
  Span on_d = s->here[t->id];
  if (!home && on_d.from < 0) return (SramShare){{-1, -1}, 0};
  int64_t bytes = MIN(part_tensor_bytes(p, t), p->sram + 1);
  int64_t in_flight = MIN(p->batches, PARTITION_LIVE_BATCHES);
  if (home && (t->kind != TENSOR_VALUE || t->is_output))
    return (SramShare){{-1, -1}, MIN(t->kind == TENSOR_PARAM ? bytes : mul_saturated(bytes, p->batches), s->cap)};
  Span span = on_d;
  if (home) span = (Span){t->def->id, MAX(s->readers->last[t->id], t->def->id)};
  int readers_here = s->nhere[t->id] + (s->unvisited ? s->unvisited[t->id] : 0);
  bool crosses = !home || readers_here < s->readers->ops[t->id];
  return (SramShare){span, MIN(mul_saturated(bytes, crosses ? p->batches : in_flight), s->cap)};
}

static void touch(StageSram *s, const Tensor *t) {
  if (s->touched[t->id]) return;
  s->touched[t->id] = true;
  VEC_PUSH(&s->p->c->arena, &s->dirty, t->id);
}

static void share_refresh(StageSram *s, const Tensor *t) {
  touch(s, t);
  SramShare now = share_now(s, t), *was = &s->share[t->id];
  if (now.bytes == was->bytes && now.span.from == was->span.from && now.span.to == was->span.to) return;
  share_apply(s, *was, -1);
  share_apply(s, now, +1);
  *was = now;
}

// Whether op names its a-th operand before it too.
static bool named_before(const Op *op, int a) {
  for (int b = 0; b < a; b++)
    if (op->args[b] == op->args[a]) return true;
  return false;
}

// op, placed on s->d, reads every tensor it names there.
static void note_reader(StageSram *s, const Op *op) {
  for (int a = 0; a < op->nargs; a++) {
    if (named_before(op, a)) continue;
    touch(s, op->args[a]);
    Span *h = &s->here[op->args[a]->id];
    h->from = h->from < 0 ? op->id : MIN(h->from, op->id);
    h->to = MAX(h->to, op->id);
    s->nhere[op->args[a]->id]++;
  }
}

// Into rows by device: each of n items (item i's placement place_of(g, i))
// placed on one device; those placed @ each into *each.
static void rows_by_device(const Partitioner *p, int n, const Placement *(*place_of)(const Graph *g, int i), int **at,
                           int **row, IntList *each) {
  int nd = p->t->ndevices;
  *at = xcalloc((size_t)nd + 2, sizeof(int));
  for (int i = 0; i < n; i++) {
    const Placement *pl = place_of(p->g, i);
    if (pl->kind == PLACE_DEVICE && pl->index >= 0 && pl->index < nd) (*at)[pl->index + 2]++;
    else if (pl->kind == PLACE_EACH) VEC_PUSH(&p->c->arena, each, i);
  }
  for (int d = 0; d < nd; d++) (*at)[d + 2] += (*at)[d + 1];
  *row = xmalloc(sizeof(int) * ((size_t)(*at)[nd + 1] + 1));
  for (int i = 0; i < n; i++) {
    const Placement *pl = place_of(p->g, i);
    if (pl->kind == PLACE_DEVICE && pl->index >= 0 && pl->index < nd) (*row)[(*at)[pl->index + 1]++] = i;
  }
}

static const Placement *op_place(const Graph *g, int i) { return &g->ops.data[i]->result->place; }
static const Placement *tensor_place(const Graph *g, int i) { return &g->tensors.data[i]->place; }

// A fixed op of the stage's device: what it reads, and its scratch.
static void start_with_op(StageSram *s, const Op *op) {
  note_reader(s, op);
  s->scratch = MAX(s->scratch, part_scratch_bytes(s->p, op));
}

// Device d's fixed ops, then its fixed tensors and those the ops read.
static void start_with_fixed(StageSram *s, int d) {
  const Graph *g = s->p->g;
  const Fixed *f = &s->fixed;
  for (int i = f->op_at[d]; i < f->op_at[d + 1]; i++) start_with_op(s, g->ops.data[f->ops[i]]);
  for (int i = 0; i < f->each_ops.len; i++)
    if (placed_on(op_place(g, f->each_ops.data[i]), d)) start_with_op(s, g->ops.data[f->each_ops.data[i]]);
  for (int i = f->tensor_at[d]; i < f->tensor_at[d + 1]; i++) touch(s, g->tensors.data[f->tensors[i]]);
  for (int i = 0; i < f->each_tensors.len; i++)
    if (placed_on(tensor_place(g, f->each_tensors.data[i]), d)) touch(s, g->tensors.data[f->each_tensors.data[i]]);
  for (int i = 0; i < s->dirty.len; i++) share_refresh(s, g->tensors.data[s->dirty.data[i]]);
}

// For the stages of a pipeline's cuts: its memory, made once; hopeful
// with `unvisited` (share_now).
static StageSram stage_sram_new(const Partitioner *p, const int *unvisited) {
  const Graph *g = p->g;
  int nt = g->tensors.len, nops = MAX(1, g->ops.len), nodes = 4 * nops;
  StageSram s = {.p = p, .readers = reader_counts(p), .unvisited = unvisited, .nops = nops, .cap = p->capacity + 1,
                 .here = xmalloc(sizeof(Span) * ((size_t)nt + 1)), .nhere = xcalloc((size_t)nt + 1, sizeof(int)),
                 .share = xmalloc(sizeof(SramShare) * ((size_t)nt + 1)), .touched = xcalloc((size_t)nt + 1, sizeof(bool)),
                 .top = xcalloc((size_t)nodes, sizeof(int64_t)), .add = xcalloc((size_t)nodes, sizeof(int64_t))};
  for (int i = 0; i < nt; i++) s.here[i] = (Span){-1, -1}, s.share[i] = (SramShare){{-1, -1}, 0};
  s.sweep = s.cap > INT64_MAX / (2 * (int64_t)nt + 3);  // each sum: at most nt shares and the scratch
  return s;
}

// Device d's estimate as placed now (device_peak's figure, shares capped),
// the stage's ops all unplaced (cut_stages): what is fixed there.
static void stage_sram_start(StageSram *s, int d) {
  s->d = d;
  s->scratch = 0;
  if (s->sweep) return;
  if (!s->fixed_made) {
    const Graph *g = s->p->g;
    rows_by_device(s->p, g->ops.len, op_place, &s->fixed.op_at, &s->fixed.ops, &s->fixed.each_ops);
    rows_by_device(s->p, g->tensors.len, tensor_place, &s->fixed.tensor_at,
                   &s->fixed.tensors, &s->fixed.each_tensors);
    s->fixed_made = true;
  }
  start_with_fixed(s, d);
}

// op has just been placed on s->d (with the params and inputs it takes
// along): its result and every tensor it names are looked at again.
static void stage_sram_join(StageSram *s, const Op *op) {
  if (s->sweep) return;
  note_reader(s, op);
  share_refresh(s, op->result);
  for (int a = 0; a < op->nargs; a++) share_refresh(s, op->args[a]);
  s->scratch = MAX(s->scratch, part_scratch_bytes(s->p, op));
}

static bool stage_sram_fits(const StageSram *s) {
  const Tensor *largest;
  if (s->sweep) return device_peak(s->p, s->d, &largest) <= s->p->capacity;
  return s->always + MAX(0, s->top[1]) + MIN(s->scratch, s->cap) <= s->p->capacity;
}

// Every share the stage added taken back out: the sums are exact, so the
// tree is all zeros again.
static void stage_sram_clear(StageSram *s) {
  for (int i = 0; i < s->dirty.len; i++) {
    int t = s->dirty.data[i];
    share_apply(s, s->share[t], -1);
    s->share[t] = (SramShare){{-1, -1}, 0};
    s->here[t] = (Span){-1, -1};
    s->nhere[t] = 0;
    s->touched[t] = false;
  }
  s->dirty.len = 0;
  if (s->always || s->top[1] || s->add[1]) die("partition: a stage's SRAM sums did not come back to zero");
}

static void stage_sram_free(StageSram *s) {
  free(s->here), free(s->nhere), free(s->share), free(s->touched), free(s->top), free(s->add);
  free(s->fixed.op_at), free(s->fixed.ops), free(s->fixed.tensor_at), free(s->fixed.tensors);
  *s = (StageSram){0};
}

// The first device whose estimate exceeds `limit` bytes, or -1; *peak and
// *largest say why.
static int overfull_device(const Partitioner *p, int64_t limit, int64_t *peak, const Tensor **largest) {
  for (int d = 0; d < p->t->ndevices; d++) {
    *peak = device_peak(p, d, largest);
    if (*peak > limit) return d;
  }
  return -1;
}

// ---- step 4: pipeline stages -------------------------------------------------------------

typedef struct Pipeline {
  int nfree;
  Op **ops;          // the ops whose result the model left unplaced, in order
  Op **first_use;    // by tensor id: its first reader other than a copy
  StageSram sram;    // the cut's SRAM estimate for the stage being made, as it stands
  StageSram hope;    // the same, hopeful: values the ops to come read counted as staying
  bool hopeful;      // hope differs: a crossing value counts for more inferences than one that stays
  int *unvisited;    // by tensor id: its free readers the cut has not come to yet
  int *path;         // the devices stages take, in order (grown as needed)
  int npath;
  bool *used;
} Pipeline;

// The device after the path's last: the nearest unused one, then the
// lowest id; -1 when every reachable device is used.
static int next_on_path(const Partitioner *p, Pipeline *pl) {
  int *dist = hops_from(p->t, pl->path[pl->npath - 1]), best = -1;
  for (int d = 0; d < p->t->ndevices; d++)
    if (!pl->used[d] && dist[d] > 0 && ir_device_in_service(p->t, d) && (best < 0 || dist[d] < dist[best])) best = d;
  free(dist);
  return best;
}

// Whether x, an operand of op, goes where op goes: a param or input the
// .tg left unplaced, which op reads first.  One the .tg places stays there
// (mlp.tg's `param w2 ... @ device(0)` moved with its matmul's stage under
// --batches=2, and tsp-emu refused the manifest: the model places it on 0).
static bool follows(const Pipeline *pl, const Op *op, const Tensor *x) {
  return x->kind != TENSOR_VALUE && !x->place_written && pl->first_use[x->id] == op;
}

// Places op on device d with the unplaced params and inputs it reads first.
static void assign(Pipeline *pl, Op *op, int d) {
  Placement here = {.kind = PLACE_DEVICE, .index = d};
  op->result->place = here;
  for (int a = 0; a < op->nargs; a++)
    if (follows(pl, op, op->args[a])) op->args[a]->place = here;
}

static void unassign(Pipeline *pl, Op *op) {
  op->result->place = (Placement){.kind = PLACE_AUTO};
  for (int a = 0; a < op->nargs; a++)
    if (follows(pl, op, op->args[a])) op->args[a]->place = (Placement){.kind = PLACE_AUTO};
}

// Stage k's device, extending the path; -1 past the last device.
static int stage_device(const Partitioner *p, Pipeline *pl, int k) {
  while (pl->npath <= k) {
    int d = next_on_path(p, pl);
    if (d < 0) return -1;
    pl->used[d] = true;
    pl->path[pl->npath++] = d;
  }
  return pl->path[k];
}

// The cut comes to op (visit, +1) or goes back before it (-1): the
// readers of the tensors it names still to come.
static void visit(Pipeline *pl, const Op *op, int sign) {
  for (int a = 0; a < op->nargs; a++)
    if (!named_before(op, a)) pl->unvisited[op->args[a]->id] -= sign;
}

// Every free op unplaced and unvisited, before a cut.
static void cut_reset(const Partitioner *p, Pipeline *pl) {
  memset(pl->unvisited, 0, sizeof(int) * (size_t)p->g->tensors.len);
  for (int i = 0; i < pl->nfree; i++) unassign(pl, pl->ops[i]), visit(pl, pl->ops[i], -1);
}

// Both estimates of the stage: started on device d, op joined, cleared.
static void stage_start(Pipeline *pl, int d) {
  stage_sram_start(&pl->sram, d);
  if (pl->hopeful) stage_sram_start(&pl->hope, d);
}

static void stage_join(Pipeline *pl, const Op *op) {
  stage_sram_join(&pl->sram, op);
  if (pl->hopeful) stage_sram_join(&pl->hope, op);
}

static void stage_clear(Pipeline *pl) {
  stage_sram_clear(&pl->sram);
  if (pl->hopeful) stage_sram_clear(&pl->hope);
}

static bool stage_fits_hopefully(const Pipeline *pl) { return stage_sram_fits(pl->hopeful ? &pl->hope : &pl->sram); }

// A cut that fails at op i: the stages before stay as cut, and op i on
// device d where one was tried for it alone (else d < 0: it and the ops
// after it are left to step 3).  partition_once falls back to what the
// .tg or the checker placed, which keeps these (code generation then
// judges exactly), and places the rest by step 3.
static int cut_fails(Pipeline *pl, int i, int d, const Op **stuck) {
  stage_clear(pl);
  if (d >= 0) assign(pl, pl->ops[i], d);
  *stuck = pl->ops[i];
  return -1;
}

// Cuts the free ops into stages greedily.  An op joins the current stage
// while the stage's estimated cycles stay within `limit` and its device's
// SRAM within capacity, the latter asked hopefully: a value whose readers
// are still to come is counted as if they joined it too.  Asked as it
// stands, a value made in the stage counts as crossing to another device,
// once per inference in flight, until its last reader joins, and BERT's
// [1024, 4096] f16 intermediate (8.75 MiB, four in flight) ended every
// stage early, so seed 002 fig 18's pipelines were refused (bench/fig18.sh).
// A stage closes after its last op where the estimate as it stands fits
// (the ops after it go back to the next stage); the cycle limit closes it
// only there; with no such op it closes empty (the model's own tensors
// there may leave no room), but not twice in a row.  Returns the stages
// used, or -1 when an op fits on no device alone or the devices run out
// (*stuck: the op the stage could not take).
static int cut_stages(const Partitioner *p, Pipeline *pl, int64_t limit, const Op **stuck) {
  cut_reset(p, pl);
  int k = 0, d = stage_device(p, pl, 0), first = 0, fits_to = -1;  // the stage's ops: [first, i); it may close after fits_to
  int empty_at = -1;  // the first op of the last stage that closed empty
  int64_t cycles = 0;
  stage_start(pl, d);
  for (int i = 0; i < pl->nfree;) {
    Op *op = pl->ops[i];
    int64_t c = compute_estimate_cycles(op, p->vb);
    if (i == first || cycles + c <= limit || fits_to < first) {
      assign(pl, op, d), visit(pl, op, +1);
      stage_join(pl, op);
      if (stage_fits_hopefully(pl)) {
        if (stage_sram_fits(&pl->sram)) fits_to = i;
        cycles += c, i++;
        continue;
      }
      unassign(pl, op), visit(pl, op, -1);
    }
    bool empty = fits_to < first;  // nothing fits beside what the model put here: the ops try the next device, once
    if (empty) fits_to = first - 1;
    for (int j = fits_to + 1; j < i; j++) unassign(pl, pl->ops[j]), visit(pl, pl->ops[j], -1);
    if (empty && first == empty_at) return cut_fails(pl, first, i == first ? d : -1, stuck);
    if (empty) empty_at = first;
    stage_clear(pl);
    int tried = d;
    d = stage_device(p, pl, ++k);
    if (d < 0) return cut_fails(pl, fits_to + 1, empty && i == first ? tried : -1, stuck);
    stage_start(pl, d);
    first = i = fits_to + 1, cycles = 0;
  }
  stage_clear(pl);
  return k + 1;
}

static void log_stages(Partitioner *p, const Pipeline *pl, int stages, const char *why) {
  buf_printf(&p->log, "// pipeline: %d ops over %d stages (%s), balanced by estimated cycles:\n", pl->nfree, stages, why);
  for (int k = 0, i = 0; k < stages; k++) {
    int d = pl->path[k], first = i;
    int64_t cycles = 0;
    for (; i < pl->nfree && pl->ops[i]->result->place.index == d; i++) cycles += compute_estimate_cycles(pl->ops[i], p->vb);
    const Tensor *largest;
    char bytes[32];
    str_human_bytes(bytes, sizeof bytes, (double)device_peak(p, d, &largest));
    if (i == first)  // the first op did not fit beside what the device already holds
      buf_printf(&p->log, "//   stage %d on device %d: no ops (%s of SRAM held already)\n", k, d, bytes);
    else
      buf_printf(&p->log, "//   stage %d on device %d: %s .. %s (%d ops), %lld cycles, %s of SRAM\n", k, d,
                 pl->ops[first]->result->name, pl->ops[i - 1]->result->name, i - first, (long long)cycles, bytes);
  }
}

// Stages a greedy cut makes when no stage may exceed `limit` cycles (an op
// longer than the limit gets a stage of its own), by cycles alone.
static int stages_by_cycles(const int64_t *cost, int n, int64_t limit) {
  int stages = 1;
  int64_t cycles = 0;
  for (int i = 0; i < n; i++) {
    if (cycles && cycles + cost[i] > limit) stages++, cycles = 0;
    cycles += cost[i];
  }
  return stages;
}

// The least limit in [lo, hi] at which the greedy cut needs at most
// `stages` stages (by cycles alone; hi always does).
static int64_t least_limit(const int64_t *cost, int n, int stages, int64_t lo, int64_t hi) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (stages_by_cycles(cost, n, mid) <= stages) hi = mid;
    else lo = mid + 1;
  }
  return hi;
}

// The least limit at which the SRAM-aware cut needs at most `stages`.
static int64_t least_fitting_limit(const Partitioner *p, Pipeline *pl, int stages, int64_t lo, int64_t hi,
                                   const Op **stuck) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int n = cut_stages(p, pl, mid, stuck);
    if (n > 0 && n <= stages) hi = mid;
    else lo = mid + 1;
  }
  return hi;
}

// The transfers the current cut adds, each tensor a stage reads from
// another stage's device (once a stage): *sum, the cycles they add to one
// inference (they lie on its path; sends that could overlap are summed,
// an overstatement), and *longest, the longest one an inference repeats
// (a value's or an input's: a link carrying it each inference bounds how
// often inferences can follow each other, as the largest stage does; a
// param moves once for them all).  seen: scratch by tensor id.
static void cut_transfers(const Partitioner *p, const Pipeline *pl, int *seen, int64_t *sum, int64_t *longest) {
  *sum = *longest = 0;
  for (int i = 0; i < p->g->tensors.len; i++) seen[i] = -1;
  for (int i = 0; i < pl->nfree; i++) {
    const Op *op = pl->ops[i];
    int d = op->result->place.index;
    for (int a = 0; a < op->nargs; a++) {
      const Tensor *x = op->args[a];
      if (x->place.kind != PLACE_DEVICE || x->place.index == d || seen[x->id] == d) continue;
      seen[x->id] = d;
      int64_t c = part_send_cycles(p, x->place.index, ir_tensor_bytes(x), 1);
      *sum += c;
      if (x->kind != TENSOR_PARAM) *longest = MAX(*longest, c);
    }
  }
}

// N inferences through the current cut whose largest stage is `limit`:
// the first one's stages and transfers, then N - 1 more, one each largest
// stage or longest transfer.
static int64_t pipelined_cycles(const Partitioner *p, const Pipeline *pl, int *seen, int64_t total, int64_t limit) {
  int64_t sum, longest;
  cut_transfers(p, pl, seen, &sum, &longest);
  return total + sum + (int64_t)(p->batches - 1) * MAX(limit, longest);
}

// The cut.  One inference: the fewest stages that fit (its latency is the
// sum of the stages either way, plus the transfers between them), then the
// smallest largest stage that many allow.  N in flight: the estimated
// makespan (pipelined_cycles: the stages, the activations carried between
// them, and N - 1 times the largest of either) decides how many stages
// from that fewest up, more only when they gain PARTITION_MIN_GAIN_PERCENT.
// False (with *stuck) when no cut fits.
static bool pipeline(Partitioner *p, Pipeline *pl, const Op **stuck) {
  int64_t total = 0, longest = 0, *cost = xmalloc(sizeof(int64_t) * (size_t)(pl->nfree + 1));
  for (int i = 0; i < pl->nfree; i++) {
    cost[i] = compute_estimate_cycles(pl->ops[i], p->vb);
    total += cost[i], longest = MAX(longest, cost[i]);
  }
  int stages = cut_stages(p, pl, INT64_MAX, stuck);
  if (stages < 0) return free(cost), false;
  int64_t limit = least_fitting_limit(p, pl, stages, longest, total, stuck), best = 0;
  int *seen = xmalloc(sizeof(int) * ((size_t)p->g->tensors.len + 1));
  if (p->batches > 1 && cut_stages(p, pl, limit, stuck) > 0) best = pipelined_cycles(p, pl, seen, total, limit);
  for (int s = stages + 1; p->batches > 1 && s <= MIN(p->t->ndevices, pl->nfree); s++) {
    int64_t l = least_limit(cost, pl->nfree, s, longest, total);
    int n = cut_stages(p, pl, l, stuck);
    int64_t cycles = n > 0 && n <= s ? pipelined_cycles(p, pl, seen, total, l) : INT64_MAX;
    if (n > 0 && n <= s && cycles * 100 < best * (100 - PARTITION_MIN_GAIN_PERCENT)) best = cycles, limit = l;
    if (l == longest) break;  // no cut goes below the longest op
  }
  free(seen);
  free(cost);
  stages = cut_stages(p, pl, limit, stuck);
  if (stages < 0) return false;
  char why[96];
  if (p->batches > 1)
    snprintf(why, sizeof why, "%d inferences in flight: an estimated %lld cycles for them all", p->batches,
             (long long)best);
  else
    snprintf(why, sizeof why, "the fewest whose SRAM fits");
  log_stages(p, pl, stages, why);
  return true;
}

// Whether op reads a copy the .tg placed (`c = copy(h) @ device(1)`): it
// runs where the model moved its operand, and no pipeline stage moves it
// back (with --batches=2 a matmul of such a copy was staged on the copy's
// source, so h crossed twice and the first inference took 24,271 cycles
// against 10,533 alone; found by a sweep).
static bool reads_placed_copy(const Op *op) {
  for (int a = 0; a < op->nargs; a++) {
    const Tensor *t = op->args[a];
    if (t->place_written && t->def && t->def->kind == OP_COPY) return true;
  }
  return false;
}

// The device the first stage takes: where the first free op's placed
// operand lives, else the one device(0) names.
static int pipeline_start(const Partitioner *p, Pipeline *pl) {
  for (int i = 0; i < pl->nfree; i++)
    for (int a = 0; a < pl->ops[i]->nargs; a++)
      if (pl->ops[i]->args[a]->place.kind == PLACE_DEVICE) return pl->ops[i]->args[a]->place.index;
  return part_first_device(p->t);
}

// ---- undoing speed splits ------------------------------------------------------------------
//
// Each speed split is judged alone, as if its devices held nothing else,
// so several can pile their shards onto the same devices and leave a
// pipeline none to cut the rest of the model over: 16 layers of bf16[500,
// 500] on eight 2 MiB TSPs were each split 1 x 4 onto devices 0-3 and
// refused, though two layers a device fit.  Splits and stages are planned
// within the capacity (PARTITION_SRAM_HEADROOM_PERCENT below the SRAM: the
// headroom is for what the estimate does not see), and a split that is
// optional may not take the headroom: when a partition with speed splits
// puts a device past the capacity, the graph goes back to what it was
// before step 2 and is partitioned again with only the splits the model
// needs.  That one is kept unless it is past the capacity too while the
// first fitted the SRAM: then the first is made again.  (Eight residual
// layers on twelve 1.5 MiB TSPs, split 1 x 4 for an estimated 1.7 %, fit
// the estimate at 1.5 MiB on device 0, and code generation found no room
// for a matmul's scratch there.)  With several inferences in flight,
// splits that fit are weighed as well (weigh_speed_splits).

// The graph's lists and every op and tensor in them, by value.  The
// splits rewrite ops and tensors in place and replace the lists
// (part_splice); what they add lives in the arena and is left there.
typedef struct GraphSnapshot {
  Tensor **tensors, *tensor_values, **outputs;
  Op **ops, *op_values;
  int ntensors, nops, noutputs;
} GraphSnapshot;

static void *copy_of(const void *src, size_t bytes) {
  void *dst = xmalloc(bytes + 1);
  if (bytes) memcpy(dst, src, bytes);
  return dst;
}

static GraphSnapshot graph_snapshot(const Graph *g) {
  GraphSnapshot s = {.ntensors = g->tensors.len, .nops = g->ops.len, .noutputs = g->outputs.len};
  s.tensors = copy_of(g->tensors.data, sizeof(Tensor *) * (size_t)s.ntensors);
  s.ops = copy_of(g->ops.data, sizeof(Op *) * (size_t)s.nops);
  s.outputs = copy_of(g->outputs.data, sizeof(Tensor *) * (size_t)s.noutputs);
  s.tensor_values = xmalloc(sizeof(Tensor) * ((size_t)s.ntensors + 1));
  s.op_values = xmalloc(sizeof(Op) * ((size_t)s.nops + 1));
  for (int i = 0; i < s.ntensors; i++) s.tensor_values[i] = *s.tensors[i];
  for (int i = 0; i < s.nops; i++) s.op_values[i] = *s.ops[i];
  return s;
}

// Puts p's graph back as s holds it (the reader counts made again when
// next asked for), and empties the log.
static void graph_restore(Partitioner *p, const GraphSnapshot *s) {
  Graph *g = p->g;
  Arena *a = &p->c->arena;
  g->tensors.len = g->ops.len = g->outputs.len = 0;
  for (int i = 0; i < s->ntensors; i++) {
    *s->tensors[i] = s->tensor_values[i];
    VEC_PUSH(a, &g->tensors, s->tensors[i]);
  }
  for (int i = 0; i < s->nops; i++) {
    *s->ops[i] = s->op_values[i];
    VEC_PUSH(a, &g->ops, s->ops[i]);
  }
  for (int i = 0; i < s->noutputs; i++) VEC_PUSH(a, &g->outputs, s->outputs[i]);
  reader_counts_free(p->readers);
  buf_free(&p->log);
}

// Whether op is one of the model's own (not a piece a split made of one).
static bool model_op(const Partitioner *p, const Op *op) {
  if (!p->model) return true;
  for (int i = 0; i < p->model->nops; i++)
    if (p->model->ops[i] == op) return true;
  return false;
}

static void graph_snapshot_free(GraphSnapshot *s) {
  free(s->tensors), free(s->tensor_values), free(s->outputs), free(s->ops), free(s->op_values);
}

// ---- the pass ----------------------------------------------------------------------------

// Two sizes str_human_bytes wrote into x and y, rewritten in bytes when
// they print alike but differ (a tensor of 220.01 MiB in a 220.0 MiB SRAM:
// both are then near the SRAM's size, far from saturating).
static void two_sizes(char *x, char *y, size_t n, int64_t x_bytes, int64_t y_bytes) {
  if (strcmp(x, y) || x_bytes == y_bytes) return;
  snprintf(x, n, "%lld bytes", (long long)x_bytes);
  snprintf(y, n, "%lld bytes", (long long)y_bytes);
}

// The refusal of a model that fits nowhere: a tensor bigger than a
// device's SRAM by itself, or the device's estimate and its largest tensor
// (and the op whose working space is larger still, when one is: the
// estimate is otherwise unexplained).
static void refuse(Partitioner *p, int d, int64_t peak, const Tensor *largest, const char *why) {
  char need[32], sram[32], big[32], type[IR_TYPE_STR_MAX], work[160] = "";
  int64_t scratch;
  const Op *worker = largest_scratch(p, d, &scratch);
  if (worker && scratch > part_tensor_bytes(p, largest)) {
    char b[32];
    str_human_bytes(b, sizeof b, (double)scratch);
    if (model_op(p, worker))
      snprintf(work, sizeof work, "; %s's %s (line %d) works in %s of scratch", worker->result->name,
               ir_op_info[worker->kind].name, worker->loc.line, b);
    else  // its name is the partitioner's (l.T0.b0@device(0)): say what the model wrote
      snprintf(work, sizeof work, "; a piece of the %s on line %d works in %s of scratch",
               ir_op_info[worker->kind].name, worker->loc.line, b);
  }
  str_human_bytes(need, sizeof need, (double)peak);
  str_human_bytes(sram, sizeof sram, (double)p->t->sram_vectors * p->vb);
  str_human_bytes(big, sizeof big, tensor_bytes_as_double(p, largest));
  ir_format_type(type, sizeof type, largest->dtype, &largest->shape);
  char copy[64] = "";  // a tensor placed elsewhere, fetched to d for an op there
  if (largest->place.kind == PLACE_DEVICE && largest->place.index != d)
    snprintf(copy, sizeof copy, ", a copy of device %d's", largest->place.index);
  const Tensor *named = largest;  // a whole copy the partitioner made ('a@device(0)') by the model's name
  while (named->shard_of && ir_shape_equal(&named->shape, &named->shard_of->shape)) named = named->shard_of;
  if (named != largest && !copy[0] && largest->place.kind == PLACE_DEVICE)
    snprintf(copy, sizeof copy, ", its copy on device %d", largest->place.index);
  if (part_tensor_bytes(p, largest) > p->sram) {
    two_sizes(big, sram, sizeof big, part_tensor_bytes(p, largest), p->sram);
    diag_error(&p->c->diag, largest->loc, "tensor '%s' (%s, %s%s) does not fit in device %d's %s of SRAM%s",
               named->name, type, big, copy, d, sram, why);
  } else {
    two_sizes(need, sram, sizeof need, peak, p->sram);
    diag_error(&p->c->diag, largest->loc,
               "the model does not fit: device %d would hold an estimated %s at its fullest (its largest tensor "
               "'%s', %s, %s%s%s), more than its %s of SRAM%s",
               d, need, named->name, type, big, copy, work, sram, why);
  }
}


// What a partition that fits nowhere refuses (device -1: it fits).
typedef struct Overfull {
  int device;
  int64_t peak;
  const Tensor *largest;
  const Op *stuck;  // where a pipeline cut ran out (NULL: none was tried, or it fit)
  int tight;          // a device whose estimate is past the capacity planned (-1: none)
  int64_t tight_peak;  //   and that estimate
} Overfull;

// o's device past the SRAM and device past the capacity, from one estimate
// of each device.  The headroom is for planning: only an estimate past the
// whole SRAM is refused; code generation's allocator has the last word.
static void judge(const Partitioner *p, Overfull *o) {
  o->device = o->tight = -1;
  for (int d = 0; d < p->t->ndevices && o->device < 0; d++) {  // the first past the SRAM is past the capacity
    const Tensor *largest;
    int64_t peak = device_peak(p, d, &largest);
    if (o->tight < 0 && peak > p->capacity) o->tight = d, o->tight_peak = peak;
    if (peak > p->sram) o->device = d, o->peak = peak, o->largest = largest;
  }
}

// Steps 2 to 5 on p's graph (its stages placed, step 1).
static Overfull partition_once(Partitioner *p) {
  Compilation *c = p->c;
  if (!c->partition_none) partition_split_matmuls(p);
  if (!c->partition_none) partition_split_cholesky(p);
  // Step 3, remembering what was free for step 4.
  Pipeline pl = {.ops = xmalloc(sizeof(Op *) * (size_t)(p->g->ops.len + 1))};
  Tensor **was_free = xmalloc(sizeof(Tensor *) * (size_t)(p->g->tensors.len + 1));
  int nwas_free = 0;
  for (int i = 0; i < p->g->tensors.len; i++)
    if (part_is_free(p->g->tensors.data[i])) was_free[nwas_free++] = p->g->tensors.data[i];
  for (int i = 0; i < p->g->ops.len; i++)
    if (part_movable(p->g->ops.data[i]) && !reads_placed_copy(p->g->ops.data[i])) pl.ops[pl.nfree++] = p->g->ops.data[i];
  place_with_consumers(p);
  Overfull o = {.stuck = NULL};
  o.device = overfull_device(p, p->capacity, &o.peak, &o.largest);
  if ((o.device >= 0 || p->batches > 1) && !c->partition_none && pl.nfree > 1) {
    for (int i = 0; i < nwas_free; i++) was_free[i]->place = (Placement){.kind = PLACE_AUTO};
    pl.first_use = first_uses(p->g);
    pl.unvisited = xcalloc((size_t)p->g->tensors.len + 1, sizeof(int));
    pl.sram = stage_sram_new(p, NULL);
    pl.hopeful = p->batches > PARTITION_LIVE_BATCHES;
    if (pl.hopeful) pl.hope = stage_sram_new(p, pl.unvisited);
    pl.path = xmalloc(sizeof(int) * (size_t)c->topo->ndevices);
    pl.used = xcalloc((size_t)c->topo->ndevices, sizeof(bool));
    pl.path[0] = pipeline_start(p, &pl), pl.used[pl.path[0]] = true, pl.npath = 1;
    if (pipeline(p, &pl, &o.stuck)) {
      place_with_consumers(p);
    } else {  // back to step 3's placement, to refuse it or let code generation judge it exactly
      for (int i = 0; i < nwas_free; i++) was_free[i]->place = (Placement){.kind = PLACE_AUTO};
      place_with_consumers(p);
    }
    free(pl.first_use), free(pl.path), free(pl.used);
    stage_sram_free(&pl.sram), free(pl.unvisited);
    if (pl.hopeful) stage_sram_free(&pl.hope);
  }
  free(pl.ops), free(was_free);
  judge(p, &o);
  return o;
}

// The estimated cycles of the partition as it stands (partition_estimate.c),
// its inferences interleaved by runs on the devices plan_batch_runs will
// allow it on.
static int64_t estimate_now(const Partitioner *p) {
  bool *fits = xmalloc(sizeof(bool) * (size_t)p->t->ndevices), runs = false;
  int misses;
  if (p->batches > 1) plan_runs(p, fits, &runs, &misses);
  int64_t cycles = part_estimated_makespan(p, runs ? fits : NULL);
  free(fits);
  return cycles;
}

// With several inferences in flight, whether the matmul splits made for
// speed pay: each was judged alone, by one inference's cycles, but a
// device holding a piece of a late layer beside an early stage is held
// for most of each inference, and the pipeline's stages wait on it.  The
// partition is made again with only the splits the model needs, and the
// splits are kept only where the estimate of the run without them is at
// least PARTITION_SPEED_SPLIT_GAIN_PERCENT longer than with them; the log
// says which and why.  The partition with them, which fits, is p's.
static Overfull weigh_speed_splits(Partitioner *p, const GraphSnapshot *before) {
  int64_t with_cycles = estimate_now(p);
  graph_restore(p, before);
  p->no_speed_splits = true;
  Overfull o = partition_once(p);
  int64_t without_cycles = o.tight < 0 ? estimate_now(p) : INT64_MAX;
  char why[192];
  int n = snprintf(why, sizeof why, "with %d inferences in flight an estimated %lld cycles with them", p->batches,
                   (long long)with_cycles);
  if (without_cycles < INT64_MAX) snprintf(why + n, sizeof why - (size_t)n, ", %lld without", (long long)without_cycles);
  else snprintf(why + n, sizeof why - (size_t)n, "; without them past the capacity planned");
  bool undo = without_cycles < INT64_MAX && with_cycles * (100 + PARTITION_SPEED_SPLIT_GAIN_PERCENT) > without_cycles * 100;
  if (!undo) {
    graph_restore(p, before);
    p->no_speed_splits = false;
    o = partition_once(p);  // the partition with them again
  }
  Buf log = {0};
  buf_printf(&log, "// speed splits %s: %s\n%s", undo ? "undone" : "kept", why, p->log.data ? p->log.data : "");
  buf_free(&p->log);
  p->log = log;
  return o;
}

static void refuse_overfull(Partitioner *p, const Overfull *o) {
  Compilation *c = p->c;
  const char *why = c->partition_none          ? "; --partition=none splits nothing"
                    : o->largest->place_written ? "; the model places it there"
                                                : "; no split or pipeline the partitioner knows fits it";
  if (o->stuck && !c->partition_none)  // say where the pipeline gave up
    why = arena_printf(&c->arena, "; a pipeline runs out of devices or SRAM at '%s' (line %d)%s", o->stuck->result->name,
                       o->stuck->loc.line,
                       p->batches > 1 ? arena_printf(&c->arena, " with %d inferences in flight", p->batches) : "");
  if (p->no_speed_splits)  // the partition refused is the retry's (pass_partition)
    why = arena_printf(&c->arena, "%s, with the splits made for speed undone", why);
  refuse(p, o->device, o->peak, o->largest, why);
}

bool pass_partition(Compilation *c) {
  ReaderCounts readers = {0};
  Partitioner p = {.c = c, .g = c->graph, .t = c->topo, .vb = c->topo->link.vector_bytes, .readers = &readers};
  p.batches = MAX(c->batches, 1);
  p.sram = (int64_t)c->topo->sram_vectors * p.vb;
  p.capacity = p.sram / 100 * (100 - PARTITION_SRAM_HEADROOM_PERCENT);
  for (int i = 0; i < p.g->tensors.len; i++) place_stage(p.g->tensors.data[i]);
  GraphSnapshot before = c->partition_none ? (GraphSnapshot){0} : graph_snapshot(p.g);
  Overfull o = partition_once(&p);
  if (o.tight >= 0 && p.speed_split) {  // undo the speed splits (see above)
    char need[32], cap[32], sram[32];
    str_human_bytes(need, sizeof need, (double)o.tight_peak);
    str_human_bytes(cap, sizeof cap, (double)p.capacity);
    str_human_bytes(sram, sizeof sram, (double)p.sram);
    two_sizes(need, cap, sizeof need, o.tight_peak, p.capacity);
    bool fitted = o.device < 0;
    graph_restore(&p, &before);
    buf_printf(&p.log, "// speed splits undone: with them device %d would hold an estimated %s, more than the %s "
                       "planned of its %s of SRAM; partitioned again with only the splits the model needs\n",
               o.tight, need, cap, sram);
    p.no_speed_splits = true;
    o = partition_once(&p);
    if (o.tight >= 0 && fitted) {  // no better without them: back to the partition with them
      graph_restore(&p, &before);
      p.no_speed_splits = false;
      o = partition_once(&p);
    }
  } else if (o.device < 0 && p.speed_split && p.batches > 1) {
    o = weigh_speed_splits(&p, &before);
  }
  p.model = c->partition_none ? NULL : &before;
  if (o.device >= 0) refuse_overfull(&p, &o);
  else plan_batch_runs(&p);
  graph_snapshot_free(&before);
  reader_counts_free(&readers);
  c->partition_log = p.log.data ? arena_strdup(&c->arena, p.log.data) : "";
  buf_free(&p.log);
  return o.device < 0;
}

void partition_dump(const Compilation *c, FILE *out) {
  fputs(c->partition_log ? c->partition_log : "", out);
  ir_graph_dump(c->graph, out);
}
