// test_schedule.c: unit tests of the schedule compiler's building blocks:
// reservation tables against a brute-force model of every cycle, and the
// router's disjoint paths.
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

// ---- paths ----------------------------------------------------------------

// Every path runs src -> dst hop by hop over real ports, and no link
// direction is used twice by any of them.
static void assert_paths_valid(const Topology *t, int src, int dst, const Path *p, int n) {
  bool *used = calloc((size_t)t->links.len * 2, sizeof(bool));
  for (int k = 0; k < n; k++) {
    assert_true(p[k].nhops >= 1);
    assert_int_equal(p[k].hops[0].from, src);
    assert_int_equal(p[k].hops[p[k].nhops - 1].to, dst);
    for (int i = 0; i < p[k].nhops; i++) {
      const Hop *h = &p[k].hops[i];
      if (i) assert_int_equal(h->from, p[k].hops[i - 1].to);
      const Port *port = &t->devices[h->from].ports[h->out_port];
      assert_int_equal(port->link, h->link);
      assert_int_equal(port->peer, h->to);
      assert_int_equal(port->peer_port, h->in_port);
      assert_false(t->links.data[h->link].failed);
      int dir = t->links.data[h->link].a == h->from ? 0 : 1;
      assert_false(used[h->link * 2 + dir]);
      used[h->link * 2 + dir] = true;
    }
    if (k) assert_true(p[k].nhops >= p[k - 1].nhops);  // shortest first
  }
  free(used);
}

static int route(Arena *a, const char *yaml, int src, int dst, Path *out, int max) {
  Topology *t = topo_ok(a, yaml);
  int n = route_disjoint_paths(a, t, src, dst, max, out);
  assert_paths_valid(t, src, dst, out, n);
  return n;
}

// Seed 002 s4.3: inside a node, the direct link and a two-hop path through
// each of the other six TSPs.
static void a_node_offers_seven_paths(void **state) {
  (void)state;
  Arena a = {0};
  Path p[16];
  int n = route(&a, "topology: dragonfly\ndragonfly: {nodes: 1}\n", 0, 5, p, 16);
  assert_int_equal(n, 7);
  assert_int_equal(p[0].nhops, 1);
  for (int k = 1; k < 7; k++) assert_int_equal(p[k].nhops, 2);
  assert_int_equal(route(&a, "topology: dragonfly\ndragonfly: {nodes: 1}\n", 0, 5, p, 3), 3);
  arena_free(&a);
}

static void paths_follow_the_network(void **state) {
  (void)state;
  Arena a = {0};
  Path p[8];
  // Mesh corner to corner: two ports at each corner, both 6 hops.
  assert_int_equal(route(&a, "topology: mesh\ndims: [4, 4]\n", 0, 15, p, 8), 2);
  assert_int_equal(p[0].nhops, 6);
  assert_int_equal(p[1].nhops, 6);
  // A ring: one way round and the other.
  assert_int_equal(route(&a, "topology: ring\ndevices: 8\n", 0, 3, p, 8), 2);
  assert_int_equal(p[0].nhops, 3);
  assert_int_equal(p[1].nhops, 5);
  // A torus: four ports, four paths, the first minimal (2 + 2 hops).
  assert_int_equal(route(&a, "topology: torus\ndims: [4, 4]\n", 0, 10, p, 8), 4);
  assert_int_equal(p[0].nhops, 4);
  // A failed link is never used: the ring's short way is gone.
  assert_int_equal(route(&a, "topology: ring\ndevices: 8\nfailed_links: [[1, 2]]\n", 0, 3, p, 8), 1);
  assert_int_equal(p[0].nhops, 5);
  // Across nodes of rack72: at most 3 hops (local, node link, local).
  assert_int_equal(route(&a, "topology: dragonfly\ndragonfly: {nodes_per_rack: 9, racks: 1}\n", 3, 60, p, 1), 1);
  assert_true(p[0].nhops <= 3);
  assert_int_equal(route(&a, "topology: ring\ndevices: 8\n", 4, 4, p, 8), 0);  // to itself: no path
  arena_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reservations_match_a_cycle_by_cycle_model),
      cmocka_unit_test(streams_are_runs_not_vectors),
      cmocka_unit_test(a_node_offers_seven_paths),
      cmocka_unit_test(paths_follow_the_network),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
