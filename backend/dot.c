// dot.c: a picture of each collective's rings or trees, as Graphviz DOT
// text (tspc --emit=dot writes coll-NAME.dot).  Part of backend/: it reads
// the scheduled DAG and the topology and changes nothing, so a program
// compiled with pictures is the program compiled without.
//
// Devices are nodes: a mesh or torus at its coordinates and a ring or
// fully connected system round a circle, with fixed positions (pos="x,y!",
// for neato -n); a dragonfly's devices clustered by node; an explicit
// topology left to the layout engine.  Devices outside the group are
// dashed.  Every (src, dst, lane) some transfer of the collective uses is
// one edge, coloured by lane (the ring or tree of the algorithm that
// carried it, DagNode.lane) and labelled with the timesteps it is used at
// (report.c: a transfer's depth in its op's DAG of transfers), runs
// compressed: "1-3,5".
#include "backend.h"

#include <math.h>
#include <stdlib.h>

// Points between neighbouring devices of a mesh or torus (the ring's
// circle is sized so neighbours lie as far apart).
#define DOT_SPACING_POINTS 90
// Lane colours (X11 names), taken in order; lanes past the list reuse it.
static const char *const dot_lane_colors[] = {"blue", "red", "darkgreen", "darkorange",
                                              "purple", "brown", "magenta", "cyan4"};
#define DOT_LANE_COLOR_COUNT ((int)ARRAY_LEN(dot_lane_colors))

typedef struct EdgeUse {
  int src, dst, lane, step;
} EdgeUse;

static int edge_use_cmp(const void *pa, const void *pb) {
  const EdgeUse *a = pa, *b = pb;
  if (a->src != b->src) return a->src < b->src ? -1 : 1;
  if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
  if (a->lane != b->lane) return a->lane < b->lane ? -1 : 1;
  return (a->step > b->step) - (a->step < b->step);
}

// ---- devices ----

// A mesh or torus device's place: x right, y down the page (row 0 on top),
// a third dimension drawn as a diagonal offset.
static void grid_position(const Topology *t, const Device *dev, long *x, long *y) {
  int ymax = t->ndims >= 2 ? t->dims[1] - 1 : 0;
  int z = t->ndims >= 3 ? dev->coord[2] : 0;
  *x = (long)dev->coord[0] * DOT_SPACING_POINTS + (long)z * DOT_SPACING_POINTS / 3;
  *y = (long)(ymax - (t->ndims >= 2 ? dev->coord[1] : 0)) * DOT_SPACING_POINTS + (long)z * DOT_SPACING_POINTS / 3;
}

// Device i of n round a circle, device 0 on top, ids clockwise.
static void circle_position(int i, int n, long *x, long *y) {
  double pi = acos(-1), radius = MAX(DOT_SPACING_POINTS, n * DOT_SPACING_POINTS / (2 * pi));
  double angle = pi / 2 - 2 * pi * i / n;
  *x = lround(radius + radius * cos(angle));
  *y = lround(radius + radius * sin(angle));
}

static void write_device(const Topology *t, int d, bool in_group, const char *indent, FILE *out) {
  fprintf(out, "%sd%d [label=\"%d\"", indent, d, d);
  long x = 0, y = 0;
  bool placed = true;
  if (t->family == FAMILY_MESH || t->family == FAMILY_TORUS)
    grid_position(t, &t->devices[d], &x, &y);
  else if (t->family == FAMILY_RING || t->family == FAMILY_FULLY_CONNECTED)
    circle_position(d, t->ndevices, &x, &y);
  else
    placed = false;
  if (placed) fprintf(out, ", pos=\"%ld,%ld!\"", x, y);
  if (!in_group) fprintf(out, ", style=dashed, color=gray, fontcolor=gray");
  fprintf(out, "];\n");
}

// A dragonfly's devices, one cluster a node.
static void write_dragonfly_devices(const Topology *t, const char *member, FILE *out) {
  int tpn = t->df.tsps_per_node;
  for (int first = 0; first < t->ndevices; first += tpn) {
    const Device *dev = &t->devices[first];
    fprintf(out, "  subgraph cluster_node%d {\n    label=\"rack %d node %d\";\n", first / tpn, dev->coord[0],
            dev->coord[1]);
    for (int d = first; d < first + tpn && d < t->ndevices; d++) write_device(t, d, member[d], "    ", out);
    fprintf(out, "  }\n");
  }
}

// ---- edges ----

// "1-3,5": the sorted timesteps uses[0..n).step, runs compressed.
static void write_steps(const EdgeUse *uses, int n, FILE *out) {
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && uses[j + 1].step <= uses[j].step + 1) j++;
    fprintf(out, "%s%d", i ? "," : "", uses[i].step);
    if (uses[j].step != uses[i].step) fprintf(out, "-%d", uses[j].step);
    i = j + 1;
  }
}

static void write_edges(const EdgeUse *uses, int n, FILE *out) {
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && uses[j].src == uses[i].src && uses[j].dst == uses[i].dst && uses[j].lane == uses[i].lane) j++;
    const char *color = dot_lane_colors[uses[i].lane % DOT_LANE_COLOR_COUNT];
    fprintf(out, "  d%d -> d%d [color=%s, fontcolor=%s, label=\"", uses[i].src, uses[i].dst, color, color);
    write_steps(uses + i, j - i, out);
    fprintf(out, "\"];\n");
    i = j;
  }
}

// The op's transfers as (src, dst, lane, timestep), sorted; *timesteps,
// the deepest.
static EdgeUse *collect_uses(const Dag *d, const Op *op, const int *steps, int *n, int *timesteps) {
  EdgeUse *uses = xmalloc(sizeof(EdgeUse) * ((size_t)d->nodes.len + 1));
  *n = *timesteps = 0;
  for (int i = 0; i < d->nodes.len; i++) {
    const DagNode *node = d->nodes.data[i];
    if (node->op != op || node->kind != NODE_TRANSFER) continue;
    uses[(*n)++] = (EdgeUse){node->src, node->dst, node->lane, steps[i]};
    *timesteps = MAX(*timesteps, steps[i]);
  }
  qsort(uses, (size_t)*n, sizeof(EdgeUse), edge_use_cmp);
  return uses;
}

void be_write_collective_dot(const Topology *t, const Dag *d, const AlgoKind *algos, const Op *op,
                             const int *steps, FILE *out) {
  int n, timesteps, lanes = 0;
  EdgeUse *uses = collect_uses(d, op, steps, &n, &timesteps);
  for (int i = 0; i < n; i++) lanes = MAX(lanes, uses[i].lane + 1);
  char *member = xcalloc((size_t)t->ndevices, 1);
  int *group = xmalloc(sizeof(int) * (size_t)t->ndevices);
  int ngroup = ir_place_devices(&op->args[0]->place, t->ndevices, group);
  for (int g = 0; g < ngroup; g++) member[group[g]] = 1;
  const char *algo = ir_algo_names[algos ? algos[op->id] : op->algo];
  bool fixed = t->family != FAMILY_DRAGONFLY && t->family != FAMILY_EXPLICIT;
  fprintf(out, "// coll-%s.dot: %s %s by %s over %d devices of %s, %d timesteps, %d lane%s (tspc --emit=dot).\n",
          op->result->name, ir_op_info[op->kind].name, op->result->name, algo, ngroup, t->name, timesteps, lanes,
          lanes == 1 ? "" : "s");
  fprintf(out, "// An edge: the transfers of one lane from one device to another, labelled with their timesteps.\n");
  fprintf(out, "// Render: %s -Tsvg coll-%s.dot > coll-%s.svg\n", fixed ? "neato -n" : "fdp", op->result->name,
          op->result->name);
  fprintf(out, "digraph \"%s\" {\n", op->result->name);
  fprintf(out, "  graph [label=\"%s %s: %s, N=%d, %d timesteps\", labelloc=t, splines=curved];\n",
          ir_op_info[op->kind].name, op->result->name, algo, ngroup, timesteps);
  fprintf(out, "  node [shape=circle, fixedsize=true, width=0.45, fontsize=10];\n");
  fprintf(out, "  edge [fontsize=9, arrowsize=0.6];\n");
  if (t->family == FAMILY_DRAGONFLY)
    write_dragonfly_devices(t, member, out);
  else
    for (int dev = 0; dev < t->ndevices; dev++) write_device(t, dev, member[dev], "  ", out);
  write_edges(uses, n, out);
  fprintf(out, "}\n");
  free(uses);
  free(member);
  free(group);
}
