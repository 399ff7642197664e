// test_partition.c: unit tests of the partitioner (passes/partition.c) and
// the op table's estimates it plans with (passes/compute.c): the estimate
// of an op alone against this scheduler's own makespan, and the shards of
// a column split covering the weight and the result exactly.
#include "harness.h"

static const char *const ONE = "topology: fully_connected\ndevices: 1\n";
// Eight devices of 16384 vectors (5 MiB): a 12 MiB weight must be split.
static const char *const SMALL8 = "topology: fully_connected\ndevices: 8\nsram_vectors: 16384\n";

typedef struct Run {
  Compilation c;
  Captured cap;
} Run;

// Compiles tg for the topology up to stop_after; fails the test on an error.
static void run_until(Run *r, const char *yaml, const char *tg, const char *stop_after) {
  memset(r, 0, sizeof *r);
  capture_begin(&r->cap);
  r->c.diag = r->cap.diag;
  r->c.topo = topo_ok(&r->c.arena, yaml);
  r->c.src = src_from_string(&r->c.arena, "m.tg", tg);
  r->c.drift_ppm = -1, r->c.launch_window = -1;
  if (!pass_run_pipeline(&r->c, NULL, stop_after)) fail_msg("rejected:\n%s", captured_text(&r->cap));
}

static void run_free(Run *r) {
  capture_end(&r->cap);
  arena_free(&r->c.arena);
}

// The one compute node's cycles, from its first instruction to its last
// result, against the estimate: within `percent`.
static void assert_estimate(const char *decl, const char *call, int percent) {
  char tg[512];
  snprintf(tg, sizeof tg, "graph g {\n  %s\n  y = %s;\n  output y;\n}\n", decl, call);
  Run r;
  run_until(&r, ONE, tg, "schedule");
  const DagNode *n = NULL;
  for (int i = 0; i < r.c.dag->nodes.len; i++)
    if (r.c.dag->nodes.data[i]->kind == NODE_COMPUTE) n = r.c.dag->nodes.data[i];
  assert_non_null(n);
  int64_t exact = n->finish - n->start, est = compute_estimate_cycles(n->op, r.c.topo->link.vector_bytes);
  if (llabs(est - exact) * 100 > exact * percent)
    fail_msg("%s: estimated %lld cycles, scheduled %lld", call, (long long)est, (long long)exact);
  run_free(&r);
}

static void estimates_are_near_the_schedule(void **state) {
  (void)state;
  const char *mm = "input x : f16[1024, 1024] @ device(0); param w : f16[1024, 4096] @ device(0);";
  assert_estimate(mm, "matmul(x, w)", 5);
  assert_estimate("input x : f16[800, 3000] @ device(0); param w : f16[3000, 700] @ device(0);", "matmul(x, w)", 10);
  assert_estimate("input x : f16[64, 512] @ device(0); param w : f16[512, 512] @ device(0);", "matmul(x, w)", 15);
  const char *x = "input x : f16[1024, 1024] @ device(0);";
  assert_estimate(x, "gelu(x)", 5);
  assert_estimate(x, "softmax(x)", 15);
  assert_estimate(x, "layernorm(x)", 15);
  assert_estimate(x, "relu(x)", 5);
  assert_estimate(x, "add(x, x)", 5);
  assert_estimate("input x : f32[300, 700] @ device(0);", "softmax(x)", 25);
  assert_estimate("input a : f16[700, 700] @ device(0);", "cholesky(a)", 5);
  assert_estimate("input a : f32[333, 333] @ device(0);", "cholesky(a)", 5);
}

static const Tensor *find(const Graph *g, const char *name) {
  for (int i = 0; i < g->tensors.len; i++)
    if (!strcmp(g->tensors.data[i]->name, name)) return g->tensors.data[i];
  return NULL;
}

static bool boxes_overlap(const Tensor *a, const Tensor *b) {
  for (int d = 0; d < a->shape.rank; d++)
    if (a->shard_start[d] + a->shape.dim[d] <= b->shard_start[d] || b->shard_start[d] + b->shape.dim[d] <= a->shard_start[d])
      return false;
  return true;
}

// The shards of `of` (a model tensor of `elems` elements) lie inside it,
// overlap nowhere and add up to all of it: they tile it.  *n gets how many.
static void assert_shards_tile(const Graph *g, const char *of, const Shape *whole, int *n) {
  const Tensor *shards[64];
  int64_t area = 0;
  *n = 0;
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *t = g->tensors.data[i];
    if (!t->shard_of || strcmp(t->shard_of->name, of)) continue;
    assert_int_equal(t->place.kind, PLACE_DEVICE);
    for (int d = 0; d < whole->rank; d++) assert_true(t->shard_start[d] + t->shape.dim[d] <= whole->dim[d]);
    for (int j = 0; j < *n; j++) assert_false(boxes_overlap(t, shards[j]));
    area += ir_shape_elems(&t->shape);
    shards[(*n)++] = t;
  }
  assert_int_equal(area, ir_shape_elems(whole));
}

static void a_weight_too_big_is_split(void **state) {
  (void)state;
  Run r;
  // [1000 x 6001] f16: 12 MiB padded, more than a 5 MiB device holds.
  run_until(&r, SMALL8,
            "graph g {\n  input x : f16[64, 1000] @ device(2);\n  param w : f16[1000, 6001];\n"
            "  y = matmul(x, w);\n  output y;\n}\n",
            "partition");
  const Graph *g = r.c.graph;
  assert_null(find(g, "w"));
  assert_null(find(g, "y"));
  int nw, ny;
  assert_shards_tile(g, "w", &(Shape){.rank = 2, .dim = {1000, 6001}}, &nw);
  assert_shards_tile(g, "y", &(Shape){.rank = 2, .dim = {64, 6001}}, &ny);
  assert_true(nw >= 3);  // 12 MiB in 5 MiB devices
  assert_int_equal(g->outputs.len, ny);
  // every weight shard on its own device, the first with the activation
  bool used[8] = {0};
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *t = g->tensors.data[i];
    if (!t->shard_of || strcmp(t->shard_of->name, "w")) continue;
    assert_false(used[t->place.index]);
    used[t->place.index] = true;
    if (t->shard_start[0] == 0 && t->shard_start[1] == 0) assert_int_equal(t->place.index, 2);
  }
  run_free(&r);
}

static void a_weight_that_fits_stays_whole_when_nothing_is_faster(void **state) {
  (void)state;
  Run r;
  // The activation is as big as the weight: sending it costs more than the
  // product saves.
  run_until(&r, SMALL8,
            "graph g {\n  input x : f16[1024, 320] @ device(0);\n  param w : f16[320, 320];\n"
            "  y = matmul(x, w);\n  output y;\n}\n",
            "partition");
  assert_non_null(find(r.c.graph, "w"));
  assert_int_equal(find(r.c.graph, "w")->place.index, 0);
  run_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(estimates_are_near_the_schedule),
      cmocka_unit_test(a_weight_too_big_is_split),
      cmocka_unit_test(a_weight_that_fits_stays_whole_when_nothing_is_faster),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
