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
// devices of one op that fetch an operand, or that a copy sends to, take
// it as a tree, not a star (plan_tree): from a neighbour that holds it on
// a shortest path from its home, when there is one, so no device relays a
// copy of what it holds itself and no link carries the operand twice; a
// tree of more than one level goes in chunks passed on as they land.
// With several inferences in flight (--batches, batch.c), a device works on
// each of its runs one inference at a time, in order.  A run is a device's
// compute ops that come one after another in definition order (a pipeline
// stage, seed 002 s4.1); inference b's first node of a run comes after
// inference b - 1's last node of the same run there, and after inference
// b - 2's last node there that reads a value the run made (a later run of
// the device), so at most two inferences' copies of a value live on a
// device at once (what the partitioner's SRAM estimate allows:
// PARTITION_LIVE_BATCHES).  A device that holds a piece of an early op and
// a later stage (a matmul split over the pipeline's devices) starts
// inference b + 1's piece while inference b is on the later stage, rather
// than after it.  The partitioner says whether the devices have the SRAM
// for that, device by device (Compilation.runs_on); where not, all of its compute is
// one run, and the weight buffers keep the nodes' order (schedule.c).
#include "passes.h"

#include <string.h>

typedef VEC(int) IntVec;

// A tree more than one level deep sends its tensor in chunks of whole
// vectors, each passed on down the tree as soon as it has landed: at most
// BROADCAST_MAX_CHUNKS (a transfer a chunk, so the DAG grows by as many).
#define BROADCAST_MAX_CHUNKS 32

typedef struct Builder {
  Compilation *c;
  Dag *dag;
  int ndevices;
  int **at;     // at[tensor][device]: the node making it available there; NULL row: none yet
  int **first;  // first[tensor][device]: with at, the nodes first .. at that make it available
                //   there together (the chunks of a tree's edge, made one after another)
  VEC(int) deps;  // scratch: the dependencies of the node being made
  int *group;   // scratch: room for every device
  int *placed;  // scratch: the devices an op's result lives on
  int batch;          // the inference whose ops are being built
  const Op *seq_op;   // the compute op being built, and its number in this inference's
  int seq;            //   compute ops (definition order)
  int *last_seq;      // by device: the number of its last compute op in this inference (-1: none)
  IntVec *runs[2];    // by device, this inference's [0] and the one before's [1]: the last
                      //   node of each of its runs
  IntVec *readers[3]; // by device, this inference's [0] and the two before's: by run, the
                      //   last node of a later run there that reads a value the run made
  IntVec node_run;    // by compute node: its run on its device (-1: not a compute node)
  int *hops, *queue;  // scratch for fetch_as_tree: hops from an operand's home, the BFS's queue
  int *wanted;        // scratch: [device] == stamp when it is to fetch the operand
  int stamp;
  int *src_of, *deepest;  // scratch for plan_tree: [device] where it takes the tensor from, and
                          //   the most hops from the home of a device in its subtree
  int *order, *counts;    // scratch: the edges' order, plan_tree's counting sort
  const Op **reader;      // fetch_for_split: [device] the op a tree's edge there is for (NULL: the tree's)
} Builder;

static int available_at(const Builder *b, const Tensor *t, int device) {
  return b->at[t->id] ? b->at[t->id][device] : -1;
}

// Nodes first .. last make t available on device (all of them together).
static void record_span(Builder *b, const Tensor *t, int device, int first, int last) {
  if (!b->at[t->id]) {
    b->at[t->id] = ARENA_ARRAY(&b->c->arena, int, b->ndevices);
    b->first[t->id] = ARENA_ARRAY(&b->c->arena, int, b->ndevices);
    for (int d = 0; d < b->ndevices; d++) b->at[t->id][d] = b->first[t->id][d] = -1;
  }
  b->at[t->id][device] = last;
  b->first[t->id][device] = first;
}

static void record(Builder *b, const Tensor *t, int device, int node) { record_span(b, t, device, node, node); }

// The nodes making t available on device: how many (0: none, it lives
// there or nothing has made it), the first in *first.
static int available_span(const Builder *b, const Tensor *t, int device, int *first) {
  int last = available_at(b, t, device);
  if (last < 0) return 0;
  *first = b->first[t->id][device];
  return last - *first + 1;
}

// The device a tensor that does not live on `device` is sent from.
static int home_of(const Builder *b, const Tensor *t) {
  ir_place_devices(&t->place, b->ndevices, b->group);
  return b->group[0];
}

static void add_dep(Builder *b, int node) {
  if (node >= 0) VEC_PUSH(&b->c->arena, &b->deps, node);
}

// Every node that makes t available on device, as dependencies.
static void add_available(Builder *b, const Tensor *t, int device) {
  int first, n = available_span(b, t, device, &first);
  for (int i = 0; i < n; i++) add_dep(b, first + i);
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
  add_available(b, t, src);
  DagNode *n = new_node(b, NODE_TRANSFER, op);
  n->tensor = t;
  n->src = src;
  n->dst = dst;
  n->bytes = layout_bytes(b->c, t);
  return n;
}

// Moves t to device from its home unless it lives there or was sent
// there already.  Only called with the scratch dependencies empty.
static void fetch(Builder *b, const Op *op, const Tensor *t, int device) {
  if (available_at(b, t, device) >= 0 || ir_place_has(&t->place, device)) return;
  DagNode *n = new_transfer(b, op, t, home_of(b, t), device);
  record(b, t, device, n->id);
}

// Whether device h holds t's bytes to send on: t lives there (`lives`:
// when that counts), or a node has made it available there.
static bool holds(const Builder *b, const Tensor *t, int h, bool lives) {
  return (lives && ir_place_has(&t->place, h)) || available_at(b, t, h) >= 0;
}

// The neighbour of device d, one hop nearer the home on a shortest path
// (b->hops), that holds t or is sent it in the same tree (one it lives on
// first, then the lowest id), else the home itself.
static int nearest_holder(const Builder *b, const Tensor *t, bool lives, int home, int d) {
  const Topology *topo = b->c->topo;
  int best = home;
  bool best_lives = true;
  for (int p = 0; p < topo->devices[d].nports; p++) {
    const Port *port = &topo->devices[d].ports[p];
    int h = port->peer;
    if (port->link < 0 || topo->links.data[port->link].failed || b->hops[h] != b->hops[d] - 1 ||
        !(holds(b, t, h, lives) || b->wanted[h] == b->stamp))  // (a wanted one is sent t before d)
      continue;
    bool h_lives = lives && ir_place_has(&t->place, h);
    if (best == home || (h_lives && !best_lives) || (h_lives == best_lives && h < best)) best = h, best_lives = h_lives;
  }
  return best;
}

// The `wanted` devices marked (b->stamp), nearest t's home first: the
// BFS's order, into b->queue[0 .. wanted); the home's hops in b->hops.
// Every device in service reaches every other (the topology loader
// refuses a network that is not connected).
static void wanted_by_hops(Builder *b, const Tensor *t, int wanted, int *home) {
  *home = home_of(b, t);
  int reached = ir_topo_hops_from(b->c->topo, *home, b->hops, b->queue), m = 0;
  for (int i = 0; i < reached; i++)
    if (b->wanted[b->queue[i]] == b->stamp) b->queue[m++] = b->queue[i];
  if (m != wanted) die("dag: %d of the devices %s is sent to cannot be reached from device %d", wanted - m, t->name, *home);
}

// The tree to the m wanted devices in b->queue (BFS order from home):
// each one's source (nearest_holder, of t or of the copy's result: `held`)
// in b->src_of, and into b->order the order to make their edges in: the
// edges to the deepest subtrees first, so that the scheduler, which places
// nodes in id order, gives the longest paths their links first; a parent's
// subtree is at least as deep as its child's and comes earlier in BFS
// order, so a parent's edge is always made first.  Returns whether some
// device takes the tensor from another one of the tree (it is more than
// one level deep).
static bool plan_tree(Builder *b, const Tensor *held, bool lives, int home, int m) {
  bool deep = false;
  int most = 0;
  for (int i = 0; i < m; i++) {
    int d = b->queue[i];
    b->src_of[d] = nearest_holder(b, held, lives, home, d);
    b->deepest[d] = b->hops[d];
    most = MAX(most, b->hops[d]);
    deep |= b->wanted[b->src_of[d]] == b->stamp;
  }
  for (int i = m - 1; i >= 0; i--) {  // children before parents
    int d = b->queue[i], s = b->src_of[d];
    if (b->wanted[s] == b->stamp) b->deepest[s] = MAX(b->deepest[s], b->deepest[d]);
  }
  memset(b->counts, 0, sizeof(int) * (size_t)(most + 2));  // a stable counting sort, deepest first
  for (int i = 0; i < m; i++) b->counts[most - b->deepest[b->queue[i]] + 1]++;
  for (int k = 1; k <= most + 1; k++) b->counts[k] += b->counts[k - 1];
  for (int i = 0; i < m; i++) b->order[b->counts[most - b->deepest[b->queue[i]]]++] = b->queue[i];
  return deep;
}

// The chunks a tree's edges cut t into: BROADCAST_MAX_CHUNKS at most, of
// whole vectors, *chunk_bytes each (the last the rest).
static int tree_chunks(const Builder *b, const Tensor *t, int64_t *chunk_bytes) {
  int64_t vb = b->c->topo->link.vector_bytes, bytes = layout_bytes(b->c, t), vectors = (bytes + vb - 1) / vb;
  int64_t per = (vectors + BROADCAST_MAX_CHUNKS - 1) / BROADCAST_MAX_CHUNKS;
  *chunk_bytes = per * vb;
  return (int)((vectors + per - 1) / per);
}

// The edge src -> d of a tree carrying `carried` (t, or the result of the
// copy sending it), made available on d as `lands`: m transfers of
// chunk_bytes (the last the rest), one after another.  Chunk i leaves src
// once src has chunk i, when src took `carried` in as many chunks, else
// once it has all of it: a chunk is sent on as soon as it has landed, not
// after the whole tensor.
static void tree_edge(Builder *b, const Op *op, const Tensor *carried, const Tensor *lands, int src, int d, int m,
                      int64_t chunk_bytes) {
  int64_t total = layout_bytes(b->c, carried);
  int first_src = 0, have = available_span(b, carried, src, &first_src), first = b->dag->nodes.len;
  for (int i = 0; i < m; i++) {
    if (have == m) add_dep(b, first_src + i);
    else add_available(b, carried, src);
    DagNode *n = new_node(b, NODE_TRANSFER, b->reader && b->reader[d] ? b->reader[d] : op);
    n->tensor = carried;
    n->src = src;
    n->dst = d;
    n->offset = i * chunk_bytes;
    n->bytes = m == 1 ? total : MIN(chunk_bytes, total - n->offset);
  }
  record_span(b, lands, d, first, b->dag->nodes.len - 1);
}

// t to each of the n devices that lack it, nearest its home first, each
// from nearest_holder: a tree over the shortest paths from the home.  A
// star from the home would send t over the home's first links once for
// every device behind them, and a device on the way would relay each of
// those copies through a forwarding buffer beside its own (seed 002 s4.1:
// the compiler chooses every path).  A tree more than one level deep is
// cut into chunks (tree_chunks), which go on down it as they land, as a
// star's relays would pass each vector on.
static void fetch_as_tree(Builder *b, const Op *op, const Tensor *t, const int *devices, int n, bool only_deep) {
  int m = 0, home;
  b->stamp++;
  for (int i = 0; i < n; i++)
    if (!holds(b, t, devices[i], true)) b->wanted[devices[i]] = b->stamp, m++;
  if (!m) return;
  wanted_by_hops(b, t, m, &home);
  int64_t chunk_bytes = 0;
  bool deep = plan_tree(b, t, true, home, m);
  if (only_deep && !deep) return;  // (each device's own fetch, as its op is built)
  int chunks = deep ? tree_chunks(b, t, &chunk_bytes) : 1;
  for (int i = 0; i < m; i++) tree_edge(b, op, t, t, b->src_of[b->order[i]], b->order[i], chunks, chunk_bytes);
}

// Moves the builder on to op's inference: what was the last compute node
// of each device is now an earlier inference's.
static void enter_batch(Builder *b, const Op *op) {
  if (op->result->batch == b->batch) return;
  b->batch = op->result->batch;
  b->seq_op = NULL, b->seq = -1;
  for (int d = 0; d < b->ndevices; d++) {
    IntVec runs = b->runs[1][d], readers = b->readers[2][d];
    b->runs[1][d] = b->runs[0][d], b->runs[0][d] = runs, b->runs[0][d].len = 0;
    b->readers[2][d] = b->readers[1][d], b->readers[1][d] = b->readers[0][d], b->readers[0][d] = readers;
    b->readers[0][d].len = 0;
    b->last_seq[d] = -1;
  }
}

// v[i] (-1 past its end).
static int at_or_none(const IntVec *v, int i) { return i < v->len ? v->data[i] : -1; }

// v[i] = x, v grown with -1s to hold it.
static void put_at(Builder *b, IntVec *v, int i, int x) {
  while (v->len <= i) VEC_PUSH(&b->c->arena, v, -1);
  v->data[i] = x;
}

// The dependencies that order device's inferences (above) for the node of
// op about to be made there, which is then the last of its run.
static void order_inferences(Builder *b, const Op *op, int device) {
  if (op != b->seq_op) b->seq_op = op, b->seq++;
  IntVec *runs = &b->runs[0][device];
  int node = b->dag->nodes.len;  // the node made next
  bool starts = !runs->len || (compilation_runs_on(b->c, device) && b->last_seq[device] != b->seq - 1);
  if (starts) VEC_PUSH(&b->c->arena, runs, -1);
  int r = runs->len - 1;
  if (starts) {
    add_dep(b, at_or_none(&b->runs[1][device], r));
    add_dep(b, at_or_none(&b->readers[2][device], r));
  }
  b->last_seq[device] = b->seq;
  runs->data[r] = node;
  put_at(b, &b->node_run, node, r);
  for (int a = 0; a < op->nargs; a++) {  // values an earlier run made here
    int from = available_at(b, op->args[a], device);
    int made = from >= 0 ? at_or_none(&b->node_run, from) : -1;
    if (made >= 0 && made != r) put_at(b, &b->readers[0][device], made, node);
  }
}

static void build_compute(Builder *b, const Op *op, int device) {
  for (int a = 0; a < op->nargs; a++) fetch(b, op, op->args[a], device);
  for (int a = 0; a < op->nargs; a++) add_available(b, op->args[a], device);
  order_inferences(b, op, device);
  DagNode *n = new_node(b, NODE_COMPUTE, op);
  n->device = device;
  record(b, op->result, device, n->id);
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
  wanted_by_hops(b, x, m, &home);
  int64_t chunk_bytes = 0;
  int chunks = plan_tree(b, c, false, home, m) ? tree_chunks(b, x, &chunk_bytes) : 1;
  for (int i = 0; i < m; i++) {
    int d = b->order[i], src = b->src_of[d];
    tree_edge(b, op, src == home ? x : c, c, src, d, chunks, chunk_bytes);
  }
}

static void build_collective(Builder *b, const Op *op) {
  const Tensor *x = op->args[0];
  int n = ir_place_devices(&x->place, b->ndevices, b->group);
  for (int i = 0; i < n; i++) add_available(b, x, b->group[i]);
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
  for (int a = 0; a < op->nargs; a++) fetch_as_tree(b, op, op->args[a], b->placed, n, false);
  for (int i = 0; i < n; i++) build_compute(b, op, b->placed[i]);
}

static bool reads(const Op *op, const Tensor *t) {
  for (int a = 0; a < op->nargs; a++)
    if (op->args[a] == t) return true;
  return false;
}

// Whether t was met before operand a of op i: an operand of an op of
// [first, i), or of op i before a.
static bool read_before(const Graph *g, int first, int i, int a, const Tensor *t) {
  for (int k = first; k < i; k++)
    if (reads(g->ops.data[k], t)) return true;
  for (int x = 0; x < a; x++)
    if (g->ops.data[i]->args[x] == t) return true;
  return false;
}

// The ops a split made (partition.c: their results shards of one tensor,
// one after another in the graph), at the first of them: each operand
// they read goes to all their devices as one tree (fetch_as_tree) when it
// is more than one level deep, so it goes on down in chunks as it lands
// rather than whole from one op's device to the next's.  A tree of one
// level is left to each op's own fetch, in the order the ops are built.
static void fetch_for_split(Builder *b, const Graph *g, int first) {
  const Op *op = g->ops.data[first];
  const Tensor *of = op->result->shard_of;
  if (!of || ir_op_is_collective(op->kind) || op->kind == OP_COPY ||
      (first > 0 && g->ops.data[first - 1]->result->shard_of == of))
    return;
  int end = first;
  while (end < g->ops.len && g->ops.data[end]->result->shard_of == of && g->ops.data[end]->kind == op->kind) end++;
  if (end - first < 2) return;
  for (int i = first; i < end; i++)
    for (int a = 0; a < g->ops.data[i]->nargs; a++) {
      const Tensor *t = g->ops.data[i]->args[a];
      if (read_before(g, first, i, a, t)) continue;  // its tree is made
      int n = 0;
      for (int k = i; k < end; k++) {
        const Op *sib = g->ops.data[k];
        if (reads(sib, t) && sib->result->place.kind == PLACE_DEVICE && n < b->ndevices) {
          b->placed[n++] = sib->result->place.index;
          b->reader[sib->result->place.index] = sib;
        }
      }
      if (n > 1) fetch_as_tree(b, g->ops.data[i], t, b->placed, n, true);
      for (int k = 0; k < n; k++) b->reader[b->placed[k]] = NULL;
    }
}

bool pass_dag(Compilation *c) {
  if (!layout_plan(c)) return false;
  Dag *dag = ARENA_NEW(&c->arena, Dag);
  dag->graph = c->graph;
  Builder b = {.c = c, .dag = dag, .ndevices = c->topo->ndevices};
  b.at = ARENA_ARRAY(&c->arena, int *, c->graph->tensors.len);
  b.first = ARENA_ARRAY(&c->arena, int *, c->graph->tensors.len);
  b.group = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.placed = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.hops = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.queue = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.wanted = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.src_of = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.deepest = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.order = ARENA_ARRAY(&c->arena, int, b.ndevices);
  b.counts = ARENA_ARRAY(&c->arena, int, b.ndevices + 2);
  b.reader = ARENA_ARRAY(&c->arena, const Op *, b.ndevices);
  b.last_seq = ARENA_ARRAY(&c->arena, int, b.ndevices);
  for (int k = 0; k < 2; k++) b.runs[k] = ARENA_ARRAY(&c->arena, IntVec, b.ndevices);
  for (int k = 0; k < 3; k++) b.readers[k] = ARENA_ARRAY(&c->arena, IntVec, b.ndevices);
  b.seq = -1;
  for (int d = 0; d < b.ndevices; d++) b.last_seq[d] = -1;
  for (int i = 0; i < c->graph->ops.len; i++) {
    fetch_for_split(&b, c->graph, i);
    build_op(&b, c->graph->ops.data[i]);
  }
  c->dag = dag;
  return true;
}
