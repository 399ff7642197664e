// compute.c: the compiler's op table for compute ops: what each op costs on
// which unit and which instructions compute it.  Part of passes/: the
// scheduler (schedule.c) calls compute_emit for a compute node, which places
// every instruction on the device's reservation tables at the earliest cycle
// its data and its unit allow; code generation (codegen.c) then writes them
// as placed, with the SRAM addresses it allocates.
//
// The units (seed 002 s5.2, s5.5; docs/isa.md):
//   matrix unit  matmul as [1 x K] x [K x 320] sub-operations: MXLW/MXLWT
//                installs a K x 320 tile into one of two buffers while MXM
//                streams activation rows through the other, accumulating in
//                f32 (i32) rows of scratch; a transpose feeding a matmul is
//                read as B of A B^T (MXLWT), never computed;
//   vector unit  element-wise arithmetic and transcendentals, row sums and
//                maxima, conversions: softmax and layernorm are per-row
//                programs in f32;
//   switch unit  transposes tiles (TRANS) and moves element ranges (SXMOV)
//                for reshape, slice and concat.
// Tensors are row-padded (layout.c): row r of a tensor lives at its base +
// r x pitch.  Instructions name their operands as offsets into the node's
// buffers (UnitInstr.ref); codegen adds the bases.
#include "passes.h"

#include <math.h>
#include <string.h>

// The most activation rows one MXM streams (more are several MXMs on the
// same installed tile), and the f32 vectors one element-wise chunk of gelu
// works on: named limits that keep every instruction short next to the
// resync interval and scratch small.
#define COMPUTE_MXM_MAX_ROWS 4096
#define COMPUTE_CHUNK_VECTORS 1024
// Scratch sets a per-row program cycles through, so row r + 1 can start
// while row r finishes.
#define ROW_SETS 2

// ---- placing instructions --------------------------------------------------------

static int latency_of(UnitKind u) {
  return u == UNIT_MXM ? ISA_MXM_LATENCY : u == UNIT_SXM ? ISA_SXM_LATENCY : ISA_VXM_LATENCY;
}

static UnitKind unit_of(const Instr *in) {
  unsigned units = isa_opcodes[in->op].units;
  return units & U_MXM ? UNIT_MXM : units & U_SXM ? UNIT_SXM : UNIT_VXM;
}

static Reservations *table_of(Emitter *e, UnitKind u) {
  return u == UNIT_MXM ? e->u.mxm : u == UNIT_SXM ? e->u.sxm : e->u.vxm;
}

static bool is_install(const Instr *in) { return in->op == OPC_MXLW || in->op == OPC_MXLWT; }

// Cycles from issue to the last thing the instruction does (its last result
// landing, or an install's last read): no resync window may fall in them.
static int64_t span_of(const Emitter *e, const Instr *in) {
  if (is_install(in)) return isa_mxm_install_cycles(in, e->vb);
  return isa_issue_cycles(in, e->vb) + latency_of(unit_of(in));
}

// The first cycle >= t outside every resync window, for an activity of len.
static int64_t clear_of_windows(const Emitter *e, int64_t t, int64_t len) {
  while (sync_overlaps_window(e->sync, t, len))
    t = sync_window_after(e->sync, t) * e->sync->interval + e->sync->window;
  return t;
}

// Takes what `in` issued at t holds: its unit for its issue cycles, and for
// an install the install path for its reads.
static void reserve(Emitter *e, const Instr *in, int64_t t) {
  resv_take_logged(table_of(e, unit_of(in)), t, isa_issue_cycles(in, e->vb), e->journal);
  if (is_install(in)) resv_take_logged(e->u.mxw, t, span_of(e, in), e->journal);
}

// Places `in` at the earliest cycle >= ready at which its unit (and for an
// install, the install path) is free; returns that cycle.
static int64_t place(Emitter *e, Instr in, const int8_t ref[4], int64_t ready) {
  UnitKind u = unit_of(&in);
  Reservations *table = table_of(e, u);
  int64_t hold = isa_issue_cycles(&in, e->vb), span = span_of(e, &in), t = ready;
  bool fits = !e->sync->interval || span <= e->sync->interval - e->sync->window;
  if (!fits) e->too_long = MAX(e->too_long, span);  // reported by the scheduler
  for (;;) {
    t = resv_earliest(table, t, hold);
    if (fits) t = clear_of_windows(e, t, span);
    if (!resv_is_free(table, t, hold)) continue;
    if (is_install(&in) && !resv_is_free(e->u.mxw, t, span)) {
      t = resv_earliest(e->u.mxw, t, span);
      continue;
    }
    break;
  }
  reserve(e, &in, t);
  if (u == UNIT_MXM) e->mxm_cycles += hold;
  CodeBuf *code = e->code;
  if (code->len == code->cap) {
    code->cap = code->cap ? 2 * code->cap : 256;
    code->data = xrealloc(code->data, sizeof *code->data * (size_t)code->cap);
  }
  UnitInstr *ui = &code->data[code->len++];
  *ui = (UnitInstr){.at = t, .in = in};
  memcpy(ui->ref, ref, sizeof ui->ref);
  e->last = MAX(e->last, t + span - 1);  // its last landing (or read)
  return t;
}

// The cycle every result of an instruction placed at t has landed.
static int64_t landed(const Emitter *e, Instr in, int64_t t) { return t + span_of(e, &in) - 1; }

static Instr make(Opcode op, DType dt, int port, int64_t a, int64_t b, int64_t c, int64_t d) {
  return (Instr){.op = (uint8_t)op, .dtype = (uint8_t)dt, .port = (uint16_t)port, .a = (uint32_t)a,
                 .b = (uint32_t)b, .c = (uint32_t)c, .d = (uint32_t)d};
}

static int8_t scratch_ref(int k) { return (int8_t)(REF_SCRATCH + k); }

// A new scratch buffer of the node; returns its index.
static int new_scratch(Emitter *e, int64_t vectors) {
  ScratchBuf b = {.vectors = vectors};
  VEC_PUSH(&e->c->arena, &e->scratch, b);
  return e->scratch.len - 1;
}

// A constant vector (every lane `value` as dt); returns its scratch index.
static int new_const(Emitter *e, DType dt, double value) {
  ScratchBuf b = {.vectors = 1, .is_const = true, .dtype = dt, .value = value};
  VEC_PUSH(&e->c->arena, &e->scratch, b);
  return e->scratch.len - 1;
}

// Places an instruction whose fields a, b, c name (ra, rb, rc) buffers.
static int64_t place3(Emitter *e, Instr in, int ra, int rb, int rc, int64_t ready) {
  int8_t ref[4] = {(int8_t)ra, (int8_t)rb, (int8_t)rc, REF_NONE};
  return place(e, in, ref, ready);
}

// ---- geometry ------------------------------------------------------------------------

typedef struct Geom {
  int64_t rows, cols, pitch;  // rows of the last dimension, its length, vectors a row
  int per;                    // elements a vector
} Geom;

static Geom geom(Emitter *e, const Tensor *t) {
  return (Geom){.rows = layout_rows(t), .cols = t->shape.dim[t->shape.rank - 1],
                .pitch = layout_pitch(e->c, t), .per = isa_elems_per_vector(t->dtype, e->vb)};
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// f32 vectors a row of `cols` elements fills.
static int64_t f32_vectors(const Emitter *e, int64_t cols) {
  return ceil_div(cols, isa_elems_per_vector(DT_F32, e->vb));
}

// ---- matmul --------------------------------------------------------------------------

// Columns of one weight tile: ISA_MXM_COLS, cut to whole vectors.
static int64_t tile_cols(int per) { return ISA_MXM_COLS % per == 0 ? ISA_MXM_COLS : (ISA_MXM_COLS / per) * per; }

typedef struct Matmul {
  Geom x, y;
  int64_t k, n, wpitch, tc, kt, nt, row_vecs, chunk, chunks;  // chunk: rows an MXM streams
  bool bt;         // the weights are rows of [N, K] (a transposed view)
  DType dt, acc;
  int q;           // rows a cycle
  int acc_buf[2];  // scratch: accumulator rows, by column tile parity
} Matmul;

static Instr install_of(const Matmul *m, int64_t jt, int64_t kt, int buf) {
  int per = m->x.per;
  int64_t kk = MIN(per, m->k - kt * per), nn = MIN(m->tc, m->n - jt * m->tc);
  if (m->bt) return make(OPC_MXLWT, m->dt, buf, jt * m->tc * m->wpitch + kt, m->wpitch, nn, kk);
  return make(OPC_MXLW, m->dt, buf, kt * per * m->wpitch + jt * (m->tc / per), m->wpitch, kk, nn);
}

// Rows [r0, r0 + count) of chunk ch.
static void chunk_rows(const Matmul *m, int64_t ch, int64_t *r0, int64_t *count) {
  *r0 = ch * m->chunk;
  *count = MIN(m->chunk, m->x.rows - *r0);
}

// Rows one MXM streams: COMPUTE_MXM_MAX_ROWS, fewer when drift is planned
// and its cycles plus the latency must fit between two resyncs.
static int64_t mxm_chunk(const Emitter *e, int q) {
  int64_t rows = COMPUTE_MXM_MAX_ROWS;
  if (e->sync->interval) rows = MIN(rows, (e->sync->interval - e->sync->window - ISA_MXM_LATENCY) * q);
  return MAX(rows, 1);
}

// Installs tile i (column tile i / kt, K tile i % kt) into buffer i mod 2
// once that buffer's last multiply is done; returns when it is installed.
static int64_t install_tile(Emitter *e, const Matmul *m, int64_t i, int64_t ready, const int64_t *buf_free) {
  int buf = (int)(i % ISA_MXM_BUFFERS);
  Instr inst = install_of(m, i / m->kt, i % m->kt, buf);
  int8_t wref[4] = {REF_ARG0 + 1, REF_NONE, REF_NONE, REF_NONE};
  int64_t at = place(e, inst, wref, MAX(ready, buf_free[buf]));
  return at + isa_mxm_install_cycles(&inst, e->vb);
}

// Multiplies every row chunk by tile i into its column tile's accumulator
// (the first K tile overwrites, the others add); start[] holds each chunk's
// last multiply; returns when the last of them releases the buffer (a
// chunk may land in an earlier gap of the matrix unit than the one before).
static int64_t multiply_tile(Emitter *e, const Matmul *m, int64_t i, int64_t installed, int64_t acc_free,
                             int64_t *start) {
  int64_t jt = i / m->kt, kt = i % m->kt, done = installed;
  int buf = (int)(i % ISA_MXM_BUFFERS), acc = m->acc_buf[jt % 2];
  for (int64_t ch = 0; ch < m->chunks; ch++) {
    int64_t r0, count;
    chunk_rows(m, ch, &r0, &count);
    Instr mul = make(kt ? OPC_MXMA : OPC_MXM, m->dt, buf, r0 * m->row_vecs, r0 * m->x.pitch + kt, m->x.pitch, count);
    int64_t after = kt ? start[ch] + ISA_MXM_LATENCY : acc_free;
    start[ch] = place3(e, mul, scratch_ref(acc), REF_ARG0, REF_NONE, MAX(installed, after));
    done = MAX(done, start[ch] + isa_mxm_cycles(m->dt, (uint32_t)count));
  }
  return done;
}

// Converts column tile jt's accumulator rows into the result, a row each;
// returns the cycle after the last conversion's last read.
static int64_t convert_tile(Emitter *e, Matmul *m, int64_t jt, const int64_t *start) {
  int acc = m->acc_buf[jt % 2];
  int64_t nn = MIN(m->tc, m->n - jt * m->tc), done = 0;
  for (int64_t r = 0; r < m->x.rows; r++) {
    int64_t ch = r / m->chunk, in_chunk = r % m->chunk;
    int64_t land = start[ch] + in_chunk / m->q + ISA_MXM_LATENCY;
    Instr cvt = make(OPC_VCVT, m->dt, m->acc, r * m->y.pitch + jt * (m->tc / m->y.per), r * m->row_vecs, nn, 0);
    int64_t at = place3(e, cvt, REF_RESULT, scratch_ref(acc), REF_NONE, land);
    done = MAX(done, at + isa_issue_cycles(&cvt, e->vb));
  }
  return done;
}

static void emit_matmul(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  const Tensor *x = op->args[0], *w = op->args[1];
  Matmul m = {.x = geom(e, x), .y = geom(e, op->result), .dt = x->dtype, .acc = isa_mxm_acc_dtype(x->dtype),
              .q = isa_mxm_rows_per_cycle(x->dtype)};
  m.bt = w->def && w->def->kind == OP_TRANSPOSE && compute_transpose_is_view(e->c, w->def);
  m.k = m.x.cols;
  m.n = m.y.cols;
  m.wpitch = layout_pitch(e->c, compute_storage_of(e->c, w));
  m.tc = tile_cols(m.x.per);
  m.kt = ceil_div(m.k, m.x.per);
  m.nt = ceil_div(m.n, m.tc);
  m.row_vecs = isa_mxm_row_vectors(m.dt, e->vb);
  m.chunk = mxm_chunk(e, m.q);
  m.chunks = ceil_div(m.x.rows, m.chunk);
  m.acc_buf[0] = new_scratch(e, m.x.rows * m.row_vecs);
  m.acc_buf[1] = m.nt > 1 ? new_scratch(e, m.x.rows * m.row_vecs) : m.acc_buf[0];
  // Software-pipelined: tile i + 1 is installed (its MXLW issued first, so
  // it streams in the background) before tile i is multiplied.
  // The weight buffers are the device's: the program holds them from ready
  // to its last multiply (weights_until), and the scheduler places it
  // where no other program holds them then (place_program).
  int64_t buf_free[ISA_MXM_BUFFERS], acc_free[2] = {ready, ready}, tiles = m.nt * m.kt;
  int64_t *start = ARENA_ARRAY(&e->c->arena, int64_t, m.chunks);
  int64_t *installed = ARENA_ARRAY(&e->c->arena, int64_t, tiles);
  for (int b = 0; b < ISA_MXM_BUFFERS; b++) buf_free[b] = ready;
  installed[0] = install_tile(e, &m, 0, ready, buf_free);
  for (int64_t i = 0; i < tiles; i++) {
    if (i + 1 < tiles) installed[i + 1] = install_tile(e, &m, i + 1, ready, buf_free);
    int64_t jt = i / m.kt;
    buf_free[i % ISA_MXM_BUFFERS] = multiply_tile(e, &m, i, installed[i], acc_free[jt % 2], start);
    if (i % m.kt == m.kt - 1) acc_free[jt % 2] = convert_tile(e, &m, jt, start);
  }
  for (int b = 0; b < ISA_MXM_BUFFERS; b++) e->weights_until = MAX(e->weights_until, buf_free[b]);
}

// ---- element-wise programs ------------------------------------------------------------

// The op's element-wise instruction, from the op table (below).
static Opcode pass_of(OpKind k);

// add, sub, mul, div with a bias [N]: one instruction a row.
static void emit_bias(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  Geom y = geom(e, op->result);
  for (int64_t r = 0; r < y.rows; r++) {
    Instr in = make(pass_of(op->kind), op->result->dtype, 0, r * y.pitch, r * y.pitch, 0, y.pitch);
    place3(e, in, REF_RESULT, REF_ARG0, REF_ARG0 + 1, ready);
  }
}

#define GELU_CONSTANTS 3  // vectors of constants emit_gelu reserves: 1/sqrt 2, 1 and 1/2

// gelu's working chunk for `total` elements: COMPUTE_CHUNK_VECTORS f32
// vectors, or fewer when the whole tensor takes fewer (a small tensor's
// gelu reserved 1.25 MiB of scratch: four chunks of 1,024 vectors), and
// how many chunk sets it cycles through (*sets: ROW_SETS, one when a
// single chunk holds it all).
static int64_t gelu_chunk_vectors(int64_t total, int vb, int *sets) {
  int64_t all = ceil_div(total, isa_elems_per_vector(DT_F32, vb));
  *sets = all > COMPUTE_CHUNK_VECTORS ? ROW_SETS : 1;
  return MIN(all, (int64_t)COMPUTE_CHUNK_VECTORS);
}

// gelu(x) = x ((1 + erf(x / sqrt 2)) / 2) over the tensor's vectors as one
// flat run, a chunk of f32 vectors at a time (gelu_chunk_vectors), in f32.
static void emit_gelu(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  DType dt = op->result->dtype;
  int per = isa_elems_per_vector(dt, e->vb), per32 = isa_elems_per_vector(DT_F32, e->vb), nsets;
  int64_t total = layout_vectors(e->c, op->result) * per;  // elements, pads included
  int64_t vectors = gelu_chunk_vectors(total, e->vb, &nsets), chunk = vectors * per32;
  chunk -= chunk % per;
  int s[ROW_SETS], t[ROW_SETS];
  for (int k = 0; k < nsets; k++) s[k] = new_scratch(e, vectors), t[k] = new_scratch(e, vectors);
  int inv_sqrt2 = new_const(e, DT_F32, 1 / sqrt(2.0)), one = new_const(e, DT_F32, 1), half = new_const(e, DT_F32, 0.5);
  int64_t set_free[ROW_SETS] = {ready, ready};
  for (int64_t e0 = 0, i = 0; e0 < total; e0 += chunk, i++) {
    int k = (int)(i % nsets);
    int64_t n = MIN(chunk, total - e0), v = ceil_div(n, per32), off = e0 / per;
    Instr cvt = make(OPC_VCVT, DT_F32, dt, 0, off, n, 0);
    int64_t at = place3(e, cvt, scratch_ref(s[k]), REF_ARG0, REF_NONE, MAX(ready, set_free[k]));
    int64_t rdy = landed(e, cvt, at);
    at = place3(e, make(OPC_VMULS, DT_F32, 0, 0, 0, 0, v), scratch_ref(t[k]), scratch_ref(s[k]), scratch_ref(inv_sqrt2), rdy);
    at = place3(e, make(OPC_VERF, DT_F32, 0, 0, 0, v, 0), scratch_ref(t[k]), scratch_ref(t[k]), REF_NONE, at + ISA_VXM_LATENCY);
    at = place3(e, make(OPC_VADDS, DT_F32, 0, 0, 0, 0, v), scratch_ref(t[k]), scratch_ref(t[k]), scratch_ref(one), at + ISA_VXM_LATENCY);
    at = place3(e, make(OPC_VMULS, DT_F32, 0, 0, 0, 0, v), scratch_ref(t[k]), scratch_ref(t[k]), scratch_ref(half), at + ISA_VXM_LATENCY);
    Instr last = make(OPC_VMUL, DT_F32, 0, 0, 0, 0, v);  // halved before x: finite for any finite x
    at = place3(e, last, scratch_ref(t[k]), scratch_ref(t[k]), scratch_ref(s[k]), at + ISA_VXM_LATENCY);
    Instr back = make(OPC_VCVT, dt, DT_F32, off, 0, n, 0);
    at = place3(e, back, REF_RESULT, scratch_ref(t[k]), REF_NONE, landed(e, last, at));
    set_free[k] = at + isa_issue_cycles(&back, e->vb);
  }
}

// ---- per-row programs: softmax, layernorm --------------------------------------------

typedef struct RowSet {
  int s, q, m, z;   // scratch: the row in f32, its squares, two scalars
  int64_t free;     // when the last reader of the set is done
} RowSet;

static void row_sets(Emitter *e, RowSet *sets, int64_t f32_row, int64_t ready) {
  for (int k = 0; k < ROW_SETS; k++)
    sets[k] = (RowSet){.s = new_scratch(e, f32_row), .q = new_scratch(e, f32_row), .m = new_scratch(e, 1),
                       .z = new_scratch(e, 1), .free = ready};
}

// Row r of x into the set's f32 row; returns when it has landed.
static int64_t load_row(Emitter *e, const RowSet *rs, const Geom *x, DType dt, int64_t r, int arg, int64_t ready) {
  Instr cvt = make(OPC_VCVT, DT_F32, dt, 0, r * x->pitch, x->cols, 0);
  return landed(e, cvt, place3(e, cvt, scratch_ref(rs->s), REF_ARG0 + arg, REF_NONE, ready));
}

// The set's f32 row out into row r of the result; returns when it is read.
static int64_t store_row(Emitter *e, const RowSet *rs, const Geom *y, DType dt, int64_t r, int64_t ready) {
  Instr cvt = make(OPC_VCVT, dt, DT_F32, r * y->pitch, 0, y->cols, 0);
  return place3(e, cvt, REF_RESULT, scratch_ref(rs->s), REF_NONE, ready) + isa_issue_cycles(&cvt, e->vb);
}

// A one-source element op over the set's row (s = f(s) or s = s op scalar).
static int64_t row_op(Emitter *e, Opcode opc, int dst, int src, int other, int64_t v, int64_t ready) {
  Instr in = other < 0 ? make(opc, DT_F32, 0, 0, 0, v, 0) : make(opc, DT_F32, 0, 0, 0, 0, v);
  return place3(e, in, scratch_ref(dst), scratch_ref(src), other < 0 ? REF_NONE : scratch_ref(other), ready);
}

// A reduction of the row's first cols elements into scalar z; returns when it lands.
static int64_t row_reduce(Emitter *e, Opcode opc, int z, int src, int64_t cols, int64_t ready) {
  Instr in = make(opc, DT_F32, 0, 0, 0, cols, 0);
  return landed(e, in, place3(e, in, scratch_ref(z), scratch_ref(src), REF_NONE, ready));
}

// Along an axis other than the last (below).
static void emit_softmax_columns(Emitter *e, int64_t ready);
static void emit_layernorm_columns(Emitter *e, int64_t ready);

// softmax over the last axis, a row at a time in f32:
// s = x; m = max s; s = exp(s - m); z = 1 / sum s; y = s z.
static void emit_softmax(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  if (op->axis != op->result->shape.rank - 1) {
    emit_softmax_columns(e, ready);
    return;
  }
  Geom x = geom(e, op->args[0]), y = geom(e, op->result);
  DType dt = op->result->dtype;
  int64_t v = f32_vectors(e, x.cols);
  RowSet sets[ROW_SETS];
  row_sets(e, sets, v, ready);
  for (int64_t r = 0; r < x.rows; r++) {
    RowSet *rs = &sets[r % ROW_SETS];
    int64_t s_in = load_row(e, rs, &x, dt, r, 0, MAX(ready, rs->free));
    int64_t m = row_reduce(e, OPC_VRMAX, rs->m, rs->s, x.cols, s_in);
    int64_t at = row_op(e, OPC_VSUBS, rs->s, rs->s, rs->m, v, MAX(m, s_in));
    at = row_op(e, OPC_VEXP, rs->s, rs->s, -1, v, at + ISA_VXM_LATENCY);
    int64_t exp_done = at + v - 1 + ISA_VXM_LATENCY;
    int64_t z = row_reduce(e, OPC_VRSUM, rs->z, rs->s, x.cols, at + ISA_VXM_LATENCY);
    z = landed(e, make(OPC_VRECIP, DT_F32, 0, 0, 0, 1, 0), row_op(e, OPC_VRECIP, rs->z, rs->z, -1, 1, z));
    at = row_op(e, OPC_VMULS, rs->s, rs->s, rs->z, v, MAX(z, exp_done));
    rs->free = store_row(e, rs, &y, dt, r, at + v - 1 + ISA_VXM_LATENCY);
  }
}

// gamma and beta in f32, once for every row (scratch indices out).
static int64_t load_affine(Emitter *e, const Op *op, int64_t v, int *g, int *b, int64_t ready) {
  int64_t done = ready;
  int *dst[2] = {g, b};
  for (int i = 0; i < 2; i++) {
    *dst[i] = new_scratch(e, v);
    Instr cvt = make(OPC_VCVT, DT_F32, op->args[1 + i]->dtype, 0, 0, op->args[1 + i]->shape.dim[0], 0);
    int64_t at = place3(e, cvt, scratch_ref(*dst[i]), REF_ARG0 + 1 + i, REF_NONE, ready);
    done = MAX(done, landed(e, cvt, at));
  }
  return done;
}

// layernorm over the last axis, a row at a time in f32: s = x; s -= mean;
// var = mean(s^2); s *= rsqrt(var + eps); then s = s gamma + beta.
static void emit_layernorm(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  if (op->axis != op->result->shape.rank - 1) {
    emit_layernorm_columns(e, ready);
    return;
  }
  Geom x = geom(e, op->args[0]), y = geom(e, op->result);
  DType dt = op->result->dtype;
  int64_t v = f32_vectors(e, x.cols);
  RowSet sets[ROW_SETS];
  row_sets(e, sets, v, ready);
  int inv_n = new_const(e, DT_F32, 1.0 / (double)x.cols), eps = new_const(e, DT_F32, IR_LAYERNORM_EPSILON);
  int g = -1, b = -1;
  int64_t affine = op->nargs == 3 ? load_affine(e, op, v, &g, &b, ready) : ready;
  for (int64_t r = 0; r < x.rows; r++) {
    RowSet *rs = &sets[r % ROW_SETS];
    int64_t s_in = load_row(e, rs, &x, dt, r, 0, MAX(ready, rs->free));
    int64_t m = row_reduce(e, OPC_VRSUM, rs->m, rs->s, x.cols, s_in);
    m = landed(e, make(OPC_VMULS, DT_F32, 0, 0, 0, 0, 1), row_op(e, OPC_VMULS, rs->m, rs->m, inv_n, 1, m));
    int64_t at = row_op(e, OPC_VSUBS, rs->s, rs->s, rs->m, v, m);
    Instr sq = make(OPC_VMUL, DT_F32, 0, 0, 0, 0, v);
    int64_t q = place3(e, sq, scratch_ref(rs->q), scratch_ref(rs->s), scratch_ref(rs->s), at + ISA_VXM_LATENCY);
    int64_t centred = at + v - 1 + ISA_VXM_LATENCY;
    int64_t z = row_reduce(e, OPC_VRSUM, rs->z, rs->q, x.cols, q + ISA_VXM_LATENCY);
    Instr one = make(OPC_VMULS, DT_F32, 0, 0, 0, 0, 1);
    z = landed(e, one, row_op(e, OPC_VMULS, rs->z, rs->z, inv_n, 1, z));
    z = landed(e, one, row_op(e, OPC_VADDS, rs->z, rs->z, eps, 1, z));
    z = landed(e, one, row_op(e, OPC_VRSQRT, rs->z, rs->z, -1, 1, z));
    at = row_op(e, OPC_VMULS, rs->s, rs->s, rs->z, v, MAX(z, centred));
    if (g >= 0) {
      at = row_op(e, OPC_VMUL, rs->s, rs->s, g, v, MAX(at + ISA_VXM_LATENCY, affine));
      at = row_op(e, OPC_VADD, rs->s, rs->s, b, v, at + ISA_VXM_LATENCY);
    }
    rs->free = store_row(e, rs, &y, dt, r, at + v - 1 + ISA_VXM_LATENCY);
  }
}

// ---- reductions along an axis ---------------------------------------------------------

// Rows of x before the reduced axis, along it, and after it (excluding the
// last dimension): x's rows are [outer][along][inner].
static void axis_split(const Tensor *x, int axis, int64_t *outer, int64_t *along, int64_t *inner) {
  *outer = *inner = 1;
  for (int d = 0; d < axis; d++) *outer *= x->shape.dim[d];
  for (int d = axis + 1; d < x->shape.rank - 1; d++) *inner *= x->shape.dim[d];
  *along = x->shape.dim[axis];
}

// ---- softmax and layernorm along another axis ------------------------------------------
//
// The normalised elements of one group are the same lane of A rows (x's
// rows are [outer][along = A][inner]), so the group is worked on a whole
// padded row at a time in f32: element-wise maxima, sums and products
// across its rows.  Each buffer records when its last write lands and
// when its last read ends, and every instruction waits for both (no
// streaming overlap: these programs are short next to a matmul).

typedef struct ColBuf {
  int index;                // scratch index
  int64_t land, read_end;   // the last write's landing, the last read's end
} ColBuf;

static ColBuf col_buf(Emitter *e, int64_t vectors) { return (ColBuf){.index = new_scratch(e, vectors)}; }

static int64_t col_ready(const ColBuf *d, const ColBuf *x, const ColBuf *y, int64_t ready) {
  int64_t t = MAX(ready, MAX(d->land, d->read_end));
  if (x) t = MAX(t, x->land);
  if (y) t = MAX(t, y->land);
  return t;
}

// d = x op y (y NULL: d = op x), over v vectors of dt.
static void col_op_of(Emitter *e, Opcode opc, DType dt, ColBuf *d, ColBuf *x, ColBuf *y, int64_t v, int64_t ready) {
  Instr in = y ? make(opc, dt, 0, 0, 0, 0, v) : make(opc, opc == OPC_VMOV ? 0 : dt, 0, 0, 0, v, 0);
  int64_t at = place3(e, in, scratch_ref(d->index), scratch_ref(x->index), y ? scratch_ref(y->index) : REF_NONE,
                      col_ready(d, x, y, ready));
  int64_t hold = isa_issue_cycles(&in, e->vb);
  x->read_end = MAX(x->read_end, at + hold);
  if (y) y->read_end = MAX(y->read_end, at + hold);
  d->land = at + hold - 1 + ISA_VXM_LATENCY;
}

// The same over v f32 vectors.
static void col_op(Emitter *e, Opcode opc, ColBuf *d, ColBuf *x, ColBuf *y, int64_t v, int64_t ready) {
  col_op_of(e, opc, DT_F32, d, x, y, v, ready);
}

// d = row `row` of operand arg in f32 (all pitch x per elements of it).
static void col_load(Emitter *e, ColBuf *d, const Geom *x, DType dt, int arg, int64_t row, int64_t ready) {
  Instr cvt = make(OPC_VCVT, DT_F32, dt, 0, row * x->pitch, x->pitch * x->per, 0);
  int64_t at = place3(e, cvt, scratch_ref(d->index), REF_ARG0 + arg, REF_NONE, col_ready(d, NULL, NULL, ready));
  d->land = landed(e, cvt, at);
}

static void col_store(Emitter *e, ColBuf *s, const Geom *y, DType dt, int64_t row) {
  Instr cvt = make(OPC_VCVT, dt, DT_F32, row * y->pitch, 0, y->pitch * y->per, 0);
  int64_t at = place3(e, cvt, REF_RESULT, scratch_ref(s->index), REF_NONE, s->land);
  s->read_end = MAX(s->read_end, at + isa_issue_cycles(&cvt, e->vb));
}

// d = row `row` of operand 0 as it is (its pitch vectors), and back out
// into row `row` of the result: col_load and col_store without converting.
static void col_move_in(Emitter *e, ColBuf *d, const Geom *x, int64_t row, int64_t ready) {
  Instr mov = make(OPC_VMOV, 0, 0, 0, row * x->pitch, x->pitch, 0);
  int64_t at = place3(e, mov, scratch_ref(d->index), REF_ARG0, REF_NONE, col_ready(d, NULL, NULL, ready));
  d->land = landed(e, mov, at);
}

static void col_move_out(Emitter *e, ColBuf *s, const Geom *y, int64_t row) {
  Instr mov = make(OPC_VMOV, 0, 0, row * y->pitch, 0, y->pitch, 0);
  int64_t at = place3(e, mov, REF_RESULT, scratch_ref(s->index), REF_NONE, s->land);
  s->read_end = MAX(s->read_end, at + isa_issue_cycles(&mov, e->vb));
}

// Element k of f32 scratch src into lane 0 of d (a scalar for VMULS/VADDS).
static void col_pick(Emitter *e, ColBuf *d, ColBuf *src, int64_t k, int64_t ready) {
  Instr mov = make(OPC_SXMOV, DT_F32, 0, 0, 0, k, 1);
  int64_t at = place3(e, mov, scratch_ref(d->index), scratch_ref(src->index), REF_NONE, col_ready(d, src, NULL, ready));
  src->read_end = MAX(src->read_end, at + 1);
  d->land = landed(e, mov, at);
}

// ---- pairwise sums of rows ------------------------------------------------------------
//
// A sum over rows is formed as VRSUM forms one over elements (docs/isa.md,
// VRSUM): rows 2i and 2i + 1 added, then those sums two by two, the blocks
// left over added from the smallest at the end.  Its rounding error then
// grows with log2 of the rows, as the data check's tolerance allows a sum
// (a running sum of 4096 rows erred 1.5x past it), for the same n - 1
// additions.  A binary counter over the rows pushed so far: level l holds
// the sum of the last complete block of 2^l rows while bit l of the count
// is set, so floor(log2 n) + 2 scratch rows serve n rows.  A max over rows
// is exact in any order and goes the same way.

#define PAIR_MAX_SLOTS 66  // floor(log2 n) + 2 for any n < 2^64

typedef struct PairSum {
  Opcode op;                    // VADD or VMAX
  DType dt;                     // of the rows
  int64_t v;                    // vectors a row
  int64_t count;                // rows pushed since the last total
  int nslots;
  ColBuf slot[PAIR_MAX_SLOTS];
  int level[PAIR_MAX_SLOTS];    // by level: the slot holding its block, -1 none
  bool busy[PAIR_MAX_SLOTS];    // the slot holds a block or a row being pushed
} PairSum;

static int floor_log2(int64_t n) {
  int k = 0;
  while (n >>= 1) k++;
  return k;
}

// The scratch rows a pairwise sum over `rows` rows of v vectors holds.
static int64_t pair_vectors(int64_t rows, int64_t v) { return (floor_log2(MAX(rows, 1)) + 2) * v; }

static void pair_init(Emitter *e, PairSum *p, Opcode op, DType dt, int64_t rows, int64_t v) {
  *p = (PairSum){.op = op, .dt = dt, .v = v, .nslots = floor_log2(MAX(rows, 1)) + 2};
  for (int k = 0; k < p->nslots; k++) p->slot[k] = col_buf(e, v);
  for (int k = 0; k < PAIR_MAX_SLOTS; k++) p->level[k] = -1;
}

// A free slot for the next row, marked busy: the caller loads it, then pushes it.
static ColBuf *pair_take(PairSum *p) {
  for (int k = 0; k < p->nslots; k++)
    if (!p->busy[k]) {
      p->busy[k] = true;
      return &p->slot[k];
    }
  die("pairwise sum: no free scratch row");  // cannot happen: nslots covers every count
}

static int slot_index(const PairSum *p, const ColBuf *b) { return (int)(b - p->slot); }

// Adds the row in slot `row` (from pair_take) as the next block of 1.
static void pair_push(Emitter *e, PairSum *p, ColBuf *row, int64_t ready) {
  int cur = slot_index(p, row), level = 0;
  for (int64_t k = p->count++; k & 1; k >>= 1, level++) {
    int held = p->level[level];
    col_op_of(e, p->op, p->dt, &p->slot[held], &p->slot[held], &p->slot[cur], p->v, ready);
    p->busy[cur] = false, p->level[level] = -1, cur = held;
  }
  p->level[level] = cur;
}

// The total of the rows pushed: the open blocks from the smallest up.
// Returns its slot; the sum starts again empty (ColBuf's times keep the
// slot's next writer after the caller's reads).
static ColBuf *pair_total(Emitter *e, PairSum *p, int64_t ready) {
  int total = -1;
  for (int level = 0; level < PAIR_MAX_SLOTS; level++) {
    int held = p->level[level];
    if (held < 0) continue;
    if (total >= 0) {
      col_op_of(e, p->op, p->dt, &p->slot[held], &p->slot[held], &p->slot[total], p->v, ready);
      p->busy[total] = false;
    }
    total = held, p->level[level] = -1;
  }
  p->count = 0;
  if (total < 0) die("pairwise sum of no rows");
  p->busy[total] = false;
  return &p->slot[total];
}

typedef struct Columns {
  Geom x, y;
  DType dt;
  int64_t outer, along, inner, v;  // v: f32 vectors of a padded row
} Columns;

static Columns columns(Emitter *e) {
  const Op *op = e->n->op;
  Columns c = {.x = geom(e, op->args[0]), .y = geom(e, op->result), .dt = op->result->dtype};
  axis_split(op->args[0], op->axis, &c.outer, &c.along, &c.inner);
  c.v = f32_vectors(e, c.x.pitch * c.x.per);
  return c;
}

static int64_t col_row(const Columns *c, int64_t o, int64_t k, int64_t i) { return (o * c->along + k) * c->inner + i; }

// softmax along axis: m = max over the group's rows; z = 1 / sum exp(row - m)
// (pairwise); each row = exp(row - m) z (exp computed twice rather than kept).
static void emit_softmax_columns(Emitter *e, int64_t ready) {
  Columns c = columns(e);
  ColBuf m = col_buf(e, c.v), t = col_buf(e, c.v), z = col_buf(e, c.v);
  PairSum sum;
  pair_init(e, &sum, OPC_VADD, DT_F32, c.along, c.v);
  for (int64_t o = 0; o < c.outer; o++)
    for (int64_t i = 0; i < c.inner; i++) {
      col_load(e, &m, &c.x, c.dt, 0, col_row(&c, o, 0, i), ready);
      for (int64_t k = 1; k < c.along; k++) {
        col_load(e, &t, &c.x, c.dt, 0, col_row(&c, o, k, i), ready);
        col_op(e, OPC_VMAX, &m, &m, &t, c.v, ready);
      }
      for (int64_t k = 0; k < c.along; k++) {
        ColBuf *r = pair_take(&sum);
        col_load(e, r, &c.x, c.dt, 0, col_row(&c, o, k, i), ready);
        col_op(e, OPC_VSUB, r, r, &m, c.v, ready);
        col_op(e, OPC_VEXP, r, r, NULL, c.v, ready);
        pair_push(e, &sum, r, ready);
      }
      col_op(e, OPC_VRECIP, &z, pair_total(e, &sum, ready), NULL, c.v, ready);
      for (int64_t k = 0; k < c.along; k++) {
        col_load(e, &t, &c.x, c.dt, 0, col_row(&c, o, k, i), ready);
        col_op(e, OPC_VSUB, &t, &t, &m, c.v, ready);
        col_op(e, OPC_VEXP, &t, &t, NULL, c.v, ready);
        col_op(e, OPC_VMUL, &t, &t, &z, c.v, ready);
        col_store(e, &t, &c.y, c.dt, col_row(&c, o, k, i));
      }
    }
}

// layernorm along axis: s = mean of the group's rows, q = rsqrt(mean of
// (row - s)^2 + eps), both sums pairwise; each row = (row - s) q, then times gamma[k] plus
// beta[k] (element k of each picked out as a scalar).
static void emit_layernorm_columns(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  Columns c = columns(e);
  ColBuf s = col_buf(e, c.v), q = col_buf(e, c.v), t = col_buf(e, c.v), inv = {.index = new_const(e, DT_F32, 1.0 / (double)c.along)};
  ColBuf eps = {.index = new_const(e, DT_F32, IR_LAYERNORM_EPSILON)};
  PairSum sum;
  pair_init(e, &sum, OPC_VADD, DT_F32, c.along, c.v);
  ColBuf gam = {0}, bet = {0}, gs = col_buf(e, 1), bs = col_buf(e, 1);
  if (op->nargs == 3) {
    Geom g = geom(e, op->args[1]);
    gam = col_buf(e, f32_vectors(e, g.pitch * g.per));  // col_load converts the whole padded row
    bet = col_buf(e, f32_vectors(e, g.pitch * g.per));
    col_load(e, &gam, &g, op->args[1]->dtype, 1, 0, ready);
    col_load(e, &bet, &g, op->args[2]->dtype, 2, 0, ready);
  }
  for (int64_t o = 0; o < c.outer; o++)
    for (int64_t i = 0; i < c.inner; i++) {
      for (int64_t k = 0; k < c.along; k++) {
        ColBuf *r = pair_take(&sum);
        col_load(e, r, &c.x, c.dt, 0, col_row(&c, o, k, i), ready);
        pair_push(e, &sum, r, ready);
      }
      col_op(e, OPC_VMULS, &s, pair_total(e, &sum, ready), &inv, c.v, ready);
      for (int64_t k = 0; k < c.along; k++) {
        ColBuf *r = pair_take(&sum);
        col_load(e, r, &c.x, c.dt, 0, col_row(&c, o, k, i), ready);
        col_op(e, OPC_VSUB, r, r, &s, c.v, ready);
        col_op(e, OPC_VMUL, r, r, r, c.v, ready);
        pair_push(e, &sum, r, ready);
      }
      col_op(e, OPC_VMULS, &q, pair_total(e, &sum, ready), &inv, c.v, ready);
      col_op(e, OPC_VADDS, &q, &q, &eps, c.v, ready);
      col_op(e, OPC_VRSQRT, &q, &q, NULL, c.v, ready);
      for (int64_t k = 0; k < c.along; k++) {
        col_load(e, &t, &c.x, c.dt, 0, col_row(&c, o, k, i), ready);
        col_op(e, OPC_VSUB, &t, &t, &s, c.v, ready);
        col_op(e, OPC_VMUL, &t, &t, &q, c.v, ready);
        if (op->nargs == 3) {
          col_pick(e, &gs, &gam, k, ready);
          col_op(e, OPC_VMULS, &t, &t, &gs, c.v, ready);
          col_pick(e, &bs, &bet, k, ready);
          col_op(e, OPC_VADDS, &t, &t, &bs, c.v, ready);
        }
        col_store(e, &t, &c.y, c.dt, col_row(&c, o, k, i));
      }
    }
}

// reduce along the last axis: each row's sum (in f32) or max goes into one
// element of the result, by SXMOV into its lane.
static void emit_reduce_last(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  Geom x = geom(e, op->args[0]), y = geom(e, op->result);
  DType dt = op->result->dtype;
  bool sum = op->kind == OP_REDUCE_SUM, wide = sum && (dt == DT_F16 || dt == DT_BF16);
  RowSet sets[ROW_SETS];
  row_sets(e, sets, f32_vectors(e, x.cols), ready);
  int64_t last_vec = -1, last_land = ready;  // rows whose results share a vector merge in turn
  for (int64_t r = 0; r < x.rows; r++) {
    RowSet *rs = &sets[r % ROW_SETS];
    int64_t at = MAX(ready, rs->free), m;
    if (wide) {
      at = load_row(e, rs, &x, dt, r, 0, at);
      m = row_reduce(e, OPC_VRSUM, rs->m, rs->s, x.cols, at);
      Instr back = make(OPC_VCVT, dt, DT_F32, 0, 0, 1, 0);
      m = landed(e, back, place3(e, back, scratch_ref(rs->z), scratch_ref(rs->m), REF_NONE, m));
    } else {
      Instr red = make(sum ? OPC_VRSUM : OPC_VRMAX, dt, 0, 0, r * x.pitch, x.cols, 0);
      m = landed(e, red, place3(e, red, scratch_ref(rs->z), REF_ARG0, REF_NONE, at));
    }
    int64_t row = r / y.cols, col = r % y.cols, vec = row * y.pitch + col / y.per;
    Instr mov = make(OPC_SXMOV, dt, (int)(col % y.per), vec, 0, 0, 1);
    int64_t put = place3(e, mov, REF_RESULT, scratch_ref(rs->z), REF_NONE, vec == last_vec ? MAX(m, last_land) : m);
    rs->free = put + 1;
    last_vec = vec;
    last_land = landed(e, mov, put);
  }
}

// reduce along another axis: the result's row (o, i) combines x's rows
// (o, k, i) for every k, pairwise (PairSum), by vector-unit ops on whole
// rows: sums of f16 and bf16 in f32, others in their own dtype.
static void emit_reduce_rows(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  Columns c = columns(e);
  bool sum = op->kind == OP_REDUCE_SUM, wide = sum && (c.dt == DT_F16 || c.dt == DT_BF16);
  PairSum rows;
  pair_init(e, &rows, sum ? OPC_VADD : OPC_VMAX, wide ? DT_F32 : c.dt, c.along, wide ? c.v : c.x.pitch);
  for (int64_t o = 0; o < c.outer; o++)
    for (int64_t i = 0; i < c.inner; i++) {
      for (int64_t k = 0; k < c.along; k++) {
        ColBuf *r = pair_take(&rows);
        if (wide)
          col_load(e, r, &c.x, c.dt, 0, col_row(&c, o, k, i), ready);
        else
          col_move_in(e, r, &c.x, col_row(&c, o, k, i), ready);
        pair_push(e, &rows, r, ready);
      }
      ColBuf *total = pair_total(e, &rows, ready);
      if (wide)
        col_store(e, total, &c.y, c.dt, o * c.inner + i);
      else
        col_move_out(e, total, &c.y, o * c.inner + i);
    }
}

static void emit_reduce(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  if (op->axis == op->args[0]->shape.rank - 1)
    emit_reduce_last(e, ready);
  else
    emit_reduce_rows(e, ready);
}

// ---- moving elements: transpose, reshape, slice, concat -------------------------------

// VMOVs of count vectors, in runs short enough to sit between resyncs;
// returns when the last copy has landed.
static int64_t vmov_block(Emitter *e, int dst_ref, int64_t dst, int src_ref, int64_t src, int64_t count,
                          int64_t ready) {
  int64_t done = ready;
  for (int64_t v = 0; v < count; v += COMPUTE_CHUNK_VECTORS) {
    Instr mov = make(OPC_VMOV, 0, 0, dst + v, src + v, MIN(COMPUTE_CHUNK_VECTORS, count - v), 0);
    int64_t at = place3(e, mov, dst_ref, src_ref, REF_NONE, ready);
    done = MAX(done, landed(e, mov, at));
  }
  return done;
}

// An SXMOV of `count` elements from element `from` (counted from vector
// src) to lane-exact element `to` of the result (counted from vector dst
// row start); returns when it has landed.
static int64_t sxmov(Emitter *e, DType dt, int per, int src_ref, int64_t src, int64_t from, int64_t dst, int64_t to,
                     int64_t count, int64_t ready) {
  Instr mov = make(OPC_SXMOV, dt, (int)(to % per), dst + to / per, src + from / per, from % per, count);
  return landed(e, mov, place3(e, mov, REF_RESULT, src_ref, REF_NONE, ready));
}

// transpose: each [per x per] tile by TRANS; a tile with fewer real result
// rows (the last column vector) goes through scratch and its real rows are
// copied out, so nothing is written past the result.
static void emit_transpose(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  const Tensor *xt = op->args[0];
  Geom x = geom(e, xt), y = geom(e, op->result);
  DType dt = xt->dtype;
  int per = x.per, tile = new_scratch(e, per);
  int64_t rows = xt->shape.dim[xt->shape.rank - 2], cols = x.cols, batches = x.rows / rows, tile_free = ready;
  for (int64_t b = 0; b < batches; b++)
    for (int64_t i0 = 0; i0 < rows; i0 += per)
      for (int64_t cv = 0; cv * per < cols; cv++) {
        int64_t r = MIN(per, rows - i0), out = MIN(per, cols - cv * per), src = (b * rows + i0) * x.pitch + cv;
        int64_t dst = (b * cols + cv * per) * y.pitch + i0 / per;
        if (out == per) {
          place3(e, make(OPC_TRANS, dt, (int)r, dst, src, x.pitch, y.pitch), REF_RESULT, REF_ARG0, REF_NONE, ready);
          continue;
        }
        Instr tr = make(OPC_TRANS, dt, (int)r, 0, src, x.pitch, 1);
        int64_t land = landed(e, tr, place3(e, tr, scratch_ref(tile), REF_ARG0, REF_NONE, MAX(ready, tile_free)));
        for (int64_t j = 0; j < out; j++) {
          Instr mov = make(OPC_VMOV, 0, 0, dst + j * y.pitch, j, 1, 0);
          tile_free = place3(e, mov, REF_RESULT, scratch_ref(tile), REF_NONE, land) + 1;
        }
      }
}

// A padding reshape's zeros (Op.pad_elems): every result vector from the
// one element `from` falls in to the end, by a VMOV of a zero constant and
// then copies of what is zero already, doubling; returns the first result
// vector zeroed, and *land when the last copy has landed.
static int64_t zero_tail(Emitter *e, Geom y, DType dt, int64_t from, int64_t ready, int64_t *land) {
  int64_t first = from / y.cols * y.pitch + from % y.cols / y.per, count = y.rows * y.pitch - first;
  *land = vmov_block(e, REF_RESULT, first, scratch_ref(new_const(e, dt, 0)), 0, 1, ready);
  for (int64_t have = 1; have < count; have *= 2)
    *land = vmov_block(e, REF_RESULT, first + have, REF_RESULT, first, MIN(have, count - have), *land);
  return first;
}

// reshape: the same rows (one block copy), or element runs moved where the
// rows of the operand and the result meet, one SXMOV each; a run into a
// vector of a padding reshape's zeros after they have landed.
static void emit_reshape(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  Geom x = geom(e, op->args[0]), y = geom(e, op->result);
  DType dt = op->result->dtype;
  if (x.cols == y.cols && !op->pad_elems) {
    vmov_block(e, REF_RESULT, 0, REF_ARG0, 0, x.rows * x.pitch, ready);
    return;
  }
  int64_t total = x.rows * x.cols, last_land = ready, last_vec = -1, zeroed = INT64_MAX, zeros_land = ready;
  if (op->pad_elems) zeroed = zero_tail(e, y, dt, total, ready, &zeros_land);
  for (int64_t el = 0; el < total;) {
    int64_t r1 = el / x.cols, c1 = el % x.cols, r2 = el / y.cols, c2 = el % y.cols;
    int64_t n = MIN(x.cols - c1, y.cols - c2), vec = r2 * y.pitch + c2 / y.per;
    int64_t end_vec = r2 * y.pitch + (c2 + n - 1) / y.per;
    // Runs that share a result vector merge into it one after the other.
    int64_t after = MAX(vec == last_vec ? last_land : ready, end_vec >= zeroed ? zeros_land : ready);
    last_land = sxmov(e, dt, y.per, REF_ARG0, r1 * x.pitch, c1, r2 * y.pitch, c2, n, after);
    last_vec = end_vec;
    el += n;
  }
}

// slice along the last axis: one SXMOV a row; along another: block copies.
static void emit_slice(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  const Tensor *xt = op->args[0];
  Geom x = geom(e, xt), y = geom(e, op->result);
  if (op->axis == xt->shape.rank - 1) {
    for (int64_t r = 0; r < x.rows; r++)
      sxmov(e, xt->dtype, y.per, REF_ARG0, r * x.pitch, op->start, r * y.pitch, 0, op->end - op->start, ready);
    return;
  }
  int64_t outer, along, inner;
  axis_split(xt, op->axis, &outer, &along, &inner);
  int64_t keep = (op->end - op->start) * inner * x.pitch;
  for (int64_t o = 0; o < outer; o++)
    vmov_block(e, REF_RESULT, o * keep, REF_ARG0, (o * along + op->start) * inner * x.pitch, keep, ready);
}

// concat along the last axis: each operand's row into its place in the
// result's row (runs meeting in one vector one after the other); along
// another axis: block copies.
static void emit_concat(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  Geom y = geom(e, op->result);
  if (op->axis == op->result->shape.rank - 1) {
    for (int64_t r = 0; r < y.rows; r++) {
      int64_t at = 0, land = ready;
      for (int k = 0; k < op->nargs; k++) {
        Geom x = geom(e, op->args[k]);
        land = sxmov(e, op->result->dtype, y.per, REF_ARG0 + k, r * x.pitch, 0, r * y.pitch, at, x.cols,
                     at % y.per ? land : ready);
        at += x.cols;
      }
    }
    return;
  }
  int64_t outer, along, inner, dst = 0;
  axis_split(op->result, op->axis, &outer, &along, &inner);
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < op->nargs; k++) {
      int64_t part = op->args[k]->shape.dim[op->axis] * inner * y.pitch;
      vmov_block(e, REF_RESULT, dst, REF_ARG0 + k, o * part, part, ready);
      dst += part;
    }
}

// ---- cholesky (seed 002 s5.5) ---------------------------------------------------------
//
// L with L L^T = a, left-looking, one column a step as the seed's
// cholesky_vector_ops: the matrix unit forms the update vector
// U = L[n, 0:i] . L[i, 0:i] for every row n >= i, and the vector unit
// subtracts it from column i of a and scales the difference by the
// reciprocal square root of its diagonal element:
//
//   I = a[i:p, i] - U;  splat = rsqrt(I[0]);  L[i:p, i] = I * splat
//
// (so L[i, i] = I[0] rsqrt(I[0]) = sqrt(I[0])).  A device works on its
// rows: blocks of CHOL_BLOCK_ROWS (one column tile), block b on the device
// of index b mod D (block-cyclic; D = 1 for the whole op).  Column i of
// its rows is a row of its working copy T = L^T: T's rows are the columns
// of L, its lanes the device's rows, a block a column tile.  T starts as
// the device's rows of a, transposed (one TRANS a tile: row i of T is
// then column i of a, read from the lower triangle).  The update is one
// activation row, row i of L, times the weight tiles of T's rows 0..i-1
// ([1 x K] x [K x 320] sub-operations: MXLW, then MXM / MXMA) for every
// tile holding rows >= i.
//
// The columns go a panel of `per` (one K tile) at a time.  At a panel's
// start each K tile before it is installed once and multiplies all the
// panel's rows of L into W (a row of f32 a panel row); step i then adds
// only its panel's part (T's rows from the panel's first to i - 1, MXLW
// of that many rows, one MXMA into its row of W).  The device
// holding the panel's rows (its owner) reads their rows of L from its own
// T: the K tiles before the panel by one TRANS each into R (the panel's
// rows of L, row-major), the panel's own part by one TRANS of its rows so
// far each step (vector i mod per of it), and it takes the pivot's rsqrt
// itself.  Split over devices (passes/split_cholesky.c) the owner then
// sends those rows of L to every block below them (CHOL_ROWS, the panel's
// columns; one transfer each, scheduled like any other), which takes
// the activation from them and scales by the reciprocal of the diagonal
// L[i, i] they carry (VRECIP): the same rsqrt(I[0]), rounded once more to
// the dtype.  The rows before the panel (CHOL_ROWS_BEFORE) are complete
// when the panel starts and go ahead of it.  Row i of T is written by step
// i and read by step i + 1's partial TRANS and install: the loop-carried
// dependence, placed to the cycle by the same `place` as every op, so the
// schedule is exact.  At the end (CHOL_OUT) each block of rows goes to
// the result row-major by TRANS, zeros above the diagonal.
//
// The vector unit works in f32 (the matrix unit accumulates in f32); T
// holds the operand's dtype.  VRSQRT is the vector unit's rsqrt: the
// correctly rounded f32 of 1 / sqrt (docs/isa.md), an error of half an f32
// ulp (6e-8 relative).

typedef struct Chol {
  DType dt;
  int64_t p, per, ncv, tvecs;        // order; elements a vector; vectors of a row of p; of a tile (block)
  int index, group;                  // the device's index of D = group
  int64_t tiles, m, pitch;           // the device's blocks, its rows (T's lanes), T's pitch
  int t_ref;                         // T: a scratch buffer, or the piece's result
  int C[ROW_SETS], S[ROW_SETS], P[ROW_SETS];  // a step's f32 column, scale, partial activation
  int R[2], W[2];                    // by panel parity: the owner's rows of L, the panel's updates
  int64_t rv, panel;                 // f32 vectors of an update row; the panel being placed
  int64_t set_free[ROW_SETS], r_free[2], r_land, r_read, w_free[2], w_read;
  int64_t *w_land;                   // by tile: when the panel product's rows have landed
  int64_t *t_land;                   // by row of T: when its last write lands
  int64_t buf_free[ISA_MXM_BUFFERS], installs;
  int zero, zeros;                   // a zero vector and a zero row (-1: not made yet)
  int64_t zeros_land;
} Chol;

// Step i's activation and pivot: the owner's own rows (R, then P), or
// the rows of L the owner sent: the panel's part (operand 1, a vector a
// row) and the part before it (operand 2, panel vectors a row).
typedef struct CholSource {
  bool own;
  int64_t panel, ready;
} CholSource;

static int64_t chol_block_of(const Chol *k, int64_t tile) { return k->index + tile * k->group; }

static int64_t chol_block_rows(const Chol *k, int64_t b) { return MIN(CHOL_BLOCK_ROWS, k->p - b * CHOL_BLOCK_ROWS); }

// The device's first tile holding rows >= i (k->tiles: none).
static int64_t chol_first_tile(const Chol *k, int64_t i) {
  int64_t b = i / CHOL_BLOCK_ROWS;
  return b <= k->index ? 0 : MIN(k->tiles, ceil_div(b - k->index, k->group));
}

// T's lane of global row n, on its owner.
static int64_t chol_lane(const Chol *k, int64_t n) {
  return (n / CHOL_BLOCK_ROWS - k->index) / k->group * CHOL_BLOCK_ROWS + n % CHOL_BLOCK_ROWS;
}

// When rows [from, to) of T have all landed.
static int64_t chol_rows_landed(const Chol *k, int64_t from, int64_t to) {
  int64_t t = 0;
  for (int64_t r = from; r < to; r++) t = MAX(t, k->t_land[r]);
  return t;
}

static void chol_rows_written(Chol *k, int64_t from, int64_t to, int64_t land) {
  for (int64_t r = from; r < to; r++) k->t_land[r] = MAX(k->t_land[r], land);
}

// T = the device's rows of a (operand 0), transposed, a [per x per] tile
// at a time (every tile: installs read whole column tiles of T's rows).
static void chol_load(Emitter *e, Chol *k, int64_t ready) {
  int64_t apitch = layout_pitch(e->c, e->n->op->args[0]);
  for (int64_t j = 0; j < k->tiles; j++) {
    int64_t b = chol_block_of(k, j), rows = chol_block_rows(k, b);
    for (int64_t rb = 0; rb * k->per < rows; rb++)
      for (int64_t cv = 0; cv < k->ncv; cv++) {
        int64_t n = MIN(k->per, rows - rb * k->per), src = (b * CHOL_BLOCK_ROWS + rb * k->per) * apitch + cv;
        Instr tr = make(OPC_TRANS, k->dt, (int)n, cv * k->per * k->pitch + j * k->tvecs + rb, src, apitch, k->pitch);
        int64_t land = landed(e, tr, place3(e, tr, k->t_ref, REF_ARG0, REF_NONE, ready));
        chol_rows_written(k, cv * k->per, (cv + 1) * k->per, land);
      }
  }
}

// T = operand 0 (the T before this piece), one block copy.
static void chol_copy(Emitter *e, Chol *k, int64_t ready) {
  int64_t land = vmov_block(e, k->t_ref, 0, REF_ARG0, 0, k->ncv * k->per * k->pitch, ready);
  chol_rows_written(k, 0, k->ncv * k->per, land);
}

// Step i's activation for its panel's K tile (the part of row i of L in
// the panel's columns, lanes < i - panel start): the owner's by a TRANS of
// those rows of T so far into P (its vector i mod per), another device's
// from the rows sent; *act and *ref out, returns when it has landed.
static int64_t chol_partial_activation(Emitter *e, Chol *k, const CholSource *src, int64_t i, int set, int64_t *act,
                                       int *ref) {
  int64_t g0 = src->panel * k->per, r = i - g0;
  if (!src->own) {
    *act = r, *ref = REF_ARG0 + 1;  // the panel's part of the rows sent: a vector a row
    return src->ready;
  }
  Instr tr = make(OPC_TRANS, k->dt, (int)r, 0, g0 * k->pitch + chol_lane(k, i) / k->per, k->pitch, 1);
  int64_t at = place3(e, tr, scratch_ref(k->P[set]), k->t_ref, REF_NONE,
                      MAX(chol_rows_landed(k, g0, i), k->set_free[set]));
  *act = r, *ref = scratch_ref(k->P[set]);
  return at + r + r + ISA_SXM_LATENCY;  // vector r lands then
}

// Installs K tile kt x tile jt of T's rows (kk of them) into the next
// weight buffer once it is free; *buf gets which; returns when installed.
static int64_t chol_install(Emitter *e, Chol *k, int64_t kt, int64_t kk, int64_t jt, int *buf) {
  int b = (int)(k->installs++ % ISA_MXM_BUFFERS);
  int64_t nn = chol_block_rows(k, chol_block_of(k, jt));
  Instr inst = make(OPC_MXLW, k->dt, b, kt * k->per * k->pitch + jt * k->tvecs, k->pitch, kk, nn);
  int8_t wref[4] = {(int8_t)k->t_ref, REF_NONE, REF_NONE, REF_NONE};
  int64_t rows = chol_rows_landed(k, kt * k->per, kt * k->per + kk);
  *buf = b;
  return place(e, inst, wref, MAX(rows, k->buf_free[b])) + isa_mxm_install_cycles(&inst, e->vb);
}

// Vector of tile jt's update for row r of the panel in W (rows of
// isa_mxm_row_vectors f32 vectors, a tile's rows together).
static int64_t chol_w_row(const Chol *k, int64_t jt, int64_t r) { return (jt * k->per + r) * k->rv; }

// The part of the panel's updates the K tiles before it give, for every
// row of the panel at once: each (K tile, tile) installed once, the
// panel's rows of L (R, or the rows sent) streamed through it into W,
// MXM then MXMA.  Sets w_land.
static void chol_panel_product(Emitter *e, Chol *k, const CholSource *src, int64_t j0, int64_t ready) {
  int64_t s = src->panel, rows = MIN(k->per, k->p - s * k->per);
  int w = scratch_ref(k->W[s % 2]);
  int64_t *start = ARENA_ARRAY(&e->c->arena, int64_t, k->tiles);
  for (int64_t jt = j0; jt < k->tiles; jt++) k->w_land[jt] = start[jt] = ready;
  for (int64_t kt = 0; kt < s; kt++)
    for (int64_t jt = j0; jt < k->tiles; jt++) {
      int buf;
      int64_t installed = chol_install(e, k, kt, k->per, jt, &buf);
      int64_t pitch = src->own ? k->ncv : s;  // the rows sent before the panel: s vectors a row
      int aref = src->own ? scratch_ref(k->R[s % 2]) : REF_ARG0 + 2;
      int64_t act_ready = src->own ? k->r_land : src->ready;
      int64_t after = kt ? start[jt] + ISA_MXM_LATENCY : k->w_free[s % 2];
      Instr mul = make(kt ? OPC_MXMA : OPC_MXM, k->dt, buf, chol_w_row(k, jt, 0), kt, pitch, rows);
      start[jt] = place3(e, mul, w, aref, REF_NONE, MAX(MAX(installed, act_ready), MAX(after, ready)));
      int64_t cycles = isa_mxm_cycles(k->dt, (uint32_t)rows);
      k->buf_free[buf] = start[jt] + cycles;
      if (src->own) k->r_read = MAX(k->r_read, start[jt] + cycles);
      k->w_land[jt] = start[jt] + cycles + ISA_MXM_LATENCY;
    }
}

// Step i's update rows in W: the panel's part (its K tile so far, kk =
// i - panel start) added by MXMA into what chol_panel_product left there
// (MXM when it left nothing); returns when every tile's row has landed.
static int64_t chol_step_update(Emitter *e, Chol *k, const CholSource *src, int64_t i, int64_t j0, int set) {
  int64_t s = src->panel, r = i - s * k->per, done = 0;
  for (int64_t jt = j0; jt < k->tiles; jt++) done = MAX(done, k->w_land[jt]);
  if (r == 0) return done;
  int64_t act;
  int aref;
  int64_t act_land = chol_partial_activation(e, k, src, i, set, &act, &aref);
  for (int64_t jt = j0; jt < k->tiles; jt++) {
    int buf;
    int64_t installed = chol_install(e, k, s, r, jt, &buf);
    Instr mul = make(s ? OPC_MXMA : OPC_MXM, k->dt, buf, chol_w_row(k, jt, r), act, 1, 1);
    int64_t ready = MAX(MAX(installed, act_land), MAX(k->w_land[jt], k->w_free[s % 2]));
    int64_t at = place3(e, mul, scratch_ref(k->W[s % 2]), aref, REF_NONE, ready);
    k->buf_free[buf] = at + isa_mxm_cycles(k->dt, 1);
    done = MAX(done, at + ISA_MXM_LATENCY);
  }
  return done;
}

// An f32 vector-unit instruction on the step's buffers; returns when its
// last result lands.
static int64_t chol_vop(Emitter *e, Instr in, int ra, int rb, int rc, int64_t ready) {
  return landed(e, in, place3(e, in, ra, rb, rc, ready));
}

// C -= step i's update (row r of W), a tile at a time, f32 vectors from
// c0 on; returns when the last lands.
static int64_t chol_subtract(Emitter *e, Chol *k, int set, int64_t r, int64_t j0, int64_t c0, int64_t ready) {
  int64_t f32v = f32_vectors(e, k->m), done = ready;
  for (int64_t jt = j0; jt < k->tiles; jt++) {
    int64_t lo = MAX(c0, jt * k->rv), hi = MIN((jt + 1) * k->rv, f32v);
    Instr sub = make(OPC_VSUB, DT_F32, 0, lo, lo, chol_w_row(k, jt, r) + lo - jt * k->rv, hi - lo);
    int64_t at = place3(e, sub, scratch_ref(k->C[set]), scratch_ref(k->C[set]), scratch_ref(k->W[k->panel % 2]), ready);
    k->w_read = MAX(k->w_read, at + hi - lo);
    done = MAX(done, landed(e, sub, at));
  }
  return done;
}

// The step's scale into S: rsqrt of the pivot, lane `lane` of C (the
// owner), or 1 / L[i, i] from the rows the owner sent.
static int64_t chol_splat(Emitter *e, const Chol *k, const CholSource *src, int64_t i, int set, int64_t lane,
                          int64_t ready) {
  int S = scratch_ref(k->S[set]);
  if (src->own) {
    int64_t s = chol_vop(e, make(OPC_SXMOV, DT_F32, 0, 0, 0, lane, 1), S, scratch_ref(k->C[set]), REF_NONE, ready);
    return chol_vop(e, make(OPC_VRSQRT, DT_F32, 0, 0, 0, 1, 0), S, S, REF_NONE, s);
  }
  int64_t r = i - src->panel * k->per;
  Instr pick = make(OPC_SXMOV, k->dt, 0, 0, r, r, 1);  // L[i, i]: lane r of the panel's part
  int64_t s = chol_vop(e, pick, scratch_ref(k->P[set]), REF_ARG0 + 1, REF_NONE, MAX(ready, k->set_free[set]));
  s = chol_vop(e, make(OPC_VCVT, DT_F32, k->dt, 0, 0, 1, 0), S, scratch_ref(k->P[set]), REF_NONE, s);
  return chol_vop(e, make(OPC_VRECIP, DT_F32, 0, 0, 0, 1, 0), S, S, REF_NONE, s);
}

// Step i: column i of the device's rows >= i into row i of T (see the top
// of this section).
static void chol_step(Emitter *e, Chol *k, const CholSource *src, int64_t i) {
  int64_t j0 = chol_first_tile(k, i);
  if (j0 >= k->tiles) return;
  int set = (int)(i % ROW_SETS);
  int64_t v0 = j0 * k->tvecs, lane = src->own ? chol_lane(k, i) : 0;
  if (src->own) v0 = lane / k->per;
  int64_t c0 = v0 * k->per / isa_elems_per_vector(DT_F32, e->vb), n = f32_vectors(e, k->m) - c0;
  int64_t elems = k->m - v0 * k->per;
  int C = scratch_ref(k->C[set]);
  Instr load = make(OPC_VCVT, DT_F32, k->dt, c0, i * k->pitch + v0, elems, 0);
  int64_t col = chol_vop(e, load, C, k->t_ref, REF_NONE, MAX(k->t_land[i], k->set_free[set]));
  if (i > 0) {
    int64_t u = chol_step_update(e, k, src, i, j0, set);
    col = chol_subtract(e, k, set, i - src->panel * k->per, j0, c0, MAX(col, u));
  }
  int64_t s = chol_splat(e, k, src, i, set, lane, col);
  col = chol_vop(e, make(OPC_VMULS, DT_F32, 0, c0, c0, 0, n), C, C, scratch_ref(k->S[set]), MAX(col, s));
  Instr store = make(OPC_VCVT, k->dt, DT_F32, i * k->pitch + v0, c0, elems, 0);
  int64_t at = place3(e, store, k->t_ref, C, REF_NONE, col);
  k->t_land[i] = landed(e, store, at);
  k->set_free[set] = at + isa_issue_cycles(&store, e->vb);
}

// The owner's rows of L for panel s before its columns into R (one TRANS
// a K tile of T's rows, at the panel's lane vector); returns when landed.
static void chol_panel_rows(Emitter *e, Chol *k, int64_t s, int64_t ready) {
  int rbuf = scratch_ref(k->R[s % 2]);
  int64_t lv = chol_lane(k, s * k->per) / k->per;
  ready = MAX(ready, k->r_free[s % 2]);
  k->r_land = ready;
  for (int64_t g = 0; g < s; g++) {
    Instr tr = make(OPC_TRANS, k->dt, (int)k->per, g, g * k->per * k->pitch + lv, k->pitch, k->ncv);
    int64_t land = landed(e, tr, place3(e, tr, rbuf, k->t_ref, REF_NONE, MAX(ready, chol_rows_landed(k, g * k->per, (g + 1) * k->per))));
    k->r_land = MAX(k->r_land, land);
  }
}

// Panel s's columns [s per, s per + per) of the device's rows, the
// activation and pivot from src.
static void chol_panel(Emitter *e, Chol *k, const CholSource *src, int64_t ready) {
  int64_t s = src->panel, end = MIN(k->p, (s + 1) * k->per), j0 = chol_first_tile(k, s * k->per);
  if (j0 >= k->tiles) return;
  k->panel = s;
  k->r_read = k->w_read = ready;
  if (src->own) chol_panel_rows(e, k, s, ready);
  chol_panel_product(e, k, src, j0, ready);
  for (int64_t i = s * k->per; i < end; i++) chol_step(e, k, src, i);
  if (src->own) k->r_free[s % 2] = k->r_read;
  k->w_free[s % 2] = k->w_read;
}

// A zero vector and a row of `ncv` zero vectors (VMOVs doubling it),
// made once a node.
static void chol_zeros(Emitter *e, Chol *k, int64_t ready) {
  if (k->zero >= 0) return;
  k->zero = new_const(e, k->dt, 0);
  k->zeros = new_scratch(e, k->ncv);
  int64_t land = vmov_block(e, scratch_ref(k->zeros), 0, scratch_ref(k->zero), 0, 1, ready);
  for (int64_t have = 1; have < k->ncv; have *= 2)
    land = vmov_block(e, scratch_ref(k->zeros), have, scratch_ref(k->zeros), 0, MIN(have, k->ncv - have), land);
  k->zeros_land = land;
}

// Row r of rbuf (global row n of L) into row `out` of the result: the
// lanes above the diagonal of its diagonal vector zeroed in rbuf first,
// the vectors after it zeros.
static void chol_store_row(Emitter *e, Chol *k, int rbuf, int64_t r, int64_t n, int64_t out, int64_t ready) {
  int64_t vd = n / k->per, lane = n % k->per + 1;
  if (lane < k->per) {
    Instr mov = make(OPC_SXMOV, k->dt, (int)lane, r * k->ncv + vd, 0, 0, k->per - lane);
    ready = landed(e, mov, place3(e, mov, rbuf, scratch_ref(k->zero), REF_NONE, ready));
  }
  vmov_block(e, REF_RESULT, out * k->ncv, rbuf, r * k->ncv, vd + 1, ready);
  if (vd + 1 < k->ncv)
    vmov_block(e, REF_RESULT, out * k->ncv + vd + 1, scratch_ref(k->zeros), 0, k->ncv - vd - 1, k->zeros_land);
}

// Tile j of T (block b) into the result's rows from `out0` on, row-major,
// zeros above the diagonal: TRANS of each K tile up to the diagonal into
// a block of rows in scratch, then a row at a time.
static void chol_out(Emitter *e, Chol *k, int64_t j, int64_t out0, int64_t ready) {
  int64_t b = chol_block_of(k, j), rows = chol_block_rows(k, b), last = (b * CHOL_BLOCK_ROWS + rows - 1) / k->per;
  int rbuf = scratch_ref(new_scratch(e, k->tvecs * k->per * k->ncv));
  int64_t land = ready;
  chol_zeros(e, k, ready);
  for (int64_t g = 0; g <= last; g++)
    for (int64_t rb = 0; rb * k->per < rows; rb++) {
      int64_t n = MIN(k->per, k->p - g * k->per);
      Instr tr = make(OPC_TRANS, k->dt, (int)n, rb * k->per * k->ncv + g, g * k->per * k->pitch + j * k->tvecs + rb,
                      k->pitch, k->ncv);
      int64_t at = place3(e, tr, rbuf, k->t_ref, REF_NONE, MAX(ready, chol_rows_landed(k, g * k->per, g * k->per + n)));
      land = MAX(land, landed(e, tr, at));
    }
  for (int64_t r = 0; r < rows; r++) chol_store_row(e, k, rbuf, r, b * CHOL_BLOCK_ROWS + r, out0 + r, land);
}

// Rows of L of panel s (the owner's T at the panel's lanes), columns of K
// tiles [g0, g1), into the result, row-major: one TRANS a K tile, by
// scratch when the panel has fewer rows than a tile.
static void chol_rows_out(Emitter *e, Chol *k, int64_t s, int64_t g0, int64_t g1, int64_t ready) {
  int64_t rows = MIN(k->per, k->p - s * k->per), lv = chol_lane(k, s * k->per) / k->per, pitch = g1 - g0;
  int tile = rows < k->per ? scratch_ref(new_scratch(e, k->per)) : -1;
  for (int64_t g = g0; g < g1; g++) {
    int64_t n = MIN(k->per, k->p - g * k->per), src = g * k->per * k->pitch + lv;
    Instr tr = make(OPC_TRANS, k->dt, (int)n, tile < 0 ? g - g0 : 0, src, k->pitch, tile < 0 ? pitch : 1);
    int64_t at = place3(e, tr, tile < 0 ? REF_RESULT : tile, k->t_ref, REF_NONE, MAX(ready, chol_rows_landed(k, g * k->per, g * k->per + n)));
    if (tile < 0) continue;
    for (int64_t r = 0; r < rows; r++) {
      Instr mov = make(OPC_VMOV, 0, 0, r * pitch + g - g0, r, 1, 0);
      int64_t read = place3(e, mov, REF_RESULT, tile, REF_NONE, landed(e, tr, at)) + 1;
      ready = MAX(ready, read);  // the next TRANS into the tile waits for the reads
    }
  }
}

// The device's share of the op's cholesky (k->index of k->group), T in
// t_ref (its rows' count and pitch follow).
static Chol chol_new(Emitter *e, const CholPiece *piece, DType dt, int t_ref) {
  Chol k = {.dt = dt, .p = piece->order, .per = isa_elems_per_vector(dt, e->vb), .index = piece->index,
            .group = piece->group, .t_ref = t_ref, .zero = -1};
  k.ncv = ceil_div(k.p, k.per);
  k.tvecs = CHOL_BLOCK_ROWS / k.per;
  int64_t nb = ceil_div(k.p, CHOL_BLOCK_ROWS);
  k.tiles = nb > k.index ? ceil_div(nb - k.index, k.group) : 0;
  for (int64_t j = 0; j < k.tiles; j++) k.m += chol_block_rows(&k, chol_block_of(&k, j));
  k.pitch = ceil_div(k.m, k.per);
  k.rv = isa_mxm_row_vectors(k.dt, e->vb);
  k.w_land = ARENA_ARRAY(&e->c->arena, int64_t, k.tiles);
  k.t_land = ARENA_ARRAY(&e->c->arena, int64_t, k.ncv * k.per);
  memset(k.t_land, 0, sizeof(int64_t) * (size_t)(k.ncv * k.per));
  return k;
}

static void chol_start(Chol *k, int64_t ready) {
  for (int s = 0; s < ROW_SETS; s++) k->set_free[s] = ready;
  for (int b = 0; b < ISA_MXM_BUFFERS; b++) k->buf_free[b] = ready;
  k->r_free[0] = k->r_free[1] = k->w_free[0] = k->w_free[1] = ready;
}

// The buffers of the steps: the sets C, S, P and, by panel parity, W
// and (the owner's) R, the rows of L before the panel.
static void chol_step_buffers(Emitter *e, Chol *k, bool own) {
  for (int s = 0; s < ROW_SETS; s++) {
    k->C[s] = new_scratch(e, f32_vectors(e, k->m));
    k->S[s] = new_scratch(e, 1);
    k->P[s] = new_scratch(e, k->per);
  }
  for (int s = 0; s < 2; s++) {
    k->W[s] = new_scratch(e, k->tiles * k->per * k->rv);
    if (own) k->R[s] = new_scratch(e, k->per * k->ncv);
  }
}

static void emit_cholesky(Emitter *e, int64_t ready) {
  const Op *op = e->n->op;
  const CholPiece *pc = &op->chol;
  DType dt = op->args[0]->dtype;
  bool t_scratch = pc->role == CHOL_WHOLE || pc->role == CHOL_ROWS || pc->role == CHOL_ROWS_BEFORE || pc->role == CHOL_OUT;
  Chol k = chol_new(e, pc, dt, REF_RESULT);
  if (t_scratch) k.t_ref = pc->role == CHOL_WHOLE ? scratch_ref(new_scratch(e, k.ncv * k.per * k.pitch)) : REF_ARG0;
  chol_start(&k, ready);
  CholSource src = {.own = pc->role != CHOL_PANEL, .panel = pc->panel, .ready = ready};
  switch (pc->role) {
  case CHOL_WHOLE:
    chol_step_buffers(e, &k, true);
    chol_load(e, &k, ready);
    for (src.panel = 0; src.panel < k.ncv; src.panel++) chol_panel(e, &k, &src, ready);
    for (int64_t j = 0; j < k.tiles; j++) chol_out(e, &k, j, j * CHOL_BLOCK_ROWS, ready);
    break;
  case CHOL_INIT: chol_load(e, &k, ready); break;
  case CHOL_OWN:
    chol_step_buffers(e, &k, true);
    chol_copy(e, &k, ready);
    chol_panel(e, &k, &src, ready);
    break;
  case CHOL_PANEL:
    chol_step_buffers(e, &k, false);
    chol_copy(e, &k, ready);
    chol_panel(e, &k, &src, ready);
    break;
  case CHOL_ROWS: chol_rows_out(e, &k, pc->panel, pc->panel, pc->panel + 1, ready); break;
  case CHOL_ROWS_BEFORE: chol_rows_out(e, &k, pc->panel, 0, pc->panel, ready); break;
  case CHOL_OUT: chol_out(e, &k, (pc->panel - k.index) / k.group, 0, ready); break;
  }
  for (int b = 0; b < ISA_MXM_BUFFERS; b++) e->weights_until = MAX(e->weights_until, k.buf_free[b]);  // (emit_matmul)
}

// ---- the table ------------------------------------------------------------------------

typedef void EmitFn(Emitter *e, int64_t ready);

// op -> the vector-unit instruction of its single pass (OPC_COUNT: none),
// the program it runs otherwise, and what the partitioner's estimate
// (compute_estimate_cycles) charges it: `f32_passes` tenths of a cycle per
// f32 vector of its first operand (a per-row program), or, at 0, a cycle
// per vector of its result (a single pass, a move) or the matmul formula.
// The tenths are this scheduler's own makespans of the op alone on
// [1024 x 1024] f16 (gelu 93,271 cycles over 13,312 f32 vectors: 7.0),
// re-measured by test_partition's estimate test.  `weights`: its program
// installs tiles in the matrix unit's weight buffers (Emitter.weights_until).
typedef struct ComputeRule {
  Opcode pass;
  EmitFn *emit;
  int f32_passes;  // tenths
  bool weights;
} ComputeRule;

static const ComputeRule rules[OP_COUNT] = {
    [OP_MATMUL] = {OPC_COUNT, emit_matmul, 0, true},  [OP_ADD] = {OPC_VADD, emit_bias, 0},
    [OP_SUB] = {OPC_VSUB, emit_bias, 0},              [OP_MUL] = {OPC_VMUL, emit_bias, 0},
    [OP_DIV] = {OPC_VDIV, emit_bias, 0},              [OP_RELU] = {OPC_VRELU, NULL, 0},
    [OP_EXP] = {OPC_VEXP, NULL, 0},                   [OP_RSQRT] = {OPC_VRSQRT, NULL, 0},
    [OP_GELU] = {OPC_COUNT, emit_gelu, 70},           [OP_SOFTMAX] = {OPC_COUNT, emit_softmax, 78},
    [OP_LAYERNORM] = {OPC_COUNT, emit_layernorm, 87}, [OP_TRANSPOSE] = {OPC_COUNT, emit_transpose, 0},
    [OP_REDUCE_SUM] = {OPC_COUNT, emit_reduce, 25},   [OP_REDUCE_MAX] = {OPC_COUNT, emit_reduce, 25},
    [OP_RESHAPE] = {OPC_COUNT, emit_reshape, 0},      [OP_SLICE] = {OPC_COUNT, emit_slice, 0},
    [OP_CONCAT] = {OPC_COUNT, emit_concat, 0},        [OP_CHOLESKY] = {OPC_COUNT, emit_cholesky, 0, true},
};

// f32 vectors a row of n elements fills (f32_vectors without an Emitter).
static int64_t f32_vectors_of(int64_t n, int vb) { return ceil_div(n, isa_elems_per_vector(DT_F32, vb)); }

// Vectors of t's rows as layout.c pads them (every row of the last
// dimension on whole vectors of its dtype, or of f32 for a program's
// working rows).
static int64_t padded_vectors(const Tensor *t, DType dt, int vb) {
  int64_t cols = t->shape.dim[t->shape.rank - 1];
  return ir_shape_elems(&t->shape) / cols * ceil_div(cols, isa_elems_per_vector(dt, vb));
}

// Elements a row of t holds as layout.c pads it: its last dimension on
// whole vectors of its dtype.
static int64_t padded_cols(const Tensor *t, int vb) {
  int per = isa_elems_per_vector(t->dtype, vb);
  return ceil_div(t->shape.dim[t->shape.rank - 1], per) * per;
}

// The software-pipelined product of emit_matmul: every (K tile, column
// tile) pair holds the matrix unit for its rows or its install, whichever
// is longer, after the first install and before the last result lands.
// Tiles come in four kinds: whole, or cut short in K, in columns or both.
static int64_t estimate_matmul(const Op *op, int vb) {
  const Tensor *x = op->args[0], *y = op->result;
  int per = isa_elems_per_vector(x->dtype, vb), q = isa_mxm_rows_per_cycle(x->dtype);
  int64_t k = x->shape.dim[x->shape.rank - 1], n = y->shape.dim[y->shape.rank - 1];
  int64_t rows = ceil_div(ir_shape_elems(&x->shape) / k, q), tc = tile_cols(per);
  int64_t kk[2] = {per, k % per}, nk[2] = {k / per, k % per != 0};
  int64_t nn[2] = {tc, n % tc}, nc[2] = {n / tc, n % tc != 0};
  int64_t cycles = 0;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      cycles += nk[a] * nc[b] * MAX(rows, kk[a] * ceil_div(nn[b], per));
  int64_t first = MIN(k, per) * ceil_div(MIN(n, tc), per);
  return first + cycles + ISA_MXM_LATENCY;
}

// emit_cholesky's cycles: the transposes in and out, each panel's
// product (its K tiles before it installed once a tile of rows: kk rows x
// ceil(nn / per) vectors, a cycle each), and each step, bound by the
// longer of its chain and its partial installs on every tile holding rows
// below.  The owner's chain is its partial TRANS holding the switch unit
// r + per cycles, then a tail to the next step: CHOL_STEP_TAIL in a whole
// op (its other tiles' work shares the units), CHOL_OWN_TAIL in an OWN
// piece; another device's is its partial install, then CHOL_PANEL_TAIL.
// A piece (split_cholesky.c) counts its one block; OWN and PANEL also
// copy T.  The tails are this scheduler's own, measured on order 700 f16
// (whole: 276,078 cycles; an OWN piece 260 a step, a PANEL piece 207) and
// re-checked by test_partition.
#define CHOL_STEP_TAIL 55
#define CHOL_OWN_TAIL 21
#define CHOL_PANEL_TAIL 45

// Vectors a row of T's tiles from block b0 on holds (a tile's install
// reads that many a K row).
static int64_t chol_tile_vectors(int64_t p, int64_t per, int64_t b0, int64_t b1) {
  int64_t vecs = 0;
  for (int64_t b = b0; b < b1 && b * CHOL_BLOCK_ROWS < p; b++) vecs += ceil_div(MIN(CHOL_BLOCK_ROWS, p - b * CHOL_BLOCK_ROWS), per);
  return vecs;
}

// Steps [i0, i1) of blocks [b0, b1) (whole: from each step's block on).
static int64_t estimate_chol_steps(int64_t p, int64_t per, int64_t i0, int64_t i1, int64_t b0, int64_t b1, bool own,
                                   int64_t tail) {
  int64_t cycles = 0, nb = ceil_div(p, CHOL_BLOCK_ROWS);
  for (int64_t i = MAX(i0, 1); i < i1; i++) {
    int64_t r = i % per, vecs = chol_tile_vectors(p, per, b0 < 0 ? i / CHOL_BLOCK_ROWS : b0, b1 < 0 ? nb : b1);
    if (r == 0 || i == i0) cycles += (i / per) * per * vecs;  // the panel's product
    cycles += own ? MAX(r * vecs, r + per + tail) : r * vecs + tail;
  }
  return cycles;
}

static int64_t estimate_cholesky(const Op *op, int vb) {
  const CholPiece *pc = &op->chol;
  int64_t p = pc->order, per = isa_elems_per_vector(op->result->dtype, vb), ncv = ceil_div(p, per);
  int64_t b = pc->index, rows = MIN(CHOL_BLOCK_ROWS, p - b * CHOL_BLOCK_ROWS), s = pc->panel;
  int64_t copy = ncv * per * ceil_div(rows, per), panel_end = MIN(p, (s + 1) * per);
  switch (pc->role) {
  case CHOL_WHOLE: return 2 * ncv * ncv * 2 * per + estimate_chol_steps(p, per, 0, p, -1, -1, true, CHOL_STEP_TAIL);
  case CHOL_INIT:
  case CHOL_OUT: return ncv * ceil_div(rows, per) * 2 * per;
  case CHOL_OWN: return copy + estimate_chol_steps(p, per, s * per, panel_end, b, b + 1, true, CHOL_OWN_TAIL);
  case CHOL_PANEL: return copy + estimate_chol_steps(p, per, s * per, panel_end, b, b + 1, false, CHOL_PANEL_TAIL);
  case CHOL_ROWS: return 2 * per;
  case CHOL_ROWS_BEFORE: return s * 2 * per;
  }
  return 0;
}

int64_t compute_estimate_scratch_vectors(const Op *op, int vb) {
  const Tensor *x = op->nargs ? op->args[0] : op->result;
  int64_t cols = x->shape.dim[x->shape.rank - 1], f32_row = ceil_div(cols, isa_elems_per_vector(DT_F32, vb));
  switch (op->kind) {
  case OP_MATMUL: {
    int64_t rows = ir_shape_elems(&x->shape) / cols, n = op->result->shape.dim[op->result->shape.rank - 1];
    int64_t tc = tile_cols(isa_elems_per_vector(x->dtype, vb));
    return (n > tc ? 2 : 1) * rows * isa_mxm_row_vectors(x->dtype, vb);
  }
  case OP_GELU: {  // emit_gelu's chunks, of its rows' elements as layout.c pads them
    int sets;
    int64_t chunk = gelu_chunk_vectors(ir_shape_elems(&x->shape) / cols * padded_cols(x, vb), vb, &sets);
    return 2 * sets * chunk + GELU_CONSTANTS;
  }
  case OP_CHOLESKY: {  // chol_new's step sets and W, R, a block of rows out, the zero row; a whole op's T
    int64_t p = op->chol.order, per = isa_elems_per_vector(x->dtype, vb), ncv = ceil_div(p, per);
    int64_t m = op->chol.role == CHOL_WHOLE ? p : CHOL_BLOCK_ROWS, tiles = ceil_div(m, CHOL_BLOCK_ROWS);
    int64_t rv = isa_mxm_row_vectors(x->dtype, vb), sets = ROW_SETS * (f32_vectors_of(m, vb) + 1 + per);
    int64_t t = op->chol.role == CHOL_WHOLE ? ncv * per * ncv : 0;
    return t + sets + 2 * tiles * per * rv + 2 * per * ncv + CHOL_BLOCK_ROWS * ncv + ncv + 1;
  }
  case OP_SOFTMAX:
  case OP_LAYERNORM: {
    bool affine = op->nargs == 3;
    if (op->axis == x->shape.rank - 1) return ROW_SETS * (2 * f32_row + 2) + (affine ? 2 * f32_row : 0);  // row sets, gamma, beta
    // the column programs: three rows and the pairwise sum; layernorm's
    // scalars of gamma and beta, and gamma and beta (of the axis' length)
    int64_t v = f32_vectors_of(padded_cols(x, vb), vb);
    int64_t rows = 3 * v + pair_vectors(x->shape.dim[op->axis], v);
    if (op->kind == OP_SOFTMAX) return rows;
    return rows + 2 + (affine ? 2 * f32_vectors_of(padded_cols(op->args[1], vb), vb) : 0);
  }
  case OP_REDUCE_SUM:
  case OP_REDUCE_MAX: {
    if (op->axis == x->shape.rank - 1) return ROW_SETS * (2 * f32_row + 2);  // the row sets
    bool wide = op->kind == OP_REDUCE_SUM && (x->dtype == DT_F16 || x->dtype == DT_BF16);
    int64_t v = wide ? f32_vectors_of(padded_cols(x, vb), vb) : ceil_div(padded_cols(x, vb), isa_elems_per_vector(x->dtype, vb));
    return pair_vectors(x->shape.dim[op->axis], v);
  }
  default: return compute_pass_opcode(NULL, op) != OPC_COUNT ? 0 : isa_elems_per_vector(x->dtype, vb);
  }
}

int64_t compute_estimate_cycles(const Op *op, int vb) {
  if (ir_op_is_collective(op->kind) || op->kind == OP_COPY) return 0;
  if (op->kind == OP_MATMUL) return estimate_matmul(op, vb);
  if (op->kind == OP_CHOLESKY) return estimate_cholesky(op, vb);
  const ComputeRule *r = &rules[op->kind];
  if (r->f32_passes) return padded_vectors(op->args[0], DT_F32, vb) * r->f32_passes / 10;
  int64_t moves = op->kind == OP_TRANSPOSE ? 2 : 1;  // TRANS tiles, then the rows written back
  return moves * padded_vectors(op->result, op->result->dtype, vb) + ISA_VXM_LATENCY;
}

static Opcode pass_of(OpKind k) { return rules[k].pass; }

bool compute_uses_weights(const Op *op) { return rules[op->kind].weights; }

Opcode compute_pass_opcode(Compilation *c, const Op *op) {
  (void)c;
  const ComputeRule *r = &rules[op->kind];
  if (r->pass == OPC_COUNT) return OPC_COUNT;
  if (op->nargs == 2 && !ir_shape_equal(&op->args[0]->shape, &op->args[1]->shape)) return OPC_COUNT;
  return r->pass;
}

// Whether t has users and every one is a matmul taking it as its second
// operand where t is placed (a user elsewhere would need t's bytes sent).
static bool only_matmul_weights(const Graph *g, const Tensor *t) {
  int users = 0;
  for (int i = 0; i < g->ops.len; i++) {
    const Op *op = g->ops.data[i];
    for (int a = 0; a < op->nargs; a++) {
      if (op->args[a] != t) continue;
      users++;
      if (op->kind != OP_MATMUL || a != 1 || op->args[0] == t || !ir_place_equal(&op->result->place, &t->place))
        return false;
    }
  }
  return users > 0;
}

bool compute_transpose_is_view(Compilation *c, const Op *op) {
  const Tensor *y = op->result, *x = op->args[0];
  if (op->kind != OP_TRANSPOSE || y->is_output || x->shape.rank != 2) return false;
  if (isa_elems_per_vector(x->dtype, c->topo->link.vector_bytes) > ISA_MXM_COLS) return false;
  return only_matmul_weights(c->graph, y);
}

const Tensor *compute_storage_of(Compilation *c, const Tensor *t) {
  return t->def && compute_transpose_is_view(c, t->def) ? t->def->args[0] : t;
}

static bool is_float(DType dt) { return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16; }

bool compute_supported(Compilation *c, const Op *op, char *why, size_t n) {
  if (ir_op_is_collective(op->kind) || op->kind == OP_COPY) return true;
  DType dt = op->result->dtype;
  int per = isa_elems_per_vector(dt, c->topo->link.vector_bytes);
  if (per > UINT16_MAX)  // lanes and tile rows travel in 16-bit fields (TRANS, SXMOV)
    return snprintf(why, n, "a %d-byte vector holds %d %s elements, more than the ISA's 16-bit lane fields address",
                    c->topo->link.vector_bytes, per, ir_dtype_names[dt]), false;
  if (compute_pass_opcode(c, op) != OPC_COUNT) {
    if ((op->kind == OP_EXP || op->kind == OP_RSQRT) && !is_float(dt))
      return snprintf(why, n, "the vector unit computes it on f32, f16 or bf16 only"), false;
    return true;
  }
  switch (op->kind) {
  case OP_MATMUL:
    if (!isa_mxm_dtype_ok(dt)) return snprintf(why, n, "the matrix unit multiplies f16, bf16, i8 or f32, not %s", ir_dtype_names[dt]), false;
    if (per > ISA_MXM_COLS) return snprintf(why, n, "a vector holds more %s elements than a weight tile's %d columns", ir_dtype_names[dt], ISA_MXM_COLS), false;
    return true;
  case OP_GELU:
  case OP_SOFTMAX:
  case OP_LAYERNORM:
    if (!is_float(dt)) return snprintf(why, n, "the vector unit computes it on f32, f16 or bf16 only"), false;
    return true;
  default: return rules[op->kind].emit != NULL;
  }
}

void compute_stamp(Emitter *e, const DagNode *like) {
  DagNode *n = e->n;
  n->code = like->code, n->ncode = like->ncode, n->scratch = like->scratch, n->nscratch = like->nscratch;
  n->start = like->start, n->finish = like->finish;
  for (int i = 0; i < n->ncode; i++) reserve(e, &n->code[i].in, n->code[i].at);  // what place() took for it
}

void compute_emit(Emitter *e, int64_t ready) {
  DagNode *n = e->n;
  n->start = n->finish = ready;
  if (n->op->kind == OP_TRANSPOSE && compute_transpose_is_view(e->c, n->op)) return;  // read in place
  e->last = ready;
  e->code->len = 0;
  rules[n->op->kind].emit(e, ready);
  n->ncode = e->code->len;
  n->code = NULL;
  if (n->ncode) {
    n->code = arena_alloc_uncleared(&e->c->arena, sizeof *n->code * (size_t)n->ncode);  // every one copied
    memcpy(n->code, e->code->data, sizeof *n->code * (size_t)n->ncode);
  }
  n->nscratch = e->scratch.len;
  n->scratch = e->scratch.data;
  for (int i = 0; i < n->ncode; i++) n->start = i ? MIN(n->start, n->code[i].at) : n->code[i].at;
  n->finish = e->last;
}
