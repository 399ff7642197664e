// partition.h: what the partition pass (partition.c) shares with its
// matmul splitter (split_matmul.c): the estimates it plans with and the
// graph surgery that replaces a model tensor by its shards.  Internal to
// passes/.
#ifndef TSPC_PARTITION_H
#define TSPC_PARTITION_H

#include "passes.h"

// The share of SRAM, in percent, the estimate leaves free for what it
// does not see (alignment between allocations, receive buffers).
#define PARTITION_SRAM_HEADROOM_PERCENT 5
// A split over more devices is taken only when its estimate is at least
// this many percent below the best over fewer: devices are not spent for
// a rounding's worth of cycles.
#define PARTITION_MIN_GAIN_PERCENT 1
// With several inferences in flight, how many of them the SRAM estimate
// expects to hold working values on one device at once: the one computing
// and the one whose results are still being sent on.
#define PARTITION_LIVE_BATCHES 2
// With several inferences in flight, the speed splits are kept only when
// the estimate of the run without them (partition_estimate.c) is at least
// this many percent longer than with them: the estimate is closer without
// them (measured over 589 partitions with 3 and 4 inferences in flight: its
// 10th and 90th percentiles of estimate / compiled are 0.98 and 1.17
// without, 0.79 and 1.26 with), and a split spends devices.
#define PARTITION_SPEED_SPLIT_GAIN_PERCENT 5
// How many inferences in flight the estimate of a partition's cycles
// (partition_estimate.c) schedules one by one; the rest follow one each
// last interval.
#define PARTITION_ESTIMATE_INFERENCES 8
// Rows of hop counts (a BFS from one device each) that estimate keeps.
#define PARTITION_ESTIMATE_HOP_ROWS 256

// Who reads each tensor, by tensor id (made when first asked for, dropped
// by part_renumber; operands NULL: to be made again).
typedef struct ReaderCounts {
  int *operands;  // operands naming it (part_readers)
  int *ops;       // ops naming it, an op naming it twice once
  int *last;      // the last of them (-1: none)
} ReaderCounts;
typedef struct Partitioner {
  Compilation *c;
  Graph *g;
  const Topology *t;
  int vb;
  int batches;       // inferences in flight (--batches), at least 1
  int64_t capacity;  // bytes of a device's SRAM the partitioner plans to fill
  int64_t sram;      // all of it: an estimate beyond it is refused
  Buf log;           // the decisions, for --dump-after=partition
  ReaderCounts *readers;  // part_readers' counts, until part_renumber
  bool no_speed_splits;   // split only the matmuls that fit no device whole (pass_partition's retry)
  bool speed_split;       // a matmul that fits whole was split for speed
  const struct GraphSnapshot *model;  // the graph before step 2, for messages (NULL: nothing was split)
} Partitioner;

typedef VEC(void *) PtrVec;

int64_t part_ceil_div(int64_t a, int64_t b);
// Bytes of one copy of a tensor as layout.c pads it: every row on whole vectors.
int64_t part_padded_bytes(const Partitioner *p, DType dt, const Shape *s);
int64_t part_tensor_bytes(const Partitioner *p, const Tensor *t);
// Scratch an op holds while it runs (compute.c's estimate), in bytes.
int64_t part_scratch_bytes(const Partitioner *p, const Op *op);
bool part_is_free(const Tensor *t);  // the model left it unplaced (auto)
// Whether the partitioner may move op's result: the .tg did not place it
// and it is not one copy of a group (@ each).
bool part_movable(const Op *op);
// The devices in service, by hops from `from` over working links, then by
// id (the order shards and stages take); *n gets how many; the caller
// frees it.
int *part_devices_nearest(const Topology *t, int from, int *n);
// The device the model's device(0) names: where unplaced leftovers go.
int part_first_device(const Topology *t);
// Estimated cycles to send `bytes` from device src to `copies` devices.
int64_t part_send_cycles(const Partitioner *p, int src, int64_t bytes, int copies);
// A shard of `of` on `device`: the box [start, start + shape), named after
// it ("w[0:4072, 1024:2048]").
Tensor *part_new_shard(Partitioner *p, const Tensor *of, TensorKind kind, const int64_t *start, const Shape *shape,
                       int device);
// v with element `old` replaced by the n of `repl`, in order.
void part_splice(Arena *a, PtrVec *v, const void *old, void *const *repl, int n);
void part_renumber(Partitioner *p);  // ids are indices again after surgery
int part_readers(const Partitioner *p, const Tensor *t);  // operands naming t, over all ops
// Whether devices a and b share a dragonfly node (any two do elsewhere).
bool part_same_node(const Topology *t, int a, int b);

// partition_estimate.c: the cycles the model's inferences in flight take
// as partitioned now; runs_on[d] (NULL: none): device d interleaves
// inferences by runs.
int64_t part_estimated_makespan(const Partitioner *p, const bool *runs_on);

// split_matmul.c: step 2, tensor parallelism.
void partition_split_matmuls(Partitioner *p);
// split_cholesky.c: step 2 too, a cholesky block-cyclic over a node.
void partition_split_cholesky(Partitioner *p);

#endif
