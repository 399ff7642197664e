// topology.c: reads a topology .yaml into the Topology IR.  Part of the
// frontend; ir/topology_build.c does the wiring once the keys are checked.
//
// libyaml's document API loads the whole file; this file walks it against a
// fixed schema.  Unknown keys, duplicate keys, wrong node types, missing keys,
// impossible values and alias loops are errors at the offending node's
// FILE:LINE:COL.  docs/topology.md lists every key.
#include "frontend.h"

#include <string.h>
#include <yaml.h>

typedef struct Loader {
  Arena *a;
  Diag *d;
  const SrcFile *src;
  yaml_document_t *doc;
  Topology *t;
  yaml_node_t *df_nodes, *df_racks;  // the values a port-budget error is about
  yaml_node_t *root;
  const struct Entry *settings;  // the file's top-level keys (read_settings)
  bool default_link_checked;  // default_link_fits has passed
} Loader;

// ---- locations and errors ---------------------------------------------------

// libyaml counts columns in characters; diagnostics count bytes (as the .tg
// front end does), so the caret lines up under any UTF-8 text.
static SrcLoc mark_loc(const SrcFile *src, yaml_mark_t start, yaml_mark_t end) {
  int line = (int)start.line + 1;
  int col = src_byte_column(src, line, start.column);
  int len = end.line == start.line ? src_byte_column(src, line, end.column) - col : 1;
  return (SrcLoc){src, line, col + 1, MAX(1, len)};
}

static SrcLoc node_loc(const Loader *L, const yaml_node_t *n) {
  if (n->type == YAML_SCALAR_NODE) return mark_loc(L->src, n->start_mark, n->end_mark);
  return mark_loc(L->src, n->start_mark, n->start_mark);
}

static void error_at(Loader *L, const yaml_node_t *n, const char *fmt, ...) PRINTF_LIKE(3, 4);
static void error_at(Loader *L, const yaml_node_t *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(L->d, node_loc(L, n), fmt, ap);
  va_end(ap);
}

static yaml_node_t *node_of(Loader *L, int index) { return yaml_document_get_node(L->doc, index); }

static const char *node_kind_name(const yaml_node_t *n) {
  switch (n->type) {
  case YAML_SCALAR_NODE: return "a scalar";
  case YAML_SEQUENCE_NODE: return "a sequence";
  case YAML_MAPPING_NODE: return "a mapping";
  default: return "nothing";
  }
}

// ---- alias loops --------------------------------------------------------------

// An alias inside the node it names makes the document a cycle; libyaml's
// document API accepts that, so every walk below would loop.  Colour search.
enum { WHITE, GREY, BLACK };

static bool check_acyclic(Loader *L, int index, unsigned char *colour, int depth) {
  yaml_node_t *n = node_of(L, index);
  if (colour[index] == GREY) {
    error_at(L, n, "alias loop: this node contains an alias to itself");
    return false;
  }
  if (colour[index] == BLACK) return true;
  if (depth > FE_MAX_YAML_DEPTH) {
    error_at(L, n, "nesting deeper than %d levels", FE_MAX_YAML_DEPTH);
    return false;
  }
  colour[index] = GREY;
  bool ok = true;
  if (n->type == YAML_SEQUENCE_NODE)
    for (yaml_node_item_t *i = n->data.sequence.items.start; ok && i < n->data.sequence.items.top; i++)
      ok = check_acyclic(L, *i, colour, depth + 1);
  if (n->type == YAML_MAPPING_NODE)
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; ok && p < n->data.mapping.pairs.top; p++)
      ok = check_acyclic(L, p->key, colour, depth + 1) && check_acyclic(L, p->value, colour, depth + 1);
  colour[index] = BLACK;
  return ok;
}

// ---- alias positions ------------------------------------------------------------

// libyaml's document API resolves an alias to the node it names and forgets
// where the alias was written, so an error about `*n` would point at `&n`.
// A second pass over the parser's events, in step with the document, finds
// every alias and gives its use a shallow copy of the node, marked at the
// alias.  (Children of an aliased collection keep their anchor's positions:
// that is where they are written.)
typedef struct Events {
  yaml_parser_t parser;
  yaml_event_t ev;
  bool have;  // ev holds an event to delete
} Events;

static bool events_next(Events *e) {
  if (e->have) yaml_event_delete(&e->ev);
  e->have = yaml_parser_parse(&e->parser, &e->ev);
  return e->have;
}

// A copy of node `index` (sharing its children) marked at [start, end].
static int clone_at(yaml_document_t *doc, int index, yaml_mark_t start, yaml_mark_t end) {
  yaml_node_t n = *yaml_document_get_node(doc, index);  // by value: nodes may move
  int copy = 0;
  if (n.type == YAML_SCALAR_NODE) {
    copy = yaml_document_add_scalar(doc, n.tag, n.data.scalar.value, (int)n.data.scalar.length,
                                    n.data.scalar.style);
  } else if (n.type == YAML_SEQUENCE_NODE) {
    copy = yaml_document_add_sequence(doc, n.tag, n.data.sequence.style);
    for (yaml_node_item_t *i = n.data.sequence.items.start; copy && i < n.data.sequence.items.top; i++)
      yaml_document_append_sequence_item(doc, copy, *i);
  } else if (n.type == YAML_MAPPING_NODE) {
    copy = yaml_document_add_mapping(doc, n.tag, n.data.mapping.style);
    for (yaml_node_pair_t *p = n.data.mapping.pairs.start; copy && p < n.data.mapping.pairs.top; p++)
      yaml_document_append_mapping_pair(doc, copy, p->key, p->value);
  }
  if (!copy) return index;  // out of memory: keep the anchor's position
  yaml_node_t *c = yaml_document_get_node(doc, copy);
  c->start_mark = start;
  c->end_mark = end;
  return copy;
}

// Walks the node in *slot and its events together; an alias event rewrites
// *slot to a copy marked at the alias.  False if the two ever disagree.
static bool mark_aliases(yaml_document_t *doc, Events *e, int *slot) {
  if (e->ev.type == YAML_ALIAS_EVENT) {
    *slot = clone_at(doc, *slot, e->ev.start_mark, e->ev.end_mark);
    return events_next(e);
  }
  if (e->ev.type == YAML_SCALAR_EVENT) return events_next(e);
  yaml_event_type_t end;
  if (e->ev.type == YAML_SEQUENCE_START_EVENT)
    end = YAML_SEQUENCE_END_EVENT;
  else if (e->ev.type == YAML_MAPPING_START_EVENT)
    end = YAML_MAPPING_END_EVENT;
  else
    return false;
  if (!events_next(e)) return false;
  // The items (or pairs) array belongs to this node and never moves while
  // copies are appended to the document, so slots into it stay valid.
  yaml_node_t *n = yaml_document_get_node(doc, *slot);
  if (n->type == YAML_SEQUENCE_NODE) {
    for (yaml_node_item_t *i = n->data.sequence.items.start, *top = n->data.sequence.items.top; i < top; i++)
      if (!mark_aliases(doc, e, i)) return false;
  } else {
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start, *top = n->data.mapping.pairs.top; p < top; p++)
      if (!mark_aliases(doc, e, &p->key) || !mark_aliases(doc, e, &p->value)) return false;
  }
  return e->ev.type == end && events_next(e);
}

// Runs mark_aliases over the first document of src (already loaded, acyclic).
static void mark_alias_positions(yaml_document_t *doc, const SrcFile *src) {
  Events e = {0};
  yaml_parser_initialize(&e.parser);
  yaml_parser_set_input_string(&e.parser, (const unsigned char *)src->text, src->len);
  int root = 1;
  // STREAM-START, DOCUMENT-START, then the root node's events.
  if (events_next(&e) && events_next(&e) && e.ev.type == YAML_DOCUMENT_START_EVENT && events_next(&e))
    mark_aliases(doc, &e, &root);
  if (e.have) yaml_event_delete(&e.ev);
  yaml_parser_delete(&e.parser);
}

// ---- scalars ------------------------------------------------------------------

static bool expect_plain_scalar(Loader *L, const yaml_node_t *n, const char *what,
                                const char *kind) {
  if (n->type != YAML_SCALAR_NODE) {
    error_at(L, n, "%s must be %s, not %s", what, kind, node_kind_name(n));
    return false;
  }
  if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE && strcmp(kind, "a string")) {
    error_at(L, n, "%s must be %s, not a quoted string", what, kind);
    return false;
  }
  return true;
}

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

// Whether s is all decimal digits after an optional sign: an integer,
// whatever its size.
static bool is_digits(const char *s) {
  s += *s == '-' || *s == '+';
  if (!*s) return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return false;
  return true;
}

static bool read_int(Loader *L, const yaml_node_t *n, const char *what, int64_t lo, int64_t hi,
                     int64_t *out) {
  if (!expect_plain_scalar(L, n, what, "an integer")) return false;
  int64_t v;
  if (!str_to_i64(scalar(n), &v)) {
    if (is_digits(scalar(n)))  // past int64: out of range, not "not an integer"
      error_at(L, n, "%s must be %s %lld, got %s", what, *scalar(n) == '-' ? "at least" : "at most",
               (long long)(*scalar(n) == '-' ? lo : hi), scalar(n));
    else
      error_at(L, n, "%s must be an integer, got '%s'", what, scalar(n));
    return false;
  }
  if (v < lo) {
    error_at(L, n, "%s must be at least %lld, got %lld", what, (long long)lo, (long long)v);
    return false;
  }
  if (v > hi) {
    error_at(L, n, "%s must be at most %lld, got %lld", what, (long long)hi, (long long)v);
    return false;
  }
  *out = v;
  return true;
}

// A YAML 1.2 core-schema boolean: plain true or false.
static bool read_bool(Loader *L, const yaml_node_t *n, const char *what, bool *out) {
  if (!expect_plain_scalar(L, n, what, "true or false")) return false;
  if (!strcmp(scalar(n), "true") || !strcmp(scalar(n), "false")) {
    *out = !strcmp(scalar(n), "true");
    return true;
  }
  error_at(L, n, "%s must be true or false, not '%s'", what, scalar(n));
  return false;
}

static bool read_int32(Loader *L, const yaml_node_t *n, const char *what, int lo, int hi, int *out) {
  int64_t v;
  if (!read_int(L, n, what, lo, hi, &v)) return false;
  *out = (int)v;
  return true;
}

// A number in (lo, hi] when lo_open, else [lo, hi].
static bool read_number(Loader *L, const yaml_node_t *n, const char *what, double lo, bool lo_open,
                        double hi, double *out) {
  if (!expect_plain_scalar(L, n, what, "a number")) return false;
  double v;
  if (!str_to_double(scalar(n), &v)) {
    error_at(L, n, "%s must be a number, got '%s'", what, scalar(n));
    return false;
  }
  if (lo_open ? v <= lo : v < lo) {
    error_at(L, n, "%s must be %s %g, got %s", what, lo_open ? "above" : "at least", lo, scalar(n));
    return false;
  }
  if (v > hi) {
    error_at(L, n, "%s must be at most %g, got %s", what, hi, scalar(n));
    return false;
  }
  *out = v;
  return true;
}

// ---- mappings with a fixed set of keys ------------------------------------------

typedef struct Entry {
  yaml_node_t *key, *value;  // NULL when absent
} Entry;

// Collects a mapping's pairs into seen[] by key (indexes of keys[]); reports
// unknown keys (with a hint), duplicates (with where the first one was) and
// keys that are not plain scalars.
static bool collect_keys(Loader *L, yaml_node_t *map, const char *where, const char *const *keys,
                         int nkeys, Entry *seen) {
  if (map->type != YAML_MAPPING_NODE) {
    error_at(L, map, "%s must be a mapping, not %s", where, node_kind_name(map));
    return false;
  }
  int errors = L->d->nerrors;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node_of(L, p->key), *v = node_of(L, p->value);
    if (k->type != YAML_SCALAR_NODE) {
      error_at(L, k, "a key in %s must be a plain name, not %s", where, node_kind_name(k));
      continue;
    }
    int found = -1, best = -1, best_dist = 3;
    for (int i = 0; i < nkeys; i++) {
      if (!strcmp(scalar(k), keys[i])) found = i;
      int dist = str_edit_distance(scalar(k), keys[i]);
      if (dist < best_dist) best_dist = dist, best = i;
    }
    if (found < 0) {
      if (best >= 0)
        error_at(L, k, "unknown key '%s' in %s; did you mean '%s'?", scalar(k), where, keys[best]);
      else
        error_at(L, k, "unknown key '%s' in %s", scalar(k), where);
      continue;
    }
    if (seen[found].key) {
      error_at(L, k, "duplicate key '%s' in %s", scalar(k), where);
      diag_note(L->d, node_loc(L, seen[found].key), "'%s' was first given here", keys[found]);
      continue;
    }
    seen[found] = (Entry){k, v};
  }
  return L->d->nerrors == errors;
}

// Where to point for an error about a whole entry: at its value when that is
// a scalar or a flow collection ({...}, [...]) written on the key's line, at
// its key when the value is a block spread over the lines below.
static yaml_node_t *entry_at(const Entry *e) {
  const yaml_node_t *v = e->value;
  bool block = (v->type == YAML_MAPPING_NODE && v->data.mapping.style == YAML_BLOCK_MAPPING_STYLE) ||
               (v->type == YAML_SEQUENCE_NODE && v->data.sequence.style == YAML_BLOCK_SEQUENCE_STYLE);
  return block ? e->key : e->value;
}

// ---- link parameters ------------------------------------------------------------

enum { LK_GBPS, LK_LATENCY, LK_VECTOR_BYTES, LK_WIRE_BYTES, LK_COUNT };
static const char *const link_keys[LK_COUNT] = {"gbps", "latency_cycles", "vector_bytes",
                                                "wire_bytes"};

static bool read_latency(Loader *L, const Entry *entry, LinkParams *p) {
  yaml_node_t *n = entry->value;
  p->latency_loc = node_loc(L, n);
  if (n->type != YAML_MAPPING_NODE) {
    if (!read_int32(L, n, "latency_cycles", 1, IR_MAX_LATENCY_CYCLES, &p->latency_min)) return false;
    p->latency_max = p->latency_min;
    return true;
  }
  static const char *const keys[] = {"min", "max"};
  Entry e[2] = {{0}};
  if (!collect_keys(L, n, "latency_cycles", keys, 2, e)) return false;
  if (!e[0].key || !e[1].key) {
    error_at(L, entry_at(entry), "latency_cycles needs both 'min' and 'max'");
    return false;
  }
  if (!read_int32(L, e[0].value, "latency_cycles min", 1, IR_MAX_LATENCY_CYCLES, &p->latency_min) ||
      !read_int32(L, e[1].value, "latency_cycles max", 1, IR_MAX_LATENCY_CYCLES, &p->latency_max))
    return false;
  if (p->latency_max < p->latency_min) {
    error_at(L, e[1].value, "latency_cycles max (%d) is below min (%d)", p->latency_max,
             p->latency_min);
    return false;
  }
  return true;
}

// Dragonfly port counts beyond any packaging (the machine has 4 and 2).
#define FE_MAX_GLOBAL_PORTS_PER_TSP 1024
#define FE_MAX_LINKS_PER_NODE_PAIR 1024

// The most SRAM one device may be given, in vectors (2^28 x 320 B = 80 GiB).
#define FE_MAX_SRAM_VECTORS (1 << 28)

// The most bytes one vector may carry (a named limit: the machine's is 320).
#define FE_MAX_VECTOR_BYTES (1 << 20)

// A receive buffer must absorb a link's latency range: vectors that leave
// `every` cycles apart may land as far apart as the range allows, and the
// compiler budgets rx_buffer_vectors x every - 1 cycles of it (the
// synchronisation pass, docs/passes.md).  False after saying so at the
// link's latency_cycles (or its gbps, or the link, when inherited).
static bool buffer_absorbs_latency(Loader *L, yaml_node_t *where, const Entry *e, const LinkParams *p) {
  int64_t every = ir_cycles_per_vector(p, L->t->clock_mhz), absorbs = (int64_t)L->t->rx_buffer_vectors * every - 1;
  if (p->latency_max - p->latency_min <= absorbs) return true;
  error_at(L, e[LK_LATENCY].key ? e[LK_LATENCY].value : e[LK_GBPS].key ? e[LK_GBPS].value : where,
           "latency_cycles varies by %d cycles (%d to %d), more than a receive buffer absorbs: rx_buffer_vectors "
           "(%d) x %lld cycles a vector - 1 = %lld; give a narrower range, more rx_buffer_vectors or slower links",
           p->latency_max - p->latency_min, p->latency_min, p->latency_max, L->t->rx_buffer_vectors,
           (long long)every, (long long)absorbs);
  return false;
}

// A link's timing under the file's clock: a vector holds it for a bounded
// number of cycles, and the receive buffers absorb its latency range.
// False after saying so at its gbps (else `where`), or its latency_cycles
// (buffer_absorbs_latency); `what` names the link in the message.
static bool link_fits_clock(Loader *L, yaml_node_t *where, const Entry *e, const LinkParams *p, const char *what) {
  if (ir_cycles_per_vector(p, L->t->clock_mhz) < 0) {
    error_at(L, e[LK_GBPS].key ? e[LK_GBPS].value : where,
             "one vector would hold %s for more than %d cycles (%d wire bytes at %g Gb/s and %g MHz)", what,
             IR_MAX_CYCLES_PER_VECTOR, p->wire_bytes, p->gbps, L->t->clock_mhz);
    return false;
  }
  return buffer_absorbs_latency(L, where, e, p);
}

// Reads the link-parameter entries e[] over *p (which holds the inherited values).
static bool read_link_entries(Loader *L, yaml_node_t *where, Entry *e, LinkParams *p) {
  bool ok = true;
  if (e[LK_GBPS].key) ok &= read_number(L, e[LK_GBPS].value, "gbps", 0, true, 1e6, &p->gbps);
  if (e[LK_LATENCY].key) ok &= read_latency(L, &e[LK_LATENCY], p);
  if (e[LK_VECTOR_BYTES].key)
    ok &= read_int32(L, e[LK_VECTOR_BYTES].value, "vector_bytes", 1, FE_MAX_VECTOR_BYTES,
                     &p->vector_bytes);
  if (e[LK_WIRE_BYTES].key)
    ok &= read_int32(L, e[LK_WIRE_BYTES].value, "wire_bytes", 1, FE_MAX_VECTOR_BYTES,
                     &p->wire_bytes);
  if (ok && p->wire_bytes < p->vector_bytes) {
    error_at(L, e[LK_WIRE_BYTES].key ? e[LK_WIRE_BYTES].value : where,
             "wire_bytes (%d) must be at least vector_bytes (%d)", p->wire_bytes, p->vector_bytes);
    ok = false;
  }
  return ok && link_fits_clock(L, where, e, p, "this link");
}

static bool read_link_params(Loader *L, yaml_node_t *n, LinkParams *p) {
  Entry e[LK_COUNT] = {{0}};
  return collect_keys(L, n, "link", link_keys, LK_COUNT, e) && read_link_entries(L, n, e, p);
}

// ---- the top level ----------------------------------------------------------------

enum {
  K_NAME, K_TOPOLOGY, K_DIMS, K_DEVICES, K_LINKS, K_DRAGONFLY, K_LINK,
  K_FAILED_LINKS, K_SPARE_NODES, K_FAILED_NODES, K_FAILED_DEVICES, K_DRIFT_PPM, K_CLOCK_MHZ,
  K_EPOCH, K_SRAM, K_RX_BUFFER, K_BYPASS, K_COUNT
};
static const char *const top_keys[K_COUNT] = {
    "name", "topology", "dims", "devices", "links", "dragonfly", "link",
    "failed_links", "spare_nodes", "failed_nodes", "failed_devices", "drift_ppm", "clock_mhz",
    "epoch_cycles", "sram_vectors", "rx_buffer_vectors", "bypass"};

#define FAM(f) (1u << FAMILY_##f)
#define ALL_FAMILIES ((1u << FAMILY_COUNT) - 1)
// Which families each key applies to, and which it is required by.
static const unsigned key_families[K_COUNT] = {
    [K_NAME] = ALL_FAMILIES, [K_TOPOLOGY] = ALL_FAMILIES,
    [K_DIMS] = FAM(MESH) | FAM(TORUS),
    [K_DEVICES] = FAM(RING) | FAM(FULLY_CONNECTED) | FAM(EXPLICIT),
    [K_LINKS] = FAM(EXPLICIT), [K_DRAGONFLY] = FAM(DRAGONFLY),
    [K_LINK] = ALL_FAMILIES, [K_FAILED_LINKS] = ALL_FAMILIES, [K_SPARE_NODES] = ALL_FAMILIES,
    [K_FAILED_NODES] = FAM(DRAGONFLY), [K_FAILED_DEVICES] = ALL_FAMILIES,
    [K_DRIFT_PPM] = ALL_FAMILIES, [K_CLOCK_MHZ] = ALL_FAMILIES, [K_EPOCH] = ALL_FAMILIES,
    [K_SRAM] = ALL_FAMILIES, [K_RX_BUFFER] = ALL_FAMILIES, [K_BYPASS] = FAM(MESH)};
static const unsigned key_required_by[K_COUNT] = {
    [K_TOPOLOGY] = ALL_FAMILIES, [K_DIMS] = FAM(MESH) | FAM(TORUS),
    [K_DEVICES] = FAM(RING) | FAM(FULLY_CONNECTED) | FAM(EXPLICIT),
    [K_DRAGONFLY] = FAM(DRAGONFLY)};

static bool read_family(Loader *L, yaml_node_t *n, TopoFamily *out) {
  if (!expect_plain_scalar(L, n, "topology", "a family name")) return false;
  int best = -1, best_dist = 4;
  for (int f = 0; f < FAMILY_COUNT; f++) {
    if (!strcmp(scalar(n), ir_family_names[f])) {
      *out = (TopoFamily)f;
      return true;
    }
    int dist = str_edit_distance(scalar(n), ir_family_names[f]);
    if (dist < best_dist) best_dist = dist, best = f;
  }
  if (best >= 0)
    error_at(L, n, "unknown topology family '%s'; did you mean '%s'?", scalar(n), ir_family_names[best]);
  else
    error_at(L, n,
             "unknown topology family '%s' (expected mesh, torus, ring, fully_connected, explicit "
             "or dragonfly)",
             scalar(n));
  return false;
}

static bool check_family_keys(Loader *L, yaml_node_t *root, Entry *e, TopoFamily f) {
  bool ok = true;
  for (int k = 0; k < K_COUNT; k++) {
    if (e[k].key && !(key_families[k] & (1u << f))) {
      error_at(L, e[k].key, "key '%s' does not apply to a %s topology%s", top_keys[k], ir_family_names[f],
               k == K_FAILED_NODES ? " (it has no nodes): list failed devices in failed_devices" : "");
      ok = false;
    }
    if (!e[k].key && (key_required_by[k] & (1u << f))) {
      error_at(L, e[K_TOPOLOGY].key ? e[K_TOPOLOGY].value : root,
               "a %s topology needs the key '%s'", ir_family_names[f], top_keys[k]);
      ok = false;
    }
  }
  return ok;
}

static bool read_dims(Loader *L, yaml_node_t *n, Topology *t) {
  if (n->type != YAML_SEQUENCE_NODE) {
    error_at(L, n, "dims must be a sequence like [4, 4], not %s", node_kind_name(n));
    return false;
  }
  long count = n->data.sequence.items.top - n->data.sequence.items.start;
  if (count < 1 || count > IR_MAX_TOPO_DIMS) {
    error_at(L, n, "dims must list 1 to %d sizes, got %ld", IR_MAX_TOPO_DIMS, count);
    return false;
  }
  int64_t product = 1;
  t->ndims = (int)count;
  for (int d = 0; d < count; d++) {
    yaml_node_t *item = node_of(L, n->data.sequence.items.start[d]);
    if (!read_int32(L, item, "a dimension", 1, IR_MAX_DEVICES, &t->dims[d])) return false;
    product *= t->dims[d];
    if (product > IR_MAX_DEVICES) {
      error_at(L, n, "dims make more than %d devices", IR_MAX_DEVICES);
      return false;
    }
  }
  t->ndevices = (int)product;
  return true;
}

enum { DF_TSPS, DF_GPORTS, DF_NODES, DF_NODES_PER_RACK, DF_RACKS, DF_PAIR_LINKS, DF_COUNT };
static const char *const df_keys[DF_COUNT] = {"tsps_per_node", "global_ports_per_tsp", "nodes",
                                              "nodes_per_rack", "racks", "links_per_node_pair"};

static bool read_dragonfly(Loader *L, const Entry *entry, Topology *t) {
  yaml_node_t *n = entry->value, *key = entry_at(entry);
  Entry e[DF_COUNT] = {{0}};
  if (!collect_keys(L, n, "dragonfly", df_keys, DF_COUNT, e)) return false;
  Dragonfly *df = &t->df;
  df->tsps_per_node = IR_DEFAULT_TSPS_PER_NODE;
  df->global_ports_per_tsp = IR_DEFAULT_GLOBAL_PORTS_PER_TSP;
  df->two_level = e[DF_NODES_PER_RACK].key || e[DF_RACKS].key;
  df->links_per_node_pair = df->two_level ? IR_DEFAULT_LINKS_PER_NODE_PAIR_TWO_LEVEL
                                          : IR_DEFAULT_LINKS_PER_NODE_PAIR_ONE_LEVEL;
  if (e[DF_NODES].key && df->two_level) {
    error_at(L, e[DF_NODES].key, "give either 'nodes' or 'nodes_per_rack' and 'racks', not both");
    return false;
  }
  if (df->two_level && (!e[DF_NODES_PER_RACK].key || !e[DF_RACKS].key)) {
    error_at(L, key, "a two-level dragonfly needs both 'nodes_per_rack' and 'racks'");
    return false;
  }
  if (!df->two_level && !e[DF_NODES].key) {
    error_at(L, key, "dragonfly needs 'nodes', or 'nodes_per_rack' and 'racks'");
    return false;
  }
  L->df_nodes = df->two_level ? e[DF_NODES_PER_RACK].value : e[DF_NODES].value;
  L->df_racks = df->two_level ? e[DF_RACKS].value : NULL;
  bool ok = true;
  if (e[DF_TSPS].key) ok &= read_int32(L, e[DF_TSPS].value, "tsps_per_node", 1, IR_MAX_DEVICES, &df->tsps_per_node);
  if (e[DF_GPORTS].key)
    ok &= read_int32(L, e[DF_GPORTS].value, "global_ports_per_tsp", 0, FE_MAX_GLOBAL_PORTS_PER_TSP, &df->global_ports_per_tsp);
  if (e[DF_PAIR_LINKS].key)
    ok &= read_int32(L, e[DF_PAIR_LINKS].value, "links_per_node_pair", 1, FE_MAX_LINKS_PER_NODE_PAIR, &df->links_per_node_pair);
  if (df->two_level) {
    ok &= read_int32(L, e[DF_NODES_PER_RACK].value, "nodes_per_rack", 1, IR_MAX_DEVICES, &df->nodes_per_rack);
    ok &= read_int32(L, e[DF_RACKS].value, "racks", 1, IR_MAX_DEVICES, &df->racks);
  } else {
    ok &= read_int32(L, e[DF_NODES].value, "nodes", 1, IR_MAX_DEVICES, &df->nodes_per_rack);
    df->racks = 1;
  }
  if (!ok) return false;
  int64_t devices = (int64_t)df->tsps_per_node * df->nodes_per_rack * df->racks;
  if (devices > IR_MAX_DEVICES) {
    error_at(L, n, "this dragonfly has %lld devices, more than the limit of %d", (long long)devices,
             IR_MAX_DEVICES);
    return false;
  }
  t->ndevices = (int)devices;
  return true;
}

// ---- explicit links, failed links, spares -------------------------------------------

static bool read_device_id(Loader *L, yaml_node_t *n, const char *what, int *out) {
  int64_t v;
  if (!read_int(L, n, what, 0, INT32_MAX, &v)) return false;
  if (v >= L->t->ndevices) {
    error_at(L, n, "%s %lld does not exist (devices are 0..%d)", what, (long long)v,
             L->t->ndevices - 1);
    return false;
  }
  *out = (int)v;
  return true;
}

// [a, b]: the two device ids of a pair.
static bool read_pair(Loader *L, yaml_node_t *n, const char *what, int *a, int *b) {
  if (n->type != YAML_SEQUENCE_NODE ||
      n->data.sequence.items.top - n->data.sequence.items.start != 2) {
    error_at(L, n, "%s must be a pair of devices like [0, 1]", what);
    return false;
  }
  return read_device_id(L, node_of(L, n->data.sequence.items.start[0]), "device", a) &&
         read_device_id(L, node_of(L, n->data.sequence.items.start[1]), "device", b);
}

// The default link under this file's clock and receive buffers, when no
// `link:` overrides it: the checks read_link_entries makes of one that
// does, said at clock_mhz (else rx_buffer_vectors, else the file's start),
// the settings that made the defaults unfit (clock_mhz: 1 makes a vector
// one cycle, too few for the default latency range to land in 4 of them).
static bool default_link_fits(Loader *L) {
  if (L->default_link_checked) return true;
  const LinkParams *p = &L->t->link;
  const Entry *top = L->settings;
  yaml_node_t *where = top[K_CLOCK_MHZ].key ? top[K_CLOCK_MHZ].value : top[K_RX_BUFFER].key ? top[K_RX_BUFFER].value : L->root;
  Entry none[LK_COUNT] = {{0}};
  return L->default_link_checked = link_fits_clock(L, where, none, p, "the default link");
}

static bool read_explicit_link(Loader *L, yaml_node_t *n) {
  LinkParams p = L->t->link;
  int a, b;
  if (n->type == YAML_MAPPING_NODE) {
    // A link's keys: its two ends, then every link parameter (link_keys).
    const char *keys[2 + LK_COUNT] = {"a", "b"};
    for (int k = 0; k < LK_COUNT; k++) keys[2 + k] = link_keys[k];
    Entry e[2 + LK_COUNT] = {{0}};
    if (!collect_keys(L, n, "a link", keys, 2 + LK_COUNT, e)) return false;
    if (!e[0].key || !e[1].key) {
      error_at(L, n, "a link needs both ends, 'a' and 'b'");
      return false;
    }
    if (!read_device_id(L, e[0].value, "device", &a) || !read_device_id(L, e[1].value, "device", &b) ||
        !read_link_entries(L, n, e + 2, &p))
      return false;
  } else if (!read_pair(L, n, "a link", &a, &b) || !default_link_fits(L)) {
    return false;
  }
  if (a == b) {
    error_at(L, n, "a link cannot join device %d to itself", a);
    return false;
  }
  if (L->t->links.len >= IR_MAX_LINKS) {
    error_at(L, n, "more than %d links", IR_MAX_LINKS);
    return false;
  }
  ir_topo_connect(L->t, L->a, a, -1, b, -1, LINK_EXPLICIT, p);
  return true;
}

static bool read_explicit_links(Loader *L, yaml_node_t *n) {
  if (n->type != YAML_SEQUENCE_NODE) {
    error_at(L, n, "links must be a sequence of [a, b] pairs, not %s", node_kind_name(n));
    return false;
  }
  bool ok = true;
  for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++)
    ok &= read_explicit_link(L, node_of(L, *i));
  return ok;
}

// Marks the first working link between a and b failed (the lowest link
// id, found among a's ports: a list of failed links costs its length times
// a device's ports, not times every link).
static bool fail_link(Topology *t, int a, int b) {
  int first = -1;
  const Device *d = &t->devices[a];
  for (int p = 0; p < d->nports; p++) {
    int id = d->ports[p].link;
    if (id < 0 || d->ports[p].peer != b || t->links.data[id].failed) continue;
    if (first < 0 || id < first) first = id;
  }
  if (first < 0) return false;
  t->links.data[first].failed = true;
  t->nfailed++;
  return true;
}

static bool read_failed_links(Loader *L, yaml_node_t *n) {
  if (n->type != YAML_SEQUENCE_NODE) {
    error_at(L, n, "failed_links must be a sequence of [a, b] pairs, not %s", node_kind_name(n));
    return false;
  }
  bool ok = true;
  for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
    yaml_node_t *item = node_of(L, *i);
    int a, b;
    if (!read_pair(L, item, "a failed link", &a, &b)) {
      ok = false;
    } else if (a == b) {
      error_at(L, item, "a failed link joins two different devices, not %d and %d", a, b);
      ok = false;
    } else if (!fail_link(L->t, a, b)) {
      error_at(L, item, "no working link joins devices %d and %d", a, b);
      ok = false;
    }
  }
  return ok;
}

// A failed link whose device has failed too (failed_devices or
// failed_nodes: ir_device_failed, once the service table is made) names
// no working cable: the device's cables are down with it.  Refused at the
// link, as a cable listed twice is.
static bool failed_links_on_working_devices(Loader *L, yaml_node_t *n) {
  for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
    yaml_node_t *item = node_of(L, *i);
    int a, b;
    if (!read_pair(L, item, "a failed link", &a, &b)) return false;
    int dead = ir_device_failed(L->t, a) ? a : ir_device_failed(L->t, b) ? b : -1;
    if (dead >= 0) {
      error_at(L, item, "device %d has failed, and its links with it: list the link or the device, not both", dead);
      return false;
    }
  }
  return true;
}

static bool read_spares(Loader *L, yaml_node_t *n) {
  Topology *t = L->t;
  int limit = t->family == FAMILY_DRAGONFLY ? t->df.racks * t->df.nodes_per_rack : t->ndevices;
  const char *what = t->family == FAMILY_DRAGONFLY ? "node" : "device";
  if (n->type != YAML_SEQUENCE_NODE) {
    error_at(L, n, "spare_nodes must be a sequence of %s numbers, not %s", what, node_kind_name(n));
    return false;
  }
  long count = n->data.sequence.items.top - n->data.sequence.items.start;
  t->spare_nodes = ARENA_ARRAY(L->a, int, count + 1);
  bool *listed = ARENA_ARRAY(L->a, bool, limit + 1);  // a bitmap: a long list costs its length
  memset(listed, 0, sizeof(bool) * ((size_t)limit + 1));
  for (long i = 0; i < count; i++) {
    yaml_node_t *item = node_of(L, n->data.sequence.items.start[i]);
    int v;
    if (!read_int32(L, item, "a spare node", 0, limit - 1, &v)) return false;
    if (listed[v]) {
      error_at(L, item, "%s %d is listed as a spare twice", what, v);
      return false;
    }
    listed[v] = true;
    t->spare_nodes[t->nspares++] = v;
  }
  return true;
}

// A bitmap of `limit` entries with list[0..n) set (a long list costs its length).
static bool *bitmap_of(Loader *L, const int *list, int n, int limit) {
  bool *set = ARENA_ARRAY(L->a, bool, limit);
  for (int i = 0; i < n; i++) set[list[i]] = true;
  return set;
}

static const char *const spare_that_fails = "a spare that fails is dropped from spare_nodes, not listed as failed";

// failed_nodes: [N, ...] (dragonfly): nodes out of service, none a spare.
static bool read_failed_nodes(Loader *L, yaml_node_t *n) {
  Topology *t = L->t;
  int nodes = t->df.racks * t->df.nodes_per_rack;
  if (n->type != YAML_SEQUENCE_NODE) {
    error_at(L, n, "failed_nodes must be a sequence of node numbers, not %s", node_kind_name(n));
    return false;
  }
  long count = n->data.sequence.items.top - n->data.sequence.items.start;
  t->failed_nodes = ARENA_ARRAY(L->a, int, count + 1);
  bool *listed = bitmap_of(L, NULL, 0, nodes), *spare = bitmap_of(L, t->spare_nodes, t->nspares, nodes);
  for (long i = 0; i < count; i++) {
    yaml_node_t *item = node_of(L, n->data.sequence.items.start[i]);
    int v;
    if (!read_int32(L, item, "a failed node", 0, nodes - 1, &v)) return false;
    if (listed[v]) {
      error_at(L, item, "node %d is listed as failed twice", v);
      return false;
    }
    if (spare[v]) {
      error_at(L, item, "node %d is a spare: %s", v, spare_that_fails);
      return false;
    }
    listed[v] = true;
    t->failed_nodes[t->nfailed_nodes++] = v;
  }
  return true;
}

// One entry of failed_devices: not listed before, not a spare, not on a
// node failed_nodes lists (dragonfly).
static bool failed_device_ok(Loader *L, yaml_node_t *item, int v, const bool *listed, const bool *spare,
                             const bool *failed_node) {
  bool df = L->t->family == FAMILY_DRAGONFLY;
  int unit = ir_device_unit(L->t, v);
  if (listed[v])
    error_at(L, item, "device %d is listed as failed twice", v);
  else if (spare[unit] && df)
    error_at(L, item, "device %d is on spare node %d: %s", v, unit, spare_that_fails);
  else if (spare[unit])
    error_at(L, item, "device %d is a spare: %s", v, spare_that_fails);
  else if (failed_node[unit])
    error_at(L, item, "device %d is on node %d, which failed_nodes lists already", v, unit);
  else
    return true;
  return false;
}

// failed_devices: [D, ...]: devices out of service (on a dragonfly, their
// nodes: a spare node stands in for a whole node).
static bool read_failed_devices(Loader *L, yaml_node_t *n) {
  Topology *t = L->t;
  if (n->type != YAML_SEQUENCE_NODE) {
    error_at(L, n, "failed_devices must be a sequence of device ids, not %s", node_kind_name(n));
    return false;
  }
  int units = t->family == FAMILY_DRAGONFLY ? t->df.racks * t->df.nodes_per_rack : t->ndevices;
  long count = n->data.sequence.items.top - n->data.sequence.items.start;
  t->failed_devices = ARENA_ARRAY(L->a, int, count + 1);
  bool *listed = bitmap_of(L, NULL, 0, t->ndevices), *spare = bitmap_of(L, t->spare_nodes, t->nspares, units);
  bool *failed_node = bitmap_of(L, t->failed_nodes, t->nfailed_nodes, units);
  for (long i = 0; i < count; i++) {
    yaml_node_t *item = node_of(L, n->data.sequence.items.start[i]);
    int v;
    if (!read_device_id(L, item, "failed device", &v) || !failed_device_ok(L, item, v, listed, spare, failed_node))
      return false;
    listed[v] = true;
    t->failed_devices[t->nfailed_devices++] = v;
  }
  return true;
}

// drift_ppm: [d0, d1, ...]: each device's exact clock error, signed.
static bool read_device_drifts(Loader *L, yaml_node_t *n) {
  Topology *t = L->t;
  long count = n->data.sequence.items.top - n->data.sequence.items.start;
  if (count != t->ndevices) {
    error_at(L, n, "drift_ppm lists %ld value%s; the topology has %d devices", count, count == 1 ? "" : "s",
             t->ndevices);
    return false;
  }
  t->device_drift_ppm = ARENA_ARRAY(L->a, double, t->ndevices);
  for (long i = 0; i < count; i++) {
    yaml_node_t *item = node_of(L, n->data.sequence.items.start[i]);
    if (!read_number(L, item, "a device's drift_ppm", -FE_MAX_DRIFT_PPM, false, FE_MAX_DRIFT_PPM,
                     &t->device_drift_ppm[i]))
      return false;
    double size = t->device_drift_ppm[i] < 0 ? -t->device_drift_ppm[i] : t->device_drift_ppm[i];
    if (size > t->drift_ppm || i == 0) t->drift_ppm = size, t->drift_loc = node_loc(L, item);  // the figure a plan uses
  }
  return true;
}

// ---- the whole document ---------------------------------------------------------------

static const char *default_name(Arena *a, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  return arena_strndup(a, base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
}

// Reads the keys every family shares, then the family's own.
static bool read_settings(Loader *L, yaml_node_t *root, Entry *e) {
  Topology *t = L->t;
  bool ok = true;
  t->name = default_name(L->a, L->src->path);
  if (e[K_NAME].key) {
    yaml_node_t *n = e[K_NAME].value;
    if (!expect_plain_scalar(L, n, "name", "a string")) return false;
    if (!*scalar(n)) {
      error_at(L, e[K_NAME].key, "name must not be empty");
      return false;
    }
    t->name = arena_strdup(L->a, scalar(n));
  }
  t->clock_mhz = IR_DEFAULT_CLOCK_MHZ;
  t->link = ir_link_defaults();
  t->epoch_cycles = IR_DEFAULT_EPOCH_CYCLES;
  t->sram_vectors = IR_DEFAULT_SRAM_VECTORS;
  t->rx_buffer_vectors = IR_DEFAULT_RX_BUFFER_VECTORS;
  if (e[K_EPOCH].key) {
    ok &= read_int32(L, e[K_EPOCH].value, "epoch_cycles", 2, 1 << 20, &t->epoch_cycles);
    t->epoch_loc = node_loc(L, e[K_EPOCH].value);
  }
  if (e[K_DRIFT_PPM].key && e[K_DRIFT_PPM].value->type != YAML_SEQUENCE_NODE)
    t->drift_loc = node_loc(L, e[K_DRIFT_PPM].value);  // a list's: its largest (read_device_drifts)
  if (e[K_SRAM].key) ok &= read_int32(L, e[K_SRAM].value, "sram_vectors", 1, FE_MAX_SRAM_VECTORS, &t->sram_vectors);
  if (e[K_RX_BUFFER].key) {
    ok &= read_int32(L, e[K_RX_BUFFER].value, "rx_buffer_vectors", 1, 1 << 20, &t->rx_buffer_vectors);
    t->rx_buffer_loc = node_loc(L, e[K_RX_BUFFER].value);
  }
  if (e[K_CLOCK_MHZ].key) ok &= read_number(L, e[K_CLOCK_MHZ].value, "clock_mhz", 0, true, 1e6, &t->clock_mhz);
  if (e[K_DRIFT_PPM].key && e[K_DRIFT_PPM].value->type != YAML_SEQUENCE_NODE)
    ok &= read_number(L, e[K_DRIFT_PPM].value, "drift_ppm", 0, false, FE_MAX_DRIFT_PPM, &t->drift_ppm);
  L->root = root, L->settings = e;
  if (e[K_LINK].key) ok &= read_link_params(L, e[K_LINK].value, &t->link), L->default_link_checked = ok;
  else if (ok && t->family != FAMILY_EXPLICIT) ok &= default_link_fits(L);  // an explicit link may give its own
  if (e[K_BYPASS].key) ok &= read_bool(L, e[K_BYPASS].value, "bypass", &t->bypass);
  if (!ok) return false;
  switch (t->family) {
  case FAMILY_MESH:
  case FAMILY_TORUS: return read_dims(L, e[K_DIMS].value, t);
  case FAMILY_DRAGONFLY: return read_dragonfly(L, &e[K_DRAGONFLY], t);
  default: return read_int32(L, e[K_DEVICES].value, "devices", 1, IR_MAX_DEVICES, &t->ndevices);
  }
  (void)root;
}

// Where the first FE_MAX_DROPPED_WARNINGS + 1 dropped roles (failed units
// no spare stands in for) are listed: the unit's first entry in
// failed_nodes, else in failed_devices, for fe_warn_dropped_roles.  Only
// those few are located: a location costs the length of its line.
static void locate_dropped_roles(Loader *L, const Entry *e) {
  Topology *t = L->t;
  bool *wanted = ARENA_ARRAY(L->a, bool, t->nroles + 1);
  for (int i = 0, n = 0; i < t->nroles && n <= FE_MAX_DROPPED_WARNINGS; i++)
    if (t->roles[i].spare < 0) wanted[i] = true, n++;
  const int keys[] = {K_FAILED_NODES, K_FAILED_DEVICES};
  for (size_t k = 0; k < ARRAY_LEN(keys); k++) {
    yaml_node_t *list = e[keys[k]].value;
    if (!list) continue;
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top; i++) {
      yaml_node_t *item = node_of(L, *i);
      int64_t v;
      if (!str_to_i64(scalar(item), &v)) continue;
      const Role *r = ir_failed_role(t, keys[k] == K_FAILED_NODES ? (int)v : ir_device_unit(t, (int)v));
      long at = r ? r - t->roles : -1;
      if (at >= 0 && wanted[at]) t->roles[at].loc = node_loc(L, item), wanted[at] = false;
    }
  }
}

// The service table (ir/topology_roles.c): spares stand in for failed
// units; something must be left to run, and the failed devices must not
// cut the working ones apart.
static bool assign_service(Loader *L, yaml_node_t *root, const Entry *e) {
  Topology *t = L->t;
  ir_topo_assign_roles(t, L->a);
  locate_dropped_roles(L, e);
  yaml_node_t *at = e[K_FAILED_DEVICES].key ? entry_at(&e[K_FAILED_DEVICES])
                    : e[K_FAILED_NODES].key ? entry_at(&e[K_FAILED_NODES])
                    : e[K_SPARE_NODES].key  ? entry_at(&e[K_SPARE_NODES])
                                            : root;
  if (t->nin_service == 0) {
    error_at(L, at, "no device is left in service: every %s is a spare or has failed",
             t->family == FAMILY_DRAGONFLY ? "node" : "device");
    return false;
  }
  int unreached;
  if (!ir_topo_connected(t, &unreached)) {
    error_at(L, at, "the failed devices cut the network: device %d cannot reach device %d", unreached,
             ir_topo_first_working(t));
    return false;
  }
  return true;
}

static bool wire(Loader *L, yaml_node_t *root, Entry *e) {
  Topology *t = L->t;
  char err[256];
  TopoBuildError problem = ir_topo_build(t, L->a, err, sizeof err);
  if (problem != TOPO_BUILD_OK) {
    yaml_node_t *at = problem == TOPO_BUILD_NODE_PORTS                 ? L->df_nodes
                      : problem == TOPO_BUILD_RACK_PORTS               ? L->df_racks
                      : e[K_DRAGONFLY].key ? entry_at(&e[K_DRAGONFLY])
                      : e[K_DEVICES].key   ? e[K_DEVICES].value
                      : e[K_DIMS].key      ? e[K_DIMS].value
                                           : root;
    error_at(L, at, "%s", err);
    return false;
  }
  if (t->family == FAMILY_EXPLICIT) {
    ir_topo_init_devices(t, L->a, t->ndevices, 0);
    if (e[K_LINKS].key && !read_explicit_links(L, e[K_LINKS].value)) return false;
  }
  if (e[K_FAILED_LINKS].key && !read_failed_links(L, e[K_FAILED_LINKS].value)) return false;
  if (e[K_SPARE_NODES].key && !read_spares(L, e[K_SPARE_NODES].value)) return false;
  if (e[K_FAILED_NODES].key && !read_failed_nodes(L, e[K_FAILED_NODES].value)) return false;
  if (e[K_FAILED_DEVICES].key && !read_failed_devices(L, e[K_FAILED_DEVICES].value)) return false;
  if (e[K_DRIFT_PPM].key && e[K_DRIFT_PPM].value->type == YAML_SEQUENCE_NODE &&
      !read_device_drifts(L, e[K_DRIFT_PPM].value))
    return false;
  int unreached;
  if (!ir_topo_connected(t, &unreached)) {
    yaml_node_t *at = e[K_FAILED_LINKS].key ? entry_at(&e[K_FAILED_LINKS])
                      : e[K_LINKS].key      ? entry_at(&e[K_LINKS])
                                            : root;
    error_at(L, at, "the network is not connected: device %d cannot reach device 0", unreached);
    return false;
  }
  return assign_service(L, root, e) && (!e[K_FAILED_LINKS].key || failed_links_on_working_devices(L, e[K_FAILED_LINKS].value));
}

static Topology *load_document(Loader *L) {
  yaml_node_t *root = yaml_document_get_root_node(L->doc);
  if (!root) {
    diag_error(L->d, (SrcLoc){L->src, 1, 1, 1}, "the topology file is empty");
    return NULL;
  }
  int nnodes = (int)(L->doc->nodes.top - L->doc->nodes.start);
  unsigned char *colour = xcalloc((size_t)nnodes + 1, 1);
  bool acyclic = check_acyclic(L, 1, colour, 0);
  free(colour);
  if (!acyclic) return NULL;
  mark_alias_positions(L->doc, L->src);
  root = yaml_document_get_root_node(L->doc);  // copies may have moved the nodes
  Entry e[K_COUNT] = {{0}};
  if (!collect_keys(L, root, "the topology", top_keys, K_COUNT, e)) return NULL;
  if (!e[K_TOPOLOGY].key) {
    error_at(L, root, "missing key 'topology' (mesh, torus, ring, fully_connected, explicit or dragonfly)");
    return NULL;
  }
  L->t = ARENA_NEW(L->a, Topology);
  L->t->src = L->src;
  if (!read_family(L, e[K_TOPOLOGY].value, &L->t->family)) return NULL;
  if (!check_family_keys(L, root, e, L->t->family)) return NULL;
  if (!read_settings(L, root, e) || !wire(L, root, e)) return NULL;
  return L->t;
}

// Where libyaml's parser stopped: reader errors (bad bytes, bad UTF-8) carry
// a byte offset, scanner and parser errors a mark.
static SrcLoc problem_loc(const yaml_parser_t *p, const SrcFile *src) {
  if (p->error != YAML_READER_ERROR) return mark_loc(src, p->problem_mark, p->problem_mark);
  SrcLoc loc = {src, 1, 1, 1};
  for (size_t i = 0; i < p->problem_offset && i < src->len; i++) {
    if (src->text[i] == '\n') {
      loc.line++;
      loc.col = 1;
    } else {
      loc.col++;
    }
  }
  return loc;
}

// libyaml's problem, and where the construct it was reading began (an
// unclosed [ or { is only found at the end of the file).
void fe_yaml_report_error(Diag *d, const yaml_parser_t *p, const SrcFile *src) {
  diag_error(d, problem_loc(p, src), "invalid YAML: %s%s%s",
             p->problem ? p->problem : "unknown error", p->context ? " " : "",
             p->context ? p->context : "");
  bool context_elsewhere = p->context && (p->context_mark.line != p->problem_mark.line ||
                                          p->context_mark.column != p->problem_mark.column);
  if (p->error == YAML_READER_ERROR || !context_elsewhere) return;
  const char *what = p->context;  // "while parsing a flow sequence" -> "the flow sequence"
  if (!strncmp(what, "while parsing a ", 16))
    diag_note(d, mark_loc(src, p->context_mark, p->context_mark), "the %s began here", what + 16);
  else
    diag_note(d, mark_loc(src, p->context_mark, p->context_mark), "%s: it began here", what);
}

static Topology *load(Arena *a, Diag *d, const SrcFile *src) {
  Loader L = {.a = a, .d = d, .src = src};
  yaml_parser_t parser;
  yaml_document_t doc;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_string(&parser, (const unsigned char *)src->text, src->len);
  Topology *t = NULL;
  if (!fe_yaml_flow_depth_ok(d, src)) {
    // refused before libyaml sees it
  } else if (!yaml_parser_load(&parser, &doc)) {
    fe_yaml_report_error(d, &parser, src);
  } else if (fe_yaml_refuse_nul(d, src, &doc)) {
    yaml_document_delete(&doc);
  } else {
    L.doc = &doc;
    t = load_document(&L);
    yaml_document_delete(&doc);
    if (t && !fe_yaml_no_second_document(d, &parser, src, "topology file")) t = NULL;
  }
  yaml_parser_delete(&parser);
  return t;
}

bool fe_yaml_no_second_document(Diag *d, yaml_parser_t *p, const SrcFile *src, const char *what) {
  yaml_document_t doc;
  if (!yaml_parser_load(p, &doc)) {  // a second document that does not parse
    fe_yaml_report_error(d, p, src);
    return false;
  }
  bool none = yaml_document_get_root_node(&doc) == NULL;
  if (!none) {
    SrcLoc loc = {src, (int)doc.start_mark.line + 1, (int)doc.start_mark.column + 1, 1};
    diag_error(d, loc, "a %s holds one YAML document; this is a second one", what);
  }
  yaml_document_delete(&doc);
  return none;
}

bool fe_yaml_refuse_nul(Diag *d, const SrcFile *src, yaml_document_t *doc) {
  for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++)
    if (n->type == YAML_SCALAR_NODE && strlen((const char *)n->data.scalar.value) != n->data.scalar.length) {
      SrcLoc loc = {src, (int)n->start_mark.line + 1, (int)n->start_mark.column + 1, 1};
      diag_error(d, loc, "a string holds a NUL byte (\\0), which no name or value may");
      return true;
    }
  return false;
}

// A scalar key of a mapping, or NULL.
static const char *scalar_key(yaml_document_t *doc, const yaml_node_pair_t *p) {
  yaml_node_t *k = yaml_document_get_node(doc, p->key);
  return k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : NULL;
}

bool fe_yaml_refuse_duplicate_keys(Diag *d, const SrcFile *src, yaml_document_t *doc) {
  for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++) {
    if (n->type != YAML_MAPPING_NODE) continue;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
      const char *kp = scalar_key(doc, p);
      for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p && kp; q++) {
        const char *kq = scalar_key(doc, q);
        if (!kq || strcmp(kp, kq)) continue;
        yaml_node_t *second = yaml_document_get_node(doc, p->key), *first = yaml_document_get_node(doc, q->key);
        diag_error(d, (SrcLoc){src, (int)second->start_mark.line + 1, (int)second->start_mark.column + 1, 1},
                   "duplicate key '%s'", kp);
        diag_note(d, (SrcLoc){src, (int)first->start_mark.line + 1, (int)first->start_mark.column + 1, 1},
                  "'%s' was first given here", kq);
        return true;
      }
    }
  }
  return false;
}

bool fe_yaml_flow_depth_ok(Diag *d, const SrcFile *src) {
  const char *t = src->text;
  int depth = 0, line = 1;
  size_t line_start = 0;
  char quote = 0;  // inside '...' or "..."
  for (size_t i = 0; i < src->len; i++) {
    char c = t[i];
    if (c == '\n') line++, line_start = i + 1;
    if (quote) {
      if (c == '\\' && quote == '"') i++;  // an escape in double quotes
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '#' && (i == line_start || t[i - 1] == ' ' || t[i - 1] == '\t')) {  // a comment: to the line's end
      while (i + 1 < src->len && t[i + 1] != '\n') i++;
    } else if (c == '"' || (c == '\'' && (i == line_start || strchr(" \t[{,:", t[i - 1])))) {
      quote = c;
    } else if ((c == '[' || c == '{') && ++depth > FE_MAX_YAML_DEPTH) {
      diag_error(d, (SrcLoc){src, line, (int)(i - line_start) + 1, 1}, "nesting deeper than %d levels",
                 FE_MAX_YAML_DEPTH);
      return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      depth--;
    }
  }
  return true;
}

void fe_warn_dropped_roles(Diag *d, const Topology *t) {
  const char *unit = t->family == FAMILY_DRAGONFLY ? "node" : "device";
  int dropped = 0, warned = 0;
  for (int i = 0; i < t->nroles; i++) dropped += t->roles[i].spare < 0;
  for (int i = 0; i < t->nroles && warned < dropped; i++) {
    const Role *r = &t->roles[i];
    if (r->spare >= 0) continue;
    if (warned == FE_MAX_DROPPED_WARNINGS && dropped > warned + 1) {
      diag_warning(d, r->loc, "%d more failed %ss have no spare left to stand in: the model runs without them, on %d "
                   "devices", dropped - warned, unit, t->nin_service);
      return;
    }
    warned++;
    if (t->family == FAMILY_DRAGONFLY)
      diag_warning(d, r->loc, "node %d has failed and rack %d has no spare node left to stand in: the model runs "
                   "without it, on %d devices", r->failed, r->failed / t->df.nodes_per_rack, t->nin_service);
    else
      diag_warning(d, r->loc, "device %d has failed and no spare device is left to stand in: the model runs "
                   "without it, on %d devices", r->failed, t->nin_service);
  }
}

Topology *fe_load_topology_text(Arena *a, Diag *d, const char *path, const char *text) {
  return load(a, d, src_from_string(a, path, text));
}

Topology *fe_load_topology(Arena *a, Diag *d, const char *tool, const char *path) {
  const char *err;
  SrcFile *src = src_read(a, path, &err);
  if (!src) {
    diag_tool_error(d, tool, "cannot read topology '%s': %s", path, err);
    return NULL;
  }
  return load(a, d, src);
}
