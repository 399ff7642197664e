#!/bin/sh
# install-deps.sh [EXTRA...]: installs the Debian packages tspc builds and
# tests with, plus any EXTRA ones (`make fuzz` asks for clang's libFuzzer).
# As root it runs apt-get for whatever is missing; otherwise it prints the
# exact command and fails.  `make demo` and `make check` run it first.
# libdeflate-dev: the binaries' CRC-32.
# librsvg2-bin: rsvg-convert, which the tests render links.svg with.
# openmpi-bin, libopenmpi-dev: mpicc and mpirun, for bin/tsp-emu-mpi and its tests.
set -eu

packages="gcc make flex bison pkg-config libyaml-dev libdeflate-dev libcmocka-dev llvm-14-tools python3 libopenblas-dev python3-numpy man-db groff-base bsdextrautils librsvg2-bin openmpi-bin libopenmpi-dev $*"

missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages:$missing" >&2
  echo "install-deps: run as root: apt-get update && apt-get install -y$missing" >&2
  exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends $missing
