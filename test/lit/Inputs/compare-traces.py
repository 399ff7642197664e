#!/usr/bin/env python3
"""compare-traces.py COMPILED EMULATED CLOCK_MHZ: the start cycle of every
SEND in tspc's trace (--emit=trace) against tsp-emu's (--trace).

First prints what the compiled trace holds: processes, unit tracks, link
tracks (threads named "port P -> devN" or "port P <- devN"), slices and
flow arrows.

A SEND is a complete ("X") event on a unit's track (a thread named like
"c2c.3", not a link direction's) named "SEND" or "SEND <what it serves>".
Both lists, as (device, unit, cycle), must be equal; prints what it
compared, or the first difference, and exits 1 on a mismatch."""
import json
import sys


def sends(path, clock):
    events = json.load(open(path))["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    out = []
    for e in events:
        if e["ph"] != "X" or not (e["name"] == "SEND" or e["name"].startswith("SEND ")):
            continue
        unit = threads[(e["pid"], e["tid"])]
        if unit.startswith("c2c.") and " " not in unit:
            out.append((e["pid"], unit, round(e["ts"] * clock)))
    return sorted(out)


def summary(path):
    events = json.load(open(path))["traceEvents"]
    threads = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
    links = [t for t in threads if t.startswith("port ")]
    print("compiled: %d processes, %d unit tracks, %d link tracks, %d slices, %d arrows"
          % (sum(e["ph"] == "M" and e["name"] == "process_name" for e in events), len(threads) - len(links),
             len(links), sum(e["ph"] == "X" for e in events), sum(e["ph"] == "s" for e in events)))


summary(sys.argv[1])
compiled, emulated = sends(sys.argv[1], float(sys.argv[3])), sends(sys.argv[2], float(sys.argv[3]))
if compiled != emulated:
    for a, b in zip(compiled + [None] * len(emulated), emulated + [None] * len(compiled)):
        if a != b:
            print("first difference: compiled %s, emulated %s" % (a, b))
            break
    sys.exit(1)
print("sends: %d agree, on %d devices, first at cycle %d, last at cycle %d"
      % (len(compiled), len({s[0] for s in compiled}), min(s[2] for s in compiled), max(s[2] for s in compiled)))
