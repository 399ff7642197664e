#!/usr/bin/env bash
# emu-throughput.sh: how many vector-hops a second tsp-emu sustains on one
# core, on a ring where every link streams back to back.  A vector-hop is
# one vector crossing one link and being taken by a RECV.  Also runs a small
# program on all 10,440 TSPs of system10440 to show it fits in memory.
#
#   bench/emu-throughput.sh [DEVICES] [VECTORS_PER_DEVICE]   (default 64 200000)
#
# The issue's target is 5 million vector-hops a second.
set -euo pipefail
cd "$(dirname "$0")/.."
devices=${1:-64}
vectors=${2:-200000}
chunk=1000
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

python3 - "$devices" "$vectors" "$chunk" > "$work/ring.tsa" <<'PY'
import sys
n, total, chunk = map(int, sys.argv[1:])
sends = total // chunk
every = 24 * chunk                   # one SEND of `chunk` vectors holds the link this long
print("; %d devices, each streaming %d vectors to the next, %d at a time" % (n, sends * chunk, chunk))
for d in range(n):
    print(".device %d" % d)
    print(".init 0, i32, %d, iota(1, %d)" % (chunk, d))
    print(".unit c2c.1")
    for s in range(sends):
        print("  SEND 1, 0, %d" % chunk)
        print("  WAIT %d" % (every - 1))
    print("  HALT")
    print(".unit c2c.0")
    print("  WAIT 228")
    for s in range(sends):
        print("  RECV 0, %d, %d" % (chunk, chunk))
        print("  WAIT %d" % (every - 1))
    print("  HALT")
PY
printf 'topology: ring\ndevices: %d\n' "$devices" > "$work/ring.yaml"
bin/tsp-as "$work/ring.tsa" -t "$work/ring.yaml" -o "$work/ring.out"
start=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$work/rss" bin/tsp-emu "$work/ring.out" | tee "$work/result"
end=$(date +%s.%N)
hops=$(sed -n 's/.* \([0-9]*\) vectors moved.*/\1/p' "$work/result")
python3 -c "
import sys
hops, secs, rss = int('$hops'), $end - $start, int(open('$work/rss').read())
print('ring of %d: %d vector-hops in %.2f s = %.2f million vector-hops/s (peak RSS %.0f MiB)' % ($devices, hops, secs, hops / secs / 1e6, rss / 1024))"

# Every TSP of the largest system: each sends 4 vectors to a local neighbour.
python3 > "$work/big.tsa" <<'PY'
print("; all 10,440 TSPs: each node's TSP 0 sends 4 vectors to TSP 1 over local port 0")
for node in range(1305):
    a, b = node * 8, node * 8 + 1
    print(".device %d\n.init 0, i32, 4, iota(1, %d)\n.unit c2c.0\n  SEND 0, 0, 4\n  HALT" % (a, node))
    print(".device %d\n.expect 100, i32, 4, iota(1, %d)\n.unit c2c.0\n  WAIT 228\n  RECV 0, 100, 4\n  HALT" % (b, node))
PY
bin/tsp-as "$work/big.tsa" -t examples/system10440.yaml -o "$work/big.out"
/usr/bin/time -f "system10440: %e s, peak RSS %M KiB" bin/tsp-emu "$work/big.out"
