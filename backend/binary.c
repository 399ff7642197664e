// binary.c: encodes a device program as a devNNNN.tsp binary, and with
// tspc -g its debug section: per instruction the schedule cycle and what it
// serves (UnitProgram.notes, codegen's listing annotations).  Part of
// backend/; runtime/loader.c decodes the same layout (ir.h draws it) and
// trusts none of it.
#include "backend.h"

#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>

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

// v as 4 little-endian bytes at w: one store on a little-endian host (a
// loop over the bytes, or bytes stored one by one, was most of encoding).
static void le32(unsigned char *w, uint32_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(w, &v, sizeof v);
#else
  w[0] = (unsigned char)v;
  w[1] = (unsigned char)(v >> 8);
  w[2] = (unsigned char)(v >> 16);
  w[3] = (unsigned char)(v >> 24);
#endif
}

// One instruction, ISA_INSTR_BYTES little-endian bytes, at w (the
// encoder's inner loop: a program is mostly instructions).
static void encode_instr(unsigned char *w, const Instr *in) {
  le32(w, (uint32_t)in->op | (uint32_t)in->dtype << 8 | (uint32_t)in->port << 16);
  le32(w + 4, in->a);
  le32(w + 8, in->b);
  le32(w + 12, in->c);
  le32(w + 16, in->d);
}

// A unit's instructions, appended with one reservation and written in
// place, not one append each.
static void put_code(Buf *b, const UnitProgram *up) {
  size_t n = (size_t)up->code.len * ISA_INSTR_BYTES;
  if (b->len + n + 1 > b->cap) {
    b->cap = MAX(b->cap * 2, b->len + n + 1);
    b->data = xrealloc(b->data, b->cap);
  }
  unsigned char *w = (unsigned char *)b->data + b->len;
  for (int i = 0; i < up->code.len; i++) encode_instr(w + (size_t)i * ISA_INSTR_BYTES, &up->code.data[i]);
  b->len += n;
  b->data[b->len] = '\0';
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

// The debug section's strings: each distinct note once.  Notes are arena
// strings shared by every instruction of a DAG node, so a note is found by
// its pointer (open addressing over a power-of-two table).
typedef struct NoteTable {
  const char **keys;
  uint32_t *offsets;
  size_t slots, used;
  Buf strings;
} NoteTable;

static void note_table_grow(NoteTable *t) {
  NoteTable bigger = {.slots = t->slots ? 2 * t->slots : 64, .used = t->used, .strings = t->strings};
  bigger.keys = xcalloc(bigger.slots, sizeof *bigger.keys);
  bigger.offsets = xcalloc(bigger.slots, sizeof *bigger.offsets);
  for (size_t i = 0; i < t->slots; i++) {
    if (!t->keys[i]) continue;
    size_t h = ((uintptr_t)t->keys[i] >> 3) & (bigger.slots - 1);
    while (bigger.keys[h]) h = (h + 1) & (bigger.slots - 1);
    bigger.keys[h] = t->keys[i], bigger.offsets[h] = t->offsets[i];
  }
  free(t->keys);
  free(t->offsets);
  *t = bigger;
}

// The offset of note in the strings, adding it on first sight.
static uint32_t note_offset(NoteTable *t, const char *note) {
  if (2 * (t->used + 1) > t->slots) note_table_grow(t);
  size_t h = ((uintptr_t)note >> 3) & (t->slots - 1);
  while (t->keys[h] && t->keys[h] != note) h = (h + 1) & (t->slots - 1);
  if (!t->keys[h]) {
    t->keys[h] = note, t->offsets[h] = (uint32_t)t->strings.len, t->used++;
    buf_append(&t->strings, note, strlen(note) + 1);
  }
  return t->offsets[h];
}

// The debug section (ir.h draws it): one entry per instruction, in stream
// order, then the strings.
static void put_debug_section(Buf *b, const DeviceProgram *dp) {
  NoteTable notes = {0};
  Buf entries = {0};
  uint32_t n = 0;
  for (int u = 0; u < dp->units.len; u++)
    for (int i = 0; i < dp->units.data[u].code.len; i++, n++) {
      const InstrNote *in = ir_instr_note(&dp->units.data[u], i);
      const char *note = in ? in->note : NULL;
      uint64_t cycle = note && in->at >= 0 ? (uint64_t)in->at : ISA_DEBUG_NONE_CYCLE;
      put_u32(&entries, (uint32_t)cycle);
      put_u32(&entries, (uint32_t)(cycle >> 32));
      put_u32(&entries, note ? note_offset(&notes, note) : ISA_DEBUG_NONE_NOTE);
      put_u32(&entries, note && in->line > 0 ? (uint32_t)in->line : 0);
    }
  buf_append(b, ISA_DEBUG_MAGIC, 4);
  put_u16(b, ISA_DEBUG_VERSION);
  put_u16(b, ISA_DEBUG_HEADER_BYTES);
  put_u32(b, n);
  put_u32(b, (uint32_t)notes.strings.len);
  if (entries.len) buf_append(b, entries.data, entries.len);
  if (notes.strings.len) buf_append(b, notes.strings.data, notes.strings.len);
  buf_free(&entries);
  buf_free(&notes.strings);
  free(notes.keys);
  free(notes.offsets);
}

void be_encode_device(const DeviceProgram *dp, int ndevices, bool debug, Buf *out) {
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
  for (int u = 0; u < dp->units.len; u++) put_code(out, &dp->units.data[u]);
  if (debug) put_debug_section(out, dp);
  uint32_t size = (uint32_t)(out->len - base);
  patch_u32(out, base + 24, size);
  patch_u32(out, base + ISA_CRC_OFFSET, libdeflate_crc32(0, out->data + base, size));
}
