#!/bin/sh
# scripts/test.sh — builds stowage and runs the whole test suite: `make check`; then `make
# distcheck` (the release tarball builds, installs and passes) with the suite again under
# AddressSanitizer and UndefinedBehaviorSanitizer; then every fuzz target for a few seconds
# (fuzz/run.sh; FUZZ_SECONDS, default 10). The Python package's tests run in `make check`, its
# PyTorch ones with scripts/torch-env.sh's PyTorch from PyPI. Ends with "N passed, N failed, N
# skipped".
cd "$(dirname "$0")/.." || exit 1
./scripts/bootstrap.sh || exit 1
# CPU PyTorch for the Python package's torch tests (best effort: without it they skip)
sh scripts/torch-env.sh || true
make -j"$(nproc)" check
status=$?
log=test-suite.log
count() { sed -n "s/^# $1: *\([0-9]*\)$/\1/p" "$log" | head -n1; }
pass=$(count PASS); fail=$(count FAIL); error=$(count ERROR); xpass=$(count XPASS); skip=$(count SKIP)
pass=${pass:-0}
failed=$(( ${fail:-0} + ${error:-0} + ${xpass:-0} ))
[ "$status" != 0 ] && [ "$failed" = 0 ] && failed=1

echo "== make distcheck, the test suite under ASan + UBSan"
if make -j"$(nproc)" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-sanitizers >distcheck.log 2>&1; then
  echo "make distcheck with sanitizers: ok ($(sed -n 's/^# PASS: *//p' distcheck.log | head -n1) passed)"
  pass=$((pass + 1))
else
  tail -n 40 distcheck.log
  echo "make distcheck with sanitizers: FAILED (see distcheck.log)"
  failed=$((failed + 1))
  status=1
fi

echo "== fuzzing every reader for ${FUZZ_SECONDS:-10} s each"
if sh fuzz/run.sh "${FUZZ_SECONDS:-10}" > fuzz.log 2>&1; then
  targets=$(grep -c ': [0-9]* executions in .*, no crash$' fuzz.log)
  tail -n "$targets" fuzz.log
  pass=$((pass + targets))
else
  tail -n 40 fuzz.log
  failed=$((failed + 1))
  status=1
fi
echo "$pass passed, $failed failed, ${skip:-0} skipped"
exit "$status"
