#!/usr/bin/env bash
# fig13.sh: seed 002 fig 13 on one TSP: [2304 x 4096] x [4096 x N] in fp16,
# compiled by tspc and run by tsp-emu on one core.  For each N it prints the
# emulated cycles (the alignment preamble, every weight install and the last
# conversion included), the compiler's prediction, the matrix unit's
# utilisation measured on the emulator,
#     2304 x 4096 x N / (102,400 MACs a cycle x emulated cycles),
# beside the seed's ">= 80 %", and how long the emulation took (the
# issue's bound: 60 s for N = 3500 on one core of this machine).
#
#   bench/fig13.sh [N ...]      (default: 1376 1601 2048 2500 2881 3500)
#
# The output is saved in bench/results/fig13.txt by running
#   bench/fig13.sh | tee bench/results/fig13.txt
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${*:-1376 1601 2048 2500 2881 3500}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
export OPENBLAS_NUM_THREADS=1
pin=""
command -v taskset > /dev/null && pin="taskset -c 0"

echo "# seed 002 fig 13 on one TSP: [2304 x 4096] x [4096 x N] fp16 (tspc $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%d))"
printf '%6s %10s %10s %8s %11s %8s %9s %s\n' N cycles predicted tiles utilisation seed emu_s data
for n in $sizes; do
  cat > "$work/fig13.tg" <<TG
graph fig13 {
  input x : f16[2304, 4096] @ device(0);
  param w : f16[4096, $n] @ device(0);
  y = matmul(x, w);
  output y;
}
TG
  bin/tspc "$work/fig13.tg" -t examples/one.yaml -o "$work/out" > /dev/null
  start=$(date +%s.%N)
  out=$($pin bin/tsp-emu "$work/out")
  end=$(date +%s.%N)
  cycles=$(sed -n 's/.*devices\{0,1\}, \([0-9]*\) cycles.*/\1/p' <<< "$out")
  predicted=$(sed -n 's/.*(predicted \([0-9]*\)).*/\1/p' <<< "$out")
  data=$(sed -n 's/^data: //p' <<< "$out")
  tiles=$(( (4096 + 159) / 160 * ((n + 319) / 320) ))
  awk -v n="$n" -v c="$cycles" -v p="$predicted" -v t="$tiles" -v s="$start" -v e="$end" -v d="$data" 'BEGIN {
    u = 2304 * 4096 * n / (102400 * c)
    printf "%6d %10d %10d %8d %11.4f %8s %9.1f %s\n", n, c, p, t, u, ">= 0.80", e - s, d }'
done
