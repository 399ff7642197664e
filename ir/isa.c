// isa.c: the instruction set's tables and the checks every producer and
// consumer of device programs shares.  Part of ir/: the assembler and the
// code generator check instructions with isa_check before writing them, the
// loader checks them again after reading (it never trusts a file), and the
// disassembler prints them with isa_format.
//
// The matrix unit follows seed 002 s5.2: one sub-op is a [1 x K] x
// [K x 320] product, K = 160 for fp16 and 320 for int8, and the unit
// completes 2 fp16 or 4 int8 sub-ops a cycle (isa_mxm_rows_per_cycle).
// bf16 runs at the fp16 rate; f32 (not in the seed) is taken to run a
// quarter of its multiply-accumulates: one row of 80 a cycle.  The weight tile is installed once (MXLW, or
// MXLWT for the B of A B^T, seed s5.5) into one of ISA_MXM_BUFFERS buffers
// and then multiplies any number of activation rows (MXM, MXMA).
#include "ir.h"

#include <string.h>
#include <strings.h>

const OpcodeInfo isa_opcodes[OPC_COUNT] = {
#define X(e, name, operands, units) {name, operands, units},
    ISA_OPS(X)
#undef X
};

const char *const isa_unit_kind_names[UNIT_KIND_COUNT] = {"c2c", "vxm", "mxm", "ctl", "sxm"};

// Mnemonics are matched in any case: SEND, send, Send.
bool isa_opcode_lookup(const char *name, Opcode *out) {
  for (int i = 0; i < OPC_COUNT; i++)
    if (!strcasecmp(name, isa_opcodes[i].name)) {
      *out = (Opcode)i;
      return true;
    }
  return false;
}

bool isa_unit_parse(const char *name, UnitKind *kind, int *port) {
  *port = -1;
  for (int k = UNIT_VXM; k < UNIT_KIND_COUNT; k++)
    if (!strcmp(name, isa_unit_kind_names[k])) {
      *kind = (UnitKind)k;
      return true;
    }
  if (strncmp(name, "c2c.", 4) || !name[4]) return false;
  int64_t p;
  if (!str_to_i64(name + 4, &p) || p < 0 || p > UINT16_MAX || name[4] == '+' || name[4] == '-')
    return false;
  *kind = UNIT_C2C;
  *port = (int)p;
  return true;
}

void isa_unit_format(char *dst, size_t n, UnitKind kind, int port) {
  if (kind == UNIT_C2C)
    snprintf(dst, n, "c2c.%d", port);
  else
    snprintf(dst, n, "%s", isa_unit_kind_names[kind]);
}

int isa_elems_per_vector(DType dt, int vector_bytes) { return vector_bytes / ir_dtype_bytes[dt]; }

bool isa_mxm_dtype_ok(DType dt) { return dt == DT_F16 || dt == DT_BF16 || dt == DT_I8 || dt == DT_F32; }

DType isa_mxm_acc_dtype(DType dt) { return dt == DT_I8 ? DT_I32 : DT_F32; }

int isa_mxm_rows_per_cycle(DType dt) { return dt == DT_I8 ? 4 : dt == DT_F32 ? 1 : 2; }

int isa_mxm_row_vectors(DType dt, int vector_bytes) {
  int bytes = ISA_MXM_COLS * ir_dtype_bytes[isa_mxm_acc_dtype(dt)];
  return (bytes + vector_bytes - 1) / vector_bytes;
}

int64_t isa_mxm_cycles(DType dt, uint32_t rows) {
  int q = isa_mxm_rows_per_cycle(dt);
  return MAX(1, ((int64_t)rows + q - 1) / q);
}

int64_t isa_mxm_install_vectors(const Instr *in, int vector_bytes) {
  if (in->op == OPC_MXLWT) return in->c;
  int64_t per = isa_elems_per_vector((DType)in->dtype, vector_bytes);
  return (int64_t)in->c * (((int64_t)in->d + per - 1) / per);
}

int64_t isa_mxm_install_cycles(const Instr *in, int vector_bytes) {
  int64_t v = isa_mxm_install_vectors(in, vector_bytes);
  return MAX(1, (v + ISA_MXM_INSTALL_VECTORS_PER_CYCLE - 1) / ISA_MXM_INSTALL_VECTORS_PER_CYCLE);
}

// Vectors of dtype dt that n elements fill.
static int64_t vectors_for(DType dt, int vector_bytes, int64_t n) {
  int64_t per = isa_elems_per_vector(dt, vector_bytes);
  return (n + per - 1) / per;
}

int64_t isa_dst_vectors(const Instr *in, int vector_bytes) {
  DType dt = (DType)in->dtype;
  switch ((Opcode)in->op) {
  case OPC_VADD: case OPC_VMAX: case OPC_VSUB: case OPC_VMUL: case OPC_VDIV:
  case OPC_VADDS: case OPC_VSUBS: case OPC_VMULS: return in->d;
  case OPC_VRELU: case OPC_VMOV: case OPC_VEXP: case OPC_VERF: case OPC_VRSQRT: case OPC_VRECIP: return in->c;
  case OPC_VCVT: return vectors_for(dt, vector_bytes, in->c);
  case OPC_VRSUM: case OPC_VRMAX: return 1;
  case OPC_TRANS: return isa_elems_per_vector(dt, vector_bytes);
  case OPC_SXMOV: return vectors_for(dt, vector_bytes, (int64_t)in->port + in->d);
  default: return 0;
  }
}

int64_t isa_issue_cycles(const Instr *in, int vector_bytes) {
  DType dt = (DType)in->dtype;
  switch ((Opcode)in->op) {
  case OPC_WAIT: case OPC_RUNTIME_DESKEW: return MAX(1, (int64_t)in->a);
  case OPC_VRSUM: case OPC_VRMAX: return MAX(1, vectors_for(dt, vector_bytes, in->c));
  case OPC_MXM: case OPC_MXMA: return isa_mxm_cycles(dt, in->d);
  case OPC_TRANS: return (int64_t)in->port + isa_elems_per_vector(dt, vector_bytes);
  default: {
    int64_t n = isa_dst_vectors(in, vector_bytes);
    return n > 0 ? n : 1;
  }
  }
}

// ---- checking one instruction --------------------------------------------------

// Vectors an instruction reads or writes from address `at`, for range checks.
static bool range_ok(uint32_t at, uint64_t count, uint32_t sram) {
  return count <= sram && at <= sram - count;
}

IsaTarget isa_target(const Topology *t, int device) {
  return (IsaTarget){.nports = t->devices[device].nports,
                     .sram = (uint32_t)t->sram_vectors,
                     .vector_bytes = t->link.vector_bytes};
}

// Whether `count` rows of `width` vectors each, `pitch` vectors apart from
// vector `at` on, lie inside an SRAM of `sram` vectors (count >= 1).  In
// 64 bits: (2^32 - 1)^2 + 2^32 cannot overflow.
static bool strided_ok(uint32_t at, uint64_t count, uint64_t pitch, uint64_t width, uint32_t sram) {
  return range_ok(at, (count - 1) * pitch + width, sram);
}

// "VCVT of 1000 elements runs past the SRAM's 720896 vectors": false.
static bool past_sram(char *err, size_t n, const char *name, uint64_t count, const char *what, uint32_t sram) {
  snprintf(err, n, "%s of %llu %s runs past the SRAM's %u vectors", name, (unsigned long long)count, what, sram);
  return false;
}

// VADD VSUB VMUL VDIV VMAX: d vectors of a, b and c.  VADDS VSUBS VMULS:
// d vectors of a and b, one of c (its element 0 is the scalar).
static bool check_vector_binary(const Instr *in, uint32_t sram, bool scalar, char *err, size_t n) {
  const char *name = isa_opcodes[in->op].name;
  if (in->d == 0) return snprintf(err, n, "%s of 0 vectors", name), false;
  if (!range_ok(in->a, in->d, sram) || !range_ok(in->b, in->d, sram) || !range_ok(in->c, scalar ? 1 : in->d, sram))
    return past_sram(err, n, name, in->d, "vectors", sram);
  return true;
}

// VRELU VMOV VEXP VERF VRSQRT VRECIP: c vectors of a and b.  The
// transcendental ones refuse integers.
static bool check_vector_unary(const Instr *in, uint32_t sram, char *err, size_t n) {
  const char *name = isa_opcodes[in->op].name;
  bool float_only = in->op == OPC_VEXP || in->op == OPC_VERF || in->op == OPC_VRSQRT || in->op == OPC_VRECIP;
  if (float_only && (in->dtype == DT_I32 || in->dtype == DT_I8))
    return snprintf(err, n, "%s takes f32, f16 or bf16, not %s", name, ir_dtype_names[in->dtype]), false;
  if (in->c == 0) return snprintf(err, n, "%s of 0 vectors", name), false;
  if (!range_ok(in->a, in->c, sram) || !range_ok(in->b, in->c, sram)) return past_sram(err, n, name, in->c, "vectors", sram);
  return true;
}

// VCVT t, s, a, b, c: c elements, ceil(c / per(t)) vectors at a and
// ceil(c / per(s)) at b.
static bool check_vcvt(const Instr *in, uint32_t sram, int vector_bytes, char *err, size_t n) {
  if (in->c == 0) return snprintf(err, n, "VCVT of 0 elements"), false;
  uint64_t per_t = (uint64_t)isa_elems_per_vector((DType)in->dtype, vector_bytes);
  uint64_t per_s = (uint64_t)isa_elems_per_vector((DType)in->port, vector_bytes);
  if (!range_ok(in->a, (in->c + per_t - 1) / per_t, sram) || !range_ok(in->b, (in->c + per_s - 1) / per_s, sram))
    return past_sram(err, n, "VCVT", in->c, "elements", sram);
  return true;
}

// VRSUM VRMAX t, a, b, c: c elements of ceil(c / per(t)) vectors at b, one
// result vector at a.
static bool check_reduce(const Instr *in, uint32_t sram, int vector_bytes, char *err, size_t n) {
  const char *name = isa_opcodes[in->op].name;
  if (in->c == 0) return snprintf(err, n, "%s of 0 elements", name), false;
  uint64_t per = (uint64_t)isa_elems_per_vector((DType)in->dtype, vector_bytes);
  if (!range_ok(in->a, 1, sram) || !range_ok(in->b, (in->c + per - 1) / per, sram))
    return past_sram(err, n, name, in->c, "elements", sram);
  return true;
}

// What every instruction of the matrix unit shares: a dtype it multiplies
// and an existing weight buffer.
static bool check_mxm_common(const Instr *in, char *err, size_t n) {
  const char *name = isa_opcodes[in->op].name;
  if (!isa_mxm_dtype_ok((DType)in->dtype))
    return snprintf(err, n, "%s takes f16, bf16, i8 or f32, not %s", name, ir_dtype_names[in->dtype]), false;
  if (in->port >= ISA_MXM_BUFFERS)
    return snprintf(err, n, "%s weight buffer %u does not exist (the unit has %d)", name, in->port, ISA_MXM_BUFFERS), false;
  return true;
}

// MXLW t, w, a, b, c, d: c = kk rows (1 .. per(t)) of d = nn columns
// (1 .. ISA_MXM_COLS), row i at a + i b, ceil(nn / per(t)) vectors each.
// MXLWT t, w, a, b, c, d: c = nn rows (1 .. ISA_MXM_COLS) of one vector,
// row j at a + j b, its first d = kk (1 .. per(t)) elements used.
static bool check_install(const Instr *in, uint32_t sram, int vector_bytes, char *err, size_t n) {
  const char *name = isa_opcodes[in->op].name, *dt = ir_dtype_names[in->dtype];
  uint32_t per = (uint32_t)isa_elems_per_vector((DType)in->dtype, vector_bytes);
  bool transposed = in->op == OPC_MXLWT;
  uint32_t kk = transposed ? in->d : in->c, nn = transposed ? in->c : in->d;
  if (in->c == 0) return snprintf(err, n, "%s of 0 rows", name), false;
  if (transposed && nn > ISA_MXM_COLS)
    return snprintf(err, n, "%s of %u rows: a tile has %d columns", name, nn, ISA_MXM_COLS), false;
  if (!transposed && kk > per) return snprintf(err, n, "%s of %u rows: a %s tile has %u", name, kk, dt, per), false;
  if (transposed && kk == 0) return snprintf(err, n, "%s of 0 elements a row", name), false;
  if (transposed && kk > per)
    return snprintf(err, n, "%s of %u elements a row: a %s tile has %u rows", name, kk, dt, per), false;
  if (!transposed && nn == 0) return snprintf(err, n, "%s of 0 columns", name), false;
  if (!transposed && nn > ISA_MXM_COLS)
    return snprintf(err, n, "%s of %u columns: a tile has %d", name, nn, ISA_MXM_COLS), false;
  if (in->b == 0) return snprintf(err, n, "%s pitch 0: rows must be at least 1 vector apart", name), false;
  uint64_t width = transposed ? 1 : (nn + per - 1) / per;
  if (!strided_ok(in->a, in->c, in->b, width, sram)) return past_sram(err, n, name, in->c, "rows", sram);
  return true;
}

// MXM MXMA t, w, a, b, c, d: d rows, row r's activation one vector at
// b + r c, its result isa_mxm_row_vectors vectors at a + r R.
static bool check_mxm(const Instr *in, uint32_t sram, int vector_bytes, char *err, size_t n) {
  const char *name = isa_opcodes[in->op].name;
  if (in->d == 0) return snprintf(err, n, "%s of 0 rows", name), false;
  if (in->c == 0) return snprintf(err, n, "%s pitch 0: rows must be at least 1 vector apart", name), false;
  uint64_t out = (uint64_t)in->d * (uint64_t)isa_mxm_row_vectors((DType)in->dtype, vector_bytes);
  if (!range_ok(in->a, out, sram) || !strided_ok(in->b, in->d, in->c, 1, sram))
    return past_sram(err, n, name, in->d, "rows", sram);
  return true;
}

// TRANS t, n, a, b, c, d: n rows (1 .. per(t)) at b + i c; per(t) vectors
// at a + j d.
static bool check_trans(const Instr *in, uint32_t sram, int vector_bytes, char *err, size_t n) {
  uint32_t per = (uint32_t)isa_elems_per_vector((DType)in->dtype, vector_bytes);
  if (in->port == 0) return snprintf(err, n, "TRANS of 0 rows"), false;
  if (in->port > per)
    return snprintf(err, n, "TRANS of %u rows: a %s tile has %u", in->port, ir_dtype_names[in->dtype], per), false;
  if (!strided_ok(in->b, in->port, in->c, 1, sram) || !strided_ok(in->a, per, in->d, 1, sram))
    return past_sram(err, n, "TRANS", in->port, "rows", sram);
  return true;
}

// SXMOV t, n, a, b, c, d: d elements from element c counted from vector b,
// into vector a from lane n (n < per(t)).
static bool check_sxmov(const Instr *in, uint32_t sram, int vector_bytes, char *err, size_t n) {
  uint64_t per = (uint64_t)isa_elems_per_vector((DType)in->dtype, vector_bytes);
  if (in->d == 0) return snprintf(err, n, "SXMOV of 0 elements"), false;
  if (in->port >= per)
    return snprintf(err, n, "SXMOV lane %u does not exist (a %s vector has %llu)", in->port, ir_dtype_names[in->dtype],
                    (unsigned long long)per), false;
  uint64_t src = ((uint64_t)in->c + in->d + per - 1) / per, dst = ((uint64_t)in->port + in->d + per - 1) / per;
  if (!range_ok(in->b, src, sram) || !range_ok(in->a, dst, sram)) return past_sram(err, n, "SXMOV", in->d, "elements", sram);
  return true;
}

// The operand checks of each opcode (docs/isa.md section 2).
static bool check_operands(const Instr *in, const IsaTarget *t, char *err, size_t n) {
  const char *name = isa_opcodes[in->op].name;
  int nports = t->nports, vb = t->vector_bytes;
  uint32_t sram = t->sram;
  switch ((Opcode)in->op) {
  case OPC_WAIT:
    if (in->a == 0) return snprintf(err, n, "WAIT needs at least 1 cycle"), false;
    return true;
  case OPC_SEND:
  case OPC_RECV:
    if (in->port >= nports) return snprintf(err, n, "port %u does not exist (the device has %d)", in->port, nports), false;
    if (in->b == 0) return snprintf(err, n, "%s of 0 vectors", name), false;
    if (!range_ok(in->a, in->b, sram))
      return snprintf(err, n, "%s of %u vectors at %u runs past the SRAM's %u vectors", name, in->b, in->a, sram), false;
    return true;
  case OPC_VADD: case OPC_VMAX: case OPC_VSUB: case OPC_VMUL: case OPC_VDIV:
    return check_vector_binary(in, sram, false, err, n);
  case OPC_VADDS: case OPC_VSUBS: case OPC_VMULS: return check_vector_binary(in, sram, true, err, n);
  case OPC_VRELU: case OPC_VMOV: case OPC_VEXP: case OPC_VERF: case OPC_VRSQRT: case OPC_VRECIP:
    return check_vector_unary(in, sram, err, n);
  case OPC_VCVT: return check_vcvt(in, sram, vb, err, n);
  case OPC_VRSUM: case OPC_VRMAX: return check_reduce(in, sram, vb, err, n);
  case OPC_MXLW: case OPC_MXLWT: return check_mxm_common(in, err, n) && check_install(in, sram, vb, err, n);
  case OPC_MXM: case OPC_MXMA: return check_mxm_common(in, err, n) && check_mxm(in, sram, vb, err, n);
  case OPC_TRANS: return check_trans(in, sram, vb, err, n);
  case OPC_SXMOV: return check_sxmov(in, sram, vb, err, n);
  case OPC_TRANSMIT:
  case OPC_POLL:
    if (in->port >= nports) return snprintf(err, n, "port %u does not exist (the device has %d)", in->port, nports), false;
    return true;
  default: return true;
  }
}

// A dtype operand (t, or VCVT's source s in the port field): known, and
// whole elements of it fill a vector.
static bool check_dtype(unsigned dt, int vector_bytes, char *err, size_t errlen) {
  if (dt >= DT_COUNT) return snprintf(err, errlen, "unknown dtype %u", dt), false;
  if (vector_bytes % ir_dtype_bytes[dt])
    return snprintf(err, errlen, "a %d-byte vector does not hold whole %s elements", vector_bytes, ir_dtype_names[dt]), false;
  return true;
}

bool isa_check(const Instr *in, const IsaTarget *t, UnitKind kind, int port, char *err,
               size_t errlen) {
  if (in->op >= OPC_COUNT) return snprintf(err, errlen, "unknown opcode %u", in->op), false;
  const OpcodeInfo *info = &isa_opcodes[in->op];
  char unit[32];
  isa_unit_format(unit, sizeof unit, kind, port);
  if (!(info->units & (1u << kind)))
    return snprintf(err, errlen, "%s cannot run on unit %s", info->name, unit), false;
  if (strchr(info->operands, 't') && !check_dtype(in->dtype, t->vector_bytes, err, errlen)) return false;
  if (strchr(info->operands, 's') && !check_dtype(in->port, t->vector_bytes, err, errlen)) return false;
  if (kind == UNIT_C2C && strchr(info->operands, 'p') && in->port != port)
    return snprintf(err, errlen, "%s names port %u, but runs on unit %s", info->name, in->port, unit), false;
  return check_operands(in, t, err, errlen);
}

bool isa_check_record(const DataRecord *r, const IsaTarget *t, char *err, size_t errlen) {
  if (r->kind != REC_INIT && r->kind != REC_EXPECT)
    return snprintf(err, errlen, "unknown record kind %d", r->kind), false;
  if (r->dtype >= DT_COUNT) return snprintf(err, errlen, "unknown dtype %d", r->dtype), false;
  if (t->vector_bytes % ir_dtype_bytes[r->dtype])
    return snprintf(err, errlen, "a %d-byte vector does not hold whole %s elements", t->vector_bytes,
                    ir_dtype_names[r->dtype]), false;
  if (r->nvec == 0) return snprintf(err, errlen, "a record of 0 vectors"), false;
  if (!range_ok(r->addr, r->nvec, t->sram))
    return snprintf(err, errlen, "%u vectors at %u run past the SRAM's %u vectors", r->nvec, r->addr, t->sram), false;
  return true;
}

bool isa_check_shard(const TensorHome *th, char *err, size_t errlen) {
  for (int d = 0; d < th->shape.rank; d++)
    if (th->start[d] < 0 || th->start[d] > INT32_MAX - th->shape.dim[d]) {
      char start[IR_TYPE_STR_MAX], shape[IR_TYPE_STR_MAX];
      ir_format_index(start, sizeof start, th->start, th->shape.rank);
      ir_format_index(shape, sizeof shape, th->shape.dim, th->shape.rank);
      return snprintf(err, errlen, "tensor '%s' shard %s + %s runs past the largest dimension (%d)", th->name, start,
                      shape, INT32_MAX), false;
    }
  return true;
}

// ---- printing ---------------------------------------------------------------------

void isa_format(char *dst, size_t n, const Instr *in) {
  const OpcodeInfo *info = &isa_opcodes[in->op];
  size_t at = (size_t)snprintf(dst, n, "%s", info->name);
  for (const char *f = info->operands; *f && at < n; f++) {
    const char *sep = f == info->operands ? " " : ", ";
    switch (*f) {
    case 'p':
    case 'w':
    case 'n': at += (size_t)snprintf(dst + at, n - at, "%s%u", sep, in->port); break;
    case 's': at += (size_t)snprintf(dst + at, n - at, "%s%s", sep, in->port < DT_COUNT ? ir_dtype_names[in->port] : "?"); break;
    case 't': at += (size_t)snprintf(dst + at, n - at, "%s%s", sep, in->dtype < DT_COUNT ? ir_dtype_names[in->dtype] : "?"); break;
    case 'a': at += (size_t)snprintf(dst + at, n - at, "%s%u", sep, in->a); break;
    case 'b': at += (size_t)snprintf(dst + at, n - at, "%s%u", sep, in->b); break;
    case 'c': at += (size_t)snprintf(dst + at, n - at, "%s%u", sep, in->c); break;
    case 'd': at += (size_t)snprintf(dst + at, n - at, "%s%u", sep, in->d); break;
    }
  }
}

static void print_record(const DataRecord *r, FILE *out) {
  fprintf(out, "%s %u, %s, %u, iota(%.17g, %.17g)\n", r->kind == REC_INIT ? ".init" : ".expect",
          r->addr, ir_dtype_names[r->dtype], r->nvec, r->a, r->b);
}

void isa_print_tensor(const TensorHome *th, FILE *out) {
  char shape[IR_TYPE_STR_MAX];
  ir_format_index(shape, sizeof shape, th->shape.dim, th->shape.rank);
  fprintf(out, ".tensor %s, %u, %s, %s", th->name, th->addr, ir_dtype_names[th->dtype], shape);
  if (th->pitch) fprintf(out, ", pitch %u", th->pitch);
  if (th->is_shard) {
    char start[IR_TYPE_STR_MAX];
    ir_format_index(start, sizeof start, th->start, th->shape.rank);
    fprintf(out, ", start %s", start);
  }
  if (th->batch) fprintf(out, ", batch %d", th->batch);
  fputc('\n', out);
}

static void print_instr(const Instr *in, const InstrNote *n, FILE *out) {
  char text[128];
  isa_format(text, sizeof text, in);
  if (n && n->note && n->at >= 0)  // the compiler's annotation: schedule cycle, then what it serves
    fprintf(out, "  %-*s ; @%lld %s\n", ISA_LISTING_COLUMN, text, (long long)n->at, n->note);
  else if (n && n->note)
    fprintf(out, "  %-*s ; %s\n", ISA_LISTING_COLUMN, text, n->note);
  else
    fprintf(out, "  %s\n", text);
}

void isa_print_device_source(const DeviceProgram *dp, int ndevices, const SrcFile *src, FILE *out) {
  fprintf(out, "; device %d of %d\n.device %d\n", dp->device, ndevices, dp->device);
  for (int i = 0; i < dp->records.len; i++) print_record(&dp->records.data[i], out);
  for (int u = 0; u < dp->units.len; u++) {
    const UnitProgram *up = &dp->units.data[u];
    char name[32];
    isa_unit_format(name, sizeof name, up->kind, up->port);
    fprintf(out, ".unit %s\n", name);
    int shown = 0;  // the .tg line quoted last in this unit
    for (int i = 0; i < up->code.len; i++) {
      const InstrNote *n = ir_instr_note(up, i);
      if (src && n && n->note && n->line > 0 && n->line != shown) {
        int len;
        const char *text = src_line(src, n->line, &len);
        fprintf(out, "; %s:%d: %.*s\n", src->path, n->line, len, text);
        shown = n->line;
      }
      print_instr(&up->code.data[i], n, out);
    }
  }
}

bool ir_program_verify(const Program *p, char *err, size_t errlen) {
  for (int v = 0; v < p->ndevices; v++)
    for (int u = 0; u < p->devices[v].units.len; u++) {
      const UnitProgram *up = &p->devices[v].units.data[u];
      if (!up->notes.len || up->notes.len == up->code.len) continue;
      snprintf(err, errlen, "device %d unit %d has %d notes for its %d instructions (none, or one each)", v, u,
               up->notes.len, up->code.len);
      return false;
    }
  return true;
}

void isa_print_device(const DeviceProgram *dp, int ndevices, FILE *out) {
  isa_print_device_source(dp, ndevices, NULL, out);
}
