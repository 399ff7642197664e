#!/usr/bin/env bash
# scale.sh: compile time, peak memory and efficiency of the default
# (algo=auto, --route=auto) allreduce against the device count: node8,
# rack72, system264, racks9 (nine rack72 racks, 648 TSPs, written here:
# the tree algorithms still apply there, and their construction once grew
# as N^3) and system10440, at 1 MiB a device and at a larger
# size (64 MiB where it compiles in reasonable time).  Whole compiles with
# code generation (-o); wall seconds, peak RSS (kB, /usr/bin/time), the
# algorithm auto chose, the makespan and --stats' efficiency.  Each
# compile writes a directory of its own, all removed at the end: ext4
# without a journal does not reuse an inode freed in the last minute or
# more, and scans past each such one of a block group for every file it
# creates, so removing system10440's 10,443 files before the next compile
# added 3-5 s of system time to it (11-12 s against 6.5-7.5 s here).  A
# compile after other work that removed many files in the same place pays
# that too; it is the filesystem's, not the compiler's.  The outputs kept
# until the end take about 1 GB (system10440's at 1 MiB alone 379 MB) in
# mktemp's directory: give TMPDIR a disk with room where /tmp is small.
#
#   bench/scale.sh [MIB...]   (default: 1 64)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${*:-1 64}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s VARIANT=release tools
printf 'name: racks9\ntopology: dragonfly\ndragonfly: {tsps_per_node: 8, global_ports_per_tsp: 4, nodes_per_rack: 9, racks: 9}\n' \
  > "$work/racks9.yaml"
printf '%-12s %7s %5s %9s %10s %-10s %10s %6s\n' topology devices MiB seconds peak_kB algo cycles eff
for mib in $sizes; do
  printf 'graph ar {\n  input g : f32[%d] @ each;\n  s = allreduce(g, op=sum);\n  output s;\n}\n' $((mib * 262144)) > "$work/ar.tg"
  for topo in node8 rack72 system264 racks9 system10440; do
    start=$(date +%s.%N)
    yaml=examples/$topo.yaml
    [ -f "$yaml" ] || yaml=$work/$topo.yaml
    /usr/bin/time -f '%M' -o "$work/rss" bin/tspc "$work/ar.tg" -t "$yaml" -o "$work/out.$topo.$mib" --stats \
      > "$work/stats" 2>&1 || { echo "$topo $mib MiB: refused or failed: $(grep -m1 error: "$work/stats")"; continue; }
    end=$(date +%s.%N)
    line=$(grep '^collective s:' "$work/stats")
    printf '%-12s %7s %5s %9.2f %10s %-10s %10s %6s\n' "$topo" "$(grep '^devices:' "$work/stats" | awk '{print $2}')" \
      "$mib" "$(echo "$end - $start" | bc)" "$(cat "$work/rss")" "$(sed 's/.* algo=\([a-z0-9]*\).*/\1/' <<< "$line")" \
      "$(sed 's/.* cycles=\([0-9]*\).*/\1/' <<< "$line")" "$(sed 's/.* efficiency=\([0-9.]*\).*/\1/' <<< "$line")"
  done
done
