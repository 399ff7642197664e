// strings.c: small string helpers: growable buffers, number parsing that
// rejects junk and overflow, edit distance for hints, digests, byte sizes.
// Part of support/.
#include "support.h"

#include <ctype.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void buf_vprintf(Buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  if (b->len + (size_t)n + 1 > b->cap) {
    b->cap = MAX(b->cap * 2, b->len + (size_t)n + 1);
    b->data = xrealloc(b->data, b->cap);
  }
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
  b->len += (size_t)n;
  va_end(ap2);
}

void buf_append(Buf *b, const void *data, size_t n) {
  if (b->len + n + 1 > b->cap) {
    b->cap = MAX(b->cap * 2, b->len + n + 1);
    b->data = xrealloc(b->data, b->cap);
  }
  memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void buf_printf(Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  buf_vprintf(b, fmt, ap);
  va_end(ap);
}

void buf_free(Buf *b) {
  free(b->data);
  *b = (Buf){0};
}

int str_edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  int *row = xmalloc(sizeof(int) * (m + 1));
  for (size_t j = 0; j <= m; j++) row[j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= m; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      best = MIN(best, up + 1);
      best = MIN(best, row[j - 1] + 1);
      row[j] = best;
      diag = up;
    }
  }
  int d = row[m];
  free(row);
  return d;
}

bool str_to_i64(const char *s, int64_t *out) {
  if (!*s) return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

// Decimal notation only: [+-] digits [. digits] [e [+-] digits], as the
// integers are decimal only (strtod alone takes hex floats, inf and nan).
static bool decimal_syntax(const char *s) {
  if (*s == '+' || *s == '-') s++;
  bool digits = false;
  for (; isdigit((unsigned char)*s); s++) digits = true;
  if (*s == '.')
    for (s++; isdigit((unsigned char)*s); s++) digits = true;
  if (!digits) return false;
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-') s++;
    if (!isdigit((unsigned char)*s)) return false;
    while (isdigit((unsigned char)*s)) s++;
  }
  return !*s;
}

bool str_to_double(const char *s, double *out) {
  if (!decimal_syntax(s)) return false;
  errno = 0;
  double v = strtod(s, NULL);  // an underflow is 0 or subnormal, which range checks then name
  if ((errno && errno != ERANGE) || !isfinite(v)) return false;
  *out = v;
  return true;
}

// Plain words a YAML 1.1 or 1.2 reader takes for something other than a
// string (booleans, null); numbers are caught by the parse below.
static bool yaml_special_word(const char *s) {
  static const char *const words[] = {"null", "true", "false", "yes", "no", "on", "off", "y", "n"};
  char lower[8];
  size_t n = strlen(s);
  if (n >= sizeof lower) return false;
  for (size_t i = 0; i <= n; i++) lower[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
  for (size_t i = 0; i < ARRAY_LEN(words); i++)
    if (!strcmp(lower, words[i])) return true;
  return false;
}

void str_print_yaml(FILE *out, const char *s) {
  bool plain = *s && !strchr("-?:,[]{}#&*!|>'\"%@`~ .+", *s);
  for (const char *p = s; *p && plain; p++)
    plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("_.-/+", *p);
  double number;
  if (plain && !yaml_special_word(s) && !str_to_double(s, &number) && !(s[0] == '0' && s[1])) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(out, "\\x%02x", *p);
    else
      fputc(*p, out);
  }
  fputc('"', out);
}

void str_human_bytes(char *dst, size_t n, double bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t u = 0;
  while (bytes >= 1024 && u + 1 < ARRAY_LEN(units)) {
    bytes /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(dst, n, "%.0f B", bytes);
  else
    snprintf(dst, n, "%.1f %s", bytes, units[u]);
}

uint64_t digest_fnv1a64(const void *data, size_t len) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;  // FNV offset basis
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;  // FNV prime
  }
  return h;
}

void digest_text(const void *data, size_t len, char out[DIGEST_TEXT_BYTES]) {
  snprintf(out, DIGEST_TEXT_BYTES, "fnv1a64:%016llx", (unsigned long long)digest_fnv1a64(data, len));
}

// Unicode 15, table 3-7, "well-formed UTF-8 byte sequences": by the range
// of the first byte, the sequence length and the range of the second byte
// (any third and fourth are continuation bytes).  Every other first byte
// (a continuation, 0xc0 0xc1, 0xf5 and above) starts nothing.
static const struct {
  unsigned char first_lo, first_hi;
  int len;
  unsigned char second_lo, second_hi;
} utf8_forms[] = {
    {0xc2, 0xdf, 2, 0x80, 0xbf}, {0xe0, 0xe0, 3, 0xa0, 0xbf},  // no overlong forms
    {0xe1, 0xec, 3, 0x80, 0xbf}, {0xed, 0xed, 3, 0x80, 0x9f},  // no surrogates
    {0xee, 0xef, 3, 0x80, 0xbf}, {0xf0, 0xf0, 4, 0x90, 0xbf},  // no overlong forms
    {0xf1, 0xf3, 4, 0x80, 0xbf}, {0xf4, 0xf4, 4, 0x80, 0x8f},  // nothing above U+10FFFF
};

#define UTF8_ASCII_END 0x80  // bytes below stand for themselves

static bool is_continuation(unsigned char c) { return (c & 0xc0) == 0x80; }  // 10xxxxxx

int str_utf8_sequence_len(const unsigned char *s) {
  if (s[0] < UTF8_ASCII_END) return 1;
  for (size_t f = 0; f < ARRAY_LEN(utf8_forms); f++) {
    if (s[0] < utf8_forms[f].first_lo || s[0] > utf8_forms[f].first_hi) continue;
    if (s[1] < utf8_forms[f].second_lo || s[1] > utf8_forms[f].second_hi) return 0;
    for (int i = 2; i < utf8_forms[f].len; i++)
      if (!is_continuation(s[i])) return 0;
    return utf8_forms[f].len;
  }
  return 0;
}

// ---- JSON strings ---------------------------------------------------------------
//
// Names come from programs and models, so anything may be in them.  RFC
// 8259 requires '"', '\\' and U+0000..U+001F escaped and the text to be
// UTF-8: well-formed UTF-8 passes through, every byte that is not part of a
// well-formed sequence becomes U+FFFD.

#define JSON_FIRST_PRINTABLE 0x20  // below: control characters, escaped
#define UTF8_REPLACEMENT "\\ufffd"

// Writes one control character in its shortest JSON escape.
static void write_json_control(FILE *f, unsigned char c) {
  static const char short_escapes[][3] = {
      ['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n", ['\r'] = "\\r", ['\t'] = "\\t",
  };
  if (c < ARRAY_LEN(short_escapes) && short_escapes[c][0])
    fputs(short_escapes[c], f);
  else
    fprintf(f, "\\u%04x", c);
}

void str_print_json(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  fputc('"', f);
  while (*p) {
    int n = str_utf8_sequence_len(p);
    if (*p == '"' || *p == '\\') {
      fputc('\\', f);
      fputc(*p, f);
    } else if (*p < JSON_FIRST_PRINTABLE) {
      write_json_control(f, *p);
    } else if (n == 0) {
      fputs(UTF8_REPLACEMENT, f);
      n = 1;
    } else {
      fwrite(p, 1, (size_t)n, f);
    }
    p += n ? n : 1;
  }
  fputc('"', f);
}
