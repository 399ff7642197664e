// emu.h: the runtime: what reads an output directory and runs it.
//
//   loader.c    manifest.yaml and devNNNN.tsp -> Program (validated, never trusted)
//   emu.c       the discrete-event emulator: units, links, SRAM, clocks
//   window.c    the run in conservative windows on threads (--threads)
//   sram.c      sparse SRAM: memory grows with what is touched
//   memory.c    the memory a run needs, estimated before it starts (--max-memory)
//   numeric.c   element arithmetic of the vector, matrix and switch units
//   model.c     the model's inputs into SRAM before a run, its outputs checked after
//   reference.c what a correct program computes, from the graph alone
//   npy.c       NumPy .npy files in and out (--input, --dump)
//   trace.c     Chrome trace JSON that Perfetto opens (--trace)
//   fault.c     link errors and FEC, dead cables and devices, software replay
//               (--ber, --inject, --fail-link, --fail-device, --replay)
//
// The runtime reads only files.  It may use the frontend to read the
// topology (and the graph, for reference evaluation), never the passes or
// the backend: it must never trust the compiler.
#ifndef TSPC_EMU_H
#define TSPC_EMU_H

#include "../frontend/frontend.h"

#include <math.h>

// ===== loader.c =============================================================

// Decodes and checks one devNNNN.tsp.  `topo` may be NULL (tsp-objdump):
// then ports and SRAM ranges are not checked against a device.  On failure
// returns false with "byte N: what is wrong" in err.
bool emu_decode_binary(Arena *a, const unsigned char *data, size_t n, int expect_device,
                       const Topology *topo, DeviceProgram *out, int *ndevices, char *err,
                       size_t errlen);
// The vectors a home spans from its addr through its layout: packed,
// ceil(bytes / vector_bytes); with a pitch P, (rows - 1) P + ceil(C /
// per) for rows of C elements.  UINT64_MAX when that overflows.
uint64_t emu_home_vectors(const TensorHome *th, int vector_bytes);
// The most inferences in flight (the manifest's `batches:`) tsp-emu runs:
// tsp-as's limit, which tspc --batches keeps to.  Each batch but 0 costs a
// Reference of its own (reference.c) and a pass over its homes.
#define EMU_MAX_BATCHES FE_MAX_BATCHES
// Reads a whole file for emu_decode_binary; NULL with the reason in err.
unsigned char *emu_read_file(const char *path, size_t *n, char *err, size_t errlen);

// What an output directory holds, loaded and checked.
typedef struct EmuInput {
  const char *tool;  // names the tool in errors ("tsp-emu", "tsp-objdump")
  const char *dir;
  Topology *topo;    // DIR/topology.yaml
  Program *prog;     // every devNNNN.tsp, tensors and predicted_cycles from the manifest
  const char **binaries;  // the file each device runs, as the manifest names it
  const char *model;      // the manifest's `model:`, a file in DIR (NULL: none)
  Graph *graph;           // DIR/model parsed and checked for topo (NULL: no model)
  const Tensor **home_tensor;  // with a graph, by index in prog->tensors: the tensor it holds
} EmuInput;

// Loads DIR (manifest.yaml, topology.yaml, the model, the binaries).  With
// a model, every manifest tensor must be a tensor of the graph, of its
// dtype and shape (a shard: of a tensor the partitioner places, of its
// dtype and rank, its box inside its shape), on a device that holds a
// copy, a param in batch 0 (prog->batches, each home's batch: 1 and 0
// without the manifest's `batches:` and `batch:`).  False after reporting
// what is unusable, naming the file and the byte or line (errors that name
// no line begin with `tool`).
bool emu_load_dir(Arena *a, Diag *d, const char *tool, const char *dir, EmuInput *in);
// The manifest alone, from its text (tests, fuzzing): for in->topo (set),
// with the model read from in->dir; sets in->prog (its tensors and
// predicted_cycles, no binaries decoded), binaries, model and graph.
bool emu_read_manifest(Arena *a, Diag *d, const SrcFile *src, EmuInput *in);

// ===== emu.c: the emulator ====================================================
//
// Time: a global clock of TICKS_PER_CYCLE ticks a reference cycle.  Device d
// starts its program at start_d and runs local cycle L at start_d + L *
// period_d, period_d = TICKS_PER_CYCLE / (1 + drift_d).  HAC epoch
// boundaries are global (the HAC is aligned across devices); the SAC counts
// local cycles.  docs/isa.md states every timing rule the emulator applies.

#define EMU_TICKS_PER_CYCLE (1 << 20)
// Defaults of the options below (named, documented settings).
#define EMU_DEFAULT_MAX_CYCLES ((int64_t)1 << 40)
#define EMU_DEFAULT_MAX_LISTED 50
// Events between two looks at the clock for the progress line.
#define EMU_PROGRESS_EVENTS 65536
// Cycles from an instruction reading its sources to its result landing:
// part of the ISA contract (ir/ir.h), which the schedulers plan with.
#define EMU_VXM_LATENCY ISA_VXM_LATENCY
#define EMU_MXM_LATENCY ISA_MXM_LATENCY
#define EMU_SXM_LATENCY ISA_SXM_LATENCY
// Cycles from NOTIFY to the parked units (and the notifier) issuing again.
#define EMU_NOTIFY_LATENCY 1
// The most vectors one port may hold (in flight to it or waiting): far past
// any buffer (rx_buffer_vectors) and any link's latency / cycles a vector,
// so only a run that already overflowed reaches it; it is then stopped.
#define EMU_MAX_QUEUED_VECTORS (1 << 16)
// The most threads (--threads) a run's windows use.
#define EMU_MAX_THREADS 256
// The largest vector the emulator handles (a multiple of 4 bytes).
#define EMU_MAX_VECTOR_BYTES 1024

typedef struct Reference Reference;  // reference.c, below
typedef struct Faults Faults;        // fault.c, below

typedef struct EmuOptions {
  uint64_t seed;           // jitter, drift and skew draws
  uint64_t data_seed;      // the model's seeded inputs (ref holds it; reported)
  Reference *ref;          // the model's values: outputs are checked against it (NULL: none)
  Reference *const *batch_ref;  // with Program.batches > 1, each batch's (batch_ref[0] == ref; ref_new_batch)
  bool jitter;             // off: every vector takes its link's max latency
  double drift_ppm;        // each device's clock off by a seeded value in +-drift_ppm
  const double *device_drift_ppm;  // or exactly these, one per device (the topology's list)
  int64_t start_skew;      // devices start up to this many cycles apart (seeded)
  int64_t max_cycles;      // a run longer than this is a hang
  int max_listed;          // violations listed (all are counted)
  const char *trace_path;  // NULL: no trace
  int64_t trace_max_vectors;
  Faults *faults;          // link errors, dead cables and devices (NULL: none); kept across replays
  Progress *progress;      // the progress line on a terminal (NULL: none)
  int threads;             // threads the run's windows use (0: the cores available; window.c)
  bool no_bursts;          // every element of every stream an event of its own (--bursts off; burst.c)
} EmuOptions;

// kind           spelling        what went wrong
#define EMU_VIOLATIONS(X)                                                 \
  X(PORT_BUSY, "port-busy")    /* a SEND/RECV while the port is busy   */ \
  X(UNDERFLOW, "underflow")    /* a RECV wants a vector not yet there  */ \
  X(OVERFLOW, "overflow")      /* arrivals beyond the receive buffer   */ \
  X(SRAM, "sram-hazard")       /* read before the write lands          */ \
  X(LEFTOVER, "leftover")      /* data never received                  */ \
  X(HANG, "hang")              /* units never halted, SYNC never woken */ \
  X(DEAD_LINK, "dead-link")    /* a SEND over a failed link            */ \
  X(DATA, "wrong-data")        /* results differ from what was expected */ \
  X(TIME, "wrong-time")        /* cycles differ from the prediction    */ \
  X(WEIGHT, "weight-hazard")   /* an MXM weight buffer used unready    */ \
  X(LINK_ERROR, "link-error")  /* FEC detected what it cannot correct  */ \
  X(DEAD_DEVICE, "dead-device") /* a device that died during the run   */

typedef enum {
#define X(e, name) VIOL_##e,
  EMU_VIOLATIONS(X)
#undef X
  VIOL_COUNT
} ViolationKind;

extern const char *const emu_violation_names[VIOL_COUNT];

typedef struct Violation {
  ViolationKind kind;
  int device;          // -1: the whole system
  char unit[16];       // "" when no unit is involved
  int port;            // -1 when no port is involved
  int64_t cycle;       // the device's local cycle (global cycle when device < 0)
  const char *message;
} Violation;

// UNTRUSTED: the outputs match, but a fault corrupted or lost vectors during
// the run (a detected link error, a dead cable or device): nothing vouches
// for them.
typedef enum { DATA_UNCHECKED, DATA_VERIFIED, DATA_MISMATCH, DATA_UNTRUSTED } DataStatus;

// One output of the model as checked (model.c): over all of its homes, the
// largest |got - want| / tolerance (0 when every byte matched; +inf for a
// difference where the tolerance is 0) and the elements beyond tolerance.
typedef struct OutputCheck {
  const char *name;
  double max_ratio;
  int64_t beyond;
} OutputCheck;

typedef struct EmuResult {
  int64_t cycles;          // from the first program start to the last thing that happens
  int64_t predicted;       // -1: none
  int64_t vectors_moved;   // vectors taken by a RECV
  int64_t nviolations;     // all of them
  VEC(Violation) listed;   // the first max_listed
  DataStatus data;
  bool model_checked;      // outputs were checked against the model (the summary says how)
  bool deterministic;      // jitter off, no drift, no skew: time is checked
  int ndevices;
  double *drift_ppm;       // each device's clock error, as drawn from the seed
  int64_t *start;          // each device's program start, in global cycles
  int noutputs;            // the model's outputs, as checked (in the run's arena)
  OutputCheck *outputs;
  const Topology *topo;    // the system run (the report's links:)
  int64_t *link_vectors;   // by link direction, 2 l + (from != link l's a): vectors that left on it
} EmuResult;

typedef struct Emu Emu;

Emu *emu_new(Arena *a, const EmuInput *in, const EmuOptions *opt, char *err, size_t errlen);
// (model.c) Writes every home of an input or param of the model (opt->ref)
// before the run: its values from the reference (a shard: those of its
// box), the vectors marked written and landed, the last vector's tail zero.
void emu_seed_model(Emu *e);
// (model.c) Whether every input and param of the model has, in every
// batch, the homes the model places (on every device of its group, ref's;
// a tensor the partitioner places: homes that cover it), so that
// emu_seed_model can seed it; if not, why, into err (a manifest that
// leaves a copy out would otherwise show as reads of what nothing wrote).
bool model_inputs_homed(const EmuInput *in, const Reference *ref, char *err, size_t errlen);
// (model.c) Writes a home's elements (ir_shape_elems x dtype bytes,
// row-major, packed) into its vectors through its layout (TensorHome.pitch)
// before the run (--input): the vectors marked written and landed, lanes
// past the data zero.  False with the reason when it leaves the SRAM.
bool emu_write_home(Emu *e, const TensorHome *th, const void *data, char *err, size_t errlen);
// (model.c) Reads a home's elements out through its layout after the run
// (--dump): packed row-major; never-touched vectors read as zero.
bool emu_read_home(Emu *e, const TensorHome *th, void *data, char *err, size_t errlen);
// (model.c) Whether homes hs[0 .. n) of a tensor of shape `whole` (whole
// homes, or shards of it) leave an element of it in none of them: the
// first such (row-major) into idx[0 .. whole->rank).
bool emu_uncovered(const TensorHome *const *hs, int n, const Shape *whole, int64_t *idx);
// (model.c) A tensor of shape `whole` from its homes hs[0 .. n) (n >= 1,
// of one dtype) after the run (--dump), malloc'd: each home's elements
// (emu_read_home) in its box, the first listed winning where boxes
// overlap.  NULL with the reason when the homes leave an element uncovered
// (emu_uncovered: "tensor 'y' is not covered: element [0, 4] is in no
// home", "tensor 'y' (batch 1) is ..." for homes of a batch but 0) or one
// leaves the SRAM.
uint8_t *emu_read_whole(Emu *e, const TensorHome *const *hs, int n, const Shape *whole, char *err, size_t errlen);
// (model.c) The reverse before the run (--input without a model): each
// home gets the elements of its box (emu_write_home).
bool emu_write_whole(Emu *e, const TensorHome *const *hs, int n, const Shape *whole, const void *data, char *err,
                     size_t errlen);
// (model.c) The report's `outputs:` (each output's largest error/tolerance
// ratio), after emu_write_report; nothing when no output was checked.
void emu_write_data_report(const EmuResult *r, FILE *out);
// Overwrites a named tensor's vectors before the run (packed layout only).
bool emu_write_tensor(Emu *e, const TensorHome *th, const void *data, char *err, size_t errlen);
// Copies a named tensor out after the run (--dump); data holds its bytes.
bool emu_read_tensor(Emu *e, const TensorHome *th, void *data, char *err, size_t errlen);
void emu_run(Emu *e, EmuResult *r);
// The threads a run uses by default: the cores this process may run on
// (sched_getaffinity; else the cores online), at most EMU_MAX_THREADS.
int emu_default_threads(void);
// Finishes the trace file, if any: false if any of it failed to write.
bool emu_close_trace(Emu *e);
// Vectors that crossed a link in the run, and how many of them the trace
// drew as arrows (at most --trace-max-vectors; 0 and 0 without a trace).
void emu_trace_arrows(const Emu *e, uint64_t *crossed, uint64_t *drawn);
void emu_free(Emu *e);

// ---- report.c ----
// The violations, the faults' lines (fault_print; opt->faults may be NULL),
// the summary line and the data verdict.
void emu_print_summary(const EmuResult *r, const EmuOptions *opt, int ndevices, FILE *out);
// The report: status, cycles, the run's settings, clocks, violations, and
// every link direction's measured load (links:, as tspc --emit=links
// writes links.yaml: vectors, busy_cycles = vectors x the link's cycles per
// vector, utilisation = busy_cycles / cycles).
void emu_write_report(const EmuResult *r, const EmuOptions *opt, int ndevices, FILE *out);

// ===== sram.c: sparse SRAM ===================================================
//
// Pages of EMU_SRAM_PAGE_VECTORS vectors appear when first touched.  Each
// vector carries when its last write lands and whether anything wrote it.

#define EMU_SRAM_PAGE_VECTORS 64
// A stream stays on one page for 64 vectors, and a device runs a few streams
// at once: a small direct-mapped cache of pages skips most hash lookups.
#define EMU_SRAM_RECENT 8
// Pages are carved from slabs of whole multiples of this many (a page's
// bytes are a multiple of 64, so a slab is whole 4 KiB system pages).
#define EMU_SRAM_SLAB_PAGES 64

typedef struct SramPage SramPage;
typedef struct SramSlot SramSlot;
typedef struct SramSlab SramSlab;
typedef struct Sram {
  int vector_bytes;
  SramSlot *slots;  // open addressing by page number
  uint32_t nslots, npages;
  uint32_t recent_number[EMU_SRAM_RECENT];  // recently touched pages, by page number mod EMU_SRAM_RECENT
  SramPage *recent[EMU_SRAM_RECENT];
  uint8_t *next, *end;  // the newest slab's room for pages
  SramSlab *slabs;
  uint32_t nslabs, slabs_cap;
  size_t sys_page;      // the system's page size
  bool populate;        // new pages are faulted in with one call (the kernel takes MADV_POPULATE_WRITE)
} Sram;

// A stream's place in one SRAM: the page it touched last.  A stream walks
// through consecutive vectors, so through its cursor it looks each page up
// once, whatever other streams of the device touch in between.
typedef struct SramCursor {
  SramPage *page;   // NULL: none yet
  uint32_t number;  // its page number (kept here: the page's header may be out of the cache)
} SramCursor;

void sram_init(Sram *s, int vector_bytes);
// The vector at addr, creating its page (zeroed, unwritten) if needed.
uint8_t *sram_vector(Sram *s, uint32_t addr, int64_t **lands, bool **written);
// The same without creating anything: NULL when the page was never touched.
uint8_t *sram_peek(Sram *s, uint32_t addr, int64_t **lands, bool **written);
// sram_vector and sram_peek through a cursor (c NULL: none), which they
// move to the page of addr.
uint8_t *sram_vector_at(Sram *s, SramCursor *c, uint32_t addr, int64_t **lands, bool **written);
uint8_t *sram_peek_at(Sram *s, SramCursor *c, uint32_t addr, int64_t **lands, bool **written);
// Starts fetching vector addr and what it carries into the cache, for a
// stream that reads it a few cycles later, so that the read does not wait
// on memory.  (A stream that writes vectors needs none: sram_stream_vector.)
void sram_prefetch(Sram *s, SramCursor *c, uint32_t addr);
// Copies a whole vector into SRAM by streaming stores, past the cache (a
// received vector).  Another thread sees them after this thread's
// sram_stream_fence and a barrier.
void sram_stream_vector(uint8_t *dst, const uint8_t *src, int bytes);
void sram_stream_fence(void);
// Creates the pages of vectors addr .. addr + n that do not exist yet,
// together (a tensor about to be written whole).
void sram_make(Sram *s, uint32_t addr, uint32_t n);
// Vectors addr .. addr + *n as one run of bytes, written and landing at
// tick `lands` (their page created if needed): *n is cut at the end of the
// page, and the run's vector_bytes x *n bytes are the caller's to fill.
uint8_t *sram_write_run(Sram *s, uint32_t addr, uint32_t *n, int64_t lands);
// Vectors addr .. addr + *n as one run of bytes to read, *n cut at the end
// of the page and before the first vector never written (0 and NULL when
// addr itself was never written).
const uint8_t *sram_read_run(Sram *s, uint32_t addr, uint32_t *n);
void sram_free(Sram *s);
// The bytes one page costs (its vectors and what each carries, to a cache line).
size_t sram_page_bytes(int vector_bytes);

// ===== memory.c: the memory a run needs, before it starts =====================
//
// The SRAM pages of every vector the program can write (its records, the
// manifest's tensor homes, the destinations of RECV and of the compute
// units' ops), each device's state, and EMU_MEMORY_BASE_BYTES for the rest
// of the process (the loaded program, the event queue, the reference's
// blocks), and with a model the reference's dense arrays.  tsp-emu refuses a run whose estimate is over --max-memory
// (default EMU_DEFAULT_MEMORY_PERCENT percent of the machine's memory).

#define EMU_MEMORY_BASE_BYTES (64ull << 20)
#define EMU_DEFAULT_MEMORY_PERCENT 90

typedef struct EmuMemory {
  int rank, nranks;                 // the rank of nranks whose figure this is (the largest)
  int ranks_to_fit;                 // over the limit: the fewest ranks that would fit (0: none would)
  int devices;
  uint64_t sram_pages, sram_bytes;  // the pages the program can write, and their bytes
  uint64_t buffer_bytes;            // the units' buffers beside the SRAM: weight buffers, MXM and TRANS copies
  uint64_t device_bytes;            // every device's own state and its loaded program
  uint64_t reference_bytes;         // the references' dense arrays (ref_dense_bytes: batch 0's and the
                                    //   largest other batch's) and the largest
                                    //   cholesky factor check (3 p^2 doubles)
  uint64_t total;                   // the estimate: all of the above plus EMU_MEMORY_BASE_BYTES
} EmuMemory;

// refs[0 .. nrefs): the model's references (batch 0's, then each batch's),
// whose dense arrays the estimate counts (none without a model).  The
// largest rank's figure across the run's MPI ranks (the process's when
// there is one); over `limit` bytes, also the fewest ranks that would fit.
EmuMemory emu_memory_estimate(const EmuInput *in, Reference *const *refs, int nrefs, uint64_t limit);
// The machine's physical memory in bytes (0: unknown).
uint64_t emu_machine_memory(void);

// ===== reference.c: what a correct compiled program must produce ============
//
// The value of any element of any tensor's copy on any device, computed
// from the graph alone, rounded to the tensor's dtype after every op as the
// hardware stores it (each op computes in double from its operands' stored
// values and rounds once).  Inputs and params are seeded (tsp-emu
// --data-seed): every element is -1, 0 or 1, so a sum over a group is exact
// in f16 up to 2048 devices, in bf16 up to 256 and in f32 up to 2^24,
// whatever order a schedule adds in; or they are given (--input), the same
// on every device or one device's copy at a time.  Inputs, collectives and
// element-wise ops are computed lazily a block at a time; what is read out
// of order (matmul, softmax, layernorm, reduce_*, transpose, slice and
// concat results and their operands) is materialised once per (tensor,
// device), matmul with cblas_dgemm.
//
// Several inferences in flight (the manifest's `batches:`): batch 0's
// reference is ref_new's, exactly as with one batch; batch b's is
// ref_new_batch's, its inputs seeded with b too (REF_BATCH_SEED_STEP,
// docs/isa.md section 5, Batches) or given to it, its params batch 0's.
// Every tensor that depends on no input (params, and what is computed
// from params alone) has one value for all batches, held and materialised
// by batch 0's reference alone.

Reference *ref_new(const Graph *g, const Topology *t, uint64_t seed);
// Batch `batch`'s reference (batch > 0) from batch 0's, `base`, which it
// borrows: base's given values are final by then (every ref_set_input on
// base comes first), and base outlives it (ref_free it first).  Values of
// tensors that depend on no input are base's, computed by base.
Reference *ref_new_batch(Reference *base, int batch);
// The bytes of the dense arrays r itself holds (a batch's: those of the
// tensors that depend on an input only).
size_t ref_held_bytes(const Reference *r);
// With several inferences in flight, frees the dense arrays and kept
// blocks of r's tensors that an input reaches (batch 0's keeps the rest,
// which every batch shares); they are computed again if asked for
// (model.c, after seeding or checking a batch: the memory of one
// inference at a time).  A lone reference keeps them.
void ref_forget(Reference *r);
// Gives input or param t these values instead of seeded ones, on every
// device: ir_tensor_bytes(t) bytes, row-major, little-endian elements of
// t's dtype (copied).  On a batch's reference, inputs only (params are
// batch 0's).
void ref_set_input(Reference *r, const Tensor *t, const void *data);
// The same for t's copy on `device` alone (an @ each tensor): it wins over
// ref_set_input's values there; other devices keep theirs.
void ref_set_input_on(Reference *r, const Tensor *t, int device, const void *data);
// Element `elem` (row-major) of tensor t's copy on `device` (any device for a
// tensor with one copy).
double ref_value(Reference *r, const Tensor *t, int device, int64_t elem);
// Elements first .. first + n of t's copy on `device` into out: the same
// values as ref_value, a block at a time.
void ref_block(Reference *r, const Tensor *t, int device, int64_t first, int64_t n, double *out);
// The same as t's dtype stores them (n x its bytes, little-endian) when t
// is seeded, an input or param given no values (and no cholesky's
// operand): straight from the seed, the same bytes ref_block's values
// store.  False, out untouched, for any other tensor (n 0: whether t is seeded).
bool ref_seeded_bytes(const Reference *r, const Tensor *t, int device, int64_t first, int64_t n, uint8_t *out);
// The value of an input or param element, seeded or given (what tsp-emu
// loads): exact in t's dtype.
double ref_input(const Reference *r, const Tensor *t, int device, int64_t elem);
// Whether t has the same value on every device holding a copy: false for
// an @ each input or param (unless given as a whole), a reduce_scatter
// result, and what is computed from one of those other than through
// allreduce or all_gather (which read every copy, whichever device asks).
bool ref_same_on_every_device(const Reference *r, const Tensor *t);
// The devices holding a copy of an @ each tensor, ascending (its group).
int ref_group(const Reference *r, const Tensor *t, const int **devices);
// The most bytes r's dense arrays (the operands and results of the ops read
// out of order: matmul, softmax, ...) take once all are computed: one array
// of doubles per tensor, one per device of its group when it varies (a
// batch's reference: the tensors it holds itself); and its lazy blocks' at
// most: REF_BLOCK_ELEMS doubles for each level of its deepest chain of lazy
// ops and for each shared tensor's memo.  The memory estimate's: all of
// them, those of the tensors no input reaches (with batch 0's blocks), or
// those of one inference's (with a later batch's blocks).
typedef enum RefArrays { REF_ARRAYS_ALL, REF_ARRAYS_SHARED, REF_ARRAYS_INFERENCE } RefArrays;
uint64_t ref_dense_bytes(const Reference *r, RefArrays which);
// The tolerance (docs/isa.md section 5, Data checks), from the graph
// alone: G(t), the growth factor (0 for inputs and params; for a result
// the operands' largest plus what its op adds), and the largest error
// allowed for an element of t whose reference value is want when the
// copy's reference values have root mean square rms:
// G(t) x (atol + rtol x max(|want|, rms)), 0 for integer dtypes.
int ref_growth(const Reference *r, const Tensor *t);
// The tolerance's floor for a copy of t on `device` as a magnitude of t's
// dtype, next to its rms (docs/isa.md, Data checks): E(t) / rtol(t),
// where E(t) is the rounding error t carries from the sums it comes from:
// the coarsest rounding involved (the dtype the device adds in, the
// terms' own, and for matmul t's dtype) x sqrt(n) x the magnitude of the
// terms of a sum of n (reduce_sum, matmul, a collective's sum), carried
// through the ops that add, multiply or move values; 0 for an input or
// param, and for integers.  A sum that cancels to near 0 still carries
// its terms' rounding errors.  Computed when first asked (each tensor's
// rms and E read through the reference once a copy), kept until the
// inputs change.
double ref_sum_floor(Reference *r, const Tensor *t, int device);
double ref_tolerance(const Reference *r, const Tensor *t, double want, double rms);
// The same in parts, for a loop over many elements of one tensor:
// ref_tolerance_at(ref_tolerance_of(r, t), want, rms) is ref_tolerance.
typedef struct RefTolerance {
  double growth, atol, rtol;  // G(t) and the dtype's parts (rtol 0: an integer dtype, exact)
} RefTolerance;
RefTolerance ref_tolerance_of(const Reference *r, const Tensor *t);
static inline double ref_tolerance_at(RefTolerance tl, double want, double rms) {
  if (tl.rtol == 0) return 0;
  double mag = fabs(want) > rms ? fabs(want) : rms;
  return tl.growth * (tl.atol + tl.rtol * mag);
}
void ref_free(Reference *r);

// ===== numeric.c ============================================================
//
// Elements live in vectors as little-endian values of their dtype.  Floats
// compute in float (f32) and round to nearest even into f16 and bf16;
// integers wrap (two's complement).  NaN propagates.  docs/isa.md section 2
// states every instruction's numerics; numeric.c says how each is done.

float num_f16_to_f32(uint16_t h);
uint16_t num_f32_to_f16(float f);
float num_bf16_to_f32(uint16_t h);
uint16_t num_f32_to_bf16(float f);

// Element i of a vector as a double, and the reverse (rounded / wrapped).
double num_get(DType dt, const uint8_t *vec, int i);
void num_set(DType dt, uint8_t *vec, int i, double v);
// num_set of v[0 .. n) into elements 0 .. n of out (f32 a vectorised pass).
void num_set_all(DType dt, uint8_t *out, const double *v, int64_t n);
// The least magnitude float dtype dt rounds to infinity (65520 for f16);
// +inf for an integer dtype.
double num_overflow_bound(DType dt);

// The vector unit's element operations.
typedef enum { NUM_ADD, NUM_SUB, NUM_MUL, NUM_DIV, NUM_MAX } NumBinaryOp;
typedef enum { NUM_RELU, NUM_EXP, NUM_ERF, NUM_RSQRT, NUM_RECIP } NumUnaryOp;

// dst = a op b element by element over one vector of vector_bytes; with
// num_vscalar, dst = a op s, s = element 0 of vector s.  dst may alias a or b.
void num_vbinary(NumBinaryOp op, DType dt, uint8_t *dst, const uint8_t *a, const uint8_t *b, int vector_bytes);
void num_vscalar(NumBinaryOp op, DType dt, uint8_t *dst, const uint8_t *a, const uint8_t *s, int vector_bytes);
// dst = f(a): relu on any dtype; exp, erf, 1/sqrt, 1/x on floats only.
void num_vunary(NumUnaryOp op, DType dt, uint8_t *dst, const uint8_t *a, int vector_bytes);
// The three of the first vector unit: num_vbinary ADD and MAX, num_vunary RELU.
void num_vadd(DType dt, uint8_t *dst, const uint8_t *a, const uint8_t *b, int vector_bytes);
void num_vmax(DType dt, uint8_t *dst, const uint8_t *a, const uint8_t *b, int vector_bytes);
void num_vrelu(DType dt, uint8_t *dst, const uint8_t *a, int vector_bytes);
// VCVT: element j of src (dtype from) into element i of dst (dtype to).
void num_convert(DType to, uint8_t *dst, int i, DType from, const uint8_t *src, int j);

// VRSUM / VRMAX: start, add the first `count` elements of each vector in
// order, then fill every element of a vector with the result.  A float sum
// is pairwise (docs/isa.md, VRSUM): part[l] holds the f32 sum of the last
// complete aligned block of 2^l elements while bit l of n is set.  An
// instruction's elems is 32 bits, so 33 levels hold any count.
#define NUM_PAIRWISE_LEVELS 33
typedef struct NumReduction {
  DType dt;
  bool is_max;
  float f;    // floats: the maximum so far
  int64_t i;  // integers: the sum modulo 2^64, or the maximum
  uint64_t n; // float sums: elements added so far
  float part[NUM_PAIRWISE_LEVELS];
} NumReduction;
void num_reduce_start(NumReduction *r, DType dt, bool is_max);
void num_reduce_add(NumReduction *r, const uint8_t *vec, int count);
void num_reduce_fill(const NumReduction *r, uint8_t *dst, int vector_bytes);

// The matrix unit.  num_mxm_init runs OpenBLAS on one thread (once, before
// any product: results then depend on no thread count, only on the
// kernels OpenBLAS runs on this host).  num_to_doubles
// widens elements first .. first + count - 1 of a vector exactly.
// num_mxm_product: out[r][j] = sum_{i < kk} act[r][i] * w[i][j] for r < rows,
// j < nn, row-major with the strides given (cblas_dgemm).  num_mxm_store
// rounds one output row of `cols` values into the accumulation dtype (f32;
// i32 for i8) in `nbytes` bytes of out, adding the old accumulator values
// in `old` for MXMA (NULL for MXM).
void num_mxm_init(void);
// Before anything else (tsp-emu's main): restarts the program with
// OPENBLAS_CORETYPE set when OpenBLAS fell back to its Prescott kernels on
// a CPU with AVX2 and FMA (an unknown model: numeric.c says why); returns
// otherwise.
void num_blas_prefer_cpu_kernels(char **argv);
void num_to_doubles(DType dt, const uint8_t *vec, int first, int count, double *out);
void num_mxm_product(int rows, int kk, int nn, const double *act, int act_stride, const double *w,
                     int w_stride, double *out, int out_stride);
void num_mxm_store(DType dt, const double *product, int cols, const uint8_t *old, uint8_t *out, int nbytes);

// ===== npy.c ================================================================
//
// NumPy format 1.0/2.0 files of a C-order array.  Accepted dtypes: <f4 <f2
// <i4 |i1.  NumPy has no bf16: callers read and write bf16 tensors as <f4
// and convert (tools/tsp-emu.c does).

typedef struct NpyArray {
  char descr[8];   // "<f4", "<f2", "<i4", "|i1"
  Shape shape;
  void *data;      // malloc'd, little-endian, C order
  size_t bytes;
} NpyArray;

bool npy_read(const char *path, NpyArray *out, char *err, size_t errlen);
// The same from n bytes in memory (tests, fuzzing); NAME prefixes messages.
bool npy_parse(const char *name, const void *data, size_t n, NpyArray *out, char *err,
               size_t errlen);
bool npy_write(const char *path, const char *descr, const Shape *shape, const void *data,
               char *err, size_t errlen);
void npy_free(NpyArray *a);
// A shape as Python prints the tuple: "(5,)", "(3, 4)".
void npy_format_shape(char *dst, size_t n, const Shape *s);

// ===== trace.c ==============================================================
//
// Chrome trace event JSON ({"traceEvents": [...]}) written as the run goes:
// a process per device, a thread per unit, a complete ("X") event per
// instruction and a flow arrow ("s" -> "f") per vector crossing a link.
// Times are given in cycles and written in microseconds at clock_mhz.

typedef struct Trace Trace;

Trace *trace_open(const char *path, double clock_mhz, char *err, size_t errlen);
void trace_name_process(Trace *t, int pid, const char *name);
void trace_name_thread(Trace *t, int pid, int tid, const char *name);
void trace_slice(Trace *t, int pid, int tid, const char *name, int64_t start, int64_t dur);
void trace_flow(Trace *t, uint64_t id, int pid0, int tid0, int64_t t0, int pid1, int tid1,
                int64_t t1);
bool trace_close(Trace *t);  // false if anything failed to write

// ===== fault.c: link errors, FEC, dead cables and devices, replay ==========
//
// Seed 002 s4.5: every link runs forward error correction, which corrects a
// single-bit error in place (no retry, so no change in timing) and detects
// multi-bit errors; on a detected error the runtime replays the whole
// program (software replay) to tell a transient fault from a persistent one
// (a cable, power supply or card to replace).  The model (docs/isa.md,
// Faults): one SEC-DED codeword per vector as it is on the wire
// (wire_bytes x 8 bits; the check bits ride in the wire_bytes - vector_bytes
// beyond the payload): 1 flipped bit is corrected, 2 or more are detected
// (the seed's "detect all multi-bit errors").  A Faults object lives across
// the runs of one tsp-emu invocation: --ber draws go on from run to run, an
// --inject fires once, --fail-link and --fail-device strike every run.

#define FAULT_DEFAULT_REPLAYS 1   // --replay: runs after the first on a fault
#define FAULT_MAX_REPLAYS 100     // --replay's largest value
#define FAULT_MAX_SPECS 64        // --inject, --fail-link and --fail-device given, in all
#define FAULT_MAX_CYCLE ((int64_t)1 << 42)  // the largest @CYCLE (as --max-cycles)
#define FAULT_MBE_BITS 2          // bits an --inject mbe flips (an sbe: 1)
#define FAULT_MAX_RECORDED 1000   // detected errors listed in the report (all are counted)

typedef enum { FAULT_INJECT_SBE, FAULT_INJECT_MBE, FAULT_FAIL_LINK, FAULT_FAIL_DEVICE } FaultKind;

// One --inject, --fail-link or --fail-device as given.
typedef struct FaultSpec {
  FaultKind kind;
  int a, b;          // the devices (a -> b for --inject: the direction hit); FAIL_DEVICE: a
  int64_t cycle;     // a global cycle (every device's local cycle without drift and skew)
  const char *arg;   // the value as given, for messages
} FaultSpec;

// Reads an option's value: sbe:A-B@CYCLE or mbe:A-B@CYCLE (--inject),
// A-B@CYCLE (--fail-link), N@CYCLE (--fail-device).  False with the
// reason in err (the syntax; devices are checked by fault_new).
bool fault_parse(FaultKind kind, const char *arg, FaultSpec *out, char *err, size_t errlen);
// The faults of a run on t: a bit error rate in [0, 1] on every link, the
// specs (their devices and cables checked against t: NULL with the reason
// in err), at most `replays` replays, draws seeded by `seed`.
Faults *fault_new(const Topology *t, double ber, const FaultSpec *specs, int nspecs, int replays,
                  uint64_t seed, char *err, size_t errlen);
// After a run: whether the hardware flagged a fault in it (a detected
// error, a cable or device that died): the runtime replays it, if it may.
bool fault_run_faulted(const Faults *f);
// Whether another run is allowed (runs so far <= replays).
bool fault_may_replay(const Faults *f);
// The lines tsp-emu prints before its summary: FEC counts, and what the
// replays made of a fault (transient, persistent: what to replace).
void fault_print(const Faults *f, FILE *out);
// The report's fault fields (fec_corrected, fec_detected, replays,
// faults, link_errors, detected_errors); zeros when f is NULL.
void fault_write_report(const Faults *f, FILE *out);
void fault_free(Faults *f);

// ---- ranks.c: the run across MPI ranks (bin/tsp-emu-mpi; docs/isa.md) ----
// Without MPI there is one rank and these do nothing.
void ranks_init(int *argc, char ***argv);
void ranks_end(void);
int ranks_me(void);
int ranks_count(void);
// Whether ok holds on every rank (each rank passes its own; a collective:
// every rank must call it).  What one rank alone checks before the run
// (rank 0's --report) must end the run on every rank, or the others wait.
bool ranks_all(bool ok);

#endif
