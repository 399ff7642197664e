// memory.c: what a run will cost in memory, known before it starts.  Part
// of runtime/; tools/tsp-emu.c asks for the estimate after loading an
// output directory and refuses a run whose figure is over --max-memory,
// rather than being killed by the kernel part way through.
//
// The SRAM (sram.c) costs a page for every EMU_SRAM_PAGE_VECTORS vectors
// anything writes, and only reads of what was written are legal, so the
// pages a run creates are those of the vectors its program can write: the
// .init and .expect records, the manifest's tensor homes (seeded or given
// before the run, compared after it), and the destinations of RECV and of
// every vector-, matrix- and switch-unit op.  The pages of a home are
// carved from slabs and faulted in together, a system page at a time, so
// a device may also hold the rest of the system page after each home's
// pages: one for each home, and one for the slab the last went into.  The
// estimate is that set of pages, device by device, plus what its units
// hold beside the SRAM (the matrix unit's weight buffers, an MXM's or a
// TRANS's working copy), plus each device's own state and its loaded
// program, plus the reference's dense arrays and lazy blocks
// (reference.c) and the largest cholesky factor check (model.c) when
// there is a model.  Across MPI ranks each rank holds
// its own devices' pages and all the rest: the figure is the largest
// rank's, which every rank computes alike (so all refuse together), and a
// run that does not fit is told how many ranks would hold it.
#include "emu_internal.h"

#include <stdlib.h>
#include <unistd.h>

// A range of vectors [first, end) a device may write.
typedef struct Span {
  uint64_t first, end;
} Span;

typedef struct Spans {
  Span *s;
  size_t n, cap;
} Spans;

static void add_span(Spans *sp, uint64_t first, uint64_t count) {
  if (count == 0) return;
  if (sp->n == sp->cap) {
    sp->cap = sp->cap ? 2 * sp->cap : 64;
    sp->s = xrealloc(sp->s, sp->cap * sizeof *sp->s);
  }
  sp->s[sp->n++] = (Span){first, first + count};
}

// The vectors an instruction writes, from its first to past its last (a
// TRANS's strided destination counted whole).
static uint64_t written_vectors(const Instr *in, int vector_bytes) {
  switch ((Opcode)in->op) {
  case OPC_RECV: return in->b;
  case OPC_MXM: case OPC_MXMA: return (uint64_t)in->d * (uint64_t)isa_mxm_row_vectors((DType)in->dtype, vector_bytes);
  case OPC_TRANS: return ((uint64_t)isa_elems_per_vector((DType)in->dtype, vector_bytes) - 1) * in->d + 1;
  default: return (uint64_t)isa_dst_vectors(in, vector_bytes);
  }
}

static int cmp_span(const void *a, const void *b) {
  const Span *x = a, *y = b;
  return (x->first > y->first) - (x->first < y->first);
}

// Pages the spans touch, each counted once.
static uint64_t pages_of(Spans *sp) {
  if (sp->n == 0) return 0;  // a device that writes nothing (qsort takes no NULL array)
  qsort(sp->s, sp->n, sizeof *sp->s, cmp_span);
  uint64_t pages = 0, next = 0;  // pages below `next` are counted
  for (size_t i = 0; i < sp->n; i++) {
    uint64_t first = MAX(sp->s[i].first / EMU_SRAM_PAGE_VECTORS, next);
    uint64_t end = (sp->s[i].end + EMU_SRAM_PAGE_VECTORS - 1) / EMU_SRAM_PAGE_VECTORS;
    if (end > first) pages += end - first, next = end;
  }
  return pages;
}

// Adds the spans device `dev`'s records and instructions may write to sp.
static void device_spans(const EmuInput *in, int dev, int vector_bytes, Spans *sp) {
  const DeviceProgram *dp = &in->prog->devices[dev];
  for (int i = 0; i < dp->records.len; i++) add_span(sp, dp->records.data[i].addr, dp->records.data[i].nvec);
  for (int u = 0; u < dp->units.len; u++)
    for (int i = 0; i < dp->units.data[u].code.len; i++) {
      const Instr *ins = &dp->units.data[u].code.data[i];
      add_span(sp, ins->a, written_vectors(ins, vector_bytes));
    }
}

// The most the data check of a cholesky output holds at once after the
// run (model.c, check_factor): L, L L^T and the operand, p x p doubles each.
static uint64_t factor_check_bytes(const Graph *g) {
  uint64_t most = 0;
  for (int i = 0; g && i < g->outputs.len; i++) {
    const Tensor *t = g->outputs.data[i];
    if (!t->def || t->def->kind != OP_CHOLESKY) continue;
    uint64_t p = (uint64_t)t->shape.dim[0];
    most = MAX(most, 3 * p * p * sizeof(double));
  }
  return most;
}

// What each device will cost: the pages its program can write, the slabs
// whose last system page may be part used, and its units' buffers.
typedef struct DevicePages {
  uint64_t pages, slabs, buffer_bytes;
} DevicePages;

// The bytes device `dev`'s units hold beside the SRAM (emu.c): a weight
// buffer for each buffer its program installs into, and for each unit the
// most one of its streams holds (one MXM or TRANS runs on a unit at a time).
static uint64_t device_buffer_bytes(const EmuInput *in, int dev, int vector_bytes) {
  const DeviceProgram *dp = &in->prog->devices[dev];
  bool installed[ISA_MXM_BUFFERS] = {0};
  uint64_t bytes = 0;
  for (int u = 0; u < dp->units.len; u++) {
    uint64_t most = 0;
    for (int i = 0; i < dp->units.data[u].code.len; i++) {
      const Instr *ins = &dp->units.data[u].code.data[i];
      if ((ins->op == OPC_MXLW || ins->op == OPC_MXLWT) && ins->port < ISA_MXM_BUFFERS) installed[ins->port] = true;
      most = MAX(most, (uint64_t)emu_stream_scratch_bytes(ins, vector_bytes));
    }
    bytes += most;
  }
  for (int b = 0; b < ISA_MXM_BUFFERS; b++)
    if (installed[b]) bytes += emu_weight_buffer_bytes(vector_bytes);
  return bytes;
}

static DevicePages *device_pages(const EmuInput *in) {
  int vb = in->topo->link.vector_bytes, n = in->prog->ndevices;
  Spans *per = xcalloc((size_t)MAX(n, 1), sizeof *per);
  DevicePages *dp = xcalloc((size_t)MAX(n, 1), sizeof *dp);
  for (int i = 0; i < in->prog->tensors.len; i++) {  // the homes, then each device's program
    const TensorHome *th = &in->prog->tensors.data[i];
    if (th->device >= 0 && th->device < n) add_span(&per[th->device], th->addr, emu_home_vectors(th, vb));
  }
  for (int d = 0; d < n; d++) {
    uint64_t homes = per[d].n;  // before the program's spans join them
    device_spans(in, d, vb, &per[d]);
    dp[d].pages = pages_of(&per[d]);
    dp[d].slabs = dp[d].pages ? homes + 1 : 0;  // each home's slab and the newest
    dp[d].buffer_bytes = device_buffer_bytes(in, d, vb);
    free(per[d].s);
  }
  free(per);
  return dp;
}

// The loaded program of device d: its instructions, their notes (a debug
// section's) and its records.  (18 devices of 188,000 instructions each,
// 65 MiB, made a run's peak 6 % over an estimate that left them to
// EMU_MEMORY_BASE_BYTES.)
static uint64_t program_bytes(const DeviceProgram *dp) {
  uint64_t bytes = (uint64_t)dp->records.len * sizeof(DataRecord);
  for (int u = 0; u < dp->units.len; u++)
    bytes += sizeof(UnitProgram) + (uint64_t)dp->units.data[u].code.len * sizeof(Instr) +
             (uint64_t)dp->units.data[u].notes.len * sizeof(InstrNote);
  return bytes;
}

// The references' dense arrays at their most.  One inference: all of its
// reference's.  Several: what batch 0's keeps for every batch (the tensors
// no input reaches) and the largest one inference's, since batches are
// seeded and checked one after another and each forgets its own arrays
// when done (model.c, batch_done).  Summed over every batch, 48 BERT-Large
// encoders with 4 in flight were refused at 37 GB of arrays (20.8 GB with
// batch 0's own kept too).
static uint64_t reference_bytes(Reference *const *refs, int nrefs) {
  if (nrefs <= 1) return nrefs ? ref_dense_bytes(refs[0], REF_ARRAYS_ALL) : 0;
  uint64_t most = 0;
  for (int i = 0; i < nrefs; i++) most = MAX(most, ref_dense_bytes(refs[i], REF_ARRAYS_INFERENCE));
  return ref_dense_bytes(refs[0], REF_ARRAYS_SHARED) + most;
}

// What every rank holds whatever its devices: each device's own state and
// its loaded program, the references' arrays and the base.
static void fixed_costs(const EmuInput *in, Reference *const *refs, int nrefs, EmuMemory *m) {
  for (int d = 0; d < in->prog->ndevices; d++)
    m->device_bytes += sizeof(EDev) + (uint64_t)in->prog->devices[d].units.len * sizeof(EUnit) +
                       (uint64_t)in->topo->devices[d].nports * sizeof(EPort) + program_bytes(&in->prog->devices[d]);
  m->reference_bytes = reference_bytes(refs, nrefs);
  if (nrefs) m->reference_bytes += factor_check_bytes(in->graph);
}

// The rank of nranks that needs the most: each rank's devices
// (window_part_of's) summed in one pass, plus the fixed costs in `fixed`.
static EmuMemory largest_rank(const EmuInput *in, const DevicePages *dp, EmuMemory fixed, int nranks) {
  EmuMemory *per = xcalloc((size_t)nranks, sizeof *per);
  uint64_t *slabs = xcalloc((size_t)nranks, sizeof *slabs);
  for (int d = 0; d < in->prog->ndevices; d++) {
    int r = window_part_of(in->topo, in->prog->ndevices, nranks, d);
    per[r].sram_pages += dp[d].pages, slabs[r] += dp[d].slabs, per[r].buffer_bytes += dp[d].buffer_bytes;
    per[r].devices++;
  }
  long sys_page = sysconf(_SC_PAGESIZE);
  EmuMemory worst = {0};
  for (int r = 0; r < nranks; r++) {
    EmuMemory m = fixed;
    m.rank = r, m.devices = per[r].devices, m.sram_pages = per[r].sram_pages, m.buffer_bytes = per[r].buffer_bytes;
    m.sram_bytes = m.sram_pages * sram_page_bytes(in->topo->link.vector_bytes) +
                   slabs[r] * (uint64_t)(sys_page > 0 ? sys_page : 4096);
    m.total = m.sram_bytes + m.buffer_bytes + m.device_bytes + m.reference_bytes + EMU_MEMORY_BASE_BYTES;
    if (r == 0 || m.total > worst.total) worst = m;
  }
  free(per);
  free(slabs);
  return worst;
}

// The fewest ranks (up to one a device) whose every rank's estimate is at
// most `limit`; 0 when not even one device a rank fits.  Every count is
// tried in turn: the largest rank's figure does not always fall as ranks
// are added (ranks take runs of devices, and one more rank can put two
// heavy devices back together: 197, 197, 131, 197 MiB for 1 to 4 ranks of
// a mesh4x4 program with two big inputs on devices 5 and 6).
static int ranks_to_fit(const EmuInput *in, const DevicePages *dp, EmuMemory fixed, uint64_t limit) {
  int per = window_block_devices(in->topo), blocks = (in->prog->ndevices + per - 1) / per;  // more ranks hold nothing
  for (int k = 1; k <= MAX(blocks, 1); k++)
    if (largest_rank(in, dp, fixed, k).total <= limit) return k;
  return 0;
}

EmuMemory emu_memory_estimate(const EmuInput *in, Reference *const *refs, int nrefs, uint64_t limit) {
  DevicePages *dp = device_pages(in);
  EmuMemory fixed = {0};
  fixed_costs(in, refs, nrefs, &fixed);
  EmuMemory m = largest_rank(in, dp, fixed, ranks_count());
  m.nranks = ranks_count();
  if (m.total > limit) m.ranks_to_fit = ranks_to_fit(in, dp, fixed, limit);
  free(dp);
  return m;
}

uint64_t emu_machine_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}
