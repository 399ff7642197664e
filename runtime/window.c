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
//
// With MPI (bin/tsp-emu-mpi) each rank is one partition and runs only its
// own devices; the section "ranks" below says what crosses between ranks
// and how every rank agrees on each window (docs/isa.md, Ranks).
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

// The cores the process may run on (its CPU affinity), fewer when its
// control group's CPU quota allows fewer (support/host.c).
int emu_default_threads(void) {
  cpu_set_t set;
  long n = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 ? CPU_COUNT(&set)
                                                                               : sysconf(_SC_NPROCESSORS_ONLN);
  HostLimits h = host_limits(0, (int)MIN(MAX(n, 1), EMU_MAX_THREADS));
  return MAX(1, MIN(h.cores, EMU_MAX_THREADS));
}

// ---- partitions ------------------------------------------------------------------------

// Devices a block keeps together: a dragonfly's node, else one device.
int window_block_devices(const Topology *t) {
  return t->family == FAMILY_DRAGONFLY ? MAX(t->df.tsps_per_node, 1) : 1;
}

int window_part_of(const Topology *t, int ndevs, int nparts, int dev) {
  int per = window_block_devices(t), blocks = (ndevs + per - 1) / per;
  return (int)((int64_t)(dev / per) * nparts / blocks);
}

bool emu_owns(const Emu *e, int dev) {
  const Emu *m = e->main;
  return m->nranks <= 1 || m->rank_of[dev] == m->rank;
}

bool emu_leads(const Emu *e) { return e->main->rank == 0; }

void window_key_after_run(Emu *e, int phase, uint64_t position) {
  e->cur = (Key){.t = INT64_MAX, .order = (uint64_t)phase << 56 | position};
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
  int per = window_block_devices(m->topo), blocks = (m->ndevs + per - 1) / per;
  m->main = m;
  m->nparts = m->nranks > 1 ? m->nranks : MAX(1, MIN(threads, blocks));  // ranks: partition r is rank r's
  m->parts = xcalloc((size_t)m->nparts, sizeof *m->parts);
  for (int i = 0; i < m->nparts; i++) m->parts[i] = part_new(m);
  m->part_of = xmalloc((size_t)MAX(m->ndevs, 1) * sizeof *m->part_of);
  for (int dev = 0; dev < m->ndevs; dev++) m->part_of[dev] = window_part_of(m->topo, m->ndevs, m->nparts, dev);
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

static bool part_only_polls(const Emu *p) { return emu_queued(p) == p->polls_queued; }

bool window_only_polls_left(const Emu *e) {
  const Emu *m = e->main;
  if (m->nranks > 1) return part_only_polls(m->parts[m->rank]) && m->others_only_polls;
  for (int i = 0; i < m->nparts; i++)
    if (!part_only_polls(m->parts[i])) return false;
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

static void keep_violation(Emu *m, ViolRec *rec);

// Ranks: each keeps its own for rank 0 (window_gather_result) to list.
static void visit_violation(Emu *m, void *rec) {
  if (m->nranks > 1)
    keep_violation(m, rec);
  else
    emu_list_violation(m, ((ViolRec *)rec)->v);
}

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

static void exchange_net(Emu *m);

static void merge_net(Emu *m) { MERGE(m, net, visit_net); }

// Ranks: what crosses to another rank's devices goes there first.
static void apply_net(Emu *m) {
  exchange_net(m);
  merge_net(m);
}

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

static int compare_keys(const void *x, const void *y) {
  const Key *a = x, *b = y;
  return key_before(a, b) ? -1 : key_before(b, a) ? 1 : 0;
}

static const Key *key_at(const void *data, size_t i, size_t size) { return (const Key *)((const char *)data + i * size); }

// A list of records that begin with their Key, into key order.  Bursts
// (burst.c) append an element's records when it runs, ahead of its key, so
// a window's list is runs of keys in order: a counting sort of the records'
// indices by cycle, each cycle's few then in key order by insertion, and
// the records moved once, is linear.  A list spread thinner than
// EMU_SORT_SPAN_PER_RECORD cycles a record (a few records over a long
// window) goes to qsort.  The list and its spare array trade places.
#define EMU_SORT_SPAN_PER_RECORD 8
static void sort_by_key(Emu *p, SortBuf *spare, void **data, size_t *cap, size_t len, size_t size) {
  char *recs = *data;
  size_t i = 1;
  while (i < len && !key_before(key_at(recs, i, size), key_at(recs, i - 1, size))) i++;
  if (i >= len) return;
  Tick lo = INT64_MAX, hi = INT64_MIN;
  for (i = 0; i < len; i++) lo = MIN(lo, key_at(recs, i, size)->t), hi = MAX(hi, key_at(recs, i, size)->t);
  uint64_t span = (uint64_t)(hi - lo) / EMU_TICKS_PER_CYCLE + 1;
  if (span > (uint64_t)len * EMU_SORT_SPAN_PER_RECORD) {
    qsort(recs, len, size, compare_keys);
    return;
  }
  if (p->sort_ncounts < span + 1) p->sort_counts = xrealloc(p->sort_counts, (p->sort_ncounts = span + 1) * sizeof *p->sort_counts);
  if (p->sort_nidx < len) p->sort_idx = xrealloc(p->sort_idx, (p->sort_nidx = len) * sizeof *p->sort_idx);
  size_t *at = p->sort_counts, *idx = p->sort_idx;
  memset(at, 0, (span + 1) * sizeof *at);
  for (i = 0; i < len; i++) at[(uint64_t)(key_at(recs, i, size)->t - lo) / EMU_TICKS_PER_CYCLE + 1]++;
  for (uint64_t c = 1; c <= span; c++) at[c] += at[c - 1];  // at[c]: where cycle c's records begin
  for (i = 0; i < len; i++) idx[at[(uint64_t)(key_at(recs, i, size)->t - lo) / EMU_TICKS_PER_CYCLE]++] = i;
  for (i = 1; i < len; i++) {  // a record moves only past its own cycle's
    size_t x = idx[i], j = i;
    for (; j > 0 && key_before(key_at(recs, x, size), key_at(recs, idx[j - 1], size)); j--) idx[j] = idx[j - 1];
    idx[j] = x;
  }
  if (spare->cap < *cap) spare->buf = xrealloc(spare->buf, (spare->cap = *cap) * size);
  char *out = spare->buf;
  for (i = 0; i < len; i++) memcpy(out + i * size, recs + idx[i] * size, size);
  spare->buf = recs, *data = out;
  size_t c = spare->cap;
  spare->cap = *cap, *cap = c;
}

#define SORT_LIST(p, list)                                                                            \
  do {                                                                                                \
    void *data_ = (p)->list.data;                                                                     \
    sort_by_key((p), &(p)->spare_##list, &data_, &(p)->list.cap, (p)->list.len, sizeof *(p)->list.data); \
    (p)->list.data = data_;                                                                           \
  } while (0)

// A partition's events before `end`, in key order; streams may burst up to
// `end` (burst.c), so the lists are sorted after.
static void run_part(Emu *p, Tick end) {
  p->burst_end = p->opt.no_bursts ? 0 : end;
  for (Event *next; (next = emu_queue_peek(p)) && next->t < end;) {
    Event ev = emu_queue_pop(p);
    run_event(p, &ev);
  }
  p->burst_end = 0;
  sram_stream_fence();  // the window's received vectors, for whichever thread reads them next
  if (!p->bursted) return;
  p->bursted = false;
  SORT_LIST(p, net);
  SORT_LIST(p, viols);
  SORT_LIST(p, traces);
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

static void run_serial_ranks(Emu *m, Tick end);

// The window on this thread alone, in the one order of all partitions,
// each event's NetOps applied at once (ranks: in lockstep, one event of
// the rank whose event comes first at a time).
static void run_serial(Emu *m, Tick end) {
  if (m->nranks > 1) {
    run_serial_ranks(m, end);
    return;
  }
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
    if (!emu_owns(m, i)) continue;
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
    for (int p = 0; p < m->devs[i].nports && emu_owns(m, i); p++) {
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

// The window from W (`polls`: a unit on some rank may still issue a POLL):
// its end, and whether it runs on one thread (agreed by every rank).
static bool plan_window(Emu *m, Tick W, Tick limit, bool polls, Tick *end) {
  Tick span = MIN(m->window, (Tick)EMU_MAX_WINDOW_CYCLES * EMU_TICKS_PER_CYCLE);  // bounds what a window buffers
  Tick e = W > INT64_MAX - span ? INT64_MAX : W + span;
  e = MIN(e, limit + 1);
  if (polls) {
    Tick E = (Tick)m->topo->epoch_cycles * EMU_TICKS_PER_CYCLE;
    e = MIN(e, (W / E + 1) * E);  // a POLL issued in the window checks no sooner
  }
  *end = e;
  int64_t serial = polls_queued(m) || fifo_may_fill(m, W, e);
  ranks_max(&serial, 1);
  return serial;
}

// What every rank must agree on before a window: the earliest event of
// any, whether a unit anywhere may still POLL, whether some rank stopped.
// True to stop.
static bool agree(Emu *m, Tick *W, bool *polls) {
  Tick next = next_tick(m);
  int64_t v[3] = {-next, may_poll(m, next), stopped(m)};  // a rank without events never gets one
  ranks_max(v, 3);
  *W = -v[0];
  *polls = v[1];
  if (!*polls) m->polls_over = true;
  return v[2];
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

// Every partition runs the window on its own thread (partition 0 on this
// one); with ranks, this rank's partition on this thread.
static void run_parallel(Windows *w) {
  if (w->m->nranks > 1) {
    run_part(w->m->parts[w->m->rank], w->end);
    return;
  }
  barrier(w, &w->start);
  run_part(w->m->parts[0], w->end);
  barrier(w, &w->finish);
}

static Worker *start_workers(Windows *w) {
  Emu *m = w->m;
  if (m->nranks > 1) return NULL;
  w->start.n = w->finish.n = m->nparts;
  Worker *k = xcalloc((size_t)m->nparts, sizeof *k);
  for (int i = 1; i < m->nparts; i++) {
    k[i] = (Worker){.w = w, .part = i};
    if (pthread_create(&k[i].thread, NULL, worker_main, &k[i])) die("tsp-emu: cannot start a thread");
  }
  return k;
}

static void stop_workers(Windows *w, Worker *k) {
  if (w->m->nranks > 1) return;
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

static uint64_t bursts_run(const Emu *m) {
  uint64_t n = 0;
  for (int i = 0; i < m->nparts; i++) n += m->parts[i]->burst_elements;
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

// Ranks: the run's end is the latest of any rank's, a stop anywhere stops
// every rank.
static void agree_on_end(Emu *m) {
  int64_t v[2] = {m->last_activity, m->stop};
  ranks_max(v, 2);
  m->last_activity = v[0], m->stop = v[1];
}

void window_run(Emu *m, Tick limit) {
  Windows w = {.m = m};
  Worker *workers = start_workers(&w);
  m->buffered = true;
  uint64_t shown = 0;
  bool hang = false, polls;
  int64_t windows = 0, serial = 0;
  for (Tick W; !agree(m, &W, &polls);) {
    if (W == INT64_MAX) break;
    if (W > limit) {
      hang = true;
      break;
    }
    windows++;
    if (plan_window(m, W, limit, polls, &w.end))
      run_serial(m, w.end), serial++;
    else
      run_parallel(&w);
    merge_window(m);
    if (m->opt.progress && events_run(m) / EMU_PROGRESS_EVENTS > shown) {
      shown = events_run(m) / EMU_PROGRESS_EVENTS;
      show_progress(m, W);
    }
  }
  stop_workers(&w, workers);
  int64_t counts[2] = {(int64_t)events_run(m), (int64_t)bursts_run(m)};
  ranks_sum(counts, 2);  // ranks: each ran its own devices' events (every rank sums, whatever its environment)
  if (getenv(EMU_WINDOWS_ENV) && emu_leads(m))
    fprintf(stderr, "tsp-emu: %lld windows, %lld of them on one thread; %lld events, %lld of them elements run in bursts\n",
            (long long)windows, (long long)serial, (long long)counts[0], (long long)counts[1]);
  fold_parts(m);
  agree_on_end(m);
  m->buffered = m->nranks > 1;  // ranks: what the checks find waits for rank 0, in key order
  if (hang) {
    window_key_after_run(m, EMU_AFTER_HANG, 0);
    if (emu_leads(m))
      emu_violate(m, VIOL_HANG, -1, NULL, -1, m->opt.max_cycles, "still running after %lld cycles (--max-cycles)",
                  (long long)m->opt.max_cycles);
    m->last_activity = limit;  // the run lasted until it was cut
    m->cut_at = limit;
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
    free(p->spare_net.buf);
    free(p->spare_viols.buf);
    free(p->spare_traces.buf);
    free(p->sort_counts);
    free(p->sort_idx);
    free(p);
  }
  free(m->parts);
  free(m->part_of);
  free(m->merge_at);
  if (m->nranks <= 1) free(m->viols.data);  // ranks: the run's own, and the checks', wait for window_gather_result
  free(m->traces.data);
  free(m->net.data);
  m->parts = NULL;
  m->part_of = NULL;
  m->merge_at = NULL;
  m->nparts = 0;
}

// ---- ranks --------------------------------------------------------------------------------
//
// With MPI (ranks.c) each rank is one partition: it owns the devices of its
// block, runs their events, and holds their SRAM.  At each window's end the
// NetOps whose receiving device is another rank's go there, with their
// payloads, before every rank applies its own in key order; so does each
// port's count of SEND streams when it changed, which the receiving rank's
// fifo_may_fill bounds with.  What must be decided for the whole run (the
// next window, whether it runs on one thread, a stop) is agreed with
// collectives; a one-thread window runs in lockstep, one event of the rank
// whose event comes first at a time.  Violations are kept by the rank that
// found them, in key order, and listed by rank 0 at the end, merged by key:
// the same list as one process.

enum { TAG_NET = 1, TAG_SENDING = 2 };

void window_sending_changed(Emu *e, EDev *d, int port) {
  Emu *m = e->main;
  EPort *p = &d->ports[port];
  if (m->nranks <= 1 || p->sending_dirty || emu_owns(m, p->peer_dev)) return;
  p->sending_dirty = true;
  *EMU_LIST_PUSH(&m->dirty) = (int64_t)d->id << 16 | port;
}

// Each of this rank's ports whose link ends on another rank and whose SEND
// stream count changed: the count, when that rank was last told another.
static void tell_sending(Emu *m, Buf *out) {
  for (size_t i = 0; i < m->dirty.len; i++) {
    int dev = (int)(m->dirty.data[i] >> 16), p = (int)(m->dirty.data[i] & 0xffff);
    EPort *port = &m->devs[dev].ports[p];
    port->sending_dirty = false;
    if (port->sending == port->sending_told) continue;
    int32_t rec[3] = {dev, p, port->sending};
    uint8_t tag = TAG_SENDING;
    buf_append(&out[m->rank_of[port->peer_dev]], &tag, 1);
    buf_append(&out[m->rank_of[port->peer_dev]], rec, sizeof rec);
    port->sending_told = port->sending;
  }
  m->dirty.len = 0;
}

// This rank's NetOps for another rank's devices (a departure, to its
// receiver's) into out[rank]: the NetOp's bytes (its payload pointer only
// says whether the payload's bytes follow), its payload recycled here.
static void send_net(Emu *m, Buf *out) {
  Emu *own = m->parts[m->rank];
  size_t kept = 0;
  for (size_t i = 0; i < own->net.len; i++) {
    NetOp *op = &own->net.data[i];
    int to = op->kind == NET_DEPART ? m->rank_of[m->devs[op->dev].ports[op->port].peer_dev] : m->rank;
    if (to == m->rank) {
      own->net.data[kept++] = *op;
      continue;
    }
    uint8_t tag = TAG_NET;
    buf_append(&out[to], &tag, 1);
    buf_append(&out[to], op, sizeof *op);
    if (op->payload) buf_append(&out[to], op->payload, (size_t)m->vector_bytes);
    link_payload_free(own, op->payload);
  }
  own->net.len = kept;
}

// What rank r sent: its NetOps into its partition's list here (empty until
// now, in key order as sent), its ports' stream counts into their copies.
static void receive_from(Emu *m, int r, const uint8_t *in, size_t len) {
  for (size_t at = 0; at < len;) {
    uint8_t tag = in[at++];
    if (tag == TAG_SENDING) {
      int32_t rec[3];
      memcpy(rec, in + at, sizeof rec);
      at += sizeof rec;
      m->devs[rec[0]].ports[rec[1]].sending = rec[2];
      continue;
    }
    NetOp *op = EMU_LIST_PUSH(&m->parts[r]->net);
    memcpy(op, in + at, sizeof *op);
    at += sizeof *op;
    if (op->payload) {  // from this rank's pool, which its takes free into (link.c, return_block)
      op->payload = link_payload_new(m->parts[m->rank]);
      memcpy(op->payload, in + at, (size_t)m->vector_bytes);
      at += (size_t)m->vector_bytes;
    }
  }
}

static void exchange_net(Emu *m) {
  if (m->nranks <= 1) return;
  Buf *out = xcalloc((size_t)m->nranks, sizeof *out);
  size_t *inlen = xcalloc((size_t)m->nranks, sizeof *inlen);
  send_net(m, out);
  tell_sending(m, out);
  uint8_t *in = ranks_alltoallv(out, inlen);
  for (int r = 0, at = 0; r < m->nranks; at += (int)inlen[r], r++) receive_from(m, r, in + at, inlen[r]);
  for (int r = 0; r < m->nranks; r++) buf_free(&out[r]);
  free(out), free(inlen), free(in);
}

// A lockstep step's view of each rank: its first event in the window
// (t INT64_MAX: none) and whether only polls are queued on it.
enum { STEP_T, STEP_ORDER, STEP_ONLY_POLLS, STEP_FIELDS };

// The rank whose event comes first (-1: none has one).
static int first_rank(const int64_t *all, int n) {
  int best = -1;
  for (int r = 0; r < n; r++) {
    const int64_t *x = all + r * STEP_FIELDS;
    if (x[STEP_T] == INT64_MAX) continue;
    const int64_t *b = best < 0 ? NULL : all + best * STEP_FIELDS;
    if (!b || x[STEP_T] < b[STEP_T] || (x[STEP_T] == b[STEP_T] && (uint64_t)x[STEP_ORDER] < (uint64_t)b[STEP_ORDER]))
      best = r;
  }
  return best;
}

// What a POLL check of rank `first` needs of the others: whether only
// polls are queued on each, and if so whether some polling unit of theirs
// has a notification coming (asked of every rank, so all ask alike).
static void poll_view(Emu *m, const int64_t *all, int first) {
  const int64_t *f = all + first * STEP_FIELDS;
  m->others_only_polls = true;
  for (int r = 0; r < m->nranks; r++)
    if (r != first) m->others_only_polls &= all[r * STEP_FIELDS + STEP_ONLY_POLLS] != 0;
  m->others_can_progress = false;
  Event probe = {.order = (uint64_t)f[STEP_ORDER]};
  if (!emu_event_is_poll(&probe) || !m->others_only_polls) return;
  int64_t v = m->rank != first && link_polls_can_progress(m, f[STEP_T]);
  ranks_max(&v, 1);
  m->others_can_progress = v;
}

// The poll hang a rank found: every rank lists its polling units, numbered
// on from the finding event's key in device order (ranks below first).
static void report_hang_everywhere(Emu *m, const int64_t *hang) {
  Emu *own = m->parts[m->rank];
  size_t from = own->viols.len;
  own->cur = (Key){.t = hang[0], .order = (uint64_t)hang[1], .sub = (uint32_t)hang[2]};
  link_report_polling(own, hang[3]);
  int64_t below = ranks_exscan((int64_t)(own->viols.len - from));
  for (size_t i = from; i < own->viols.len; i++) own->viols.data[i].k.sub += (uint32_t)below;
  own->stop = true;
  m->hang_pending = false;
}

// After a lockstep step: whether any rank stopped; a poll hang found in it
// reported by every rank.
enum { HANG_PENDING, HANG_T, HANG_ORDER, HANG_SUB, HANG_AT, HANG_STOP, HANG_FIELDS };
static bool step_stops(Emu *m) {
  int64_t mine[HANG_FIELDS] = {m->hang_pending, m->hang_key.t, (int64_t)m->hang_key.order, m->hang_key.sub,
                               m->hang_at, stopped(m)};
  int64_t *all = xmalloc((size_t)m->nranks * HANG_FIELDS * sizeof *all);
  ranks_allgather(mine, HANG_FIELDS, all);
  bool stop = false;
  for (int r = 0; r < m->nranks; r++) {
    const int64_t *x = all + r * HANG_FIELDS;
    stop |= x[HANG_STOP] != 0;
    if (x[HANG_PENDING]) report_hang_everywhere(m, x + HANG_T), stop = true;
  }
  free(all);
  return stop;
}

// Whether this rank's buffered NetOps include one for another rank.
static bool net_leaves(const Emu *m) {
  const Emu *own = m->parts[m->rank];
  for (size_t i = 0; i < own->net.len; i++) {
    const NetOp *op = &own->net.data[i];
    if (op->kind == NET_DEPART && !emu_owns(m, m->devs[op->dev].ports[op->port].peer_dev)) return true;
  }
  return false;
}

// The lockstep step of the rank whose event comes first: that event, and
// after it, its events that still come before every other rank's first
// (nothing another rank does can reach them), each applied at once, as
// long as none is a POLL check (which asks the other ranks), none sends to
// another rank (which must apply it before its own next event) and
// nothing stopped the run.
static void run_step(Emu *m, Tick end, const int64_t *all) {
  Emu *own = m->parts[m->rank];
  Tick bt = INT64_MAX;
  uint64_t border = UINT64_MAX;
  for (int r = 0; r < m->nranks; r++) {
    const int64_t *x = all + r * STEP_FIELDS;
    if (r == m->rank || x[STEP_T] > bt || (x[STEP_T] == bt && (uint64_t)x[STEP_ORDER] >= border)) continue;
    bt = x[STEP_T], border = (uint64_t)x[STEP_ORDER];
  }
  for (bool first = true;; first = false) {
    Event *next = emu_queue_peek(own);
    if (!next || next->t >= end || next->t > bt || (next->t == bt && next->order >= border)) return;
    if (!first && emu_event_is_poll(next)) return;
    Event e = emu_queue_pop(own);
    run_event(own, &e);
    if (emu_event_is_poll(&e) || net_leaves(m) || stopped(m)) return;
    merge_net(m);
    if (stopped(m)) return;
  }
}

static void run_serial_ranks(Emu *m, Tick end) {
  Emu *own = m->parts[m->rank];
  int64_t *all = xmalloc((size_t)m->nranks * STEP_FIELDS * sizeof *all);
  for (;;) {
    const Event *ev = emu_queue_peek(own);
    bool has = ev && ev->t < end;
    int64_t mine[STEP_FIELDS] = {has ? ev->t : INT64_MAX, has ? (int64_t)ev->order : 0, part_only_polls(own)};
    ranks_allgather(mine, STEP_FIELDS, all);
    int first = first_rank(all, m->nranks);
    if (first < 0) break;
    poll_view(m, all, first);
    if (first == m->rank) run_step(m, end, all);
    apply_net(m);
    if (step_stops(m)) break;
  }
  m->others_only_polls = m->others_can_progress = false;
  free(all);
}

void window_poll_hang(Emu *e, Tick now) {
  Emu *m = e->main;
  e->stop = true;
  if (m->nranks <= 1) {
    link_report_polling(e, now);
    return;
  }
  m->hang_pending = true, m->hang_key = e->cur, m->hang_at = now;
}

// Only the first max_listed causes and the first max_listed others of a
// rank can be listed (emu_list_violation's rule over the whole run): the
// rest are counted.
static void keep_violation(Emu *m, ViolRec *rec) {
  int64_t *n = emu_violation_is_cause(rec->v.kind) ? &m->kept_causes : &m->kept_others;
  if (*n >= m->opt.max_listed) {
    m->dropped++;
    free((char *)rec->v.message);
    return;
  }
  (*n)++;
  *EMU_LIST_PUSH(&m->kept) = *rec;
}

void window_combine_data(Emu *e, bool *any, bool *all) {
  if (e->main->nranks <= 1) return;
  int64_t v[2] = {*any, !*all};
  ranks_max(v, 2);
  *any = v[0], *all = !v[1];
  EmuResult *r = e->r;
  for (int i = 0; i < r->noutputs; i++) {
    ranks_max_double(&r->outputs[i].max_ratio, 1);
    ranks_sum(&r->outputs[i].beyond, 1);
  }
}

// A kept violation's bytes: the record, then its message's length and bytes.
static void put_violation(Buf *b, const ViolRec *rec) {
  uint32_t len = (uint32_t)strlen(rec->v.message);
  buf_append(b, rec, sizeof *rec);
  buf_append(b, &len, sizeof len);
  buf_append(b, rec->v.message, len);
}

static size_t get_violation(const uint8_t *in, ViolRec *rec) {
  uint32_t len;
  memcpy(rec, in, sizeof *rec);
  memcpy(&len, in + sizeof *rec, sizeof len);
  char *message = xmalloc(len + 1);
  memcpy(message, in + sizeof *rec + sizeof len, len);
  message[len] = '\0';
  rec->v.message = message;
  return sizeof *rec + sizeof len + len;
}

static void list_violation(Emu *m, void *rec) { emu_list_violation(m, ((ViolRec *)rec)->v); }

// Rank 0: every rank's kept violations, merged in key order into the list.
static void list_gathered(Emu *m, const uint8_t *in, const size_t *inlen) {
  int n = m->nranks;
  void **data = xcalloc((size_t)n, sizeof *data);
  size_t *len = xcalloc((size_t)n, sizeof *len), at = 0;
  for (int r = 0; r < n; r++) {
    EMU_LIST(ViolRec) l = {0};
    for (size_t end = at + inlen[r]; at < end;) at += get_violation(in + at, EMU_LIST_PUSH(&l));
    data[r] = l.data, len[r] = l.len;
  }
  m->merge_at = xcalloc((size_t)n + 1, sizeof *m->merge_at);
  merge_lists(m, data, len, n, sizeof(ViolRec), list_violation);
  for (int r = 0; r < n; r++) free(data[r]);
  free(data), free(len), free(m->merge_at);
  m->merge_at = NULL;
}

void window_gather_result(Emu *m) {
  if (m->nranks <= 1) return;
  EmuResult *r = m->r;
  for (size_t i = 0; i < m->viols.len; i++) keep_violation(m, &m->viols.data[i]);
  m->viols.len = 0;
  ranks_sum(r->link_vectors, 2 * m->topo->links.len + 1);
  // This rank's violations: those it keeps for rank 0 to list, those past
  // --max-listed it dropped, and those counted as found, never formatted
  // (emu_violate, when the list is full from the start: --max-listed 0).
  int64_t v[2] = {r->vectors_moved, (int64_t)m->kept.len + m->dropped + r->nviolations};
  ranks_sum(v, 2);
  r->vectors_moved = v[0];
  Buf mine = {0};
  for (size_t i = 0; i < m->kept.len; i++) put_violation(&mine, &m->kept.data[i]), free((char *)m->kept.data[i].v.message);
  size_t *inlen = xcalloc((size_t)m->nranks, sizeof *inlen);
  uint8_t *in = ranks_gather(&mine, inlen);
  if (emu_leads(m)) list_gathered(m, in, inlen);
  r->nviolations = v[1];
  buf_free(&mine);
  free(in), free(inlen), free(m->kept.data), free(m->viols.data), free(m->dirty.data);
  m->kept.data = NULL, m->viols.data = NULL;
  m->kept.len = m->kept.cap = m->viols.cap = 0;
}
