#!/usr/bin/env bash
# collectives.sh: every collective algorithm on every topology at every
# size, one table.  For each (algorithm, topology, size) it writes an
# allreduce of SIZE bytes a device (`input g : f32[SIZE/4] @ each`), compiles
# it with `tspc --algo=ALGO --stop-after=schedule --stats` (no output
# directory: fast; the topology gets SRAM enough for the largest size) and prints
# the figures of tspc's collective line (docs/collectives.md, "Measuring a
# collective"): cycles, bus bandwidth (nccl-tests), efficiency against the
# lower bound, which bound binds, link utilisation.  An algorithm that does
# not apply is a `refused:` row with the first words of tspc's reason.
#
# tto needs the group without one corner: on an n x m mesh its model is
# `@ each except device(n(m-1))` (x = 0, y = m-1); elsewhere it gets the
# plain model (and says why not).  So tto answers a different question and
# is left out of the auto check: on the auto row of each (topology, size),
# `check` says whether auto's cycles are <= the fastest single algorithm's
# there (`ok`) or not (`SLOWER`), and the last line sums it up:
# "auto never slower: yes|no".
#
#   bench/collectives.sh [--quick] [--algos "A B .."] [--topos "T U .."] [--sizes "S .."]
#
#   --quick   ring biring direct auto on mesh4x4 and node8 at 1KiB and 1MiB
#   --algos   default: ring biring direct ringbiodd ring2d dbtree multitree tto
#             hring ctree dragonfly3 auto                  (env ALGOS)
#   --topos   names in examples/ or .yaml paths; default: mesh4x4 mesh5x5
#             mesh8x8 mesh9x9 torus4x4 node8 rack72 system264   (env TOPOS)
#   --sizes   bytes a device, with KiB/MiB/GiB: default 1KiB 64KiB 1MiB 16MiB
#             64MiB 256MiB                                  (env SIZES)
#   env COMPILE_TIMEOUT: seconds one compile may take (default 900); a
#             compile past it is a `timeout` row.  Most compiles take
#             seconds; the slowest are auto on system264 (it compiles every
#             candidate: about 90 s at 64 MiB, a few minutes at 256 MiB).
#             The whole default table takes about 45 minutes on this
#             2-core machine.
#
# The lead's run of the defaults is bench/results/collectives.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

algos=${ALGOS:-"ring biring direct ringbiodd ring2d dbtree multitree tto hring ctree dragonfly3 auto"}
topos=${TOPOS:-"mesh4x4 mesh5x5 mesh8x8 mesh9x9 torus4x4 node8 rack72 system264"}
sizes=${SIZES:-"1KiB 64KiB 1MiB 16MiB 64MiB 256MiB"}
timeout_s=${COMPILE_TIMEOUT:-900}
while (( $# )); do
  case $1 in
  --quick) algos="ring biring direct auto"; topos="mesh4x4 node8"; sizes="1KiB 1MiB" ;;
  --algos) algos=$2; shift ;;
  --topos) topos=$2; shift ;;
  --sizes) sizes=$2; shift ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "collectives.sh: unknown argument '$1' (try --help)" >&2; exit 1 ;;
  esac
  shift
done

make -s VARIANT=release tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bytes_of() {  # 64KiB -> 65536
  local n=${1%%[KMG]iB}
  case $1 in
  *KiB) echo $((n << 10)) ;; *MiB) echo $((n << 20)) ;; *GiB) echo $((n << 30)) ;; *) echo "$1" ;;
  esac
}

topo_file() {  # mesh4x4 -> examples/mesh4x4.yaml
  if [[ $1 == *.yaml ]]; then echo "$1"; else echo "examples/$1.yaml"; fi
}

# A copy of topology $1 whose SRAM holds the largest size (tspc refuses a
# tensor bigger than a device's SRAM before scheduling anything; 8 Mi
# vectors, 2.5 GiB, holds 256 MiB in and out), named as the original.
SRAM_VECTORS=8388608
big_sram() {
  local copy
  copy="$work/sram/$(basename "$1")"
  mkdir -p "$work/sram"
  cp "$1" "$copy"
  grep -q '^sram_vectors:' "$copy" || echo "sram_vectors: $SRAM_VECTORS" >> "$copy"
  echo "$copy"
}

# The placement of g: every device, or for tto on a 2-D mesh all but the
# corner at x = 0, y = m - 1.
placement() {  # ALGO TOPOLOGY.yaml
  local desc
  desc=$(bin/tspc -t "$2" --describe)
  if [[ $1 == tto ]] && grep -q '^topology: mesh$' <<< "$desc"; then
    local dims
    dims=$(sed -n 's/^dims: \[\([0-9]*\), \([0-9]*\)\]$/\1 \2/p' <<< "$desc")
    if [[ -n $dims ]]; then
      read -r n m <<< "$dims"
      echo "each except device($((n * (m - 1))))"
      return
    fi
  fi
  echo each
}

model() {  # BYTES PLACEMENT -> work/coll.tg
  printf 'graph coll {\n  input g : f32[%d] @ %s;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' \
    $(( ($1 + 3) / 4 )) "$2" > "$work/coll.tg"
}

field() {  # KEY LINE -> the value of KEY=VALUE in LINE
  sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$2"
}

# tspc's reason for an error, shortened: what follows "cannot lower this
# allreduce: ", its first eight words.
reason() {  # ERROR-LINE
  local msg=${1#*error: }
  if [[ $msg == *"cannot lower this"* ]]; then
    echo "refused: $(cut -d' ' -f1-8 <<< "${msg#*cannot lower this *: }")"
    return
  fi
  if [[ $msg == *"no implemented algorithm can lower"* ]]; then
    echo "refused: $(cut -d' ' -f1-8 <<< "${msg#*(}")"
    return
  fi
  echo "error: $(cut -d' ' -f1-8 <<< "$msg")"
}

row() {  # ALGO TOPO SIZE CYCLES BUSBW EFF BOUND UTIL CHECK
  printf '%-16s %-10s %7s %11s %9s %6s %-8s %6s  %s\n' "$@"
}

slower=0
checked=0
row algo topology size cycles busbw_GBs eff bound util check
for topo in $topos; do
  file=$(big_sram "$(topo_file "$topo")")
  for size in $sizes; do
    bytes=$(bytes_of "$size")
    best=""
    best_algo=""
    for algo in $algos; do
      model "$bytes" "$(placement "$algo" "$file")"
      status=0
      timeout "$timeout_s" bin/tspc "$work/coll.tg" -t "$file" --algo="$algo" --stop-after=schedule --stats \
        > /dev/null 2> "$work/err" || status=$?
      name=$(basename "$file" .yaml)
      if (( status == 124 )); then
        row "$algo" "$name" "$size" - - - - - "timeout (> ${timeout_s} s)"
        continue
      elif (( status != 0 )); then
        row "$algo" "$name" "$size" - - - - - "$(reason "$(grep -m1 'error:' "$work/err" || echo 'error: exit status '$status)")"
        continue
      fi
      line=$(grep -m1 '^collective s:' "$work/err")
      cycles=$(field cycles "$line")
      chosen=$(field algo "$line")
      check=""
      if [[ $algo == auto ]]; then
        label="auto:$chosen"
        if [[ -n $best ]]; then
          checked=$((checked + 1))
          if (( cycles <= best )); then
            check="ok (best single: $best_algo $best)"
          else
            check="SLOWER than $best_algo $best"
            slower=$((slower + 1))
          fi
        fi
      else
        label=$algo
        if [[ $algo != tto ]] && { [[ -z $best ]] || (( cycles < best )); }; then
          best=$cycles
          best_algo=$algo
        fi
      fi
      row "$label" "$name" "$size" "$cycles" "$(field busbw_gbps "$line")" "$(field efficiency "$line")" \
        "$(sed -n 's/.* bound=[0-9]* (\([a-z]*\)).*/\1/p' <<< "$line")" "$(field link_util "$line")" "$check"
    done
  done
done
if [[ " $algos " != *" auto "* ]]; then
  echo "auto never slower: not checked (auto not among the algorithms)"
elif (( slower )); then
  echo "auto never slower: no ($slower of $checked topology x size rows slower than the best single algorithm)"
else
  echo "auto never slower: yes ($checked topology x size rows)"
fi
