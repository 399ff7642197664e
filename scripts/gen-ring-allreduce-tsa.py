#!/usr/bin/env python3
"""gen-ring-allreduce-tsa.py: writes test/lit/emu/ring4-allreduce.tsa, a hand
schedule of a unidirectional ring AllReduce (reduce-scatter, then
all-gather) on a ring of 4, one vector per chunk.  Kept as a script so the
schedule's arithmetic is visible; the .tsa it writes is the test."""
N, P = 4, 240          # devices; cycles between steps (>= 228 + 1 + 4 + margin)
LAT = 228              # max link latency, jitter off

out = []
w = out.append
w("""; A unidirectional ring AllReduce of 4 x 1 vectors of i32 on a ring of 4:
; 3 reduce-scatter steps, then 3 all-gather steps, one every %d cycles.
; Written by scripts/gen-ring-allreduce-tsa.py.
;
; Device i holds 4 vectors at 0..3, element e = e + 100 i (iota(1, 100 i));
; the sum over the ring is 4 e + 600 (iota(4, 600)) on every device.
;
; Step s (s = 0..5) starts at T_s = %d s.  Reduce-scatter step s: device i
; sends chunk (i - s) mod 4 out of port 1 at T_s; it lands at T_s + %d at
; device i+1, whose RECV takes it into 100 + s at that cycle and whose VADD
; (issued at T_s + %d, landing 4 cycles later) adds it into chunk
; (i - 1 - s) mod 4.  All-gather step a = s - 3: device i sends chunk
; (i + 1 - a) mod 4 and device i+1 takes it straight into that chunk.
; The last take is at T_5 + %d = %d; that RECV's unit halts one cycle
; later, at %d: the run's last event.
; RUN: rm -rf %%t.out && %%tsp-as %%s -t %%inputs/topo/ring4.yaml -o %%t.out
; RUN: %%exit 0 %%tsp-emu %%t.out --report %%t.yaml | FileCheck %%s
; CHECK: ok: 4 devices, %d cycles (predicted %d), 24 vectors moved, 0 violations
; RUN: FileCheck %%s --check-prefix=REPORT --input-file=%%t.yaml
; REPORT: data: verified
; The same program with jitter, drift and start skew is still correct data
; (its timing is not exact any more, so only the data is asserted):
; RUN: %%tsp-emu %%t.out --jitter on --seed 5 --report %%t.jitter.yaml > /dev/null
; RUN: FileCheck %%s --check-prefix=REPORT --input-file=%%t.jitter.yaml""" %
  (P, P, LAT, LAT + 1, LAT, 5 * P + LAT, 5 * P + LAT + 1, 5 * P + LAT + 1, 5 * P + LAT + 1))
w(".cycles %d" % (5 * P + LAT + 1))
for i in range(N):
    w(".device %d" % i)
    w(".init 0, i32, 4, iota(1, %d)" % (100 * i))
    w(".expect 0, i32, 4, iota(4, 600)")
    # sender: port 1 (next)
    w(".unit c2c.1")
    for s in range(6):
        chunk = (i - s) % N if s < 3 else (i + 1 - (s - 3)) % N
        w("  SEND 1, %d, 1        ; step %d at %d" % (chunk, s, s * P))
        w("  WAIT %d" % (P - 1) if s < 5 else "  HALT")
    # receiver: port 0 (previous)
    w(".unit c2c.0")
    w("  WAIT %d" % LAT)
    for s in range(6):
        dst = 100 + s if s < 3 else (i - (s - 3)) % N
        w("  RECV 0, %d, 1      ; step %d at %d" % (dst, s, s * P + LAT))
        w("  WAIT %d" % (P - 1) if s < 5 else "  HALT")
    # adder
    w(".unit vxm")
    w("  WAIT %d" % (LAT + 1))
    for s in range(3):
        chunk = (i - 1 - s) % N
        w("  VADD i32, %d, %d, %d, 1   ; step %d at %d" % (chunk, chunk, 100 + s, s, s * P + LAT + 1))
        w("  WAIT %d" % (P - 1) if s < 2 else "  HALT")
print("\n".join(out))
