#!/usr/bin/env bash
# emulate-scale.sh: the default allreduce (algo=auto) of 1 MiB a device
# compiled for a topology and run on tsp-emu, exact (no jitter, drift or
# skew): the compile's seconds and peak memory, then the emulator's verdict,
# seconds and peak memory.  system10440 takes about 5 minutes and 19 GB of
# the emulator (every device's SRAM is real memory), so this is a bench,
# not a test.
#
#   bench/emulate-scale.sh [TOPOLOGY ...]   (default: system10440; names in examples/)
set -euo pipefail
cd "$(dirname "$0")/.."
topos=${*:-system10440}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
printf 'graph ar {\n  input g : f32[262144] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' > "$work/ar.tg"
for topo in $topos; do
  /usr/bin/time -f '%e s, %M kB' -o "$work/ctime" bin/tspc "$work/ar.tg" -t "examples/$topo.yaml" -o "$work/out" --stats \
    2> "$work/stats"
  echo "$topo: compiled in $(cat "$work/ctime"): $(grep '^collective s:' "$work/stats" | sed 's/ bound=.*efficiency=/ ... efficiency=/; s/ busbw.*//')"
  /usr/bin/time -f '%e s, %M kB' -o "$work/etime" bin/tsp-emu "$work/out" > "$work/emu" 2>&1 || true
  sed 's/^/    /' "$work/emu" | grep -E '^    (ok|failed|data):'
  echo "    emulated in $(cat "$work/etime")"
  rm -rf "$work/out"
done
