#!/usr/bin/env bash
# partition.sh: the partitioner's workloads of seed 002 (s5.2, s5.5), each
# compiled with the defaults, emulated on real data and checked:
#
#  1. the [800 x 32576] x [32576 x 8192] f16 matmul on one-level dragonflies
#     of 1, 2, 4, 8 and 13 nodes (8 to 104 TSPs; seed 002 fig 14): as
#     examples/matmul.tg writes it (x on device 0) and with x unplaced
#     (bench/models/matmul-host.tg: the host loads each device's columns);
#     the grid chosen, predicted and emulated cycles, latency at 900 MHz,
#     and the speedup over one node;
#  2. BERT-Large (examples/bert.tg, 24 layers, no placements) on fc4 and
#     rack72: the stages, and the latency beside seed 002's 4-TSP 1,225 us;
#  3. a data-parallel training step (examples/train.tg) on rack72.
#
# Every run is compared: emulated == predicted and `data: verified`.
#
#   bench/partition.sh [NODES...]   (default: 1 2 4 8 13)
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${*:-1 2 4 8 13}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

# emulate OUT: "<emulated cycles> <verdict>", or the failure
emulate() {
  bin/tsp-emu "$1" > "$work/emu" 2>&1 || true
  local ok
  ok=$(grep -m1 -E '^(ok|failed):' "$work/emu" || echo "emulator failed")
  echo "$(sed -n 's/^ok: [0-9]* devices\{0,1\}, \([0-9]*\) cycles.*/\1/p' <<< "$ok") $(grep -m1 '^data:' "$work/emu" | sed 's/data: //')"
}

echo "== matmul [800 x 32576] x [32576 x 8192] f16 (seed 002 s5.2, fig 14)"
printf '%-16s %5s %5s %-8s %10s %10s %-9s %9s %7s\n' model nodes TSPs grid predicted emulated data latency_us speedup
for model in examples/matmul.tg bench/models/matmul-host.tg; do
  base=
  for n in $nodes; do
    printf 'name: df%d\ntopology: dragonfly\ndragonfly: {tsps_per_node: 8, global_ports_per_tsp: 4, nodes: %d}\n' "$n" "$n" \
      > "$work/df.yaml"
    bin/tspc "$model" -t "$work/df.yaml" -o "$work/out" --stats --dump-after=partition > "$work/stats" 2>&1 || {
      echo "$model on $n nodes: $(grep -m1 error: "$work/stats")"
      continue
    }
    grid=$(sed -n 's/^\/\/ y = .* split \([0-9]*\) x \([0-9]*\) .*/\1x\2/p' "$work/stats")
    predicted=$(sed -n 's/^predicted_cycles: //p' "$work/stats")
    read -r emulated verdict <<< "$(emulate "$work/out")"
    base=${base:-$predicted}
    printf '%-16s %5d %5d %-8s %10s %10s %-9s %9.1f %7.2f\n' "$(basename "$model" .tg)" "$n" $((n * 8)) "${grid:-1x1}" \
      "$predicted" "$emulated" "$verdict" "$(echo "$predicted / 900" | bc -l)" "$(echo "$base / $predicted" | bc -l)"
    rm -rf "$work/out"
  done
done

echo
echo "== BERT-Large, examples/bert.tg (24 layers, 1024 rows, no placements; seed 002: 1,225 us on 4 TSPs)"
printf '%-8s %7s %9s %10s %10s %-9s %10s\n' system stages compile_s predicted emulated data latency_us
for topo in fc4 rack72; do
  start=$(date +%s.%N)
  bin/tspc examples/bert.tg -t "examples/$topo.yaml" -o "$work/out" --stats --dump-after=partition > "$work/stats" 2>&1
  end=$(date +%s.%N)
  stages=$(sed -n 's/^\/\/ pipeline: .* over \([0-9]*\) stages.*/\1/p' "$work/stats")
  predicted=$(sed -n 's/^predicted_cycles: //p' "$work/stats")
  read -r emulated verdict <<< "$(emulate "$work/out")"
  printf '%-8s %7s %9.2f %10s %10s %-9s %10.1f\n' "$topo" "${stages:-1}" "$(echo "$end - $start" | bc)" "$predicted" \
    "$emulated" "$verdict" "$(echo "$predicted / 900" | bc -l)"
  rm -rf "$work/out"
done

echo
echo "== data-parallel training step, examples/train.tg, on rack72"
bin/tspc examples/train.tg -t examples/rack72.yaml -o "$work/out" --stats > "$work/stats" 2>&1
read -r emulated verdict <<< "$(emulate "$work/out")"
echo "predicted $(sed -n 's/^predicted_cycles: //p' "$work/stats"), emulated $emulated, data: $verdict"
