// harness.h: helpers shared by the cmocka unit tests: capture diagnostics
// in memory, load topologies and graphs from strings.
#ifndef TSPC_TEST_HARNESS_H
#define TSPC_TEST_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../passes/passes.h"

// Diagnostics written to a memory buffer; captured_text() reads them so far.
typedef struct Captured {
  Diag diag;
  char *text;
  size_t len;
} Captured;

static inline void capture_begin(Captured *c) {
  c->text = NULL;
  c->len = 0;
  diag_init(&c->diag, open_memstream(&c->text, &c->len));
}

static inline const char *captured_text(Captured *c) {
  fflush(c->diag.out);
  return c->text ? c->text : "";
}

static inline void capture_end(Captured *c) {
  fclose(c->diag.out);
  free(c->text);
}

// Loads a topology from YAML text; fails the test on errors.
static inline Topology *topo_ok(Arena *a, const char *yaml) {
  Captured c;
  capture_begin(&c);
  Topology *t = fe_load_topology_text(a, &c.diag, "t.yaml", yaml);
  if (!t) fail_msg("topology rejected:\n%s", captured_text(&c));
  capture_end(&c);
  return t;
}

// Loads YAML text that must be refused; returns the first line of the diagnostics.
static inline char *topo_error(Arena *a, const char *yaml) {
  Captured c;
  capture_begin(&c);
  Topology *t = fe_load_topology_text(a, &c.diag, "t.yaml", yaml);
  assert_null(t);
  const char *text = captured_text(&c);
  const char *nl = strchr(text, '\n');
  char *line = arena_strndup(a, text, nl ? (size_t)(nl - text) : strlen(text));
  capture_end(&c);
  return line;
}

#endif
