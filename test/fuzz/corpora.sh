#!/bin/sh
# corpora.sh: writes the seed corpora of `make fuzz` under build/fuzz
# (generated, never committed), from the top of the tree with the release
# tools in bin/:
#
#   corpus-tg        test/fuzz/corpus-tg: small models, each compiled in
#                    under 10 ms (examples/*.tg take up to seconds)
#   corpus-yaml      examples/*.yaml and test/lit/Inputs/topo/*.yaml
#   corpus-tsa       test/lit/emu/*.tsa
#   corpus-tsp       the binaries of every .tsa above and every model of
#                    corpus-tg that fits a ring of four, built for ring4
#   corpus-manifest  the manifests of those output directories
#   corpus-npy       arrays numpy writes (test/fuzz/npy_seeds.py)
#   manifest-dir     corpus-tg/ring4-homes.tg compiled for ring4: the
#                    directory whose model fuzz_manifest reads
#
# Each corpus-NAME is written afresh; found-NAME, where the fuzzers keep
# the inputs they find, is kept from one run to the next.
set -eu

F=build/fuzz
TOPO=test/lit/Inputs/topo/ring4.yaml

for c in tg yaml tsa tsp manifest npy; do
  rm -rf "$F/corpus-$c"
  mkdir -p "$F/corpus-$c" "$F/found-$c"
done
rm -rf "$F/seed-out" "$F/manifest-dir"
mkdir -p "$F/seed-out"

cp test/fuzz/corpus-tg/*.tg "$F/corpus-tg/"
cp examples/*.yaml "$F/corpus-yaml/"
for f in test/lit/Inputs/topo/*.yaml; do cp "$f" "$F/corpus-yaml/topo-${f##*/}"; done
cp test/lit/emu/*.tsa "$F/corpus-tsa/"

# Output directories for ring4; a source that does not fit it is skipped.
for f in test/lit/emu/*.tsa; do
  n=${f##*/}
  bin/tsp-as "$f" -t "$TOPO" -o "$F/seed-out/${n%.tsa}" >/dev/null 2>&1 || true
done
for f in test/fuzz/corpus-tg/*.tg; do
  n=${f##*/}
  bin/tspc "$f" -t "$TOPO" -o "$F/seed-out/tg-${n%.tg}" >/dev/null 2>&1 || true
done
for d in "$F"/seed-out/*/; do
  n=$(basename "$d")
  cp "$d/manifest.yaml" "$F/corpus-manifest/$n.yaml"
  for b in "$d"/*.tsp; do cp "$b" "$F/corpus-tsp/$n-${b##*/}"; done
done
bin/tspc test/fuzz/corpus-tg/ring4-homes.tg -t "$TOPO" -o "$F/manifest-dir"

# numpy is the system python's (python3-numpy), as in test/lit.
/usr/bin/python3 test/fuzz/npy_seeds.py "$F/corpus-npy"

for c in tg yaml tsa tsp manifest npy; do
  echo "corpora: corpus-$c: $(ls "$F/corpus-$c" | wc -l) seeds"
done
