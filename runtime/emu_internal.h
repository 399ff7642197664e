// emu_internal.h: the emulator's own types, shared by emu.c (the event
// loop, clocks and units), link.c (ports, links, receive buffers), check.c
// (the end-of-run checks), model.c (the model's inputs and outputs) and
// fault.c (link errors, dead cables and devices).
// Not part of the runtime's interface.
#ifndef TSPC_EMU_INTERNAL_H
#define TSPC_EMU_INTERNAL_H

#include "emu.h"

typedef int64_t Tick;  // global time, EMU_TICKS_PER_CYCLE a reference cycle

// Events at one tick run in class order:
//   0  NOTIFY wake-ups
//   1  instruction issues and POLL checks (they only start streams)
//   2  RECV takes: writes that land at once
//   3  reads: SEND departures, vector-, matrix- and switch-unit elements,
//      weight installs
//   4  the writes vector and matrix ops issue (landing later)
// So a unit woken at t issues at t, a vector taken at t can be sent on or
// added at t, and a read at t of a vector an op writes at t gets the old
// bytes, whatever the order of the units in the program.
typedef enum {
  EV_WAKE, EV_UNIT, EV_POLL, EV_RECV, EV_SEND, EV_VXM, EV_MXM, EV_INSTALL, EV_SXM, EV_LAND, EV_TYPE_COUNT
} EventType;

// Results a vector or matrix op computed at one tick, written in class 4.
typedef struct PendingWrite {
  int dev, unit;
  uint32_t addr, nvec;  // vectors addr .. addr + nvec
  int64_t local;        // the cycle the write issues
  int64_t lands;        // the tick it lands
  struct PendingWrite *next;  // on Emu's free list of one-vector writes
  uint8_t data[];       // nvec vectors
} PendingWrite;

// 24 bytes: the queue moves events around, so they are kept small.  The
// order key is (class, device, the device's own sequence number, type),
// high bits to low: events at one tick run in class order, then by device,
// then in the order the device pushed them.  The type sits in the low bits,
// below the sequence number, so it never decides an order.  No part of the
// key depends on how the devices are split among threads or ranks (emu.c,
// windows): a device's events are pushed only by its own events, so its
// sequence numbers are the same however the run is split.  The sequence
// number has EMU_EVENT_SEQ_BITS bits (EMU_MAX_EVENTS a device, about 1.4 x
// 10^11: days of emulation of one device; a run that reached it would stop
// with an error, not misorder).
#define EMU_EVENT_TYPE_BITS 4
#define EMU_EVENT_SEQ_BITS 37
#define EMU_EVENT_DEV_BITS 20
#define EMU_EVENT_DEV_SHIFT (EMU_EVENT_TYPE_BITS + EMU_EVENT_SEQ_BITS)
#define EMU_EVENT_CLASS_SHIFT (EMU_EVENT_DEV_SHIFT + EMU_EVENT_DEV_BITS)
#define EMU_MAX_EVENTS (UINT64_C(1) << EMU_EVENT_SEQ_BITS)
_Static_assert(EV_TYPE_COUNT <= 1 << EMU_EVENT_TYPE_BITS, "event types must fit EMU_EVENT_TYPE_BITS");
_Static_assert(IR_MAX_DEVICES <= 1 << EMU_EVENT_DEV_BITS, "device ids must fit EMU_EVENT_DEV_BITS");
_Static_assert(EMU_EVENT_CLASS_SHIFT + 3 <= 64, "the five classes must fit above the device");
typedef struct Event {
  Tick t;
  uint64_t order;  // class | device | the device's sequence number | type: ties broken deterministically
  union {
    struct Stream *stream;  // EV_RECV, EV_SEND, EV_VXM, EV_MXM, EV_INSTALL, EV_SXM
    PendingWrite *write;    // EV_LAND
    struct {
      int32_t dev, unit;
    } at;                   // EV_WAKE (unit -1), EV_UNIT, EV_POLL
  };
} Event;

// An MXM or MXMA in progress (emu.c): the products of all its rows, formed
// at its first cycle from the activation bytes then in SRAM.
typedef struct MxmJob MxmJob;

// A SEND, RECV, compute op or weight install in progress: one element
// (vector, row group, install cycle) every `every` cycles.
typedef struct Stream {
  Instr in;
  int dev, unit;
  int64_t start;   // local cycle of element 0
  uint32_t k, n;   // the next element, the element count
  int every;       // cycles between elements
  uint64_t order;  // the order key of every element (0: none yet; emu_push)
  int active;      // burst.c: its place in its device's list of modeled streams (-1: not on it)
  NumReduction acc;  // VRSUM, VRMAX: the reduction so far
  uint8_t *rows;     // TRANS: the source rows read so far (owned)
  MxmJob *mxm;       // MXM, MXMA (owned)
  SramCursor cur[3];  // where the stream is in SRAM through operands a, b and c (CUR_A, CUR_B, CUR_C)
} Stream;

enum { CUR_A, CUR_B, CUR_C };

// A vector on its way to, or waiting in, a port's receive buffer.
typedef struct RxEntry {
  Tick departed, arrives;
  uint8_t *payload;  // NULL for a notification (TRANSMIT)
  int from_dev, from_unit;
} RxEntry;

// The receive side of a port: a FIFO of vectors in the order they were
// sent.  `taken` counts takes (by RECV or POLL), `appended` counts sends;
// a vector appended after its take slot has passed (an underflow) is dropped.
typedef struct RxQueue {
  RxEntry *e;
  size_t head, len, cap;
  uint64_t appended, taken;
} RxQueue;

typedef struct EPort {
  int link;               // -1: unplugged
  int peer_dev, peer_port;
  bool failed;
  int every;              // cycles one vector holds the link (ir_cycles_per_vector)
  int latency_min, latency_max;
  int64_t tx_busy_until;  // local cycles
  int64_t rx_busy_until;
  uint64_t rng;           // jitter of the link direction leaving this port
  Tick dies_at;           // fault.c: the cable carries nothing from this tick on (INT64_MAX: never)
  bool overflow_reported;
  RxQueue rx;
  int64_t sent;           // vectors that left on this port, data and notifications (the report's links:)
  Tick last_arrival;      // the latest arrival of what left it: arrivals on one link keep their order
  int senders;            // units whose program SENDs or TRANSMITs on it (window.c's bound)
  int sending;            // SEND streams going on it (a peer on another rank: as last told)
  int sending_told;       // ranks: the count the peer's rank was last told
  bool sending_dirty;     // ranks: on the main Emu's list of ports to tell about
} EPort;

typedef enum { UNIT_READY, UNIT_PARKED, UNIT_POLLING, UNIT_HALTED, UNIT_FELL_OFF } UnitState;

typedef struct EUnit {
  const UnitProgram *prog;
  UnitState state;
  int pc;
  int64_t next_local;   // when it issues next
  Tick effect;          // burst.c: when it next issues something other than a WAIT
  int64_t wait_start;   // when a SYNC or POLL began (for the trace)
  int poll_port;
  int last_poll;        // the index of its program's last POLL (-1: none)
  SramCursor land_cur;  // where the unit's results land (its writes come in address order)
  char name[16];
} EUnit;

// One of the matrix unit's weight buffers (seed 002 s5.2): a K x
// ISA_MXM_COLS tile of the installed values, kept as doubles (every f16,
// bf16, f32 and i8 value is one), K = per(t) of the install's dtype.
typedef struct WeightBuffer {
  double *w;            // vector_bytes x ISA_MXM_COLS (i8's K rows, the most), row-major; NULL until installed
  bool installed;       // an MXLW or MXLWT was issued into it
  DType dtype;          // the install's dtype
  int kk, nn;           // rows and columns the install filled (the rest is 0)
  int64_t ready;        // local cycle the install completes
  int64_t read_until;   // an MXM reads it during [issue, read_until)
} WeightBuffer;

typedef struct EDev {
  int id;
  Tick start, period;      // program start; ticks per local cycle
  double drift_ppm;
  int64_t sac_local, sac_value;  // the SAC was sac_value at local cycle sac_local
  EUnit *units;
  int nunits;
  EPort *ports;
  int nports;
  Sram sram;
  const DeviceProgram *prog;
  WeightBuffer wbuf[ISA_MXM_BUFFERS];
  int64_t install_busy_until;  // the install path reads until this local cycle
  Tick dies_at;            // fault.c: the device does nothing from this tick on (INT64_MAX: never)
  uint64_t seq;            // the sequence number of its next event (the order key)
  // burst.c's bookkeeping: what a burst must not run past or through.
  struct ActiveStream *active;  // the streams burst.c models (SEND, RECV, most vector ops)
  struct ActiveSpan *spans;     // and their spans, in the same order
  int nactive, active_cap;
  int blockers;            // streams running that it does not (matrix, switch, installs, ...)
  int lands_queued;        // landings queued, and the vectors [lands_lo, lands_hi) they span
  uint32_t lands_lo, lands_hi;
  int wakes_queued;        // wake-ups (NOTIFY) queued, none before wake_min
  Tick wake_min;
  uint64_t changes;        // counts changes of its units' states and streams,
  uint64_t limit_at;       // the count when limit was found (burst.c's device_limit)
  Tick limit;
} EDev;

typedef struct PayloadBlock {
  struct PayloadBlock *next;
} PayloadBlock;

// ---- window.c's records --------------------------------------------------
// What an event does that other partitions see or that goes to the report
// and the trace is buffered with a key: the event's (t, order) and a count
// within the event (sub), so that merging every partition's buffers in key
// order gives the order one queue would have run them in.
typedef struct Key {
  Tick t;
  uint64_t order;
  uint32_t sub;
} Key;

// A growable malloc'd array (window.c's buffers).
#define EMU_LIST(T) struct { T *data; size_t len, cap; }
#define EMU_LIST_PUSH(l) \
  (((l)->len == (l)->cap ? emu_list_grow((void **)&(l)->data, &(l)->cap, sizeof *(l)->data) : (void)0), \
   &(l)->data[(l)->len++])
void emu_list_grow(void **data, size_t *cap, size_t elem);

typedef struct ViolRec {
  Key k;
  Violation v;  // v.message malloc'd
} ViolRec;

// A trace slice (pid0, tid0, name, a = start, b = duration) or flow arrow
// (name NULL: from (pid0, tid0) at a to (pid1, tid1) at b), in cycles.
typedef struct TraceRec {
  Key k;
  const char *name;
  int pid0, tid0, pid1, tid1;
  int64_t a, b;
} TraceRec;

// What crosses between devices, applied at the window's end in key order
// (link.c): a vector leaving a port, or a take that found its port's
// buffer empty (what it finds depends on what else left in the window).
typedef enum { NET_DEPART, NET_TAKE } NetKind;
typedef struct NetOp {
  Key k;                   // then k.sub + 1 and + 2 for what applying it reports
  NetKind kind;
  int dev, port, unit;     // the sender (DEPART), the taker (TAKE)
  Tick at, arrives;        // DEPART: it leaves at, arrives; TAKE: the take's tick
  int64_t local;           // TAKE: the take's local cycle
  uint32_t addr;           // DEPART: the SRAM vector it came from (UINT32_MAX: a notification)
  uint8_t *payload;        // DEPART (NULL: a notification)
} NetOp;
#define EMU_NET_SUBS 3     // keys a NetOp takes


// What a plan scans first, for every stream of the device: the vectors its
// writes and all its operands span, its opcode and port.
typedef struct ActiveSpan {
  uint32_t wlo, whi, alo, ahi;
  uint8_t op, port;
} ActiveSpan;

// A list's spare array (window.c's sort): room for cap records.
typedef struct SortBuf {
  void *buf;
  size_t cap;
} SortBuf;

// The event queue: a timing wheel of one bucket a cycle over the next
// EMU_WHEEL_CYCLES cycles (each bucket kept sorted), and a heap for what lies
// further ahead.  Both give the same order: (tick, class, sequence).
#define EMU_WHEEL_CYCLES 1024

typedef struct Bucket {
  Event *e;
  uint32_t head, len, cap;  // the live events are e[head .. len)
} Bucket;

struct Emu {
  Arena *a;
  const EmuInput *in;
  EmuOptions opt;
  const Topology *topo;
  int vector_bytes;
  EDev *devs;
  int ndevs;
  Bucket *wheel;             // EMU_WHEEL_CYCLES buckets
  int64_t cursor;            // the cycle of wheel bucket 0's turn: nothing is earlier
  size_t in_wheel;
  Event *heap;               // events EMU_WHEEL_CYCLES or more past the cursor
  size_t nheap, heap_cap;
  size_t polls_queued;       // EV_POLL events in the heap
  PayloadBlock *free_payloads;
  PendingWrite *free_writes; // one-vector writes, recycled: no allocation per result vector
  Trace *trace;
  uint64_t flows;
  EmuResult *r;
  Tick first_start;
  Tick last_activity;  // the last HALT, take, or landing result: the end of the run
  Tick cut_at;         // a run --max-cycles stopped: the limit (0: not cut)
  bool stop;
  // window.c: the run's Emu (`main`) splits the devices into partitions,
  // each an Emu of its own that shares the devices and has its own queue,
  // free lists, counters and buffers.
  Emu *main;            // the run's Emu (a partition's; the run's own: itself)
  Emu **parts;          // main: the partitions
  int nparts;
  int *part_of;         // main: [device] its partition
  bool buffered;        // violations and trace go into the lists below, merged in key order
  Key cur;              // the event being run: the key of what it buffers next
  EMU_LIST(ViolRec) viols;
  EMU_LIST(TraceRec) traces;
  EMU_LIST(NetOp) net;
  EmuResult part_r;     // a partition's counters (its r)
  uint64_t events;      // events run (a burst's elements counted one each)
  Tick burst_end;       // burst.c: elements may run ahead up to this tick (0: no bursts now)
  bool bursted;         // a burst ran in this window: the lists need sorting (window.c)
  uint64_t burst_elements;  // elements run ahead in bursts (of events)
  SortBuf spare_net, spare_viols, spare_traces;  // window.c's sort of the lists after bursts:
  size_t *sort_counts, sort_ncounts;  // records a cycle,
  size_t *sort_idx, sort_nidx;        // the records' order
  uint64_t flow_ids;    // main: the trace's flow arrows numbered so far
  bool polls_over;      // main: no unit can issue a POLL any more
  Tick window;          // main: a window's ticks, the smallest link latency
  size_t *merge_at;     // main: merge_lists' place in each list
  // ranks (window.c, ranks.c): with MPI each rank owns the devices of one
  // partition; the others' EDevs are there but never run, and hold no SRAM.
  int rank, nranks;     // main: this process's rank, the ranks (1: no MPI)
  int *rank_of;         // main: [device] the rank that owns it
  EMU_LIST(int64_t) dirty; // main, ranks: ports (device << 16 | port) whose SEND streams changed
  EMU_LIST(ViolRec) kept;  // main, ranks: this rank's violations in key order, for rank 0
  int64_t kept_causes, kept_others, dropped;  // how many of each kind kept; counted, not kept
  bool others_only_polls;   // main, a serial step: only polls are queued on every other rank
  bool others_can_progress; // and some other rank's polling unit has a notification coming
  bool hang_pending;    // main: this rank's event found the poll hang: every rank reports its units
  Key hang_key;
  Tick hang_at;
};

// ---- emu.c ----
// The queue (each partition has one).
size_t emu_queued(const Emu *e);
Event *emu_queue_peek(Emu *e);  // the earliest event (NULL: none); it stays queued
Event emu_queue_pop(Emu *e);
void emu_queue_drain(Emu *e);   // frees what is still queued
void emu_queue_free(Emu *e);
int emu_event_dev(const Event *ev);
bool emu_event_is_poll(const Event *ev);
void emu_event_free(Emu *e, Event *ev);
void emu_dispatch(Emu *e, const Event *ev);
// A violation formatted by a partition, into the run's list (window.c's merge).
void emu_list_violation(Emu *e, Violation v);
// A fault or a failed link: listed before what follows from it.
bool emu_violation_is_cause(ViolationKind kind);
void emu_free_writes(Emu *e);
Tick emu_global_at(const EDev *d, int64_t local);
int64_t emu_local_at_or_after(const EDev *d, Tick g);
void emu_push(Emu *e, Tick t, EventType type, int dev, int unit, Stream *s);
void emu_push_write(Emu *e, Tick t, PendingWrite *w);
void emu_violate(Emu *e, ViolationKind kind, int dev, const EUnit *u, int port, int64_t cycle,
                 const char *fmt, ...) PRINTF_LIKE(7, 8);
const uint8_t *emu_sram_read(Emu *e, EDev *d, const EUnit *u, uint32_t addr, int64_t local);
uint8_t *emu_sram_write(Emu *e, EDev *d, const EUnit *u, uint32_t addr, int64_t local, Tick lands);
// The same through a stream's cursor (sram.c).
const uint8_t *emu_sram_read_at(Emu *e, EDev *d, const EUnit *u, SramCursor *c, uint32_t addr, int64_t local);
uint8_t *emu_sram_write_at(Emu *e, EDev *d, const EUnit *u, SramCursor *c, uint32_t addr, int64_t local, Tick lands);
void emu_resume(Emu *e, EDev *d, int unit, int64_t local);
Stream *emu_stream_new(const Instr *in, int dev, int unit, int64_t start, uint32_t n, int every);
void emu_stream_end(Emu *e, Stream *s);  // done (or the run stopped): off burst.c's lists, freed
// What memory.c's estimate counts beside the SRAM: a weight buffer's
// bytes (each buffer a program installs into holds one), and the most a
// stream of instruction `in` holds while it runs (an MXM's job: the tile's
// copy and EMU_MXM_CHUNK_ROWS rows' activations and products; a TRANS's
// rows; 0 for the rest, whose data is in the SRAM or a link).
size_t emu_weight_buffer_bytes(int vector_bytes);
size_t emu_stream_scratch_bytes(const Instr *in, int vector_bytes);
uint64_t emu_rng(uint64_t *state);
// The state of a random stream for (what, index) from a seed: 1 jitter
// (per port), 2 clocks (per device), 3 --ber (per link direction), 4
// --inject (per option).
uint64_t emu_rng_for(uint64_t seed, uint64_t what, uint64_t index);

// Trace tracks of a unit: which = 0 its instructions, 1 its port's sends,
// 2 its port's receives (IR_TRACE_LINK_TRACKS apart).
int emu_trace_track(int unit, int which);
int64_t emu_trace_cycle(Tick g);
void emu_trace_span(Emu *e, const EDev *d, int track, const char *name, int64_t local, int64_t cycles);

// ---- link.c ----
// A window's NetOp applied to the ports, as one queue would have at its key.
void link_apply(Emu *m, const NetOp *op);
void link_free_payloads(Emu *e);
void link_send(Emu *e, EDev *d, int unit, const Instr *in, int64_t local);
void link_recv(Emu *e, EDev *d, int unit, const Instr *in, int64_t local);
void link_transmit(Emu *e, EDev *d, int unit, const Instr *in, int64_t local);
void link_poll(Emu *e, EDev *d, int unit, int port, int64_t local);
void link_step_send(Emu *e, Stream *s);
void link_step_recv(Emu *e, Stream *s);
void link_step_poll(Emu *e, EDev *d, int unit, Tick boundary);
void link_free(Emu *e);
uint8_t *link_payload_new(Emu *e);
void link_payload_free(Emu *e, uint8_t *p);
// The polling units of this rank's devices that wait in vain, as hang
// violations (in device order), from the current key.
void link_report_polling(Emu *e, Tick now);
// Whether a polling unit of this rank has a notification on its way.
bool link_polls_can_progress(Emu *e, Tick now);

// ---- burst.c ----
// A burst's plan, made at its first extra element: how far the device lets
// it go and the other streams' operands that touch what it touches.
#define BURST_MAX_OPERANDS 16  // more such operands: no burst (never so many in practice)
typedef struct Operand {  // where a stream reads or writes (burst.c)
  const Stream *s;
  uint32_t base;           // vector base + e at element e (scalar: base at every element)
  bool write, scalar;
  uint64_t order;          // at key (start + e x every on its device's clock, order)
} Operand;
// A stream burst.c models, as its device's list holds it: its operands,
// each with the end of the vectors [base, hi) it touches over the stream's
// life, in one place for a burst's plan to scan.
typedef struct ActiveStream {
  struct Stream *s;
  int nops;
  struct ActiveOperand {
    Operand op;
    uint32_t hi;
  } ops[3];
} ActiveStream;
typedef struct Burst {
  bool planned;
  Tick limit;
  int nown, n;
  Operand own[3];          // the bursting stream's
  Operand op[BURST_MAX_OPERANDS];  // the others' that meet them
} Burst;
// Whether stream s, whose element s->k is next, may run it now, in the
// event of the element before (bursts on, the same key, e->cur set to it).
bool burst_next(Emu *e, Stream *s, Burst *b);
bool burst_models(const Stream *s);
// The key of a vector op's landing at tick t run in a burst (burst.c makes
// sure no other landing of its device shares the tick).
Key burst_land_key(const Stream *s, Tick t);
void burst_track(Emu *e, Stream *s);    // its first push
Tick burst_unit_effect(const EDev *d, const EUnit *u);  // EUnit.effect
void burst_untrack(Emu *e, Stream *s);  // its end
void burst_land_queued(EDev *d, uint32_t addr, uint32_t nvec);
void burst_land_done(EDev *d);
void burst_wake_queued(EDev *d, Tick t);
void burst_wake_done(EDev *d, Tick t);

// ---- fault.c ----
// At the start of a run: the cables and devices that die in it (dies_at).
void fault_begin_run(Emu *e);
// A vector (payload NULL: a notification) leaving port `port` of d at tick
// `departs` from SRAM vector addr, to arrive at `arrives`: counts it, draws
// its bit errors (--ber, --inject) and applies the FEC: a corrected error
// changes nothing, a detected one is a link-error violation and flips the
// payload's bits.  False when the cable is dead by its arrival: it is lost.
bool fault_on_wire(Emu *e, EDev *d, int port, Tick departs, Tick arrives, uint32_t addr, uint8_t *payload);
// Whether device d died during the run (its units and ports are not judged).
bool fault_device_dead(const Emu *e, const EDev *d);
// After the run, before the data checks: a violation for each cable and
// device that died during it; the run's totals into the Faults.
void fault_after_run(Emu *e);
// Whether a fault lost or corrupted vectors in this run, or a device died
// in it (data: untrusted), and whether a cable or device died in it (its
// length is then no measure of the schedule: time is not checked).
bool fault_data_untrusted(const Emu *e);
bool fault_cut_short(const Emu *e);

// ---- window.c ----
// Splits the devices into partitions (opt.threads) before the first event.
void window_begin(Emu *m);
// Runs every event up to `limit` window by window; the --max-cycles hang
// when events are left past it.
void window_run(Emu *m, Tick limit);
// Trace records of the event being run (buffered).
void window_trace_slice(Emu *e, int pid, int tid, const char *name, int64_t start, int64_t dur);
void window_trace_flow(Emu *e, int pid0, int tid0, int64_t t0, int pid1, int tid1, int64_t t1);
NetOp *window_net_op(Emu *e, NetKind kind);
// Whether only POLL checks are left in every partition's queue.
bool window_only_polls_left(const Emu *e);
// Sums the partitions' counters into the run's and frees them.
void window_end(Emu *m);

// Which partition of nparts device dev is in (contiguous blocks of whole nodes).
int window_part_of(const Topology *t, int ndevs, int nparts, int dev);
// Devices window_part_of keeps together: a dragonfly's node, else one.
int window_block_devices(const Topology *t);
// Whether this rank runs device dev (always, without MPI).
bool emu_owns(const Emu *e, int dev);
// Whether this rank reports what concerns the whole run (rank 0).
bool emu_leads(const Emu *e);
// The key of what is found after the run (buffered across ranks), in the
// order one process finds it: phase (EMU_AFTER_*), then position within it.
enum { EMU_AFTER_HANG, EMU_AFTER_UNITS, EMU_AFTER_LEFTOVERS, EMU_AFTER_EXPECT, EMU_AFTER_MODEL, EMU_AFTER_TIME };
void window_key_after_run(Emu *e, int phase, uint64_t position);
// Ranks: port p of d started or ended a SEND stream (its peer's rank is told).
void window_sending_changed(Emu *e, EDev *d, int port);
// The poll hang, found by this rank's event (ranks: every rank reports its own units).
void window_poll_hang(Emu *e, Tick now);
// The data verdict's parts and the outputs' figures, over all ranks.
void window_combine_data(Emu *e, bool *any, bool *all);
// After the checks: the counters and violations of every rank into rank 0's result.
void window_gather_result(Emu *m);

// ---- ranks.c ----
// MPI, or one rank without it (no-ops); ranks_init .. ranks_count: emu.h.
void ranks_max(int64_t *v, int n);  // elementwise over every rank, in place
void ranks_sum(int64_t *v, int n);
void ranks_max_double(double *v, int n);
void ranks_allgather(const int64_t *mine, int n, int64_t *all);  // all: n from each rank, in rank order
int64_t ranks_exscan(int64_t v);    // the sum of v over the ranks below this one
// out[r] to rank r; what every rank sent here, in rank order, malloc'd; inlen[r] bytes from rank r.
uint8_t *ranks_alltoallv(const Buf *out, size_t *inlen);
// Every rank's bytes to rank 0 (the same layout there; elsewhere unspecified).
uint8_t *ranks_gather(const Buf *mine, size_t *inlen);

// ---- check.c ----
void check_after_run(Emu *e);

// ---- model.c ----
// Compares every home of every output of the model (opt.ref) with the
// reference, reporting wrong-data; sets *any when there was an output to
// check and clears *all on any difference.
void model_check_outputs(Emu *e, bool *any, bool *all);

#endif
