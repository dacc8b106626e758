#!/bin/sh
# test-python.sh — the Python package (python/) over the built libstowage: its test suite
# (python/tests, run by pytest, or unittest where pytest is missing; with pytest each case alone
# too; the PyTorch cases skip themselves without torch), each case a TAP result, and
# `pip install` of the package into a fresh virtual environment, offline. Skips itself in a
# sanitizer build (Python cannot load an AddressSanitizer library) or without python3.
. "$STW_SRCDIR/tests/tap.sh"
B=$STW_BUILDDIR
lib=$B/.libs/libstowage.so
# scripts/torch-env.sh's Python with PyTorch where it made one, else the system's
PY=${STW_PYTHON:-python3}
[ -z "${STW_PYTHON:-}" ] && [ -x "$STW_SRCDIR/.venv-torch/bin/python-torch" ] &&
  PY=$STW_SRCDIR/.venv-torch/bin/python-torch
if ! command -v "$PY" >/dev/null 2>&1; then
  echo "1..0 # SKIP $PY is not installed"
  exit 0
fi
if ldd "$lib" 2>/dev/null | grep -q libasan; then
  echo "1..0 # SKIP a sanitizer build (Python cannot load an AddressSanitizer library)"
  exit 0
fi
# pytest where that Python has it (scripts/torch-env.sh installs it), else unittest: the cases
# are unittest.TestCase classes, which both run
export STOWAGE_LIB=$lib PYTHONPATH=$STW_SRCDIR/python STW_SRCDIR STOWAGE=$B/stowage \
  PYTHONDONTWRITEBYTECODE=1 # the source tree may be read-only (distcheck)
log=$TAP_TMP/python-tests.log
cases=0
if "$PY" -c 'import pytest' >/dev/null 2>&1; then
  runner=pytest
  (cd "$STW_SRCDIR/python" && "$PY" -W ignore -m pytest -v -p no:cacheprovider tests) > "$log" 2>&1
  status=$?
  # "tests/test_stowage.py::TestTraces::test_x PASSED [ 5%]" (FAILED, ERROR, SKIPPED (why))
  while IFS= read -r line; do
    case $line in
      tests/*::*" PASSED"*) tap_result 0 "python: ${line%% PASSED*}"; cases=$((cases + 1)) ;;
      tests/*::*" FAILED"*|tests/*::*" ERROR"*)
        tap_result 1 "python: ${line%% [FE][AR]*}" "$(tail -n 60 "$log")"; cases=$((cases + 1)) ;;
      tests/*::*" SKIPPED"*)
        why=${line#* SKIPPED (}; tap_skip "python: ${line%% SKIPPED*}: ${why%%)*}"
        cases=$((cases + 1)) ;;
    esac
  done < "$log"
  # every case alone too (as test-alone.sh runs the C cases): none depends on an earlier one.
  # Each in a process of its own, forked after PyTorch's import and before any case ran
  # (tests/python-alone.py: as many at once as there are CPUs, none sharing a file)
  ids=$(cd "$STW_SRCDIR/python" && "$PY" -m pytest --collect-only -q -p no:cacheprovider tests 2>/dev/null |
        grep '::')
  failed=$(cd "$STW_SRCDIR/python" && "$PY" "$STW_SRCDIR/tests/python-alone.py" $ids)
  first=${failed# }
  first=${first%% *}
  : > "$TAP_TMP/alone.log"
  if [ -n "$first" ]; then # the first to fail, again for its output
    (cd "$STW_SRCDIR/python" && "$PY" -W ignore -m pytest -q -p no:cacheprovider "$first") \
      > "$TAP_TMP/alone.log" 2>&1
  fi
  [ -n "$ids" ] && [ -z "$failed" ]
  tap_result $? "python: every case alone ($(echo "$ids" | wc -l))" "failed alone:$failed" \
    "$(tail -n 20 "$TAP_TMP/alone.log")"
else
  runner=unittest
  "$PY" -W ignore -m unittest discover -s "$STW_SRCDIR/python/tests" -v > "$log" 2>&1
  status=$?
  # "test_x (test_stowage.TestTraces.test_x) ... ok" (or FAIL, ERROR, skipped '...')
  while IFS= read -r line; do
    case $line in
      *" ... ok") tap_result 0 "python: ${line%% ... ok}"; cases=$((cases + 1)) ;;
      *" ... FAIL"|*" ... ERROR") tap_result 1 "python: ${line%% ... *}" "$(cat "$log")"; cases=$((cases + 1)) ;;
      *" ... skipped "*) tap_skip "python: ${line%% ... *}: ${line#* ... skipped }"; cases=$((cases + 1)) ;;
    esac
  done < "$log"
fi
[ "$cases" -gt 0 ] && [ "$status" = 0 ]
tap_result $? "python: the $runner suite ran and passed" "$(tail -n 30 "$log")"

# pip install ./python into a fresh environment, offline (the package is pure Python over ctypes)
cp -R "$STW_SRCDIR/python" "$TAP_TMP/pkg" && chmod -R u+w "$TAP_TMP/pkg"
if python3 -m venv "$TAP_TMP/venv" > "$TAP_TMP/venv.log" 2>&1; then
  "$TAP_TMP/venv/bin/pip" install -q --no-deps --no-index "$TAP_TMP/pkg" \
    > "$TAP_TMP/pip.log" 2>&1
  tap_result $? "pip install ./python into a virtual environment" "$(cat "$TAP_TMP/pip.log")"
  out=$(cd / && STOWAGE_LIB=$lib "$TAP_TMP/venv/bin/python" -c 'import stowage; print(stowage.version())' 2>&1)
  [ "$out" = "stowage 0.1.0" ]; tap_result $? "the installed package loads the library" "$out"
  out=$(cd / && STOWAGE_LIB=/nonexistent/libstowage.so "$TAP_TMP/venv/bin/python" -c 'import stowage' 2>&1)
  printf '%s' "$out" | grep -q "libstowage.so not found (set STOWAGE_LIB to its path); tried: /nonexistent/libstowage.so"
  tap_result $? "without the library, import says where it looked" "$out"
else
  tap_skip "python3 -m venv is not available: $(tail -n 1 "$TAP_TMP/venv.log")"
fi
tap_done
