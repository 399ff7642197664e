// test_reference.c: unit tests of the reference evaluation (runtime/
// reference.c): every collective against sums of the seeded inputs
// computed here, the other ops against their definitions (the new ones on
// hand-derived examples, in graphs built here: the front end does not take
// them yet), the seeding, the tolerance's growth factor and layouts'
// extents (runtime/loader.c).
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

// A seeded input's blocks (where the CPU has AVX-512, the vectorised
// seeding) hold the values ref_input gives element by element (the scalar
// table), over enough elements to meet every 16-bit limb sum's remainder.
static void seeded_blocks_match_the_elements(void **state) {
  (void)state;
  Fixture f;
  fixture(&f, MESH, "graph g {\n  input x : f32[1000, 100] @ each;\n  s = allreduce(x);\n  output s;\n}\n", 11);
  const Tensor *x = named(f.g, "x");
  enum { BLOCK = 4093 };  // odd: blocks start anywhere in a vector loop
  double out[BLOCK];
  int64_t n = ir_shape_elems(&x->shape), counts[3] = {0};
  for (int d = 0; d < 4; d++)
    for (int64_t first = 0; first < n; first += BLOCK) {
      int64_t count = MIN(n - first, BLOCK);
      ref_block(f.r, x, d, first, count, out);
      for (int64_t k = 0; k < count; k++) {
        assert_true(out[k] == ref_input(f.r, x, d, first + k));
        counts[(int)out[k] + 1]++;
      }
    }
  for (int v = 0; v < 3; v++) assert_true(counts[v] > 4 * n / 3 - 4 * n / 100);  // -1, 0 and 1 about a third each
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


// ---- graphs built by hand ---------------------------------------------------------

// A graph of tensors @ device(0) on MESH (or @ each when `each`), built
// without the front end.
typedef struct Built {
  Arena a;
  Topology *topo;
  Graph *g;
} Built;

static void built_init(Built *b) {
  memset(b, 0, sizeof *b);
  b->topo = topo_ok(&b->a, MESH);
  b->g = ARENA_NEW(&b->a, Graph);
  memset(b->g, 0, sizeof *b->g);
}

static Shape shape_of(int rank, const int64_t *dims) {
  Shape s = {.rank = rank};
  for (int i = 0; i < rank; i++) s.dim[i] = dims[i];
  return s;
}

static Tensor *add_tensor(Built *b, const char *name, TensorKind kind, DType dt, Shape s, bool each) {
  Tensor *t = ARENA_NEW(&b->a, Tensor);
  memset(t, 0, sizeof *t);
  *t = (Tensor){.id = b->g->tensors.len, .name = name, .kind = kind, .dtype = dt, .shape = s,
                .place = {.kind = each ? PLACE_EACH : PLACE_DEVICE}};
  VEC_PUSH(&b->a, &b->g->tensors, t);
  return t;
}

// An input of dtype dt and the given shape.
static Tensor *b_input(Built *b, const char *name, DType dt, int rank, const int64_t *dims) {
  return add_tensor(b, name, TENSOR_INPUT, dt, shape_of(rank, dims), false);
}

// result = kind(args), of the given shape; axis, start and end as the op takes them.
static Tensor *b_op(Built *b, const char *name, OpKind kind, int nargs, Tensor *const *args, int rank,
                    const int64_t *dims, int axis, int64_t start, int64_t end) {
  Tensor *r = add_tensor(b, name, TENSOR_VALUE, args[0]->dtype, shape_of(rank, dims), args[0]->place.kind == PLACE_EACH);
  Op *op = ARENA_NEW(&b->a, Op);
  memset(op, 0, sizeof *op);
  *op = (Op){.id = b->g->ops.len, .kind = kind, .result = r, .nargs = nargs, .axis = axis, .start = start, .end = end};
  for (int i = 0; i < nargs; i++) op->args[i] = args[i];
  if (kind == OP_RESHAPE) op->shape = r->shape;
  r->def = op;
  VEC_PUSH(&b->a, &b->g->ops, op);
  return r;
}

// Every element of t on device 0 equals want[] exactly, by ref_value and
// by ref_block.
static void expect_values(Reference *r, const Tensor *t, const double *want) {
  int64_t n = ir_shape_elems(&t->shape);
  double got[64];
  assert_true(n <= 64);
  ref_block(r, t, 0, 0, n, got);
  for (int64_t e = 0; e < n; e++) {
    if (ref_value(r, t, 0, e) != want[e] || got[e] != want[e])
      fail_msg("%s[%lld]: want %.17g, got %.17g / %.17g", t->name, (long long)e, want[e], ref_value(r, t, 0, e), got[e]);
  }
}

static const int64_t D23[] = {2, 3}, D3[] = {3}, D32[] = {3, 2}, D2[] = {2}, D1[] = {1}, D21[] = {2, 1};

// mul, sub, div element-wise and with a bias vector over the last
// dimension; exp and rsqrt; rounded once to the dtype (f32; 1/3 in f16).
static void elementwise_ops_on_small_examples(void **state) {
  (void)state;
  Built b;
  built_init(&b);
  Tensor *a = b_input(&b, "a", DT_F32, 2, D23), *c = b_input(&b, "c", DT_F32, 2, D23), *v = b_input(&b, "v", DT_F32, 1, D3);
  Tensor *x = b_input(&b, "x", DT_F32, 1, D3), *q = b_input(&b, "q", DT_F32, 1, D3);
  Tensor *h1 = b_input(&b, "h1", DT_F16, 1, D1), *h3 = b_input(&b, "h3", DT_F16, 1, D1);
  Tensor *ac[] = {a, c}, *av[] = {a, v}, *hh[] = {h1, h3};
  Tensor *mul = b_op(&b, "mul", OP_MUL, 2, ac, 2, D23, 0, 0, 0), *sub = b_op(&b, "sub", OP_SUB, 2, ac, 2, D23, 0, 0, 0);
  Tensor *dv = b_op(&b, "div", OP_DIV, 2, ac, 2, D23, 0, 0, 0), *mulv = b_op(&b, "mulv", OP_MUL, 2, av, 2, D23, 0, 0, 0);
  Tensor *subv = b_op(&b, "subv", OP_SUB, 2, av, 2, D23, 0, 0, 0), *divv = b_op(&b, "divv", OP_DIV, 2, av, 2, D23, 0, 0, 0);
  Tensor *ex = b_op(&b, "exp", OP_EXP, 1, &x, 1, D3, 0, 0, 0), *rs = b_op(&b, "rsqrt", OP_RSQRT, 1, &q, 1, D3, 0, 0, 0);
  Tensor *third = b_op(&b, "third", OP_DIV, 2, hh, 1, D1, 0, 0, 0);
  Reference *r = ref_new(b.g, b.topo, 1);
  const float av_[] = {1, 2, 3, 4, 5, 6}, cv[] = {2, 4, 8, -1, 0.5f, 3}, vv[] = {1, -2, 4}, xv[] = {0, 1, -1},
              qv[] = {4, 16, 0.25f};
  uint8_t one[2], three[2];
  num_set(DT_F16, one, 0, 1);
  num_set(DT_F16, three, 0, 3);
  ref_set_input(r, a, av_), ref_set_input(r, c, cv), ref_set_input(r, v, vv), ref_set_input(r, x, xv);
  ref_set_input(r, q, qv), ref_set_input(r, h1, one), ref_set_input(r, h3, three);
  expect_values(r, mul, (double[]){2, 8, 24, -4, 2.5, 18});
  expect_values(r, sub, (double[]){-1, -2, -5, 5, 4.5, 3});
  expect_values(r, dv, (double[]){0.5, 0.5, 0.375, -4, 10, 2});
  expect_values(r, mulv, (double[]){1, -4, 12, 4, -10, 24});
  expect_values(r, subv, (double[]){0, 4, -1, 3, 7, 2});
  expect_values(r, divv, (double[]){1, -1, 0.75, 4, -2.5, 1.5});
  expect_values(r, ex, (double[]){1, 2.7182817459106445, 0.3678794503211975});  // e, 1/e in f32
  expect_values(r, rs, (double[]){0.5, 0.25, 2});
  expect_values(r, third, (double[]){0.333251953125});  // 1/3 in f16
  ref_free(r);
  arena_free(&b.a);
}

// reduce_sum and reduce_max drop the axis (rank 1 -> [1]); reshape keeps
// the row-major order; slice takes [start, end); concat joins in operand
// order; transpose swaps the last two dimensions.
static void reduce_and_movement_ops_on_small_examples(void **state) {
  (void)state;
  Built b;
  built_init(&b);
  Tensor *a = b_input(&b, "a", DT_F32, 2, D23), *col = b_input(&b, "col", DT_F32, 2, D21), *v = b_input(&b, "v", DT_F32, 1, D3);
  Tensor *sum0 = b_op(&b, "sum0", OP_REDUCE_SUM, 1, &a, 1, D3, 0, 0, 0), *sum1 = b_op(&b, "sum1", OP_REDUCE_SUM, 1, &a, 1, D2, 1, 0, 0);
  Tensor *max0 = b_op(&b, "max0", OP_REDUCE_MAX, 1, &a, 1, D3, 0, 0, 0), *max1 = b_op(&b, "max1", OP_REDUCE_MAX, 1, &a, 1, D2, 1, 0, 0);
  Tensor *vsum = b_op(&b, "vsum", OP_REDUCE_SUM, 1, &v, 1, D1, 0, 0, 0);
  Tensor *re = b_op(&b, "re", OP_RESHAPE, 1, &a, 2, D32, 0, 0, 0);
  Tensor *sl1 = b_op(&b, "sl1", OP_SLICE, 1, &a, 2, (int64_t[]){2, 2}, 1, 1, 3);
  Tensor *sl0 = b_op(&b, "sl0", OP_SLICE, 1, &a, 2, (int64_t[]){1, 3}, 0, 1, 2);
  Tensor *ac[] = {a, col}, *aa[] = {a, a, col};
  Tensor *cat1 = b_op(&b, "cat1", OP_CONCAT, 2, ac, 2, (int64_t[]){2, 4}, 1, 0, 0);
  Tensor *cat3 = b_op(&b, "cat3", OP_CONCAT, 3, aa, 2, (int64_t[]){2, 7}, 1, 0, 0);
  Tensor *cat0 = b_op(&b, "cat0", OP_CONCAT, 2, (Tensor *[]){a, a}, 2, (int64_t[]){4, 3}, 0, 0, 0);
  Tensor *tr = b_op(&b, "tr", OP_TRANSPOSE, 1, &a, 2, D32, 0, 0, 0);
  Reference *r = ref_new(b.g, b.topo, 1);
  const float av[] = {1, 2, 3, 4, 5, 6}, cv[] = {7, 8}, vv[] = {0.5f, -2, 4};
  ref_set_input(r, a, av), ref_set_input(r, col, cv), ref_set_input(r, v, vv);
  expect_values(r, sum0, (double[]){5, 7, 9});
  expect_values(r, sum1, (double[]){6, 15});
  expect_values(r, max0, (double[]){4, 5, 6});
  expect_values(r, max1, (double[]){3, 6});
  expect_values(r, vsum, (double[]){2.5});
  expect_values(r, re, (double[]){1, 2, 3, 4, 5, 6});
  expect_values(r, sl1, (double[]){2, 3, 5, 6});
  expect_values(r, sl0, (double[]){4, 5, 6});
  expect_values(r, cat1, (double[]){1, 2, 3, 7, 4, 5, 6, 8});
  expect_values(r, cat3, (double[]){1, 2, 3, 1, 2, 3, 7, 4, 5, 6, 4, 5, 6, 8});
  expect_values(r, cat0, (double[]){1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  expect_values(r, tr, (double[]){1, 4, 2, 5, 3, 6});
  ref_free(r);
  arena_free(&b.a);
}

// matmul of a batched [2, 2, 3] by [3, 2] (one dgemm over 4 rows), and
// in f16, where the product is rounded once: 1 x 1 + 2^-11 x 1 is a tie
// that rounds to the even 1.
static void matmul_is_one_product_rounded_once(void **state) {
  (void)state;
  Built b;
  built_init(&b);
  Tensor *a = b_input(&b, "a", DT_F32, 3, (int64_t[]){2, 2, 3}), *w = b_input(&b, "w", DT_F32, 2, D32);
  Tensor *m = b_op(&b, "m", OP_MATMUL, 2, (Tensor *[]){a, w}, 3, (int64_t[]){2, 2, 2}, 0, 0, 0);
  Tensor *ha = b_input(&b, "ha", DT_F16, 2, (int64_t[]){1, 2}), *hw = b_input(&b, "hw", DT_F16, 2, (int64_t[]){2, 1});
  Tensor *hm = b_op(&b, "hm", OP_MATMUL, 2, (Tensor *[]){ha, hw}, 2, (int64_t[]){1, 1}, 0, 0, 0);
  Reference *r = ref_new(b.g, b.topo, 1);
  const float avals[] = {1, 2, 3, 4, 5, 6, -1, 0, 2, 3, -2, 1}, wvals[] = {1, 0, 2, -1, 0, 3};
  ref_set_input(r, a, avals), ref_set_input(r, w, wvals);
  uint8_t hav[4], hwv[4];
  num_set(DT_F16, hav, 0, 1), num_set(DT_F16, hav, 1, 1.0 / 2048);
  num_set(DT_F16, hwv, 0, 1), num_set(DT_F16, hwv, 1, 1);
  ref_set_input(r, ha, hav), ref_set_input(r, hw, hwv);
  expect_values(r, m, (double[]){5, 7, 14, 13, -1, 6, -1, 5});
  expect_values(r, hm, (double[]){1});
  ref_free(r);
  arena_free(&b.a);
}

// G(t) by the table of docs/isa.md section 5 on a small graph over the 4
// devices of MESH; an element just inside and just outside the tolerance.
static void tolerance_grows_with_the_graph(void **state) {
  (void)state;
  Built b;
  built_init(&b);
  Tensor *x = add_tensor(&b, "x", TENSOR_INPUT, DT_F16, shape_of(2, (int64_t[]){4, 8}), true);
  Tensor *w = add_tensor(&b, "w", TENSOR_PARAM, DT_F16, shape_of(2, (int64_t[]){8, 5}), true);
  Tensor *s = b_op(&b, "s", OP_ALLREDUCE, 1, &x, 2, (int64_t[]){4, 8}, 0, 0, 0);          // 1 + log2 4 = 3
  Tensor *mx = b_op(&b, "mx", OP_ALLREDUCE, 1, &x, 2, (int64_t[]){4, 8}, 0, 0, 0);        // max: 0
  mx->def->reduce = REDUCE_MAX;
  Tensor *m = b_op(&b, "m", OP_MATMUL, 2, (Tensor *[]){s, w}, 2, (int64_t[]){4, 5}, 0, 0, 0);  // 3 + 1 + 3 = 7
  Tensor *e = b_op(&b, "e", OP_EXP, 1, &m, 2, (int64_t[]){4, 5}, 0, 0, 0);                // 7 + 2 = 9
  Tensor *sm = b_op(&b, "sm", OP_SOFTMAX, 1, &e, 2, (int64_t[]){4, 5}, 1, 0, 0);          // 9 + 4 + 3 = 16
  Tensor *rl = b_op(&b, "rl", OP_RELU, 1, &sm, 2, (int64_t[]){4, 5}, 0, 0, 0);            // 16
  Tensor *rs = b_op(&b, "rs", OP_REDUCE_SUM, 1, &x, 1, (int64_t[]){4}, 1, 0, 0);          // 1 + 3 = 4
  Tensor *ad = b_op(&b, "ad", OP_ADD, 2, (Tensor *[]){mx, x}, 2, (int64_t[]){4, 8}, 0, 0, 0);  // 1
  Tensor *ct = b_op(&b, "ct", OP_CONCAT, 2, (Tensor *[]){s, ad}, 2, (int64_t[]){8, 8}, 0, 0, 0);  // 3
  Tensor *ix = add_tensor(&b, "ix", TENSOR_INPUT, DT_I32, shape_of(1, (int64_t[]){4}), true);
  Tensor *is = b_op(&b, "is", OP_ALLREDUCE, 1, &ix, 1, (int64_t[]){4}, 0, 0, 0);
  Reference *r = ref_new(b.g, b.topo, 1);
  const Tensor *ts[] = {x, w, s, mx, m, e, sm, rl, rs, ad, ct};
  const int want[] = {0, 0, 3, 0, 7, 9, 16, 16, 4, 1, 3};
  for (int i = 0; i < 11; i++)
    if (ref_growth(r, ts[i]) != want[i]) fail_msg("G(%s) = %d, want %d", ts[i]->name, ref_growth(r, ts[i]), want[i]);
  // f16, G(e) = 9: 9 (1e-5 + 1e-3 max(|want|, rms)).  At want 2, rms 1: 0.01809.
  double tol = ref_tolerance(r, e, 2, 1);
  assert_true(fabs(tol - 9 * (1e-5 + 1e-3 * 2)) < 1e-15);
  assert_true(fabs(2.018 - 2) <= tol && fabs(2.0181 - 2) > tol);
  // Below the rms, the rms sets it: want 0.001, rms 4: 9 (1e-5 + 4e-3) = 0.03609.
  assert_true(fabs(ref_tolerance(r, e, 0.001, 4) - 9 * (1e-5 + 4e-3)) < 1e-15);
  assert_true(ref_tolerance(r, x, 2, 1) == 0);   // G 0: exact
  assert_true(ref_tolerance(r, is, 2, 1) == 0);  // integers: exact
  ref_free(r);
  arena_free(&b.a);
}

// One device's copy of an @ each input given alone: the reference uses it
// there, the other devices keep the seeded (or the whole tensor's) values,
// and the tensor now differs between devices.
static void inputs_given_one_device_at_a_time(void **state) {
  (void)state;
  Fixture f;
  fixture(&f, MESH, "graph g {\n  input x : f32[4] @ each;\n  s = allreduce(x);\n  output s;\n}\n", 3);
  Tensor *x = named(f.g, "x"), *s = named(f.g, "s");
  const float all[] = {1, 2, 3, 4}, mine[] = {10, 20, 30, 40};
  ref_set_input(f.r, x, all);
  assert_true(ref_same_on_every_device(f.r, x));
  ref_set_input_on(f.r, x, 2, mine);
  assert_false(ref_same_on_every_device(f.r, x));
  for (int e = 0; e < 4; e++) {
    assert_true(ref_input(f.r, x, 2, e) == mine[e]);
    assert_true(ref_input(f.r, x, 1, e) == all[e]);
    assert_true(ref_value(f.r, s, 0, e) == 3 * all[e] + mine[e]);
  }
  fixture_free(&f);
}

// The vectors a home spans (runtime/loader.c): packed, ceil(bytes / 320);
// with a pitch P, (rows - 1) P + ceil(C / 80) for f32 rows of C.
static void layouts_span_their_rows(void **state) {
  (void)state;
  TensorHome th = {.name = "x", .dtype = DT_F32, .shape = {.rank = 2, .dim = {3, 100}}};
  assert_int_equal(emu_home_vectors(&th, 320), 4);  // 1200 bytes
  th.pitch = 2;
  assert_int_equal(emu_home_vectors(&th, 320), 6);
  th.pitch = 3;
  assert_int_equal(emu_home_vectors(&th, 320), 8);
  th.shape = (Shape){.rank = 1, .dim = {100}};  // one row: the pitch does not matter
  assert_int_equal(emu_home_vectors(&th, 320), 2);
  th.shape = (Shape){.rank = 2, .dim = {(int64_t)1 << 40, 1}}, th.pitch = UINT32_MAX;
  assert_true(emu_home_vectors(&th, 320) == UINT64_MAX);  // overflow
}

// Batches: batch 0's reference seeds exactly as one batch always did (the
// values below were recorded before batches existed); batch b's seeds its
// inputs apart (an @ each one on every device too) and shares the params
// and every tensor computed from params alone, which batch 0's reference
// alone materialises.
static void batches_share_what_no_input_reaches(void **state) {
  (void)state;
  static const double golden_x[8] = {0, -1, -1, -1, 0, 0, 0, 1}, golden_w[8] = {-1, -1, 0, -1, 0, 0, -1, -1};
  static const double golden_e[8] = {0, 0, -1, -1, -1, 0, -1, -1};
  Fixture f;
  fixture(&f, MESH, "graph g {\n  input x : f32[4, 8];\n  param w : f32[8, 8];\n  input e : i8[40] @ each;\n"
                    "  y = matmul(x, w);\n  v = matmul(w, w);\n  s = allreduce(e);\n  output y;\n  output v;\n"
                    "  output s;\n}\n", 5);
  Tensor *x = named(f.g, "x"), *w = named(f.g, "w"), *e = named(f.g, "e"), *y = named(f.g, "y"), *v = named(f.g, "v");
  Tensor *s = named(f.g, "s");
  for (int k = 0; k < 8; k++) {
    assert_true(ref_input(f.r, x, 2, k) == golden_x[k]);
    assert_true(ref_input(f.r, w, 2, k) == golden_w[k]);
    assert_true(ref_input(f.r, e, 2, k) == golden_e[k]);
  }
  Reference *b1 = ref_new_batch(f.r, 1), *b2 = ref_new_batch(f.r, 2);
  int differ_x = 0, differ_e = 0, differ_12 = 0;
  for (int64_t k = 0; k < 32; k++) {
    differ_x += ref_input(b1, x, 0, k) != ref_input(f.r, x, 0, k);
    differ_12 += ref_input(b1, x, 0, k) != ref_input(b2, x, 0, k);
  }
  for (int64_t k = 0; k < 40; k++) differ_e += ref_input(b1, e, 3, k) != ref_input(f.r, e, 3, k);
  assert_true(differ_x > 10 && differ_12 > 10 && differ_e > 10);
  for (int64_t k = 0; k < 64; k++) {
    assert_true(ref_input(b1, w, 0, k) == ref_input(f.r, w, 0, k));
    assert_true(ref_value(b2, v, 1, k) == ref_value(f.r, v, 1, k));
  }
  for (int64_t i = 0; i < 4; i++)  // batch 1's product is its own x by the shared w
    for (int64_t j = 0; j < 8; j++) {
      double want = 0;
      for (int64_t k = 0; k < 8; k++) want += ref_input(b1, x, 0, i * 8 + k) * ref_input(f.r, w, 0, k * 8 + j);
      assert_true(ref_value(b1, y, 0, i * 8 + j) == want);
    }
  for (int64_t k = 0; k < 40; k++) {
    double sum = 0;
    for (int d = 0; d < 4; d++) sum += ref_input(b2, e, d, k);
    assert_true(ref_value(b2, s, 0, k) == sum);
  }
  // Batch 1 materialised its x and y (the matmul's operand and result), 32
  // doubles each; w and v, 64 each, only batch 0's reference holds.
  assert_int_equal(ref_held_bytes(b1), 64 * sizeof(double));
  assert_int_equal(ref_held_bytes(f.r), (64 + 64) * sizeof(double));
  assert_false(ref_same_on_every_device(b1, e) || !ref_same_on_every_device(b1, s) || !ref_same_on_every_device(b1, w));
  // Values given to a batch are its own.
  float given[32];
  for (int k = 0; k < 32; k++) given[k] = (float)k / 4;
  ref_set_input(b2, x, given);
  for (int k = 0; k < 32; k++) assert_true(ref_input(b2, x, 0, k) == given[k]);
  for (int k = 0; k < 8; k++) assert_true(ref_input(f.r, x, 2, k) == golden_x[k]);
  assert_true(ref_input(b1, x, 0, 1) != given[1] || ref_input(b1, x, 0, 2) != given[2]);
  ref_free(b1);
  ref_free(b2);
  fixture_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(collectives_reduce_the_seeded_inputs),
      cmocka_unit_test(compute_ops_follow_their_definitions),
      cmocka_unit_test(results_are_stored_in_their_dtype),
      cmocka_unit_test(inputs_are_seeded),
      cmocka_unit_test(blocks_give_the_same_values),
      cmocka_unit_test(seeded_blocks_match_the_elements),
      cmocka_unit_test(device_invariance_follows_the_graph),
      cmocka_unit_test(elementwise_ops_on_small_examples),
      cmocka_unit_test(reduce_and_movement_ops_on_small_examples),
      cmocka_unit_test(matmul_is_one_product_rounded_once),
      cmocka_unit_test(tolerance_grows_with_the_graph),
      cmocka_unit_test(inputs_given_one_device_at_a_time),
      cmocka_unit_test(layouts_span_their_rows),
      cmocka_unit_test(batches_share_what_no_input_reaches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
