// schedule.c: list scheduling of the DAG on the machine's links and units.
// Part of passes/, after route; synchronisation and code generation emit
// what it decides.
//
// Seed 002 s4.2: in a software-scheduled network every vector's slot on
// every link is fixed at compile time, and no two vectors share a link
// direction in one slot.  Nodes are taken in DAG order (a topological
// order); each starts at the earliest cycle at which its dependencies are
// done and every resource it needs is free for as long as it needs it.
// Resources are reservation tables (passes/reserve.c), one run per stream,
// never one entry per vector:
//   - each link direction, busy from a route's departure there for
//     count x every cycles (the receiving port is busy for the same run
//     shifted by the link's latency, so it needs no table of its own);
//   - each chip-to-chip unit's issue slot: a SEND where a route leaves a
//     device, a RECV where it lands (an intermediate TSP issues both on
//     the landing cycle: virtual cut-through);
//   - each device's vector unit (reductions, add, relu) and matrix unit.
// Times are in cycles of an ideal clock from the end of the alignment
// preamble, with every link at its latency_max: under jitter a vector only
// lands earlier and waits in the port's buffer; drift is the sync pass's.
//
// A transfer's route r leaving at s_r has its vector k cross hop j at
// s_r + k e + (latencies of hops before j) and taken at the destination at
// s_r + L + k e; the transfer is done the cycle after its last take.  A
// reducing transfer is then added into the destination's data by one VADD
// or VMAX over its vectors (done ISA_VXM_LATENCY cycles after the last
// vector is read).
#include "passes.h"

#include <stdlib.h>
#include <string.h>

// One hop of the route being placed: its latency, and cursors into the
// tables its tries look at (route_fits).
typedef struct HopLook {
  ResvCursor link, send, recv;  // its link direction, the issue slots at either end
  int64_t latency;              // hop_latency
} HopLook;

// Where the last routes on one path with one count left (fit_memo_*):
// FIT_MEMO_WAYS counts a path, the oldest forgotten first.  A tree's
// routes on a path mostly have one or two counts (its chunks whole, or
// spread, this path's share).
#define FIT_MEMO_WAYS 2
typedef struct FitMemo {
  int64_t count[FIT_MEMO_WAYS], ready[FIT_MEMO_WAYS], start[FIT_MEMO_WAYS];  // count 0: empty
  int next;  // the way to fill next
} FitMemo;

// Set (to anything), the memo is not used: every route is searched from
// its ready cycle (test/lit/dsl/fit-memo.test: the same schedules).
#define FIT_MEMO_OFF_ENV "TSPC_NO_FIT_MEMO"

// Set (to anything), no program is stamped: every one is placed by
// compute_emit (test/lit/dsl/compute-stamps.test: the same outputs).
#define STAMPS_OFF_ENV "TSPC_NO_STAMPS"

// A compute op's program as compute_emit last placed it, on one device,
// for the next device that runs the op: the node, what its device's unit
// and weight-buffer tables held before (fingerprints), and when it holds
// the weight buffers (emit_program).
typedef struct Stamp {
  const DagNode *like;  // NULL: none yet (like->op: the op)
  int64_t ready, floor_before, held_from, weights_until, too_long;  // (emit_program)
  ResvFingerprint before[5];  // vxm, mxm, mxw, sxm, weights
} Stamp;

typedef struct Scheduler {
  Compilation *c;
  const Topology *t;
  const SyncPlan *sync;
  Reservations *link_dir;  // by link * 2 + direction (0: a -> b)
  Reservations *c2c;       // issue slots, by port_base[device] + port
  int *port_base;
  Reservations *vxm, *mxm, *mxw, *sxm;  // by device: vector, matrix (multiply, install path), switch units
  Reservations *weights;   // by device: when a program holds the matrix unit's weight buffers
                           //   (kept where gaps are tried: Compilation.runs_on)
  int64_t *weights_floor;  // by device: the latest a program that uses them holds them until, or
                           //   was placed from (where no gap is tried, the next goes after it)
  SchedTables *tables;     // all of the above, in one array (scheduler_init)
  RouteMode mode;          // how transfers are routed (auto: each as the links' load makes it finish first)
  ResvJournal tried;       // the takes of a routing being tried
  ResvJournal program_tried;  // the takes of a compute program being tried (emit_program)
  Route *pieces;           // place_filling's pieces of one node, before they go to the arena
  int npieces, pieces_cap;
  HopLook *look;           // by hop: the route being placed (look_begin)
  int look_cap;
  int64_t win_k, win_lo, win_hi;  // window_after's last answer, for times in [win_lo, win_hi)
  FitMemo *memo;           // by path id (Path.id; the DAG's npath_ids + 1), NULL: FIT_MEMO_OFF_ENV set
  bool failed;             // an error was reported
  int64_t tries;           // routes tried at a time (route_fits_looked): the schedule's work
  CodeBuf code;            // the compute node being placed (compute_emit), reused
  Stamp *stamps;           // by op id: its program's last searched placement (place_program); NULL: STAMPS_OFF_ENV set
  int64_t programs, stamped;  // compute programs placed, and of them stamped
} Scheduler;

static Reservations *link_dir(Scheduler *s, const Hop *h) {
  return &s->link_dir[h->link * 2 + (s->t->links.data[h->link].a == h->from ? 0 : 1)];
}

// Cycles from a vector leaving on hop h to its take at the far end.
static int64_t hop_latency(const Scheduler *s, const Hop *h) {
  return s->t->links.data[h->link].p.latency_max + s->sync->rx_slack;
}

// sync_window_after(s->sync, t) (resyncs planned), the last answer
// remembered with the times it holds for: a scheduler asks about times
// close together, mostly within one resync interval, and the division is
// a tenth of a 256 MiB tree schedule's time.
static int64_t window_after(Scheduler *s, int64_t t) {
  if (t < s->win_lo || t >= s->win_hi) {
    const SyncPlan *p = s->sync;
    s->win_k = sync_window_after(p, t);
    s->win_lo = s->win_k == 1 ? INT64_MIN : (s->win_k - 1) * p->interval + p->window;
    s->win_hi = s->win_k * p->interval + p->window;
  }
  return s->win_k;
}

// sync_overlaps_window(s->sync, t, len), by window_after.
static bool overlaps_window(Scheduler *s, int64_t t, int64_t len) {
  return s->sync->interval && window_after(s, t) * s->sync->interval < t + len;
}

// The earliest t >= from at which the cursor's unit table is free for len
// cycles outside every resync window.
static int64_t unit_earliest_at(Scheduler *s, ResvCursor *c, int64_t from, int64_t len) {
  for (;;) {
    int64_t t = resv_cursor_earliest(c, from, len);
    if (!overlaps_window(s, t, len)) return t;
    from = window_after(s, t) * s->sync->interval + s->sync->window;
  }
}

static int64_t unit_earliest(Scheduler *s, const Reservations *r, int64_t from, int64_t len) {
  ResvCursor c = resv_cursor(r);
  return unit_earliest_at(s, &c, from, len);
}

// How long a stream of `run` cycles leaving at `at` on a hop of `latency`
// holds the link direction: the run, plus the sync margin when the run goes
// on through a resync window at either end, since the units on the far side
// of the window are realigned while the stream keeps its old timing.
static int64_t hold_for(Scheduler *s, int64_t latency, int64_t at, int64_t run) {
  bool crosses = overlaps_window(s, at, run) || overlaps_window(s, at + latency, run);
  return run + (crosses ? s->sync->margin : 0);
}

static int64_t hold(Scheduler *s, const Hop *h, int64_t at, int64_t run) { return hold_for(s, hop_latency(s, h), at, run); }

// The first time after `at` at which a run of `run` cycles, leaving then
// on a hop of `latency`, crosses no resync window at either end (so holds
// its link direction for the run alone); INT64_MAX if none ever does.
// Windows repeat every interval, so if none is found within two intervals
// none will be.
static int64_t next_clear_start(Scheduler *s, int64_t latency, int64_t at, int64_t run) {
  const SyncPlan *p = s->sync;
  int64_t x = at + 1, limit = at + 2 * p->interval + p->window;
  while (x <= limit) {
    if (overlaps_window(s, x, run)) x = window_after(s, x) * p->interval + p->window;
    else if (overlaps_window(s, x + latency, run)) x = window_after(s, x + latency) * p->interval + p->window - latency;
    else return x;
  }
  return INT64_MAX;
}

// The earliest time from `at` on at which the hop's link direction could
// take a run of `run` cycles: `at` if it is free there for as long as the
// run holds it (hold_for), else a time no later than the first at which it
// is.  A run that crosses a resync window holds the link for the sync
// margin more, so the hold depends on the time: the link is searched for
// the run alone (no time before that fits), and when only the margin is
// missing, the answer is the first time the longer hold fits or the run
// stops crossing, whichever comes first.  So a route's tries skip no time
// at which it fits, and its search finds its earliest fit from wherever it
// starts (fit_memo_from relies on that).
static int64_t link_free_from(Scheduler *s, HopLook *h, int64_t at, int64_t run) {
  int64_t free_at = resv_cursor_earliest(&h->link, at, run);
  int64_t held = hold_for(s, h->latency, at, run);
  if (free_at != at || held == run) return free_at;
  int64_t longer = resv_cursor_earliest(&h->link, at, held);
  return longer == at ? at : MIN(longer, next_clear_start(s, h->latency, at, run));
}

int64_t schedule_link_free_from(const SyncPlan *sync, const Reservations *link, int64_t latency, int64_t at,
                                int64_t run) {
  Scheduler s = {.sync = sync};
  HopLook h = {.link = resv_cursor(link), .latency = latency};
  return link_free_from(&s, &h, at, run);
}

// Readies s->look for tries of route rt (route_fits_looked): fresh cursors
// into its hops' tables.  Valid until the next take.
static void look_begin(Scheduler *s, const Route *rt) {
  if (rt->path.nhops > s->look_cap) {
    s->look_cap = MAX(rt->path.nhops, 2 * s->look_cap);
    s->look = xrealloc(s->look, sizeof(HopLook) * (size_t)s->look_cap);
  }
  for (int j = 0; j < rt->path.nhops; j++) {
    const Hop *h = &rt->path.hops[j];
    s->look[j] = (HopLook){.link = resv_cursor(link_dir(s, h)),
                           .send = resv_cursor(&s->c2c[s->port_base[h->from] + h->out_port]),
                           .recv = resv_cursor(&s->c2c[s->port_base[h->to] + h->in_port]),
                           .latency = hop_latency(s, h)};
  }
}

// Whether route rt can leave at t: every hop's link direction free for its
// run and every issue slot free.  If not, the earliest later t worth trying.
// The links are checked first, on every hop: they are what a route mostly
// waits for, and an issue slot looked up before a later hop's link fails
// would be looked up again at the retry.  s->look is readied for rt
// (look_begin), and t is no earlier than at the last try since: a route
// that does not fit is tried again at its retry, and each table is looked
// up from where the last try left it, with the same answers as a search.
static bool route_fits_looked(Scheduler *s, const Route *rt, int64_t t, int64_t *retry) {
  int64_t at = t, run = rt->count * rt->every;
  s->tries++;
  HopLook *look = s->look;
  for (int j = 0; j < rt->path.nhops; j++) {
    int64_t free_at = link_free_from(s, &look[j], at, run);
    if (free_at != at) {
      *retry = t + (free_at - at);
      return false;
    }
    at += look[j].latency;
  }
  at = t;
  for (int j = 0; j < rt->path.nhops; j++) {
    int64_t land = at + look[j].latency;
    int64_t send_at = unit_earliest_at(s, &look[j].send, at, 1);
    int64_t recv_at = unit_earliest_at(s, &look[j].recv, land, 1);
    if (send_at != at || recv_at != land) {
      *retry = t + MAX(send_at - at, recv_at - land);
      return false;
    }
    at = land;
  }
  return true;
}

// route_fits_looked for one try.
static bool route_fits(Scheduler *s, const Route *rt, int64_t t, int64_t *retry) {
  look_begin(s, rt);
  return route_fits_looked(s, rt, t, retry);
}

static void route_take(Scheduler *s, Route *rt, int64_t t, ResvJournal *j) {
  int64_t at = t;
  rt->start = t;
  for (int j0 = 0; j0 < rt->path.nhops; j0++) {
    const Hop *h = &rt->path.hops[j0];
    resv_take_logged(link_dir(s, h), at, hold(s, h, at, rt->count * rt->every), j);
    resv_take_logged(&s->c2c[s->port_base[h->from] + h->out_port], at, 1, j);
    at += hop_latency(s, h);
    resv_take_logged(&s->c2c[s->port_base[h->to] + h->in_port], at, 1, j);
  }
}

// Where a route can leave from `ready` on, at the earliest, as the last
// route searched with the same path, count and pace says.  That route's
// earliest fit from its ready on was found against less than the tables
// hold now, if what it was found against is still taken: takes are undone
// only while a node is being tried, so the memo keeps a node's routes once
// its placement is final (schedule_transfer), and the first route of each
// try, searched against the kept takes alone (place_routes).  A route that
// fits at t fits at t against less, so against more, and from a later
// ready, it fits no earlier: the search can start there and finds the
// same time (link_free_from skips no fit).
static int64_t fit_memo_from(const Scheduler *s, const Route *rt, int64_t ready) {
  if (!s->memo || !rt->path.id) return ready;
  const FitMemo *m = &s->memo[rt->path.id];
  for (int w = 0; w < FIT_MEMO_WAYS; w++)
    if (m->count[w] == rt->count && ready >= m->ready[w]) return MAX(ready, m->start[w]);
  return ready;
}

static void fit_memo_put(Scheduler *s, const Route *rt, int64_t ready, int64_t start) {
  if (!s->memo || !rt->path.id) return;
  FitMemo *m = &s->memo[rt->path.id];
  int w = 0;
  while (w < FIT_MEMO_WAYS && m->count[w] != rt->count) w++;
  if (w == FIT_MEMO_WAYS) w = m->next, m->next = (m->next + 1) % FIT_MEMO_WAYS;
  m->count[w] = rt->count, m->ready[w] = ready, m->start[w] = start;
}

// A node's routes, once its placement is final.
static void fit_memo_put_node(Scheduler *s, const DagNode *n, int64_t ready) {
  if (n->fill_gaps || n->cut_into_gaps) return;  // its pieces leave where a part of them fits, not where the whole does
  for (int r = 0; r < n->nroutes; r++) fit_memo_put(s, &n->routes[r], ready, n->routes[r].start);
}

// Vectors of the device's SRAM a tensor of `bytes` fills.
static int64_t device_vectors(const Scheduler *s, int64_t bytes) {
  int vb = s->t->link.vector_bytes;
  return (bytes + vb - 1) / vb;
}

// A pass of device d's vector unit over `vectors` vectors from `ready` on,
// in runs of at most stream_vectors placed outside resync windows; records
// the runs in n and returns the cycle the last result lands.  Each run holds
// the unit until its last result lands (ISA_VXM_LATENCY after its last
// read), so two reductions into one vector (several transfers reducing
// into one device's chunk, as in algo_direct and algo_dragonfly3) never
// read it before the other's sum is written back.
static int64_t vxm_pass(Scheduler *s, DagNode *n, int d, int64_t ready, int64_t vectors) {
  int64_t most = s->sync->stream_vectors ? s->sync->stream_vectors : vectors;
  n->nruns = (int)((vectors + most - 1) / most);
  n->runs = ARENA_ARRAY(&s->c->arena, UnitRun, n->nruns);
  int64_t t = ready;
  for (int i = 0; i < n->nruns; i++) {
    int64_t len = MIN(most, vectors - most * i);
    t = unit_earliest(s, &s->vxm[d], t, len + ISA_VXM_LATENCY);
    resv_take(&s->vxm[d], t, len + ISA_VXM_LATENCY);
    n->runs[i] = (UnitRun){t, len};
    t += len;
  }
  return t + ISA_VXM_LATENCY;
}

// Cuts n's routes into streams of at most stream_vectors vectors (each a
// route of its own, on the same path), so no stream outlasts what the
// receive buffers absorb of drift.
static void cut_streams(Scheduler *s, DagNode *n) {
  int64_t most = s->sync->stream_vectors, pieces = 0;
  if (!most) return;
  for (int r = 0; r < n->nroutes; r++) pieces += (n->routes[r].count + most - 1) / most;
  if (pieces == n->nroutes) return;
  Route *cut = arena_alloc_uncleared(&s->c->arena, sizeof(Route) * (size_t)pieces);  // every piece written below
  int k = 0;
  for (int r = 0; r < n->nroutes; r++)
    for (int64_t v = 0; v < n->routes[r].count; v += most) {
      cut[k] = n->routes[r];
      cut[k].first = n->routes[r].first + v;
      cut[k++].count = MIN(most, n->routes[r].count - v);
    }
  n->routes = cut;
  n->nroutes = k;
}

// A reducing transfer adds its data in once it is taken (n->finish so far)
// and once the transfers in n->war have read the destination's copy.
static void reduce_now(Scheduler *s, DagNode *n) {
  int64_t ready = n->finish;
  for (int i = 0; i < n->nwar; i++) ready = MAX(ready, ir_transfer_reads_end(s->c->dag->nodes.data[n->war[i]]));
  n->finish = vxm_pass(s, n, n->dst, ready, n->vectors);
}

// The last node whose reads n's reduction waits for (-1: none).
static int last_war(const DagNode *n) {
  int last = -1;
  for (int i = 0; i < n->nwar; i++) last = MAX(last, n->war[i]);
  return last;
}

// Whether n's reduction must wait for a read not scheduled yet (a later
// node): then it is pending, and schedule_all adds it once that node is.
static bool reduction_waits(const DagNode *n) { return last_war(n) > n->id; }

// Places n's routes (as route_choose and cut_streams left them) each at
// its earliest fit from `ready` on, recording the takes in j (NULL: not
// recorded); returns when the last vector is taken, or -1 as soon as a
// route cannot finish before `bound` (when bound >= 0; what it took stays
// in j).  A node that fills gaps has its routes cut around what is taken
// already (place_filling).
static int64_t place_filling(Scheduler *s, DagNode *n, int64_t ready, int64_t bound, ResvJournal *j);

static int64_t place_routes(Scheduler *s, DagNode *n, int64_t ready, int64_t bound, ResvJournal *j) {
  if (n->fill_gaps || n->cut_into_gaps) return place_filling(s, n, ready, bound, j);
  int64_t done = ready;
  for (int r = 0; r < n->nroutes; r++) {
    Route *rt = &n->routes[r];
    int64_t t = fit_memo_from(s, rt, ready), retry, took = route_finish(rt, 1);
    look_begin(s, rt);
    for (;;) {
      if (bound >= 0 && t + took >= bound) return -1;
      if (route_fits_looked(s, rt, t, &retry)) break;
      t = retry;
    }
    if (j && !j->len) fit_memo_put(s, rt, ready, t);  // found against kept takes alone: true whatever is undone
    route_take(s, rt, t, j);
    done = MAX(done, t + took);
  }
  return done;
}

// The most vectors of rt (at least `least`, which fit) that can leave at t:
// as many as every hop's link has free cycles for from when the stream
// reaches it, if route_fits agrees (a resync window may want its margin).
static int64_t prefix_fitting(Scheduler *s, const Route *rt, int64_t t, int64_t least) {
  int64_t most = rt->count, at = t, retry;
  for (int j = 0; j < rt->path.nhops; j++) {
    const Hop *h = &rt->path.hops[j];
    most = MIN(most, resv_free_run(link_dir(s, h), at) / rt->every);
    at += hop_latency(s, h);
  }
  Route head = *rt;
  head.count = most;
  return most > least && route_fits(s, &head, t, &retry) ? most : least;
}

// Gap filling (a node's fill_gaps, set by its algorithm): each route leaves
// as early as SCHEDULE_GAP_MIN_VECTORS of it fit, with as many vectors as
// fit there; the rest goes on as a route of its own on the same path, from
// the end of that run on.  The node's routes become the pieces, in vector
// and time order, as cut_streams' are.  A short transfer of another stage
// placed before it is then not waited for whole, and it does not wait for
// a gap as long as itself.
static int64_t place_filling(Scheduler *s, DagNode *n, int64_t ready, int64_t bound, ResvJournal *j) {
  s->npieces = 0;
  int64_t done = ready;
  for (int r = 0; r < n->nroutes; r++) {
    Route rest = n->routes[r];
    int64_t t = ready, retry;
    int64_t least = MAX(SCHEDULE_GAP_MIN_VECTORS, (rest.count + SCHEDULE_GAP_MAX_PIECES - 1) / SCHEDULE_GAP_MAX_PIECES);
    while (rest.count) {
      Route probe = rest;
      probe.count = MIN(rest.count, least);
      if (bound >= 0 && t + route_finish(&rest, 1) >= bound) return -1;
      if (!route_fits(s, &probe, t, &retry)) {
        t = retry;
        continue;
      }
      Route head = rest;
      head.count = prefix_fitting(s, &rest, t, probe.count);
      route_take(s, &head, t, j);
      if (s->npieces == s->pieces_cap) {
        s->pieces_cap = s->pieces_cap ? 2 * s->pieces_cap : 16;
        s->pieces = xrealloc(s->pieces, sizeof(Route) * (size_t)s->pieces_cap);
      }
      s->pieces[s->npieces++] = head;
      done = MAX(done, t + route_finish(&head, 1));
      rest.first += head.count, rest.count -= head.count;
      t += head.count * rest.every;
    }
  }
  if (s->npieces != n->nroutes) n->routes = ARENA_ARRAY(&s->c->arena, Route, s->npieces);
  memcpy(n->routes, s->pieces, sizeof(Route) * (size_t)s->npieces);
  n->nroutes = s->npieces;
  return done;
}

// Routes n one way (minimal or spread over its paths) and places it.
static int64_t place_as(Scheduler *s, DagNode *n, RouteMode mode, int64_t ready, int64_t bound, ResvJournal *j) {
  route_choose(n, mode);
  cut_streams(s, n);
  return place_routes(s, n, ready, bound, j);
}

// Seed 002 s4.3, bandwidth-aware non-minimal routing: under --route=auto a
// transfer goes minimal, or spread over its paths when, against the load
// the transfers placed before it already put on the links, that finishes
// strictly earlier.  The spread try is abandoned as soon as it cannot win
// (one of its routes would finish no earlier than the minimal route), and
// skipped when even an idle network would not let it win.  A ring's hop
// between neighbours stays on their link (on_cycle): the ring's footprint
// is its cycle's links (seed 003 s II-B; 28 % of a 9x9 mesh's link
// directions), leaving the rest to whatever runs beside it.  When it loses,
// the minimal routes go back where they were found, without a search.
static int64_t place_minimal_or_spread(Scheduler *s, DagNode *n, int64_t ready) {
  s->tried.len = 0;
  int64_t minimal = place_as(s, n, ROUTE_MINIMAL, ready, -1, &s->tried);
  if (n->on_cycle || n->nspread < 2 || ready + route_finish(n->spread, n->nspread) >= minimal) return minimal;
  Route *kept = n->routes;
  int nkept = n->nroutes;
  resv_undo_all(&s->tried);
  int64_t spread = place_as(s, n, ROUTE_NONMINIMAL, ready, minimal, &s->tried);
  if (spread >= 0) return spread;
  resv_undo_all(&s->tried);
  n->routes = kept, n->nroutes = nkept, n->nonminimal = false;
  for (int r = 0; r < nkept; r++) route_take(s, &kept[r], kept[r].start, &s->tried);
  return minimal;
}

// And when a value's transfer from one op to another waits for a free
// stretch on every hop more than SCHEDULE_FILL_AFTER_WAITS times as long
// as it takes on an idle network (the links fragmented by what was placed
// before it: earlier inferences' transfers, spread over every path), it is
// tried again minimally, cut into the gaps (place_filling, as hier's
// transfers always are), and kept so when that finishes strictly earlier.
// A residual stack of 20 f16 layers split for speed on df2-small-sram,
// 3 in flight: its third inference's transfers waited up to 37,000 cycles
// behind the first two's, 112,561 cycles in all; 81,253 so.  A
// collective's transfers are not tried so: its algorithm orders them, and
// they are many and long (dbtree on rack72 at 256 MiB a device gained 6 %
// of its cycles for twice the compile time).
static int64_t place_best(Scheduler *s, DagNode *n, int64_t ready) {
  int64_t best = place_minimal_or_spread(s, n, ready);
  // Its length on an idle network, as routed, before a drift cut (a
  // resync every stream_vectors) spaces its pieces.
  int64_t idle = n->nonminimal ? route_finish(n->spread, n->nspread) : route_finish(n->minimal, 1);
  if (n->fill_gaps || (n->op && ir_op_is_collective(n->op->kind)) || best - ready <= (SCHEDULE_FILL_AFTER_WAITS + 1) * idle)
    return best;
  Route *kept = n->routes;
  int nkept = n->nroutes;
  bool nonminimal = n->nonminimal;
  resv_undo_all(&s->tried);
  n->cut_into_gaps = true;
  int64_t filled = place_as(s, n, ROUTE_MINIMAL, ready, best, &s->tried);
  if (filled >= 0) return filled;
  resv_undo_all(&s->tried);
  n->cut_into_gaps = false;
  n->routes = kept, n->nroutes = nkept, n->nonminimal = nonminimal;
  for (int r = 0; r < nkept; r++) route_take(s, &kept[r], kept[r].start, NULL);
  return best;
}

static void schedule_transfer(Scheduler *s, DagNode *n, int64_t ready) {
  n->cut_into_gaps = false;  // (an earlier schedule of this DAG may have cut it)
  int64_t done = s->mode == ROUTE_AUTO ? place_best(s, n, ready) : place_as(s, n, s->mode, ready, -1, NULL);
  fit_memo_put_node(s, n, ready);
  n->start = n->nroutes ? n->routes[0].start : ready;
  for (int r = 1; r < n->nroutes; r++) n->start = MIN(n->start, n->routes[r].start);
  done += s->sync->margin;
  n->nruns = 0;
  n->finish = done;
  if (n->reduce && !reduction_waits(n)) reduce_now(s, n);
}

// The fingerprints of device d's unit tables, in Stamp.before's order.
static void unit_fingerprints(const Scheduler *s, int d, ResvFingerprint out[5]) {
  const Reservations *t[5] = {&s->vxm[d], &s->mxm[d], &s->mxw[d], &s->sxm[d], &s->weights[d]};
  for (int i = 0; i < 5; i++) out[i] = resv_fingerprint(t[i]);
}

static bool same_fingerprints(const ResvFingerprint *a, const ResvFingerprint *b) {
  for (int i = 0; i < 5; i++)
    if (a[i].len != b[i].len || a[i].sum != b[i].sum) return false;
  return true;
}

// Places n's program (compute_emit) from `ready` on, keeping it apart from
// the device's other programs that use the matrix unit's weight buffers
// (compute_uses_weights): each holds them from the cycle it is placed from
// to its last multiply (Emitter.weights_until), and an install while
// another holds them would overwrite a tile it has yet to multiply.  A
// program goes into the first gap of the device's weight-buffer table, from
// its ready on, that holds it: gaps the programs placed before it left
// (with --batches, inference b + 1's piece of a split matmul runs while
// inference b's later stage waits for its operands on the same device).
// Each gap is tried by placing the whole program there and undoing it when
// its hold does not fit; a gap shorter than the matrix unit's cycles of the
// first try is skipped without one.  After SCHEDULE_WEIGHT_GAP_TRIES tries
// it goes after the last program that holds them.  A program placed in a
// gap runs out of definition order, and its values live beside what the
// partitioner's SRAM estimate assumed alone, so gaps are tried only where
// it planned for several inferences at once (Compilation.runs_on).
// Returns the cycle it holds the buffers from (its takes are left to the
// caller).
static int64_t emit_program(Scheduler *s, Emitter *e, int64_t ready) {
  const Reservations *w = &s->weights[e->n->device];
  bool gaps = compilation_runs_on(s->c, e->n->device);
  int64_t after = !gaps ? s->weights_floor[e->n->device] : w->len ? resv_at(w, w->len - 1).end : ready;
  if (!compute_uses_weights(e->n->op) || ready >= after) {
    compute_emit(e, ready);
    return ready;
  }
  Emitter fresh = *e;
  int64_t t = ready, least = 0;
  for (int tries = 0; gaps && tries < SCHEDULE_WEIGHT_GAP_TRIES && t < after;) {
    t = resv_earliest(w, t, MAX(least, 1));  // the next gap that could hold it
    if (t >= after) break;
    int64_t gap = resv_free_run(w, t);
    s->program_tried.len = 0;
    e->journal = &s->program_tried;
    compute_emit(e, t);
    e->journal = NULL;
    tries++;
    if (e->weights_until - t <= gap) return t;
    least = MAX(least, e->mxm_cycles);
    resv_undo_all(&s->program_tried);
    *e = fresh;
    t += gap;
  }
  compute_emit(e, after);
  return after;
}

// A compute op's program (compute.c) on n's device.  compute_emit's
// placement depends on the op, the ready cycle, and what the device's unit
// tables and weight buffers hold; an op that runs on every device (seed 002's
// data parallelism: each device's matmuls of a training step) mostly meets
// the same on each, so its last searched placement is stamped onto the
// next device when those match (their fingerprints), rather than searched again:
// examples/train.tg on system10440 (56 M instructions) compiles in 27 s
// instead of 42 (bench/scale-train.sh).  The program and its times are the
// same either way: a table's fingerprint is its length and a 64-bit sum,
// so two that differ match with a chance of 2^-64; such a false match would
// give another valid program if the copied takes fit, and stop the compiler
// with an internal error (resv_take's overlap check) if not.
static void place_program(Scheduler *s, DagNode *n, int64_t ready) {
  int d = n->device;
  const Op *op = n->op;
  Emitter e = {.c = s->c, .sync = s->sync, .n = n, .vb = s->t->link.vector_bytes,
               .u = {.vxm = &s->vxm[d], .mxm = &s->mxm[d], .mxw = &s->mxw[d], .sxm = &s->sxm[d]},
               .code = &s->code};
  s->programs++;
  Stamp spare = {0}, *st = s->stamps && op->id < s->c->graph->ops.len ? &s->stamps[op->id] : &spare;
  ResvFingerprint before[5];
  unit_fingerprints(s, d, before);
  if (st->like && st->like->op == op && st->ready == ready && st->floor_before == s->weights_floor[d] &&
      same_fingerprints(st->before, before)) {
    compute_stamp(&e, st->like);
    s->stamped++;
    e.weights_until = st->weights_until, e.too_long = st->too_long;
  } else {
    *st = (Stamp){.like = n, .ready = ready, .floor_before = s->weights_floor[d]};
    memcpy(st->before, before, sizeof before);
    st->held_from = emit_program(s, &e, ready);
    st->weights_until = e.weights_until, st->too_long = e.too_long;
  }
  if (compilation_runs_on(s->c, d) && e.weights_until > st->held_from)  // the table only gaps are looked for in
    resv_take(&s->weights[d], st->held_from, e.weights_until - st->held_from);
  if (compute_uses_weights(op)) s->weights_floor[d] = MAX(s->weights_floor[d], MAX(st->held_from, e.weights_until));
  if (e.too_long && !s->failed) {
    diag_error(&s->c->diag, op->loc,
               "cannot schedule %s: one of its instructions runs %lld cycles, more than the %lld between two "
               "resyncs (its rows are too long for the drift planned: see --drift-ppm)",
               ir_op_info[op->kind].name, (long long)e.too_long, (long long)(s->sync->interval - s->sync->window));
    s->failed = true;
  }
}

// A compute op: a local copy is the same bytes; an element-wise op whose
// operands share its shape is one pass of the vector unit; anything else
// is a program of instructions placed by compute.c.
static void schedule_compute(Scheduler *s, DagNode *n, int64_t ready) {
  const Op *op = n->op;
  int d = n->device;
  n->start = ready;
  n->nruns = 0;
  if (n->kind == NODE_STAGE) {  // one VMOV pass over the staged bytes
    n->finish = vxm_pass(s, n, d, ready, device_vectors(s, n->bytes));
    n->start = n->runs[0].start;
  } else if (op->kind == OP_COPY) {  // the local copy of an @ each tensor is the same bytes
    n->finish = ready;
  } else if (compute_pass_opcode(s->c, op) != OPC_COUNT) {
    n->finish = vxm_pass(s, n, d, ready, layout_vectors(s->c, op->result));
    n->start = n->runs[0].start;
  } else {
    place_program(s, n, ready);
  }
}

// Every reservation table of a schedule, in one array: the link
// directions, the issue slots, then each device's vxm, mxm, mxw, sxm and
// weight buffers.
// A compilation schedules many times (the choose pass's trials, then the
// schedule pass), so the tables of the last schedule are kept
// (c->sched_tables) and the next one starts from them emptied: their
// runs' memory, grown to a schedule's size, is not given back and faulted
// in again (on a 256 MiB tree allreduce that was most of the compile's
// page faults).
struct SchedTables {
  Reservations *r;
  int n;
};

static void free_tables(SchedTables *k) {
  if (!k) return;
  for (int i = 0; i < k->n; i++) resv_free(&k->r[i]);
  free(k->r);
  free(k);
}

static int table_count(const Topology *t, int ports) { return t->links.len * 2 + ports + 5 * t->ndevices; }

static void scheduler_init(Scheduler *s, Compilation *c, RouteMode mode) {
  const Topology *t = c->topo;
  *s = (Scheduler){.c = c, .t = t, .sync = &c->sync, .mode = mode};
  s->port_base = xmalloc(sizeof(int) * (size_t)t->ndevices);
  int ports = 0;
  for (int d = 0; d < t->ndevices; d++) {
    s->port_base[d] = ports;
    ports += t->devices[d].nports;
  }
  int n = table_count(t, ports);
  SchedTables *kept = c->sched_tables;
  c->sched_tables = NULL;  // this schedule's until scheduler_free
  if (kept && kept->n != n) free_tables(kept), kept = NULL;
  if (!kept) {
    kept = xmalloc(sizeof *kept);
    *kept = (SchedTables){.r = xcalloc((size_t)n + 1, sizeof(Reservations)), .n = n};
  }
  for (int i = 0; i < n; i++) kept->r[i].len = kept->r[i].gap = kept->r[i].hint = 0, kept->r[i].sum = 0;
  s->tables = kept;
  s->link_dir = kept->r;
  s->c2c = s->link_dir + t->links.len * 2;
  s->vxm = s->c2c + ports;
  s->mxm = s->vxm + t->ndevices;
  s->mxw = s->mxm + t->ndevices;
  s->sxm = s->mxw + t->ndevices;
  s->weights = s->sxm + t->ndevices;
  s->weights_floor = xcalloc((size_t)t->ndevices, sizeof(int64_t));
  if (!getenv(FIT_MEMO_OFF_ENV)) s->memo = xcalloc((size_t)c->dag->npath_ids + 1, sizeof(FitMemo));
  if (!getenv(STAMPS_OFF_ENV)) s->stamps = xcalloc((size_t)c->graph->ops.len + 1, sizeof(Stamp));
}

void schedule_forget_tables(Compilation *c) {
  free_tables(c->sched_tables);
  c->sched_tables = NULL;
}

// The tables go back to the compilation for the next schedule (unless one
// ran inside this one and gave its back first).
static void scheduler_free(Scheduler *s) {
  if (s->c->sched_tables) free_tables(s->tables);
  else s->c->sched_tables = s->tables;
  free(s->port_base);
  free(s->tried.e);
  free(s->program_tried.e);
  free(s->weights_floor);
  free(s->pieces);
  free(s->look);
  free(s->code.data);
  free(s->stamps);
  free(s->memo);
}

// Nodes between two looks at the clock for the progress line.
#define SCHEDULE_PROGRESS_NODES 256

// Schedules every node with its transfers routed as mode says; returns the
// makespan, -1 (after an error) past SCHEDULE_MAX_CYCLES, or
// SCHEDULE_ABANDONED as soon as the makespan passes bound (when bound >= 0).
// pace (optional, by node): the makespan after each node, recorded when
// mode is minimal (a node not reached keeps what pace held); under auto
// the schedule is abandoned once it runs SCHEDULE_AUTO_LAG_PERCENT behind
// it (a node whose pace is negative: no look), after its first
// SCHEDULE_AUTO_LAG_FREE_TRIES route tries.
static int64_t schedule_all(Compilation *c, RouteMode mode, int64_t bound, int64_t *pace) {
  Scheduler s;
  scheduler_init(&s, c, mode);
  int64_t makespan = 0;
  VEC(DagNode *) pending = {0};  // reductions waiting for a later node's reads
  Arena scratch = {0};
  for (int i = 0; i < c->dag->nodes.len; i++) {
    DagNode *n = c->dag->nodes.data[i];
    if (c->progress && i % SCHEDULE_PROGRESS_NODES == 0)
      progress_update(c->progress, "schedule", (double)i / c->dag->nodes.len);
    int64_t ready = 0;
    for (int d = 0; d < n->ndeps; d++) {
      const DagNode *dep = c->dag->nodes.data[n->deps[d]];
      if (dep->reduce && last_war(dep) >= i)
        die("schedule: n%d depends on n%d, whose reduction waits for the reads of a later node", i, dep->id);
      ready = MAX(ready, dep->finish);
    }
    if (n->kind == NODE_TRANSFER) {
      schedule_transfer(&s, n, ready);
      if (n->reduce && reduction_waits(n)) VEC_PUSH(&scratch, &pending, n);
    } else {
      schedule_compute(&s, n, ready);
    }
    for (int k = 0; k < pending.len; k++)
      if (last_war(pending.data[k]) == i) {
        reduce_now(&s, pending.data[k]);
        makespan = MAX(makespan, pending.data[k]->finish);
        pending.data[k--] = pending.data[--pending.len];
      }
    makespan = MAX(makespan, n->finish);
    if (pace && mode != ROUTE_AUTO) pace[i] = makespan;
    if (pace && mode == ROUTE_AUTO && pace[i] >= 0 && s.tries >= SCHEDULE_AUTO_LAG_FREE_TRIES &&
        (int64_t)i * 100 >= (int64_t)c->dag->nodes.len * SCHEDULE_AUTO_LAG_GRACE_PERCENT &&
        makespan * 100 > pace[i] * (100 + SCHEDULE_AUTO_LAG_PERCENT)) {
      makespan = SCHEDULE_ABANDONED;
      break;
    }
    if (s.failed) {
      makespan = -1;
      break;
    }
    if (bound >= 0 && makespan > bound) {
      makespan = SCHEDULE_ABANDONED;
      break;
    }
    if (makespan > SCHEDULE_MAX_CYCLES) {
      diag_error(&c->diag, n->op->loc, "the schedule runs past SCHEDULE_MAX_CYCLES (2^60 cycles) here");
      makespan = -1;
      break;
    }
  }
  for (int k = 0; k < pending.len; k++)
    if (last_war(pending.data[k]) >= c->dag->nodes.len) die("schedule: a reduction waits for a node that does not exist");
  arena_free(&scratch);
  c->dag->programs = s.programs, c->dag->stamped = s.stamped, c->dag->tries = s.tries;
  scheduler_free(&s);
  return makespan;
}

int64_t schedule_makespan(Compilation *c, RouteMode mode, int64_t bound) { return schedule_all(c, mode, bound, NULL); }

// Under --route=auto each transfer is routed against the load before it
// (place_best), a greedy choice; the program with every transfer minimal is
// scheduled first, and the load-aware one is abandoned as soon as it runs
// past it, so auto is never slower than all-minimal (a tie keeps auto).
// It is also abandoned as soon as, past the first
// SCHEDULE_AUTO_LAG_GRACE_PERCENT of the nodes, it runs
// SCHEDULE_AUTO_LAG_PERCENT behind the minimal one's makespan after the same
// node: greedy spreading that loses is that far behind from the start
// (64 MiB, a tenth of the nodes in: multitree 1.31 on rack72, 1.2 on
// mesh8x8; ctree 1.23; dragonfly3 1.43), while one that wins is at most
// 1.10 behind there and ends ahead (dbtree on mesh8x8: 0.82 at the end,
// but 1.55 at node 29, hence the grace).  That cut 256 MiB compiles by
// 2-3x; a schedule cut wrongly costs cycles, never correctness (the
// minimal one is kept).  A schedule that has tried fewer than
// SCHEDULE_AUTO_LAG_FREE_TRIES routes is not cut: there the rule saves
// little time, and it cut winners (dbtree on mesh4x4 at 16 MiB, 50,441
// tries whole: 3,814,933 cycles cut, 2,935,626 whole).
bool schedule_may_spread(const Dag *d) {
  for (int i = 0; i < d->nodes.len; i++)
    if (route_may_spread(d->nodes.data[i])) return true;
  return false;
}

// One node's schedule: the fields the scheduler writes.  A later schedule
// of the same DAG points them elsewhere, and rewrites the routes it places
// in place (route_take sets their starts), so the routes are copied.
typedef struct NodeSchedule {
  Route *routes;
  int nroutes, nruns, ncode, nscratch;
  bool nonminimal, cut_into_gaps;
  int64_t start, finish;
  UnitRun *runs;
  UnitInstr *code;
  ScratchBuf *scratch;
} NodeSchedule;

// A whole schedule of a DAG, kept while another is tried (schedule_as_compiled).
typedef struct Snapshot {
  NodeSchedule *nodes;
  Route *routes;  // every node's routes, in node order
} Snapshot;

static Snapshot snapshot_take(const Dag *d) {
  int64_t nroutes = 0;
  for (int i = 0; i < d->nodes.len; i++) nroutes += d->nodes.data[i]->nroutes;
  Snapshot k = {.nodes = xmalloc(sizeof(NodeSchedule) * ((size_t)d->nodes.len + 1)),
                .routes = xmalloc(sizeof(Route) * ((size_t)nroutes + 1))};
  Route *r = k.routes;
  for (int i = 0; i < d->nodes.len; i++) {
    const DagNode *n = d->nodes.data[i];
    k.nodes[i] = (NodeSchedule){n->routes, n->nroutes, n->nruns, n->ncode, n->nscratch, n->nonminimal,
                                n->cut_into_gaps, n->start, n->finish, n->runs, n->code, n->scratch};
    if (n->nroutes) memcpy(r, n->routes, sizeof(Route) * (size_t)n->nroutes);
    r += n->nroutes;
  }
  return k;
}

static void snapshot_restore(Dag *d, const Snapshot *k) {
  const Route *r = k->routes;
  for (int i = 0; i < d->nodes.len; i++) {
    DagNode *n = d->nodes.data[i];
    const NodeSchedule *x = &k->nodes[i];
    n->routes = x->routes, n->nroutes = x->nroutes, n->nruns = x->nruns, n->ncode = x->ncode;
    n->nscratch = x->nscratch, n->nonminimal = x->nonminimal, n->cut_into_gaps = x->cut_into_gaps;
    n->start = x->start, n->finish = x->finish;
    n->runs = x->runs, n->code = x->code, n->scratch = x->scratch;
    if (n->nroutes) memcpy(n->routes, r, sizeof(Route) * (size_t)n->nroutes);
    r += n->nroutes;
  }
}

static void snapshot_free(Snapshot *k) {
  free(k->nodes);
  free(k->routes);
}

// What pass_schedule does, with `bound` for the choose pass's trials (-1:
// none).  Under --route=auto the minimal schedule is kept aside while the
// load-aware one is tried, and put back when that one loses, rather than
// scheduled a third time (docs/passes.md has the figures).
int64_t schedule_as_compiled(Compilation *c, int64_t bound) {
  if (c->route_mode != ROUTE_AUTO) return schedule_all(c, c->route_mode, bound, NULL);
  // Nothing to spread: the load-aware schedule would be the minimal one.
  if (!schedule_may_spread(c->dag)) return schedule_all(c, ROUTE_MINIMAL, bound, NULL);
  // The minimal schedule is abandoned past the bound too, and the
  // load-aware one then tried against the pace it reached (-1 after): it
  // may beat a bound the minimal one misses.  This gives what the whole
  // minimal schedule would: from the node where that passed the bound on,
  // its pace is above the bound, so the lag rule cannot cut a load-aware
  // schedule that branch and bound has not (a loser's trial in the choose
  // pass then costs two parts of schedules, not a whole one and a part).
  int64_t *pace = xmalloc(sizeof(int64_t) * ((size_t)c->dag->nodes.len + 1));
  memset(pace, 0xff, sizeof(int64_t) * ((size_t)c->dag->nodes.len + 1));  // -1: not reached
  int64_t minimal = schedule_all(c, ROUTE_MINIMAL, bound, pace), tries = c->dag->tries;
  if (minimal == SCHEDULE_ABANDONED) {
    int64_t makespan = schedule_all(c, ROUTE_AUTO, bound, pace);
    c->dag->tries += tries;
    free(pace);
    return makespan;
  }
  if (minimal < 0) {
    free(pace);
    return minimal;
  }
  Snapshot kept = snapshot_take(c->dag);
  int64_t programs = c->dag->programs, stamped = c->dag->stamped;
  int64_t makespan = schedule_all(c, ROUTE_AUTO, bound >= 0 ? MIN(bound, minimal) : minimal, pace);
  c->dag->tries += tries;
  free(pace);
  if (makespan == SCHEDULE_ABANDONED) {  // the load-aware try lost: the minimal schedule it was measured against
    snapshot_restore(c->dag, &kept);
    c->dag->programs = programs, c->dag->stamped = stamped;
    makespan = bound >= 0 && minimal > bound ? SCHEDULE_ABANDONED : minimal;
  }
  snapshot_free(&kept);
  return makespan;
}

// The last schedule of a compilation: the tables kept between schedules
// are given back after it, not held through code generation.
bool pass_schedule(Compilation *c) {
  if (c->dag->scheduled) {  // choose's trial, kept (c->trial_dag)
    schedule_forget_tables(c);
    return true;
  }
  int64_t makespan = schedule_as_compiled(c, -1);
  schedule_forget_tables(c);
  if (makespan < 0) return false;
  c->dag->makespan = makespan;
  c->dag->scheduled = true;
  return true;
}
