#!/usr/bin/env python3
"""gen-runtime-deskew-tsa.py: writes test/lit/emu/runtime-deskew.tsa, ten
phases of 100,000 cycles on a ring of two in which device 0 sends one
vector a phase and device 1 takes it 24 cycles after it lands.  Between
phases both devices run RUNTIME_DESKEW (seed 002 s3.3) with every other
unit parked in SYNC.  Kept as a script so the arithmetic is visible."""
PHASES, W, T, LAT, SLACK = 10, 99949, 50, 228, 24
PHASE = W + T + 1  # WAIT W, RUNTIME_DESKEW T (T cycles when nothing drifted), NOTIFY
out = []
w = out.append
w("""; RUNTIME_DESKEW cancels clock drift.  %d phases of %d cycles on a ring of
; two; written by scripts/gen-runtime-deskew-tsa.py.
;
; Phase k starts at F_k = %d k (the cycle NOTIFY wakes the parked units).
; Device 0's c2c.1 sends one vector at F_k; it lands at F_k + %d.  Device
; 1's c2c.0 takes it at F_k + %d (%d cycles of slack), then both park in
; SYNC.  Each ctl unit waits %d cycles, stalls with RUNTIME_DESKEW %d
; (%d cycles when nothing drifted), and NOTIFYs at F_k + %d; the parked
; units issue again one cycle later, at F_(k+1).  After the last phase
; every unit halts at F_%d = %d: the run's end.
; RUN: rm -rf %%t.out && %%tsp-as %%s -t %%inputs/topo/ring2.yaml -o %%t.out
; RUN: %%exit 0 %%tsp-emu %%t.out | FileCheck %%s
; CHECK: ok: 2 devices, %d cycles (predicted %d), %d vectors moved, 0 violations
;
; Clocks 100 ppm apart drift 10 cycles a phase: RUNTIME_DESKEW takes it out
; every phase, so the run stays correct (seed 8 makes device 1 the fast one):
; RUN: %%exit 0 %%tsp-emu %%t.out --drift-ppm 100 --seed 8 --report %%t.drift.yaml | FileCheck %%s --check-prefix=DRIFT
; DRIFT: ok: 2 devices
; RUN: FileCheck %%s --check-prefix=CLOCKS --input-file=%%t.drift.yaml
; CLOCKS: - {device: 0, drift_ppm: -71.719357, start: 0}
; CLOCKS-NEXT: - {device: 1, drift_ppm: 56.673503, start: 0}
;
; The same program with WAIT in place of RUNTIME_DESKEW lets the drift add
; up: the fast device 1 reaches its RECV before the vector lands.
; RUN: sed 's/RUNTIME_DESKEW %d/WAIT %d/' %%s > %%t.nodeskew.tsa && rm -rf %%t.nd
; RUN: %%tsp-as %%t.nodeskew.tsa -t %%inputs/topo/ring2.yaml -o %%t.nd
; RUN: %%exit 0 %%tsp-emu %%t.nd | FileCheck %%s --check-prefix=NODRIFT
; NODRIFT: ok: 2 devices, %d cycles
; RUN: %%exit 2 %%tsp-emu %%t.nd --drift-ppm 100 --seed 8 | FileCheck %%s --check-prefix=FAIL
; FAIL: underflow: device 1 unit c2c.0 port 0 cycle {{[0-9]+}}: RECV wants a vector on port 0 at cycle {{[0-9]+}}; it arrives at cycle {{[0-9]+}}""" % (
    PHASES, PHASE, PHASE, LAT, LAT + SLACK, SLACK, W, T, T, W + T, PHASES, PHASES * PHASE,
    PHASES * PHASE, PHASES * PHASE, PHASES, T, T, PHASES * PHASE))
w(".cycles %d" % (PHASES * PHASE))
for dev in range(2):
    w(".device %d" % dev)
    if dev == 0:
        w(".init 0, i32, 1, iota(1, 7)")
        w(".unit c2c.1")
        for k in range(PHASES):
            w("  SEND 1, 0, 1         ; phase %d" % k)
            w("  SYNC")
        w("  HALT")
    else:
        w(".expect 100, i32, 1, iota(1, 7)")
        w(".unit c2c.0")
        for k in range(PHASES):
            w("  WAIT %d" % (LAT + SLACK))
            w("  RECV 0, 100, 1       ; phase %d" % k)
            w("  SYNC")
        w("  HALT")
    w(".unit ctl")
    for k in range(PHASES):
        w("  WAIT %d" % W)
        w("  RUNTIME_DESKEW %d" % T)
        w("  NOTIFY")
    w("  HALT")
print("\n".join(out))
