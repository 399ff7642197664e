#!/usr/bin/env bash
# route-crossover.sh: from what size a copy between two TSPs of one node is
# faster spread over non-minimal paths (seed 002 s4.3 reports about 8 KB on
# hardware).  Compiles `y = copy(x) @ device(5)` with x on device 0 of
# node8 at each size with --route=minimal and --route=nonminimal and prints
# the scheduled cycles of each (tspc --stats: makespan_cycles), then the
# smallest size at which non-minimal wins.
#
#   bench/route-crossover.sh [TOPOLOGY.yaml] [MAX_BYTES]   (default examples/node8.yaml 65536)
#
# Figures are the compiler's schedule (exact for the emulator's timing
# model once code generation lands; see docs/passes.md, "route").
set -euo pipefail
cd "$(dirname "$0")/.."
topo=${1:-examples/node8.yaml}
max=${2:-65536}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

cycles() {  # BYTES MODE -> makespan
  local elems=$(( ($1 + 3) / 4 ))
  printf 'graph cp {\n  input x : f32[%d] @ device(0);\n  y = copy(x) @ device(5);\n  output y;\n}\n' "$elems" > "$work/cp.tg"
  bin/tspc "$work/cp.tg" -t "$topo" --route="$2" --stats 2>&1 | awk '/^makespan_cycles:/ { print $2 }'
}

printf '%10s %12s %12s %8s\n' bytes minimal nonminimal speedup
crossover=""
for (( bytes = 320; bytes <= max; bytes += 320 )); do
  m=$(cycles "$bytes" minimal)
  n=$(cycles "$bytes" nonminimal)
  if [[ -z $crossover && $n -lt $m ]]; then crossover=$bytes; fi
  if (( bytes % 3200 == 0 || bytes <= 6400 )); then
    printf '%10d %12d %12d %8.2f\n' "$bytes" "$m" "$n" "$(awk -v m="$m" -v n="$n" 'BEGIN { print m / n }')"
  fi
done
for bytes in 1048576 67108864; do
  m=$(cycles "$bytes" minimal); n=$(cycles "$bytes" nonminimal)
  printf '%10d %12d %12d %8.2f\n' "$bytes" "$m" "$n" "$(awk -v m="$m" -v n="$n" 'BEGIN { print m / n }')"
done
echo "crossover: non-minimal routing is faster from ${crossover:-(none up to $max)} bytes"
