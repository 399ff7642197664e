// check.c: what the emulator checks once the run is over.  Part of runtime/.
// Units that never halted (a SYNC never notified, a stream without HALT),
// vectors that arrived and were never received, data that differs from the
// programs' .expect records or from the model's outputs (model.c), and, for
// a deterministic run, the cycle count against the manifest's prediction;
// first of all, the cables and devices that died during the run (fault.c),
// whose own units and ports are then not judged.
// Everything is computed from the programs, the topology and the model's
// graph; nothing the compiler claims is taken on trust.
#include "emu_internal.h"

#include <string.h>

// Each check goes over this rank's devices (all of them without MPI), each
// device's findings keyed by its phase and the device (window.c lists every
// rank's in that order).
static void check_units(Emu *e) {
  for (int i = 0; i < e->ndevs; i++) {
    EDev *d = &e->devs[i];
    if (fault_device_dead(e, d) || !emu_owns(e, i)) continue;  // its dead-device violation says it all
    window_key_after_run(e, EMU_AFTER_UNITS, (uint64_t)i);
    for (int u = 0; u < d->nunits; u++) {
      EUnit *unit = &d->units[u];
      switch (unit->state) {
      case UNIT_PARKED:
        emu_violate(e, VIOL_HANG, i, unit, -1, unit->wait_start, "SYNC is never notified");
        break;
      case UNIT_FELL_OFF:
        emu_violate(e, VIOL_HANG, i, unit, -1, unit->next_local,
                    "runs past its last instruction without HALT");
        break;
      case UNIT_READY:
        if (e->stop) break;
        if (e->cut_at)  // named at the limit, not at its next issue past it
          emu_violate(e, VIOL_HANG, i, unit, -1, emu_local_at_or_after(d, e->cut_at),
                      "had not halted when --max-cycles stopped the run (its next instruction was due at cycle %lld)",
                      (long long)unit->next_local);
        else
          emu_violate(e, VIOL_HANG, i, unit, -1, unit->next_local, "never halted");
        break;
      case UNIT_POLLING:  // a found hang reported these already
        if (!e->stop)
          emu_violate(e, VIOL_HANG, i, unit, unit->poll_port, unit->wait_start,
                      "POLL on port %d never saw its notification", unit->poll_port);
        break;
      default: break;
      }
    }
  }
}

static void check_leftovers(Emu *e) {
  size_t depth = (size_t)e->topo->rx_buffer_vectors;
  for (int i = 0; i < e->ndevs; i++)
    for (int p = 0; p < e->devs[i].nports; p++) {
      EPort *port = &e->devs[i].ports[p];
      if (port->rx.len == 0 || fault_device_dead(e, &e->devs[i]) || !emu_owns(e, i)) continue;
      window_key_after_run(e, EMU_AFTER_LEFTOVERS, (uint64_t)i << 16 | (uint64_t)p);
      if (port->rx.len > depth && !port->overflow_reported)
        emu_violate(e, VIOL_OVERFLOW, i, NULL, p, -1,
                    "port %d's receive buffer (%zu vectors) overflowed: %zu vectors were never taken",
                    p, depth, port->rx.len);
      emu_violate(e, VIOL_LEFTOVER, i, NULL, p, -1, "%zu vector%s arrived at port %d and %s never received",
                  port->rx.len, port->rx.len == 1 ? "" : "s", p, port->rx.len == 1 ? "was" : "were");
    }
}

// Element i of an .expect record, exactly as the dtype stores a * i + b.
static bool expect_matches(Emu *e, EDev *d, const DataRecord *r, char *why, size_t n) {
  int per = isa_elems_per_vector(r->dtype, e->vector_bytes);
  uint8_t want[EMU_MAX_VECTOR_BYTES];
  for (uint32_t v = 0; v < r->nvec; v++) {
    bool *written;
    const uint8_t *got = sram_vector(&d->sram, r->addr + v, NULL, &written);
    if (!*written) {
      snprintf(why, n, "vector %u was never written", r->addr + v);
      return false;
    }
    memset(want, 0, sizeof want);
    for (int j = 0; j < per; j++) num_set(r->dtype, want, j, r->a * ((double)v * per + j) + r->b);
    int size = ir_dtype_bytes[r->dtype];
    for (int j = 0; j < per; j++)
      if (memcmp(got + j * size, want + j * size, (size_t)size)) {
        snprintf(why, n, "vector %u element %d: expected %.9g, got %.9g", r->addr + v, j,
                 num_get(r->dtype, want, j), num_get(r->dtype, got, j));
        return false;
      }
  }
  return true;
}

static void check_data(Emu *e) {
  bool any = false, all = true;
  for (int i = 0; i < e->ndevs; i++) {
    EDev *d = &e->devs[i];
    window_key_after_run(e, EMU_AFTER_EXPECT, (uint64_t)i);
    for (int k = 0; k < d->prog->records.len && emu_owns(e, i); k++) {
      const DataRecord *r = &d->prog->records.data[k];
      if (r->kind != REC_EXPECT) continue;
      char why[160];
      any = true;
      if (!expect_matches(e, d, r, why, sizeof why)) {
        all = false;
        emu_violate(e, VIOL_DATA, i, NULL, -1, -1, "%s (.expect %u, %s, %u vectors)", why, r->addr,
                    ir_dtype_names[r->dtype], r->nvec);
      }
    }
  }
  model_check_outputs(e, &any, &all);
  window_combine_data(e, &any, &all);
  e->r->data = !any ? DATA_UNCHECKED : !all ? DATA_MISMATCH : fault_data_untrusted(e) ? DATA_UNTRUSTED : DATA_VERIFIED;
}

static void check_time(Emu *e) {
  EmuResult *r = e->r;
  if (!r->deterministic || r->predicted < 0 || r->cycles == r->predicted || fault_cut_short(e)) return;
  window_key_after_run(e, EMU_AFTER_TIME, 0);
  if (!emu_leads(e)) return;
  emu_violate(e, VIOL_TIME, -1, NULL, -1, r->cycles, "the run took %lld cycles; the manifest predicts %lld",
              (long long)r->cycles, (long long)r->predicted);
}

void check_after_run(Emu *e) {
  fault_after_run(e);
  check_units(e);
  check_leftovers(e);
  check_data(e);
  check_time(e);
}
