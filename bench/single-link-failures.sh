#!/usr/bin/env bash
# single-link-failures.sh: rack72 with each one of its cables failed
# (issue 13: failed links hold for every algorithm; the router and the
# algorithms avoid the cable, or the compile names it).  For every cable
# a-b, compiles examples/allreduce.tg (4 MiB a device, the default
# algo=auto) for examples/rack72.yaml plus `failed_links: [[a, b]]`, runs it
# once in tsp-emu (deterministic: emulated must equal predicted, data
# verified), and prints the algorithm auto chose, the cycles, their ratio
# to the intact rack's, and the verdict.  About 3 s a cable on this
# machine, two at a time: 324 cables in about 8 minutes.
#
#   bench/single-link-failures.sh [TOPOLOGY.yaml [JOBS]]
set -euo pipefail
cd "$(dirname "$0")/.."
topo=${1:-examples/rack72.yaml}
jobs=${2:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

# One cable: "a b" -> "a-b kind algo cycles emulated data"
one() {
  local a=$1 b=$2 kind=$3 dir="$work/$1-$2"
  { cat "$topo"; echo "failed_links: [[$a, $b]]"; } > "$dir.yaml"
  local algo cycles emu data
  if ! bin/tspc examples/allreduce.tg -t "$dir.yaml" -o "$dir" --stats > "$dir.stats" 2>&1; then
    echo "$a-$b $kind refused - - $(grep -m1 error: "$dir.stats" | tr ' ' _)"
    return
  fi
  algo=$(awk '/^collective/ { for (i = 1; i <= NF; i++) if ($i ~ /^algo=/) { sub("algo=", "", $i); print $i } }' "$dir.stats" | head -1)
  out=$(bin/tsp-emu "$dir" 2>&1 || true)
  cycles=$(echo "$out" | sed -n 's/^[a-z]*: [0-9]* devices, \([0-9]*\) cycles (predicted \([0-9]*\)).*/\1 \2/p')
  data=$(echo "$out" | sed -n 's/^data: //p')
  echo "$a-$b $kind $algo $cycles $data"
  rm -rf "$dir"
}
export -f one
export topo work

bin/tspc examples/allreduce.tg -t "$topo" -o "$work/intact" --stats > "$work/intact.stats" 2>&1
intact=$(bin/tsp-emu "$work/intact" | sed -n 's/^ok: [0-9]* devices, \([0-9]*\) cycles.*/\1/p')
echo "# bench/single-link-failures.sh $topo, $(date +%F), this machine ($(nproc) cores, $jobs jobs): examples/allreduce.tg, default options"
echo "# intact: $intact cycles ($(awk '/^collective/ { for (i = 1; i <= NF; i++) if ($i ~ /^algo=/) print $i }' "$work/intact.stats" | head -1))"
bin/tspc -t "$topo" --describe --ports |
  awk '/^  - device:/ { d = $3 } /link:/ { gsub(/[{},]/, ""); for (i = 1; i <= NF; i++) { if ($i == "peer:") p = $(i + 1); if ($i == "kind:") k = $(i + 1) } if (d < p) print d, p, k }' |
  xargs -P "$jobs" -n 3 bash -c 'one "$@"' _ > "$work/rows"
sort -t- -k1,1n -k2,2n "$work/rows" | awk -v intact="$intact" '
  BEGIN { printf "%-8s %-6s %-10s %10s %10s %7s %s\n", "cable", "kind", "algo", "cycles", "predicted", "ratio", "data" }
  { n++; ratio = ($4 ~ /^[0-9]+$/) ? sprintf("%.3f", $4 / intact) : "-"
    printf "%-8s %-6s %-10s %10s %10s %7s %s\n", $1, $2, $3, $4, $5, ratio, $6
    if ($6 == "verified" && $4 == $5) ok++; if ($4 ~ /^[0-9]+$/) { s += $4 / intact; if ($4 / intact > worst) worst = $4 / intact } }
  END { printf "# %d cables: %d verified with emulated == predicted; mean ratio %.3f, worst %.3f\n", n, ok, s / (n ? n : 1), worst }'
