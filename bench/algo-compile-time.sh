#!/usr/bin/env bash
# algo-compile-time.sh: compile time of the rack72 AllReduce under every
# algorithm that applies, and under the default algo=auto, at 1 MiB and
# 256 MiB a device, side by side in one run (the issue's requirement: a
# schedule's cost grows with transfers, not bytes, so 256 MiB should stay
# within 2x of 1 MiB).  Whole compiles with code generation, to a copy of
# the topology whose SRAM holds 256 MiB; wall seconds and the makespan.
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

run() {  # ALGO MIB -> "seconds makespan"
  local start end m
  start=$(date +%s.%N)
  m=$(bin/tspc "$work/ar$2.tg" -t "$work/big.yaml" --algo="$1" -o "$work/out" --stats 2>&1 |
      awk '/^makespan_cycles:/ { print $2 } /error:/ { print "refused" }' | head -1)
  end=$(date +%s.%N)
  rm -rf "$work/out"
  echo "$(echo "$end - $start" | bc) $m"
}

printf '%-11s %9s %12s %9s %12s %7s\n' algo 1MiB_s cycles 256MiB_s cycles ratio
for a in ring biring ring2d ringbiodd hring direct dragonfly3 dbtree multitree tto ctree auto; do
  read -r s1 m1 <<< "$(run $a 1)"
  [ "$m1" = refused ] && continue
  read -r s256 m256 <<< "$(run $a 256)"
  printf '%-11s %9.2f %12s %9.2f %12s %6.1fx\n' "$a" "$s1" "$m1" "$s256" "$m256" "$(echo "$s256 / $s1" | bc -l)"
done
