#!/usr/bin/env bash
# algo-compile-time.sh: compile time of the rack72 AllReduce under every
# algorithm that applies, and under the default algo=auto, at 1 MiB and
# 256 MiB a device, side by side in one run (the issue's requirement: a
# schedule's cost grows with transfers, not bytes, so 256 MiB should stay
# within 2x of 1 MiB).  Whole compiles with code generation, to a copy of
# the topology whose SRAM holds 256 MiB; wall and CPU seconds (the median
# of RUNS=3 compiles) and the makespan.  bin_ratio: the binaries' bytes at
# 256 MiB over those at 1 MiB, the program's own growth (under drift a
# longer run needs more resyncs, and streams are cut at them).
#
#   bench/algo-compile-time.sh [TOPOLOGY.yaml]   (default examples/rack72.yaml)
set -euo pipefail
cd "$(dirname "$0")/.."
topo=${1:-examples/rack72.yaml}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
{ cat "$topo"; echo "sram_vectors: 8388608"; } > "$work/big.yaml"
for mib in 1 256; do
  printf 'graph ar {\n  input g : f32[%d] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' $((mib * 262144)) > "$work/ar$mib.tg"
done

# One compile: "wall cpu makespan bytes" (cpu = user + system seconds, to
# the millisecond: bash's time, since /usr/bin/time counts hundredths;
# bytes: of the binaries written).
once() {  # ALGO MIB
  local t m b out TIMEFORMAT='%3R %3U %3S'
  out=$(mktemp -d -p "$work" out.XXXXXX)  # a directory each, removed at the end (bench/scale.sh says why)
  { t=$( { time bin/tspc "$work/ar$2.tg" -t "$work/big.yaml" --algo="$1" -o "$out" --stats \
             > /dev/null 2> "$work/stats"; } 2>&1 ); } || true
  m=$(awk '/^makespan_cycles:/ { print $2 } /error:/ { print "refused" }' "$work/stats" | head -1)
  b=$(cat "$out"/*.tsp 2> /dev/null | wc -c)
  echo "$t" | awk -v m="$m" -v b="$b" '{ printf "%s %.3f %s %s\n", $1, $2 + $3, m, b }'
}

# The median of RUNS compiles (by wall time; its CPU time beside it): a
# run the other jobs of a shared machine slowed is not the one reported.
RUNS=${RUNS:-3}
run() {  # ALGO MIB -> "wall cpu makespan bytes"
  for _ in $(seq "$RUNS"); do once "$1" "$2"; done | sort -n | sed -n "$(((RUNS + 1) / 2))p"
}

printf '%-11s %8s %8s %10s %8s %8s %10s %7s %9s %9s\n' algo 1MiB_s 1MiB_cpu cycles 256MiB_s 256_cpu cycles ratio cpu_ratio bin_ratio
for a in ring biring ring2d ringbiodd hring direct dragonfly3 dbtree multitree tto ctree auto; do
  read -r s1 c1 m1 b1 <<< "$(run $a 1)"
  [ "$m1" = refused ] && continue
  read -r s256 c256 m256 b256 <<< "$(run $a 256)"
  printf '%-11s %8.3f %8.3f %10s %8.3f %8.3f %10s %6.1fx %8.1fx %8.1fx\n' "$a" "$s1" "$c1" "$m1" "$s256" "$c256" "$m256" \
    "$(echo "$s256 / $s1" | bc -l)" "$(echo "$c256 / $c1" | bc -l)" "$(echo "$b256 / $b1" | bc -l)"
done
