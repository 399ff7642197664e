// ir.h: the data types every pass of tspc reads and writes.
//
// Two IRs live here, both owned by the compilation's Arena (support.h):
//
//   Graph     tensors and the ops that define them, after name resolution,
//             repeat unrolling and shape checking (frontend/check.c builds it);
//   Topology  devices, their numbered ports and the links (bidirectional
//             cables) between them, built from a family description
//             (frontend/topology.c reads the YAML, ir/topology.c wires it).
//
// Later layers add the DAG and per-device programs below these.
#ifndef TSPC_IR_H
#define TSPC_IR_H

#include "../support/support.h"

// ===== Graph IR ============================================================

// dtype   name    bytes per element
#define IR_DTYPES(X)     \
  X(F32, "f32", 4)       \
  X(F16, "f16", 2)       \
  X(BF16, "bf16", 2)     \
  X(I32, "i32", 4)       \
  X(I8, "i8", 1)

typedef enum {
#define X(e, name, size) DT_##e,
  IR_DTYPES(X)
#undef X
  DT_COUNT
} DType;

// The highest tensor rank the DSL accepts (a named, documented limit).
#define IR_MAX_RANK 8
// The most operands any op takes (concat: up to 4 parts).
#define IR_MAX_OPERANDS 4
// layernorm's epsilon: (x - mean) / sqrt(var + IR_LAYERNORM_EPSILON)
// (docs/dsl.md); the compiler's code and the reference both use it.
#define IR_LAYERNORM_EPSILON 1e-5
// The largest order p of cholesky's [p x p] operand: the factor's two
// working copies and its instruction stream (about p^3 / 300,000 matrix-unit
// instructions: passes/compute.c) stay a small share of a device.
#define IR_CHOLESKY_MAX_ORDER 4096
// A cholesky's rows go to devices in blocks of this many (seed 002 s5.5,
// "a block-cyclic distribution of 320 rows on each TSP"): one column tile
// of the matrix unit.
#define CHOL_BLOCK_ROWS 320

// Chrome traces, tspc --emit=trace and tsp-emu --trace alike: a unit's
// track (thread id) is its index, a link direction's its port plus
// IR_TRACE_LINK_TRACKS on the sending side, plus twice that on the taking
// side; and the vectors drawn as flow arrows unless --trace-max-vectors
// says otherwise.
#define IR_TRACE_LINK_TRACKS 100000
#define IR_TRACE_DEFAULT_MAX_ARROWS 100000
// The largest tensor, in bytes, one declaration may describe: 2^50 (1 PiB),
// far above any real model, low enough that size arithmetic never overflows.
#define IR_MAX_TENSOR_BYTES ((int64_t)1 << 50)

typedef struct Shape {
  int rank;
  int64_t dim[IR_MAX_RANK];
} Shape;

// Where a tensor lives.  AUTO: not said; the partitioner decides.  EACH: one
// copy per device, except the devices listed.  DEVICE: on device `index`.
// STAGE: on pipeline stage `index` (the partitioner maps stages to devices).
typedef enum { PLACE_AUTO, PLACE_EACH, PLACE_DEVICE, PLACE_STAGE } PlaceKind;

typedef struct Placement {
  PlaceKind kind;
  int index;    // DEVICE, STAGE
  int nexcept;  // EACH: devices excluded, ascending, no repeats
  int *except;
} Placement;

// Keywords an op may take.
typedef enum {
  KW_OP = 1 << 0,     // op=sum|max
  KW_ALGO = 1 << 1,   // algo=NAME
  KW_AXIS = 1 << 2,   // axis=I
  KW_SHAPE = 1 << 3,  // shape=[D0, D1, ...]   (reshape)
  KW_START = 1 << 4,  // start=I               (slice)
  KW_END = 1 << 5,    // end=I                 (slice)
} OpKeyword;

// Operand counts an op accepts, as a bit set (bit n: n operands).
#define ARITY(n) (1u << (n))

// op              spelling          operands          keywords          what it computes
#define IR_OPS(X)                                                                                \
  X(ALLREDUCE, "allreduce", ARITY(1), KW_OP | KW_ALGO)      /* every device: reduce of all  */ \
  X(REDUCE_SCATTER, "reduce_scatter", ARITY(1), KW_OP | KW_ALGO) /* device i: shard i     */ \
  X(ALL_GATHER, "all_gather", ARITY(1), KW_ALGO)            /* every device: all shards     */ \
  X(COPY, "copy", ARITY(1), 0)                              /* move to result's placement   */ \
  X(MATMUL, "matmul", ARITY(2), 0)                          /* [..,M,K] x [K,N] -> [..,M,N] */ \
  X(ADD, "add", ARITY(2), 0)                                /* elementwise, or bias [N]     */ \
  X(RELU, "relu", ARITY(1), 0)                              /* max(x, 0)                    */ \
  X(GELU, "gelu", ARITY(1), 0)                              /* x * Phi(x)                   */ \
  X(SOFTMAX, "softmax", ARITY(1), KW_AXIS)                  /* along axis (default last)    */ \
  X(LAYERNORM, "layernorm", ARITY(1) | ARITY(3), KW_AXIS)   /* (x [, gamma, beta])          */ \
  X(TRANSPOSE, "transpose", ARITY(1), 0)                    /* swaps the last two dims      */ \
  X(MUL, "mul", ARITY(2), 0)                                /* elementwise, or bias [N]     */ \
  X(SUB, "sub", ARITY(2), 0)                                /* elementwise, or bias [N]     */ \
  X(DIV, "div", ARITY(2), 0)                                /* elementwise, or bias [N]     */ \
  X(EXP, "exp", ARITY(1), 0)                                /* e^x                          */ \
  X(RSQRT, "rsqrt", ARITY(1), 0)                            /* 1 / sqrt(x)                  */ \
  X(REDUCE_SUM, "reduce_sum", ARITY(1), KW_AXIS)            /* sum along axis (it goes)     */ \
  X(REDUCE_MAX, "reduce_max", ARITY(1), KW_AXIS)            /* max along axis (it goes)     */ \
  X(RESHAPE, "reshape", ARITY(1), KW_SHAPE)                 /* same elements, new shape     */ \
  X(SLICE, "slice", ARITY(1), KW_AXIS | KW_START | KW_END)  /* [start, end) along axis      */ \
  X(CONCAT, "concat", ARITY(2) | ARITY(3) | ARITY(4), KW_AXIS) /* joined along axis         */ \
  X(CHOLESKY, "cholesky", ARITY(1), 0)                      /* L, L L^T = a (lower)         */

typedef enum {
#define X(e, name, arity, kws) OP_##e,
  IR_OPS(X)
#undef X
  OP_COUNT
} OpKind;

typedef struct OpInfo {
  const char *name;
  unsigned arity;     // ARITY(n) bits: the operand counts accepted
  unsigned keywords;  // OpKeyword mask
} OpInfo;

// The collective algorithms the compiler knows by name (algo=NAME, --algo).
// The lowering pass registers one implementation per name; the seed
// section each comes from is cited in its file.
#define IR_ALGOS(X) \
  X(AUTO, "auto")           /* the fastest that applies, by exact cost  */ \
  X(RING, "ring")           /* unidirectional ring                      */ \
  X(BIRING, "biring")       /* two opposite rings, half the data each   */ \
  X(DIRECT, "direct")       /* fully connected reduce-scatter/gather    */ \
  X(RINGBIODD, "ringbiodd") /* 003 Algorithm 1: odd meshes              */ \
  X(RING2D, "ring2d")       /* 003 s II-B: rings along x then y         */ \
  X(DBTREE, "dbtree")       /* double binary tree                       */ \
  X(MULTITREE, "multitree") /* 003 s II-B, 004 s IV-B                   */ \
  X(TTO, "tto")             /* 003 Algorithm 2: three disjoint trees    */ \
  X(HRING, "hring")         /* 004 s IV-A: hierarchical rings           */ \
  X(CTREE, "ctree")         /* 004 s IV-B: concentrated multi-tree      */ \
  X(DRAGONFLY3, "dragonfly3") /* 002 s5.6: three-stage hierarchical     */ \
  X(HIER, "hier")           /* 002 s2.2, s5.6: node, rack, system       */

typedef enum {
#define X(e, name) ALGO_##e,
  IR_ALGOS(X)
#undef X
  ALGO_COUNT
} AlgoKind;

typedef enum { REDUCE_SUM, REDUCE_MAX } ReduceOp;

typedef enum { TENSOR_INPUT, TENSOR_PARAM, TENSOR_VALUE } TensorKind;

typedef struct Op Op;

typedef struct Tensor {
  int id;            // index in Graph.tensors
  const char *name;  // unique; "w.3" for iteration 3 of a repeat body
  TensorKind kind;
  DType dtype;
  Shape shape;       // per copy (an EACH tensor has this shape on every device)
  Placement place;
  bool place_written;  // the .tg placed it (an annotation), not the checker's inference
  Op *def;           // the op computing it; NULL for inputs and params
  bool is_output;
  SrcLoc loc;        // where it was declared or assigned
  // A shard: the partitioner's piece [shard_start, shard_start + shape) of
  // the model tensor shard_of (passes/partition.c); the manifest names its
  // home after shard_of.  NULL for a tensor of the model itself.
  const struct Tensor *shard_of;
  int64_t shard_start[IR_MAX_RANK];
  // With several inferences in flight (--batches, passes/batch.c): which
  // one this copy of an input, value or output belongs to, and batch 0's
  // tensor it copies (NULL in batch 0 and for params, which are shared).
  int batch;
  const struct Tensor *batch_of;
} Tensor;

// What part of a cholesky an op computes (passes/split_cholesky.c; the
// lowering is passes/compute.c's).  The model's op is CHOL_WHOLE; split
// over D devices, block b of 320 rows (CHOL_BLOCK_ROWS) belongs to the
// device of index b mod D, which holds its rows as the columns of its
// working copy T = L^T (rows: the columns of L; lanes: its rows).
typedef enum {
  CHOL_WHOLE,  // (a) -> L: everything, on one device
  CHOL_INIT,   // (a) -> T: the device's rows of a, transposed
  CHOL_OWN,    // (T) -> T: panel s's columns, by the owner of its rows
  CHOL_ROWS,   // (T) -> panel s's rows of L, its columns: [rows, rows], row-major
  CHOL_ROWS_BEFORE,  // (T) -> panel s's rows of L, the columns before it: [rows, s per]
  CHOL_PANEL,  // (T, rows[, rows before]) -> T: panel s's columns of another device's rows
  CHOL_OUT,    // (T) -> the device's block b of L, an output shard
} CholRole;

typedef struct CholPiece {
  CholRole role;
  int64_t order;     // p, of the model's [p x p] operand
  int64_t panel;     // OWN, ROWS, PANEL: s (columns s per ..); OUT: the block
  int index, group;  // the device's index in the group of D = group devices
  const struct Tensor *of;  // a piece's: the model's result (L); CHOL_WHOLE: NULL (its own result)
} CholPiece;

struct Op {
  int id;  // index in Graph.ops
  OpKind kind;
  Tensor *result;
  int nargs;
  Tensor *args[IR_MAX_OPERANDS];
  ReduceOp reduce;   // collectives: op=sum|max (default sum)
  AlgoKind algo;     // collectives: algo=NAME (default auto)
  int axis;          // softmax, layernorm, reduce_*, slice, concat: a non-negative axis (default last)
  Shape shape;       // reshape: the shape asked for
  int64_t start, end;  // slice: [start, end) along axis, non-negative, start < end
  int64_t pad_rows;  // reduce_scatter: zero rows that complete the operand's first
                     //   dimension to group x the result's (docs/dsl.md)
  int64_t pad_elems; // reshape made for a rank-1 reduce_scatter (frontend/check.c,
                     //   emit_by_rows): zero elements after the operand's
  CholPiece chol;    // cholesky: the part it computes (CHOL_WHOLE: all of it)
  SrcLoc loc;
};

typedef struct Graph {
  const char *name;
  SrcLoc loc;
  const SrcFile *src;
  VEC(Tensor *) tensors;  // in definition order: a topological order
  VEC(Op *) ops;          // in definition order
  VEC(Tensor *) outputs;  // in `output` order
} Graph;

// ---- graph.c ----
extern const OpInfo ir_op_info[OP_COUNT];
extern const char *const ir_algo_names[ALGO_COUNT];
extern const char *const ir_dtype_names[DT_COUNT];
extern const int ir_dtype_bytes[DT_COUNT];

bool ir_dtype_lookup(const char *name, DType *out);
bool ir_op_lookup(const char *name, OpKind *out);
// allreduce, reduce_scatter, all_gather: the ops lowered by an algorithm.
bool ir_op_is_collective(OpKind k);
bool ir_algo_lookup(const char *name, AlgoKind *out);
int64_t ir_shape_elems(const Shape *s);
// Whether a shape of elem_bytes elements fits in limit bytes (no overflow).
bool ir_shape_fits(const Shape *s, int elem_bytes, int64_t limit);
int64_t ir_tensor_bytes(const Tensor *t);  // bytes of one copy
bool ir_shape_equal(const Shape *a, const Shape *b);
// Room for any type string: a dtype and IR_MAX_RANK 19-digit dimensions.
#define IR_TYPE_STR_MAX 256
// "f16[800, 32576]"
void ir_format_type(char *dst, size_t n, DType dt, const Shape *s);
// "[0, 3072]": an index or a list of dimensions (fits in IR_TYPE_STR_MAX).
void ir_format_index(char *dst, size_t n, const int64_t *v, int rank);
// "each", "each except device(3), device(5)", "device(2)", "stage(1)",
// "auto", whole however long, allocated in a.
const char *ir_place_str(Arena *a, const Placement *p);
bool ir_place_equal(const Placement *a, const Placement *b);
// Whether the partitioner decides where t lives (and may split it): the
// model left it auto, put it on a stage, or the checker only inferred its
// device from its operands' (Tensor.place_written false); @ each copies
// and written devices stay as written.
bool ir_place_by_partitioner(const Tensor *t);
// Prints the graph in .tg-like text: one line per tensor, resolved and unrolled.
void ir_graph_dump(const Graph *g, FILE *out);

// ---- verify.c ----
// Checks the graph's invariants (ids, unique names, definition before use,
// operand counts, shapes, placements); false with the first broken one.
bool ir_graph_verify(const Graph *g, int ndevices, char *err, size_t errlen);

// ===== Topology IR =========================================================

// family            spelling
#define IR_FAMILIES(X)                   \
  X(MESH, "mesh")                        \
  X(TORUS, "torus")                      \
  X(RING, "ring")                        \
  X(FULLY_CONNECTED, "fully_connected")  \
  X(EXPLICIT, "explicit")                \
  X(DRAGONFLY, "dragonfly")

typedef enum {
#define X(e, name) FAMILY_##e,
  IR_FAMILIES(X)
#undef X
  FAMILY_COUNT
} TopoFamily;

// What a cable joins, for people reading --describe and for routing policy.
// kind       spelling
#define IR_LINK_KINDS(X)   \
  X(MESH, "mesh")          \
  X(WRAP, "wrap")          \
  X(RING, "ring")          \
  X(DIRECT, "direct")      \
  X(EXPLICIT, "explicit")  \
  X(LOCAL, "local")        \
  X(NODE, "node")          \
  X(RACK, "rack")          \
  X(BYPASS, "bypass")

typedef enum {
#define X(e, name) LINK_##e,
  IR_LINK_KINDS(X)
#undef X
  LINK_KIND_COUNT
} LinkKind;

// The most mesh/torus dimensions (x, y, z).
#define IR_MAX_TOPO_DIMS 3
// A mesh line (row, column) gets a bypass link only when it holds at least
// this many devices: with two, the bypass would duplicate the mesh link.
#define IR_MIN_BYPASS_SPAN 3

// Link defaults from seed 002: s2.3 (4 x 25 Gb/s), Table 2 (209..228 cycles),
// fig 11 (320 B payload in 328 B on the wire), s5.2 (900 MHz).
#define IR_DEFAULT_GBPS 100.0
#define IR_DEFAULT_LATENCY_MIN 209
#define IR_DEFAULT_LATENCY_MAX 228
#define IR_DEFAULT_VECTOR_BYTES 320
#define IR_DEFAULT_WIRE_BYTES 328
#define IR_DEFAULT_CLOCK_MHZ 900.0
// Dragonfly defaults (002 s2.2): 8 TSPs a node, 4 global ports a TSP; node
// pairs joined once in a one-level system (nodes: N), twice inside a rack of
// a two-level one ("doubly connect the set of nine nodes").
#define IR_DEFAULT_TSPS_PER_NODE 8
#define IR_DEFAULT_GLOBAL_PORTS_PER_TSP 4
#define IR_DEFAULT_LINKS_PER_NODE_PAIR_ONE_LEVEL 1
#define IR_DEFAULT_LINKS_PER_NODE_PAIR_TWO_LEVEL 2
// Limits that keep the arithmetic exact and the tables small.
#define IR_MAX_DEVICES (1 << 20)
#define IR_MAX_LINKS (1 << 22)
#define IR_MAX_LATENCY_CYCLES 1000000
// The longest one vector may hold a link direction (a slower link is refused).
#define IR_MAX_CYCLES_PER_VECTOR 1000000000

typedef struct LinkParams {
  double gbps;        // per direction
  int latency_min;    // cycles from the first bit leaving to the vector landing
  int latency_max;
  int vector_bytes;   // payload of one vector (flit)
  int wire_bytes;     // what one vector occupies on the wire
  SrcLoc latency_loc; // where the topology file gives latency_cycles (file NULL: the built-in default)
} LinkParams;

typedef struct Link {
  int id;
  int a, b;            // devices, a != b
  int a_port, b_port;  // the port of a and of b the cable plugs into
  LinkKind kind;
  LinkParams p;
  bool failed;         // listed in failed_links: present but unusable
} Link;

typedef struct Port {
  int link;  // index in Topology.links, or -1 when nothing is plugged in
  int peer, peer_port;
} Port;

typedef struct Device {
  int id;
  int nports, port_cap;
  Port *ports;
  int coord[IR_MAX_TOPO_DIMS];  // mesh/torus: x, y, z; dragonfly: rack, node, tsp
} Device;

typedef struct Dragonfly {
  int tsps_per_node, global_ports_per_tsp;
  int nodes_per_rack, racks;  // one level (nodes: N): nodes_per_rack = N, racks = 1
  bool two_level;             // given as nodes_per_rack + racks
  int links_per_node_pair;    // cables joining two nodes of one rack
} Dragonfly;

// Machine settings (every number of the machine model is a topology setting;
// defaults from seed 002).  The HAC epoch: 252 cycles (s3.2 fn 4).  SRAM:
// [hemisphere 2, slice 44, bank 2, offset 4096] vectors = 220 MiB (fig 3).
// The receive buffer: the "very shallow buffers" at the C2C interface (s4.4).
#define IR_DEFAULT_EPOCH_CYCLES 252
#define IR_DEFAULT_SRAM_VECTORS (2 * 44 * 2 * 4096)
#define IR_DEFAULT_RX_BUFFER_VECTORS 4

// A failed unit (a dragonfly's node, another family's device) and the
// spare of its rack that takes its role (seed 002 s4.5: N+1), or -1 when
// its rack has no spare left: the role is dropped and the model runs on
// the smaller system.  A node of a dragonfly fails when failed_nodes
// lists it or failed_devices lists one of its TSPs.
typedef struct Role {
  int failed;  // node number (dragonfly) or device id
  int spare;   // node number or device id; -1: none
  SrcLoc loc;  // where the failure is listed (the warning about a dropped role)
} Role;

typedef struct Topology {
  const char *name;
  TopoFamily family;
  const SrcFile *src;
  int ndims;
  int dims[IR_MAX_TOPO_DIMS];  // mesh/torus
  bool bypass;                 // mesh: a bypass link joins the two ends of every row and
                               //   column of >= IR_MIN_BYPASS_SPAN devices (seed 004 s III-B)
  Dragonfly df;
  double clock_mhz;
  LinkParams link;             // defaults for every link
  double drift_ppm;            // emulator: each device's clock off by up to +-drift_ppm
  double *device_drift_ppm;    // or, when the file lists them, each device's exact drift
  int epoch_cycles;            // HAC period
  SrcLoc drift_loc, epoch_loc; // where the file gives drift_ppm and epoch_cycles (file NULL:
                               //   it does not), for the sync pass's refusals
  SrcLoc rx_buffer_loc;        // where it gives rx_buffer_vectors (file NULL: it does not)
  int sram_vectors;            // SRAM size of one device, in vectors
  int rx_buffer_vectors;       // vectors a port can hold that arrived and are not yet taken
  int nspares;
  int *spare_nodes;            // dragonfly: node indices; other families: device ids
  int nfailed_nodes;
  int *failed_nodes;           // dragonfly: failed_nodes as listed
  int nfailed_devices;
  int *failed_devices;         // failed_devices as listed
  int ndevices;
  Device *devices;
  VEC(Link) links;
  int nfailed;                 // failed cables: listed, or touching a failed device
  // The service table (topology_roles.c), which the loader builds once the
  // keys are read.  Device ids in a .tg are *logical*: the role a device
  // plays.  Every pass after the checker sees physical ids only.
  bool *device_failed;         // [device] its cables are failed (failed_devices, failed_nodes)
  bool *in_service;            // [device] it plays some logical device (runs the model)
  int *role_device;            // [logical id] the device playing it; -1: none does (a
                               //   spare's id, or a failed one no spare stands in for)
  int nroles;
  Role *roles;                 // every failed unit, ascending, with its stand-in
  int nin_service;             // devices in service
} Topology;

// ---- topology.c ----
extern const char *const ir_family_names[FAMILY_COUNT];
extern const char *const ir_link_kind_names[LINK_KIND_COUNT];

LinkParams ir_link_defaults(void);
// Cycles one vector occupies a link direction: ceil(wire_bits * clock / rate),
// at least 1; past IR_MAX_CYCLES_PER_VECTOR it returns -1 (the loader refuses).
int ir_cycles_per_vector(const LinkParams *p, double clock_mhz);
// Allocates devices 0..n-1, each with `nports` unconnected ports.
void ir_topo_init_devices(Topology *t, Arena *a, int n, int nports);
// Plugs a cable into port pa of a and pb of b (-1: the next port, growing the
// device's port list: explicit topologies number ports in link order).
int ir_topo_connect(Topology *t, Arena *a, int da, int pa, int db, int pb, LinkKind kind,
                    LinkParams p);

// ---- topology_build.c ----
// What ir_topo_build found wrong, so the loader can point at the right key.
typedef enum {
  TOPO_BUILD_OK,
  TOPO_BUILD_NODE_PORTS,  // node pairs need more global ports than a node has
  TOPO_BUILD_RACK_PORTS,  // rack pairs need more than the ports left
  TOPO_BUILD_TOO_MANY_LINKS,
} TopoBuildError;

// Wires devices and links for t->family from the family's parameters.  Checks
// what only the wiring can tell (a dragonfly's port budget, the link count)
// and on failure returns the problem with a message in err.
TopoBuildError ir_topo_build(Topology *t, Arena *a, char *err, size_t errlen);

// ---- topology_roles.c ----
// The unit a device belongs to: its node number (dragonfly: rack *
// nodes_per_rack + node), its own id in every other family.
int ir_device_unit(const Topology *t, int device);
// The role of failed unit `unit` (Topology.roles), or NULL when it has not failed.
const Role *ir_failed_role(const Topology *t, int unit);
// Builds the service table from spare_nodes, failed_nodes and
// failed_devices (already checked): fails every cable of a failed device,
// gives each failed unit, ascending, the first spare of its rack (in
// spare_nodes order) no other took, and maps logical ids to devices.
void ir_topo_assign_roles(Topology *t, Arena *a);
// Whether device (a physical id) runs the model: not a spare standing by,
// not on a failed unit.  Placements, groups and the partitioner use only
// devices in service.  True for every device of a topology without spares.
bool ir_device_in_service(const Topology *t, int device);
// Whether device has failed (failed_devices, or on a node in failed_nodes):
// all of its cables are failed and it runs nothing.
bool ir_device_failed(const Topology *t, int device);
// The device playing logical id `logical`, or -1 (ir_role_refusal says why).
int ir_role_device(const Topology *t, int logical);
// Why logical id `logical` has no device (ir_role_device -1), completing
// "device(64) ": "is on spare node 8: a spare runs only in place of a
// failed node", allocated in a.
const char *ir_role_refusal(Arena *a, const Topology *t, int logical);
// Whether logical id `logical` is a failed unit's role that no spare
// took (the smaller system: nothing to exclude, nothing to place there).
bool ir_role_dropped(const Topology *t, int logical);
// The roles as YAML, "[{node: 3, spare: 8}]" ("device:" outside a
// dragonfly; "spare: null" for a dropped role): --describe and the
// manifest write it, tsp-emu compares it.
void ir_roles_format(const Topology *t, Buf *out);

// ---- topology_metrics.c ----
// Hops of the longest shortest path over working links; -1 if disconnected
// (then *unreached, if given, is a device device 0 cannot reach).  Closed
// forms for intact meshes, tori, rings and fully connected systems; the
// search below for everything else.
int ir_topo_diameter(const Topology *t, int *unreached);
// The same by search, for any topology (bit-parallel BFS, or iFUB when
// the diameter is far above 256).
int ir_topo_diameter_search(const Topology *t, int *unreached);
// The iFUB search alone, whatever the diameter (tests check it on small
// graphs too); -1 if disconnected.
int ir_topo_diameter_ifub(const Topology *t);
// One BFS from the first working device over working links: false (and
// *unreached set) if some working device cannot be reached.  A device is
// working unless it has failed (Topology.device_failed); the diameter too
// is over working devices only.
bool ir_topo_connected(const Topology *t, int *unreached);
// Hops from device src to every device over working links, by BFS, into
// dist (-1: unreachable); queue: room for ndevices, left holding the
// devices reached, nearest first.  Returns how many.
int ir_topo_hops_from(const Topology *t, int src, int *dist, int *queue);
// The lowest working device (the alignment tree's root), or -1.
int ir_topo_first_working(const Topology *t);
// --describe: YAML summary; with ports, every device's numbered ports.
void ir_topo_describe(const Topology *t, FILE *out, bool ports);

// A path is the hops a vector takes; hop i leaves device hops[i].from on
// its port out_port over link hops[i].link (passes/paths.c finds them).
typedef struct Hop {
  int link;
  int from, to;
  int out_port, in_port;
} Hop;

typedef struct Path {
  int nhops;
  int id;     // route.c numbers a DAG's routed paths from 1 (the scheduler's fit memo); 0: none
  Hop *hops;  // in the caller's arena
} Path;

// ===== DAG IR ==============================================================
//
// What the schedulers work on (passes/dag.c builds it from the placed graph).
// A COMPUTE node is one op on one device (an op on an @ each tensor is one
// node per device; a copy that stays on its device is a local move).  A
// TRANSFER node moves `bytes` from device src to device dst over the
// network; with `reduce`, dst combines them with its own data by the op's
// reduction (the collective lowering emits those).  A COLLECTIVE node is a
// whole allreduce, reduce_scatter or all_gather over its group, which the
// lowering pass replaces by transfers and reductions.  A STAGE node copies
// bytes [offset, offset + bytes) of a collective's operand on `device` into
// the collective's working buffer there (one VMOV; lowering emits it when
// the operand cannot be reduced in place).  Nodes are in a topological
// order: every dependency has a smaller id.
typedef enum { NODE_COMPUTE, NODE_TRANSFER, NODE_COLLECTIVE, NODE_STAGE } DagNodeKind;

// A stretch of the vector unit: `count` vectors from cycle `start` (one
// VXM instruction over count vectors holds the unit count cycles).
typedef struct UnitRun {
  int64_t start, count;
} UnitRun;

// One path a transfer's vectors take (the routing pass fills them):
// vectors [first, first + count) of the transfer go this way.  On an empty
// network with jitter off, vector k of the route lands `latency` cycles
// after it leaves, and the route's vectors leave `every` cycles apart.
typedef struct Route {
  Path path;
  int64_t first, count;
  int64_t latency;  // sum over hops of the link's latency_max plus hop_slack
  int64_t hop_slack;  // cycles each hop's RECV takes a vector after its latest landing
  int every;        // cycles per vector of every link on the path
  int64_t start;    // after scheduling: when its first vector leaves
} Route;

// One instruction (the ISA section below says what each field means): the
// fields it is encoded with, 20 bytes, since a long program is mostly
// instructions (system10440's hold 20 M).
typedef struct Instr {
  uint8_t op, dtype;
  uint16_t port;
  uint32_t a, b, c, d;
} Instr;
_Static_assert(sizeof(Instr) == 20, "Instr holds what is encoded, no more");

// What the compiler made an instruction for (not encoded; --emit=asm prints
// it as a comment, and a debug section keeps it): the node or step it
// serves, its schedule cycle (-1: none) and the .tg line of the op behind it
// (0: none).  Only an annotated program has them (UnitProgram.notes).
typedef struct InstrNote {
  const char *note;  // NULL: no comment
  int64_t at;
  int32_t line;
} InstrNote;

// A compute node's instruction, placed by the scheduler (passes/compute.c)
// before SRAM is allocated: field a, b, c or d (ref[0..3]) may be an offset
// into one of the node's buffers, which code generation turns into an
// address.  REF_NONE: the field is literal.
enum {
  REF_NONE = -1,
  REF_ARG0 = 0,     // REF_ARG0 + i: operand i's copy on the node's device
  REF_RESULT = IR_MAX_OPERANDS,
  REF_SCRATCH = IR_MAX_OPERANDS + 1,  // REF_SCRATCH + k: the node's scratch buffer k
};

typedef struct UnitInstr {
  int64_t at;      // issue cycle, schedule time
  Instr in;
  int8_t ref[4];   // for fields a, b, c, d
} UnitInstr;

// A buffer a compute node works in, live while the node runs; or, with
// is_const, a vector holding `value` in every lane (as dtype), for the
// whole program (code generation shares one per value).
typedef struct ScratchBuf {
  int64_t vectors;
  bool is_const;
  DType dtype;
  double value;
} ScratchBuf;

typedef struct DagNode {
  int id;            // index in Dag.nodes
  DagNodeKind kind;
  const Op *op;      // the graph op it serves
  const Tensor *tensor;  // TRANSFER: the tensor moved
  int device;        // COMPUTE, STAGE: where it runs
  int src, dst;      // TRANSFER: src != dst
  int link;          // TRANSFER with over_link: the cable its tree edge was built over
  int64_t offset;    // TRANSFER, STAGE: where the bytes start in the buffer (a chunk of it)
  int64_t bytes;     // TRANSFER, STAGE: bytes moved; COLLECTIVE: bytes of the operand per device
  bool reduce;       // TRANSFER: dst reduces into its own data by op->reduce
  int64_t vectors;   // TRANSFER, after routing: ceil(bytes / vector_bytes)
  int nroutes;       // TRANSFER, after routing: the paths its vectors take
  Route *routes;
  Route *minimal;    // TRANSFER, after routing: the shortest path alone
  Route *spread;     // ... and the vectors spread over the candidates
  int nspread;
  bool nonminimal;   // TRANSFER, after routing: routes are the spread ones
  bool on_cycle;     // TRANSFER: a ring's hop between neighbours on its cycle;
                     //   --route=auto keeps it on the link between them
  bool over_link;    // TRANSFER: an edge a tree algorithm built over `link` (TreeSet.link,
                     //   Lowering.edge_link) between neighbours: its minimal route is that
                     //   link when it has the shortest path's pace (route.c, edge_path),
                     //   which matters where several cables join them
  bool fill_gaps;     // TRANSFER: the scheduler may cut its routes into pieces in the
                     //   gaps other transfers leave (passes/schedule.c, place_filling)
  bool cut_into_gaps; // TRANSFER, after scheduling: its routes are pieces cut into the gaps
                     //   because it waited too long whole (schedule.c, place_best)
  int lane;          // TRANSFER of a collective: which of its algorithm's rings or trees
                     //   carried it (0 ..), for --emit=dot pictures and the manifest
  int ngroup;        // COLLECTIVE: the participating devices, ascending
  int *group;
  int ndeps;         // nodes that must finish first, ascending ids, no repeats
  int *deps;
  int nwar;          // TRANSFER with reduce: transfers reading dst's copy of these bytes
  int *war;          //   whose last vector must have left before the reduction writes it
                     //   (write after read); unlike deps they may come later in the DAG,
                     //   though never after a node that depends on this one
  int64_t start;     // after scheduling: its first cycle
  int64_t finish;    // after scheduling: the first cycle its result may be read
  int nruns;         // after scheduling: the vector-unit runs of a reduction, a
  UnitRun *runs;     //   stage or an elementwise compute, in order over its vectors
  int ncode;         // COMPUTE, after scheduling: the instructions of an op that is
  UnitInstr *code;   //   more than one vector-unit pass, in placement order;
  int nscratch;      //   code and scratch may be another node's (a stamp: passes/
  ScratchBuf *scratch;  // schedule.c, place_program), so nothing writes them after
} DagNode;

typedef struct Dag {
  const Graph *graph;
  VEC(DagNode *) nodes;
  bool scheduled;    // start, finish and route starts are set
  int64_t makespan;  // the last finish
  int npath_ids;     // the routes' paths are numbered 1..npath_ids (Path.id)
  int64_t programs, stamped;  // compute programs the schedule placed, and of them stamped (--stats)
  int64_t tries;     // route placements the schedule tried (its work; under --route=auto the
                     //   minimal and the load-aware schedule's together)
} Dag;

// ---- dag.c ----
// After scheduling: the cycle after a transfer's source reads its last
// vector (a SEND reads vector k as it leaves, at its route's start + k every).
int64_t ir_transfer_reads_end(const DagNode *n);
// Devices holding a copy of a tensor placed at p (EACH or DEVICE; the
// partitioner has resolved AUTO and STAGE), ascending, into out (room for
// ndevices).  Returns how many.
int ir_place_devices(const Placement *p, int ndevices, int *out);
// Whether a tensor placed at p (EACH or DEVICE) has a copy on device.
bool ir_place_has(const Placement *p, int device);
// Sets n's dependencies to deps[0..ndeps) sorted, without repeats (deps is
// reordered; the result is allocated in a).
void ir_dag_set_deps(Arena *a, DagNode *n, int *deps, int ndeps);
// One line per node, e.g. "n3 = transfer x device(0) -> device(5), 1.0 MiB for copy(x -> y) after n1;".
void ir_dag_dump(const Dag *d, FILE *out);
// Ids are indices, dependencies point backwards in ascending order, devices
// exist, transfers move a positive byte count between distinct devices,
// routes carry every vector once along a path.  Once scheduled: no node
// starts before its dependencies finish, and no two routes hold one link
// direction in one cycle (checked from the routes alone, sorted per
// direction, independently of the scheduler's tables).
bool ir_dag_verify(const Dag *d, const Topology *t, char *err, size_t errlen);

// ===== ISA and device programs ===========================================
//
// A device runs one instruction stream per functional unit: `c2c.P` for each
// port P (SEND, RECV), `vxm` (vector ops), `mxm` (matrix ops) and `ctl`
// (TRANSMIT, POLL, RUNTIME_DESKEW).  Every unit may WAIT, SYNC, NOTIFY,
// DESKEW and HALT.  docs/isa.md gives each instruction's exact timing.
//
// Encoding: every instruction is 20 bytes, little-endian:
//
//   byte  0        1        2       3   4 .. 7   8 .. 11  12 .. 15  16 .. 19
//       +--------+--------+----------------+--------+--------+--------+--------+
//       | opcode | dtype  |   port (u16)   | a (u32)| b (u32)| c (u32)| d (u32)|
//       +--------+--------+----------------+--------+--------+--------+--------+
//
// The operand string says which fields an instruction uses, in assembly
// order: p = port, t = dtype, a b c d = the u32 fields.  Unused fields are 0.

typedef enum { UNIT_C2C, UNIT_VXM, UNIT_MXM, UNIT_CTL, UNIT_SXM, UNIT_KIND_COUNT } UnitKind;

#define U_C2C (1u << UNIT_C2C)
#define U_VXM (1u << UNIT_VXM)
#define U_MXM (1u << UNIT_MXM)
#define U_CTL (1u << UNIT_CTL)
#define U_SXM (1u << UNIT_SXM)
#define U_ANY (U_C2C | U_VXM | U_MXM | U_CTL | U_SXM)

// Operand letters, in assembly order:
//   p  a port (u16 field; on c2c units the unit's own port)
//   w  a weight buffer of the matrix unit, 0 .. ISA_MXM_BUFFERS-1 (u16 port field)
//   s  a second dtype: the source dtype of VCVT (u16 port field)
//   n  a count (u16 port field): TRANS's source rows, SXMOV's destination element offset
//   t  the dtype;  a b c d  the u32 fields
// "per(t)" below is the elements of dtype t in one vector (vector_bytes / size).
// The vector unit's ops stream their destination vectors, one a cycle:
// vector k reads what it needs at L + k and lands at L + k + ISA_VXM_LATENCY.
// docs/isa.md gives every timing rule in full.
//
// op               mnemonic          operands units   what it does (timing: docs/isa.md)
#define ISA_OPS(X)                                                                              \
  X(WAIT, "WAIT", "a", U_ANY)              /* idle a cycles                               */ \
  X(SEND, "SEND", "pab", U_C2C)            /* stream b vectors from SRAM a out of port p  */ \
  X(RECV, "RECV", "pab", U_C2C)            /* take b arriving vectors of port p into a    */ \
  X(VADD, "VADD", "tabcd", U_VXM)          /* a[k] = b[k] + c[k], k < d vectors           */ \
  X(VMAX, "VMAX", "tabcd", U_VXM)          /* a[k] = max(b[k], c[k])                      */ \
  X(VRELU, "VRELU", "tabc", U_VXM)         /* a[k] = max(b[k], 0), k < c vectors          */ \
  X(MXM, "MXM", "twabcd", U_MXM)           /* d rows b + r c times buffer w -> a + r R    */ \
  X(SYNC, "SYNC", "", U_ANY)               /* park until a NOTIFY                         */ \
  X(NOTIFY, "NOTIFY", "", U_ANY)           /* wake every parked unit, next cycle          */ \
  X(DESKEW, "DESKEW", "", U_ANY)           /* pause until the next HAC epoch boundary     */ \
  X(TRANSMIT, "TRANSMIT", "p", U_CTL)      /* send a notification vector out of port p    */ \
  X(POLL, "POLL", "p", U_CTL)              /* at each epoch boundary: a notification? go  */ \
  X(RUNTIME_DESKEW, "RUNTIME_DESKEW", "a", U_CTL) /* stall a +- (SAC - HAC)                */ \
  X(HALT, "HALT", "", U_ANY)               /* this unit's stream ends                     */ \
  X(VMOV, "VMOV", "abc", U_VXM)            /* a[k] = b[k], k < c vectors (a local copy)   */ \
  X(VSUB, "VSUB", "tabcd", U_VXM)          /* a[k] = b[k] - c[k], k < d vectors           */ \
  X(VMUL, "VMUL", "tabcd", U_VXM)          /* a[k] = b[k] * c[k]                          */ \
  X(VDIV, "VDIV", "tabcd", U_VXM)          /* a[k] = b[k] / c[k]                          */ \
  X(VADDS, "VADDS", "tabcd", U_VXM)        /* a[k] = b[k] + s, s = element 0 of vector c  */ \
  X(VSUBS, "VSUBS", "tabcd", U_VXM)        /* a[k] = b[k] - s                             */ \
  X(VMULS, "VMULS", "tabcd", U_VXM)        /* a[k] = b[k] * s                             */ \
  X(VEXP, "VEXP", "tabc", U_VXM)           /* a[k] = exp(b[k]), k < c vectors             */ \
  X(VERF, "VERF", "tabc", U_VXM)           /* a[k] = erf(b[k])                            */ \
  X(VRSQRT, "VRSQRT", "tabc", U_VXM)       /* a[k] = 1 / sqrt(b[k])                       */ \
  X(VRECIP, "VRECIP", "tabc", U_VXM)       /* a[k] = 1 / b[k]                             */ \
  X(VCVT, "VCVT", "tsabc", U_VXM)          /* c elements of dtype s at b -> dtype t at a  */ \
  X(VRSUM, "VRSUM", "tabc", U_VXM)         /* every element of a = sum of b's first c     */ \
  X(VRMAX, "VRMAX", "tabc", U_VXM)         /* every element of a = max of b's first c     */ \
  X(MXLW, "MXLW", "twabcd", U_MXM)         /* install c rows x d cols of [K x N] into w   */ \
  X(MXLWT, "MXLWT", "twabcd", U_MXM)       /* install c rows of [N x K] (d of K) into w   */ \
  X(MXMA, "MXMA", "twabcd", U_MXM)         /* MXM, adding into what a + r R holds         */ \
  X(TRANS, "TRANS", "tnabcd", U_SXM)       /* n rows b + i c -> per(t) rows a + j d       */ \
  X(SXMOV, "SXMOV", "tnabcd", U_SXM)       /* d elements from element c of b -> a at n    */

typedef enum {
#define X(e, name, operands, units) OPC_##e,
  ISA_OPS(X)
#undef X
  OPC_COUNT
} Opcode;

typedef struct OpcodeInfo {
  const char *name;
  const char *operands;  // "pab": port, a, b
  unsigned units;        // U_* mask of the units that may run it
} OpcodeInfo;

#define ISA_INSTR_BYTES 20

// The device binary (devNNNN.tsp), little-endian, byte by byte:
//
//   0  "TSPB"                     magic
//   4  u16 version (1)            6  u16 header bytes (32)
//   8  u32 device id             12  u32 device count
//  16  u32 units U               20  u32 data records R
//  24  u32 file bytes            28  u32 CRC-32 of the file, this field as 0
//  32  U unit entries of 12 bytes: u8 kind, u8 0, u16 port,
//      u32 instructions, u32 offset of the stream in the file
//      R records of 32 bytes: u8 kind, u8 dtype, u16 0, u32 addr, u32 nvec,
//      u32 0, f64 a, f64 b
//      the streams, in unit order, ISA_INSTR_BYTES each instruction
//      optional, to the end of the file: the debug section (tspc -g)
//   +0  "TSPD"                    +4  u16 debug version (1)
//   +6  u16 section header bytes (16)
//   +8  u32 entries N (one per instruction of every stream, in stream order)
//  +12  u32 string bytes S
//  +16  N entries of 16 bytes: u64 schedule cycle (all ones: none),
//       u32 note (an offset into the strings; all ones: none),
//       u32 the .tg line of the op it serves (0: none)
//       S bytes of strings, each ending in a NUL
#define ISA_BINARY_MAGIC "TSPB"
#define ISA_BINARY_VERSION 1
#define ISA_HEADER_BYTES 32
#define ISA_UNIT_ENTRY_BYTES 12
#define ISA_RECORD_BYTES 32
#define ISA_CRC_OFFSET 28
// The largest binary a loader accepts (a named limit against hostile sizes).
#define ISA_MAX_BINARY_BYTES (1u << 30)
#define ISA_DEBUG_MAGIC "TSPD"
#define ISA_DEBUG_VERSION 1
#define ISA_DEBUG_HEADER_BYTES 16
#define ISA_DEBUG_ENTRY_BYTES 16
#define ISA_DEBUG_NONE_CYCLE UINT64_MAX
#define ISA_DEBUG_NONE_NOTE UINT32_MAX


typedef struct UnitProgram {
  UnitKind kind;
  int port;  // UNIT_C2C
  VEC(Instr) code;
  VEC(InstrNote) notes;  // notes.data[i] annotates code.data[i]; empty: the program is not annotated
} UnitProgram;

// Instruction i's note, NULL if the program has none.
static inline const InstrNote *ir_instr_note(const UnitProgram *up, int i) {
  return i < up->notes.len ? &up->notes.data[i] : NULL;
}

// Data placed in SRAM before the run (INIT) or checked after it (EXPECT):
// nvec vectors from addr whose element i (counting across the vectors) is
// a * i + b, converted to dtype.
typedef enum { REC_INIT = 1, REC_EXPECT = 2 } RecordKind;

typedef struct DataRecord {
  RecordKind kind;
  DType dtype;
  uint32_t addr, nvec;
  double a, b;
  SrcLoc loc;
} DataRecord;

// A named tensor in a device's SRAM (the manifest's `tensors:`), row-major
// from addr on.
// Layout: packed (pitch 0), or each row (the last dimension) starting on a
// vector, `pitch` vectors apart (pitch >= ceil(last / per(dtype))).
// A shard (the partitioner's piece of a model tensor, the manifest's
// `start:`) holds the box [start, start + shape) of the named tensor, in
// the model tensor's coordinates; otherwise the home holds all of it.
typedef struct TensorHome {
  const char *name;
  int device;
  uint32_t addr;
  DType dtype;
  Shape shape;
  uint32_t pitch;  // vectors from one row to the next; 0: packed
  bool is_shard;
  int64_t start[IR_MAX_RANK];  // is_shard: the box's first element, per dimension
  int batch;  // which inference (0 .. Program.batches - 1) an input, value or output
              // home belongs to (the manifest's `batch:`, absent for 0); params: 0
} TensorHome;

typedef struct DeviceProgram {
  int device;
  VEC(UnitProgram) units;
  VEC(DataRecord) records;
  bool debug;  // the loader read a debug section (every unit's notes)
} DeviceProgram;

typedef struct Program {
  int ndevices;
  DeviceProgram *devices;   // one per device of the topology, by id
  int64_t predicted_cycles; // -1: no prediction
  int batches;              // inferences in flight (the manifest's `batches:`; 1: absent)
  VEC(TensorHome) tensors;
  const char *model_text;   // tsp-as: the .model lines, the graph the programs compute (NULL: none)
  size_t model_len;
} Program;

// ---- isa.c ----
// The column where a listing's annotations start (instructions padded to it).
#define ISA_LISTING_COLUMN 34
extern const OpcodeInfo isa_opcodes[OPC_COUNT];
extern const char *const isa_unit_kind_names[UNIT_KIND_COUNT];

bool isa_opcode_lookup(const char *name, Opcode *out);
// "c2c.3", "vxm", "mxm", "ctl" <-> kind and port; false on anything else.
bool isa_unit_parse(const char *name, UnitKind *kind, int *port);
void isa_unit_format(char *dst, size_t n, UnitKind kind, int port);
// Cycles from a VXM, MXM or SXM instruction reading its sources to its
// result landing (docs/isa.md): the emulator runs them, the schedulers plan
// with them.
#define ISA_VXM_LATENCY 4
#define ISA_MXM_LATENCY 16
#define ISA_SXM_LATENCY 4
// The matrix unit (seed 002 s5.2, s5.5).  A sub-operation is [1 x K] x
// [K x ISA_MXM_COLS], K = per(t) (160 f16, 320 i8 at 320-byte vectors): one
// activation vector against an installed weight tile.  It runs
// isa_mxm_rows_per_cycle(t) sub-operations a cycle (2 f16/bf16, 4 i8: the
// seed's rates; 1 f32, an assumption: a quarter of f16's MACs).  The unit
// holds ISA_MXM_BUFFERS weight tiles; MXLW/MXLWT install one while MXM reads
// another, ISA_MXM_INSTALL_VECTORS_PER_CYCLE tile vectors a cycle (an
// assumption the seed does not fix).  A result row is ISA_MXM_COLS values
// of the accumulation dtype: isa_mxm_row_vectors() vectors.
#define ISA_MXM_COLS 320
#define ISA_MXM_BUFFERS 2
#define ISA_MXM_INSTALL_VECTORS_PER_CYCLE 1
// Elements of dtype in one vector of vector_bytes.
int isa_elems_per_vector(DType dt, int vector_bytes);
// MXM: the dtypes the matrix unit multiplies, its accumulation dtype (f32;
// i32 for i8), rows a cycle, the cycles an MXM of `rows` rows holds the
// unit (ceil(rows / rows_per_cycle)), and vectors of one result row.
bool isa_mxm_dtype_ok(DType dt);
DType isa_mxm_acc_dtype(DType dt);
int isa_mxm_rows_per_cycle(DType dt);
int64_t isa_mxm_cycles(DType dt, uint32_t rows);
int isa_mxm_row_vectors(DType dt, int vector_bytes);
// Vectors an install reads: MXLW c rows of ceil(d / per) vectors; MXLWT c
// vectors.  It holds the install path that many cycles (at the rate above).
int64_t isa_mxm_install_vectors(const Instr *in, int vector_bytes);
int64_t isa_mxm_install_cycles(const Instr *in, int vector_bytes);
// Cycles an instruction holds its unit (the next issue is L + this): WAIT
// and RUNTIME_DESKEW their operand, VXM ops their destination vectors, MXM
// its rows' cycles, TRANS n + per(t), SXMOV its destination vectors, the
// rest 1.  SYNC, POLL and DESKEW wait for events: 1 here.
int64_t isa_issue_cycles(const Instr *in, int vector_bytes);
// Destination vectors a VXM or SXM instruction writes (VRSUM/VRMAX: 1).
int64_t isa_dst_vectors(const Instr *in, int vector_bytes);
// What an instruction is checked against: the device it runs on.
typedef struct IsaTarget {
  int nports;        // the device's ports
  uint32_t sram;     // its SRAM, in vectors
  int vector_bytes;  // bytes in one vector
} IsaTarget;

IsaTarget isa_target(const Topology *t, int device);
// Checks one instruction in its unit (kind, port) on device t: allowed
// there, operands in range.  On failure writes the reason to err.
bool isa_check(const Instr *in, const IsaTarget *t, UnitKind kind, int port, char *err,
               size_t errlen);
// Checks a data record (.init / .expect) against the device.
bool isa_check_record(const DataRecord *r, const IsaTarget *t, char *err, size_t errlen);
// Checks that shard th's box [start, start + shape) ends inside the
// largest dimension (INT32_MAX) in every dimension: "tensor 'w' shard [0,
// 2147483600] + [3, 100] runs past the largest dimension (2147483647)".
bool isa_check_shard(const TensorHome *th, char *err, size_t errlen);
// One instruction as assembly text, e.g. "SEND 1, 0, 4".
void isa_format(char *dst, size_t n, const Instr *in);
// Prints a device program as assembly that tsp-as reads back exactly.
void isa_print_device(const DeviceProgram *dp, int ndevices, FILE *out);
// Whether every unit of the program has no notes or one per instruction
// (UnitProgram.notes); if not, which unit, into err.  --verify-each runs it
// after every pass that has made the program.
bool ir_program_verify(const Program *p, char *err, size_t errlen);
// The same, and where an annotated instruction serves another .tg line than
// the one before it in its unit, that line of src quoted first ("; model.tg:11:
// h = matmul(x, w1);"): tsp-objdump -S.  src NULL: as isa_print_device.
void isa_print_device_source(const DeviceProgram *dp, int ndevices, const SrcFile *src, FILE *out);
// ".tensor NAME, ADDR, DTYPE, [D0, ...][, pitch P][, start [...]][, batch B]":
// a home as tsp-as reads it back.
void isa_print_tensor(const TensorHome *th, FILE *out);

#endif
