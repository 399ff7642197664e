// ring4.h: the ring of four devices the binary-loader and manifest fuzzers
// check their inputs against, loaded on the first input and kept.
#ifndef FUZZ_RING4_H
#define FUZZ_RING4_H

#include "../../runtime/emu.h"

static Topology *fuzz_ring4(Diag *d) {
  static Arena arena;
  static Topology *ring4;
  if (!ring4) ring4 = fe_load_topology_text(&arena, d, "ring4.yaml", "topology: ring\ndevices: 4\n");
  return ring4;
}

#endif
