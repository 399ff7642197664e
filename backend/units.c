// units.c: how busy each device's functional units are in a compiled
// program (tspc --stats).  Part of backend/: it reads the device programs
// code generation wrote, and the graph for the useful work of the matrix
// unit, and prints one line per device that computes.
//
// A unit is busy for the cycles its instructions hold it (isa_issue_cycles:
// WAIT, SYNC, DESKEW, POLL and HALT are idle); the matrix unit's install
// path for the cycles its MXLW/MXLWT installs read weights.  The matrix
// unit's utilisation is the seed's measure (002 s5.2, fig 13): useful
// multiply-accumulates over what the unit could have done in the whole run,
//     sum over matmuls of rows x K x N / (peak MACs a cycle x cycles),
// with peak = rows a cycle x K x ISA_MXM_COLS for the matmul's dtype.
#include "backend.h"

// Cycles an instruction keeps its unit working (idle instructions: 0).
static int64_t busy_cycles(const Instr *in, int vector_bytes) {
  switch ((Opcode)in->op) {
  case OPC_WAIT: case OPC_SYNC: case OPC_DESKEW: case OPC_POLL: case OPC_HALT: case OPC_NOTIFY: return 0;
  case OPC_SEND: case OPC_RECV: return in->b;  // the port streams b vectors (one a link slot)
  default: return isa_issue_cycles(in, vector_bytes);
  }
}

// The ideal matrix-unit cycles of the matmuls computed on device: useful
// MACs over the peak rate of their dtype.
static double ideal_mxm_cycles(const Graph *g, const Topology *t, int device) {
  double cycles = 0;
  int vb = t->link.vector_bytes;
  for (int i = 0; i < g->ops.len; i++) {
    const Op *op = g->ops.data[i];
    if (op->kind != OP_MATMUL || !ir_place_has(&op->result->place, device)) continue;
    const Tensor *x = op->args[0], *y = op->result;
    double k = (double)x->shape.dim[x->shape.rank - 1], n = (double)y->shape.dim[y->shape.rank - 1];
    double macs = (double)ir_shape_elems(&x->shape) / k * k * n;
    double peak = (double)isa_mxm_rows_per_cycle(x->dtype) * isa_elems_per_vector(x->dtype, vb) * ISA_MXM_COLS;
    cycles += macs / peak;
  }
  return cycles;
}

typedef struct UnitBusy {
  int64_t vxm, mxm, install, sxm, c2c;
} UnitBusy;

static UnitBusy device_busy(const DeviceProgram *dp, int vector_bytes) {
  UnitBusy b = {0};
  for (int u = 0; u < dp->units.len; u++) {
    const UnitProgram *up = &dp->units.data[u];
    for (int i = 0; i < up->code.len; i++) {
      const Instr *in = &up->code.data[i];
      int64_t c = busy_cycles(in, vector_bytes);
      switch (up->kind) {
      case UNIT_VXM: b.vxm += c; break;
      case UNIT_SXM: b.sxm += c; break;
      case UNIT_C2C: b.c2c += c; break;
      case UNIT_CTL: break;
      case UNIT_MXM:
        if (in->op == OPC_MXLW || in->op == OPC_MXLWT)
          b.install += isa_mxm_install_cycles(in, vector_bytes);
        else
          b.mxm += c;
        break;
      case UNIT_KIND_COUNT: break;
      }
    }
  }
  return b;
}

void be_print_unit_report(const Graph *g, const Topology *t, const Program *p, FILE *out) {
  int vb = t->link.vector_bytes;
  int64_t cycles = p->predicted_cycles;
  fprintf(out, "units:  # busy cycles of each device that computes, of %lld\n", (long long)cycles);
  for (int d = 0; d < p->ndevices; d++) {
    UnitBusy b = device_busy(&p->devices[d], vb);
    if (!b.vxm && !b.mxm && !b.sxm) continue;
    double util = cycles > 0 ? ideal_mxm_cycles(g, t, d) / (double)cycles : 0;
    fprintf(out,
            "  - {device: %d, mxm: %lld, mxm_install: %lld, vxm: %lld, sxm: %lld, c2c: %lld, mxm_utilisation: %.4f}\n",
            d, (long long)b.mxm, (long long)b.install, (long long)b.vxm, (long long)b.sxm, (long long)b.c2c, util);
  }
}
