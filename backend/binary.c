// binary.c: encodes a device program as a devNNNN.tsp binary.  Part of
// backend/; runtime/loader.c decodes the same layout (ir.h draws it) and
// trusts none of it.
#include "backend.h"

#include <string.h>
#include <zlib.h>

static void put_u8(Buf *b, unsigned v) {
  unsigned char c = (unsigned char)v;
  buf_append(b, &c, 1);
}

static void put_u16(Buf *b, unsigned v) {
  unsigned char c[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
  buf_append(b, c, 2);
}

static void put_u32(Buf *b, uint32_t v) {
  unsigned char c[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  buf_append(b, c, 4);
}

static void put_f64(Buf *b, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  put_u32(b, (uint32_t)bits);
  put_u32(b, (uint32_t)(bits >> 32));
}

static void patch_u32(Buf *b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; i++) b->data[at + (size_t)i] = (char)(v >> (8 * i));
}

static void put_instr(Buf *b, const Instr *in) {
  put_u8(b, in->op);
  put_u8(b, in->dtype);
  put_u16(b, in->port);
  put_u32(b, in->a);
  put_u32(b, in->b);
  put_u32(b, in->c);
  put_u32(b, in->d);
}

static void put_record(Buf *b, const DataRecord *r) {
  put_u8(b, (unsigned)r->kind);
  put_u8(b, (unsigned)r->dtype);
  put_u16(b, 0);
  put_u32(b, r->addr);
  put_u32(b, r->nvec);
  put_u32(b, 0);
  put_f64(b, r->a);
  put_f64(b, r->b);
}

void be_encode_device(const DeviceProgram *dp, int ndevices, Buf *out) {
  size_t base = out->len;
  buf_append(out, ISA_BINARY_MAGIC, 4);
  put_u16(out, ISA_BINARY_VERSION);
  put_u16(out, ISA_HEADER_BYTES);
  put_u32(out, (uint32_t)dp->device);
  put_u32(out, (uint32_t)ndevices);
  put_u32(out, (uint32_t)dp->units.len);
  put_u32(out, (uint32_t)dp->records.len);
  put_u32(out, 0);  // file bytes, patched below
  put_u32(out, 0);  // CRC, patched below
  uint32_t offset = ISA_HEADER_BYTES + ISA_UNIT_ENTRY_BYTES * (uint32_t)dp->units.len +
                    ISA_RECORD_BYTES * (uint32_t)dp->records.len;
  for (int u = 0; u < dp->units.len; u++) {
    const UnitProgram *up = &dp->units.data[u];
    put_u8(out, up->kind);
    put_u8(out, 0);
    put_u16(out, up->kind == UNIT_C2C ? (unsigned)up->port : 0);
    put_u32(out, (uint32_t)up->code.len);
    put_u32(out, offset);
    offset += ISA_INSTR_BYTES * (uint32_t)up->code.len;
  }
  for (int i = 0; i < dp->records.len; i++) put_record(out, &dp->records.data[i]);
  for (int u = 0; u < dp->units.len; u++)
    for (int i = 0; i < dp->units.data[u].code.len; i++) put_instr(out, &dp->units.data[u].code.data[i]);
  uint32_t size = (uint32_t)(out->len - base);
  patch_u32(out, base + 24, size);
  uLong crc = crc32(0L, (const Bytef *)out->data + base, size);
  patch_u32(out, base + ISA_CRC_OFFSET, (uint32_t)crc);
}
