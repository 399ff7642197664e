// emu.c: the discrete-event emulator: clocks, the event queue, the units of
// every device and what their instructions do.  Part of runtime/; link.c
// moves vectors between devices, check.c judges the run when it ends.
//
// Nothing here trusts the compiler.  Every instruction is timed by the
// rules of docs/isa.md on the device's own drifting clock, every vector is
// real bytes, and every read of SRAM is checked against the write that
// produced it (seed 002 s3 for HAC, SAC, DESKEW, RUNTIME_DESKEW; s4.4 for
// the absence of flow control that makes every check necessary).
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
static uint64_t rng_for(uint64_t seed, uint64_t what, uint64_t index) {
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
    [EV_SEND] = 3, [EV_VXM] = 3, [EV_MXM] = 3, [EV_LAND] = 4};

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

void emu_push(Emu *e, Tick t, EventType type, int dev, int unit, Stream *s) {
  Event ev = {.t = t, .order = (uint64_t)event_class[type] << 56 | e->seq++, .type = type,
              .dev = dev, .unit = unit, .stream = s};
  if (type == EV_POLL) e->polls_queued++;
  if (cycle_of(t) < e->cursor + EMU_WHEEL_CYCLES)
    wheel_put(e, ev);
  else
    heap_push(e, ev);
}

void emu_push_write(Emu *e, Tick t, PendingWrite *w) {
  Event ev = {.t = t, .order = (uint64_t)event_class[EV_LAND] << 56 | e->seq++, .type = EV_LAND,
              .dev = w->dev, .unit = w->unit, .write = w};
  if (cycle_of(t) < e->cursor + EMU_WHEEL_CYCLES)
    wheel_put(e, ev);
  else
    heap_push(e, ev);
}

static size_t queued(const Emu *e) { return e->in_wheel + e->nheap; }

// The event's owned memory, for a run that stops early.
static void event_free(Event *ev) {
  if (ev->type == EV_LAND)
    free(ev->write);
  else
    free(ev->stream);
}

// Moves heap events that came within the wheel's reach into it.
static void refill_wheel(Emu *e) {
  while (e->nheap > 0 && cycle_of(e->heap[0].t) < e->cursor + EMU_WHEEL_CYCLES) wheel_put(e, heap_pop(e));
}

static Event pop(Emu *e) {
  if (e->in_wheel == 0) e->cursor = MAX(e->cursor, cycle_of(e->heap[0].t));
  refill_wheel(e);
  for (;;) {
    Bucket *b = &e->wheel[e->cursor & (EMU_WHEEL_CYCLES - 1)];
    if (b->head < b->len) {
      Event ev = b->e[b->head++];
      e->in_wheel--;
      if (ev.type == EV_POLL) e->polls_queued--;
      return ev;
    }
    e->cursor++;
    refill_wheel(e);
  }
}

// Frees what is still queued when a run stops early.
static void drain_queue(Emu *e) {
  for (int i = 0; i < EMU_WHEEL_CYCLES; i++) {
    Bucket *b = &e->wheel[i];
    for (uint32_t k = b->head; k < b->len; k++) event_free(&b->e[k]);
    b->head = b->len = 0;
  }
  for (size_t i = 0; i < e->nheap; i++) event_free(&e->heap[i]);
  e->in_wheel = e->nheap = 0;
}

// ---- violations and SRAM -------------------------------------------------------------------

void emu_violate(Emu *e, ViolationKind kind, int dev, const EUnit *u, int port, int64_t cycle,
                 const char *fmt, ...) {
  e->r->nviolations++;
  if (e->r->listed.len >= e->opt.max_listed) return;
  Violation v = {.kind = kind, .device = dev, .port = port, .cycle = cycle};
  if (u) snprintf(v.unit, sizeof v.unit, "%s", u->name);
  va_list ap;
  va_start(ap, fmt);
  Buf b = {0};
  buf_vprintf(&b, fmt, ap);
  va_end(ap);
  v.message = arena_strdup(e->a, b.data);
  buf_free(&b);
  VEC_PUSH(e->a, &e->r->listed, v);
}

// A read of vector addr at local cycle `local`: it must have been written,
// and its last write must have landed.
const uint8_t *emu_sram_read(Emu *e, EDev *d, const EUnit *u, uint32_t addr, int64_t local) {
  static const uint8_t zeros[EMU_MAX_VECTOR_BYTES];
  int64_t *lands;
  bool *written;
  uint8_t *v = sram_peek(&d->sram, addr, &lands, &written);  // a read never allocates
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
uint8_t *emu_sram_write(Emu *e, EDev *d, const EUnit *u, uint32_t addr, int64_t local, Tick lands) {
  e->last_activity = MAX(e->last_activity, lands);
  int64_t *at;
  bool *written;
  uint8_t *v = sram_vector(&d->sram, addr, &at, &written);
  if (*written && *at > emu_global_at(d, local))
    emu_violate(e, VIOL_SRAM, d->id, u, -1, local,
                "writes vector %u while an earlier write to it is in flight (lands at cycle %lld)",
                addr, (long long)emu_local_at_or_after(d, *at));
  *at = lands;
  *written = true;
  return v;
}

// ---- units -------------------------------------------------------------------------------------

void emu_resume(Emu *e, EDev *d, int unit, int64_t local) {
  EUnit *u = &d->units[unit];
  u->state = UNIT_READY;
  u->next_local = local;
  emu_push(e, emu_global_at(d, local), EV_UNIT, d->id, unit, NULL);
}

// Global time in whole cycles, rounded to nearest: a drifting device's
// cycles fall between global ones, and rounding down could draw one
// instruction inside the one before it.
int64_t emu_trace_cycle(Tick g) { return (g + EMU_TICKS_PER_CYCLE / 2) / EMU_TICKS_PER_CYCLE; }

// A trace slice [local, local + cycles) in global cycles.  Spans too long to
// convert exactly (a stream of 2^30 slow vectors) keep their local length.
void emu_trace_span(Emu *e, const EDev *d, int track, const char *name, int64_t local, int64_t cycles) {
  if (!e->trace) return;
  cycles = MAX(cycles, 1);
  int64_t start = emu_trace_cycle(emu_global_at(d, local)), end;
  if (cycles < (INT64_MAX - d->start) / d->period - local)
    end = emu_trace_cycle(emu_global_at(d, local + cycles));
  else
    end = start + cycles;
  trace_slice(e->trace, d->id, track, name, start, MAX(end - start, 1));
}

static void trace_instr(Emu *e, const EDev *d, int unit, const char *name, int64_t local, int64_t cycles) {
  emu_trace_span(e, d, unit, name, local, cycles);
}

Stream *emu_stream_new(const Instr *in, int dev, int unit, int64_t start, uint32_t n, int every) {
  Stream *s = xmalloc(sizeof *s);
  *s = (Stream){.in = *in, .dev = dev, .unit = unit, .start = start, .n = n, .every = every};
  return s;
}

static PendingWrite *pending_write(Emu *e, const EDev *d, int unit, uint32_t addr, uint32_t nvec, int64_t local,
                                   Tick lands) {
  PendingWrite *w = xmalloc(sizeof *w + (size_t)nvec * (size_t)e->vector_bytes);
  *w = (PendingWrite){.dev = d->id, .unit = unit, .addr = addr, .nvec = nvec, .local = local, .lands = lands};
  return w;
}

// Class 4: the op's results go into SRAM, landing at w->lands.
static void land(Emu *e, PendingWrite *w) {
  EDev *d = &e->devs[w->dev];
  for (uint32_t v = 0; v < w->nvec; v++)
    memcpy(emu_sram_write(e, d, &d->units[w->unit], w->addr + v, w->local, w->lands),
           w->data + (size_t)v * (size_t)e->vector_bytes, (size_t)e->vector_bytes);
  free(w);
}

// VADD, VMAX, VRELU, VMOV: element k reads its sources at start + k and its
// result lands EMU_VXM_LATENCY cycles later.  VMOV copies the bytes as they
// are (it has no dtype).
static void step_vxm(Emu *e, Stream *s) {
  EDev *d = &e->devs[s->dev];
  const EUnit *u = &d->units[s->unit];
  int64_t local = s->start + s->k;
  DType dt = (DType)s->in.dtype;
  uint8_t out[EMU_MAX_VECTOR_BYTES];
  const uint8_t *x = emu_sram_read(e, d, u, s->in.b + s->k, local);  // pages never move
  if (s->in.op == OPC_VMOV) {
    memcpy(out, x, (size_t)e->vector_bytes);
  } else if (s->in.op == OPC_VRELU) {
    num_vrelu(dt, out, x, e->vector_bytes);
  } else {
    const uint8_t *y = emu_sram_read(e, d, u, s->in.c + s->k, local);
    if (s->in.op == OPC_VADD)
      num_vadd(dt, out, x, y, e->vector_bytes);
    else
      num_vmax(dt, out, x, y, e->vector_bytes);
  }
  PendingWrite *w = pending_write(e, d, s->unit, s->in.a + s->k, 1, local, emu_global_at(d, local + EMU_VXM_LATENCY));
  memcpy(w->data, out, (size_t)e->vector_bytes);
  emu_push_write(e, emu_global_at(d, local), w);
  if (++s->k < s->n)
    emu_push(e, emu_global_at(d, s->start + s->k), EV_VXM, s->dev, s->unit, s);
  else
    free(s);
}

// MXM: reads its rows and weights at issue (a class-3 event of the issue
// cycle), holds the unit for isa_mxm_cycles, and its results land
// EMU_MXM_LATENCY cycles after that.  Every operand is read before any
// result is written, so a destination may overlap the rows.
static void step_mxm(Emu *e, Stream *s) {
  EDev *d = &e->devs[s->dev];
  const EUnit *u = &d->units[s->unit];
  const Instr *in = &s->in;
  int64_t local = s->start;
  DType dt = (DType)in->dtype;
  int vb = e->vector_bytes, n = isa_elems_per_vector(dt, vb), rowvecs = isa_mxm_row_vectors(dt, vb);
  int64_t cycles = isa_mxm_cycles(dt, in->d);
  uint8_t *w = xmalloc((size_t)n * (size_t)vb), *act = xmalloc((size_t)in->d * (size_t)vb);
  const uint8_t **rows = xmalloc(sizeof *rows * (size_t)n);
  for (int k = 0; k < n; k++) {
    memcpy(w + (size_t)k * (size_t)vb, emu_sram_read(e, d, u, in->c + (uint32_t)k, local), (size_t)vb);
    rows[k] = w + (size_t)k * (size_t)vb;
  }
  for (uint32_t r = 0; r < in->d; r++)
    memcpy(act + (size_t)r * (size_t)vb, emu_sram_read(e, d, u, in->b + r, local), (size_t)vb);
  PendingWrite *out = pending_write(e, d, s->unit, in->a, in->d * (uint32_t)rowvecs, local,
                                    emu_global_at(d, local + cycles + EMU_MXM_LATENCY));
  memset(out->data, 0, (size_t)out->nvec * (size_t)vb);
  for (uint32_t r = 0; r < in->d; r++)
    num_mxm_row(dt, vb, act + (size_t)r * (size_t)vb, rows, out->data + (size_t)r * (size_t)rowvecs * (size_t)vb);
  emu_push_write(e, emu_global_at(d, local), out);
  free(w);
  free(act);
  free(rows);
  free(s);
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
  case OPC_VADD:
  case OPC_VMAX:
  case OPC_VRELU:
  case OPC_VMOV: {
    uint32_t n = in->op == OPC_VADD || in->op == OPC_VMAX ? in->d : in->c;  // the last operand
    emu_push(e, emu_global_at(d, L), EV_VXM, d->id, unit, emu_stream_new(in, d->id, unit, L, n, 1));
    next = L + n;
    break;
  }
  case OPC_MXM:
    emu_push(e, emu_global_at(d, L), EV_MXM, d->id, unit, emu_stream_new(in, d->id, unit, L, 1, 1));
    next = L + isa_mxm_cycles((DType)in->dtype, in->d);
    break;
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
  default: unreachable();  // the compute opcodes: not executed yet
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
    port->rng = rng_for(e->opt.seed, 1, (uint64_t)d->id << 16 | (uint64_t)p);
    if (port->link < 0) continue;
    const Link *l = &e->topo->links.data[port->link];
    port->failed = l->failed;
    port->every = ir_cycles_per_vector(&l->p, e->topo->clock_mhz);
    port->latency_min = l->p.latency_min;
    port->latency_max = l->p.latency_max;
  }
}

static void init_device(Emu *e, EDev *d, int id) {
  uint64_t rng = rng_for(e->opt.seed, 2, (uint64_t)id);
  d->id = id;
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
    isa_unit_format(unit->name, sizeof unit->name, unit->prog->kind, unit->prog->port);
  }
  init_records(e, d);
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

// Tracks: one per unit (its instructions), and for each unit with a port one for
// what its port sends and one for what it receives (the streams run on
// while the unit issues on), so every link arrow starts and ends in a slice.
static void name_trace(Emu *e) {
  for (int i = 0; i < e->ndevs; i++) {
    char name[48];
    snprintf(name, sizeof name, "dev%04d", i);
    trace_name_process(e->trace, i, name);
    for (int u = 0; u < e->devs[i].nunits; u++) {
      const EUnit *unit = &e->devs[i].units[u];
      trace_name_thread(e->trace, i, u, unit->name);
      if (!uses_port(unit->prog)) continue;  // no empty tracks
      snprintf(name, sizeof name, "%s send", unit->name);
      trace_name_thread(e->trace, i, emu_trace_track(u, 1), name);
      snprintf(name, sizeof name, "%s receive", unit->name);
      trace_name_thread(e->trace, i, emu_trace_track(u, 2), name);
    }
  }
}

int emu_trace_track(int unit, int which) { return unit + which * EMU_TRACE_TRACKS; }

Emu *emu_new(Arena *a, const EmuInput *in, const EmuOptions *opt, char *err, size_t errlen) {
  if (!one_vector_size(in->topo, err, errlen)) return NULL;
  Emu *e = xcalloc(1, sizeof *e);
  *e = (Emu){.a = a, .in = in, .opt = *opt, .topo = in->topo, .vector_bytes = in->topo->link.vector_bytes};
  if (opt->trace_path && !(e->trace = trace_open(opt->trace_path, in->topo->clock_mhz, err, errlen))) {
    free(e);
    return NULL;
  }
  e->ndevs = in->topo->ndevices;
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

static void dispatch(Emu *e, const Event *ev) {
  switch (ev->type) {
  case EV_WAKE: wake_parked(e, &e->devs[ev->dev], ev->t); break;
  case EV_RECV: link_step_recv(e, ev->stream); break;
  case EV_SEND: link_step_send(e, ev->stream); break;
  case EV_VXM: step_vxm(e, ev->stream); break;
  case EV_MXM: step_mxm(e, ev->stream); break;
  case EV_LAND: land(e, ev->write); break;
  case EV_UNIT: issue(e, &e->devs[ev->dev], ev->unit); break;
  case EV_POLL: link_step_poll(e, &e->devs[ev->dev], ev->unit, ev->t); break;
  case EV_TYPE_COUNT: unreachable();
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
  e->first_start = INT64_MAX;
  for (int i = 0; i < e->ndevs; i++) {
    EDev *d = &e->devs[i];
    e->first_start = MIN(e->first_start, d->start);
    e->last_activity = MAX(e->last_activity, d->start);
    for (int u = 0; u < d->nunits; u++) emu_resume(e, d, u, 0);
  }
  Tick limit = e->first_start + e->opt.max_cycles * EMU_TICKS_PER_CYCLE;
  while (queued(e) > 0 && !e->stop) {
    Event ev = pop(e);
    if (ev.t > limit) {
      emu_violate(e, VIOL_HANG, -1, NULL, -1, e->opt.max_cycles,
                  "still running after %lld cycles (--max-cycles)", (long long)e->opt.max_cycles);
      event_free(&ev);
      e->last_activity = limit;  // the run lasted until it was cut
      break;
    }
    e->last_activity = MAX(e->last_activity, ev.t);
    dispatch(e, &ev);
  }
  if (!e->stop && e->last_activity > limit) {  // results that land past the limit
    emu_violate(e, VIOL_HANG, -1, NULL, -1, e->opt.max_cycles,
                "still running after %lld cycles (--max-cycles)", (long long)e->opt.max_cycles);
    e->last_activity = limit;
  }
  drain_queue(e);
  r->cycles = (e->last_activity - e->first_start + EMU_TICKS_PER_CYCLE - 1) / EMU_TICKS_PER_CYCLE;
  check_after_run(e);
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
    free(e->devs[i].units);
    free(e->devs[i].ports);
  }
  free(e->devs);
  for (int i = 0; i < EMU_WHEEL_CYCLES; i++) free(e->wheel[i].e);
  free(e->wheel);
  free(e->heap);
  free(e);
}
