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
//
// The search is resumable and bounded: a PathFinder keeps its scratch
// between calls (a BFS touches only what it visits: visit marks are stamped
// with a generation, never cleared), and a caller that needs only paths of
// at most H hops stops there, then continues the same greedy sequence later
// if a longer one turns out useful.  On a 10,440-TSP system this is the
// difference between a BFS over the whole network for each of 16 paths of
// every pair and a few hundred devices visited for a one-vector transfer.
#include "passes.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct PathFinder {
  const Topology *t;
  unsigned *seen;     // by device: the generation that reached it
  unsigned gen;
  int *prev_dev, *prev_port, *queue, *depth;  // by device, valid where seen == gen
  bool *used;         // by link direction (link * 2 + direction, 0 = a -> b): taken by a path of this
                      //   pair, or (for good) a failed link's
  int *port_base;     // by device: its first entry in port_dir
  int *port_dir;      // by port: the link direction it sends on (-1: unplugged)
};

static int direction(const Topology *t, int link, int from) { return link * 2 + (t->links.data[link].a == from ? 0 : 1); }

PathFinder *route_finder_new(const Topology *t) {
  PathFinder *f = xcalloc(1, sizeof *f);
  size_t n = (size_t)t->ndevices + 1;
  f->t = t;
  f->seen = xcalloc(n, sizeof(unsigned));
  f->prev_dev = xmalloc(sizeof(int) * n);
  f->prev_port = xmalloc(sizeof(int) * n);
  f->queue = xmalloc(sizeof(int) * n);
  f->depth = xmalloc(sizeof(int) * n);
  f->used = xcalloc((size_t)t->links.len * 2 + 1, sizeof(bool));
  for (int i = 0; i < t->links.len; i++)
    if (t->links.data[i].failed) f->used[2 * i] = f->used[2 * i + 1] = true;
  f->port_base = xmalloc(sizeof(int) * n);
  int ports = 0;
  for (int v = 0; v < t->ndevices; v++) f->port_base[v] = ports, ports += t->devices[v].nports;
  f->port_dir = xmalloc(sizeof(int) * (size_t)(ports + 1));
  for (int v = 0; v < t->ndevices; v++)
    for (int p = 0; p < t->devices[v].nports; p++) {
      int link = t->devices[v].ports[p].link;
      f->port_dir[f->port_base[v] + p] = link < 0 ? -1 : direction(t, link, v);
    }
  return f;
}

void route_finder_free(PathFinder *f) {
  if (!f) return;
  free(f->seen);
  free(f->prev_dev);
  free(f->prev_port);
  free(f->queue);
  free(f->depth);
  free(f->used);
  free(f->port_base);
  free(f->port_dir);
  free(f);
}


// A new generation of visit marks (wrapping around clears them once).
static void next_generation(PathFinder *f) {
  if (++f->gen == 0) {
    memset(f->seen, 0, sizeof(unsigned) * ((size_t)f->t->ndevices + 1));
    f->gen = 1;
  }
}

// One BFS from src to dst over ports whose link direction is not used,
// no deeper than max_hops; fills prev_dev and prev_port along the way.
// Stops at dst.
static bool bfs_free(PathFinder *f, int src, int dst, int max_hops) {
  const Topology *t = f->t;
  next_generation(f);
  int head = 0, tail = 0;
  f->queue[tail++] = src;
  f->seen[src] = f->gen;
  f->prev_dev[src] = src;
  f->depth[src] = 0;
  while (head < tail && f->seen[dst] != f->gen) {
    int v = f->queue[head++];
    if (f->depth[v] >= max_hops) break;  // breadth first: every later one is as deep
    bool last = f->depth[v] == max_hops - 1;  // only dst itself may be reached from here
    const Device *d = &t->devices[v];
    const int *dir = f->port_dir + f->port_base[v];
    for (int p = 0; p < d->nports; p++) {
      const Port *port = &d->ports[p];
      if (dir[p] < 0 || (last && port->peer != dst) || f->seen[port->peer] == f->gen || f->used[dir[p]]) continue;
      f->seen[port->peer] = f->gen;
      f->prev_dev[port->peer] = v;
      f->prev_port[port->peer] = p;
      f->depth[port->peer] = f->depth[v] + 1;
      f->queue[tail++] = port->peer;
    }
  }
  return f->seen[dst] == f->gen;
}

// Hops of the path the last BFS found.
static int found_hops(const PathFinder *f, int src, int dst) {
  int n = 0;
  for (int v = dst; v != src; v = f->prev_dev[v]) n++;
  return n;
}

// Walks the BFS tree back from dst into a Path of n hops.
static Path take_path(PathFinder *f, Arena *a, int src, int dst, int n) {
  const Topology *t = f->t;
  Path path = {.nhops = n, .hops = ARENA_ARRAY(a, Hop, n ? n : 1)};
  for (int v = dst, i = n - 1; v != src; v = f->prev_dev[v], i--) {
    int from = f->prev_dev[v], p = f->prev_port[v];
    const Port *port = &t->devices[from].ports[p];
    path.hops[i] = (Hop){.link = port->link, .from = from, .to = v, .out_port = p, .in_port = port->peer_port};
  }
  return path;
}

static void mark(PathFinder *f, const Path *p, bool on) {
  for (int i = 0; i < p->nhops; i++) f->used[direction(f->t, p->hops[i].link, p->hops[i].from)] = on;
}

int route_more_paths(PathFinder *f, Arena *a, int src, int dst, Path *paths, int have, int max, int max_hops,
                     bool *exhausted) {
  *exhausted = false;
  if (src == dst) {
    *exhausted = true;
    return have;
  }
  for (int i = 0; i < have; i++) mark(f, &paths[i], true);
  int n = have;
  while (n < max) {
    if (!bfs_free(f, src, dst, max_hops)) {
      *exhausted = max_hops == INT_MAX;  // else: none within max_hops, maybe a longer one
      break;
    }
    int hops = found_hops(f, src, dst);
    paths[n] = take_path(f, a, src, dst, hops);
    mark(f, &paths[n++], true);
  }
  for (int i = 0; i < n; i++) mark(f, &paths[i], false);
  return n;
}

int route_disjoint_paths(Arena *a, const Topology *t, int src, int dst, int max, Path *out) {
  if (max <= 0) return 0;
  PathFinder *f = route_finder_new(t);
  bool exhausted;
  int n = route_more_paths(f, a, src, dst, out, 0, max, INT_MAX, &exhausted);
  route_finder_free(f);
  return n;
}
