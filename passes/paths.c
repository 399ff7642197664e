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
//
// Each BFS is also bounded by a depth D and pruned as A* would with an
// admissible bound: a device w is not queued when depth(w) + h(w) > D,
// where h(w) (0 at dst, 1 next to it, else 2) never exceeds w's true
// distance.  D deepens from a lower bound of the answer (h(src), or the
// last path's length: a later path never is shorter) until a path is
// found (a few steps, then the caller's limit).  The result is the plain
// BFS's path exactly: every device on a
// shortest path passes the test, and so does its BFS parent (also on a
// shortest path), so those devices are found in the same order from the
// same parents.  Pruning only the last two levels is where a BFS in a
// network of high degree spends most of its time: on system10440 it cuts
// the devices visited by cross-rack searches about fourfold.
#include "passes.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

// Searches one hop deeper than the last, from the lower bound of a path's
// length, before one search to the caller's limit (see bfs_deepening).
#define PATHS_DEEPEN_STEPS 3

struct PathFinder {
  const Topology *t;
  unsigned *seen;     // by device: the generation that reached it
  unsigned *near;     // by device: the generation in which it was a neighbour of the BFS's dst
  unsigned gen;
  int *prev_dev, *prev_port, *queue, *depth;  // by device, valid where seen == gen
  bool *used;         // by link direction (link * 2 + direction, 0 = a -> b): taken by a path of this
                      //   pair, or (for good) a failed link's
  const bool *only;   // by link: the links a search may use (NULL: all; route_shortest_within)
  int *port_base;     // by device: its first entry in port_dir
  int *port_dir;      // by port: the link direction it sends on (-1: unplugged)
};

static int direction(const Topology *t, int link, int from) { return link * 2 + (t->links.data[link].a == from ? 0 : 1); }

PathFinder *route_finder_new(const Topology *t) {
  PathFinder *f = xcalloc(1, sizeof *f);
  size_t n = (size_t)t->ndevices + 1;
  f->t = t;
  f->seen = xcalloc(n, sizeof(unsigned));
  f->near = xcalloc(n, sizeof(unsigned));
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
  free(f->near);
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
    memset(f->near, 0, sizeof(unsigned) * ((size_t)f->t->ndevices + 1));
    f->gen = 1;
  }
}

// At most as many hops as v is from dst over any links: 0 at dst, 1 next
// to it, else 2 (valid after mark_near for this generation).
static int hops_at_least(const PathFinder *f, int v, int dst) { return v == dst ? 0 : f->near[v] == f->gen ? 1 : 2; }

// The same bound for src, without a BFS generation: 1 if a link joins it
// to dst, else 2 (src != dst).
static int src_hops_at_least(const Topology *t, int src, int dst) {
  const Device *d = &t->devices[dst];
  for (int p = 0; p < d->nports; p++)
    if (d->ports[p].link >= 0 && d->ports[p].peer == src) return 1;
  return 2;
}

static void mark_near(PathFinder *f, int dst) {
  const Device *d = &f->t->devices[dst];
  for (int p = 0; p < d->nports; p++)
    if (d->ports[p].link >= 0) f->near[d->ports[p].peer] = f->gen;
}

// One BFS from src to dst over ports whose link direction is not used,
// queuing only devices that may still reach dst within `limit` hops;
// fills prev_dev and prev_port along the way.  Stops at dst.  *pruned says
// whether the limit left a device out (else a miss means no path at all).
static bool bfs_free(PathFinder *f, int src, int dst, int limit, bool *pruned) {
  const Topology *t = f->t;
  next_generation(f);
  mark_near(f, dst);
  *pruned = false;
  int head = 0, tail = 0;
  f->queue[tail++] = src;
  f->seen[src] = f->gen;
  f->prev_dev[src] = src;
  f->depth[src] = 0;
  while (head < tail && f->seen[dst] != f->gen) {
    int v = f->queue[head++];
    const Device *d = &t->devices[v];
    const int *dir = f->port_dir + f->port_base[v];
    for (int p = 0; p < d->nports; p++) {
      const Port *port = &d->ports[p];
      if (dir[p] < 0 || f->seen[port->peer] == f->gen || f->used[dir[p]] || (f->only && !f->only[port->link]))
        continue;
      if (f->depth[v] + 1 + hops_at_least(f, port->peer, dst) > limit) {  // cannot reach dst in time
        *pruned = true;
        continue;
      }
      f->seen[port->peer] = f->gen;
      f->prev_dev[port->peer] = v;
      f->prev_port[port->peer] = p;
      f->depth[port->peer] = f->depth[v] + 1;
      f->queue[tail++] = port->peer;
    }
  }
  return f->seen[dst] == f->gen;
}

// The BFS's first path of at most max_hops hops and at least `least`:
// the limit deepens a hop at a time from `least` for PATHS_DEEPEN_STEPS
// more, then goes to max_hops (a long path in a mesh would otherwise cost
// a search per hop).
static bool bfs_deepening(PathFinder *f, int src, int dst, int least, int max_hops) {
  bool pruned = true;
  for (int limit = MIN(least, max_hops); pruned; limit = limit - least < PATHS_DEEPEN_STEPS ? limit + 1 : max_hops) {
    if (bfs_free(f, src, dst, limit, &pruned)) return true;
    if (limit == max_hops) break;
  }
  return false;
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
    int least = n ? paths[n - 1].nhops : src_hops_at_least(f->t, src, dst);  // a later path is never shorter
    if (!bfs_deepening(f, src, dst, least, max_hops)) {
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

bool route_shortest_within(PathFinder *f, Arena *a, int src, int dst, const bool *only, Path *out) {
  f->only = only;
  bool found = src != dst && bfs_deepening(f, src, dst, src_hops_at_least(f->t, src, dst), INT_MAX);
  f->only = NULL;
  if (found) *out = take_path(f, a, src, dst, found_hops(f, src, dst));
  return found;
}

int route_disjoint_paths(Arena *a, const Topology *t, int src, int dst, int max, Path *out) {
  if (max <= 0) return 0;
  PathFinder *f = route_finder_new(t);
  bool exhausted;
  int n = route_more_paths(f, a, src, dst, out, 0, max, INT_MAX, &exhausted);
  route_finder_free(f);
  return n;
}
