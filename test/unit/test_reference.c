// test_reference.c: unit tests of the reference evaluation (runtime/
// reference.c): every collective against sums of the seeded inputs
// computed here, the other ops against their definitions, and the seeding.
#include "harness.h"

#include "../../runtime/emu.h"

#include <math.h>

typedef struct Fixture {
  Arena a;
  Topology *topo;
  Graph *g;
  Reference *r;
} Fixture;

static void fixture(Fixture *f, const char *topo, const char *tg, uint64_t seed) {
  memset(f, 0, sizeof *f);
  Captured c;
  capture_begin(&c);
  f->topo = topo_ok(&f->a, topo);
  Ast *ast = fe_parse(&f->a, &c.diag, src_from_string(&f->a, "m.tg", tg));
  f->g = ast ? fe_check(&f->a, &c.diag, ast, f->topo) : NULL;
  if (!f->g) fail_msg("rejected:\n%s", captured_text(&c));
  capture_end(&c);
  f->r = ref_new(f->g, f->topo, seed);
}

static void fixture_free(Fixture *f) {
  ref_free(f->r);
  arena_free(&f->a);
}

static Tensor *named(Graph *g, const char *name) {
  for (int i = 0; i < g->tensors.len; i++)
    if (!strcmp(g->tensors.data[i]->name, name)) return g->tensors.data[i];
  fail_msg("no tensor %s", name);
  return NULL;
}

static const char *const MESH = "topology: mesh\ndims: [2, 2]\n";  // 4 devices

// allreduce: every device holds the sum (or max) over the group; the group
// of `each except device(2)` is devices 0, 1, 3.
static void collectives_reduce_the_seeded_inputs(void **state) {
  (void)state;
  Fixture f;
  fixture(&f, MESH, "graph g {\n  input x : i32[9, 10] @ each except device(2);\n"
                    "  s = allreduce(x);\n  m = allreduce(x, op=max);\n"
                    "  rs = reduce_scatter(x);\n  ag = all_gather(x);\n  output s;\n}\n", 7);
  Tensor *x = named(f.g, "x"), *s = named(f.g, "s"), *m = named(f.g, "m");
  Tensor *rs = named(f.g, "rs"), *ag = named(f.g, "ag");
  const int devs[] = {0, 1, 3};
  double sum[90];
  for (int64_t e = 0; e < 90; e++) {
    double max = -2;
    sum[e] = 0;
    for (int i = 0; i < 3; i++) {
      double v = ref_input(f.r, x, devs[i], e);
      assert_true(v == -1 || v == 0 || v == 1);
      sum[e] += v;
      max = fmax(max, v);
    }
    for (int i = 0; i < 3; i++) {
      assert_true(ref_value(f.r, s, devs[i], e) == sum[e]);
      assert_true(ref_value(f.r, m, devs[i], e) == max);
    }
  }
  for (int i = 0; i < 3; i++)  // the i-th device of the group holds rows 3i .. 3i+2 of the sum
    for (int64_t e = 0; e < 30; e++) assert_true(ref_value(f.r, rs, devs[i], e) == sum[i * 30 + e]);
  for (int64_t e = 0; e < 3 * 90; e++)  // every device: the group's copies of x, in device order
    assert_true(ref_value(f.r, ag, 1, e) == ref_input(f.r, x, devs[e / 90], e % 90));
  fixture_free(&f);
}

static void compute_ops_follow_their_definitions(void **state) {
  (void)state;
  Fixture f;
  fixture(&f, MESH, "graph g {\n  input a : f32[3, 4] @ device(1);\n  param w : f32[4, 5] @ device(1);\n"
                    "  param b : f32[5] @ device(1);\n  m = matmul(a, w);\n  mb = add(m, b);\n"
                    "  r = relu(mb);\n  t = transpose(r);\n  sm = softmax(mb);\n  ln = layernorm(mb);\n"
                    "  c = copy(t) @ device(3);\n  output c;\n}\n", 1);
  Tensor *a = named(f.g, "a"), *w = named(f.g, "w"), *b = named(f.g, "b");
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) {
      double want = 0;
      for (int k = 0; k < 4; k++) want += ref_input(f.r, a, 1, i * 4 + k) * ref_input(f.r, w, 1, k * 5 + j);
      assert_true(ref_value(f.r, named(f.g, "m"), 1, i * 5 + j) == want);
      want += ref_input(f.r, b, 1, j);
      assert_true(ref_value(f.r, named(f.g, "mb"), 1, i * 5 + j) == want);
      assert_true(ref_value(f.r, named(f.g, "r"), 1, i * 5 + j) == fmax(want, 0));
      assert_true(ref_value(f.r, named(f.g, "t"), 1, j * 3 + i) == fmax(want, 0));  // [5, 3]
      assert_true(ref_value(f.r, named(f.g, "c"), 3, j * 3 + i) == fmax(want, 0));
    }
  for (int i = 0; i < 3; i++) {  // softmax rows sum to 1; layernorm rows to 0
    double s = 0, l = 0;
    for (int j = 0; j < 5; j++) s += ref_value(f.r, named(f.g, "sm"), 1, i * 5 + j), l += ref_value(f.r, named(f.g, "ln"), 1, i * 5 + j);
    assert_true(fabs(s - 1) < 1e-6);
    assert_true(fabs(l) < 1e-5);
  }
  fixture_free(&f);
}

// Results are rounded to their dtype: 0.1 is no i32 nor f16 number.
static void results_are_stored_in_their_dtype(void **state) {
  (void)state;
  Fixture f;
  fixture(&f, MESH, "graph g {\n  input x : f16[1, 3] @ device(0);\n  g2 = gelu(x);\n  output g2;\n}\n", 2);
  Tensor *x = named(f.g, "x"), *g2 = named(f.g, "g2");
  for (int e = 0; e < 3; e++) {
    double v = ref_input(f.r, x, 0, e), want = 0.5 * v * (1 + erf(v / sqrt(2.0)));
    uint8_t buf[2];
    num_set(DT_F16, buf, 0, want);
    assert_true(ref_value(f.r, g2, 0, e) == num_get(DT_F16, buf, 0));  // gelu(1) = 0.8413.. -> f16
  }
  fixture_free(&f);
}

// The same seed gives the same inputs; another seed others; all three
// values occur.
static void inputs_are_seeded(void **state) {
  (void)state;
  Fixture f1, f2, f3;
  const char *tg = "graph g {\n  input x : i8[1000] @ each;\n  output x;\n}\n";
  fixture(&f1, MESH, tg, 5);
  fixture(&f2, MESH, tg, 5);
  fixture(&f3, MESH, tg, 6);
  int differ = 0, count[3] = {0};
  for (int64_t e = 0; e < 1000; e++) {
    double v = ref_input(f1.r, f1.g->tensors.data[0], 2, e);
    assert_true(v == ref_input(f2.r, f2.g->tensors.data[0], 2, e));
    differ += v != ref_input(f3.r, f3.g->tensors.data[0], 2, e);
    count[(int)v + 1]++;
  }
  assert_true(differ > 500);
  for (int k = 0; k < 3; k++) assert_true(count[k] > 250);
  fixture_free(&f1);
  fixture_free(&f2);
  fixture_free(&f3);
}

// ref_block gives ref_value's values bit for bit, whatever the block: every
// op, on every device of the group, blocks crossing all_gather's parts.
static void blocks_give_the_same_values(void **state) {
  (void)state;
  Fixture f;
  fixture(&f, MESH, "graph g {\n  input x : f32[6, 10] @ each except device(2);\n  s = allreduce(x);\n"
                    "  m = allreduce(x, op=max);\n  rs = reduce_scatter(x);\n  ag = all_gather(x);\n"
                    "  r = relu(rs);\n  h = add(s, s);\n  output h;\n}\n", 3);
  const int devs[] = {0, 1, 3};
  double out[180];
  for (int i = 0; i < f.g->tensors.len; i++) {
    const Tensor *t = f.g->tensors.data[i];
    int64_t n = ir_shape_elems(&t->shape);
    for (int d = 0; d < 3; d++)
      for (int64_t first = 0; first < n; first += 7) {
        int64_t count = MIN(n - first, 37);
        ref_block(f.r, t, devs[d], first, count, out);
        for (int64_t k = 0; k < count; k++) assert_true(out[k] == ref_value(f.r, t, devs[d], first + k));
      }
  }
  fixture_free(&f);
}

// Which tensors are the same on every device: collectives that read every
// copy are, reduce_scatter and what @ each inputs feed elementwise are not,
// unless the input is given (the same array on every device).
static void device_invariance_follows_the_graph(void **state) {
  (void)state;
  Fixture f;
  fixture(&f, MESH, "graph g {\n  input x : f32[4, 10] @ each;\n  param w : f32[4, 10] @ device(1);\n"
                    "  s = allreduce(x);\n  rs = reduce_scatter(x);\n  ag = all_gather(x);\n"
                    "  a = add(x, x);\n  b = add(s, s);\n  c = relu(ag);\n  output b;\n}\n", 1);
  const char *same[] = {"w", "s", "ag", "b", "c"}, *differ[] = {"x", "rs", "a"};
  for (int i = 0; i < 5; i++) assert_true(ref_same_on_every_device(f.r, named(f.g, same[i])));
  for (int i = 0; i < 3; i++) assert_false(ref_same_on_every_device(f.r, named(f.g, differ[i])));
  float given[40];
  for (int i = 0; i < 40; i++) given[i] = (float)i / 4;
  ref_set_input(f.r, named(f.g, "x"), given);  // the same on every device: only rs still differs
  assert_true(ref_same_on_every_device(f.r, named(f.g, "x")));
  assert_true(ref_same_on_every_device(f.r, named(f.g, "a")));
  assert_false(ref_same_on_every_device(f.r, named(f.g, "rs")));
  for (int e = 0; e < 40; e++) {  // and the reference uses the given values
    assert_true(ref_input(f.r, named(f.g, "x"), 2, e) == given[e]);
    assert_true(ref_value(f.r, named(f.g, "s"), 0, e) == 4 * given[e]);
  }
  for (int e = 0; e < 10; e++) assert_true(ref_value(f.r, named(f.g, "rs"), 3, e) == 4 * given[30 + e]);
  double out[40];
  ref_block(f.r, named(f.g, "s"), 1, 0, 40, out);  // given values read a block at a time
  for (int e = 0; e < 40; e++) assert_true(out[e] == 4 * given[e]);
  fixture_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(collectives_reduce_the_seeded_inputs),
      cmocka_unit_test(compute_ops_follow_their_definitions),
      cmocka_unit_test(results_are_stored_in_their_dtype),
      cmocka_unit_test(inputs_are_seeded),
      cmocka_unit_test(blocks_give_the_same_values),
      cmocka_unit_test(device_invariance_follows_the_graph),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
