// rings.c: Hamiltonian cycles through a whole topology.  Part of passes/;
// the ring lowerings (ring, biring) order devices with them, and a biring
// that cannot have one is refused with the reason from here.
//
// Constructions: a ring or a fully connected system in id order; a
// dragonfly node by node, and a dragonfly of racks rack by rack, each
// rack's nodes searched for a path (below).  A mesh or
// torus with an even device count takes the "comb": pick an even dimension
// as the columns' axis, walk column 0 along the others (a snake through
// them), then the remaining columns back and forth over every row but the
// first, and return along the first row.  A mesh with an odd count has no
// cycle at all: it is bipartite (colour by coordinate sum) and a cycle
// alternates colours.  Everything else (odd tori, explicit networks) is
// searched: depth first, always trying the neighbour with the
// fewest unvisited neighbours first (Warnsdorff's rule), within
// RING_SEARCH_BUDGET steps.  An odd mesh gets a near cycle instead
// (ring_near_hamiltonian): one hop of it crosses two links.  A compilation
// asks for each cycle once (ring_cycle_of, at the end): choose's trials
// lower the ring again and again.
#include "passes.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int ring_link_between(const Topology *t, int a, int b, int except) {
  const Device *d = &t->devices[a];
  for (int p = 0; p < d->nports; p++) {
    const Port *port = &d->ports[p];
    if (port->link >= 0 && port->peer == b && port->link != except && !t->links.data[port->link].failed)
      return port->link;
  }
  return -1;
}

int ring_first_unlinked(const Topology *t, const int *order, int n) {
  for (int i = 0; i < n; i++)
    if (ring_link_between(t, order[i], order[(i + 1) % n], -1) < 0) return i;
  return -1;
}

bool ring_is_hamiltonian(const Topology *t, const int *order) {
  int n = t->ndevices;
  if (n == 1) return order[0] == 0;
  bool *seen = xcalloc((size_t)n, sizeof(bool));
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    ok = order[i] >= 0 && order[i] < n && !seen[order[i]];
    if (ok) seen[order[i]] = true;
  }
  free(seen);
  int first = -1;  // a cycle of two needs two distinct links
  for (int i = 0; i < n && ok; i++) {
    int l = ring_link_between(t, order[i], order[(i + 1) % n], n == 2 && i == 1 ? first : -1);
    ok = l >= 0;
    if (i == 0) first = l;
  }
  return ok;
}

// ---- the comb, on a grid with an even dimension -------------------------------------

// Device id of grid coordinates (x fastest, as in topology_build.c).
static int grid_id(const Topology *t, const int *c) {
  int id = 0;
  for (int d = t->ndims - 1; d >= 0; d--) id = id * t->dims[d] + c[d];
  return id;
}

// Row r (0 <= r < R) of the snake through every dimension but `axis`: the
// coordinates it stands for, consecutive rows adjacent (boustrophedon).
static void snake_row(const Topology *t, int axis, int r, int *c) {
  int rest[IR_MAX_TOPO_DIMS], nrest = 0;
  for (int d = 0; d < t->ndims; d++)
    if (d != axis) rest[nrest++] = d;
  // Mixed radix, the first rest dimension fastest; every digit reverses when
  // the sum of the slower digits is odd, which keeps consecutive rows adjacent.
  int digits[IR_MAX_TOPO_DIMS], rem = r;
  for (int k = 0; k < nrest; k++) {
    digits[k] = rem % t->dims[rest[k]];
    rem /= t->dims[rest[k]];
  }
  for (int k = nrest - 1, parity = 0; k >= 0; k--) {
    int size = t->dims[rest[k]], digit = parity ? size - 1 - digits[k] : digits[k];
    c[rest[k]] = digit;
    parity ^= digits[k] & 1;
  }
}

static bool comb(const Topology *t, int *order) {
  int axis = -1, rows = 1;
  for (int d = 0; d < t->ndims && axis < 0; d++)
    if (t->dims[d] % 2 == 0) axis = d;
  if (axis < 0) return false;
  for (int d = 0; d < t->ndims; d++)
    if (d != axis) rows *= t->dims[d];
  int cols = t->dims[axis], n = 0, c[IR_MAX_TOPO_DIMS] = {0};
  if (rows < 2) return false;  // a line: no cycle
  for (int r = 0; r < rows; r++) {  // column 0, every row
    snake_row(t, axis, r, c);
    c[axis] = 0;
    order[n++] = grid_id(t, c);
  }
  for (int x = 1; x < cols; x++)  // the other columns over rows 1.., alternating direction
    for (int k = 0; k < rows - 1; k++) {
      int r = (x % 2) ? rows - 1 - k : 1 + k;
      snake_row(t, axis, r, c);
      c[axis] = x;
      order[n++] = grid_id(t, c);
    }
  for (int x = cols - 1; x >= 1; x--) {  // back along row 0
    snake_row(t, axis, 0, c);
    c[axis] = x;
    order[n++] = grid_id(t, c);
  }
  return n == t->ndevices && ring_is_hamiltonian(t, order);
}

// ---- the near cycle, on a mesh with every dimension odd ----------------------------
//
// Such a mesh has no Hamiltonian cycle (see ring_hamiltonian), but it has
// one through every device but a corner, and the corner fits between two
// consecutive devices of it at cost of one hop over two links: n hops over
// n + 1 link directions, against up to n - 1 extra links for the closing
// hop of id order (seed 003 s III, Table I: a ring on a 9x9 mesh uses 28 %
// of its link directions).  The grid is seen as columns x (dimension 0) by
// rows r (the snake through the others, consecutive rows adjacent), W x R,
// both odd and at least 3; the corner is (W-1, R-1):
//   row 0 left to right; rows 1..R-3 back and forth over columns 1..W-1
//   (an even count, so it ends at column W-1); (W-1, R-2), the corner,
//   then columns W-2..1 of rows in a zigzag that ends at
//   (1, R-1); column 0 from row R-1 back to row 1.
// The one hop over two links is corner -> (W-2, R-2).

// One way to lay the near cycle on the mesh: columns along `axis` (rows
// the snake through the other dimensions), either end of each first.
typedef struct NearLayout {
  const Topology *t;
  int axis, w, rows;
  bool flip_x, flip_r;
} NearLayout;

// Layout i (0 .. 4 ndims - 1) of the near cycle on t: columns along
// dimension i / 4, flipped as i % 4 says.  False when t is no mesh such a
// cycle covers or that dimension cannot carry one (both it and the rows
// odd and at least 3).
static bool near_layout(const Topology *t, int i, NearLayout *g) {
  if (t->family != FAMILY_MESH || t->bypass || t->ndims < 2) return false;
  int axis = i / 4;
  *g = (NearLayout){.t = t, .axis = axis, .w = t->dims[axis], .rows = t->ndevices / t->dims[axis],
                    .flip_x = i & 1, .flip_r = i & 2};
  return g->w >= 3 && g->rows >= 3 && g->w % 2 && g->rows % 2;
}

static int near_push(const NearLayout *g, int *order, int n, int x, int r) {
  int c[IR_MAX_TOPO_DIMS] = {0};
  snake_row(g->t, g->axis, g->flip_r ? g->rows - 1 - r : r, c);
  c[g->axis] = g->flip_x ? g->w - 1 - x : x;
  order[n] = grid_id(g->t, c);
  return n + 1;
}

// The near cycle laid out as g says; returns the position of its corner
// (the hop from it crosses two links).
static int near_cycle(const NearLayout *g, int *order) {
  int w = g->w, rows = g->rows, n = 0, corner;
  for (int x = 0; x < w; x++) n = near_push(g, order, n, x, 0);
  for (int r = 1; r <= rows - 3; r++)
    for (int k = 0; k < w - 1; k++) n = near_push(g, order, n, r % 2 ? w - 1 - k : 1 + k, r);
  n = near_push(g, order, n, w - 1, rows - 2);
  corner = n;
  n = near_push(g, order, n, w - 1, rows - 1);
  for (int x = w - 2; x >= 1; x--) {
    bool down = (w - 2 - x) % 2 == 0;  // enter at row R-2, leave at R-1
    n = near_push(g, order, n, x, down ? rows - 2 : rows - 1);
    n = near_push(g, order, n, x, down ? rows - 1 : rows - 2);
  }
  for (int r = rows - 1; r >= 1; r--) n = near_push(g, order, n, 0, r);
  return corner;
}

// Whether a and b share a working link, or (two_links) a working
// neighbour.
static bool near_hop_works(const Topology *t, int a, int b, bool two_links) {
  if (!two_links) return ring_link_between(t, a, b, -1) >= 0;
  const Device *d = &t->devices[a];
  for (int p = 0; p < d->nports; p++)
    if (d->ports[p].link >= 0 && ring_link_between(t, a, d->ports[p].peer, -1) >= 0 &&
        ring_link_between(t, d->ports[p].peer, b, -1) >= 0)
      return true;
  return false;
}

// Links the shortest way from a to b over working links and devices
// crosses (breadth first; INT_MAX: there is none).  dist and queue:
// scratch of t->ndevices each.
static int working_links_between(const Topology *t, int a, int b, int *dist, int *queue) {
  if (a == b) return 0;
  for (int v = 0; v < t->ndevices; v++) dist[v] = -1;
  int head = 0, tail = 0;
  dist[a] = 0, queue[tail++] = a;
  while (head < tail) {
    int v = queue[head++];
    const Device *d = &t->devices[v];
    for (int p = 0; p < d->nports; p++) {
      int peer = d->ports[p].peer;
      if (ring_link_between(t, v, peer, -1) < 0 || dist[peer] >= 0) continue;
      dist[peer] = dist[v] + 1;
      if (peer == b) return dist[b];
      if (!ir_device_failed(t, peer)) queue[tail++] = peer;
    }
  }
  return INT_MAX;
}

// The links a ring in `order` crosses at least: each hop's own (two at the
// near cycle's corner) where it works, else the shortest way round the
// failed cables.  INT64_MAX: some hop has no way at all.
static int64_t near_cycle_links(const Topology *t, const int *order, int corner, int *dist, int *queue) {
  int64_t links = 0;
  for (int i = 0, n = t->ndevices; i < n; i++) {
    int a = order[i], b = order[(i + 1) % n];
    int hop = near_hop_works(t, a, b, i == corner) ? 1 + (i == corner) : working_links_between(t, a, b, dist, queue);
    if (hop == INT_MAX) return INT64_MAX;
    links += hop;
  }
  return links;
}

// The links id order's hops cross at least: the distance between each
// two consecutive devices on the grid (failed cables only lengthen them).
static int64_t id_order_links_at_least(const Topology *t) {
  int64_t links = 0;
  for (int v = 0, n = t->ndevices; v < n; v++) {
    const Device *a = &t->devices[v], *b = &t->devices[(v + 1) % n];
    for (int k = 0; k < t->ndims; k++) links += abs(a->coord[k] - b->coord[k]);
  }
  return links;
}

// With failed cables the near cycle is laid out every way there is
// (columns along each dimension, each end first), and the first that
// crosses none is the one: a failed cable off the cycle then costs nothing
// (a 9x9 mesh with cable 40-49 failed kept id order before, 56 % of its
// link directions against 29 %).  When every layout meets one, and
// round_failures, the layout whose hops, those that fail taken round the
// failures, cross the fewest links, if that is no more than id order's hops
// cross at least (the 9x9 mesh with three failed cables of
// test/lit/e2e/ring-odd-mesh.test).  Without failures the first layout is
// the one.
bool ring_near_hamiltonian(const Topology *t, int *order, bool round_failures) {
  NearLayout g;
  int n = t->ndevices, best_layout = -1;
  int64_t best = INT64_MAX;
  int *dist = NULL, *queue = NULL;
  bool found = false;
  for (int layout = 0; layout < 4 * t->ndims && !found; layout++) {
    if (!near_layout(t, layout, &g)) continue;
    int corner = near_cycle(&g, order);
    found = true;
    for (int i = 0; i < n && found && t->nfailed; i++)
      found = near_hop_works(t, order[i], order[(i + 1) % n], i == corner);
    if (found || !round_failures) continue;
    if (!dist) dist = xmalloc(sizeof(int) * (size_t)n), queue = xmalloc(sizeof(int) * (size_t)n);
    int64_t links = near_cycle_links(t, order, corner, dist, queue);
    if (links < best) best = links, best_layout = layout;
  }
  free(dist);
  free(queue);
  if (found) return true;
  if (best_layout < 0 || best > id_order_links_at_least(t)) return false;
  near_layout(t, best_layout, &g);
  near_cycle(&g, order);
  return true;
}

// ---- dragonflies: node by node ---------------------------------------------------------
//
// Nodes in id order, each consecutive pair (and the last with the first)
// joined by one of its global links, chosen so that a node is entered and
// left on different TSPs; inside a node the other TSPs come between, over
// local links.  Covers one-level systems and single racks (in a multi-rack
// system consecutive nodes of different racks share no link).

// The TSP of node `node` at which `link` ends, or -1 if it does not.
static int tsp_on(const Topology *t, int link, int node) {
  const Link *l = &t->links.data[link];
  int tpn = t->df.tsps_per_node;
  if (l->failed) return -1;
  if (l->a / tpn == node) return l->a;
  if (l->b / tpn == node) return l->b;
  return -1;
}

// Global links between nodes i and j, by scanning node i's ports.
static int links_between_nodes(const Topology *t, int i, int j, int *out, int max) {
  int tpn = t->df.tsps_per_node, n = 0;
  for (int d = i * tpn; d < (i + 1) * tpn; d++)
    for (int p = 0; p < t->devices[d].nports && n < max; p++) {
      const Port *port = &t->devices[d].ports[p];
      if (port->link >= 0 && port->peer / tpn == j && tsp_on(t, port->link, j) >= 0) out[n++] = port->link;
    }
  return n;
}

static bool dragonfly_ring(const Topology *t, int *order) {
  int tpn = t->df.tsps_per_node, nodes = t->df.nodes_per_rack * t->df.racks;
  if (nodes < 3 || tpn < 2) return false;
  int *in = xmalloc(sizeof(int) * (size_t)nodes), *out = xmalloc(sizeof(int) * (size_t)nodes);
  bool ok = true;
  for (int i = 0; i < nodes && ok; i++) {  // the link from node i to node i + 1
    int cand[16], n = links_between_nodes(t, i, (i + 1) % nodes, cand, 16), pick = -1;
    for (int c = 0; c < n && pick < 0; c++) {
      int leave = tsp_on(t, cand[c], i);
      bool fits_i = i == 0 || leave != in[i];  // node 0's entry is checked at the end
      bool fits_next = (i + 1 < nodes) || tsp_on(t, cand[c], 0) != out[0];
      if (fits_i && fits_next) pick = cand[c];
    }
    ok = pick >= 0;
    if (ok) {
      out[i] = tsp_on(t, pick, i);
      in[(i + 1) % nodes] = tsp_on(t, pick, (i + 1) % nodes);
    }
  }
  ok = ok && in[0] != out[0];
  for (int i = 0, k = 0; i < nodes && ok; i++) {
    order[k++] = in[i];
    for (int d = i * tpn; d < (i + 1) * tpn; d++)
      if (d != in[i] && d != out[i]) order[k++] = d;
    order[k++] = out[i];
  }
  free(in);
  free(out);
  return ok && ring_is_hamiltonian(t, order);
}

// ---- dragonflies with racks: racks in turn, each a path of nodes --------------------
//
// Between racks only the rack cables join nodes, so node i and node i + 1
// of different racks share no link, and the construction above fails on a
// system of racks.  There the cycle visits the racks one after another,
// each whole before the next, in an order searched for (extend_racks): a
// rack is entered over a cable from the rack before it and left over one
// to the rack after it, and between the two its nodes are searched for a
// path through them all, depth first
// over the nodes linked by a working cable, Warnsdorff's rule again
// (fewest unvisited linked nodes first), each node entered on one TSP and
// left on another; inside a node the TSPs are fully connected, so the
// devices follow: the entry TSP, the others, the exit TSP.  (6 racks of 9
// nodes, 432 devices: the device-level search spent its budget, and the
// ring went in id order, whose hops between racks cross up to five links.)

typedef struct NodePath {
  const Topology *t;
  int tpn, lo, hi;  // the rack's nodes: [lo, hi)
  int last;         // the node the path must end at (its exit TSP in out[last])
  int *node_order;  // the nodes on the path, from the rack's entry node
  int *in, *out;    // by node: the TSP it is entered on, left on
  bool *visited;
  long *steps;      // the search's steps, against RING_SEARCH_BUDGET
} NodePath;

// The distinct unvisited nodes of the rack linked to u by a working cable,
// into out; returns how many.
static int linked_nodes(const NodePath *s, int u, int *out, int max) {
  int n = 0;
  for (int d = u * s->tpn; d < (u + 1) * s->tpn; d++)
    for (int p = 0; p < s->t->devices[d].nports; p++) {
      const Port *port = &s->t->devices[d].ports[p];
      int v = port->peer / s->tpn;
      if (port->link < 0 || v == u || v < s->lo || v >= s->hi || s->visited[v] || tsp_on(s->t, port->link, v) < 0)
        continue;
      bool dup = false;
      for (int i = 0; i < n; i++) dup |= out[i] == v;
      if (!dup && n < max) out[n++] = v;
    }
  return n;
}

// Extends the path node_order[0..len) through the rack's nodes to `last`;
// false when this branch fails.
static bool extend_path(NodePath *s, int len) {
  int u = s->node_order[len - 1], nodes = s->hi - s->lo;
  if (len == nodes) return u == s->last && s->in[u] != s->out[u];
  if (++*s->steps > RING_SEARCH_BUDGET) return false;
  int cand[64], degree[64], scratch[64], ncand = 0, linked[64];
  int nlinked = linked_nodes(s, u, linked, (int)ARRAY_LEN(linked));
  for (int i = 0; i < nlinked; i++)
    if (linked[i] != s->last || len == nodes - 1) {
      cand[ncand] = linked[i];
      degree[ncand++] = linked_nodes(s, linked[i], scratch, (int)ARRAY_LEN(scratch));
    }
  for (int i = 1; i < ncand; i++)  // Warnsdorff: fewest onward choices first (stable)
    for (int j = i; j > 0 && degree[j] < degree[j - 1]; j--) {
      int x = cand[j], k = degree[j];
      cand[j] = cand[j - 1], degree[j] = degree[j - 1];
      cand[j - 1] = x, degree[j - 1] = k;
    }
  for (int i = 0; i < ncand; i++) {
    int v = cand[i], cables[64], n = links_between_nodes(s->t, u, v, cables, (int)ARRAY_LEN(cables));
    for (int c = 0; c < n; c++) {
      int leave = tsp_on(s->t, cables[c], u), enter = tsp_on(s->t, cables[c], v);
      if (leave == s->in[u] || (v == s->last && enter == s->out[v])) continue;
      s->out[u] = leave, s->in[v] = enter;
      s->visited[v] = true;
      s->node_order[len] = v;
      if (extend_path(s, len + 1)) return true;
      s->visited[v] = false;
      if (*s->steps > RING_SEARCH_BUDGET) return false;
    }
  }
  return false;
}

// The TSP of rack r at which `link` ends (it ends in r).
static int tsp_on_rack(const Topology *t, int link, int r) {
  const Link *l = &t->links.data[link];
  return l->a / (t->df.tsps_per_node * t->df.nodes_per_rack) == r ? l->a : l->b;
}

// A working rack cable from rack r to rack q not in used[0..nused), or -1.
static int rack_cable(const Topology *t, int r, int q, const int *used, int nused) {
  int npr = t->df.nodes_per_rack, cables[64];
  for (int u = r * npr; u < (r + 1) * npr; u++)
    for (int v = q * npr; v < (q + 1) * npr; v++) {
      int n = links_between_nodes(t, u, v, cables, (int)ARRAY_LEN(cables));
      for (int c = 0; c < n; c++) {
        bool taken = false;
        for (int i = 0; i < nused; i++) taken |= used[i] == cables[c];
        if (!taken) return cables[c];
      }
    }
  return -1;
}

// The order of the racks: a cycle in which each rack is entered and left
// on different nodes (its path needs two ends), one working rack cable
// between consecutive racks.  Depth first from rack 0, the next rack tried
// in id order (id order itself fails where rack 0's cables to rack 1 and
// to the last rack sit on one node: 20 racks of 9 nodes).
typedef struct RackSearch {
  const Topology *t;
  int *rack_order;
  int *cable;   // by position: the cable from rack_order[i] to the next
  bool *visited;
  long *steps;
} RackSearch;

static int node_of_rack(const Topology *t, int link, int r) { return tsp_on_rack(t, link, r) / t->df.tsps_per_node; }

static bool extend_racks(RackSearch *s, int len) {
  const Topology *t = s->t;
  int racks = t->df.racks, u = s->rack_order[len - 1];
  bool one_node = t->df.nodes_per_rack == 1;
  int entered = len > 1 ? node_of_rack(t, s->cable[len - 2], u) : -1;
  if (++*s->steps > RING_SEARCH_BUDGET) return false;
  if (len == racks) {  // closing: rack 0 is entered on another node than it is left on
    int first = s->rack_order[0], c = rack_cable(t, u, first, s->cable, len - 1);
    s->cable[len - 1] = c;
    return c >= 0 && (one_node || (node_of_rack(t, c, u) != entered &&
                                   node_of_rack(t, c, first) != node_of_rack(t, s->cable[0], first)));
  }
  for (int q = 0; q < racks; q++) {
    if (s->visited[q]) continue;
    int c = rack_cable(t, u, q, s->cable, len - 1);
    if (c < 0 || (!one_node && node_of_rack(t, c, u) == entered)) continue;
    s->cable[len - 1] = c;
    s->visited[q] = true;
    s->rack_order[len] = q;
    if (extend_racks(s, len + 1)) return true;
    s->visited[q] = false;
    if (*s->steps > RING_SEARCH_BUDGET) return false;
  }
  return false;
}

static bool dragonfly_rack_cycle(const Topology *t, int *order) {
  int tpn = t->df.tsps_per_node, npr = t->df.nodes_per_rack, racks = t->df.racks, nodes = npr * racks;
  if (racks < 2 || tpn < 2) return false;
  long steps = 0;
  RackSearch rs = {.t = t, .steps = &steps};
  rs.rack_order = xmalloc(sizeof(int) * (size_t)racks), rs.cable = xmalloc(sizeof(int) * (size_t)racks);
  rs.visited = xcalloc((size_t)racks, sizeof(bool));
  rs.rack_order[0] = 0, rs.visited[0] = true;
  bool ok = extend_racks(&rs, 1);
  int *path = xmalloc(sizeof(int) * (size_t)nodes);  // rack after rack, each its nodes' path
  NodePath s = {.t = t, .tpn = tpn, .steps = &steps};
  s.in = xmalloc(sizeof(int) * (size_t)nodes), s.out = xmalloc(sizeof(int) * (size_t)nodes);
  s.visited = xcalloc((size_t)nodes, sizeof(bool));
  for (int i = 0; i < racks && ok; i++) {
    int r = rs.rack_order[i], enter = tsp_on_rack(t, rs.cable[(i + racks - 1) % racks], r);
    int leave = tsp_on_rack(t, rs.cable[i], r), first = enter / tpn, last = leave / tpn;
    s.lo = r * npr, s.hi = (r + 1) * npr, s.last = last, s.node_order = path + (size_t)i * (size_t)npr;
    s.node_order[0] = first, s.visited[first] = true;
    s.in[first] = enter, s.out[last] = leave;
    ok = extend_path(&s, 1);
  }
  for (int i = 0, k = 0; i < nodes && ok; i++) {
    int u = path[i];
    order[k++] = s.in[u];
    for (int d = u * tpn; d < (u + 1) * tpn; d++)
      if (d != s.in[u] && d != s.out[u]) order[k++] = d;
    order[k++] = s.out[u];
  }
  free(rs.rack_order);
  free(rs.cable);
  free(rs.visited);
  free(path);
  free(s.in);
  free(s.out);
  free(s.visited);
  return ok && ring_is_hamiltonian(t, order);
}

// ---- search ----------------------------------------------------------------------------

typedef struct Search {
  const Topology *t;
  int *order;
  bool *visited;  // on the path, or (a group's search) not a member
  int n;          // devices the cycle passes through
  bool group;     // a group's cycle: closed by any link between its ends
  long steps;
} Search;

static int unvisited_degree(const Search *s, int v) {
  int k = 0;
  const Device *d = &s->t->devices[v];
  for (int p = 0; p < d->nports; p++)
    if (d->ports[p].link >= 0 && !s->t->links.data[d->ports[p].link].failed && !s->visited[d->ports[p].peer]) k++;
  return k;
}

// Extends the path order[0..len) to a cycle; false when this branch fails.
static bool extend(Search *s, int len) {
  int n = s->n, v = s->order[len - 1];
  if (len == n)
    return s->group ? ring_link_between(s->t, s->order[n - 1], s->order[0], -1) >= 0
                    : ring_is_hamiltonian(s->t, s->order);
  if (++s->steps > RING_SEARCH_BUDGET) return false;
  const Device *d = &s->t->devices[v];
  int cand[64], ncand = 0;
  for (int p = 0; p < d->nports && ncand < (int)ARRAY_LEN(cand); p++) {
    int w = d->ports[p].peer;
    if (d->ports[p].link < 0 || s->t->links.data[d->ports[p].link].failed || s->visited[w]) continue;
    bool dup = false;
    for (int i = 0; i < ncand; i++) dup |= cand[i] == w;
    if (!dup) cand[ncand++] = w;
  }
  for (int i = 1; i < ncand; i++)  // Warnsdorff: fewest onward choices first
    for (int j = i; j > 0 && unvisited_degree(s, cand[j]) < unvisited_degree(s, cand[j - 1]); j--) {
      int x = cand[j];
      cand[j] = cand[j - 1];
      cand[j - 1] = x;
    }
  for (int i = 0; i < ncand; i++) {
    s->visited[cand[i]] = true;
    s->order[len] = cand[i];
    if (extend(s, len + 1)) return true;
    s->visited[cand[i]] = false;
    if (s->steps > RING_SEARCH_BUDGET) return false;
  }
  return false;
}

// Searches for a cycle; *exhausted tells a finished search from a spent budget.
static bool search(const Topology *t, int *order, bool *exhausted) {
  Search s = {.t = t, .order = order, .visited = xcalloc((size_t)t->ndevices, sizeof(bool)), .n = t->ndevices};
  s.visited[0] = true;
  order[0] = 0;
  bool found = extend(&s, 1);
  *exhausted = s.steps <= RING_SEARCH_BUDGET;
  free(s.visited);
  return found;
}

// Whether the group's devices can have no cycle through them all, seen
// without a search (why says how): a member linked to fewer than two
// members, members in more than one piece, or members two-colourable (a
// mesh's, an even torus's) with more of one colour than of the other, since
// a cycle alternates colours.  A breadth-first walk over the links between
// members, colouring as it goes.
static bool no_cycle_possible(const Topology *t, const int *group, int ngroup, char *why, size_t whylen) {
  int *colour = xmalloc(sizeof(int) * (size_t)t->ndevices), *queue = xmalloc(sizeof(int) * (size_t)ngroup);
  for (int d = 0; d < t->ndevices; d++) colour[d] = -2;  // -2: not a member
  for (int g = 0; g < ngroup; g++) colour[group[g]] = -1;  // -1: a member not reached yet
  int head = 0, tail = 0, count[2] = {0, 0}, lonely = -1;
  bool two = true;
  colour[group[0]] = 0, queue[tail++] = group[0];
  while (head < tail) {
    int v = queue[head++], degree = 0;
    count[colour[v]]++;
    const Device *dv = &t->devices[v];
    for (int q = 0; q < dv->nports; q++) {
      int w = dv->ports[q].peer;
      if (dv->ports[q].link < 0 || t->links.data[dv->ports[q].link].failed || colour[w] == -2) continue;
      degree++;
      if (colour[w] == -1) colour[w] = !colour[v], queue[tail++] = w;
      else if (colour[w] == colour[v]) two = false;
    }
    if (degree < 2 && lonely < 0) lonely = v;
  }
  bool none = true;
  if (lonely >= 0)
    snprintf(why, whylen, "device %d is linked to fewer than two of its %d devices", lonely, ngroup);
  else if (tail < ngroup)
    snprintf(why, whylen, "its %d devices are not all linked to each other through members", ngroup);
  else if (two && count[0] != count[1])
    snprintf(why, whylen, "its %d devices split into two colours of %d and %d that every link joins, and a cycle "
             "alternates colours", ngroup, MAX(count[0], count[1]), MIN(count[0], count[1]));
  else
    none = false;
  free(colour);
  free(queue);
  return none;
}

bool ring_hamiltonian(const Topology *t, int *order, char *why, size_t whylen) {
  int n = t->ndevices;
  for (int i = 0; i < n; i++) order[i] = i;
  if (n == 1) return true;
  if (n == 2) {
    if (ring_is_hamiltonian(t, order)) return true;
    snprintf(why, whylen, "two devices form a cycle only over two links between them");
    return false;
  }
  if (t->nfailed == 0 && (t->family == FAMILY_RING || t->family == FAMILY_FULLY_CONNECTED) &&
      ring_is_hamiltonian(t, order))
    return true;
  if ((t->family == FAMILY_MESH || t->family == FAMILY_TORUS) && t->nfailed == 0 && comb(t, order)) return true;
  if (t->family == FAMILY_DRAGONFLY && dragonfly_ring(t, order)) return true;
  if (t->family == FAMILY_MESH && !t->bypass && n % 2 == 1) {
    snprintf(why, whylen,
             "the mesh has no Hamiltonian cycle: it is bipartite (colour devices by the parity of "
             "their coordinates' sum) with an odd number of devices (%d), and a cycle alternates colours",
             n);
    return false;
  }
  // What rules a cycle out without a search (a device cut off by failed
  // cables: on rack72 with a failed node the search spent its whole budget,
  // 0.28 s, on every lowering that asked).
  for (int i = 0; i < n; i++) order[i] = i;  // the constructions above may have left a part of theirs
  if (no_cycle_possible(t, order, n, why, whylen)) return false;
  if (t->family == FAMILY_DRAGONFLY && dragonfly_rack_cycle(t, order)) return true;
  if (n > RING_SEARCH_MAX_DEVICES) {
    snprintf(why, whylen, "no construction covers this network and it is too large to search (%d devices, "
             "at most %d)", n, RING_SEARCH_MAX_DEVICES);
    return false;
  }
  bool exhausted;
  if (search(t, order, &exhausted)) return true;
  if (exhausted)
    snprintf(why, whylen, "the network has no Hamiltonian cycle (an exhaustive search found none)");
  else
    snprintf(why, whylen, "no Hamiltonian cycle was found within %d search steps", RING_SEARCH_BUDGET);
  return false;
}

// A group of all of an odd mesh's devices but a corner: the near cycle
// laid out with that corner as its own, which it visits between two
// neighbours, left out; every hop is then between neighbours (tto's
// groups, and a biring over them: a search gave up on 7x7 and larger).
static bool cycle_without_corner(const Topology *t, const int *group, int ngroup, int *order) {
  if (ngroup != t->ndevices - 1) return false;
  char *member = xcalloc((size_t)t->ndevices, 1);
  for (int g = 0; g < ngroup; g++) member[group[g]] = 1;
  int left_out = 0;
  while (member[left_out]) left_out++;
  int *cycle = xmalloc(sizeof(int) * (size_t)t->ndevices);
  bool found = false;
  NearLayout g;
  for (int layout = 0; layout < 4 * t->ndims && !found; layout++) {
    if (!near_layout(t, layout, &g)) continue;
    int corner = near_cycle(&g, cycle), n = 0;
    if (cycle[corner] != left_out) continue;
    for (int i = 0; i < t->ndevices; i++)
      if (i != corner) order[n++] = cycle[i];
    found = true;
    for (int i = 0; i < n && found; i++) found = near_hop_works(t, order[i], order[(i + 1) % n], false);
  }
  free(cycle);
  free(member);
  return found;
}

bool ring_hamiltonian_in_group(const Topology *t, const int *group, int ngroup, int *order, char *why,
                               size_t whylen) {
  if (cycle_without_corner(t, group, ngroup, order)) return true;
  if (ngroup < 3 || ngroup > RING_SEARCH_MAX_DEVICES) {
    snprintf(why, whylen, "a group of %d device%s is not searched for a cycle of its own (3 .. %d are)", ngroup,
             ngroup == 1 ? "" : "s", RING_SEARCH_MAX_DEVICES);
    return false;
  }
  if (no_cycle_possible(t, group, ngroup, why, whylen)) return false;
  Search s = {.t = t, .order = order, .visited = xmalloc((size_t)t->ndevices * sizeof(bool)), .n = ngroup,
              .group = true};
  for (int d = 0; d < t->ndevices; d++) s.visited[d] = true;
  for (int g = 1; g < ngroup; g++) s.visited[group[g]] = false;
  s.visited[group[0]] = true;
  order[0] = group[0];
  bool found = extend(&s, 1);
  free(s.visited);
  if (found) return true;
  if (s.steps <= RING_SEARCH_BUDGET)
    snprintf(why, whylen, "its %d devices have no cycle over the links between them (an exhaustive search found none)",
             ngroup);
  else
    snprintf(why, whylen, "no cycle through its %d devices was found within %d search steps", ngroup,
             RING_SEARCH_BUDGET);
  return false;
}

// ---- a compilation's cycles, found once ----------------------------------------------

// One answer of ring_hamiltonian (group NULL) or ring_hamiltonian_in_group.
typedef struct RingCache {
  int ngroup;   // -1: the whole topology
  int *group;   // (NULL for the whole topology)
  int *order;   // the cycle (NULL: none)
  int n;        // its devices
  char why[256];
  struct RingCache *next;
} RingCache;

static bool same_cycle_request(const RingCache *e, const int *group, int ngroup) {
  return group ? e->ngroup == ngroup && !memcmp(e->group, group, sizeof(int) * (size_t)ngroup) : e->ngroup < 0;
}

bool ring_cycle_of(Compilation *c, const int *group, int ngroup, int *order, char *why, size_t whylen) {
  RingCache *e = c->rings;
  while (e && !same_cycle_request(e, group, ngroup)) e = e->next;
  if (!e) {
    e = xcalloc(1, sizeof *e);
    e->ngroup = group ? ngroup : -1;
    e->n = group ? ngroup : c->topo->ndevices;
    int *cycle = xmalloc(sizeof(int) * (size_t)MAX(e->n, 1));
    bool found = group ? ring_hamiltonian_in_group(c->topo, group, ngroup, cycle, e->why, sizeof e->why)
                       : ring_hamiltonian(c->topo, cycle, e->why, sizeof e->why);
    if (found) e->order = cycle;
    else free(cycle);
    if (group) {
      e->group = xmalloc(sizeof(int) * (size_t)MAX(ngroup, 1));
      memcpy(e->group, group, sizeof(int) * (size_t)ngroup);
    }
    e->next = c->rings, c->rings = e;
  }
  if (!e->order) {
    snprintf(why, whylen, "%s", e->why);
    return false;
  }
  memcpy(order, e->order, sizeof(int) * (size_t)e->n);
  return true;
}

void ring_cycles_forget(Compilation *c) {
  for (RingCache *e = c->rings, *next; e; e = next) {
    next = e->next;
    free(e->group);
    free(e->order);
    free(e);
  }
  c->rings = NULL;
}
