// test_shards.c: unit tests of emu_uncovered (runtime/model.c), the check
// that a tensor's shards cover it: the first element (row-major) in no
// shard, found by a sweep over the boxes' edges, one dimension at a time.
//
// Hand-made cases (grids, gaps, overlaps, a single missing element in 3
// dimensions, no homes, a whole home), then random boxes in small tensors
// against a brute-force search over every element.
#include "harness.h"

#include "../../runtime/emu.h"

// Random cases, each up to RANDOM_BOXES boxes in a tensor of up to
// RANDOM_RANK dimensions of up to RANDOM_DIM each.
#define RANDOM_CASES 2000
#define RANDOM_BOXES 6
#define RANDOM_RANK 3
#define RANDOM_DIM 5

// A shard [start, start + shape) of rank `rank`.
static TensorHome shard(int rank, const int64_t *start, const int64_t *shape) {
  TensorHome th = {.name = "t", .dtype = DT_F32, .is_shard = true, .shape = {.rank = rank}};
  for (int d = 0; d < rank; d++) th.start[d] = start[d], th.shape.dim[d] = shape[d];
  return th;
}

// emu_uncovered over homes hs[0 .. n) of a tensor of shape `whole`: true
// with the first element in none of them into idx.
static bool uncovered(const TensorHome *hs, int n, const Shape *whole, int64_t *idx) {
  const TensorHome *ptr[RANDOM_BOXES + 4];
  for (int i = 0; i < n; i++) ptr[i] = &hs[i];
  return emu_uncovered(ptr, n, whole, idx);
}

static void covered_by_a_grid_and_by_a_whole_home(void **state) {
  (void)state;
  Shape whole = {.rank = 2, .dim = {4, 6}};
  TensorHome grid[] = {shard(2, (int64_t[]){0, 0}, (int64_t[]){2, 3}), shard(2, (int64_t[]){0, 3}, (int64_t[]){2, 3}),
                       shard(2, (int64_t[]){2, 0}, (int64_t[]){2, 3}), shard(2, (int64_t[]){2, 3}, (int64_t[]){2, 3})};
  int64_t idx[IR_MAX_RANK];
  assert_false(uncovered(grid, 4, &whole, idx));
  TensorHome copy = {.name = "t", .dtype = DT_F32, .shape = whole};
  assert_false(uncovered(&copy, 1, &whole, idx));
  TensorHome mixed[] = {grid[0], copy};  // a whole home covers whatever the shards leave
  assert_false(uncovered(mixed, 2, &whole, idx));
}

static void finds_the_first_element_of_a_missing_piece(void **state) {
  (void)state;
  Shape whole = {.rank = 2, .dim = {4, 6}};
  TensorHome grid[] = {shard(2, (int64_t[]){0, 0}, (int64_t[]){2, 3}), shard(2, (int64_t[]){0, 3}, (int64_t[]){2, 3}),
                       shard(2, (int64_t[]){2, 0}, (int64_t[]){2, 3})};
  int64_t idx[IR_MAX_RANK];
  assert_true(uncovered(grid, 3, &whole, idx));  // the piece at [2, 3]
  assert_int_equal(idx[0], 2);
  assert_int_equal(idx[1], 3);
  TensorHome gap[] = {shard(2, (int64_t[]){0, 0}, (int64_t[]){4, 2}), shard(2, (int64_t[]){0, 3}, (int64_t[]){4, 3})};
  assert_true(uncovered(gap, 2, &whole, idx));  // column 2
  assert_int_equal(idx[0], 0);
  assert_int_equal(idx[1], 2);
  assert_true(uncovered(NULL, 0, &whole, idx));  // no home at all
  assert_int_equal(idx[0], 0);
  assert_int_equal(idx[1], 0);
}

static void overlapping_shards_count_once(void **state) {
  (void)state;
  Shape whole = {.rank = 2, .dim = {4, 6}};
  TensorHome rows[] = {shard(2, (int64_t[]){0, 0}, (int64_t[]){2, 6}), shard(2, (int64_t[]){1, 0}, (int64_t[]){2, 6})};
  int64_t idx[IR_MAX_RANK];
  assert_true(uncovered(rows, 2, &whole, idx));  // rows 0-1 and 1-2 overlap; row 3 is in neither
  assert_int_equal(idx[0], 3);
  assert_int_equal(idx[1], 0);
  TensorHome all[] = {rows[0], rows[1], shard(2, (int64_t[]){2, 0}, (int64_t[]){2, 6})};
  assert_false(uncovered(all, 3, &whole, idx));
}

static void finds_one_missing_element_in_three_dimensions(void **state) {
  (void)state;
  Shape whole = {.rank = 3, .dim = {2, 3, 4}};
  TensorHome hs[] = {shard(3, (int64_t[]){0, 0, 0}, (int64_t[]){1, 3, 4}),  // plane 0
                     shard(3, (int64_t[]){1, 0, 0}, (int64_t[]){1, 2, 4}),  // plane 1, rows 0-1
                     shard(3, (int64_t[]){1, 2, 0}, (int64_t[]){1, 1, 3})};  // plane 1, row 2, columns 0-2
  int64_t idx[IR_MAX_RANK];
  assert_true(uncovered(hs, 3, &whole, idx));
  assert_int_equal(idx[0], 1);
  assert_int_equal(idx[1], 2);
  assert_int_equal(idx[2], 3);
}

// splitmix64: the random cases are the same on every run.
static uint64_t next_random(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The first element (row-major) of `whole` in no box, by visiting every
// element; false when all are covered.
static bool brute_force(const TensorHome *hs, int n, const Shape *whole, int64_t *idx) {
  for (int64_t e = 0; e < ir_shape_elems(whole); e++) {
    for (int64_t d = whole->rank - 1, rest = e; d >= 0; d--) idx[d] = rest % whole->dim[d], rest /= whole->dim[d];
    bool held = false;
    for (int i = 0; i < n && !held; i++) {
      held = true;
      for (int d = 0; d < whole->rank; d++)
        held &= hs[i].start[d] <= idx[d] && idx[d] < hs[i].start[d] + hs[i].shape.dim[d];
    }
    if (!held) return true;
  }
  return false;
}

static void agrees_with_brute_force_on_random_boxes(void **state) {
  (void)state;
  uint64_t seed = 1;
  int found = 0;
  for (int c = 0; c < RANDOM_CASES; c++) {
    Shape whole = {.rank = 1 + (int)(next_random(&seed) % RANDOM_RANK)};
    for (int d = 0; d < whole.rank; d++) whole.dim[d] = 1 + (int64_t)(next_random(&seed) % RANDOM_DIM);
    TensorHome hs[RANDOM_BOXES];
    int n = (int)(next_random(&seed) % (RANDOM_BOXES + 1));
    for (int i = 0; i < n; i++) {
      int64_t start[IR_MAX_RANK], shape[IR_MAX_RANK];
      for (int d = 0; d < whole.rank; d++) {
        start[d] = (int64_t)(next_random(&seed) % (uint64_t)whole.dim[d]);
        shape[d] = 1 + (int64_t)(next_random(&seed) % (uint64_t)(whole.dim[d] - start[d]));
      }
      hs[i] = shard(whole.rank, start, shape);
    }
    int64_t want[IR_MAX_RANK], got[IR_MAX_RANK];
    bool expect = brute_force(hs, n, &whole, want);
    assert_int_equal(uncovered(hs, n, &whole, got), expect);
    for (int d = 0; expect && d < whole.rank; d++) assert_int_equal(got[d], want[d]);
    found += expect;
  }
  assert_true(found > 0 && found < RANDOM_CASES);  // both outcomes were tried
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(covered_by_a_grid_and_by_a_whole_home),
      cmocka_unit_test(finds_the_first_element_of_a_missing_piece),
      cmocka_unit_test(overlapping_shards_count_once),
      cmocka_unit_test(finds_one_missing_element_in_three_dimensions),
      cmocka_unit_test(agrees_with_brute_force_on_random_boxes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
