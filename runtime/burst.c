// burst.c: bursts, a SEND or RECV stream running several elements in one
// event.  Part of runtime/; link.c's stream steps ask here, after each
// element, whether the next may run at once instead of as an event of its
// own, and emu.c keeps the bookkeeping this needs (each device's active
// streams, its queued wake-ups and landings).
//
// Element k of a stream has the key (its tick, the stream's order) however
// it is run (emu_push), and runs within one window, where nothing another
// device does reaches this device before the window ends (window.c).  So
// running element k early, from the event of element k - 1, gives exactly
// what running it at its own key gives when nothing this device does
// between the two keys touches what it touches:
//
//   - no unit of the device issues, wakes or polls before it (an issue can
//     start a stream, change a port or the clock), and the device is alive;
//   - no stream of the device that the emulator does not model here (the
//     matrix and switch units, installs, VCVT, VRSUM, VRMAX) is running;
//   - for every vector it reads or writes, every access to that vector by
//     another stream of the device (one of them a write) has been run
//     exactly when its key is before the element's: a stream runs its
//     elements in order, so element e of it has run iff e < its k, and its
//     key is known in closed form (start + e x every on the device's clock;
//     a vector op's write lands in class 4 of its tick);
//   - no landing is queued for that vector (a vector op's result written
//     in class 4 of the tick its element ran);
//   - no other stream sends (SEND) or takes (RECV) on its port.
//
// What it reports (violations, trace arrows, departures) carries the
// element's own key, so window.c sorts a partition's lists once a window
// that had bursts ends, and the merge sees what one event an element would
// have made.  The report, the trace and the data are byte for byte those
// of --bursts off (test/lit/emu/bursts-same.test, on random programs).
#include "emu_internal.h"

// A plan costs about as much as a few events (it looks at every stream of
// the device, whose memory is cold by then), so a stream with fewer
// elements left than this runs them as events.  Measured on a quiet
// machine (user seconds, medians of 4 runs in ABBA order): rack72's 8 MiB
// allreduce, streams of about 30 vectors, 2.79 s with bursts for every
// stream, 2.67-2.79 s with this threshold, 2.70 s with --bursts off; the
// 64 MiB one, 243-vector streams, 1.08x faster with bursts
// (bench/results/emu-throughput.txt).
#define BURST_MIN_ELEMENTS 64

// WAITs a unit's next instructions are looked through for the first that
// does something (burst_unit_effect): a unit's WAITs come one at a time.
#define BURST_MAX_WAITS 4

// A vector op's write of element e is the landing in class 4 of its tick:
// after every read and take of that tick (emu.c's event classes).
#define LAND_ORDER ((uint64_t)4 << EMU_EVENT_CLASS_SHIFT)

static bool is_vxm_modeled(Opcode op, bool *binary, bool *scalar) {
  *binary = *scalar = false;
  switch (op) {
  case OPC_VADD: case OPC_VSUB: case OPC_VMUL: case OPC_VDIV: case OPC_VMAX: *binary = true; return true;
  case OPC_VADDS: case OPC_VSUBS: case OPC_VMULS: *scalar = true; return true;
  case OPC_VMOV: case OPC_VRELU: case OPC_VEXP: case OPC_VERF: case OPC_VRSQRT: case OPC_VRECIP: return true;
  default: return false;
  }
}

bool burst_models(const Stream *s) {
  bool binary, scalar;
  Opcode op = (Opcode)s->in.op;
  return op == OPC_SEND || op == OPC_RECV || is_vxm_modeled(op, &binary, &scalar);
}

// The operands of a modeled stream s (op, its Instr's a, b, c), into out;
// returns how many.
static int operands_of(Opcode op, const Stream *s, uint32_t a, uint32_t b, uint32_t c, Operand out[3]) {
  if (op == OPC_SEND) return out[0] = (Operand){s, a, false, false, s->order}, 1;
  if (op == OPC_RECV) return out[0] = (Operand){s, a, true, false, s->order}, 1;
  bool binary, scalar;
  is_vxm_modeled(op, &binary, &scalar);
  int n = 0;
  out[n++] = (Operand){s, a, true, false, LAND_ORDER};
  out[n++] = (Operand){s, b, false, false, s->order};
  if (binary || scalar) out[n++] = (Operand){s, c, false, scalar, s->order};
  return n;
}

// The vectors [lo, hi) operand o of a stream of n elements touches from
// element k on.
static void span_of(const Operand *o, uint32_t k, uint32_t n, uint64_t *lo, uint64_t *hi) {
  *lo = o->scalar ? o->base : (uint64_t)o->base + k;
  *hi = o->scalar ? (uint64_t)o->base + 1 : (uint64_t)o->base + n;
}

// ---- the device's bookkeeping (emu.c calls these) -------------------------------------------

void burst_track(Emu *e, Stream *s) {
  EDev *d = &e->devs[s->dev];
  d->changes++;
  s->active = -1;
  if (!burst_models(s)) {
    d->blockers++;
    return;
  }
  if (d->nactive == d->active_cap) {
    d->active_cap = d->active_cap ? 2 * d->active_cap : 8;
    d->active = xrealloc(d->active, (size_t)d->active_cap * sizeof *d->active);
    d->spans = xrealloc(d->spans, (size_t)d->active_cap * sizeof *d->spans);
  }
  s->active = d->nactive;
  ActiveStream *a = &d->active[d->nactive];
  ActiveSpan *sp = &d->spans[d->nactive++];
  Operand ops[3];
  *a = (ActiveStream){.s = s};
  *sp = (ActiveSpan){.wlo = UINT32_MAX, .alo = UINT32_MAX, .op = s->in.op, .port = (uint8_t)s->in.port};
  a->nops = operands_of((Opcode)s->in.op, s, s->in.a, s->in.b, s->in.c, ops);
  for (int i = 0; i < a->nops; i++) {
    uint64_t lo, hi;
    span_of(&ops[i], 0, s->n, &lo, &hi);
    uint32_t l = (uint32_t)lo, h = (uint32_t)MIN(hi, UINT32_MAX);
    a->ops[i] = (struct ActiveOperand){ops[i], h};
    sp->alo = MIN(sp->alo, l), sp->ahi = MAX(sp->ahi, h);
    if (ops[i].write) sp->wlo = MIN(sp->wlo, l), sp->whi = MAX(sp->whi, h);
  }
}

void burst_untrack(Emu *e, Stream *s) {
  if (!s->order) return;  // never pushed
  EDev *d = &e->devs[s->dev];
  d->changes++;
  if (s->active < 0) {
    d->blockers--;
    return;
  }
  int last = --d->nactive;
  d->active[s->active] = d->active[last];
  d->spans[s->active] = d->spans[last];
  d->active[s->active].s->active = s->active;  // (itself when it was last)
  s->active = -1;
}

void burst_land_queued(EDev *d, uint32_t addr, uint32_t nvec) {
  if (d->lands_queued++ == 0) d->lands_lo = addr, d->lands_hi = addr + nvec;
  d->lands_lo = MIN(d->lands_lo, addr);
  d->lands_hi = MAX(d->lands_hi, addr + nvec);
}

void burst_land_done(EDev *d) { d->lands_queued--; }

void burst_wake_queued(EDev *d, Tick t) {
  d->changes++;
  d->wake_min = d->wakes_queued++ ? MIN(d->wake_min, t) : t;
}

// The wake-ups still queued come at or after this one: t stays a bound.
void burst_wake_done(EDev *d, Tick t) {
  d->changes++;
  if (--d->wakes_queued == 0) d->wake_min = INT64_MAX;
  else d->wake_min = MAX(d->wake_min, t);
}

// ---- planning a burst -----------------------------------------------------------------------

// When a ready unit next issues something other than a WAIT (a WAIT
// changes nothing a burst sees), looking BURST_MAX_WAITS instructions
// ahead; INT64_MAX: it runs off its program (it does nothing more).
// emu.c keeps it in EUnit.effect whenever the unit is ready again.
Tick burst_unit_effect(const EDev *d, const EUnit *u) {
  int64_t local = u->next_local;
  const Instr *code = u->prog->code.data;
  int len = u->prog->code.len;
  for (int pc = u->pc, n = 0; pc < len; pc++, n++) {
    const Instr *in = &code[pc];
    if (in->op != OPC_WAIT || n == BURST_MAX_WAITS) return emu_global_at(d, local);
    local += in->a;
  }
  return INT64_MAX;
}

// The first tick at which the device does something a burst cannot pass:
// a unit's issue, wake-up or poll, its death, the window's end.
// INT64_MIN: no burst on this device now.  Kept until the device's units
// or streams change (d->changes).
static Tick device_limit(const Emu *e, EDev *d) {
  if (d->blockers) return INT64_MIN;
  if (d->limit_at != d->changes) {
    Tick limit = d->dies_at;
    if (d->wakes_queued) limit = MIN(limit, d->wake_min);
    for (int i = 0; i < d->nunits; i++) {
      const EUnit *u = &d->units[i];
      if (u->state == UNIT_POLLING) {
        limit = INT64_MIN;
        break;
      }
      if (u->state == UNIT_READY) limit = MIN(limit, u->effect);
    }
    d->limit = limit;
    d->limit_at = d->changes;
  }
  return MIN(d->limit, e->burst_end);
}

// Stream s's burst: s's own operands and the operands of the device's
// other streams that touch what s has left to touch, one of the two a
// write (false: no burst now).
static bool plan(EDev *d, const Stream *s, Burst *b) {
  b->n = 0;
  b->nown = operands_of((Opcode)s->in.op, s, s->in.a, s->in.b, s->in.c, b->own);
  bool vxm = b->nown > 1;
  uint64_t olo[3], ohi[3], wlo = UINT64_MAX, whi = 0, alo = UINT64_MAX, ahi = 0;
  for (int o = 0; o < b->nown; o++) {
    span_of(&b->own[o], s->k, s->n, &olo[o], &ohi[o]);
    alo = MIN(alo, olo[o]), ahi = MAX(ahi, ohi[o]);
    if (b->own[o].write) wlo = MIN(wlo, olo[o]), whi = MAX(whi, ohi[o]);
  }
  for (int j = 0; j < d->nactive; j++) {
    const ActiveSpan *sp = &d->spans[j];
    if (j == s->active) continue;
    if (sp->op == s->in.op && sp->port == s->in.port && !vxm) return false;  // one port, two streams
    if (vxm && sp->op != OPC_SEND && sp->op != OPC_RECV) return false;  // two vector ops: their landings' order
    if (!(sp->wlo < ahi && alo < sp->whi) && !(sp->alo < whi && wlo < sp->ahi)) continue;  // nothing meets a write
    const ActiveStream *a = &d->active[j];
    for (int i = 0; i < a->nops; i++) {
      const struct ActiveOperand *x = &a->ops[i];
      bool meets = false;
      for (int o = 0; o < b->nown && !meets; o++)
        meets = (x->op.write || b->own[o].write) && x->op.base < ohi[o] && olo[o] < x->hi;
      if (!meets) continue;
      if (b->n == BURST_MAX_OPERANDS) return false;
      b->op[b->n++] = x->op;
    }
  }
  return true;
}

// Element el of operand o: its vector and key.
static uint32_t vector_of(const Operand *o, uint32_t el) { return o->scalar ? o->base : o->base + el; }

// Whether operand o of another stream and an access of element m (vector x
// at key (t, order), `write` or not) see each other as their keys say: o's
// access to x has run iff its key comes first.  Two reads always agree.
static bool agrees(const EDev *d, const Operand *o, uint32_t x, Tick t, uint64_t order, bool write) {
  if (!write && !o->write) return true;
  if (o->scalar) return x != o->base;
  if (x < o->base || x - o->base >= o->s->n) return true;
  uint32_t el = x - o->base;
  Tick at = emu_global_at(d, o->s->start + (int64_t)el * o->s->every);
  if (at == t && o->order == order) return false;  // two landings in one tick
  bool first = at < t || (at == t && o->order < order);
  return first == (el < o->s->k);
}

bool burst_next(Emu *e, Stream *s, Burst *b) {
  EDev *d = &e->devs[s->dev];
  Tick t = emu_global_at(d, s->start + (int64_t)s->k * s->every);
  if (t >= e->burst_end) return false;  // (0 with bursts off and in one-thread windows)
  if (!b->planned) {
    if (s->n - s->k < BURST_MIN_ELEMENTS) return false;
    b->planned = true;
    b->limit = device_limit(e, d);
    if (t >= b->limit || !plan(d, s, b)) b->limit = INT64_MIN;
  }
  if (t >= b->limit) return false;
  for (int o = 0; o < b->nown; o++) {
    uint32_t x = vector_of(&b->own[o], s->k);
    if (d->lands_queued && x >= d->lands_lo && x < d->lands_hi) return false;
    for (int i = 0; i < b->n; i++)
      if (!agrees(d, &b->op[i], x, t, b->own[o].order, b->own[o].write)) return false;
  }
  e->cur = (Key){.t = t, .order = s->order};
  e->events++;
  e->burst_elements++;
  e->last_activity = MAX(e->last_activity, t);
  e->bursted = true;
  return true;
}

Key burst_land_key(const Stream *s, Tick t) {
  return (Key){.t = t, .order = LAND_ORDER | (uint64_t)s->dev << EMU_EVENT_DEV_SHIFT | EV_LAND};
}
