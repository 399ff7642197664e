// trace.c: the compiled schedule as Chrome trace event JSON (tspc
// --emit=trace writes trace.json), which Perfetto (ui.perfetto.dev) and
// chrome://tracing open, without running anything.  Part of backend/: it
// reads the device programs (every instruction keeps the schedule cycle
// codegen placed it at), the scheduled DAG (each transfer's routes) and the
// alignment plan, and changes nothing.
//
// Times are global cycles of a run that starts every device at cycle 0,
// with no jitter and no drift (tsp-emu's deterministic run): schedule
// cycle t happens at preamble_cycles + t, the preamble's NOTIFY one cycle
// before.  They are written as tsp-emu's trace writes them (runtime/
// trace.c): microseconds, cycles / clock_mhz, "%.6f", so the two traces of
// one program line up slice for slice.
//
//   pid D                 device D ("dev0007")
//   tid U                 unit U of its program ("c2c.3", "vxm", "ctl"): a
//                         slice per instruction (WAITs and HALT left out),
//                         named by its mnemonic and what it serves: a
//                         route's SEND or RECV, a reduction's or a stage's
//                         vector run, by the transfer as its link slices
//                         are named (found in the DAG by device, unit and
//                         cycle); anything else as the listing says it;
//                         the alignment preamble (seed 002 s3.2) as one
//                         slice on ctl with its TRANSMITs
//   tid SEND_TRACK + P    "port P -> devN": the link direction leaving port
//                         P, a slice per route hop (a stream of vectors, one
//                         every `every` cycles) named by the transfer's
//                         tensor, op, algorithm, lane and timestep
//   tid RECEIVE_TRACK + P "port P <- devN": the same streams as port P
//                         takes them, latency_max + hop_slack later
//   flow arrows           one per vector, from its departure to its take,
//                         along every hop of every route: the preamble's
//                         notifications first, then the transfers in DAG
//                         order, at most max_arrows of them
#include "backend.h"

#include <stdlib.h>

// Track numbers of the link directions: past any unit index, as tsp-emu's.
#define TRACE_SEND_TRACK IR_TRACE_LINK_TRACKS
#define TRACE_RECEIVE_TRACK (2 * IR_TRACE_LINK_TRACKS)

typedef struct TraceOut {
  FILE *f;
  double clock_mhz;
  int64_t base;  // the global cycle of schedule cycle 0
  bool any_event;
  uint64_t arrows, max_arrows;
  TraceCounts *counts;
} TraceOut;

// ---- events ------------------------------------------------------------------

static void begin_event(TraceOut *t) {
  fputs(t->any_event ? ",\n  " : "\n  ", t->f);
  t->any_event = true;
}

static void write_time(TraceOut *t, const char *key, int64_t cycles) {
  fprintf(t->f, ",\"%s\":%.6f", key, (double)cycles / t->clock_mhz);
}

// A metadata event naming a process (tid < 0) or a thread.
static void name_event(TraceOut *t, int pid, int tid, const char *name) {
  begin_event(t);
  fprintf(t->f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d", tid < 0 ? "process_name" : "thread_name", pid);
  if (tid >= 0) fprintf(t->f, ",\"tid\":%d", tid);
  fputs(",\"args\":{\"name\":", t->f);
  str_print_json(t->f, name);
  fputs("}}", t->f);
}

// A complete ("X") event of at least a cycle; args (NULL: none) is a JSON object's text.
static void slice(TraceOut *t, int pid, int tid, const char *name, int64_t start, int64_t dur, const char *args) {
  begin_event(t);
  fputs("{\"name\":", t->f);
  str_print_json(t->f, name);
  fprintf(t->f, ",\"ph\":\"X\",\"pid\":%d,\"tid\":%d", pid, tid);
  write_time(t, "ts", start);
  write_time(t, "dur", MAX(dur, 1));
  if (args) fprintf(t->f, ",\"args\":%s", args);
  fputc('}', t->f);
}

// One flow arrow from (pid0, tid0) at t0 to (pid1, tid1) at t1, if the
// cap leaves room; counted either way.
static void arrow(TraceOut *t, int pid0, int tid0, int64_t t0, int pid1, int tid1, int64_t t1) {
  t->counts->arrows++;
  if (t->arrows >= t->max_arrows) return;
  uint64_t id = ++t->arrows;
  begin_event(t);
  fprintf(t->f, "{\"name\":\"vector\",\"cat\":\"link\",\"ph\":\"s\",\"id\":%llu,\"pid\":%d,\"tid\":%d",
          (unsigned long long)id, pid0, tid0);
  write_time(t, "ts", t0);
  fputc('}', t->f);
  begin_event(t);
  fprintf(t->f, "{\"name\":\"vector\",\"cat\":\"link\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,\"pid\":%d,\"tid\":%d",
          (unsigned long long)id, pid1, tid1);
  write_time(t, "ts", t1);
  fputc('}', t->f);
}

// ---- tracks ------------------------------------------------------------------

// Every device of the program, its units and the link directions of its
// ports that carry something (no empty tracks).
static void name_tracks(TraceOut *t, const ManifestInfo *m, const char *used) {
  const Topology *topo = m->topo;
  for (int d = 0; d < m->program->ndevices; d++) {
    const DeviceProgram *dp = &m->program->devices[d];
    char name[64];
    snprintf(name, sizeof name, "dev%04d", d);
    name_event(t, d, -1, name);
    for (int u = 0; u < dp->units.len; u++) {
      isa_unit_format(name, sizeof name, dp->units.data[u].kind, dp->units.data[u].port);
      name_event(t, d, u, name);
    }
    const Device *dev = &topo->devices[d];
    for (int p = 0; p < dev->nports; p++) {
      int link = dev->ports[p].link;
      if (link < 0) continue;
      if (used[2 * link + (d != topo->links.data[link].a)]) {
        snprintf(name, sizeof name, "port %d -> dev%04d", p, dev->ports[p].peer);
        name_event(t, d, TRACE_SEND_TRACK + p, name);
      }
      if (used[2 * link + (d == topo->links.data[link].a)]) {
        snprintf(name, sizeof name, "port %d <- dev%04d", p, dev->ports[p].peer);
        name_event(t, d, TRACE_RECEIVE_TRACK + p, name);
      }
    }
  }
}

// ---- names -------------------------------------------------------------------

// A transfer: "s step 2: 0 -> 5, allreduce by ring lane 1, reduce" or
// "y: x 0 -> 5, copy"; a stage: "s: staged on 0, allreduce by multitree"; an
// elementwise op: "h = relu(x)".
static void node_name(Buf *b, const ManifestInfo *m, const DagNode *n, const int *steps) {
  const Op *op = n->op;
  const char *algo = ir_algo_names[m->algos ? m->algos[op->id] : op->algo];
  b->len = 0;
  if (n->kind == NODE_STAGE)
    buf_printf(b, "%s: staged on %d, %s by %s", op->result->name, n->device, ir_op_info[op->kind].name, algo);
  else if (n->kind != NODE_TRANSFER) {
    buf_printf(b, "%s = %s(", op->result->name, ir_op_info[op->kind].name);
    for (int i = 0; i < op->nargs; i++) buf_printf(b, "%s%s", i ? ", " : "", op->args[i]->name);
    buf_printf(b, ")");
  } else if (ir_op_is_collective(op->kind))
    buf_printf(b, "%s step %d: %d -> %d, %s by %s lane %d%s", op->result->name, steps[n->id], n->src, n->dst,
               ir_op_info[op->kind].name, algo, n->lane, n->reduce ? ", reduce" : "");
  else
    buf_printf(b, "%s: %s %d -> %d, %s", op->result->name, n->tensor->name, n->src, n->dst, ir_op_info[op->kind].name);
}

// When hop `hop` of route rt, leaving at `leave`, is taken at its far end:
// latency_max + hop_slack later (codegen's gen_route puts the RECV, and at
// an intermediate TSP the next hop's SEND, on that cycle).
static int64_t hop_take(const ManifestInfo *m, const Route *rt, const Hop *hop, int64_t leave) {
  return leave + m->topo->links.data[hop->link].p.latency_max + rt->hop_slack;
}

// ---- what an instruction serves ------------------------------------------------

// Which DAG node put an instruction on a unit at a schedule cycle: a
// route's SEND or RECV on a port, or a vector run.
typedef struct Served {
  int device;
  int unit;     // 2 port + (RECV) on a port's unit; -1 the vector unit
  int64_t at;
  int node;
} Served;

typedef VEC(Served) ServedVec;

static int served_cmp(const void *x, const void *y) {
  const Served *a = x, *b = y;
  if (a->device != b->device) return a->device < b->device ? -1 : 1;
  if (a->unit != b->unit) return a->unit < b->unit ? -1 : 1;
  return (a->at > b->at) - (a->at < b->at);
}

static void serve(ServedVec *v, int device, int unit, int64_t at, int node) {
  if (v->len == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 1024;
    v->data = xrealloc(v->data, sizeof(Served) * (size_t)v->cap);
  }
  v->data[v->len++] = (Served){device, unit, at, node};
}

// Every SEND and RECV of every route hop (the timing of write_route), and
// every vector run of a reduction, a stage or an elementwise op, sorted.
static ServedVec served_table(const ManifestInfo *m) {
  ServedVec v = {0};
  for (int i = 0; i < m->dag->nodes.len; i++) {
    const DagNode *n = m->dag->nodes.data[i];
    int vxm_device = n->kind == NODE_TRANSFER ? n->dst : n->device;
    for (int r = 0; r < n->nruns; r++) serve(&v, vxm_device, -1, n->runs[r].start, n->id);
    for (int r = 0; n->kind == NODE_TRANSFER && r < n->nroutes; r++) {
      const Route *rt = &n->routes[r];
      int64_t leave = rt->start;
      for (int h = 0; h < rt->path.nhops; h++) {
        const Hop *hop = &rt->path.hops[h];
        int64_t take = hop_take(m, rt, hop, leave);
        serve(&v, hop->from, 2 * hop->out_port, leave, n->id);
        serve(&v, hop->to, 2 * hop->in_port + 1, take, n->id);
        leave = take;
      }
    }
  }
  if (v.len) qsort(v.data, (size_t)v.len, sizeof(Served), served_cmp);
  return v;
}

// The node instruction in, issued at `at`, serves on unit up of device, or -1.
static int served_by(const ServedVec *v, int device, const UnitProgram *up, const Instr *in, int64_t at) {
  int unit;
  if (up->kind == UNIT_C2C && (in->op == OPC_SEND || in->op == OPC_RECV))
    unit = 2 * up->port + (in->op == OPC_RECV);
  else if (up->kind == UNIT_VXM)
    unit = -1;
  else
    return -1;
  if (!v->len) return -1;  // no transfers, no reductions (bsearch wants a base even for none)
  Served key = {device, unit, at, 0};
  const Served *hit = bsearch(&key, v->data, (size_t)v->len, sizeof(Served), served_cmp);
  return hit ? hit->node : -1;
}

// ---- instructions ------------------------------------------------------------

// Cycles an instruction holds its unit: a resync's SYNC the window (as
// codegen plans it), the rest as docs/isa.md says.
static int64_t held(const ManifestInfo *m, const Instr *in) {
  if (in->op == OPC_SYNC) return m->sync->window;
  return isa_issue_cycles(in, m->topo->link.vector_bytes);
}

// Every instruction codegen placed (the preamble's, at -1, are drawn from
// the plan by write_preamble), named "MNEMONIC what": the node it serves
// as node_name says it, or the listing's note.
static void write_unit(TraceOut *t, const ManifestInfo *m, const ServedVec *served, const int *steps, int d, int u) {
  const UnitProgram *up = &m->program->devices[d].units.data[u];
  Buf name = {0}, what = {0};
  for (int i = 0; i < up->code.len; i++) {
    const Instr *in = &up->code.data[i];
    const InstrNote *note = ir_instr_note(up, i);
    if (!note || note->at < 0 || in->op == OPC_WAIT || in->op == OPC_HALT) continue;
    int node = served_by(served, d, up, in, note->at);
    what.len = 0;
    if (node >= 0) node_name(&what, m, m->dag->nodes.data[node], steps);
    name.len = 0;
    buf_printf(&name, "%s", isa_opcodes[in->op].name);
    if (what.len || note->note) buf_printf(&name, " %s", what.len ? what.data : note->note);
    slice(t, d, u, name.data, t->base + note->at, held(m, in), NULL);
    t->counts->slices++;
  }
  buf_free(&name);
  buf_free(&what);
}

// ---- the preamble ------------------------------------------------------------

// Device d's unit of kind ctl (every working device has one), or -1.
static int ctl_unit(const DeviceProgram *dp) {
  for (int u = 0; u < dp->units.len; u++)
    if (dp->units.data[u].kind == UNIT_CTL) return u;
  return -1;
}

// The preamble of every working device as one slice on its ctl unit, up to
// its NOTIFY; each child's TRANSMIT from its parent's release (the root's
// first epoch boundary B after the launch window, plus the parent's
// release epochs) plus its send time (align.c), one vector on the link.
static void write_preamble(TraceOut *t, const ManifestInfo *m) {
  const Topology *topo = m->topo;
  const AlignPlan *a = &m->sync->align;
  int64_t E = topo->epoch_cycles, B = (a->launch_window / E + 1) * E, notify = t->base - 1;
  for (int d = 0; d < topo->ndevices; d++) {
    int ctl = ctl_unit(&m->program->devices[d]);
    if (ctl < 0) continue;
    slice(t, d, ctl, "alignment preamble (seed 002 s3.2)", 0, notify, NULL);
    slice(t, d, ctl, "NOTIFY alignment preamble", notify, 1, NULL);
    int parent = a->parent[d];
    if (parent < 0) continue;
    int port = topo->devices[d].ports[a->parent_port[d]].peer_port;  // the parent's port facing d
    int link = topo->devices[d].ports[a->parent_port[d]].link;
    int every = ir_cycles_per_vector(&topo->links.data[link].p, topo->clock_mhz);
    int64_t at = B + (int64_t)a->release[parent] * E + a->send_at[d];
    int64_t lands = at + topo->links.data[link].p.latency_max;
    slice(t, parent, ctl_unit(&m->program->devices[parent]), "TRANSMIT alignment preamble", at, 1, NULL);
    slice(t, parent, TRACE_SEND_TRACK + port, "alignment notification", at, every, NULL);
    slice(t, d, TRACE_RECEIVE_TRACK + a->parent_port[d], "alignment notification", lands, every, NULL);
    arrow(t, parent, TRACE_SEND_TRACK + port, at, d, TRACE_RECEIVE_TRACK + a->parent_port[d], lands);
    t->counts->slices += 3;
  }
}

// ---- transfers ---------------------------------------------------------------

// Route rt: each hop a stream out of one port and into the next, cut
// through at every intermediate TSP (hop_take: the next hop leaves when
// this one is taken).
static void write_route(TraceOut *t, const ManifestInfo *m, const Route *rt, const char *name, const char *args) {
  int64_t leave = t->base + rt->start;
  for (int h = 0; h < rt->path.nhops; h++) {
    const Hop *hop = &rt->path.hops[h];
    int64_t take = hop_take(m, rt, hop, leave);
    int64_t span = (rt->count - 1) * rt->every + rt->every;
    slice(t, hop->from, TRACE_SEND_TRACK + hop->out_port, name, leave, span, args);
    slice(t, hop->to, TRACE_RECEIVE_TRACK + hop->in_port, name, take, span, args);
    t->counts->slices += 2;
    if (t->arrows >= t->max_arrows) {  // the cap is reached: count the rest at once
      t->counts->arrows += (uint64_t)rt->count;
      leave = take;
      continue;
    }
    for (int64_t k = 0; k < rt->count; k++)
      arrow(t, hop->from, TRACE_SEND_TRACK + hop->out_port, leave + k * rt->every, hop->to,
            TRACE_RECEIVE_TRACK + hop->in_port, take + k * rt->every);
    leave = take;
  }
}

static void write_transfers(TraceOut *t, const ManifestInfo *m, const int *steps) {
  Buf name = {0}, args = {0};
  for (int i = 0; i < m->dag->nodes.len; i++) {
    const DagNode *n = m->dag->nodes.data[i];
    if (n->kind != NODE_TRANSFER) continue;
    node_name(&name, m, n, steps);
    for (int r = 0; r < n->nroutes; r++) {
      args.len = 0;
      buf_printf(&args, "{\"node\":%d,\"route\":%d,\"vectors\":%lld,\"hops\":%d,\"line\":%d}", n->id, r,
                 (long long)n->routes[r].count, n->routes[r].path.nhops, n->op->loc.line);
      write_route(t, m, &n->routes[r], name.data, args.data);
    }
  }
  buf_free(&name);
  buf_free(&args);
}

// By link direction (2 link + (from != a)): whether anything crosses it.
static char *directions_used(const ManifestInfo *m) {
  const Topology *topo = m->topo;
  char *used = xcalloc(2 * (size_t)topo->links.len + 1, 1);
  for (int i = 0; i < m->dag->nodes.len; i++) {
    const DagNode *n = m->dag->nodes.data[i];
    for (int r = 0; n->kind == NODE_TRANSFER && r < n->nroutes; r++)
      for (int h = 0; h < n->routes[r].path.nhops; h++) {
        const Hop *hop = &n->routes[r].path.hops[h];
        used[2 * hop->link + (hop->from != topo->links.data[hop->link].a)] = 1;
      }
  }
  for (int d = 0; d < topo->ndevices; d++) {
    int parent = m->sync->align.parent[d];
    if (parent < 0 || !m->program->devices[d].units.len) continue;
    int link = topo->devices[d].ports[m->sync->align.parent_port[d]].link;
    used[2 * link + (parent != topo->links.data[link].a)] = 1;
  }
  return used;
}

void be_write_trace(const ManifestInfo *m, uint64_t max_arrows, FILE *out, TraceCounts *counts) {
  *counts = (TraceCounts){0};
  TraceOut t = {.f = out, .clock_mhz = m->topo->clock_mhz, .base = m->sync->preamble_cycles,
                .max_arrows = max_arrows, .counts = counts};
  char *used = directions_used(m);
  int *steps = be_transfer_timesteps(m->dag);
  ServedVec served = served_table(m);
  fputs("{\"traceEvents\": [", out);
  name_tracks(&t, m, used);
  write_preamble(&t, m);
  for (int d = 0; d < m->program->ndevices; d++)
    for (int u = 0; u < m->program->devices[d].units.len; u++) write_unit(&t, m, &served, steps, d, u);
  write_transfers(&t, m, steps);
  fputs("\n], \"displayTimeUnit\": \"ns\"}\n", out);
  counts->arrows_drawn = t.arrows;
  free(served.data);
  free(steps);
  free(used);
}
