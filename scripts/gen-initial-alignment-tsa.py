#!/usr/bin/env python3
"""gen-initial-alignment-tsa.py: writes test/lit/emu/initial-alignment.tsa,
the initial program alignment of seed 002 s3.2 on one 8-TSP node (a
spanning tree of height 1 rooted at device 0), followed by a zero-slack
exchange that only works if every device NOTIFYed on the same cycle."""
CHILDREN, WINDOW, EPOCH, LAT = 7, 6000, 252, 228
B = (WINDOW // EPOCH + 1) * EPOCH       # the root's first boundary after the window
NOTIFY = B + EPOCH                      # everyone NOTIFYs at the next boundary
WAKE = NOTIFY + 1
END = WAKE + LAT + 1                    # root's last RECV at WAKE + 228, HALT one later
out = []
w = out.append
w("""; Initial program alignment (seed 002 s3.2) on one node of 8 TSPs:
; written by scripts/gen-initial-alignment-tsa.py.
;
; Devices start at unrelated times (--start-skew, up to 5000 cycles).  The
; root, device 0, waits a launch window of %d cycles so every child is
; running, DESKEWs to the next HAC epoch boundary B, and TRANSMITs a
; notification down each of its 7 local links (ports 0..6, one a cycle).
; Each child POLLs port 0 at every epoch boundary; the notification lands
; within 228 + 6 < 252 cycles, so every child leaves its POLL at B + 252.
; The root DESKEWs to the same boundary.  So all 8 devices NOTIFY on one
; global cycle: (floor(228 / 252) + 1) x height 1 = 1 epoch of overhead.
;
; With no skew: B = %d (the boundary after cycle %d), NOTIFY at %d, parked
; units issue at %d.  Then every child sends one vector to the root, which
; takes each at exactly %d + 228 = %d, with no slack: a child one cycle late
; would underflow.  The root's units halt at %d: the run's end.
; RUN: rm -rf %%t.out && %%tsp-as %%s -t %%examples/node8.yaml -o %%t.out
; RUN: %%exit 0 %%tsp-emu %%t.out | FileCheck %%s
; CHECK: ok: 8 devices, %d cycles (predicted %d), 7 vectors moved, 0 violations
;
; Under start skew and jitter the run still passes, and the trace
; shows all 8 NOTIFYs on one cycle:
; RUN: %%exit 0 %%tsp-emu %%t.out --start-skew 5000 --jitter on --seed 11 --trace %%t.json --report %%t.yaml | FileCheck %%s --check-prefix=SKEW
; SKEW: ok: 8 devices
; RUN: python3 -c "import json,sys; ts=sorted({e['ts'] for e in json.load(open(sys.argv[1]))['traceEvents'] if e.get('name')=='NOTIFY'}); n=sum(1 for e in json.load(open(sys.argv[1]))['traceEvents'] if e.get('name')=='NOTIFY'); print(n, 'NOTIFYs at', len(ts), 'time(s)')" %%t.json | FileCheck %%s --check-prefix=SAME
; SAME: 8 NOTIFYs at 1 time(s)
; RUN: FileCheck %%s --check-prefix=STARTS --input-file=%%t.yaml
; STARTS: clocks:
; STARTS-NOT: start: 0}
;
; Without the root's DESKEWs the TRANSMITs leave off the boundary grid and
; the exchange breaks:
; RUN: sed '/^.device 1/,$!s/^  DESKEW/  WAIT 1/' %%s > %%t.nodeskew.tsa && rm -rf %%t.nd
; RUN: %%tsp-as %%t.nodeskew.tsa -t %%examples/node8.yaml -o %%t.nd
; RUN: %%exit 2 %%tsp-emu %%t.nd | FileCheck %%s --check-prefix=BROKEN
; BROKEN: underflow: device 0 unit c2c.0 port 0""" % (
    WINDOW, B, WINDOW, NOTIFY, WAKE, WAKE, WAKE + LAT, END, END, END))
w(".cycles %d" % END)
w(".device 0")
for p in range(CHILDREN):
    w(".expect %d, i32, 1, iota(1, %d)" % (10 + p, 1000 * (p + 1)))
w(".unit ctl")
w("  WAIT %d              ; the launch window" % WINDOW)
w("  DESKEW                 ; to the boundary B")
for p in range(CHILDREN):
    w("  TRANSMIT %d            ; to device %d" % (p, p + 1))
w("  DESKEW                 ; to B + 252")
w("  NOTIFY")
w("  HALT")
for p in range(CHILDREN):
    w(".unit c2c.%d" % p)
    w("  SYNC")
    w("  WAIT %d" % LAT)
    w("  RECV %d, %d, 1" % (p, 10 + p))
    w("  HALT")
for j in range(1, CHILDREN + 1):
    w(".device %d" % j)
    w(".init 0, i32, 1, iota(1, %d)" % (1000 * j))
    w(".unit ctl")
    w("  POLL 0                 ; until the root's notification")
    w("  NOTIFY")
    w("  HALT")
    w(".unit c2c.0")
    w("  SYNC")
    w("  SEND 0, 0, 1")
    w("  HALT")
print("\n".join(out))
