#!/bin/sh
# test-valgrind.sh — valgrind memcheck over the end-to-end loop: profile, plan, check, replay.
# Skips itself (saying so) without valgrind or in a sanitizer build.
. "$STW_SRCDIR/tests/tap.sh"
B=$STW_BUILDDIR
if ! command -v valgrind >/dev/null 2>&1; then
  echo "1..0 # SKIP valgrind is not installed"
  exit 0
fi
bin=$B/stowage
[ -f "$B/.libs/stowage" ] && bin=$B/.libs/stowage # a libtool wrapper script
if ldd "$bin" 2>/dev/null | grep -q libasan; then
  echo "1..0 # SKIP a sanitizer build (valgrind and AddressSanitizer do not mix)"
  exit 0
fi
VG="$B/libtool --mode=execute valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 -q"
M="--layers 2 --width 32 --heads 4 --context 16 --batch 2 --data $STW_SRCDIR/README.md --steps 2"
export OMP_NUM_THREADS=1
check "memcheck: train --profile" -- $VG "$B/stowage" train $M --profile "$TAP_TMP/t.json" --quiet
check "memcheck: plan" -- $VG "$B/stowage" plan "$TAP_TMP/t.json" --gpu 400KiB -o "$TAP_TMP/p.json"
check "memcheck: check" -- $VG "$B/stowage" check "$TAP_TMP/p.json" "$TAP_TMP/t.json"
check "memcheck: train --plan --verify" -- $VG "$B/stowage" train $M --plan "$TAP_TMP/p.json" --verify --quiet
tap_done
