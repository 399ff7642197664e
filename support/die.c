// die.c: the one path for internal errors, and allocation that cannot fail.
// Part of support/; used by every layer.
#define _GNU_SOURCE  // program_invocation_short_name: the tool's name, whichever tool this is
#include "support.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void die_at(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "%s: internal error at %s:%d: ", program_invocation_short_name, file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

// Out of memory is no internal error: the machine's or the process's limit
// (ulimit -v, a cgroup) was reached.  Said as an error, exit 1; an output
// directory being written is removed (support/outdir.c, at exit).
static NORETURN void out_of_memory(size_t bytes) {
  fflush(stdout);
  fprintf(stderr, "%s: error: out of memory: %zu more bytes could not be had (the machine's or the process's "
          "memory limit)\n", program_invocation_short_name, bytes);
  exit(1);
}

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) out_of_memory(n);
  return p;
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) out_of_memory(size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
  return p;
}

void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) out_of_memory(n);
  return q;
}

char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xmalloc(n), s, n);
}
