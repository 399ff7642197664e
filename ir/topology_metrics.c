// topology_metrics.c: exact figures of a wired topology (hop diameter,
// connectivity) and the --describe report.  Part of ir/; the driver prints it, later passes use
// the diameter for bounds.
//
// The diameter is exact for any topology: a breadth-first search from every
// device.  Low-diameter networks run it 256 sources at a time as
// bit-parallel BFS: each round widens every source's reached set by one hop
// (reach'[v] = reach[v] | OR of reach[u] over v's neighbours u), and the
// rounds until nothing grows give the batch's largest eccentricity.  Cost:
// devices/256 x diameter x (devices + 2 links) words; 10,440 TSPs: ~0.1 s.
// Networks whose diameter is far above 256 use iFUB: a few BFS runs.
#include "ir.h"

#include <stdlib.h>
#include <string.h>

#define BFS_WORDS 4  // sources per batch = 64 * BFS_WORDS

typedef struct Adjacency {
  int n;       // working devices (not failed): the graph's vertices 0..n-1
  int *id;     // vertex -> device id
  int *start;  // neighbours of v: nbr[start[v] .. start[v+1])
  int *nbr;
} Adjacency;

// Compressed neighbour lists over working links, between working devices
// (a failed device's cables are all failed: it is left out, renumbered round).
static Adjacency adjacency_build(const Topology *t) {
  Adjacency g;
  int *vertex = xmalloc(sizeof(int) * (size_t)(t->ndevices + 1));
  g.id = xmalloc(sizeof(int) * (size_t)(t->ndevices + 1));
  g.n = 0;
  for (int v = 0; v < t->ndevices; v++) {
    vertex[v] = !ir_device_failed(t, v) ? g.n : -1;
    if (vertex[v] >= 0) g.id[g.n++] = v;
  }
  g.start = xcalloc((size_t)g.n + 1, sizeof(int));
  g.nbr = xmalloc(sizeof(int) * (size_t)(2 * t->links.len + 1));
  for (int i = 0; i < t->links.len; i++) {
    const Link *l = &t->links.data[i];
    if (l->failed) continue;
    g.start[vertex[l->a] + 1]++;
    g.start[vertex[l->b] + 1]++;
  }
  for (int v = 0; v < g.n; v++) g.start[v + 1] += g.start[v];
  int *fill = xmalloc(sizeof(int) * (size_t)(g.n + 1));
  memcpy(fill, g.start, sizeof(int) * (size_t)g.n);
  for (int i = 0; i < t->links.len; i++) {
    const Link *l = &t->links.data[i];
    if (l->failed) continue;
    g.nbr[fill[vertex[l->a]]++] = vertex[l->b];
    g.nbr[fill[vertex[l->b]]++] = vertex[l->a];
  }
  free(fill);
  free(vertex);
  return g;
}

static void adjacency_free(Adjacency *g) {
  free(g->id);
  free(g->start);
  free(g->nbr);
}

int ir_topo_first_working(const Topology *t) {
  for (int v = 0; v < t->ndevices; v++)
    if (!ir_device_failed(t, v)) return v;
  return -1;
}

// Rounds until the batch of sources [first, first + 64*BFS_WORDS) reaches
// all it can; sets *complete to whether each source reached every device.
static int bfs_batch(const Adjacency *g, int n, int first, uint64_t *cur, uint64_t *next,
                     bool *complete, int *unreached) {
  memset(cur, 0, sizeof(uint64_t) * BFS_WORDS * (size_t)n);
  int nsrc = MIN(n - first, 64 * BFS_WORDS);
  for (int s = 0; s < nsrc; s++) cur[(size_t)(first + s) * BFS_WORDS + s / 64] |= 1ull << (s % 64);
  int rounds = 0;
  for (bool grew = true; grew;) {
    grew = false;
    for (int v = 0; v < n; v++) {
      uint64_t acc[BFS_WORDS];
      memcpy(acc, &cur[(size_t)v * BFS_WORDS], sizeof acc);
      for (int e = g->start[v]; e < g->start[v + 1]; e++)
        for (int w = 0; w < BFS_WORDS; w++) acc[w] |= cur[(size_t)g->nbr[e] * BFS_WORDS + w];
      for (int w = 0; w < BFS_WORDS; w++) grew |= acc[w] != cur[(size_t)v * BFS_WORDS + w];
      memcpy(&next[(size_t)v * BFS_WORDS], acc, sizeof acc);
    }
    if (grew) rounds++;
    memcpy(cur, next, sizeof(uint64_t) * BFS_WORDS * (size_t)n);
  }
  *complete = true;
  for (int v = 0; v < n && *complete; v++)
    for (int s = 0; s < nsrc; s++)
      if (!(cur[(size_t)v * BFS_WORDS + s / 64] & (1ull << (s % 64)))) {
        *complete = false;
        if (unreached) *unreached = g->id[v];
        break;
      }
  return rounds;
}

// Plain BFS from `src`: its eccentricity, or -1 (and *unreached) if some
// device is out of reach.  queue and dist hold n ints.
static int bfs_eccentricity(const Adjacency *g, int n, int src, int *queue, int *dist, int *unreached) {
  for (int v = 0; v < n; v++) dist[v] = -1;
  int head = 0, tail = 0;
  dist[src] = 0;
  queue[tail++] = src;
  while (head < tail) {
    int v = queue[head++];
    for (int e = g->start[v]; e < g->start[v + 1]; e++)
      if (dist[g->nbr[e]] < 0) {
        dist[g->nbr[e]] = dist[v] + 1;
        queue[tail++] = g->nbr[e];
      }
  }
  if (tail < n) {
    for (int v = 0; v < n; v++)
      if (dist[v] < 0 && unreached) {
        *unreached = g->id[v];
        break;
      }
    return -1;
  }
  return dist[queue[n - 1]];
}

// Long, thin networks (a chain, a large mesh with a failed link) have a
// diameter far above the 256 sources a bit-parallel round serves.  For them,
// iFUB (Crescenzi et al., "On computing the diameter of real-world
// undirected graphs", 2013) is exact with a handful of BFS runs: from a
// central device u, take the devices level by level from the farthest; the
// largest eccentricity found so far, lb, is the diameter as soon as
// lb > 2 (i - 1) for the next level i, since any two devices at level < i
// are at most 2 (i - 1) apart through u.
// The device whose largest distance to any of `k` far devices is least (a
// central device: on a grid, the middle rather than just any point of some
// diametral path).  dists holds k arrays of n distances.
static int most_central(int n, int *const *dists, int k) {
  int best = 0, best_far = -1;
  for (int v = 0; v < n; v++) {
    int far = 0;
    for (int j = 0; j < k; j++) far = MAX(far, dists[j][v]);
    if (best_far < 0 || far < best_far) best = v, best_far = far;
  }
  return best;
}

static int diameter_by_ifub(const Adjacency *g, int n, int *queue, int *dist) {
  enum { SWEEPS = 4 };
  int *d[SWEEPS], lb = 0;
  for (int j = 0; j < SWEEPS; j++) d[j] = xmalloc(sizeof(int) * (size_t)n);
  // Sweeps: a, then the device farthest from it, twice over, the second
  // pair starting from the middle of the first.
  int src = queue[n - 1];  // the farthest from device 0 (our caller's BFS)
  for (int j = 0; j < SWEEPS; j++) {
    if (j == 2) src = most_central(n, d, 2);
    lb = MAX(lb, bfs_eccentricity(g, n, src, queue, d[j], NULL));
    src = queue[n - 1];
  }
  int u = most_central(n, d, SWEEPS);
  int top = bfs_eccentricity(g, n, u, queue, dist, NULL);  // dist: levels around u
  for (int i = top; i > 0 && lb <= 2 * i; i--) {
    for (int v = 0; v < n; v++)
      if (dist[v] == i) lb = MAX(lb, bfs_eccentricity(g, n, v, queue, d[0], NULL));
    if (lb > 2 * (i - 1)) break;
  }
  for (int j = 0; j < SWEEPS; j++) free(d[j]);
  return lb;
}

int ir_topo_diameter_ifub(const Topology *t) {
  Adjacency g = adjacency_build(t);
  int n = g.n, d = 0;
  if (n > 1) {
    int *queue = xmalloc(sizeof(int) * (size_t)n), *dist = xmalloc(sizeof(int) * (size_t)n);
    d = bfs_eccentricity(&g, n, 0, queue, dist, NULL) < 0 ? -1 : diameter_by_ifub(&g, n, queue, dist);
    free(queue);
    free(dist);
  }
  adjacency_free(&g);
  return d;
}

// The largest eccentricity over every source, 256 at a time; -1 (and
// *unreached) if some source misses a device.
static int diameter_by_batches(const Adjacency *g, int *unreached) {
  int n = g->n, diameter = 0;
  uint64_t *cur = xmalloc(sizeof(uint64_t) * BFS_WORDS * (size_t)n);
  uint64_t *next = xmalloc(sizeof(uint64_t) * BFS_WORDS * (size_t)n);
  for (int first = 0; first < n; first += 64 * BFS_WORDS) {
    bool complete;
    int rounds = bfs_batch(g, n, first, cur, next, &complete, unreached);
    if (!complete) {
      diameter = -1;
      break;
    }
    diameter = MAX(diameter, rounds);
  }
  free(cur);
  free(next);
  return diameter;
}

int ir_topo_diameter_search(const Topology *t, int *unreached) {
  Adjacency g = adjacency_build(t);
  int n = g.n, diameter = 0;
  if (n > 1) {
    int *queue = xmalloc(sizeof(int) * (size_t)n), *dist = xmalloc(sizeof(int) * (size_t)n);
    int ecc0 = bfs_eccentricity(&g, n, 0, queue, dist, unreached);
    bool thin = ecc0 >= 0 && 2 * ecc0 > 64 * BFS_WORDS;
    diameter = ecc0 < 0 ? -1 : thin ? diameter_by_ifub(&g, n, queue, dist) : diameter_by_batches(&g, unreached);
    free(queue);
    free(dist);
  }
  adjacency_free(&g);
  return diameter;
}

// Regular families without failed links have exact closed forms (checked
// against the search by test/unit/test_topology.c): a mesh's longest path
// walks every dimension end to end, a torus's half of every ring.
int ir_topo_diameter(const Topology *t, int *unreached) {
  int d = 0;
  if (t->nfailed > 0 || t->ndevices <= 1) return ir_topo_diameter_search(t, unreached);
  switch (t->family) {
  case FAMILY_MESH:
    if (t->bypass) return ir_topo_diameter_search(t, unreached);
    for (int k = 0; k < t->ndims; k++) d += t->dims[k] - 1;
    return d;
  case FAMILY_TORUS:
    for (int k = 0; k < t->ndims; k++) d += t->dims[k] / 2;
    return d;
  case FAMILY_RING: return t->ndevices / 2;
  case FAMILY_FULLY_CONNECTED: return 1;
  default: return ir_topo_diameter_search(t, unreached);
  }
}

// A working link from device v's port p to a working device, else -1.
static int working_peer(const Topology *t, int v, int p) {
  const Port *port = &t->devices[v].ports[p];
  if (port->link < 0 || t->links.data[port->link].failed || ir_device_failed(t, port->peer)) return -1;
  return port->peer;
}

int ir_topo_hops_from(const Topology *t, int src, int *dist, int *queue) {
  for (int v = 0; v < t->ndevices; v++) dist[v] = -1;
  int head = 0, tail = 0;
  dist[src] = 0;
  queue[tail++] = src;
  while (head < tail) {
    int v = queue[head++];
    for (int p = 0; p < t->devices[v].nports; p++) {
      int w = working_peer(t, v, p);
      if (w < 0 || dist[w] >= 0) continue;
      dist[w] = dist[v] + 1;
      queue[tail++] = w;
    }
  }
  return tail;
}

bool ir_topo_connected(const Topology *t, int *unreached) {
  Adjacency g = adjacency_build(t);
  int n = g.n;
  int *queue = xmalloc(sizeof(int) * (size_t)(n + 1));
  bool *seen = xcalloc((size_t)n + 1, sizeof(bool));
  int head = 0, tail = 0;
  if (n > 0) queue[tail++] = 0, seen[0] = true;
  while (head < tail) {
    int v = queue[head++];
    for (int e = g.start[v]; e < g.start[v + 1]; e++)
      if (!seen[g.nbr[e]]) {
        seen[g.nbr[e]] = true;
        queue[tail++] = g.nbr[e];
      }
  }
  bool connected = tail == n;
  for (int v = 0; v < n && !connected; v++)
    if (!seen[v]) {
      if (unreached) *unreached = g.id[v];
      break;
    }
  free(queue);
  free(seen);
  adjacency_free(&g);
  return connected;
}

static void describe_family(const Topology *t, FILE *out) {
  switch (t->family) {
  case FAMILY_MESH:
  case FAMILY_TORUS:
    fprintf(out, "dims: [");
    for (int d = 0; d < t->ndims; d++) fprintf(out, "%s%d", d ? ", " : "", t->dims[d]);
    fprintf(out, "]\n");
    if (t->bypass) fprintf(out, "bypass: true\n");
    break;
  case FAMILY_DRAGONFLY:
    fprintf(out,
            "dragonfly: {tsps_per_node: %d, global_ports_per_tsp: %d, nodes_per_rack: %d, "
            "racks: %d, links_per_node_pair: %d}\n",
            t->df.tsps_per_node, t->df.global_ports_per_tsp, t->df.nodes_per_rack, t->df.racks,
            t->df.links_per_node_pair);
    break;
  default: break;
  }
}

// A number as YAML reads it back exactly: integers plainly, others with 17
// significant digits and always a '.' before an exponent (YAML 1.1 floats).
static void print_number(FILE *out, double x) {
  if (x == (double)(long long)x && x > -1e15 && x < 1e15) {
    fprintf(out, "%lld", (long long)x);
    return;
  }
  char buf[48];
  snprintf(buf, sizeof buf, "%.17g", x);
  char *e = strchr(buf, 'e');
  if (e && !strchr(buf, '.'))
    fprintf(out, "%.*s.0%s", (int)(e - buf), buf, e);
  else
    fputs(buf, out);
}

static void describe_link_params(const Topology *t, FILE *out) {
  const LinkParams *p = &t->link;
  fprintf(out, "clock_mhz: ");
  print_number(out, t->clock_mhz);
  fprintf(out, "\nlink:\n  gbps: ");
  print_number(out, p->gbps);
  fputc('\n', out);
  fprintf(out, "  latency_cycles: {min: %d, max: %d}\n", p->latency_min, p->latency_max);
  fprintf(out, "  vector_bytes: %d\n", p->vector_bytes);
  fprintf(out, "  wire_bytes: %d\n", p->wire_bytes);
  fprintf(out, "  cycles_per_vector: %d\n", ir_cycles_per_vector(p, t->clock_mhz));
  fprintf(out, "epoch_cycles: %d\n", t->epoch_cycles);
  fprintf(out, "sram_vectors: %d\n", t->sram_vectors);
  fprintf(out, "rx_buffer_vectors: %d\n", t->rx_buffer_vectors);
}

// A link's own parameters, when they differ from the topology's defaults.
static void describe_overrides(const Topology *t, const Link *l, FILE *out) {
  const LinkParams *p = &l->p, *d = &t->link;
  if (p->gbps != d->gbps) {
    fprintf(out, ", gbps: ");
    print_number(out, p->gbps);
  }
  if (p->latency_min != d->latency_min || p->latency_max != d->latency_max)
    fprintf(out, ", latency_cycles: {min: %d, max: %d}", p->latency_min, p->latency_max);
  if (p->vector_bytes != d->vector_bytes) fprintf(out, ", vector_bytes: %d", p->vector_bytes);
  if (p->wire_bytes != d->wire_bytes) fprintf(out, ", wire_bytes: %d", p->wire_bytes);
}

static void describe_ports(const Topology *t, FILE *out) {
  fprintf(out, "ports:\n");
  for (int i = 0; i < t->ndevices; i++) {
    const Device *d = &t->devices[i];
    fprintf(out, "  - device: %d\n", d->id);
    if (t->family == FAMILY_DRAGONFLY)
      fprintf(out, "    rack: %d\n    node: %d\n    tsp: %d\n", d->coord[0], d->coord[1],
              d->coord[2]);
    else if (t->family == FAMILY_MESH || t->family == FAMILY_TORUS) {
      fprintf(out, "    coord: [");
      for (int k = 0; k < t->ndims; k++) fprintf(out, "%s%d", k ? ", " : "", d->coord[k]);
      fprintf(out, "]\n");
    }
    fprintf(out, "    ports:\n");
    for (int p = 0; p < d->nports; p++) {
      const Port *port = &d->ports[p];
      if (port->link < 0) {
        fprintf(out, "      - {port: %d, peer: null}\n", p);
        continue;
      }
      const Link *l = &t->links.data[port->link];
      fprintf(out, "      - {port: %d, peer: %d, peer_port: %d, link: %d, kind: %s", p, port->peer,
              port->peer_port, l->id, ir_link_kind_names[l->kind]);
      describe_overrides(t, l, out);
      fprintf(out, "%s}\n", l->failed ? ", failed: true" : "");
    }
  }
}

static void describe_list(FILE *out, const char *key, const int *v, int n) {
  if (!n) return;
  fprintf(out, "%s: [", key);
  for (int i = 0; i < n; i++) fprintf(out, "%s%d", i ? ", " : "", v[i]);
  fprintf(out, "]\n");
}

// Spares, failures, the roles the spares took and what is left in service.
static void describe_service(const Topology *t, FILE *out) {
  describe_list(out, "spare_nodes", t->spare_nodes, t->nspares);
  describe_list(out, "failed_nodes", t->failed_nodes, t->nfailed_nodes);
  describe_list(out, "failed_devices", t->failed_devices, t->nfailed_devices);
  if (t->nroles) {
    Buf b = {0};
    ir_roles_format(t, &b);
    fprintf(out, "roles: %s\n", b.data);
    buf_free(&b);
  }
  if (t->nspares || t->nroles) fprintf(out, "devices_in_service: %d\n", t->nin_service);
}

void ir_topo_describe(const Topology *t, FILE *out, bool ports) {
  int kinds[LINK_KIND_COUNT] = {0};
  int max_ports = 0;
  for (int i = 0; i < t->links.len; i++) kinds[t->links.data[i].kind]++;
  for (int i = 0; i < t->ndevices; i++) max_ports = MAX(max_ports, t->devices[i].nports);
  fprintf(out, "name: ");
  str_print_yaml(out, t->name);
  fputc('\n', out);
  fprintf(out, "topology: %s\n", ir_family_names[t->family]);
  describe_family(t, out);
  fprintf(out, "devices: %d\n", t->ndevices);
  fprintf(out, "links: %d\n", t->links.len);
  fprintf(out, "link_kinds: {");
  for (int k = 0, first = 1; k < LINK_KIND_COUNT; k++)
    if (kinds[k]) {
      fprintf(out, "%s%s: %d", first ? "" : ", ", ir_link_kind_names[k], kinds[k]);
      first = 0;
    }
  fprintf(out, "}\n");
  fprintf(out, "failed_links: %d\n", t->nfailed);
  fprintf(out, "ports_per_device: %d\n", max_ports);
  fprintf(out, "diameter: %d\n", ir_topo_diameter(t, NULL));
  describe_link_params(t, out);
  if (t->device_drift_ppm) {
    fprintf(out, "drift_ppm: [");
    for (int i = 0; i < t->ndevices; i++) {
      if (i) fputs(", ", out);
      print_number(out, t->device_drift_ppm[i]);
    }
    fprintf(out, "]\n");
  } else if (t->drift_ppm != 0) {
    fprintf(out, "drift_ppm: ");
    print_number(out, t->drift_ppm);
    fputc('\n', out);
  }
  describe_service(t, out);
  if (ports) describe_ports(t, out);
}
