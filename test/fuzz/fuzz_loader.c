// fuzz_loader.c: libFuzzer target for the binary loader (runtime/loader.c).
// Half the inputs get a correct CRC-32 patched in, so mutations reach the
// checks behind it (unit table, records, every instruction) instead of all
// stopping at the checksum.  Any crash, sanitizer report or leak is a bug:
// a bad binary must only ever be refused with a message.
#include "../../runtime/emu.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  static Arena topo_arena;
  static Topology *ring4;
  Diag d;
  FILE *sink = fopen("/dev/null", "w");
  diag_init(&d, sink);
  if (!ring4) ring4 = fe_load_topology_text(&topo_arena, &d, "ring4.yaml", "topology: ring\ndevices: 4\n");
  unsigned char *copy = xmalloc(size ? size : 1);
  memcpy(copy, data, size);
  if (size >= ISA_HEADER_BYTES && (size & 1)) {
    memset(copy + ISA_CRC_OFFSET, 0, 4);
    uint32_t crc = (uint32_t)crc32(0L, copy, (uInt)size);
    for (int i = 0; i < 4; i++) copy[ISA_CRC_OFFSET + i] = (unsigned char)(crc >> (8 * i));
  }
  Arena a = {0};
  DeviceProgram dp;
  int ndevices;
  char err[256];
  if (emu_decode_binary(&a, copy, size, -1, NULL, &dp, &ndevices, err, sizeof err)) isa_print_device(&dp, ndevices, sink);
  arena_free(&a);
  emu_decode_binary(&a, copy, size, 1, ring4, &dp, &ndevices, err, sizeof err);
  arena_free(&a);
  free(copy);
  fclose(sink);
  return 0;
}
