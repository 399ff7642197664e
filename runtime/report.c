// report.c: how tsp-emu tells what happened: one summary line (or the list
// of violations) on stdout, and with --report a YAML file.  Part of runtime/;
// fault.c adds its lines and fields (link errors, replays).
#include "emu.h"

static const char *data_names[] = {"unchecked", "verified", "mismatch", "untrusted"};

static void print_violation(const Violation *v, FILE *out) {
  fprintf(out, "%s:", emu_violation_names[v->kind]);
  if (v->device >= 0) fprintf(out, " device %d", v->device);
  if (v->unit[0]) fprintf(out, " unit %s", v->unit);
  if (v->port >= 0) fprintf(out, " port %d", v->port);
  if (v->cycle >= 0) fprintf(out, " cycle %lld", (long long)v->cycle);
  bool placed = v->device >= 0 || v->unit[0] || v->port >= 0 || v->cycle >= 0;
  fprintf(out, "%s %s\n", placed ? ":" : "", v->message);  // "wrong-data: output ..." when nothing places it
}

// The data verdict, after the summary, when the outputs were checked
// against the model (a hand-written program's .expect records count in the
// report's data: alone).
static void print_data(const EmuResult *r, FILE *out) {
  if (r->model_checked) fprintf(out, "data: %s\n", data_names[r->data]);
}

void emu_print_summary(const EmuResult *r, const EmuOptions *opt, int ndevices, FILE *out) {
  char predicted[32];
  if (r->predicted >= 0)
    snprintf(predicted, sizeof predicted, "%lld", (long long)r->predicted);
  else
    snprintf(predicted, sizeof predicted, "none");
  if (r->nviolations == 0) {
    fault_print(opt->faults, out);
    fprintf(out, "ok: %d device%s, %lld cycles (predicted %s), %lld vector%s moved, 0 violations\n",
            ndevices, ndevices == 1 ? "" : "s", (long long)r->cycles, predicted, (long long)r->vectors_moved,
            r->vectors_moved == 1 ? "" : "s");
    print_data(r, out);
    return;
  }
  for (int i = 0; i < r->listed.len; i++) print_violation(&r->listed.data[i], out);
  if (r->nviolations > r->listed.len)
    fprintf(out, "... and %lld more\n", (long long)(r->nviolations - r->listed.len));
  fault_print(opt->faults, out);
  fprintf(out, "failed: %d device%s, %lld cycles (predicted %s), %lld vector%s moved, %lld violation%s\n",
          ndevices, ndevices == 1 ? "" : "s", (long long)r->cycles, predicted, (long long)r->vectors_moved,
          r->vectors_moved == 1 ? "" : "s",
          (long long)r->nviolations, r->nviolations == 1 ? "" : "s");
  print_data(r, out);
}

// Every link direction as measured: a -> b, then b -> a, in link order.
static void write_links(const EmuResult *r, FILE *out) {
  const Topology *t = r->topo;
  fprintf(out, "links:%s\n", t && t->links.len ? "" : " []");
  for (int i = 0; t && i < 2 * t->links.len; i++) {
    const Link *l = &t->links.data[i / 2];
    bool ab = i % 2 == 0;
    int64_t vectors = r->link_vectors[i], busy = vectors * ir_cycles_per_vector(&l->p, t->clock_mhz);
    fprintf(out, "  - {link: %d, kind: %s, from: %d, port: %d, to: %d, to_port: %d, vectors: %lld, busy_cycles: %lld, "
                 "utilisation: %.6f}\n",
            l->id, ir_link_kind_names[l->kind], ab ? l->a : l->b, ab ? l->a_port : l->b_port, ab ? l->b : l->a,
            ab ? l->b_port : l->a_port, (long long)vectors, (long long)busy,
            r->cycles > 0 ? (double)busy / (double)r->cycles : 0.0);
  }
}

void emu_write_report(const EmuResult *r, const EmuOptions *opt, int ndevices, FILE *out) {
  fprintf(out, "status: %s\n", r->nviolations ? "failed" : "ok");
  fprintf(out, "devices: %d\n", ndevices);
  fprintf(out, "cycles: %lld\n", (long long)r->cycles);
  if (r->predicted >= 0)
    fprintf(out, "predicted_cycles: %lld\n", (long long)r->predicted);
  else
    fprintf(out, "predicted_cycles: null\n");
  fprintf(out, "vectors_moved: %lld\n", (long long)r->vectors_moved);
  fprintf(out, "violations: %lld\n", (long long)r->nviolations);
  fprintf(out, "data: %s\n", data_names[r->data]);
  fprintf(out, "run: {seed: %llu, data_seed: %llu, jitter: %s, drift_ppm: %.17g, start_skew: %lld, deterministic: %s}\n",
          (unsigned long long)opt->seed, (unsigned long long)opt->data_seed, opt->jitter ? "on" : "off", opt->drift_ppm,
          (long long)opt->start_skew, r->deterministic ? "true" : "false");
  fprintf(out, "clocks:\n");
  for (int i = 0; i < r->ndevices; i++)
    fprintf(out, "  - {device: %d, drift_ppm: %.6f, start: %lld}\n", i, r->drift_ppm[i], (long long)r->start[i]);
  fprintf(out, "violation_list:%s\n", r->listed.len ? "" : " []");
  for (int i = 0; i < r->listed.len; i++) {
    const Violation *v = &r->listed.data[i];
    fprintf(out, "  - {kind: %s, device: %d, unit: \"%s\", port: %d, cycle: %lld, message: ",
            emu_violation_names[v->kind], v->device, v->unit, v->port, (long long)v->cycle);
    str_print_yaml(out, v->message);
    fprintf(out, "}\n");
  }
  fault_write_report(opt->faults, out);
  write_links(r, out);
}
