// fuzz_topology.c: libFuzzer target for the topology loader.  Any crash,
// sanitizer report or leak is a bug.  Large families are refused up front by
// size so that one input cannot take seconds (the loader itself accepts up
// to IR_MAX_DEVICES).
#include "../../frontend/frontend.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  Arena a = {0};
  Diag d;
  FILE *sink = fopen("/dev/null", "w");
  diag_init(&d, sink);
  char *text = arena_strndup(&a, (const char *)data, size);
  Topology *t = fe_load_topology_text(&a, &d, "fuzz.yaml", text);
  if (t && t->ndevices <= 4096) ir_topo_describe(t, sink, true);
  fclose(sink);
  arena_free(&a);
  return 0;
}
