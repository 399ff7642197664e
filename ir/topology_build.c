// topology_build.c: wires each topology family into devices, ports and links.
// Part of ir/; frontend/topology.c fills in a family's parameters, this file
// turns them into the concrete network every later pass routes over.
//
// Device ids and port numbers are canonical (docs/topology.md restates them):
//   mesh, torus  id = x + X*(y + Y*z); port 2d faces -d, port 2d+1 faces +d.
//                A torus dimension of size >= 2 closes with a wrap cable from
//                the +d port of its last device to the -d port of its first
//                (size 2 therefore has two parallel cables, like every port used).
//                A mesh with `bypass: true` (seed 004 s III-B) also joins the
//                two ends of every line (row, column, ...) of >= 3 devices
//                with a LINK_BYPASS cable from the -d port of the first to the
//                +d port of the last: the ports a mesh leaves empty at its
//                edges, so no device gains a port (the seed's router keeps its
//                radix) and each line closes into a cycle.
//   ring         a 1-D torus: port 0 faces the previous device, port 1 the next.
//   fully_connected  device i's port to j is j if j < i, else j - 1.
//   dragonfly    id = ((rack * nodes_per_rack) + node) * tsps_per_node + tsp
//                (seed 002 s2.2).  Ports 0..tsps_per_node-2 are local (to the
//                node's other TSPs, numbered like fully_connected); port
//                tsps_per_node-1+g is global port g.  A node's global ports
//                form slots k = g * tsps_per_node + tsp, so slot k sits on TSP
//                k % tsps_per_node: consecutive slots spread over the TSPs.
//                Node peers come first (peer index j, copy c -> slot j*L + c,
//                L links per node pair), then rack peers: a rack's link to
//                its k-th other rack sits on node k % nodes_per_rack, in that
//                node's next free slot.
#include "ir.h"

#include <stdio.h>

// The cable that closes the line along d through device id (its last device).
static void close_line(Topology *t, Arena *a, int id, int d, const int *stride, bool wrap) {
  int c = t->devices[id].coord[d], size = t->dims[d];
  if (wrap && size >= 2)
    ir_topo_connect(t, a, id, 2 * d + 1, id - c * stride[d], 2 * d, LINK_WRAP, t->link);
  else if (!wrap && t->bypass && size >= IR_MIN_BYPASS_SPAN)
    ir_topo_connect(t, a, id - c * stride[d], 2 * d, id, 2 * d + 1, LINK_BYPASS, t->link);
}

static void build_grid(Topology *t, Arena *a, bool wrap) {
  int n = 1, stride[IR_MAX_TOPO_DIMS];
  for (int d = 0; d < t->ndims; d++) {
    stride[d] = n;
    n *= t->dims[d];
  }
  ir_topo_init_devices(t, a, n, 2 * t->ndims);
  for (int id = 0; id < n; id++) {
    for (int d = 0; d < t->ndims; d++) t->devices[id].coord[d] = (id / stride[d]) % t->dims[d];
  }
  for (int id = 0; id < n; id++) {
    for (int d = 0; d < t->ndims; d++) {
      int c = t->devices[id].coord[d], size = t->dims[d];
      if (c + 1 < size)
        ir_topo_connect(t, a, id, 2 * d + 1, id + stride[d], 2 * d, LINK_MESH, t->link);
      else
        close_line(t, a, id, d, stride, wrap);
    }
  }
}

static void build_ring(Topology *t, Arena *a) {
  int n = t->ndevices;
  ir_topo_init_devices(t, a, n, 2);
  for (int i = 0; i < n && n >= 2; i++)
    ir_topo_connect(t, a, i, 1, (i + 1) % n, 0, LINK_RING, t->link);
}

// The port of device `self` that faces `peer` inside a fully connected group.
static int group_port(int self, int peer) { return peer < self ? peer : peer - 1; }

static void build_fully_connected(Topology *t, Arena *a) {
  int n = t->ndevices;
  ir_topo_init_devices(t, a, n, n - 1);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      ir_topo_connect(t, a, i, group_port(i, j), j, group_port(j, i), LINK_DIRECT, t->link);
}

// Dragonfly helpers: global slot k of a node -> (tsp, port).
static int df_device(const Dragonfly *df, int node, int tsp) {
  return node * df->tsps_per_node + tsp;
}

static void df_connect_slots(Topology *t, Arena *a, int node_a, int slot_a, int node_b,
                             int slot_b, LinkKind kind) {
  const Dragonfly *df = &t->df;
  int tpn = df->tsps_per_node;
  ir_topo_connect(t, a, df_device(df, node_a, slot_a % tpn), tpn - 1 + slot_a / tpn,
                  df_device(df, node_b, slot_b % tpn), tpn - 1 + slot_b / tpn, kind, t->link);
}

static TopoBuildError df_check_budget(const Topology *t, char *err, size_t errlen) {
  const Dragonfly *df = &t->df;
  int slots = df->tsps_per_node * df->global_ports_per_tsp;
  int per_pair = df->links_per_node_pair;
  long long node_slots = (long long)(df->nodes_per_rack - 1) * per_pair;
  if (node_slots > slots) {
    snprintf(err, errlen,
             "%d nodes joined by %d link(s) per pair need %lld global ports per node, but a "
             "node has %d (%d TSPs x %d)",
             df->nodes_per_rack, per_pair, node_slots, slots, df->tsps_per_node,
             df->global_ports_per_tsp);
    return TOPO_BUILD_NODE_PORTS;
  }
  long long rack_slots = (df->racks - 1 + df->nodes_per_rack - 1) / df->nodes_per_rack;
  if (rack_slots > slots - node_slots) {
    snprintf(err, errlen,
             "%d racks need %lld global ports per node for rack-to-rack links, but only %lld "
             "of a node's %d are left after the links inside the rack",
             df->racks, rack_slots, slots - node_slots, slots);
    return TOPO_BUILD_RACK_PORTS;
  }
  return TOPO_BUILD_OK;
}

static void build_dragonfly(Topology *t, Arena *a) {
  const Dragonfly *df = &t->df;
  int tpn = df->tsps_per_node, npr = df->nodes_per_rack;
  int nodes = df->racks * npr;
  int per_pair = df->links_per_node_pair;
  ir_topo_init_devices(t, a, nodes * tpn, tpn - 1 + df->global_ports_per_tsp);
  for (int id = 0; id < t->ndevices; id++) {
    Device *d = &t->devices[id];
    d->coord[0] = id / (npr * tpn);
    d->coord[1] = (id / tpn) % npr;
    d->coord[2] = id % tpn;
  }
  for (int node = 0; node < nodes; node++)  // local links: each node fully connected
    for (int i = 0; i < tpn; i++)
      for (int j = i + 1; j < tpn; j++)
        ir_topo_connect(t, a, df_device(df, node, i), group_port(i, j), df_device(df, node, j),
                        group_port(j, i), LINK_LOCAL, t->link);
  for (int r = 0; r < df->racks; r++)  // node pairs inside each rack
    for (int i = 0; i < npr; i++)
      for (int j = i + 1; j < npr; j++)
        for (int c = 0; c < per_pair; c++)
          df_connect_slots(t, a, r * npr + i, (j - 1) * per_pair + c, r * npr + j,
                           i * per_pair + c, LINK_NODE);
  int used = (npr - 1) * per_pair;
  for (int r = 0; r < df->racks; r++)  // rack pairs
    for (int s = r + 1; s < df->racks; s++) {
      int kr = s - 1, ks = r;  // index of the other rack among each rack's peers
      df_connect_slots(t, a, r * npr + kr % npr, used + kr / npr, s * npr + ks % npr,
                       used + ks / npr, LINK_RACK);
    }
}

// The number of cables a family will make, computed before making them.
static int64_t planned_links(const Topology *t) {
  int64_t n = t->ndevices;
  switch (t->family) {
  case FAMILY_MESH:
  case FAMILY_TORUS: return n * t->ndims;  // an upper bound (with bypass links too)
  case FAMILY_RING: return n;
  case FAMILY_FULLY_CONNECTED: return n * (n - 1) / 2;
  case FAMILY_DRAGONFLY: {  // local + node pairs in each rack + rack pairs
    const Dragonfly *df = &t->df;
    int64_t tpn = df->tsps_per_node, npr = df->nodes_per_rack, racks = df->racks;
    return racks * npr * (tpn * (tpn - 1) / 2) +
           racks * (npr * (npr - 1) / 2) * df->links_per_node_pair + racks * (racks - 1) / 2;
  }
  default: return 0;
  }
}

TopoBuildError ir_topo_build(Topology *t, Arena *a, char *err, size_t errlen) {
  if (t->family == FAMILY_DRAGONFLY) {
    TopoBuildError e = df_check_budget(t, err, errlen);
    if (e != TOPO_BUILD_OK) return e;
  }
  int64_t links = planned_links(t);
  if (links > IR_MAX_LINKS) {
    snprintf(err, errlen, "this topology would have %lld links, more than the limit of %d",
             (long long)links, IR_MAX_LINKS);
    return TOPO_BUILD_TOO_MANY_LINKS;
  }
  switch (t->family) {
  case FAMILY_MESH: build_grid(t, a, false); break;
  case FAMILY_TORUS: build_grid(t, a, true); break;
  case FAMILY_RING: build_ring(t, a); break;
  case FAMILY_FULLY_CONNECTED: build_fully_connected(t, a); break;
  case FAMILY_EXPLICIT: break;  // the loader adds the listed links itself
  case FAMILY_DRAGONFLY: build_dragonfly(t, a); break;
  case FAMILY_COUNT: unreachable();
  }
  return TOPO_BUILD_OK;
}
