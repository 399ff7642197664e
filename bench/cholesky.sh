#!/usr/bin/env bash
# cholesky.sh: seed 002 fig 19c, Cholesky execution time against matrix
# size on 1, 2, 4 and 8 TSPs.  For each order p, l = cholesky(a) of a
# seeded f16 [p x p] (test/lit/Inputs/cholesky/ style) is compiled for
# one.yaml, a fully connected pair, fc4 and node8 with the defaults: the
# partitioner picks how many of the TSPs take 320-row blocks (docs/passes.md,
# the cholesky lowering).  The schedule's exact cycles (tspc --stats) give
# the time at the 900 MHz clock, the speedup over one TSP and the fp16
# TFLOPs (p^3 / 3 operations).  With --emulate every program of order <=
# EMULATE_MAX (2000) also runs on tsp-emu (emulated == predicted, data:
# verified).  Ends with the seed's figures beside ours and what differs.
#
#   bench/cholesky.sh [--emulate] [ORDERS...]
set -euo pipefail
cd "$(dirname "$0")/.."
emulate=false
if [ "${1:-}" = --emulate ]; then emulate=true; shift; fi
orders=("$@")
[ ${#orders[@]} -gt 0 ] || orders=(320 640 1000 1600 2000 3000 4096)
EMULATE_MAX=2000
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
printf 'name: fc2\ntopology: fully_connected\ndevices: 2\n' > "$work/fc2.yaml"
topos=(examples/one.yaml "$work/fc2.yaml" examples/fc4.yaml examples/node8.yaml)
tsps=(1 2 4 8)
printf '%6s %5s %8s %11s %10s %8s %8s\n' order TSPs used cycles time_us speedup TFLOPs
declare -A best_speedup best_tflops
for p in "${orders[@]}"; do
  printf 'graph chol {\n  input a : f16[%d, %d];\n  l = cholesky(a);\n  output l;\n}\n' "$p" "$p" > "$work/c.tg"
  base=
  for k in 0 1 2 3; do
    bin/tspc "$work/c.tg" -t "${topos[$k]}" -o "$work/out" --stats 2> "$work/stats"
    line=$(grep '^cholesky.l:' "$work/stats")
    used=$(echo "$line" | sed 's/.* on \([0-9]*\) device.*/\1/')
    cycles=$(echo "$line" | sed 's/.*, \([0-9]*\) cycles.*/\1/')
    us=$(echo "$line" | sed 's/.* cycles, \([0-9.]*\) us.*/\1/')
    tflops=$(echo "$line" | sed 's/.* us, \([0-9.]*\) TFLOPs.*/\1/')
    base=${base:-$cycles}
    speedup=$(echo "$base / $cycles" | bc -l)
    printf '%6d %5d %8d %11d %10.1f %8.2f %8.3f\n' "$p" "${tsps[$k]}" "$used" "$cycles" "$us" "$speedup" "$tflops"
    best_speedup[${tsps[$k]}]=$(printf '%.2f' "$speedup")
    best_tflops[${tsps[$k]}]=$tflops
    if $emulate && [ "$p" -le "$EMULATE_MAX" ]; then
      bin/tsp-emu "$work/out" 2>&1 | grep -E '^(ok|failed|data):' | sed 's/^/    /'
    fi
    rm -rf "$work/out"
  done
done
last=${orders[${#orders[@]}-1]}
echo
echo "at order $last (the largest here) against seed 002 s5.5 / fig 19c:"
printf '  %-22s %8s %8s %8s\n' "" "2 TSPs" "4 TSPs" "8 TSPs"
printf '  %-22s %8s %8s %8s\n' "speedup, seed" 1.2x 1.4x 1.5x
printf '  %-22s %8s %8s %8s\n' "speedup, tspc" "${best_speedup[2]}x" "${best_speedup[4]}x" "${best_speedup[8]}x"
printf '  %-22s %8s %8s %8s\n' "fp16 TFLOPs, seed" - 14.9 22.4
printf '  %-22s %8s %8s %8s\n' "fp16 TFLOPs, tspc" "${best_tflops[2]}" "${best_tflops[4]}" "${best_tflops[8]}"
