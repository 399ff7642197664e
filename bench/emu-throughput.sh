#!/usr/bin/env bash
# emu-throughput.sh: how many vector-hops a second tsp-emu sustains on one
# core, side by side in one run with how many 320-byte vectors this machine
# copies a second in bulk (the memory's limit: each hop copies a vector at
# least once).  A vector-hop is one vector crossing one link and being
# taken by a RECV.  tsp-emu runs on one thread here (--threads
# EMU_THREADS, default 1: with more, a thread waiting at a window's barrier
# spins, and on a machine shared with other jobs that spinning is CPU time
# the rate would count), so hops per CPU second (user + system) is the
# rate per core.  Three workloads:
#
#   - a ring where every link streams back to back (DEVICES, VECTORS_PER_DEVICE);
#   - the rack72 64 MiB f32 allreduce compiled by tspc (emulated cycles must
#     equal the prediction and the data must verify), with tsp-emu's memory
#     estimate beside its peak resident memory;
#   - a small program on all 10,440 TSPs of system10440, to show it fits.
#
#   bench/emu-throughput.sh [DEVICES] [VECTORS_PER_DEVICE]   (default 64 200000)
#
# BASELINE_EMU=PATH also runs another tsp-emu binary (an older build) on the
# ring and the allreduce, in the same run, and prints the speed-up;
# BASELINE_OPTS adds options to the baseline's runs (BASELINE_EMU=bin/tsp-emu
# BASELINE_OPTS="--bursts off": this build without bursts).  Each is run
# REPEAT times (default 3), the two in turn, and the run of each that took
# the least CPU is the one reported.
#
# Beside each rate, the most it could be on this machine: the vector copies
# the run makes at the least (two a hop, one onto the wire and one off it;
# for the allreduce also its adds and the seeding and checking of its
# inputs), at the memcpy rate of the run's working set (the allreduce's
# SRAM is memory's; the ring's buffers fit in the last-level cache).
#
# Issue 14's targets: 20 million vector-hops a second per core on the
# allreduce, 40 million on the ring.  Results: bench/results/emu-throughput.txt.
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

# The memory-copy rate: 320-byte vectors copied from one buffer to another
# of the same size, in order, as fast as memcpy goes (the best of 3 passes
# over at least 1 GiB of copies).  Three sizes: 1 GiB a buffer (what
# memory itself does: the allreduce's SRAM is 4.8 GB), the ring's own
# working set (each device's send and receive buffers: small enough for
# this machine's last-level cache, so memory's rate is not its limit), and
# 32 KiB (the first-level cache: the most any copy does here).
cat > "$work/copy.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(int argc, char **argv) {
  size_t vb = 320, n = (argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)1 << 30) / vb;
  if (n == 0) return 1;
  char *src = malloc(n * vb), *dst = malloc(n * vb);
  if (!src || !dst) return 1;
  memset(src, 1, n * vb), memset(dst, 2, n * vb);
  size_t rounds = ((size_t)1 << 30) / (n * vb) + 1;
  double best = 0;
  for (int pass = 0; pass < 3; pass++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (size_t r = 0; r < rounds; r++) {
      for (size_t i = 0; i < n; i++) memcpy(dst + i * vb, src + i * vb, vb);
      src[r % n] = dst[n * vb - 1 - r % n];  // keep the copies
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    if (n * rounds / secs > best) best = n * rounds / secs;
  }
  printf("%.1f\n", best / 1e6);
  return 0;
}
C
cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -o "$work/copy" "$work/copy.c"
copy_rate=$("$work/copy" $((1 << 30)))
ring_half=$((devices * chunk * 320))  # the senders' buffers, copied to the receivers' of the same size
ring_copy_rate=$("$work/copy" "$ring_half")
l1_copy_rate=$("$work/copy" 32768)

# run_once DIR EMU TAG: one run of EMU on DIR, kept as TAG's when it took
# the least CPU (user + system) of TAG's runs so far: its summary in
# $work/TAG.result, "wall user system peak-KiB" in $work/TAG.time.
run_once() {
  local extra=()
  [[ $3 != base ]] || read -r -a extra <<< "${BASELINE_OPTS:-}"
  /usr/bin/time -f "%e %U %S %M" -o "$work/try.time" "$2" "$1" --quiet --threads "${EMU_THREADS:-1}" "${extra[@]}" > "$work/try.result"
  read -r _ user sys _ < "$work/try.time"
  if [[ ! -e $work/$3.time ]] || (( $(echo "$user + $sys < $(awk '{print $2 + $3}' "$work/$3.time")" | bc) )); then
    mv "$work/try.time" "$work/$3.time"
    mv "$work/try.result" "$work/$3.result"
  fi
}

# report NAME TAG: TAG's kept run, its summary and one line of vector-hops
# per CPU second, beside the copy rate.
report() {
  cat "$work/$2.result"
  hops=$(sed -n 's/.* \([0-9]*\) vectors moved.*/\1/p' "$work/$2.result")
  read -r wall user sys rss < "$work/$2.time"
  python3 -c "
hops, wall, cpu, rss, copy = $hops, $wall, $user + $sys, $rss, $copy_rate
print('%s: %d vector-hops in %.2f CPU s (%.2f s wall) = %.2f million vector-hops/s per core; '
      'memory copies %.1f million 320-byte vectors/s (%.0f%% of it); peak RSS %.0f MiB'
      % ('$1', hops, cpu, wall, hops / cpu / 1e6, copy, 100 * hops / cpu / 1e6 / copy, rss / 1024))"
}

# side_by_side NAME DIR: REPEAT rounds (default 3), each a run of tsp-emu
# and, with BASELINE_EMU, one of the baseline right after it; for each, the
# run that took the least CPU (on a machine shared with other jobs, the
# one they disturbed least), and with a baseline the speed-up.
side_by_side() {
  rm -f "$work"/new.* "$work"/base.*
  for ((round = 0; round < ${REPEAT:-3}; round++)); do
    run_once "$2" bin/tsp-emu new
    [[ -z ${BASELINE_EMU:-} ]] || run_once "$2" "$BASELINE_EMU" base
  done
  report "$1" new
  [[ -n ${BASELINE_EMU:-} ]] || return 0
  report "$1 (baseline $BASELINE_EMU${BASELINE_OPTS:+ $BASELINE_OPTS})" base
  python3 -c "print('$1: %.2fx the baseline\'s vector-hops per CPU second (the best of ${REPEAT:-3} runs each)' % (
    $(awk '{print $2 + $3}' "$work/base.time") / $(awk '{print $2 + $3}' "$work/new.time")))"
}

# copy_bound NAME HOPS COPIES WHY RATE: the most vector-hops a second a run
# of HOPS hops can reach on this machine if nothing but its vector copies
# took time, COPIES of them at the least (a copy: 320 bytes read and
# written once; COPIES an expression for bc, WHY what it counts), at RATE
# million copies a second (one of the memcpy rates above).  tsp-emu models
# every vector's bytes, so every data path makes these copies; larger
# blocks copy no faster here (31-35 million
# vectors' worth a second for blocks of 20 KiB, 1 MiB and 1 GiB, measured
# once beside 35 million for 320 bytes), so one copy of a whole stream
# would not lift the bound.
copy_bound() {
  python3 - "$1" "$2" "$(echo "$3" | bc)" "$5" "$4" <<'PY'
import sys
name, hops, copies, rate, why = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
secs = copies / (rate * 1e6)
print("%s: at least %.1f million vector copies (%s), %.2f s at %.1f million a second: at most %.1f million "
      "vector-hops/s per core on this machine" % (name, copies / 1e6, why, secs, rate, hops / secs / 1e6))
PY
}

echo "memory copy: $copy_rate million 320-byte vectors/s (memcpy, 1 GiB to 1 GiB, best of 3)"
echo "cache copy: $ring_copy_rate million/s within the ring's working set ($ring_half bytes to as many: its senders' buffers to its receivers'), $l1_copy_rate million/s within 32 KiB to 32 KiB"
side_by_side "ring of $devices" "$work/ring.out"
ring_hops=$(sed -n 's/.* \([0-9]*\) vectors moved.*/\1/p' "$work/new.result")
copy_bound "ring of $devices" "$ring_hops" "2 * $ring_hops" "2 a hop: a SEND's onto the wire, a RECV's off it" "$ring_copy_rate"
copy_bound "ring of $devices, were every copy in the first-level cache" "$ring_hops" "2 * $ring_hops" "2 a hop" "$l1_copy_rate"

# The rack72 64 MiB allreduce, and the memory tsp-emu estimates before it
# (--max-memory 1 makes it say the figure and stop).
bin/tspc test/lit/Inputs/allreduce-64mib.tg -t examples/rack72.yaml -o "$work/ar64"
{ bin/tsp-emu "$work/ar64" --max-memory 1 2>&1 || true; } | sed -n 's/.*needs an estimated \([0-9]*\) MiB.*/rack72 64 MiB allreduce: tsp-emu estimates \1 MiB before the run/p'
side_by_side "rack72 64 MiB allreduce" "$work/ar64"
ar_hops=$(sed -n 's/.* \([0-9]*\) vectors moved.*/\1/p' "$work/new.result")
ar_inputs=$((72 * 16777216 * 4 / 320))
copy_bound "rack72 64 MiB allreduce" "$ar_hops" "2 * $ar_hops + 1.5 * $ar_hops / 2 + 2 * $ar_inputs" \
  "2 a hop; 1.5 an add, one for each hop of the reduction, half the hops; 2 for each of the $ar_inputs input vectors, seeded and checked" \
  "$copy_rate"

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

# The 10,440-TSP 1 MiB allreduce: what tsp-emu estimates it needs before
# running it (not run here: --max-memory 1 makes it say the figure and stop).
printf 'graph ar {\n  input g : f32[262144] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' > "$work/ar1.tg"
bin/tspc "$work/ar1.tg" -t examples/system10440.yaml -o "$work/ar1"
{ bin/tsp-emu "$work/ar1" --max-memory 1 2>&1 || true; } |
  sed -n 's/.*needs an estimated \([0-9]*\) MiB (\([0-9]*\) MiB for the \([0-9]*\) SRAM pages.*/system10440 1 MiB allreduce: tsp-emu estimates \1 MiB before the run (\2 MiB of them the \3 SRAM pages the program can write)/p'
