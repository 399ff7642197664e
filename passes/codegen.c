// codegen.c: code generation.  Part of passes/, last: turns the scheduled
// DAG into a Program (ir.h), one instruction stream per unit of every
// device, which backend/ encodes as devNNNN.tsp.
//
// Every instruction is placed at the cycle the schedule gave it, counted
// from the end of the alignment preamble (align.c), and the gaps become
// WAITs; the emulator then runs the program cycle for cycle as planned.
//   - SRAM: every tensor copy gets a home (inputs and params first, in
//     graph order); a collective works in a buffer per device (its
//     operand's own memory when lowering reduces in place; the result is
//     that buffer, or for reduce_scatter its shard).  Receive and forward
//     buffers are scratch, reused once the schedule is done with them.
//   - A route is one SEND where it leaves, a RECV and a SEND on the cycle
//     it lands at every intermediate TSP (virtual cut-through) and a RECV
//     at the destination, sigma cycles after the latest landing.  A
//     reducing transfer lands in scratch, and its VADD or VMAX runs add it
//     into the buffer.  A STAGE is VMOV runs.
//   - Synchronisation (sync.c): every unit opens with the preamble's SYNC,
//     and at each resync window every unit with work left SYNCs while ctl
//     runs RUNTIME_DESKEW and NOTIFYs.
//   - A compute node is one vector-unit pass (put_runs) or the program
//     compute.c placed (gen_program): its buffer offsets become addresses
//     here.  Values that only compute ops read live in SRAM from their
//     producer's start to their last reader's finish and their room is
//     reused after; inputs, params, outputs, and what copies and
//     collectives touch keep theirs for the whole program.  Constant
//     vectors (a layernorm's 1/n) are .init records, one per value, and
//     so are the zeroed pad rows of a reduce_scatter's buffer.
// An op compute.c cannot compile (compute_supported) is refused with its
// location and the reason.
#include "passes.h"

#include <stdlib.h>
#include <string.h>

// An instruction while it is generated: at its issue cycle (schedule
// time), with what it serves (the program's InstrNote when annotated).
typedef struct Placed {
  int64_t at;
  const char *note;
  Instr in;
  int32_t line;
} Placed;

// One unit's instructions while they are generated, in any order, before
// WAITs fill the gaps.  Held in malloc'd memory and freed once emitted: a
// unit's list grows by doubling, which in the arena would keep every
// smaller copy too (on system10440 half the instructions' memory).
typedef struct UnitCode {
  UnitKind kind;
  int port;
  struct {
    Placed *data;
    int len, cap;
  } code;
  int64_t resync_until;  // a SYNC at every resync k I below this (add_resyncs; emit_unit merges them in)
} UnitCode;

// A scratch buffer of one device: `size` vectors at addr, in use until free_at.
typedef struct Block {
  uint32_t addr;
  int64_t size, free_at;
} Block;

// A constant vector of one device: every lane `value` as dtype, at addr.
typedef struct ConstVec {
  DType dtype;
  double value;
  uint32_t addr;
} ConstVec;

typedef struct DeviceCode {
  UnitCode *c2c;  // by port
  UnitCode vxm, mxm, sxm, ctl;
  VEC(ConstVec) consts;
  VEC(DataRecord) zeros;  // .init records of zeroed pad rows
  int64_t top;    // the next free SRAM vector
  int64_t high;   // the compact way: what is kept for good lies in [high, sram_vectors)
  VEC(Block) scratch;
} DeviceCode;

// The forwarding buffer being placed: hop h of route rt (rt NULL: none),
// one of a transfer spread over longer paths or not.
typedef struct Relay {
  const Route *rt;
  int h;
  bool spread;
} Relay;

typedef struct Codegen {
  Compilation *c;
  const Topology *t;
  int vb;
  DeviceCode *dev;
  int64_t **home;     // [tensor id][device]: the vector address + 1 of its copy there (0: none)
  int64_t **replica;  // [tensor id][device]: a copy fetched by an implicit transfer
  int64_t **work;     // [op id][device]: a collective's buffer
  bool *idle;         // [op id]: a collective no transfer or stage touches (find_idle_collectives)
  int64_t last;       // the latest event of the program, schedule time
  VEC(const Op *) refused;  // the ops refused, one per source position
  bool failed;
  Relay relay;        // the forwarding buffer being placed, for a refusal
  bool no_room;       // failed for want of SRAM (alloc)
  bool compact;     // the compact way: what is kept for good from the top of the SRAM down (keep), blocks fitted closely (scratch)
  int64_t **live;     // [tensor id][device]: [from, until) a compute value lives (NULL row: for good)
  Placed *sort_buffer; // sort_by_time's, for the longest unit list so far
  int sort_cap;
  const char *note;   // what the instructions being made serve (InstrNote.note)
  int line;           // ... and the .tg line of the op behind them (InstrNote.line; 0: none)
  const SrcLoc *at;   // the op being made, or the tensor being placed, for errors (NULL: none)
} Codegen;


// ---- SRAM ---------------------------------------------------------------------------

// Vectors of device d in use: its blocks and what is kept for good.
static int64_t in_use(const Codegen *g, const DeviceCode *d) { return d->top + (g->t->sram_vectors - d->high); }

// What the forwarding buffer being placed is, for a refusal: whose stream
// it relays, and, for a transfer spread over paths longer than the
// shortest (--route=auto chose them), that --route=minimal keeps to it.
static const char *relay_what(Codegen *g) {
  const Relay *r = &g->relay;
  const Path *p = &r->rt->path;
  return arena_printf(&g->c->arena, "a forwarding buffer (device %d relays %lld vectors from device %d to device %d%s)",
                      p->hops[r->h].to, (long long)r->rt->count, p->hops[0].from, p->hops[p->nhops - 1].to,
                      r->spread ? " on a path longer than the shortest; --route=minimal keeps to the shortest" : "");
}

// The refusal of `vectors` more on device, for `what` (NULL: the
// forwarding buffer g->relay), once a run.
static void no_room(Codegen *g, int device, int64_t vectors, const char *what) {
  if (g->failed) return;
  if (!what) what = relay_what(g);
  char size[32], used[32], all[32];
  str_human_bytes(size, sizeof size, (double)vectors * g->vb);
  str_human_bytes(used, sizeof used, (double)in_use(g, &g->dev[device]) * g->vb);
  str_human_bytes(all, sizeof all, (double)g->t->sram_vectors * g->vb);
  static const char *fmt = "device %d: no room for %s: it needs %s, and %s of the device's %s of SRAM "
                           "(sram_vectors %d) hold what lives at the same time";
  if (g->at) diag_error(&g->c->diag, *g->at, fmt, device, what, size, used, all, g->t->sram_vectors);
  else diag_tool_error(&g->c->diag, "tspc", fmt, device, what, size, used, all, g->t->sram_vectors);
  g->failed = g->no_room = true;
}

// `vectors` after the blocks of device (a new block, or, one-ended, what
// is kept for good); `what` names them if the SRAM is full.
static int64_t alloc(Codegen *g, int device, int64_t vectors, const char *what) {
  DeviceCode *d = &g->dev[device];
  int64_t addr = d->top;
  if (addr + vectors > d->high) no_room(g, device, vectors, what);
  d->top += vectors;
  return g->failed ? 0 : addr;
}

// Room for what device keeps for good (a tensor with no lifetime, a
// collective's buffer, a constant): after the blocks, or, the compact way, from
// the top of the SRAM down, so that what is kept never lies between
// blocks that come and go (pass_codegen).
static int64_t keep(Codegen *g, int device, int64_t vectors, const char *what) {
  DeviceCode *d = &g->dev[device];
  if (!g->compact) return alloc(g, device, vectors, what);
  if (d->high - vectors < d->top) no_room(g, device, vectors, what);
  d->high -= vectors;
  return g->failed ? 0 : d->high;
}

// "tensor 'h' (f16[64, 4096])", in the arena.
static const char *tensor_what(Codegen *g, const Tensor *t) {
  char type[IR_TYPE_STR_MAX];
  ir_format_type(type, sizeof type, t->dtype, &t->shape);
  return arena_printf(&g->c->arena, "tensor '%s' (%s)", t->name, type);
}

// ---- blocks ----
//
// A device's blocks lie in address order from vector 0 up, each free from
// free_at (schedule time) on: what is placed in one lives [from, until)
// for some until after its from.  Requests come in node order, not time
// order, so a block is free for a request from `from` when every earlier
// use of it ended by then.  The first way (pass_codegen) takes the first
// free block big enough, whole, else a new one.  The compact way takes the
// smallest free block that holds the request, its tail split off free;
// else merges a run of adjacent free blocks; else grows the last block if
// it is free; else adds one.

static void insert_block(Codegen *g, DeviceCode *d, int at, Block b) {
  VEC_PUSH(&g->c->arena, &d->scratch, b);  // room at the end, then moved into place
  memmove(&d->scratch.data[at + 1], &d->scratch.data[at], sizeof(Block) * (size_t)(d->scratch.len - 1 - at));
  d->scratch.data[at] = b;
}

// Block i of d takes a request of `vectors` until `until` (compact: the
// rest split off free after it).
static int64_t take_block(Codegen *g, DeviceCode *d, int i, int64_t vectors, int64_t until) {
  Block *b = &d->scratch.data[i];
  if (g->compact && b->size > vectors) {
    Block rest = {(uint32_t)(b->addr + vectors), b->size - vectors, b->free_at};
    b->size = vectors;
    insert_block(g, d, i + 1, rest);
    b = &d->scratch.data[i];
  }
  b->free_at = until;
  return b->addr;
}

// The block of d free from `from` that holds `vectors`: the first, or
// compact, the smallest (-1: none).
static int fitting_block(const Codegen *g, const DeviceCode *d, int64_t vectors, int64_t from) {
  int found = -1;
  for (int i = 0; i < d->scratch.len; i++) {
    const Block *b = &d->scratch.data[i];
    if (b->free_at > from || b->size < vectors) continue;
    if (!g->compact) return i;
    if (found < 0 || b->size < d->scratch.data[found].size) found = i;
  }
  return found;
}

// Merges the first run of adjacent blocks of d free from `from` that
// together hold `vectors` into one; its index (-1: none).
static int merge_run(DeviceCode *d, int64_t vectors, int64_t from) {
  for (int i = 0; i < d->scratch.len; i++) {
    int64_t size = 0, free_at = INT64_MIN;
    int j = i;
    for (; j < d->scratch.len && size < vectors; j++) {
      const Block *b = &d->scratch.data[j];
      if (b->free_at > from || (j > i && b->addr != d->scratch.data[j - 1].addr + d->scratch.data[j - 1].size)) break;
      size += b->size, free_at = MAX(free_at, b->free_at);
    }
    if (size < vectors) continue;
    d->scratch.data[i].size = size, d->scratch.data[i].free_at = free_at;
    memmove(&d->scratch.data[i + 1], &d->scratch.data[j], sizeof(Block) * (size_t)(d->scratch.len - j));
    d->scratch.len -= j - i - 1;
    return i;
  }
  return -1;
}

// A block on device for [from, until), as the way in use says (above).
static int64_t scratch(Codegen *g, int device, int64_t vectors, int64_t from, int64_t until, const char *what) {
  DeviceCode *d = &g->dev[device];
  int i = fitting_block(g, d, vectors, from);
  if (i < 0 && g->compact) i = merge_run(d, vectors, from);
  if (i >= 0) return take_block(g, d, i, vectors, until);
  Block *last = d->scratch.len ? &d->scratch.data[d->scratch.len - 1] : NULL;
  if (g->compact && last && last->free_at <= from && last->addr + last->size == d->top) {  // grown in place
    if (last->addr + vectors > d->high) {  // refused for the whole buffer, not the growth
      no_room(g, device, vectors, what);
      return 0;
    }
    d->top = last->addr + vectors;
    last->size = vectors, last->free_at = until;
    return last->addr;
  }
  Block b = {(uint32_t)alloc(g, device, vectors, what), vectors, until};
  VEC_PUSH(&g->c->arena, &d->scratch, b);
  return b.addr;
}

static int64_t *table_row(Codegen *g, int64_t **table, int index) {
  if (!table[index]) table[index] = ARENA_ARRAY(&g->c->arena, int64_t, g->t->ndevices);
  return table[index];
}

static int64_t work(Codegen *g, const Op *op, int device);

// The home of tensor t's copy on device, made on first use: for the
// lifetime compute_lifetimes found, or for good; an idle collective's
// result, its operand's buffer (find_idle_collectives).
static int64_t home(Codegen *g, const Tensor *t, int device) {
  int64_t *row = table_row(g, g->home, t->id);
  if (!row[device] && t->def && g->idle && g->idle[t->def->id]) work(g, t->def, device);  // its operand's buffer
  if (row[device]) return row[device] - 1;
  int64_t vectors = layout_vectors(g->c, t);
  const int64_t *live = g->live[t->id];
  const SrcLoc *was = g->at;
  if (!g->at) g->at = &t->loc;  // placed before or after the nodes: where it is declared
  if (live && live[2 * device + 1] > live[2 * device])
    row[device] = scratch(g, device, vectors, live[2 * device], live[2 * device + 1], tensor_what(g, t)) + 1;
  else
    row[device] = keep(g, device, vectors, tensor_what(g, t)) + 1;
  g->at = was;
  return row[device] - 1;
}

// Where tensor t can be read on device: its own copy, or a fetched one.
static int64_t read_at(Codegen *g, const Tensor *t, int device) {
  if (ir_place_has(&t->place, device)) return home(g, t, device);
  int64_t *row = table_row(g, g->replica, t->id);
  if (row[device]) return row[device] - 1;
  int64_t vectors = layout_vectors(g->c, t);
  const int64_t *live = g->live[t->id];
  if (live && live[2 * device + 1] > live[2 * device])  // from its transfer to its last reader
    row[device] = scratch(g, device, vectors, live[2 * device], live[2 * device + 1], tensor_what(g, t)) + 1;
  else
    row[device] = keep(g, device, vectors, tensor_what(g, t)) + 1;
  return row[device] - 1;
}

// The vectors of a collective's buffer: its operand's, and a
// reduce_scatter's pad rows (of its first dimension) after them.
static int64_t buffer_vectors(Codegen *g, const Op *op) {
  const Tensor *x = op->args[0];
  int64_t vectors = layout_vectors(g->c, x);
  return vectors + op->pad_rows * (vectors / x->shape.dim[0]);
}

// A reduce_scatter's pad rows read as zeros: an .init record before the
// run (no instruction, no cycle), since no transfer carries them.
static void zero_pad_rows(Codegen *g, const Op *op, int device, int64_t buffer) {
  int64_t first = layout_vectors(g->c, op->args[0]);
  DataRecord r = {.kind = REC_INIT, .dtype = op->args[0]->dtype, .addr = (uint32_t)(buffer + first),
                  .nvec = (uint32_t)(buffer_vectors(g, op) - first), .a = 0, .b = 0};
  VEC_PUSH(&g->c->arena, &g->dev[device].zeros, r);
}

// A collective's buffer on device (see the file comment), and the home of
// its result there.
static int64_t work(Codegen *g, const Op *op, int device) {
  int64_t *row = table_row(g, g->work, op->id);
  if (row[device]) return row[device] - 1;
  const Tensor *x = op->args[0], *y = op->result;
  int64_t w;
  if (op->kind == OP_ALL_GATHER)
    w = home(g, y, device);
  else if (lower_in_place(g->c->graph, op))
    w = read_at(g, x, device);
  else
    w = keep(g, device, buffer_vectors(g, op), arena_printf(&g->c->arena, "the buffer of %s", ir_op_info[op->kind].name));
  if (op->pad_rows) zero_pad_rows(g, op, device, w);
  row[device] = w + 1;
  if (op->kind != OP_ALL_GATHER) {
    int64_t shard = 0;
    if (op->kind == OP_REDUCE_SCATTER) {  // shard k of the group, k = the device's index in it
      int k = 0;
      for (int d = 0; d < device; d++) k += ir_place_has(&x->place, d);
      shard = layout_bytes(g->c, y) * k / g->vb;
    }
    table_row(g, g->home, y->id)[device] = w + shard + 1;
  }
  return w;
}

// ---- instructions -------------------------------------------------------------

// Appends `in` to u's list, issued at `at`, noted as what g serves now
// (the fields set in place, after the copy: not on `in`, whose copy would
// then stall on the stores just made).
static void put(Codegen *g, UnitCode *u, int64_t at, Instr in) {
  if (u->code.len == u->code.cap) {
    if (u->code.cap > INT32_MAX / 2) die("codegen: a unit of more than 2^30 instructions");
    u->code.cap = u->code.cap ? 2 * u->code.cap : 16;
    u->code.data = xrealloc(u->code.data, sizeof(Placed) * (size_t)u->code.cap);
  }
  Placed *p = &u->code.data[u->code.len++];
  p->in = in;
  p->note = g->note, p->at = at, p->line = g->line;
}

static void forget_code(UnitCode *u) {
  free(u->code.data);
  u->code.data = NULL;
  u->code.len = u->code.cap = 0;
}

// Frees every unit's list still held (after an error, or units never emitted).
static void forget_all_code(Codegen *g) {
  for (int v = 0; v < g->t->ndevices; v++) {
    DeviceCode *d = &g->dev[v];
    for (int q = 0; q < g->t->devices[v].nports; q++) forget_code(&d->c2c[q]);
    forget_code(&d->vxm), forget_code(&d->mxm), forget_code(&d->sxm), forget_code(&d->ctl);
  }
}

static Instr instr(Opcode op, int port, DType dt, int64_t a, int64_t b, int64_t c, int64_t d) {
  return (Instr){.op = (uint8_t)op, .dtype = (uint8_t)dt, .port = (uint16_t)port, .a = (uint32_t)a,
                 .b = (uint32_t)b, .c = (uint32_t)c, .d = (uint32_t)d};
}

static void note_event(Codegen *g, int64_t at) { g->last = MAX(g->last, at); }

static void put_send(Codegen *g, int device, int port, int64_t at, int64_t addr, int64_t n, int every) {
  put(g, &g->dev[device].c2c[port], at, instr(OPC_SEND, port, 0, addr, n, 0, 0));
  note_event(g, at + (n - 1) * every);
}

static void put_recv(Codegen *g, int device, int port, int64_t at, int64_t addr, int64_t n, int every) {
  put(g, &g->dev[device].c2c[port], at, instr(OPC_RECV, port, 0, addr, n, 0, 0));
  note_event(g, at + (n - 1) * every);
}

// One vector-unit op per run of n: run r covers vectors [v, v + count) of
// the node's data.  dst, x and y are the addresses of vector 0 (y < 0:
// a one-source op).
static void put_runs(Codegen *g, const DagNode *n, int device, Opcode op, DType dt, int64_t dst, int64_t x,
                     int64_t y) {
  int64_t v = 0;
  for (int r = 0; r < n->nruns; r++) {
    const UnitRun *run = &n->runs[r];
    bool binary = strchr(isa_opcodes[op].operands, 'd') != NULL;
    Instr in = op == OPC_VMOV ? instr(op, 0, 0, dst + v, x + v, run->count, 0)
               : !binary      ? instr(op, 0, dt, dst + v, x + v, run->count, 0)
                              : instr(op, 0, dt, dst + v, x + v, y + v, run->count);
    put(g, &g->dev[device].vxm, run->start, in);
    note_event(g, run->start + run->count - 1 + ISA_VXM_LATENCY);
    v += run->count;
  }
}

// ---- nodes ----------------------------------------------------------------------

// Route rt of a transfer from src (at address from) to dst (at address to):
// a stream per hop, cut through every intermediate TSP.
static void gen_route(Codegen *g, const Route *rt, int64_t from, int64_t to, bool spread) {
  int64_t leave = rt->start, src_addr = from + rt->first;
  for (int h = 0; h < rt->path.nhops; h++) {
    const Hop *hop = &rt->path.hops[h];
    int64_t take = leave + g->t->links.data[hop->link].p.latency_max + rt->hop_slack;
    if (h == 0) put_send(g, hop->from, hop->out_port, leave, src_addr, rt->count, rt->every);
    if (h == rt->path.nhops - 1) {
      put_recv(g, hop->to, hop->in_port, take, to + rt->first, rt->count, rt->every);
    } else {
      int64_t end = take + rt->count * rt->every;
      g->relay = (Relay){rt, h, spread};  // named only if refused (relay_what)
      int64_t buf = scratch(g, hop->to, rt->count, take, end, NULL);
      g->relay.rt = NULL;
      put_recv(g, hop->to, hop->in_port, take, buf, rt->count, rt->every);
      put_send(g, hop->to, rt->path.hops[h + 1].out_port, take, buf, rt->count, rt->every);
    }
    leave = take;
  }
}

static void gen_transfer(Codegen *g, const DagNode *n) {
  const Op *op = n->op;
  int64_t from, to, offset = n->offset / g->vb;
  if (ir_op_is_collective(op->kind)) {
    from = work(g, op, n->src) + offset;
    to = work(g, op, n->dst) + offset;
  } else if (op->kind == OP_COPY) {  // (a chunk of a tree's edge: from offset on)
    from = read_at(g, n->tensor, n->src) + offset;
    to = home(g, op->result, n->dst) + offset;
  } else {  // an operand fetched for a compute op on dst
    from = read_at(g, n->tensor, n->src) + offset;
    to = read_at(g, n->tensor, n->dst) + offset;
  }
  int64_t land = to;
  if (n->reduce) land = scratch(g, n->dst, n->vectors, n->start, n->finish, "a receive buffer");
  for (int r = 0; r < n->nroutes; r++) gen_route(g, &n->routes[r], from, land, n->nonminimal);
  if (n->reduce)
    put_runs(g, n, n->dst, op->reduce == REDUCE_MAX ? OPC_VMAX : OPC_VADD, n->tensor->dtype, to, to, land);
}

static void gen_stage(Codegen *g, const DagNode *n) {
  int64_t w = work(g, n->op, n->device) + n->offset / g->vb;
  put_runs(g, n, n->device, OPC_VMOV, 0, w, read_at(g, n->op->args[0], n->device), -1);
}

// The vector of every lane `value` as dt on device (one per value, for good).
static int64_t const_vector(Codegen *g, int device, DType dt, double value) {
  DeviceCode *d = &g->dev[device];
  for (int i = 0; i < d->consts.len; i++)
    if (d->consts.data[i].dtype == dt && d->consts.data[i].value == value) return d->consts.data[i].addr;
  ConstVec cv = {dt, value, (uint32_t)keep(g, device, 1, "a constant vector")};
  VEC_PUSH(&g->c->arena, &d->consts, cv);
  return cv.addr;
}

// The address of each buffer a program's instructions name (ir.h REF_*).
static int64_t *program_bases(Codegen *g, const DagNode *n) {
  int d = n->device;
  int64_t *base = ARENA_ARRAY(&g->c->arena, int64_t, REF_SCRATCH + n->nscratch);
  for (int a = 0; a < n->op->nargs; a++) base[REF_ARG0 + a] = read_at(g, compute_storage_of(g->c, n->op->args[a]), d);
  base[REF_RESULT] = home(g, n->op->result, d);
  for (int k = 0; k < n->nscratch; k++) {
    const ScratchBuf *b = &n->scratch[k];
    base[REF_SCRATCH + k] = b->is_const ? const_vector(g, d, b->dtype, b->value)
                                        : scratch(g, d, b->vectors, n->start, n->finish, "a compute scratch buffer");
  }
  return base;
}

static UnitCode *unit_code(Codegen *g, int device, const Instr *in) {
  unsigned units = isa_opcodes[in->op].units;
  DeviceCode *d = &g->dev[device];
  return units & U_MXM ? &d->mxm : units & U_SXM ? &d->sxm : &d->vxm;
}

// A compute program as compute.c placed it, its buffers resolved.
static void gen_program(Codegen *g, const DagNode *n) {
  if (!n->ncode) return;
  int64_t *base = program_bases(g, n);
  for (int i = 0; i < n->ncode; i++) {
    const UnitInstr *ui = &n->code[i];
    Instr in = ui->in;
    uint32_t *field[4] = {&in.a, &in.b, &in.c, &in.d};
    for (int f = 0; f < 4; f++)
      if (ui->ref[f] != REF_NONE) *field[f] += (uint32_t)base[ui->ref[f]];
    put(g, unit_code(g, n->device, &in), ui->at, in);
  }
  note_event(g, n->finish);
}

static void gen_compute(Codegen *g, const DagNode *n) {
  const Op *op = n->op;
  int d = n->device;
  Opcode pass = compute_pass_opcode(g->c, op);
  if (op->kind == OP_COPY) {  // the operand is already here: the result is the same bytes
    table_row(g, g->home, op->result->id)[d] = read_at(g, op->args[0], d) + 1;
  } else if (pass == OPC_COUNT) {
    gen_program(g, n);
  } else {
    int64_t y = op->nargs == 2 ? read_at(g, op->args[1], d) : -1;
    put_runs(g, n, d, pass, op->result->dtype, home(g, op->result, d), read_at(g, op->args[0], d), y);
  }
}

// When each compute value lives on each device: from its producer's start
// to its last reader's finish (the rest: for good, live row NULL).  A value
// qualifies when it is no output and only compute ops (not copies or
// collectives) read it; a transposed view's readers read its operand.
// Whether transfer n fetches a compute op's operand from the device that
// holds it (an implicit transfer, dag.c), not a copy's or a collective's.
static bool is_fetch(const Codegen *g, const DagNode *n) {
  const Op *op = n->op;
  return op->kind != OP_COPY && !ir_op_is_collective(op->kind) && compute_storage_of(g->c, n->tensor) == n->tensor;
}

// Makes t's copy on device live through [from, until) too.
static void extend_life(Codegen *g, const Tensor *t, int device, int64_t from, int64_t until) {
  int nd = g->t->ndevices;
  if (!g->live[t->id]) {
    g->live[t->id] = ARENA_ARRAY(&g->c->arena, int64_t, 2 * nd);
    for (int v = 0; v < nd; v++) g->live[t->id][2 * v] = INT64_MAX;
  }
  int64_t *span = &g->live[t->id][2 * device];
  span[0] = MIN(span[0], from);
  span[1] = MAX(span[1], until);
}

static void compute_lifetimes(Codegen *g) {
  const Graph *gr = g->c->graph;
  bool *forever = ARENA_ARRAY(&g->c->arena, bool, gr->tensors.len + 1);
  for (int i = 0; i < gr->tensors.len; i++) {
    const Tensor *t = gr->tensors.data[i];
    forever[i] = t->kind != TENSOR_VALUE || t->is_output || !t->def || t->def->kind == OP_COPY ||
                 ir_op_is_collective(t->def->kind);
  }
  for (int i = 0; i < gr->ops.len; i++) {
    const Op *op = gr->ops.data[i];
    if (op->kind == OP_COPY || ir_op_is_collective(op->kind))
      for (int a = 0; a < op->nargs; a++) forever[op->args[a]->id] = true;
  }
  for (int i = 0; i < g->c->dag->nodes.len; i++) {
    const DagNode *n = g->c->dag->nodes.data[i];
    if (n->kind == NODE_TRANSFER && !is_fetch(g, n)) forever[n->tensor->id] = true;
  }
  for (int i = 0; i < g->c->dag->nodes.len; i++) {
    const DagNode *n = g->c->dag->nodes.data[i];
    if (n->kind == NODE_TRANSFER && is_fetch(g, n) && !forever[n->tensor->id]) {  // read on src, written on dst
      extend_life(g, n->tensor, n->src, n->start, n->finish);
      extend_life(g, n->tensor, n->dst, n->start, n->finish);
    }
    if (n->kind != NODE_COMPUTE) continue;
    const Tensor *ts[IR_MAX_OPERANDS + 1];
    int count = 0;
    ts[count++] = n->op->result;
    for (int a = 0; a < n->op->nargs; a++) ts[count++] = compute_storage_of(g->c, n->op->args[a]);
    for (int k = 0; k < count; k++)
      if (!forever[ts[k]->id]) extend_life(g, ts[k], n->device, n->start, n->finish);
  }
}

// ---- checks the ISA imposes ---------------------------------------------------

// Once per source position: the iterations of a repeat share theirs.
static void refuse(Codegen *g, const Op *op, const char *why) {
  g->failed = true;
  for (int i = 0; i < g->refused.len; i++) {
    const SrcLoc *at = &g->refused.data[i]->loc;
    if (at->file == op->loc.file && at->line == op->loc.line && at->col == op->loc.col) return;
  }
  VEC_PUSH(&g->c->arena, &g->refused, op);
  diag_error(&g->c->diag, op->loc, "cannot generate code for %s: %s", ir_op_info[op->kind].name, why);
}

// Every compute op must be one compute.c compiles.
static bool ops_fit(Codegen *g) {
  char why[256];
  for (int i = 0; i < g->c->graph->ops.len; i++) {
    const Op *op = g->c->graph->ops.data[i];
    if (!compute_supported(g->c, op, why, sizeof why)) refuse(g, op, why);
  }
  return !g->failed;
}

// A reduce_scatter's or all_gather's shards must start on a vector.
static bool shards_fit(Codegen *g) {
  for (int i = 0; i < g->c->graph->ops.len; i++) {
    const Op *op = g->c->graph->ops.data[i];
    if (op->kind != OP_REDUCE_SCATTER && op->kind != OP_ALL_GATHER) continue;
    const Tensor *shard = op->kind == OP_REDUCE_SCATTER ? op->result : op->args[0];
    int64_t bytes = layout_bytes(g->c, shard);
    int n = 0;
    for (int d = 0; d < g->t->ndevices; d++) n += ir_place_has(&op->args[0]->place, d);
    if (n > 1 && bytes % g->vb) {
      diag_error(&g->c->diag, op->loc,
                 "cannot generate code for %s: its %lld-byte shards are not whole %d-byte vectors, and the ISA "
                 "moves whole vectors",
                 ir_op_info[op->kind].name, (long long)bytes, g->vb);
      return false;
    }
  }
  return true;
}

// Inputs and params first, in graph order, so their homes read well.
static void place_interface(Codegen *g) {
  for (int i = 0; i < g->c->graph->tensors.len; i++) {
    const Tensor *t = g->c->graph->tensors.data[i];
    if (t->kind == TENSOR_VALUE) continue;
    for (int d = 0; d < g->t->ndevices; d++)
      if (ir_place_has(&t->place, d)) home(g, t, d);
  }
}

// The collectives no transfer or stage touches: over a group of one
// device, reducing the operand in place, nothing moves.  Such a result's
// home is its operand's buffer, found when something first asks for it
// (home: the reader's node, or place_results), after whatever made the
// operand (another collective's buffer, say) has placed it.  Before, a
// reader such as relu(r) got a home of its own that nothing wrote.
static void find_idle_collectives(Codegen *g) {
  const Graph *gr = g->c->graph;
  g->idle = ARENA_ARRAY(&g->c->arena, bool, gr->ops.len + 1);
  for (int i = 0; i < gr->ops.len; i++) g->idle[i] = ir_op_is_collective(gr->ops.data[i]->kind);
  for (int i = 0; i < g->c->dag->nodes.len; i++) {
    const DagNode *n = g->c->dag->nodes.data[i];
    if (n->kind == NODE_TRANSFER || n->kind == NODE_STAGE) g->idle[n->op->id] = false;
  }
}

// Every collective's result gets its home, even where no transfer touched it.
static void place_results(Codegen *g) {
  for (int i = 0; i < g->c->graph->ops.len; i++) {
    const Op *op = g->c->graph->ops.data[i];
    if (!ir_op_is_collective(op->kind)) continue;
    for (int d = 0; d < g->t->ndevices; d++)
      if (ir_place_has(&op->args[0]->place, d)) work(g, op, d);
  }
  for (int i = 0; i < g->c->graph->outputs.len; i++) {
    const Tensor *t = g->c->graph->outputs.data[i];
    for (int d = 0; d < g->t->ndevices; d++)
      if (ir_place_has(&t->place, d)) home(g, t, d);
  }
}

// ---- from timed instructions to streams -----------------------------------------

// Cycles after issuing in before the unit issues again.
static int64_t issue_cycles(const Codegen *g, const Instr *in) {
  if (in->op == OPC_SYNC) return g->c->sync.window;
  return isa_issue_cycles(in, g->vb);
}

// The listing note of a resync's instructions (--emit=asm, -g).
#define RESYNC_NOTE "resync (RUNTIME_DESKEW against drift)"

// Resyncs on one device: a SYNC on every unit with work after the window,
// and on ctl RUNTIME_DESKEW W - 1 then NOTIFY, waking them at k I + W.  A
// unit's SYNCs are not put in its list: they fall at every k I up to its
// last issue, so emit_unit merges them into the sorted code as it goes (a
// long run's resyncs are most of its instructions).
static void add_resyncs(Codegen *g, DeviceCode *d, int nports) {
  const SyncPlan *s = &g->c->sync;
  if (!s->interval) return;
  UnitCode **units = ARENA_ARRAY(&g->c->arena, UnitCode *, nports + 3);
  int64_t busy = 0;
  int nu = 0;
  for (int p = 0; p < nports; p++) units[nu++] = &d->c2c[p];
  units[nu++] = &d->vxm;
  units[nu++] = &d->mxm;
  units[nu++] = &d->sxm;
  for (int i = 0; i < nu; i++) {  // the unit's last issue (its code is in no order yet)
    int64_t last = -1;
    for (int j = 0; j < units[i]->code.len; j++) last = MAX(last, units[i]->code.data[j].at);
    units[i]->resync_until = last;
    busy = MAX(busy, last);
  }
  g->note = g->c->annotate ? RESYNC_NOTE : NULL;
  g->line = 0;
  for (int64_t k = 1; k * s->interval < busy; k++) {
    int64_t at = k * s->interval;
    put(g, &d->ctl, at, instr(OPC_RUNTIME_DESKEW, 0, 0, s->window - 1, 0, 0, 0));
    put(g, &d->ctl, at + s->window - 1, instr(OPC_NOTIFY, 0, 0, 0, 0, 0, 0));
    note_event(g, at + s->window);
  }
}

// The end of the run of instructions in time order that starts at i.
static int run_end(const Placed *code, int i, int n) {
  while (++i < n && code[i].at >= code[i - 1].at) {}
  return i;
}

// Sorts u's list by issue cycle, stably (instructions of one cycle keep the
// order they were made in).  A unit's list is made node by node, so it is
// a few runs already in time order, mostly one: natural merge sort merges
// neighbouring runs, pass after pass, through g->sort_buffer (qsort, with
// its allocations and indirect moves of 40-byte instructions, took 0.17 s
// more of a 7 s system10440 compile).
static void sort_by_time(Codegen *g, UnitCode *u) {
  int n = u->code.len;
  if (n < 2 || run_end(u->code.data, 0, n) == n) return;
  if (g->sort_cap < n) {
    g->sort_cap = MAX(n, 2 * g->sort_cap);
    g->sort_buffer = xrealloc(g->sort_buffer, sizeof(Placed) * (size_t)g->sort_cap);
  }
  Placed *from = u->code.data, *to = g->sort_buffer;
  while (run_end(from, 0, n) < n) {  // a pass: each two neighbouring runs into one
    for (int lo = 0; lo < n;) {
      int mid = run_end(from, lo, n), hi = mid < n ? run_end(from, mid, n) : n, a = lo, b = mid, k = lo;
      while (a < mid && b < hi) to[k++] = from[b].at < from[a].at ? from[b++] : from[a++];
      memcpy(to + k, from + a, sizeof(Placed) * (size_t)(mid - a));
      memcpy(to + k + (mid - a), from + b, sizeof(Placed) * (size_t)(hi - b));
      lo = hi;
    }
    Placed *t = from;
    from = to, to = t;
  }
  if (from != u->code.data) memcpy(u->code.data, from, sizeof(Placed) * (size_t)n);
}

// Where emit_unit stands in a unit's instructions merged with its SYNCs.
typedef struct Merge {
  const UnitCode *u;
  int i;              // the next of u's list
  int64_t next_sync;  // the next resync's cycle
} Merge;

// The unit's next instruction in issue order: its list, sorted, with a
// SYNC merged in at every resync k I below u->resync_until (after an
// instruction at the same cycle, as a stable sort of them appended would
// put it).  False at the end; else *in is the list's instruction, or NULL
// for a SYNC, and *at its cycle.
static inline bool merge_next(const Codegen *g, Merge *m, const Placed **in, int64_t *at) {
  const SyncPlan *s = &g->c->sync;
  bool sync_due = s->interval && m->next_sync < m->u->resync_until;
  if (m->i < m->u->code.len && (!sync_due || m->u->code.data[m->i].at <= m->next_sync)) {
    *in = &m->u->code.data[m->i++];
    *at = (*in)->at;
    return true;
  }
  if (!sync_due) return false;
  *in = NULL;
  *at = m->next_sync;
  m->next_sync += s->interval;
  return true;
}

// Cycles after issuing the merge's instruction (NULL: a SYNC) before the unit issues again.
static int64_t merged_cycles(const Codegen *g, const Placed *p) { return p ? issue_cycles(g, &p->in) : g->c->sync.window; }

// Instruction i's note, when the program is annotated (notes not NULL).
static inline void put_note(InstrNote *notes, int i, InstrNote note) {
  if (notes) notes[i] = note;
}

// Appends u's instructions to out, WAITs in the gaps, then HALT: counted
// first, then written in place into room reserved once (an instruction
// built on the stack and copied stalls on the stores just made to it; most
// of a long run's instructions are these WAITs and SYNCs), and their notes
// beside them when the program is annotated.
static void emit_unit(Codegen *g, int device, UnitCode *u, UnitProgram *out) {
  sort_by_time(g, u);
  int64_t now = 0, words = 1, at;  // the instructions, their WAITs and the HALT
  const Placed *t;
  Merge m = {.u = u, .next_sync = g->c->sync.interval};
  while (merge_next(g, &m, &t, &at)) {
    int64_t gap = at - now;
    words += 1 + (gap > 0 ? (gap + UINT32_MAX - 1) / UINT32_MAX : 0);
    now = MAX(now, at + merged_cycles(g, t));
  }
  words += out->code.len;  // after the preamble
  if (words > INT32_MAX) die("codegen: device %d: a unit of more than 2^31 instructions", device);
  VEC_RESERVE(&g->c->arena, &out->code, (int)words);
  Instr *code = out->code.data;
  InstrNote *notes = NULL;
  if (g->c->annotate) {
    VEC_RESERVE(&g->c->arena, &out->notes, (int)words);
    notes = out->notes.data;
  }
  int len = out->code.len;
  now = 0;
  m = (Merge){.u = u, .next_sync = g->c->sync.interval};
  while (merge_next(g, &m, &t, &at)) {
    if (at < now)
      die("codegen: device %d unit %d.%d: an instruction at %lld while the unit is busy until %lld", device,
          (int)u->kind, u->port, (long long)at, (long long)now);
    for (int64_t gap = at - now; gap > 0; gap -= MIN(gap, (int64_t)UINT32_MAX)) {
      put_note(notes, len, (InstrNote){0});
      code[len++] = (Instr){.op = OPC_WAIT, .a = (uint32_t)MIN(gap, (int64_t)UINT32_MAX)};
    }
    put_note(notes, len, t ? (InstrNote){t->note, t->at, t->line} : (InstrNote){RESYNC_NOTE, at, 0});
    code[len++] = t ? t->in : (Instr){.op = OPC_SYNC};
    now = at + merged_cycles(g, t);
  }
  put_note(notes, len, (InstrNote){0});
  code[len++] = (Instr){.op = OPC_HALT};
  if (len != words) die("codegen: device %d: %d instructions written, %lld counted", device, len, (long long)words);
  out->code.len = len;
  if (notes) out->notes.len = len;
  note_event(g, now);
  forget_code(u);
}

static UnitProgram *add_unit(Codegen *g, DeviceProgram *dp, UnitKind kind, int port) {
  UnitProgram up = {.kind = kind, .port = port};
  VEC_PUSH(&g->c->arena, &dp->units, up);
  return &dp->units.data[dp->units.len - 1];
}

// The constant vectors as .init records: every element `value`.
static void add_const_records(Codegen *g, const DeviceCode *d, DeviceProgram *dp) {
  for (int i = 0; i < d->consts.len; i++) {
    const ConstVec *cv = &d->consts.data[i];
    DataRecord r = {.kind = REC_INIT, .dtype = cv->dtype, .addr = cv->addr, .nvec = 1, .a = 0, .b = cv->value};
    VEC_PUSH(&g->c->arena, &dp->records, r);
  }
  for (int i = 0; i < d->zeros.len; i++) VEC_PUSH(&g->c->arena, &dp->records, d->zeros.data[i]);
}

// The program: units in port order, vxm, mxm, sxm, ctl; the preamble; the streams.
static bool assemble(Codegen *g) {
  Program *p = ARENA_NEW(&g->c->arena, Program);
  p->ndevices = g->t->ndevices;
  p->devices = ARENA_ARRAY(&g->c->arena, DeviceProgram, p->ndevices);
  for (int v = 0; v < p->ndevices; v++) {
    DeviceCode *d = &g->dev[v];
    int nports = g->t->devices[v].nports;
    add_resyncs(g, d, nports);
    p->devices[v].device = v;
    for (int q = 0; q < nports; q++)
      if (d->c2c[q].code.len) add_unit(g, &p->devices[v], UNIT_C2C, q);
    if (d->vxm.code.len) add_unit(g, &p->devices[v], UNIT_VXM, -1);
    if (d->mxm.code.len) add_unit(g, &p->devices[v], UNIT_MXM, -1);
    if (d->sxm.code.len) add_unit(g, &p->devices[v], UNIT_SXM, -1);
    add_const_records(g, d, &p->devices[v]);
  }
  int64_t notify = align_emit(&g->c->arena, &g->c->sync.align, g->t, p, g->c->annotate);
  for (int v = 0; v < p->ndevices; v++) {
    DeviceCode *d = &g->dev[v];
    DeviceProgram *dp = &p->devices[v];
    for (int i = 0; i < dp->units.len; i++) {
      UnitProgram *up = &dp->units.data[i];
      UnitCode *u = up->kind == UNIT_C2C ? &d->c2c[up->port]
                    : up->kind == UNIT_VXM ? &d->vxm
                    : up->kind == UNIT_MXM ? &d->mxm
                    : up->kind == UNIT_SXM ? &d->sxm
                                           : &d->ctl;
      emit_unit(g, v, u, up);
    }
  }
  p->predicted_cycles = notify + 1 + g->last;
  p->batches = MAX(g->c->batches, 1);
  g->c->program = p;
  return true;
}

// The manifest's tensor homes: every input, param and output copy.
static void record_homes(Codegen *g) {
  Program *p = g->c->program;
  for (int i = 0; i < g->c->graph->tensors.len; i++) {
    const Tensor *t = g->c->graph->tensors.data[i];
    if (t->kind == TENSOR_VALUE && !t->is_output) continue;
    for (int d = 0; d < g->t->ndevices; d++) {
      if (!ir_place_has(&t->place, d) || !g->home[t->id] || !g->home[t->id][d]) continue;
      const Tensor *model = t->batch_of ? t->batch_of : t;
      TensorHome th = {.name = t->shard_of ? t->shard_of->name : model->name, .device = d, .batch = t->batch,
                       .addr = (uint32_t)(g->home[t->id][d] - 1), .dtype = t->dtype, .shape = t->shape,
                       .pitch = layout_manifest_pitch(g->c, t), .is_shard = t->shard_of != NULL};
      memcpy(th.start, t->shard_start, sizeof th.start);
      VEC_PUSH(&g->c->arena, &p->tensors, th);
    }
  }
}

// What node n's instructions serve, for the listing: "n12 matmul(x, w1 ->
// h) line 7", "n30 allreduce s: ring 2, 0 -> 1 (reduce) line 5".
static const char *node_note(Codegen *g, const DagNode *n) {
  const Op *op = n->op;
  Buf b = {0};
  buf_printf(&b, "n%d %s(", n->id, ir_op_info[op->kind].name);
  for (int a = 0; a < op->nargs; a++) buf_printf(&b, "%s%s", a ? ", " : "", op->args[a]->name);
  buf_printf(&b, " -> %s)", op->result->name);
  if (n->kind == NODE_TRANSFER) {
    if (ir_op_is_collective(op->kind))
      buf_printf(&b, ": %s lane %d, %d -> %d%s", ir_algo_names[g->c->algos ? g->c->algos[op->id] : op->algo], n->lane,
                 n->src, n->dst, n->reduce ? " (reduce)" : "");
    else
      buf_printf(&b, ": %s %d -> %d", n->tensor->name, n->src, n->dst);
  } else if (n->kind == NODE_STAGE) {
    buf_printf(&b, ": staged");
  }
  buf_printf(&b, " line %d", op->loc.line);
  const char *note = arena_strdup(&g->c->arena, b.data);
  buf_free(&b);
  return note;
}

// One code generation of the whole program; false after an error
// (*no_room: for want of SRAM).  compact: see pass_codegen.
static bool generate(Compilation *c, bool compact, bool *no_room) {
  const Topology *t = c->topo;
  Codegen g = {.c = c, .t = t, .vb = t->link.vector_bytes, .compact = compact};
  int ntensors = c->graph->tensors.len, nops = c->graph->ops.len;
  g.home = ARENA_ARRAY(&c->arena, int64_t *, ntensors + 1);
  g.replica = ARENA_ARRAY(&c->arena, int64_t *, ntensors + 1);
  g.work = ARENA_ARRAY(&c->arena, int64_t *, nops + 1);
  g.dev = ARENA_ARRAY(&c->arena, DeviceCode, t->ndevices);
  for (int v = 0; v < t->ndevices; v++) {
    g.dev[v] = (DeviceCode){.vxm = {.kind = UNIT_VXM, .port = -1}, .mxm = {.kind = UNIT_MXM, .port = -1},
                            .sxm = {.kind = UNIT_SXM, .port = -1}, .ctl = {.kind = UNIT_CTL, .port = -1},
                            .high = t->sram_vectors};
    g.dev[v].c2c = ARENA_ARRAY(&c->arena, UnitCode, t->devices[v].nports);
    for (int q = 0; q < t->devices[v].nports; q++) g.dev[v].c2c[q] = (UnitCode){.kind = UNIT_C2C, .port = q};
  }
  *no_room = false;
  if (!ops_fit(&g) || !shards_fit(&g)) return false;
  g.live = ARENA_ARRAY(&c->arena, int64_t *, ntensors + 1);
  compute_lifetimes(&g);
  find_idle_collectives(&g);
  place_interface(&g);
  for (int i = 0; i < c->dag->nodes.len && !g.failed; i++) {
    const DagNode *n = c->dag->nodes.data[i];
    g.note = c->annotate ? node_note(&g, n) : NULL;
    g.line = c->annotate ? n->op->loc.line : 0;
    g.at = &n->op->loc;
    switch (n->kind) {
    case NODE_TRANSFER: gen_transfer(&g, n); break;
    case NODE_STAGE: gen_stage(&g, n); break;
    case NODE_COMPUTE: gen_compute(&g, n); break;
    case NODE_COLLECTIVE: unreachable();  // lowering replaced them
    }
  }
  g.at = NULL;
  if (!g.failed) place_results(&g);
  bool ok = !g.failed && assemble(&g);
  forget_all_code(&g);
  free(g.sort_buffer);
  *no_room = g.no_room;
  if (!ok) return false;
  record_homes(&g);
  return true;
}

// Code generation allocates SRAM as it goes, in node order: a tensor or
// buffer with a lifetime takes a block that a finished one frees, what is
// kept for good (inputs, params, outputs, buffers and constants placed on
// first use) takes the next vectors.  Kept things then lie between blocks
// and split the free space: a BERT block on 5 MiB TSPs (a sweep's R6) was
// refused 1.0 MiB for f1 with as much free in pieces.  So when that runs
// out of room, code generation runs again the compact way, what is kept for
// good taken from the top of the SRAM down and the blocks from the bottom
// up.  When that fails too, its refusal is the one said (the first run's
// is dropped).  A program that fits the first way is made the first way:
// its addresses do not change.
// generate(c, compact), what it says held until it is known to stand: said
// (and true returned) when it succeeds or fails for another reason than
// room, else dropped.
static bool generate_held(Compilation *c, bool compact, bool *ok) {
  Diag saved = c->diag;
  char *text = NULL;
  size_t len = 0;
  FILE *held = open_memstream(&text, &len);
  if (!held) die("out of memory");
  diag_init(&c->diag, held);
  c->diag.max_errors = saved.max_errors;
  bool no_room;
  *ok = generate(c, compact, &no_room);
  fclose(held);
  int nerrors = c->diag.nerrors;
  c->diag = saved;
  bool stands = *ok || !no_room;
  if (stands) {
    if (*text && c->diag.progress) progress_done(c->diag.progress);
    fputs(text, c->diag.out);  // what the run said (its notes, or its errors)
    c->diag.nerrors += nerrors;
  }
  free(text);
  return stands;
}

// The first way; if the SRAM holds too little for it, the compact way; if
// not for that either and the inferences in flight were ordered by runs
// (Compilation.batch_runs), nothing said: the pipeline compiles again with
// one inference at a time on each device, which the partitioner's
// estimate plans for.
bool pass_codegen(Compilation *c) {
  bool ok;
  if (generate_held(c, false, &ok)) return ok;
  if (!c->batch_runs) {
    bool no_room;
    return generate(c, true, &no_room);
  }
  if (generate_held(c, true, &ok)) return ok;
  c->runs_no_room = true;
  return false;
}

void codegen_dump(const Compilation *c, FILE *out) {
  const Program *p = c->program;
  fprintf(out, "; predicted_cycles %lld\n", (long long)p->predicted_cycles);
  for (int v = 0; v < p->ndevices; v++) isa_print_device(&p->devices[v], p->ndevices, out);
}
