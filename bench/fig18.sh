#!/usr/bin/env bash
# fig18.sh: seed 002 fig 18, BERT encoders pipelined over TSPs: 6, 24, 48
# and 96 encoder layers of examples/bert.tg (no placements) on 1, 4, 8 and
# 16 TSPs (one.yaml, fc4, node8, a dragonfly of two nodes), each compiled
# with --batches=B inferences in flight (default 4).  The partitioner cuts
# the stages; the schedule's exact cycles give each inference's finish,
# the steady-state interval between inferences and the throughput.
# "relative" is the work throughput (encoders x inferences a second)
# against one TSP's: the seed reports near-linear scaling, and issue 12
# asks for at least 0.9 x the TSP count.  Pass --emulate to also run each
# program on tsp-emu (emulated == predicted, data: verified; slow: about
# 3 s a layer and inference).
#
#   bench/fig18.sh [--emulate] [BATCHES]
set -euo pipefail
cd "$(dirname "$0")/.."
emulate=false
if [ "${1:-}" = --emulate ]; then emulate=true; shift; fi
batches=${1:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
printf 'name: df2\ntopology: dragonfly\ndragonfly: {tsps_per_node: 8, global_ports_per_tsp: 4, nodes: 2}\n' > "$work/df2.yaml"
printf '%8s %5s %7s %9s %12s %12s %10s %9s %9s\n' encoders TSPs stages compile_s latency_cyc interval_cyc per_s relative of_TSPs
base=
for pair in "6 examples/one.yaml 1" "24 examples/fc4.yaml 4" "48 examples/node8.yaml 8" "96 $work/df2.yaml 16"; do
  read -r layers topo tsps <<< "$pair"
  sed "s/repeat 24 {/repeat $layers {/" examples/bert.tg > "$work/bert$layers.tg"
  start=$(date +%s.%N)
  bin/tspc "$work/bert$layers.tg" -t "$topo" --batches="$batches" -o "$work/out" --stats --dump-after=partition \
    > "$work/stats" 2>&1 || { echo "$layers encoders on $tsps TSPs: $(grep -m1 error: "$work/stats")"; continue; }
  end=$(date +%s.%N)
  stages=$(sed -n 's/^\/\/ pipeline: .* over \([0-9]*\) stages.*/\1/p' "$work/stats")
  latency=$(sed -n 's/^latency_cycles: //p' "$work/stats")
  interval=$(sed -n 's/^interval_cycles: //p' "$work/stats")
  per_s=$(sed -n 's/^throughput_per_s: //p' "$work/stats")
  work_rate=$(echo "$layers * $per_s" | bc -l)
  base=${base:-$work_rate}
  relative=$(echo "$work_rate / $base" | bc -l)
  printf '%8d %5d %7s %9.2f %12s %12s %10s %9.2f %9.3f\n' "$layers" "$tsps" "${stages:-1}" "$(echo "$end - $start" | bc)" \
    "$latency" "$interval" "$per_s" "$relative" "$(echo "$relative / $tsps" | bc -l)"
  if $emulate; then
    # a run past this machine's memory is refused by tsp-emu's estimate: the line says so
    { bin/tsp-emu "$work/out" 2>&1 || true; } | grep -E '^(ok|failed|data):|error:' | sed 's/^/    /'
  fi
  rm -rf "$work/out"
done
