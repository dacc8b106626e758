#!/bin/sh
# scripts/test.sh — builds stowage and runs the whole test suite (`make check`), then checks that
# the distribution tarball builds and passes too (`make distcheck`). Ends with "N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
./scripts/bootstrap.sh || exit 1
make -j"$(nproc)" check
status=$?
log=test-suite.log
count() { sed -n "s/^# $1: *\([0-9]*\)$/\1/p" "$log" | head -n1; }
pass=$(count PASS); fail=$(count FAIL); error=$(count ERROR); xpass=$(count XPASS); skip=$(count SKIP)
if [ "$status" = 0 ]; then
  make -j"$(nproc)" distcheck >distcheck.log 2>&1
  dstatus=$?
  if [ "$dstatus" = 0 ]; then echo "make distcheck: ok"; else
    tail -n 40 distcheck.log; echo "make distcheck: FAILED (see distcheck.log)"; status=1; fi
fi
failed=$(( ${fail:-0} + ${error:-0} + ${xpass:-0} ))
[ "$status" != 0 ] && [ "$failed" = 0 ] && failed=1
echo "${pass:-0} passed, $failed failed, ${skip:-0} skipped"
exit "$status"
