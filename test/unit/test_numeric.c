// test_numeric.c: unit tests of runtime/numeric.c: the f16 and bf16
// conversions bit for bit (ties to even, subnormals, overflow, NaN, -0),
// element access and its rounding and wrapping, the vector unit's add, max
// and relu on every dtype, and MXM rows whose exact results are derived by
// hand in the comments.
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

// ---- matrix unit -----------------------------------------------------------

// Runs one MXM row of dt over vector_bytes with act and the n x n weights
// (row-major) and checks the n accumulator results.
static void check_mxm(DType dt, int vector_bytes, const double *act, const double *w,
                      const double *want) {
  int n = vector_bytes / ir_dtype_bytes[dt];
  DType acc = dt == DT_I8 ? DT_I32 : DT_F32;
  uint8_t vact[VEC_MAX] = {0}, rows[VEC_MAX][VEC_MAX] = {{0}}, out[4 * VEC_MAX] = {0};
  const uint8_t *wrows[VEC_MAX] = {0};
  fill(dt, vact, act, n);
  for (int k = 0; k < n; k++) {
    fill(dt, rows[k], w + k * n, n);
    wrows[k] = rows[k];
  }
  num_mxm_row(dt, vector_bytes, vact, wrows, out);
  for (int j = 0; j < n; j++)
    if (num_get(acc, out, j) != want[j])
      fail_msg("%s column %d: got %.9g, want %.9g", ir_dtype_names[dt], j, num_get(acc, out, j),
               want[j]);
}

// 8-byte vectors hold 8 i8 elements.  act = 1 -2 3 -4 5 -6 7 -8, and the
// columns of w are chosen so each sum is easy to check:
//   col 0: w[k] = k + 1        1 - 4 + 9 - 16 + 25 - 36 + 49 - 64 = -36
//   col 1: all 1               sum of act                          = -4
//   col 2: all -128            -128 * -4                           = 512
//   col 3: 127 at k = 3        127 * -4                            = -508
//   col j >= 4: -1 at k = j    -act[j]                   = -5, 6, -7, 8
// Then the extreme: every input -128, each sum 8 * 16384 = 131072, far
// beyond i8 and i16: the accumulation is wide.
static void mxm_i8_accumulates_exactly_into_i32(void **state) {
  (void)state;
  enum { N = 8 };
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
  check_mxm(DT_I8, TEST_VECTOR_BYTES, act, w, (double[]){-36, -4, 512, -508, -5, 6, -7, 8});
  double low[N * N];
  for (int i = 0; i < N * N; i++) low[i] = -128;
  check_mxm(DT_I8, TEST_VECTOR_BYTES, low, low,
            (double[]){131072, 131072, 131072, 131072, 131072, 131072, 131072, 131072});
}

// 8-byte vectors hold 4 f16 elements.  act = 1 0.5 -2 3 and
//   w = [   1    2  0.25  65504 ]
//       [   4   -2  0.5       0 ]
//       [ 0.5    1    1       0 ]
//       [   1    1    0   65504 ]
//   col 0: 1 + 2 - 1 + 3           = 5
//   col 1: 2 - 1 - 2 + 3           = 2
//   col 2: 0.25 + 0.25 - 2 + 0     = -1.5
//   col 3: 65504 + 3 * 65504       = 262016, beyond f16: the f32 result
//                                    shows the accumulation is in f32.
static void mxm_f16_accumulates_in_f32(void **state) {
  (void)state;
  check_mxm(DT_F16, TEST_VECTOR_BYTES, (double[]){1, 0.5, -2, 3},
            (double[]){1, 2, 0.25, 65504, 4, -2, 0.5, 0, 0.5, 1, 1, 0, 1, 1, 0, 65504},
            (double[]){5, 2, -1.5, 262016});
  // bf16, all weights 1: each column sums act, 1 + 2 + 3 + 4 = 10.
  double ones[16];
  for (int i = 0; i < 16; i++) ones[i] = 1;
  check_mxm(DT_BF16, TEST_VECTOR_BYTES, (double[]){1, 2, 3, 4}, ones, (double[]){10, 10, 10, 10});
}

// f32 sums round after every step, in k order: 2^24 + 1 ties back to 2^24
// (even), twice, so the column gives 2^24, not 2^24 + 2.  Column 1 adds the
// small terms first: 1 + 1 = 2, then 2 + 2^24 is exact.  12-byte vectors
// hold 3 f32 elements.
static void mxm_f32_sums_in_k_order(void **state) {
  (void)state;
  double big = ldexp(1, 24);
  check_mxm(DT_F32, 12, (double[]){1, 1, 1}, (double[]){big, 1, 0, 1, 1, 0, 1, big, 0},
            (double[]){big, big + 2, 0});
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
      cmocka_unit_test(mxm_i8_accumulates_exactly_into_i32),
      cmocka_unit_test(mxm_f16_accumulates_in_f32),
      cmocka_unit_test(mxm_f32_sums_in_k_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
