#!/usr/bin/env bash
# emu-threads.sh: tsp-emu on 1 thread, on 2, and with no --threads (the
# default: the cores this process may use) on the rack72 64 MiB allreduce
# (test/lit/Inputs/allreduce-64mib.tg compiled by tspc -t
# examples/rack72.yaml), each writing its --report and --trace.  The three
# runs' summaries, reports and traces must be the same bytes (cmp; the
# script fails otherwise); it prints each run's wall time, CPU time and
# peak memory, and the speed-up over one thread.
#
#   bench/emu-threads.sh            (results: bench/results/emu-threads.txt)
#
# The trace is taken at the full 64 MiB: it holds every instruction and the
# first --trace-max-vectors (100,000) of the ~30 million link arrows, about
# 90 MB.  Wall time is what threads buy; on a machine shared with other
# jobs it depends on their load, which the script prints beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
bin/tspc test/lit/Inputs/allreduce-64mib.tg -t examples/rack72.yaml -o "$work/ar64"
echo "machine: $(nproc) cores available to this process; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# run NAME LABEL [OPTION...]: one run; its summary, times and peak memory.
run() {
  local name=$1 label=$2
  shift 2
  TSP_EMU_WINDOWS=1 /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" bin/tsp-emu "$work/ar64" --quiet \
    --report "$work/$name.yaml" --trace "$work/$name.json" "$@" > "$work/$name.txt" 2> "$work/$name.err"
  read -r wall user sys rss < "$work/$name.time"
  echo "$label: $(head -1 "$work/$name.txt"); $wall s wall, $(echo "$user + $sys" | bc) s CPU, peak RSS $((rss / 1024)) MiB"
  echo "$wall" > "$work/$name.wall"
}

run t1 "--threads 1" --threads 1
run t2 "--threads 2" --threads 2
run default "no --threads"
for name in t2 default; do
  for f in txt err yaml json; do cmp "$work/t1.$f" "$work/$name.$f"; done
done
sed -n 's/^tsp-emu: \([0-9]* windows\)/windows (TSP_EMU_WINDOWS, the same in each run): \1/p' "$work/t1.err"
echo "byte-identical (cmp) in all three runs: summary ($(wc -l < "$work/t1.txt") lines), report ($(stat -c %s "$work/t1.yaml") bytes), trace ($(stat -c %s "$work/t1.json") bytes)"
python3 -c "
t1, t2, d = $(cat "$work/t1.wall"), $(cat "$work/t2.wall"), $(cat "$work/default.wall")
print('speed-up over 1 thread (wall): 2 threads %.2fx, the default %.2fx' % (t1 / t2, t1 / d))"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
