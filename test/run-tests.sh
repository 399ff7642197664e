#!/usr/bin/env bash
# run-tests.sh: runs every test of tspc on the release and the ASan+UBSan
# builds (cmocka unit tests, then lit end-to-end tests), the tests of the
# threaded emulator (test/lit/emu/threads-*) on the ThreadSanitizer build,
# and ends with one line "N passed, N failed".  Exit status 0 only if
# nothing failed.
set -u
cd "$(dirname "$0")/.."

LIT="python3 /usr/lib/llvm-14/build/utils/lit/lit.py"
passed=0
failed=0
export ASAN_OPTIONS='detect_leaks=1'
export UBSAN_OPTIONS='halt_on_error=1:print_stacktrace=1'

# run_unit VARIANT: every cmocka binary of that build.
run_unit() {
  for t in build/$1/test/test_*; do
    [ -x "$t" ] || continue
    out=$("$t" 2>&1)
    status=$?
    printf '%s\n' "$out" | grep -E '^\[  (PASSED|FAILED) |^\[  ERROR|^\[  FAILED  \] [a-z_]' || true
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p')
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p')
    p=${p:-0}
    f=${f:-0}
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
      printf '%s\n' "$out" | tail -20
      echo "run-tests: $t exited with status $status"
      f=1
    fi
    echo "unit $1 $(basename "$t"): $p passed, $f failed"
    passed=$((passed + p))
    failed=$((failed + f))
  done
}

# run_lit BINDIR LABEL [TESTS...] (default: all of test/lit)
run_lit() {
  local bindir=$1 label=$2
  shift 2
  out=$($LIT -sv -Dbindir="$bindir" "${@:-test/lit}" 2>&1)
  printf '%s\n' "$out" | grep -E '^(FAIL|XPASS|UNRESOLVED|TIMEOUT):' || true
  printf '%s\n' "$out" | grep -E -A40 '^\*{20}$' | head -200 | grep -v '^$' || true
  p=$(printf '%s\n' "$out" | sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p')
  f=$(printf '%s\n' "$out" | awk -F: '/^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *:/ {n += $2} END {print n + 0}')
  p=${p:-0}
  f=${f:-0}
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
    printf '%s\n' "$out" | tail -20
    f=1
  fi
  echo "lit $label: $p passed, $f failed"
  passed=$((passed + p))
  failed=$((failed + f))
}

run_unit release
run_unit asan
run_lit bin release
run_lit build/asan/bin asan
run_lit build/tsan/bin tsan test/lit/emu/threads-*.test

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
