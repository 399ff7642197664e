// test_topology.c: unit tests of the topology IR: every family's link count,
// diameter and port numbering against closed forms, the bit-parallel
// diameter against a plain BFS on random graphs, link timing, and the
// loader's handling of failures, spares and bad values.
#include "harness.h"

#include <stdio.h>

// ---- a reference diameter: one queue BFS per source ------------------------------

// Failed devices (whose cables have all failed) are neither sources nor
// destinations: the diameter is over working devices.
static int reference_diameter(const Topology *t) {
  int n = t->ndevices, best = 0;
  int *dist = malloc(sizeof(int) * (size_t)n), *queue = malloc(sizeof(int) * (size_t)n);
  for (int s = 0; s < n && best >= 0; s++) {
    if (ir_device_failed(t, s)) continue;
    for (int v = 0; v < n; v++) dist[v] = -1;
    int head = 0, tail = 0;
    dist[s] = 0;
    queue[tail++] = s;
    while (head < tail) {
      int v = queue[head++];
      for (int p = 0; p < t->devices[v].nports; p++) {
        const Port *port = &t->devices[v].ports[p];
        if (port->link < 0 || t->links.data[port->link].failed || dist[port->peer] >= 0) continue;
        dist[port->peer] = dist[v] + 1;
        queue[tail++] = port->peer;
      }
    }
    for (int v = 0; v < n && best >= 0; v++)
      if (!ir_device_failed(t, v)) best = dist[v] < 0 ? -1 : MAX(best, dist[v]);
  }
  free(dist);
  free(queue);
  return best;
}

// Every port points at a peer port that points back over the same link.
static void assert_ports_consistent(const Topology *t) {
  int plugged = 0;
  for (int d = 0; d < t->ndevices; d++)
    for (int p = 0; p < t->devices[d].nports; p++) {
      const Port *port = &t->devices[d].ports[p];
      if (port->link < 0) continue;
      plugged++;
      const Port *back = &t->devices[port->peer].ports[port->peer_port];
      assert_int_equal(back->peer, d);
      assert_int_equal(back->peer_port, p);
      assert_int_equal(back->link, port->link);
    }
  assert_int_equal(plugged, 2 * t->links.len);
}

static Topology *grid(Arena *a, const char *family, int x, int y, int z) {
  char yaml[128];
  if (z)
    snprintf(yaml, sizeof yaml, "topology: %s\ndims: [%d, %d, %d]\n", family, x, y, z);
  else if (y)
    snprintf(yaml, sizeof yaml, "topology: %s\ndims: [%d, %d]\n", family, x, y);
  else
    snprintf(yaml, sizeof yaml, "topology: %s\ndims: [%d]\n", family, x);
  return topo_ok(a, yaml);
}

// Mesh: (n_d - 1) * N / n_d links along each dimension; diameter sum (n_d - 1).
static void mesh_links_and_diameter_follow_closed_forms(void **state) {
  (void)state;
  for (int x = 1; x <= 6; x++)
    for (int y = 0; y <= 5; y++)
      for (int z = 0; z <= (y ? 3 : 0); z++) {
        Arena a = {0};
        Topology *t = grid(&a, "mesh", x, y, z);
        int dims[3] = {x, y ? y : 1, z ? z : 1}, n = dims[0] * dims[1] * dims[2];
        int links = 0, diameter = 0;
        for (int d = 0; d < 3; d++) links += (dims[d] - 1) * (n / dims[d]), diameter += dims[d] - 1;
        assert_int_equal(t->ndevices, n);
        assert_int_equal(t->links.len, links);
        assert_int_equal(ir_topo_diameter(t, NULL), diameter);
        assert_int_equal(ir_topo_diameter_search(t, NULL), diameter);
        assert_ports_consistent(t);
        arena_free(&a);
      }
}

// Torus: every dimension of size >= 2 adds N links; diameter sum floor(n_d / 2).
static void torus_links_and_diameter_follow_closed_forms(void **state) {
  (void)state;
  for (int x = 1; x <= 7; x++)
    for (int y = 1; y <= 6; y++) {
      Arena a = {0};
      Topology *t = grid(&a, "torus", x, y, 0);
      int n = x * y;
      assert_int_equal(t->links.len, (x >= 2 ? n : 0) + (y >= 2 ? n : 0));
      assert_int_equal(ir_topo_diameter(t, NULL), x / 2 + y / 2);
      assert_int_equal(ir_topo_diameter_search(t, NULL), x / 2 + y / 2);
      assert_ports_consistent(t);
      arena_free(&a);
    }
}

static void ring_and_fully_connected_follow_closed_forms(void **state) {
  (void)state;
  for (int n = 1; n <= 40; n += 3) {
    Arena a = {0};
    char yaml[96];
    snprintf(yaml, sizeof yaml, "topology: ring\ndevices: %d\n", n);
    Topology *t = topo_ok(&a, yaml);
    assert_int_equal(t->links.len, n >= 2 ? n : 0);
    assert_int_equal(ir_topo_diameter(t, NULL), n / 2);
    assert_int_equal(ir_topo_diameter_search(t, NULL), n / 2);
    assert_ports_consistent(t);
    snprintf(yaml, sizeof yaml, "topology: fully_connected\ndevices: %d\n", n);
    t = topo_ok(&a, yaml);
    assert_int_equal(t->links.len, n * (n - 1) / 2);
    assert_int_equal(ir_topo_diameter(t, NULL), n >= 2 ? 1 : 0);
    assert_int_equal(ir_topo_diameter_search(t, NULL), n >= 2 ? 1 : 0);
    assert_ports_consistent(t);
    arena_free(&a);
  }
}

// Port 2d faces -d and 2d+1 faces +d; ids are row-major with x fastest.
static void mesh_ports_face_their_direction(void **state) {
  (void)state;
  Arena a = {0};
  Topology *t = grid(&a, "mesh", 3, 3, 0);
  const Device *center = &t->devices[4];  // (1, 1)
  assert_int_equal(center->ports[0].peer, 3);
  assert_int_equal(center->ports[1].peer, 5);
  assert_int_equal(center->ports[2].peer, 1);
  assert_int_equal(center->ports[3].peer, 7);
  assert_int_equal(t->devices[0].ports[0].link, -1);  // (0, 0) has no -x neighbour
  assert_int_equal(t->devices[8].coord[0], 2);
  assert_int_equal(t->devices[8].coord[1], 2);
  arena_free(&a);
}

static void rack72_wires_the_seed_dragonfly(void **state) {
  (void)state;
  Arena a = {0};
  Topology *t = topo_ok(&a, "topology: dragonfly\n"
                            "dragonfly: {nodes_per_rack: 9, racks: 1}\n");
  assert_int_equal(t->ndevices, 72);
  assert_int_equal(t->links.len, 9 * 28 + 36 * 2);
  assert_int_equal(ir_topo_diameter(t, NULL), 3);
  assert_int_equal(reference_diameter(t), 3);
  assert_ports_consistent(t);
  // 7 local ports, then 4 global; node 0's two links to node 1 sit in its
  // slots 0 and 1 (TSPs 0 and 1, global port 0 = port 7), and in node 1's
  // slots 0 and 1 as well.
  assert_int_equal(t->devices[0].nports, 11);
  assert_int_equal(t->devices[0].ports[7].peer, 8);
  assert_int_equal(t->devices[0].ports[7].peer_port, 7);
  assert_int_equal(t->devices[1].ports[7].peer, 9);
  // Device 3's local port 2 faces TSP 2; its port 3 faces TSP 4.
  assert_int_equal(t->devices[3].ports[2].peer, 2);
  assert_int_equal(t->devices[3].ports[3].peer, 4);
  // id = ((rack * 9) + node) * 8 + tsp
  assert_int_equal(t->devices[45].coord[1], 5);
  assert_int_equal(t->devices[45].coord[2], 5);
  arena_free(&a);
}

static void dragonflies_match_the_reference_bfs(void **state) {
  (void)state;
  static const char *const systems[] = {
      "dragonfly: {nodes: 33}\n",
      "dragonfly: {tsps_per_node: 4, global_ports_per_tsp: 2, nodes_per_rack: 3, racks: 7}\n",
      "dragonfly: {tsps_per_node: 2, global_ports_per_tsp: 3, nodes: 5, links_per_node_pair: 1}\n",
      "dragonfly: {tsps_per_node: 3, global_ports_per_tsp: 4, nodes_per_rack: 4, racks: 10}\n",
  };
  for (size_t i = 0; i < ARRAY_LEN(systems); i++) {
    Arena a = {0};
    char yaml[256];
    snprintf(yaml, sizeof yaml, "topology: dragonfly\n%s", systems[i]);
    Topology *t = topo_ok(&a, yaml);
    assert_ports_consistent(t);
    assert_int_equal(ir_topo_diameter(t, NULL), reference_diameter(t));
    arena_free(&a);
  }
}

// Random connected graphs of 2..600 devices (crossing the 256-source batch
// boundary of the bit-parallel search), some links failed.
static void bit_parallel_diameter_matches_plain_bfs(void **state) {
  (void)state;
  unsigned seed = 12345;
  for (int round = 0; round < 40; round++) {
    seed = seed * 1103515245u + 12345u;
    int n = 2 + (int)(seed >> 8) % (round < 30 ? 60 : 600);
    Buf b = {0};
    buf_printf(&b, "topology: explicit\ndevices: %d\nlinks:\n", n);
    for (int v = 1; v < n; v++) {  // a random spanning tree ...
      seed = seed * 1103515245u + 12345u;
      buf_printf(&b, "  - [%d, %d]\n", v, (int)((seed >> 8) % (unsigned)v));
    }
    for (int e = 0; e < n / 3; e++) {  // ... and some chords
      seed = seed * 1103515245u + 12345u;
      int u = (int)((seed >> 8) % (unsigned)n), w = (int)((seed >> 16) % (unsigned)n);
      if (u != w) buf_printf(&b, "  - [%d, %d]\n", u, w);
    }
    Arena a = {0};
    Topology *t = topo_ok(&a, b.data);
    assert_int_equal(ir_topo_diameter(t, NULL), reference_diameter(t));
    assert_ports_consistent(t);
    buf_free(&b);
    arena_free(&a);
  }
}

// Networks whose diameter is far above 256 take the iFUB branch: long
// chains, cycles, thin meshes with failed links, and random "caterpillars"
// (a long path with short random hairs) with a few chords, all against the
// plain BFS.
static void thin_networks_match_plain_bfs(void **state) {
  (void)state;
  static const char *const fixed[] = {
      "topology: mesh\ndims: [700]\n",
      "topology: ring\ndevices: 901\n",
      "topology: mesh\ndims: [300, 3]\nfailed_links: [[0, 300], [150, 151], [451, 452]]\n",
      "topology: torus\ndims: [600, 2]\nfailed_links: [[0, 599]]\n",
  };
  for (size_t i = 0; i < ARRAY_LEN(fixed); i++) {
    Arena a = {0};
    Topology *t = topo_ok(&a, fixed[i]);
    assert_int_equal(ir_topo_diameter_search(t, NULL), reference_diameter(t));
    arena_free(&a);
  }
  unsigned seed = 777;
  for (int round = 0; round < 12; round++) {
    int spine = 300 + round * 40, n = spine + spine / 2;
    Buf b = {0};
    buf_printf(&b, "topology: explicit\ndevices: %d\nlinks:\n", n);
    for (int v = 1; v < spine; v++) buf_printf(&b, "  - [%d, %d]\n", v - 1, v);
    for (int v = spine; v < n; v++) {  // a hair on a random spine device, or on another hair
      seed = seed * 1103515245u + 12345u;
      buf_printf(&b, "  - [%d, %d]\n", v, (int)((seed >> 8) % (unsigned)v));
    }
    for (int c = 0; c < 3 + round; c++) {  // chords: cycles, where sweeps alone may not be exact
      seed = seed * 1103515245u + 12345u;
      int x = (int)((seed >> 8) % (unsigned)n), y = (int)((seed >> 16) % (unsigned)n);
      if (x != y) buf_printf(&b, "  - [%d, %d]\n", x, y);
    }
    Arena a = {0};
    Topology *t = topo_ok(&a, b.data);
    assert_int_equal(ir_topo_diameter_search(t, NULL), reference_diameter(t));
    buf_free(&b);
    arena_free(&a);
  }
}

// iFUB on its own, on small random graphs with cycles: many of them are
// graphs where the sweeps' lower bound falls short, so its level-by-level
// search is what makes it exact.
static void ifub_is_exact_on_small_graphs(void **state) {
  (void)state;
  unsigned seed = 4242;
  for (int round = 0; round < 400; round++) {
    seed = seed * 1103515245u + 12345u;
    int spine = 8 + (int)((seed >> 8) % 13), n = spine + (int)((seed >> 16) % 16);
    Buf b = {0};
    buf_printf(&b, "topology: explicit\ndevices: %d\nlinks:\n", n);
    for (int v = 1; v < spine; v++) buf_printf(&b, "  - [%d, %d]\n", v - 1, v);
    for (int v = spine; v < n; v++) {
      seed = seed * 1103515245u + 12345u;
      buf_printf(&b, "  - [%d, %d]\n", v, (int)((seed >> 8) % (unsigned)v));
    }
    for (int c = 0; c < 1 + round % 6; c++) {
      seed = seed * 1103515245u + 12345u;
      int x = (int)((seed >> 8) % (unsigned)n), y = (int)((seed >> 16) % (unsigned)n);
      if (x != y) buf_printf(&b, "  - [%d, %d]\n", x, y);
    }
    Arena a = {0};
    Topology *t = topo_ok(&a, b.data);
    assert_int_equal(ir_topo_diameter_ifub(t), reference_diameter(t));
    buf_free(&b);
    arena_free(&a);
  }
}

static void failed_links_lengthen_paths(void **state) {
  (void)state;
  Arena a = {0};
  Topology *t = topo_ok(&a, "topology: ring\ndevices: 6\nfailed_links: [[0, 5]]\n");
  assert_int_equal(t->nfailed, 1);
  assert_int_equal(t->links.len, 6);
  assert_int_equal(ir_topo_diameter(t, NULL), 5);  // now a line of 6
  assert_string_equal(topo_error(&a, "topology: ring\ndevices: 6\nfailed_links: [[0, 5], [2, 3]]\n"),
                      "t.yaml:3:15: error: the network is not connected: device 3 cannot reach device 0");
  assert_string_equal(topo_error(&a, "topology: ring\ndevices: 6\nfailed_links: [[0, 2]]\n"),
                      "t.yaml:3:16: error: no working link joins devices 0 and 2");
  arena_free(&a);
}

// One vector holds a link for ceil(wire_bits * clock / rate) cycles.
static void huge_systems_are_refused_or_fast(void **state) {
  (void)state;
  Arena a = {0};
  assert_string_equal(topo_error(&a, "topology: fully_connected\ndevices: 100000\n"),
                      "t.yaml:2:10: error: this topology would have 4999950000 links, more than "
                      "the limit of 4194304");
  Topology *t = topo_ok(&a, "topology: mesh\ndims: [1000, 1000]\n");  // a closed form
  assert_int_equal(ir_topo_diameter(t, NULL), 1998);
  arena_free(&a);
}

static void cycles_per_vector_rounds_up(void **state) {
  (void)state;
  LinkParams p = ir_link_defaults();
  assert_int_equal(ir_cycles_per_vector(&p, 900), 24);  // 328*8*900/100000 = 23.6
  p.gbps = 12.5;
  assert_int_equal(ir_cycles_per_vector(&p, 900), 189);  // 188.9
  p.gbps = 26.24;                                          // exactly 90 cycles
  assert_int_equal(ir_cycles_per_vector(&p, 900), 90);
}

static void link_overrides_apply_to_one_link(void **state) {
  (void)state;
  Arena a = {0};
  Topology *t = topo_ok(&a, "topology: explicit\ndevices: 3\n"
                            "link: {gbps: 50, latency_cycles: 100}\n"
                            "links: [[0, 1], {a: 1, b: 2, latency_cycles: {min: 5, max: 9}}]\n");
  assert_true(t->links.data[0].p.gbps == 50);
  assert_int_equal(t->links.data[0].p.latency_min, 100);
  assert_int_equal(t->links.data[0].p.latency_max, 100);
  assert_true(t->links.data[1].p.gbps == 50);
  assert_int_equal(t->links.data[1].p.latency_min, 5);
  assert_int_equal(t->links.data[1].p.latency_max, 9);
  assert_int_equal(t->devices[1].nports, 2);  // ports in link order
  assert_int_equal(t->devices[1].ports[1].peer, 2);
  arena_free(&a);
}

static void spares_and_drift_are_kept(void **state) {
  (void)state;
  Arena a = {0};
  Topology *t = topo_ok(&a, "topology: dragonfly\ndragonfly: {nodes: 4}\n"
                            "spare_nodes: [3]\ndrift_ppm: 25.5\nname: lab\n");
  assert_int_equal(t->nspares, 1);
  assert_int_equal(t->spare_nodes[0], 3);
  assert_true(t->drift_ppm == 25.5);
  assert_string_equal(t->name, "lab");
  assert_string_equal(topo_error(&a, "topology: dragonfly\ndragonfly: {nodes: 4}\nspare_nodes: [4]\n"),
                      "t.yaml:3:15: error: a spare node must be at most 3, got 4");
  arena_free(&a);
}

// The service table (ir/topology_roles.c): spares stand by until a failed
// unit of their rack needs one; logical ids map onto the device playing them.
static void spares_stand_in_for_failed_units(void **state) {
  (void)state;
  Arena a = {0};
  // rack72's shape with node 8 the spare and node 3 failed.
  Topology *t = topo_ok(&a, "topology: dragonfly\ndragonfly: {nodes_per_rack: 9, racks: 1}\n"
                            "spare_nodes: [8]\nfailed_nodes: [3]\n");
  assert_int_equal(t->nroles, 1);
  assert_int_equal(t->roles[0].failed, 3);
  assert_int_equal(t->roles[0].spare, 8);
  assert_int_equal(t->nin_service, 64);
  for (int d = 0; d < 72; d++) {
    int node = d / 8;
    assert_int_equal(ir_device_in_service(t, d), node != 3);
    assert_int_equal(ir_device_failed(t, d), node == 3);
    assert_int_equal(ir_role_device(t, d), node == 3 ? 64 + d % 8 : node == 8 ? -1 : d);
  }
  assert_int_equal(ir_topo_first_working(t), 0);
  assert_int_equal(ir_topo_diameter(t, NULL), reference_diameter(t));
  // Failed device 0 of a ring of 6 with spare 5: device 5 plays device 0,
  // and the line 1 - 2 - 3 - 4 - 5 aligns from device 1.
  t = topo_ok(&a, "topology: ring\ndevices: 6\nspare_nodes: [5]\nfailed_devices: [0]\n");
  assert_int_equal(ir_role_device(t, 0), 5);
  assert_int_equal(ir_role_device(t, 5), -1);
  assert_true(ir_device_in_service(t, 5) && !ir_device_in_service(t, 0));
  assert_int_equal(ir_topo_first_working(t), 1);
  assert_int_equal(ir_topo_diameter(t, NULL), 4);
  assert_string_equal(ir_role_refusal(&a, t, 5), "is a spare standing in for failed device 0: name the role it plays, device(0)");
  // No spare left: the role is dropped, the model runs on the rest.
  t = topo_ok(&a, "topology: ring\ndevices: 6\nfailed_devices: [2]\n");
  assert_int_equal(ir_role_device(t, 2), -1);
  assert_true(ir_role_dropped(t, 2) && !ir_role_dropped(t, 3));
  assert_int_equal(t->nin_service, 5);
  assert_string_equal(ir_role_refusal(&a, t, 2), "has failed, and no spare device is left to stand in for it");
  arena_free(&a);
}

static void port_budget_is_enforced(void **state) {
  (void)state;
  Arena a = {0};
  // 33 nodes fit a node's 32 global ports; 34 do not.
  topo_ok(&a, "topology: dragonfly\ndragonfly: {nodes: 33}\n");
  assert_string_equal(topo_error(&a, "topology: dragonfly\ndragonfly: {nodes: 34}\n"),
                      "t.yaml:2:20: error: 34 nodes joined by 1 link(s) per pair need 33 global "
                      "ports per node, but a node has 32 (8 TSPs x 4)");
  assert_string_equal(topo_error(&a, "topology: dragonfly\n"
                                     "dragonfly: {nodes_per_rack: 9, racks: 146}\n"),
                      "t.yaml:2:39: error: 146 racks need 17 global ports per node for "
                      "rack-to-rack links, but only 16 of a node's 32 are left after the links "
                      "inside the rack");
  arena_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mesh_links_and_diameter_follow_closed_forms),
      cmocka_unit_test(torus_links_and_diameter_follow_closed_forms),
      cmocka_unit_test(ring_and_fully_connected_follow_closed_forms),
      cmocka_unit_test(mesh_ports_face_their_direction),
      cmocka_unit_test(rack72_wires_the_seed_dragonfly),
      cmocka_unit_test(dragonflies_match_the_reference_bfs),
      cmocka_unit_test(bit_parallel_diameter_matches_plain_bfs),
      cmocka_unit_test(thin_networks_match_plain_bfs),
      cmocka_unit_test(ifub_is_exact_on_small_graphs),
      cmocka_unit_test(failed_links_lengthen_paths),
      cmocka_unit_test(huge_systems_are_refused_or_fast),
      cmocka_unit_test(cycles_per_vector_rounds_up),
      cmocka_unit_test(link_overrides_apply_to_one_link),
      cmocka_unit_test(spares_and_drift_are_kept),
      cmocka_unit_test(spares_stand_in_for_failed_units),
      cmocka_unit_test(port_budget_is_enforced),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
