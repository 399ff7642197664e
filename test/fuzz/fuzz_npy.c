// fuzz_npy.c: libFuzzer target for the .npy reader (runtime/npy.c), from
// memory through npy_parse, which runs the reader npy_read runs on files.
// Any crash, sanitizer report or leak is a bug: a bad file must only ever be
// refused with a message, and an accepted one holds exactly its shape's
// bytes.
#include "../../runtime/emu.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  NpyArray arr;
  char err[512];
  if (npy_parse("fuzz.npy", data, size, &arr, err, sizeof err)) {
    int64_t elems = ir_shape_elems(&arr.shape);
    if (elems < 1 || arr.bytes % (size_t)elems || arr.bytes > size) die("npy_parse took %zu bytes for %lld elements", arr.bytes, (long long)elems);
    npy_free(&arr);
  }
  return 0;
}
