// fuzz_asm.c: libFuzzer target for the assembler's reader (frontend/asm.c)
// against a ring of four, then the binary encoder and the loader on what it
// accepts: whatever the assembler takes must encode to a binary the loader
// takes back.  Any crash, sanitizer report or leak is a bug.
#include "../../backend/backend.h"
#include "../../runtime/emu.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  Arena a = {0};
  Diag d;
  FILE *sink = fopen("/dev/null", "w");
  diag_init(&d, sink);
  Topology *t = fe_load_topology_text(&a, &d, "ring4.yaml", "topology: ring\ndevices: 4\n");
  SrcFile *src = arena_alloc(&a, sizeof *src);
  *src = (SrcFile){.path = "fuzz.tsa", .text = arena_strndup(&a, (const char *)data, size), .len = size};
  Program *p = t ? fe_assemble(&a, &d, src, t) : NULL;
  for (int i = 0; p && i < p->ndevices; i++) {
    Buf b = {0};
    be_encode_device(&p->devices[i], p->ndevices, false, &b);
    DeviceProgram back;
    int ndevices;
    char err[256];
    if (!emu_decode_binary(&a, (const unsigned char *)b.data, b.len, i, t, &back, &ndevices, err, sizeof err))
      die("the loader refuses what the assembler wrote: %s", err);
    buf_free(&b);
  }
  fclose(sink);
  arena_free(&a);
  return 0;
}
