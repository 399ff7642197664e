// backend.h: from the compiled IR to files.
//
//   manifest.c   manifest.yaml: what was compiled, for which topology, and
//                where every input, param and output tensor lives
//
// Instruction selection, encoding, the binary writer and the assembly
// printer join this layer with the schedule compiler.
#ifndef TSPC_BACKEND_H
#define TSPC_BACKEND_H

#include "../passes/passes.h"

// The manifest's format version; readers refuse versions they do not know.
#define BE_MANIFEST_VERSION 1

// ---- manifest.c ----
void be_write_manifest(const Compilation *c, FILE *out);

#endif
