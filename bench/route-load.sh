#!/usr/bin/env bash
# route-load.sh: routing under load (seed 002 s4.3, bandwidth-aware
# non-minimal routing).  Each case is compiled three ways, side by side in
# one run: every transfer minimal (--route=minimal), every transfer spread
# over its paths whenever that is faster alone (--route=nonminimal), and
# the default --route=auto, which routes each transfer against the load
# the transfers before it left on the links (docs/passes.md, schedule).
# Prints the scheduled cycles (tspc --stats: makespan_cycles), the compile
# time, and auto's gain over the better of the other two; each auto
# program is then run on tsp-emu with jitter, drift and skew, which must
# say `data: verified`.
#
#   bench/route-load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

# Five copies into one node's devices 6 and 7 at once: one of 1 MiB and
# four of 256 KiB, the big one first.
cat > "$work/converging.tg" <<'TG'
graph converging {
  input a : f32[262144] @ device(0);
  input b : f32[65536] @ device(1);
  input c : f32[65536] @ device(2);
  input d : f32[65536] @ device(3);
  input e : f32[65536] @ device(4);
  ya = copy(a) @ device(7);
  yb = copy(b) @ device(7);
  yc = copy(c) @ device(7);
  yd = copy(d) @ device(7);
  ye = copy(e) @ device(6);
  output ya; output yb; output yc; output yd; output ye;
}
TG

# The double binary tree's 64 MiB allreduce on a rack: its trees share
# links at different times.  (A ring is not a case: its hops between
# neighbours stay on their links under auto; docs/passes.md.)
cases=(
  "converging-copies node8 $work/converging.tg auto"
  "dbtree-allreduce-64MiB rack72 test/lit/Inputs/allreduce-64mib.tg dbtree"
)
topo_of() { case $1 in ring4) echo examples/tutorial/ring4.yaml ;; *) echo "examples/$1.yaml" ;; esac; }

printf '%-22s %-7s %-6s %12s %12s %12s %8s %8s\n' case system algo minimal all-spread auto gain auto_s
for c in "${cases[@]}"; do
  read -r name sys model algo <<< "$c"
  topo=$(topo_of "$sys")
  declare -A cyc
  for r in minimal nonminimal auto; do
    start=$(date +%s.%N)
    cyc[$r]=$(bin/tspc "$model" -t "$topo" --algo="$algo" --route=$r --stats --stop-after=schedule 2>&1 |
              awk '/^makespan_cycles:/ { print $2 }')
    end=$(date +%s.%N)
    secs=$(echo "$end - $start" | bc)
  done
  best=$(( cyc[minimal] < cyc[nonminimal] ? cyc[minimal] : cyc[nonminimal] ))
  gain=$(echo "scale=3; $best / ${cyc[auto]}" | bc)
  printf '%-22s %-7s %-6s %12d %12d %12d %7sx %8.2f\n' "$name" "$sys" "$algo" "${cyc[minimal]}" \
    "${cyc[nonminimal]}" "${cyc[auto]}" "$gain" "$secs"
  bin/tspc "$model" -t "$topo" --algo="$algo" -o "$work/out" 2>&1
  bin/tsp-emu "$work/out" --jitter on --drift-ppm 100 --start-skew 5000 | sed 's/^/    emulated: /'
  rm -rf "$work/out"
done
