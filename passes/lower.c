// lower.c: collective lowering.  Part of passes/, after dag and before
// routing: every COLLECTIVE node is replaced by the TRANSFER nodes of the
// algorithm the choose pass gave it (c->algos), from the registry below.
//
// The pass rebuilds the DAG in one forward walk.  A node that is not a
// collective is copied with its dependencies renumbered; a dependency on a
// collective becomes the transfers that complete its result on the device
// the node reads it on (a compute node's device, a transfer's source, every
// device of a collective's group).  Adding an algorithm is one file
// defining a CollectiveAlgo and one line in `registry`.
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const CollectiveAlgo *const registry[] = {
    &algo_ring,
    &algo_biring,
    &algo_direct,
    &algo_ringbiodd,
    &algo_ring2d,
    &algo_hring,
    &algo_dragonfly3,
    &algo_hier,
    &algo_dbtree,
    &algo_multitree,
    &algo_tto,
    &algo_ctree,
};
_Static_assert(ARRAY_LEN(registry) == ALGO_COUNT - 1, "one registry line for every algorithm name but auto");

// What lowering one collective leaves: by device, the nodes after which
// its result is complete there.
typedef struct Done {
  IntList *at;  // by device id
} Done;

typedef struct Lowerer {
  Compilation *c;
  const Dag *old;
  Dag *dag;            // the new DAG
  int *renamed;        // old non-collective node -> new id
  Done *done;          // old collective node -> where its result completes
  IntList ready;        // scratch: the new ids a node waits for
  IntList *ready_on;    // while lowering: by device, what makes the operand available there
} Lowerer;

static const CollectiveAlgo *find_algo(AlgoKind kind) {
  for (size_t i = 0; i < ARRAY_LEN(registry); i++)
    if (registry[i]->kind == kind) return registry[i];
  return NULL;
}

// ---- the interface algorithms call ----

// Vectors [first, end) of bytes [0, total): part k of n, cut at vector
// boundaries.  A transfer moves whole vectors of SRAM (the ISA has no
// partial writes), so two chunks never share one; only a range's last
// vector may be part padding.
static void vector_part(int64_t total, int64_t vb, int k, int n, int64_t *offset, int64_t *bytes) {
  int64_t vectors = (total + vb - 1) / vb;
  int64_t first = vectors * k / n, end = vectors * (k + 1) / n;
  *offset = first * vb;
  *bytes = MAX(0, MIN(end * vb, total) - *offset);
}

void lower_chunk(const Lowering *l, int k, int n, int64_t *offset, int64_t *bytes) {
  int64_t vb = l->c->topo->link.vector_bytes;
  if (l->op->kind == OP_ALLREDUCE) {
    vector_part(layout_bytes(l->c, l->buffer), vb, k, n, offset, bytes);
    return;
  }
  // A shard is the op's: S units (padded rows, or elements: layout.c) of
  // the E, [s S, (s + 1) S) for group index s, clipped to E; its parts are
  // cut at vectors from the shard's start.  S = E / N, or with a
  // reduce_scatter's pad rows (first-dimension rows, each E / dim0 units)
  // S = (E + pad) / N: the last shards are short or empty, and the pad
  // rows never travel (codegen zeroes them).
  int per = n / l->ngroup, shard = k / per;
  int64_t elems, size;
  layout_units(l->c, l->buffer, &elems, &size);
  int64_t pad = l->op->pad_rows * (elems / l->buffer->shape.dim[0]), units = (elems + pad) / l->ngroup;
  int64_t s0 = MIN(units * shard, elems) * size, s1 = MIN(units * (shard + 1), elems) * size;
  vector_part(s1 - s0, vb, k % per, per, offset, bytes);
  *offset += s0;
}

void lower_chunk_span(const Lowering *l, int k0, int k1, int n, int64_t *offset, int64_t *bytes) {
  int64_t first = -1, end = 0;
  for (int k = k0; k < k1; k++) {
    int64_t o, b;
    lower_chunk(l, k, n, &o, &b);
    if (!b) continue;
    if (first < 0) first = o;
    end = o + b;
  }
  *offset = MAX(first, 0);
  *bytes = first < 0 ? 0 : end - first;
}

// A new node taking `ready` (sorted, without repeats) as its dependencies.
static DagNode *append(Lowerer *w, const DagNode *like) {
  DagNode *n = ARENA_NEW(&w->c->arena, DagNode);
  *n = *like;
  n->id = w->dag->nodes.len;
  ir_dag_set_deps(&w->c->arena, n, w->ready.data, w->ready.len);
  w->ready.len = 0;
  VEC_PUSH(&w->c->arena, &w->dag->nodes, n);
  return n;
}

int lower_send(Lowering *l, int src, int dst, int64_t offset, int64_t bytes, bool reduce, const int *deps,
               int ndeps) {
  Lowerer *w = l->state;
  for (int i = 0; i < ndeps; i++)
    if (deps[i] >= 0) VEC_PUSH(&w->c->arena, &w->ready, deps[i]);
  // The data leaves src and lands in dst's own copy (added into it, or
  // written over its slot), so both copies must exist first.
  for (int i = 0; i < w->ready_on[src].len; i++) VEC_PUSH(&w->c->arena, &w->ready, w->ready_on[src].data[i]);
  for (int i = 0; i < w->ready_on[dst].len; i++) VEC_PUSH(&w->c->arena, &w->ready, w->ready_on[dst].data[i]);
  DagNode like = {.kind = NODE_TRANSFER, .op = l->op, .tensor = l->buffer, .src = src, .dst = dst,
                  .offset = offset, .bytes = bytes, .reduce = reduce, .lane = l->lane, .on_cycle = l->on_cycle,
                  .fill_gaps = l->fill_gaps, .over_link = l->edge_link >= 0, .link = l->edge_link};
  return append(w, &like)->id;
}

void lower_after_reads(Lowering *l, int node, const int *reads, int nreads) {
  Lowerer *w = l->state;
  DagNode *n = w->dag->nodes.data[node];
  n->war = ARENA_ARRAY(&w->c->arena, int, nreads);
  n->nwar = 0;
  for (int i = 0; i < nreads; i++)
    if (reads[i] >= 0) n->war[n->nwar++] = reads[i];
}

void lower_done(Lowering *l, int device, int node) {
  Lowerer *w = l->state;
  Done *d = &w->done[l->coll->id];
  VEC_PUSH(&w->c->arena, &d->at[device], node);
}

// ---- the walk ----

// The devices an old node reads its collective dependency on, into out.
static int reads_on(const DagNode *n, int *out) {
  switch (n->kind) {
  case NODE_COMPUTE:
  case NODE_STAGE: out[0] = n->device; return 1;
  case NODE_TRANSFER: out[0] = n->src; return 1;
  case NODE_COLLECTIVE: memcpy(out, n->group, sizeof(int) * (size_t)n->ngroup); return n->ngroup;
  }
  return 0;
}

// Appends to out what old node dep has become, as read on device: its new
// id, or for a collective the transfers completing it there.
static void push_renamed(Lowerer *w, const DagNode *dep, int device, IntList *out) {
  if (dep->kind != NODE_COLLECTIVE) {
    VEC_PUSH(&w->c->arena, out, w->renamed[dep->id]);
    return;
  }
  const IntList *done = &w->done[dep->id].at[device];
  for (int j = 0; j < done->len; j++) VEC_PUSH(&w->c->arena, out, done->data[j]);
}

// Adds to `ready` what old node n's dependencies have become.
static void rename_deps(Lowerer *w, const DagNode *n, int *devices) {
  int nd = reads_on(n, devices);
  for (int i = 0; i < n->ndeps; i++)
    for (int k = 0; k < nd; k++) push_renamed(w, w->old->nodes.data[n->deps[i]], devices[k], &w->ready);
}

// The tensor the transfers move: the whole of the data (the operand, or
// the result of an all_gather, whose operand is one shard).
static const Tensor *buffer_of(const Op *op) { return op->kind == OP_ALL_GATHER ? op->result : op->args[0]; }

// A copy's result is, on a device that already holds the copy's operand,
// the operand's own bytes (codegen: a local copy moves nothing), which the
// copy's transfers may still be reading and the operand's other readers
// read after: a collective reducing into it there would change the
// operand under them (`ye = copy(y) @ each` of a y on device 0, then an
// allreduce of ye: the other devices received partial sums).  So such an
// operand is staged, as one with other readers is.
bool lower_in_place(const Graph *g, const Op *op) {
  const Tensor *x = op->args[0];
  if (op->kind == OP_ALL_GATHER || x->is_output || op->pad_rows) return false;
  if (x->def && x->def->kind == OP_COPY) return false;
  for (int i = 0; i < g->ops.len; i++)
    for (int a = 0; a < g->ops.data[i]->nargs; a++)
      if (g->ops.data[i]->args[a] == x && g->ops.data[i] != op) return false;
  return true;
}

// Each device of the group works on its own copy of the buffer.  Unless
// the collective may reduce its operand in place, a STAGE node first copies
// the operand into it there (an all_gather's: its shard's place), and the
// algorithm's transfers wait for that instead.
static void stage_operands(Lowerer *w, Lowering *l) {
  if (lower_in_place(w->c->graph, l->op)) return;
  for (int g = 0; g < l->ngroup; g++) {
    int dev = l->group[g];
    DagNode like = {.kind = NODE_STAGE, .op = l->op, .device = dev, .bytes = layout_bytes(l->c, l->op->args[0])};
    if (l->op->kind == OP_ALL_GATHER) lower_chunk(l, g, l->ngroup, &like.offset, &like.bytes);
    for (int j = 0; j < w->ready_on[dev].len; j++) VEC_PUSH(&w->c->arena, &w->ready, w->ready_on[dev].data[j]);
    w->ready_on[dev].len = 0;
    VEC_PUSH(&w->c->arena, &w->ready_on[dev], append(w, &like)->id);
  }
}

// The collective as an algorithm sees it.
static Lowering lowering_of(Compilation *c, const DagNode *n, void *state) {
  return (Lowering){.c = c, .coll = n, .op = n->op, .buffer = buffer_of(n->op), .ngroup = n->ngroup,
                    .group = n->group, .edge_link = -1, .state = state};
}

// The first registered algorithm that can lower n (registry order: the
// simplest first), or NULL with the first one's reason in why.
static const CollectiveAlgo *first_applying(Compilation *c, const DagNode *n, char *why, size_t whylen) {
  Lowering l = lowering_of(c, n, NULL);
  char reason[200];
  for (size_t i = 0; i < ARRAY_LEN(registry); i++) {
    if (registry[i]->applies(&l, reason, sizeof reason)) return registry[i];
    if (i == 0) snprintf(why, whylen, "%s: %s", ir_algo_names[registry[i]->kind], reason);
  }
  return NULL;
}

static bool lower_collective(Lowerer *w, const DagNode *n) {
  const Op *op = n->op;
  AlgoKind asked = w->c->algo_forced ? w->c->forced_algo : op->algo, chosen = w->c->algos[op->id];
  const char *how = w->c->algo_forced ? "--algo" : "algo";  // who asked
  char why[256];
  const CollectiveAlgo *algo = chosen == ALGO_AUTO ? first_applying(w->c, n, why, sizeof why) : find_algo(chosen);
  if (!algo) {
    diag_error(&w->c->diag, op->loc, "no implemented algorithm can lower this %s (%s)", ir_op_info[op->kind].name,
               why);
    return false;
  }
  // What auto chose, it chose among the algorithms that apply.
  Lowering l = lowering_of(w->c, n, w);
  if (asked != ALGO_AUTO && !algo->applies(&l, why, sizeof why)) {
    diag_error(&w->c->diag, op->loc, "%s=%s cannot lower this %s: %s", how, ir_algo_names[asked],
               ir_op_info[op->kind].name, why);
    return false;
  }
  int nd = w->c->topo->ndevices;
  w->done[n->id].at = arena_alloc(&w->c->arena, sizeof *w->done[n->id].at * (size_t)nd);
  // What makes the operand available on each device: the collective's own
  // dependencies, renamed, by the device they leave data on.
  for (int g = 0; g < n->ngroup; g++) w->ready_on[n->group[g]].len = 0;
  for (int i = 0; i < n->ndeps; i++) {
    const DagNode *dep = w->old->nodes.data[n->deps[i]];
    for (int g = 0; g < n->ngroup; g++) {
      int dev = n->group[g];
      bool leaves_on = (dep->kind == NODE_COMPUTE && dep->device == dev) ||
                       (dep->kind == NODE_TRANSFER && dep->dst == dev) || dep->kind == NODE_COLLECTIVE;
      if (leaves_on) push_renamed(w, dep, dev, &w->ready_on[dev]);
    }
  }
  w->c->algos[op->id] = algo->kind;
  stage_operands(w, &l);
  algo->lower(&l);
  // Part of each device's result is its own operand (its shard of an
  // all_gather; the chunk a ring's last transfer into it never carried),
  // so its consumers also wait for that.
  for (int g = 0; g < n->ngroup; g++) {
    int dev = n->group[g];
    for (int j = 0; j < w->ready_on[dev].len; j++) lower_done(&l, dev, w->ready_on[dev].data[j]);
  }
  return true;
}

// Lowers every collective of old by c->algos into a new DAG (*out); false
// after reporting an error.
bool lower_dag(Compilation *c, const Dag *old, Dag **out) {
  Dag *dag = ARENA_NEW(&c->arena, Dag);
  dag->graph = old->graph;
  Lowerer w = {.c = c, .old = old, .dag = dag};
  w.renamed = ARENA_ARRAY(&c->arena, int, old->nodes.len);
  w.done = ARENA_ARRAY(&c->arena, Done, old->nodes.len);
  w.ready_on = arena_alloc(&c->arena, sizeof *w.ready_on * (size_t)c->topo->ndevices);
  int *devices = ARENA_ARRAY(&c->arena, int, c->topo->ndevices);
  bool ok = true;
  for (int i = 0; i < old->nodes.len; i++) {
    const DagNode *n = old->nodes.data[i];
    if (n->kind == NODE_COLLECTIVE) {
      ok = lower_collective(&w, n);
      if (!ok) break;  // later nodes may wait for it
      continue;
    }
    rename_deps(&w, n, devices);
    w.renamed[i] = append(&w, n)->id;
  }
  *out = dag;
  return ok;
}

// ---- what the choose pass asks ----

int lower_applicable(Compilation *c, const DagNode *n, AlgoKind *out) {
  Lowering l = lowering_of(c, n, NULL);
  char why[256];
  int k = 0;
  for (size_t i = 0; i < ARRAY_LEN(registry); i++)
    if (registry[i]->applies(&l, why, sizeof why)) out[k++] = registry[i]->kind;
  return k;
}

int64_t lower_chain_bound(Compilation *c, const DagNode *n, AlgoKind kind) {
  const CollectiveAlgo *a = find_algo(kind);
  if (!a || !a->chain) return 0;
  Lowering l = lowering_of(c, n, NULL);
  return a->chain(&l) * (route_least_hop(c) + 1 + c->sync.margin);
}

bool lower_whole_blocks(const Lowering *l, int size, const char *what, char *why, size_t whylen) {
  char *in = xcalloc((size_t)l->c->topo->ndevices, 1);
  for (int g = 0; g < l->ngroup; g++) in[l->group[g]] = 1;
  bool ok = true;
  for (int g = 0; g < l->ngroup && ok; g++) {
    int first = l->group[g] / size * size;
    for (int k = 0; k < size && ok; k++)
      if (!in[first + k]) {
        const bool *failed = l->c->topo->device_failed;
        snprintf(why, whylen,
                 "it needs whole %ss in the group, and device %d is in it while device %d of the same %s is not%s",
                 what, l->group[g], first + k, what, failed && failed[first + k] ? " (it has failed)" : "");
        ok = false;
      }
  }
  free(in);
  return ok;
}

bool lower_uses_tree_chunks(AlgoKind kind) {
  const CollectiveAlgo *a = find_algo(kind);
  return a && a->trees;
}

int lower_tree_chunks(Compilation *c, const DagNode *n, AlgoKind kind) {
  const CollectiveAlgo *a = find_algo(kind);
  if (!a || !a->trees) return 0;
  Lowering l = lowering_of(c, n, NULL);
  return lower_trees_chunks(&l, a->trees);
}

bool pass_lower(Compilation *c) {
  if (c->trial_dag) {  // choose's trial of the winner is this lowering, routed and scheduled
    c->dag = c->trial_dag;
    return true;
  }
  Dag *dag;
  bool ok = lower_dag(c, c->dag, &dag);
  c->dag = dag;
  return ok;
}
