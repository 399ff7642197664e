// support.h: the small library every layer of tspc stands on.
//
// Nothing here knows about tensors or networks.  It holds the arena that owns
// all compiler IR, growable arrays, source files and locations, the
// diagnostics engine (user errors as FILE:LINE:COL with a caret), the one
// internal-error path (die/unreachable), digests, the writer that puts an
// output directory in place atomically, and what the process may use of the
// machine.
//
// Ownership: every object reachable from an Arena is freed by arena_free();
// nothing allocated from an arena is ever freed on its own.
#ifndef TSPC_SUPPORT_H
#define TSPC_SUPPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TSPC_VERSION "0.1.0"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define NORETURN __attribute__((noreturn))
#else
#define PRINTF_LIKE(f, a)
#define NORETURN
#endif

// ---- die.c: internal errors --------------------------------------------
// An internal error is a bug in the tools, never the user's fault: it names the
// source position of the check that failed and aborts.
NORETURN void die_at(const char *file, int line, const char *fmt, ...) PRINTF_LIKE(3, 4);
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
#define unreachable() die_at(__FILE__, __LINE__, "unreachable")

// Allocation that cannot fail: out of memory is said as an error naming the
// tool (not an internal one), exit status 1.
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

// ---- arena.c: region allocation ----------------------------------------
typedef struct ArenaChunk ArenaChunk;
typedef struct Arena {
  ArenaChunk *head;   // newest chunk first
  ArenaChunk *big;    // the same, of requests of half a chunk or more (huge pages)
  ArenaChunk *spare, *spare_big;  // chunks arena_release gave back (of head, of big), handed out again first
  size_t used;        // bytes handed out, for --stats
} Arena;

void *arena_alloc(Arena *a, size_t n);            // zeroed, 16-byte aligned
void *arena_alloc_uncleared(Arena *a, size_t n);  // the same, not cleared: for memory filled at once
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) PRINTF_LIKE(2, 3);
void arena_free(Arena *a);
// A point to roll an arena back to: everything allocated after arena_mark
// is released by arena_release (for trial compilations, passes/lower.c).
// Nothing allocated before the mark may point into what is released.  The
// memory stays the arena's, reused by later allocations, until arena_free.
typedef struct ArenaMark {
  ArenaChunk *head, *big;
  size_t head_used, big_used, used;
} ArenaMark;
ArenaMark arena_mark(const Arena *a);
void arena_release(Arena *a, ArenaMark m);
// Gives the released chunks kept for reuse back to the system (when no
// more releases and reallocations like them are to come).
void arena_drop_spares(Arena *a);

#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

// A growable array of T in an arena: `VEC(int) v = {0}; VEC_PUSH(arena, &v, 3);`
// Growth doubles and abandons the old block to the arena (at most 2x waste).
#define VEC(T) struct { T *data; int len, cap; }
#define VEC_PUSH(arena, v, x)                                                  \
  do {                                                                         \
    if ((v)->len == (v)->cap)                                                  \
      vec_grow_((arena), (void **)&(v)->data, &(v)->cap, sizeof(*(v)->data)); \
    (v)->data[(v)->len++] = (x);                                               \
  } while (0)
void vec_grow_(Arena *a, void **data, int *cap, size_t elem);
// Makes room for n elements in all with one allocation, for a vector whose
// final length is known (growing by doubling leaves every smaller copy in
// the arena).
#define VEC_RESERVE(arena, v, n) vec_reserve_((arena), (void **)&(v)->data, &(v)->cap, (v)->len, (n), sizeof(*(v)->data))
void vec_reserve_(Arena *a, void **data, int *cap, int len, int n, size_t elem);

// ---- strings.c: a malloc-backed growable string ----------------------------
typedef struct Buf {
  char *data;
  size_t len, cap;
} Buf;
void buf_printf(Buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);
void buf_append(Buf *b, const void *data, size_t n);  // byte-exact, NULs included
void buf_vprintf(Buf *b, const char *fmt, va_list ap);
void buf_free(Buf *b);

// ---- source.c: source files and locations -------------------------------
typedef struct SrcFile {
  const char *path;  // as the user named it
  char *text;        // NUL-terminated contents
  size_t len;
  int cursor_line;   // src_line's cache: where the last line it found starts (0: none)
  size_t cursor_at;
  int cursor_len;    // ... and its length
  size_t column_chars;  // src_byte_column's cache on cursor_line: a character
  int column_bytes;     // count and the byte offset it ends at
} SrcFile;

// A position in a source file: 1-based line and column (columns count bytes),
// and the length of the span to underline (at least 1).
typedef struct SrcLoc {
  const SrcFile *file;
  int line, col, len;
} SrcLoc;

// The largest text input (a .tg model, a topology, a manifest, an .tsa
// listing) read whole: a named limit far past any real one.
#define SRC_MAX_BYTES ((size_t)64 << 20)
// Reads a regular file whole, checked before reading: not a device, FIFO
// or directory (opened without blocking), and at most max bytes.  Returns
// a malloc'd buffer of *n bytes plus a NUL, or NULL with why in err
// (strerror text, "not a regular file", or "larger than LIMIT").
char *read_regular_file(const char *path, size_t max, const char *limit, size_t *n, const char **err);
// Reads PATH whole (read_regular_file, SRC_MAX_BYTES). On failure returns
// NULL and fills ERR.
SrcFile *src_read(Arena *a, const char *path, const char **err);
SrcFile *src_from_string(Arena *a, const char *path, const char *text);
// The text of line LINE (1-based) without its newline; *len set to its length.
// Scans on from the line it found last when LINE is not before it, so the
// errors of one file, reported top to bottom, cost one pass over it.
const char *src_line(const SrcFile *f, int line, int *len);
// The byte offset, on line LINE, of the character after the first CHARS
// (UTF-8: continuation bytes belong to the character before them), at most
// the line's length.  Counts on from the last answer on the same line when
// CHARS is not before it, so many errors along one long line (a YAML flow
// sequence of 100,000 items) cost one pass over it.
int src_byte_column(const SrcFile *f, int line, size_t chars);

// ---- diag.c: user-facing diagnostics --------------------------------------
// Errors accumulate; the caller decides when to stop.  Each one prints as
//   FILE:LINE:COL: error: MESSAGE
//     <the source line>
//     ^~~~
typedef struct Progress Progress;
typedef struct Diag {
  FILE *out;        // where diagnostics go (stderr by default)
  Progress *progress;  // a progress line to erase before a message (NULL: none)
  int nerrors;      // errors reported so far
  int max_errors;   // stop reporting after this many (DIAG_DEFAULT_MAX_ERRORS)
  bool suppressed;  // set once max_errors was reached
} Diag;

// The default for --max-errors: after this many errors a run says so and
// stops reporting more (a cascade rarely helps the reader).
#define DIAG_DEFAULT_MAX_ERRORS 20

// A quoted source line longer than this many bytes is quoted around the
// caret only (a named limit: a 10 MB line is an input, not a message).
#define DIAG_QUOTE_MAX_BYTES 160
// A message longer than this keeps its start and end around a count of
// what was cut (it quotes a pathological input).
#define DIAG_MESSAGE_MAX_BYTES 1024
void diag_init(Diag *d, FILE *out);
void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...) PRINTF_LIKE(3, 4);
void diag_verror(Diag *d, SrcLoc loc, const char *fmt, va_list ap);
void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...) PRINTF_LIKE(3, 4);
// "FILE:LINE:COL: warning: MESSAGE": something the user should know that
// is not an error (not counted; the run goes on and may succeed).
void diag_warning(Diag *d, SrcLoc loc, const char *fmt, ...) PRINTF_LIKE(3, 4);
// An error with no source position: "tspc: error: MESSAGE".
void diag_tool_error(Diag *d, const char *tool, const char *fmt, ...) PRINTF_LIKE(3, 4);

// ---- strings.c: digests -----------------------------------------------------
// FNV-1a, 64 bit: a content fingerprint for manifests (not a security hash).
uint64_t digest_fnv1a64(const void *data, size_t len);
// The digest as manifests write it ("fnv1a64:" and 16 hex digits), into out.
#define DIGEST_TEXT_BYTES 32
void digest_text(const void *data, size_t len, char out[DIGEST_TEXT_BYTES]);

// ---- outdir.c: atomic output directories --------------------------------
// Files are written into a fresh sibling directory and renamed into place by
// outdir_commit(); outdir_abort() (or a failed commit) removes every trace,
// so an output directory is either the old one, or the complete new one.
typedef struct OutDir {
  char *final_path;  // the directory the user asked for
  char *tmp_path;    // where files are written until commit
  char *old_path;    // during commit: where the previous output was moved aside (NULL: not yet)
  char **files;      // the files created in tmp_path, for a signal handler to remove
  volatile int nfiles;
  int file_cap;
} OutDir;

// The first line of every manifest tspc writes: an existing directory is only
// replaced when it is empty or holds a manifest starting with this marker.
#define OUTDIR_MANIFEST_MARKER "# tspc manifest"

// Whether path can become an output directory, checked before any work:
// not a symbolic link (dangling or not), not a file, and if a directory,
// empty or a tspc output; if not, reports why.  outdir_begin checks it too.
bool outdir_check(const char *path, Diag *d, const char *tool);
// Installs `on` (which removes what the process created, then ends it by
// the signal: signal(sig, SIG_DFL), raise(sig)) for SIGINT, SIGTERM,
// SIGHUP, SIGABRT and SIGXFSZ, except a signal the process was started
// ignoring; cleanup_signals_restore puts back what was there.  Not nested.
void cleanup_signals_watch(void (*on)(int));
void cleanup_signals_restore(void);
bool outdir_begin(OutDir *o, const char *path, Diag *d, const char *tool);
FILE *outdir_create_file(OutDir *o, const char *name, Diag *d, const char *tool);
// name's whole contents in one call; false (with a message) if any step failed.
bool outdir_write_file(OutDir *o, const char *name, const void *data, size_t n, Diag *d, const char *tool);
bool outdir_commit(OutDir *o, Diag *d, const char *tool);
void outdir_abort(OutDir *o);

// ---- strings.c ------------------------------------------------------------
// Levenshtein distance, for "did you mean" hints.
int str_edit_distance(const char *a, const char *b);
// Parses a whole string as a decimal int64 (optional sign); false on junk or overflow.
bool str_to_i64(const char *s, int64_t *out);
// Parses a whole string as a finite double; false on junk.
bool str_to_double(const char *s, double *out);
// Prints s as a YAML scalar: plain when it is a simple word or path,
// double-quoted with escapes otherwise (so names never break the document).
void str_print_yaml(FILE *out, const char *s);
// "4.0 KiB", "1.5 MiB": bytes for people.
void str_human_bytes(char *dst, size_t n, double bytes);
// The length (1..4) of the well-formed UTF-8 sequence at s, or 0 if s does
// not start one.  s is read up to a NUL (no continuation byte), so it must
// be NUL-terminated somewhere after.
int str_utf8_sequence_len(const unsigned char *s);
// Writes s as a JSON string, quotes included (NULL as ""): '"', '\\' and
// control characters escaped, bytes outside well-formed UTF-8 as U+FFFD
// (RFC 8259).  Chrome traces (tsp-emu --trace, tspc --emit=trace) use it.
void str_print_json(FILE *out, const char *s);

// ---- cli.c: command-line mistakes ----------------------------------------------

// getopt_long returned '?' for argument `arg` (argv[optind - 1]; short_opt:
// its optopt): why, in words, into buf (returned).  A short option in a
// group is named alone; "--help=x" is an option given a value it does not
// take; "--ver" an abbreviation of several options (named); anything else
// an unknown option.
struct option;
const char *cli_bad_option(const char *arg, int short_opt, const struct option *longopts, char *buf, size_t n);

// ---- progress.c: a progress line on a terminal -------------------------------
// Seconds a run lasts before its progress line appears, and between redraws.
#define PROGRESS_AFTER_SECONDS 2.0
#define PROGRESS_REDRAW_SECONDS 0.25

struct Progress {
  FILE *out;
  const char *tool;        // "tspc", "tsp-emu"
  bool enabled;            // out is a terminal and not --quiet
  bool shown;              // a line is on screen
  double start, drawn_at;  // seconds: when the run began, the last redraw (-1: none)
  double (*now)(void);     // the clock (tests set their own)
};

// Enabled only when out is a terminal and not quiet.
void progress_init(Progress *p, FILE *out, const char *tool, bool quiet);
// "tspc: schedule  40%, 3.2 s": shown once the run has lasted
// PROGRESS_AFTER_SECONDS, redrawn at most every PROGRESS_REDRAW_SECONDS.
void progress_update(Progress *p, const char *stage, double fraction);
// Erases the line, if one is shown (before other output, and at the end).
void progress_done(Progress *p);

// ---- host.c: what this process may use of the machine ----------------------
// The machine's memory (bytes) and cores, lowered by the limits of the
// process's control group and every group above it (cgroup v2 memory.max,
// cpu.max; v1 memory.limit_in_bytes, cpu.cfs_quota_us / cpu.cfs_period_us):
// a container's, when it is given less than the machine has.  A quota of
// Q microseconds a period P allows ceil(Q / P) cores.
typedef struct HostLimits {
  uint64_t memory;        // bytes (machine_memory when no group lowers it)
  int cores;              // (machine_cores when no group lowers it)
  bool memory_by_cgroup;  // a control group's limit is what `memory` says
  bool cores_by_cgroup;
} HostLimits;
HostLimits host_limits(uint64_t machine_memory, int machine_cores);
// The same, reading the process's groups from `proc_self_cgroup` and their
// files under `cgroup_root` (tests give a made-up tree).
HostLimits host_limits_at(const char *proc_self_cgroup, const char *cgroup_root, uint64_t machine_memory,
                          int machine_cores);

#endif
