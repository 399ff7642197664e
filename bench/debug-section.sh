#!/usr/bin/env bash
# debug-section.sh: what tspc -g's debug section costs (docs/isa.md, the
# debug section).  Compiles rack72's 64 MiB allreduce
# (test/lit/Inputs/allreduce-64mib.tg) without and with -g, alternating,
# RUNS times each, side by side in one run; prints each compile's wall
# time, the median of each, the output's bytes, and the ratios.  The -g
# directory is then run on tsp-emu, which must say `data: verified` in the
# predicted cycles, as the plain one does.
#
#   bench/debug-section.sh [RUNS]     (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
model=test/lit/Inputs/allreduce-64mib.tg topo=examples/rack72.yaml

seconds() {  # the wall time of one compile into $work/$1
  local start end
  rm -rf "${work:?}/$1"
  start=$(date +%s.%N)
  bin/tspc "$model" -t "$topo" -o "$work/$1" "${@:2}"
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN {print b - a}'
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "rack72, $model: $runs compiles each, alternating"
: > "$work/plain.t"; : > "$work/debug.t"
for i in $(seq "$runs"); do
  p=$(seconds plain); g=$(seconds debug -g)
  echo "$p" >> "$work/plain.t"; echo "$g" >> "$work/debug.t"
  printf 'run %d: plain %.3f s, -g %.3f s\n' "$i" "$p" "$g"
done
tp=$(median < "$work/plain.t"); tg=$(median < "$work/debug.t")
bp=$(du -sb "$work/plain" | cut -f1); bg=$(du -sb "$work/debug" | cut -f1)
printf 'median compile: plain %.3f s, -g %.3f s, ratio %.2f\n' "$tp" "$tg" "$(awk -v a="$tg" -v b="$tp" 'BEGIN {print a / b}')"
printf 'output bytes: plain %d, -g %d, ratio %.2f\n' "$bp" "$bg" "$(awk -v a="$bg" -v b="$bp" 'BEGIN {print a / b}')"
echo "tsp-emu, plain: $(bin/tsp-emu "$work/plain" | tr '\n' ' ')"
echo "tsp-emu, -g:    $(bin/tsp-emu "$work/debug" | tr '\n' ' ')"
