#!/usr/bin/env bash
# hot-spare.sh: rack72's hot spare (seed 002 s4.5, N+1; docs/topology.md,
# "The hot spare").  With node 8 the spare, compiles examples/allreduce.tg
# (4 MiB a device, the default algo=auto) with each of nodes 0..7 failed
# in turn, the spare standing in, and runs it in tsp-emu twice:
# deterministic (emulated must equal predicted, data verified) and with
# jitter, 100 ppm of drift and 5000 cycles of start skew.  Prints the
# algorithm auto chose, the cycles and their ratio to the rack with the
# spare standing by; for reference, the intact rack (72 TSPs) and node 3
# failed without a spare (the smaller system).  About 9 s a row.
#
#   bench/hot-spare.sh [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

# One system: "LABEL SPARES FAILED" -> "label algo cycles predicted exact noisy"
one() {
  local label=$1 spares=$2 failed=$3 dir="$work/$1"
  { cat examples/rack72.yaml
    [ "$spares" = - ] || echo "spare_nodes: [$spares]"
    [ "$failed" = - ] || echo "failed_nodes: [$failed]"; } > "$dir.yaml"
  if ! bin/tspc examples/allreduce.tg -t "$dir.yaml" -o "$dir" --stats > "$dir.stats" 2>&1; then
    echo "$label refused - - - -"
    return
  fi
  local algo exact noisy cycles
  algo=$(awk '/^collective/ { for (i = 1; i <= NF; i++) if ($i ~ /^algo=/) { sub("algo=", "", $i); print $i } }' "$dir.stats" | head -1)
  exact=$(bin/tsp-emu "$dir" 2>&1 || true)
  noisy=$(bin/tsp-emu "$dir" --jitter on --drift-ppm 100 --start-skew 5000 --seed 3 2>&1 || true)
  cycles=$(echo "$exact" | sed -n 's/^[a-z]*: [0-9]* devices, \([0-9]*\) cycles (predicted \([0-9]*\)).*/\1 \2/p')
  echo "$label $algo $cycles $(echo "$exact" | sed -n 's/^data: //p') $(echo "$noisy" | sed -n 's/^data: //p')"
  rm -rf "$dir"
}
export -f one
export work

{ echo "standby 8 -"; for n in 0 1 2 3 4 5 6 7; do echo "node$n 8 $n"; done
  echo "intact - -"; echo "nospare3 - 3"; } |
  xargs -P "$jobs" -n 3 bash -c 'one "$@"' _ > "$work/rows"
base=$(awk '$1 == "standby" { print $3 }' "$work/rows")
echo "# bench/hot-spare.sh, $(date +%F), this machine ($(nproc) cores, $jobs jobs): examples/allreduce.tg on rack72, default options"
echo "# standby: node 8 the spare, nothing failed; nodeK: node K failed, spare 8 in its place;"
echo "# intact: no spare (72 TSPs); nospare3: node 3 failed, no spare (64 TSPs).  ratio: to standby."
awk -v base="$base" '
  BEGIN { printf "%-9s %-10s %9s %10s %7s %-9s %s\n", "system", "algo", "cycles", "predicted", "ratio", "exact", "noisy" }
  { order = $1 == "standby" ? 0 : $1 ~ /^node/ ? 1 + substr($1, 5) : $1 == "intact" ? 10 : 11
    ratio = ($3 ~ /^[0-9]+$/) ? sprintf("%.3f", $3 / base) : "-"
    line[order] = sprintf("%-9s %-10s %9s %10s %7s %-9s %s", $1, $2, $3, $4, ratio, $5, $6)
    if ($1 ~ /^node/ && $3 == $4 && $5 == "verified" && $6 == "verified") { ok++; if ($3 / base > worst) worst = $3 / base; s += $3 / base } }
  END { for (i = 0; i <= 11; i++) if (i in line) print line[i]
        printf "# 8 failed nodes: %d verified, emulated == predicted, clean with jitter, drift and skew; mean ratio %.3f, worst %.3f\n", ok, s / 8, worst }' "$work/rows"
