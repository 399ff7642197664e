// fuzz_tg.c: libFuzzer target for the whole pass pipeline (parse, check,
// partition, dag, lower, sync, route, schedule, codegen) against a fixed 16-device mesh,
// with the IR verifier after every pass.  Any crash, sanitizer report, leak
// or broken invariant is a bug: bad input must only ever produce
// diagnostics.
#include "../../passes/passes.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  Compilation c = {.verify_each = true, .drift_ppm = -1, .launch_window = -1};
  FILE *sink = fopen("/dev/null", "w");
  diag_init(&c.diag, sink);
  c.topo = fe_load_topology_text(&c.arena, &c.diag, "mesh.yaml", "topology: mesh\ndims: [4, 4]\n");
  char *text = arena_strndup(&c.arena, (const char *)data, size);
  SrcFile *src = arena_alloc(&c.arena, sizeof *src);
  *src = (SrcFile){.path = "fuzz.tg", .text = text, .len = size};
  c.src = src;
  if (c.topo) pass_run_pipeline(&c, NULL, NULL);
  fclose(sink);
  arena_free(&c.arena);
  return 0;
}
