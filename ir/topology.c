// topology.c: the topology IR's tables and the two primitives every family
// is wired with: allocate devices, plug a cable into two ports.  Part of ir/.
#include "ir.h"

#include <math.h>

const char *const ir_family_names[FAMILY_COUNT] = {
#define X(e, name) name,
    IR_FAMILIES(X)
#undef X
};

const char *const ir_link_kind_names[LINK_KIND_COUNT] = {
#define X(e, name) name,
    IR_LINK_KINDS(X)
#undef X
};

LinkParams ir_link_defaults(void) {
  return (LinkParams){
      .gbps = IR_DEFAULT_GBPS,
      .latency_min = IR_DEFAULT_LATENCY_MIN,
      .latency_max = IR_DEFAULT_LATENCY_MAX,
      .vector_bytes = IR_DEFAULT_VECTOR_BYTES,
      .wire_bytes = IR_DEFAULT_WIRE_BYTES,
  };
}

// One vector holds a link direction for wire_bytes * 8 bits at gbps, in
// cycles of a clock_mhz clock, rounded up: 328 * 8 * 900e6 / 100e9 = 23.6 -> 24.
// A relative tolerance absorbs the rounding of decimal rates (26.24 Gb/s is
// exactly 90 cycles, not 91); no vector takes less than one cycle.
int ir_cycles_per_vector(const LinkParams *p, double clock_mhz) {
  double cycles = (double)p->wire_bytes * 8.0 * clock_mhz / (p->gbps * 1000.0);
  if (!(cycles <= IR_MAX_CYCLES_PER_VECTOR)) return -1;
  return MAX(1, (int)ceil(cycles * (1 - 1e-12)));
}

void ir_topo_init_devices(Topology *t, Arena *a, int n, int nports) {
  t->ndevices = n;
  t->devices = ARENA_ARRAY(a, Device, n);
  for (int i = 0; i < n; i++) {
    Device *d = &t->devices[i];
    d->id = i;
    d->nports = d->port_cap = nports;
    d->ports = ARENA_ARRAY(a, Port, nports ? nports : 1);
    for (int p = 0; p < nports; p++) d->ports[p] = (Port){.link = -1, .peer = -1, .peer_port = -1};
  }
}

// Returns port `p` of d, or a new port at the end when p < 0 (the port
// array doubles when full, so n ports cost O(n)).
static int claim_port(Device *d, Arena *a, int p) {
  if (p >= 0) return p;
  if (d->nports == d->port_cap) {
    d->port_cap = MAX(4, 2 * d->port_cap);
    Port *ports = ARENA_ARRAY(a, Port, d->port_cap);
    for (int i = 0; i < d->nports; i++) ports[i] = d->ports[i];
    d->ports = ports;
  }
  d->ports[d->nports] = (Port){.link = -1, .peer = -1, .peer_port = -1};
  return d->nports++;
}

int ir_topo_connect(Topology *t, Arena *a, int da, int pa, int db, int pb, LinkKind kind,
                    LinkParams p) {
  Device *A = &t->devices[da], *B = &t->devices[db];
  pa = claim_port(A, a, pa);
  pb = claim_port(B, a, pb);
  if (da == db || A->ports[pa].link >= 0 || B->ports[pb].link >= 0)
    die("wiring bug: link %d:%d - %d:%d", da, pa, db, pb);
  int id = t->links.len;
  Link l = {.id = id, .a = da, .b = db, .a_port = pa, .b_port = pb, .kind = kind, .p = p};
  VEC_PUSH(a, &t->links, l);
  A->ports[pa] = (Port){.link = id, .peer = db, .peer_port = pb};
  B->ports[pb] = (Port){.link = id, .peer = da, .peer_port = pa};
  return id;
}
