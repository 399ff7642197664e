// manifest.c: writes manifest.yaml, the index of an output directory.  Part
// of backend/; the last file tspc and tsp-as write, the first tsp-emu reads.
// docs/manifest.md describes every field.
#include "backend.h"

#include <stdlib.h>
#include <string.h>

static void write_shape(const Shape *s, FILE *out) {
  fprintf(out, "[");
  for (int i = 0; i < s->rank; i++) fprintf(out, "%s%lld", i ? ", " : "", (long long)s->dim[i]);
  fprintf(out, "]");
}

static const char *tensor_kind_name(const Tensor *t) {
  return t->kind == TENSOR_INPUT ? "input" : t->kind == TENSOR_PARAM ? "param" : "value";
}

// An input file's name without the directories it was given with, so the
// output depends on its bytes (the digest), not on how the path was typed.
static const char *file_name(const SrcFile *f) {
  const char *slash = strrchr(f->path, '/');
  return slash ? slash + 1 : f->path;
}

static void write_digest(const SrcFile *f, FILE *out) {
  char digest[DIGEST_TEXT_BYTES];
  digest_text(f->text, f->len, digest);
  fprintf(out, "digest: \"%s\"}\n", digest);
}

// The graph's interface: inputs, params and outputs with their placement.
static void write_graph(const Graph *g, FILE *out) {
  Arena scratch = {0};
  fprintf(out, "graph:\n  name: ");
  str_print_yaml(out, g->name);
  fprintf(out, "\n  tensors:\n");
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *t = g->tensors.data[i];
    if (t->kind == TENSOR_VALUE && !t->is_output) continue;
    fprintf(out, "    - {name: ");
    str_print_yaml(out, t->name);
    fprintf(out, ", kind: %s, dtype: %s, shape: ", tensor_kind_name(t), ir_dtype_names[t->dtype]);
    write_shape(&t->shape, out);
    fprintf(out, ", place: \"%s\", bytes: %lld}\n", ir_place_str(&scratch, &t->place),
            (long long)ir_tensor_bytes(t));
  }
  fprintf(out, "  outputs: [");
  for (int i = 0; i < g->outputs.len; i++) {
    fputs(i ? ", " : "", out);
    str_print_yaml(out, g->outputs.data[i]->name);
  }
  fprintf(out, "]\n");
  arena_free(&scratch);
}

// A shard's first element: `start: [r, c]`, as many entries as the shape.
static void write_start(const TensorHome *th, FILE *out) {
  fprintf(out, ", start: [");
  for (int d = 0; d < th->shape.rank; d++) fprintf(out, "%s%lld", d ? ", " : "", (long long)th->start[d]);
  fprintf(out, "]");
}

// The device binaries and where named tensors live in them.
static void write_program(const Program *p, FILE *out) {
  fprintf(out, "binaries:\n");
  for (int i = 0; i < p->ndevices; i++) fprintf(out, "  - dev%04d.tsp\n", i);
  if (p->predicted_cycles >= 0)
    fprintf(out, "predicted_cycles: %lld\n", (long long)p->predicted_cycles);
  else
    fprintf(out, "predicted_cycles: null\n");
  if (p->batches > 1) fprintf(out, "batches: %d\n", p->batches);  // absent: one inference
  fprintf(out, "tensors:%s\n", p->tensors.len ? "" : " []");
  for (int i = 0; i < p->tensors.len; i++) {
    const TensorHome *th = &p->tensors.data[i];
    fprintf(out, "  - {name: ");
    str_print_yaml(out, th->name);
    fprintf(out, ", device: %d, addr: %u, dtype: %s, shape: ", th->device, th->addr, ir_dtype_names[th->dtype]);
    write_shape(&th->shape, out);
    if (th->pitch) fprintf(out, ", pitch: %u", th->pitch);  // row-padded; absent: packed
    if (th->is_shard) write_start(th, out);                   // a box of the tensor; absent: all of it
    if (th->batch) fprintf(out, ", batch: %d", th->batch);    // which inference; absent: the first
    fprintf(out, "}\n");
  }
}

// One op's moves, summed over its transfer nodes.
typedef struct Moves {
  int transfers, minimal, spread;
  int64_t vectors, first, last;
} Moves;

// What the compiler chose: the algorithm of each collective and copy with
// its transfers and how their vectors were routed, and the sync plan.
static void write_schedule(const ManifestInfo *m, FILE *out) {
  const Dag *d = m->dag;
  const Graph *g = m->graph;
  Moves *moves = xcalloc((size_t)g->ops.len + 1, sizeof(Moves));
  for (int k = 0; k < d->nodes.len; k++) {
    const DagNode *n = d->nodes.data[k];
    if (n->kind != NODE_TRANSFER) continue;
    Moves *mv = &moves[n->op->id];
    mv->first = mv->transfers++ ? MIN(mv->first, n->start) : n->start;
    mv->last = MAX(mv->last, n->finish);
    mv->vectors += n->vectors;
    if (n->nonminimal) mv->spread++;
    else mv->minimal++;
  }
  fprintf(out, "schedule:\n  makespan_cycles: %lld\n", (long long)d->makespan);
  fprintf(out, "  sync: {drift_ppm: %g, launch_window: %lld, rx_slack: %lld, resync_interval: %lld, "
               "resync_window: %lld, stream_vectors: %lld}\n",
          m->sync->drift_ppm, (long long)m->sync->launch_window, (long long)m->sync->rx_slack,
          (long long)m->sync->interval, (long long)m->sync->window, (long long)m->sync->stream_vectors);
  fprintf(out, "  moves:%s\n", g->ops.len ? "" : " []");
  for (int i = 0; i < g->ops.len; i++) {
    const Op *op = g->ops.data[i];
    const Moves *mv = &moves[op->id];
    if (!mv->transfers) continue;
    fprintf(out, "    - {result: ");
    str_print_yaml(out, op->result->name);
    fprintf(out, ", op: %s, line: %d", ir_op_info[op->kind].name, op->loc.line);
    if (ir_op_is_collective(op->kind))
      fprintf(out, ", algo: %s", ir_algo_names[m->algos ? m->algos[op->id] : op->algo]);
    fprintf(out, ", transfers: %d, vectors: %lld, routes: {minimal: %d, nonminimal: %d}, cycles: [%lld, %lld]}\n",
            mv->transfers, (long long)mv->vectors, mv->minimal, mv->spread, (long long)mv->first,
            (long long)mv->last);
  }
  free(moves);
}

void be_write_manifest(const ManifestInfo *m, FILE *out) {
  const Topology *t = m->topo;
  fprintf(out, "%s\n", OUTDIR_MANIFEST_MARKER);
  fprintf(out, "format_version: %d\n", BE_MANIFEST_VERSION);
  fprintf(out, "tool: %s %s\n", m->tool, TSPC_VERSION);
  fprintf(out, "source: {file: ");
  str_print_yaml(out, file_name(m->source));
  fprintf(out, ", ");
  write_digest(m->source, out);
  fprintf(out, "topology: {file: topology.yaml, name: ");
  str_print_yaml(out, t->name);
  fprintf(out, ", family: %s, source_file: ", ir_family_names[t->family]);
  str_print_yaml(out, file_name(t->src));
  fprintf(out, ", ");
  write_digest(t->src, out);
  fprintf(out, "devices: %d\n", t->ndevices);
  if (t->nroles) {  // the spares standing in for failed units; absent: none failed
    Buf roles = {0};
    ir_roles_format(t, &roles);
    fprintf(out, "roles: %s\n", roles.data);
    buf_free(&roles);
  }
  if (m->graph || (m->program && m->program->model_text)) fprintf(out, "model: model.tg\n");
  if (m->graph) write_graph(m->graph, out);
  if (m->dag && m->sync) write_schedule(m, out);
  if (m->program) write_program(m->program, out);
}
