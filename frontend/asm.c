// asm.c: reads tsp-as assembly (.tsa) into a Program.  Part of the
// frontend: the third input language after .tg and the topology YAML.
//
//   ; a comment                       .cycles 1234        (the predicted run)
//   .device 0                         .tensor x, 0, i32, [4, 80]
//   .init 0, i32, 4, iota(1, 0)       .expect 200, i32, 4, iota(2, 0)
//   .unit c2c.1                       .batches 2          (inferences in flight)
//     SEND 1, 0, 4                    ; port, address (vectors), count
//     HALT                            .tensor y, 8, i32, [4, 80], batch 1
//   .model graph g {                  (a line of the model, verbatim)
//
// One statement a line.  Every instruction is checked where it stands with
// isa_check (the same check the loader applies to binaries), so an error
// names its line and column.  docs/isa.md has the syntax in full.
#include "frontend.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct AsmReader {
  Arena *a;
  Diag *d;
  const SrcFile *src;
  const Topology *topo;
  Program *prog;
  int line;              // 1-based
  const char *text;      // the current line (not NUL-terminated)
  int len;               // its length without the comment
  bool crlf;             // it ended in "\r\n" (a .model line keeps the \r)
  int pos;               // the next column to read, 0-based
  DeviceProgram *dev;    // the current .device, or NULL
  UnitProgram *unit;     // the current .unit, or NULL
  int *device_line;      // where each device's section began (0: none)
  bool skipping;         // after a refused .unit or .device: its instructions are not checked
  bool bad_device;       // after a refused .device, until the next: nothing belongs to a device
  int num_col, num_len;  // where the last number read_u32 read starts, and its length
  int cycles_line;       // where .cycles was given (0: not given)
  int batches_line;      // where .batches was given (0: not given: one batch)
  SrcLoc batch_loc;      // where the current .tensor gave its `batch B`
  int max_batch;         // the largest `batch B` of any accepted .tensor, checked against .batches at the end
  SrcLoc max_batch_loc;  // where it was given (line 0: no batch given)
  const char *max_batch_name;  // of which tensor
  Buf model;             // the .model lines, each ending in '\n'
  bool has_model;        // whether any .model line was given
} AsmReader;

static SrcLoc here(const AsmReader *r, int col0, int len) {
  return (SrcLoc){r->src, r->line, col0 + 1, MAX(len, 1)};
}

static void skip_space(AsmReader *r) {
  while (r->pos < r->len && (r->text[r->pos] == ' ' || r->text[r->pos] == '\t')) r->pos++;
}

static bool at_end(AsmReader *r) {
  skip_space(r);
  return r->pos >= r->len;
}

// A word: letters, digits, '_', '.', starting with a letter, '_' or '.'.
static bool read_word(AsmReader *r, char *out, size_t n, int *col) {
  out[0] = '\0';  // a caller may look at it after a failure
  skip_space(r);
  *col = r->pos;
  int start = r->pos;
  if (r->pos < r->len && (isalpha((unsigned char)r->text[r->pos]) || r->text[r->pos] == '_' || r->text[r->pos] == '.'))
    while (r->pos < r->len && (isalnum((unsigned char)r->text[r->pos]) || strchr("_.", r->text[r->pos]))) r->pos++;
  int len = r->pos - start;
  if (len == 0 || (size_t)len >= n) return false;
  memcpy(out, r->text + start, (size_t)len);
  out[len] = '\0';
  return true;
}

// The text of the next token, for "expected X, found 'Y'".
static void found_text(AsmReader *r, char *out, size_t n) {
  skip_space(r);
  int end = r->pos;
  while (end < r->len && !strchr(" \t,()[]", r->text[end])) end++;
  if (end == r->pos && end < r->len) end++;
  if (end == r->pos) {
    snprintf(out, n, "end of line");
    return;
  }
  unsigned char first = (unsigned char)r->text[r->pos];
  if (end - r->pos == 1 && (first < 0x20 || first >= 0x7f)) {  // a stray byte, named by value as the .tg lexer does
    snprintf(out, n, "byte 0x%02x", first);
    return;
  }
  // Up to 40 bytes quoted, any that is not printable ASCII as \xNN.
  size_t at = (size_t)snprintf(out, n, "'");
  for (int i = r->pos; i < MIN(end, r->pos + 40) && at + 6 < n; i++) {
    unsigned char ch = (unsigned char)r->text[i];
    at += (size_t)snprintf(out + at, n - at, ch < 0x20 || ch >= 0x7f ? "\\x%02x" : "%c", ch);
  }
  snprintf(out + at, n - at, "'");
}

static bool expect_char(AsmReader *r, char c) {
  skip_space(r);
  if (r->pos < r->len && r->text[r->pos] == c) {
    r->pos++;
    return true;
  }
  char found[64];
  found_text(r, found, sizeof found);
  diag_error(r->d, here(r, r->pos, 1), "expected '%c', found %s", c, found);
  return false;
}

// An unsigned integer operand that fits in 32 bits: decimal, or hex after 0x.
static bool read_u32(AsmReader *r, const char *what, uint32_t *out) {
  skip_space(r);
  int start = r->pos;
  bool hex = r->pos + 1 < r->len && r->text[r->pos] == '0' &&
             (r->text[r->pos + 1] == 'x' || r->text[r->pos + 1] == 'X');
  if (hex) r->pos += 2;
  while (r->pos < r->len && (hex ? isxdigit((unsigned char)r->text[r->pos]) : isdigit((unsigned char)r->text[r->pos])))
    r->pos++;
  char buf[32];
  int len = r->pos - start;
  int64_t v;
  if (len == 0 || (hex && len == 2)) {
    char found[64];
    found_text(r, found, sizeof found);
    diag_error(r->d, here(r, start, 1), "expected %s (a number), found %s", what, found);
    return false;
  }
  snprintf(buf, sizeof buf, "%.*s", MIN(len, 30), r->text + start);
  r->num_col = start;
  r->num_len = len;
  bool parsed = false;
  if (hex) {
    char *end;
    errno = 0;
    unsigned long long u = len <= 18 ? strtoull(buf + 2, &end, 16) : ULLONG_MAX;
    parsed = len <= 18 && !errno && !*end;
    v = parsed && u <= UINT32_MAX ? (int64_t)u : INT64_MAX;
  } else {
    parsed = len <= 20 && str_to_i64(buf, &v);
  }
  if (!parsed || v > UINT32_MAX) {
    diag_error(r->d, here(r, start, len), "%s %.*s does not fit in 32 bits", what, len, r->text + start);
    return false;
  }
  *out = (uint32_t)v;
  return true;
}

// A real number for iota(A, B): optional sign, digits, '.', exponent.
static bool read_real(AsmReader *r, double *out) {
  skip_space(r);
  int start = r->pos;
  while (r->pos < r->len && strchr("+-0123456789.eE", r->text[r->pos])) r->pos++;
  char buf[64];
  snprintf(buf, sizeof buf, "%.*s", MIN(r->pos - start, 63), r->text + start);
  if (r->pos > start && str_to_double(buf, out)) return true;
  char found[64];
  r->pos = start;
  found_text(r, found, sizeof found);
  int end = start;
  while (end < r->len && !strchr(" \t,()[]", r->text[end])) end++;
  if (start < r->len && strchr("+-0123456789.", r->text[start]))
    diag_error(r->d, here(r, start, end - start), "%s is not a finite number", found);
  else
    diag_error(r->d, here(r, start, end - start), "expected a number, found %s", found);
  return false;
}

static bool read_dtype(AsmReader *r, DType *out) {
  char word[32];
  int col;
  if (!read_word(r, word, sizeof word, &col) || !ir_dtype_lookup(word, out)) {
    char found[64];
    r->pos = col;
    found_text(r, found, sizeof found);
    diag_error(r->d, here(r, col, 1), "expected a dtype (f32, f16, bf16, i32, i8), found %s", found);
    return false;
  }
  return true;
}

static bool expect_end(AsmReader *r) {
  if (at_end(r)) return true;
  char found[64];
  found_text(r, found, sizeof found);
  diag_error(r->d, here(r, r->pos, 1), "unexpected %s at the end of the line", found);
  return false;
}

// ---- directives ---------------------------------------------------------------------

static bool need_device(AsmReader *r, int col, const char *what) {
  if (r->dev) return true;
  if (r->bad_device) return false;  // its .device was refused, and said so
  diag_error(r->d, here(r, col, (int)strlen(what)), "%s before any .device", what);
  return false;
}

// A refused .device: what follows it up to the next .device belongs to no
// device, and is skipped without a word more.
static void refuse_device(AsmReader *r) {
  r->dev = NULL;
  r->unit = NULL;
  r->skipping = true;
  r->bad_device = true;
}

static void directive_device(AsmReader *r) {
  uint32_t id;
  refuse_device(r);  // until this .device is accepted
  if (!read_u32(r, "a device id", &id)) return;
  int col = r->num_col, len = r->num_len;
  if (!expect_end(r)) return;
  if (id >= (uint32_t)r->topo->ndevices) {
    diag_error(r->d, here(r, col, len), "device %u does not exist (devices are 0..%d)", id,
               r->topo->ndevices - 1);
    return;
  }
  if (ir_device_failed(r->topo, (int)id)) {  // assembly names physical devices: no role mapping
    diag_error(r->d, here(r, col, len), "device %u has failed (the topology's failed_nodes or failed_devices) and runs "
               "nothing", id);
    return;
  }
  if (r->device_line[id]) {
    diag_error(r->d, here(r, 0, 7), "device %u already has a section (line %d)", id, r->device_line[id]);
    return;
  }
  r->device_line[id] = r->line;
  r->dev = &r->prog->devices[id];
  r->unit = NULL;
  r->skipping = false;
  r->bad_device = false;
}

static void directive_unit(AsmReader *r) {
  char name[32];
  int col;
  r->unit = NULL;
  r->skipping = true;  // until this .unit is accepted: its instructions belong to no unit
  if (!need_device(r, 0, ".unit")) return;
  UnitKind kind;
  int port;
  if (!read_word(r, name, sizeof name, &col) || !isa_unit_parse(name, &kind, &port)) {
    diag_error(r->d, here(r, col, 1), "expected a unit: c2c.PORT, vxm, mxm, sxm or ctl");
    return;
  }
  if (!expect_end(r)) return;
  int nports = r->topo->devices[r->dev->device].nports;
  if (kind == UNIT_C2C && port >= nports) {
    diag_error(r->d, here(r, col, (int)strlen(name)), "device %d has no port %d (it has %d)",
               r->dev->device, port, nports);
    return;
  }
  for (int i = 0; i < r->dev->units.len; i++)
    if (r->dev->units.data[i].kind == kind && r->dev->units.data[i].port == port) {
      diag_error(r->d, here(r, col, (int)strlen(name)), "device %d already has unit %s",
                 r->dev->device, name);
      return;
    }
  UnitProgram up = {.kind = kind, .port = port};
  VEC_PUSH(r->a, &r->dev->units, up);
  r->unit = &r->dev->units.data[r->dev->units.len - 1];
  r->skipping = false;
}

// .init / .expect ADDR, DTYPE, NVEC, iota(A, B)
static void directive_record(AsmReader *r, RecordKind kind, int col0) {
  const char *what = kind == REC_INIT ? ".init" : ".expect";
  if (!need_device(r, col0, what)) return;
  DataRecord rec = {.kind = kind, .loc = here(r, col0, (int)strlen(what))};
  char word[16];
  int col;
  if (!read_u32(r, "an address", &rec.addr) || !expect_char(r, ',') || !read_dtype(r, &rec.dtype) ||
      !expect_char(r, ',') || !read_u32(r, "a vector count", &rec.nvec) || !expect_char(r, ','))
    return;
  if (!read_word(r, word, sizeof word, &col) || strcmp(word, "iota")) {
    diag_error(r->d, here(r, col, 1), "expected iota(A, B)");
    return;
  }
  if (!expect_char(r, '(') || !read_real(r, &rec.a) || !expect_char(r, ',') ||
      !read_real(r, &rec.b) || !expect_char(r, ')') || !expect_end(r))
    return;
  char err[160];
  IsaTarget target = isa_target(r->topo, r->dev->device);
  if (!isa_check_record(&rec, &target, err, sizeof err)) {
    diag_error(r->d, rec.loc, "%s", err);
    return;
  }
  VEC_PUSH(r->a, &r->dev->records, rec);
}

// [N0, N1, ...]: 1 to IR_MAX_RANK numbers, each `what` ("a dimension")
// from lo to INT32_MAX, into v[0 .. *n).  False after reporting.
static bool read_list(AsmReader *r, const char *what, uint32_t lo, int64_t *v, int *n) {
  if (!expect_char(r, '[')) return false;
  *n = 0;
  do {
    uint32_t x;
    if (*n == IR_MAX_RANK) {
      diag_error(r->d, here(r, r->pos, 1), "a tensor has at most %d dimensions", IR_MAX_RANK);
      return false;
    }
    if (!read_u32(r, what, &x)) return false;
    if (x < lo || x > INT32_MAX) {
      diag_error(r->d, here(r, r->num_col, r->num_len), "%s must be from %u to %d", what, lo, INT32_MAX);
      return false;
    }
    v[(*n)++] = x;
    skip_space(r);
  } while (r->pos < r->len && r->text[r->pos] == ',' && ++r->pos);
  return expect_char(r, ']');
}

// `, WORD` after a .tensor's shape (or pitch): false at the end of the
// line; else the word (empty if none) and its column.
static bool next_clause(AsmReader *r, char *word, size_t n, int *col) {
  skip_space(r);
  if (r->pos >= r->len || r->text[r->pos] != ',') return false;
  r->pos++;
  read_word(r, word, n, col);
  return true;
}

// The P of `pitch P`: rows of the last dimension P vectors apart, each
// starting on a vector (0: packed).  False after reporting.
static bool read_pitch(AsmReader *r, TensorHome *th) {
  if (!read_u32(r, "a pitch in vectors", &th->pitch)) return false;
  int pcol = r->num_col, plen = r->num_len;
  int per = isa_elems_per_vector(th->dtype, r->topo->link.vector_bytes);
  int64_t cols = th->shape.dim[th->shape.rank - 1], row_vectors = per < 1 ? 0 : (cols + per - 1) / per;
  if (th->pitch && th->pitch < row_vectors) {
    diag_error(r->d, here(r, pcol, plen), "tensor '%s' has pitch %u, but a row of %lld %s needs %lld vectors",
               th->name, th->pitch, (long long)cols, ir_dtype_names[th->dtype], (long long)row_vectors);
    return false;
  }
  return true;
}

// The [S0, S1, ...] of `start [S0, S1, ...]`: the home is the shard
// [start, start + shape) of its tensor, one start per dimension, the end
// inside the largest dimension.  False after reporting.
static bool read_start(AsmReader *r, TensorHome *th) {
  skip_space(r);
  int col = r->pos, rank;
  if (!read_list(r, "a start", 0, th->start, &rank)) return false;
  SrcLoc at = here(r, col, r->pos - col);
  if (rank != th->shape.rank) {
    diag_error(r->d, at, "tensor '%s' has a start of %d dimension%s, but its shape has %d", th->name, rank,
               rank == 1 ? "" : "s", th->shape.rank);
    return false;
  }
  th->is_shard = true;
  char err[IR_TYPE_STR_MAX * 3];
  if (isa_check_shard(th, err, sizeof err)) return true;
  diag_error(r->d, at, "%s", err);
  return false;
}

// The B of `batch B`: which inference (0 .. .batches - 1) the home belongs
// to; checked against .batches, which may come later, at the end of the file.
static bool read_batch(AsmReader *r, TensorHome *th) {
  uint32_t b;
  if (!read_u32(r, "a batch", &b)) return false;
  r->batch_loc = here(r, r->num_col, r->num_len);
  if (b > FE_MAX_BATCHES - 1) {
    diag_error(r->d, r->batch_loc, "a batch must be from 0 to %d", FE_MAX_BATCHES - 1);
    return false;
  }
  th->batch = (int)b;
  return true;
}

// The clauses a .tensor may end with, each at most once, in this order.
typedef enum { CLAUSE_PITCH, CLAUSE_START, CLAUSE_BATCH, CLAUSE_COUNT } TensorClause;
static const char *const clause_words[CLAUSE_COUNT] = {"pitch", "start", "batch"};
static const char *const clause_syntax[CLAUSE_COUNT] = {"'pitch P'", "'start [S0, ...]'", "'batch B'"};

// "expected 'start [S0, ...]' or 'batch B' after the pitch": the clauses
// still allowed, from `next` on, at the word found instead.
static void clause_expected(AsmReader *r, TensorClause next, int col, const char *word) {
  char list[128];
  size_t at = 0;
  for (TensorClause k = next; k < CLAUSE_COUNT; k++)
    at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", k == next ? "" : k == CLAUSE_COUNT - 1 ? " or " : ", ",
                           clause_syntax[k]);
  diag_error(r->d, here(r, col, (int)strlen(word)), "expected %s after the %s", list,
             next == 0 ? "shape" : clause_words[next - 1]);
}

static bool read_clause(AsmReader *r, TensorClause k, TensorHome *th) {
  switch (k) {
  case CLAUSE_PITCH: return read_pitch(r, th);
  case CLAUSE_START: return read_start(r, th);
  default: return read_batch(r, th);
  }
}

// [, pitch P] [, start [S0, S1, ...]] [, batch B] after a .tensor's shape,
// in this order (absent: packed, the whole tensor, batch 0).  False after
// reporting.
static bool read_tensor_clauses(AsmReader *r, TensorHome *th) {
  char word[16];
  int col;
  for (TensorClause next = 0; next < CLAUSE_COUNT;) {  // the first clause still allowed
    if (!next_clause(r, word, sizeof word, &col)) return true;
    TensorClause k = next;
    while (k < CLAUSE_COUNT && strcmp(word, clause_words[k])) k++;
    if (k == CLAUSE_COUNT) {
      clause_expected(r, next, col, word);
      return false;
    }
    if (!read_clause(r, k, th)) return false;
    next = k + 1;
  }
  return true;
}

// The vectors a home spans through its layout (runtime/loader.c's
// emu_home_vectors: the frontend cannot call the runtime); UINT64_MAX on
// overflow.
static uint64_t home_vectors(const TensorHome *th, int per) {
  uint64_t elems = (uint64_t)ir_shape_elems(&th->shape);
  if (!th->pitch) return (elems + (uint64_t)per - 1) / (uint64_t)per;
  uint64_t cols = (uint64_t)th->shape.dim[th->shape.rank - 1], rows = elems / cols;
  uint64_t row_vectors = (cols + (uint64_t)per - 1) / (uint64_t)per;
  if (rows - 1 > (UINT64_MAX - row_vectors) / th->pitch) return UINT64_MAX;
  return (rows - 1) * th->pitch + row_vectors;
}

// Whether home th agrees with the other homes of its tensor, through the
// first listed and the first whole one (NULL: none): one dtype and rank,
// and whole homes (copies) one shape.  False after reporting.
static bool agrees(AsmReader *r, int col0, const TensorHome *th, const TensorHome *first, const TensorHome *whole) {
  const TensorHome *o = first && (first->dtype != th->dtype || first->shape.rank != th->shape.rank) ? first : NULL;
  if (!o && whole && !th->is_shard && !ir_shape_equal(&whole->shape, &th->shape)) o = whole;
  if (!o) return true;
  char want[IR_TYPE_STR_MAX];
  ir_format_type(want, sizeof want, o->dtype, &o->shape);
  diag_error(r->d, here(r, col0, 7), "tensor '%s' is %s on device %d: %s", th->name, want, o->device,
             o->is_shard || th->is_shard ? "its shards and copies have one dtype and rank" : "every copy has one type");
  return false;
}

// Whether two homes of one name are different shards (boxes) of it: a
// device may hold several, as a block-cyclic cholesky's rows.
static bool other_shards(const TensorHome *a, const TensorHome *b) {
  return a->is_shard && b->is_shard && memcmp(a->start, b->start, sizeof a->start) != 0;
}

// Whether the name of home th (at column col) is new on its device in its
// batch (or names another shard of it there); its other homes into *first
// (any) and *whole (the first not a shard), NULL when none.  False after
// reporting.
static bool name_is_new(AsmReader *r, int col, const TensorHome *th, const TensorHome **first,
                        const TensorHome **whole) {
  *first = *whole = NULL;
  for (int i = 0; i < r->prog->tensors.len; i++) {
    const TensorHome *o = &r->prog->tensors.data[i];
    if (strcmp(o->name, th->name)) continue;
    if (o->device == th->device && o->batch == th->batch && !other_shards(o, th)) {
      SrcLoc at = here(r, col, (int)strlen(th->name));
      if (th->batch)
        diag_error(r->d, at, "tensor '%s' of batch %d is already named on device %d", th->name, th->batch, th->device);
      else
        diag_error(r->d, at, "tensor '%s' is already named on device %d", th->name, th->device);
      return false;
    }
    if (!*first) *first = o;
    if (!*whole && !o->is_shard) *whole = o;
  }
  return true;
}

// .tensor NAME, ADDR, DTYPE, [D0, D1, ...] [, pitch P] [, start [S0, S1, ...]] [, batch B]
static void directive_tensor(AsmReader *r, int col0) {
  if (!need_device(r, col0, ".tensor")) return;
  TensorHome th = {.device = r->dev->device};
  char name[64];
  int col;
  if (!read_word(r, name, sizeof name, &col)) {
    diag_error(r->d, here(r, col, 1), "expected a tensor name");
    return;
  }
  th.name = arena_strdup(r->a, name);
  if (!expect_char(r, ',') || !read_u32(r, "an address", &th.addr) || !expect_char(r, ',') ||
      !read_dtype(r, &th.dtype) || !expect_char(r, ',') ||
      !read_list(r, "a dimension", 1, th.shape.dim, &th.shape.rank) || !read_tensor_clauses(r, &th) ||
      !expect_end(r))
    return;
  const TensorHome *first, *whole;  // homes of this tensor on other devices or in other batches: any, not a shard
  if (!name_is_new(r, col, &th, &first, &whole) || !agrees(r, col0, &th, first, whole)) return;
  if (!ir_shape_fits(&th.shape, ir_dtype_bytes[th.dtype], (int64_t)r->topo->sram_vectors * r->topo->link.vector_bytes)) {
    diag_error(r->d, here(r, col0, 7), "tensor '%s' is larger than the SRAM", th.name);
    return;
  }
  int per = isa_elems_per_vector(th.dtype, r->topo->link.vector_bytes);
  if (per < 1) {
    diag_error(r->d, here(r, col0, 7), "a %d-byte vector holds no %s element", r->topo->link.vector_bytes,
               ir_dtype_names[th.dtype]);
    return;
  }
  uint64_t vectors = home_vectors(&th, per);
  if (vectors > (uint64_t)r->topo->sram_vectors || th.addr > (uint64_t)r->topo->sram_vectors - vectors) {
    diag_error(r->d, here(r, col0, 7), "tensor '%s' (%llu vectors at %u) runs past the SRAM",
               th.name, (unsigned long long)vectors, th.addr);
    return;
  }
  if (th.batch > r->max_batch)  // the first of the largest, for check_batches
    r->max_batch = th.batch, r->max_batch_loc = r->batch_loc, r->max_batch_name = th.name;
  VEC_PUSH(r->a, &r->prog->tensors, th);
}

static void directive_cycles(AsmReader *r, int col0) {
  uint32_t n;
  if (r->cycles_line) {
    diag_error(r->d, here(r, col0, 7), ".cycles is already given (line %d)", r->cycles_line);
    return;
  }
  if (!read_u32(r, "a cycle count", &n) || !expect_end(r)) return;
  r->prog->predicted_cycles = n;
  r->cycles_line = r->line;
}

// .batches N: the program runs N inferences at once (1 to FE_MAX_BATCHES;
// absent: 1), each with its homes (`.tensor ..., batch B`).
static void directive_batches(AsmReader *r, int col0) {
  uint32_t n;
  if (r->batches_line) {
    diag_error(r->d, here(r, col0, 8), ".batches is already given (line %d)", r->batches_line);
    return;
  }
  if (!read_u32(r, "a batch count", &n)) return;
  SrcLoc at = here(r, r->num_col, r->num_len);
  if (!expect_end(r)) return;
  if (n < 1 || n > FE_MAX_BATCHES) {
    diag_error(r->d, at, "a batch count must be from 1 to %d", FE_MAX_BATCHES);
    return;
  }
  r->prog->batches = (int)n;
  r->batches_line = r->line;
}

// At the end of the file: the largest `batch B` given is one of .batches'.
static void check_batches(AsmReader *r) {
  if (r->max_batch < r->prog->batches) return;
  if (r->batches_line)
    diag_error(r->d, r->max_batch_loc, "tensor '%s' has batch %d, past the %d batch%s of .batches (line %d)",
               r->max_batch_name, r->max_batch, r->prog->batches, r->prog->batches == 1 ? "" : "es", r->batches_line);
  else
    diag_error(r->d, r->max_batch_loc, "tensor '%s' has batch %d, but without .batches there is one batch (0)",
               r->max_batch_name, r->max_batch);
}

static void directive(AsmReader *r) {
  char word[32];
  int col;
  if (!read_word(r, word, sizeof word, &col)) {  // too long for any directive
    char found[64];
    r->pos = col;
    found_text(r, found, sizeof found);
    diag_error(r->d, here(r, col, 1), "unknown directive %s (.device, .unit, .init, .expect, .tensor, .cycles, .batches, .model)", found);
    return;
  }
  if (!strcmp(word, ".device")) directive_device(r);
  else if (!strcmp(word, ".unit")) directive_unit(r);
  else if (!strcmp(word, ".init")) directive_record(r, REC_INIT, col);
  else if (!strcmp(word, ".expect")) directive_record(r, REC_EXPECT, col);
  else if (!strcmp(word, ".tensor")) directive_tensor(r, col);
  else if (!strcmp(word, ".cycles")) directive_cycles(r, col);
  else if (!strcmp(word, ".batches")) directive_batches(r, col);
  else if (!strcmp(word, ".model"))  // model_line takes it at the start of a line only
    diag_error(r->d, here(r, col, 6), ".model starts its line: the rest of the line is the model's, verbatim");
  else
    diag_error(r->d, here(r, col, (int)strlen(word)),
               "unknown directive '%s' (.device, .unit, .init, .expect, .tensor, .cycles, .batches, .model)", word);
}

// ---- instructions ----------------------------------------------------------------------

// A u16 operand kept in the port field: p (a port), w (a weight buffer),
// n (a count).  `a_what` ("a port") and `what` ("port") name it in errors.
static bool read_u16(AsmReader *r, const char *a_what, const char *what, Instr *in) {
  uint32_t v;
  if (!read_u32(r, a_what, &v)) return false;
  if (v > UINT16_MAX) {
    diag_error(r->d, here(r, r->num_col, r->num_len), "%s %u does not fit in 16 bits", what, v);
    return false;
  }
  in->port = (uint16_t)v;
  return true;
}

// One operand of the letter `slot` (ir/ir.h): t and s are dtype names, the
// rest numbers.
static bool read_operand(AsmReader *r, char slot, Instr *in) {
  uint32_t v;
  DType dt;
  switch (slot) {
  case 't':
  case 's':
    if (!read_dtype(r, &dt)) return false;
    if (slot == 't')
      in->dtype = (uint8_t)dt;
    else
      in->port = (uint16_t)dt;
    return true;
  case 'p': return read_u16(r, "a port", "port", in);
  case 'w': return read_u16(r, "a weight buffer", "weight buffer", in);
  case 'n': return read_u16(r, "a count", "count", in);
  default:
    if (!read_u32(r, "an operand", &v)) return false;
    *(slot == 'a' ? &in->a : slot == 'b' ? &in->b : slot == 'c' ? &in->c : &in->d) = v;
    return true;
  }
}

static void instruction(AsmReader *r) {
  char word[32];
  int col;
  Opcode op;
  if (!read_word(r, word, sizeof word, &col) || !isa_opcode_lookup(word, &op)) {
    char found[64];
    r->pos = col;
    found_text(r, found, sizeof found);
    diag_error(r->d, here(r, col, 1), "unknown instruction %s", found);
    return;
  }
  if (r->skipping) return;  // under a refused .unit: already reported there
  if (!r->unit) {
    diag_error(r->d, here(r, col, (int)strlen(word)), "%s outside any .unit", word);
    return;
  }
  SrcLoc at = here(r, col, (int)strlen(word));
  Instr in = {.op = (uint8_t)op};
  const char *slots = isa_opcodes[op].operands;
  for (const char *s = slots; *s; s++)
    if ((s != slots && !expect_char(r, ',')) || !read_operand(r, *s, &in)) return;
  if (!expect_end(r)) return;
  char err[160];
  IsaTarget target = isa_target(r->topo, r->dev->device);
  if (!isa_check(&in, &target, r->unit->kind, r->unit->port, err, sizeof err)) {
    diag_error(r->d, at, "%s", err);
    return;
  }
  VEC_PUSH(r->a, &r->unit->code, in);
}

// `.model TEXT` at the start of a line: one line of the model the programs
// compute (the rest of the line after ".model ", verbatim, ';' and all, and
// its "\r" before the newline: a model written with CRLF comes back byte for
// byte).
// False when the line is something else.
static bool model_line(AsmReader *r) {
  static const char keyword[] = ".model";
  int k = (int)sizeof keyword - 1;
  if (r->len < k || memcmp(r->text, keyword, (size_t)k) || (r->len > k && r->text[k] != ' ')) return false;
  int from = MIN(k + 1, r->len);
  buf_append(&r->model, r->text + from, (size_t)(r->len - from));
  buf_append(&r->model, r->crlf ? "\r\n" : "\n", r->crlf ? 2 : 1);
  r->has_model = true;
  return true;
}

static void read_line(AsmReader *r) {
  if (model_line(r)) return;
  const char *semi = memchr(r->text, ';', (size_t)r->len);
  if (semi) r->len = (int)(semi - r->text);
  r->pos = 0;
  if (at_end(r)) return;
  if (r->text[r->pos] == '.')
    directive(r);
  else
    instruction(r);
}

Program *fe_assemble(Arena *a, Diag *d, const SrcFile *src, const Topology *topo) {
  Program *p = ARENA_NEW(a, Program);
  p->ndevices = topo->ndevices;
  p->devices = ARENA_ARRAY(a, DeviceProgram, topo->ndevices);
  p->predicted_cycles = -1;
  p->batches = 1;
  for (int i = 0; i < topo->ndevices; i++) p->devices[i].device = i;
  AsmReader r = {.a = a, .d = d, .src = src, .topo = topo, .prog = p};
  r.device_line = xcalloc((size_t)topo->ndevices, sizeof(int));
  int errors = d->nerrors;
  const char *at = src->text, *end = src->text + src->len;
  for (r.line = 1;; r.line++) {
    const char *nl = memchr(at, '\n', (size_t)(end - at));
    r.text = at;
    r.len = (int)((nl ? nl : end) - at);
    r.crlf = r.len > 0 && r.text[r.len - 1] == '\r';
    if (r.crlf) r.len--;
    const char *nul = memchr(r.text, '\0', (size_t)r.len);
    if (nul)
      diag_error(d, here(&r, (int)(nul - r.text), 1), "unexpected byte 0x00");
    else
      read_line(&r);
    if (!nl) break;
    at = nl + 1;
  }
  check_batches(&r);
  if (r.has_model) {
    p->model_text = arena_strdup(a, r.model.data);
    p->model_len = r.model.len;
  }
  buf_free(&r.model);
  free(r.device_line);
  return d->nerrors == errors ? p : NULL;
}
