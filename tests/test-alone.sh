#!/bin/sh
# test-alone.sh — every case of every unit test binary passes when run alone (`-p PATH`), as it
# does in its binary: no case depends on what an earlier one left behind. Skips itself in a
# sanitizer build (distcheck's): the cases run there in their binaries, and alone in the plain
# build's suite, which scripts/test.sh runs first.
. "$STW_SRCDIR/tests/tap.sh"
if ldd "$STW_BUILDDIR/.libs/libstowage.so" 2>/dev/null | grep -q libasan; then
  echo "1..0 # SKIP a sanitizer build: each case runs alone in the plain build's suite"
  exit 0
fi
n=0
for t in "$STW_BUILDDIR"/tests/test-*; do
  case $t in *.sh|*.c|*.o|*.log|*.trs) continue ;; esac
  [ -f "$t" ] && [ -x "$t" ] || continue
  cases=$("$t" -l 2>/dev/null | grep '^/')
  [ -n "$cases" ] || continue
  n=$((n + 1))
  failed=
  : > "$TAP_TMP/first"
  for p in $cases; do
    if ! "$t" -p "$p" > "$TAP_TMP/out" 2>&1; then
      # the first failing case's output is the one said
      [ -n "$failed" ] || cp "$TAP_TMP/out" "$TAP_TMP/first"
      failed="$failed $p"
    fi
  done
  [ -z "$failed" ]; tap_result $? "$(basename "$t"): every case alone ($(echo "$cases" | wc -l))" \
    "failed alone:$failed" "$(tail -n 20 "$TAP_TMP/first")"
done
[ "$n" -ge 10 ]; tap_result $? "the unit test binaries were found ($n)"
tap_done
