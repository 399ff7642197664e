// align.c: plans and writes the initial program alignment of seed 002 s3.2.
// Part of passes/; the synchronisation pass opens every compiled program
// with it, and tests check it in the emulator under start skew.
//
// The tree is a BFS tree from the root over working links, so its height h
// is the root's eccentricity (minimal for that root).  With E the HAC epoch
// and B the root's first boundary after its launch window:
//   root:       WAIT window; DESKEW (to B, its release); then below
//   any other:  POLL its parent's port (returns at its release, a boundary)
//   then:       TRANSMIT to each child at its send time (WAITs between);
//               DESKEW until B + N E; NOTIFY
// A child's notification must land strictly inside one epoch whatever the
// link's latency in [min, max], so that the child's POLL returns on a
// boundary known at compile time: the parent times each TRANSMIT for it.
// Every child aims at the k-th boundary after its parent's release, k =
// floor((L + c) / E) + 1 (L the largest latency on a tree link, c the
// largest fan-out); a child over a fast link is sent later (a WAIT before
// its TRANSMIT) so that its notification still lands after the (k-1)-th,
// and one whose window cannot fit before the k-th lands in the first epoch
// after that it fits in, and releases (with its subtree) that much later.
// On links of one latency range every child lands in epoch k, is sent in
// port order one a cycle, and every device NOTIFYs at B + h k E.  Only a
// link whose own range is E - 1 cycles or more is refused: no send time
// brings it inside one epoch.  A device times its TRANSMITs on its own
// clock, which drifts by up to the planned drift from its release (a
// boundary) to the send: so the landing window is widened by that much,
// floor(send time x ppm / 10^6) cycles each way (a notification planned a
// cycle after a boundary absorbs the fraction; a 20,000-cycle cable next
// to a 200-cycle one delays the short one's TRANSMIT 19,800 cycles, 1.98
// cycles at 100 ppm, which used to land it in the epoch before and align
// its device an epoch early).  Units other than ctl park in SYNC until the
// NOTIFY.  The tree spans every working device (spares standing by run the
// preamble too: they may carry other devices' vectors); a failed device
// is left out and runs nothing.
#include "passes.h"

#include <stdlib.h>
#include <string.h>

// One child of a device in the tree: the port that faces it and its link.
typedef struct Child {
  int device, port;
  int64_t min, max;  // the link's latency range
  int64_t every;     // cycles a vector (the notification too) holds the link
  int64_t at;        // planning: the least send time landing after the (k-1)-th boundary;
                     // emitting: the send time
} Child;

static int by_send_time(const void *a, const void *b) {
  const Child *x = a, *y = b;
  if (x->at != y->at) return x->at < y->at ? -1 : 1;
  return x->port - y->port;  // port order on a tie
}

// Device v's children in the tree, in port order; returns how many.
static int children_of(const AlignPlan *plan, const Topology *t, int v, Child *out) {
  const Device *d = &t->devices[v];
  int n = 0;
  for (int p = 0; p < d->nports; p++) {
    const Port *port = &d->ports[p];
    if (port->link < 0 || plan->parent[port->peer] != v || plan->parent_port[port->peer] != port->peer_port) continue;
    const LinkParams *lp = &t->links.data[port->link].p;
    out[n++] = (Child){.device = port->peer, .port = p, .min = lp->latency_min, .max = lp->latency_max,
                       .every = ir_cycles_per_vector(lp, t->clock_mhz)};
  }
  return n;
}

// Cycles a clock off by ppm gains or loses over `cycles` of its own, in
// whole cycles (the fraction: see the file comment).
static int64_t drift_over(int64_t cycles, double ppm) { return (int64_t)((double)cycles * ppm * 1e-6); }

// The earliest cycle >= t, counted from a boundary on a clock off by up to
// ppm, that is surely after the boundary before it and before the one
// after it in global time: a DESKEW issued then goes to the boundary its
// plan counts on (a device's last TRANSMIT 20,412 cycles after its
// release, on a boundary, was 2 cycles early on a fast clock, and its
// DESKEW went to that boundary, an epoch early).  t itself when the clock
// cannot drift a whole cycle by then.
static int64_t clear_of_boundary(int64_t t, int64_t E, double ppm) {
  int64_t m = drift_over(t, ppm), r = t % E;
  if (m == 0 || (r > m && r < E - m - 1)) return t;
  return r <= m ? t - r + m + 1 : t - r + E + m + 1;
}

// The earliest send time >= t at which a notification with latency in
// [min, max], sent by a clock off by up to ppm since its release, lands
// strictly inside one epoch; *epochs: the boundary (after the send's
// reference boundary) at which the child's POLL then returns.  -1 when no
// send time does (the range and the drift over the wait span an epoch).
static int64_t fit_in_epoch(int64_t t, int64_t min, int64_t max, int64_t E, double ppm, int *epochs) {
  for (;;) {
    int64_t m = drift_over(t, ppm), first = t + min - m, last = t + max + m;
    if (last - first >= E - 1) return -1;
    if (first % E != 0 && first / E == last / E) {
      *epochs = (int)(last / E + 1);
      return t;
    }
    t = (first / E + 1) * E + 1 - min + m;  // just after the next boundary (the drift then grows: look again)
  }
}

// Times device v's TRANSMITs and its children's releases; returns the
// cycles after its release until they are issued and their ports free
// again (0: a leaf): a notification holds its link for the link's cycles
// a vector, as any vector does, and the program's first SEND on that port
// comes after the NOTIFY.
static int64_t plan_sends(AlignPlan *plan, const Topology *t, int v, Child *kids, double ppm, char *err, size_t errlen) {
  int64_t E = t->epoch_cycles, k = plan->epochs_per_level, next = 0, held = 0;
  int n = children_of(plan, t, v, kids);
  for (int i = 0; i < n; i++) kids[i].at = MAX(0, (k - 1) * E + 1 - kids[i].min);
  qsort(kids, (size_t)n, sizeof *kids, by_send_time);
  for (int i = 0; i < n; i++) {
    int epochs;
    int64_t from = MAX(next, kids[i].at), at = fit_in_epoch(from, kids[i].min, kids[i].max, E, ppm, &epochs);
    if (at < 0) {
      plan->refused_link = t->devices[v].ports[kids[i].port].link;
      snprintf(err, errlen,
               "device %d's notification to device %d, sent %lld cycles after its release, may drift %lld cycles at "
               "%g ppm, which with the cable's %lld to %lld cycles spans the %lld-cycle epoch: give a longer "
               "epoch_cycles, or plan less drift with --drift-ppm",
               v, kids[i].device, (long long)from, (long long)drift_over(from, ppm), ppm, (long long)kids[i].min,
               (long long)kids[i].max, (long long)E);
      return -1;
    }
    plan->send_at[kids[i].device] = at;
    plan->release[kids[i].device] = plan->release[v] + epochs;
    next = at + 1;  // a TRANSMIT issues in one cycle
    held = MAX(held, at + kids[i].every);
  }
  plan->deskew_at[v] = n ? clear_of_boundary(next, E, ppm) : 0;
  return n ? MAX(plan->deskew_at[v], held) : 0;
}

// A tree link whose own latency range is E - 1 cycles or more: no send time
// lands its notification strictly inside one epoch.
static bool ranges_fit(AlignPlan *plan, const Topology *t, char *err, size_t errlen) {
  for (int v = 0; v < t->ndevices; v++) {
    if (plan->parent[v] < 0) continue;
    const Port *port = &t->devices[v].ports[plan->parent_port[v]];
    const LinkParams *lp = &t->links.data[port->link].p;
    if (lp->latency_max - lp->latency_min < t->epoch_cycles - 1) continue;
    plan->refused_link = port->link;
    snprintf(err, errlen,
             "the cable between devices %d and %d varies from %d to %d cycles, %d or more (the %d-cycle epoch less "
             "1): no TRANSMIT time lands its notification inside one epoch, so the alignment tree cannot use it",
             plan->parent[v], v, lp->latency_min, lp->latency_max, t->epoch_cycles - 1, t->epoch_cycles);
    return false;
  }
  return true;
}

bool align_plan(Arena *a, const Topology *t, int root, int64_t launch_window, double drift_ppm, AlignPlan *plan,
                char *err, size_t errlen) {
  int n = t->ndevices;
  *plan = (AlignPlan){.root = root, .launch_window = launch_window, .refused_link = -1};
  plan->parent = ARENA_ARRAY(a, int, n);
  plan->level = ARENA_ARRAY(a, int, n);
  plan->parent_port = ARENA_ARRAY(a, int, n);
  plan->release = ARENA_ARRAY(a, int, n);
  plan->send_at = ARENA_ARRAY(a, int64_t, n);
  plan->deskew_at = ARENA_ARRAY(a, int64_t, n);
  int *queue = xmalloc(sizeof(int) * (size_t)n);
  for (int v = 0; v < n; v++) plan->level[v] = -1, plan->parent[v] = -1, plan->parent_port[v] = -1;
  int head = 0, tail = 0, latency = 0, fanout = 0;
  plan->level[root] = 0;
  queue[tail++] = root;
  while (head < tail) {
    int v = queue[head++], children = 0;
    const Device *d = &t->devices[v];
    for (int p = 0; p < d->nports; p++) {
      const Port *port = &d->ports[p];
      if (port->link < 0 || t->links.data[port->link].failed || plan->level[port->peer] >= 0) continue;
      plan->level[port->peer] = plan->level[v] + 1;
      plan->parent[port->peer] = v;
      plan->parent_port[port->peer] = port->peer_port;
      latency = MAX(latency, t->links.data[port->link].p.latency_max);
      plan->height = MAX(plan->height, plan->level[v] + 1);
      children++;
      queue[tail++] = port->peer;
    }
    fanout = MAX(fanout, children);
  }
  plan->epochs_per_level = (latency + fanout) / t->epoch_cycles + 1;
  int working = 0;
  for (int v = 0; v < n; v++) working += !ir_device_failed(t, v);
  bool ok = tail == working && ranges_fit(plan, t, err, errlen);
  for (int v = 0; v < n && tail < working; v++)
    if (plan->level[v] < 0 && !ir_device_failed(t, v)) {
      snprintf(err, errlen, "device %d cannot be reached from %d", v, root);
      break;
    }
  Child *kids = xmalloc(sizeof *kids * (size_t)(fanout + 1));
  for (int i = 0; i < tail && ok; i++) {  // parents before children: BFS order
    int v = queue[i];
    int64_t sends = plan_sends(plan, t, v, kids, drift_ppm, err, errlen);
    if (sends < 0) {
      ok = false;
      break;
    }
    // Its first DESKEW after the sends goes to the boundary after them.
    plan->notify_epochs = MAX(plan->notify_epochs, plan->release[v] + (sends ? (int)(sends / t->epoch_cycles) + 1 : 0));
  }
  free(kids);
  free(queue);
  return ok;
}

static UnitProgram *unit_of(Arena *a, DeviceProgram *dp, UnitKind kind, int port) {
  for (int i = 0; i < dp->units.len; i++)
    if (dp->units.data[i].kind == kind && dp->units.data[i].port == port) return &dp->units.data[i];
  UnitProgram up = {.kind = kind, .port = port};
  VEC_PUSH(a, &dp->units, up);
  return &dp->units.data[dp->units.len - 1];
}

// Where the preamble goes (before the rest of each unit's code); with
// annotate, each instruction gets its note too.
typedef struct PreambleOut {
  Arena *arena;
  bool annotate;
} PreambleOut;

static void emit(const PreambleOut *out, UnitProgram *u, Opcode op, int port, uint32_t operand) {
  Instr in = {.op = (uint8_t)op, .port = (uint16_t)port, .a = operand};
  VEC_PUSH(out->arena, &u->code, in);
  if (!out->annotate) return;
  InstrNote note = {.at = -1, .note = op == OPC_WAIT ? NULL : "alignment preamble (seed 002 s3.3)"};
  VEC_PUSH(out->arena, &u->notes, note);
}

// Device v's TRANSMITs to its children at their send times, the WAITs
// between; returns the cycles they take after its release.
static int64_t emit_transmits(const PreambleOut *out, const AlignPlan *plan, const Topology *t, int v,
                              UnitProgram *ctl, Child *kids) {
  int n = children_of(plan, t, v, kids);
  for (int i = 0; i < n; i++) kids[i].at = plan->send_at[kids[i].device];
  qsort(kids, (size_t)n, sizeof *kids, by_send_time);
  int64_t now = 0;
  for (int i = 0; i < n; i++) {
    if (kids[i].at > now) emit(out, ctl, OPC_WAIT, 0, (uint32_t)(kids[i].at - now));
    emit(out, ctl, OPC_TRANSMIT, kids[i].port, 0);
    now = kids[i].at + 1;
  }
  return now;
}

int64_t align_emit(Arena *arena, const AlignPlan *plan, const Topology *t, Program *p, bool annotate) {
  PreambleOut preamble = {arena, annotate}, *out = &preamble;
  int most = 1;
  for (int v = 0; v < t->ndevices; v++) most = MAX(most, t->devices[v].nports);
  Child *kids = xmalloc(sizeof *kids * (size_t)most);
  for (int v = 0; v < t->ndevices; v++) {
    DeviceProgram *dp = &p->devices[v];
    if (!!ir_device_failed(t, v)) continue;
    for (int i = 0; i < dp->units.len; i++)  // every unit but ctl waits for the NOTIFY
      if (dp->units.data[i].kind != UNIT_CTL) emit(out, &dp->units.data[i], OPC_SYNC, 0, 0);
    UnitProgram *ctl = unit_of(arena, dp, UNIT_CTL, -1);
    if (v == plan->root) {
      if (plan->launch_window > 0) emit(out, ctl, OPC_WAIT, 0, (uint32_t)plan->launch_window);
      emit(out, ctl, OPC_DESKEW, 0, 0);
    } else {
      emit(out, ctl, OPC_POLL, plan->parent_port[v], 0);
    }
    int64_t sends = emit_transmits(out, plan, t, v, ctl, kids);
    if (plan->deskew_at[v] > sends) emit(out, ctl, OPC_WAIT, 0, (uint32_t)(plan->deskew_at[v] - sends));
    sends = MAX(sends, plan->deskew_at[v]);
    // A DESKEW goes to the next boundary strictly after it issues.
    int deskews = plan->notify_epochs - plan->release[v] - (int)(sends / t->epoch_cycles);
    for (int i = 0; i < deskews; i++) emit(out, ctl, OPC_DESKEW, 0, 0);
    emit(out, ctl, OPC_NOTIFY, 0, 0);
  }
  free(kids);
  return align_notify_cycle(plan, t);
}

int64_t align_notify_cycle(const AlignPlan *plan, const Topology *t) {
  int64_t E = t->epoch_cycles;
  int64_t first = (plan->launch_window / E + 1) * E;  // B: DESKEW goes strictly past the window's end
  return first + (int64_t)plan->notify_epochs * E;
}
