// test_npy_trace.c: unit tests of runtime/npy.c and runtime/trace.c.
//
// npy: every accepted descr round-trips at ranks 1 and 3; the header is
// byte for byte what numpy writes; hand-built files, each wrong in one
// way, are refused with the exact message.  trace: the exact JSON text of
// small traces (no events, one of each kind, many), string escaping, and
// a failed write reported by trace_close.  When python3 is installed the
// traces are also parsed by its json module; nothing needs numpy.
#define _DEFAULT_SOURCE
#include "harness.h"

#include <math.h>
#include <unistd.h>

#include "../../runtime/emu.h"

#define PATH_MAX_TEST 512
#define ERR_MAX (2 * PATH_MAX_TEST)

// One scratch directory for the whole run, removed by the group teardown.
static char *scratch;

static int make_scratch(void **state) {
  (void)state;
  scratch = xstrdup("/tmp/tspc-unit-XXXXXX");
  return mkdtemp(scratch) ? 0 : -1;
}

static int remove_scratch(void **state) {
  (void)state;
  char cmd[PATH_MAX_TEST];
  snprintf(cmd, sizeof cmd, "rm -rf %s", scratch);
  int rc = system(cmd);
  free(scratch);
  return rc;
}

// A path in the scratch directory, in a static buffer (one at a time).
static const char *scratch_path(const char *name) {
  static char path[PATH_MAX_TEST];
  snprintf(path, sizeof path, "%s/%s", scratch, name);
  return path;
}

static void write_bytes(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

// The whole of a file, NUL-terminated, malloc'd; *len its length.
static char *read_bytes(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  Buf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&b, chunk, n);
  fclose(f);
  buf_append(&b, "", 0);  // a NUL even for an empty file
  *len = b.len;
  return b.data;
}

// True when python3 exists; the JSON checks below are skipped without it.
static bool have_python3(void) { return system("command -v python3 >/dev/null 2>&1") == 0; }

// ===== npy ======================================================================

static Shape shape_of(int rank, const int64_t *dims) {
  Shape s = {.rank = rank};
  for (int i = 0; i < rank; i++) s.dim[i] = dims[i];
  return s;
}

static void npy_round_trips_every_descr_at_ranks_1_and_3(void **state) {
  (void)state;
  const struct {
    const char *descr;
    int bytes;
  } descrs[] = {{"<f4", 4}, {"<f2", 2}, {"<i4", 4}, {"|i1", 1}};
  const Shape shapes[] = {shape_of(1, (int64_t[]){7}), shape_of(3, (int64_t[]){2, 3, 5})};
  char err[ERR_MAX];
  for (size_t d = 0; d < ARRAY_LEN(descrs); d++)
    for (size_t s = 0; s < ARRAY_LEN(shapes); s++) {
      size_t bytes = (size_t)ir_shape_elems(&shapes[s]) * (size_t)descrs[d].bytes;
      uint8_t *data = xmalloc(bytes);
      for (size_t i = 0; i < bytes; i++) data[i] = (uint8_t)(i * 37 + 11);
      const char *path = scratch_path("rt.npy");
      if (!npy_write(path, descrs[d].descr, &shapes[s], data, err, sizeof err)) fail_msg("%s", err);
      NpyArray a;
      if (!npy_read(path, &a, err, sizeof err)) fail_msg("%s", err);
      assert_string_equal(a.descr, descrs[d].descr);
      assert_true(ir_shape_equal(&a.shape, &shapes[s]));
      assert_int_equal(a.bytes, bytes);
      assert_memory_equal(a.data, data, bytes);
      npy_free(&a);
      assert_null(a.data);
      free(data);
    }
}

// numpy.save(np.zeros((3, 4), np.float32)) writes this 128-byte preamble:
// the dict, 20 spaces of room for the first axis to grow to 21 digits,
// then spaces and '\n' to the next multiple of 64.  The length field is
// 118 = 0x76.
static void npy_header_is_what_numpy_writes(void **state) {
  (void)state;
  char err[ERR_MAX], want[129];
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  snprintf(want, sizeof want, "\x93NUMPY\x01%c\x76%c%-117s\n", 0, 0, dict);
  float zeros[12] = {0};
  const char *path = scratch_path("h.npy");
  Shape s = shape_of(2, (int64_t[]){3, 4});
  assert_true(npy_write(path, "<f4", &s, zeros, err, sizeof err));
  size_t len;
  char *text = read_bytes(path, &len);
  assert_int_equal(len, 128 + sizeof zeros);
  assert_memory_equal(text, want, 128);
  free(text);
  // A 1-element shape is the Python 1-tuple "(5,)"; int8 is written '|i1'
  // even when asked for as '<i1'.
  int8_t five[5] = {1, -2, 3, -4, 5};
  s = shape_of(1, (int64_t[]){5});
  assert_true(npy_write(path, "<i1", &s, five, err, sizeof err));
  text = read_bytes(path, &len);
  assert_int_equal(len, 128 + sizeof five);
  assert_memory_equal(text + 10, "{'descr': '|i1', 'fortran_order': False, 'shape': (5,), }",
                      strlen("{'descr': '|i1', 'fortran_order': False, 'shape': (5,), }"));
  assert_int_equal(text[127], '\n');
  assert_memory_equal(text + 128, five, sizeof five);
  free(text);
}

// A file of the given version whose header is `header` (length field set
// to its length) followed by `ndata` bytes 0, 1, 2, ...
static const char *make_npy(const char *name, int major, const char *header, size_t ndata) {
  Buf b = {0};
  size_t hlen = strlen(header);
  buf_append(&b, "\x93NUMPY", 6);
  uint8_t version[2] = {(uint8_t)major, 0};
  buf_append(&b, version, 2);
  uint8_t len[4] = {(uint8_t)hlen, (uint8_t)(hlen >> 8), (uint8_t)(hlen >> 16), 0};
  buf_append(&b, len, major == 1 ? 2 : 4);
  buf_append(&b, header, hlen);
  for (size_t i = 0; i < ndata; i++) buf_append(&b, &(uint8_t){(uint8_t)i}, 1);
  const char *path = scratch_path(name);
  write_bytes(path, b.data, b.len);
  buf_free(&b);
  return path;
}

// npy_read must refuse path with exactly "PATH: " + want, leaving out empty.
static void refused(const char *path, const char *want) {
  char err[ERR_MAX], full[ERR_MAX];
  NpyArray a;
  memset(&a, 0xab, sizeof a);
  assert_false(npy_read(path, &a, err, sizeof err));
  snprintf(full, sizeof full, "%s: %s", path, want);
  assert_string_equal(err, full);
  assert_null(a.data);
  assert_int_equal(a.bytes, 0);
}

#define F4_3X4 "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }\n"

static void npy_refuses_bad_magic_version_and_truncation(void **state) {
  (void)state;
  const char *p = scratch_path("gif.npy");
  write_bytes(p, "GIF89a\x01\x00\x00\x00", 10);
  refused(p, "not a .npy file (bad magic)");
  write_bytes(p, "", 0);
  refused(p, "not a .npy file (bad magic)");
  write_bytes(p, "\x93NUMPY", 6);
  refused(p, "truncated header (the file ends in the version)");
  write_bytes(p, "\x93NUMPY\x03\x00\x10\x00\x00\x00", 10);
  refused(p, "unsupported .npy format version 3.0 (this reader takes 1.0 and 2.0)");
  write_bytes(p, "\x93NUMPY\x01\x00\x76", 9);
  refused(p, "truncated header (the file ends in the header length)");
  write_bytes(p, "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran", 35);
  refused(p, "truncated header (says 118 bytes, file has 25)");
  write_bytes(p, "\x93NUMPY\x02\x00\x01\x00\x00\x10", 12);  // 2.0: 0x10000001 bytes
  refused(p, "header of 268435457 bytes is longer than the 65536 this reader accepts");
  refused(make_npy("short.npy", 1, F4_3X4, 40),
          "header says shape (3, 4) of <f4 = 48 bytes, file has 40");
  refused(make_npy("long.npy", 1, F4_3X4, 56),
          "header says shape (3, 4) of <f4 = 48 bytes, file has 56");
  refused(make_npy("none.npy", 1, F4_3X4, 0),
          "header says shape (3, 4) of <f4 = 48 bytes, file has 0");
  // A header may claim a huge array: memory grows only with what arrives.
  refused(make_npy("huge.npy", 1,
                   "{'descr': '|i1', 'fortran_order': False, 'shape': (1048576, 1048576, 128), }\n",
                   12),
          "header says shape (1048576, 1048576, 128) of |i1 = 140737488355328 bytes, file has 12");
  char dir[PATH_MAX_TEST];
  snprintf(dir, sizeof dir, "%s", scratch);
  refused(dir, "cannot open: not a regular file (a device, FIFO, socket or directory is not read)");
  char missing[PATH_MAX_TEST];
  snprintf(missing, sizeof missing, "%s", scratch_path("missing.npy"));
  refused(missing, "cannot open: No such file or directory");
}

static void npy_refuses_headers_it_cannot_take(void **state) {
  (void)state;
  const struct {
    const char *header;
    const char *want;
  } cases[] = {
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }\n",
       "fortran_order True is not supported (only C-order arrays are)"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (3, 4), }\n",
       "unsupported descr '>f4' (this reader takes <f4, <f2, <i4 and |i1)"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }\n",
       "unsupported descr '<f8' (this reader takes <f4, <f2, <i4 and |i1)"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (3, 4), }\n",
       "unsupported descr '|u1' (this reader takes <f4, <f2, <i4 and |i1)"},
      {"{'descr': '<f4', 'fortran_order': False, }\n", "bad header: no 'shape' key"},
      {"{'fortran_order': False, 'shape': (3,), }\n", "bad header: no 'descr' key"},
      {"{'descr': '<f4', 'shape': (3,), }\n", "bad header: no 'fortran_order' key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'shape': (3,), }\n",
       "bad header: key 'shape' appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'strides': (4,), }\n",
       "bad header: unexpected key 'strides' (a .npy header has 'descr', 'fortran_order' and "
       "'shape')"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n",
       "0-d arrays (shape ()) are not supported"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3), }\n",
       "bad header: shape (3) is not a tuple (numpy writes (3,))"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }\n",
       "shape has more than 8 dimensions; at most 8 are supported"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 0), }\n",
       "shape (3, 0) has a dimension below 1; empty arrays are not supported"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576, 1048576), }\n",
       "shape (1048576, 1048576, 1048576) of <f4 is larger than the 1125899906842624 bytes a "
       "tensor may have"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n",
       "shape has a dimension larger than 1125899906842624"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }\n",
       "bad header: expected a dimension at byte 51 of the header"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (3,), }\n",
       "bad header: expected ':' at byte 9 of the header"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (3,), }\n",
       "unsupported descr '<f4, ' (this reader takes <f4, <f2, <i4 and |i1)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } x\n",
       "bad header: expected the end of the header after '}' at byte 58 of the header"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,), }\n",
       "bad header: expected True or False at byte 34 of the header"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (3,), }\n",
       "bad header: expected ',' or '}' at byte 16 of the header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), ",
       "bad header: expected a string at byte 56 of the header"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }\n",
       "bad header: expected a string at byte 10 of the header"},
      {"{'descr': 'a\\'b', 'fortran_order': False, 'shape': (3,), }\n",
       "bad header: expected a plain string (no escapes) at byte 12 of the header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }\n",
       "bad header: expected ',' or ')' in the shape at byte 53 of the header"},
      {"", "bad header: expected '{' at byte 0 of the header"},
  };
  for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
    const char *p = make_npy("bad.npy", 1, cases[c].header, 12);
    refused(p, cases[c].want);
  }
  // A NUL inside the header is no end of it.
  static const char nul[] =
      "\x93NUMPY\x01\x00\x3c\x00"
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n\0\n"
      "0123456789ab";
  const char *p = scratch_path("nul.npy");
  write_bytes(p, nul, sizeof nul - 1);
  refused(p, "bad header: expected the end of the header after '}' at byte 58 of the header");
}

// Headers numpy would read (its reader evaluates the dict as Python) are
// read here too: version 2.0, double quotes, any key order, no trailing
// comma, no final newline, '<i1'.
static void npy_reads_any_header_numpy_would(void **state) {
  (void)state;
  const struct {
    int major;
    const char *header;
    const char *descr;
    int rank;
    int64_t dim0;
    size_t bytes;
  } cases[] = {
      {2, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n", "<i4", 1, 2, 8},
      {1, "{\"shape\": (2, 3), \"descr\": \"<f2\", \"fortran_order\": False}", "<f2", 2, 2, 12},
      {1, "  {'descr':'<i1','fortran_order':False,'shape':( 4 , )}  \n", "|i1", 1, 4, 4},
      {1, "{'descr': '|i1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 3), }\n", "|i1",
       8, 1, 3},
  };
  char err[ERR_MAX];
  for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
    const char *p = make_npy("ok.npy", cases[c].major, cases[c].header, cases[c].bytes);
    NpyArray a;
    if (!npy_read(p, &a, err, sizeof err)) fail_msg("case %zu: %s", c, err);
    assert_string_equal(a.descr, cases[c].descr);
    assert_int_equal(a.shape.rank, cases[c].rank);
    assert_int_equal(a.shape.dim[0], cases[c].dim0);
    assert_int_equal(a.bytes, cases[c].bytes);
    for (size_t i = 0; i < a.bytes; i++) assert_int_equal(((uint8_t *)a.data)[i], i);
    npy_free(&a);
  }
}

// npy_parse reads bytes in memory as npy_read reads them from a file, and
// refuses them with the same messages, prefixed with the name it is given.
static void npy_parse_reads_memory_as_npy_read_reads_files(void **state) {
  (void)state;
  const Shape s = shape_of(2, (int64_t[]){3, 4});
  int32_t data[12];
  for (int i = 0; i < 12; i++) data[i] = i * 1000 - 5;
  char err[ERR_MAX];
  const char *path = scratch_path("mem.npy");
  if (!npy_write(path, "<i4", &s, data, err, sizeof err)) fail_msg("%s", err);
  size_t len;
  char *bytes = read_bytes(path, &len);
  NpyArray a;
  if (!npy_parse("mem", bytes, len, &a, err, sizeof err)) fail_msg("%s", err);
  assert_string_equal(a.descr, "<i4");
  assert_true(ir_shape_equal(&a.shape, &s));
  assert_int_equal(a.bytes, sizeof data);
  assert_memory_equal(a.data, data, sizeof data);
  npy_free(&a);
  assert_false(npy_parse("mem", bytes, len - 4, &a, err, sizeof err));
  assert_string_equal(err, "mem: header says shape (3, 4) of <i4 = 48 bytes, file has 44");
  assert_null(a.data);
  assert_false(npy_parse("mem", NULL, 0, &a, err, sizeof err));
  assert_string_equal(err, "mem: not a .npy file (bad magic)");
  free(bytes);
}

static void npy_write_refuses_what_it_cannot_write(void **state) {
  (void)state;
  char err[ERR_MAX], want[ERR_MAX];
  uint8_t data[16] = {0};
  const char *p = scratch_path("w.npy");
  Shape s = shape_of(1, (int64_t[]){4});
  assert_false(npy_write(p, "<f8", &s, data, err, sizeof err));
  snprintf(want, sizeof want,
           "%s: unsupported descr '<f8' (this writer takes <f4, <f2, <i4 and |i1)", p);
  assert_string_equal(err, want);
  Shape zero = shape_of(2, (int64_t[]){4, 0});
  assert_false(npy_write(p, "<f4", &zero, data, err, sizeof err));
  snprintf(want, sizeof want,
           "%s: shape (4, 0) has a dimension below 1; empty arrays are not supported", p);
  assert_string_equal(err, want);
  Shape scalar = {.rank = 0};
  assert_false(npy_write(p, "<f4", &scalar, data, err, sizeof err));
  assert_non_null(strstr(err, "0-d arrays"));
  char nodir[PATH_MAX_TEST];
  snprintf(nodir, sizeof nodir, "%s/no/such/dir.npy", scratch);
  assert_false(npy_write(nodir, "<f4", &s, data, err, sizeof err));
  snprintf(want, sizeof want, "%s: cannot create: No such file or directory", nodir);
  assert_string_equal(err, want);
  if (access("/dev/full", W_OK) == 0) {
    assert_false(npy_write("/dev/full", "<f4", &s, data, err, sizeof err));
    assert_string_equal(err, "/dev/full: cannot write: No space left on device");
  }
}

// ===== trace ======================================================================

// Checks with python3's json module that path parses, when python3 exists.
static void assert_valid_json(const char *path) {
  if (!have_python3()) return;
  char cmd[PATH_MAX_TEST * 2];
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import json,sys; json.load(open(sys.argv[1], encoding='utf-8'))\" %s",
           path);
  if (system(cmd) != 0) fail_msg("%s is not valid JSON", path);
}

static void assert_file_text(const char *path, const char *want) {
  size_t len;
  char *text = read_bytes(path, &len);
  assert_string_equal(text, want);
  free(text);
}

static void trace_without_events_is_valid_json(void **state) {
  (void)state;
  char err[ERR_MAX];
  const char *p = scratch_path("empty.json");
  Trace *t = trace_open(p, 900, err, sizeof err);
  assert_non_null(t);
  assert_true(trace_close(t));
  assert_file_text(p, "{\"traceEvents\": [\n], \"displayTimeUnit\": \"ns\"}\n");
  assert_valid_json(p);
}

// At 1000 MHz a cycle is 0.001 us; at 900 MHz, 9 cycles are 0.01 us and
// one cycle 0.001111 (rounded by %.6f).
static void trace_writes_each_kind_of_event(void **state) {
  (void)state;
  char err[ERR_MAX];
  const char *p = scratch_path("small.json");
  Trace *t = trace_open(p, 1000, err, sizeof err);
  assert_non_null(t);
  trace_name_process(t, 0, "dev0");
  trace_name_thread(t, 0, 1, "vxm");
  trace_slice(t, 0, 1, "VADD", 5, 4);
  trace_flow(t, 7, 0, 2, 10, 1, 3, 25);
  assert_true(trace_close(t));
  assert_file_text(
      p,
      "{\"traceEvents\": [\n"
      "  {\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"dev0\"}},\n"
      "  {\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":1,\"args\":{\"name\":\"vxm\"}},\n"
      "  {\"name\":\"VADD\",\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":0.005000,\"dur\":0.004000},\n"
      "  {\"name\":\"vector\",\"cat\":\"link\",\"ph\":\"s\",\"id\":7,\"pid\":0,\"tid\":2,"
      "\"ts\":0.010000},\n"
      "  {\"name\":\"vector\",\"cat\":\"link\",\"ph\":\"f\",\"bp\":\"e\",\"id\":7,\"pid\":1,"
      "\"tid\":3,\"ts\":0.025000}\n"
      "], \"displayTimeUnit\": \"ns\"}\n");
  assert_valid_json(p);

  t = trace_open(p, 900, err, sizeof err);
  assert_non_null(t);
  trace_slice(t, 3, 4, "MXM", 9, 1);
  trace_flow(t, UINT64_C(18446744073709551615), 0, 0, 0, 0, 0, 0);
  assert_true(trace_close(t));
  assert_file_text(
      p,
      "{\"traceEvents\": [\n"
      "  {\"name\":\"MXM\",\"ph\":\"X\",\"pid\":3,\"tid\":4,\"ts\":0.010000,\"dur\":0.001111},\n"
      "  {\"name\":\"vector\",\"cat\":\"link\",\"ph\":\"s\",\"id\":18446744073709551615,"
      "\"pid\":0,\"tid\":0,\"ts\":0.000000},\n"
      "  {\"name\":\"vector\",\"cat\":\"link\",\"ph\":\"f\",\"bp\":\"e\","
      "\"id\":18446744073709551615,\"pid\":0,\"tid\":0,\"ts\":0.000000}\n"
      "], \"displayTimeUnit\": \"ns\"}\n");
  assert_valid_json(p);
}

// Quotes, backslashes and control characters are escaped; UTF-8 passes
// through; bytes that are not UTF-8 (a lone 0xff, a cut sequence, an
// encoded surrogate, an overlong '/') become U+FFFD one byte at a time.
static void trace_escapes_strings(void **state) {
  (void)state;
  char err[ERR_MAX];
  const char *p = scratch_path("esc.json");
  Trace *t = trace_open(p, 1000, err, sizeof err);
  assert_non_null(t);
  trace_name_process(t, 1, "a\"b\\c\nd\te\x01\x1f\b\f\r \x7f");
  trace_name_thread(t, 1, 2, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  trace_slice(t, 1, 2, "\xff|\xed\xa0\x80|\xc0\xaf|\xe2\x82", 0, 1);
  trace_slice(t, 1, 2, NULL, 0, 1);
  assert_true(trace_close(t));
  assert_file_text(
      p,
      "{\"traceEvents\": [\n"
      "  {\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
      "\"args\":{\"name\":\"a\\\"b\\\\c\\nd\\te\\u0001\\u001f\\b\\f\\r \x7f\"}},\n"
      "  {\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":2,"
      "\"args\":{\"name\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}},\n"
      "  {\"name\":\"\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\","
      "\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":0.000000,\"dur\":0.001000},\n"
      "  {\"name\":\"\",\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":0.000000,\"dur\":0.001000}\n"
      "], \"displayTimeUnit\": \"ns\"}\n");
  assert_valid_json(p);
  // Read back by python3, each name must be what was given, with U+FFFD
  // for the bytes that were not UTF-8.
  if (have_python3()) {
    static const char script[] =
        "import json, sys\n"
        "e = json.load(open(sys.argv[1], encoding='utf-8'))['traceEvents']\n"
        "assert e[0]['args']['name'] == 'a\"b\\\\c\\nd\\te\\x01\\x1f\\b\\f\\r \\x7f', e[0]\n"
        "assert e[1]['args']['name'] == 'caf\\xe9 \\u20ac \\U0001f600', e[1]\n"
        "assert e[2]['name'] == '\\ufffd|' + '\\ufffd' * 3 + '|' + '\\ufffd' * 2 + '|' + "
        "'\\ufffd' * 2, e[2]\n"
        "assert e[3]['name'] == '', e[3]\n";
    char trace[PATH_MAX_TEST], cmd[PATH_MAX_TEST * 3];
    snprintf(trace, sizeof trace, "%s", p);  // scratch_path reuses its buffer
    const char *py = scratch_path("names.py");
    write_bytes(py, script, sizeof script - 1);
    snprintf(cmd, sizeof cmd, "python3 %s %s", py, trace);
    if (system(cmd) != 0) fail_msg("python3 read the names back differently");
  }
}

static void trace_with_many_events_is_valid_json(void **state) {
  (void)state;
  enum { SLICES = 20000 };
  char err[ERR_MAX];
  const char *p = scratch_path("many.json");
  Trace *t = trace_open(p, 1250, err, sizeof err);
  assert_non_null(t);
  for (int i = 0; i < SLICES; i++) {
    trace_slice(t, i % 3, i % 7, "SEND", (int64_t)i * 20, 20);
    if (i % 2) trace_flow(t, (uint64_t)i, 0, 1, (int64_t)i * 20, 1, 1, (int64_t)i * 20 + 700);
  }
  assert_true(trace_close(t));
  size_t len;
  char *text = read_bytes(p, &len);
  int lines = 0;
  for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
  assert_int_equal(lines, 2 + SLICES + SLICES);  // opening, events, closing
  free(text);
  assert_valid_json(p);
}

static void trace_reports_failures(void **state) {
  (void)state;
  char err[ERR_MAX], want[ERR_MAX], nodir[PATH_MAX_TEST];
  snprintf(nodir, sizeof nodir, "%s/no/such/dir.json", scratch);
  assert_null(trace_open(nodir, 900, err, sizeof err));
  snprintf(want, sizeof want, "%s: cannot create: No such file or directory", nodir);
  assert_string_equal(err, want);
  assert_null(trace_open(scratch_path("t.json"), 0, err, sizeof err));
  assert_non_null(strstr(err, "a trace needs a positive clock, not 0 MHz"));
  assert_null(trace_open(scratch_path("t.json"), NAN, err, sizeof err));
  assert_true(trace_close(NULL));
  if (access("/dev/full", W_OK) == 0) {
    Trace *t = trace_open("/dev/full", 900, err, sizeof err);
    assert_non_null(t);
    trace_slice(t, 0, 0, "VADD", 0, 1);
    assert_false(trace_close(t));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(npy_round_trips_every_descr_at_ranks_1_and_3),
      cmocka_unit_test(npy_header_is_what_numpy_writes),
      cmocka_unit_test(npy_refuses_bad_magic_version_and_truncation),
      cmocka_unit_test(npy_refuses_headers_it_cannot_take),
      cmocka_unit_test(npy_reads_any_header_numpy_would),
      cmocka_unit_test(npy_parse_reads_memory_as_npy_read_reads_files),
      cmocka_unit_test(npy_write_refuses_what_it_cannot_write),
      cmocka_unit_test(trace_without_events_is_valid_json),
      cmocka_unit_test(trace_writes_each_kind_of_event),
      cmocka_unit_test(trace_escapes_strings),
      cmocka_unit_test(trace_with_many_events_is_valid_json),
      cmocka_unit_test(trace_reports_failures),
  };
  return cmocka_run_group_tests(tests, make_scratch, remove_scratch);
}
