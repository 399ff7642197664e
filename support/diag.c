// diag.c: user-facing diagnostics.  Part of support/.
//
// Every error about a user's input names its place and quotes it:
//
//   model.tg:4:11: error: undefined tensor 'q'
//     y = add(q, x);
//             ^
//
// Errors are counted, not fatal: a pass reports all it finds and the driver
// stops between passes when diag.nerrors > 0.
#include "support.h"

#include <stdlib.h>
#include <string.h>

void diag_init(Diag *d, FILE *out) {
  *d = (Diag){.out = out, .max_errors = DIAG_DEFAULT_MAX_ERRORS};
}

// The quoted line's window: [*start, *end) of its n bytes, at most
// DIAG_QUOTE_MAX_BYTES long and holding the caret's column, cut at UTF-8
// character boundaries.
static void quote_window(const char *line, int n, SrcLoc loc, int *start, int *end) {
  *start = 0, *end = n;
  if (n <= DIAG_QUOTE_MAX_BYTES) return;
  *start = MAX(0, MIN(loc.col - 1 - DIAG_QUOTE_MAX_BYTES / 4, n - DIAG_QUOTE_MAX_BYTES));
  while (*start > 0 && ((unsigned char)line[*start] & 0xc0) == 0x80) (*start)--;
  *end = MIN(n, *start + DIAG_QUOTE_MAX_BYTES);
  while (*end < n && ((unsigned char)line[*end] & 0xc0) == 0x80) (*end)++;
}

// What a quoted line shows for a byte that is not well-formed UTF-8 or is a
// control character (a raw 0xff or an escape sequence would garble the
// user's terminal): U+FFFD, one column.
#define DIAG_REPLACEMENT "\xef\xbf\xbd"

// The bytes of the character at line[i] (1 for a byte shown as
// DIAG_REPLACEMENT).
static int char_bytes(const char *line, int i) {
  int k = str_utf8_sequence_len((const unsigned char *)line + i);
  return k ? k : 1;
}

// Writes the character at line[i] as the quote shows it; returns its bytes.
static int put_char(FILE *out, const char *line, int i) {
  unsigned char c = (unsigned char)line[i];
  int k = str_utf8_sequence_len((const unsigned char *)line + i);
  if (c == '\0') fputc(' ', out);  // a NUL shows as a space
  else if (k == 0 || (c < 0x20 && c != '\t') || c == 0x7f) fputs(DIAG_REPLACEMENT, out);
  else fwrite(line + i, 1, (size_t)k, out);
  return k ? k : 1;
}

// Prints the quoted line and a caret under LOC (tabs kept, so the caret
// lines up; one column a character); a line longer than
// DIAG_QUOTE_MAX_BYTES is quoted around the caret, with "..." where it is
// cut.  The source text is NUL-terminated (src_line), so a sequence read
// past the window's end stops there.
static void print_caret(FILE *out, SrcLoc loc) {
  if (!loc.file || loc.line < 1) return;
  int n, start, end;
  const char *line = src_line(loc.file, loc.line, &n);
  quote_window(line, n, loc, &start, &end);
  const char *before = start > 0 ? "..." : "";
  fputs(before, out);
  for (int i = start; i < end;) i += put_char(out, line, i);
  fputs(end < n ? "...\n" : "\n", out);
  fprintf(out, "%*s", (int)strlen(before), "");
  int i = start;
  for (; i < loc.col - 1 && i < end; i += char_bytes(line, i)) fputc(line[i] == '\t' ? '\t' : ' ', out);
  fputc('^', out);
  int last = MIN(end, loc.col - 1 + loc.len);
  for (i += i < end ? char_bytes(line, i) : 1; i < last; i += char_bytes(line, i)) fputc('~', out);
  fputc('\n', out);
}

// A message longer than DIAG_MESSAGE_MAX_BYTES (it quotes a pathological
// input: a name of megabytes) keeps its start and end around a count of
// what was cut.  msg starts `at` bytes into a buffer of *len bytes.
static void elide_middle(char *msg, size_t *len, size_t at) {
  size_t n = *len - at, keep = DIAG_MESSAGE_MAX_BYTES / 2;
  if (n <= DIAG_MESSAGE_MAX_BYTES) return;
  char mid[64];
  int m = snprintf(mid, sizeof mid, "... (%zu bytes cut) ...", n - 2 * keep);
  memmove(msg + keep + (size_t)m, msg + n - keep, keep);
  memcpy(msg + keep, mid, (size_t)m);
  *len = at + 2 * keep + (size_t)m;
}

// One diagnostic, composed in memory and written at once (the stream may
// be unbuffered: stderr writes every byte on its own otherwise).
static void print_message(Diag *d, SrcLoc loc, const char *kind, const char *fmt, va_list ap) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  if (!out) die("out of memory");
  if (loc.file)
    fprintf(out, "%s:%d:%d: %s: ", loc.file->path, loc.line, loc.col, kind);
  else
    fprintf(out, "%s: ", kind);
  long at = ftell(out);
  vfprintf(out, fmt, ap);
  fflush(out);
  elide_middle(text + at, &len, (size_t)at);
  fseek(out, (long)len, SEEK_SET);
  fputc('\n', out);
  print_caret(out, loc);
  fclose(out);
  if (d->progress) progress_done(d->progress);
  fwrite(text, 1, len, d->out);
  fflush(d->out);
  free(text);
}

void diag_verror(Diag *d, SrcLoc loc, const char *fmt, va_list ap) {
  d->nerrors++;
  if (d->suppressed) return;
  if (d->max_errors > 0 && d->nerrors > d->max_errors) {
    d->suppressed = true;
    if (d->progress) progress_done(d->progress);
    fprintf(d->out, "note: stopping after %d error%s (--max-errors)\n", d->max_errors,
            d->max_errors == 1 ? "" : "s");
    return;
  }
  print_message(d, loc, "error", fmt, ap);
}

void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(d, loc, fmt, ap);
  va_end(ap);
}

void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...) {
  if (d->suppressed) return;
  va_list ap;
  va_start(ap, fmt);
  print_message(d, loc, "note", fmt, ap);
  va_end(ap);
}

void diag_warning(Diag *d, SrcLoc loc, const char *fmt, ...) {
  if (d->suppressed) return;
  va_list ap;
  va_start(ap, fmt);
  print_message(d, loc, "warning", fmt, ap);
  va_end(ap);
}

void diag_tool_error(Diag *d, const char *tool, const char *fmt, ...) {
  va_list ap;
  d->nerrors++;
  if (d->progress) progress_done(d->progress);
  fprintf(d->out, "%s: error: ", tool);
  va_start(ap, fmt);
  vfprintf(d->out, fmt, ap);
  va_end(ap);
  fputc('\n', d->out);
}
