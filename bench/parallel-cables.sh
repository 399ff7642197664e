#!/usr/bin/env bash
# parallel-cables.sh: collectives on topologies where several cables join
# a pair of neighbours (tori with a dimension of 2, parallel cables in an
# explicit topology, some of them failed), under algo=auto against every
# algorithm forced, side by side in one run.  A tree algorithm's edge keeps
# the cable its tree was built over (docs/passes.md, route, "A tree edge
# keeps its cable"); the script prints each case's makespans, how many of
# the link directions multitree's minimal routing uses, auto's verdict
# against the best forced algorithm (a lone collective is ranked on
# minimally routed trials and checked as compiled only while its schedule
# is small, CHOOSE_ALONE_RECHECK_TRIES, so auto can lose above that where
# load-aware spreading favours another algorithm: docs/passes.md, choose;
# printed, not an error), and emulates every auto program, which must run as predicted
# with `data: verified`.
#
#   bench/parallel-cables.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

topos=(torus4x2 torus2x2x2 torus2x2x2-failed3 torus3x3x2 parallel3)
models=(examples/allreduce.tg bench/models/odd-group.tg bench/models/rs-ag.tg bench/models/concurrent-mixed.tg)
algos=(ring biring direct ringbiodd ring2d hring dragonfly3 dbtree multitree tto ctree)

stat() {  # FIELD MODEL TOPO [ARGS..] -> the --stats field, or "-" when refused
  local v
  v=$(bin/tspc "$2" -t "test/lit/Inputs/topo/$3.yaml" "${@:4}" --stats --stop-after=schedule 2>&1 |
      grep -o "$1[:=] *[0-9/]*" | head -1 | sed 's/.*[:=] *//')
  echo "${v:--}"
}

losses=0 cases=0
for t in "${topos[@]}"; do
  for m in "${models[@]}"; do
    auto=$(stat makespan_cycles "$m" "$t")
    [ "$auto" = - ] && continue
    cases=$((cases + 1))
    used=$(stat links_used "$m" "$t" --algo=multitree --route=minimal)
    printf '%s on %s: auto %s cycles; multitree minimal uses %s link directions\n' "$(basename "$m" .tg)" "$t" "$auto" "$used"
    best=; best_algo=
    for a in "${algos[@]}"; do
      c=$(stat makespan_cycles "$m" "$t" --algo="$a")
      [ "$c" = - ] && continue
      printf '    %-10s %10s  auto/forced %.3f\n' "$a" "$c" "$(echo "$auto / $c" | bc -l)"
      if [ -z "$best" ] || [ "$c" -lt "$best" ]; then best=$c best_algo=$a; fi
    done
    if [ "$auto" -le "$best" ]; then echo "    auto <= every forced algorithm (best forced: $best_algo $best)"
    else
      printf '    auto slower than %s (%s) by %.1f %%\n' "$best_algo" "$best" "$(echo "($auto / $best - 1) * 100" | bc -l)"
      losses=$((losses + 1))
    fi
    bin/tspc "$m" -t "test/lit/Inputs/topo/$t.yaml" -o "$work/out"
    bin/tsp-emu "$work/out" | sed 's/^/    emulated: /'
    rm -rf "$work/out"
  done
done
echo "auto slower than a forced algorithm in $losses of $cases cases"
