#!/usr/bin/env python3
"""check-links.py DIR CYCLES_PER_VECTOR [REPORT]: tspc's links.yaml against
the schedule, and against tsp-emu's measured per-link figures.

From the schedule: every SEND n on port P in DIR/devNNNN.tsa puts n vectors
on the link direction leaving device NNNN's port P, every TRANSMIT P one
(the alignment's notification).  Each direction of links.yaml must carry
exactly those vectors, busy_cycles = vectors x CYCLES_PER_VECTOR, and
utilisation = busy_cycles / the manifest's predicted_cycles (to the 6
decimals written).  With REPORT (tsp-emu --report), its links: must list
the same directions with the same vectors, busy cycles and utilisation.
Prints a summary; exits 1 on the first disagreement."""
import glob
import re
import sys

FIELD = re.compile(r"(\w+): (\"[^\"]*\"|\[[^\]]*\]|[^,}]+)")


def directions(lines):
    out = []
    for line in lines:
        if line.startswith("  - {link: "):
            fields = dict(FIELD.findall(line))
            out.append({k: fields[k] for k in ("link", "kind", "from", "port", "to", "to_port",
                                               "vectors", "busy_cycles", "utilisation")})
    return out


def fail(msg):
    print("error: " + msg)
    sys.exit(1)


def scheduled_vectors(outdir):
    sent = {}
    for path in sorted(glob.glob(outdir + "/dev*.tsa")):
        device = int(re.search(r"dev(\d+)\.tsa$", path).group(1))
        for line in open(path):
            m = re.match(r"\s+(SEND|TRANSMIT) (\d+)(?:, \d+, (\d+))?", line)
            if m:
                key = (device, int(m.group(2)))
                sent[key] = sent.get(key, 0) + (int(m.group(3)) if m.group(1) == "SEND" else 1)
    return sent


outdir, cpv = sys.argv[1], int(sys.argv[2])
links = directions(open(outdir + "/links.yaml"))
cycles = int(re.search(r"predicted_cycles: (\d+)", open(outdir + "/manifest.yaml").read()).group(1))
header = int(re.search(r"^cycles: (\d+)", open(outdir + "/links.yaml").read(), re.M).group(1))
if header != cycles:
    fail("links.yaml says cycles: %d, the manifest predicts %d" % (header, cycles))
sent = scheduled_vectors(outdir)
used = 0
for d in links:
    vectors = sent.pop((int(d["from"]), int(d["port"])), 0)
    busy = vectors * cpv
    want = "%.6f" % (busy / cycles)
    if (int(d["vectors"]), int(d["busy_cycles"]), d["utilisation"]) != (vectors, busy, want):
        fail("link %s from %s port %s: links.yaml says %s vectors, %s busy cycles, utilisation %s; "
             "the schedule %d, %d, %s" % (d["link"], d["from"], d["port"], d["vectors"], d["busy_cycles"],
                                         d["utilisation"], vectors, busy, want))
    used += vectors > 0
if sent:
    fail("vectors leave a port links.yaml does not list: %s" % sorted(sent)[0:3])
hottest = max(links, key=lambda d: int(d["busy_cycles"]))
print("links.yaml: %d directions, %d used, agree with the schedule (%d cycles); hottest %s -> %s at %s"
      % (len(links), used, cycles, hottest["from"], hottest["to"], hottest["utilisation"]))
if len(sys.argv) > 3:
    report = open(sys.argv[3]).read().split("\n")
    measured = directions(report[report.index("links:"):])
    if measured != links:
        first = next(i for i, (a, b) in enumerate(zip(measured + [None] * len(links), links)) if a != b)
        fail("tsp-emu measured %s, links.yaml says %s" % (measured[first] if first < len(measured) else None,
                                                           links[first] if first < len(links) else None))
    print("tsp-emu --report: the same %d directions, measured" % len(measured))
