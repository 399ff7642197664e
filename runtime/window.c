// window.c: the run in conservative windows on threads (YAWNS).  Part of
// runtime/; emu.c sets the devices up and hands the run here, which calls
// back into emu.c for each event and into link.c for what crosses between
// devices.
//
// Nothing a device does can reach another device sooner than the smallest
// link latency, latency_min over every link: a vector that leaves at tick
// t arrives at t + latency or later.  So the devices are split into
// partitions, each with its own event queue, and every partition runs its
// events of a window [W, W + latency_min) on a thread of its own without
// looking at the others.  What leaves one device for another in the window,
// and what a take finds in an empty receive buffer, is buffered (NetOp) and
// applied at the window's end in the order one queue would have run it in
// (link_apply); so is every violation and trace record.  That order is the
// order key of the events (emu_internal.h: tick, class, device, the device's
// own sequence number) and a count within the event, none of which depends
// on the partitions: the report, the verdicts and the trace are the same
// bytes for any number of threads, and one thread runs the same code.
//
// What needs the whole system at one instant runs a window on one thread,
// the partitions' events merged into one order, applying each event's
// NetOps at once (run_serial): a POLL check (is anything but polls left
// anywhere?), and a window in which some receive buffer could reach
// EMU_MAX_QUEUED_VECTORS, which stops the run at one exact event.  While a
// unit may still issue a POLL, windows end at the next HAC epoch boundary,
// where its check would come.  Devices are split in contiguous blocks of
// whole nodes (a dragonfly's devices are numbered node by node), as evenly
// as the blocks allow.
#define _GNU_SOURCE  // sched_getaffinity
#include "emu_internal.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

// Set in the environment, tsp-emu says on stderr how many windows the run
// took and how many of them ran on one thread (the same for any --threads).
#define EMU_WINDOWS_ENV "TSP_EMU_WINDOWS"
// The longest window, in cycles: what a window buffers (trace records,
// violations) is held in memory until its end.
#define EMU_MAX_WINDOW_CYCLES 65536
// Without --threads, windows shorter than this run on one thread: two
// barriers a window cost more than a few cycles of events gain (a ring
// of 1-cycle links ran 4-8x slower on 2 threads than on one).  The
// default's the only thing it changes: --threads N is always taken.
#define EMU_MIN_PARALLEL_WINDOW_CYCLES 64

void emu_list_grow(void **data, size_t *cap, size_t elem) {
  *cap = *cap ? 2 * *cap : 64;
  *data = xrealloc(*data, *cap * elem);
}

static bool key_before(const Key *x, const Key *y) {
  if (x->t != y->t) return x->t < y->t;
  if (x->order != y->order) return x->order < y->order;
  return x->sub < y->sub;
}

int emu_default_threads(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return MIN(CPU_COUNT(&set), EMU_MAX_THREADS);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)MIN(n, EMU_MAX_THREADS) : 1;
}

// ---- partitions ------------------------------------------------------------------------

// Devices a block keeps together: a dragonfly's node, else one device.
static int block_devices(const Topology *t) {
  return t->family == FAMILY_DRAGONFLY ? MAX(t->df.tsps_per_node, 1) : 1;
}

// The window: the smallest link latency in ticks (no links: one window).
static Tick window_ticks(const Topology *t) {
  int64_t cycles = INT64_MAX;
  for (int i = 0; i < t->links.len; i++) cycles = MIN(cycles, (int64_t)t->links.data[i].p.latency_min);
  if (cycles == INT64_MAX) return INT64_MAX;
  return MAX(cycles * EMU_TICKS_PER_CYCLE, 1);
}

static Emu *part_new(Emu *m) {
  Emu *p = xcalloc(1, sizeof *p);
  *p = (Emu){.a = m->a, .in = m->in, .opt = m->opt, .topo = m->topo, .vector_bytes = m->vector_bytes,
             .devs = m->devs, .ndevs = m->ndevs, .main = m, .buffered = true, .first_start = m->first_start,
             .last_activity = m->last_activity};
  p->wheel = xcalloc(EMU_WHEEL_CYCLES, sizeof *p->wheel);
  p->r = &p->part_r;
  return p;
}

void window_begin(Emu *m) {
  m->window = window_ticks(m->topo);
  bool short_windows = m->window < (Tick)EMU_MIN_PARALLEL_WINDOW_CYCLES * EMU_TICKS_PER_CYCLE;
  int threads = m->opt.threads > 0 ? m->opt.threads : short_windows ? 1 : emu_default_threads();
  int per = block_devices(m->topo), blocks = (m->ndevs + per - 1) / per;
  m->main = m;
  m->nparts = MAX(1, MIN(threads, blocks));
  m->parts = xcalloc((size_t)m->nparts, sizeof *m->parts);
  for (int i = 0; i < m->nparts; i++) m->parts[i] = part_new(m);
  m->part_of = xmalloc((size_t)MAX(m->ndevs, 1) * sizeof *m->part_of);
  for (int dev = 0; dev < m->ndevs; dev++) m->part_of[dev] = (int)((int64_t)(dev / per) * m->nparts / blocks);
  m->merge_at = xcalloc((size_t)m->nparts + 1, sizeof *m->merge_at);
}

// ---- what events buffer ---------------------------------------------------------------

void window_trace_slice(Emu *e, int pid, int tid, const char *name, int64_t start, int64_t dur) {
  TraceRec *r = EMU_LIST_PUSH(&e->traces);
  *r = (TraceRec){.k = e->cur, .name = name, .pid0 = pid, .tid0 = tid, .a = start, .b = dur};
  e->cur.sub++;
}

void window_trace_flow(Emu *e, int pid0, int tid0, int64_t t0, int pid1, int tid1, int64_t t1) {
  TraceRec *r = EMU_LIST_PUSH(&e->traces);
  *r = (TraceRec){.k = e->cur, .pid0 = pid0, .tid0 = tid0, .pid1 = pid1, .tid1 = tid1, .a = t0, .b = t1};
  e->cur.sub++;
}

NetOp *window_net_op(Emu *e, NetKind kind) {
  NetOp *op = EMU_LIST_PUSH(&e->net);
  *op = (NetOp){.k = e->cur, .kind = kind};
  e->cur.sub += EMU_NET_SUBS;
  return op;
}

bool window_only_polls_left(const Emu *e) {
  const Emu *m = e->main;
  for (int i = 0; i < m->nparts; i++)
    if (emu_queued(m->parts[i]) != m->parts[i]->polls_queued) return false;
  return true;
}

// ---- merging in key order ----------------------------------------------------------------

// Visits the records of n lists, each sorted by key (records of `size`
// bytes that begin with their Key), in key order.
static void merge_lists(Emu *m, void *const *data, const size_t *len, int n, size_t size,
                        void (*visit)(Emu *m, void *rec)) {
  size_t *at = m->merge_at;
  memset(at, 0, (size_t)n * sizeof *at);
  for (;;) {
    int best = -1;
    for (int i = 0; i < n; i++)
      if (at[i] < len[i] && (best < 0 || key_before((const Key *)((char *)data[i] + at[i] * size),
                                                    (const Key *)((char *)data[best] + at[best] * size))))
        best = i;
    if (best < 0) return;
    visit(m, (char *)data[best] + at[best]++ * size);
  }
}

static void visit_net(Emu *m, void *rec) { link_apply(m, rec); }

static void visit_violation(Emu *m, void *rec) { emu_list_violation(m, ((ViolRec *)rec)->v); }

// A flow arrow's id counts every arrow of the run, drawn or not.
static void visit_trace(Emu *m, void *rec) {
  const TraceRec *r = rec;
  if (r->name) {
    trace_slice(m->trace, r->pid0, r->tid0, r->name, r->a, r->b);
    return;
  }
  uint64_t id = ++m->flow_ids;
  if ((int64_t)id <= m->opt.trace_max_vectors) trace_flow(m->trace, id, r->pid0, r->tid0, r->a, r->pid1, r->tid1, r->b);
}

// The lists of one kind from every partition (and from the run's Emu, whose
// own come from applying NetOps), merged, then emptied.
#define MERGE(m, list, visit)                                                       \
  do {                                                                              \
    void *data_[EMU_MAX_THREADS + 1];                                               \
    size_t len_[EMU_MAX_THREADS + 1];                                               \
    for (int i_ = 0; i_ < (m)->nparts; i_++)                                        \
      data_[i_] = (m)->parts[i_]->list.data, len_[i_] = (m)->parts[i_]->list.len;   \
    data_[(m)->nparts] = (m)->list.data, len_[(m)->nparts] = (m)->list.len;         \
    merge_lists((m), data_, len_, (m)->nparts + 1, sizeof *(m)->list.data, visit);  \
    for (int i_ = 0; i_ < (m)->nparts; i_++) (m)->parts[i_]->list.len = 0;          \
    (m)->list.len = 0;                                                              \
  } while (0)

static void apply_net(Emu *m) { MERGE(m, net, visit_net); }

static void merge_window(Emu *m) {
  apply_net(m);
  MERGE(m, viols, visit_violation);
  if (m->trace) MERGE(m, traces, visit_trace);
  for (int i = 0; i < m->nparts; i++) m->flows += m->parts[i]->flows, m->parts[i]->flows = 0;
}

// ---- running events ----------------------------------------------------------------------

// One event in its partition: a dead device's are dropped (fault.c).
static void run_event(Emu *p, Event *ev) {
  p->events++;
  p->cur = (Key){.t = ev->t, .order = ev->order};
  const EDev *d = &p->devs[emu_event_dev(ev)];
  if (ev->t >= d->dies_at) {
    p->last_activity = MAX(p->last_activity, d->dies_at);  // the run lasted until it died
    emu_event_free(p, ev);
    return;
  }
  p->last_activity = MAX(p->last_activity, ev->t);
  emu_dispatch(p, ev);
}

// A partition's events before `end`, in key order.
static void run_part(Emu *p, Tick end) {
  for (Event *next; (next = emu_queue_peek(p)) && next->t < end;) {
    Event ev = emu_queue_pop(p);
    run_event(p, &ev);
  }
}

static bool stopped(const Emu *m) {
  bool stop = m->stop;
  for (int i = 0; i < m->nparts; i++) stop |= m->parts[i]->stop;
  return stop;
}

// The partition whose earliest event before `end` comes first (NULL: none).
static Emu *first_part(Emu *m, Tick end) {
  Emu *best = NULL;
  const Event *first = NULL;
  for (int i = 0; i < m->nparts; i++) {
    const Event *ev = emu_queue_peek(m->parts[i]);
    if (ev && ev->t < end && (!first || ev->t < first->t || (ev->t == first->t && ev->order < first->order)))
      best = m->parts[i], first = ev;
  }
  return best;
}

// The window on this thread alone, in the one order of all partitions,
// each event's NetOps applied at once.
static void run_serial(Emu *m, Tick end) {
  for (Emu *p; (p = first_part(m, end));) {
    Event ev = emu_queue_pop(p);
    run_event(p, &ev);
    apply_net(m);
    if (stopped(m)) return;
  }
}

// ---- planning a window -------------------------------------------------------------------

static Tick next_tick(Emu *m) {
  Tick t = INT64_MAX;
  for (int i = 0; i < m->nparts; i++) {
    const Event *ev = emu_queue_peek(m->parts[i]);
    if (ev) t = MIN(t, ev->t);
  }
  return t;
}

// Whether some unit of a live device may still issue a POLL (once none
// can, none ever can again).
static bool may_poll(Emu *m, Tick now) {
  if (m->polls_over) return false;
  for (int i = 0; i < m->ndevs; i++) {
    const EDev *d = &m->devs[i];
    for (int u = 0; u < d->nunits && now < d->dies_at; u++) {
      const EUnit *unit = &d->units[u];
      if (unit->state != UNIT_HALTED && unit->state != UNIT_FELL_OFF && unit->pc <= unit->last_poll) return true;
    }
  }
  m->polls_over = true;
  return false;
}

static bool polls_queued(const Emu *m) {
  for (int i = 0; i < m->nparts; i++)
    if (m->parts[i]->polls_queued) return true;
  return false;
}

// Whether a receive buffer could reach EMU_MAX_QUEUED_VECTORS in [W, end):
// its sender's SEND streams going on and a new one a cycle from each unit
// that sends on the port, each a vector every `every` cycles, and a
// TRANSMIT a cycle from each, bound what can join it.
static bool fifo_may_fill(const Emu *m, Tick W, Tick end) {
  for (int i = 0; i < m->ndevs; i++)
    for (int p = 0; p < m->devs[i].nports; p++) {
      const EPort *rx = &m->devs[i].ports[p];
      if (rx->link < 0) continue;
      const EDev *s = &m->devs[rx->peer_dev];
      const EPort *tx = &s->ports[rx->peer_port];
      int64_t cycles = (end - W) / s->period + 2;
      if (cycles >= EMU_MAX_QUEUED_VECTORS) return true;
      int64_t bound = ((int64_t)tx->sending + (int64_t)tx->senders * cycles) * (cycles / MAX(tx->every, 1) + 1) +
                      (int64_t)tx->senders * cycles;
      if ((int64_t)rx->rx.len + bound >= EMU_MAX_QUEUED_VECTORS) return true;
    }
  return false;
}

// The window from W: its end, and whether it runs on one thread.
static bool plan_window(Emu *m, Tick W, Tick limit, Tick *end) {
  Tick span = MIN(m->window, (Tick)EMU_MAX_WINDOW_CYCLES * EMU_TICKS_PER_CYCLE);  // bounds what a window buffers
  Tick e = W > INT64_MAX - span ? INT64_MAX : W + span;
  e = MIN(e, limit + 1);
  if (may_poll(m, W)) {
    Tick E = (Tick)m->topo->epoch_cycles * EMU_TICKS_PER_CYCLE;
    e = MIN(e, (W / E + 1) * E);  // a POLL issued in the window checks no sooner
  }
  *end = e;
  return polls_queued(m) || fifo_may_fill(m, W, e);
}

// ---- threads -----------------------------------------------------------------------------

// A window of a few cycles holds little work, so its two barriers must be
// cheap: a thread that arrives early spins for EMU_BARRIER_SPINS rounds
// (tens of microseconds), then sleeps on a futex, which the last to arrive
// wakes only when someone sleeps.  (pthread_barrier_wait sleeps at once:
// 2 threads ran a 2-device ring's 643,000 windows 16x slower than one.)
#define EMU_BARRIER_SPINS 20000

typedef struct Barrier {
  atomic_int phase;     // how many times every thread has arrived
  atomic_int arrived;   // threads arrived in this phase
  atomic_int sleepers;  // threads asleep on phase
  int n;
} Barrier;

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void barrier_wait(Barrier *b) {
  int phase = atomic_load_explicit(&b->phase, memory_order_acquire);
  if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == b->n - 1) {  // the last: release the rest
    atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
    atomic_store_explicit(&b->phase, phase + 1, memory_order_release);
    if (atomic_load_explicit(&b->sleepers, memory_order_acquire))
      syscall(SYS_futex, &b->phase, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    return;
  }
  for (int spins = 0; spins < EMU_BARRIER_SPINS; spins++) {
    if (atomic_load_explicit(&b->phase, memory_order_acquire) != phase) return;
    cpu_relax();
  }
  atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_acq_rel);
  while (atomic_load_explicit(&b->phase, memory_order_acquire) == phase)  // the futex returns at once if it moved
    syscall(SYS_futex, &b->phase, FUTEX_WAIT_PRIVATE, phase, NULL, NULL, 0);
  atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_acq_rel);
}

typedef struct Windows {
  Emu *m;
  Tick end;
  bool done;
  Barrier start, finish;
} Windows;

typedef struct Worker {
  Windows *w;
  int part;
  pthread_t thread;
} Worker;

static void barrier(Windows *w, Barrier *b) {
  if (w->m->nparts > 1) barrier_wait(b);
}

static void *worker_main(void *arg) {
  Worker *k = arg;
  for (;;) {
    barrier(k->w, &k->w->start);
    if (k->w->done) return NULL;
    run_part(k->w->m->parts[k->part], k->w->end);
    barrier(k->w, &k->w->finish);
  }
}

// Every partition runs the window on its own thread (partition 0 on this one).
static void run_parallel(Windows *w) {
  barrier(w, &w->start);
  run_part(w->m->parts[0], w->end);
  barrier(w, &w->finish);
}

static Worker *start_workers(Windows *w) {
  Emu *m = w->m;
  w->start.n = w->finish.n = m->nparts;
  Worker *k = xcalloc((size_t)m->nparts, sizeof *k);
  for (int i = 1; i < m->nparts; i++) {
    k[i] = (Worker){.w = w, .part = i};
    if (pthread_create(&k[i].thread, NULL, worker_main, &k[i])) die("tsp-emu: cannot start a thread");
  }
  return k;
}

static void stop_workers(Windows *w, Worker *k) {
  w->done = true;
  barrier(w, &w->start);
  for (int i = 1; i < w->m->nparts; i++) pthread_join(k[i].thread, NULL);
  free(k);
}

// ---- the run -----------------------------------------------------------------------------

// The progress line: simulated cycles against the prediction (or against
// --max-cycles when there is none).
static void show_progress(Emu *m, Tick now) {
  int64_t predicted = m->in->prog->predicted_cycles, cycles = (now - m->first_start) / EMU_TICKS_PER_CYCLE;
  double of = (double)(predicted > 0 ? predicted : m->opt.max_cycles);
  progress_update(m->opt.progress, "emulating", (double)cycles / of);
}

static uint64_t events_run(const Emu *m) {
  uint64_t n = 0;
  for (int i = 0; i < m->nparts; i++) n += m->parts[i]->events;
  return n;
}

// The partitions' counters into the run's; their queues emptied.
static void fold_parts(Emu *m) {
  for (int i = 0; i < m->nparts; i++) {
    Emu *p = m->parts[i];
    m->last_activity = MAX(m->last_activity, p->last_activity);
    m->stop |= p->stop;
    m->r->vectors_moved += p->part_r.vectors_moved;
    m->r->nviolations += p->part_r.nviolations;
    emu_queue_drain(p);
  }
}

void window_run(Emu *m, Tick limit) {
  Windows w = {.m = m};
  Worker *workers = start_workers(&w);
  m->buffered = true;
  uint64_t shown = 0;
  bool hang = false;
  int64_t windows = 0, serial = 0;
  for (;;) {
    Tick W = next_tick(m);
    if (W == INT64_MAX) break;
    if (W > limit) {
      hang = true;
      break;
    }
    windows++;
    if (plan_window(m, W, limit, &w.end))
      run_serial(m, w.end), serial++;
    else
      run_parallel(&w);
    merge_window(m);
    if (m->opt.progress && events_run(m) / EMU_PROGRESS_EVENTS > shown) {
      shown = events_run(m) / EMU_PROGRESS_EVENTS;
      show_progress(m, W);
    }
    if (stopped(m)) break;
  }
  stop_workers(&w, workers);
  if (getenv(EMU_WINDOWS_ENV))
    fprintf(stderr, "tsp-emu: %lld windows, %lld of them on one thread\n", (long long)windows, (long long)serial);
  fold_parts(m);
  m->buffered = false;
  if (hang) {
    emu_violate(m, VIOL_HANG, -1, NULL, -1, m->opt.max_cycles, "still running after %lld cycles (--max-cycles)",
                (long long)m->opt.max_cycles);
    m->last_activity = limit;  // the run lasted until it was cut
  }
}

void window_end(Emu *m) {
  for (int i = 0; i < m->nparts; i++) {
    Emu *p = m->parts[i];
    emu_queue_free(p);
    emu_free_writes(p);
    link_free_payloads(p);
    free(p->viols.data);
    free(p->traces.data);
    free(p->net.data);
    free(p);
  }
  free(m->parts);
  free(m->part_of);
  free(m->merge_at);
  free(m->viols.data);
  free(m->traces.data);
  free(m->net.data);
  m->parts = NULL;
  m->part_of = NULL;
  m->merge_at = NULL;
  m->nparts = 0;
}
