// fault.c: link errors and the links' forward error correction, cables and
// devices that die mid-run, and what the runtime's software replay makes of
// them.  Part of runtime/: link.c hands every vector it puts on a wire to
// fault_on_wire, emu.c drops a dead device's events, check.c asks for the
// dead cables' and devices' violations first; tools/tsp-emu.c replays.
//
// Seed 002 s4.5 (Forward error correction): a link-layer retry would move
// arrival times and break the global schedule, so every link corrects
// simple transmission errors in situ with FEC and flags what it cannot
// correct: single-bit errors are corrected, multi-bit errors detected, and
// the runtime replays the inference (a software replay) to learn whether
// the fault is transient (gone on the replay) or persists and needs
// physical intervention (a marginal cable, power supply or card to
// replace).  The model (docs/isa.md, Faults):
//
//   - one SEC-DED codeword per vector as it is on the wire: wire_bytes x 8
//     bits (2,624 at the defaults); an extended Hamming code over them needs
//     13 check bits, which ride in the wire_bytes - vector_bytes beyond the
//     payload (8 bytes at the defaults, seed 002 fig 11);
//   - 1 flipped bit: corrected in place by the receiver's decoder, whose
//     fixed latency is part of the link's latency_cycles: data and timing
//     unchanged; counted per link direction;
//   - 2 or more: detected.  A SEC-DED code guarantees that for 2; for 3 or
//     more the model follows the seed ("detect all multi-bit errors") and
//     never miscorrects.  The vector arrives on time with its payload bits
//     flipped, a link-error violation names the cable, the cycle and the
//     vector, and the run's outputs are untrusted: the runtime replays;
//   - --ber RATE: every bit on every link flips independently with
//     probability RATE.  Each link direction draws the gap to its next
//     flipped bit from the geometric distribution (one draw per error, not
//     per bit) out of its own splitmix64 stream seeded by --seed; the
//     streams go on from run to run, so a replay meets other errors;
//   - --inject sbe|mbe:A-B@C: the first vector to leave A for B on their
//     cable at or after global cycle C gets 1 (sbe) or FAULT_MBE_BITS (mbe)
//     more flipped bits, once: a transient fault, which a replay never sees;
//   - --fail-link A-B@C: from global cycle C the cable carries nothing, in
//     either direction: a vector that would arrive from C on is lost.
//     --fail-device N@C: from C device N does nothing (its events are
//     dropped) and all of its cables are dead.  Both strike every run: a
//     persistent fault.
#include "emu_internal.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// One direction of a cable (link l: wires 2l, a to b, and 2l + 1, b to a).
typedef struct Wire {
  uint64_t rng;     // --ber: this direction's stream
  uint64_t until;   // --ber: the bits that pass before the next flipped one
  int64_t vectors;  // vectors (and notifications) that crossed it, every run
  int64_t corrected, detected, lost;
  int64_t lost_run;  // lost in the run going on
} Wire;

// What made a run faulty: its earliest fault.
typedef enum { FE_NONE, FE_DETECTED, FE_CABLE, FE_DEVICE } FaultEventKind;
typedef struct FaultEvent {
  FaultEventKind kind;
  int link;       // FE_DETECTED, FE_CABLE
  int device;     // FE_DEVICE
  int64_t cycle;  // global: the arrival of the vector, or the death
} FaultEvent;

// A detected error, as the report lists it.
typedef struct Detected {
  int run, link, from_dev, from_port, to_dev, to_port;
  int64_t sent, arrives;  // global cycles
  int64_t sram_vector;    // the sender's; -1: a notification
  int bits;
} Detected;

struct Faults {
  const Topology *t;
  double ber;
  int replays;
  int wire_bits, payload_bits;
  FaultSpec *specs;
  int nspecs;
  int *spec_link;          // --inject, --fail-link: the cable
  int *fired_run;          // --inject: the run it struck (0: none yet)
  int64_t *fired_cycle;    // --inject: the global cycle its vector left
  int armed;               // --inject options not fired yet
  uint64_t inject_rng;     // the bits an --inject flips
  Wire *wires;
  int *cable_runs, *cable_last;    // per link: the runs a fault struck it in; the last
  int *device_runs, *device_last;  // per device: the same
  int run;                 // runs so far (the first is 1)
  FaultEvent *first;       // per run: its earliest fault
  int64_t *cycles;         // per run: its length
  uint64_t bits;           // on the wire, every run
  int64_t corrected, detected, lost;
  int64_t detected_run, lost_run;
  bool device_died_run;    // a device died in the run going on
  bool died_run;           // a cable or device died in it
  Detected *list;          // the first FAULT_MAX_RECORDED detected errors
  int nlist;
};

static const char *const kind_option[] = {
    [FAULT_INJECT_SBE] = "--inject", [FAULT_INJECT_MBE] = "--inject",
    [FAULT_FAIL_LINK] = "--fail-link", [FAULT_FAIL_DEVICE] = "--fail-device"};

// ---- reading the options ------------------------------------------------------------------

// A run of digits at *s, at most max: advances past it.
static bool read_int(const char **s, int64_t max, int64_t *out) {
  const char *p = *s;
  char digits[24];
  size_t n = 0;
  while (*p >= '0' && *p <= '9' && n < sizeof digits - 1) digits[n++] = *p++;
  if (n == 0 || (*p >= '0' && *p <= '9')) return false;
  digits[n] = 0;
  if (!str_to_i64(digits, out) || *out > max) return false;
  *s = p;
  return true;
}

bool fault_parse(FaultKind kind, const char *arg, FaultSpec *out, char *err, size_t errlen) {
  static const char *const forms[] = {
      [FAULT_INJECT_SBE] = "sbe:A-B@CYCLE or mbe:A-B@CYCLE", [FAULT_INJECT_MBE] = "sbe:A-B@CYCLE or mbe:A-B@CYCLE",
      [FAULT_FAIL_LINK] = "A-B@CYCLE", [FAULT_FAIL_DEVICE] = "N@CYCLE"};
  *out = (FaultSpec){.kind = kind, .b = -1, .arg = arg};
  const char *s = arg;
  int64_t a, b = -1, cycle;
  bool ok = true;
  if (kind != FAULT_FAIL_DEVICE && kind != FAULT_FAIL_LINK) {
    if (!strncmp(s, "sbe:", 4) || !strncmp(s, "mbe:", 4))
      out->kind = s[0] == 's' ? FAULT_INJECT_SBE : FAULT_INJECT_MBE, s += 4;
    else
      ok = false;
  }
  ok = ok && read_int(&s, INT_MAX, &a);
  if (ok && kind != FAULT_FAIL_DEVICE) ok = *s++ == '-' && read_int(&s, INT_MAX, &b);
  ok = ok && *s++ == '@';
  const char *at = s;
  if (ok && (!read_int(&s, INT64_MAX, &cycle) || *s)) ok = false;
  if (!ok) {
    snprintf(err, errlen, "%s takes %s, not '%s'", kind_option[kind], forms[kind], arg);
    return false;
  }
  if (cycle > FAULT_MAX_CYCLE) {
    snprintf(err, errlen, "%s %s: the cycle must be at most %lld, not %s", kind_option[kind], arg,
             (long long)FAULT_MAX_CYCLE, at);
    return false;
  }
  if (a == b) {
    snprintf(err, errlen, "%s %s: a cable joins two different devices, not %lld and %lld", kind_option[kind], arg,
             (long long)a, (long long)b);
    return false;
  }
  out->a = (int)a, out->b = (int)b, out->cycle = cycle;
  return true;
}

// The cable the option names: the working link of lowest id that joins a
// and b (as the topology's failed_links picks one).  -1 after saying why.
// claimed (NULL: none): the cables earlier --fail-link options fail, so
// that a second --fail-link between two devices joined by parallel cables
// fails the next of them, as a second failed_links entry does.
static int find_cable(const Topology *t, const FaultSpec *s, const bool *claimed, char *err, size_t errlen) {
  int found = -1;
  bool failed = false, taken = false;
  const Device *d = &t->devices[s->a];
  for (int p = 0; p < d->nports; p++) {
    int id = d->ports[p].link;
    if (id < 0 || d->ports[p].peer != s->b) continue;
    if (t->links.data[id].failed)
      failed = true;
    else if (claimed && claimed[id])
      taken = true;
    else if (found < 0 || id < found)
      found = id;
  }
  if (found >= 0) return found;
  int dead = ir_device_failed(t, s->a) ? s->a : ir_device_failed(t, s->b) ? s->b : -1;
  if (taken)
    snprintf(err, errlen, "%s %s: every cable between devices %d and %d is failed already, by an earlier --fail-link",
             kind_option[s->kind], s->arg, s->a, s->b);
  else if (failed && dead >= 0)
    snprintf(err, errlen, "%s %s: the cable between devices %d and %d has failed already: device %d has failed (the "
             "topology's failed_nodes or failed_devices)", kind_option[s->kind], s->arg, s->a, s->b, dead);
  else if (failed)
    snprintf(err, errlen, "%s %s: the cable between devices %d and %d has failed already (the topology's failed_links)",
             kind_option[s->kind], s->arg, s->a, s->b);
  else
    snprintf(err, errlen, "%s %s: no cable joins devices %d and %d", kind_option[s->kind], s->arg, s->a, s->b);
  return -1;
}

// The gap, in bits, to the next flipped bit: geometric with p = ber, P(gap
// >= k) = (1 - p)^k, by inversion: floor(log(v) / log(1 - p)) for v
// uniform in (0, 1) (53-bit steps, centred: v < 1 - 2^-54, so a p below
// that never gives a gap of 0 by rounding).
static uint64_t draw_gap(uint64_t *rng, double ber) {
  if (ber >= 1) return 0;
  double v = ((double)(emu_rng(rng) >> 11) + 0.5) * 0x1.0p-53;
  double gap = floor(log(v) / log1p(-ber));
  return gap >= 0x1.0p62 ? (uint64_t)1 << 62 : (uint64_t)gap;
}

// Whether failure x already fails what failure y fails: one device twice,
// or a cable of a device that fails (its cables die with it, and each
// would report the cable's losses), as the topology refuses a failed link
// of a failed device.  (Two --fail-link never name one cable: find_cable.)
static bool fails_the_same(const Topology *t, const FaultSpec *x, int x_link, const FaultSpec *y, int y_link) {
  if (x->kind == FAULT_FAIL_DEVICE && y->kind == FAULT_FAIL_DEVICE) return x->a == y->a;
  if (x->kind == FAULT_FAIL_DEVICE) return fails_the_same(t, y, y_link, x, x_link);
  const Link *l = &t->links.data[x_link];
  return x->kind == FAULT_FAIL_LINK && y->kind == FAULT_FAIL_DEVICE && (l->a == y->a || l->b == y->a);
}

// False, with the reason in err, when two failures fail the same cable or
// device: each would report its losses, counting them twice.
static bool failures_distinct(const Faults *f, char *err, size_t errlen) {
  for (int j = 0; j < f->nspecs; j++)
    for (int i = 0; i < j; i++) {
      const FaultSpec *x = &f->specs[i], *y = &f->specs[j];
      if (!fails_the_same(f->t, x, f->spec_link[i], y, f->spec_link[j])) continue;
      if (x->kind == y->kind) {
        snprintf(err, errlen, "--fail-device %s fails the same device as --fail-device %s: give each once", y->arg,
                 x->arg);
      } else {
        const FaultSpec *link = x->kind == FAULT_FAIL_LINK ? x : y, *dev = x == link ? y : x;
        snprintf(err, errlen, "--fail-link %s is a cable of device %d, which --fail-device %s fails with all its "
                 "cables: give the link or the device, not both", link->arg, dev->a, dev->arg);
      }
      return false;
    }
  return true;
}

// Checks each option against the topology and finds its cable; false
// with the reason in err.  claimed: by cable, failed by an earlier
// --fail-link.
static bool resolve_specs(Faults *f, const Topology *t, bool *claimed, char *err, size_t errlen) {
  for (int i = 0; i < f->nspecs; i++) {
    const FaultSpec *s = &f->specs[i];
    f->spec_link[i] = -1;
    int bad = s->a >= t->ndevices ? s->a : s->b >= t->ndevices ? s->b : -1;
    if (bad >= 0) {
      snprintf(err, errlen, "%s %s: device %d does not exist (the topology has %d)", kind_option[s->kind], s->arg, bad,
               t->ndevices);
      return false;
    }
    if (s->kind == FAULT_FAIL_DEVICE && ir_device_failed(t, s->a)) {
      snprintf(err, errlen, "%s %s: device %d has failed already (the topology's failed_nodes or failed_devices)",
               kind_option[s->kind], s->arg, s->a);
      return false;
    }
    if (s->kind == FAULT_FAIL_DEVICE) continue;
    if ((f->spec_link[i] = find_cable(t, s, s->kind == FAULT_FAIL_LINK ? claimed : NULL, err, errlen)) < 0)
      return false;
    if (s->kind != FAULT_FAIL_LINK) f->armed++;
    else claimed[f->spec_link[i]] = true;
  }
  return true;
}

Faults *fault_new(const Topology *t, double ber, const FaultSpec *specs, int nspecs, int replays, uint64_t seed,
                  char *err, size_t errlen) {
  Faults *f = xcalloc(1, sizeof *f);
  int nlinks = t->links.len;
  *f = (Faults){.t = t, .ber = ber, .replays = replays, .wire_bits = t->link.wire_bytes * 8,
                .payload_bits = t->link.vector_bytes * 8, .nspecs = nspecs};
  f->specs = xcalloc((size_t)MAX(nspecs, 1), sizeof *f->specs);
  f->spec_link = xcalloc((size_t)MAX(nspecs, 1), sizeof *f->spec_link);
  f->fired_run = xcalloc((size_t)MAX(nspecs, 1), sizeof *f->fired_run);
  f->fired_cycle = xcalloc((size_t)MAX(nspecs, 1), sizeof *f->fired_cycle);
  f->wires = xcalloc((size_t)MAX(2 * nlinks, 1), sizeof *f->wires);
  f->cable_runs = xcalloc((size_t)MAX(nlinks, 1), sizeof *f->cable_runs);
  f->cable_last = xcalloc((size_t)MAX(nlinks, 1), sizeof *f->cable_last);
  f->device_runs = xcalloc((size_t)MAX(t->ndevices, 1), sizeof *f->device_runs);
  f->device_last = xcalloc((size_t)MAX(t->ndevices, 1), sizeof *f->device_last);
  f->first = xcalloc((size_t)replays + 1, sizeof *f->first);
  f->cycles = xcalloc((size_t)replays + 1, sizeof *f->cycles);
  f->inject_rng = emu_rng_for(seed, 4, 0);
  if (nspecs) memcpy(f->specs, specs, sizeof *specs * (size_t)nspecs);
  bool *claimed = xcalloc((size_t)MAX(nlinks, 1), sizeof *claimed);  // by an earlier --fail-link
  bool ok = resolve_specs(f, t, claimed, err, errlen) && failures_distinct(f, err, errlen);
  free(claimed);
  if (!ok) {
    fault_free(f);
    return NULL;
  }
  for (int w = 0; w < 2 * nlinks && ber > 0; w++) {
    f->wires[w].rng = emu_rng_for(seed, 3, (uint64_t)w);
    f->wires[w].until = draw_gap(&f->wires[w].rng, ber);
  }
  return f;
}

void fault_free(Faults *f) {
  if (!f) return;
  free(f->specs);
  free(f->spec_link);
  free(f->fired_run);
  free(f->fired_cycle);
  free(f->wires);
  free(f->cable_runs);
  free(f->cable_last);
  free(f->device_runs);
  free(f->device_last);
  free(f->first);
  free(f->cycles);
  free(f->list);
  free(f);
}

// ---- a run --------------------------------------------------------------------------------

static Tick tick_of(int64_t cycle) { return cycle * EMU_TICKS_PER_CYCLE; }

// Both ends of link l stop carrying anything at tick t.
static void kill_cable(Emu *e, int l, Tick t) {
  const Link *L = &e->topo->links.data[l];
  EPort *a = &e->devs[L->a].ports[L->a_port], *b = &e->devs[L->b].ports[L->b_port];
  a->dies_at = MIN(a->dies_at, t);
  b->dies_at = MIN(b->dies_at, t);
}

void fault_begin_run(Emu *e) {
  Faults *f = e->opt.faults;
  if (!f) return;
  assert(f->run <= f->replays);
  f->first[f->run++] = (FaultEvent){.kind = FE_NONE};
  f->detected_run = f->lost_run = 0;
  f->device_died_run = f->died_run = false;
  for (int w = 0; w < 2 * e->topo->links.len; w++) f->wires[w].lost_run = 0;
  for (int i = 0; i < f->nspecs; i++) {
    const FaultSpec *s = &f->specs[i];
    if (s->kind == FAULT_FAIL_LINK) kill_cable(e, f->spec_link[i], tick_of(s->cycle));
    if (s->kind != FAULT_FAIL_DEVICE) continue;
    EDev *d = &e->devs[s->a];
    d->dies_at = MIN(d->dies_at, tick_of(s->cycle));
    for (int p = 0; p < d->nports; p++)
      if (d->ports[p].link >= 0) kill_cable(e, d->ports[p].link, tick_of(s->cycle));
  }
}

// Records that a fault struck this cable or device in this run, and keeps
// the run's earliest fault.
static void blame(Faults *f, FaultEvent ev) {
  int *runs = ev.kind == FE_DEVICE ? &f->device_runs[ev.device] : &f->cable_runs[ev.link];
  int *last = ev.kind == FE_DEVICE ? &f->device_last[ev.device] : &f->cable_last[ev.link];
  if (*last != f->run) *last = f->run, ++*runs;
  FaultEvent *first = &f->first[f->run - 1];
  if (first->kind == FE_NONE || ev.cycle < first->cycle) *first = ev;
}

// "the cable between devices 0 and 1 (device 0 port 1, device 1 port 0)"
static void name_cable(char *buf, size_t n, const Topology *t, int l, bool ports) {
  const Link *L = &t->links.data[l];
  if (ports)
    snprintf(buf, n, "the cable between devices %d and %d (device %d port %d, device %d port %d)", L->a, L->b, L->a,
             L->a_port, L->b, L->b_port);
  else
    snprintf(buf, n, "the cable between devices %d and %d", L->a, L->b);
}

// A flipped bit at position pos of the wire vector.  The FEC corrects a
// lone one, so the payload shows flips only from the second on (then all).
static void flip_bit(const Faults *f, uint8_t *payload, int64_t pos) {
  if (payload && pos < f->payload_bits) payload[pos / 8] ^= (uint8_t)(1u << (pos % 8));
}

static void flip(const Faults *f, int *n, int64_t *first, int64_t pos, uint8_t *payload) {
  if (++*n == 1) {
    *first = pos;
    return;
  }
  if (*n == 2) flip_bit(f, payload, *first);
  flip_bit(f, payload, pos);
}

// The --inject options that strike this vector: the first on their wire to
// leave at or after their cycle (once in all runs).
static void inject(Faults *f, int link, int from, Tick departs, int *n, int64_t *first, uint8_t *payload) {
  for (int i = 0; i < f->nspecs; i++) {
    const FaultSpec *s = &f->specs[i];
    if (s->kind > FAULT_INJECT_MBE || f->fired_run[i] || f->spec_link[i] != link || s->a != from ||
        departs < tick_of(s->cycle))
      continue;
    f->fired_run[i] = f->run;
    f->fired_cycle[i] = departs / EMU_TICKS_PER_CYCLE;
    f->armed--;
    int64_t p0 = (int64_t)(emu_rng(&f->inject_rng) % (uint64_t)f->wire_bits);
    flip(f, n, first, p0, payload);
    if (s->kind == FAULT_INJECT_SBE) continue;
    for (int k = 1; k < FAULT_MBE_BITS; k++) {  // other bits than p0's
      int64_t p = (int64_t)(emu_rng(&f->inject_rng) % (uint64_t)(f->wire_bits - 1));
      flip(f, n, first, p >= p0 ? p + 1 : p, payload);
    }
  }
}

static void record_detected(Emu *e, Faults *f, const Detected *det) {
  if (f->nlist < FAULT_MAX_RECORDED) {
    if (!f->list) f->list = xmalloc(FAULT_MAX_RECORDED * sizeof *f->list);
    f->list[f->nlist++] = *det;
  }
  char cable[160], what[96];
  name_cable(cable, sizeof cable, e->topo, det->link, true);
  if (det->sram_vector >= 0)
    snprintf(what, sizeof what, "the vector device %d sent from SRAM vector %lld", det->from_dev,
             (long long)det->sram_vector);
  else
    snprintf(what, sizeof what, "the notification device %d sent", det->from_dev);
  const EDev *from = &e->devs[det->from_dev], *to = &e->devs[det->to_dev];
  emu_violate(e, VIOL_LINK_ERROR, det->to_dev, NULL, det->to_port,
              emu_local_at_or_after(to, tick_of(det->arrives)),
              "FEC detected %d flipped bits it cannot correct in %s at cycle %lld, on %s", det->bits, what,
              (long long)emu_local_at_or_after(from, tick_of(det->sent)), cable);
}

bool fault_on_wire(Emu *e, EDev *d, int port, Tick departs, Tick arrives, uint32_t addr, uint8_t *payload) {
  Faults *f = e->opt.faults;
  EPort *p = &d->ports[port];
  const Link *L = &e->topo->links.data[p->link];
  Wire *w = &f->wires[2 * p->link + (d->id == L->a ? 0 : 1)];
  if (arrives >= p->dies_at) {  // the cable is dead by then
    w->lost++, w->lost_run++, f->lost++, f->lost_run++;
    return false;
  }
  w->vectors++;
  f->bits += (uint64_t)f->wire_bits;
  int n = 0;
  int64_t first = -1;
  if (f->ber > 0) {
    while (w->until < (uint64_t)f->wire_bits) {
      flip(f, &n, &first, (int64_t)w->until, payload);
      w->until += 1 + draw_gap(&w->rng, f->ber);
    }
    w->until -= (uint64_t)f->wire_bits;
  }
  if (f->armed) inject(f, p->link, d->id, departs, &n, &first, payload);
  if (n == 0) return true;
  if (n == 1) {  // SEC: corrected in place, nothing changes
    w->corrected++, f->corrected++;
    return true;
  }
  w->detected++, f->detected++, f->detected_run++;
  Detected det = {.run = f->run, .link = p->link, .from_dev = d->id, .from_port = port, .to_dev = p->peer_dev,
                  .to_port = p->peer_port, .sent = departs / EMU_TICKS_PER_CYCLE,
                  .arrives = arrives / EMU_TICKS_PER_CYCLE, .sram_vector = payload ? (int64_t)addr : -1, .bits = n};
  record_detected(e, f, &det);
  blame(f, (FaultEvent){.kind = FE_DETECTED, .link = p->link, .cycle = det.arrives});
  return true;
}

bool fault_device_dead(const Emu *e, const EDev *d) { return d->dies_at <= e->last_activity; }

// Vectors lost this run in the cables of device d, both ways.
static int64_t lost_around(const Faults *f, const EDev *d) {
  int64_t n = 0;
  for (int p = 0; p < d->nports; p++) {
    int l = d->ports[p].link;
    if (l >= 0) n += f->wires[2 * l].lost_run + f->wires[2 * l + 1].lost_run;
  }
  return n;
}

void fault_after_run(Emu *e) {
  Faults *f = e->opt.faults;
  if (!f) return;
  for (int i = 0; i < f->nspecs; i++) {
    const FaultSpec *s = &f->specs[i];
    if (s->kind == FAULT_FAIL_LINK && tick_of(s->cycle) <= e->last_activity) {
      int l = f->spec_link[i];
      int64_t lost = f->wires[2 * l].lost_run + f->wires[2 * l + 1].lost_run;
      char cable[160];
      name_cable(cable, sizeof cable, e->topo, l, true);
      emu_violate(e, VIOL_DEAD_LINK, -1, NULL, -1, s->cycle, "%s died (--fail-link %s): %lld vector%s sent into it %s lost",
                  cable, s->arg, (long long)lost, lost == 1 ? "" : "s", lost == 1 ? "was" : "were");
      f->died_run = true;
      blame(f, (FaultEvent){.kind = FE_CABLE, .link = l, .cycle = s->cycle});
    }
    if (s->kind == FAULT_FAIL_DEVICE && fault_device_dead(e, &e->devs[s->a])) {
      EDev *d = &e->devs[s->a];
      int running = 0;
      for (int u = 0; u < d->nunits; u++) running += d->units[u].state != UNIT_HALTED;
      int64_t lost = lost_around(f, d);
      emu_violate(e, VIOL_DEAD_DEVICE, d->id, NULL, -1, emu_local_at_or_after(d, d->dies_at),
                  "device %d died (--fail-device %s): %d of its %d units had not halted, %lld vector%s to or from it %s "
                  "lost in its cables",
                  d->id, s->arg, running, d->nunits, (long long)lost, lost == 1 ? "" : "s", lost == 1 ? "was" : "were");
      f->device_died_run = f->died_run = true;
      blame(f, (FaultEvent){.kind = FE_DEVICE, .device = d->id, .cycle = d->dies_at / EMU_TICKS_PER_CYCLE});
    }
  }
  f->cycles[f->run - 1] = e->r->cycles;
}

bool fault_data_untrusted(const Emu *e) {
  const Faults *f = e->opt.faults;
  return f && (f->detected_run > 0 || f->lost_run > 0 || f->device_died_run);
}

bool fault_cut_short(const Emu *e) { return e->opt.faults && e->opt.faults->died_run; }

bool fault_run_faulted(const Faults *f) { return f->run > 0 && f->first[f->run - 1].kind != FE_NONE; }

bool fault_may_replay(const Faults *f) { return f->run <= f->replays; }

// ---- the verdict --------------------------------------------------------------------------

typedef enum { OUTCOME_NONE, OUTCOME_TRANSIENT, OUTCOME_PERSISTENT, OUTCOME_UNRECOVERED } Outcome;
static const char *const outcome_names[] = {"none", "transient", "persistent", "unrecovered"};

static void describe(char *buf, size_t n, const Faults *f, const FaultEvent *ev) {
  char cable[160];
  if (ev->kind != FE_DEVICE) name_cable(cable, sizeof cable, f->t, ev->link, false);
  if (ev->kind == FE_DETECTED)
    snprintf(buf, n, "a detected error on %s at cycle %lld", cable, (long long)ev->cycle);
  else if (ev->kind == FE_CABLE)
    snprintf(buf, n, "%s died at cycle %lld", cable, (long long)ev->cycle);
  else
    snprintf(buf, n, "device %d died at cycle %lld", ev->device, (long long)ev->cycle);
}

static bool link_killed(const Faults *f, int l) {
  for (int i = 0; i < f->nspecs; i++)
    if (f->specs[i].kind == FAULT_FAIL_LINK && f->spec_link[i] == l) return true;
  return false;
}

// What the runs add up to, and the line that says so (empty for none).
static Outcome judge(const Faults *f, char *msg, size_t n) {
  msg[0] = 0;
  bool any = false;
  for (int r = 0; r < f->run; r++) any |= f->first[r].kind != FE_NONE;
  if (!any) return OUTCOME_NONE;
  const FaultEvent *first = &f->first[0], *last = &f->first[f->run - 1];
  char what[256];
  if (last->kind == FE_NONE) {
    int r = 0;
    while (f->first[r].kind == FE_NONE) r++;
    describe(what, sizeof what, f, &f->first[r]);
    snprintf(msg, n, "replayed %d time%s after %s: the fault was transient, run %d had none", f->run - 1,
             f->run == 2 ? "" : "s", what, f->run);
    return OUTCOME_TRANSIENT;
  }
  if (f->run == 1) {
    describe(what, sizeof what, f, first);
    snprintf(msg, n, "not replayed (--replay 0) after %s: transient or persistent, no replay can tell", what);
    return OUTCOME_UNRECOVERED;
  }
  for (int d = 0; d < f->t->ndevices; d++)
    if (f->device_runs[d] == f->run) {
      snprintf(msg, n, "persistent fault: device %d died on all %d runs: replace device %d", d, f->run, d);
      return OUTCOME_PERSISTENT;
    }
  int blamed = -1, more = 0;  // the cable of lowest id with a fault on every run, and how many others
  for (int l = 0; l < f->t->links.len; l++)
    if (f->cable_runs[l] == f->run) blamed < 0 ? (void)(blamed = l) : (void)more++;
  if (blamed >= 0) {
    const Link *L = &f->t->links.data[blamed];
    char cable[160], others[64] = "";
    name_cable(cable, sizeof cable, f->t, blamed, false);
    if (more) snprintf(others, sizeof others, "; %d more cable%s had a fault on every run", more, more == 1 ? "" : "s");
    snprintf(msg, n, "persistent fault: %s %s on all %d runs: replace it (device %d port %d to device %d port %d)%s",
             cable, link_killed(f, blamed) ? "died" : "had detected errors", f->run, L->a, L->a_port, L->b, L->b_port,
             others);
    return OUTCOME_PERSISTENT;
  }
  describe(what, sizeof what, f, last);
  snprintf(msg, n, "unrecovered fault: all %d runs had a fault, no cable or device in all of them; run %d's first: %s",
           f->run, f->run, what);
  return OUTCOME_UNRECOVERED;
}

void fault_print(const Faults *f, FILE *out) {
  if (!f) return;
  fprintf(out, "faults: %lld corrected (FEC), %lld detected, %lld vector%s lost; %llu bits on the wire in %d run%s\n",
          (long long)f->corrected, (long long)f->detected, (long long)f->lost, f->lost == 1 ? "" : "s",
          (unsigned long long)f->bits, f->run, f->run == 1 ? "" : "s");
  char msg[512];
  if (judge(f, msg, sizeof msg) != OUTCOME_NONE) fprintf(out, "%s\n", msg);
}

// ---- the report ---------------------------------------------------------------------------

static void write_wire(const Faults *f, int w, FILE *out) {
  const Link *L = &f->t->links.data[w / 2];
  int from = w % 2 ? L->b : L->a, from_port = w % 2 ? L->b_port : L->a_port;
  int to = w % 2 ? L->a : L->b, to_port = w % 2 ? L->a_port : L->b_port;
  fprintf(out, "link: %d, from: {device: %d, port: %d}, to: {device: %d, port: %d}", w / 2, from, from_port, to,
          to_port);
}

void fault_write_report(const Faults *f, FILE *out) {
  if (!f) {
    fprintf(out, "fec_corrected: 0\nfec_detected: 0\nreplays: 0\nfaults: null\nlink_errors: []\ndetected_errors: []\n");
    return;
  }
  char msg[512];
  Outcome o = judge(f, msg, sizeof msg);
  int64_t replay_cycles = 0;
  for (int r = 0; r + 1 < f->run; r++) replay_cycles += f->cycles[r];
  fprintf(out, "fec_corrected: %lld\nfec_detected: %lld\nreplays: %d\n", (long long)f->corrected,
          (long long)f->detected, f->run - 1);
  fprintf(out,
          "faults: {ber: %.6e, replay: %d, runs: %d, wire_bits: %llu, vectors_lost: %lld, cycles_replayed: %lld, "
          "outcome: %s, message: ",
          f->ber, f->replays, f->run, (unsigned long long)f->bits, (long long)f->lost, (long long)replay_cycles,
          outcome_names[o]);
  str_print_yaml(out, msg);
  fprintf(out, "}\n");
  bool any = false;
  for (int w = 0; w < 2 * f->t->links.len; w++) {
    const Wire *x = &f->wires[w];
    if (!x->corrected && !x->detected && !x->lost) continue;
    fprintf(out, "%s  - {", any ? "" : "link_errors:\n");
    any = true;
    write_wire(f, w, out);
    fprintf(out, ", vectors: %lld, corrected: %lld, detected: %lld, lost: %lld}\n", (long long)x->vectors,
            (long long)x->corrected, (long long)x->detected, (long long)x->lost);
  }
  if (!any) fprintf(out, "link_errors: []\n");
  fprintf(out, "detected_errors:%s\n", f->nlist ? "" : " []");
  for (int i = 0; i < f->nlist; i++) {
    const Detected *d = &f->list[i];
    fprintf(out, "  - {run: %d, ", d->run);
    write_wire(f, 2 * d->link + (d->from_dev == f->t->links.data[d->link].a ? 0 : 1), out);
    fprintf(out, ", sent: %lld, arrives: %lld, sram_vector: %lld, bits: %d}\n", (long long)d->sent,
            (long long)d->arrives, (long long)d->sram_vector, d->bits);
  }
  bool injects = false;
  for (int i = 0; i < f->nspecs; i++) {
    if (f->specs[i].kind > FAULT_INJECT_MBE) continue;
    fprintf(out, "%s  - {inject: \"%s\", run: %d, cycle: %lld}\n", injects ? "" : "injected:\n", f->specs[i].arg,
            f->fired_run[i], f->fired_run[i] ? (long long)f->fired_cycle[i] : -1LL);
    injects = true;
  }
}
