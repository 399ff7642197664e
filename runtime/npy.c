// npy.c: NumPy .npy files in and out: tensors the emulator is given
// (tsp-emu --input) and tensors it dumps after a run (--dump).
//
// The runtime layer (runtime/emu.h).  The format (numpy/lib/format.py,
// "NEP 1"):
//
//   offset 0   "\x93NUMPY"            magic, 6 bytes
//          6   major, minor           1.0 or 2.0 (3.0, a UTF-8 header, is refused)
//          8   header length          u16 LE (1.0) or u32 LE (2.0)
//   8+2 / 8+4  header                 a Python dict literal, ASCII, padded
//                                     with spaces and ended by '\n':
//                                     {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
//   then       data                   the elements, C order, nothing after
//
// Files are never trusted: every length is checked against what is
// actually there before it is used, memory grows only with bytes actually
// read, and every refusal says exactly what is wrong, prefixed "PATH: ".
// npy_parse reads the same from bytes in memory (through fmemopen, so that
// both run one reader), for tests and the fuzzer.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "emu.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_PREFIX_LEN 8    // magic, major, minor
#define NPY_V1_LEN_BYTES 2  // the header length field of format 1.0
#define NPY_V2_LEN_BYTES 4  // ... and of 2.0
#define NPY_V1_MAX_HEADER 0xffff
// Data starts at a multiple of this (numpy's ARRAY_ALIGN).
#define NPY_ALIGN 64
// numpy pads the header so the first axis can grow in place to this many
// digits (GROWTH_AXIS_MAX_DIGITS, numpy >= 1.24).
#define NPY_GROWTH_AXIS_MAX_DIGITS 21
// The longest header this reader accepts.  Ours are under 256 bytes and
// numpy's own reader refuses more than 10000 by default; the cap keeps a
// hostile length field from costing more than this much memory.
#define NPY_MAX_HEADER_BYTES 65536
// Data is read in pieces of at most this size, growing the buffer only as
// the bytes arrive, so a header claiming a huge array costs nothing.
#define NPY_READ_CHUNK ((size_t)1 << 20)
// Room for a shape printed as a Python tuple: IR_MAX_RANK dimensions of at
// most 20 characters each, ", " between them, "(", ",)" and the NUL.
#define NPY_SHAPE_STR_MAX (IR_MAX_RANK * 22 + 4)
// Bytes read at a time when counting what follows the data.
#define NPY_SKIP_CHUNK 4096
// How much of an unexpected header key a message quotes.
#define NPY_QUOTE_MAX 40

// The element types accepted: the spelling in a file, the one we write,
// bytes per element.  int8 has no byte order; numpy writes '|i1'.
typedef struct NpyDescr {
  const char *spelling;
  const char *canonical;
  int bytes;
} NpyDescr;

static const NpyDescr npy_descrs[] = {
    {"<f4", "<f4", 4}, {"<f2", "<f2", 2}, {"<i4", "<i4", 4}, {"|i1", "|i1", 1}, {"<i1", "|i1", 1},
};
#define NPY_DESCRS_ACCEPTED "<f4, <f2, <i4 and |i1"

static const NpyDescr *descr_lookup(const char *s, size_t len) {
  for (size_t i = 0; i < ARRAY_LEN(npy_descrs); i++)
    if (strlen(npy_descrs[i].spelling) == len && !memcmp(npy_descrs[i].spelling, s, len))
      return &npy_descrs[i];
  return NULL;
}

// Writes "PATH: message" into err and returns false, for `return fail(...)`.
static bool fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
    PRINTF_LIKE(4, 5);
static bool fail(char *err, size_t errlen, const char *path, const char *fmt, ...) {
  if (!err || !errlen) return false;
  int n = snprintf(err, errlen, "%s: ", path);
  if (n >= 0 && (size_t)n < errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return false;
}

void npy_format_shape(char *dst, size_t n, const Shape *s) {
  size_t len = (size_t)snprintf(dst, n, "(");
  for (int i = 0; i < s->rank && len < n; i++)
    len += (size_t)snprintf(dst + len, n - len, "%s%lld", i ? ", " : "", (long long)s->dim[i]);
  if (len < n) snprintf(dst + len, n - len, s->rank == 1 ? ",)" : ")");
}

// Bytes of a shape of elements of elem_bytes, or -1 when a dimension is
// below 1 or the total passes IR_MAX_TENSOR_BYTES (so it never overflows).
static int64_t shape_bytes(const Shape *s, int elem_bytes) {
  int64_t bytes = elem_bytes;
  for (int i = 0; i < s->rank; i++) {
    if (s->dim[i] < 1 || s->dim[i] > IR_MAX_TENSOR_BYTES / bytes) return -1;
    bytes *= s->dim[i];
  }
  return bytes;
}

// The shape rules reading and writing share: rank 1..IR_MAX_RANK, every
// dimension at least 1, the total within IR_MAX_TENSOR_BYTES.
static bool check_shape(const Shape *s, const NpyDescr *d, const char *path, char *err,
                        size_t errlen) {
  if (s->rank == 0) return fail(err, errlen, path, "0-d arrays (shape ()) are not supported");
  if (s->rank < 0 || s->rank > IR_MAX_RANK)
    return fail(err, errlen, path, "shape has %d dimensions; at most %d are supported", s->rank,
                IR_MAX_RANK);
  char shape[NPY_SHAPE_STR_MAX];
  npy_format_shape(shape, sizeof shape, s);
  for (int i = 0; i < s->rank; i++)
    if (s->dim[i] < 1)
      return fail(err, errlen, path,
                  "shape %s has a dimension below 1; empty arrays are not supported", shape);
  if (shape_bytes(s, d->bytes) < 0 || (uint64_t)shape_bytes(s, d->bytes) > SIZE_MAX)
    return fail(err, errlen, path, "shape %s of %s is larger than the %lld bytes a tensor may have",
                shape, d->canonical, (long long)IR_MAX_TENSOR_BYTES);
  return true;
}

// ===== reading ==================================================================

typedef struct Reader {
  FILE *f;
  const char *path;
  char *err;
  size_t errlen;
} Reader;

#define READ_FAIL(r, ...) fail((r)->err, (r)->errlen, (r)->path, __VA_ARGS__)

// A short read is either the end of the file or an I/O error: says which.
static bool short_read(Reader *r, const char *what) {
  if (ferror(r->f)) return READ_FAIL(r, "read failed: %s", strerror(errno));
  return READ_FAIL(r, "%s", what);
}

static uint32_t load_le(const uint8_t *p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

// Reads the magic, the version and the header into a malloc'd buffer
// (NUL-terminated for the reader's convenience; the parser uses *len).
static bool read_header(Reader *r, char **header, size_t *len) {
  uint8_t prefix[NPY_PREFIX_LEN];
  size_t got = fread(prefix, 1, sizeof prefix, r->f);
  if (got < NPY_MAGIC_LEN || memcmp(prefix, NPY_MAGIC, NPY_MAGIC_LEN))
    return ferror(r->f) ? short_read(r, "") : READ_FAIL(r, "not a .npy file (bad magic)");
  if (got < NPY_PREFIX_LEN) return short_read(r, "truncated header (the file ends in the version)");
  int major = prefix[NPY_MAGIC_LEN], minor = prefix[NPY_MAGIC_LEN + 1];
  if ((major != 1 && major != 2) || minor != 0)
    return READ_FAIL(r, "unsupported .npy format version %d.%d (this reader takes 1.0 and 2.0)",
                     major, minor);
  int len_bytes = major == 1 ? NPY_V1_LEN_BYTES : NPY_V2_LEN_BYTES;
  uint8_t len_field[NPY_V2_LEN_BYTES];
  if (fread(len_field, 1, (size_t)len_bytes, r->f) < (size_t)len_bytes)
    return short_read(r, "truncated header (the file ends in the header length)");
  uint32_t hlen = load_le(len_field, len_bytes);
  if (hlen > NPY_MAX_HEADER_BYTES)
    return READ_FAIL(r, "header of %lu bytes is longer than the %d this reader accepts",
                     (unsigned long)hlen, NPY_MAX_HEADER_BYTES);
  *header = xmalloc(hlen + 1);
  got = fread(*header, 1, hlen, r->f);
  (*header)[got] = '\0';
  *len = got;
  if (got < hlen) {
    if (ferror(r->f)) return short_read(r, "");
    return READ_FAIL(r, "truncated header (says %lu bytes, file has %zu)", (unsigned long)hlen,
                     got);
  }
  return true;
}

// ---- the header dict ---------------------------------------------------------
//
//   header = ws "{" [ entry ("," entry)* [","] ] ws "}" ws
//   entry  = ws string ws ":" ws value ws
//   value  = string | "True" | "False" | tuple
//   tuple  = "(" ws [ int ws ("," ws int ws)* [","] ws ] ")"
//   string = "'" chars "'" | '"' chars '"'     (no escapes, no newlines)
//
// which is what every numpy version writes; the three keys are required,
// once each, in any order, and nothing else is allowed.

typedef struct HeaderParser {
  Reader *r;
  const char *start, *p, *end;
  bool have_descr, have_fortran, have_shape;
  const NpyDescr *descr;
  bool fortran_order;
  Shape shape;
} HeaderParser;

static bool syntax_error(HeaderParser *hp, const char *expected) {
  return READ_FAIL(hp->r, "bad header: expected %s at byte %td of the header", expected,
                   hp->p - hp->start);
}

static void skip_space(HeaderParser *hp) {
  while (hp->p < hp->end && (*hp->p == ' ' || *hp->p == '\t' || *hp->p == '\n' || *hp->p == '\r'))
    hp->p++;
}

static bool accept_char(HeaderParser *hp, char c) {
  skip_space(hp);
  if (hp->p < hp->end && *hp->p == c) {
    hp->p++;
    return true;
  }
  return false;
}

static bool accept_word(HeaderParser *hp, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(hp->end - hp->p) < n || memcmp(hp->p, word, n)) return false;
  hp->p += n;
  return true;
}

// A quoted string: sets *s and *len to its contents inside the header.
static bool parse_string(HeaderParser *hp, const char **s, size_t *len) {
  skip_space(hp);
  if (hp->p >= hp->end || (*hp->p != '\'' && *hp->p != '"')) return syntax_error(hp, "a string");
  char quote = *hp->p++;
  *s = hp->p;
  while (hp->p < hp->end && *hp->p != quote) {
    if (*hp->p == '\\' || *hp->p == '\n') return syntax_error(hp, "a plain string (no escapes)");
    hp->p++;
  }
  if (hp->p >= hp->end) return syntax_error(hp, "the closing quote");
  *len = (size_t)(hp->p - *s);
  hp->p++;
  return true;
}

static bool parse_descr(HeaderParser *hp) {
  const char *s;
  size_t len;
  if (!parse_string(hp, &s, &len)) return false;
  hp->descr = descr_lookup(s, len);
  if (!hp->descr)
    return READ_FAIL(hp->r, "unsupported descr '%.*s' (this reader takes " NPY_DESCRS_ACCEPTED ")",
                     (int)MIN(len, NPY_QUOTE_MAX), s);
  return true;
}

static bool parse_fortran_order(HeaderParser *hp) {
  skip_space(hp);
  if (accept_word(hp, "False"))
    hp->fortran_order = false;
  else if (accept_word(hp, "True"))
    hp->fortran_order = true;
  else
    return syntax_error(hp, "True or False");
  if (hp->fortran_order)
    return READ_FAIL(hp->r, "fortran_order True is not supported (only C-order arrays are)");
  return true;
}

// One non-negative decimal dimension, at most IR_MAX_TENSOR_BYTES.
static bool parse_dim(HeaderParser *hp, int64_t *out) {
  skip_space(hp);
  if (hp->p >= hp->end || *hp->p < '0' || *hp->p > '9') return syntax_error(hp, "a dimension");
  int64_t v = 0;
  while (hp->p < hp->end && *hp->p >= '0' && *hp->p <= '9') {
    v = v * 10 + (*hp->p++ - '0');
    if (v > IR_MAX_TENSOR_BYTES)
      return READ_FAIL(hp->r, "shape has a dimension larger than %lld",
                       (long long)IR_MAX_TENSOR_BYTES);
  }
  *out = v;
  return true;
}

static bool parse_shape(HeaderParser *hp) {
  if (!accept_char(hp, '(')) return syntax_error(hp, "a shape tuple '('");
  hp->shape.rank = 0;
  bool trailing_comma = false;
  while (!accept_char(hp, ')')) {
    int64_t dim = 0;
    if (!parse_dim(hp, &dim)) return false;
    if (hp->shape.rank == IR_MAX_RANK)
      return READ_FAIL(hp->r, "shape has more than %d dimensions; at most %d are supported",
                       IR_MAX_RANK, IR_MAX_RANK);
    hp->shape.dim[hp->shape.rank++] = dim;
    trailing_comma = accept_char(hp, ',');
    if (!trailing_comma && !accept_char(hp, ')'))
      return syntax_error(hp, "',' or ')' in the shape");
    if (!trailing_comma) break;
  }
  // Python needs "(5,)" for a 1-tuple: "(5)" is a plain integer.
  if (hp->shape.rank == 1 && !trailing_comma)
    return READ_FAIL(hp->r, "bad header: shape (%lld) is not a tuple (numpy writes (%lld,))",
                     (long long)hp->shape.dim[0], (long long)hp->shape.dim[0]);
  return true;
}

// One "key: value" pair, checked against the three keys numpy writes.
static bool parse_entry(HeaderParser *hp) {
  const char *key;
  size_t len;
  if (!parse_string(hp, &key, &len)) return false;
  if (!accept_char(hp, ':')) return syntax_error(hp, "':'");
  struct {
    const char *name;
    bool *seen;
    bool (*parse)(HeaderParser *);
  } keys[] = {
      {"descr", &hp->have_descr, parse_descr},
      {"fortran_order", &hp->have_fortran, parse_fortran_order},
      {"shape", &hp->have_shape, parse_shape},
  };
  for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
    if (strlen(keys[i].name) != len || memcmp(keys[i].name, key, len)) continue;
    if (*keys[i].seen) return READ_FAIL(hp->r, "bad header: key '%s' appears twice", keys[i].name);
    *keys[i].seen = true;
    return keys[i].parse(hp);
  }
  return READ_FAIL(hp->r,
                   "bad header: unexpected key '%.*s' (a .npy header has 'descr', "
                   "'fortran_order' and 'shape')",
                   (int)MIN(len, NPY_QUOTE_MAX), key);
}

static bool parse_dict(HeaderParser *hp) {
  if (!accept_char(hp, '{')) return syntax_error(hp, "'{'");
  while (!accept_char(hp, '}')) {
    if (!parse_entry(hp)) return false;
    if (accept_char(hp, ',')) continue;
    if (!accept_char(hp, '}')) return syntax_error(hp, "',' or '}'");
    break;
  }
  skip_space(hp);
  if (hp->p != hp->end) return syntax_error(hp, "the end of the header after '}'");
  const char *missing = !hp->have_descr     ? "descr"
                        : !hp->have_fortran ? "fortran_order"
                        : !hp->have_shape   ? "shape"
                                            : NULL;
  if (missing) return READ_FAIL(hp->r, "bad header: no '%s' key", missing);
  return true;
}

// ---- the data -----------------------------------------------------------------

// Reads exactly `bytes` of data and checks nothing follows.
static bool read_data(Reader *r, const NpyDescr *d, const Shape *s, size_t bytes, NpyArray *out) {
  size_t cap = MIN(bytes, NPY_READ_CHUNK), got = 0;
  out->data = xmalloc(cap);
  for (;;) {
    if (got == cap) {
      if (cap == bytes) break;
      cap = MIN(bytes, cap * 2);
      out->data = xrealloc(out->data, cap);
    }
    size_t n = fread((uint8_t *)out->data + got, 1, cap - got, r->f);
    got += n;
    if (n == 0) break;
  }
  uint8_t scratch[NPY_SKIP_CHUNK];
  size_t extra = 0, n;
  if (got == bytes)
    while ((n = fread(scratch, 1, sizeof scratch, r->f)) > 0) extra += n;
  if (ferror(r->f)) return short_read(r, "");
  if (got < bytes || extra) {
    char shape[NPY_SHAPE_STR_MAX];
    npy_format_shape(shape, sizeof shape, s);
    return READ_FAIL(r, "header says shape %s of %s = %zu bytes, file has %zu", shape, d->canonical,
                     bytes, got + extra);
  }
  out->bytes = bytes;
  return true;
}

// Reads one array from f (a file or a buffer); NAME prefixes the messages.
static bool read_npy(FILE *f, const char *name, NpyArray *out, char *err, size_t errlen) {
  Reader r = {f, name, err, errlen};
  char *header = NULL;
  size_t hlen = 0;
  HeaderParser hp = {.r = &r};
  bool ok = read_header(&r, &header, &hlen);
  if (ok) {
    hp.start = hp.p = header;
    hp.end = header + hlen;
    ok = parse_dict(&hp) && check_shape(&hp.shape, hp.descr, name, err, errlen);
  }
  if (ok) {
    ok = read_data(&r, hp.descr, &hp.shape, (size_t)shape_bytes(&hp.shape, hp.descr->bytes), out);
    snprintf(out->descr, sizeof out->descr, "%s", hp.descr->canonical);
    out->shape = hp.shape;
  }
  free(header);
  if (!ok) npy_free(out);
  return ok;
}

bool npy_read(const char *path, NpyArray *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  struct stat st;  // a FIFO or device would block or never end: refused before opening
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return fail(err, errlen, path, "cannot open: not a regular file (a device, FIFO, socket or directory is not read)");
  FILE *f = fopen(path, "rb");
  if (!f) return fail(err, errlen, path, "cannot open: %s", strerror(errno));
  bool ok = read_npy(f, path, out, err, errlen);
  fclose(f);  // read-only: nothing to lose
  return ok;
}

bool npy_parse(const char *name, const void *data, size_t n, NpyArray *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  // fmemopen writes nothing to a buffer opened for reading: the cast only
  // meets its prototype.  No bytes still need a buffer (not NULL).
  static const char empty[1];
  FILE *f = fmemopen((void *)(n ? data : empty), n, "rb");
  if (!f) return fail(err, errlen, name, "cannot read from memory: %s", strerror(errno));
  bool ok = read_npy(f, name, out, err, errlen);
  fclose(f);
  return ok;
}

void npy_free(NpyArray *a) {
  free(a->data);
  memset(a, 0, sizeof *a);
}

// ===== writing ==================================================================

// The header exactly as numpy (>= 1.24) writes it for a C-order array:
// the dict with sorted keys and a trailing ", ", spaces so the first axis
// can grow to NPY_GROWTH_AXIS_MAX_DIGITS digits, then spaces and '\n' so
// the data starts at a multiple of NPY_ALIGN; numpy pads a whole NPY_ALIGN
// when the header would already end on one.
static void build_header(Buf *h, const NpyDescr *d, const Shape *s) {
  char shape[NPY_SHAPE_STR_MAX], first[NPY_SHAPE_STR_MAX];
  npy_format_shape(shape, sizeof shape, s);
  buf_printf(h, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", d->canonical, shape);
  int growth =
      NPY_GROWTH_AXIS_MAX_DIGITS - snprintf(first, sizeof first, "%lld", (long long)s->dim[0]);
  for (int i = 0; i < growth; i++) buf_append(h, " ", 1);
  size_t with_newline = NPY_PREFIX_LEN + NPY_V1_LEN_BYTES + h->len + 1;
  size_t pad = NPY_ALIGN - with_newline % NPY_ALIGN;
  for (size_t i = 0; i < pad; i++) buf_append(h, " ", 1);
  buf_append(h, "\n", 1);
}

bool npy_write(const char *path, const char *descr, const Shape *shape, const void *data, char *err,
               size_t errlen) {
  const NpyDescr *d = descr_lookup(descr, strlen(descr));
  if (!d)
    return fail(err, errlen, path,
                "unsupported descr '%.*s' (this writer takes " NPY_DESCRS_ACCEPTED ")",
                NPY_QUOTE_MAX, descr);
  if (!check_shape(shape, d, path, err, errlen)) return false;
  size_t bytes = (size_t)shape_bytes(shape, d->bytes);
  Buf h = {0};
  build_header(&h, d, shape);
  if (h.len > NPY_V1_MAX_HEADER) die("npy: a %zu-byte header does not fit format 1.0", h.len);
  uint8_t prefix[NPY_PREFIX_LEN + NPY_V1_LEN_BYTES] = {0};
  memcpy(prefix, NPY_MAGIC, NPY_MAGIC_LEN);
  prefix[NPY_MAGIC_LEN] = 1;  // version 1.0
  prefix[NPY_PREFIX_LEN] = (uint8_t)h.len;
  prefix[NPY_PREFIX_LEN + 1] = (uint8_t)(h.len >> 8);
  FILE *f = fopen(path, "wb");
  if (!f) {
    buf_free(&h);
    return fail(err, errlen, path, "cannot create: %s", strerror(errno));
  }
  bool ok = fwrite(prefix, 1, sizeof prefix, f) == sizeof prefix &&
            fwrite(h.data, 1, h.len, f) == h.len && fwrite(data, 1, bytes, f) == bytes;
  ok = !ferror(f) && ok;
  int saved = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  buf_free(&h);
  // A failed write may leave a partial file behind (its path may not even
  // be a regular file, so it is not removed); its length cannot match its
  // header, so no reader takes it for an array.
  return ok || fail(err, errlen, path, "cannot write: %s", strerror(saved));
}
