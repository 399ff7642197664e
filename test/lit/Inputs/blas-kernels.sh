#!/bin/sh
# blas-kernels.sh BINDIR DIR: which OpenBLAS kernels tsp-emu's products run
# on (OPENBLAS_VERBOSE=2 prints "Core: NAME" each time the library loads;
# the last is the one in use).  On a CPU with AVX2 and FMA they must not be
# the SSE3 fallback (Prescott) that OpenBLAS takes for a model it does not
# know: tsp-emu starts again with OPENBLAS_CORETYPE set (runtime/numeric.c,
# num_blas_prefer_cpu_kernels).  A user's OPENBLAS_CORETYPE is kept, with
# no second start.  Prints "kernels: ok" and "user's kernels: ok", or what
# is wrong.
bin=$1 dir=$2
cores=$(OPENBLAS_VERBOSE=2 "$bin/tsp-emu" "$dir" 2>&1 | sed -n 's/^Core: //p')
last=$(echo "$cores" | tail -1)
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && [ "$last" = Prescott ]; then
  echo "kernels: Prescott on a CPU with AVX2 and FMA (loads: $(echo $cores))"
else
  echo "kernels: ok"
fi
cores=$(OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=Prescott "$bin/tsp-emu" "$dir" 2>&1 | sed -n 's/^Core: //p')
[ "$cores" = Prescott ] && echo "user's kernels: ok" || echo "user's kernels: loads $(echo $cores)"
