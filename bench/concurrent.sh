#!/usr/bin/env bash
# concurrent.sh: concurrent collectives under algo=auto against every
# single algorithm forced on all of them (--algo=NAME), side by side in one
# run.  The choose pass costs each collective alone and then checks the
# whole model jointly (docs/passes.md, choose), so auto's makespan must be
# no worse than any forced algorithm's; the script says so per case and
# exits 1 if not.  Each auto program then runs on tsp-emu with jitter and
# drift and must say `data: verified`.  A case names a topology of
# examples/, or one elsewhere by its path without .yaml (a 3x3x2 torus,
# whose two cables between neighbours along its last dimension made
# auto lose there by up to 41 % while its joint trials were routed
# minimally and multitree's tree edges all took the first cable).
#
#   bench/concurrent.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

cases=(
  "split-matmul-8 node8"
  "split-matmul-8 rack72"
  "concurrent-mixed node8"
  "concurrent-mixed rack72"
  "concurrent-mixed mesh4x4"
  "concurrent-mixed test/lit/Inputs/topo/torus3x3x2"
)
algos=(ring biring direct ringbiodd ring2d hring dragonfly3 dbtree multitree tto ctree)

topology() {  # NAME: examples/NAME.yaml, or a path without .yaml
  case $1 in */*) echo "$1.yaml" ;; *) echo "examples/$1.yaml" ;; esac
}

makespan() {  # MODEL TOPO [ARGS..] -> cycles, or "-" when refused
  local m
  m=$(bin/tspc "bench/models/$1.tg" -t "$(topology "$2")" "${@:3}" --stats --stop-after=schedule 2>&1 |
      awk '/^makespan_cycles:/ { print $2 }')
  echo "${m:--}"
}

status=0
for c in "${cases[@]}"; do
  read -r model sys <<< "$c"
  start=$(date +%s.%N)
  auto=$(makespan "$model" "$sys")
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  printf '%s on %s: auto %s cycles (compiled in %.2f s)\n' "$model" "$sys" "$auto" "$secs"
  best=; best_algo=
  for a in "${algos[@]}"; do
    m=$(makespan "$model" "$sys" --algo="$a")
    [ "$m" = - ] && continue
    printf '    %-10s %10s  auto/forced %.3f\n' "$a" "$m" "$(echo "$auto / $m" | bc -l)"
    if [ -z "$best" ] || [ "$m" -lt "$best" ]; then best=$m best_algo=$a; fi
  done
  if [ "$auto" -le "$best" ]; then verdict="auto <= every forced algorithm (best forced: $best_algo $best)"
  else verdict="AUTO LOSES to $best_algo ($best)"; status=1; fi
  echo "    $verdict"
  bin/tspc "bench/models/$model.tg" -t "$(topology "$sys")" -o "$work/out"
  bin/tsp-emu "$work/out" --jitter on --drift-ppm 50 | sed 's/^/    emulated: /'
  rm -rf "$work/out"
done
exit $status
