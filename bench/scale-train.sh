#!/usr/bin/env bash
# scale-train.sh: compile time and memory of a model with compute against
# the device count: examples/train.tg (one data-parallel training step of
# a dense layer: two matmuls and a transpose on every device, the weight
# gradient summed by an allreduce) on node8, rack72, system264, racks9
# (nine rack72 racks, 648 TSPs, written here) and system10440, compiled
# with the defaults (algo=auto, --route=auto) and code generation (-o).
# bench/scale.sh does the same for an allreduce alone; here every device
# also runs about 5,400 instructions of its own (56 M on system10440),
# which the schedule places one by one and code generation writes.
# Prints wall seconds, peak RSS (kB, /usr/bin/time), the arena's bytes at
# the end (--stats ir_bytes), the algorithm auto chose and the makespan.
#
#   bench/scale-train.sh [TOPOLOGY...]   (default: node8 rack72 system264 racks9 system10440)
#
# BASELINE_TSPC=PATH also compiles each with another tspc (an older
# build), right after this one, and prints its line beside; the two must
# write the same binaries (cmp), or the script says so.  system10440 needs
# up to 8 GB here (the baseline before bench/results/scale-train.txt's
# first run: 22 GB).  Results: bench/results/scale-train.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
topos=${*:-node8 rack72 system264 racks9 system10440}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
printf 'name: racks9\ntopology: dragonfly\ndragonfly: {tsps_per_node: 8, global_ports_per_tsp: 4, nodes_per_rack: 9, racks: 9}\n' \
  > "$work/racks9.yaml"

# once TSPC TOPOLOGY OUT: one compile's line.
once() {
  local yaml=examples/$2.yaml start end
  [ -f "$yaml" ] || yaml=$work/$2.yaml
  start=$(date +%s.%N)
  /usr/bin/time -f '%M' -o "$work/rss" "$1" examples/train.tg -t "$yaml" -o "$3" --stats > "$work/stats" 2>&1 ||
    { echo "$2: refused or failed: $(grep -m1 -E 'error:|Killed' "$work/stats" || tail -1 "$work/stats")"; return 1; }
  end=$(date +%s.%N)
  printf '%-12s %7s %9.2f %10s %12s %-10s %10s\n' "$2" "$(awk '/^devices:/ { print $2 }' "$work/stats")" \
    "$(echo "$end - $start" | bc -l)" "$(cat "$work/rss")" "$(awk '/^ir_bytes:/ { print $2 }' "$work/stats")" \
    "$(sed -n 's/^collective g: allreduce algo=\([^ ]*\).*/\1/p' "$work/stats")" \
    "$(awk '/^makespan_cycles:/ { print $2 }' "$work/stats")"
}

printf '%-12s %7s %9s %10s %12s %-10s %10s\n' topology devices seconds peak_kB ir_bytes algo cycles
for topo in $topos; do
  once bin/tspc "$topo" "$work/out" || continue
  if [ -n "${BASELINE_TSPC:-}" ]; then
    printf '  baseline: '
    once "$BASELINE_TSPC" "$topo" "$work/base" || continue
    for f in "$work"/out/*.tsp; do
      cmp -s "$f" "$work/base/$(basename "$f")" || { echo "  $topo: $(basename "$f") differs from the baseline's"; break; }
    done
    rm -rf "$work/base"
  fi
  rm -rf "$work/out"
done
