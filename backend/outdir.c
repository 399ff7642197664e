// outdir.c: writes a whole output directory through support/outdir.c, so it
// appears complete or not at all.  Part of backend/; tspc and tsp-as end here.
#include "backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

// One buffer serves every device in turn: a large system's binaries are
// many and alike, and a fresh buffer each would fault its pages in anew.
static bool write_binaries(OutDir *od, const Program *p, bool debug, Diag *d, const char *tool) {
  Buf b = {0};
  bool ok = true;
  for (int i = 0; i < p->ndevices && ok; i++) {
    char name[32];
    b.len = 0;
    be_encode_device(&p->devices[i], p->ndevices, debug, &b);
    snprintf(name, sizeof name, "dev%04d.tsp", i);
    ok = outdir_write_file(od, name, b.data, b.len, d, tool);
  }
  buf_free(&b);
  return ok;
}

// Closes fp, a file of DIR named name; false (with a message and the
// reason: a full disk, a file too large) if writing or closing it failed.
static bool close_file(OutDir *od, FILE *fp, const char *name, Diag *d, const char *tool) {
  bool ok = !ferror(fp);
  int err = errno;  // the failed write's, when there was one
  if (fclose(fp) != 0) {
    if (ok) err = errno;
    ok = false;
  }
  if (!ok) diag_tool_error(d, tool, "cannot write '%s/%s': %s", od->final_path, name, err ? strerror(err) : "an I/O error");
  return ok;
}

static bool write_assembly(OutDir *od, const Program *p, Diag *d, const char *tool) {
  for (int i = 0; i < p->ndevices; i++) {
    char name[32];
    snprintf(name, sizeof name, "dev%04d.tsa", i);
    FILE *fp = outdir_create_file(od, name, d, tool);
    if (!fp) return false;
    isa_print_device(&p->devices[i], p->ndevices, fp);
    if (!close_file(od, fp, name, d, tool)) return false;
  }
  return true;
}

// coll-NAME.dot for every collective of the scheduled DAG (dot.c).
static bool write_pictures(OutDir *od, const ManifestInfo *m, Diag *d) {
  int *steps = be_transfer_timesteps(m->dag);
  bool ok = true;
  for (int i = 0; i < m->graph->ops.len && ok; i++) {
    const Op *op = m->graph->ops.data[i];
    if (!ir_op_is_collective(op->kind)) continue;
    Buf name = {0};
    buf_printf(&name, "coll-%s.dot", op->result->name);
    FILE *fp = outdir_create_file(od, name.data, d, m->tool);
    ok = fp != NULL;
    if (fp) {
      be_write_collective_dot(m->topo, m->dag, m->algos, op, steps, fp);
      ok = close_file(od, fp, name.data, d, m->tool);
    }
    buf_free(&name);
  }
  free(steps);
  return ok;
}

// trace.json: the schedule as a Chrome trace (trace.c).
static bool write_trace(OutDir *od, const ManifestInfo *m, Diag *d) {
  FILE *fp = outdir_create_file(od, "trace.json", d, m->tool);
  if (!fp) return false;
  TraceCounts unused;
  be_write_trace(m, m->trace_max_arrows, fp, m->trace_counts ? m->trace_counts : &unused);
  return close_file(od, fp, "trace.json", d, m->tool);
}

// links.yaml and links.svg: the link-utilisation atlas (links.c).
static bool write_links(OutDir *od, const ManifestInfo *m, Diag *d) {
  FILE *yaml = outdir_create_file(od, "links.yaml", d, m->tool);
  if (!yaml) return false;
  FILE *svg = outdir_create_file(od, "links.svg", d, m->tool);
  if (!svg) {
    fclose(yaml);
    return false;
  }
  be_write_links(m, yaml, svg);
  bool ok = close_file(od, yaml, "links.yaml", d, m->tool);
  return close_file(od, svg, "links.svg", d, m->tool) && ok;
}

static bool write_manifest(OutDir *od, const ManifestInfo *m, Diag *d) {
  FILE *fp = outdir_create_file(od, "manifest.yaml", d, m->tool);
  if (!fp) return false;
  be_write_manifest(m, fp);
  return close_file(od, fp, "manifest.yaml", d, m->tool);
}

bool be_write_outdir(const ManifestInfo *m, const char *dir, Diag *d) {
  OutDir od;
  if (!outdir_begin(&od, dir, d, m->tool)) return false;
  const SrcFile *topo = m->topo->src;
  bool ok = outdir_write_file(&od, "topology.yaml", topo->text, topo->len, d, m->tool) &&
            (!m->graph || outdir_write_file(&od, "model.tg", m->source->text, m->source->len, d, m->tool)) &&
            (m->graph || !m->program || !m->program->model_text ||
             outdir_write_file(&od, "model.tg", m->program->model_text, m->program->model_len, d, m->tool)) &&
            (!m->program || write_binaries(&od, m->program, m->debug, d, m->tool)) &&
            (!m->program || !m->emit_asm || write_assembly(&od, m->program, d, m->tool)) &&
            (!m->emit_dot || !m->dag || write_pictures(&od, m, d)) &&
            (!m->emit_trace || write_trace(&od, m, d)) &&
            (!m->emit_links || write_links(&od, m, d)) &&
            write_manifest(&od, m, d);
  if (!ok) {
    outdir_abort(&od);
    return false;
  }
  return outdir_commit(&od, d, m->tool);
}
