// test_numeric.c: unit tests of runtime/numeric.c: the f16 and bf16
// conversions bit for bit (ties to even, subnormals, overflow, NaN, -0),
// element access and its rounding and wrapping, the vector unit's add, max
// and relu on every dtype, the other element ops (sub, mul, integer
// division's rules, scalars, exp/erf/rsqrt/recip rounded once), every kind
// of VCVT conversion, VRSUM's f32 accumulation order, VRMAX, and MXM rows
// whose exact results are derived by hand in the comments.
#include "harness.h"

#include <float.h>
#include <math.h>

#include "../../runtime/emu.h"

// Vectors the tests build: large enough for any dtype at these sizes.
#define TEST_VECTOR_BYTES 8
#define VEC_MAX 64

// Fills vec with n elements of dt from vals.
static void fill(DType dt, uint8_t *vec, const double *vals, int n) {
  for (int i = 0; i < n; i++) num_set(dt, vec, i, vals[i]);
}

static uint16_t f16_of(double v) { return num_f32_to_f16((float)v); }
static uint16_t bf16_of(double v) { return num_f32_to_bf16((float)v); }

static bool f16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x03ff); }
static bool bf16_is_nan(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x007f); }

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// An element's bytes, little-endian as the emulator stores them.
static uint32_t load_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

// ---- f16 -----------------------------------------------------------------

static void f16_exact_values_have_their_bit_patterns(void **state) {
  (void)state;
  assert_int_equal(f16_of(1.0), 0x3c00);
  assert_int_equal(f16_of(-2.0), 0xc000);
  assert_int_equal(f16_of(0.5), 0x3800);
  assert_int_equal(f16_of(65504.0), 0x7bff);           // the largest finite
  assert_int_equal(f16_of(ldexp(1, -14)), 0x0400);     // the smallest normal
  assert_int_equal(f16_of(ldexp(1, -24)), 0x0001);     // the smallest subnormal
  assert_int_equal(f16_of(ldexp(1023, -24)), 0x03ff);  // the largest subnormal
  assert_int_equal(f16_of(0.0), 0x0000);
  assert_int_equal(f16_of(-0.0), 0x8000);
  assert_true(num_f16_to_f32(0x3c00) == 1.0f);
  assert_true(num_f16_to_f32(0x7bff) == 65504.0f);
  assert_true(num_f16_to_f32(0x0001) == ldexpf(1, -24));
  assert_true(num_f16_to_f32(0x8001) == -ldexpf(1, -24));
  assert_true(num_f16_to_f32(0x03ff) == ldexpf(1023, -24));
  float negzero = num_f16_to_f32(0x8000);
  assert_true(negzero == 0.0f && signbit(negzero));
}

static void f16_rounds_to_nearest_even(void **state) {
  (void)state;
  // 1 + 2^-11 is halfway between 1 (0x3c00, even) and 1 + 2^-10 (0x3c01).
  assert_int_equal(f16_of(1 + ldexp(1, -11)), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 0x3c01 and 0x3c02 (even).
  assert_int_equal(f16_of(1 + 3 * ldexp(1, -11)), 0x3c02);
  // Just above the tie rounds up, just below rounds down.
  assert_int_equal(f16_of(1 + ldexp(1, -11) + ldexp(1, -20)), 0x3c01);
  assert_int_equal(f16_of(1 + ldexp(1, -11) - ldexp(1, -20)), 0x3c00);
  // Subnormal ties: 2^-25 is half the smallest subnormal, ties to 0; 3 *
  // 2^-25 is 1.5 units, ties to 2 units.
  assert_int_equal(f16_of(ldexp(1, -25)), 0x0000);
  assert_int_equal(f16_of(-ldexp(1, -25)), 0x8000);
  assert_int_equal(f16_of(ldexp(1, -25) * (1 + ldexp(1, -20))), 0x0001);
  assert_int_equal(f16_of(3 * ldexp(1, -25)), 0x0002);
  // 1023.5 units is a tie between 0x03ff (odd) and 0x0400: the carry makes
  // the smallest normal.
  assert_int_equal(f16_of(ldexp(2047, -25)), 0x0400);
  // A mantissa of all ones rounding up carries into the exponent.
  assert_int_equal(f16_of(2 - ldexp(1, -12)), 0x4000);
}

static void f16_overflows_to_infinity_and_keeps_nan(void **state) {
  (void)state;
  assert_int_equal(f16_of(65519.0), 0x7bff);  // below the halfway point
  assert_int_equal(f16_of(65520.0), 0x7c00);  // the tie goes to 2^16: inf
  assert_int_equal(f16_of(1e6), 0x7c00);
  assert_int_equal(f16_of(-1e6), 0xfc00);
  assert_int_equal(num_f32_to_f16(INFINITY), 0x7c00);
  assert_int_equal(num_f32_to_f16(-INFINITY), 0xfc00);
  assert_true(isinf(num_f16_to_f32(0x7c00)) && num_f16_to_f32(0x7c00) > 0);
  assert_true(f16_is_nan(num_f32_to_f16(NAN)));
  // A NaN whose payload lies only in bits f16 drops stays a NaN.
  assert_true(f16_is_nan(num_f32_to_f16(f32_from_bits(0x7f800001))));
  assert_true(f16_is_nan(num_f32_to_f16(f32_from_bits(0xff800001))));
  assert_true(isnan(num_f16_to_f32(0x7c01)));
  assert_true(isnan(num_f16_to_f32(0xfe00)));
}

// Every one of the 65536 patterns survives f16 -> f32 -> f16 (NaNs as NaNs).
static void f16_every_pattern_round_trips(void **state) {
  (void)state;
  for (uint32_t h = 0; h <= 0xffff; h++) {
    float f = num_f16_to_f32((uint16_t)h);
    if (f16_is_nan((uint16_t)h)) {
      assert_true(isnan(f));
      assert_true(f16_is_nan(num_f32_to_f16(f)));
    } else {
      assert_int_equal(num_f32_to_f16(f), h);
    }
  }
}

// ---- bf16 ----------------------------------------------------------------

static void bf16_values_round_to_nearest_even(void **state) {
  (void)state;
  assert_int_equal(bf16_of(1.0), 0x3f80);
  assert_int_equal(bf16_of(-2.0), 0xc000);
  assert_int_equal(bf16_of(-0.0), 0x8000);
  assert_true(num_bf16_to_f32(0x3f80) == 1.0f);
  // 1 + 2^-8 is halfway between 0x3f80 (even) and 0x3f81.
  assert_int_equal(bf16_of(1 + ldexp(1, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 0x3f81 and 0x3f82 (even).
  assert_int_equal(bf16_of(1 + 3 * ldexp(1, -8)), 0x3f82);
  assert_int_equal(bf16_of(1 + ldexp(1, -8) + ldexp(1, -20)), 0x3f81);
  // The largest f32 is above bf16's halfway point to 2^128: infinity.
  assert_int_equal(num_f32_to_bf16(FLT_MAX), 0x7f80);
  assert_int_equal(num_f32_to_bf16(-INFINITY), 0xff80);
  // f32 subnormals round like the rest: 2^-149 is below half of 2^-133.
  assert_int_equal(num_f32_to_bf16(f32_from_bits(0x00000001)), 0x0000);
  assert_int_equal(num_f32_to_bf16(f32_from_bits(0x00008000)), 0x0000);  // tie to even
  assert_int_equal(num_f32_to_bf16(f32_from_bits(0x00018000)), 0x0002);  // tie to even
  assert_true(bf16_is_nan(num_f32_to_bf16(NAN)));
  // Truncating this NaN would give infinity: it must stay a NaN.
  assert_true(bf16_is_nan(num_f32_to_bf16(f32_from_bits(0x7f800001))));
  assert_true(bf16_is_nan(num_f32_to_bf16(f32_from_bits(0xffffffff))));
}

static void bf16_every_pattern_round_trips(void **state) {
  (void)state;
  for (uint32_t h = 0; h <= 0xffff; h++) {
    float f = num_bf16_to_f32((uint16_t)h);
    if (bf16_is_nan((uint16_t)h))
      assert_true(isnan(f));
    else
      assert_int_equal(num_f32_to_bf16(f), h);
  }
}

// ---- element access --------------------------------------------------------

static void elements_are_little_endian(void **state) {
  (void)state;
  uint8_t v[TEST_VECTOR_BYTES] = {0};
  num_set(DT_I32, v, 1, 0x01020304);
  assert_memory_equal(v + 4, "\x04\x03\x02\x01", 4);
  num_set(DT_F16, v, 0, 1.0);
  assert_int_equal(v[0], 0x00);
  assert_int_equal(v[1], 0x3c);
  num_set(DT_F32, v, 1, 1.0);  // 0x3f800000
  assert_memory_equal(v + 4, "\x00\x00\x80\x3f", 4);
  assert_true(num_get(DT_F32, v, 1) == 1.0);
  assert_true(num_get(DT_F16, v, 0) == 1.0);
  num_set(DT_BF16, v, 3, -2.5);
  assert_true(num_get(DT_BF16, v, 3) == -2.5);
}

static void integer_stores_truncate_then_wrap(void **state) {
  (void)state;
  uint8_t v[TEST_VECTOR_BYTES] = {0};
  const struct {
    DType dt;
    double in;
    double out;
  } cases[] = {
      {DT_I32, -1.5, -1},
      {DT_I32, 2.9, 2},
      {DT_I32, 2147483647, 2147483647},
      {DT_I32, 2147483648.0, -2147483648.0},  // 2^31 wraps to -2^31
      {DT_I32, 4294967301.0, 5},              // 2^32 + 5
      {DT_I32, -4294967297.0, -1},            // -(2^32 + 1)
      {DT_I32, 1e300, 0},                     // a multiple of 2^32
      {DT_I32, NAN, 0},
      {DT_I32, INFINITY, 0},
      {DT_I32, -INFINITY, 0},
      {DT_I8, 127, 127},
      {DT_I8, 128.7, -128},
      {DT_I8, -129, 127},
      {DT_I8, 255, -1},
      {DT_I8, -0.9, 0},
      {DT_I8, 1000, -24},  // 1000 - 4 * 256
      {DT_I8, NAN, 0},
  };
  for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
    num_set(cases[c].dt, v, 1, cases[c].in);
    if (num_get(cases[c].dt, v, 1) != cases[c].out)
      fail_msg("case %zu: %g -> %g, want %g", c, cases[c].in, num_get(cases[c].dt, v, 1),
               cases[c].out);
  }
}

// Doubles round once to f16 and bf16, not twice through f32: 1 + 2^-11 +
// 2^-40 is just above the f16 tie, but rounded to f32 first it lands on
// the tie itself and would then round down.
static void float_stores_round_the_double_once(void **state) {
  (void)state;
  uint8_t v[TEST_VECTOR_BYTES] = {0};
  num_set(DT_F16, v, 0, 1 + ldexp(1, -11) + ldexp(1, -40));
  assert_true(num_get(DT_F16, v, 0) == 1 + ldexp(1, -10));
  num_set(DT_F16, v, 0, 1 + ldexp(1, -11) - ldexp(1, -40));
  assert_true(num_get(DT_F16, v, 0) == 1.0);
  num_set(DT_BF16, v, 0, 1 + ldexp(1, -8) + ldexp(1, -40));
  assert_true(num_get(DT_BF16, v, 0) == 1 + ldexp(1, -7));
  num_set(DT_F16, v, 0, 1e300);
  assert_true(isinf(num_get(DT_F16, v, 0)));
  num_set(DT_BF16, v, 0, -1e300);
  assert_true(isinf(num_get(DT_BF16, v, 0)) && num_get(DT_BF16, v, 0) < 0);
  num_set(DT_F32, v, 1, 1e300);
  assert_true(isinf(num_get(DT_F32, v, 1)));
  num_set(DT_F16, v, 0, NAN);
  assert_true(isnan(num_get(DT_F16, v, 0)));
  num_set(DT_F16, v, 0, ldexp(1, -30));  // far below 2^-25: +0
  assert_true(num_get(DT_F16, v, 0) == 0 && !signbit(num_get(DT_F16, v, 0)));
}

// ---- vector unit -----------------------------------------------------------

// Runs op on a and b (n elements of dt in an 8-byte vector) and compares
// every element of the result with want.
typedef enum { ADD, MAX, RELU } TestOp;

static void check_vop(TestOp op, DType dt, const double *a, const double *b, const double *want) {
  int n = TEST_VECTOR_BYTES / ir_dtype_bytes[dt];
  uint8_t va[TEST_VECTOR_BYTES] = {0}, vb[TEST_VECTOR_BYTES] = {0}, dst[TEST_VECTOR_BYTES] = {0};
  fill(dt, va, a, n);
  if (b) fill(dt, vb, b, n);
  if (op == ADD) num_vadd(dt, dst, va, vb, TEST_VECTOR_BYTES);
  if (op == MAX) num_vmax(dt, dst, va, vb, TEST_VECTOR_BYTES);
  if (op == RELU) num_vrelu(dt, dst, va, TEST_VECTOR_BYTES);
  for (int i = 0; i < n; i++) {
    double got = num_get(dt, dst, i);
    bool same = isnan(want[i]) ? isnan(got) : got == want[i] && !signbit(got) == !signbit(want[i]);
    if (!same)
      fail_msg("%s op %d element %d: got %g, want %g", ir_dtype_names[dt], (int)op, i, got,
               want[i]);
  }
}

static void vadd_rounds_floats_and_wraps_integers(void **state) {
  (void)state;
  check_vop(ADD, DT_F32, (double[]){1.5, -1}, (double[]){2.25, INFINITY},
            (double[]){3.75, INFINITY});
  // f16: 2048 + 1 = 2049 is a tie between 2048 and 2050 (the spacing there
  // is 2): even significand, 2048.  65504 + 32 = 65536 overflows to inf.
  check_vop(ADD, DT_F16, (double[]){2048, 65504, 1, NAN}, (double[]){1, 32, -3, 1},
            (double[]){2048, INFINITY, -2, NAN});
  // bf16: 256 + 1 = 257 is a tie (spacing 2): 256.  256 + 3 = 259 ties to 260.
  check_vop(ADD, DT_BF16, (double[]){256, 256, -0.0, 1}, (double[]){1, 3, -0.0, -1},
            (double[]){256, 260, -0.0, 0});
  check_vop(ADD, DT_I32, (double[]){2147483647, -2147483648.0}, (double[]){1, -1},
            (double[]){-2147483648.0, 2147483647});
  check_vop(ADD, DT_I8, (double[]){127, -128, 100, -5, 0, 1, 64, -64},
            (double[]){1, -1, 100, 5, 0, -2, 64, -65},
            (double[]){-128, 127, -56, 0, 0, -1, -128, 127});
}

static void vmax_propagates_nan_and_orders_zeros(void **state) {
  (void)state;
  check_vop(MAX, DT_F32, (double[]){NAN, 1}, (double[]){1, NAN}, (double[]){NAN, NAN});
  check_vop(MAX, DT_F16, (double[]){-0.0, 0.0, -3, 65504}, (double[]){0.0, -0.0, -INFINITY, 2},
            (double[]){0.0, 0.0, -3, 65504});
  check_vop(MAX, DT_BF16, (double[]){1, -1, NAN, -0.0}, (double[]){2, -2, 5, -0.0},
            (double[]){2, -1, NAN, -0.0});
  check_vop(MAX, DT_I32, (double[]){-2147483648.0, 7}, (double[]){-1, -7}, (double[]){-1, 7});
  check_vop(MAX, DT_I8, (double[]){-128, 127, -1, 0, 5, -5, 3, -3},
            (double[]){127, -128, -2, 0, -5, 5, 3, -4}, (double[]){127, 127, -1, 0, 5, 5, 3, -3});
}

static void vrelu_zeroes_negatives(void **state) {
  (void)state;
  check_vop(RELU, DT_F32, (double[]){-1, NAN}, NULL, (double[]){0, NAN});
  check_vop(RELU, DT_F16, (double[]){-0.0, 2.5, -INFINITY, INFINITY}, NULL,
            (double[]){0.0, 2.5, 0, INFINITY});
  check_vop(RELU, DT_BF16, (double[]){-3, 3, -0.0, NAN}, NULL, (double[]){0, 3, 0.0, NAN});
  check_vop(RELU, DT_I32, (double[]){-2147483648.0, 2147483647}, NULL, (double[]){0, 2147483647});
  check_vop(RELU, DT_I8, (double[]){-128, 127, -1, 0, 1, -2, 2, -3}, NULL,
            (double[]){0, 127, 0, 0, 1, 0, 2, 0});
}

// The result may overwrite an operand: every element is read first.
static void vector_ops_allow_dst_to_alias_operands(void **state) {
  (void)state;
  uint8_t a[TEST_VECTOR_BYTES], b[TEST_VECTOR_BYTES];
  fill(DT_F16, a, (double[]){1, 2, 3, 4}, 4);
  fill(DT_F16, b, (double[]){10, 20, 30, 40}, 4);
  num_vadd(DT_F16, a, a, b, TEST_VECTOR_BYTES);
  for (int i = 0; i < 4; i++) assert_true(num_get(DT_F16, a, i) == 11.0 * (i + 1));
  num_vmax(DT_I32, b, a, b, TEST_VECTOR_BYTES);  // reinterpreted bits, just aliasing
  num_vrelu(DT_I8, a, a, TEST_VECTOR_BYTES);
  for (int i = 0; i < TEST_VECTOR_BYTES; i++) assert_true(num_get(DT_I8, a, i) >= 0);
}

// Compares n elements of a vector of dt with want: NaN matches NaN, zeros
// match with their sign.
static void expect_elements(const char *what, DType dt, const uint8_t *vec, const double *want, int n) {
  for (int i = 0; i < n; i++) {
    double got = num_get(dt, vec, i);
    bool same = isnan(want[i]) ? isnan(got) : got == want[i] && !signbit(got) == !signbit(want[i]);
    if (!same) fail_msg("%s %s element %d: got %.9g, want %.9g", what, ir_dtype_names[dt], i, got, want[i]);
  }
}

// num_vbinary (or num_vscalar) of a and b, n elements of dt in an 8-byte vector.
static void check_binary(NumBinaryOp op, bool scalar, DType dt, const double *a, const double *b, const double *want) {
  int n = TEST_VECTOR_BYTES / ir_dtype_bytes[dt];
  uint8_t va[TEST_VECTOR_BYTES] = {0}, vb[TEST_VECTOR_BYTES] = {0}, dst[TEST_VECTOR_BYTES] = {0};
  fill(dt, va, a, n);
  fill(dt, vb, b, n);
  if (scalar)
    num_vscalar(op, dt, dst, va, vb, TEST_VECTOR_BYTES);
  else
    num_vbinary(op, dt, dst, va, vb, TEST_VECTOR_BYTES);
  expect_elements(scalar ? "scalar op" : "binary op", dt, dst, want, n);
}

// f32 arithmetic rounded into the dtype; integers wrap.
static void vsub_vmul_round_and_wrap(void **state) {
  (void)state;
  // f16: 2048 - (-1) = 2049, a tie: 2048.  2 * 65504 overflows to inf.
  check_binary(NUM_SUB, false, DT_F16, (double[]){2048, 1, 0, -0.0}, (double[]){-1, 1, 0, 0},
               (double[]){2048, 0, 0, -0.0});
  check_binary(NUM_MUL, false, DT_F16, (double[]){65504, 3, -0.5, 1}, (double[]){2, 0.5, 4, -0.0},
               (double[]){INFINITY, 1.5, -2, -0.0});
  check_binary(NUM_MUL, false, DT_I8, (double[]){100, -128, 16, -1, 0, 1, 2, 3},
               (double[]){2, -1, 16, -1, 5, 1, -64, -43}, (double[]){-56, -128, 0, 1, 0, 1, -128, 127});
  check_binary(NUM_SUB, false, DT_I32, (double[]){-2147483648.0, 0}, (double[]){1, -2147483648.0},
               (double[]){2147483647, -2147483648.0});
}

// Integer division truncates toward zero; x / 0 = 0; MIN / -1 wraps to MIN.
static void vdiv_integer_rules(void **state) {
  (void)state;
  check_binary(NUM_DIV, false, DT_I8, (double[]){7, -7, 7, -7, 5, -128, 127, 0},
               (double[]){2, 2, -2, -2, 0, -1, -1, 0}, (double[]){3, -3, -3, 3, 0, -128, -127, 0});
  check_binary(NUM_DIV, false, DT_I32, (double[]){-2147483648.0, 9}, (double[]){-1, 0},
               (double[]){-2147483648.0, 0});
  // Floats: IEEE, 1 / 0 = inf, 0 / 0 = NaN; f32 1 / 3 rounded once to f32.
  check_binary(NUM_DIV, false, DT_F32, (double[]){1, 0}, (double[]){3, 0}, (double[]){(float)(1.0 / 3), NAN});
  check_binary(NUM_DIV, false, DT_F16, (double[]){1, -1, 6, 1}, (double[]){0, 0, 4, 3},
               (double[]){INFINITY, -INFINITY, 1.5, 0.333251953125});
}

// The scalar is element 0 of the second vector; the others are ignored.
static void vscalar_uses_element_zero(void **state) {
  (void)state;
  check_binary(NUM_ADD, true, DT_F16, (double[]){1, 2, 3, 4}, (double[]){10, 99, 99, 99},
               (double[]){11, 12, 13, 14});
  check_binary(NUM_SUB, true, DT_I32, (double[]){5, -2147483648.0}, (double[]){1, 7}, (double[]){4, 2147483647});
  check_binary(NUM_MUL, true, DT_I8, (double[]){1, 2, 3, 4, 5, 6, 7, -1}, (double[]){-2, 0, 0, 0, 0, 0, 0, 0},
               (double[]){-2, -4, -6, -8, -10, -12, -14, 2});
}

// The f32 arithmetic on whole 320-byte vectors (numeric.c's vectorised
// path) against one IEEE float operation an element, bit for bit, on
// random bit patterns (NaNs with payloads, infinities, subnormals, zeros of
// both signs among them), with the result written over either operand,
// and as a scalar op over its own scalar.  A NaN result need only be a NaN:
// which operand's payload a NaN op keeps is the compiler's choice of
// operand order (C leaves it open, and the contract says NaN stays NaN).
static uint32_t random_f32_bits(uint64_t *state) {
  static const uint32_t special[] = {0x7fc00001, 0xffa00000, 0x7f800000, 0xff800000, 0x00000001,
                                     0x807fffff, 0x00000000, 0x80000000, 0x3f800000, 0x7f7fffff};
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27;
  return z % 4 == 0 ? special[(z >> 8) % 10] : (uint32_t)(z >> 32);
}

static float one_op(NumBinaryOp op, float x, float y) {
  return op == NUM_ADD ? x + y : op == NUM_SUB ? x - y : op == NUM_MUL ? x * y : x / y;
}

static void f32_vectors_match_one_op_an_element(void **state) {
  (void)state;
  enum { VB = 320, N = VB / 4 };
  uint64_t rng = 42;
  for (int round = 0; round < 50; round++)
    for (NumBinaryOp op = NUM_ADD; op <= NUM_DIV; op++)
      for (int form = 0; form < 4; form++) {  // into dst, over a, over b, scalar over b
        uint8_t a[VB], b[VB], dst[VB];
        uint32_t want[N];
        for (int i = 0; i < N; i++) {
          uint32_t x = random_f32_bits(&rng), y = random_f32_bits(&rng);
          store_le32(a + 4 * i, x), store_le32(b + 4 * i, y);
        }
        for (int i = 0; i < N; i++) {
          float r = one_op(op, f32_from_bits(load_le32(a + 4 * i)), f32_from_bits(load_le32(b + 4 * (form == 3 ? 0 : i))));
          memcpy(&want[i], &r, sizeof r);
        }
        uint8_t *out = form == 1 ? a : form >= 2 ? b : dst;
        if (form == 3)
          num_vscalar(op, DT_F32, out, a, b, VB);
        else
          num_vbinary(op, DT_F32, out, a, b, VB);
        for (int i = 0; i < N; i++)
          if (load_le32(out + 4 * i) != want[i] && !(isnan(f32_from_bits(want[i])) && isnan(f32_from_bits(load_le32(out + 4 * i)))))
            fail_msg("op %d form %d element %d: got %08x, want %08x", (int)op, form, i, load_le32(out + 4 * i), want[i]);
      }
}

// num_vunary of a (floats): exp, erf, 1/sqrt, 1/x in double, rounded once.
static void check_unary(NumUnaryOp op, DType dt, const double *a, const double *want) {
  int n = TEST_VECTOR_BYTES / ir_dtype_bytes[dt];
  uint8_t va[TEST_VECTOR_BYTES] = {0}, dst[TEST_VECTOR_BYTES] = {0};
  fill(dt, va, a, n);
  num_vunary(op, dt, dst, va, TEST_VECTOR_BYTES);
  expect_elements("unary op", dt, dst, want, n);
}

// exp(0) = 1; exp(1) = 2.718281828..: f32 2.71828175 (0x402df854), f16
// 2.71875 (the f16 neighbours are 2.716796875 and 2.71875, e is nearer the
// second), bf16 2.71875 too (spacing 2^-6 at 2: 2.703125, 2.71875).
static void transcendental_ops_round_once(void **state) {
  (void)state;
  check_unary(NUM_EXP, DT_F32, (double[]){0, 1}, (double[]){1, f32_from_bits(0x402df854)});
  check_unary(NUM_EXP, DT_F16, (double[]){0, 1, -INFINITY, 12}, (double[]){1, 2.71875, 0, INFINITY});
  check_unary(NUM_EXP, DT_BF16, (double[]){0, 1, NAN, 0}, (double[]){1, 2.71875, NAN, 1});
  check_unary(NUM_ERF, DT_F16, (double[]){0, -0.0, INFINITY, -INFINITY}, (double[]){0, -0.0, 1, -1});
  check_unary(NUM_RSQRT, DT_F16, (double[]){4, 0.25, 0, -1}, (double[]){0.5, 2, INFINITY, NAN});
  check_unary(NUM_RECIP, DT_F32, (double[]){3, -0.0}, (double[]){(float)(1.0 / 3), -INFINITY});
}

// One element through num_convert, from a value stored in `from`.
static double convert(DType to, DType from, double v) {
  uint8_t src[TEST_VECTOR_BYTES] = {0}, dst[TEST_VECTOR_BYTES] = {0};
  num_set(from, src, 0, v);
  num_convert(to, dst, 0, from, src, 0);
  return num_get(to, dst, 0);
}

// float -> float ties to even; float -> int ties to even, saturates, NaN
// -> 0; int -> float ties to even; int -> int wraps.
static void vcvt_rounds_saturates_and_wraps(void **state) {
  (void)state;
  assert_true(convert(DT_F16, DT_F32, 1 + ldexp(1, -11)) == 1.0);                   // tie: even
  assert_true(convert(DT_F16, DT_F32, 1 + 3 * ldexp(1, -11)) == 1 + ldexp(1, -9));  // tie: even
  assert_true(convert(DT_F16, DT_F32, 65520) == INFINITY);
  assert_true(convert(DT_BF16, DT_F16, 257) == 256);  // bf16 spacing 2 at 256: tie, even
  assert_true(convert(DT_I32, DT_F32, 2.5) == 2 && convert(DT_I32, DT_F32, 3.5) == 4);
  assert_true(convert(DT_I32, DT_F32, -2.5) == -2 && convert(DT_I32, DT_F32, -0.5) == 0);
  assert_true(convert(DT_I32, DT_F32, 1e10) == 2147483647 && convert(DT_I32, DT_F32, -INFINITY) == -2147483648.0);
  assert_true(convert(DT_I32, DT_F32, NAN) == 0);
  assert_true(convert(DT_I8, DT_F16, 300) == 127 && convert(DT_I8, DT_F16, -300) == -128);
  assert_true(convert(DT_I8, DT_BF16, 126.5) == 126 && convert(DT_I8, DT_F16, 127.5) == 127);
  assert_true(convert(DT_F32, DT_I32, 16777217) == 16777216);  // tie: even
  assert_true(convert(DT_F16, DT_I32, 2049) == 2048 && convert(DT_F16, DT_I32, 65520) == INFINITY);
  assert_true(convert(DT_I8, DT_I32, 300) == 44 && convert(DT_I8, DT_I32, -129) == 127);
  assert_true(convert(DT_I32, DT_I8, -128) == -128);
  // The same dtype copies the bytes: a signalling f16 NaN keeps its payload.
  uint8_t src[2] = {0x01, 0x7c}, dst[2] = {0};
  num_convert(DT_F16, dst, 0, DT_F16, src, 0);
  assert_int_equal(dst[0] | dst[1] << 8, 0x7c01);
}

// A reduction over the first `count` elements of one vector of dt
// (REDUCE_TEST_BYTES: up to 8 f32).
#define REDUCE_TEST_BYTES 32
static double reduce(DType dt, bool is_max, const double *vals, int count) {
  assert_true(count * ir_dtype_bytes[dt] <= REDUCE_TEST_BYTES);
  uint8_t v[REDUCE_TEST_BYTES] = {0}, out[REDUCE_TEST_BYTES];
  fill(dt, v, vals, count);
  NumReduction r;
  num_reduce_start(&r, dt, is_max);
  num_reduce_add(&r, v, count);
  num_reduce_fill(&r, out, REDUCE_TEST_BYTES);
  int n = REDUCE_TEST_BYTES / ir_dtype_bytes[dt];
  for (int i = 1; i < n; i++) assert_memory_equal(out, out + i * ir_dtype_bytes[dt], ir_dtype_bytes[dt]);
  return num_get(dt, out, 0);
}

// VRSUM adds pairwise in f32, every sum rounded: 2^24 + 1 ties back to
// 2^24 and 1 + 1 = 2, then 2^24 + 2 is exact, in either order (a running
// sum gave 2^24 for the first and 2^24 + 4 for the second).  Five
// elements: the first four as before, then the open blocks from the
// smallest: 1 + (2^24 + 2) ties to the even 2^24 + 4 (a running sum:
// 2^24); 2^24 last is added to the exact 4.  (1 + 2) + (3 + 4) then
// + 2^-30 is 10.  f16's 2048 + 1 = 2049 is exact in f32 and rounds to
// 2048 when stored.  Integers sum exactly and wrap.
static void vrsum_adds_pairwise_in_f32(void **state) {
  (void)state;
  double big = ldexp(1, 24);
  assert_true(reduce(DT_F32, false, (double[]){big, 1, 1, 1}, 4) == big + 2);
  assert_true(reduce(DT_F32, false, (double[]){1, 1, 1, big}, 4) == big + 2);
  assert_true(reduce(DT_F32, false, (double[]){1, 2, 3, 4, ldexp(1, -30)}, 5) == 10);
  assert_true(reduce(DT_F32, false, (double[]){big, 1, 1, 1, 1}, 5) == big + 4);
  assert_true(reduce(DT_F32, false, (double[]){1, 1, 1, 1, big}, 5) == big + 4);
  assert_true(reduce(DT_F32, false, (double[]){1, 2, 3, 4}, 2) == 3);  // the first count only
  assert_true(reduce(DT_F16, false, (double[]){2048, 1}, 2) == 2048);
  double z = reduce(DT_F16, false, (double[]){-0.0, -0.0}, 2);  // +0 + -0 + -0 = +0
  assert_true(z == 0 && !signbit(z));
  assert_true(reduce(DT_I8, false, (double[]){127, 127, 127, 127}, 4) == -4);  // 508 mod 256
  assert_true(reduce(DT_I32, false, (double[]){2147483647, 2147483647, 2, 0}, 3) == 0);
}

// VRMAX from -infinity, IEEE maximum: NaN wins, +0 above -0.
static void vrmax_is_ieee_maximum(void **state) {
  (void)state;
  assert_true(reduce(DT_F32, true, (double[]){-INFINITY, -INFINITY}, 2) == -INFINITY);
  assert_true(isnan(reduce(DT_F16, true, (double[]){1, NAN, 3, 2}, 4)));
  double z = reduce(DT_BF16, true, (double[]){-0.0, 0.0, -0.0, -1}, 4);
  assert_true(z == 0 && !signbit(z));
  assert_true(reduce(DT_I8, true, (double[]){-128, -5, -7, 100}, 3) == -5);
}

// ---- matrix unit -----------------------------------------------------------

#define TEST_MXM_K 8

// One MXM row of dt: act (kk values) times w (kk x nn, row-major), each
// value first stored in dt; the products through num_mxm_product, the row
// through num_mxm_store (adding old, ISA_MXM_COLS accumulator values, for
// MXMA).  Checks the nn results and that the columns past nn are 0.
static void check_mxm(DType dt, int kk, int nn, const double *act, const double *w, const double *old,
                      const double *want) {
  DType acc = dt == DT_I8 ? DT_I32 : DT_F32;
  uint8_t e[TEST_VECTOR_BYTES];
  double a[TEST_MXM_K], wd[TEST_MXM_K * TEST_MXM_K], prod[ISA_MXM_COLS] = {0};
  for (int i = 0; i < kk; i++) {
    num_set(dt, e, 0, act[i]);
    a[i] = num_get(dt, e, 0);
    for (int j = 0; j < nn; j++) {
      num_set(dt, e, 0, w[i * nn + j]);
      wd[i * nn + j] = num_get(dt, e, 0);
    }
  }
  num_mxm_product(1, kk, nn, a, kk, wd, nn, prod, ISA_MXM_COLS);
  uint8_t out[ISA_MXM_COLS * 4 + 4], oldv[ISA_MXM_COLS * 4] = {0};
  for (int j = 0; old && j < ISA_MXM_COLS; j++) num_set(acc, oldv, j, old[MIN(j, nn - 1)]);
  num_mxm_store(dt, prod, ISA_MXM_COLS, old ? oldv : NULL, out, (int)sizeof out);
  expect_elements("mxm", acc, out, want, nn);
  for (int j = nn; j < ISA_MXM_COLS + 1; j++)
    if (num_get(acc, out, j) != (old && j < ISA_MXM_COLS ? old[nn - 1] : 0))
      fail_msg("mxm column %d past nn is %g", j, num_get(acc, out, j));
}

// act = 1 -2 3 -4 5 -6 7 -8, and the columns of w are chosen so each sum
// is easy to check:
//   col 0: w[k] = k + 1        1 - 4 + 9 - 16 + 25 - 36 + 49 - 64 = -36
//   col 1: all 1               sum of act                          = -4
//   col 2: all -128            -128 * -4                           = 512
//   col 3: 127 at k = 3        127 * -4                            = -508
//   col j >= 4: -1 at k = j    -act[j]                   = -5, 6, -7, 8
// Then the extreme: every input -128, each sum 8 * 16384 = 131072, far
// beyond i8 and i16: the accumulation is wide.
static void mxm_i8_accumulates_exactly_into_i32(void **state) {
  (void)state;
  enum { N = TEST_MXM_K };
  double act[N] = {1, -2, 3, -4, 5, -6, 7, -8};
  double w[N * N];
  for (int k = 0; k < N; k++)
    for (int j = 0; j < N; j++) {
      double v = 0;
      if (j == 0) v = k + 1;
      if (j == 1) v = 1;
      if (j == 2) v = -128;
      if (j == 3) v = k == 3 ? 127 : 0;
      if (j >= 4) v = k == j ? -1 : 0;
      w[k * N + j] = v;
    }
  check_mxm(DT_I8, N, N, act, w, NULL, (double[]){-36, -4, 512, -508, -5, 6, -7, 8});
  double low[N * N];
  for (int i = 0; i < N * N; i++) low[i] = -128;
  check_mxm(DT_I8, N, N, low, low, NULL,
            (double[]){131072, 131072, 131072, 131072, 131072, 131072, 131072, 131072});
  // MXMA adds into i32 with wrap: 2147483647 + 1 = -2147483648.
  check_mxm(DT_I8, 1, 2, (double[]){1}, (double[]){1, 1}, (double[]){2147483647, 2147483647},
            (double[]){-2147483648.0, -2147483648.0});
}

// act = 1 0.5 -2 3 and
//   w = [   1    2  0.25  65504 ]
//       [   4   -2  0.5       0 ]
//       [ 0.5    1    1       0 ]
//       [   1    1    0   65504 ]
//   col 0: 1 + 2 - 1 + 3           = 5
//   col 1: 2 - 1 - 2 + 3           = 2
//   col 2: 0.25 + 0.25 - 2 + 0     = -1.5
//   col 3: 65504 + 3 * 65504       = 262016, beyond f16: the result is f32.
static void mxm_f16_accumulates_into_f32(void **state) {
  (void)state;
  check_mxm(DT_F16, 4, 4, (double[]){1, 0.5, -2, 3},
            (double[]){1, 2, 0.25, 65504, 4, -2, 0.5, 0, 0.5, 1, 1, 0, 1, 1, 0, 65504}, NULL,
            (double[]){5, 2, -1.5, 262016});
  // kk = 2 of the 4 lanes, nn = 3: columns 3.. are 0.
  check_mxm(DT_BF16, 2, 3, (double[]){1, 2}, (double[]){1, 1, 1, 1, 2, 3}, NULL, (double[]){3, 5, 7});
}

// Floats: each sum is formed in double and rounded once to f32.  act = 1 1 1:
// col 0 = 2^24 + 1 + 1 = 2^24 + 2, exact in f32 (an f32 accumulator adding
// in order would give 2^24); col 1 = 2^24 + 1 + 0, a tie, rounds to 2^24.
// MXMA then adds the old f32 in f32: old 2^24 + product 1 = 2^24 (a tie).
static void mxm_f32_rounds_the_sum_once(void **state) {
  (void)state;
  double big = ldexp(1, 24);
  check_mxm(DT_F32, 3, 2, (double[]){1, 1, 1}, (double[]){big, big, 1, 1, 1, 0}, NULL, (double[]){big + 2, big});
  check_mxm(DT_F32, 1, 1, (double[]){1}, (double[]){1}, (double[]){big}, (double[]){big});
  check_mxm(DT_F16, 1, 1, (double[]){3}, (double[]){0.5}, (double[]){-0.25}, (double[]){1.25});
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(f16_exact_values_have_their_bit_patterns),
      cmocka_unit_test(f16_rounds_to_nearest_even),
      cmocka_unit_test(f16_overflows_to_infinity_and_keeps_nan),
      cmocka_unit_test(f16_every_pattern_round_trips),
      cmocka_unit_test(bf16_values_round_to_nearest_even),
      cmocka_unit_test(bf16_every_pattern_round_trips),
      cmocka_unit_test(elements_are_little_endian),
      cmocka_unit_test(integer_stores_truncate_then_wrap),
      cmocka_unit_test(float_stores_round_the_double_once),
      cmocka_unit_test(vadd_rounds_floats_and_wraps_integers),
      cmocka_unit_test(vmax_propagates_nan_and_orders_zeros),
      cmocka_unit_test(vrelu_zeroes_negatives),
      cmocka_unit_test(vector_ops_allow_dst_to_alias_operands),
      cmocka_unit_test(vsub_vmul_round_and_wrap),
      cmocka_unit_test(vdiv_integer_rules),
      cmocka_unit_test(vscalar_uses_element_zero),
      cmocka_unit_test(f32_vectors_match_one_op_an_element),
      cmocka_unit_test(transcendental_ops_round_once),
      cmocka_unit_test(vcvt_rounds_saturates_and_wraps),
      cmocka_unit_test(vrsum_adds_pairwise_in_f32),
      cmocka_unit_test(vrmax_is_ieee_maximum),
      cmocka_unit_test(mxm_i8_accumulates_exactly_into_i32),
      cmocka_unit_test(mxm_f16_accumulates_into_f32),
      cmocka_unit_test(mxm_f32_rounds_the_sum_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
