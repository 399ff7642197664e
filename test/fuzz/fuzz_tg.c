// fuzz_tg.c: libFuzzer target for the .tg front end (parse + check) against
// a fixed 16-device mesh.  Any crash, sanitizer report or leak is a bug: bad
// input must only ever produce diagnostics.
#include "../../passes/passes.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  Arena a = {0};
  Diag d;
  FILE *sink = fopen("/dev/null", "w");
  diag_init(&d, sink);
  Topology *t = fe_load_topology_text(&a, &d, "mesh.yaml", "topology: mesh\ndims: [4, 4]\n");
  char *text = arena_strndup(&a, (const char *)data, size);
  SrcFile *src = arena_alloc(&a, sizeof *src);
  *src = (SrcFile){.path = "fuzz.tg", .text = text, .len = size};
  Ast *ast = fe_parse(&a, &d, src);
  if (ast && t) fe_check(&a, &d, ast, t);
  fclose(sink);
  arena_free(&a);
  return 0;
}
