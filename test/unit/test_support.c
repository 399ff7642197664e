// test_support.c: unit tests of support/: arena, growable arrays, number
// parsing, edit distance, digests, diagnostics with carets, atomic output
// directories, the host's limits under control groups.
#define _DEFAULT_SOURCE
#include "harness.h"

#include <sys/stat.h>
#include <unistd.h>

static void arena_allocations_are_zeroed_and_aligned(void **state) {
  (void)state;
  Arena a = {0};
  for (int i = 1; i < 2000; i += 37) {
    unsigned char *p = arena_alloc(&a, (size_t)i);
    assert_int_equal((uintptr_t)p % 16, 0);
    for (int j = 0; j < i; j++) assert_int_equal(p[j], 0);
    memset(p, 0xff, (size_t)i);
  }
  void *big = arena_alloc(&a, 1 << 20);  // larger than a chunk
  assert_non_null(big);
  assert_string_equal(arena_printf(&a, "%s-%d", "dev", 7), "dev-7");
  assert_string_equal(arena_strndup(&a, "abcdef", 3), "abc");
  arena_free(&a);
  assert_null(a.head);
}

// A release hands back every chunk taken after the mark (ASan reports a
// leak or a use after free otherwise) and the next allocation reuses the
// marked chunk's tail.
static void arena_release_rolls_back_to_the_mark(void **state) {
  (void)state;
  Arena a = {0};
  char *kept = arena_strdup(&a, "kept");
  ArenaMark m = arena_mark(&a);
  for (int i = 0; i < 100; i++) arena_alloc(&a, 10000);  // several new chunks
  arena_alloc(&a, 1 << 20);
  arena_release(&a, m);
  assert_int_equal(a.used, m.used);
  assert_ptr_equal(a.head, m.head);
  char *again = arena_alloc(&a, 16);
  assert_ptr_equal(again, kept + 16);  // "kept" took one 16-byte slot
  assert_string_equal(kept, "kept");
  arena_free(&a);
}

// What a release gives back is handed out again (its pages are the
// process's already): a second round of the same allocations takes the
// same chunks, a big request's among them.
static void arena_reuses_released_chunks(void **state) {
  (void)state;
  Arena a = {0};
  arena_strdup(&a, "kept");
  ArenaMark m = arena_mark(&a);
  char *first[40], *big = NULL;
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < 40; i++) {
      char *p = arena_alloc(&a, 30000);  // zeroed again when reused
      for (int k = 0; k < 30000; k++) assert_int_equal(p[k], 0);
      memset(p, 0xab, 30000);
      if (round == 0) first[i] = p;
    }
    char *b = arena_alloc(&a, 5 << 20);  // a chunk of its own, of huge pages where there are any
    assert_int_equal((uintptr_t)b % 16, 0);
    memset(b, 1, 5 << 20);
    if (round == 0) big = b;
    else assert_ptr_equal(b, big);
    arena_release(&a, m);
  }
  char *again = arena_alloc(&a, 30000);
  bool reused = false;
  for (int i = 0; i < 40; i++) reused |= again == first[i];
  assert_true(reused);
  arena_free(&a);
}

static void vec_push_keeps_every_element(void **state) {
  (void)state;
  Arena a = {0};
  VEC(int) v = {0};
  for (int i = 0; i < 1000; i++) VEC_PUSH(&a, &v, i * 3);
  assert_int_equal(v.len, 1000);
  for (int i = 0; i < 1000; i++) assert_int_equal(v.data[i], i * 3);
  arena_free(&a);
}

static void integers_parse_whole_and_reject_junk(void **state) {
  (void)state;
  int64_t v;
  assert_true(str_to_i64("42", &v));
  assert_int_equal(v, 42);
  assert_true(str_to_i64("-7", &v));
  assert_int_equal(v, -7);
  assert_false(str_to_i64("", &v));
  assert_false(str_to_i64("4x", &v));
  assert_false(str_to_i64("2.5", &v));
  assert_false(str_to_i64("99999999999999999999", &v));  // overflow
  double d;
  assert_true(str_to_double("2.5", &d));
  assert_true(d == 2.5);
  assert_false(str_to_double("nan", &d));
  assert_false(str_to_double("1e999", &d));
  assert_false(str_to_double("3 ", &d));
  // Decimal notation only, as the integers: no hex floats, inf or nan; an
  // underflow is a value (0), which callers' range checks then name.
  assert_false(str_to_double("0x1p10", &d));
  assert_false(str_to_double("inf", &d));
  assert_false(str_to_double("1e", &d));
  assert_false(str_to_double(".", &d));
  assert_true(str_to_double("1e-400", &d));
  assert_true(d == 0);
  assert_true(str_to_double("-.5e+2", &d));
  assert_true(d == -50);
}

static void edit_distance_counts_single_edits(void **state) {
  (void)state;
  assert_int_equal(str_edit_distance("matmul", "matmul"), 0);
  assert_int_equal(str_edit_distance("matmull", "matmul"), 1);
  assert_int_equal(str_edit_distance("alg", "algo"), 1);
  assert_int_equal(str_edit_distance("kitten", "sitting"), 3);
  assert_int_equal(str_edit_distance("", "abc"), 3);
}

static void fnv1a_matches_reference_vectors(void **state) {
  (void)state;
  // The FNV-1a 64 reference values for "" and "a".
  assert_true(digest_fnv1a64("", 0) == 0xcbf29ce484222325ull);
  assert_true(digest_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
}

static void human_bytes_use_binary_units(void **state) {
  (void)state;
  char s[32];
  str_human_bytes(s, sizeof s, 512);
  assert_string_equal(s, "512 B");
  str_human_bytes(s, sizeof s, 4096);
  assert_string_equal(s, "4.0 KiB");
  str_human_bytes(s, sizeof s, 1.5 * 1024 * 1024);
  assert_string_equal(s, "1.5 MiB");
}

static void src_line_finds_each_line(void **state) {
  (void)state;
  Arena a = {0};
  SrcFile *f = src_from_string(&a, "x", "one\ntwo\r\nthree");
  int n;
  const char *l = src_line(f, 2, &n);
  assert_int_equal(n, 3);
  assert_memory_equal(l, "two", 3);
  l = src_line(f, 3, &n);
  assert_int_equal(n, 5);
  l = src_line(f, 9, &n);  // past the end: empty
  assert_int_equal(n, 0);
  arena_free(&a);
}

// Character columns become byte columns (a UTF-8 character's continuation
// bytes are its own), the same whether counted afresh, on from the last
// answer on the line, after going back, or after another line was looked up.
static void src_byte_column_counts_utf8_characters(void **state) {
  (void)state;
  Arena a = {0};
  SrcFile *f = src_from_string(&a, "x", "ab\nd\xc3\xa9j\xe2\x82\xacz: 1\n");  // line 2: d é j € z
  static const int bytes[] = {0, 1, 3, 4, 7, 8, 9, 10, 11, 11, 11};  // after 0 .. 10 characters
  for (size_t c = 0; c < ARRAY_LEN(bytes); c++) assert_int_equal(src_byte_column(f, 2, c), bytes[c]);
  for (size_t c = ARRAY_LEN(bytes); c-- > 0;) assert_int_equal(src_byte_column(f, 2, c), bytes[c]);
  assert_int_equal(src_byte_column(f, 1, 1), 1);
  assert_int_equal(src_byte_column(f, 2, 5), 8);
  int n;
  src_line(f, 1, &n);
  assert_int_equal(src_byte_column(f, 2, 3), 4);
  arena_free(&a);
}

static void diag_quotes_the_line_and_underlines_the_span(void **state) {
  (void)state;
  Arena a = {0};
  SrcFile *f = src_from_string(&a, "m.tg", "graph g {\n\ty = relu(q);\n}\n");
  Captured c;
  capture_begin(&c);
  diag_error(&c.diag, (SrcLoc){f, 2, 11, 1}, "undefined tensor '%s'", "q");
  diag_note(&c.diag, (SrcLoc){f, 2, 6, 4}, "in this call");
  assert_string_equal(captured_text(&c),
                      "m.tg:2:11: error: undefined tensor 'q'\n"
                      "\ty = relu(q);\n"
                      "\t         ^\n"
                      "m.tg:2:6: note: in this call\n"
                      "\ty = relu(q);\n"
                      "\t    ^~~~\n");
  assert_int_equal(c.diag.nerrors, 1);
  capture_end(&c);
  arena_free(&a);
}

static void diag_stops_printing_after_max_errors(void **state) {
  (void)state;
  Captured c;
  capture_begin(&c);
  c.diag.max_errors = 2;
  for (int i = 0; i < 5; i++) diag_error(&c.diag, (SrcLoc){0}, "e%d", i);
  assert_string_equal(captured_text(&c),
                      "error: e0\nerror: e1\nnote: stopping after 2 errors (--max-errors)\n");
  assert_int_equal(c.diag.nerrors, 5);
  capture_end(&c);
}

static char *temp_dir(void) {
  char *t = xstrdup("/tmp/tspc-unit-XXXXXX");
  assert_non_null(mkdtemp(t));
  return t;
}

static bool exists(const char *dir, const char *name) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  struct stat st;
  return stat(p, &st) == 0;
}

static void outdir_commit_puts_files_in_place(void **state) {
  (void)state;
  char *base = temp_dir(), out[256];
  snprintf(out, sizeof out, "%s/a/b/out", base);
  Captured c;
  capture_begin(&c);
  OutDir od;
  assert_true(outdir_begin(&od, out, &c.diag, "t"));
  FILE *fp = outdir_create_file(&od, "manifest.yaml", &c.diag, "t");
  fprintf(fp, "%s\n", OUTDIR_MANIFEST_MARKER);
  fclose(fp);
  assert_false(exists(out, "manifest.yaml"));  // not before commit
  assert_true(outdir_commit(&od, &c.diag, "t"));
  assert_true(exists(out, "manifest.yaml"));
  // A second run replaces the tspc directory.
  assert_true(outdir_begin(&od, out, &c.diag, "t"));
  fp = outdir_create_file(&od, "manifest.yaml", &c.diag, "t");
  fprintf(fp, "%s\nsecond\n", OUTDIR_MANIFEST_MARKER);
  fclose(fp);
  assert_true(outdir_commit(&od, &c.diag, "t"));
  assert_int_equal(c.diag.nerrors, 0);
  capture_end(&c);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "grep -q second %s/manifest.yaml && test $(ls %s/a/b | wc -l) -eq 1", out, base);
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  assert_int_equal(system(cmd), 0);
  free(base);
}

// outdir_write_file writes the whole buffer (a binary's bytes, NULs and
// all) in one call; a file it cannot create is reported with its final
// path and the system's reason, and the run's files are removed on abort.
static void outdir_write_file_writes_every_byte(void **state) {
  (void)state;
  char *base = temp_dir(), out[256];
  snprintf(out, sizeof out, "%s/out", base);
  Captured c;
  capture_begin(&c);
  OutDir od;
  assert_true(outdir_begin(&od, out, &c.diag, "t"));
  enum { N = 200000 };  // more than one stdio buffer, and than one pipe's worth
  unsigned char *bytes = xmalloc(N);
  for (int i = 0; i < N; i++) bytes[i] = (unsigned char)(i * 7);
  assert_true(outdir_write_file(&od, "dev0000.tsp", bytes, N, &c.diag, "t"));
  assert_true(outdir_write_file(&od, "manifest.yaml", OUTDIR_MANIFEST_MARKER "\n", strlen(OUTDIR_MANIFEST_MARKER) + 1,
                                &c.diag, "t"));
  assert_false(outdir_write_file(&od, "no-such-dir/x", "x", 1, &c.diag, "t"));
  assert_int_equal(c.diag.nerrors, 1);
  char want[512];
  snprintf(want, sizeof want, "t: error: cannot write '%s/no-such-dir/x': No such file or directory\n", out);
  assert_string_equal(captured_text(&c), want);
  outdir_abort(&od);
  assert_false(exists(base, "out"));
  assert_true(outdir_begin(&od, out, &c.diag, "t"));
  assert_true(outdir_write_file(&od, "dev0000.tsp", bytes, N, &c.diag, "t"));
  assert_true(outdir_commit(&od, &c.diag, "t"));
  capture_end(&c);
  char path[512];
  snprintf(path, sizeof path, "%s/dev0000.tsp", out);
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  unsigned char *back = xmalloc(N + 1);
  assert_int_equal(fread(back, 1, N + 1, fp), N);
  fclose(fp);
  assert_memory_equal(back, bytes, N);
  free(back);
  free(bytes);
  snprintf(path, sizeof path, "rm -rf %s", base);
  assert_int_equal(system(path), 0);
  free(base);
}

// Writes `text` to base/rel, making its directories.
static void put_file(const char *base, const char *rel, const char *text) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s/%s')\" && printf '%%s' '%s' > '%s/%s'", base, rel, text, base,
           rel);
  assert_int_equal(system(cmd), 0);
}

// A made-up control-group tree lowers the machine's memory and cores by
// the tightest limit of the process's group and every group above it, and
// leaves them alone where no group limits them.
static void host_limits_follow_the_control_groups(void **state) {
  (void)state;
  char *base = temp_dir(), proc[600], root[600];
  snprintf(proc, sizeof proc, "%s/cgroup", base);
  snprintf(root, sizeof root, "%s/fs", base);
  const uint64_t machine = UINT64_C(64) << 30;  // 64 GiB, 32 cores

  // No such file: the machine's figures.
  HostLimits h = host_limits_at(proc, root, machine, 32);
  assert_true(h.memory == machine && h.cores == 32 && !h.memory_by_cgroup && !h.cores_by_cgroup);

  // cgroup v2: the parent's 8 GiB under the group's "max"; 1.5 CPUs of quota are 2 cores.
  put_file(base, "cgroup", "0::/job/step\n");
  put_file(base, "fs/job/step/memory.max", "max\n");
  put_file(base, "fs/job/memory.max", "8589934592\n");
  put_file(base, "fs/job/step/cpu.max", "150000 100000\n");
  put_file(base, "fs/job/cpu.max", "max 100000\n");
  h = host_limits_at(proc, root, machine, 32);
  assert_true(h.memory == (UINT64_C(8) << 30) && h.memory_by_cgroup);
  assert_true(h.cores == 2 && h.cores_by_cgroup);

  // A limit above what the machine has changes nothing.
  h = host_limits_at(proc, root, UINT64_C(4) << 30, 1);
  assert_true(h.memory == (UINT64_C(4) << 30) && !h.memory_by_cgroup && h.cores == 1 && !h.cores_by_cgroup);

  // A quota near LLONG_MAX rounds up without overflowing (UBSan watches);
  // a memory limit of 0 is a limit (tsp-emu then refuses any run).
  put_file(base, "fs/job/step/cpu.max", "9223372036854775807 1\n");
  put_file(base, "fs/job/memory.max", "0\n");
  h = host_limits_at(proc, root, machine, 32);
  assert_true(h.cores == 32 && !h.cores_by_cgroup && h.memory == 0 && h.memory_by_cgroup);

  // cgroup v1: "no limit" is a number near 2^63; the root group's 1 GiB
  // holds; a cfs quota of -1 is no quota, 300000 a period of 100000 is 3.
  put_file(base, "cgroup", "4:memory:/box\n3:cpu,cpuacct:/box\n1:name=systemd:/\n");
  put_file(base, "fs/memory/box/memory.limit_in_bytes", "9223372036854771712\n");
  put_file(base, "fs/memory/memory.limit_in_bytes", "1073741824\n");
  put_file(base, "fs/cpu,cpuacct/box/cpu.cfs_quota_us", "-1\n");
  put_file(base, "fs/cpu,cpuacct/box/cpu.cfs_period_us", "100000\n");
  h = host_limits_at(proc, root, machine, 32);
  assert_true(h.memory == (UINT64_C(1) << 30) && h.memory_by_cgroup && h.cores == 32 && !h.cores_by_cgroup);
  put_file(base, "fs/cpu,cpuacct/box/cpu.cfs_quota_us", "300000\n");
  h = host_limits_at(proc, root, machine, 32);
  assert_true(h.cores == 3 && h.cores_by_cgroup);

  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  assert_int_equal(system(cmd), 0);
  free(base);
}

static void outdir_abort_leaves_nothing_and_foreign_dirs_are_refused(void **state) {
  (void)state;
  char *base = temp_dir(), out[256];
  snprintf(out, sizeof out, "%s/out", base);
  Captured c;
  capture_begin(&c);
  OutDir od;
  assert_true(outdir_begin(&od, out, &c.diag, "t"));
  fclose(outdir_create_file(&od, "half.tsp", &c.diag, "t"));
  outdir_abort(&od);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s)\"", base);
  assert_int_equal(system(cmd), 0);
  // A directory the user made, with a file in it, is never replaced.
  snprintf(cmd, sizeof cmd, "mkdir %s && touch %s/precious", out, out);
  assert_int_equal(system(cmd), 0);
  assert_false(outdir_begin(&od, out, &c.diag, "t"));
  assert_true(exists(out, "precious"));
  assert_non_null(strstr(captured_text(&c), "refusing to replace"));
  capture_end(&c);
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  assert_int_equal(system(cmd), 0);
  free(base);
}

// A clock the test moves by hand.
static double fake_seconds;
static double fake_clock(void) { return fake_seconds; }

// The line appears only after PROGRESS_AFTER_SECONDS, is redrawn at most
// every PROGRESS_REDRAW_SECONDS, erases itself before a diagnostic and at
// the end, and never shows when disabled (not a terminal, or --quiet).
static void progress_waits_redraws_and_erases(void **state) {
  (void)state;
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  Progress p;
  fake_seconds = 100;
  progress_init(&p, out, "tspc", false);  // a memory stream is no terminal: off
  p.now = fake_clock;
  p.start = fake_seconds;
  progress_update(&p, "schedule", 0.5);
  fake_seconds += 3;
  progress_update(&p, "schedule", 0.5);
  fflush(out);
  assert_int_equal(len, 0);
  p.enabled = true;  // as on a terminal
  fake_seconds = 101;
  progress_update(&p, "dag", 0.1);  // 1 s in: too early
  fake_seconds = 102.5;
  progress_update(&p, "schedule", 0.4);
  fake_seconds = 102.6;
  progress_update(&p, "schedule", 0.41);  // within the redraw interval: skipped
  Diag d;
  diag_init(&d, out);
  d.progress = &p;
  diag_tool_error(&d, "tspc", "boom");
  progress_done(&p);  // nothing left to erase
  fflush(out);
  assert_string_equal(text, "\rtspc: schedule  40%, 2.5 s\033[K\r\033[Ktspc: error: boom\n");
  fclose(out);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(arena_allocations_are_zeroed_and_aligned),
      cmocka_unit_test(host_limits_follow_the_control_groups),
      cmocka_unit_test(arena_release_rolls_back_to_the_mark),
      cmocka_unit_test(arena_reuses_released_chunks),
      cmocka_unit_test(vec_push_keeps_every_element),
      cmocka_unit_test(integers_parse_whole_and_reject_junk),
      cmocka_unit_test(edit_distance_counts_single_edits),
      cmocka_unit_test(fnv1a_matches_reference_vectors),
      cmocka_unit_test(human_bytes_use_binary_units),
      cmocka_unit_test(src_line_finds_each_line),
      cmocka_unit_test(src_byte_column_counts_utf8_characters),
      cmocka_unit_test(diag_quotes_the_line_and_underlines_the_span),
      cmocka_unit_test(diag_stops_printing_after_max_errors),
      cmocka_unit_test(outdir_commit_puts_files_in_place),
      cmocka_unit_test(outdir_write_file_writes_every_byte),
      cmocka_unit_test(outdir_abort_leaves_nothing_and_foreign_dirs_are_refused),
      cmocka_unit_test(progress_waits_redraws_and_erases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
