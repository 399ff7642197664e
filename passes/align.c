// align.c: plans and writes the initial program alignment of seed 002 s3.2.
// Part of passes/; the synchronisation pass opens every compiled program
// with it, and tests check it in the emulator under start skew.
//
// The tree is a BFS tree from the root over working links, so its height h
// is the root's eccentricity (minimal for that root).  With E the HAC epoch
// and B the root's first boundary after its launch window:
//   root:         WAIT window; DESKEW (to B); TRANSMIT to each child, one a
//                 cycle; DESKEW x h k (to B + h k E); NOTIFY
//   level l >= 1: POLL its parent's port (returns at B + l k E);
//                 TRANSMIT to each child; DESKEW x (h - l) k; NOTIFY
// k = floor((L + c) / E) + 1 epochs a level, L the largest latency on a
// tree link and c the largest fan-out: a notification sent c cycles after a
// boundary lands before the k-th boundary after it.  It must also land after
// the (k-1)-th (the smallest latency exceeds (k - 1) E), or a child would
// leave early: align_plan refuses such a network.  Every device NOTIFYs
// at B + h k E, global time; units other than ctl park in SYNC until then.
#include "passes.h"

#include <stdlib.h>
#include <string.h>

bool align_plan(Arena *a, const Topology *t, int root, int64_t launch_window, AlignPlan *plan, char *err,
                size_t errlen) {
  int n = t->ndevices;
  *plan = (AlignPlan){.root = root, .launch_window = launch_window};
  plan->parent = ARENA_ARRAY(a, int, n);
  plan->level = ARENA_ARRAY(a, int, n);
  plan->parent_port = ARENA_ARRAY(a, int, n);
  int *queue = xmalloc(sizeof(int) * (size_t)n);
  for (int v = 0; v < n; v++) plan->level[v] = -1, plan->parent[v] = -1, plan->parent_port[v] = -1;
  int head = 0, tail = 0, latency = 0, fanout = 0, fastest = IR_MAX_LATENCY_CYCLES;
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
      fastest = MIN(fastest, t->links.data[port->link].p.latency_min);
      plan->height = MAX(plan->height, plan->level[v] + 1);
      children++;
      queue[tail++] = port->peer;
    }
    fanout = MAX(fanout, children);
  }
  free(queue);
  if (tail < n) {
    for (int v = 0; v < n; v++)
      if (plan->level[v] < 0) return snprintf(err, errlen, "device %d cannot be reached from %d", v, root), false;
  }
  plan->epochs_per_level = (latency + fanout) / t->epoch_cycles + 1;
  // Every notification must land in the last epoch of its level, or a child
  // would leave its POLL an epoch early.
  if (n > 1 && fastest <= (plan->epochs_per_level - 1) * t->epoch_cycles)
    return snprintf(err, errlen,
                    "link latencies %d..%d (plus %d transmits) straddle a %d-cycle epoch boundary: the "
                    "alignment tree cannot bring every child out of its POLL on one boundary",
                    fastest, latency, fanout, t->epoch_cycles),
           false;
  return true;
}

static UnitProgram *unit_of(Arena *a, DeviceProgram *dp, UnitKind kind, int port) {
  for (int i = 0; i < dp->units.len; i++)
    if (dp->units.data[i].kind == kind && dp->units.data[i].port == port) return &dp->units.data[i];
  UnitProgram up = {.kind = kind, .port = port};
  VEC_PUSH(a, &dp->units, up);
  return &dp->units.data[dp->units.len - 1];
}

static void emit(Arena *a, UnitProgram *u, Opcode op, int port, uint32_t operand) {
  Instr in = {.op = (uint8_t)op, .port = (uint16_t)port, .a = operand};
  VEC_PUSH(a, &u->code, in);
}

// The device's children, by the port that faces each.
static void emit_transmits(Arena *a, const AlignPlan *plan, const Topology *t, int v, UnitProgram *ctl) {
  const Device *d = &t->devices[v];
  for (int p = 0; p < d->nports; p++) {
    const Port *port = &d->ports[p];
    if (port->link >= 0 && plan->parent[port->peer] == v && plan->parent_port[port->peer] == port->peer_port)
      emit(a, ctl, OPC_TRANSMIT, p, 0);
  }
}

int64_t align_emit(Arena *a, const AlignPlan *plan, const Topology *t, Program *p) {
  int k = plan->epochs_per_level, h = plan->height;
  for (int v = 0; v < t->ndevices; v++) {
    DeviceProgram *dp = &p->devices[v];
    for (int i = 0; i < dp->units.len; i++)  // every unit but ctl waits for the NOTIFY
      if (dp->units.data[i].kind != UNIT_CTL) emit(a, &dp->units.data[i], OPC_SYNC, 0, 0);
    UnitProgram *ctl = unit_of(a, dp, UNIT_CTL, -1);
    if (v == plan->root) {
      if (plan->launch_window > 0) emit(a, ctl, OPC_WAIT, 0, (uint32_t)plan->launch_window);
      emit(a, ctl, OPC_DESKEW, 0, 0);
    } else {
      emit(a, ctl, OPC_POLL, plan->parent_port[v], 0);
    }
    emit_transmits(a, plan, t, v, ctl);
    for (int i = 0; i < (h - plan->level[v]) * k; i++) emit(a, ctl, OPC_DESKEW, 0, 0);
    emit(a, ctl, OPC_NOTIFY, 0, 0);
  }
  return align_notify_cycle(plan, t);
}

int64_t align_notify_cycle(const AlignPlan *plan, const Topology *t) {
  int64_t E = t->epoch_cycles;
  int64_t first = (plan->launch_window / E + 1) * E;  // B: DESKEW goes strictly past the window's end
  return first + (int64_t)plan->height * plan->epochs_per_level * E;
}
