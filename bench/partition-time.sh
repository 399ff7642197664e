#!/usr/bin/env bash
# partition-time.sh: the partition pass's time (--stats' time.partition)
# against a model's depth: `repeat L { matmul; relu }` with a 128 KiB
# weight a layer (f16[256, 256]), on ring8 (220 MiB TSPs: from about 1,700
# layers the model needs a pipeline), one inference and four in flight.
# The pipeline cut asks, after every op that joins a stage, whether the
# stage's device still fits, for every cut its search for a cycle limit
# tries (passes/partition.c, step 4); the answer is kept as the stage grows
# (StageSram), where a sweep of the whole graph per question made the pass
# quadratic.  The stages each run chose are printed beside.
#
# BASELINE_TSPC=PATH times another tspc (an older build) beside, on the
# same models, with TIMEOUT seconds each (default 120; "-" when it ran out).
#
#   bench/partition-time.sh [LAYERS...]   (default: 250 500 1000 2000 3000)
set -euo pipefail
cd "$(dirname "$0")/.."
layers=${*:-250 500 1000 2000 3000}
timeout_s=${TIMEOUT:-120}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

# time_partition TSPC MODEL BATCHES: "<seconds> <stages>", "- -" past the timeout
time_partition() {
  if ! timeout "$timeout_s" "$1" "$2" -t examples/ring8.yaml --batches="$3" --stats --stop-after=partition \
       --dump-after=partition > "$work/out" 2>&1; then
    echo "- -"
    return
  fi
  local s stages
  s=$(sed -n 's/^time.partition: \([0-9.]*\) s/\1/p' "$work/out")
  stages=$(sed -n 's/^\/\/ pipeline: [0-9]* ops over \([0-9]*\) stages.*/\1/p' "$work/out")
  echo "$s ${stages:-1}"
}

printf '%7s %5s %7s %8s %7s' layers ops batches seconds stages
[ -n "${BASELINE_TSPC:-}" ] && printf ' %11s %9s %8s' baseline_s base_stages speedup
echo
for l in $layers; do
  printf 'graph deep {\n  input x : f16[64, 256];\n  repeat %d {\n    param w : f16[256, 256];\n    h = matmul(x, w);\n    x = relu(h);\n  }\n  output x;\n}\n' \
    "$l" > "$work/deep.tg"
  for b in 1 4; do
    read -r s stages <<< "$(time_partition bin/tspc "$work/deep.tg" "$b")"
    printf '%7d %5d %7d %8s %7s' "$l" $((2 * l)) "$b" "$s" "$stages"
    if [ -n "${BASELINE_TSPC:-}" ]; then
      read -r bs bstages <<< "$(time_partition "$BASELINE_TSPC" "$work/deep.tg" "$b")"
      speedup=-
      [ "$bs" != - ] && [ "$s" != - ] && speedup=$(awk -v a="$bs" -v b="$s" 'BEGIN { printf "%.0fx", a / (b > 0 ? b : 1e-6) }')
      printf ' %11s %9s %8s' "$bs" "$bstages" "$speedup"
    fi
    echo
  done
done
