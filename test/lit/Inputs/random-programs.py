#!/usr/bin/env python3
"""random-programs.py SEED DEVICES OUT.tsa: a random program for a ring of
DEVICES TSPs (port 1 of each facing the next one's port 0), made to make
tsp-emu's streams meet: every device's c2c.1 SENDs runs of its SRAM to the
next device, whose c2c.0 RECVs them at about the right cycles (now and then
a few cycles early or late, two streams at once on one port, or a length that
does not match), while its vxm adds, multiplies and copies vectors of the
same small region, so RECVs land on what the vector unit reads and writes
and SENDs read what it writes.  A ctl unit NOTIFYs once, and c2c.1 waits
for it first (SYNC).  Most programs break a rule somewhere; what matters is
that tsp-emu judges them the same way with --bursts on and off
(same-bursts.py).  Every device's region is the tensor `sram` (i32), so
--dump sram@all shows the data."""
import random
import sys

seed, devices, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(seed)
REGION = 256         # vectors of SRAM every device uses
EVERY = 24           # cycles a vector holds a link (ring4's 10 GB/s links at 900 MHz)
LATENCY = 228        # the ring's link latency


def vxm_ops():
    """One device's vector-unit ops: (cycle, line, destination, vectors)."""
    ops, t = [], rng.randrange(0, 50)
    for _ in range(rng.randrange(2, 12)):
        n = rng.choice([rng.randrange(1, 33), rng.randrange(60, 160)])
        a, b, c = (rng.randrange(0, REGION - n) for _ in range(3))
        kind = rng.choice(["VADD", "VADD", "VMUL", "VMOV", "VADDS"])
        if kind == "VMOV":
            line = "VMOV %d, %d, %d" % (a, b, n)
        else:
            line = "%s i32, %d, %d, %d, %d" % (kind, a, b, c, n)
        ops.append((t, line, a, n))
        t += n + rng.randrange(0, 300)
    return ops


def sends_of(ops, woken):
    """One device's sends: (cycle after its SYNC wakes at `woken`, address,
    vectors), in time order.  Some chase a vector op, reading its results a
    few cycles after they are computed (as a reduction forwards its sums)."""
    sends, t = [], rng.randrange(1, 40)
    for _ in range(rng.randrange(1, 7)):
        n = rng.choice([rng.randrange(1, 41), rng.randrange(60, 160)])
        a = rng.randrange(0, REGION - n)
        op_t, _, op_a, op_n = rng.choice(ops)
        chase = op_t + rng.randrange(0, 6) - woken
        if rng.random() < 0.4 and chase > t:
            t, a, n = chase, op_a, min(n, REGION - op_a)
        sends.append((t, a, n))
        gap = n * EVERY + (rng.randrange(-30, 0) if rng.random() < 0.1 else rng.randrange(0, 60))
        t += max(2, gap)
    return sends


def unit_code(events):
    """Code issuing each (cycle, line) at its cycle: WAITs between (an
    instruction takes a cycle; a late one issues as soon as it can)."""
    code, now = [], 0
    for at, line in events:
        if at > now:
            code.append("  WAIT %d" % (at - now))
            now = at
        code.append("  " + line)
        now += 1
    return code


# ctl NOTIFYs at notify[d]; c2c.1's SYNC wakes a cycle later, its sends
# counted from there.
notify = [rng.randrange(1, 30) for _ in range(devices)]
all_ops = [vxm_ops() for _ in range(devices)]
all_sends = [sends_of(all_ops[d], notify[d] + 1) for d in range(devices)]
lines = ["; random-programs.py %d %d" % (seed, devices)]
for d in range(devices):
    lines += [".device %d" % d,
              ".init 0, i32, %d, iota(%d, %d)" % (REGION, rng.randrange(1, 5), rng.randrange(-1000, 1000)),
              ".tensor sram, 0, i32, [%d, 80]" % REGION]
    lines += [".unit ctl"] + unit_code([(notify[d], "NOTIFY")]) + ["  HALT"]
    lines += [".unit c2c.1", "  SYNC"]
    lines += unit_code([(t, "SEND 1, %d, %d" % (a, n)) for t, a, n in all_sends[d]]) + ["  HALT"]
    prev = (d - 1) % devices
    recvs = []
    for t, a, n in all_sends[prev]:
        shift = rng.choice([0] * 12 + [-2, -1, 1, 3])
        length = n if rng.random() < 0.9 else max(1, n + rng.choice([-1, 1]))
        at = notify[prev] + 1 + t + LATENCY + shift
        recvs.append((at, "RECV 0, %d, %d" % (rng.randrange(0, REGION - length), length)))
    lines += [".unit c2c.0"] + unit_code(recvs) + ["  HALT"]
    lines += [".unit vxm"] + unit_code([(t, line) for t, line, _, _ in all_ops[d]]) + ["  HALT"]
open(out, "w").write("\n".join(lines) + "\n")
