// numeric.c: the element arithmetic of the emulator's vector (VXM) and
// matrix (MXM) units, and the f16 / bf16 conversions beneath it.
//
// The runtime layer (runtime/emu.h): emu.c calls num_vbinary, num_vscalar,
// num_vunary, num_convert, the num_reduce_* functions and the matrix
// unit's num_mxm_* on vectors it holds in SRAM, and num_get / num_set to
// place INIT data and check EXPECT data element by element.  docs/isa.md
// section 2 is the contract each function implements.
//
// Every element is stored little-endian whatever the host, and read and
// written a byte at a time, so nothing here depends on host byte order or
// alignment.  Rounding is IEEE 754 round-to-nearest-even throughout:
//
//   f32 -> f16, bf16    bit manipulation below (no _Float16), overflow goes
//                       to infinity, NaN stays NaN (made quiet);
//   double -> f32       the C conversion, which is IEEE rounding under
//                       C11 Annex F (GCC and Clang on every target we run);
//   double -> f16, bf16 through f32 rounded to odd, so the result is the
//                       one direct rounding of the double would give.
//
// Integers wrap in two's complement: results are computed exactly in
// int64 (which cannot overflow for i32 and i8 operands) and reduced modulo
// 2^32 or 2^8 by conversion to unsigned, which C defines, so no signed
// overflow ever happens.  How the MXM sums is said in the matrix unit
// section at the end (seed 002 s5.2: a [1 x K] x [K x 320] sub-operation).
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "emu.h"

// ---- IEEE binary32 fields ---------------------------------------------------

#define F32_SIGN 0x80000000u
#define F32_ABS 0x7fffffffu  // everything but the sign
#define F32_INF 0x7f800000u  // exponent all ones, mantissa zero
#define F32_MANT_BITS 23
#define F32_EXP_BIAS 127

// ---- IEEE binary16 (f16): 1 sign, 5 exponent, 10 mantissa bits -------------

#define F16_SIGN 0x8000u
#define F16_SIGN_SHIFT 16   // the f32 sign bit is this far above
#define F16_EXP_MASK 0x1fu  // the exponent field, shifted down
#define F16_MANT_MASK 0x3ffu
#define F16_MANT_BITS 10
#define F16_EXP_BIAS 15
#define F16_INF 0x7c00u
#define F16_QUIET 0x0200u         // the top mantissa bit: a quiet NaN
#define F16_IMPLICIT_ONE 0x0400u  // the hidden bit, just above the mantissa
// f32 and f16 mantissas differ by this many bits.
#define F16_MANT_SHIFT (F32_MANT_BITS - F16_MANT_BITS)
// An f16 biased exponent plus this is the f32 biased exponent.
#define F16_TO_F32_BIAS (F32_EXP_BIAS - F16_EXP_BIAS)
// |x| (as f32 bits) from which x rounds to f16 infinity: 65520, halfway
// between the largest f16 (65504) and 2^16; the tie goes up to the even
// significand, 2^16, which is infinity.
#define F16_OVERFLOW_F32 0x477ff000u
// The smallest normal f16, 2^-14, as f32 bits: below it f16 is subnormal.
#define F16_MIN_NORMAL_F32 0x38800000u
// 2^-25, half the smallest f16 subnormal, as f32 bits: |x| up to and
// including it rounds to zero (the tie goes to the even significand, 0).
#define F16_HALF_MIN_SUB_F32 0x33000000u
// f16 subnormals count in units of 2^-24.  A 24-bit f32 significand m
// (implicit one included) with biased exponent e is m * 2^(e - 150) =
// (m >> (126 - e)) units of 2^-24, plus a remainder.
#define F16_SUBNORMAL_SHIFT_BASE 126

// ---- bfloat16: the top half of an f32 --------------------------------------

#define BF16_SHIFT 16                  // bf16 bits are f32 bits >> 16
#define BF16_QUIET 0x0040u             // the top mantissa bit: a quiet NaN
#define BF16_HALF_ULP_MINUS_1 0x7fffu  // rounding bias before the tie bit

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// f16 -> f32 is exact: every f16 value is an f32 value.
float num_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & F16_SIGN) << F16_SIGN_SHIFT;
  uint32_t exp = (h >> F16_MANT_BITS) & F16_EXP_MASK;
  uint32_t mant = h & F16_MANT_MASK;
  if (exp == F16_EXP_MASK)  // infinity, or NaN with its payload kept
    return f32_from_bits(sign | F32_INF | (mant << F16_MANT_SHIFT));
  if (exp != 0)  // normal: rebias the exponent, widen the mantissa
    return f32_from_bits(sign | ((exp + F16_TO_F32_BIAS) << F32_MANT_BITS) |
                         (mant << F16_MANT_SHIFT));
  if (mant == 0) return f32_from_bits(sign);  // +-0
  // Subnormal: mant * 2^-24.  Shift the leading one up to the implicit bit,
  // lowering the exponent from that of 2^-14 (the subnormal scale) each step.
  uint32_t f32_exp = 1 + F16_TO_F32_BIAS;  // f16 subnormals share exponent 1's scale
  while (!(mant & F16_IMPLICIT_ONE)) {
    mant <<= 1;
    f32_exp--;
  }
  return f32_from_bits(sign | (f32_exp << F32_MANT_BITS) |
                       ((mant & F16_MANT_MASK) << F16_MANT_SHIFT));
}

// Rounds `kept` (the truncated result) up by one when the dropped bits
// `rem` exceed half a unit `half`, or equal it and `kept` is odd.
static uint32_t round_nearest_even(uint32_t kept, uint32_t rem, uint32_t half) {
  return kept + (rem > half || (rem == half && (kept & 1)));
}

// f32 -> f16, round to nearest even.
uint16_t num_f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint16_t sign = (uint16_t)((x & F32_SIGN) >> F16_SIGN_SHIFT);
  uint32_t absx = x & F32_ABS;
  if (absx > F32_INF)  // NaN: keep the payload's top bits, force quiet
    return sign | F16_INF | F16_QUIET | (uint16_t)((absx >> F16_MANT_SHIFT) & F16_MANT_MASK);
  if (absx >= F16_OVERFLOW_F32) return sign | F16_INF;  // infinity too
  if (absx >= F16_MIN_NORMAL_F32) {
    // Normal: exponent and mantissa move down together, so a mantissa
    // that rounds up past all ones carries into the exponent correctly.
    uint32_t kept = (absx >> F16_MANT_SHIFT) - ((uint32_t)F16_TO_F32_BIAS << F16_MANT_BITS);
    uint32_t rem = absx & ((1u << F16_MANT_SHIFT) - 1);
    return sign | (uint16_t)round_nearest_even(kept, rem, 1u << (F16_MANT_SHIFT - 1));
  }
  if (absx <= F16_HALF_MIN_SUB_F32) return sign;  // rounds to +-0
  // Subnormal (or rounds up to the smallest normal, 0x0400, which the
  // carry produces by itself).
  uint32_t exp = absx >> F32_MANT_BITS;
  uint32_t mant = (absx & ((1u << F32_MANT_BITS) - 1)) | (1u << F32_MANT_BITS);
  uint32_t shift = F16_SUBNORMAL_SHIFT_BASE - exp;  // 14 .. 24 here
  uint32_t kept = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1);
  return sign | (uint16_t)round_nearest_even(kept, rem, 1u << (shift - 1));
}

// bf16 -> f32 is exact: bf16 is the top half of an f32.
float num_bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << BF16_SHIFT); }

// f32 -> bf16, round to nearest even.  Adding half a unit less one, plus
// the bit that becomes the last kept one, rounds ties to even; the carry
// runs into the exponent and past the largest finite value to infinity.
uint16_t num_f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & F32_ABS) > F32_INF) return (uint16_t)(x >> BF16_SHIFT) | BF16_QUIET;  // NaN
  uint32_t lsb = (x >> BF16_SHIFT) & 1;
  return (uint16_t)((x + BF16_HALF_ULP_MINUS_1 + lsb) >> BF16_SHIFT);
}

// ---- rounding doubles ------------------------------------------------------

// v rounded to f32 "to odd": when inexact, the neighbour of the two f32
// values around v whose last significand bit is 1.  Rounding that to f16 or
// bf16 (at least two bits narrower) then gives the same result as rounding
// v directly (Boldo and Melquiond, "Emulation of FMA and correctly rounded
// sums: proved algorithms using rounding to odd", 2008); plain nearest-even
// to f32 first could land exactly on an f16 tie that v was not on.
static float f32_round_to_odd(double v) {
  float f = (float)v;  // nearest even; beyond the f32 range, +-infinity
  if ((double)f == v || isnan(v) || (f32_bits(f) & 1)) return f;
  return nextafterf(f, v > (double)f ? INFINITY : -INFINITY);
}

// The wrap of v's integer part modulo 2^bits (bits <= 32), as the unsigned
// pattern to store.  NaN and +-infinity, which have no integer part, store 0.
static uint32_t wrap_integer(double v, int bits) {
  if (!isfinite(v)) return 0;
  double modulus = ldexp(1.0, bits);
  double r = fmod(trunc(v), modulus);  // exact; in (-modulus, modulus)
  if (r < 0) r += modulus;             // exact; in [0, modulus)
  return (uint32_t)r;
}

// Two's complement reinterpretations, without implementation-defined casts:
// a pattern with the sign bit set stands for itself minus 2^bits.
#define I32_SIGN_BIT 0x80000000u
#define I32_MODULUS ((int64_t)1 << 32)
#define I8_SIGN_BIT 0x80u
#define I8_MODULUS (1 << 8)

static int64_t i32_from_bits(uint32_t u) {
  return u & I32_SIGN_BIT ? (int64_t)u - I32_MODULUS : (int64_t)u;
}

static int i8_from_bits(uint8_t u) { return u & I8_SIGN_BIT ? (int)u - I8_MODULUS : (int)u; }

// ---- little-endian element access ------------------------------------------

static uint16_t load_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t load_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static void store_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < (int)sizeof v; i++) p[i] = (uint8_t)(v >> (CHAR_BIT * i));
}

static int elem_bytes(DType dt) {
  if ((unsigned)dt >= DT_COUNT) die("numeric: bad dtype %d", (int)dt);
  return ir_dtype_bytes[dt];
}

// Where element i starts in a vector of dt.
static size_t elem_offset(DType dt, int i) { return (size_t)elem_bytes(dt) * (size_t)i; }

static bool is_float(DType dt) { return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16; }

// Element i of a float vector, widened exactly to float.
static float load_float(DType dt, const uint8_t *vec, int i) {
  switch (dt) {
    case DT_F32: return f32_from_bits(load_u32(vec + elem_offset(dt, i)));
    case DT_F16: return num_f16_to_f32(load_u16(vec + elem_offset(dt, i)));
    case DT_BF16: return num_bf16_to_f32(load_u16(vec + elem_offset(dt, i)));
    default: die("numeric: dtype %d is not a float dtype", (int)dt);
  }
}

// Stores float f as element i, rounded to nearest even into dt.
static void store_float(DType dt, uint8_t *vec, int i, float f) {
  switch (dt) {
    case DT_F32: store_u32(vec + elem_offset(dt, i), f32_bits(f)); return;
    case DT_F16: store_u16(vec + elem_offset(dt, i), num_f32_to_f16(f)); return;
    case DT_BF16: store_u16(vec + elem_offset(dt, i), num_f32_to_bf16(f)); return;
    default: die("numeric: dtype %d is not a float dtype", (int)dt);
  }
}

// Element i of an integer vector, sign-extended.
static int64_t load_int(DType dt, const uint8_t *vec, int i) {
  switch (dt) {
    case DT_I32: return i32_from_bits(load_u32(vec + elem_offset(dt, i)));
    case DT_I8: return i8_from_bits(vec[i]);
    default: die("numeric: dtype %d is not an integer dtype", (int)dt);
  }
}

// Stores the low bits of an unsigned pattern as integer element i.
static void store_int_bits(DType dt, uint8_t *vec, int i, uint32_t bits) {
  switch (dt) {
    case DT_I32: store_u32(vec + elem_offset(dt, i), bits); return;
    case DT_I8: vec[i] = (uint8_t)bits; return;
    default: die("numeric: dtype %d is not an integer dtype", (int)dt);
  }
}

double num_get(DType dt, const uint8_t *vec, int i) {
  return is_float(dt) ? (double)load_float(dt, vec, i) : (double)load_int(dt, vec, i);
}

// Floats round to nearest even (f32 directly; f16 and bf16 as one rounding
// of v, see f32_round_to_odd); beyond the range they become +-infinity and
// NaN stays NaN.  Integers take v's integer part (truncation toward zero)
// wrapped modulo 2^32 or 2^8, as two's complement: 128.7 -> i8 -128,
// -1.5 -> -1, 2^32 + 5 -> i32 5.  NaN and +-infinity store 0.
void num_set(DType dt, uint8_t *vec, int i, double v) {
  switch (dt) {
    case DT_F32: store_float(dt, vec, i, (float)v); return;
    case DT_F16:
    case DT_BF16: store_float(dt, vec, i, f32_round_to_odd(v)); return;
    case DT_I32: store_int_bits(dt, vec, i, wrap_integer(v, 32)); return;
    case DT_I8: store_int_bits(dt, vec, i, wrap_integer(v, 8)); return;
    default: die("numeric: bad dtype %d", (int)dt);
  }
}

// f32 on a little-endian host is the float's own bytes: a loop the compiler
// vectorises (a conversion and a store a few elements at a time).
void num_set_all(DType dt, uint8_t *out, const double *v, int64_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (dt == DT_F32) {
    for (int64_t k = 0; k < n; k++) {
      float f = (float)v[k];
      memcpy(out + 4 * k, &f, sizeof f);
    }
    return;
  }
#endif
  int size = elem_bytes(dt);
  for (int64_t k = 0; k < n; k++) num_set(dt, out + k * size, 0, v[k]);
}

// The least magnitude a float dtype rounds to infinity: its largest finite
// value plus half an ulp, (2 - 2^-(m+1)) x 2^emax for m mantissa bits
// (65520 for f16; ties go to the even significand, 2^(emax+1)).  Integers
// never round to infinity: +inf.
double num_overflow_bound(DType dt) {
  switch (dt) {
    case DT_F32: return ldexp(2 - ldexp(1, -(F32_MANT_BITS + 1)), F32_EXP_BIAS);
    case DT_F16: return ldexp(2 - ldexp(1, -(F16_MANT_BITS + 1)), F16_EXP_BIAS);
    case DT_BF16: return ldexp(2 - ldexp(1, -(F32_MANT_BITS - BF16_SHIFT + 1)), F32_EXP_BIAS);
    default: return INFINITY;
  }
}

// ---- vector unit -------------------------------------------------------------

// The IEEE 754-2019 maximum: NaN if either is NaN (a's first), else the
// larger, with +0 above -0.
static float float_max(float a, float b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? b : a;  // only +-0 differ here
  return a > b ? a : b;
}

static int64_t int_max(int64_t a, int64_t b) { return a > b ? a : b; }

// One f32 operation of the vector unit, IEEE, rounded to f32 (each
// operation a separate expression: no contraction into an FMA).
static float float_binary(NumBinaryOp op, float x, float y) {
  switch (op) {
  case NUM_ADD: return x + y;
  case NUM_SUB: return x - y;
  case NUM_MUL: return x * y;
  case NUM_DIV: return x / y;
  case NUM_MAX: return float_max(x, y);
  }
  unreachable();
}

// One integer operation, exact in int64 (i32 operands cannot overflow it),
// wrapped when stored.  Division truncates toward zero; x / 0 = 0, and
// MIN / -1 = -MIN, which wraps back to MIN.
static int64_t int_binary(NumBinaryOp op, int64_t x, int64_t y) {
  switch (op) {
  case NUM_ADD: return x + y;
  case NUM_SUB: return x - y;
  case NUM_MUL: return x * y;
  case NUM_DIV: return y == 0 ? 0 : x / y;
  case NUM_MAX: return int_max(x, y);
  }
  unreachable();
}

// The f32 fast path of the arithmetic ops: on a little-endian host an f32
// element's bytes are the host float's, so whole vectors are copied into
// float arrays and combined in one loop the compiler vectorises (the same
// IEEE operations, one rounding each, as float_binary).  NUM_MAX keeps the
// element loop for its NaN and signed-zero rules.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NUM_HOST_LITTLE_ENDIAN 1
#else
#define NUM_HOST_LITTLE_ENDIAN 0
#endif

static bool f32_fast(NumBinaryOp op, DType dt) { return NUM_HOST_LITTLE_ENDIAN && dt == DT_F32 && op != NUM_MAX; }

// Element i of an f32 vector in host order (the fast path's loads and stores).
static float f32_at(const uint8_t *v, int i) {
  float f;
  memcpy(&f, v + 4 * i, sizeof f);
  return f;
}

static void f32_put(uint8_t *v, int i, float f) { memcpy(v + 4 * i, &f, sizeof f); }

// Each element is read before it is written, so dst may alias a or b (a
// scalar is copied out first).
static void f32_binary(NumBinaryOp op, uint8_t *dst, const uint8_t *a, const uint8_t *b, bool scalar, int n) {
  uint8_t s[4];
  memcpy(s, b, sizeof s);
  int step = scalar ? 0 : 1;  // b's element i is element i * step
  if (scalar) b = s;
  switch (op) {
  case NUM_ADD: for (int i = 0; i < n; i++) f32_put(dst, i, f32_at(a, i) + f32_at(b, i * step)); break;
  case NUM_SUB: for (int i = 0; i < n; i++) f32_put(dst, i, f32_at(a, i) - f32_at(b, i * step)); break;
  case NUM_MUL: for (int i = 0; i < n; i++) f32_put(dst, i, f32_at(a, i) * f32_at(b, i * step)); break;
  case NUM_DIV: for (int i = 0; i < n; i++) f32_put(dst, i, f32_at(a, i) / f32_at(b, i * step)); break;
  case NUM_MAX: unreachable();
  }
}

// dst[i] = a[i] op b[i] (or op s, s = element 0 of b, when `scalar`).
// Each element is read before it is written, so dst may alias a or b.
static void vector_binary(NumBinaryOp op, DType dt, uint8_t *dst, const uint8_t *a, const uint8_t *b,
                          bool scalar, int vector_bytes) {
  int n = vector_bytes / elem_bytes(dt);
  if (f32_fast(op, dt)) {
    f32_binary(op, dst, a, b, scalar, n);
    return;
  }
  if (is_float(dt)) {
    float s = load_float(dt, b, 0);
    for (int i = 0; i < n; i++)
      store_float(dt, dst, i, float_binary(op, load_float(dt, a, i), scalar ? s : load_float(dt, b, i)));
  } else {
    int64_t s = load_int(dt, b, 0);
    for (int i = 0; i < n; i++)
      store_int_bits(dt, dst, i, (uint32_t)(uint64_t)int_binary(op, load_int(dt, a, i), scalar ? s : load_int(dt, b, i)));
  }
}

// The element-wise forms: b a vector, or its element 0 a scalar.
void num_vbinary(NumBinaryOp op, DType dt, uint8_t *dst, const uint8_t *a, const uint8_t *b, int vector_bytes) {
  vector_binary(op, dt, dst, a, b, false, vector_bytes);
}

void num_vscalar(NumBinaryOp op, DType dt, uint8_t *dst, const uint8_t *a, const uint8_t *s, int vector_bytes) {
  vector_binary(op, dt, dst, a, s, true, vector_bytes);
}

// The first vector unit's three ops, kept by name for their callers.
void num_vadd(DType dt, uint8_t *dst, const uint8_t *a, const uint8_t *b, int vector_bytes) {
  vector_binary(NUM_ADD, dt, dst, a, b, false, vector_bytes);
}

void num_vmax(DType dt, uint8_t *dst, const uint8_t *a, const uint8_t *b, int vector_bytes) {
  vector_binary(NUM_MAX, dt, dst, a, b, false, vector_bytes);
}

// exp, erf, 1/sqrt and 1/x of libm in double, from the f32 value.
static double double_unary(NumUnaryOp op, double x) {
  switch (op) {
  case NUM_EXP: return exp(x);
  case NUM_ERF: return erf(x);
  case NUM_RSQRT: return 1.0 / sqrt(x);
  case NUM_RECIP: return 1.0 / x;
  case NUM_RELU: break;
  }
  unreachable();
}

// RELU: max(a, 0), negatives and -0 become +0, NaN stays NaN; integers too.
// The others (floats only): computed in double, rounded once into dt.
void num_vunary(NumUnaryOp op, DType dt, uint8_t *dst, const uint8_t *a, int vector_bytes) {
  int n = vector_bytes / elem_bytes(dt);
  for (int i = 0; i < n; i++) {
    if (op == NUM_RELU && is_float(dt))
      store_float(dt, dst, i, float_max(load_float(dt, a, i), 0.0f));
    else if (op == NUM_RELU)
      store_int_bits(dt, dst, i, (uint32_t)(uint64_t)int_max(load_int(dt, a, i), 0));
    else if (is_float(dt))
      num_set(dt, dst, i, double_unary(op, (double)load_float(dt, a, i)));
    else
      die("numeric: %s has no transcendental functions", ir_dtype_names[dt]);
  }
}

void num_vrelu(DType dt, uint8_t *dst, const uint8_t *a, int vector_bytes) {
  num_vunary(NUM_RELU, dt, dst, a, vector_bytes);
}

// ---- conversions (VCVT) ------------------------------------------------------

#define I32_MIN_VALUE (-2147483648.0)
#define I32_MAX_VALUE 2147483647.0
#define I8_MIN_VALUE (-128.0)
#define I8_MAX_VALUE 127.0

// A float to an integer dtype: nearest, ties to even (nearbyint in the
// default rounding mode), saturated to the dtype's range; NaN is 0.
static double float_to_int_value(DType to, double v) {
  if (isnan(v)) return 0;
  double lo = to == DT_I32 ? I32_MIN_VALUE : I8_MIN_VALUE, hi = to == DT_I32 ? I32_MAX_VALUE : I8_MAX_VALUE;
  return fmin(fmax(nearbyint(v), lo), hi);
}

// Element j of src (dtype from) into element i of dst (dtype to).  The
// same dtype copies the bytes; float -> float and int -> float round once
// to nearest even; float -> int rounds to nearest even and saturates; int
// -> int wraps.
void num_convert(DType to, uint8_t *dst, int i, DType from, const uint8_t *src, int j) {
  if (to == from) {
    memcpy(dst + elem_offset(to, i), src + elem_offset(from, j), (size_t)elem_bytes(to));
    return;
  }
  double v = num_get(from, src, j);  // exact: every element is a double
  if (is_float(from) && !is_float(to)) v = float_to_int_value(to, v);
  num_set(to, dst, i, v);
}

// ---- reductions (VRSUM, VRMAX) ---------------------------------------------

void num_reduce_start(NumReduction *r, DType dt, bool is_max) {
  *r = (NumReduction){.dt = dt, .is_max = is_max, .f = is_max ? -INFINITY : 0.0f, .i = is_max ? INT64_MIN : 0};
}

// One more element x of a float sum: it is a block of 1, and while the
// block before it is of the same size the two become one (a binary
// counter over n, each carry one f32 addition).
static void pairwise_push(NumReduction *r, float x) {
  int level = 0;
  for (uint64_t k = r->n++; k & 1; k >>= 1) x = r->part[level++] + x;
  r->part[level] = x;
}

// The sum of the blocks still open, from the smallest (latest) to the
// largest, added to +0 (so a sum of -0s is +0, as from an accumulator).
static float pairwise_total(const NumReduction *r) {
  float tail = 0.0f;
  bool any = false;
  for (int level = 0; level < NUM_PAIRWISE_LEVELS; level++)
    if (r->n >> level & 1) tail = any ? r->part[level] + tail : r->part[level], any = true;
  return 0.0f + tail;
}

// Float sums: pairwise in f32 (pairwise_push), every addition rounded to
// f32; float maxima: the IEEE maximum in element order.  Integers: the
// sum modulo 2^64 (exact, then wrapped when stored), or the maximum.
void num_reduce_add(NumReduction *r, const uint8_t *vec, int count) {
  for (int i = 0; i < count; i++) {
    if (is_float(r->dt)) {
      float x = load_float(r->dt, vec, i);
      if (r->is_max)
        r->f = float_max(r->f, x);
      else
        pairwise_push(r, x);
    } else if (r->is_max) {
      r->i = int_max(r->i, load_int(r->dt, vec, i));
    } else {
      r->i = (int64_t)((uint64_t)r->i + (uint64_t)load_int(r->dt, vec, i));
    }
  }
}

// Every element of dst is the result, rounded (or wrapped) into the dtype.
void num_reduce_fill(const NumReduction *r, uint8_t *dst, int vector_bytes) {
  int n = vector_bytes / elem_bytes(r->dt);
  float f = r->is_max ? r->f : pairwise_total(r);
  for (int i = 0; i < n; i++) {
    if (is_float(r->dt))
      store_float(r->dt, dst, i, f);
    else
      store_int_bits(r->dt, dst, i, (uint32_t)(uint64_t)r->i);
  }
}

// ---- matrix unit ---------------------------------------------------------------
//
// OpenBLAS forms the products (cblas_dgemm) in double: every product of two
// f16, bf16, f32 or i8 values is exact there, and each output's sum is
// formed in an order OpenBLAS chooses (the contract leaves it open), then
// rounded once to f32.  i8 sums are exact in double (|sum| <= 320 * 2^14),
// so they are the exact integers.  One thread, set once, keeps every run's
// rounding the same.

void num_mxm_init(void) { openblas_set_num_threads(1); }

// OpenBLAS picks its kernels as it loads, by the CPU's model number, and a
// model its table does not know (a virtual machine's "Intel(R) Xeon(R)
// Processor", model 207, with OpenBLAS 0.3.21) gets the Prescott kernels:
// SSE3, two doubles at a time, though the CPU has AVX2 and FMA.  The
// reference's and the matrix unit's dgemm were then half of a training
// step's emulation on rack72 (examples/train.tg: 20.2 CPU s, 14.1 with the
// Haswell kernels, 13.5 with SkylakeX; the same report).  OPENBLAS_CORETYPE
// names the kernels, but is read only when the library loads: so when the
// Prescott fallback was taken on a CPU with more, this sets it and starts
// the program again, once (NUM_BLAS_RESTARTED marks the second start); a
// user's own OPENBLAS_CORETYPE is left alone.  Which kernels sum a product
// is left open by the contract above.
#define NUM_BLAS_RESTARTED "TSP_EMU_BLAS_RESTARTED"

void num_blas_prefer_cpu_kernels(char **argv) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (getenv("OPENBLAS_CORETYPE") || getenv(NUM_BLAS_RESTARTED) || strcmp(openblas_get_corename(), "Prescott") != 0)
    return;
  __builtin_cpu_init();
  const char *core = NULL;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
  if (!core) return;
  setenv("OPENBLAS_CORETYPE", core, 1);
  setenv(NUM_BLAS_RESTARTED, core, 1);
  execv("/proc/self/exe", argv);  // failing, the run goes on with the kernels it has
#else
  (void)argv;
#endif
}

void num_to_doubles(DType dt, const uint8_t *vec, int first, int count, double *out) {
  for (int i = 0; i < count; i++) out[i] = num_get(dt, vec, first + i);
}

void num_mxm_product(int rows, int kk, int nn, const double *act, int act_stride, const double *w,
                     int w_stride, double *out, int out_stride) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, nn, kk, 1.0, act, act_stride, w, w_stride,
              0.0, out, out_stride);
}

// Floats: f32(product), then MXMA adds the old f32 in f32.  i8: the exact
// integer wrapped to i32, MXMA adding with wrap.  The bytes past `cols`
// accumulator values (a row's last vector may be longer) are zero.
void num_mxm_store(DType dt, const double *product, int cols, const uint8_t *old, uint8_t *out, int nbytes) {
  DType acc = dt == DT_I8 ? DT_I32 : DT_F32;
  memset(out, 0, (size_t)nbytes);
  for (int j = 0; j < cols; j++) {
    if (acc == DT_F32) {
      float f = (float)product[j];
      store_float(DT_F32, out, j, old ? load_float(DT_F32, old, j) + f : f);
    } else {
      uint32_t v = wrap_integer(product[j], 32);
      store_int_bits(DT_I32, out, j, old ? (uint32_t)load_int(DT_I32, old, j) + v : v);
    }
  }
}
