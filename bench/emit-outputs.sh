#!/usr/bin/env bash
# emit-outputs.sh: what --emit=trace and --emit=links cost, and that a
# compile that asks for neither costs what it did before them.
#
#   bench/emit-outputs.sh [BASE_TSPC]   (BASE_TSPC: a tspc built without them)
#
# Compiles the rack72 AllReduce of 64 MiB a device (the default path:
# -o only), with --emit=links, and (4 MiB: a 64 MiB timeline would be about
# 1.7 GB) with --emit=trace, ROUNDS times each, interleaved so that a busy
# machine slows every variant alike; prints the median CPU seconds (user +
# sys of tspc) and wall seconds of each, and its ratio to this tspc's
# default compile of the same size.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-}
rounds=${ROUNDS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
printf 'graph ar4 {\n  input g : f32[1048576] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' > "$work/ar4.tg"

python3 - "$work" "$rounds" "$base" <<'PY'
import os, resource, statistics, subprocess, sys, time
work, rounds, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
topo = "examples/rack72.yaml"
big, small = "test/lit/Inputs/allreduce-64mib.tg", work + "/ar4.tg"
variants = []
if base:
    variants.append(("64 MiB, before (BASE_TSPC)", base, big, []))
variants += [("64 MiB, default", "bin/tspc", big, []),
             ("64 MiB, --emit=links", "bin/tspc", big, ["--emit=links"]),
             ("4 MiB, default", "bin/tspc", small, []),
             ("4 MiB, --emit=links", "bin/tspc", small, ["--emit=links"]),
             ("4 MiB, --emit=trace", "bin/tspc", small, ["--emit=trace"])]
cpu = {v[0]: [] for v in variants}
wall = {v[0]: [] for v in variants}
for r in range(rounds):
    for name, tool, model, extra in variants:
        out = "%s/out-%d" % (work, len(cpu[name]))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        subprocess.run([tool, model, "-t", topo, "-o", out] + extra, check=True, stderr=subprocess.DEVNULL)
        wall[name].append(time.monotonic() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        subprocess.run(["rm", "-rf", out], check=True)
print("%d rounds, medians; ratio: CPU against this tspc's default compile of the same size" % rounds)
print("%-30s %9s %9s %7s" % ("compile", "cpu_s", "wall_s", "ratio"))
for name, tool, model, extra in variants:
    ref = "64 MiB, default" if model == big else "4 MiB, default"
    c, w = statistics.median(cpu[name]), statistics.median(wall[name])
    print("%-30s %9.3f %9.3f %7.3f" % (name, c, w, c / statistics.median(cpu[ref])))
PY
