// units.c: how busy each device's functional units are in a compiled
// program (tspc --stats).  Part of backend/: it reads the device programs
// code generation wrote (the matrix unit's useful work from its MXM and
// MXMA instructions) and prints one line per device that computes.
//
// A unit is busy for the cycles its instructions hold it (isa_issue_cycles:
// WAIT, SYNC, DESKEW, POLL and HALT are idle; an install holds the matrix
// unit one cycle), the ports (c2c, summed over them) for every vector they
// send or take times the link's cycles a vector, and the matrix unit's
// install path for the cycles its MXLW/MXLWT installs read weights.  The
// utilisation counts the whole program, preamble included, as the seed's
// fig 13 does.  The matrix
// unit's utilisation is the seed's measure (002 s5.2, fig 13): useful
// multiply-accumulates over what the unit could have done in the whole run,
//     sum over MXM/MXMA of rows x kk x nn / (peak MACs a cycle x cycles),
// with kk x nn the tile its buffer holds and peak = rows a cycle x K x
// ISA_MXM_COLS for its dtype (K = elements a vector).
#include "backend.h"

// Cycles an instruction keeps its unit working (idle instructions: 0); a
// SEND or RECV holds its port for its vectors times the link's `every`.
static int64_t busy_cycles(const Instr *in, int vector_bytes, int every) {
  switch ((Opcode)in->op) {
  case OPC_WAIT: case OPC_SYNC: case OPC_DESKEW: case OPC_POLL: case OPC_HALT: case OPC_NOTIFY: return 0;
  case OPC_SEND: case OPC_RECV: return (int64_t)in->b * every;
  default: return isa_issue_cycles(in, vector_bytes);
  }
}

// Cycles one vector holds the link on a device's port (1 unplugged).
static int port_every(const Topology *t, int device, int port) {
  int link = port >= 0 && port < t->devices[device].nports ? t->devices[device].ports[port].link : -1;
  return link < 0 ? 1 : ir_cycles_per_vector(&t->links.data[link].p, t->clock_mhz);
}

// The ideal matrix-unit cycles of the multiplies a device's program issues:
// each MXM or MXMA's useful multiply-accumulates (its rows x the installed
// tile's kk x nn, the weights the buffer really holds) over the peak rate
// of its dtype.  Read from the instructions, so every op that multiplies
// counts: a matmul's tiles, a Cholesky's panel updates.
static double ideal_mxm_cycles(const DeviceProgram *dp, int vector_bytes) {
  int64_t kk[ISA_MXM_BUFFERS] = {0}, nn[ISA_MXM_BUFFERS] = {0};
  double cycles = 0;
  for (int u = 0; u < dp->units.len; u++) {
    const UnitProgram *up = &dp->units.data[u];
    if (up->kind != UNIT_MXM) continue;
    for (int i = 0; i < up->code.len; i++) {  // in issue order: an install precedes its multiplies
      const Instr *in = &up->code.data[i];
      DType dt = (DType)in->dtype;
      if (in->port >= ISA_MXM_BUFFERS) continue;  // the loader refuses it; not counted
      if (in->op == OPC_MXLW) kk[in->port] = in->c, nn[in->port] = in->d;
      if (in->op == OPC_MXLWT) kk[in->port] = in->d, nn[in->port] = in->c;
      if (in->op != OPC_MXM && in->op != OPC_MXMA) continue;
      double peak = (double)isa_mxm_rows_per_cycle(dt) * isa_elems_per_vector(dt, vector_bytes) * ISA_MXM_COLS;
      cycles += (double)in->d * (double)kk[in->port] * (double)nn[in->port] / peak;
    }
  }
  return cycles;
}

typedef struct UnitBusy {
  int64_t vxm, mxm, install, sxm, c2c;
} UnitBusy;

static UnitBusy device_busy(const Topology *t, const DeviceProgram *dp) {
  UnitBusy b = {0};
  int vector_bytes = t->link.vector_bytes;
  for (int u = 0; u < dp->units.len; u++) {
    const UnitProgram *up = &dp->units.data[u];
    int every = up->kind == UNIT_C2C ? port_every(t, dp->device, up->port) : 1;
    for (int i = 0; i < up->code.len; i++) {
      const Instr *in = &up->code.data[i];
      int64_t c = busy_cycles(in, vector_bytes, every);
      switch (up->kind) {
      case UNIT_VXM: b.vxm += c; break;
      case UNIT_SXM: b.sxm += c; break;
      case UNIT_C2C: b.c2c += c; break;
      case UNIT_CTL: break;
      case UNIT_MXM:
        b.mxm += c;  // an install's one issue cycle too
        if (in->op == OPC_MXLW || in->op == OPC_MXLWT) b.install += isa_mxm_install_cycles(in, vector_bytes);
        break;
      case UNIT_KIND_COUNT: break;
      }
    }
  }
  return b;
}

void be_print_unit_report(const Topology *t, const Program *p, FILE *out) {
  int64_t cycles = p->predicted_cycles;
  fprintf(out, "units:  # busy cycles of each device that computes, of %lld\n", (long long)cycles);
  for (int d = 0; d < p->ndevices; d++) {
    UnitBusy b = device_busy(t, &p->devices[d]);
    if (!b.vxm && !b.mxm && !b.sxm) continue;
    double util = cycles > 0 ? ideal_mxm_cycles(&p->devices[d], t->link.vector_bytes) / (double)cycles : 0;
    fprintf(out,
            "  - {device: %d, mxm: %lld, mxm_install: %lld, vxm: %lld, sxm: %lld, c2c: %lld, mxm_utilisation: %.4f}\n",
            d, (long long)b.mxm, (long long)b.install, (long long)b.vxm, (long long)b.sxm, (long long)b.c2c, util);
  }
}
