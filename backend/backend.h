// backend.h: from the compiled IR to files.
//
//   manifest.c   manifest.yaml: what was compiled, for which topology, and
//                where every input, param and output tensor lives
//   binary.c     device programs -> devNNNN.tsp (the layout is in ir.h)
//   outdir.c     a whole output directory: topology copy, binaries, manifest
//
// Instruction selection joins this layer with the schedule compiler.
#ifndef TSPC_BACKEND_H
#define TSPC_BACKEND_H

#include "../passes/passes.h"

// The manifest's format version; readers refuse versions they do not know.
#define BE_MANIFEST_VERSION 1

// What an output directory describes.
typedef struct ManifestInfo {
  const char *tool;         // "tspc", "tsp-as"
  const SrcFile *source;    // the .tg or .tsa it came from
  const Topology *topo;
  const Graph *graph;       // NULL when assembled by hand
  const Program *program;   // NULL when nothing was compiled
  const Dag *dag;           // the scheduled DAG behind program (tspc only)
  const SyncPlan *sync;     // its synchronisation plan (tspc only)
  const AlgoKind *algos;    // by op id: the algorithm each collective was lowered by
  bool emit_asm;            // also write devNNNN.tsa
} ManifestInfo;

// ---- manifest.c ----
void be_write_manifest(const ManifestInfo *m, FILE *out);

// ---- binary.c ----
// Appends the binary of one device program to out.
void be_encode_device(const DeviceProgram *dp, int ndevices, Buf *out);

// ---- outdir.c ----
// Writes DIR atomically: topology.yaml (a copy of the topology file),
// model.tg (a copy of the model, when there is a graph), devNNNN.tsp for
// every device when there is a program (and devNNNN.tsa with emit_asm),
// manifest.yaml.
bool be_write_outdir(const ManifestInfo *m, const char *dir, Diag *d);

#endif
