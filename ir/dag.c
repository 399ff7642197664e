// dag.c: the DAG IR's helpers: device groups of placements, the text dump
// printed by --dump-after=dag, and the verifier.  Part of ir/; the DAG is
// built by passes/dag.c and rewritten by the passes after it.
#include "ir.h"

#include <stdarg.h>
#include <stdlib.h>

static int compare_ints(const void *x, const void *y) {
  return (*(const int *)x > *(const int *)y) - (*(const int *)x < *(const int *)y);
}

void ir_dag_set_deps(Arena *a, DagNode *n, int *deps, int ndeps) {
  if (ndeps) qsort(deps, (size_t)ndeps, sizeof(int), compare_ints);
  n->deps = ARENA_ARRAY(a, int, ndeps);
  n->ndeps = 0;
  for (int i = 0; i < ndeps; i++)
    if (!i || deps[i] != deps[i - 1]) n->deps[n->ndeps++] = deps[i];
}

int ir_place_devices(const Placement *p, int ndevices, int *out) {
  if (p->kind != PLACE_EACH) {
    out[0] = p->index;
    return 1;
  }
  int n = 0, e = 0;
  for (int d = 0; d < ndevices; d++) {
    if (e < p->nexcept && p->except[e] == d) {
      e++;
      continue;
    }
    out[n++] = d;
  }
  return n;
}

bool ir_place_has(const Placement *p, int device) {
  if (p->kind == PLACE_DEVICE) return p->index == device;
  int lo = 0, hi = p->nexcept;  // except is ascending: a binary search
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (p->except[mid] < device) lo = mid + 1;
    else hi = mid;
  }
  return lo == p->nexcept || p->except[lo] != device;
}

static const char *const node_kind_names[] = {"compute", "transfer", "collective", "stage"};

// "add(x, b -> h)": the op, its operands and its result.
static void dump_op(const Op *op, FILE *out) {
  fprintf(out, "%s(", ir_op_info[op->kind].name);
  for (int i = 0; i < op->nargs; i++) fprintf(out, "%s%s", i ? ", " : "", op->args[i]->name);
  fprintf(out, " -> %s", op->result->name);
  if (op->kind == OP_ALLREDUCE || op->kind == OP_REDUCE_SCATTER)
    fprintf(out, ", op=%s", op->reduce == REDUCE_SUM ? "sum" : "max");
  if (ir_op_is_collective(op->kind))
    fprintf(out, ", algo=%s", ir_algo_names[op->algo]);
  fputc(')', out);
}

static void dump_node(const DagNode *n, bool scheduled, FILE *out) {
  char size[32];
  str_human_bytes(size, sizeof size, (double)n->bytes);
  fprintf(out, "  n%d = %s ", n->id, node_kind_names[n->kind]);
  switch (n->kind) {
  case NODE_COMPUTE:
    dump_op(n->op, out);
    fprintf(out, " on device(%d)", n->device);
    break;
  case NODE_TRANSFER:
    fprintf(out, "%s", n->tensor->name);
    if (n->offset || n->bytes < ir_tensor_bytes(n->tensor))  // more: the whole tensor, rows padded
      fprintf(out, "[%lld:%lld]", (long long)n->offset, (long long)(n->offset + n->bytes));
    fprintf(out, " device(%d) -> device(%d)%s, %s for ", n->src, n->dst, n->reduce ? " reducing" : "", size);
    dump_op(n->op, out);
    break;
  case NODE_COLLECTIVE:
    dump_op(n->op, out);
    fprintf(out, " over %d devices, %s each", n->ngroup, size);
    break;
  case NODE_STAGE:
    fprintf(out, "%s", n->op->args[0]->name);
    fprintf(out, " into the buffer at [%lld:%lld] on device(%d), %s for ", (long long)n->offset,
            (long long)(n->offset + n->bytes), n->device, size);
    dump_op(n->op, out);
    break;
  }
  for (int i = 0; i < n->ndeps; i++) fprintf(out, "%sn%d", i ? ", " : " after ", n->deps[i]);
  for (int i = 0; i < n->nwar; i++) fprintf(out, "%sn%d", i ? ", " : ", reduced after the reads of ", n->war[i]);
  fprintf(out, ";  // line %d\n", n->op->loc.line);
  if (scheduled) fprintf(out, "    at [%lld, %lld)\n", (long long)n->start, (long long)n->finish);
  for (int r = 0; r < n->nroutes; r++) {
    const Route *rt = &n->routes[r];
    fprintf(out, "    route %lld vectors [%lld, %lld) via %d", (long long)rt->count, (long long)rt->first,
            (long long)(rt->first + rt->count), n->src);
    for (int h = 0; h < rt->path.nhops; h++) fprintf(out, " -> %d", rt->path.hops[h].to);
    fprintf(out, ": latency %lld, every %d", (long long)rt->latency, rt->every);
    if (scheduled) fprintf(out, ", leaves at %lld", (long long)rt->start);
    fputc('\n', out);
  }
  for (int r = 0; r < n->nruns; r++)
    fprintf(out, "    vxm %lld vectors at %lld\n", (long long)n->runs[r].count, (long long)n->runs[r].start);
}

void ir_dag_dump(const Dag *d, FILE *out) {
  int count[4] = {0};
  for (int i = 0; i < d->nodes.len; i++) count[d->nodes.data[i]->kind]++;
  fprintf(out, "dag %s {  // %d node%s: %d compute, %d transfer, %d collective", d->graph->name,
          d->nodes.len, d->nodes.len == 1 ? "" : "s", count[NODE_COMPUTE], count[NODE_TRANSFER], count[NODE_COLLECTIVE]);
  if (count[NODE_STAGE]) fprintf(out, ", %d stage", count[NODE_STAGE]);
  fputc('\n', out);
  for (int i = 0; i < d->nodes.len; i++) dump_node(d->nodes.data[i], d->scheduled, out);
  if (d->scheduled) fprintf(out, "  // makespan %lld cycles\n", (long long)d->makespan);
  fprintf(out, "}\n");
}

static bool fail(char *err, size_t errlen, const char *fmt, ...) PRINTF_LIKE(3, 4);
static bool fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return false;
}

static bool device_ok(int d, int ndevices) { return d >= 0 && d < ndevices; }

// Routes, once made, carry every vector once, in order, from src to dst.
static bool routes_ok(const DagNode *n, char *err, size_t errlen) {
  int64_t next = 0;
  for (int r = 0; r < n->nroutes; r++) {
    const Route *rt = &n->routes[r];
    if (rt->first != next || rt->count < 1)
      return fail(err, errlen, "transfer n%d route %d carries vectors [%lld, +%lld), expected from %lld", n->id, r,
                  (long long)rt->first, (long long)rt->count, (long long)next);
    next += rt->count;
    int at = n->src;
    for (int h = 0; h < rt->path.nhops; h++) {
      if (rt->path.hops[h].from != at) return fail(err, errlen, "transfer n%d route %d is not a path", n->id, r);
      at = rt->path.hops[h].to;
    }
    if (at != n->dst) return fail(err, errlen, "transfer n%d route %d ends at device %d", n->id, r, at);
  }
  if (n->nroutes && next != n->vectors)
    return fail(err, errlen, "transfer n%d routes carry %lld of its %lld vectors", n->id, (long long)next,
                (long long)n->vectors);
  return true;
}

// The bytes of t with every row of its last dimension padded to whole
// vectors: the most a transfer of it may move (passes/layout.c).
static int64_t padded_bytes(const Tensor *t, int vector_bytes) {
  int64_t last = t->shape.dim[t->shape.rank - 1], per = isa_elems_per_vector(t->dtype, vector_bytes);
  int64_t padded = ir_shape_elems(&t->shape) / last * ((last + per - 1) / per) * vector_bytes;
  return MAX(padded, ir_tensor_bytes(t));
}

static bool node_ok(const DagNode *n, int index, int ndevices, int vector_bytes, char *err, size_t errlen) {
  if (n->id != index) return fail(err, errlen, "node n%d has id %d", index, n->id);
  for (int i = 0; i < n->ndeps; i++)
    if (n->deps[i] < 0 || n->deps[i] >= index || (i && n->deps[i] <= n->deps[i - 1]))
      return fail(err, errlen, "node n%d depends on n%d: not an earlier node in ascending order", index,
                  n->deps[i]);
  if (n->nwar && (n->kind != NODE_TRANSFER || !n->reduce))
    return fail(err, errlen, "node n%d waits for reads but reduces nothing", index);
  for (int i = 0; i < n->nwar; i++)
    if (n->war[i] < 0 || n->war[i] == index)
      return fail(err, errlen, "node n%d waits for the reads of n%d", index, n->war[i]);
  switch (n->kind) {
  case NODE_COMPUTE:
    if (!device_ok(n->device, ndevices)) return fail(err, errlen, "node n%d runs on device %d", index, n->device);
    return true;
  case NODE_STAGE:
    if (!device_ok(n->device, ndevices)) return fail(err, errlen, "node n%d runs on device %d", index, n->device);
    if (n->bytes < 1 || n->offset < 0)
      return fail(err, errlen, "stage n%d copies bytes [%lld, %lld)", index, (long long)n->offset,
                  (long long)(n->offset + n->bytes));
    return true;
  case NODE_TRANSFER:
    if (!device_ok(n->src, ndevices) || !device_ok(n->dst, ndevices) || n->src == n->dst)
      return fail(err, errlen, "transfer n%d goes from device %d to device %d", index, n->src, n->dst);
    if (n->bytes < 1 || n->offset < 0 || n->offset + n->bytes > padded_bytes(n->tensor, vector_bytes))
      return fail(err, errlen, "transfer n%d moves bytes [%lld, %lld) of a %lld-byte tensor", index,
                  (long long)n->offset, (long long)(n->offset + n->bytes), (long long)ir_tensor_bytes(n->tensor));
    return routes_ok(n, err, errlen);
  case NODE_COLLECTIVE:
    for (int i = 0; i < n->ngroup; i++)
      if (!device_ok(n->group[i], ndevices) || (i && n->group[i] <= n->group[i - 1]))
        return fail(err, errlen, "collective n%d has a group out of order or range", index);
    if (n->ngroup < 1) return fail(err, errlen, "collective n%d has an empty group", index);
    return true;
  }
  return fail(err, errlen, "node n%d has kind %d", index, (int)n->kind);
}

// One route's run on one link direction, for the contention check.
typedef struct Occupancy {
  int64_t key;  // link * 2 + (from > to)
  int64_t start, end;
  int node;
} Occupancy;

static int compare_occupancy(const void *x, const void *y) {
  const Occupancy *a = x, *b = y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return (a->start > b->start) - (a->start < b->start);
}

int64_t ir_transfer_reads_end(const DagNode *n) {
  int64_t end = 0;
  for (int r = 0; r < n->nroutes; r++) {
    const Route *rt = &n->routes[r];
    end = MAX(end, rt->start + (rt->count - 1) * rt->every + 1);
  }
  return end;
}

static bool schedule_ok(const Dag *d, const Topology *t, char *err, size_t errlen) {
  VEC(Occupancy) occ = {0};
  Arena a = {0};
  bool ok = true;
  for (int i = 0; i < d->nodes.len && ok; i++) {
    const DagNode *n = d->nodes.data[i];
    for (int k = 0; k < n->ndeps && ok; k++)
      if (n->start < d->nodes.data[n->deps[k]]->finish)
        ok = fail(err, errlen, "node n%d starts at %lld, before n%d finishes at %lld", i, (long long)n->start,
                  n->deps[k], (long long)d->nodes.data[n->deps[k]]->finish);
    for (int k = 0; k < n->nwar && ok; k++) {
      int64_t read = ir_transfer_reads_end(d->nodes.data[n->war[k]]);
      if (n->nruns && n->runs[0].start < read)
        ok = fail(err, errlen, "transfer n%d reduces at %lld, before n%d has read its data (%lld)", i,
                  (long long)n->runs[0].start, n->war[k], (long long)read);
    }
    for (int r = 0; r < n->nroutes; r++) {
      const Route *rt = &n->routes[r];
      int64_t at = rt->start;
      for (int h = 0; h < rt->path.nhops; h++) {
        const Hop *hop = &rt->path.hops[h];
        Occupancy o = {(int64_t)hop->link * 2 + (hop->from > hop->to), at, at + rt->count * rt->every, i};
        VEC_PUSH(&a, &occ, o);
        at += t->links.data[hop->link].p.latency_max + rt->hop_slack;
      }
    }
  }
  if (ok && occ.len) qsort(occ.data, (size_t)occ.len, sizeof(Occupancy), compare_occupancy);
  for (int i = 1; i < occ.len && ok; i++)
    if (occ.data[i].key == occ.data[i - 1].key && occ.data[i].start < occ.data[i - 1].end)
      ok = fail(err, errlen, "transfers n%d and n%d hold link %lld in one direction at cycle %lld", occ.data[i - 1].node,
                occ.data[i].node, (long long)(occ.data[i].key / 2), (long long)occ.data[i].start);
  arena_free(&a);
  return ok;
}

// The devices a node keeps data or runs on: a compute or stage node's
// device, a transfer's ends, a collective's group.  Only devices in service
// may (ir_device_in_service: no spare standing by, no failed unit); vectors
// may cross any working device on their way.
static bool service_ok(const DagNode *n, const Topology *t, char *err, size_t errlen) {
  int one[2] = {n->device, -1};
  const int *devs = one;
  int count = 1;
  if (n->kind == NODE_TRANSFER) one[0] = n->src, one[1] = n->dst, count = 2;
  if (n->kind == NODE_COLLECTIVE) devs = n->group, count = n->ngroup;
  for (int i = 0; i < count; i++)
    if (!ir_device_in_service(t, devs[i]))
      return fail(err, errlen, "node n%d uses device %d, which is out of service (a spare standing by, or failed)",
                  n->id, devs[i]);
  for (int r = 0; r < n->nroutes; r++)
    for (int h = 0; h < n->routes[r].path.nhops; h++)
      if (t->links.data[n->routes[r].path.hops[h].link].failed)
        return fail(err, errlen, "transfer n%d crosses link %d, which has failed", n->id,
                    n->routes[r].path.hops[h].link);
  return true;
}

bool ir_dag_verify(const Dag *d, const Topology *t, char *err, size_t errlen) {
  for (int i = 0; i < d->nodes.len; i++)
    if (!node_ok(d->nodes.data[i], i, t->ndevices, t->link.vector_bytes, err, errlen) ||
        !service_ok(d->nodes.data[i], t, err, errlen))
      return false;
  return !d->scheduled || schedule_ok(d, t, err, errlen);
}
