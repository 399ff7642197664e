// check.c: the `check` stage: Ast -> Graph IR.  Part of the frontend; the
// first stage whose output every pass after it reads.
//
// It resolves names, unrolls repeat blocks, and checks dtypes, shapes,
// keywords and placements against the topology.  The rules (docs/dsl.md):
//   - a name is defined once; inside `repeat`, assigning a name defined
//     before the block carries it from one iteration to the next (stacked
//     layers), and it must keep its type; everything else defined in the
//     body is fresh in every iteration and named NAME.I in the graph;
//   - data moves only through copy and the collectives: a compute op runs
//     where its operands are;
//   - every error is reported once (a failing repeat body is checked on its
//     first iteration only) and checking goes on after it.
#include "frontend.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

// The most tensors one graph may unroll to, and the most repeat iterations
// it may run (named, documented limits: unrolling is real work and memory).
#define FE_MAX_GRAPH_TENSORS (1 << 20)
#define FE_MAX_UNROLLED_ITERATIONS (1 << 20)
// Names longer than this get no "did you mean" hint (the search is quadratic).
#define FE_MAX_HINT_LENGTH 64
// The deepest nesting of repeat blocks (unrolled names grow with it).
#define FE_MAX_REPEAT_DEPTH 16

// ---- name bindings: a chained hash table -------------------------------------

typedef struct Binding {
  const char *name;       // the source name
  Tensor *tensor;         // its current value; NULL if its definition failed
  int depth;              // repeat nesting where it was first defined
  long rebound_in;        // the iteration serial of its last loop-carried update
  struct Binding *next;   // hash chain
} Binding;

#define BINDING_BUCKETS 4096

typedef struct Checker {
  Arena *a;
  Diag *d;
  const Topology *topo;
  Graph *g;
  Binding *buckets[BINDING_BUCKETS];
  int depth;              // current repeat nesting
  long iteration;         // serial number of the current repeat iteration
  long serial;            // the last serial number handed out
  Buf suffix;             // ".3.1" while unrolling iteration 3, inner iteration 1
  // Iterations are numbered on from one repeat block to the next sibling
  // block (two `repeat 12` blocks give layers 0..23), so unrolled names
  // never repeat: next_index[depth] is the next number at that depth.
  int64_t next_index[FE_MAX_REPEAT_DEPTH + 1];
  struct NameEntry **names;  // every tensor name in the graph: names are unique
  bool too_many;          // FE_MAX_GRAPH_TENSORS reached (reported once)
  VEC(Binding *) created; // every live binding, oldest first
} Checker;

static unsigned hash_name(const char *s) {
  return (unsigned)(digest_fnv1a64(s, strlen(s)) % BINDING_BUCKETS);
}

static Binding *lookup(Checker *c, const char *name) {
  for (Binding *b = c->buckets[hash_name(name)]; b; b = b->next)
    if (!strcmp(b->name, name)) return b;
  return NULL;
}

static Binding *bind(Checker *c, const char *name, Tensor *t) {
  Binding *b = xcalloc(1, sizeof *b);
  unsigned h = hash_name(name);
  *b = (Binding){.name = name, .tensor = t, .depth = c->depth, .rebound_in = -1,
                 .next = c->buckets[h]};
  c->buckets[h] = b;
  VEC_PUSH(c->a, &c->created, b);
  return b;
}

// Binds a name whose definition failed, so that its uses stay quiet: every
// mistake is reported once, where it was made.
static void poison(Checker *c, const char *name) {
  if (!lookup(c, name)) bind(c, name, NULL);
}

// Drops the bindings made at depth > `depth` (the end of a repeat iteration).
// They are the newest on the creation stack.
static void unbind_deeper(Checker *c, int depth) {
  while (c->created.len > 0 && c->created.data[c->created.len - 1]->depth > depth) {
    Binding *dead = c->created.data[--c->created.len];
    Binding **p = &c->buckets[hash_name(dead->name)];
    while (*p != dead) p = &(*p)->next;
    *p = dead->next;
    free(dead);
  }
}

static void free_bindings(Checker *c) { unbind_deeper(c, -1); }

// The bound name closest to `name`, for "did you mean" (NULL if none is close).
static const char *closest_name(Checker *c, const char *name) {
  const char *best = NULL;
  int len = (int)strlen(name);
  int best_dist = len / 3 + 1;  // one edit per three letters; none for 'q'
  if (c->d->suppressed || len > FE_MAX_HINT_LENGTH) return NULL;  // nobody reads it
  for (int h = 0; h < BINDING_BUCKETS; h++)
    for (Binding *b = c->buckets[h]; b; b = b->next) {
      if (abs((int)strlen(b->name) - len) >= best_dist) continue;  // too far already
      int dist = str_edit_distance(name, b->name);
      if (dist < best_dist) best_dist = dist, best = b->name;
    }
  return best;
}

// ---- the set of tensor names -------------------------------------------------------

#define NAME_BUCKETS (1 << 16)

typedef struct NameEntry {
  const char *name;
  struct NameEntry *next;
} NameEntry;

// Adds name to the graph's names; false if it is there already.
static bool claim_name(Checker *c, const char *name) {
  if (!c->names) c->names = ARENA_ARRAY(c->a, NameEntry *, NAME_BUCKETS);
  NameEntry **bucket = &c->names[digest_fnv1a64(name, strlen(name)) % NAME_BUCKETS];
  for (NameEntry *e = *bucket; e; e = e->next)
    if (!strcmp(e->name, name)) return false;
  NameEntry *e = ARENA_NEW(c->a, NameEntry);
  *e = (NameEntry){.name = name, .next = *bucket};
  *bucket = e;
  return true;
}

// ---- tensors ---------------------------------------------------------------------

// The graph's name for source name `name` defined here: NAME, or NAME.I...
// inside repeat blocks.
static const char *graph_name(Checker *c, const char *name) {
  return c->depth ? arena_printf(c->a, "%s%s", name, c->suffix.data) : name;
}

static Tensor *new_tensor(Checker *c, const char *name, TensorKind kind, SrcLoc loc) {
  Tensor *t = ARENA_NEW(c->a, Tensor);
  t->id = c->g->tensors.len;
  t->name = graph_name(c, name);
  if (!claim_name(c, t->name)) die("tensor name %s given twice", t->name);
  t->kind = kind;
  t->loc = loc;
  VEC_PUSH(c->a, &c->g->tensors, t);
  return t;
}

static void type_string(char *buf, size_t n, const Tensor *t) {
  ir_format_type(buf, n, t->dtype, &t->shape);
}

// Total bytes of a shape, or -1 when past IR_MAX_TENSOR_BYTES.
static int64_t checked_bytes(const Shape *s, DType dt) {
  int64_t bytes = ir_dtype_bytes[dt];
  for (int i = 0; i < s->rank; i++) {
    if (s->dim[i] > IR_MAX_TENSOR_BYTES / bytes) return -1;
    bytes *= s->dim[i];
  }
  return bytes;
}

static bool check_size(Checker *c, SrcLoc loc, const char *name, const Shape *s, DType dt) {
  if (checked_bytes(s, dt) >= 0) return true;
  diag_error(c->d, loc, "tensor '%s' is larger than the limit of %lld bytes (1 PiB)", name,
             (long long)IR_MAX_TENSOR_BYTES);
  return false;
}

// ---- placements --------------------------------------------------------------------

static bool check_device_index(Checker *c, int64_t index, SrcLoc loc, const char *what) {
  if (index < c->topo->ndevices) return true;
  if (c->topo->ndevices == 1)
    diag_error(c->d, loc, "%s(%lld) is outside the topology (1 device: 0)", what, (long long)index);
  else
    diag_error(c->d, loc, "%s(%lld) is outside the topology (%d devices: 0..%d)", what, (long long)index,
               c->topo->ndevices, c->topo->ndevices - 1);
  return false;
}

static int compare_ints(const void *a, const void *b) {
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

// device(N) and stage(N) name a logical device (docs/topology.md, the hot
// spare): *out is the device playing it; a spare's id, or a failed one
// no spare stands in for, is refused with the reason.
static bool resolve_role(Checker *c, int64_t index, SrcLoc loc, const char *what, int *out) {
  if (!check_device_index(c, index, loc, what)) return false;
  *out = ir_role_device(c->topo, (int)index);
  if (*out >= 0) return true;
  diag_error(c->d, loc, "%s(%lld) %s", what, (long long)index, ir_role_refusal(c->a, c->topo, (int)index));
  return false;
}

// The devices out of service, ascending: every @ each excludes them.
static void out_of_service(Checker *c, int *except, int *n) {
  for (int d = 0; d < c->topo->ndevices; d++)
    if (!ir_device_in_service(c->topo, d)) except[(*n)++] = d;
}

// @ each except ...: the listed logical devices, each once, mapped to the
// devices playing them (a dropped role has nothing to exclude), then every
// device out of service.
static bool resolve_each(Checker *c, const AstPlace *ap, Placement *out) {
  int n = 0;
  for (const AstExcept *e = ap->except; e; e = e->next) n++;
  int *listed = ARENA_ARRAY(c->a, int, n + 1);
  out->except = ARENA_ARRAY(c->a, int, n + c->topo->ndevices - c->topo->nin_service + 1);
  int nlisted = 0;
  for (const AstExcept *e = ap->except; e; e = e->next) {
    if (!check_device_index(c, e->device, e->loc, "device")) return false;
    for (int i = 0; i < nlisted; i++)
      if (listed[i] == e->device) {
        diag_error(c->d, e->loc, "device(%lld) is excluded twice", (long long)e->device);
        return false;
      }
    listed[nlisted++] = (int)e->device;
    if (ir_role_dropped(c->topo, (int)e->device)) continue;
    if (!resolve_role(c, e->device, e->loc, "device", &out->except[out->nexcept])) return false;
    out->nexcept++;
  }
  if (out->nexcept >= c->topo->nin_service) {
    diag_error(c->d, ap->loc, "this placement excludes every device of the topology");
    return false;
  }
  out_of_service(c, out->except, &out->nexcept);
  qsort(out->except, (size_t)out->nexcept, sizeof(int), compare_ints);
  return true;
}

static bool resolve_place(Checker *c, const AstPlace *ap, Placement *out) {
  *out = (Placement){.kind = ap->kind};
  switch (ap->kind) {
  case PLACE_AUTO: return true;
  case PLACE_DEVICE:
  case PLACE_STAGE:
    out->index = (int)MIN(ap->index, (int64_t)INT32_MAX);
    return resolve_role(c, ap->index, ap->index_loc, ap->kind == PLACE_DEVICE ? "device" : "stage", &out->index);
  case PLACE_EACH: return resolve_each(c, ap, out);
  }
  unreachable();
}

// Devices holding a copy of an EACH tensor: the group of a collective.
static int each_group_size(const Checker *c, const Placement *p) {
  return c->topo->ndevices - p->nexcept;
}

// ---- declarations -------------------------------------------------------------------

// Reads a list of dimensions (a type's, or reshape's shape=[...]) into s:
// at most IR_MAX_RANK, each at least 1, reported at the one that is not.
static bool read_dims(Checker *c, const AstDim *dims, Shape *s) {
  s->rank = 0;
  for (const AstDim *d = dims; d; d = d->next) {
    if (s->rank == IR_MAX_RANK) {
      diag_error(c->d, d->loc, "a tensor has at most %d dimensions", IR_MAX_RANK);
      return false;
    }
    if (d->value < 1) {
      diag_error(c->d, d->loc, "a dimension must be at least 1, got %lld", (long long)d->value);
      return false;
    }
    s->dim[s->rank++] = d->value;
  }
  return true;
}

// Resolves a declared type: a known dtype, valid dimensions, at most 1 PiB.
static bool resolve_type(Checker *c, const AstType *at, const char *name, DType *dt, Shape *s) {
  if (!ir_dtype_lookup(at->dtype, dt)) {
    diag_error(c->d, at->dtype_loc, "unknown dtype '%s' (expected f32, f16, bf16, i32 or i8)",
               at->dtype);
    return false;
  }
  return read_dims(c, at->dims, s) && check_size(c, at->dtype_loc, name, s, *dt);
}

// Reports a redefinition (with where the first definition was) unless `name`
// may be defined here; *carried says it is a loop-carried update.
static bool may_define(Checker *c, const char *name, SrcLoc loc, bool is_assign, bool *carried) {
  Binding *b = lookup(c, name);
  *carried = false;
  if (!b) return true;
  if (is_assign && b->depth < c->depth) {
    if (b->rebound_in != c->iteration) {
      *carried = true;
      return true;
    }
    diag_error(c->d, loc, "'%s' is assigned twice in one iteration of its repeat block", name);
    return false;
  }
  diag_error(c->d, loc, "redefinition of tensor '%s'", name);
  if (b->tensor) diag_note(c->d, b->tensor->loc, "'%s' was defined here", name);
  return false;
}

static void check_decl(Checker *c, const AstStmt *s) {
  bool carried;
  if (s->kind == STMT_INPUT && c->depth > 0) {
    diag_error(c->d, s->loc, "input '%s' is declared inside repeat; declare inputs before it", s->name);
    poison(c, s->name);
    return;
  }
  if (!may_define(c, s->name, s->name_loc, false, &carried)) return;
  DType dt;
  Shape shape;
  Placement place;
  bool type_ok = resolve_type(c, &s->type, s->name, &dt, &shape);
  bool place_ok = resolve_place(c, &s->place, &place);  // report both
  if (!type_ok || !place_ok) {
    poison(c, s->name);
    return;
  }
  Tensor *t = new_tensor(c, s->name, s->kind == STMT_INPUT ? TENSOR_INPUT : TENSOR_PARAM, s->name_loc);
  t->dtype = dt;
  t->shape = shape;
  t->place = place;
  t->place_written = s->place.given;
  bind(c, s->name, t);
}

static void check_output(Checker *c, const AstStmt *s) {
  if (c->depth > 0) {
    diag_error(c->d, s->loc, "output '%s' inside repeat; name outputs after the repeat", s->name);
    return;
  }
  Binding *b = lookup(c, s->name);
  if (!b) {
    const char *hint = closest_name(c, s->name);
    if (hint)
      diag_error(c->d, s->name_loc, "undefined tensor '%s'; did you mean '%s'?", s->name, hint);
    else
      diag_error(c->d, s->name_loc, "undefined tensor '%s'", s->name);
    return;
  }
  Tensor *t = b->tensor;
  if (!t) return;  // its definition failed and was reported
  if (t->is_output) {
    diag_error(c->d, s->name_loc, "'%s' is already an output", s->name);
    return;
  }
  Placement want;
  if (!resolve_place(c, &s->place, &want)) return;
  if (s->place.given && !ir_place_equal(&want, &t->place)) {
    diag_error(c->d, s->place.loc, "output '%s' is placed @ %s, not @ %s; %s", s->name,
               ir_place_str(c->a, &t->place), ir_place_str(c->a, &want),
               t->place.kind == PLACE_EACH ? "copy cannot move an @ each tensor to other devices: output it where it is"
                                           : "copy it there first");
    return;
  }
  t->is_output = true;
  t->place_written |= s->place.given;
  VEC_PUSH(c->a, &c->g->outputs, t);
}

// ---- op calls -------------------------------------------------------------------------

// The parts of one call, gathered from its argument list.
typedef struct Call {
  const AstStmt *s;
  OpKind kind;
  const OpInfo *info;
  int nargs;
  Tensor *args[IR_MAX_OPERANDS];
  const AstArg *arg_ast[IR_MAX_OPERANDS];
  const AstArg *kw_op, *kw_algo, *kw_axis, *kw_shape, *kw_start, *kw_end;  // NULL: not given
} Call;

// Every keyword, its OpKeyword bit, and the Call field that holds its argument.
static const struct KeywordSlot {
  const char *name;
  OpKeyword bit;
  size_t field;  // offsetof(Call, kw_...)
} keyword_slots[] = {
    {"op", KW_OP, offsetof(Call, kw_op)},          {"algo", KW_ALGO, offsetof(Call, kw_algo)},
    {"axis", KW_AXIS, offsetof(Call, kw_axis)},    {"shape", KW_SHAPE, offsetof(Call, kw_shape)},
    {"start", KW_START, offsetof(Call, kw_start)}, {"end", KW_END, offsetof(Call, kw_end)},
};
_Static_assert(KW_END == 1u << (ARRAY_LEN(keyword_slots) - 1), "one keyword_slots row per OpKeyword bit");

// Where a keyword's argument is kept in the call.
static const AstArg **keyword_field(Call *call, const struct KeywordSlot *k) {
  return (const AstArg **)(void *)((char *)call + k->field);
}

// Reports a keyword the op does not know, with a hint when one it takes is close.
static void unknown_keyword(Checker *c, const Call *call, const AstArg *a) {
  const char *hint = NULL;
  for (size_t k = 0; k < ARRAY_LEN(keyword_slots); k++) {
    bool taken = call->info->keywords & keyword_slots[k].bit;
    if (taken && str_edit_distance(a->key, keyword_slots[k].name) <= 2) hint = keyword_slots[k].name;
  }
  if (hint)
    diag_error(c->d, a->key_loc, "unknown keyword '%s' for %s; did you mean '%s'?", a->key,
               call->info->name, hint);
  else
    diag_error(c->d, a->key_loc, "unknown keyword '%s' for %s", a->key, call->info->name);
}

// Files a `key=value` argument in its Call field; its value is checked by the
// op's shape rule.  Reports keywords the op does not take, and repeats.
static bool read_keyword(Checker *c, Call *call, const AstArg *a) {
  for (size_t k = 0; k < ARRAY_LEN(keyword_slots); k++) {
    if (strcmp(a->key, keyword_slots[k].name)) continue;
    if (!(call->info->keywords & keyword_slots[k].bit)) {
      diag_error(c->d, a->key_loc, "%s takes no '%s' keyword", call->info->name, a->key);
      return false;
    }
    const AstArg **slot = keyword_field(call, &keyword_slots[k]);
    if (*slot) {
      diag_error(c->d, a->key_loc, "keyword '%s' is given twice", a->key);
      return false;
    }
    *slot = a;
    return true;
  }
  unknown_keyword(c, call, a);
  return false;
}

// A keyword's value as a message quotes it: 'last', 7, [4, 256].
static const char *value_text(Checker *c, const AstArg *a) {
  switch (a->kind) {
  case ARG_INT: return arena_printf(c->a, "%lld", (long long)a->num);
  case ARG_TENSOR:
  case ARG_IDENT: return arena_printf(c->a, "'%s'", a->name);
  case ARG_LIST: break;
  }
  Buf b = {0};
  buf_printf(&b, "[");
  for (const AstDim *d = a->items; d; d = d->next)
    buf_printf(&b, "%s%lld", d == a->items ? "" : ", ", (long long)d->value);
  buf_printf(&b, "]");
  const char *text = arena_strdup(c->a, b.data);
  buf_free(&b);
  return text;
}

// Reads an integer keyword's value (axis, start, end); reports any other kind.
static bool int_keyword(Checker *c, const AstArg *a, int64_t *out) {
  if (a->kind != ARG_INT) {
    diag_error(c->d, a->loc, "%s must be an integer, got %s", a->key, value_text(c, a));
    return false;
  }
  *out = a->num;
  return true;
}

// Reports a keyword the op needs and was not given, at the op's name.
// `what` says which, with an example: "a start keyword, such as start=0".
static bool required_keyword(Checker *c, const Call *call, const AstArg *given, const char *what) {
  if (given) return true;
  diag_error(c->d, call->s->op_loc, "%s needs %s", call->info->name, what);
  return false;
}

// "relu expects 1 operand", "matmul expects 2 operands", "layernorm expects 1 or 3 operands"
static void arity_error(Checker *c, const Call *call, int got) {
  Buf want = {0};
  int counts[IR_MAX_OPERANDS + 1], n = 0;
  for (int k = 0; k <= IR_MAX_OPERANDS; k++)
    if (call->info->arity & ARITY(k)) counts[n++] = k;
  for (int i = 0; i < n; i++)
    buf_printf(&want, "%s%d", i == 0 ? "" : i == n - 1 ? " or " : ", ", counts[i]);
  diag_error(c->d, call->s->op_loc, "%s expects %s operand%s, got %d", call->info->name, want.data,
             n == 1 && counts[0] == 1 ? "" : "s", got);
  buf_free(&want);
}

static Tensor *resolve_operand(Checker *c, const AstArg *a) {
  Binding *b = lookup(c, a->name);
  if (b) return b->tensor;  // NULL, quietly, for a poisoned name
  const char *hint = closest_name(c, a->name);
  if (hint)
    diag_error(c->d, a->loc, "undefined tensor '%s'; did you mean '%s'?", a->name, hint);
  else
    diag_error(c->d, a->loc, "undefined tensor '%s'", a->name);
  return NULL;
}

// Splits the argument list into operands and keywords and resolves operands.
static bool gather_call(Checker *c, Call *call) {
  bool ok = true, seen_keyword = false;
  int count = 0;
  for (const AstArg *a = call->s->args; a; a = a->next) {
    if (a->key) {
      seen_keyword = true;
      ok &= read_keyword(c, call, a);
      continue;
    }
    if (seen_keyword) {
      diag_error(c->d, a->loc, "operand '%s' comes after a keyword argument", a->name);
      ok = false;
    }
    if (count < IR_MAX_OPERANDS) call->arg_ast[count] = a;
    count++;
  }
  if (count > IR_MAX_OPERANDS || !(call->info->arity & ARITY(count))) {
    arity_error(c, call, count);
    return false;
  }
  call->nargs = count;
  for (int i = 0; i < count; i++) {
    call->args[i] = resolve_operand(c, call->arg_ast[i]);
    ok &= call->args[i] != NULL;
  }
  return ok;
}

static bool same_dtypes(Checker *c, const Call *call) {
  for (int i = 1; i < call->nargs; i++)
    if (call->args[i]->dtype != call->args[0]->dtype) {
      diag_error(c->d, call->arg_ast[i]->loc, "%s operands have different dtypes: %s and %s",
                 call->info->name, ir_dtype_names[call->args[0]->dtype],
                 ir_dtype_names[call->args[i]->dtype]);
      return false;
    }
  return true;
}

// Reads op=sum|max and algo=NAME into the op.
static bool collective_keywords(Checker *c, const Call *call, Op *op) {
  op->reduce = REDUCE_SUM;
  op->algo = ALGO_AUTO;
  if (call->kw_op) {
    const AstArg *a = call->kw_op;
    bool is_sum = a->kind == ARG_IDENT && !strcmp(a->name, "sum");
    bool is_max = a->kind == ARG_IDENT && !strcmp(a->name, "max");
    if (!is_sum && !is_max) {
      diag_error(c->d, a->loc, "op must be sum or max, got %s", value_text(c, a));
      return false;
    }
    op->reduce = is_max ? REDUCE_MAX : REDUCE_SUM;
  }
  if (call->kw_algo) {
    const AstArg *a = call->kw_algo;
    if (a->kind != ARG_IDENT) {
      diag_error(c->d, a->loc, "algo must be an algorithm name such as ring or auto");
      return false;
    }
    if (!ir_algo_lookup(a->name, &op->algo)) {
      Buf known = {0};
      for (int i = 0; i < ALGO_COUNT; i++) buf_printf(&known, "%s%s", i ? ", " : "", ir_algo_names[i]);
      diag_error(c->d, a->loc, "unknown algorithm '%s' (known: %s)", a->name, known.data);
      buf_free(&known);
      return false;
    }
  }
  return true;
}

// Reads axis=I (default -1, the last) for an operand of shape s into
// op->axis, counted from 0.
static bool axis_keyword(Checker *c, const Call *call, Op *op, const Shape *s) {
  op->axis = s->rank - 1;
  if (!call->kw_axis) return true;
  const AstArg *a = call->kw_axis;
  int64_t axis;
  if (!int_keyword(c, a, &axis)) return false;
  if (axis < -s->rank || axis >= s->rank) {
    diag_error(c->d, a->loc, "axis %lld is out of range for a rank-%d tensor", (long long)axis,
               s->rank);
    return false;
  }
  op->axis = (int)(axis < 0 ? axis + s->rank : axis);
  return true;
}

// Each shape rule fills the result's dtype and shape, or reports and fails.
typedef bool ShapeRule(Checker *c, const Call *call, Op *op, Tensor *r);

static bool shape_collective(Checker *c, const Call *call, Op *op, Tensor *r) {
  Tensor *x = call->args[0];
  if (!collective_keywords(c, call, op)) return false;
  if (x->place.kind != PLACE_EACH) {
    diag_error(c->d, call->arg_ast[0]->loc,
               "%s needs an operand with one copy per device (@ each); '%s' is @ %s",
               call->info->name, x->name, ir_place_str(c->a, &x->place));
    return false;
  }
  int group = each_group_size(c, &x->place);
  r->dtype = x->dtype;
  r->shape = x->shape;
  if (call->kind == OP_REDUCE_SCATTER) {
    // Rows are whole vectors (row padding, passes/layout.c), so a first
    // dimension the group does not divide is completed with zero rows; a
    // rank-1 tensor's are elements, completed by emit_by_rows.
    int64_t n = x->shape.dim[0], rows = (n + group - 1) / group;
    r->shape.dim[0] = rows;
    op->pad_rows = rows * group - n;
    Shape padded = {.rank = 2, .dim = {group, rows}};
    if (x->shape.rank == 1 && op->pad_rows && checked_bytes(&padded, x->dtype) < 0) {
      diag_error(c->d, call->arg_ast[0]->loc,
                 "reduce_scatter pads '%s' (%lld elements) to %d x %lld for its rows, more than the limit of "
                 "%lld bytes (1 PiB)",
                 x->name, (long long)n, group, (long long)rows, (long long)IR_MAX_TENSOR_BYTES);
      return false;
    }
  }
  if (call->kind == OP_ALL_GATHER) {
    if (x->shape.dim[0] > IR_MAX_TENSOR_BYTES / group) {
      diag_error(c->d, call->s->name_loc, "tensor '%s' is larger than the limit of %lld bytes (1 PiB)",
                 call->s->name, (long long)IR_MAX_TENSOR_BYTES);
      return false;
    }
    r->shape.dim[0] *= group;
  }
  return check_size(c, call->s->name_loc, call->s->name, &r->shape, r->dtype);
}

static bool shape_same(Checker *c, const Call *call, Op *op, Tensor *r) {
  (void)c, (void)op;
  r->dtype = call->args[0]->dtype;
  r->shape = call->args[0]->shape;
  return true;
}

static bool shape_axis(Checker *c, const Call *call, Op *op, Tensor *r) {
  shape_same(c, call, op, r);
  return axis_keyword(c, call, op, &r->shape);
}

static bool shape_matmul(Checker *c, const Call *call, Op *op, Tensor *r) {
  (void)op;
  Tensor *a = call->args[0], *b = call->args[1];
  char ta[IR_TYPE_STR_MAX], tb[IR_TYPE_STR_MAX];
  type_string(ta, sizeof ta, a);
  type_string(tb, sizeof tb, b);
  if (a->shape.rank < 2) {
    diag_error(c->d, call->arg_ast[0]->loc, "matmul's first operand must have rank 2 or more; '%s' is %s", a->name, ta);
    return false;
  }
  if (b->shape.rank != 2) {
    diag_error(c->d, call->arg_ast[1]->loc, "matmul's second operand must be a matrix [K, N]; '%s' is %s", b->name, tb);
    return false;
  }
  int64_t k = a->shape.dim[a->shape.rank - 1];
  if (k != b->shape.dim[0]) {
    diag_error(c->d, call->s->op_loc,
               "matmul inner dimensions differ: '%s' is %s and '%s' is %s (%lld != %lld)", a->name,
               ta, b->name, tb, (long long)k, (long long)b->shape.dim[0]);
    return false;
  }
  if (!same_dtypes(c, call)) return false;
  r->dtype = a->dtype;
  r->shape = a->shape;
  r->shape.dim[r->shape.rank - 1] = b->shape.dim[1];
  return check_size(c, call->s->name_loc, call->s->name, &r->shape, r->dtype);
}

// add, mul, sub, div: the same shape, or b a vector [N] over a's last
// dimension (a bias, repeated along it).
static bool shape_elementwise(Checker *c, const Call *call, Op *op, Tensor *r) {
  Tensor *a = call->args[0], *b = call->args[1];
  bool bias = b->shape.rank == 1 && b->shape.dim[0] == a->shape.dim[a->shape.rank - 1];
  if (!ir_shape_equal(&a->shape, &b->shape) && !bias) {
    char ta[IR_TYPE_STR_MAX], tb[IR_TYPE_STR_MAX];
    type_string(ta, sizeof ta, a);
    type_string(tb, sizeof tb, b);
    diag_error(c->d, call->s->op_loc, "%s operands have different shapes: '%s' is %s and '%s' is %s",
               call->info->name, a->name, ta, b->name, tb);
    return false;
  }
  return same_dtypes(c, call) && shape_same(c, call, op, r);
}

static bool shape_layernorm(Checker *c, const Call *call, Op *op, Tensor *r) {
  if (!shape_axis(c, call, op, r) || !same_dtypes(c, call)) return false;
  int64_t n = r->shape.dim[op->axis];
  for (int i = 1; i < call->nargs; i++) {
    const Tensor *p = call->args[i];
    if (p->shape.rank != 1 || p->shape.dim[0] != n) {
      char tp[IR_TYPE_STR_MAX];
      type_string(tp, sizeof tp, p);
      diag_error(c->d, call->arg_ast[i]->loc,
                 "layernorm's %s must be a vector of %lld (the normalised axis); '%s' is %s",
                 i == 1 ? "gamma" : "beta", (long long)n, p->name, tp);
      return false;
    }
  }
  return true;
}

static bool shape_transpose(Checker *c, const Call *call, Op *op, Tensor *r) {
  shape_same(c, call, op, r);
  if (r->shape.rank < 2) {
    char t[IR_TYPE_STR_MAX];
    type_string(t, sizeof t, call->args[0]);
    diag_error(c->d, call->arg_ast[0]->loc, "transpose needs rank 2 or more; '%s' is %s",
               call->args[0]->name, t);
    return false;
  }
  int64_t *d = r->shape.dim + r->shape.rank - 2;
  int64_t tmp = d[0];
  d[0] = d[1];
  d[1] = tmp;
  return true;
}

static bool is_float_dtype(DType dt) { return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16; }

// exp, rsqrt: element-wise, on floating-point tensors only.
static bool shape_float(Checker *c, const Call *call, Op *op, Tensor *r) {
  const Tensor *x = call->args[0];
  if (!is_float_dtype(x->dtype)) {
    char t[IR_TYPE_STR_MAX];
    type_string(t, sizeof t, x);
    diag_error(c->d, call->arg_ast[0]->loc, "%s takes a floating-point tensor; '%s' is %s",
               call->info->name, x->name, t);
    return false;
  }
  return shape_same(c, call, op, r);
}

// cholesky: a square [p, p] f16 or f32 matrix, p <= IR_CHOLESKY_MAX_ORDER;
// the result (the lower-triangular factor) has its shape and dtype.
static bool shape_cholesky(Checker *c, const Call *call, Op *op, Tensor *r) {
  const Tensor *x = call->args[0];
  char t[IR_TYPE_STR_MAX];
  type_string(t, sizeof t, x);
  if (x->dtype != DT_F16 && x->dtype != DT_F32) {
    diag_error(c->d, call->arg_ast[0]->loc, "cholesky takes an f16 or f32 matrix; '%s' is %s", x->name, t);
    return false;
  }
  if (x->shape.rank != 2 || x->shape.dim[0] != x->shape.dim[1]) {
    diag_error(c->d, call->arg_ast[0]->loc, "cholesky takes a square matrix [p, p]; '%s' is %s", x->name, t);
    return false;
  }
  if (x->shape.dim[0] > IR_CHOLESKY_MAX_ORDER) {
    diag_error(c->d, call->arg_ast[0]->loc, "cholesky of order %lld is above the largest, %d (IR_CHOLESKY_MAX_ORDER)",
               (long long)x->shape.dim[0], IR_CHOLESKY_MAX_ORDER);
    return false;
  }
  op->chol = (CholPiece){.role = CHOL_WHOLE, .order = x->shape.dim[0], .group = 1};
  return shape_same(c, call, op, r);
}

// Removes dimension `axis` from s; a rank-1 shape becomes [1].
static void drop_axis(Shape *s, int axis) {
  if (s->rank == 1) {
    s->dim[0] = 1;
    return;
  }
  for (int i = axis; i + 1 < s->rank; i++) s->dim[i] = s->dim[i + 1];
  s->rank--;
}

// reduce_sum, reduce_max: along axis (default last), which the result drops.
static bool shape_reduce(Checker *c, const Call *call, Op *op, Tensor *r) {
  if (!shape_axis(c, call, op, r)) return false;
  drop_axis(&r->shape, op->axis);
  return true;
}

// "[5, 5]": a shape without its dtype, for messages.
static void dims_string(char *buf, size_t n, const Shape *s) {
  size_t at = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < s->rank && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? ", " : "", (long long)s->dim[i]);
  if (at < n) snprintf(buf + at, n - at, "]");
}

// Reads reshape's shape=[D0, D1, ...] into s: a list of 1 to IR_MAX_RANK
// dimensions, each at least 1.
static bool shape_keyword(Checker *c, const AstArg *a, Shape *s) {
  if (a->kind != ARG_LIST) {
    diag_error(c->d, a->loc, "shape must be a list of dimensions such as [4, 256]");
    return false;
  }
  if (!a->items) {
    diag_error(c->d, a->loc, "a shape needs at least one dimension");
    return false;
  }
  return read_dims(c, a->items, s);
}

// reshape(x, shape=[...]): the same elements, in row-major order, in a new
// shape with as many elements.
static bool shape_reshape(Checker *c, const Call *call, Op *op, Tensor *r) {
  const Tensor *x = call->args[0];
  if (!required_keyword(c, call, call->kw_shape, "a shape keyword, such as shape=[4, 256]") ||
      !shape_keyword(c, call->kw_shape, &op->shape))
    return false;
  r->dtype = x->dtype;
  r->shape = op->shape;
  if (!check_size(c, call->s->name_loc, call->s->name, &r->shape, r->dtype)) return false;
  int64_t have = ir_shape_elems(&x->shape), want = ir_shape_elems(&r->shape);
  if (have != want) {
    char tx[IR_TYPE_STR_MAX], dims[IR_TYPE_STR_MAX];
    type_string(tx, sizeof tx, x);
    dims_string(dims, sizeof dims, &r->shape);
    diag_error(c->d, call->kw_shape->loc, "reshape cannot make %s (%lld elements) into %s (%lld elements)",
               tx, (long long)have, dims, (long long)want);
    return false;
  }
  return true;
}

// Checks one bound of a slice against the dimension it cuts: `lo`..`hi`.
static bool slice_bound_ok(Checker *c, const Call *call, const AstArg *a, int64_t value, int64_t lo,
                           int64_t hi, int axis) {
  if (value >= lo && value <= hi) return true;
  const Tensor *x = call->args[0];
  char t[IR_TYPE_STR_MAX];
  type_string(t, sizeof t, x);
  diag_error(c->d, a->loc, "slice %s %lld is outside axis %d of '%s' (%s): %s must be in %lld..%lld",
             a->key, (long long)value, axis, x->name, t, a->key, (long long)lo, (long long)hi);
  return false;
}

// slice(x, axis=I, start=S, end=E): elements S..E-1 along axis (default
// last); 0 <= S < E <= the dimension.
static bool shape_slice(Checker *c, const Call *call, Op *op, Tensor *r) {
  bool have_start = required_keyword(c, call, call->kw_start, "a start keyword, such as start=0");
  bool have_end = required_keyword(c, call, call->kw_end, "an end keyword, such as end=4");
  if (!have_start || !have_end || !shape_axis(c, call, op, r)) return false;
  bool start_int = int_keyword(c, call->kw_start, &op->start);
  bool end_int = int_keyword(c, call->kw_end, &op->end);  // report both
  if (!start_int || !end_int) return false;
  int64_t dim = r->shape.dim[op->axis];
  bool start_ok = slice_bound_ok(c, call, call->kw_start, op->start, 0, dim - 1, op->axis);
  bool end_ok = slice_bound_ok(c, call, call->kw_end, op->end, 1, dim, op->axis);  // report both
  if (!start_ok || !end_ok) return false;
  if (op->start >= op->end) {
    diag_error(c->d, call->kw_start->loc,
               "slice start %lld is not before end %lld: a slice keeps at least one element",
               (long long)op->start, (long long)op->end);
    return false;
  }
  r->shape.dim[op->axis] = op->end - op->start;
  return true;
}

// Whether two shapes agree in rank and in every dimension but `axis`.
static bool same_except_axis(const Shape *a, const Shape *b, int axis) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (i != axis && a->dim[i] != b->dim[i]) return false;
  return true;
}

// concat(a, b [, c [, d]], axis=I): the operands one after another along
// axis (default last); they agree in every other dimension.
static bool shape_concat(Checker *c, const Call *call, Op *op, Tensor *r) {
  const Tensor *first = call->args[0];
  if (!shape_axis(c, call, op, r)) return false;
  for (int i = 1; i < call->nargs; i++) {
    const Tensor *x = call->args[i];
    if (!same_except_axis(&first->shape, &x->shape, op->axis)) {
      char tf[IR_TYPE_STR_MAX], tx[IR_TYPE_STR_MAX];
      type_string(tf, sizeof tf, first);
      type_string(tx, sizeof tx, x);
      diag_error(c->d, call->arg_ast[i]->loc,
                 "concat operands must match except along axis %d: '%s' is %s and '%s' is %s",
                 op->axis, first->name, tf, x->name, tx);
      return false;
    }
    r->shape.dim[op->axis] += x->shape.dim[op->axis];
  }
  return same_dtypes(c, call) && check_size(c, call->s->name_loc, call->s->name, &r->shape, r->dtype);
}

// Every op's rule (check_call relies on there being one).
static ShapeRule *const shape_rules[OP_COUNT] = {
    [OP_ALLREDUCE] = shape_collective, [OP_REDUCE_SCATTER] = shape_collective,
    [OP_ALL_GATHER] = shape_collective, [OP_COPY] = shape_same,
    [OP_MATMUL] = shape_matmul,         [OP_ADD] = shape_elementwise,
    [OP_RELU] = shape_same,             [OP_GELU] = shape_same,
    [OP_SOFTMAX] = shape_axis,          [OP_LAYERNORM] = shape_layernorm,
    [OP_TRANSPOSE] = shape_transpose,   [OP_MUL] = shape_elementwise,
    [OP_SUB] = shape_elementwise,       [OP_DIV] = shape_elementwise,
    [OP_EXP] = shape_float,             [OP_RSQRT] = shape_float,
    [OP_REDUCE_SUM] = shape_reduce,     [OP_REDUCE_MAX] = shape_reduce,
    [OP_RESHAPE] = shape_reshape,       [OP_SLICE] = shape_slice,
    [OP_CONCAT] = shape_concat,         [OP_CHOLESKY] = shape_cholesky,
};

// What to do about operands a and b placed apart, as copy allows (it
// cannot move an @ each tensor: place_copy): copy the one that can move,
// or, when both are @ each, nothing.
static const char *apart_hint(Checker *c, const Tensor *a, const Tensor *b) {
  bool a_each = a->place.kind == PLACE_EACH, b_each = b->place.kind == PLACE_EACH;
  if (a_each && b_each) return "copy cannot move an @ each tensor to another group, so neither can join the other";
  if (!a_each && !b_each) return "copy one of them first";
  const Tensor *mover = a_each ? b : a, *stays = a_each ? a : b;
  return arena_printf(c->a, "copy '%s' to @ %s first (copy cannot move an @ each tensor)", mover->name,
                      ir_place_str(c->a, &stays->place));
}

// copy: the annotation is the destination.  The copies of an @ each tensor
// cannot be gathered or rearranged by a copy: that is a collective's work.
static bool place_copy(Checker *c, const Call *call, const Placement *given, Placement *out) {
  const AstStmt *s = call->s;
  const Placement *src = &call->args[0]->place;
  if (!s->place.given) {
    diag_error(c->d, s->op_loc, "copy needs a destination: add a placement such as @ device(1)");
    return false;
  }
  if (src->kind == PLACE_EACH && given->kind != PLACE_EACH) {
    diag_error(c->d, s->place.loc,
               "copy cannot gather the copies of an @ each tensor; use all_gather or allreduce");
    return false;
  }
  if (src->kind == PLACE_EACH && !ir_place_equal(src, given)) {
    diag_error(c->d, s->place.loc,
               "copy cannot move an @ each tensor to another group of devices (@ %s to @ %s)",
               ir_place_str(c->a, src), ir_place_str(c->a, given));
    return false;
  }
  *out = *given;
  return true;
}

// Where the result lives.  copy: where the annotation says.  Collectives:
// where the operand is.  Compute ops: where the operands are.  Operands not
// yet placed (auto) follow the others; the placed ones must agree, and an
// annotation may only restate their placement (or place an all-auto call).
static bool place_result(Checker *c, const Call *call, const Placement *given, Placement *out) {
  const AstStmt *s = call->s;
  if (call->kind == OP_COPY) return place_copy(c, call, given, out);
  int first = -1;  // the first placed operand
  for (int i = 0; i < call->nargs; i++) {
    const Placement *p = &call->args[i]->place;
    if (p->kind == PLACE_AUTO) continue;
    if (first < 0) {
      first = i;
    } else if (!ir_place_equal(p, &call->args[first]->place)) {
      const Tensor *a = call->args[first], *b = call->args[i];
      diag_error(c->d, call->arg_ast[i]->loc, "operands of %s are placed apart: '%s' is @ %s and '%s' is @ %s; %s",
                 call->info->name, a->name, ir_place_str(c->a, &a->place), b->name, ir_place_str(c->a, p),
                 apart_hint(c, a, b));
      return false;
    }
  }
  if (first < 0) {  // every operand is auto: the annotation, if any, decides
    *out = s->place.given && !ir_op_is_collective(call->kind) ? *given : call->args[0]->place;
    return true;
  }
  *out = call->args[first]->place;
  if (s->place.given && !ir_place_equal(given, out)) {
    diag_error(c->d, s->place.loc, "%s runs where its operands are (@ %s), not @ %s; %s", call->info->name,
               ir_place_str(c->a, out), ir_place_str(c->a, given),
               out->kind == PLACE_EACH ? "copy cannot move an @ each result to other devices: place it where it is"
                                       : "use copy to move the result");
    return false;
  }
  return true;
}

// Looks the op up, with a hint for a near miss.
static bool lookup_op(Checker *c, Call *call) {
  const AstStmt *s = call->s;
  if (ir_op_lookup(s->op, &call->kind)) {
    call->info = &ir_op_info[call->kind];
    return true;
  }
  const char *hint = NULL;
  int best = 3;  // at most two edits away
  for (int i = 0; i < OP_COUNT; i++) {
    int dist = str_edit_distance(s->op, ir_op_info[i].name);
    if (dist < best) best = dist, hint = ir_op_info[i].name;
  }
  if (hint)
    diag_error(c->d, s->op_loc, "unknown op '%s'; did you mean '%s'?", s->op, hint);
  else
    diag_error(c->d, s->op_loc, "unknown op '%s'", s->op);
  return false;
}

// A loop-carried assignment keeps the name's type, and comes once an
// iteration (a second one would reuse the name NAME.I).
static bool carried_ok(Checker *c, const AstStmt *s, const Tensor *r) {
  Binding *b = lookup(c, s->name);
  if (b->tensor && (r->dtype != b->tensor->dtype || !ir_shape_equal(&r->shape, &b->tensor->shape))) {
    char was[IR_TYPE_STR_MAX], now[IR_TYPE_STR_MAX];
    type_string(was, sizeof was, b->tensor);
    ir_format_type(now, sizeof now, r->dtype, &r->shape);
    diag_error(c->d, s->name_loc,
               "'%s' is carried from one repeat iteration to the next, so it must keep its type "
               "%s; this makes it %s",
               s->name, was, now);
    return false;
  }
  const char *full = graph_name(c, s->name);
  for (NameEntry *e = c->names ? c->names[digest_fnv1a64(full, strlen(full)) % NAME_BUCKETS] : NULL; e; e = e->next)
    if (!strcmp(e->name, full)) {
      diag_error(c->d, s->name_loc, "'%s' is assigned twice in one iteration of its repeat block", s->name);
      return false;
    }
  return true;
}

// Adds the checked call to the graph: its result tensor and its op.
static Tensor *emit_op(Checker *c, const Call *call, Op *op, const Tensor *r) {
  const AstStmt *s = call->s;
  Tensor *t = new_tensor(c, s->name, TENSOR_VALUE, s->name_loc);
  t->dtype = r->dtype;
  t->shape = r->shape;
  t->place = r->place;
  t->place_written = s->place.given;
  t->def = op;
  op->id = c->g->ops.len;  // reduce, algo, axis, shape, start, end: set by the shape rule
  op->kind = call->kind;
  op->result = t;
  op->nargs = call->nargs;
  memcpy(op->args, call->args, sizeof call->args);
  op->loc = s->loc;
  VEC_PUSH(c->a, &c->g->ops, op);
  return t;
}

// Whether the topology's vectors can carry the op: a collective or copy
// moves its dtype's elements, at least one to a vector; a compute op works
// in f32 scratch (docs/isa.md), so a vector must hold an f32; a cholesky
// cuts rows into CHOL_BLOCK_ROWS-row blocks of whole vectors of its dtype
// and of f32; a matmul installs its weights in tiles of ISA_MXM_COLS
// columns that start on a vector of each row, so a vector may hold at most
// ISA_MXM_COLS of its operands' elements.
static bool fits_mxm_tiles(Checker *c, const Call *call) {
  int vb = c->topo->link.vector_bytes;
  DType dt = call->args[0]->dtype;
  int per = isa_elems_per_vector(dt, vb);
  if (call->kind != OP_MATMUL || per <= ISA_MXM_COLS) return true;
  diag_error(c->d, call->s->op_loc,
             "matmul installs weights in tiles of %d columns, each starting on a vector of its rows, and a %d-byte "
             "vector (vector_bytes) holds %d %s elements, more than a tile's columns",
             ISA_MXM_COLS, vb, per, ir_dtype_names[dt]);
  return false;
}

// Whether the topology's vectors hold the op's elements: some (a vector
// op works on whole vectors), and whole ones (an instruction's dtype and a
// tensor's data records must fill a vector exactly: isa_check, so a
// 330-byte vector serves no f32 tensor, whose binaries tsp-emu would
// refuse).  A computing op also needs f32 (its working precision).
static bool fits_vectors(Checker *c, const Call *call, const Tensor *r) {
  int vb = c->topo->link.vector_bytes;
  bool moves = ir_op_is_collective(call->kind) || call->kind == OP_COPY;
  DType need[2 + IR_MAX_OPERANDS] = {r->dtype, DT_F32};
  int nneed = moves ? 1 : 2;
  for (int a = 0; a < call->nargs; a++) need[nneed++] = call->args[a]->dtype;
  for (int i = 0; i < nneed; i++) {
    int per = isa_elems_per_vector(need[i], vb);
    if (per < 1) {
      diag_error(c->d, call->s->op_loc, "%s needs %s elements, and the topology's %d-byte vectors (vector_bytes) hold none",
                 call->info->name, ir_dtype_names[need[i]], vb);
      return false;
    }
    if (vb % ir_dtype_bytes[need[i]]) {
      diag_error(c->d, call->s->op_loc,
                 "%s needs whole %s elements in a vector, and the topology's %d-byte vectors (vector_bytes) hold %d "
                 "and %d bytes over",
                 call->info->name, ir_dtype_names[need[i]], vb, per, vb % ir_dtype_bytes[need[i]]);
      return false;
    }
    if (call->kind == OP_CHOLESKY && CHOL_BLOCK_ROWS % per) {
      diag_error(c->d, call->s->op_loc,
                 "cholesky cuts rows into %d-row blocks of whole vectors, and a %d-byte vector (vector_bytes) holds "
                 "%d %s elements, which do not divide %d",
                 CHOL_BLOCK_ROWS, vb, per, ir_dtype_names[need[i]], CHOL_BLOCK_ROWS);
      return false;
    }
  }
  return fits_mxm_tiles(c, call);
}

// ---- rank-1 shards that are not whole vectors ---------------------------------------

// A value the checker adds for `call` (named NAME.what after the call's
// result: no .tg name has a dot, and a repeat's suffix follows it), made
// by an op of `kind` from args[0 .. nargs) at the call's position.
static Tensor *emit_hidden(Checker *c, const Call *call, Op *op, OpKind kind, Tensor *const *args, int nargs,
                           const char *what, DType dt, const Shape *shape, Placement place) {
  const AstStmt *s = call->s;
  Tensor *t = new_tensor(c, arena_printf(c->a, "%s.%s", s->name, what), TENSOR_VALUE, s->name_loc);
  t->dtype = dt;
  t->shape = *shape;
  t->place = place;
  t->def = op;
  op->id = c->g->ops.len;
  op->kind = kind;
  op->result = t;
  op->nargs = nargs;
  memcpy(op->args, args, sizeof(Tensor *) * (size_t)nargs);
  op->loc = s->loc;
  VEC_PUSH(c->a, &c->g->ops, op);
  return t;
}

// Whether a reduce_scatter's or all_gather's shards are rank-1 runs of
// elements that do not fill whole vectors (f32[1024] over 8 devices: 512
// bytes), which the ISA cannot move as they are, or a rank-1
// reduce_scatter's shards need zero elements after the operand's.
static bool shards_need_rows(const Checker *c, const Call *call, const Op *op, const Tensor *r) {
  if (call->kind != OP_REDUCE_SCATTER && call->kind != OP_ALL_GATHER) return false;
  const Tensor *x = call->args[0];
  const Tensor *shard = call->kind == OP_REDUCE_SCATTER ? r : x;
  return x->shape.rank == 1 && each_group_size(c, &x->place) > 1 &&
         (ir_shape_elems(&shard->shape) * ir_dtype_bytes[shard->dtype] % c->topo->link.vector_bytes != 0 ||
          op->pad_rows);
}

// Such a collective runs on rows, whose every row starts on a vector
// (passes/layout.c): a reduce_scatter of x = [n] over G devices in shards
// of S = ceil(n / G) as reshape(x, [G, S]) -> reduce_scatter -> [1, S] ->
// reshape to [S]; an all_gather of a shard [m] as reshape to [1, m] ->
// all_gather -> [G, m] -> reshape to [G m].  The same values as the
// collective on the packed elements (NCCL's flat buffers), at the cost of
// the two reshapes.  When G does not divide n, the first reshape puts
// G S - n zero elements after x's (Op.pad_elems), so the last shards end
// in zeros, as the pad rows of a rank-2 operand do.  The added values are
// NAME.rows and NAME.shards.
static Tensor *emit_by_rows(Checker *c, const Call *call, Op *op, const Tensor *r) {
  Tensor *x = call->args[0];
  int group = each_group_size(c, &x->place);
  int64_t n = x->shape.dim[0];
  Shape rows = {.rank = 2}, out = {.rank = 2};
  Op *to_rows = ARENA_NEW(c->a, Op);
  if (call->kind == OP_REDUCE_SCATTER) {
    int64_t shard = r->shape.dim[0];
    rows.dim[0] = group, rows.dim[1] = shard;
    out.dim[0] = 1, out.dim[1] = shard;
    to_rows->pad_elems = group * shard - n;
  } else {
    rows.dim[0] = 1, rows.dim[1] = n;
    out.dim[0] = group, out.dim[1] = n;
  }
  to_rows->shape = rows;
  Tensor *xr = emit_hidden(c, call, to_rows, OP_RESHAPE, &x, 1, "rows", x->dtype, &rows, x->place);
  op->pad_rows = 0;  // the rows are the shards
  Tensor *yr = emit_hidden(c, call, op, call->kind, &xr, 1, "shards", r->dtype, &out, r->place);
  Op *back = ARENA_NEW(c->a, Op);
  back->shape = r->shape;
  Call packed = *call;
  packed.kind = OP_RESHAPE;
  packed.nargs = 1;
  packed.args[0] = yr;
  return emit_op(c, &packed, back, r);
}

// Checks one op call and returns its result tensor, or NULL after reporting.
static Tensor *check_call(Checker *c, Call *call, bool carried) {
  Placement given;
  if (!lookup_op(c, call)) return NULL;
  bool args_ok = gather_call(c, call);
  bool place_ok = resolve_place(c, &call->s->place, &given);  // report both
  if (!args_ok || !place_ok) return NULL;
  for (int i = 0; i < call->nargs; i++)
    if (!call->args[i]) return NULL;  // a poisoned operand: already reported
  Op *op = ARENA_NEW(c->a, Op);
  Tensor r = {0};
  if (!shape_rules[call->kind]) unreachable();  // every op has its rule
  if (!shape_rules[call->kind](c, call, op, &r) || !place_result(c, call, &given, &r.place)) return NULL;
  if (!fits_vectors(c, call, &r)) return NULL;
  if (carried && !carried_ok(c, call->s, &r)) return NULL;
  if (shards_need_rows(c, call, op, &r)) return emit_by_rows(c, call, op, &r);
  return emit_op(c, call, op, &r);
}

static void check_assign(Checker *c, const AstStmt *s) {
  Call call = {.s = s};
  bool carried;
  if (!may_define(c, s->name, s->name_loc, true, &carried)) return;
  Tensor *t = check_call(c, &call, carried);
  if (!t) {
    poison(c, s->name);
    return;
  }
  if (carried) {
    Binding *b = lookup(c, s->name);
    b->tensor = t;
    b->rebound_in = c->iteration;
  } else {
    bind(c, s->name, t);
  }
}

// ---- statements and repeat ---------------------------------------------------------------

static void check_stmts(Checker *c, const AstStmt *s);

static void check_repeat(Checker *c, const AstStmt *s) {
  if (s->count < 1 || s->count > FE_MAX_REPEAT) {
    diag_error(c->d, s->count_loc, "repeat count must be between 1 and %d, got %lld", FE_MAX_REPEAT,
               (long long)s->count);
    return;
  }
  if (c->depth == FE_MAX_REPEAT_DEPTH) {
    diag_error(c->d, s->loc, "repeat blocks are nested more than %d deep", FE_MAX_REPEAT_DEPTH);
    return;
  }
  size_t base = c->suffix.len;
  long outer_iteration = c->iteration;  // a carried name's once-per-iteration rule is per level
  c->depth++;
  for (int64_t i = 0; i < s->count && !c->too_many; i++) {
    int errors = c->d->nerrors;
    if (c->serial >= FE_MAX_UNROLLED_ITERATIONS) {
      diag_error(c->d, s->count_loc, "the graph unrolls to more than %d repeat iterations",
                 FE_MAX_UNROLLED_ITERATIONS);
      c->too_many = true;
      break;
    }
    c->suffix.len = base;
    buf_printf(&c->suffix, ".%lld", (long long)c->next_index[c->depth - 1]++);
    c->next_index[c->depth] = 0;  // inner blocks number afresh in every iteration
    c->iteration = ++c->serial;
    check_stmts(c, s->body);
    unbind_deeper(c, c->depth - 1);
    if (c->d->nerrors > errors) break;  // the same errors would repeat
  }
  c->depth--;
  c->iteration = outer_iteration;
  c->suffix.len = base;
  c->suffix.data[base] = '\0';
}

static void check_stmts(Checker *c, const AstStmt *s) {
  for (; s; s = s->next) {
    if (c->g->tensors.len >= FE_MAX_GRAPH_TENSORS) {
      if (!c->too_many)
        diag_error(c->d, s->loc, "the graph unrolls to more than %d tensors", FE_MAX_GRAPH_TENSORS);
      c->too_many = true;
      return;
    }
    switch (s->kind) {
    case STMT_INPUT:
    case STMT_PARAM: check_decl(c, s); break;
    case STMT_OUTPUT: check_output(c, s); break;
    case STMT_ASSIGN: check_assign(c, s); break;
    case STMT_REPEAT: check_repeat(c, s); break;
    }
  }
}

Graph *fe_check(Arena *a, Diag *d, const Ast *ast, const Topology *topo) {
  Checker *c = xcalloc(1, sizeof *c);
  c->a = a;
  c->d = d;
  c->topo = topo;
  c->g = ARENA_NEW(a, Graph);
  c->g->name = ast->name;
  c->g->loc = ast->loc;
  c->g->src = ast->src;
  int errors = d->nerrors;
  check_stmts(c, ast->body);
  Graph *g = d->nerrors == errors ? c->g : NULL;
  free_bindings(c);
  buf_free(&c->suffix);
  free(c);
  return g;
}
