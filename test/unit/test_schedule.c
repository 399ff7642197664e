// test_schedule.c: unit tests of the schedulers' building blocks:
// reservation tables against a brute-force model of every cycle.
#include "harness.h"

#define HORIZON 400

// The model: one flag a cycle.
static bool model_free(const bool *busy, int64_t start, int64_t len) {
  for (int64_t t = start; t < start + len; t++)
    if (t < HORIZON && busy[t]) return false;
  return true;
}

static int64_t model_earliest(const bool *busy, int64_t from, int64_t len) {
  for (int64_t t = from;; t++)
    if (model_free(busy, t, len)) return t;
}

// Random takes and queries agree with the model, and the table stays sorted,
// disjoint and merged (no two intervals touch).
static void reservations_match_a_cycle_by_cycle_model(void **state) {
  (void)state;
  unsigned seed = 99;
  for (int round = 0; round < 200; round++) {
    Reservations r = {0};
    bool busy[HORIZON] = {0};
    for (int op = 0; op < 60; op++) {
      seed = seed * 1103515245u + 12345u;
      int64_t from = (seed >> 8) % 300, len = 1 + (seed >> 20) % 25;
      assert_int_equal(resv_is_free(&r, from, len), model_free(busy, from, len));
      int64_t t = resv_earliest(&r, from, len);
      assert_int_equal(t, model_earliest(busy, from, len));
      if (t + len <= HORIZON && (seed & 1)) {
        resv_take(&r, t, len);
        for (int64_t c = t; c < t + len; c++) busy[c] = true;
      }
      for (int i = 1; i < r.len; i++) assert_true(r.iv[i - 1].end < r.iv[i].start);
      int64_t from2 = (seed >> 4) % HORIZON, to2 = from2 + (seed >> 12) % 100, count = 0;
      for (int64_t c = from2; c < to2 && c < HORIZON; c++) count += busy[c];
      assert_int_equal(resv_busy(&r, from2, MIN(to2, HORIZON)), count);
    }
    resv_free(&r);
  }
}

// A link at 24 cycles a vector: a 4-vector SEND at 0 holds [0, 96); a
// second stream of 2 vectors asked for at 50 fits first at 96; one asked
// for at 200 fits at 200; 100 reservations in a row merge into one run.
static void streams_are_runs_not_vectors(void **state) {
  (void)state;
  Reservations r = {0};
  resv_take(&r, 0, 4 * 24);
  assert_int_equal(resv_earliest(&r, 50, 2 * 24), 96);
  resv_take(&r, 96, 48);
  assert_int_equal(r.len, 1);  // [0, 144): merged
  assert_int_equal(resv_earliest(&r, 200, 48), 200);
  resv_take(&r, 200, 48);
  assert_int_equal(resv_earliest(&r, 100, 56), 144);  // the gap [144, 200) fits 56
  assert_int_equal(resv_earliest(&r, 100, 57), 248);
  for (int i = 0; i < 100; i++) resv_take(&r, 248 + 24 * i, 24);
  assert_int_equal(r.len, 2);
  assert_int_equal(resv_busy(&r, 0, 1000000), 144 + 48 + 2400);
  resv_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reservations_match_a_cycle_by_cycle_model),
      cmocka_unit_test(streams_are_runs_not_vectors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
