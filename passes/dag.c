// dag.c: builds the DAG of compute, transfer and collective nodes from the
// placed graph.  Part of passes/, after partition; collective lowering,
// routing and scheduling work on what it leaves.
//
// Ops are visited in definition order (a topological order), so every node's
// dependencies exist before it and get smaller ids.  For each op and each
// device its result lives on:
//   - a compute op is one COMPUTE node there, after whatever makes each
//     operand available there;
//   - a copy is a TRANSFER from the device holding the operand, or a local
//     COMPUTE move when the operand is already there (@ each to @ each);
//   - a collective is one COLLECTIVE node over the operand's group, after
//     the operand's producers on every device of the group.
// An operand that lives on another device (a parameter the partitioner put
// with its first consumer, used by a second consumer elsewhere) is moved by
// an implicit TRANSFER, made once per tensor and device and shared.  The
// devices of one op that fetch an operand take it as a tree, not a star
// (fetch_as_tree): from a neighbour that already holds it on a shortest
// path from its home, when there is one, so no device relays a copy of
// what it holds itself and no link carries the operand twice.
// With several inferences in flight (--batches, batch.c), a device computes
// them one at a time, in order: inference b's first compute node on a
// device comes after inference b - 1's last there (a pipeline stage works
// on one inference, then the next), so their working values do not pile up.
#include "passes.h"

#include <string.h>

typedef struct Builder {
  Compilation *c;
  Dag *dag;
  int ndevices;
  int **at;     // at[tensor][device]: the node making it available there; NULL row: none yet
  VEC(int) deps;  // scratch: the dependencies of the node being made
  int *group;   // scratch: room for every device
  int *placed;  // scratch: the devices an op's result lives on
  int batch;          // the inference whose ops are being built
  int *last_compute;  // by device: its last compute node in this inference (-1: none)
  int *last_before;   // by device: its last compute node in an earlier one (-1: none)
  int *hops, *queue;  // scratch for fetch_as_tree: hops from an operand's home, the BFS's queue
  int *wanted;        // scratch: [device] == stamp when it is to fetch the operand
  int stamp;
} Builder;

static int available_at(const Builder *b, const Tensor *t, int device) {
  return b->at[t->id] ? b->at[t->id][device] : -1;
}

static void record(Builder *b, const Tensor *t, int device, int node) {
  if (!b->at[t->id]) {
    b->at[t->id] = ARENA_ARRAY(&b->c->arena, int, b->ndevices);
    for (int d = 0; d < b->ndevices; d++) b->at[t->id][d] = -1;
  }
  b->at[t->id][device] = node;
}

// The device a tensor that does not live on `device` is sent from.
static int home_of(const Builder *b, const Tensor *t) {
  ir_place_devices(&t->place, b->ndevices, b->group);
  return b->group[0];
}

static void add_dep(Builder *b, int node) {
  if (node >= 0) VEC_PUSH(&b->c->arena, &b->deps, node);
}

// A new node of `kind` for `op`, taking the scratch dependencies (sorted,
// without repeats) and clearing them.
static DagNode *new_node(Builder *b, DagNodeKind kind, const Op *op) {
  DagNode *n = ARENA_NEW(&b->c->arena, DagNode);
  n->id = b->dag->nodes.len;
  n->kind = kind;
  n->op = op;
  ir_dag_set_deps(&b->c->arena, n, b->deps.data, b->deps.len);
  b->deps.len = 0;
  VEC_PUSH(&b->c->arena, &b->dag->nodes, n);
  return n;
}

static DagNode *new_transfer(Builder *b, const Op *op, const Tensor *t, int src, int dst) {
  add_dep(b, available_at(b, t, src));
  DagNode *n = new_node(b, NODE_TRANSFER, op);
  n->tensor = t;
  n->src = src;
  n->dst = dst;
  n->bytes = layout_bytes(b->c, t);
  return n;
}

// The node after which t is available on device (-1: from the start),
// moving it there first if it lives elsewhere.  Only called with the
// scratch dependencies empty.
static int fetch(Builder *b, const Op *op, const Tensor *t, int device) {
  int have = available_at(b, t, device);
  if (have >= 0 || ir_place_has(&t->place, device)) return have;
  DagNode *n = new_transfer(b, op, t, home_of(b, t), device);
  record(b, t, device, n->id);
  return n->id;
}

// Whether device h holds t's bytes to send on: t lives there (`lives`:
// when that counts), or a node has made it available there.
static bool holds(const Builder *b, const Tensor *t, int h, bool lives) {
  return (lives && ir_place_has(&t->place, h)) || available_at(b, t, h) >= 0;
}

// The neighbour of device d, one hop nearer the home on a shortest path
// (b->hops), that holds t (one it lives on before one it was sent to, then
// the lowest id), else the home itself.
static int nearest_holder(const Builder *b, const Tensor *t, bool lives, int home, int d) {
  const Topology *topo = b->c->topo;
  int best = home;
  bool best_lives = true;
  for (int p = 0; p < topo->devices[d].nports; p++) {
    const Port *port = &topo->devices[d].ports[p];
    int h = port->peer;
    if (port->link < 0 || topo->links.data[port->link].failed || b->hops[h] != b->hops[d] - 1 ||
        !holds(b, t, h, lives))
      continue;
    bool h_lives = lives && ir_place_has(&t->place, h);
    if (best == home || (h_lives && !best_lives) || (h_lives == best_lives && h < best)) best = h, best_lives = h_lives;
  }
  return best;
}

// The devices marked wanted (b->stamp), nearest t's home first: the BFS's
// order, into b->queue[0 .. returned); the home's hops in b->hops.
static int wanted_by_hops(Builder *b, const Tensor *t, int *home) {
  *home = home_of(b, t);
  int reached = ir_topo_hops_from(b->c->topo, *home, b->hops, b->queue), m = 0;
  for (int i = 0; i < reached; i++)
    if (b->wanted[b->queue[i]] == b->stamp) b->queue[m++] = b->queue[i];
  return m;
}

// t to each of the n devices that lack it, nearest its home first, each
// from nearest_holder: a tree over the shortest paths from the home.  A
// star from the home would send t over the home's first links once for
// every device behind them, and a device on the way would relay each of
// those copies through a forwarding buffer beside its own (seed 002 s4.1:
// the compiler chooses every path).  An unreachable device gets fetch()'s
// transfer, which routing refuses.
static void fetch_as_tree(Builder *b, const Op *op, const Tensor *t, const int *devices, int n) {
  int m = 0, home;
  b->stamp++;
  for (int i = 0; i < n; i++)
    if (!holds(b, t, devices[i], true)) b->wanted[devices[i]] = b->stamp, m++;
  if (!m) return;
  m = wanted_by_hops(b, t, &home);
  for (int i = 0; i < m; i++) {
    int d = b->queue[i];
    DagNode *node = new_transfer(b, op, t, nearest_holder(b, t, true, home, d), d);
    record(b, t, d, node->id);
  }
}

// Moves the builder on to op's inference: what was the last compute node
// of each device is now an earlier inference's.
static void enter_batch(Builder *b, const Op *op) {
  if (op->result->batch == b->batch) return;
  b->batch = op->result->batch;
  for (int d = 0; d < b->ndevices; d++)
    if (b->last_compute[d] >= 0) b->last_before[d] = b->last_compute[d], b->last_compute[d] = -1;
}

static void build_compute(Builder *b, const Op *op, int device) {
  int ready[IR_MAX_OPERANDS];
  for (int a = 0; a < op->nargs; a++) ready[a] = fetch(b, op, op->args[a], device);
  for (int a = 0; a < op->nargs; a++) add_dep(b, ready[a]);
  if (b->last_compute[device] < 0) add_dep(b, b->last_before[device]);  // the earlier inference's work here first
  DagNode *n = new_node(b, NODE_COMPUTE, op);
  n->device = device;
  record(b, op->result, device, n->id);
  b->last_compute[device] = n->id;
}

// A copy to n devices: a local move where x is (or was sent) already, a
// tree of transfers to the rest as fetch_as_tree's, each device taking its
// copy from a neighbour's copy (the result) or from x's home.
static void build_copy(Builder *b, const Op *op, const int *devices, int n) {
  const Tensor *x = op->args[0], *c = op->result;
  int m = 0, home;
  b->stamp++;
  for (int i = 0; i < n; i++) {
    if (holds(b, x, devices[i], true))  // here, or already sent here
      build_compute(b, op, devices[i]);
    else
      b->wanted[devices[i]] = b->stamp, m++;
  }
  if (!m) return;
  int reached = wanted_by_hops(b, x, &home);
  for (int i = 0; i < reached; i++) {
    int d = b->queue[i], src = nearest_holder(b, c, false, home, d);
    DagNode *node = new_transfer(b, op, src == home ? x : c, src, d);
    record(b, c, d, node->id);
  }
  for (int i = 0; i < n; i++)  // unreachable from the home: routing refuses the transfer
    if (b->wanted[devices[i]] == b->stamp && available_at(b, c, devices[i]) < 0) {
      DagNode *node = new_transfer(b, op, x, home, devices[i]);
      record(b, c, devices[i], node->id);
    }
}

static void build_collective(Builder *b, const Op *op) {
  const Tensor *x = op->args[0];
  int n = ir_place_devices(&x->place, b->ndevices, b->group);
  for (int i = 0; i < n; i++) add_dep(b, available_at(b, x, b->group[i]));
  DagNode *node = new_node(b, NODE_COLLECTIVE, op);
  node->bytes = layout_bytes(b->c, x);
  node->ngroup = n;
  node->group = ARENA_ARRAY(&b->c->arena, int, n);
  memcpy(node->group, b->group, sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) record(b, op->result, node->group[i], node->id);
}

static void build_op(Builder *b, const Op *op) {
  enter_batch(b, op);
  if (ir_op_is_collective(op->kind)) {
    build_collective(b, op);
    return;
  }
  int n = ir_place_devices(&op->result->place, b->ndevices, b->placed);
  if (op->kind == OP_COPY) {
    build_copy(b, op, b->placed, n);
    return;
  }
  for (int a = 0; a < op->nargs; a++) fetch_as_tree(b, op, op->args[a], b->placed, n);
  for (int i = 0; i < n; i++) build_compute(b, op, b->placed[i]);
}

bool pass_dag(Compilation *c) {
  if (!layout_plan(c)) return false;
  Dag *dag = ARENA_NEW(&c->arena, Dag);
  dag->graph = c->graph;
  Builder b = {.c = c, .dag = dag, .ndevices = c->topo->ndevices};
  b.at = ARENA_ARRAY(&c->arena, int *, c->graph->tensors.len);
  b.group = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.placed = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.last_compute = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.last_before = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.hops = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.queue = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.wanted = ARENA_ARRAY(&c->arena, int, b.ndevices);
  for (int d = 0; d < b.ndevices; d++) b.last_compute[d] = b.last_before[d] = -1;
  for (int i = 0; i < c->graph->ops.len; i++) build_op(&b, c->graph->ops.data[i]);
  c->dag = dag;
  return true;
}
