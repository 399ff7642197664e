#!/usr/bin/env bash
# run.sh BINDIR MODEL.tg TOPOLOGY.yaml OUT [TSPC OPTIONS...]: compiles MODEL
# for TOPOLOGY into OUT, then runs it on the emulator twice: deterministic
# (jitter off, no drift, no skew: the cycles must equal the prediction) and
# with jitter, 100 ppm of drift and 5000 cycles of start skew.  Prints each
# run's last line and its data verdict, e.g.
#   exact: ok: 8 devices, 14942 cycles (predicted 14942), ... 0 violations
#   exact: data: verified
#   noisy: ok: 8 devices, 16053 cycles (predicted 14942), ... 0 violations
#   noisy: data: verified
set -u
bin=$1 model=$2 topo=$3 out=$4
shift 4
rm -rf "$out"
"$bin/tspc" "$model" -t "$topo" -o "$out" "$@" || exit 1
run() {  # LABEL EMU-OPTIONS...
  local label=$1
  shift
  "$bin/tsp-emu" "$out" "$@" 2>&1 | grep -E '^(ok|failed|data):' | sed "s/^/$label: /"
}
run exact
run noisy --jitter on --drift-ppm 100 --start-skew 5000 --seed 3
