// emu.c: the discrete-event emulator: clocks, the event queue, the units of
// every device and what their instructions do.  Part of runtime/; link.c
// moves vectors between devices, window.c runs the events in windows on
// threads (one queue a partition of the devices), check.c judges the run
// when it ends.
//
// Nothing here trusts the compiler.  Every instruction is timed by the
// rules of docs/isa.md on the device's own drifting clock, every vector is
// real bytes, and every read of SRAM is checked against the write that
// produced it (seed 002 s3 for HAC, SAC, DESKEW, RUNTIME_DESKEW; s4.4 for
// the absence of flow control that makes every check necessary).  The
// compute units stream their elements as events: the vector unit one
// destination vector a cycle, the matrix unit (seed 002 s5.2, s5.5) its
// weight installs in the background and its rows q a cycle, with every
// row's product formed by OpenBLAS a chunk of rows at a time, and the
// switch unit's TRANS and SXMOV.
#include "emu_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const emu_violation_names[VIOL_COUNT] = {
#define X(e, name) name,
    EMU_VIOLATIONS(X)
#undef X
};

// ---- clocks ----------------------------------------------------------------------------

Tick emu_global_at(const EDev *d, int64_t local) { return d->start + local * d->period; }

int64_t emu_local_at_or_after(const EDev *d, Tick g) {
  if (g <= d->start) return 0;
  return (g - d->start + d->period - 1) / d->period;
}

static Tick epoch_ticks(const Emu *e) { return (Tick)e->topo->epoch_cycles * EMU_TICKS_PER_CYCLE; }

// The HAC: global time modulo the epoch (aligned on every device).
static int64_t hac_at(const Emu *e, Tick g) {
  return (g / EMU_TICKS_PER_CYCLE) % e->topo->epoch_cycles;
}

// The SAC: local cycles modulo the epoch since it was last set.
static int64_t sac_at(const Emu *e, const EDev *d, int64_t local) {
  int64_t E = e->topo->epoch_cycles;
  return ((d->sac_value + local - d->sac_local) % E + E) % E;
}

// splitmix64: small, fast, and the same on every machine.
uint64_t emu_rng(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double rng_unit(uint64_t *state) { return (double)(emu_rng(state) >> 11) * 0x1.0p-53; }

// A stream of random numbers for (what, index), from the run's seed.
uint64_t emu_rng_for(uint64_t seed, uint64_t what, uint64_t index) {
  uint64_t s = seed ^ (what * 0xd1b54a32d192ed03ull) ^ (index * 0x8cb92ba72f3d8dd7ull);
  emu_rng(&s);
  return s;
}

// ---- the event queue -------------------------------------------------------------------
//
// Every vector-hop costs two events (its departure and its take), almost
// all a few dozen cycles ahead, so the queue is the emulator's inner loop.
// Near events go into a timing wheel, one sorted bucket a cycle: push and
// pop are O(1) in practice.  Events EMU_WHEEL_CYCLES or more ahead wait in a
// 4-ary heap and move into the wheel as the cursor comes within reach.

#define HEAP_ARITY 4

static const uint8_t event_class[EV_TYPE_COUNT] = {
    [EV_WAKE] = 0, [EV_UNIT] = 1, [EV_POLL] = 1, [EV_RECV] = 2,
    [EV_SEND] = 3, [EV_VXM] = 3, [EV_MXM] = 3, [EV_INSTALL] = 3, [EV_SXM] = 3, [EV_LAND] = 4};

static bool before(const Event *x, const Event *y) {
  return x->t < y->t || (x->t == y->t && x->order < y->order);
}

static int64_t cycle_of(Tick t) { return t / EMU_TICKS_PER_CYCLE; }

static void heap_push(Emu *e, Event ev) {
  if (e->nheap == e->heap_cap) {
    e->heap_cap = e->heap_cap ? 2 * e->heap_cap : 1024;
    e->heap = xrealloc(e->heap, e->heap_cap * sizeof *e->heap);
  }
  size_t i = e->nheap++;
  while (i > 0 && before(&ev, &e->heap[(i - 1) / HEAP_ARITY])) {
    e->heap[i] = e->heap[(i - 1) / HEAP_ARITY];
    i = (i - 1) / HEAP_ARITY;
  }
  e->heap[i] = ev;
}

static Event heap_pop(Emu *e) {
  Event top = e->heap[0], last = e->heap[--e->nheap];
  size_t i = 0;
  for (;;) {
    size_t first = HEAP_ARITY * i + 1, best = first;
    if (first >= e->nheap) break;
    for (size_t c = first + 1; c < first + HEAP_ARITY && c < e->nheap; c++)
      if (before(&e->heap[c], &e->heap[best])) best = c;
    if (!before(&e->heap[best], &last)) break;
    e->heap[i] = e->heap[best];
    i = best;
  }
  if (e->nheap) e->heap[i] = last;
  return top;
}

// Inserts into the cycle's bucket, keeping it sorted (events mostly arrive
// in order, so the scan from the end is short).
static void wheel_put(Emu *e, Event ev) {
  Bucket *b = &e->wheel[cycle_of(ev.t) & (EMU_WHEEL_CYCLES - 1)];
  if (b->head == b->len) b->head = b->len = 0;
  if (b->len == b->cap) {
    b->cap = b->cap ? 2 * b->cap : 8;
    b->e = xrealloc(b->e, b->cap * sizeof *b->e);
  }
  uint32_t i = b->len++;
  while (i > b->head && before(&ev, &b->e[i - 1])) {
    b->e[i] = b->e[i - 1];
    i--;
  }
  b->e[i] = ev;
  e->in_wheel++;
}

// The order key of device dev's next event of this type.
static uint64_t next_order(Emu *e, EventType type, int dev) {
  EDev *d = &e->devs[dev];
  if (d->seq >= EMU_MAX_EVENTS) die("tsp-emu: device %d reached EMU_MAX_EVENTS (2^37) events", dev);
  return (uint64_t)event_class[type] << EMU_EVENT_CLASS_SHIFT | (uint64_t)dev << EMU_EVENT_DEV_SHIFT |
         d->seq++ << EMU_EVENT_TYPE_BITS | (uint64_t)type;
}

static EventType event_type(const Event *ev) { return (EventType)(ev->order & ((1u << EMU_EVENT_TYPE_BITS) - 1)); }

// The device an event belongs to.
int emu_event_dev(const Event *ev) {
  switch (event_type(ev)) {
  case EV_WAKE: case EV_UNIT: case EV_POLL: return ev->at.dev;
  case EV_LAND: return ev->write->dev;
  default: return ev->stream->dev;
  }
}

static void queue_put(Emu *e, Event ev) {
  if (cycle_of(ev.t) < e->cursor + EMU_WHEEL_CYCLES)
    wheel_put(e, ev);
  else
    heap_push(e, ev);
}

// A stream's elements share the order key its first element got: the key
// of element k is (its tick, the stream's order), whenever and however it
// is run (a burst runs several in one event: link.c).
void emu_push(Emu *e, Tick t, EventType type, int dev, int unit, Stream *s) {
  Event ev = {.t = t};
  if (s) {
    if (!s->order) {
      s->order = next_order(e, type, s->dev);
      burst_track(e, s);
    }
    ev.order = s->order;
    ev.stream = s;
  } else {
    ev.order = next_order(e, type, dev);
    ev.at.dev = dev, ev.at.unit = unit;
    if (type == EV_WAKE) burst_wake_queued(&e->devs[dev], t);
  }
  if (type == EV_POLL) e->polls_queued++;
  queue_put(e, ev);
}

void emu_push_write(Emu *e, Tick t, PendingWrite *w) {
  burst_land_queued(&e->devs[w->dev], w->addr, w->nvec);
  queue_put(e, (Event){.t = t, .order = next_order(e, EV_LAND, w->dev), .write = w});
}

size_t emu_queued(const Emu *e) { return e->in_wheel + e->nheap; }


static void write_free(Emu *e, PendingWrite *w);

// The event's owned memory, for a run that stops early.
void emu_event_free(Emu *e, Event *ev) {
  EventType type = event_type(ev);
  if (type == EV_LAND)
    write_free(e, ev->write);
  else if (type != EV_WAKE && type != EV_UNIT && type != EV_POLL)
    emu_stream_end(e, ev->stream);
}

// Moves heap events that came within the wheel's reach into it.
static void refill_wheel(Emu *e) {
  while (e->nheap > 0 && cycle_of(e->heap[0].t) < e->cursor + EMU_WHEEL_CYCLES) wheel_put(e, heap_pop(e));
}

// The wheel's cursor moves up to the earliest event, which nothing pushed
// later can precede (an event pushes only at or after its own tick).
Event *emu_queue_peek(Emu *e) {
  if (emu_queued(e) == 0) return NULL;
  if (e->in_wheel == 0) e->cursor = MAX(e->cursor, cycle_of(e->heap[0].t));
  refill_wheel(e);
  for (;;) {
    Bucket *b = &e->wheel[e->cursor & (EMU_WHEEL_CYCLES - 1)];
    if (b->head < b->len) return &b->e[b->head];
    e->cursor++;
    refill_wheel(e);
  }
}

Event emu_queue_pop(Emu *e) {
  Event ev = *emu_queue_peek(e);
  e->wheel[e->cursor & (EMU_WHEEL_CYCLES - 1)].head++;
  e->in_wheel--;
  if (event_type(&ev) == EV_POLL) e->polls_queued--;
  return ev;
}

bool emu_event_is_poll(const Event *ev) { return event_type(ev) == EV_POLL; }

void emu_queue_drain(Emu *e) {
  for (int i = 0; i < EMU_WHEEL_CYCLES; i++) {
    Bucket *b = &e->wheel[i];
    for (uint32_t k = b->head; k < b->len; k++) emu_event_free(e, &b->e[k]);
    b->head = b->len = 0;
  }
  for (size_t i = 0; i < e->nheap; i++) emu_event_free(e, &e->heap[i]);
  e->in_wheel = e->nheap = 0;
}

void emu_queue_free(Emu *e) {
  for (int i = 0; i < EMU_WHEEL_CYCLES; i++) free(e->wheel[i].e);
  free(e->wheel);
  free(e->heap);
}

// ---- violations and SRAM -------------------------------------------------------------------

// A fault (fault.c) or a failed link: a cause, which the violations it
// brings about (reads of what never arrived, takes of nothing) follow from.
bool emu_violation_is_cause(ViolationKind kind) {
  return kind == VIOL_LINK_ERROR || kind == VIOL_DEAD_LINK || kind == VIOL_DEAD_DEVICE;
}

// Where a violation of this kind goes in the list: causes first, in the
// order found, then the rest; -1 if the list is full (a cause displaces the
// last of the rest, so a dead cable found after --max-violations of its
// consequences is still named).
static int listing_slot(Emu *e, ViolationKind kind) {
  int len = e->r->listed.len, causes = 0;
  while (causes < len && emu_violation_is_cause(e->r->listed.data[causes].kind)) causes++;
  if (!emu_violation_is_cause(kind)) return len < e->opt.max_listed ? len : -1;
  if (causes >= e->opt.max_listed) return -1;
  if (len >= e->opt.max_listed) e->r->listed.len--;
  return causes;
}

// Counts v and lists it in its place; v.message is malloc'd (freed here).
void emu_list_violation(Emu *e, Violation v) {
  e->r->nviolations++;
  int at = listing_slot(e, v.kind);
  char *message = (char *)v.message;
  if (at >= 0) {
    v.message = arena_strdup(e->a, message);
    VEC_PUSH(e->a, &e->r->listed, v);
    Violation *l = e->r->listed.data;
    memmove(l + at + 1, l + at, sizeof *l * (size_t)(e->r->listed.len - 1 - at));
    l[at] = v;
  }
  free(message);
}

// A partition's violations wait for the window's end (window.c), to be
// listed in key order; the run's own are listed at once.
void emu_violate(Emu *e, ViolationKind kind, int dev, const EUnit *u, int port, int64_t cycle,
                 const char *fmt, ...) {
  if (e->buffered && !emu_violation_is_cause(kind) && e->main->r->listed.len >= e->opt.max_listed) {
    e->r->nviolations++;  // never listed: counted, not formatted (a partition's count: fold_parts)
    return;
  }
  Violation v = {.kind = kind, .device = dev, .port = port, .cycle = cycle};
  if (u) snprintf(v.unit, sizeof v.unit, "%s", u->name);
  va_list ap;
  va_start(ap, fmt);
  Buf b = {0};
  buf_vprintf(&b, fmt, ap);
  va_end(ap);
  v.message = b.data ? b.data : xstrdup("");
  if (!e->buffered) {
    emu_list_violation(e, v);
    return;
  }
  ViolRec *rec = EMU_LIST_PUSH(&e->viols);
  *rec = (ViolRec){.k = e->cur, .v = v};
  e->cur.sub++;
}

// A read of vector addr at local cycle `local`: it must have been written,
// and its last write must have landed.
const uint8_t *emu_sram_read_at(Emu *e, EDev *d, const EUnit *u, SramCursor *c, uint32_t addr, int64_t local) {
  static const uint8_t zeros[EMU_MAX_VECTOR_BYTES];
  int64_t *lands;
  bool *written;
  uint8_t *v = sram_peek_at(&d->sram, c, addr, &lands, &written);  // a read never allocates
  Tick now = emu_global_at(d, local);
  if (!v) {
    emu_violate(e, VIOL_SRAM, d->id, u, -1, local, "reads vector %u, which nothing wrote", addr);
    return zeros;
  }
  if (!*written)
    emu_violate(e, VIOL_SRAM, d->id, u, -1, local, "reads vector %u, which nothing wrote", addr);
  else if (*lands > now)
    emu_violate(e, VIOL_SRAM, d->id, u, -1, local,
                "reads vector %u before the write that produces it lands (cycle %lld)", addr,
                (long long)emu_local_at_or_after(d, *lands));
  return v;
}

// A write of vector addr issued at `local`, landing at tick `lands`.  The
// bytes change at once: a read before `lands` is a violation anyway, and so
// is a second write while this one is in flight, so no correct program can
// tell the difference.
uint8_t *emu_sram_write_at(Emu *e, EDev *d, const EUnit *u, SramCursor *c, uint32_t addr, int64_t local, Tick lands) {
  e->last_activity = MAX(e->last_activity, lands);
  int64_t *at;
  bool *written;
  uint8_t *v = sram_vector_at(&d->sram, c, addr, &at, &written);
  if (*written && *at > emu_global_at(d, local))
    emu_violate(e, VIOL_SRAM, d->id, u, -1, local,
                "writes vector %u while an earlier write to it is in flight (lands at cycle %lld)",
                addr, (long long)emu_local_at_or_after(d, *at));
  *at = lands;
  *written = true;
  return v;
}

const uint8_t *emu_sram_read(Emu *e, EDev *d, const EUnit *u, uint32_t addr, int64_t local) {
  return emu_sram_read_at(e, d, u, NULL, addr, local);
}

uint8_t *emu_sram_write(Emu *e, EDev *d, const EUnit *u, uint32_t addr, int64_t local, Tick lands) {
  return emu_sram_write_at(e, d, u, NULL, addr, local, lands);
}

// ---- units -------------------------------------------------------------------------------------

void emu_resume(Emu *e, EDev *d, int unit, int64_t local) {
  EUnit *u = &d->units[unit];
  d->changes++;
  u->state = UNIT_READY;
  u->next_local = local;
  u->effect = burst_unit_effect(d, u);
  emu_push(e, emu_global_at(d, local), EV_UNIT, d->id, unit, NULL);
}

// Global time in whole cycles, rounded to nearest: a drifting device's
// cycles fall between global ones, and rounding down could draw one
// instruction inside the one before it.
int64_t emu_trace_cycle(Tick g) { return (g + EMU_TICKS_PER_CYCLE / 2) / EMU_TICKS_PER_CYCLE; }

// A trace slice [local, local + cycles) in global cycles.  Spans too long to
// convert exactly (a stream of 2^30 slow vectors) keep their local length.
void emu_trace_span(Emu *e, const EDev *d, int track, const char *name, int64_t local, int64_t cycles) {
  if (!e->opt.trace_path) return;
  cycles = MAX(cycles, 1);
  int64_t start = emu_trace_cycle(emu_global_at(d, local)), end;
  if (cycles < (INT64_MAX - d->start) / d->period - local)
    end = emu_trace_cycle(emu_global_at(d, local + cycles));
  else
    end = start + cycles;
  window_trace_slice(e, d->id, track, name, start, MAX(end - start, 1));
}

static void trace_instr(Emu *e, const EDev *d, int unit, const char *name, int64_t local, int64_t cycles) {
  emu_trace_span(e, d, unit, name, local, cycles);
}

Stream *emu_stream_new(const Instr *in, int dev, int unit, int64_t start, uint32_t n, int every) {
  Stream *s = xmalloc(sizeof *s);
  *s = (Stream){.in = *in, .dev = dev, .unit = unit, .start = start, .n = n, .every = every};
  return s;
}

// A write of nvec vectors; one-vector writes (every vector-unit result)
// come from the free list once it has some.
static PendingWrite *pending_write(Emu *e, const EDev *d, int unit, uint32_t addr, uint32_t nvec, int64_t local,
                                   Tick lands) {
  PendingWrite *w = e->free_writes;
  if (nvec == 1 && w)
    e->free_writes = w->next;
  else
    w = xmalloc(sizeof *w + (size_t)nvec * (size_t)e->vector_bytes);
  *w = (PendingWrite){.dev = d->id, .unit = unit, .addr = addr, .nvec = nvec, .local = local, .lands = lands};
  return w;
}

void emu_free_writes(Emu *e) {
  while (e->free_writes) {
    PendingWrite *w = e->free_writes;
    e->free_writes = w->next;
    free(w);
  }
}

static void write_free(Emu *e, PendingWrite *w) {
  if (w->nvec != 1) {
    free(w);
    return;
  }
  w->next = e->free_writes;
  e->free_writes = w;
}

// Class 4: the op's results go into SRAM, landing at w->lands.
static void land(Emu *e, PendingWrite *w) {
  EDev *d = &e->devs[w->dev];
  EUnit *u = &d->units[w->unit];
  for (uint32_t v = 0; v < w->nvec; v++)
    memcpy(emu_sram_write_at(e, d, u, &u->land_cur, w->addr + v, w->local, w->lands),
           w->data + (size_t)v * (size_t)e->vector_bytes, (size_t)e->vector_bytes);
  burst_land_done(d);
  write_free(e, w);
}

// A result vector computed at local cycle `local`, landing `latency`
// cycles later (its write issues now, in class 4).
static void push_result(Emu *e, const EDev *d, int unit, uint32_t addr, int64_t local, const uint8_t *data,
                        int latency) {
  PendingWrite *w = pending_write(e, d, unit, addr, 1, local, emu_global_at(d, local + latency));
  memcpy(w->data, data, (size_t)e->vector_bytes);
  emu_push_write(e, emu_global_at(d, local), w);
}

static void mxm_job_free(MxmJob *job);

// A stream's memory, whatever its kind (its elements done, or a run that
// stops early), off burst.c's lists.
void emu_stream_end(Emu *e, Stream *s) {
  if (!s) return;
  burst_untrack(e, s);
  free(s->rows);
  mxm_job_free(s->mxm);
  free(s);
}

// Schedules the stream's next element, `every` cycles on, or ends it.
static void stream_next(Emu *e, Stream *s, EventType type) {
  const EDev *d = &e->devs[s->dev];
  if (++s->k < s->n)
    emu_push(e, emu_global_at(d, s->start + (int64_t)s->k * s->every), type, s->dev, s->unit, s);
  else
    emu_stream_end(e, s);
}

// ---- the vector unit (VXM) ------------------------------------------------------
//
// Every op streams its destination vectors, one a cycle: vector k reads
// the sources it needs at L + k and lands at L + k + EMU_VXM_LATENCY.
// VRSUM and VRMAX read one source vector a cycle and write one result.

// The element operation of a two-operand vector-unit opcode.
static NumBinaryOp binary_op(Opcode op) {
  switch (op) {
  case OPC_VADD: case OPC_VADDS: return NUM_ADD;
  case OPC_VSUB: case OPC_VSUBS: return NUM_SUB;
  case OPC_VMUL: case OPC_VMULS: return NUM_MUL;
  case OPC_VDIV: return NUM_DIV;
  case OPC_VMAX: return NUM_MAX;
  default: unreachable();
  }
}

// The element function of a one-operand vector-unit opcode.
static NumUnaryOp unary_op(Opcode op) {
  switch (op) {
  case OPC_VRELU: return NUM_RELU;
  case OPC_VEXP: return NUM_EXP;
  case OPC_VERF: return NUM_ERF;
  case OPC_VRSQRT: return NUM_RSQRT;
  case OPC_VRECIP: return NUM_RECIP;
  default: unreachable();
  }
}

// VRSUM and VRMAX read m vectors and write one.
static bool is_reduction(Opcode op) { return op == OPC_VRSUM || op == OPC_VRMAX; }

// Destination vector k of an element-wise op (and VMOV, which copies the
// bytes as they are: it has no dtype).  VADDS/VSUBS/VMULS read vector c at
// every element, for its element 0.
static void vxm_elementwise(Emu *e, EDev *d, const EUnit *u, Stream *s, int64_t local, uint8_t *out) {
  const Instr *in = &s->in;
  DType dt = (DType)in->dtype;
  int vb = e->vector_bytes;
  uint32_t k = s->k;
  const uint8_t *x = emu_sram_read_at(e, d, u, &s->cur[CUR_B], in->b + k, local);  // pages never move
  switch ((Opcode)in->op) {
  case OPC_VMOV: memcpy(out, x, (size_t)vb); return;
  case OPC_VRELU: case OPC_VEXP: case OPC_VERF: case OPC_VRSQRT: case OPC_VRECIP:
    num_vunary(unary_op((Opcode)in->op), dt, out, x, vb);
    return;
  case OPC_VADDS: case OPC_VSUBS: case OPC_VMULS:
    num_vscalar(binary_op((Opcode)in->op), dt, out, x, emu_sram_read_at(e, d, u, &s->cur[CUR_C], in->c, local), vb);
    return;
  default:
    num_vbinary(binary_op((Opcode)in->op), dt, out, x, emu_sram_read_at(e, d, u, &s->cur[CUR_C], in->c + k, local),
                vb);
  }
}

// VCVT destination vector k: elements [k per(t), min((k+1) per(t), c)),
// read from exactly the source vectors that hold them; the lanes past c
// are 0.
static void vxm_convert(Emu *e, EDev *d, const EUnit *u, const Instr *in, uint32_t k, int64_t local, uint8_t *out) {
  DType to = (DType)in->dtype, from = (DType)in->port;
  int64_t per_to = isa_elems_per_vector(to, e->vector_bytes), per_from = isa_elems_per_vector(from, e->vector_bytes);
  int64_t first = (int64_t)k * per_to, end = MIN(first + per_to, (int64_t)in->c);
  memset(out, 0, (size_t)e->vector_bytes);
  for (int64_t v = first / per_from; v <= (end - 1) / per_from; v++) {
    const uint8_t *src = emu_sram_read(e, d, u, in->b + (uint32_t)v, local);
    for (int64_t el = MAX(first, v * per_from); el < MIN(end, (v + 1) * per_from); el++)
      num_convert(to, out, (int)(el - first), from, src, (int)(el - v * per_from));
  }
}

// VRSUM / VRMAX step k: reads source vector k (its first elements up to c
// in all); the last step writes the result into every lane of vector a.
static void vxm_reduce_step(Emu *e, EDev *d, Stream *s, int64_t local) {
  const Instr *in = &s->in;
  int64_t per = isa_elems_per_vector((DType)in->dtype, e->vector_bytes);
  int64_t count = MIN(per, (int64_t)in->c - (int64_t)s->k * per);
  num_reduce_add(&s->acc, emu_sram_read_at(e, d, &d->units[s->unit], &s->cur[CUR_B], in->b + s->k, local), (int)count);
  if (s->k + 1 < s->n) return;
  uint8_t out[EMU_MAX_VECTOR_BYTES];
  num_reduce_fill(&s->acc, out, e->vector_bytes);
  push_result(e, d, s->unit, in->a, local, out, EMU_VXM_LATENCY);
}

// Whether an op reads vector c + k at its element k (the two-operand
// element-wise ops; VADDS and the like read c alone).
static bool reads_c_at_k(Opcode op) {
  return op == OPC_VADD || op == OPC_VSUB || op == OPC_VMUL || op == OPC_VDIV || op == OPC_VMAX;
}

// The sources of element k + 1, fetched into the cache while other events run.
static void prefetch_next_sources(EDev *d, Stream *s) {
  if (s->k + 1 >= s->n || s->in.op == OPC_VCVT) return;
  sram_prefetch(&d->sram, &s->cur[CUR_B], s->in.b + s->k + 1);
  if (reads_c_at_k((Opcode)s->in.op)) sram_prefetch(&d->sram, &s->cur[CUR_C], s->in.c + s->k + 1);
}

// A result computed in a burst (burst.c) lands at once: in class 4 of its
// tick, as its landing event would have, under that event's key.
static void land_now(Emu *e, EDev *d, Stream *s, int64_t local, const uint8_t *out) {
  EUnit *u = &d->units[s->unit];
  e->cur = burst_land_key(s, emu_global_at(d, local));
  e->events++;
  memcpy(emu_sram_write_at(e, d, u, &u->land_cur, s->in.a + s->k, local, emu_global_at(d, local + EMU_VXM_LATENCY)),
         out, (size_t)e->vector_bytes);
}

// Class 3: elements of a vector-unit op, as many at once as burst.c allows
// (none for VCVT, VRSUM and VRMAX).
static void step_vxm(Emu *e, Stream *s) {
  EDev *d = &e->devs[s->dev];
  const EUnit *u = &d->units[s->unit];
  Burst b;
  b.planned = false;
  bool burst = false;
  do {
    int64_t local = s->start + s->k;
    uint8_t out[EMU_MAX_VECTOR_BYTES];
    if (is_reduction((Opcode)s->in.op)) {
      vxm_reduce_step(e, d, s, local);
    } else {
      if (s->in.op == OPC_VCVT)
        vxm_convert(e, d, u, &s->in, s->k, local, out);
      else
        vxm_elementwise(e, d, u, s, local, out);
      if (burst)
        land_now(e, d, s, local, out);
      else
        push_result(e, d, s->unit, s->in.a + s->k, local, out, EMU_VXM_LATENCY);
    }
    prefetch_next_sources(d, s);
  } while (++s->k < s->n && (burst = burst_next(e, s, &b)));
  if (s->k < s->n)
    emu_push(e, emu_global_at(d, s->start + s->k), EV_VXM, s->dev, s->unit, s);
  else
    emu_stream_end(e, s);
}

// Starts a vector-unit op at L; returns the cycles it holds the unit.
static int64_t vxm_issue(Emu *e, EDev *d, int unit, const Instr *in, int64_t L) {
  int64_t cycles = isa_issue_cycles(in, e->vector_bytes);
  uint32_t steps = (uint32_t)(is_reduction((Opcode)in->op) ? cycles : isa_dst_vectors(in, e->vector_bytes));
  Stream *s = emu_stream_new(in, d->id, unit, L, steps, 1);
  if (is_reduction((Opcode)in->op)) num_reduce_start(&s->acc, (DType)in->dtype, in->op == OPC_VRMAX);
  emu_push(e, emu_global_at(d, L), EV_VXM, d->id, unit, s);
  return cycles;
}

// ---- the matrix unit (MXM): weight installs -------------------------------------
//
// Seed 002 s5.2: the unit multiplies activation rows by a K x 320 weight
// tile it holds; s5.5: it can take the B of A B^T, which MXLWT installs.
// An install reads its tile vectors in the background on the unit's
// install path, ISA_MXM_INSTALL_VECTORS_PER_CYCLE a cycle from L on; the
// unit issues again at L + 1.  The buffer holds each value from the cycle
// its vector is read and is ready at L + isa_mxm_install_cycles.

// Doubles in a weight buffer: the most rows any dtype's tile has (i8's
// one element a byte) by ISA_MXM_COLS.
size_t emu_weight_buffer_bytes(int vector_bytes) { return (size_t)vector_bytes * ISA_MXM_COLS * sizeof(double); }

static size_t tile_doubles(const Emu *e) { return emu_weight_buffer_bytes(e->vector_bytes) / sizeof(double); }

// The install checks of the weight-hazard kind: the path is free and no
// MXM still reads the buffer.
static void install_hazards(Emu *e, EDev *d, const EUnit *u, const Instr *in, int64_t L) {
  const char *name = isa_opcodes[in->op].name;
  const WeightBuffer *b = &d->wbuf[in->port];
  if (L < d->install_busy_until)
    emu_violate(e, VIOL_WEIGHT, d->id, u, -1, L, "%s while the install path is busy until cycle %lld", name,
                (long long)d->install_busy_until);
  if (L < b->read_until)
    emu_violate(e, VIOL_WEIGHT, d->id, u, -1, L, "%s into buffer %u while an MXM reads it until cycle %lld", name,
                in->port, (long long)b->read_until);
}

// MXLW / MXLWT at L: the buffer is cleared (entries no row fills are 0),
// and the install stream reads the tile.
static void install_issue(Emu *e, EDev *d, int unit, const Instr *in, int64_t L) {
  install_hazards(e, d, &d->units[unit], in, L);
  WeightBuffer *b = &d->wbuf[in->port];
  int64_t cycles = isa_mxm_install_cycles(in, e->vector_bytes);
  if (!b->w) b->w = xmalloc(tile_doubles(e) * sizeof *b->w);
  memset(b->w, 0, tile_doubles(e) * sizeof *b->w);
  bool transposed = in->op == OPC_MXLWT;
  *b = (WeightBuffer){.w = b->w, .installed = true, .dtype = (DType)in->dtype, .kk = (int)(transposed ? in->d : in->c),
                      .nn = (int)(transposed ? in->c : in->d), .ready = L + cycles, .read_until = b->read_until};
  d->install_busy_until = L + cycles;
  emu_trace_span(e, d, emu_trace_track(unit, 1), isa_opcodes[in->op].name, L, cycles);
  emu_push(e, emu_global_at(d, L), EV_INSTALL, d->id, unit, emu_stream_new(in, d->id, unit, L, (uint32_t)cycles, 1));
}

// Tile vector v of an install, read at `local`, into its buffer.  MXLW: row
// i = v / vpr holds ceil(nn / per) vectors, this one its elements from
// (v % vpr) per on.  MXLWT: vector v is row v of the [N x K] matrix, which
// goes into column v of the tile.
static void install_vector(Emu *e, EDev *d, const EUnit *u, const Instr *in, uint32_t v, int64_t local) {
  DType dt = (DType)in->dtype;
  const WeightBuffer *b = &d->wbuf[in->port];
  int per = isa_elems_per_vector(dt, e->vector_bytes);
  if (in->op == OPC_MXLWT) {
    const uint8_t *vec = emu_sram_read(e, d, u, (uint32_t)(in->a + (uint64_t)v * in->b), local);
    for (int i = 0; i < (int)in->d; i++) b->w[(size_t)i * ISA_MXM_COLS + v] = num_get(dt, vec, i);
    return;
  }
  uint32_t vpr = (in->d + (uint32_t)per - 1) / (uint32_t)per, row = v / vpr, part = v % vpr;
  const uint8_t *vec = emu_sram_read(e, d, u, (uint32_t)(in->a + (uint64_t)row * in->b + part), local);
  int first = (int)part * per, count = MIN(per, (int)in->d - first);
  num_to_doubles(dt, vec, 0, count, b->w + (size_t)row * ISA_MXM_COLS + (size_t)first);
}

// Class 3: install cycle k reads its tile vectors.
static void step_install(Emu *e, Stream *s) {
  EDev *d = &e->devs[s->dev];
  int64_t V = isa_mxm_install_vectors(&s->in, e->vector_bytes), local = s->start + s->k;
  int64_t first = (int64_t)s->k * ISA_MXM_INSTALL_VECTORS_PER_CYCLE;
  for (int64_t v = first; v < MIN(V, first + ISA_MXM_INSTALL_VECTORS_PER_CYCLE); v++)
    install_vector(e, d, &d->units[s->unit], &s->in, (uint32_t)v, local);
  stream_next(e, s, EV_INSTALL);
}

// ---- the matrix unit (MXM): products --------------------------------------------
//
// MXM / MXMA at L: q = isa_mxm_rows_per_cycle rows a cycle; row r's
// activation (and MXMA's old accumulator) is read at L + floor(r / q) and
// its result lands EMU_MXM_LATENCY later.  One event a cycle handles its q
// rows.  The products come from cblas_dgemm over EMU_MXM_CHUNK_ROWS rows
// at once, computed from the activation bytes in SRAM at the cycle the
// chunk's first row is read; each row is then read again at its own cycle
// (the checked read), and if its bytes changed since (a write that landed
// in between) the row is multiplied again, so every result is what the
// bytes at its read cycle give.  The weights are those in the buffer at L.

// Rows whose products one cblas_dgemm forms: a multiple of every
// rows-a-cycle (1, 2, 4), large enough for OpenBLAS's speed, small enough
// that an MXM of millions of rows stays a few MB.
#define EMU_MXM_CHUNK_ROWS 1024
// The most bytes one result row fills: ISA_MXM_COLS values of 4 bytes (f32
// or i32), rounded up to whole vectors.
#define EMU_MXM_ROW_BYTES_MAX (ISA_MXM_COLS * 4 + EMU_MAX_VECTOR_BYTES)

struct MxmJob {
  int kk, nn;          // the tile's rows and columns used
  int per;             // elements of the MXM's dtype a vector
  double *w;           // the tile at L: kk x ISA_MXM_COLS
  uint32_t chunk, nchunk;  // the chunk's first row and its rows
  double *act;         // its activations: nchunk x kk
  uint8_t *act_bytes;  // the bytes they came from: nchunk x kk elements
  double *prod;        // its products: nchunk x ISA_MXM_COLS
};

// An MXM job's memory (NULL: nothing).
static void mxm_job_free(MxmJob *job) {
  if (!job) return;
  free(job->w);
  free(job->act);
  free(job->act_bytes);
  free(job->prod);
  free(job);
}

// The weight-hazard checks of an MXM: its buffer was installed and is
// ready.
static void mxm_hazards(Emu *e, EDev *d, const EUnit *u, const Instr *in, int64_t L) {
  const char *name = isa_opcodes[in->op].name;
  const WeightBuffer *b = &d->wbuf[in->port];
  if (!b->installed)
    emu_violate(e, VIOL_WEIGHT, d->id, u, -1, L, "%s reads buffer %u, which nothing installed", name, in->port);
  else if (L < b->ready)
    emu_violate(e, VIOL_WEIGHT, d->id, u, -1, L, "%s reads buffer %u before its install completes at cycle %lld",
                name, in->port, (long long)b->ready);
  else if (b->dtype != (DType)in->dtype)
    emu_violate(e, VIOL_WEIGHT, d->id, u, -1, L, "%s %s reads buffer %u, installed as %s", name,
                ir_dtype_names[in->dtype], in->port, ir_dtype_names[b->dtype]);
}

// Starts an MXM / MXMA at L; returns the cycles it holds the unit.
static int64_t mxm_issue(Emu *e, EDev *d, int unit, const Instr *in, int64_t L) {
  mxm_hazards(e, d, &d->units[unit], in, L);
  int64_t cycles = isa_mxm_cycles((DType)in->dtype, in->d);
  WeightBuffer *b = &d->wbuf[in->port];
  b->read_until = MAX(b->read_until, L + cycles);
  emu_push(e, emu_global_at(d, L), EV_MXM, d->id, unit, emu_stream_new(in, d->id, unit, L, (uint32_t)cycles, 1));
  return cycles;
}

// The job at the MXM's first cycle: a copy of the tile it multiplies by.
// A tile of another dtype (a weight-hazard) is used as installed, its rows
// past per(t) left out; an uninstalled buffer multiplies by nothing (every
// result 0).
static MxmJob *mxm_job_new(Emu *e, const EDev *d, const Instr *in) {
  const WeightBuffer *b = &d->wbuf[in->port];
  MxmJob *job = xcalloc(1, sizeof *job);
  job->per = isa_elems_per_vector((DType)in->dtype, e->vector_bytes);
  job->kk = b->w ? MIN(b->kk, job->per) : 0;
  job->nn = b->w ? b->nn : 0;
  size_t tile = (size_t)job->kk * ISA_MXM_COLS;
  job->w = xmalloc(MAX(tile, 1) * sizeof *job->w);
  if (tile) memcpy(job->w, b->w, tile * sizeof *job->w);
  job->act = xmalloc((size_t)EMU_MXM_CHUNK_ROWS * (size_t)MAX(job->kk, 1) * sizeof *job->act);
  job->act_bytes = xmalloc((size_t)EMU_MXM_CHUNK_ROWS * (size_t)e->vector_bytes);
  job->prod = xmalloc((size_t)EMU_MXM_CHUNK_ROWS * ISA_MXM_COLS * sizeof *job->prod);
  return job;
}

size_t emu_stream_scratch_bytes(const Instr *in, int vector_bytes) {
  if (in->op == OPC_TRANS) return (size_t)in->port * (size_t)vector_bytes;  // trans_step's rows
  if (in->op != OPC_MXM && in->op != OPC_MXMA) return 0;
  size_t kk = (size_t)isa_elems_per_vector((DType)in->dtype, vector_bytes), rows = MIN(in->d, EMU_MXM_CHUNK_ROWS);
  return kk * ISA_MXM_COLS * sizeof(double) +                              // the tile's copy
         rows * (kk * sizeof(double) + (size_t)vector_bytes + ISA_MXM_COLS * sizeof(double));  // act, act_bytes, prod
}

// Bytes of the kk activation elements a row uses.
static size_t act_bytes(const MxmJob *job, DType dt) { return (size_t)job->kk * (size_t)ir_dtype_bytes[dt]; }

// Products of rows [job->chunk, + n) from activations already widened.
static void mxm_multiply(MxmJob *job, uint32_t first, uint32_t n) {
  double *out = job->prod + (size_t)first * ISA_MXM_COLS;
  memset(out, 0, (size_t)n * ISA_MXM_COLS * sizeof *out);  // columns past nn are 0
  if (job->kk > 0 && job->nn > 0)
    num_mxm_product((int)n, job->kk, job->nn, job->act + (size_t)first * (size_t)job->kk, job->kk, job->w,
                    ISA_MXM_COLS, out, ISA_MXM_COLS);
}

// Samples the activation bytes of the chunk of rows from `first` (a read
// that is checked later, at each row's cycle) and forms their products.
static void mxm_chunk(EDev *d, const Instr *in, MxmJob *job, uint32_t first) {
  DType dt = (DType)in->dtype;
  size_t nb = act_bytes(job, dt);
  job->chunk = first;
  job->nchunk = MIN((uint32_t)EMU_MXM_CHUNK_ROWS, in->d - first);
  for (uint32_t i = 0; i < job->nchunk; i++) {
    uint32_t addr = (uint32_t)(in->b + (uint64_t)(first + i) * in->c);
    const uint8_t *v = sram_peek(&d->sram, addr, NULL, NULL);
    uint8_t *copy = job->act_bytes + (size_t)i * nb;
    if (v) memcpy(copy, v, nb); else memset(copy, 0, nb);
    num_to_doubles(dt, copy, 0, job->kk, job->act + (size_t)i * (size_t)job->kk);
  }
  mxm_multiply(job, 0, job->nchunk);
}

// Row r's checked read at `local`: when its bytes differ from the sample,
// the row is widened and multiplied again.
static void mxm_read_row(Emu *e, EDev *d, const EUnit *u, const Instr *in, MxmJob *job, uint32_t r, int64_t local) {
  DType dt = (DType)in->dtype;
  size_t nb = act_bytes(job, dt);
  uint32_t i = r - job->chunk;
  const uint8_t *v = emu_sram_read(e, d, u, (uint32_t)(in->b + (uint64_t)r * in->c), local);
  uint8_t *copy = job->act_bytes + (size_t)i * nb;
  if (!memcmp(copy, v, nb)) return;
  memcpy(copy, v, nb);
  num_to_doubles(dt, copy, 0, job->kk, job->act + (size_t)i * (size_t)job->kk);
  mxm_multiply(job, i, 1);
}

// Class 3: MXM cycle k reads rows [k q, (k+1) q) and writes their results,
// landing EMU_MXM_LATENCY later.  MXMA reads each row's old accumulator
// vectors at the same cycle and adds them.
static void step_mxm(Emu *e, Stream *s) {
  EDev *d = &e->devs[s->dev];
  const EUnit *u = &d->units[s->unit];
  const Instr *in = &s->in;
  DType dt = (DType)in->dtype;
  int64_t local = s->start + s->k;
  int q = isa_mxm_rows_per_cycle(dt), vb = e->vector_bytes, R = isa_mxm_row_vectors(dt, vb);
  uint32_t first = s->k * (uint32_t)q, n = MIN((uint32_t)q, in->d - first);
  if (!s->mxm) s->mxm = mxm_job_new(e, d, in);
  MxmJob *job = s->mxm;
  if (s->k == 0 || first >= job->chunk + job->nchunk) mxm_chunk(d, in, job, first);
  PendingWrite *w = pending_write(e, d, s->unit, (uint32_t)(in->a + (uint64_t)first * (uint64_t)R), n * (uint32_t)R,
                                  local, emu_global_at(d, local + EMU_MXM_LATENCY));
  uint8_t old[EMU_MXM_ROW_BYTES_MAX];
  for (uint32_t r = first; r < first + n; r++) {
    mxm_read_row(e, d, u, in, job, r, local);
    uint32_t out = (uint32_t)(in->a + (uint64_t)r * (uint64_t)R);
    for (int v = 0; in->op == OPC_MXMA && v < R; v++)
      memcpy(old + (size_t)v * (size_t)vb, emu_sram_read(e, d, u, out + (uint32_t)v, local), (size_t)vb);
    num_mxm_store(dt, job->prod + (size_t)(r - job->chunk) * ISA_MXM_COLS, ISA_MXM_COLS,
                  in->op == OPC_MXMA ? old : NULL, w->data + (size_t)(r - first) * (size_t)R * (size_t)vb, R * vb);
  }
  emu_push_write(e, emu_global_at(d, local), w);
  stream_next(e, s, EV_MXM);
}

// ---- the switch unit (SXM) ------------------------------------------------------
//
// TRANS reads its n source rows one a cycle (L .. L+n-1), then writes the
// per(t) transposed vectors one a cycle (L+n ..), each landing
// EMU_SXM_LATENCY later.  SXMOV streams its destination vectors like a VXM
// op.  Both move element bytes exactly.

// TRANS step k: a source row into the stream's buffer, or transposed
// vector j = k - n out: lane i holds element j of row i, lanes >= n are 0.
static void trans_step(Emu *e, EDev *d, Stream *s, int64_t local) {
  const Instr *in = &s->in;
  size_t vb = (size_t)e->vector_bytes, es = (size_t)ir_dtype_bytes[in->dtype];
  uint32_t rows = in->port;
  if (!s->rows) s->rows = xmalloc(rows * vb);
  if (s->k < rows) {
    const uint8_t *src = emu_sram_read(e, d, &d->units[s->unit], (uint32_t)(in->b + (uint64_t)s->k * in->c), local);
    memcpy(s->rows + s->k * vb, src, vb);
    return;
  }
  uint32_t j = s->k - rows;
  uint8_t out[EMU_MAX_VECTOR_BYTES] = {0};
  for (uint32_t i = 0; i < rows; i++) memcpy(out + i * es, s->rows + i * vb + j * es, es);
  push_result(e, d, s->unit, (uint32_t)(in->a + (uint64_t)j * in->d), local, out, EMU_SXM_LATENCY);
}

// The destination vector a partly covering SXMOV merges into: as read
// (checked like any read) once something wrote it; zeros, unchecked,
// while nothing has (a masked write into fresh memory reads nothing).
static const uint8_t *merge_read(Emu *e, EDev *d, const EUnit *u, uint32_t addr, int64_t local) {
  static const uint8_t zeros[EMU_MAX_VECTOR_BYTES];
  bool *written;
  const uint8_t *v = sram_peek(&d->sram, addr, NULL, &written);
  if (!v || !*written) return zeros;
  return emu_sram_read(e, d, u, addr, local);
}

// SXMOV destination vector k: the lanes [lo, hi) of the copy that fall in
// it, counted from lane 0 of vector a, come from element c + (lane - n)
// counted from vector b.  A partly covered vector is read first and keeps
// its other lanes (merge_read).
static void sxmov_step(Emu *e, EDev *d, Stream *s, int64_t local) {
  const Instr *in = &s->in;
  const EUnit *u = &d->units[s->unit];
  int64_t per = isa_elems_per_vector((DType)in->dtype, e->vector_bytes), es = ir_dtype_bytes[in->dtype];
  int64_t base = (int64_t)s->k * per, lo = MAX((int64_t)in->port, base);
  int64_t hi = MIN((int64_t)in->port + in->d, base + per);
  int64_t shift = (int64_t)in->c - in->port;  // source element = lane + shift
  uint8_t out[EMU_MAX_VECTOR_BYTES] = {0};
  if (lo > base || hi < base + per) memcpy(out, merge_read(e, d, u, in->a + s->k, local), (size_t)e->vector_bytes);
  for (int64_t v = (lo + shift) / per; v <= (hi - 1 + shift) / per; v++) {
    const uint8_t *src = emu_sram_read(e, d, u, (uint32_t)(in->b + v), local);
    int64_t from = MAX(lo, v * per - shift), to = MIN(hi, (v + 1) * per - shift);
    memcpy(out + (from - base) * es, src + (from + shift - v * per) * es, (size_t)((to - from) * es));
  }
  push_result(e, d, s->unit, in->a + s->k, local, out, EMU_SXM_LATENCY);
}

// Class 3: one element of a switch-unit op.
static void step_sxm(Emu *e, Stream *s) {
  EDev *d = &e->devs[s->dev];
  int64_t local = s->start + s->k;
  if (s->in.op == OPC_TRANS)
    trans_step(e, d, s, local);
  else
    sxmov_step(e, d, s, local);
  stream_next(e, s, EV_SXM);
}

// Starts TRANS (n reads, then per(t) writes) or SXMOV at L; returns the
// cycles it holds the unit.
static int64_t sxm_issue(Emu *e, EDev *d, int unit, const Instr *in, int64_t L) {
  int64_t cycles = isa_issue_cycles(in, e->vector_bytes);
  emu_push(e, emu_global_at(d, L), EV_SXM, d->id, unit, emu_stream_new(in, d->id, unit, L, (uint32_t)cycles, 1));
  return cycles;
}

// DESKEW: the next issue is at the first HAC epoch boundary after `local`.
static int64_t next_boundary_local(const Emu *e, const EDev *d, int64_t local) {
  Tick g = emu_global_at(d, local), E = epoch_ticks(e);
  Tick boundary = (g / E + 1) * E;
  return emu_local_at_or_after(d, boundary);
}

// RUNTIME_DESKEW t: stall t + delta, delta = SAC - HAC wrapped to
// [-E/2, E/2): positive when the local clock ran ahead of global time
// (seed 002 s3.3).  The SAC is then set to the HAC.
static int64_t runtime_deskew(Emu *e, EDev *d, const EUnit *u, uint32_t t, int64_t local) {
  int64_t E = e->topo->epoch_cycles;
  int64_t delta = sac_at(e, d, local) - hac_at(e, emu_global_at(d, local));
  delta = ((delta + E / 2) % E + E) % E - E / 2;
  int64_t stall = (int64_t)t + delta;
  if (stall < 1) {  // like every instruction it takes at least one cycle
    if (stall < 0)
      emu_violate(e, VIOL_TIME, d->id, u, -1, local,
                  "RUNTIME_DESKEW %u cannot absorb a drift of %lld cycles", t, (long long)delta);
    stall = 1;
  }
  int64_t resume = local + stall;
  d->sac_local = resume;
  d->sac_value = hac_at(e, emu_global_at(d, resume));
  return stall;
}

static void wake_parked(Emu *e, EDev *d, Tick t) {
  burst_wake_done(d, t);
  int64_t local = emu_local_at_or_after(d, t);
  for (int i = 0; i < d->nunits; i++) {
    EUnit *u = &d->units[i];
    if (u->state != UNIT_PARKED) continue;
    trace_instr(e, d, i, "SYNC", u->wait_start, local - u->wait_start);
    emu_resume(e, d, i, local);
  }
}

// Issues the unit's next instruction at its next_local cycle.
static void issue(Emu *e, EDev *d, int unit) {
  EUnit *u = &d->units[unit];
  d->changes++;  // burst.c: what the units will do next has changed
  int64_t L = u->next_local, next = L + 1;
  if (u->pc >= u->prog->code.len) {
    u->state = UNIT_FELL_OFF;
    return;
  }
  const Instr *in = &u->prog->code.data[u->pc++];
  switch ((Opcode)in->op) {
  case OPC_WAIT: next = L + in->a; break;
  case OPC_SEND: link_send(e, d, unit, in, L); break;
  case OPC_RECV: link_recv(e, d, unit, in, L); break;
  case OPC_TRANSMIT: link_transmit(e, d, unit, in, L); break;
  case OPC_VADD: case OPC_VMAX: case OPC_VRELU: case OPC_VMOV: case OPC_VSUB: case OPC_VMUL:
  case OPC_VDIV: case OPC_VADDS: case OPC_VSUBS: case OPC_VMULS: case OPC_VEXP: case OPC_VERF:
  case OPC_VRSQRT: case OPC_VRECIP: case OPC_VCVT: case OPC_VRSUM: case OPC_VRMAX:
    next = L + vxm_issue(e, d, unit, in, L);
    break;
  case OPC_MXLW: case OPC_MXLWT: install_issue(e, d, unit, in, L); break;
  case OPC_MXM: case OPC_MXMA: next = L + mxm_issue(e, d, unit, in, L); break;
  case OPC_TRANS: case OPC_SXMOV: next = L + sxm_issue(e, d, unit, in, L); break;
  case OPC_NOTIFY: emu_push(e, emu_global_at(d, L + EMU_NOTIFY_LATENCY), EV_WAKE, d->id, -1, NULL); break;
  case OPC_DESKEW: next = next_boundary_local(e, d, L); break;
  case OPC_RUNTIME_DESKEW: next = L + runtime_deskew(e, d, u, in->a, L); break;
  case OPC_SYNC:
    u->state = UNIT_PARKED;
    u->wait_start = L;
    return;
  case OPC_POLL:
    u->state = UNIT_POLLING;
    u->wait_start = L;
    link_poll(e, d, unit, in->port, L);
    return;
  case OPC_HALT:
    u->state = UNIT_HALTED;
    e->last_activity = MAX(e->last_activity, emu_global_at(d, L));
    trace_instr(e, d, unit, "HALT", L, 1);
    return;
  default: unreachable();
  }
  trace_instr(e, d, unit, isa_opcodes[in->op].name, L, next - L);
  emu_resume(e, d, unit, next);
}

// ---- setting up ------------------------------------------------------------------------------

static void init_records(Emu *e, EDev *d) {
  for (int i = 0; i < d->prog->records.len; i++) {
    const DataRecord *r = &d->prog->records.data[i];
    if (r->kind != REC_INIT) continue;
    int per = isa_elems_per_vector(r->dtype, e->vector_bytes);
    for (uint32_t v = 0; v < r->nvec; v++) {
      bool *written;
      uint8_t *vec = sram_vector(&d->sram, r->addr + v, NULL, &written);
      for (int j = 0; j < per; j++) num_set(r->dtype, vec, j, r->a * ((double)v * per + j) + r->b);
      *written = true;
    }
  }
}

static void init_ports(Emu *e, EDev *d) {
  const Device *td = &e->topo->devices[d->id];
  d->nports = td->nports;
  d->ports = xcalloc((size_t)MAX(td->nports, 1), sizeof *d->ports);
  for (int p = 0; p < td->nports; p++) {
    EPort *port = &d->ports[p];
    port->link = td->ports[p].link;
    port->peer_dev = td->ports[p].peer;
    port->peer_port = td->ports[p].peer_port;
    port->rng = emu_rng_for(e->opt.seed, 1, (uint64_t)d->id << 16 | (uint64_t)p);
    port->dies_at = INT64_MAX;
    if (port->link < 0) continue;
    const Link *l = &e->topo->links.data[port->link];
    port->failed = l->failed;
    port->every = ir_cycles_per_vector(&l->p, e->topo->clock_mhz);
    port->latency_min = l->p.latency_min;
    port->latency_max = l->p.latency_max;
  }
}

// Each port's senders: the units whose program SENDs or TRANSMITs on it
// (window.c bounds what a window can send with them).
static void count_senders(EDev *d) {
  int *last = xmalloc((size_t)MAX(d->nports, 1) * sizeof *last);  // the last unit counted for each port
  for (int p = 0; p < d->nports; p++) last[p] = -1;
  for (int u = 0; u < d->nunits; u++) {
    const UnitProgram *up = d->units[u].prog;
    for (int i = 0; i < up->code.len; i++) {
      const Instr *in = &up->code.data[i];
      if ((in->op != OPC_SEND && in->op != OPC_TRANSMIT) || in->port >= d->nports || last[in->port] == u) continue;
      last[in->port] = u;
      d->ports[in->port].senders++;
    }
  }
  free(last);
}

static void init_device(Emu *e, EDev *d, int id) {
  uint64_t rng = emu_rng_for(e->opt.seed, 2, (uint64_t)id);
  d->id = id;
  d->dies_at = INT64_MAX;
  d->prog = &e->in->prog->devices[id];
  double draw = 2 * rng_unit(&rng) - 1;  // drawn either way, so skews stay the same
  d->drift_ppm = e->opt.device_drift_ppm ? e->opt.device_drift_ppm[id] : e->opt.drift_ppm * draw + 0.0;  // never -0
  d->period = (Tick)llround(EMU_TICKS_PER_CYCLE / (1 + d->drift_ppm * 1e-6));
  int64_t skew = e->opt.start_skew ? (int64_t)(rng_unit(&rng) * (double)(e->opt.start_skew + 1)) : 0;
  d->start = MIN(skew, e->opt.start_skew) * EMU_TICKS_PER_CYCLE;
  d->sac_local = 0;
  d->sac_value = hac_at(e, d->start);
  sram_init(&d->sram, e->vector_bytes);
  init_ports(e, d);
  d->nunits = d->prog->units.len;
  d->units = xcalloc((size_t)MAX(d->nunits, 1), sizeof *d->units);
  for (int u = 0; u < d->nunits; u++) {
    EUnit *unit = &d->units[u];
    unit->prog = &d->prog->units.data[u];
    unit->last_poll = -1;
    for (int i = 0; i < unit->prog->code.len; i++)
      if (unit->prog->code.data[i].op == OPC_POLL) unit->last_poll = i;
    isa_unit_format(unit->name, sizeof unit->name, unit->prog->kind, unit->prog->port);
  }
  count_senders(d);
  if (emu_owns(e, id)) init_records(e, d);  // ranks: another rank's device holds no SRAM here
}

static bool one_vector_size(const Topology *t, char *err, size_t errlen) {
  for (int i = 0; i < t->links.len; i++)
    if (t->links.data[i].p.vector_bytes != t->link.vector_bytes) {
      snprintf(err, errlen, "link %d carries %d-byte vectors, the system %d: the emulator needs one size",
               i, t->links.data[i].p.vector_bytes, t->link.vector_bytes);
      return false;
    }
  if (t->link.vector_bytes > EMU_MAX_VECTOR_BYTES || t->link.vector_bytes % 4) {
    snprintf(err, errlen, "the emulator handles vectors of up to %d bytes, a multiple of 4 (not %d)",
             EMU_MAX_VECTOR_BYTES, t->link.vector_bytes);
    return false;
  }
  return true;
}

static bool uses_port(const UnitProgram *up) {
  for (int i = 0; i < up->code.len; i++)
    if (strchr(isa_opcodes[up->code.data[i].op].operands, 'p')) return true;
  return false;
}

// Whether a matrix unit installs weights (its install path gets a track).
static bool installs(const UnitProgram *up) {
  for (int i = 0; i < up->code.len; i++)
    if (up->code.data[i].op == OPC_MXLW || up->code.data[i].op == OPC_MXLWT) return true;
  return false;
}

// Tracks: one per unit (its instructions), and for each unit with a port one for
// what its port sends and one for what it receives (the streams run on
// while the unit issues on), so every link arrow starts and ends in a slice;
// a matrix unit that installs weights, one for its install path.
static void name_trace(Emu *e) {
  for (int i = 0; i < e->ndevs; i++) {
    char name[48];
    snprintf(name, sizeof name, "dev%04d", i);
    trace_name_process(e->trace, i, name);
    for (int u = 0; u < e->devs[i].nunits; u++) {
      const EUnit *unit = &e->devs[i].units[u];
      trace_name_thread(e->trace, i, u, unit->name);
      if (installs(unit->prog)) {
        snprintf(name, sizeof name, "%s install", unit->name);
        trace_name_thread(e->trace, i, emu_trace_track(u, 1), name);
      }
      if (!uses_port(unit->prog)) continue;  // no empty tracks
      snprintf(name, sizeof name, "%s send", unit->name);
      trace_name_thread(e->trace, i, emu_trace_track(u, 1), name);
      snprintf(name, sizeof name, "%s receive", unit->name);
      trace_name_thread(e->trace, i, emu_trace_track(u, 2), name);
    }
  }
}

int emu_trace_track(int unit, int which) { return unit + which * IR_TRACE_LINK_TRACKS; }

Emu *emu_new(Arena *a, const EmuInput *in, const EmuOptions *opt, char *err, size_t errlen) {
  if (!one_vector_size(in->topo, err, errlen)) return NULL;
  num_mxm_init();
  Emu *e = xcalloc(1, sizeof *e);
  *e = (Emu){.a = a, .in = in, .opt = *opt, .topo = in->topo, .vector_bytes = in->topo->link.vector_bytes};
  if (opt->trace_path && !(e->trace = trace_open(opt->trace_path, in->topo->clock_mhz, err, errlen))) {
    free(e);
    return NULL;
  }
  e->ndevs = in->topo->ndevices;
  e->main = e;
  e->rank = ranks_me(), e->nranks = ranks_count();
  e->rank_of = xmalloc((size_t)MAX(e->ndevs, 1) * sizeof *e->rank_of);
  for (int i = 0; i < e->ndevs; i++) e->rank_of[i] = window_part_of(in->topo, e->ndevs, e->nranks, i);
  e->wheel = xcalloc(EMU_WHEEL_CYCLES, sizeof *e->wheel);
  e->devs = xcalloc((size_t)e->ndevs, sizeof *e->devs);
  for (int i = 0; i < e->ndevs; i++) init_device(e, &e->devs[i], i);
  if (e->trace) name_trace(e);
  return e;
}

// ---- tensors in and out ---------------------------------------------------------------

static bool tensor_span(Emu *e, const TensorHome *th, size_t *bytes, char *err, size_t errlen) {
  if (th->device < 0 || th->device >= e->ndevs) return snprintf(err, errlen, "tensor '%s' is on no device", th->name), false;
  *bytes = (size_t)ir_shape_elems(&th->shape) * (size_t)ir_dtype_bytes[th->dtype];
  uint64_t vectors = (*bytes + (size_t)e->vector_bytes - 1) / (size_t)e->vector_bytes;
  if (vectors > (uint64_t)e->topo->sram_vectors || th->addr > (uint64_t)e->topo->sram_vectors - vectors)
    return snprintf(err, errlen, "tensor '%s' runs past the SRAM", th->name), false;
  return true;
}

bool emu_write_tensor(Emu *e, const TensorHome *th, const void *data, char *err, size_t errlen) {
  size_t bytes;
  if (!tensor_span(e, th, &bytes, err, errlen)) return false;
  EDev *d = &e->devs[th->device];
  for (size_t off = 0, v = 0; off < bytes; off += (size_t)e->vector_bytes, v++) {
    bool *written;
    uint8_t *vec = sram_vector(&d->sram, th->addr + (uint32_t)v, NULL, &written);
    size_t n = MIN((size_t)e->vector_bytes, bytes - off);
    memset(vec, 0, (size_t)e->vector_bytes);  // the tail of the last vector is zero
    memcpy(vec, (const uint8_t *)data + off, n);
    *written = true;
  }
  return true;
}

bool emu_read_tensor(Emu *e, const TensorHome *th, void *data, char *err, size_t errlen) {
  size_t bytes;
  if (!tensor_span(e, th, &bytes, err, errlen)) return false;
  EDev *d = &e->devs[th->device];
  for (size_t off = 0, v = 0; off < bytes; off += (size_t)e->vector_bytes, v++) {
    const uint8_t *vec = sram_vector(&d->sram, th->addr + (uint32_t)v, NULL, NULL);
    memcpy((uint8_t *)data + off, vec, MIN((size_t)e->vector_bytes, bytes - off));
  }
  return true;
}

// ---- the run ----------------------------------------------------------------------------------

void emu_dispatch(Emu *e, const Event *ev) {
  switch (event_type(ev)) {
  case EV_WAKE: wake_parked(e, &e->devs[ev->at.dev], ev->t); break;
  case EV_RECV: link_step_recv(e, ev->stream); break;
  case EV_SEND: link_step_send(e, ev->stream); break;
  case EV_VXM: step_vxm(e, ev->stream); break;
  case EV_MXM: step_mxm(e, ev->stream); break;
  case EV_INSTALL: step_install(e, ev->stream); break;
  case EV_SXM: step_sxm(e, ev->stream); break;
  case EV_LAND: land(e, ev->write); break;
  case EV_UNIT: issue(e, &e->devs[ev->at.dev], ev->at.unit); break;
  case EV_POLL: link_step_poll(e, &e->devs[ev->at.dev], ev->at.unit, ev->t); break;
  case EV_TYPE_COUNT: unreachable();
  }
}

// Each link direction's vectors, from the ports they left.
static void count_link_vectors(const Emu *e, EmuResult *r) {
  const Topology *t = e->topo;
  r->topo = t;
  r->link_vectors = ARENA_ARRAY(e->a, int64_t, 2 * t->links.len + 1);
  for (int i = 0; i < e->ndevs; i++)
    for (int p = 0; p < e->devs[i].nports; p++) {
      const EPort *port = &e->devs[i].ports[p];
      if (port->link >= 0) r->link_vectors[2 * port->link + (i != t->links.data[port->link].a)] += port->sent;
    }
}

void emu_run(Emu *e, EmuResult *r) {
  *r = (EmuResult){.predicted = e->in->prog->predicted_cycles};
  bool drifts = e->opt.drift_ppm != 0;
  for (int i = 0; i < e->ndevs; i++) drifts |= e->devs[i].drift_ppm != 0;
  r->deterministic = !e->opt.jitter && !drifts && e->opt.start_skew == 0;
  e->r = r;
  r->ndevices = e->ndevs;
  r->drift_ppm = ARENA_ARRAY(e->a, double, e->ndevs);
  r->start = ARENA_ARRAY(e->a, int64_t, e->ndevs);
  for (int i = 0; i < e->ndevs; i++) {
    r->drift_ppm[i] = e->devs[i].drift_ppm;
    r->start[i] = e->devs[i].start / EMU_TICKS_PER_CYCLE;
  }
  fault_begin_run(e);
  e->first_start = INT64_MAX, e->cut_at = 0;
  for (int i = 0; i < e->ndevs; i++) {
    e->first_start = MIN(e->first_start, e->devs[i].start);
    e->last_activity = MAX(e->last_activity, e->devs[i].start);
  }
  window_begin(e);
  for (int i = 0; i < e->ndevs; i++)
    for (int u = 0; u < e->devs[i].nunits && emu_owns(e, i); u++) emu_resume(e->parts[e->part_of[i]], &e->devs[i], u, 0);
  Tick limit = e->first_start + e->opt.max_cycles * EMU_TICKS_PER_CYCLE;
  window_run(e, limit);
  if (!e->stop && e->last_activity > limit) {  // results that land past the limit
    window_key_after_run(e, EMU_AFTER_HANG, 0);
    if (emu_leads(e))
      emu_violate(e, VIOL_HANG, -1, NULL, -1, e->opt.max_cycles,
                  "still running after %lld cycles (--max-cycles)", (long long)e->opt.max_cycles);
    e->last_activity = limit;
    e->cut_at = limit;
  }
  window_end(e);
  r->cycles = (e->last_activity - e->first_start + EMU_TICKS_PER_CYCLE - 1) / EMU_TICKS_PER_CYCLE;
  count_link_vectors(e, r);
  check_after_run(e);
  window_gather_result(e);
}

void emu_trace_arrows(const Emu *e, uint64_t *crossed, uint64_t *drawn) {
  bool traced = e->opt.trace_path != NULL;
  *crossed = traced ? e->flows : 0;
  *drawn = traced ? MIN(e->flows, (uint64_t)e->opt.trace_max_vectors) : 0;
}

bool emu_close_trace(Emu *e) {
  bool ok = !e->trace || trace_close(e->trace);
  e->trace = NULL;
  return ok;
}

void emu_free(Emu *e) {
  if (!e) return;
  emu_close_trace(e);
  link_free(e);
  for (int i = 0; i < e->ndevs; i++) {
    sram_free(&e->devs[i].sram);
    for (int b = 0; b < ISA_MXM_BUFFERS; b++) free(e->devs[i].wbuf[b].w);
    free(e->devs[i].units);
    free(e->devs[i].ports);
    free(e->devs[i].active);
    free(e->devs[i].spans);
  }
  free(e->devs);
  free(e->rank_of);
  emu_queue_free(e);
  emu_free_writes(e);
  free(e);
}
