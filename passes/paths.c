// paths.c: routes between two devices.  Part of passes/; the router picks
// among them: the minimal path, or the tensor's vectors spread over several
// paths through intermediate TSPs (seed 002 s4.3, non-minimal routing: the
// routers of an SSN are the endpoints themselves, so the injection bandwidth
// is the sum of the paths').
//
// Paths are found one at a time by BFS, each over the link directions the
// earlier ones left free, so they are shortest first and never share a link
// direction (each direction carries one vector per slot).  Greedy: in odd
// networks a cleverer choice could find more paths; in a node, a mesh or a
// torus it finds them all.
#include "passes.h"

#include <stdlib.h>
#include <string.h>

// One BFS from src to dst over ports whose link direction is not in `used`
// (indexed by link * 2 + direction, direction 0 = a -> b); fills prev_port.
static bool bfs_free(const Topology *t, int src, int dst, const bool *used, int *prev_dev, int *prev_port,
                     int *queue) {
  for (int v = 0; v < t->ndevices; v++) prev_dev[v] = -1;
  int head = 0, tail = 0;
  queue[tail++] = src;
  prev_dev[src] = src;
  while (head < tail && prev_dev[dst] < 0) {
    int v = queue[head++];
    const Device *d = &t->devices[v];
    for (int p = 0; p < d->nports; p++) {
      const Port *port = &d->ports[p];
      if (port->link < 0 || t->links.data[port->link].failed || prev_dev[port->peer] >= 0) continue;
      int dir = t->links.data[port->link].a == v ? 0 : 1;
      if (used[port->link * 2 + dir]) continue;
      prev_dev[port->peer] = v;
      prev_port[port->peer] = p;
      queue[tail++] = port->peer;
    }
  }
  return prev_dev[dst] >= 0;
}

// Walks the BFS tree back from dst into a Path and marks its directions used.
static Path take_path(Arena *a, const Topology *t, int src, int dst, const int *prev_dev,
                      const int *prev_port, bool *used) {
  int n = 0;
  for (int v = dst; v != src; v = prev_dev[v]) n++;
  Path path = {.nhops = n, .hops = ARENA_ARRAY(a, Hop, n ? n : 1)};
  for (int v = dst, i = n - 1; v != src; v = prev_dev[v], i--) {
    int from = prev_dev[v], p = prev_port[v];
    const Port *port = &t->devices[from].ports[p];
    path.hops[i] = (Hop){.link = port->link, .from = from, .to = v, .out_port = p, .in_port = port->peer_port};
    used[port->link * 2 + (t->links.data[port->link].a == from ? 0 : 1)] = true;
  }
  return path;
}

int route_disjoint_paths(Arena *a, const Topology *t, int src, int dst, int max, Path *out) {
  if (src == dst || max <= 0) return 0;
  bool *used = xcalloc((size_t)t->links.len * 2 + 1, sizeof(bool));
  int *prev_dev = xmalloc(sizeof(int) * (size_t)t->ndevices);
  int *prev_port = xmalloc(sizeof(int) * (size_t)t->ndevices);
  int *queue = xmalloc(sizeof(int) * (size_t)t->ndevices);
  int found = 0;
  while (found < max && bfs_free(t, src, dst, used, prev_dev, prev_port, queue))
    out[found++] = take_path(a, t, src, dst, prev_dev, prev_port, used);
  free(used);
  free(prev_dev);
  free(prev_port);
  free(queue);
  return found;
}
