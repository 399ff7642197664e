// fuzz_manifest.c: libFuzzer target for the manifest reader (runtime/loader.c,
// emu_read_manifest) against a ring of four.  A `model:` is read from
// FUZZ_MANIFEST_DIR (make fuzz compiles test/fuzz/corpus-tg/ring4-homes.tg
// for ring4 there), so the checks of tensors against a graph run too; run
// from the top of the tree.  Any crash, sanitizer report or leak is a bug:
// a bad manifest must only ever be refused with a message.
#include "ring4.h"

#include <stdio.h>

#define FUZZ_MANIFEST_DIR "build/fuzz/manifest-dir"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  Diag d;
  FILE *sink = fopen("/dev/null", "w");
  diag_init(&d, sink);
  Topology *ring4 = fuzz_ring4(&d);
  Arena a = {0};
  SrcFile *src = arena_alloc(&a, sizeof *src);
  *src = (SrcFile){.path = "manifest.yaml", .text = arena_strndup(&a, (const char *)data, size), .len = size};
  EmuInput in = {.dir = FUZZ_MANIFEST_DIR, .topo = ring4};
  if (ring4) emu_read_manifest(&a, &d, src, &in);
  arena_free(&a);
  fclose(sink);
  return 0;
}
