// backend.h: from the compiled IR to files.
//
//   manifest.c   manifest.yaml: what was compiled, for which topology, and
//                where every input, param and output tensor lives
//   binary.c     device programs -> devNNNN.tsp (the layout is in ir.h)
//   outdir.c     a whole output directory: topology copy, binaries, manifest
//   report.c     each collective's cycles against its lower bounds (--stats)
//   dot.c        each collective's rings or trees as a Graphviz picture (--emit=dot)
//   units.c      each device's busy cycles per unit, the matrix unit's utilisation (--stats)
//   trace.c      the compiled schedule as a Chrome/Perfetto trace (--emit=trace)
//   links.c      every link direction's load: links.yaml and links.svg (--emit=links)
//
// Instruction selection joins this layer with the schedule compiler.
#ifndef TSPC_BACKEND_H
#define TSPC_BACKEND_H

#include "../passes/passes.h"

// The manifest's format version; readers refuse versions they do not know.
#define BE_MANIFEST_VERSION 1

// What a compiled trace holds (trace.c): its slices, the vectors that
// cross a link, and how many of those it draws as arrows.
typedef struct TraceCounts {
  uint64_t slices, arrows, arrows_drawn;
} TraceCounts;


// What an output directory describes.
typedef struct ManifestInfo {
  const char *tool;         // "tspc", "tsp-as"
  const SrcFile *source;    // the .tg or .tsa it came from
  const Topology *topo;
  const Graph *graph;       // NULL when assembled by hand
  const Program *program;   // NULL when nothing was compiled
  const Dag *dag;           // the scheduled DAG behind program (tspc only)
  const SyncPlan *sync;     // its synchronisation plan (tspc only)
  const AlgoKind *algos;    // by op id: the algorithm each collective was lowered by
  bool emit_asm;            // also write devNNNN.tsa
  bool debug;               // give every binary its debug section (tspc -g)
  bool emit_dot;            // also write coll-NAME.dot for every collective (dot.c)
  bool emit_trace;          // also write trace.json (trace.c; tspc only)
  bool emit_links;          // also write links.yaml and links.svg (links.c; tspc only)
  uint64_t trace_max_arrows;  // with emit_trace: the most flow arrows drawn
  TraceCounts *trace_counts;  // with emit_trace: filled with what the trace holds (NULL: not wanted)
} ManifestInfo;

// ---- manifest.c ----
void be_write_manifest(const ManifestInfo *m, FILE *out);

// ---- binary.c ----
// Appends the binary of one device program to out; with debug, its debug
// section too (each unit's notes, UnitProgram.notes: cycle, note, .tg line; docs/isa.md).
void be_encode_device(const DeviceProgram *dp, int ndevices, bool debug, Buf *out);

// ---- report.c: how good each collective's schedule is ----
//
// Room for a cut's name ("ball(device(1048575),2047)" and the like).
#define REPORT_CUT_NAME_MAX 64
// The most group members the report runs a BFS from (for BFS-ball cuts and
// the group's diameter): a named limit on report time for big groups.
#define REPORT_MAX_BFS_SOURCES 1024

// The figures of one collective of a scheduled DAG, all in cycles but the
// ratios (docs/collectives.md, "Measuring a collective", defines each).
typedef struct CollectiveReport {
  const Op *op;
  AlgoKind algo;          // what lowered it
  int ngroup;             // N: the devices holding its operand
  int64_t bytes;          // D: the whole buffer on one device (an all_gather's result)
  int64_t start, finish;  // its first transfer or stage's start, its last one's finish
  int64_t cycles;         // finish - start
  int64_t volume;         // the volume bound
  int64_t cut;            // the cut bound, over the cut named cut_name
  int64_t latency;        // the latency bound: diameter x hop_latency + 1
  int64_t bound;          // the largest of the three, named by binding
  const char *binding;    // "volume", "cut" or "latency"
  char cut_name[REPORT_CUT_NAME_MAX];
  int diameter;           // hops between the group's farthest members
  int64_t hop_latency;    // the cheapest hop's latency_max plus the receive slack
  int link_directions;    // working link directions of the topology
  int64_t busy;           // link-direction cycles the op's routes hold
  int64_t held_until;     // when its last hold of a link ends (on a link slower than its
                          // latency a vector is taken before its link is free again)
  double efficiency;      // bound / cycles (1 when nothing took any cycle)
  double busbw_gbps;      // nccl-tests' bus bandwidth, GB/s (1e9 bytes)
  double link_util;       // busy / (link_directions x (MAX(finish, held_until) - start))
  int timesteps;          // the longest chain of the op's transfers
  int links_used;         // link directions its routes cross (of link_directions)
} CollectiveReport;

// By node id (malloc'd): each transfer's timestep, its depth in its op's
// DAG of transfers (1 ..: one more than the deepest transfer of the same op
// it waits for, directly or through a stage node); 0 for other nodes.
int *be_transfer_timesteps(const Dag *d);
// Fills out (room for every op of d's graph) with one report per
// collective, in op order; returns how many.  algos: by op id, what
// lowering chose (NULL: what each op asked for).
int be_collective_reports(const Topology *t, const Dag *d, const SyncPlan *s, const AlgoKind *algos,
                          CollectiveReport *out);
// One line: "collective NAME: KIND algo=A N=.. bytes=.. cycles=.. bound=.. (KIND) volume=.. cut=.. (CUT)
// latency=.. diameter=.. efficiency=.. busbw_gbps=.. link_util=.. timesteps=..
// links_used=K/T".
void be_print_collective_report(const CollectiveReport *r, FILE *out);

// ---- units.c ----
// One line per device that computes: the cycles its matrix unit (and install
// path), vector unit, switch unit and ports are busy, and the matrix unit's
// utilisation (useful MACs over peak MACs a cycle x the program's cycles).
void be_print_unit_report(const Topology *t, const Program *p, FILE *out);

// ---- dot.c ----
// Writes op's picture (op a collective of the scheduled DAG d on t):
// devices placed by their coordinates, one edge per (src, dst, lane) of
// its transfers, coloured by lane and labelled with its timesteps.
void be_write_collective_dot(const Topology *t, const Dag *d, const AlgoKind *algos, const Op *op,
                             const int *steps, FILE *out);

// ---- trace.c ----
// Writes the schedule of m (a tspc compile: program, DAG and sync plan) as
// Chrome trace event JSON: a process per device, a track per unit and per
// link direction, a slice per instruction and per route hop, and at most
// max_arrows flow arrows, one a vector; counts says what it holds.
void be_write_trace(const ManifestInfo *m, uint64_t max_arrows, FILE *out, TraceCounts *counts);

// ---- links.c ----
// Users listed per link direction in links.yaml (the rest are counted as
// more_users), and the hottest directions links.svg numbers and names.
#define BE_LINKS_MAX_USERS 8
#define BE_LINKS_SVG_HOTTEST 5
// links.yaml and links.svg of m (a tspc compile): every link direction's
// vectors, busy cycles, utilisation and users; the picture of them.
void be_write_links(const ManifestInfo *m, FILE *yaml, FILE *svg);

// ---- outdir.c ----
// Writes DIR atomically: topology.yaml (a copy of the topology file),
// model.tg (a copy of the model, when there is a graph), devNNNN.tsp for
// every device when there is a program (and devNNNN.tsa with emit_asm),
// coll-NAME.dot for every collective with emit_dot, trace.json with
// emit_trace, links.yaml and links.svg with emit_links, manifest.yaml.
bool be_write_outdir(const ManifestInfo *m, const char *dir, Diag *d);

#endif
