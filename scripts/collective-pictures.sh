#!/usr/bin/env bash
# collective-pictures.sh: the pictures of docs/collectives.md, drawn by the
# tool itself.  For each algorithm it compiles a 16 KiB allreduce on a small
# topology with `tspc --emit=dot` (backend/dot.c) and renders the DOT file
# to docs/img/coll-ALGO-TOPOLOGY.svg: neato -n for fixed positions (meshes,
# tori, rings), fdp for dragonfly clusters.  An algorithm that does not
# apply or is not implemented yet is skipped with tspc's reason.
#
#   scripts/collective-pictures.sh [ALGO ...]   (default: every algorithm)
#
# The topology: examples/mesh4x4.yaml, but mesh3x3 for ringbiodd (an odd
# mesh), fc4 for direct (fully connected) and the two-rack dragonfly of
# test/lit/Inputs/hier/df3-small.yaml for dragonfly3 and hier; tto's group leaves
# out the corner device 12 (x = 0, y = 3).  Graphviz is
# no build dependency: this script installs it (scripts/install-deps.sh)
# when neato is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v neato > /dev/null && command -v fdp > /dev/null || scripts/install-deps.sh graphviz
make -s VARIANT=release tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p docs/img

algos=("$@")
(( ${#algos[@]} )) || algos=(ring biring direct ringbiodd ring2d dbtree multitree tto hring ctree dragonfly3 hier auto)

for algo in "${algos[@]}"; do
  topo=examples/mesh4x4.yaml place=each engine="neato -n"
  case $algo in
  ringbiodd) topo=examples/mesh3x3.yaml ;;
  direct) topo=examples/fc4.yaml ;;
  dragonfly3 | hier) topo=test/lit/Inputs/hier/df3-small.yaml engine=fdp ;;
  tto) place="each except device(12)" ;;
  esac
  printf 'graph pic {\n  input g : f32[4096] @ %s;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' "$place" > "$work/pic.tg"
  name=$(basename "$topo" .yaml)
  if ! bin/tspc "$work/pic.tg" -t "$topo" --algo="$algo" -o "$work/out" --emit=dot 2> "$work/err"; then
    echo "skipped $algo on $name: $(grep -m1 'error:' "$work/err" | sed 's/.*error: //')"
    continue
  fi
  $engine -Tsvg "$work/out/coll-s.dot" > "docs/img/coll-$algo-$name.svg"
  echo "docs/img/coll-$algo-$name.svg"
done
