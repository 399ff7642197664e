// tsp-objdump.c: prints a device binary as assembly.  Decodes with the
// runtime's loader (runtime/loader.c), which checks every byte, and prints
// with isa_print_device, whose output tsp-as reads back to the identical
// binary.
//
//   tsp-objdump FILE.tsp...
//
// Exit status: 0 on success, 1 if any file is unusable.
#include "../runtime/emu.h"

#include <stdlib.h>
#include <string.h>

static int dump(const char *path) {
  char err[256];
  size_t n;
  unsigned char *data = emu_read_file(path, &n, err, sizeof err);
  if (!data) {
    fprintf(stderr, "tsp-objdump: error: cannot read '%s': %s\n", path, err);
    return 1;
  }
  Arena a = {0};
  DeviceProgram dp;
  int ndevices;
  bool ok = emu_decode_binary(&a, data, n, -1, NULL, &dp, &ndevices, err, sizeof err);
  free(data);
  if (ok) {
    printf("; %s: format %d, %zu bytes\n", path, ISA_BINARY_VERSION, n);
    isa_print_device(&dp, ndevices, stdout);
  } else {
    fprintf(stderr, "tsp-objdump: error: %s: %s\n", path, err);
  }
  arena_free(&a);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fprintf(argc < 2 ? stderr : stdout, "usage: tsp-objdump FILE.tsp...\n");
    return argc < 2 ? 1 : 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("tsp-objdump %s\n", TSPC_VERSION);
    return 0;
  }
  int status = 0;
  for (int i = 1; i < argc; i++) status |= dump(argv[i]);
  return status;
}
