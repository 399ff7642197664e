// manifest.c: writes manifest.yaml, the index of an output directory.  Part
// of backend/; the last thing tspc writes, the first thing tsp-emu reads.
// docs/manifest.md describes every field.
#include "backend.h"

static void write_shape(const Shape *s, FILE *out) {
  fprintf(out, "[");
  for (int i = 0; i < s->rank; i++) fprintf(out, "%s%lld", i ? ", " : "", (long long)s->dim[i]);
  fprintf(out, "]");
}

static const char *tensor_kind_name(const Tensor *t) {
  return t->kind == TENSOR_INPUT ? "input" : t->kind == TENSOR_PARAM ? "param" : "value";
}

static void write_tensors(const Graph *g, FILE *out) {
  Arena scratch = {0};
  fprintf(out, "tensors:\n");
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *t = g->tensors.data[i];
    if (t->kind == TENSOR_VALUE && !t->is_output) continue;
    const char *place = ir_place_str(&scratch, &t->place);
    fprintf(out, "  - {name: %s, kind: %s, dtype: %s, shape: ", t->name, tensor_kind_name(t),
            ir_dtype_names[t->dtype]);
    write_shape(&t->shape, out);
    fprintf(out, ", place: \"%s\", bytes: %lld}\n", place, (long long)ir_tensor_bytes(t));
  }
  arena_free(&scratch);
}

void be_write_manifest(const Compilation *c, FILE *out) {
  const Topology *t = c->topo;
  const Graph *g = c->graph;
  fprintf(out, "%s\n", OUTDIR_MANIFEST_MARKER);
  fprintf(out, "format_version: %d\n", BE_MANIFEST_VERSION);
  fprintf(out, "tool: tspc %s\n", TSPC_VERSION);
  fprintf(out, "source: {path: ");
  str_print_yaml(out, c->src->path);
  fprintf(out, ", digest: \"fnv1a64:%016llx\"}\n",
          (unsigned long long)digest_fnv1a64(c->src->text, c->src->len));
  fprintf(out, "topology: {path: ");
  str_print_yaml(out, t->src->path);
  fprintf(out, ", name: ");
  str_print_yaml(out, t->name);
  fprintf(out, ", family: %s, digest: \"fnv1a64:%016llx\"}\n", ir_family_names[t->family],
          (unsigned long long)digest_fnv1a64(t->src->text, t->src->len));
  fprintf(out, "graph: %s\n", g->name);
  fprintf(out, "devices: %d\n", t->ndevices);
  fprintf(out, "# Stages run: parse, check.  Device binaries and predicted_cycles come\n");
  fprintf(out, "# with the schedule compiler (docs/passes.md).\n");
  fprintf(out, "stages: [parse, check]\n");
  write_tensors(g, out);
  fprintf(out, "outputs: [");
  for (int i = 0; i < g->outputs.len; i++) fprintf(out, "%s%s", i ? ", " : "", g->outputs.data[i]->name);
  fprintf(out, "]\n");
}
