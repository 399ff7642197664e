// passes.h: the compilation state and the pipeline of passes over it.
//
// A pass takes the Compilation, reads the IR the passes before it left, and
// adds or rewrites its own.  The pipeline is one table (pipeline.c); the
// driver runs it in order and stops at the first pass that reports errors,
// so --dump-after=PASS and --stats come for free.  Today's table holds the
// frontend stages (parse, check), partition and dag; collective lowering,
// routing, scheduling and synchronisation join it as they are built.
#ifndef TSPC_PASSES_H
#define TSPC_PASSES_H

#include "../frontend/frontend.h"

// Room for the pipeline's passes (pipeline.c checks the table fits).
#define PASS_MAX 32
// The most inferences --batches puts in flight: a named limit that keeps a
// model's copies (and the manifest) to a size a system can hold.
#define PASS_MAX_BATCHES 4096

// --route: how transfers are routed (passes/route.c).
typedef enum { ROUTE_AUTO, ROUTE_MINIMAL, ROUTE_NONMINIMAL, ROUTE_MODE_COUNT } RouteMode;
extern const char *const route_mode_names[ROUTE_MODE_COUNT];

// The most disjoint paths the router considers for one transfer (a named
// limit: a dragonfly node offers 7, a mesh device at most 4).
#define ROUTE_MAX_PATHS 16
// The most hops a spread path may take beyond the shortest one (a named
// limit: seed 002 s4.3 spreads a tensor over the injection links through
// intermediate TSPs, one or two hops out of the way; a longer detour costs
// its vectors' bandwidth on every extra link, and searching for it means a
// BFS over most of a large system for every pair).
#define ROUTE_MAX_DETOUR_HOPS 2
// Under --route=auto, how far (percent) the load-aware schedule may fall
// behind the all-minimal one, node for node, once past the first
// SCHEDULE_AUTO_LAG_GRACE_PERCENT of the nodes, before it is abandoned
// for it (named settings: see schedule.c, pass_schedule).
#define SCHEDULE_AUTO_LAG_PERCENT 15
// Gap filling (a transfer's fill_gaps): the fewest vectors a piece of a
// route placed in a gap carries, so a stream is not cut into pieces that
// cost more instructions than the gap is worth; and at least a
// SCHEDULE_GAP_MAX_PIECES-th of the route, so a long stream is cut into at
// most that many (instructions grow with transfers, not with bytes).
#define SCHEDULE_GAP_MIN_VECTORS 4
#define SCHEDULE_GAP_MAX_PIECES 16
// Under --route=auto a transfer whose placement waits more than this many
// times as long as it takes on an idle network is tried again cut into
// the gaps (schedule.c, place_best).
#define SCHEDULE_FILL_AFTER_WAITS 2
#define SCHEDULE_AUTO_LAG_GRACE_PERCENT 10
// A program that uses the matrix unit's weight buffers is tried in at most
// this many gaps of its device's weight-buffer table from its ready cycle
// on, each a placement of the whole program, before it is placed after
// every program that holds them (schedule.c, emit_program).
#define SCHEDULE_WEIGHT_GAP_TRIES 8
// The rule saves compile time and may cost cycles, so a load-aware schedule
// is not cut before it has tried this many routes (route_fits_looked): one
// cheaper than that runs whole (a few tens of milliseconds at most).
#define SCHEDULE_AUTO_LAG_FREE_TRIES (1 << 16)
// A model that is one collective alone: its winner on minimal trials is
// tried as compiled against every other algorithm when its own schedule
// tried at most this many routes (choose.c, recheck_alone; a larger
// schedule's rivals cost more than the check is worth: rack72's 64 MiB
// allreduce tries 411,955, and the check took its compile 0.7 -> 2.1 s).
#define CHOOSE_ALONE_RECHECK_TRIES (1 << 16)
// A tree algorithm tried jointly against one collective's own winner skips
// its chunk search when it loses at every divisor (choose.c,
// whole_at_every_divisor), which costs whole-model schedules where the
// search schedules the collective alone: so it is tried only when the
// collective alone takes at least this share of the model's makespan
// (examples/train.tg on rack72, 74 %: 2.0 -> 1.3 s; 48 matmul layers
// before an allreduce, 4 %: it cost 32 % more).
#define CHOOSE_SKIP_SEARCH_SHARE_PERCENT 50
// The longest one transfer may take, and the latest a schedule may end, in
// cycles (named limits far past any real program: a node starts before
// SCHEDULE_MAX_CYCLES and lasts at most ROUTE_MAX_CYCLES, or about that for
// compute, so no time overflows before the scheduler stops).
#define ROUTE_MAX_CYCLES ((int64_t)1 << 56)
#define SCHEDULE_MAX_CYCLES ((int64_t)1 << 60)

// ---- align.c: the initial-alignment preamble (for the sync pass) ----
//
// Seed 002 s3.2: devices start at unrelated times; along a spanning tree
// each parent DESKEWs and TRANSMITs to its children, each child POLLs at
// every HAC epoch boundary until the notification arrives, and all devices
// NOTIFY on one global cycle, (floor(L / E) + 1) x height epochs after the
// root's first boundary.
typedef struct AlignPlan {
  int root, height;
  int epochs_per_level;   // k = floor((L + fan-out) / E) + 1: the epochs a child's notification aims at
  int *parent, *level;    // by device; the root's parent is -1
  int *parent_port;       // the port of each device that faces its parent
  int *release;           // by device: the epoch, after the root's B, its POLL returns (the root: 0)
  int64_t *send_at;       // by device: cycles after its parent's release that the parent TRANSMITs to it
  int64_t *deskew_at;     // by device: cycles after its release that its first DESKEW issues (after its
                          //   TRANSMITs, clear of a boundary by the drift since its release)
  int notify_epochs;      // N: every device NOTIFYs at B + N E
  int64_t launch_window;  // cycles the root waits first: every device must be running
  int refused_link;       // when align_plan refuses: the tree link it cannot use (-1: none)
} AlignPlan;

// ---- sync.c: the synchronisation budget (planned before routing) ----
//
// What the schedule must leave room for so that it runs on clocks that
// drift (docs/passes.md, "sync").  With drift_ppm = 0 every figure but the
// preamble is 0: no slack, no resynchronisation, streams of any length.
typedef struct SyncPlan {
  double drift_ppm;         // the clock error planned for, each device against the HAC
  int64_t launch_window;    // cycles the alignment root waits for every device to start
  int64_t tolerance;        // T: jitter and drift a receive buffer absorbs (B e - 1 - (Lmax - Lmin))
  int64_t rx_slack;         // sigma: cycles after a vector's latest landing that it is taken
  int64_t drift_cycles;     // delta: the most two events' clocks may disagree between resyncs
  int64_t interval;         // RUNTIME_DESKEW every `interval` cycles (0: never)
  int64_t window;           // cycles each resync holds every unit of a device
  int64_t stream_vectors;   // the longest SEND/RECV stream and VXM run (0: unlimited)
  int64_t margin;           // cycles between a transfer's last take and its data's first use,
                            // and after a stream that runs through a resync window
  int64_t residual;         // epsilon: one device's error against the HAC right after a resync
  AlignPlan align;          // the preamble's tree
  int64_t preamble_cycles;  // the preamble, to the cycle every unit resumes at (schedule time 0)
} SyncPlan;

// The clock error planned for when neither --drift-ppm nor the topology
// says more: a quartz oscillator's usual tolerance.  The alignment root's
// default launch window (cycles), and the residual error of one alignment
// (POLL or RUNTIME_DESKEW, cycles).  Named settings, docs/passes.md.
#define SYNC_DEFAULT_DRIFT_PPM 100.0
#define SYNC_DEFAULT_LAUNCH_WINDOW 5000
#define SYNC_RESIDUAL_CYCLES 2

typedef struct Compilation {
  Arena arena;           // owns every IR below
  Diag diag;
  const SrcFile *src;    // the .tg text
  Topology *topo;
  Ast *ast;              // after parse
  Graph *graph;          // after check; every tensor placed after partition
  Dag *dag;              // after dag
  double pass_seconds[PASS_MAX];  // time each pass took, for --stats
  bool verify_each;               // run the IR verifier after every pass
  bool algo_forced;               // --algo given: forced_algo for every collective
  AlgoKind forced_algo;
  RouteMode route_mode;           // --route (default auto)
  int tree_chunks;                // --tree-chunks (0: the cost model's choice, tree_chunk_divisor)
  double drift_ppm;               // --drift-ppm (< 0: not given)
  int64_t launch_window;          // --launch-window (< 0: not given)
  SyncPlan sync;                  // after sync
  AlgoKind *algos;                // after choose: by op id, the algorithm each collective gets
  int *tree_chunk_divisor;        // after choose: by op id, what the tree engine divides its
                                  //   chunk count by (algo_tree.c; 0 or 1: the formula's)
  const char *choice_log;         // after choose: what algo=auto tried (--stats)
  bool route_until_spread;        // choose's trials: pass_route routes as --route=auto does until a
                                  //   transfer may spread, minimally after (route_may_spread)
  bool keep_trials;               // choose may hand its winning trial to lower (no pass's dump or
                                  //   stop was asked for: each pass then shows its own work)
  Dag *trial_dag;                 // after choose: the winner's trial, lowered, routed and scheduled
                                  //   as lower, route and schedule would (NULL: they run)
  bool partition_none;            // --partition=none: place, split nothing, no pipeline
  int batches;                    // --batches: inferences in flight (0 or 1: one)
  Progress *progress;             // the progress line on a terminal (NULL: none)
  bool annotate;                  // a listing is wanted: codegen notes what each instruction serves
  const char *partition_log;      // after partition: what it split and cut, and why
  bool batch_runs;                // after partition: several inferences in flight, and some device's
                                  //   runs may work on different ones at once (runs_on)
  bool *runs_on;                  // by device, with batch_runs: its runs may work on different
                                  //   inferences at once (dag.c), its matmuls fill the weight
                                  //   buffers' gaps (schedule.c, emit_program); else it computes
                                  //   one inference at a time
  bool runs_no_room;              // codegen: with batch_runs, the SRAM held too little (its errors
                                  //   not said): the pipeline compiles again without (pipeline.c)
  bool runs_given_up;             // pipeline.c: it did
  Program *program;               // after codegen
  int64_t *pitch;                 // layout.c, made on first use: by tensor id, vectors per row
  struct TreeCache *trees;        // algo_tree.c: every group's trees built so far, by builder
  struct RingCache *rings;        // rings.c: the cycles searched for so far, by group
  struct SchedTables *sched_tables;  // schedule.c: the last schedule's reservation tables, for the next
} Compilation;

// Whether device d works on the inferences in flight by runs
// (Compilation.runs_on).
static inline bool compilation_runs_on(const Compilation *c, int d) { return c->batch_runs && c->runs_on[d]; }

typedef struct Pass {
  const char *name;
  const char *summary;                          // one line, for --help
  bool (*run)(Compilation *c);                  // false after reporting errors
  void (*dump)(const Compilation *c, FILE *out);
} Pass;

// ---- the passes, in pipeline order (pipeline.c holds the table) ----
bool pass_partition(Compilation *c);  // partition.c: AUTO and STAGE -> devices, splits, stages
void partition_dump(const Compilation *c, FILE *out);
bool pass_batch(Compilation *c);      // batch.c: --batches=N copies of every non-param tensor
bool pass_dag(Compilation *c);        // dag.c: graph -> compute/transfer/collective nodes
bool pass_choose(Compilation *c);     // choose.c: algo=auto -> an algorithm for each collective
bool pass_lower(Compilation *c);      // lower.c: collective nodes -> transfers
bool pass_route(Compilation *c);      // route.c: transfers -> routes over paths
bool pass_sync(Compilation *c);       // sync.c: the slack and resync plan for drift and jitter
bool pass_schedule(Compilation *c);   // schedule.c: every node and route -> cycles
bool pass_codegen(Compilation *c);    // codegen.c: scheduled DAG -> device programs

// The resync windows of a plan: [k I, k I + W) for k >= 1.  The first one
// that ends after `t` (its index k), and whether [t, t + len) meets one.
int64_t sync_window_after(const SyncPlan *s, int64_t t);
bool sync_overlaps_window(const SyncPlan *s, int64_t t, int64_t len);
void sync_dump(const Compilation *c, FILE *out);
void choose_dump(const Compilation *c, FILE *out);
// schedule.c: the makespan of c->dag (routed) scheduled with every transfer
// routed as mode says; -1 after an error, SCHEDULE_ABANDONED as soon as it
// passes bound (when bound >= 0).  For the choose pass's trials.
#define SCHEDULE_ABANDONED (-2)
int64_t schedule_makespan(Compilation *c, RouteMode mode, int64_t bound);
// The makespan pass_schedule would give c->dag (under --route=auto the
// better of the all-minimal and the load-aware schedule), or
// SCHEDULE_ABANDONED past bound, -1 after an error; when it returns a
// makespan, c->dag holds that schedule, as pass_schedule would leave it (a
// bound only abandons a schedule, never changes one that ends within it).
int64_t schedule_as_compiled(Compilation *c, int64_t bound);
// Whether --route=auto's scheduler could route some transfer of d other
// than minimally (when not, its schedule is the minimal one).
bool schedule_may_spread(const Dag *d);
// Frees the reservation tables a compilation keeps between schedules
// (c->sched_tables, then NULL; pass_schedule and pass_run_pipeline's end).
typedef struct SchedTables SchedTables;
void schedule_forget_tables(Compilation *c);
// The generated program as assembly, every device (--dump-after=codegen).
void codegen_dump(const Compilation *c, FILE *out);

// ---- reserve.c: reservation tables (for the schedulers) ----
//
// When one resource (a link direction, a functional unit) is busy: sorted,
// disjoint, half-open intervals [start, end) of cycles.  A run of vectors is
// one interval, never one entry per vector, so a schedule's cost grows with
// the number of transfers, not with their bytes.  Adjacent intervals merge.
typedef struct Interval {
  int64_t start, end;
} Interval;

typedef struct Reservations {
  Interval *iv;  // malloc'd, sorted by start, disjoint, non-adjacent: a gap buffer, the first
                 //   `gap` intervals at iv[0 ..), the rest at the array's end (resv_at)
  int len, cap;
  int gap;       // intervals before the gap: where the last take or undo was
  int hint;      // where the last query landed: a search cursor, checked before use
  uint64_t sum;  // the sum of its intervals' hashes, kept as they change (resv_fingerprint)
} Reservations;

// Interval i of r (0 <= i < len), in order.
static inline Interval resv_at(const Reservations *r, int i) {
  return r->iv[i < r->gap ? i : i + r->cap - r->len];
}

// What a table holds, in 128 bits: its length and the sum of a 64-bit
// hash of each interval.  Two tables with equal fingerprints hold the same
// intervals but with a chance of 2^-64 (the schedule's compute stamping
// relies on it: a false match gives another valid program, or stops the
// compiler with an internal error).
typedef struct ResvFingerprint {
  int len;
  uint64_t sum;
} ResvFingerprint;
ResvFingerprint resv_fingerprint(const Reservations *r);

// Whether [start, start + len) is free.
bool resv_is_free(const Reservations *r, int64_t start, int64_t len);
// The earliest t >= from with [t, t + len) free.
int64_t resv_earliest(const Reservations *r, int64_t from, int64_t len);
// How long r is free from `at` on: 0 if busy at `at`, INT64_MAX if free
// for ever.
int64_t resv_free_run(const Reservations *r, int64_t at);
// Marks [start, start + len) busy; it must be free (an internal error if not).
void resv_take(Reservations *r, int64_t start, int64_t len);
// A cursor for a run of resv_earliest queries on one table, each from a
// time no earlier than the last one's, with no take in between (a route's
// retries): each query goes on from where the last one stood instead of
// searching the table again.  The same answers as resv_earliest.
typedef struct ResvCursor {
  const Reservations *r;
  int i;  // the first interval ending after the last query's time (-1: none yet)
} ResvCursor;
#define RESV_CURSOR_STEPS 8  // intervals a cursor walks before it searches instead
ResvCursor resv_cursor(const Reservations *r);
int64_t resv_cursor_earliest(ResvCursor *c, int64_t from, int64_t len);

// A journal of takes that can be undone, newest first: a scheduler tries a
// placement (a transfer's routes one way), and takes it back to try another.
typedef struct ResvUndo {
  Reservations *r;
  int at, removed;    // iv[at] replaced the `removed` intervals in old
  Interval old[2];    // a free run touches at most its two neighbours
} ResvUndo;
typedef struct ResvJournal {
  ResvUndo *e;
  int len, cap;
} ResvJournal;
// resv_take, recorded in j (NULL: not recorded).
void resv_take_logged(Reservations *r, int64_t start, int64_t len, ResvJournal *j);
// Undoes every take in j, newest first, and empties it.
void resv_undo_all(ResvJournal *j);
// The cycles reserved in [from, to): for utilisation figures.
int64_t resv_busy(const Reservations *r, int64_t from, int64_t to);
void resv_free(Reservations *r);
// schedule.c's look at one hop's link direction (for tests): `at` if a
// run of `run` cycles leaving there on a hop of `latency` finds the link
// free for as long as it holds it (the run, plus sync->margin when it
// meets a resync window at either end), else the next time worth trying:
// no time in between fits.
int64_t schedule_link_free_from(const SyncPlan *sync, const Reservations *link, int64_t latency, int64_t at,
                                int64_t run);

// ---- layout.c: where a tensor's elements sit in its vectors ----
//
// A tensor is rows of its last dimension, each starting on a vector,
// `pitch` = ceil(last / per) vectors apart ("row-padded"), so the matrix
// and vector units address rows directly; the collectives and transfers
// move the padded bytes.  When the last dimension is a whole number of
// vectors, or the tensor has rank 1, these are the packed bytes.
// Decides every tensor's layout (the dag pass calls it first, so the
// collective lowering's trial schedules find it made); false, after an
// error naming the tensor, when one copy is bigger than a device's SRAM.
bool layout_plan(Compilation *c);
// Vectors per row, the rows, and the vectors of one copy.
int64_t layout_pitch(Compilation *c, const Tensor *t);
int64_t layout_rows(const Tensor *t);
int64_t layout_vectors(Compilation *c, const Tensor *t);
// The bytes one copy occupies and a transfer of it moves: its padded rows
// when they differ from packed, else its bytes.
int64_t layout_bytes(Compilation *c, const Tensor *t);
// How a collective's shards cut t: units (rows when padded, else
// elements) of unit_bytes each.
void layout_units(Compilation *c, const Tensor *t, int64_t *units, int64_t *unit_bytes);
// The pitch the manifest records: nonzero only when it differs from packed.
uint32_t layout_manifest_pitch(Compilation *c, const Tensor *t);

// ---- compute.c: the compiler's op table for compute ops ----
//
// Each compute op either runs as one vector-unit pass over its result (an
// element-wise op whose operands share its shape: compute_pass_opcode says
// which instruction; the scheduler places it with the reductions' vxm_pass)
// or is a program of instructions on the vector, matrix and switch units
// (matmul tiles, per-row softmax and layernorm, transposes, ...), which
// compute_emit places instruction by instruction on the device's
// reservation tables, exactly as code generation will write them.
typedef struct UnitTables {
  Reservations *vxm, *mxm, *mxw, *sxm;  // vector unit, matrix unit (multiply, install path), switch unit
} UnitTables;

// The instructions of the compute node being placed, in malloc'd memory
// the scheduler keeps from node to node: grown by doubling in the arena,
// every smaller copy would stay there too (a training step on
// system10440, 56 M instructions: 9.9 GB of arena, 4.7 GB with this).
typedef struct CodeBuf {
  UnitInstr *data;
  int len, cap;
} CodeBuf;

typedef struct Emitter {
  Compilation *c;
  const SyncPlan *sync;
  UnitTables u;     // the node's device's tables
  DagNode *n;
  int vb;           // vector bytes
  CodeBuf *code;    // the scheduler's; compute_emit copies the node's into the arena
  VEC(ScratchBuf) scratch;
  int64_t last;     // the latest landing of anything placed
  int64_t too_long; // the longest instruction that cannot fit between two resyncs (0: none)
  int64_t weights_until;  // when the program's last multiply is done with the device's weight
                          //   buffers (0: it uses none); it holds them from its ready on
  int64_t mxm_cycles;     // the matrix unit's issue cycles it placed: a least hold of the buffers
  ResvJournal *journal;   // the program's takes, to undo a try (NULL: not recorded)
} Emitter;

// OPC_COUNT when op is not a single pass; else the instruction of the pass.
Opcode compute_pass_opcode(Compilation *c, const Op *op);
// Whether code generation can compile op; if not, why (for the refusal).
bool compute_supported(Compilation *c, const Op *op, char *why, size_t whylen);
// Places the node's instructions from `ready` on; sets n->code, n->scratch,
// n->start and n->finish.
void compute_emit(Emitter *e, int64_t ready);
// Whether op's program uses the matrix unit's weight buffers, which it then
// holds from its ready to Emitter.weights_until (the scheduler keeps two
// such programs of a device apart).
bool compute_uses_weights(const Op *op);
// Gives e->n the program `like` got from compute_emit on another device
// (the same op, from the same ready, on tables that held what e's hold
// now) and takes on e's tables what it took there: the placement
// compute_emit would find, without its search.
void compute_stamp(Emitter *e, const DagNode *like);
// The cycles op takes alone on an idle device, estimated from shapes
// before layout and scheduling (the partitioner's cost of compute; within
// a few percent of the scheduled makespan on the shapes test_partition
// checks).
int64_t compute_estimate_cycles(const Op *op, int vector_bytes);
// The scratch vectors op's program holds while it runs, estimated the same
// way (an upper bound for the partitioner's SRAM estimate).
int64_t compute_estimate_scratch_vectors(const Op *op, int vector_bytes);
// Whether transpose op feeds only matmuls as their second operand: then it
// is not computed, and those matmuls install its operand's rows directly
// (MXLWT: seed 002 s5.5's A B^T).
bool compute_transpose_is_view(Compilation *c, const Op *op);
// The tensor whose memory an operand is read from (a view's operand).
const Tensor *compute_storage_of(Compilation *c, const Tensor *t);

// ---- lower.c: the collective lowering interface ----
//
// An algorithm turns one COLLECTIVE node into TRANSFER nodes (with
// `reduce` for the reduction steps).  It sees the collective in a Lowering
// and emits through lower_send; lower_done says which transfer completes a
// chunk of the result on a device (the collective's consumers there wait
// for every one).  The buffer is cut into chunks; lower_chunk gives each
// one's byte range.  An allreduce's chunks are whole vectors (the last may
// end in padding).  For a reduce_scatter or all_gather, n is a multiple of
// ngroup and chunks k * n / ngroup .. (k + 1) * n / ngroup - 1 make up the
// shard of group index k (the op's element range), cut at vectors from the
// shard's start.
typedef struct Lowering {
  Compilation *c;
  const DagNode *coll;  // the collective being lowered
  const Op *op;
  const Tensor *buffer;  // what the transfers move: the operand (an all_gather's result)
  int ngroup;
  const int *group;     // the devices, ascending
  int lane;             // the ring or tree the next lower_send belongs to (0 ..);
                        // algorithms with several set it, for pictures
  bool on_cycle;        // the next lower_send is a ring's hop between neighbours
  int edge_link;        // the link the next lower_send's tree edge was built over (-1: none)
  bool fill_gaps;       // the next lower_send may be cut around what is scheduled before it
  void *state;          // lower.c's own
} Lowering;

// The most transfers one collective may lower to (a named limit: a DAG node
// is about a hundred bytes, so this bounds a collective's DAG near 1 GiB).
// Algorithms whose transfer count grows with N^2 (a flat ring over a whole
// dragonfly system) refuse groups past it in their applies().
#define LOWER_MAX_TRANSFERS (1 << 23)

// A tree algorithm's trees for a collective, or NULL and why it has none
// (algo_tree.c lowers them).
struct TreeSet;
typedef struct TreeSet *TreeBuilder(const Lowering *l, char *why, size_t whylen);

typedef struct CollectiveAlgo {
  AlgoKind kind;
  // Whether the algorithm can lower this collective; if not, why (for
  // --algo and algo=NAME errors).
  bool (*applies)(const Lowering *l, char *why, size_t whylen);
  void (*lower)(Lowering *l);
  TreeBuilder *trees;  // a tree algorithm's builder: it lowers through the tree engine, whose chunk
                       // count the choose pass picks (NULL: not a tree algorithm)
  // The most transfers of the lowering that run one after another, each
  // waiting for the one before to land (the hops a ring's chunk travels);
  // 0 when not known.  The choose pass bounds a candidate's makespan
  // below by it (lower_chain_bound).  NULL: not known.
  int64_t (*chain)(const Lowering *l);
} CollectiveAlgo;

// The byte range [*offset, *offset + *bytes) of chunk k of n (whole
// elements; a chunk may be empty when there are fewer elements than chunks).
void lower_chunk(const Lowering *l, int k, int n, int64_t *offset, int64_t *bytes);
// The byte range covering chunks [k0, k1) of n (bytes 0 when all are empty).
void lower_chunk_span(const Lowering *l, int k0, int k1, int n, int64_t *offset, int64_t *bytes);
// A transfer of bytes [offset, offset + bytes) of the operand from src to
// dst, after the nodes in deps (-1 entries ignored); returns its node id.
// ndeps counts entries.  The collective's own dependencies are added.
int lower_send(Lowering *l, int src, int dst, int64_t offset, int64_t bytes, bool reduce, const int *deps,
               int ndeps);
// Marks node as completing part of the result on device.
void lower_done(Lowering *l, int device, int node);
// Reducing transfer `node` adds its data into the destination's copy only
// after the transfers in reads (-1 entries ignored; they read that copy:
// they leave the destination) have sent their last vector.  Unlike a
// dependency this orders a write after reads and may name later transfers
// (an all-to-all, where every device both sends its copy and reduces the
// others' into it); nothing that depends on `node` may come before them.
void lower_after_reads(Lowering *l, int node, const int *reads, int nreads);
// Whether a collective works in its operand's own memory: an allreduce or
// reduce_scatter whose operand nothing else reads, the graph does not
// output and no copy made (a local copy is its operand's bytes), and whose
// first dimension needs no pad rows.  Otherwise lowering stages the
// operand into a buffer first.
bool lower_in_place(const Graph *g, const Op *op);
// For the choose pass: the algorithms that can lower collective n, in
// registry order (returns how many), and old lowered by c->algos into *out
// (false after reporting an error; pass_lower is this on c->dag).
int lower_applicable(Compilation *c, const DagNode *n, AlgoKind *out);
// A lower bound on the makespan of any schedule of collective n lowered by
// algorithm kind, from its chain of transfers (CollectiveAlgo.chain): each
// takes at least the least hop a route is given (route_least_hop), one
// vector's cycle and the sync plan's margin; 0 when the algorithm knows no
// chain.
int64_t lower_chain_bound(Compilation *c, const DagNode *n, AlgoKind kind);
// The least hop latency a route is given (latency_max + rx_slack) over
// working links: no transfer lands sooner after it leaves (route.c).
int64_t route_least_hop(const Compilation *c);
// The chain of a ring over the group (lower_ring): 2 (N - 1) transfers
// for an allreduce, N - 1 for a reduce_scatter or an all_gather, when the
// operand holds a byte.
int64_t lower_ring_chain(const Lowering *l);
// Whether the group is made of whole blocks of `size` consecutive device
// ids (a dragonfly's nodes or racks, named `what`); if not, why, naming a
// device in the group and one of its block that is not.
bool lower_whole_blocks(const Lowering *l, int size, const char *what, char *why, size_t whylen);
// Whether algorithm kind lowers through the tree engine (its chunk count
// is then the choose pass's to pick).
bool lower_uses_tree_chunks(AlgoKind kind);
// The chunks a tree algorithm would cut each tree's share of collective n
// into under c's settings now (0: not a tree algorithm, or it refuses n).
int lower_tree_chunks(Compilation *c, const DagNode *n, AlgoKind kind);
bool lower_dag(Compilation *c, const Dag *old, Dag **out);

// ---- algo_ring.c: rings, shared by the ring algorithms ----
// The group in the order of the topology's Hamiltonian cycle; false (the
// group in id order, and why) when the topology has none.
bool lower_ring_order(const Lowering *l, int *order, char *why, size_t whylen);
// Whether nrings rings over the group (N transfers in each of 2(N-1) steps
// each) stay within LOWER_MAX_TRANSFERS; if not, why.
bool lower_ring_fits(const Lowering *l, int nrings, char *why, size_t whylen);
// Emits one ring over order (the group, in ring order) moving chunk `part`
// of `nparts` of every shard: ReduceScatter and/or AllGather as the
// collective needs.
void lower_ring(Lowering *l, const int *order, const int *links, int part, int nparts);

// One ring in general form, for algorithms that compose rings (ringbiodd,
// ring2d): any n positions, any byte range per label.  ReduceScatter step s
// has position p send label p - s to p+1 (reduced there), so position p
// ends with label p+1 complete; AllGather step s has p send label
// p + lag - s (lag 1 after a ReduceScatter, 0 when position p starts with
// label p).  Each send also waits for the position's start_deps, and, at
// merge_pos, for merge_in[label] (another device's data reduced into it).
typedef VEC(int) IntList;
typedef struct RingPlan {
  int n;
  const int *order;                // position -> device
  const int *links;                // optional, by position p: the link p's send to p + 1 goes over
                                   //   (-1, or links NULL: the router's minimal path)
  const int64_t *offset, *bytes;   // by label: the bytes it carries (0: none)
  bool reduce_scatter, all_gather;
  int lag;
  const int *const *start_deps;    // optional, by position: nstart_deps[p] nodes
  const int *nstart_deps;
  int merge_pos;                   // optional (merge_in NULL: none)
  const int *merge_in;             // by label: a node id
  int *complete;                   // optional out, n x n: [p * n + label] is the
                                   // transfer that completed label at p (-1: none)
} RingPlan;
void lower_ring_plan(Lowering *l, RingPlan *rp);

// ---- algo_tree.c: trees, shared by the tree algorithms ----
//
// A set of trees over devices, each carrying 1/ntrees of the buffer:
// ReduceScatter bottom-up (each device adds its children's partial sums and
// sends the result to its parent), AllGather top-down (the root's result
// broadcast), every tree's share cut into chunks that follow each other
// down every link.  Arrays are ntrees x ndevices, tree t's row at
// t * ndevices: parent[d] is d's parent (-1: the root, or d absent) and
// step[d] the broadcast step in which the edge parent -> d is used (0: the
// root, -1: absent; a child's step exceeds its parent's).  link[d] is the
// link the edge parent -> d was built over (-1: the builder chose devices,
// not links, and the router picks the way).  A device of a
// tree outside the group relays: it stores and forwards (it adds nothing).
typedef struct TreeSet {
  int ntrees, ndevices;
  int *parent, *step, *link;  // malloc'd, ntrees x ndevices
} TreeSet;

// The pipeline's depth in chunks: the deepest tree's edges times this many
// chunks, so the pipeline's fill (depth - 1 chunk times) costs at most
// 1 / TREE_CHUNKS_PER_LEVEL of the stream (docs/notes-trees.md).  No chunk
// is cut below TREE_MIN_CHUNK_VECTORS, and a collective is cut into at most
// about TREE_TRANSFER_BUDGET transfers (compile time grows with them).
#define TREE_CHUNKS_PER_LEVEL 32
#define TREE_MIN_CHUNK_VECTORS 4
#define TREE_TRANSFER_BUDGET (1 << 17)
// The chunk count is a setting (seed 003 s VIII-C sweeps it): --tree-chunks
// gives it (at most TREE_MAX_CHUNKS, and never more chunks than vectors in
// a share, nor past the transfer budget); otherwise the choose pass
// schedules the formula's count divided by each of TREE_CHUNK_DIVISORS and
// keeps the fastest.
#define TREE_MAX_CHUNKS 4096
#define TREE_CHUNK_DIVISORS {1, 2, 4}

// A set of ntrees trees over the topology's devices, every device absent.
TreeSet *lower_trees_new(const Lowering *l, int ntrees);
void lower_trees_free(TreeSet *ts);
// Sets tree t's steps to the devices' depths below root (parent filled in).
void lower_trees_depths(TreeSet *ts, int t, int root);
// Whether every tree holds the whole group under a root in the group (and a
// reduce_scatter's or all_gather's tree k is rooted at the group's k-th
// device), and one chunk per tree stays within LOWER_MAX_TRANSFERS; if
// not, why.
bool lower_trees_fit(const Lowering *l, const TreeSet *ts, char *why, size_t whylen);
// Emits the collective over the trees (lane = tree index), each tree's
// share cut into chunks by the settings above.
void lower_trees(Lowering *l, const TreeSet *ts);

// A tree algorithm's applies() and lower() are lower_trees_apply and
// lower_trees_build over its builder (TreeBuilder, above).
bool lower_trees_apply(const Lowering *l, TreeBuilder *build, char *why, size_t whylen);
void lower_trees_build(Lowering *l, TreeBuilder *build);
// The chunks each tree's share is cut into (the formula's count over the
// choose pass's divisor, or --tree-chunks); 0 when the builder refuses.
int lower_trees_chunks(const Lowering *l, TreeBuilder *build);
// The trees built so far are kept for the compilation (choose's trials and
// the final lowering ask for the same ones); the pipeline forgets them
// when it ends.
void lower_trees_forget(Compilation *c);

// ---- algo_multitree.c: MultiTree's greedy construction (also ctree's) ----
// One tree per root over the links between member devices, grown step by
// step (broadcast direction): in each step every tree in turn takes one
// more edge from a device it held before the step to one it lacks, over a
// link direction no tree has used in that step, until none can; then the
// next step.  cluster (by device, or NULL): a tree takes a device of its
// root's cluster before any other.  Returns the steps taken, or -1 if some
// member cannot be reached.
int lower_multitree_build(const Topology *t, const bool *member, const int *roots, int nroots,
                          const int *cluster, TreeSet *ts);

// The registry (lower.c): one line per algorithm file.
extern const CollectiveAlgo algo_ring;    // algo_ring.c
extern const CollectiveAlgo algo_biring;  // algo_biring.c
extern const CollectiveAlgo algo_direct;  // algo_direct.c
extern const CollectiveAlgo algo_ringbiodd;  // algo_ringbiodd.c
extern const CollectiveAlgo algo_ring2d;     // algo_ring2d.c
extern const CollectiveAlgo algo_hring;   // algo_hring.c
extern const CollectiveAlgo algo_dragonfly3;  // algo_dragonfly3.c
extern const CollectiveAlgo algo_hier;        // algo_hier.c
extern const CollectiveAlgo algo_dbtree;     // algo_dbtree.c
extern const CollectiveAlgo algo_multitree;  // algo_multitree.c
extern const CollectiveAlgo algo_tto;        // algo_tto.c
extern const CollectiveAlgo algo_ctree;      // algo_ctree.c

// ---- route.c ----
// When a transfer's routes are done, in cycles after its first vector
// leaves, on an empty network with jitter off (exclusive end).
int64_t route_finish(const Route *routes, int nroutes);
// Points n's routes at its minimal or spread ones as mode says (auto: the
// one that finishes first on an empty network).
void route_choose(DagNode *n, RouteMode mode);
// Whether routed transfer n is one --route=auto's scheduler may spread
// over its paths (not on a ring's cycle, two paths or more).
bool route_may_spread(const DagNode *n);


// ---- paths.c: routes between devices (for the router) ----
//
// Paths (Hop, Path: ir/ir.h) over working (not failed) links.
// Up to `max` paths from src to dst that share no link direction, shortest
// first: each is a shortest path once the earlier ones' link directions are
// taken away (within a node of a dragonfly: the direct link, then one
// two-hop path through every other TSP).  Returns how many were found.
int route_disjoint_paths(Arena *a, const Topology *t, int src, int dst, int max, Path *out);
// The same greedy sequence, found a piece at a time with scratch kept
// between calls: paths[0..have) are its first paths (from earlier calls);
// this adds the next ones, up to max in all, stopping before one of more
// than max_hops hops.  *exhausted: the sequence has no more.  Returns the new count.
typedef struct PathFinder PathFinder;
PathFinder *route_finder_new(const Topology *t);
void route_finder_free(PathFinder *f);
int route_more_paths(PathFinder *f, Arena *a, int src, int dst, Path *paths, int have, int max, int max_hops,
                     bool *exhausted);
// The shortest path from src to dst over the links only[] allows (and no
// failed one), into *out; false if there is none.
bool route_shortest_within(PathFinder *f, Arena *a, int src, int dst, const bool *only, Path *out);

// ---- rings.c: Hamiltonian cycles (for ring lowerings) ----
//
// A bidirectional ring sends half the data each way round a cycle through
// every device in which consecutive devices share a working link (and a
// cycle of two needs two distinct links).  Built directly for rings, fully
// connected systems and meshes and tori with an even device count; searched
// for otherwise, within a named budget.

// Search steps spent on one topology before giving up, and the most devices
// searched (the search recurses once a device): named limits.
#define RING_SEARCH_BUDGET 2000000
#define RING_SEARCH_MAX_DEVICES 4096

// The working link between devices a and b other than `except` (-1: any),
// or -1 if there is none.
int ring_link_between(const Topology *t, int a, int b, int except);
// Fills order[0..ndevices) with a Hamiltonian cycle over working links.
// False, with the reason in why (an odd mesh: bipartite with an odd number
// of devices; or nothing found within the budget).
bool ring_hamiltonian(const Topology *t, int *order, char *why, size_t whylen);
// On a mesh whose dimensions are all odd (and at least 3): fills order
// with a cycle whose hops are neighbours except one over two links, over
// working links only.  When failed cables leave no such cycle of the ones
// it knows, and round_failures, the one whose hops cross the fewest links
// with those that fail taken round the failures, if id order's would cross
// at least as many (a ring over every device; a group's own order can do
// better than such a cycle cut down to it).  False on any other topology,
// or when neither is had.
bool ring_near_hamiltonian(const Topology *t, int *order, bool round_failures);
// Whether order is a Hamiltonian cycle of t (for checks and tests).
bool ring_is_hamiltonian(const Topology *t, const int *order);
// The first position i of the ring through order[0 .. n) whose hop to the
// next (the last's to the first) is over no working link; -1: none.
int ring_first_unlinked(const Topology *t, const int *order, int n);
// Fills order[0..ngroup) with a cycle through the group's devices alone,
// consecutive ones (and the last and the first) linked: searched within
// RING_SEARCH_BUDGET.  False, with the reason in why.
bool ring_hamiltonian_in_group(const Topology *t, const int *group, int ngroup, int *order, char *why,
                               size_t whylen);

// ring_hamiltonian (group NULL) or ring_hamiltonian_in_group for c's
// topology, each answer found once a compilation and kept until the
// pipeline ends (ring_cycles_forget): every ring and biring lowering of
// choose's trials asks again, and a search that spends its whole budget
// took 0.3 s a time (six allreduces on a 96-TSP dragonfly with racks: 38 s
// of a 44 s compile).
bool ring_cycle_of(Compilation *c, const int *group, int ngroup, int *order, char *why, size_t whylen);
void ring_cycles_forget(Compilation *c);

// ---- align.c (continued) ----
// Plans the tree (BFS from root over working links: minimal height), its
// TRANSMITs timed for clocks off by up to drift_ppm.  False, with err, if
// some device cannot be reached or no send time fits a notification in
// one epoch.
bool align_plan(Arena *a, const Topology *t, int root, int64_t launch_window, double drift_ppm, AlignPlan *plan,
                char *err, size_t errlen);
// Writes the preamble into each device's ctl unit (created if missing) and
// a SYNC at the start of every other unit, which the NOTIFY then wakes.
// Units' own code is appended after this; annotate: with their notes
// (UnitProgram.notes).  Returns the cycle, in the root's
// clock with no drift or skew, at which every device NOTIFYs.
int64_t align_emit(Arena *a, const AlignPlan *plan, const Topology *t, Program *p, bool annotate);
// That cycle alone.
int64_t align_notify_cycle(const AlignPlan *plan, const Topology *t);

// ---- pipeline.c ----
extern const Pass pass_pipeline[];
extern const int pass_count;

const Pass *pass_lookup(const char *name);
// Runs every pass in order; after a pass whose name is dump_after (or every
// pass, for "all") prints "*** IR Dump After NAME ***" and its dump on stderr.
// With c->verify_each, the IR is verified after every pass; a broken
// invariant is an internal error naming the pass.  Stops after the pass
// named stop_after (NULL: runs them all).
bool pass_run_pipeline(Compilation *c, const char *dump_after, const char *stop_after);

#endif
