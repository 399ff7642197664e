#!/usr/bin/env bash
# emulate-mpi.sh: the 1 MiB allreduce of bench/emulate-scale.sh on
# system10440 (10,440 TSPs), run by bin/tsp-emu-mpi on RANKS ranks (4):
# the verdict (rank 0's, the same bytes as tsp-emu's), the wall time, and
# each rank's seconds and peak memory (/usr/bin/time around each rank).
# Each rank holds the SRAM of its quarter of the devices; tsp-emu alone
# needs about 19 GB for it (bench/results/emulate-scale.txt).
#
#   bench/emulate-mpi.sh [RANKS]   (as root: OMPI_ALLOW_RUN_AS_ROOT is set here)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
[ -x bin/tsp-emu-mpi ] || { echo "emulate-mpi: no bin/tsp-emu-mpi (mpicc missing: scripts/install-deps.sh)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
printf 'graph ar {\n  input g : f32[262144] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' > "$work/ar.tg"
/usr/bin/time -f '%e s, %M kB' -o "$work/ctime" bin/tspc "$work/ar.tg" -t examples/system10440.yaml -o "$work/out"
echo "system10440: compiled in $(cat "$work/ctime")"
start=$(date +%s.%N)
mpirun --quiet --oversubscribe -np "$ranks" sh -c \
  'exec /usr/bin/time -f "%e s, %M kB" -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' "$work/rank" \
  bin/tsp-emu-mpi "$work/out" > "$work/emu" 2>&1 || true
end=$(date +%s.%N)
sed 's/^/    /' "$work/emu" | grep -E '^    (ok|failed|data|tsp-emu)'
printf '    %d ranks: %.1f s wall\n' "$ranks" "$(echo "$end - $start" | bc)"
for r in $(seq 0 $((ranks - 1))); do echo "    rank $r: $(cat "$work/rank.$r")"; done
