// loader.c: reads an output directory into the runtime's Program.  Part of
// runtime/: the only door from files to the emulator, and it trusts nothing.
// With a `model:` it also reads the .tg graph (frontend: parse and check)
// that the emulator's reference evaluation (reference.c) computes.  With
// `batches: N` every home says which of the N inferences it belongs to.
//
// A binary is refused unless every field checks: magic, version, sizes,
// CRC-32, device id and count, every unit entry (kind, port on this device,
// where its stream starts), every record and every instruction (isa_check,
// and unused fields zero, so that a binary and its disassembly say the same
// thing), and the debug section tspc -g writes after the streams (its
// version, sizes, entries and strings).  Each refusal names the byte.  The
// layout is drawn in ir/ir.h.
#include "emu.h"

#include <errno.h>
#include <libdeflate.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

// ---- little-endian fields -----------------------------------------------------------

static uint32_t get_u16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static double get_f64(const unsigned char *p) {
  uint64_t bits = (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

#define FAIL(...) return snprintf(err, errlen, __VA_ARGS__), false

// ---- the binary ---------------------------------------------------------------------------

static bool check_header(const unsigned char *data, size_t n, int expect_device,
                         const Topology *topo, char *err, size_t errlen) {
  if (n < ISA_HEADER_BYTES) FAIL("byte %zu: truncated: %zu bytes, the header alone is %d", n, n, ISA_HEADER_BYTES);
  if (memcmp(data, ISA_BINARY_MAGIC, 4)) FAIL("byte 0: not a tsp binary (bad magic)");
  if (get_u16(data + 4) != ISA_BINARY_VERSION)
    FAIL("byte 4: format version %u; this tool reads version %d", get_u16(data + 4), ISA_BINARY_VERSION);
  if (get_u16(data + 6) != ISA_HEADER_BYTES)
    FAIL("byte 6: header size %u, expected %d", get_u16(data + 6), ISA_HEADER_BYTES);
  if (get_u32(data + 24) != n)
    FAIL("byte 24: the header says %u bytes, the file has %zu (truncated or padded)", get_u32(data + 24), n);
  unsigned char zero[4] = {0};
  uint32_t crc = libdeflate_crc32(0, data, ISA_CRC_OFFSET);
  crc = libdeflate_crc32(crc, zero, 4);
  crc = libdeflate_crc32(crc, data + ISA_CRC_OFFSET + 4, n - ISA_CRC_OFFSET - 4);
  if (crc != get_u32(data + ISA_CRC_OFFSET))
    FAIL("byte %d: CRC-32 mismatch: stored 0x%08x, computed 0x%08x (the file is corrupt)", ISA_CRC_OFFSET,
         get_u32(data + ISA_CRC_OFFSET), crc);
  uint32_t dev = get_u32(data + 8), count = get_u32(data + 12);
  if (count > IR_MAX_DEVICES) FAIL("byte 12: a system of %u devices, more than any (IR_MAX_DEVICES, %d)", count, IR_MAX_DEVICES);
  if (dev >= count) FAIL("byte 8: device %u of a %u-device system", dev, count);
  if (expect_device >= 0 && dev != (uint32_t)expect_device)
    FAIL("byte 8: this is device %u's binary, expected device %d's", dev, expect_device);
  if (topo && count != (uint32_t)topo->ndevices)
    FAIL("byte 12: built for %u devices, the topology has %d", count, topo->ndevices);
  return true;
}

typedef struct Decoder {
  Arena *a;
  const unsigned char *data;
  size_t n;
  const Topology *topo;
  IsaTarget target;
  DeviceProgram *out;
  uint64_t streams_end;  // where the last stream ends (the debug section, if any, starts)
  uint64_t ninstrs;      // instructions in all streams
} Decoder;

static bool decode_unit_entries(Decoder *dc, uint32_t nunits, uint64_t *stream_at, char *seen, size_t slots, char *err,
                                size_t errlen);

static bool decode_units(Decoder *dc, uint32_t nunits, uint32_t nrecords, char *err, size_t errlen) {
  uint64_t offset = ISA_HEADER_BYTES + (uint64_t)ISA_UNIT_ENTRY_BYTES * nunits + (uint64_t)ISA_RECORD_BYTES * nrecords;
  if (offset > dc->n) FAIL("byte 16: %u units and %u records do not fit in %zu bytes", nunits, nrecords, dc->n);
  // By kind and port + 1 (port -1 for the non-c2c units): whether a unit
  // was seen, so a repeat costs one lookup, not a scan of the units so far.
  size_t slots = (size_t)UINT16_MAX + 2;
  char *seen = xcalloc((size_t)UNIT_KIND_COUNT * slots, 1);
  bool ok = decode_unit_entries(dc, nunits, &offset, seen, slots, err, errlen);
  free(seen);
  dc->streams_end = offset;
  return ok;
}

static bool decode_unit_entries(Decoder *dc, uint32_t nunits, uint64_t *stream_at, char *seen, size_t slots, char *err,
                                size_t errlen) {
  uint64_t offset = *stream_at;
  for (uint32_t u = 0; u < nunits; u++) {
    size_t at = ISA_HEADER_BYTES + (size_t)ISA_UNIT_ENTRY_BYTES * u;
    const unsigned char *e = dc->data + at;
    UnitProgram up = {.kind = (UnitKind)e[0], .port = (int)get_u16(e + 2)};
    uint32_t count = get_u32(e + 4), start = get_u32(e + 8);
    if (e[0] >= UNIT_KIND_COUNT) FAIL("byte %zu: unit %u has an unknown kind %u", at, u, e[0]);
    if (e[1]) FAIL("byte %zu: unit %u's reserved byte is %u, not 0", at + 1, u, e[1]);
    if (up.kind != UNIT_C2C && up.port) FAIL("byte %zu: unit %u (%s) names a port", at + 2, u, isa_unit_kind_names[up.kind]);
    if (up.kind == UNIT_C2C && up.port >= dc->target.nports)
      FAIL("byte %zu: unit %u is c2c.%d, but device %d has %d ports", at + 2, u, up.port, dc->out->device, dc->target.nports);
    if (up.kind != UNIT_C2C) up.port = -1;
    char *slot = &seen[(size_t)up.kind * slots + (size_t)(up.port + 1)];
    if (*slot) FAIL("byte %zu: unit %u repeats an earlier unit", at, u);
    *slot = 1;
    if (start != offset) FAIL("byte %zu: unit %u's stream starts at %u, expected %llu", at + 8, u, start, (unsigned long long)offset);
    offset += (uint64_t)ISA_INSTR_BYTES * count;
    if (offset > dc->n) FAIL("byte %zu: unit %u's %u instructions run past the end of the file", at + 4, u, count);
    VEC_PUSH(dc->a, &dc->out->units, up);
  }
  *stream_at = offset;
  return true;
}

static bool decode_records(Decoder *dc, uint32_t nunits, uint32_t nrecords, char *err, size_t errlen) {
  for (uint32_t i = 0; i < nrecords; i++) {
    size_t at = ISA_HEADER_BYTES + (size_t)ISA_UNIT_ENTRY_BYTES * nunits + (size_t)ISA_RECORD_BYTES * i;
    const unsigned char *r = dc->data + at;
    DataRecord rec = {.kind = (RecordKind)r[0], .dtype = (DType)r[1], .addr = get_u32(r + 4),
                      .nvec = get_u32(r + 8), .a = get_f64(r + 16), .b = get_f64(r + 24)};
    char why[160];
    if (get_u16(r + 2) || get_u32(r + 12)) FAIL("byte %zu: record %u has nonzero reserved bytes", at, i);
    if (!isfinite(rec.a)) FAIL("byte %zu: record %u's iota slope is not finite", at + 16, i);
    if (!isfinite(rec.b)) FAIL("byte %zu: record %u's iota offset is not finite", at + 24, i);
    if (!isa_check_record(&rec, &dc->target, why, sizeof why)) FAIL("byte %zu: record %u: %s", at, i, why);
    VEC_PUSH(dc->a, &dc->out->records, rec);
  }
  return true;
}

// The fields an instruction's operand string leaves unused must be zero:
// the first that is not, as its byte in the instruction, name and value
// (false: all are zero).
typedef struct UnusedField {
  int at;
  const char *name;
  uint32_t value;
} UnusedField;

static bool nonzero_unused_field(const Instr *in, UnusedField *f) {
  const char *ops = isa_opcodes[in->op].operands;
  bool uses_port_field = strpbrk(ops, "pwsn") != NULL;  // p, w, s and n all live there
  const UnusedField fields[] = {{1, "dtype", strchr(ops, 't') ? 0 : in->dtype},
                                {2, "port", uses_port_field ? 0 : in->port},
                                {4, "a", strchr(ops, 'a') ? 0 : in->a},
                                {8, "b", strchr(ops, 'b') ? 0 : in->b},
                                {12, "c", strchr(ops, 'c') ? 0 : in->c},
                                {16, "d", strchr(ops, 'd') ? 0 : in->d}};
  for (size_t i = 0; i < ARRAY_LEN(fields); i++)
    if (fields[i].value) return *f = fields[i], true;
  return false;
}

static bool decode_streams(Decoder *dc, char *err, size_t errlen) {
  for (int u = 0; u < dc->out->units.len; u++) {
    UnitProgram *up = &dc->out->units.data[u];
    size_t entry = ISA_HEADER_BYTES + (size_t)ISA_UNIT_ENTRY_BYTES * (size_t)u;
    uint32_t count = get_u32(dc->data + entry + 4), start = get_u32(dc->data + entry + 8);
    VEC_RESERVE(dc->a, &up->code, (int)count);  // once: decode_units checked it fits the file
    dc->ninstrs += count;
    for (uint32_t i = 0; i < count; i++) {
      size_t at = start + (size_t)ISA_INSTR_BYTES * i;
      const unsigned char *p = dc->data + at;
      Instr in = {.op = p[0], .dtype = p[1], .port = (uint16_t)get_u16(p + 2), .a = get_u32(p + 4),
                  .b = get_u32(p + 8), .c = get_u32(p + 12), .d = get_u32(p + 16)};
      char why[160];
      if (!isa_check(&in, &dc->target, up->kind, up->port, why, sizeof why))
        FAIL("byte %zu: unit %d instruction %u: %s", at, u, i, why);
      UnusedField f;
      if (nonzero_unused_field(&in, &f))
        FAIL("byte %zu: unit %d instruction %u: %s does not use its %s field, which must be 0, not %u", at + (size_t)f.at,
             u, i, isa_opcodes[in.op].name, f.name, f.value);
      VEC_PUSH(dc->a, &up->code, in);
    }
  }
  return true;
}

// ---- the debug section (tspc -g): per instruction its schedule cycle and note ----

// The strings, S bytes from at: NUL-terminated printable ASCII.
static bool check_debug_strings(const unsigned char *str, uint64_t at, uint32_t size, char *err, size_t errlen) {
  if (size && str[size - 1]) FAIL("byte %llu: the debug strings do not end in a NUL", (unsigned long long)(at + size - 1));
  for (uint32_t i = 0; i < size; i++)
    if (str[i] && (str[i] < 0x20 || str[i] > 0x7e))
      FAIL("byte %llu: debug string byte 0x%02x is not printable ASCII", (unsigned long long)(at + i), str[i]);
  return true;
}

// Each unit's notes, one an instruction, from the entries (ir.h draws them).
static bool decode_debug_entries(Decoder *dc, uint64_t at, const char *str, uint32_t size, char *err, size_t errlen) {
  for (int u = 0; u < dc->out->units.len; u++) {
    UnitProgram *up = &dc->out->units.data[u];
    VEC_RESERVE(dc->a, &up->notes, up->code.len);
    up->notes.len = up->code.len;
    for (int i = 0; i < up->code.len; i++, at += ISA_DEBUG_ENTRY_BYTES) {
      const unsigned char *e = dc->data + at;
      uint64_t cycle = (uint64_t)get_u32(e) | (uint64_t)get_u32(e + 4) << 32;
      uint32_t note = get_u32(e + 8);
      if (cycle != ISA_DEBUG_NONE_CYCLE && cycle > INT64_MAX)
        FAIL("byte %llu: unit %d instruction %d's cycle %llu is past the largest (2^63 - 1)", (unsigned long long)at, u,
             i, (unsigned long long)cycle);
      if (note != ISA_DEBUG_NONE_NOTE && (note >= size || (note && str[note - 1])))
        FAIL("byte %llu: unit %d instruction %d's note at %u is not the start of a debug string (of %u bytes)",
             (unsigned long long)(at + 8), u, i, note, size);
      uint32_t line = get_u32(e + 12);
      if (line > INT32_MAX)
        FAIL("byte %llu: unit %d instruction %d's .tg line %u is past the largest (2^31 - 1)",
             (unsigned long long)(at + 12), u, i, line);
      if (note == ISA_DEBUG_NONE_NOTE && (cycle != ISA_DEBUG_NONE_CYCLE || line))
        FAIL("byte %llu: unit %d instruction %d has no note but a cycle or a line (an entry without a note is "
             "all unused)", (unsigned long long)at, u, i);
      up->notes.data[i] = (InstrNote){.at = cycle == ISA_DEBUG_NONE_CYCLE ? -1 : (int64_t)cycle,
                                      .note = note == ISA_DEBUG_NONE_NOTE ? NULL : str + note,
                                      .line = (int32_t)line};
    }
  }
  return true;
}

// What follows the streams: nothing, or a debug section that checks.
static bool decode_debug(Decoder *dc, char *err, size_t errlen) {
  uint64_t at = dc->streams_end, rest = dc->n - at;
  const unsigned char *h = dc->data + at;
  if (!rest) return true;
  if (rest < 4 || memcmp(h, ISA_DEBUG_MAGIC, 4))
    FAIL("byte %llu: %llu bytes after the last stream, and no debug section (magic %s)", (unsigned long long)at,
         (unsigned long long)rest, ISA_DEBUG_MAGIC);
  if (rest < ISA_DEBUG_HEADER_BYTES)
    FAIL("byte %llu: a debug section of %llu bytes is shorter than its header (%d)", (unsigned long long)at,
         (unsigned long long)rest, ISA_DEBUG_HEADER_BYTES);
  if (get_u16(h + 4) != ISA_DEBUG_VERSION)
    FAIL("byte %llu: debug section version %u; this tool reads version %d", (unsigned long long)(at + 4),
         get_u16(h + 4), ISA_DEBUG_VERSION);
  if (get_u16(h + 6) != ISA_DEBUG_HEADER_BYTES)
    FAIL("byte %llu: debug section header size %u, expected %d", (unsigned long long)(at + 6), get_u16(h + 6),
         ISA_DEBUG_HEADER_BYTES);
  uint32_t entries = get_u32(h + 8), size = get_u32(h + 12);
  if (entries != dc->ninstrs)
    FAIL("byte %llu: the debug section has %u entries, but the streams hold %llu instructions",
         (unsigned long long)(at + 8), entries, (unsigned long long)dc->ninstrs);
  uint64_t need = ISA_DEBUG_HEADER_BYTES + (uint64_t)ISA_DEBUG_ENTRY_BYTES * entries + size;
  if (need != rest)
    FAIL("byte %llu: the debug section's %u entries and %u bytes of strings take %llu bytes, but %llu follow the "
         "streams", (unsigned long long)(at + 12), entries, size, (unsigned long long)need, (unsigned long long)rest);
  uint64_t str_at = at + need - size;
  if (!check_debug_strings(dc->data + str_at, str_at, size, err, errlen)) return false;
  char *str = arena_alloc(dc->a, (size_t)size + 1);
  memcpy(str, dc->data + str_at, size);
  str[size] = 0;
  dc->out->debug = true;
  return decode_debug_entries(dc, at + ISA_DEBUG_HEADER_BYTES, str, size, err, errlen);
}

bool emu_decode_binary(Arena *a, const unsigned char *data, size_t n, int expect_device,
                       const Topology *topo, DeviceProgram *out, int *ndevices, char *err,
                       size_t errlen) {
  if (n > ISA_MAX_BINARY_BYTES) FAIL("byte 0: %zu bytes is larger than any binary (%u)", n, ISA_MAX_BINARY_BYTES);
  if (!check_header(data, n, expect_device, topo, err, errlen)) return false;
  *out = (DeviceProgram){.device = (int)get_u32(data + 8)};
  *ndevices = (int)get_u32(data + 12);
  Decoder dc = {.a = a, .data = data, .n = n, .topo = topo, .out = out};
  // Without a topology (tsp-objdump) only the encoding's own limits apply.
  dc.target = topo ? isa_target(topo, out->device)
                   : (IsaTarget){.nports = UINT16_MAX + 1, .sram = UINT32_MAX, .vector_bytes = IR_DEFAULT_VECTOR_BYTES};
  uint32_t nunits = get_u32(data + 16), nrecords = get_u32(data + 20);
  return decode_units(&dc, nunits, nrecords, err, errlen) &&
         decode_records(&dc, nunits, nrecords, err, errlen) && decode_streams(&dc, err, errlen) &&
         decode_debug(&dc, err, errlen);
}

unsigned char *emu_read_file(const char *path, size_t *n, char *err, size_t errlen) {
  const char *why;
  char limit[96];
  snprintf(limit, sizeof limit, "larger than any binary (%u bytes, ISA_MAX_BINARY_BYTES)", ISA_MAX_BINARY_BYTES);
  char *data = read_regular_file(path, ISA_MAX_BINARY_BYTES, limit, n, &why);
  if (!data) snprintf(err, errlen, "%s", why);
  return (unsigned char *)data;
}

// ---- the manifest --------------------------------------------------------------------------

typedef struct ManifestReader {
  Arena *a;
  Diag *d;
  const SrcFile *src;
  yaml_document_t *doc;
  int batches;          // the manifest's `batches:` (1: absent)
  bool batches_given;   // whether it has one
} ManifestReader;

static SrcLoc mloc(const ManifestReader *m, const yaml_node_t *n) {
  return (SrcLoc){m->src, (int)n->start_mark.line + 1, (int)n->start_mark.column + 1, 1};
}

static yaml_node_t *map_get(ManifestReader *m, yaml_node_t *map, const char *key) {
  if (!map || map->type != YAML_MAPPING_NODE) return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(m->doc, p->key);
    if (k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, key))
      return yaml_document_get_node(m->doc, p->value);
  }
  return NULL;
}

// A YAML null: nothing, `~` or `null`, not quoted.
static bool is_null(const yaml_node_t *n) {
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  const char *v = (const char *)n->data.scalar.value;
  return !*v || !strcmp(v, "~") || !strcmp(v, "null");
}

static bool scalar_int(ManifestReader *m, yaml_node_t *n, const char *what, int64_t lo, int64_t hi, int64_t *out) {
  if (!n || n->type != YAML_SCALAR_NODE || !str_to_i64((char *)n->data.scalar.value, out) || *out < lo || *out > hi) {
    if (n) diag_error(m->d, mloc(m, n), "%s must be an integer from %lld to %lld", what, (long long)lo, (long long)hi);
    return false;
  }
  return true;
}

static yaml_node_t *required(ManifestReader *m, yaml_node_t *map, const char *key) {
  yaml_node_t *n = map_get(m, map, key);
  if (!n) diag_error(m->d, mloc(m, map), "the manifest has no '%s'", key);
  return n;
}

uint64_t emu_home_vectors(const TensorHome *th, int vector_bytes) {
  int per = isa_elems_per_vector(th->dtype, vector_bytes);
  uint64_t elems = (uint64_t)ir_shape_elems(&th->shape);
  if (per < 1) return UINT64_MAX;  // no element fits a vector
  if (!th->pitch) return (elems * (uint64_t)ir_dtype_bytes[th->dtype] + (uint64_t)vector_bytes - 1) / (uint64_t)vector_bytes;
  uint64_t cols = (uint64_t)th->shape.dim[th->shape.rank - 1], rows = elems / cols;
  uint64_t row_vectors = (cols + (uint64_t)per - 1) / (uint64_t)per;
  if (rows - 1 > (UINT64_MAX - row_vectors) / th->pitch) return UINT64_MAX;
  return (rows - 1) * th->pitch + row_vectors;
}

// `pitch: P` (optional; 0 or absent: packed): each row of the last
// dimension starts on a vector, P vectors after the one before, so P must
// hold a row.
static bool read_pitch(ManifestReader *m, yaml_node_t *n, const Topology *t, TensorHome *th) {
  yaml_node_t *pn = map_get(m, n, "pitch");
  int64_t v;
  if (!pn) return true;
  if (!scalar_int(m, pn, "pitch", 0, t->sram_vectors, &v)) return false;
  th->pitch = (uint32_t)v;
  int per = isa_elems_per_vector(th->dtype, t->link.vector_bytes);
  if (per < 1) {
    diag_error(m->d, mloc(m, pn), "a %d-byte vector holds no %s element", t->link.vector_bytes,
               ir_dtype_names[th->dtype]);
    return false;
  }
  int64_t cols = th->shape.dim[th->shape.rank - 1], row_vectors = (cols + per - 1) / per;
  if (th->pitch && th->pitch < row_vectors) {
    diag_error(m->d, mloc(m, pn), "tensor '%s' has pitch %u, but a row of %lld %s needs %lld vectors", th->name,
               th->pitch, (long long)cols, ir_dtype_names[th->dtype], (long long)row_vectors);
    return false;
  }
  return true;
}

// `start: [S0, ...]` (optional): the home is the shard [start, start +
// shape) of its tensor, one start per dimension, the box inside the
// largest dimension (inside the model's tensor: check_shard).
static bool read_start(ManifestReader *m, yaml_node_t *n, TensorHome *th) {
  yaml_node_t *sn = map_get(m, n, "start");
  if (!sn) return true;
  if (sn->type != YAML_SEQUENCE_NODE) {
    diag_error(m->d, mloc(m, sn), "a tensor's start must be a list of indices");
    return false;
  }
  yaml_node_item_t *first = sn->data.sequence.items.start;
  ptrdiff_t rank = sn->data.sequence.items.top - first;
  if (rank != th->shape.rank) {
    diag_error(m->d, mloc(m, sn), "tensor '%s' has a start of %td dimension%s, but its shape has %d", th->name, rank,
               rank == 1 ? "" : "s", th->shape.rank);
    return false;
  }
  for (int d = 0; d < th->shape.rank; d++)
    if (!scalar_int(m, yaml_document_get_node(m->doc, first[d]), "a start", 0, INT32_MAX, &th->start[d])) return false;
  th->is_shard = true;
  char err[IR_TYPE_STR_MAX * 3];
  if (isa_check_shard(th, err, sizeof err)) return true;
  diag_error(m->d, mloc(m, sn), "%s", err);
  return false;
}

// `batch: b` (optional; absent: 0): the inference (0 .. batches - 1) the
// home belongs to.
static bool read_batch(ManifestReader *m, yaml_node_t *n, TensorHome *th) {
  yaml_node_t *bn = map_get(m, n, "batch");
  int64_t v;
  if (!bn) return true;
  if (bn->type != YAML_SCALAR_NODE || !str_to_i64((char *)bn->data.scalar.value, &v) || v < 0) {
    diag_error(m->d, mloc(m, bn), "a batch must be an integer from 0 to %d", m->batches - 1);
    return false;
  }
  if (v >= m->batches && m->batches_given) {
    diag_error(m->d, mloc(m, bn), "tensor '%s' is of batch %lld, past the manifest's %d batch%s", th->name,
               (long long)v, m->batches, m->batches == 1 ? "" : "es");
    return false;
  }
  if (v >= m->batches) {
    diag_error(m->d, mloc(m, bn), "tensor '%s' is of batch %lld, but the manifest has no 'batches' (one inference, "
               "batch 0)", th->name, (long long)v);
    return false;
  }
  th->batch = (int)v;
  return true;
}

static bool read_tensor(ManifestReader *m, yaml_node_t *n, const Topology *t, TensorHome *th) {
  int64_t v;
  yaml_node_t *name = required(m, n, "name"), *dtype = required(m, n, "dtype"), *shape = required(m, n, "shape");
  if (!name || !dtype || !shape) return false;
  if (name->type != YAML_SCALAR_NODE || dtype->type != YAML_SCALAR_NODE) {
    diag_error(m->d, mloc(m, name->type != YAML_SCALAR_NODE ? name : dtype), "a tensor's %s must be a scalar",
               name->type != YAML_SCALAR_NODE ? "name" : "dtype");
    return false;
  }
  if (shape->type != YAML_SEQUENCE_NODE) {
    diag_error(m->d, mloc(m, shape), "a tensor's shape must be a list of dimensions");
    return false;
  }
  th->name = arena_strdup(m->a, (char *)name->data.scalar.value);
  if (!ir_dtype_lookup((char *)dtype->data.scalar.value, &th->dtype)) {
    diag_error(m->d, mloc(m, dtype), "unknown dtype '%s'", (char *)dtype->data.scalar.value);
    return false;
  }
  if (!scalar_int(m, required(m, n, "device"), "device", 0, t->ndevices - 1, &v)) return false;
  th->device = (int)v;
  if (!scalar_int(m, required(m, n, "addr"), "addr", 0, t->sram_vectors - 1, &v)) return false;
  th->addr = (uint32_t)v;
  for (yaml_node_item_t *i = shape->data.sequence.items.start; i < shape->data.sequence.items.top; i++) {
    if (th->shape.rank == IR_MAX_RANK) {
      diag_error(m->d, mloc(m, shape), "tensor '%s' has more than %d dimensions", th->name, IR_MAX_RANK);
      return false;
    }
    if (!scalar_int(m, yaml_document_get_node(m->doc, *i), "a dimension", 1, INT32_MAX, &v)) return false;
    th->shape.dim[th->shape.rank++] = v;
  }
  if (th->shape.rank == 0) {
    diag_error(m->d, mloc(m, shape), "tensor '%s' has no dimensions", th->name);
    return false;
  }
  if (!ir_shape_fits(&th->shape, ir_dtype_bytes[th->dtype], (int64_t)t->sram_vectors * t->link.vector_bytes)) {
    diag_error(m->d, mloc(m, shape), "tensor '%s' is larger than the SRAM", th->name);
    return false;
  }
  if (!read_pitch(m, n, t, th) || !read_start(m, n, th) || !read_batch(m, n, th)) return false;
  uint64_t vectors = emu_home_vectors(th, t->link.vector_bytes);
  if (vectors > (uint64_t)t->sram_vectors || th->addr > (uint64_t)t->sram_vectors - vectors) {
    diag_error(m->d, mloc(m, map_get(m, n, "addr")), "tensor '%s' (%llu vectors at %u) runs past the SRAM",
               th->name, (unsigned long long)vectors, th->addr);
    return false;
  }
  return true;
}

// A file of the output directory, nothing else: no '/', not "..".
static bool file_name_ok(const char *s) { return *s && !strchr(s, '/') && strcmp(s, ".."); }

// `model:` (optional): the .tg graph the programs compute, a file of DIR,
// parsed and checked for the topology here; its diagnostics point into it.
static bool read_model(ManifestReader *m, yaml_node_t *root, EmuInput *in) {
  yaml_node_t *n = map_get(m, root, "model");
  if (!n) return true;
  const char *s = n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : "";
  if (!file_name_ok(s)) {
    diag_error(m->d, mloc(m, n), "the model must be a file name in the output directory");
    return false;
  }
  in->model = arena_strdup(m->a, s);
  const char *path = arena_printf(m->a, "%s/%s", in->dir, s), *err;
  SrcFile *src = src_read(m->a, path, &err);
  if (!src) {
    diag_tool_error(m->d, in->tool, "cannot read '%s': %s", path, err);
    return false;
  }
  Ast *ast = fe_parse(m->a, m->d, src);
  in->graph = ast ? fe_check(m->a, m->d, ast, in->topo) : NULL;
  return in->graph != NULL;
}

static const Tensor *graph_tensor(const Graph *g, const char *name) {
  for (int i = 0; i < g->tensors.len; i++)
    if (!strcmp(g->tensors.data[i]->name, name)) return g->tensors.data[i];
  return NULL;
}

// Whether the graph places a copy of t on `device` (where the partitioner
// decides, ir_place_by_partitioner, any device may).
static bool holds_copy(const Tensor *t, int device) {
  const Placement *p = &t->place;
  if (ir_place_by_partitioner(t)) return true;
  if (p->kind == PLACE_DEVICE) return device == p->index;
  if (p->kind != PLACE_EACH) return true;
  for (int i = 0; i < p->nexcept; i++)
    if (p->except[i] == device) return false;
  return true;
}

// A whole home (a copy) has the model tensor's dtype and shape.
static bool check_whole(ManifestReader *m, yaml_node_t *n, const Tensor *t, const TensorHome *th) {
  if (t->dtype == th->dtype && ir_shape_equal(&t->shape, &th->shape)) return true;
  char here[IR_TYPE_STR_MAX], model[IR_TYPE_STR_MAX];
  ir_format_type(here, sizeof here, th->dtype, &th->shape);
  ir_format_type(model, sizeof model, t->dtype, &t->shape);
  diag_error(m->d, mloc(m, map_get(m, n, t->dtype != th->dtype ? "dtype" : "shape")),
             "tensor '%s' is %s in the model, not %s", th->name, model, here);
  return false;
}

// The first dimension in which shard th's box runs past t's shape, or -1.
static int shard_overrun(const Tensor *t, const TensorHome *th) {
  for (int d = 0; d < t->shape.rank; d++)
    if (th->start[d] + th->shape.dim[d] > t->shape.dim[d]) return d;
  return -1;
}

// A shard is a piece of a tensor the partitioner places
// (ir_place_by_partitioner: one the .tg places @ device(N), or @ each, has
// whole copies), of its dtype and rank, its box inside the tensor's shape.
static bool check_shard(ManifestReader *m, yaml_node_t *n, const Tensor *t, const TensorHome *th) {
  char model[IR_TYPE_STR_MAX], start[IR_TYPE_STR_MAX], shape[IR_TYPE_STR_MAX];
  ir_format_type(model, sizeof model, t->dtype, &t->shape);
  if (!ir_place_by_partitioner(t)) {
    diag_error(m->d, mloc(m, map_get(m, n, "start")), "tensor '%s' cannot be a shard: the model places it @ %s",
               th->name, ir_place_str(m->a, &t->place));
    return false;
  }
  if (t->dtype != th->dtype) {
    diag_error(m->d, mloc(m, map_get(m, n, "dtype")), "tensor '%s' is %s in the model: a shard of it is %s, not %s",
               th->name, model, ir_dtype_names[t->dtype], ir_dtype_names[th->dtype]);
    return false;
  }
  if (t->shape.rank != th->shape.rank) {
    diag_error(m->d, mloc(m, map_get(m, n, "shape")),
               "tensor '%s' is %s in the model: a shard of it has %d dimension%s, not %d", th->name, model,
               t->shape.rank, t->shape.rank == 1 ? "" : "s", th->shape.rank);
    return false;
  }
  int d = shard_overrun(t, th);
  if (d < 0) return true;
  ir_format_index(start, sizeof start, th->start, th->shape.rank);
  ir_format_index(shape, sizeof shape, th->shape.dim, th->shape.rank);
  diag_error(m->d, mloc(m, map_get(m, n, "start")),
             "tensor '%s' shard %s + %s runs past the model's %s in dimension %d (%lld + %lld > %lld)", th->name,
             start, shape, model, d, (long long)th->start[d], (long long)th->shape.dim[d], (long long)t->shape.dim[d]);
  return false;
}

// With a model, a home holds a tensor of the graph, typed as the graph
// types it (all of it, or a shard's box of it), on a device the graph
// places a copy on.
static bool check_home(ManifestReader *m, yaml_node_t *n, const Graph *g, const TensorHome *th,
                       const Tensor **out) {
  const Tensor *t = graph_tensor(g, th->name);
  if (!t) {
    diag_error(m->d, mloc(m, map_get(m, n, "name")), "tensor '%s' is not a tensor of the model", th->name);
    return false;
  }
  if (!(th->is_shard ? check_shard(m, n, t, th) : check_whole(m, n, t, th))) return false;
  if (t->kind == TENSOR_PARAM && th->batch) {
    diag_error(m->d, mloc(m, map_get(m, n, "batch")), "tensor '%s' is a param, shared by every batch: it takes no batch",
               th->name);
    return false;
  }
  if (!holds_copy(t, th->device)) {
    diag_error(m->d, mloc(m, map_get(m, n, "device")), "tensor '%s' has no copy on device %d: the model places it @ %s",
               th->name, th->device, ir_place_str(m->a, &t->place));
    return false;
  }
  *out = t;
  return true;
}

// `batches: N` (optional; absent: 1): the inferences in flight, each with
// its homes of the model's inputs, values and outputs.
static bool read_batches(ManifestReader *m, yaml_node_t *root, Program *p) {
  yaml_node_t *n = map_get(m, root, "batches");
  int64_t v = 1;
  if (n && !scalar_int(m, n, "batches", 1, EMU_MAX_BATCHES, &v)) return false;
  p->batches = m->batches = (int)v;
  m->batches_given = n != NULL;
  return true;
}

// Homes ordered by the copy they hold (one tensor on one device, of one
// batch; a shard by the element it starts at): 0 when they hold one copy.
static int cmp_copy(const TensorHome *x, const TensorHome *y) {
  int c = strcmp(x->name, y->name);
  if (c) return c;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->batch != y->batch) return x->batch < y->batch ? -1 : 1;
  if (x->is_shard != y->is_shard) return x->is_shard ? 1 : -1;
  for (int d = 0; x->is_shard && d < IR_MAX_RANK; d++)
    if (x->start[d] != y->start[d]) return x->start[d] < y->start[d] ? -1 : 1;
  return 0;
}

// A home and where the manifest gives it, for sorting.
typedef struct HomeAt {
  const TensorHome *home;
  int index;
} HomeAt;

// By copy, then in the manifest's order.
static int cmp_home_at(const void *a, const void *b) {
  const HomeAt *x = a, *y = b;
  int c = cmp_copy(x->home, y->home);
  return c ? c : (x->index > y->index) - (x->index < y->index);
}

// No copy has two homes: the emulator would seed or check only one of
// them, and the copy the other stood for would show up as reads of what
// nothing wrote.
static bool homes_unique(ManifestReader *m, const Program *p, yaml_node_t *const *nodes) {
  int n = p->tensors.len;
  HomeAt *at = xmalloc(sizeof *at * (size_t)(n + 1));
  for (int i = 0; i < n; i++) at[i] = (HomeAt){&p->tensors.data[i], i};
  qsort(at, (size_t)n, sizeof *at, cmp_home_at);
  bool ok = true;
  for (int k = 1; k < n && ok; k++) {
    if (cmp_copy(at[k - 1].home, at[k].home)) continue;
    diag_error(m->d, mloc(m, nodes[at[k].index]), "tensor '%s' has a second home on device %d%s (the first is at line %d)",
               at[k].home->name, at[k].home->device, at[k].home->batch ? " in its batch" : "",
               mloc(m, nodes[at[k - 1].index]).line);
    ok = false;
  }
  free(at);
  return ok;
}

static bool read_tensors(ManifestReader *m, yaml_node_t *root, EmuInput *in) {
  yaml_node_t *tensors = map_get(m, root, "tensors");
  if (!tensors || is_null(tensors)) return true;  // (`tensors:` with nothing after it: none)
  if (tensors->type != YAML_SEQUENCE_NODE) {
    diag_error(m->d, mloc(m, tensors), "tensors must be a list of homes");
    return false;
  }
  yaml_node_item_t *first = tensors->data.sequence.items.start, *end = tensors->data.sequence.items.top;
  if (in->graph) in->home_tensor = ARENA_ARRAY(m->a, const Tensor *, (size_t)(end - first) + 1);
  yaml_node_t **nodes = ARENA_ARRAY(m->a, yaml_node_t *, (size_t)(end - first) + 1);
  for (yaml_node_item_t *i = first; i < end; i++) {
    TensorHome th = {0};
    yaml_node_t *n = nodes[i - first] = yaml_document_get_node(m->doc, *i);
    if (!read_tensor(m, n, in->topo, &th)) return false;
    if (in->graph && !check_home(m, n, in->graph, &th, &in->home_tensor[i - first])) return false;
    VEC_PUSH(m->a, &in->prog->tensors, th);
  }
  return homes_unique(m, in->prog, nodes);
}

// Whether roles item n says role r: {node: F, spare: S} ("device:"
// outside a dragonfly; "spare: null" for a dropped role), nothing else.
static bool role_matches(ManifestReader *m, yaml_node_t *n, const Topology *t, const Role *r) {
  const char *unit = t->family == FAMILY_DRAGONFLY ? "node" : "device";
  yaml_node_t *failed = map_get(m, n, unit), *spare = map_get(m, n, "spare");
  int64_t v;
  if (!failed || !spare || n->data.mapping.pairs.top - n->data.mapping.pairs.start != 2) return false;
  if (failed->type != YAML_SCALAR_NODE || !str_to_i64((char *)failed->data.scalar.value, &v) || v != r->failed)
    return false;
  if (spare->type != YAML_SCALAR_NODE) return false;
  if (r->spare < 0) return !strcmp((char *)spare->data.scalar.value, "null");
  return str_to_i64((char *)spare->data.scalar.value, &v) && v == r->spare;
}

static bool roles_match(ManifestReader *m, yaml_node_t *n, const Topology *t) {
  if (n->type != YAML_SEQUENCE_NODE || n->data.sequence.items.top - n->data.sequence.items.start != t->nroles)
    return false;
  for (int i = 0; i < t->nroles; i++)
    if (!role_matches(m, yaml_document_get_node(m->doc, n->data.sequence.items.start[i]), t, &t->roles[i]))
      return false;
  return true;
}

// `roles:` (written exactly when some unit has failed): the spares standing
// in, which must be the ones topology.yaml's spares and failures give
// (ir/topology_roles.c), or the binaries were compiled for another system.
static bool read_roles(ManifestReader *m, yaml_node_t *root, const Topology *t) {
  yaml_node_t *n = map_get(m, root, "roles");
  if (!n && !t->nroles) return true;
  if (n && roles_match(m, n, t)) return true;
  Buf want = {0};
  ir_roles_format(t, &want);
  if (!n)
    diag_error(m->d, mloc(m, root), "the manifest has no 'roles', but topology.yaml's spares and failures give %s",
               want.data);
  else if (!t->nroles)
    diag_error(m->d, mloc(m, n), "the manifest has roles, but topology.yaml lists no failure for a spare to stand in for");
  else
    diag_error(m->d, mloc(m, n), "roles must be %s, as topology.yaml's spares and failures give them", want.data);
  buf_free(&want);
  return false;
}

// The topology's digest (`topology: {..., digest: ...}`, which tspc and
// tsp-as write) is topology.yaml's: the binaries were compiled for exactly
// that network, and an edited copy (a slower cable, another device count)
// would run them on one the schedule never saw.  A manifest without one
// (written by hand) is read on: the checks that follow compare what they
// can.  A topology made in memory (no file) has nothing to compare.
static bool topology_as_compiled(ManifestReader *m, yaml_node_t *root, const Topology *t) {
  yaml_node_t *digest = map_get(m, map_get(m, root, "topology"), "digest");
  if (!digest || !t->src) return true;
  char want[DIGEST_TEXT_BYTES];
  digest_text(t->src->text, t->src->len, want);
  if (digest->type == YAML_SCALAR_NODE && !strcmp((const char *)digest->data.scalar.value, want)) return true;
  diag_error(m->d, mloc(m, digest),
             "topology.yaml is not the topology these binaries were compiled for (its digest is \"%s\"): it was "
             "edited or replaced after the compile; compile again for it",
             want);
  return false;
}

static bool read_manifest_fields(ManifestReader *m, yaml_node_t *root, EmuInput *in) {
  int64_t v;
  if (!root || root->type != YAML_MAPPING_NODE) {
    diag_error(m->d, (SrcLoc){m->src, 1, 1, 1}, "a manifest is a YAML mapping");
    return false;
  }
  if (!scalar_int(m, required(m, root, "format_version"), "format_version", 1, 1, &v)) return false;
  if (!topology_as_compiled(m, root, in->topo) || !read_roles(m, root, in->topo)) return false;
  yaml_node_t *binaries = map_get(m, root, "binaries");
  if (!binaries) {
    diag_tool_error(m->d, in->tool, "%s holds no device binaries: its manifest lists none (tspc "
                    "writes them once it generates code)", in->dir);
    return false;
  }
  if (binaries->type != YAML_SEQUENCE_NODE ||
      binaries->data.sequence.items.top - binaries->data.sequence.items.start != in->topo->ndevices) {
    diag_error(m->d, mloc(m, binaries), "binaries must list one file per device (%d)", in->topo->ndevices);
    return false;
  }
  in->binaries = ARENA_ARRAY(m->a, const char *, in->topo->ndevices);
  for (int i = 0; i < in->topo->ndevices; i++) {
    yaml_node_t *name = yaml_document_get_node(m->doc, binaries->data.sequence.items.start[i]);
    const char *s = name->type == YAML_SCALAR_NODE ? (const char *)name->data.scalar.value : "";
    if (!file_name_ok(s)) {
      diag_error(m->d, mloc(m, name), "a binary must be a file name in the output directory");
      return false;
    }
    in->binaries[i] = arena_strdup(m->a, s);
  }
  if (!read_model(m, root, in)) return false;
  Program *p = in->prog;
  p->predicted_cycles = -1;
  yaml_node_t *pc = map_get(m, root, "predicted_cycles");
  if (pc && !(pc->type == YAML_SCALAR_NODE && !strcmp((char *)pc->data.scalar.value, "null")) &&
      !scalar_int(m, pc, "predicted_cycles", 0, INT64_MAX, &p->predicted_cycles))
    return false;
  return read_batches(m, root, p) && read_tensors(m, root, in);
}

// An output directory's own files are read from it, never through a
// symbolic link to a file elsewhere; false after saying so.
static bool not_a_link(Diag *d, const char *tool, const char *path) {
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    diag_tool_error(d, tool, "'%s' is a symbolic link: an output directory's files are read from the directory itself",
                    path);
    return false;
  }
  return true;
}

static bool load_binaries(Arena *a, Diag *d, EmuInput *in) {
  Program *p = in->prog;
  for (int i = 0; i < p->ndevices; i++) {
    char *path = arena_printf(a, "%s/%s", in->dir, in->binaries[i]), err[256];
    if (!not_a_link(d, in->tool, path)) return false;
    size_t n;
    unsigned char *data = emu_read_file(path, &n, err, sizeof err);
    int ndev;
    if (!data) {
      diag_tool_error(d, in->tool, "cannot read '%s': %s", path, err);
      return false;
    }
    bool ok = emu_decode_binary(a, data, n, i, in->topo, &p->devices[i], &ndev, err, sizeof err);
    free(data);
    if (!ok) {
      diag_tool_error(d, in->tool, "%s: %s", path, err);
      return false;
    }
    int units = p->devices[i].units.len;
    if (units && ir_device_failed(in->topo, i)) {
      diag_tool_error(d, in->tool, "%s: device %d has failed (topology.yaml) and runs nothing, but its binary holds "
                      "%d unit%s", path, i, units, units == 1 ? "" : "s");
      return false;
    }
  }
  return true;
}

bool emu_read_manifest(Arena *a, Diag *d, const SrcFile *src, EmuInput *in) {
  if (!in->tool) in->tool = "tsp-emu";
  in->prog = ARENA_NEW(a, Program);
  in->prog->ndevices = in->topo->ndevices;
  in->prog->devices = ARENA_ARRAY(a, DeviceProgram, in->topo->ndevices);
  if (!fe_yaml_flow_depth_ok(d, src)) return false;
  yaml_parser_t parser;
  yaml_document_t doc;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_string(&parser, (const unsigned char *)src->text, src->len);
  bool ok = yaml_parser_load(&parser, &doc);
  if (!ok) {
    fe_yaml_report_error(d, &parser, src);
  } else {
    ManifestReader m = {.a = a, .d = d, .src = src, .doc = &doc};
    ok = !fe_yaml_refuse_nul(d, src, &doc) && !fe_yaml_refuse_duplicate_keys(d, src, &doc) &&
         read_manifest_fields(&m, yaml_document_get_root_node(&doc), in);
    yaml_document_delete(&doc);
    ok = ok && fe_yaml_no_second_document(d, &parser, src, "manifest");
  }
  yaml_parser_delete(&parser);
  return ok;
}

bool emu_load_dir(Arena *a, Diag *d, const char *tool, const char *dir, EmuInput *in) {
  *in = (EmuInput){.dir = dir, .tool = tool};
  const char *err;
  char *mpath = arena_printf(a, "%s/manifest.yaml", dir), *tpath = arena_printf(a, "%s/topology.yaml", dir);
  if (!not_a_link(d, tool, mpath) || !not_a_link(d, tool, tpath)) return false;
  SrcFile *src = src_read(a, mpath, &err);
  if (!src) {
    diag_tool_error(d, tool, "cannot read '%s': %s", mpath, err);
    return false;
  }
  in->topo = fe_load_topology(a, d, tool, tpath);
  return in->topo && emu_read_manifest(a, d, src, in) && load_binaries(a, d, in);
}
