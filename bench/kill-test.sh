#!/usr/bin/env bash
# kill-test.sh: SIGKILL, SIGTERM and SIGINT at random moments of a compile
# into a directory that holds a good compile (issue 17, item 9).  After
# every kill, the directory must hold a whole output (the old one or the
# new one: a manifest and one binary per device), and after the next
# compile no sibling directory of a dead run may remain (SIGKILL leaves
# its DIR.tmp.PID.*; the next run removes it).  Prints one line a round and
# a verdict.
#
#   bench/kill-test.sh [ROUNDS] [TOPOLOGY] [MIB]   (default 12, system264, 64:
#                  a compile of about 3 s writing 264 files; system10440 1
#                  spends a third of its 10 s writing 10,440 files)
# Each kill lands at a uniformly random moment of a compile's duration
# (measured first) plus a tenth.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-12}
topo=examples/${2:-system264}.yaml
mib=${3:-64}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
printf 'graph ar {\n  input g : f32[%d] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' $((mib * 262144)) > "$work/ar.tg"
devices=$(bin/tspc -t "$topo" --describe | awk '/^devices:/ { print $2 }')
start=$(date +%s.%N)
bin/tspc "$work/ar.tg" -t "$topo" -o "$work/out"
took=$(echo "$(date +%s.%N) - $start" | bc)  # kills land anywhere in [0, 1.1 x this]
whole() {  # the output directory holds a manifest and every binary
  head -1 "$work/out/manifest.yaml" | grep -q '^# tspc manifest' &&
    [ "$(ls "$work/out" | grep -c '\.tsp$')" -eq "$devices" ]
}
bad=0
signals=(KILL TERM INT)
for round in $(seq "$rounds"); do
  sig=${signals[$((RANDOM % 3))]}
  delay=$(awk -v r=$RANDOM -v t="$took" 'BEGIN { printf "%.2f", r / 32767 * t * 1.1 }')
  bin/tspc "$work/ar.tg" -t "$topo" -o "$work/out" 2> /dev/null &
  pid=$!
  sleep "$delay"
  kill -s "$sig" "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  state=whole
  whole || { state=BROKEN; bad=1; }
  debris=$(ls -A "$work" | grep -c -E '^out\.(tmp|old)\.' || true)
  echo "round $round: SIG$sig after ${delay}s: output $state, $debris sibling(s) left"
done
bin/tspc "$work/ar.tg" -t "$topo" -o "$work/out"  # the next run
left=$(ls -A "$work" | grep -E '^out\.(tmp|old)\.' || true)
[ -z "$left" ] || { echo "debris after the next run: $left"; bad=1; }
whole || bad=1
echo "verdict: $([ $bad = 0 ] && echo "ok: every output whole, no debris after the next run" || echo FAILED)"
exit $bad
