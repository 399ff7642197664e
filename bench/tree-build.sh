#!/usr/bin/env bash
# tree-build.sh: the 1 MiB allreduce on 1,440 TSPs (20 racks of 9 nodes of
# 8) and on a 30x30 mesh (900 TSPs, trees up to 58 steps deep) compiled
# with --algo=multitree and --algo=ctree (and on the mesh by default,
# algo=auto, where multitree wins), by this tspc and,
# with BASELINE_TSPC=<another tspc>, by that one beside it in the same run
# (alternating), and whether the binaries they write are the same.  What
# it measures: the trees' construction (MultiTree's step-by-step growth,
# algo_multitree.c, which ctree shares), the chunk search's trial of a
# count every divisor gives alike (choose.c, one_count), and the tree
# engine's walk of the trees (algo_tree.c: which edges carry data, and the
# wavefront's emission), all of which grew with the device count, or with
# devices times depth, before they were cut (docs/collectives.md,
# multitree).
#
#   BASELINE_TSPC=/path/to/tspc bench/tree-build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
printf 'topology: dragonfly\ndragonfly: {tsps_per_node: 8, global_ports_per_tsp: 4, nodes_per_rack: 9, racks: 20}\n' > "$work/df20r.yaml"
printf 'topology: mesh\ndims: [30, 30]\n' > "$work/mesh30x30.yaml"
printf 'graph ar {\n  input g : f32[262144] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' > "$work/ar1.tg"

once() {  # LABEL TSPC ALGO TOPOLOGY: wall and user seconds, peak memory, makespan
  local out="$work/out-$1-$3-$4"
  /usr/bin/time -f "%e %U %M" -o "$work/time" "$2" "$work/ar1.tg" -t "$work/$4.yaml" --algo="$3" -o "$out" \
    --stats > /dev/null 2> "$work/stats"
  read -r wall user kib < "$work/time"
  printf '%-9s %-10s wall %6.1f s  user %6.1f s  peak %5d MiB  makespan %s\n' "$1" "$3" "$wall" "$user" \
    $((kib / 1024)) "$(awk '/^makespan_cycles:/ { print $2 }' "$work/stats")"
}

echo "1 MiB allreduce, forced tree algorithms (and the default on the mesh); uptime: $(uptime | sed 's/.*load/load/')"
for topo in df20r mesh30x30; do
  echo "$topo:"
  algos="multitree ctree"
  [ "$topo" = mesh30x30 ] && algos="$algos auto"  # the default: multitree wins, its ranking trial kept as the compile's
  for algo in $algos; do
    once this bin/tspc "$algo" "$topo"
    if [ -n "${BASELINE_TSPC:-}" ]; then
      once baseline "$BASELINE_TSPC" "$algo" "$topo"
      if diff -rq "$work/out-this-$algo-$topo" "$work/out-baseline-$algo-$topo" > /dev/null; then echo "$algo outputs: identical"
      else echo "$algo outputs: DIFFER"; fi
    fi
  done
done
