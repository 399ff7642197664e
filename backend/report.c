// report.c: how good each collective's schedule is.  Part of backend/: it
// reads the scheduled DAG (after the schedule pass) and the topology, and
// changes nothing; tspc --stats prints its line a collective, and dot.c
// labels its pictures with the same timesteps.
//
// For each allreduce, reduce_scatter and all_gather: the cycles its
// transfers and stages took, and three lower bounds on them
// (docs/collectives.md, "Measuring a collective", derives each):
//   volume   the bytes that must arrive at group members, over the
//            bandwidth of every working link direction together:
//            2(N-1)D for an allreduce, (N-1)D for the others;
//   cut      for a cut (S, rest) with members on both sides, the bytes that
//            must cross it one way (D for an allreduce; max(k_S, k_rest) D/N
//            for the others) over the bandwidth across it; the largest over
//            a documented family of cuts: every device, every row or column
//            split of a mesh or torus, every node and rack of a dragonfly,
//            and BFS balls round members;
//   latency  one vector over the group's diameter: diameter x (latency_max
//            + receive slack) + 1, what route_finish gives for one vector
//            over that many hops.
// Efficiency is the largest bound over the cycles taken.
#include "backend.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// ---- timesteps ----

int *be_transfer_timesteps(const Dag *d) {
  int *step = xcalloc((size_t)d->nodes.len + 1, sizeof(int));
  for (int i = 0; i < d->nodes.len; i++) {
    const DagNode *n = d->nodes.data[i];
    if (n->kind != NODE_TRANSFER && n->kind != NODE_STAGE) continue;
    int before = 0;  // the deepest transfer of the same op this one waits for
    for (int k = 0; k < n->ndeps; k++) {
      const DagNode *dep = d->nodes.data[n->deps[k]];
      if (dep->op == n->op) before = MAX(before, step[dep->id]);
    }
    step[i] = before + (n->kind == NODE_TRANSFER);
  }
  return step;
}

// ---- links ----

// Bytes one direction of a link carries a cycle: a vector's payload over
// the cycles it holds the link.
static double link_bandwidth(const Topology *t, const Link *l) {
  return (double)l->p.vector_bytes / ir_cycles_per_vector(&l->p, t->clock_mhz);
}

// Whole cycles from a figure computed in floating point, rounded up; a
// hair below an integer counts as that integer (a bound must not gain a
// cycle from rounding error).
static int64_t ceil_cycles(double x) { return (int64_t)ceil(x * (1 - 1e-12) - 1e-9); }

// ---- cuts ----

typedef struct CutSearch {
  const Topology *t;
  const char *member;  // by device: in the group
  int ngroup;
  double bytes;        // D
  bool sharded;        // reduce_scatter, all_gather: each member needs D/N per member across
  double best;         // the largest bound found, in cycles (unrounded)
  char name[REPORT_CUT_NAME_MAX];
} CutSearch;

// The bound of a cut with `inside` members on one side and `bw` bytes a
// cycle crossing it each way; kept if it is the largest so far.
PRINTF_LIKE(4, 5) static void consider(CutSearch *cs, int inside, double bw, const char *fmt, ...) {
  int outside = cs->ngroup - inside;
  if (inside < 1 || outside < 1 || bw <= 0) return;
  double need = cs->sharded ? MAX(inside, outside) * cs->bytes / cs->ngroup : cs->bytes;
  if (need / bw <= cs->best) return;
  cs->best = need / bw;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cs->name, sizeof cs->name, fmt, ap);
  va_end(ap);
}

// Each part of a partition of the devices (part[d] in 0 .. nparts) against
// the rest, named "WHAT(part)".
static void try_parts(CutSearch *cs, const int *part, int nparts, const char *what) {
  const Topology *t = cs->t;
  double *bw = xcalloc((size_t)nparts, sizeof(double));
  int *inside = xcalloc((size_t)nparts, sizeof(int));
  for (int d = 0; d < t->ndevices; d++) inside[part[d]] += cs->member[d];
  for (int i = 0; i < t->links.len; i++) {
    const Link *l = &t->links.data[i];
    if (l->failed || part[l->a] == part[l->b]) continue;
    bw[part[l->a]] += link_bandwidth(t, l);
    bw[part[l->b]] += link_bandwidth(t, l);
  }
  for (int p = 0; p < nparts; p++) consider(cs, inside[p], bw[p], "%s(%d)", what, p);
  free(bw);
  free(inside);
}

// Every split of a mesh or torus along dimension k: coordinate < p against
// the rest, for 0 < p < dims[k].  A wrap link crosses every split it spans.
static void try_splits(CutSearch *cs, int k) {
  const Topology *t = cs->t;
  static const char axis[IR_MAX_TOPO_DIMS] = {'x', 'y', 'z'};
  int n = t->dims[k];
  double *bw = xcalloc((size_t)n + 1, sizeof(double));
  int *below = xcalloc((size_t)n + 1, sizeof(int));  // members with coordinate < p
  for (int d = 0; d < t->ndevices; d++)
    if (cs->member[d]) below[t->devices[d].coord[k] + 1]++;
  for (int p = 1; p <= n; p++) below[p] += below[p - 1];
  for (int i = 0; i < t->links.len; i++) {
    const Link *l = &t->links.data[i];
    int ca = t->devices[l->a].coord[k], cb = t->devices[l->b].coord[k];
    if (l->failed) continue;
    for (int p = MIN(ca, cb) + 1; p <= MAX(ca, cb); p++) bw[p] += link_bandwidth(t, l);
  }
  for (int p = 1; p < n; p++) consider(cs, below[p], bw[p], "%c<%d", axis[k], p);
  free(bw);
  free(below);
}

// Hops from src to every device over working links (-1: unreached), by BFS
// with queue as scratch.  Returns the most hops to a group member.
static int bfs(const Topology *t, int src, const char *member, int *dist, int *queue) {
  for (int d = 0; d < t->ndevices; d++) dist[d] = -1;
  int head = 0, tail = 0, ecc = 0;
  dist[src] = 0;
  queue[tail++] = src;
  while (head < tail) {
    int d = queue[head++];
    if (member[d]) ecc = MAX(ecc, dist[d]);
    const Device *dev = &t->devices[d];
    for (int p = 0; p < dev->nports; p++) {
      int li = dev->ports[p].link, peer = dev->ports[p].peer;
      if (li < 0 || t->links.data[li].failed || dist[peer] >= 0) continue;
      dist[peer] = dist[d] + 1;
      queue[tail++] = peer;
    }
  }
  return ecc;
}

// The balls of radius r = 0 .. ecc - 1 round src (dist: hops from it)
// against the rest.  Neighbours differ by at most a hop, so a link crosses
// exactly the ball of its nearer end's radius.
static void try_balls(CutSearch *cs, int src, const int *dist, int ecc) {
  const Topology *t = cs->t;
  double *bw = xcalloc((size_t)ecc + 1, sizeof(double));
  int *inside = xcalloc((size_t)ecc + 1, sizeof(int));
  for (int d = 0; d < t->ndevices; d++)
    if (cs->member[d] && dist[d] >= 0) inside[dist[d]]++;
  for (int r = 1; r <= ecc; r++) inside[r] += inside[r - 1];
  for (int i = 0; i < t->links.len; i++) {
    const Link *l = &t->links.data[i];
    int da = dist[l->a], db = dist[l->b];
    if (l->failed || da == db || da < 0 || db < 0) continue;
    if (MIN(da, db) < ecc) bw[MIN(da, db)] += link_bandwidth(t, l);
  }
  for (int r = 0; r < ecc; r++) consider(cs, inside[r], bw[r], "ball(device(%d),%d)", src, r);
  free(bw);
  free(inside);
}

// The dragonfly's nodes (and racks, with more than one) against the rest.
static void try_dragonfly(CutSearch *cs) {
  const Topology *t = cs->t;
  int *part = xmalloc(sizeof(int) * (size_t)t->ndevices);
  for (int d = 0; d < t->ndevices; d++)
    part[d] = t->devices[d].coord[0] * t->df.nodes_per_rack + t->devices[d].coord[1];
  try_parts(cs, part, t->df.nodes_per_rack * t->df.racks, "node");
  if (t->df.racks > 1) {
    for (int d = 0; d < t->ndevices; d++) part[d] = t->devices[d].coord[0];
    try_parts(cs, part, t->df.racks, "rack");
  }
  free(part);
}

// ---- one collective ----

// The group of op: the devices holding its operand, ascending.
static int group_of(const Topology *t, const Op *op, int *group) {
  return ir_place_devices(&op->args[0]->place, t->ndevices, group);
}

// The cut family and the group's diameter, from BFS balls round up to
// REPORT_MAX_BFS_SOURCES members (evenly spaced when there are more: the
// diameter is then the largest eccentricity seen, still a lower bound).
static void search_cuts(CollectiveReport *r, const Topology *t, const int *group, const char *member) {
  CutSearch cs = {.t = t, .member = member, .ngroup = r->ngroup, .bytes = (double)r->bytes,
                  .sharded = r->op->kind != OP_ALLREDUCE};
  int *part = xmalloc(sizeof(int) * (size_t)t->ndevices);
  for (int d = 0; d < t->ndevices; d++) part[d] = d;
  try_parts(&cs, part, t->ndevices, "device");
  if (t->family == FAMILY_MESH || t->family == FAMILY_TORUS)
    for (int k = 0; k < t->ndims; k++) try_splits(&cs, k);
  if (t->family == FAMILY_DRAGONFLY) try_dragonfly(&cs);
  int *dist = xmalloc(sizeof(int) * (size_t)t->ndevices), *queue = xmalloc(sizeof(int) * (size_t)t->ndevices);
  int sources = MIN(r->ngroup, REPORT_MAX_BFS_SOURCES);
  r->diameter = 0;
  for (int i = 0; i < sources; i++) {
    int src = group[(int64_t)i * r->ngroup / sources];
    int ecc = bfs(t, src, member, dist, queue);
    r->diameter = MAX(r->diameter, ecc);
    try_balls(&cs, src, dist, ecc);
  }
  r->cut = ceil_cycles(cs.best);
  snprintf(r->cut_name, sizeof r->cut_name, "%s", cs.best > 0 ? cs.name : "none");
  free(part);
  free(dist);
  free(queue);
}

// Sum over working link directions of their bandwidth (bytes a cycle), and
// the cheapest hop for one vector: latency_max plus the receive slack.
static double total_bandwidth(const Topology *t, int *directions, int64_t *hop) {
  double bw = 0;
  *directions = 0;
  *hop = 0;
  for (int i = 0; i < t->links.len; i++) {
    const Link *l = &t->links.data[i];
    if (l->failed) continue;
    bw += 2 * link_bandwidth(t, l);
    *directions += 2;
    *hop = *directions == 2 ? l->p.latency_max : MIN(*hop, (int64_t)l->p.latency_max);
  }
  return bw;
}

// When route rt's last hold of a link ends: hop h's vectors leave
// (latency_max + rx_slack) after hop h - 1's, as the scheduler places them.
static int64_t route_held_until(const Route *rt, const Topology *t, int64_t rx_slack) {
  int64_t leave = rt->start, until = rt->start;
  for (int h = 0; h < rt->path.nhops; h++) {
    until = MAX(until, leave + rt->count * rt->every);
    leave += t->links.data[rt->path.hops[h].link].p.latency_max + rx_slack;
  }
  return until;
}

// The cycles the op's transfers and stages span, the link-direction cycles
// its routes hold and until when, its deepest timestep, and the link
// directions they cross.
static void measure(CollectiveReport *r, const Topology *t, const Dag *d, const int *step, int64_t rx_slack) {
  char *used = xcalloc(2 * (size_t)t->links.len + 1, 1);  // by link direction
  bool any = false;
  for (int i = 0; i < d->nodes.len; i++) {
    const DagNode *n = d->nodes.data[i];
    if (n->op != r->op || (n->kind != NODE_TRANSFER && n->kind != NODE_STAGE)) continue;
    r->start = any ? MIN(r->start, n->start) : n->start;
    r->finish = any ? MAX(r->finish, n->finish) : n->finish;
    any = true;
    r->timesteps = MAX(r->timesteps, step[i]);
    if (n->kind != NODE_TRANSFER) continue;
    for (int k = 0; k < n->nroutes; k++) {
      const Path *p = &n->routes[k].path;
      r->busy += n->routes[k].count * n->routes[k].every * p->nhops;
      r->held_until = MAX(r->held_until, route_held_until(&n->routes[k], t, rx_slack));
      for (int h = 0; h < p->nhops; h++) {
        const Link *link = &t->links.data[p->hops[h].link];
        used[2 * p->hops[h].link + (p->hops[h].from != link->a)] = 1;
      }
    }
  }
  r->cycles = r->finish - r->start;
  for (int i = 0; i < 2 * t->links.len; i++) r->links_used += used[i];
  free(used);
}

// The bounds from the formulas at the top, and the figures derived from them.
static void bound(CollectiveReport *r, const Topology *t, const SyncPlan *s) {
  double factor = r->op->kind == OP_ALLREDUCE ? 2.0 * (r->ngroup - 1) : r->ngroup - 1.0;
  int64_t hop;
  double bw = total_bandwidth(t, &r->link_directions, &hop);
  r->hop_latency = hop + s->rx_slack;
  if (r->ngroup < 2) {  // nothing needs to move
    r->volume = r->cut = r->latency = 0;
  } else {
    r->volume = bw > 0 ? ceil_cycles(factor * (double)r->bytes / bw) : 0;
    r->latency = r->diameter * r->hop_latency + 1;
  }
  r->bound = r->volume;
  r->binding = "volume";
  if (r->cut > r->bound) r->bound = r->cut, r->binding = "cut";
  if (r->latency > r->bound) r->bound = r->latency, r->binding = "latency";
  r->efficiency = r->cycles > 0 ? (double)r->bound / (double)r->cycles : 1.0;
  double seconds = (double)r->cycles / (t->clock_mhz * 1e6);
  double per = r->ngroup ? factor / r->ngroup : 0;  // nccl-tests: busbw = algbw x 2(N-1)/N or (N-1)/N
  r->busbw_gbps = seconds > 0 ? (double)r->bytes / seconds * per / 1e9 : 0;
  int64_t held = MAX(r->finish, r->held_until) - r->start;  // the links' busy span
  r->link_util = held > 0 && r->link_directions ? (double)r->busy / ((double)r->link_directions * (double)held) : 0;
}

static void report_one(CollectiveReport *r, const Topology *t, const Dag *d, const SyncPlan *s, const int *step) {
  int *group = xmalloc(sizeof(int) * (size_t)t->ndevices);
  char *member = xcalloc((size_t)t->ndevices, 1);
  r->ngroup = group_of(t, r->op, group);
  for (int g = 0; g < r->ngroup; g++) member[group[g]] = 1;
  const Tensor *buffer = r->op->kind == OP_ALL_GATHER ? r->op->result : r->op->args[0];
  r->bytes = ir_tensor_bytes(buffer);
  measure(r, t, d, step, s->rx_slack);
  if (r->ngroup >= 2) search_cuts(r, t, group, member);
  else snprintf(r->cut_name, sizeof r->cut_name, "none");
  bound(r, t, s);
  free(group);
  free(member);
}

int be_collective_reports(const Topology *t, const Dag *d, const SyncPlan *s, const AlgoKind *algos,
                          CollectiveReport *out) {
  int *step = be_transfer_timesteps(d);
  int n = 0;
  for (int i = 0; i < d->graph->ops.len; i++) {
    const Op *op = d->graph->ops.data[i];
    if (!ir_op_is_collective(op->kind)) continue;
    CollectiveReport *r = &out[n++];
    *r = (CollectiveReport){.op = op, .algo = algos ? algos[op->id] : op->algo};
    report_one(r, t, d, s, step);
  }
  free(step);
  return n;
}

void be_print_collective_report(const CollectiveReport *r, FILE *out) {
  fprintf(out,
          "collective %s: %s algo=%s N=%d bytes=%lld cycles=%lld bound=%lld (%s) volume=%lld cut=%lld (%s) "
          "latency=%lld diameter=%d efficiency=%.3f busbw_gbps=%.3f link_util=%.3f timesteps=%d links_used=%d/%d\n",
          r->op->result->name, ir_op_info[r->op->kind].name, ir_algo_names[r->algo], r->ngroup,
          (long long)r->bytes, (long long)r->cycles, (long long)r->bound, r->binding, (long long)r->volume,
          (long long)r->cut, r->cut_name, (long long)r->latency, r->diameter, r->efficiency, r->busbw_gbps,
          r->link_util, r->timesteps, r->links_used, r->link_directions);
}
