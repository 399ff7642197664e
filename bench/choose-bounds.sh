#!/usr/bin/env bash
# choose-bounds.sh: what the choose pass's chain bounds save on a large
# system (docs/passes.md, choose): the default compile (algo=auto) of a
# 4 MiB allreduce on 20 racks of 9 nodes of 8 TSPs (1,440 TSPs), where
# ring and biring, bounded below by their chains (2 (N - 1) hops), are not
# scheduled at all.  With BASELINE_TSPC=<an older tspc> the same compile
# by it, side by side in one run (wall seconds, time.choose, peak memory,
# the makespan, and what --stats says was tried).
#
#   BASELINE_TSPC=/path/to/old/tspc bench/choose-bounds.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
printf 'topology: dragonfly\ndragonfly: {tsps_per_node: 8, global_ports_per_tsp: 4, nodes_per_rack: 9, racks: 20}\n' > "$work/df20r.yaml"
printf 'graph ar {\n  input g : f32[1048576] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' > "$work/ar4.tg"

once() {  # LABEL TSPC
  local start end
  start=$(date +%s.%N)
  "$2" "$work/ar4.tg" -t "$work/df20r.yaml" -o "$work/out-$1" --stats > /dev/null 2> "$work/stats-$1"
  end=$(date +%s.%N)
  awk -v label="$1" -v wall="$(awk -v s="$start" -v e="$end" 'BEGIN { print e - s }')" '
    /^time.choose:/ { choose = $2 } /^makespan_cycles:/ { m = $2 } /^peak_rss_kib:/ { rss = $2 }
    END { printf "%-9s wall %6.1f s  choose %6.1f s  peak %5.0f MiB  makespan %s\n", label, wall, choose, rss / 1024, m }' "$work/stats-$1"
  grep '^choose s (line 3): alone' "$work/stats-$1" | sed 's/^/          /'
}

echo "4 MiB allreduce, 1,440 TSPs (20 racks x 9 nodes x 8), algo=auto; uptime: $(uptime | sed 's/.*load/load/')"
once this bin/tspc
if [ -n "${BASELINE_TSPC:-}" ]; then
  once baseline "$BASELINE_TSPC"
  if diff -rq "$work/out-this" "$work/out-baseline" > /dev/null; then echo "outputs: identical"; else echo "outputs: DIFFER"; fi
fi
