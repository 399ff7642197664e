#!/bin/sh
# same.sh BINDIR DIR [tsp-emu options]: runs DIR on tsp-emu, then on
# tsp-emu-mpi under `mpirun -np N` for N = 1, 2 and 4 (MPI_NPS), and
# compares each with the single process: stdout, stderr, the --report file
# and the exit status must be the same bytes.  Prints the single run's
# stdout and exit status, then "same: np N" for each N that matches, or what
# differs (and fails).  As root mpirun needs its two ALLOW variables;
# --quiet keeps its own note on a non-zero exit status off stderr;
# --oversubscribe lets 4 ranks share fewer cores.
set -u
bin=$1 dir=$2
shift 2
out=${TMPDIR:-/tmp}/mpi-same.$$
mkdir -p "$out"
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$bin/tsp-emu" "$dir" "$@" --report "$out/one.yaml" > "$out/one.out" 2> "$out/one.err"
echo "exit $?" > "$out/one.rc"
cat "$out/one.out" "$out/one.rc"
status=0
for n in ${MPI_NPS:-1 2 4}; do
  mpirun --quiet --oversubscribe -np "$n" "$bin/tsp-emu-mpi" "$dir" "$@" --report "$out/np$n.yaml" > "$out/np$n.out" 2> "$out/np$n.err"
  echo "exit $?" > "$out/np$n.rc"
  same=yes
  for f in out err yaml rc; do
    if ! cmp -s "$out/one.$f" "$out/np$n.$f"; then
      echo "np $n: the $f differs:"; diff "$out/one.$f" "$out/np$n.$f" | head -20
      same=no status=1
    fi
  done
  [ $same = yes ] && echo "same: np $n"
done
exit $status
