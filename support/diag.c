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

#include <string.h>

void diag_init(Diag *d, FILE *out) {
  *d = (Diag){.out = out, .max_errors = DIAG_DEFAULT_MAX_ERRORS};
}

// Prints the quoted line and a caret under LOC (tabs kept, so the caret lines up).
static void print_caret(Diag *d, SrcLoc loc) {
  if (!loc.file || loc.line < 1) return;
  int n;
  const char *line = src_line(loc.file, loc.line, &n);
  for (int i = 0; i < n; i++) fputc(line[i] ? line[i] : ' ', d->out);  // a NUL shows as a space
  fputc('\n', d->out);
  // One space (or tab) per character: UTF-8 continuation bytes take no column.
  for (int i = 0; i < loc.col - 1 && i < n; i++)
    if (((unsigned char)line[i] & 0xc0) != 0x80) fputc(line[i] == '\t' ? '\t' : ' ', d->out);
  fputc('^', d->out);
  for (int i = 1; i < loc.len && loc.col - 1 + i < n; i++)
    if (((unsigned char)line[loc.col - 1 + i] & 0xc0) != 0x80) fputc('~', d->out);
  fputc('\n', d->out);
}

static void print_message(Diag *d, SrcLoc loc, const char *kind, const char *fmt, va_list ap) {
  if (loc.file)
    fprintf(d->out, "%s:%d:%d: %s: ", loc.file->path, loc.line, loc.col, kind);
  else
    fprintf(d->out, "%s: ", kind);
  vfprintf(d->out, fmt, ap);
  fputc('\n', d->out);
  print_caret(d, loc);
}

void diag_verror(Diag *d, SrcLoc loc, const char *fmt, va_list ap) {
  d->nerrors++;
  if (d->suppressed) return;
  if (d->max_errors > 0 && d->nerrors > d->max_errors) {
    d->suppressed = true;
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

void diag_tool_error(Diag *d, const char *tool, const char *fmt, ...) {
  va_list ap;
  d->nerrors++;
  fprintf(d->out, "%s: error: ", tool);
  va_start(ap, fmt);
  vfprintf(d->out, fmt, ap);
  va_end(ap);
  fputc('\n', d->out);
}
