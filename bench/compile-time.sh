#!/usr/bin/env bash
# compile-time.sh: how long tspc takes to compile the rack72 AllReduce as
# the tensor grows from 1 MiB to 1 GiB a device, and how much memory it
# holds (tspc --stats: time.PASS, peak_rss_kib).  The schedule's reservation
# tables hold runs of vectors, not vectors, so the time should stay nearly
# flat: it grows with the number of transfers (and of the streams the sync
# pass cuts long transfers into), not with bytes.
#
#   bench/compile-time.sh [TOPOLOGY.yaml]   (default examples/rack72.yaml)
#
# A device's SRAM holds 220 MiB (sram_vectors, docs/topology.md), so 1 GiB
# a device cannot be compiled down to binaries for rack72 itself; the 1 GiB
# row compiles for a copy of the topology with sram_vectors raised to hold
# it, so that every pass (code generation included) is timed.
set -euo pipefail
cd "$(dirname "$0")/.."
topo=${1:-examples/rack72.yaml}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
{ cat "$topo"; echo "sram_vectors: 8388608"; } > "$work/big-sram.yaml"

printf '%8s %9s %9s %9s %9s %9s %9s %10s %14s\n' size lower route schedule codegen total wall peak_MiB predicted
for mib in 1 4 16 64 256 1024; do
  elems=$(( mib * 262144 ))
  printf 'graph ar {\n  input g : f32[%d] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' "$elems" > "$work/ar.tg"
  t=$topo
  (( mib > 64 )) && t=$work/big-sram.yaml
  start=$(date +%s.%N)
  bin/tspc "$work/ar.tg" -t "$t" -o "$work/out" --stats 2> "$work/stats"
  end=$(date +%s.%N)
  awk -v mib="$mib" -v wall="$(echo "$end - $start" | bc)" '
    /^time\./ { split($1, k, "."); sub(":", "", k[2]); tm[k[2]] = $2; total += $2 }
    /^peak_rss_kib:/ { rss = $2 }
    /^predicted_cycles:/ { pc = $2 }
    END { printf "%6dMiB %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %10.1f %14d\n", mib, tm["lower"], tm["route"],
          tm["schedule"], tm["codegen"], total, wall, rss / 1024, pc }' "$work/stats"
done
