// source.c: source files held in memory, and lookup of a line's text for
// diagnostics.  Part of support/; the .tg parser and the YAML loader both
// read their input through src_read so every error can quote its line.
#include "support.h"

#include <errno.h>
#include <string.h>

SrcFile *src_from_string(Arena *a, const char *path, const char *text) {
  SrcFile *f = ARENA_NEW(a, SrcFile);
  f->path = arena_strdup(a, path);
  f->len = strlen(text);
  f->text = arena_strndup(a, text, f->len);
  return f;
}

SrcFile *src_read(Arena *a, const char *path, const char **err) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    *err = strerror(errno);
    return NULL;
  }
  Buf b = {0};
  char chunk[16384];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) buf_append(&b, chunk, n);
  bool failed = ferror(fp);
  int read_errno = errno;
  fclose(fp);
  if (failed) {
    *err = strerror(read_errno);
    buf_free(&b);
    return NULL;
  }
  // The text may hold NUL bytes; readers scan by length and report them.
  SrcFile *f = ARENA_NEW(a, SrcFile);
  f->path = arena_strdup(a, path);
  f->len = b.len;
  f->text = arena_strndup(a, b.data ? b.data : "", b.len);
  buf_free(&b);
  return f;
}

// Lines end at \n, \r\n, or a lone \r (as in YAML, and old Mac files).
static const char *line_end(const char *p, const char *end) {
  while (p < end && *p != '\n' && *p != '\r') p++;
  return p;
}

// Steps over the line break at p (\r\n counts as one).
static const char *next_line(const char *p, const char *end) {
  if (p < end && *p == '\r') return p + 1 < end && p[1] == '\n' ? p + 2 : p + 1;
  return p < end ? p + 1 : p;
}

const char *src_line(const SrcFile *f, int line, int *len) {
  const char *p = f->text, *end = f->text + f->len;
  for (int l = 1; l < line && p < end; l++) p = next_line(line_end(p, end), end);
  *len = (int)(line_end(p, end) - p);
  return p;
}
