#!/usr/bin/env bash
# broadcast.sh: a copy from one device to every device (`copy(w) @ each`),
# the way a model hands a weight or an activation to all of them, on
# systems of several shapes, at 1, 4 and 32 KiB and 1 MiB.  The dag pass
# sends it as a tree over the shortest paths from the source, in chunks
# that go on down the tree as they land (docs/passes.md, dag).  Prints the
# scheduled cycles (tspc --stats: makespan_cycles) and the program's
# vector-hops (tsp-emu: vectors moved) of this tspc, and with
# BASELINE_TSPC=PATH those of another build beside them, compiled in the
# same run, and the speed-up; every program of this tspc is run on tsp-emu
# with jitter, drift and skew, and must say `data: verified`.  A second
# table does the same for a matmul split over 2.5 MiB copies of ring8,
# mesh4x4 and torus4x4, whose activation every device of the split needs.
#
#   bench/broadcast.sh            (BASELINE_TSPC=PATH: a build to compare with)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools

# One run: "cycles vectors-moved verdict" (verdict: the emulator's data line).
once() {  # TSPC MODEL TOPOLOGY
  local out=$work/out cycles emu
  rm -rf "$out"
  cycles=$("$1" "$2" -t "$3" -o "$out" --stats 2>&1 | awk '/^makespan_cycles:/ { print $2 }')
  emu=$(bin/tsp-emu "$out" --jitter on --drift-ppm 100 --start-skew 5000 --seed 3 2>&1)
  echo "$cycles $(echo "$emu" | sed -n 's/.* \([0-9]*\) vectors moved.*/\1/p') $(echo "$emu" | sed -n 's/^data: //p')"
}

printf '%-10s %8s %10s %10s %10s %10s %8s %s\n' system size cycles vec_hops base_cyc base_hops speedup data
for kib in 1 4 32 1024; do
  printf 'graph bcast {\n  input a : f32[%d] @ each;\n  input w : f32[%d] @ device(0);\n  wc = copy(w) @ each;\n  y = add(a, wc);\n  output y;\n}\n' \
    $((kib * 256)) $((kib * 256)) > "$work/bcast.tg"
  for topo in fc4 ring8 mesh4x4 torus4x4 mesh8x8 rack72 system264; do
    read -r c v data <<< "$(once bin/tspc "$work/bcast.tg" "examples/$topo.yaml")"
    bc=- bv=- speed=-
    if [ -n "${BASELINE_TSPC:-}" ]; then
      read -r bc bv _ <<< "$(once "$BASELINE_TSPC" "$work/bcast.tg" "examples/$topo.yaml")"
      speed=$(echo "$bc / $c" | bc -l | xargs printf '%.2fx')
    fi
    printf '%-10s %6sKiB %10s %10s %10s %10s %8s %s\n' "$topo" "$kib" "$c" "$v" "$bc" "$bv" "$speed" "$data"
  done
done

# A matmul whose weight does not fit one 2.5 MiB TSP, split over the ring
# and the mesh: every device of the split needs the activation x (1.1 MiB,
# from device 0), which goes to them as one tree when it is more than one
# level deep (dag.c, fetch_for_split).
echo
printf '%-10s %-18s %10s %10s %10s %10s %8s %s\n' system model cycles vec_hops base_cyc base_hops speedup data
for topo in ring8 mesh4x4 torus4x4; do
  { grep -v '^sram_vectors' "examples/$topo.yaml"; echo "sram_vectors: 8192"; } > "$work/$topo-small.yaml"
  read -r c v data <<< "$(once bin/tspc test/lit/Inputs/partition/matmul-relay.tg "$work/$topo-small.yaml")"
  bc=- bv=- speed=-
  if [ -n "${BASELINE_TSPC:-}" ]; then
    read -r bc bv _ <<< "$(once "$BASELINE_TSPC" test/lit/Inputs/partition/matmul-relay.tg "$work/$topo-small.yaml")"
    [ -n "$bc" ] && speed=$(echo "$bc / $c" | bc -l | xargs printf '%.2fx') || bc=refused
  fi
  printf '%-10s %-18s %10s %10s %10s %10s %8s %s\n' "$topo-2.5MiB" matmul-relay.tg "$c" "$v" "$bc" "${bv:--}" "$speed" "$data"
done
