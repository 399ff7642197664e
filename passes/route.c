// route.c: routing.  Part of passes/, after lower and before scheduling:
// every TRANSFER node gets the paths its vectors take and how many go each
// way.
//
// Seed 002 s4.3: an SSN has no routers but its TSPs, so a transfer may
// spread its vectors over non-minimal paths through intermediate TSPs,
// which forward them by virtual cut-through (a RECV and a SEND issued on
// the cycle the first vector lands: the take lands at once and the SEND
// reads it that cycle, docs/isa.md).  The candidates are the link-disjoint
// paths of passes/paths.c, shortest first.  On an empty network with
// jitter off, a route of latency L (the sum of its links' latency_max,
// plus the sync pass's receive slack at every hop) and
// pacing e carrying c vectors is done L + (c - 1) e + 1 cycles after its
// first vector leaves; a transfer is done when its slowest route is.
//   minimal     the shortest path only (a tree edge's own cable, edge_path);
//   nonminimal  the vectors split over every candidate so that all routes
//               finish as early as possible (a route too long to help gets
//               none);
//   auto        here, whichever of the two finishes first alone (minimal
//               on a tie), for --dump-after=route; the scheduler then
//               decides each transfer against the load on the links
//               (schedule.c, place_best) and keeps the all-minimal program
//               if that finishes first.
// A path must have one vector size and one pacing along it (a candidate
// that differs from the shortest path's is dropped; when the shortest path
// mixes them, the shortest over links of one kind alone is the pair's one
// route, route_alike_only).
#include "passes.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

const char *const route_mode_names[ROUTE_MODE_COUNT] = {"auto", "minimal", "nonminimal"};

// The candidate paths between one pair of devices: a prefix of their
// greedy sequence (paths.c), as long as the transfers between them so far
// could use.  A path of latency L carries none of n vectors split by
// `split` unless L <= L0 + (n - 1) e, the minimal path's time alone, and
// every hop costs at least min_hop; so a transfer needs the paths of at
// most (L0 + (n - 1) e) / min_hop hops, and a one-vector transfer the
// minimal path alone.  No path more than ROUTE_MAX_DETOUR_HOPS longer
// than the shortest is considered at all.
typedef struct PairPaths {
  int src, dst;      // src < 0: an empty slot
  int npaths;
  Path *paths;       // room for ROUTE_MAX_PATHS
  int searched_hops; // every path of the sequence up to this many hops is found
  bool exhausted;    // the sequence has no more
  bool uniform;      // paths[0] is known to be of one pace and vector size (minimal_is_uniform)
} PairPaths;

typedef struct Router {
  Compilation *c;
  PathFinder *finder;
  int64_t min_hop;   // the least latency_max + receive slack of a working link
  PairPaths *table;  // open addressing, a power of two long
  int cap, len;
  int *every;        // by link: the cycles a vector holds it (ir_cycles_per_vector, once)
  int *kind, nkinds; // by link: its pace and vector size as a number (link_kinds; NULL: not yet)
  RouteMode mode;    // c->route_mode, or minimal once a transfer may spread (Compilation.route_until_spread)
} Router;

// The latency, pacing and vector size of a path; false if its links differ.
static bool path_params(const Router *r, const Path *p, int64_t slack, int64_t *latency, int *every,
                        int *vector_bytes) {
  const Topology *t = r->c->topo;
  *latency = 0;
  for (int i = 0; i < p->nhops; i++) {
    const LinkParams *lp = &t->links.data[p->hops[i].link].p;
    int e = r->every[p->hops[i].link];
    if (i && (e != *every || lp->vector_bytes != *vector_bytes)) return false;
    *every = e;
    *vector_bytes = lp->vector_bytes;
    *latency += lp->latency_max + slack;
  }
  return true;
}

static uint64_t pair_hash(int src, int dst) { return ((uint64_t)(uint32_t)src * 0x9e3779b97f4a7c15ull) ^ (uint32_t)dst; }

static void grow(Router *r) {
  PairPaths *old = r->table;
  int oldcap = r->cap;
  r->cap = oldcap ? oldcap * 2 : 256;
  r->table = xmalloc(sizeof(PairPaths) * (size_t)r->cap);
  for (int i = 0; i < r->cap; i++) r->table[i].src = -1;
  for (int i = 0; i < oldcap; i++) {
    if (old[i].src < 0) continue;
    uint64_t h = pair_hash(old[i].src, old[i].dst) & (uint64_t)(r->cap - 1);
    while (r->table[h].src >= 0) h = (h + 1) & (uint64_t)(r->cap - 1);
    r->table[h] = old[i];
  }
  free(old);
}

static PairPaths *pair_entry(Router *r, int src, int dst) {
  if (2 * (r->len + 1) > r->cap) grow(r);
  uint64_t h = pair_hash(src, dst) & (uint64_t)(r->cap - 1);
  for (; r->table[h].src >= 0; h = (h + 1) & (uint64_t)(r->cap - 1))
    if (r->table[h].src == src && r->table[h].dst == dst) return &r->table[h];
  PairPaths *pp = &r->table[h];
  *pp = (PairPaths){.src = src, .dst = dst, .searched_hops = -1};
  pp->paths = ARENA_ARRAY(&r->c->arena, Path, ROUTE_MAX_PATHS);
  r->len++;
  return pp;
}

// Continues pp's sequence up to paths of max_hops hops (at most `max` paths).
static void extend(Router *r, PairPaths *pp, int max_hops, int max) {
  bool none_left;
  pp->npaths = route_more_paths(r->finder, &r->c->arena, pp->src, pp->dst, pp->paths, pp->npaths, max, max_hops,
                                &none_left);
  pp->exhausted = none_left || pp->npaths == ROUTE_MAX_PATHS;
  if (pp->npaths < max) pp->searched_hops = MAX(pp->searched_hops, max_hops);  // stopped by the bound
  else pp->searched_hops = MAX(pp->searched_hops, pp->paths[pp->npaths - 1].nhops - 1);  // by the count: more may tie
}

// Numbers the links' kinds, each pace and vector size a kind, for
// route_alike_only (rare: only where a shortest path mixes them).
static void link_kinds(Router *r) {
  const Topology *t = r->c->topo;
  r->kind = ARENA_ARRAY(&r->c->arena, int, t->links.len + 1);
  int *first = ARENA_ARRAY(&r->c->arena, int, t->links.len + 1);  // by kind: a link of it
  for (int l = 0; l < t->links.len; l++) {
    int k = 0;
    while (k < r->nkinds && (r->every[first[k]] != r->every[l] ||
                             t->links.data[first[k]].p.vector_bytes != t->links.data[l].p.vector_bytes))
      k++;
    if (k == r->nkinds) first[r->nkinds++] = l;
    r->kind[l] = k;
  }
}

// When the pair's shortest path mixes link paces (a slow cable between two
// devices also joined by faster ones): the shortest path over the links of
// one pace and vector size alone, each such kind tried, becomes the pair's
// one route (no spreading: the link-disjoint candidates were made round the
// mixed path).  False when no kind joins the pair.
static bool route_alike_only(Router *r, PairPaths *pp) {
  const Topology *t = r->c->topo;
  if (!r->kind) link_kinds(r);
  bool *only = xmalloc(sizeof(bool) * ((size_t)t->links.len + 1)), found = false;
  Path best = {0}, path;
  for (int k = 0; k < r->nkinds; k++) {
    for (int l = 0; l < t->links.len; l++) only[l] = r->kind[l] == k;
    if (route_shortest_within(r->finder, &r->c->arena, pp->src, pp->dst, only, &path) &&
        (!found || path.nhops < best.nhops))
      best = path, found = true;
  }
  free(only);
  if (found) pp->paths[0] = best, pp->npaths = 1, pp->exhausted = true, pp->searched_hops = INT_MAX;
  return found;
}

// Whether the pair's first path (the minimal one) is uniform, made so if
// it can be (route_alike_only); checked once a pair.
static bool minimal_is_uniform(Router *r, PairPaths *pp) {
  int64_t latency;
  int every, vb;
  if (!pp->uniform)
    pp->uniform = path_params(r, &pp->paths[0], r->c->sync.rx_slack, &latency, &every, &vb) || route_alike_only(r, pp);
  return pp->uniform;
}

// The pair's paths, enough for a transfer of `bytes` (in the vectors of
// the minimal path: every candidate the router keeps has its pace and
// vector size).
static PairPaths *candidates(Router *r, int src, int dst, int64_t bytes, bool minimal) {
  PairPaths *pp = pair_entry(r, src, dst);
  if (!pp->npaths && !pp->exhausted) extend(r, pp, INT_MAX, 1);  // the minimal path
  if (!pp->npaths || !minimal_is_uniform(r, pp)) return pp;      // refused by the caller
  if (pp->exhausted || minimal || r->mode == ROUTE_MINIMAL) return pp;  // no spreading
  int64_t latency;
  int every, vb;
  path_params(r, &pp->paths[0], r->c->sync.rx_slack, &latency, &every, &vb);
  int64_t vectors = MAX(1, (bytes + vb - 1) / vb);
  if (vectors > ROUTE_MAX_CYCLES / every) return pp;  // refused by the caller
  int64_t reach = latency + (vectors - 1) * (int64_t)every;
  int hops = (int)MIN(MIN(reach / r->min_hop, INT_MAX), (int64_t)pp->paths[0].nhops + ROUTE_MAX_DETOUR_HOPS);
  if (hops > pp->searched_hops) extend(r, pp, hops, ROUTE_MAX_PATHS);
  return pp;
}

int64_t route_least_hop(const Compilation *c) {
  int64_t least = INT64_MAX;
  for (int i = 0; i < c->topo->links.len; i++) {
    const Link *l = &c->topo->links.data[i];
    if (!l->failed) least = MIN(least, l->p.latency_max + c->sync.rx_slack);
  }
  return least == INT64_MAX ? 1 : MAX(least, 1);
}

// How many vectors a route can finish within t cycles.
static int64_t capacity(const Route *rt, int64_t t) { return t < rt->latency + 1 ? 0 : (t - rt->latency - 1) / rt->every + 1; }

int64_t route_finish(const Route *routes, int nroutes) {
  int64_t finish = 0;
  for (int i = 0; i < nroutes; i++)
    if (routes[i].count) finish = MAX(finish, routes[i].latency + (routes[i].count - 1) * routes[i].every + 1);
  return finish;
}

static void sort_int64(int64_t *x, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && x[j] < x[j - 1]; j--) {
      int64_t y = x[j];
      x[j] = x[j - 1], x[j - 1] = y;
    }
}

// The least t at which routes[0..k) carry n vectors between them.  The
// routes share one pace e (route_transfer), so route i's vectors are taken
// at u_i + m e (u_i its latency + 1, m = 0, 1, ...).  Write u_i = e q_i +
// r_i and t = e Q + R (0 <= R < e): by t route i has carried
// max(0, Q - q_i + [R >= r_i]).  With R = e - 1 that is Q - q_i + 1 for
// every route with q_i <= Q, a line in Q between consecutive q_i: the
// least Q that carries n is solved on the first piece that reaches it.
// Below it, at t = e Q - 1, the routes carried `base`; the rest, d, are
// the routes started by Q taking one more each, in the order of their r_i:
// R is the d-th smallest.  (A binary search over t asked every route its
// capacity at each step, a division each: a tenth of a ring compile at
// 256 MiB, and with a bracket round the fluid estimate still 3 % of a
// ctree one on rack72.)
static int64_t least_time(const Route *routes, int k, int64_t n) {
  int64_t e = routes[0].every, q[ROUTE_MAX_PATHS], r[ROUTE_MAX_PATHS], sum = 0, Q = 0;
  if (n <= 0) return 1;  // nothing to carry
  for (int i = 0; i < k; i++) q[i] = (routes[i].latency + 1) / e;
  sort_int64(q, k);
  for (int j = 1; j <= k; j++) {  // j routes started: Q in [q[j - 1], q[j])
    sum += q[j - 1];
    Q = MAX(q[j - 1], (n + sum + j - 1) / j - 1);
    if (j == k || Q < q[j]) break;
  }
  int64_t base = 0;
  int started = 0;
  for (int i = 0; i < k; i++) {
    int64_t u = routes[i].latency + 1;
    if (u / e <= Q) base += Q - u / e, r[started++] = u % e;
  }
  sort_int64(r, started);
  int64_t d = n - base;
  if (d < 1 || d > started) die("route: %lld vectors left for %d routes at step %lld", (long long)d, started, (long long)Q);
  return e * Q + r[d - 1];
}

// Splits n vectors over routes[0..k) so the last finishes earliest: the
// least t at which the routes' capacities add up to n (least_time), then
// each route filled to its capacity in order.  Returns the routes kept.
static int split(Route *routes, int k, int64_t n) {
  int64_t lo = least_time(routes, k, n);
  int kept = 0;
  int64_t left = n;
  for (int i = 0; i < k && left; i++) {
    int64_t c = MIN(left, capacity(&routes[i], lo));
    if (!c) continue;
    routes[kept] = routes[i];
    routes[kept].first = n - left;
    routes[kept].count = c;
    left -= c;
    kept++;
  }
  return kept;
}

// Which of the pair's paths is a transfer's minimal route: the one-hop path
// over the link a tree edge was built over (DagNode.over_link), when it has
// the minimal path's pace and vector size, else the minimal path (0).
// Where several cables join two neighbours, multitree (and ctree, grown
// the same way) builds its trees over link directions so that no two
// trees share one in a step (seed 003 s II-B); the pair's minimal path
// alone put them all on one cable (a 4 MiB allreduce on a 4x2 torus under
// --algo=multitree --route=minimal: 315,025 cycles, against 157,922 over
// the trees' own cables).
static int edge_path(Router *r, PairPaths *pp, const DagNode *n) {
  if (!n->over_link || (pp->paths[0].nhops == 1 && pp->paths[0].hops[0].link == n->link)) return 0;
  if (pp->searched_hops < 1 && !pp->exhausted) extend(r, pp, 1, ROUTE_MAX_PATHS);  // every cable between them
  int64_t latency;
  int every0, vb0, every, vb;
  path_params(r, &pp->paths[0], 0, &latency, &every0, &vb0);
  for (int i = 1; i < pp->npaths; i++)
    if (pp->paths[i].nhops == 1 && pp->paths[i].hops[0].link == n->link)
      return path_params(r, &pp->paths[i], 0, &latency, &every, &vb) && every == every0 && vb == vb0 ? i : 0;
  return 0;
}

static bool route_transfer(Router *r, DagNode *n) {
  PairPaths *pp = candidates(r, n->src, n->dst, n->bytes, n->fill_gaps);
  if (!pp->npaths) {
    diag_error(&r->c->diag, n->op->loc, "no working path from device %d to device %d for %s", n->src, n->dst,
               n->tensor->name);
    return false;
  }
  // The paths whose links share the minimal one's pace and vector size; a
  // transfer that fills gaps is cut in time, not spread over paths.
  int first = edge_path(r, pp, n);
  Route *cand = ARENA_ARRAY(&r->c->arena, Route, pp->npaths);
  int k = 0, vector_bytes = 0;
  for (int j = 0; j < pp->npaths && !(n->fill_gaps && k); j++) {
    int i = j == 0 ? first : j <= first ? j - 1 : j;  // the edge's path first, the rest in order
    if (!pp->paths[i].id) pp->paths[i].id = ++r->c->dag->npath_ids;
    Route rt = {.path = pp->paths[i], .hop_slack = r->c->sync.rx_slack};
    int vb = 0;
    if (!path_params(r, &rt.path, rt.hop_slack, &rt.latency, &rt.every, &vb) || (k && (rt.every != cand[0].every || vb != vector_bytes)))
      continue;
    if (!k) vector_bytes = vb;
    cand[k++] = rt;
  }
  if (!k) {
    diag_error(&r->c->diag, n->op->loc,
               "no route from device %d to device %d has links of one speed and vector size; a stream needs one "
               "of each",
               n->src, n->dst);
    return false;
  }
  n->vectors = (n->bytes + vector_bytes - 1) / vector_bytes;
  if (n->vectors > (ROUTE_MAX_CYCLES - cand[0].latency) / cand[0].every) {
    diag_error(&r->c->diag, n->op->loc,
               "moving %lld vectors of %s from device %d to device %d at %d cycles a vector takes more than "
               "ROUTE_MAX_CYCLES (2^56)",
               (long long)n->vectors, n->tensor->name, n->src, n->dst, cand[0].every);
    return false;
  }
  n->minimal = ARENA_NEW(&r->c->arena, Route);
  *n->minimal = cand[0];
  n->minimal->first = 0;
  n->minimal->count = n->vectors;
  n->spread = cand;
  n->nspread = split(cand, k, n->vectors);
  route_choose(n, r->mode);
  return true;
}

bool route_may_spread(const DagNode *n) { return n->kind == NODE_TRANSFER && !n->on_cycle && n->nspread >= 2; }

void route_choose(DagNode *n, RouteMode mode) {
  bool spread = !n->fill_gaps && (mode == ROUTE_NONMINIMAL || (mode == ROUTE_AUTO && route_finish(n->spread, n->nspread) <
                                                                                       route_finish(n->minimal, 1)));
  n->nonminimal = spread;
  n->routes = spread ? n->spread : n->minimal;
  n->nroutes = spread ? n->nspread : 1;
}

bool pass_route(Compilation *c) {
  if (c->dag->scheduled) return true;  // choose's trial, kept (c->trial_dag)
  Router r = {.c = c, .mode = c->route_mode, .finder = route_finder_new(c->topo), .min_hop = route_least_hop(c),
              .every = ARENA_ARRAY(&c->arena, int, c->topo->links.len + 1)};
  for (int i = 0; i < c->topo->links.len; i++) r.every[i] = ir_cycles_per_vector(&c->topo->links.data[i].p, c->topo->clock_mhz);
  bool ok = true;
  for (int i = 0; i < c->dag->nodes.len && ok; i++) {
    DagNode *n = c->dag->nodes.data[i];
    if (n->kind == NODE_TRANSFER) ok = route_transfer(&r, n);
    // A choose trial that may be the compile's own only while nothing may
    // spread: past the first transfer that may, it cannot be, and its
    // minimal schedule needs no detours (their search is most of auto's
    // routing on a dragonfly).
    if (ok && c->route_until_spread && r.mode == ROUTE_AUTO && route_may_spread(n)) r.mode = ROUTE_MINIMAL;
  }
  free(r.table);
  route_finder_free(r.finder);
  return ok;
}
