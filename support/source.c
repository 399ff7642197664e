// source.c: source files held in memory, and lookup of a line's text for
// diagnostics.  Part of support/; the .tg parser and the YAML loader both
// read their input through src_read so every error can quote its line.
#include "support.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

SrcFile *src_from_string(Arena *a, const char *path, const char *text) {
  SrcFile *f = ARENA_NEW(a, SrcFile);
  f->path = arena_strdup(a, path);
  f->len = strlen(text);
  f->text = arena_strndup(a, text, f->len);
  return f;
}

char *read_regular_file(const char *path, size_t max, const char *limit, size_t *n, const char **err) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a FIFO must not block the open
  if (fd < 0) {
    *err = strerror(errno);
    return NULL;
  }
  struct stat st;
  char *data = NULL;
  if (fstat(fd, &st) != 0) {
    *err = strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *err = S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file (a device, FIFO or socket is not read)";
  } else if ((uint64_t)st.st_size > max) {
    *err = limit;
  } else {
    size_t size = (size_t)st.st_size, got = 0;
    data = xmalloc(size + 1);
    ssize_t r;
    while (got < size && (r = read(fd, data + got, size - got)) != 0) {
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        *err = strerror(errno);
        free(data);
        data = NULL;
        break;
      }
      got += (size_t)r;
    }
    if (data) {
      data[got] = '\0';  // a file that shrank meanwhile is read as it now is
      *n = got;
    }
  }
  close(fd);
  return data;
}

SrcFile *src_read(Arena *a, const char *path, const char **err) {
  size_t n;
  char *data = read_regular_file(path, SRC_MAX_BYTES, "larger than 64 MiB, the most a text input may be (SRC_MAX_BYTES)",
                                 &n, err);
  if (!data) return NULL;
  // The text may hold NUL bytes; readers scan by length and report them.
  SrcFile *f = ARENA_NEW(a, SrcFile);
  f->path = arena_strdup(a, path);
  f->len = n;
  f->text = arena_strndup(a, data, n);
  free(data);
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
  SrcFile *cache = (SrcFile *)f;  // the cursor is a cache, not the file's content
  const char *p = f->text, *end = f->text + f->len;
  if (f->cursor_line == line) {
    *len = f->cursor_len;
    return p + f->cursor_at;
  }
  int l = 1;
  if (f->cursor_line >= 1 && f->cursor_line <= line) p = f->text + f->cursor_at, l = f->cursor_line;
  for (; l < line && p < end; l++) p = next_line(line_end(p, end), end);
  *len = (int)(line_end(p, end) - p);
  if (l == line)
    cache->cursor_line = line, cache->cursor_at = (size_t)(p - f->text), cache->cursor_len = *len,
    cache->column_chars = 0, cache->column_bytes = 0;
  return p;
}

int src_byte_column(const SrcFile *f, int line, size_t chars) {
  int len;
  const char *p = src_line(f, line, &len);
  SrcFile *cache = (SrcFile *)f;
  size_t c = 0;
  int b = 0;
  if (f->cursor_line == line && f->column_chars <= chars) c = f->column_chars, b = f->column_bytes;
  for (; c < chars && b < len; c++) {
    b++;
    while (b < len && ((unsigned char)p[b] & 0xc0) == 0x80) b++;  // continuation bytes
  }
  if (f->cursor_line == line) cache->column_chars = c, cache->column_bytes = b;
  return b;
}
