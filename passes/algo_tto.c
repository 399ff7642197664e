// algo_tto.c: TTO, three-tree AllReduce on a 2-D mesh.  A collective
// algorithm for the lowering pass (passes/lower.c registers it as algo_tto);
// the trees are lowered by the shared engine (algo_tree.c).
//
// Seed 003 s V-B, s V-C, Algorithm 2.  The group is the mesh minus one
// corner, the excluded one (the graph's `@ each except device(K)`).  The
// three other corners root three trees that use no link direction twice:
//   A, the corner in the excluded one's column: along its column first (y),
//     then along every row (x);
//   B, the corner in the excluded one's row: along its row first (x), then
//     along every column (y);
//   C, the opposite corner: breadth-first over the link directions A and B
//     left unused, never through the excluded corner.
// A and B pass through the excluded corner, which relays (it holds no data
// of its own).  Algorithm 2 puts the excluded corner bottom-left (node
// n(m-1)+1 in row-major numbering from the top); any other corner is the
// same construction reflected in x and/or y.  Every tree is X + Y - 2 steps
// high (the least possible), each carries a third of the data, and with C
// chunks each phase takes H + C - 1 timesteps of D / 3C: about 2D/3 link
// times in all, so TTO uses nearly every link direction of the mesh.
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The mesh as Algorithm 2 sees it: the excluded corner at canonical
// (0, Y-1); `flip_x`/`flip_y` map canonical coordinates onto the device's.
typedef struct Frame {
  const Topology *t;
  int X, Y;
  bool flip_x, flip_y;
} Frame;

static int device_at(const Frame *f, int x, int y) {
  if (f->flip_x) x = f->X - 1 - x;
  if (f->flip_y) y = f->Y - 1 - y;
  return x + f->X * y;
}

static bool is_2d_mesh(const Topology *t) {
  return t->family == FAMILY_MESH && t->ndims == 2 && t->dims[0] >= 2 && t->dims[1] >= 2;
}

// The corner missing from the group, if the group is exactly the mesh
// minus one corner; otherwise -1 and why.
static int excluded_corner(const Lowering *l, char *why, size_t whylen) {
  const Topology *t = l->c->topo;
  int X = t->dims[0], Y = t->dims[1], corners[4] = {0, X - 1, X * (Y - 1), X * Y - 1};
  for (int d = 0; d < t->ndevices; d++) {  // a failed device that is not a corner: no group can do
    bool corner = d == corners[0] || d == corners[1] || d == corners[2] || d == corners[3];
    if (t->device_failed && t->device_failed[d] && !corner) {
      const Role *role = ir_failed_role(t, ir_device_unit(t, d));
      snprintf(why, whylen, "its trees need every device of the mesh but one corner, and device %d%s has failed", d,
               role && role->spare >= 0 ? " (which a spare stands in for)" : "");
      return -1;
    }
  }
  bool *in = xcalloc((size_t)t->ndevices, sizeof(bool));
  for (int g = 0; g < l->ngroup; g++) in[l->group[g]] = true;
  int missing = -1;
  for (int k = 0; k < 4; k++)
    if (!in[corners[k]]) missing = corners[k];
  free(in);
  if (missing >= 0 && l->ngroup == t->ndevices - 1) return missing;
  snprintf(why, whylen,
           "it needs the group to be the whole mesh but one corner (`@ each except device(K)`, K one of %d, %d, "
           "%d, %d), and the group has %d of the %d devices%s",
           corners[0], corners[1], corners[2], corners[3], l->ngroup, t->ndevices,
           l->ngroup == t->ndevices ? "" : (missing >= 0 ? ", more than one missing" : ", no corner missing"));
  return -1;
}

// Tree A (the root shares the excluded corner's column) or B (its row):
// the root's line first, then every perpendicular line from it.
static void line_first_tree(const Frame *f, TreeSet *ts, int t, bool column_first) {
  int *parent = ts->parent + (size_t)t * ts->ndevices;
  for (int y = 0; y < f->Y; y++)
    for (int x = 0; x < f->X; x++) {
      int me = device_at(f, x, y);
      if (column_first)  // root (0, 0): column 0 down, then rows rightwards
        parent[me] = x > 0 ? device_at(f, x - 1, y) : y > 0 ? device_at(f, 0, y - 1) : -1;
      else  // root (X-1, Y-1): row Y-1 leftwards, then columns upwards
        parent[me] = y < f->Y - 1 ? device_at(f, x, y + 1) : x < f->X - 1 ? device_at(f, x + 1, y) : -1;
    }
  lower_trees_depths(ts, t, column_first ? device_at(f, 0, 0) : device_at(f, f->X - 1, f->Y - 1));
}

// Whether the link direction a -> b is an edge (parent -> child) of tree t.
static bool tree_uses(const TreeSet *ts, int t, int a, int b) { return ts->parent[(size_t)t * ts->ndevices + b] == a; }

// Tree C from the corner opposite the excluded one: breadth-first over the
// working links whose direction neither tree A nor B takes.
static void leftover_tree(const Frame *f, TreeSet *ts, int excluded) {
  const Topology *t = f->t;
  int root = device_at(f, f->X - 1, 0), nd = t->ndevices, *parent = ts->parent + 2 * (size_t)nd;
  int *step = ts->step + 2 * (size_t)nd, *queue = xmalloc(sizeof(int) * (size_t)nd);
  int head = 0, tail = 0;
  step[root] = 0;
  queue[tail++] = root;
  while (head < tail) {
    int u = queue[head++];
    const Device *d = &t->devices[u];
    for (int p = 0; p < d->nports; p++) {
      int v = d->ports[p].peer, link = d->ports[p].link;
      if (link < 0 || t->links.data[link].failed || v == excluded || step[v] >= 0) continue;
      if (tree_uses(ts, 0, u, v) || tree_uses(ts, 1, u, v)) continue;
      parent[v] = u;
      step[v] = step[u] + 1;
      queue[tail++] = v;
    }
  }
  free(queue);
}

// Whether every edge of the three trees has a working link; if not, why.
static bool edges_work(const Topology *t, const TreeSet *ts, char *why, size_t whylen) {
  for (int k = 0; k < ts->ntrees; k++)
    for (int d = 0; d < ts->ndevices; d++) {
      int p = ts->parent[(size_t)k * ts->ndevices + d];
      if (p >= 0 && ring_link_between(t, p, d, -1) < 0) {
        snprintf(why, whylen, "its trees need the link between device %d and device %d, which has failed", p, d);
        return false;
      }
    }
  return true;
}

// The three trees for this group, or NULL and why.
static TreeSet *tto_trees(const Lowering *l, char *why, size_t whylen) {
  const Topology *t = l->c->topo;
  if (!is_2d_mesh(t)) {
    const char *family = t->family == FAMILY_MESH       ? "mesh of other dimensions"
                         : t->family == FAMILY_EXPLICIT ? "explicit graph"
                         : t->family == FAMILY_FULLY_CONNECTED ? "fully connected system"
                                                        : ir_family_names[t->family];
    snprintf(why, whylen, "it needs a 2-D mesh of at least 2 x 2 devices, and %s is %s %s", t->name,
             strchr("aeiou", family[0]) ? "an" : "a", family);
    return NULL;
  }
  int excluded = excluded_corner(l, why, whylen);
  if (excluded < 0) return NULL;
  Frame f = {.t = t, .X = t->dims[0], .Y = t->dims[1]};
  f.flip_x = t->devices[excluded].coord[0] != 0;
  f.flip_y = t->devices[excluded].coord[1] != f.Y - 1;
  TreeSet *ts = lower_trees_new(l, 3);
  line_first_tree(&f, ts, 0, true);
  line_first_tree(&f, ts, 1, false);
  leftover_tree(&f, ts, excluded);
  if (edges_work(t, ts, why, whylen) && lower_trees_fit(l, ts, why, whylen)) return ts;
  lower_trees_free(ts);
  return NULL;
}

static bool tto_applies(const Lowering *l, char *why, size_t whylen) {
  if (l->op->kind != OP_ALLREDUCE) {
    snprintf(why, whylen, "its three trees are rooted at 3 devices, not one per device, so it lowers allreduce only");
    return false;
  }
  return lower_trees_apply(l, tto_trees, why, whylen);
}

static void tto_lower(Lowering *l) { lower_trees_build(l, tto_trees); }

const CollectiveAlgo algo_tto = {ALGO_TTO, tto_applies, tto_lower, tto_trees, NULL};
