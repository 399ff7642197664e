// fuzz_loader.c: libFuzzer target for the binary loader (runtime/loader.c).
// Each input is decoded as it is, then with a correct CRC-32 patched in, so
// that mutations reach the checks behind the checksum (unit table, records,
// every instruction) instead of all stopping at it.  (A valid binary's size
// is even: patching only odd-sized inputs, as this did, never let a mutated
// binary past the checksum.)  Any crash, sanitizer report or leak is a bug:
// a bad binary must only ever be refused with a message.
#include "ring4.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

// Decodes data alone (as tsp-objdump does, then disassembled) and as device
// 1 of a ring of four (as tsp-emu does).
static void decode(const unsigned char *data, size_t size, const Topology *ring4, FILE *sink) {
  Arena a = {0};
  DeviceProgram dp;
  int ndevices;
  char err[256];
  if (emu_decode_binary(&a, data, size, -1, NULL, &dp, &ndevices, err, sizeof err)) isa_print_device(&dp, ndevices, sink);
  arena_free(&a);
  emu_decode_binary(&a, data, size, 1, ring4, &dp, &ndevices, err, sizeof err);
  arena_free(&a);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  Diag d;
  FILE *sink = fopen("/dev/null", "w");
  diag_init(&d, sink);
  Topology *ring4 = fuzz_ring4(&d);
  decode(data, size, ring4, sink);
  if (size >= ISA_HEADER_BYTES) {
    unsigned char *copy = xmalloc(size);
    memcpy(copy, data, size);
    memset(copy + ISA_CRC_OFFSET, 0, 4);
    uint32_t crc = libdeflate_crc32(0, copy, size);
    for (int i = 0; i < 4; i++) copy[ISA_CRC_OFFSET + i] = (unsigned char)(crc >> (8 * i));
    decode(copy, size, ring4, sink);
    free(copy);
  }
  fclose(sink);
  return 0;
}
