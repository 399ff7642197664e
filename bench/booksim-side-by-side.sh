#!/usr/bin/env bash
# booksim-side-by-side.sh: tsp-emu's vector-hops a CPU second beside
# BookSim 2.0's flit-hops a CPU second on the same 8x8 mesh, in one run.
#
#   bench/booksim-side-by-side.sh [VECTORS_PER_PORT]   (default 100000)
#
# BookSim is built from a source copy when one is present (BOOKSIM_SRC,
# default /work/shared/thirdparty/booksim2; never downloaded), copied into
# build/booksim first so the copy is never written; without one the script
# says so and runs tsp-emu alone.  BookSim runs its stock mesh config
# (BOOKSIM_CFG: 8x8 mesh, dimension-order routing, 16 virtual channels of 8
# flits, iSLIP allocators, single-flit packets, uniform random traffic at
# 0.2 flits a cycle a node).
#
# What each models, plainly:
#   BookSim: a cycle-accurate router pipeline per node (routing, virtual
#     channel and switch allocation, credits, buffers); a flit is a
#     bookkeeping record with no payload, and a flit-hop is one flit
#     crossing one channel.
#   tsp-emu: no routers (the TSP network is software-scheduled: no
#     arbitration, no flow control); every vector carries its 320 real
#     bytes from SRAM to SRAM, and every departure and take is checked
#     (port busy, underflow, overflow, SRAM hazards) on each device's own
#     clock.  A vector-hop is one vector crossing one link and being taken
#     by a RECV.  Here every device streams to each of its neighbours and
#     takes from each, back to back.
# Both run on one core; the rate is hops per CPU second (user + system).
# Results: bench/results/booksim-side-by-side.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
vectors=${1:-100000}
chunk=1000
src=${BOOKSIM_SRC:-/work/shared/thirdparty/booksim2}
cfg=${BOOKSIM_CFG:-/work/shared/thirdparty/booksim2-configs/mesh.cfg}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

# ---- tsp-emu on examples/mesh8x8.yaml ---------------------------------------------
# Device x + 8y; port 0 faces -x, 1 +x, 2 -y, 3 +y; a port at the edge is
# unplugged.  Unit c2c.p: SEND p of `chunk` vectors at L (the link holds
# each 24 cycles), RECV p at L + 229 (the neighbour's vector k left at
# 24k and arrives 228 later, at most), the next SEND at L + 24 chunk.
python3 - "$vectors" "$chunk" > "$work/mesh.tsa" <<'PY'
import sys
total, chunk = map(int, sys.argv[1:])
rounds, every = total // chunk, 24 * chunk
print("; 8x8 mesh: every device streams %d vectors to each neighbour and takes as many" % (rounds * chunk))
for d in range(64):
    x, y = d % 8, d // 8
    ports = [p for p, ok in enumerate([x > 0, x < 7, y > 0, y < 7]) if ok]
    print(".device %d" % d)
    print(".init 0, i32, %d, iota(1, %d)" % (chunk, d))
    for p in ports:
        print(".unit c2c.%d" % p)
        for r in range(rounds):
            print("  SEND %d, 0, %d\n  WAIT 228\n  RECV %d, %d, %d\n  WAIT %d" % (p, chunk, p, 10000 + p * chunk, chunk, every - 230))
        print("  HALT")
PY
bin/tsp-as "$work/mesh.tsa" -t examples/mesh8x8.yaml -o "$work/mesh.out"
/usr/bin/time -f "%U %S" -o "$work/emu.time" bin/tsp-emu "$work/mesh.out" --quiet | tee "$work/emu.txt"
hops=$(sed -n 's/.* \([0-9]*\) vectors moved.*/\1/p' "$work/emu.txt")
emu_cpu=$(awk '{ print $1 + $2 }' "$work/emu.time")

# ---- BookSim on its 8x8 mesh ------------------------------------------------------
if [[ ! -d $src/src ]]; then
  echo "BookSim: no source copy at $src (BOOKSIM_SRC): tsp-emu alone"
  python3 -c "print('tsp-emu, 8x8 mesh: %d vector-hops in %.2f CPU s = %.2f million vector-hops/s' % ($hops, $emu_cpu, $hops / $emu_cpu / 1e6))"
  exit 0
fi
if [[ ! -x build/booksim/src/booksim ]]; then
  rm -rf build/booksim && mkdir -p build && cp -r "$src" build/booksim
  make -s -C build/booksim/src > "$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
fi
# (BookSim exits with 255 after a run that completes: its output says so.)
/usr/bin/time -f "%U %S" -o "$work/bs.time" build/booksim/src/booksim "$cfg" > "$work/bs.txt" || true
grep -q '^Total run time' "$work/bs.txt" || { tail -20 "$work/bs.txt"; echo "BookSim did not finish"; exit 1; }
bs_cpu=$(tail -1 "$work/bs.time" | awk '{ print $1 + $2 }')  # after time's note of the exit status
# Flits delivered = the accepted flit rate (flits a cycle a node, over the
# measured samples) x 64 nodes x the cycles simulated; flit-hops = that x
# the average hops.  The last (overall) figures of BookSim's output.
rate=$(sed -n 's/^Accepted flit rate average *= *\([0-9.e+-]*\).*/\1/p' "$work/bs.txt" | tail -1)
hops_avg=$(sed -n 's/^Hops average = \([0-9.e+-]*\).*/\1/p' "$work/bs.txt" | tail -1)
cycles=$(sed -n 's/^Time taken is \([0-9]*\) cycles.*/\1/p' "$work/bs.txt" | tail -1)
python3 -c "
emu = $hops / $emu_cpu
flit_hops = $rate * 64 * $cycles * $hops_avg
bs = flit_hops / $bs_cpu
print('BookSim 2.0, 8x8 mesh (uniform, 0.2 flits/cycle/node): %d cycles, %.3f flits/cycle/node accepted, %.2f hops average: %.0f flit-hops in %.2f CPU s = %.2f million flit-hops/s' % ($cycles, $rate, $hops_avg, flit_hops, $bs_cpu, bs / 1e6))
print('tsp-emu, 8x8 mesh (every link streaming both ways): %d vector-hops in %.2f CPU s = %.2f million vector-hops/s' % ($hops, $emu_cpu, emu / 1e6))
print('tsp-emu / BookSim: %.1fx hops per CPU second' % (emu / bs))"
