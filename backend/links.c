// links.c: the link-utilisation atlas (tspc --emit=links writes links.yaml
// and links.svg).  Part of backend/: it reads the scheduled DAG's routes,
// the alignment plan and the program's predicted cycles, and changes
// nothing.
//
// For every direction of every link (a cable carries one each way): the
// vectors that cross it (each route hop's vectors, and the preamble's one
// notification from a parent to each child of the alignment tree, seed 002
// s3.2), the cycles they hold it (vectors x the link's cycles per vector),
// its utilisation (busy cycles over the program's cycles, the preamble
// included: what tsp-emu's --report measures on a deterministic run), and
// the ops whose transfers use it.
//
// links.svg draws the topology with each link direction a line coloured by
// its utilisation: a mesh or torus as its grid (a third dimension as grids
// side by side), a dragonfly as racks of nodes, each node its TSPs round a
// small circle, anything else round one circle.  Two directions of a
// cable are two lines side by side; a link that does not join neighbours
// on the page (a torus's wrap, a bypass) bends.  A legend gives the scale,
// and the hottest link directions are numbered on the picture and named.
#include "backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- the figures -------------------------------------------------------------

// The ops using a direction, -1 for the alignment preamble, in first-use order.
typedef struct Users {
  int n, cap;
  int *op;
} Users;

static void add_user(Users *u, int op) {
  for (int i = 0; i < u->n; i++)
    if (u->op[i] == op) return;
  if (u->n == u->cap) {
    u->cap = u->cap ? 2 * u->cap : 4;
    u->op = xrealloc(u->op, sizeof(int) * (size_t)u->cap);
  }
  u->op[u->n++] = op;
}

typedef struct Direction {
  const Link *link;
  int from, from_port, to, to_port;
  int64_t vectors, busy;
  double utilisation;
  Users users;
} Direction;

typedef struct Atlas {
  const ManifestInfo *m;
  int n;             // 2 x links: direction 2 l is a -> b, 2 l + 1 is b -> a
  Direction *dir;
  int64_t cycles;    // the program's predicted cycles
  int used, working; // directions that carry something; that are not failed
} Atlas;

static Direction *direction_of(Atlas *a, int link, int from) {
  return &a->dir[2 * link + (from != a->m->topo->links.data[link].a)];
}

static void carry(Atlas *a, int link, int from, int64_t vectors, int user) {
  Direction *d = direction_of(a, link, from);
  d->vectors += vectors;
  add_user(&d->users, user);
}

static void count_routes(Atlas *a) {
  const Dag *dag = a->m->dag;
  for (int i = 0; i < dag->nodes.len; i++) {
    const DagNode *n = dag->nodes.data[i];
    for (int r = 0; n->kind == NODE_TRANSFER && r < n->nroutes; r++)
      for (int h = 0; h < n->routes[r].path.nhops; h++)
        carry(a, n->routes[r].path.hops[h].link, n->routes[r].path.hops[h].from, n->routes[r].count, n->op->id);
  }
}

// One notification from each working device's parent in the alignment tree.
static void count_preamble(Atlas *a) {
  const Topology *t = a->m->topo;
  const AlignPlan *plan = &a->m->sync->align;
  for (int d = 0; d < t->ndevices; d++) {
    if (plan->parent[d] < 0 || !a->m->program->devices[d].units.len) continue;
    carry(a, t->devices[d].ports[plan->parent_port[d]].link, plan->parent[d], 1, -1);
  }
}

static Atlas *atlas_new(const ManifestInfo *m) {
  const Topology *t = m->topo;
  Atlas *a = xcalloc(1, sizeof *a);
  *a = (Atlas){.m = m, .n = 2 * t->links.len, .cycles = m->program->predicted_cycles};
  a->dir = xcalloc((size_t)a->n + 1, sizeof *a->dir);
  for (int l = 0; l < t->links.len; l++) {
    const Link *k = &t->links.data[l];
    a->dir[2 * l] = (Direction){.link = k, .from = k->a, .from_port = k->a_port, .to = k->b, .to_port = k->b_port};
    a->dir[2 * l + 1] = (Direction){.link = k, .from = k->b, .from_port = k->b_port, .to = k->a, .to_port = k->a_port};
  }
  count_preamble(a);
  count_routes(a);
  for (int i = 0; i < a->n; i++) {
    Direction *d = &a->dir[i];
    d->busy = d->vectors * ir_cycles_per_vector(&d->link->p, t->clock_mhz);
    d->utilisation = a->cycles > 0 ? (double)d->busy / (double)a->cycles : 0;
    a->used += d->vectors > 0;
    a->working += !d->link->failed;
  }
  return a;
}

static void atlas_free(Atlas *a) {
  for (int i = 0; i < a->n; i++) free(a->dir[i].users.op);
  free(a->dir);
  free(a);
}

// "allreduce s (multitree)", "copy y", "alignment".
static void user_name(Buf *b, const ManifestInfo *m, int user) {
  b->len = 0;
  if (user < 0) {
    buf_printf(b, "alignment");
    return;
  }
  const Op *op = m->graph->ops.data[user];
  buf_printf(b, "%s %s", ir_op_info[op->kind].name, op->result->name);
  if (ir_op_is_collective(op->kind)) buf_printf(b, " (%s)", ir_algo_names[m->algos ? m->algos[op->id] : op->algo]);
}

// ---- links.yaml --------------------------------------------------------------

static void write_users(FILE *out, const Atlas *a, const Users *u) {
  Buf name = {0};
  fputs(", users: [", out);
  int shown = MIN(u->n, BE_LINKS_MAX_USERS);
  for (int i = 0; i < shown; i++) {
    user_name(&name, a->m, u->op[i]);
    if (i) fputs(", ", out);
    str_print_yaml(out, name.data);
  }
  fputc(']', out);
  if (u->n > shown) fprintf(out, ", more_users: %d", u->n - shown);
  buf_free(&name);
}

static void write_yaml(const Atlas *a, FILE *out) {
  const Topology *t = a->m->topo;
  fprintf(out, "# links.yaml: every link direction of %s, what crosses it and how busy it is (tspc --emit=links).\n",
          t->name);
  fprintf(out, "# utilisation = busy_cycles / cycles; busy_cycles = vectors x the link's cycles per vector.\n");
  fprintf(out, "topology: ");
  str_print_yaml(out, t->name);
  fprintf(out, "\ncycles: %lld\npreamble_cycles: %lld\n", (long long)a->cycles, (long long)a->m->sync->preamble_cycles);
  fprintf(out, "link_directions: %d\nworking: %d\nused: %d\nlinks:%s\n", a->n, a->working, a->used, a->n ? "" : " []");
  for (int i = 0; i < a->n; i++) {
    const Direction *d = &a->dir[i];
    fprintf(out, "  - {link: %d, kind: %s, from: %d, port: %d, to: %d, to_port: %d, vectors: %lld, busy_cycles: %lld, "
                 "utilisation: %.6f",
            d->link->id, ir_link_kind_names[d->link->kind], d->from, d->from_port, d->to, d->to_port,
            (long long)d->vectors, (long long)d->busy, d->utilisation);
    if (d->link->failed) fputs(", failed: true", out);
    write_users(out, a, &d->users);
    fputs("}\n", out);
  }
}

// ---- links.svg: places -------------------------------------------------------

// Pixels between neighbouring devices of a grid; a device's dot; the room
// round the drawing; the legend's width.
#define SVG_GRID_SPACING 80.0
#define SVG_DEVICE_RADIUS 6.0
#define SVG_MARGIN 70.0
#define SVG_LEGEND_WIDTH 340.0
// A dragonfly node: its TSPs round a circle of this radius, the nodes of a
// rack round a circle with this much room between neighbouring nodes.
#define SVG_NODE_RADIUS 36.0
#define SVG_NODE_GAP 50.0
// Pixels between the two directions of a cable.
#define SVG_DIRECTION_OFFSET 1.6

typedef struct Point {
  double x, y;
} Point;

typedef struct Picture {
  Point *at;         // by device
  double width, height;
} Picture;

static Point on_circle(Point centre, double radius, int i, int n) {
  double pi = acos(-1), angle = -pi / 2 + 2 * pi * i / n;
  return (Point){centre.x + radius * cos(angle), centre.y + radius * sin(angle)};
}

// A mesh or torus: x right, y down (row 0 on top); each layer of a third
// dimension a grid of its own to the right of the one before.
static void place_grid(const Topology *t, Picture *p) {
  int nx = t->dims[0], ny = t->ndims >= 2 ? t->dims[1] : 1;
  for (int d = 0; d < t->ndevices; d++) {
    const int *c = t->devices[d].coord;
    int z = t->ndims >= 3 ? c[2] : 0;
    p->at[d] = (Point){SVG_MARGIN + (c[0] + z * (nx + 1)) * SVG_GRID_SPACING,
                       SVG_MARGIN + (t->ndims >= 2 ? c[1] : 0) * SVG_GRID_SPACING};
  }
  int layers = t->ndims >= 3 ? t->dims[2] : 1;
  p->width = 2 * SVG_MARGIN + ((nx + 1) * layers - 2) * SVG_GRID_SPACING;
  p->height = 2 * SVG_MARGIN + (ny - 1) * SVG_GRID_SPACING;
}

// A dragonfly: racks side by side in rows, the nodes of a rack round a
// circle, the TSPs of a node round a small one.
static void place_dragonfly(const Topology *t, Picture *p) {
  int nodes = t->df.nodes_per_rack, racks = t->df.racks, tpn = t->df.tsps_per_node;
  double pi = acos(-1);
  double rack_radius = MAX(2 * SVG_NODE_RADIUS, nodes * (2 * SVG_NODE_RADIUS + SVG_NODE_GAP) / (2 * pi));
  double rack_size = 2 * (rack_radius + SVG_NODE_RADIUS) + SVG_NODE_GAP;
  int columns = (int)ceil(sqrt((double)racks)), rows = (racks + columns - 1) / columns;
  for (int d = 0; d < t->ndevices; d++) {
    const int *c = t->devices[d].coord;  // rack, node, tsp
    Point rack = {SVG_MARGIN + (c[0] % columns + 0.5) * rack_size, SVG_MARGIN + (c[0] / columns + 0.5) * rack_size};
    Point node = on_circle(rack, rack_radius, c[1], nodes);
    p->at[d] = on_circle(node, SVG_NODE_RADIUS, c[2], tpn);
  }
  p->width = 2 * SVG_MARGIN + columns * rack_size;
  p->height = 2 * SVG_MARGIN + rows * rack_size;
}

static void place_circle(const Topology *t, Picture *p) {
  double pi = acos(-1), radius = MAX(2 * SVG_GRID_SPACING, t->ndevices * SVG_GRID_SPACING / (2 * pi));
  Point centre = {SVG_MARGIN + radius, SVG_MARGIN + radius};
  for (int d = 0; d < t->ndevices; d++) p->at[d] = on_circle(centre, radius, d, t->ndevices);
  p->width = p->height = 2 * (SVG_MARGIN + radius);
}

static Picture place(const Topology *t) {
  Picture p = {.at = xcalloc((size_t)t->ndevices + 1, sizeof(Point))};
  if (t->family == FAMILY_MESH || t->family == FAMILY_TORUS)
    place_grid(t, &p);
  else if (t->family == FAMILY_DRAGONFLY)
    place_dragonfly(t, &p);
  else
    place_circle(t, &p);
  return p;
}

// ---- links.svg: colours ------------------------------------------------------

// The utilisation scale, 0 to 1, from cool to hot (ColorBrewer's RdYlBu
// reversed); between stops the colour is interpolated.
static const unsigned svg_scale[] = {0x2c7bb6, 0xabd9e9, 0xffffbf, 0xfdae61, 0xd7191c};
#define SVG_SCALE_STOPS ((int)ARRAY_LEN(svg_scale))
#define SVG_UNUSED_COLOR "#d0d0d0"

static void scale_color(double u, char *out, size_t n) {
  double x = MIN(MAX(u, 0), 1) * (SVG_SCALE_STOPS - 1);
  int i = MIN((int)x, SVG_SCALE_STOPS - 2);
  double f = x - i;
  unsigned lo = svg_scale[i], hi = svg_scale[i + 1], rgb[3];
  for (int k = 0; k < 3; k++) {
    int shift = 16 - 8 * k;
    double a = (lo >> shift) & 0xff, b = (hi >> shift) & 0xff;
    rgb[k] = (unsigned)lround(a + (b - a) * f);
  }
  snprintf(out, n, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

// Text for an SVG element, with &, < and > escaped.
static void write_xml_text(FILE *out, const char *s) {
  for (; *s; s++) {
    if (*s == '&') fputs("&amp;", out);
    else if (*s == '<') fputs("&lt;", out);
    else if (*s == '>') fputs("&gt;", out);
    else fputc(*s, out);
  }
}

// ---- links.svg: drawing ------------------------------------------------------

// Whether a and b are neighbours on the page (a straight line between them
// crosses no other device): grid neighbours, devices of one dragonfly
// node, or neighbours round a circle.
static bool straight(const Topology *t, const Picture *p, int a, int b) {
  double dx = p->at[a].x - p->at[b].x, dy = p->at[a].y - p->at[b].y, dist = sqrt(dx * dx + dy * dy);
  if (t->family == FAMILY_MESH || t->family == FAMILY_TORUS) return dist < 1.01 * SVG_GRID_SPACING;
  return true;
}

// Direction i's line: offset to its right of the cable (the two directions
// side by side), bent outwards when the ends are not neighbours.
static void write_direction(FILE *out, const Atlas *a, const Picture *p, int i, int rank) {
  const Direction *d = &a->dir[i];
  Point s = p->at[d->from], e = p->at[d->to];
  double dx = e.x - s.x, dy = e.y - s.y, len = sqrt(dx * dx + dy * dy);
  if (len <= 0) return;
  double nx = -dy / len * SVG_DIRECTION_OFFSET, ny = dx / len * SVG_DIRECTION_OFFSET;
  char color[16];
  if (d->vectors) scale_color(d->utilisation, color, sizeof color);
  else snprintf(color, sizeof color, "%s", SVG_UNUSED_COLOR);
  fprintf(out, "<path d=\"M%.1f,%.1f ", s.x + nx, s.y + ny);
  if (straight(a->m->topo, p, d->from, d->to)) {
    fprintf(out, "L%.1f,%.1f\"", e.x + nx, e.y + ny);
  } else {  // a quadratic bend a quarter of the length to the side
    double bend = d->from < d->to ? 0.25 : -0.25;
    fprintf(out, "Q%.1f,%.1f %.1f,%.1f\"", (s.x + e.x) / 2 - dy * bend + nx, (s.y + e.y) / 2 + dx * bend + ny,
            e.x + nx, e.y + ny);
  }
  fprintf(out, " stroke=\"%s\" stroke-width=\"%s\" fill=\"none\"%s>", color, d->vectors ? "2.2" : "1",
          d->link->failed ? " stroke-dasharray=\"4,3\"" : "");
  fprintf(out, "<title>dev%d port %d -&gt; dev%d: %.1f %%, %lld vectors</title></path>\n", d->from, d->from_port,
          d->to, 100 * d->utilisation, (long long)d->vectors);
  if (rank > 0)
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" font-weight=\"bold\" fill=\"#000\">%d</text>\n",
            (s.x + e.x) / 2 + 4 * nx, (s.y + e.y) / 2 + 4 * ny, rank);
}

static void write_devices(FILE *out, const Topology *t, const Picture *p) {
  bool labels = t->ndevices <= 64;
  for (int d = 0; d < t->ndevices; d++) {
    fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" stroke=\"#333\"><title>dev%d</title></circle>\n",
            p->at[d].x, p->at[d].y, SVG_DEVICE_RADIUS, ir_device_failed(t, d) ? "#eee" : "#fff", d);
    if (labels)
      fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"8\" text-anchor=\"middle\">%d</text>\n", p->at[d].x,
              p->at[d].y + 3, d);
  }
}

// A dragonfly's node names ("r0 n3", "n3" in one rack) just outside each
// node, away from the middle of its rack.
static void write_node_labels(FILE *out, const Topology *t, const Picture *p) {
  int tpn = t->df.tsps_per_node;
  Point *rack = xcalloc((size_t)t->df.racks + 1, sizeof(Point));
  for (int d = 0; d < t->ndevices; d++) {
    double share = 1.0 / (tpn * t->df.nodes_per_rack);
    rack[t->devices[d].coord[0]].x += p->at[d].x * share, rack[t->devices[d].coord[0]].y += p->at[d].y * share;
  }
  for (int first = 0; first + tpn <= t->ndevices; first += tpn) {
    const int *coord = t->devices[first].coord;
    Point c = {0, 0}, r = rack[coord[0]];
    for (int k = 0; k < tpn; k++) c.x += p->at[first + k].x / tpn, c.y += p->at[first + k].y / tpn;
    double dx = c.x - r.x, dy = c.y - r.y, len = sqrt(dx * dx + dy * dy), out_by = SVG_NODE_RADIUS + 16;
    if (len > 0) c.x += dx / len * out_by, c.y += dy / len * out_by;
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" fill=\"#444\">", c.x, c.y + 4);
    if (t->df.racks > 1) fprintf(out, "r%d ", coord[0]);
    fprintf(out, "node %d</text>\n", coord[1]);
  }
  free(rack);
}

// A direction's busy cycles and index, to sort by.
typedef struct Heat {
  int64_t busy;
  int index;
} Heat;

// Hottest first; ties: the lower index first.
static int hotter(const void *x, const void *y) {
  const Heat *a = x, *b = y;
  if (a->busy != b->busy) return a->busy > b->busy ? -1 : 1;
  return a->index - b->index;
}

// rank[i]: 1 .. BE_LINKS_SVG_HOTTEST for the hottest used directions, else
// 0; returns how many are ranked, their indices in order in hot.
static int rank_hottest(const Atlas *a, int *rank, int *hot) {
  Heat *order = xmalloc(sizeof(Heat) * ((size_t)a->n + 1));
  for (int i = 0; i < a->n; i++) order[i] = (Heat){a->dir[i].busy, i};
  qsort(order, (size_t)a->n, sizeof(Heat), hotter);
  int n = 0;
  for (int i = 0; i < a->n && n < BE_LINKS_SVG_HOTTEST && order[i].busy > 0; i++) {
    hot[n] = order[i].index;
    rank[order[i].index] = ++n;
  }
  free(order);
  return n;
}

static void write_legend(FILE *out, const Atlas *a, double x, const int *hot, int nhot) {
  const Topology *t = a->m->topo;
  fprintf(out, "<g font-size=\"12\" transform=\"translate(%.1f,%.1f)\">\n", x, SVG_MARGIN);
  fputs("<text font-size=\"14\" font-weight=\"bold\">link utilisation: ", out);
  write_xml_text(out, t->name);
  fputs("</text>\n", out);
  fprintf(out, "<text y=\"18\">%lld cycles, %d of %d link directions used</text>\n", (long long)a->cycles, a->used,
          a->working);
  fputs("<defs><linearGradient id=\"scale\">", out);
  for (int i = 0; i < SVG_SCALE_STOPS; i++)
    fprintf(out, "<stop offset=\"%d%%\" stop-color=\"#%06x\"/>", 100 * i / (SVG_SCALE_STOPS - 1), svg_scale[i]);
  fputs("</linearGradient></defs>\n<rect y=\"32\" width=\"200\" height=\"14\" fill=\"url(#scale)\" stroke=\"#333\"/>\n", out);
  for (int i = 0; i <= 4; i++)
    fprintf(out, "<text x=\"%d\" y=\"60\" text-anchor=\"middle\" font-size=\"10\">%d %%</text>\n", 50 * i, 25 * i);
  fprintf(out, "<line x1=\"0\" y1=\"76\" x2=\"30\" y2=\"76\" stroke=\"%s\" stroke-width=\"2\"/>"
               "<text x=\"36\" y=\"80\">unused</text>\n", SVG_UNUSED_COLOR);
  fputs("<line x1=\"90\" y1=\"76\" x2=\"120\" y2=\"76\" stroke=\"#888\" stroke-dasharray=\"4,3\"/>"
        "<text x=\"126\" y=\"80\">failed</text>\n", out);
  fputs("<text y=\"104\" font-weight=\"bold\">hottest link directions</text>\n", out);
  for (int i = 0; i < nhot; i++) {
    const Direction *d = &a->dir[hot[i]];
    fprintf(out, "<text y=\"%d\">%d. dev%d port %d -&gt; dev%d: %.1f %% (%lld vectors)</text>\n", 122 + 16 * i, i + 1,
            d->from, d->from_port, d->to, 100 * d->utilisation, (long long)d->vectors);
  }
  if (!nhot) fputs("<text y=\"122\">none: nothing crosses a link</text>\n", out);
  fputs("</g>\n", out);
}

static void write_svg(const Atlas *a, FILE *out) {
  const Topology *t = a->m->topo;
  Picture p = place(t);
  int *rank = xcalloc((size_t)a->n + 1, sizeof(int)), hot[BE_LINKS_SVG_HOTTEST];
  int nhot = rank_hottest(a, rank, hot);
  double width = p.width + SVG_LEGEND_WIDTH, height = MAX(p.height, 2 * SVG_MARGIN + 122 + 16 * BE_LINKS_SVG_HOTTEST);
  fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\">\n<desc>links.svg: link utilisation of ",
          width, height, width, height);
  write_xml_text(out, t->name);
  fputs(" (tspc --emit=links); links.yaml holds the figures</desc>\n", out);
  fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
  for (int pass = 0; pass < 2; pass++)  // unused links first, under the used ones
    for (int i = 0; i < a->n; i++)
      if ((a->dir[i].vectors > 0) == pass) write_direction(out, a, &p, i, rank[i]);
  write_devices(out, t, &p);
  if (t->family == FAMILY_DRAGONFLY) write_node_labels(out, t, &p);
  write_legend(out, a, p.width, hot, nhot);
  fputs("</svg>\n", out);
  free(rank);
  free(p.at);
}

// ---- both files --------------------------------------------------------------

void be_write_links(const ManifestInfo *m, FILE *yaml, FILE *svg) {
  Atlas *a = atlas_new(m);
  write_yaml(a, yaml);
  write_svg(a, svg);
  atlas_free(a);
}
