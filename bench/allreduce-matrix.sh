#!/usr/bin/env bash
# allreduce-matrix.sh: the AllReduce end to end on every example topology
# (tspc, then tsp-emu twice), at 4 KiB, 1 MiB, an odd size (12,345 f32: no
# multiple of a vector) and 64 MiB a device (on systems of up to 72
# devices).  For each: compile seconds, predicted cycles, the deterministic
# run's cycles (must equal the prediction) and data verdict, and the verdict
# of a run with jitter, 100 ppm of drift and 5000 cycles of start skew.
#
#   bench/allreduce-matrix.sh [TOPOLOGY.yaml ...]   (default: every examples/*.yaml but system10440)
#
# The 64 MiB runs need a few GiB of memory (rack72: 5.3 GiB) and about a
# minute each on one core.  Results: bench/results/allreduce-matrix.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s VARIANT=release tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
topos=("$@")
if (( ${#topos[@]} == 0 )); then
  for t in examples/*.yaml; do [[ $t == *system10440* ]] || topos+=("$t"); done
fi

model() {  # ELEMENTS -> work/ar.tg
  printf 'graph ar {\n  input g : f32[%d] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' "$1" > "$work/ar.tg"
}

verdict() {  # REPORT -> "ok/failed cycles data"
  awk '/^status:/ { s = $2 } /^cycles:/ { c = $2 } /^data:/ { d = $2 } END { printf "%s %s %s", s, c, d }' "$1"
}

printf '%-10s %9s %8s %12s %12s %-8s %-8s %-20s\n' topology size compile_s predicted emulated status data noisy
for topo in "${topos[@]}"; do
  devices=$(bin/tspc -t "$topo" --describe | awk '/^devices:/ { print $2 }')
  for elems in 1024 262144 12345 16777216; do
    (( elems == 16777216 && devices > 72 )) && continue
    model "$elems"
    start=$(date +%s.%N)
    bin/tspc "$work/ar.tg" -t "$topo" -o "$work/out" 2> "$work/err" || { echo "$topo $elems: $(head -1 "$work/err")"; continue; }
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    predicted=$(awk '/^predicted_cycles:/ { print $2 }' "$work/out/manifest.yaml")
    bin/tsp-emu "$work/out" --report "$work/exact.yaml" > /dev/null 2>&1 || true
    bin/tsp-emu "$work/out" --report "$work/noisy.yaml" --jitter on --drift-ppm 100 --start-skew 5000 > /dev/null 2>&1 || true
    read -r status cycles data <<< "$(verdict "$work/exact.yaml")"
    read -r nstatus _ ndata <<< "$(verdict "$work/noisy.yaml")"
    printf '%-10s %9d %8.2f %12d %12d %-8s %-8s %-20s\n' "$(basename "$topo" .yaml)" "$((elems * 4))" "$secs" \
      "$predicted" "$cycles" "$status" "$data" "$nstatus/$ndata"
  done
done
