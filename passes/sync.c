// sync.c: the synchronisation budget.  Part of passes/, after lower and
// before route: routing and scheduling leave the room it asks for, and code
// generation (codegen.c) writes the preamble and the resyncs it plans.
//
// Seed 002 s3: the devices run on their own clocks.  The preamble (align.c,
// s3.2) aligns them once, to within a few cycles of the HAC; after
// that each clock drifts by up to P ppm, and RUNTIME_DESKEW (s3.3) pulls a
// device back onto the HAC.  Between two events on different devices the
// error is then at most
//     delta = 2 (epsilon + P 1e-6 (I + S))
// where I is the resync interval and S the longest stream (a stream runs on
// its device's clock after the unit that issued it has been realigned).
//
// The receive buffer absorbs that error.  Vector k of a stream is taken
// sigma cycles after its latest landing (latency_max): it is never late if
// sigma >= delta, and with jitter (latency in [Lmin, Lmax]) and drift the
// vectors waiting at a take number at most 1 + (Lmax - Lmin + sigma +
// delta) / e, which must stay within rx_buffer_vectors B.  So with
//     T = B e - 1 - (Lmax - Lmin)      (the smallest over working links)
// sigma = delta = floor(T / 2) (capped below half an epoch), and I and S
// are chosen so the formula above meets delta: I = S = span / 2 with span =
// (delta / 2 - epsilon) / (P 1e-6).  epsilon, one device's error right after
// an alignment, is SYNC_RESIDUAL_CYCLES plus the drift of the preamble
// (RUNTIME_DESKEW measures drift from the device's start) plus a cycle of
// rounding.  At the defaults (B = 4, e = 24, 209..228 cycles, 100 ppm, a
// preamble of about 5,500 cycles): T = 76, sigma = delta = 38, epsilon = 3,
// I = 80,000 cycles, streams of at most 3,333 vectors.
//
// A resync holds every unit of a device for a window of W = delta + 2
// cycles at k I, k >= 1 (the scheduler keeps issue slots and the vector
// unit out of it): the units SYNC, ctl runs RUNTIME_DESKEW W - 1 and
// NOTIFYs, and they resume at k I + W, back on the HAC.  Streams go on
// through the window.  A transfer's data is used `margin` = delta cycles
// after its last take, since the take and the use may lie on either side
// of a resync.  With P = 0 nothing of this is needed and every figure is 0.
#include "passes.h"

// The tightest receive budget over working links, and the slowest pacing.
static void link_budget(const Topology *t, int64_t *tolerance, int *every) {
  *tolerance = INT64_MAX;
  *every = 1;
  for (int i = 0; i < t->links.len; i++) {
    const Link *l = &t->links.data[i];
    if (l->failed) continue;
    int e = ir_cycles_per_vector(&l->p, t->clock_mhz);
    *tolerance = MIN(*tolerance, (int64_t)t->rx_buffer_vectors * e - 1 - (l->p.latency_max - l->p.latency_min));
    *every = MAX(*every, e);
  }
}

// The alignment tree's slowest cable (-1: no tree link): its latency sets
// the epochs a level, and so the preamble's length (align.c).
static int slowest_tree_link(const Topology *t, const AlignPlan *a) {
  int slowest = -1;
  for (int v = 0; v < t->ndevices; v++) {
    if (a->parent[v] < 0) continue;
    int l = t->devices[v].ports[a->parent_port[v]].link;
    if (slowest < 0 || t->links.data[l].p.latency_max > t->links.data[slowest].p.latency_max) slowest = l;
  }
  return slowest;
}

// The cycles of a resync's residual error that the preamble's drift is.
static int64_t preamble_drift(const SyncPlan *s) { return s->residual - SYNC_RESIDUAL_CYCLES - 1; }

// What a drift plan that cannot be met is refused at: the topology's
// epoch_cycles when half an epoch is what bounds the error, else its own
// drift_ppm when the plan is that figure (above the default), else the
// latency_cycles of the tree's slowest cable when it is longer than an
// epoch (it makes the preamble's levels more than an epoch each) and the
// preamble's drift is most of a resync's residual error, else the file's
// rx_buffer_vectors when the drift is the default and the buffers bound
// the error; none (a message of tspc's) when the drift is --drift-ppm's,
// or the buffers are the built-in ones.
static SrcLoc drift_culprit(const Compilation *c, const SyncPlan *s) {
  const Topology *t = c->topo;
  if (t->epoch_loc.file && s->drift_cycles == t->epoch_cycles / 2 - 1) return t->epoch_loc;
  if (c->drift_ppm < 0 && t->drift_loc.file && t->drift_ppm > SYNC_DEFAULT_DRIFT_PPM) return t->drift_loc;
  int slowest = slowest_tree_link(t, &s->align);
  if (slowest >= 0 && s->align.epochs_per_level > 1 && 2 * preamble_drift(s) > s->residual) return t->links.data[slowest].p.latency_loc;
  if (c->drift_ppm < 0 && t->rx_buffer_loc.file) return t->rx_buffer_loc;  // the buffers bound it, and the file sets them
  return (SrcLoc){0};
}

static void refuse_drift(Compilation *c, const SyncPlan *s, const char *message) {
  SrcLoc at = drift_culprit(c, s);
  if (at.file)
    diag_error(&c->diag, at, "%s", message);
  else
    diag_tool_error(&c->diag, "tspc", "%s", message);
}

// An alignment the tree cannot time, said at the latency_cycles of the
// cable it concerns when the topology file gives them.
static void refuse_alignment(Compilation *c, const AlignPlan *a, const char *why) {
  SrcLoc at = a->refused_link >= 0 ? c->topo->links.data[a->refused_link].p.latency_loc : (SrcLoc){0};
  if (at.file)
    diag_error(&c->diag, at, "cannot align the devices: %s", why);
  else
    diag_tool_error(&c->diag, "tspc", "cannot align the devices: %s", why);
}

bool pass_sync(Compilation *c) {
  const Topology *t = c->topo;
  SyncPlan *s = &c->sync;
  *s = (SyncPlan){.drift_ppm = c->drift_ppm >= 0 ? c->drift_ppm : MAX(t->drift_ppm, SYNC_DEFAULT_DRIFT_PPM),
                  .launch_window = c->launch_window >= 0 ? c->launch_window
                                   : t->ndevices == 1      ? 0  // nobody else to wait for
                                                           : SYNC_DEFAULT_LAUNCH_WINDOW};
  int every;
  link_budget(t, &s->tolerance, &every);
  if (s->tolerance < 0)  // frontend/topology.c refuses such a link at its latency_cycles
    die("sync: a link's latency range is wider than its receive buffer absorbs");
  char err[256];
  if (!align_plan(&c->arena, t, ir_topo_first_working(t), s->launch_window, s->drift_ppm, &s->align, err, sizeof err)) {
    refuse_alignment(c, &s->align, err);
    return false;
  }
  s->preamble_cycles = align_notify_cycle(&s->align, t) + 1;
  if (s->drift_ppm == 0 || s->tolerance == INT64_MAX) return true;  // no drift, or no link to cross
  // A device's clock has drifted for as long as it ran before the preamble
  // ended (at most preamble_cycles), and RUNTIME_DESKEW measures drift from
  // the device's start: so each resync leaves that error, plus rounding.
  s->residual = SYNC_RESIDUAL_CYCLES + (int64_t)(s->drift_ppm * 1e-6 * (double)s->preamble_cycles) + 1;
  // The error must also stay well inside half an epoch, or RUNTIME_DESKEW
  // could not tell a fast clock from a slow one.
  s->drift_cycles = MIN(s->tolerance / 2, t->epoch_cycles / 2 - 1);
  s->rx_slack = s->drift_cycles;
  double span = ((double)s->drift_cycles / 2 - (double)s->residual) / (s->drift_ppm * 1e-6);
  s->window = s->drift_cycles + 2;
  s->interval = (int64_t)(span / 2);
  s->stream_vectors = s->interval / every;
  s->margin = s->drift_cycles;
  if (span <= 0) {  // even a resync at every cycle leaves more error than the buffers absorb
    refuse_drift(c, s,
                 arena_printf(&c->arena,
                              "a clock drift of %g ppm cannot be resynced: the receive buffers absorb %lld cycles of "
                              "error (half the least of a link's rx_buffer_vectors budget and half an epoch of %d "
                              "cycles), and resyncing needs more than twice the %lld a resync itself leaves (%d, %lld "
                              "the %lld-cycle alignment preamble drifts, 1 of rounding); plan for less with "
                              "--drift-ppm (0: none), or give the topology larger receive buffers (rx_buffer_vectors), "
                              "a longer epoch (epoch_cycles) or shorter cables",
                              s->drift_ppm, (long long)s->drift_cycles, t->epoch_cycles, (long long)s->residual,
                              SYNC_RESIDUAL_CYCLES, (long long)preamble_drift(s), (long long)s->preamble_cycles));
    return false;
  }
  if (s->stream_vectors < 1 || s->interval < 4 * s->window) {
    refuse_drift(c, s,
                 arena_printf(&c->arena,
                              "a clock drift of %g ppm would need a resync every %lld cycles, too often to schedule "
                              "anything (the receive buffers absorb %lld cycles of error); plan for less with "
                              "--drift-ppm",
                              s->drift_ppm, (long long)s->interval, (long long)s->drift_cycles));
    return false;
  }
  return true;
}

int64_t sync_window_after(const SyncPlan *s, int64_t t) {
  if (!s->interval || t < s->window) return 1;
  return (t - s->window) / s->interval + 1;
}

bool sync_overlaps_window(const SyncPlan *s, int64_t t, int64_t len) {
  return s->interval && sync_window_after(s, t) * s->interval < t + len;
}

void sync_dump(const Compilation *c, FILE *out) {
  const SyncPlan *s = &c->sync;
  fprintf(out, "sync {\n  drift_ppm %g;  // planned for\n  launch_window %lld;\n", s->drift_ppm,
          (long long)s->launch_window);
  fprintf(out, "  tolerance %lld;  // cycles of jitter and drift the receive buffers absorb\n",
          s->tolerance == INT64_MAX ? -1LL : (long long)s->tolerance);
  fprintf(out, "  preamble %lld cycles;  // alignment tree from device %d, height %d, %d epochs a level\n",
          (long long)s->preamble_cycles, s->align.root, s->align.height, s->align.epochs_per_level);
  fprintf(out, "  residual %lld;\n  rx_slack %lld;\n  drift_cycles %lld;\n  margin %lld;\n", (long long)s->residual,
          (long long)s->rx_slack, (long long)s->drift_cycles, (long long)s->margin);
  if (s->interval)
    fprintf(out, "  resync every %lld cycles, window %lld;\n  streams of at most %lld vectors;\n",
            (long long)s->interval, (long long)s->window, (long long)s->stream_vectors);
  else
    fprintf(out, "  no resync;\n");
  fprintf(out, "}\n");
}
