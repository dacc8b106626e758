#!/bin/sh
# test-readme.sh — the README's worked examples are what stowage prints. Every `$ ./stowage ...`
# and `$ python3 ...` command shown in a code block runs (in a scratch directory with the bundled traces) and the
# lines shown under it appear in its output, in order ("..." stands for lines left out). The main
# job's acts (`== N.` blocks) train on wall-clock-free figures only: the losses shown, step by
# step, are the ones the same training gives, on one rank and, with MPI, on two.
. "$STW_SRCDIR/tests/tap.sh"
R=$STW_SRCDIR/README.md
T=$TAP_TMP
mkdir -p "$T/run/out"
ln -s "$STOWAGE" "$T/run/stowage"
ln -s "$STW_SRCDIR/traces" "$T/run/traces"
ln -s "$STW_SRCDIR/tests" "$T/run/tests"

# the blocks: one file per command, its expected lines beside it
awk -v dir="$T" '
  /^```/ { if (inblock) { inblock = 0; cmd = "" } else inblock = 1; next }
  inblock && /^\$ (\.\/stowage|python3) / { n++; cmd = dir "/cmd" n; print substr($0, 3) > cmd; close(cmd); ef = dir "/exp" n; printf "" > ef; next }
  inblock && cmd != "" { print >> ef }
' "$R"
n=$(ls "$T" | grep -c '^cmd')
[ "$n" -ge 3 ]; tap_result $? "the README shows stowage commands with their output ($n)"
i=1
lib=$STW_BUILDDIR/.libs/libstowage.so
while [ "$i" -le "$n" ]; do
  cmd=$(cat "$T/cmd$i")
  case $cmd in
    python3*) # the Python package over this build's library; not in a sanitizer build
      if ldd "$lib" 2>/dev/null | grep -q libasan || ! command -v python3 > /dev/null; then
        tap_skip "README: $cmd: no python3, or a sanitizer build Python cannot load"
        i=$((i + 1))
        continue
      fi ;;
  esac
  (cd "$T/run" && PYTHONPATH=$STW_SRCDIR/python STOWAGE_LIB=$lib sh -c "$cmd") > "$T/out$i" 2>&1
  # every shown line, in order, in the output
  awk -v out="$T/out$i" '
    BEGIN { while ((getline l < out) > 0) got[++m] = l }
    $0 == "..." || $0 == "" { next }
    { for (k = at + 1; k <= m; k++) if (got[k] == $0) break
      if (k > m) { print "missing: " $0; bad = 1; exit } at = k }
    END { exit bad }' "$T/exp$i" > "$T/why$i"
  tap_result $? "README: $cmd" "$(cat "$T/why$i")" "$(head -n 20 "$T/out$i")"
  i=$((i + 1))
done

# the main job: the losses shown under each act
data=/usr/share/common-licenses/GPL-3
model="--layers 4 --width 128 --heads 4 --context 32 --batch 2"
shown() { # ACT: "STEP LOSS" per step line shown under "== ACT."
  awk -v act="== $1." 'index($0, act) == 1 { on = 1; next } /^```/ { if (on) exit } on && /^step / { print $2, $4 }' "$R"
}
got() { grep '^step' "$1" | awk '{ print $2, $4 }'; }
if [ ! -r "$data" ]; then
  tap_skip "the main job's losses: $data is not on this machine (the README's run used it)"
else
  # shellcheck disable=SC2086
  $STOWAGE train $model --data "$data" --steps 20 > "$T/one.log" 2>&1
  want=$(shown 1)
  missing=$(shown 1 | while read -r s l; do got "$T/one.log" | grep -q -x "$s $l" || echo "step $s loss $l"; done)
  [ -n "$want" ] && [ -z "$missing" ]
  tap_result $? "README: one rank's losses are what training gives" "$missing"
  missing=$(shown 3 | while read -r s l; do got "$T/one.log" | grep -q -x "$s $l" || echo "step $s loss $l"; done)
  [ -n "$(shown 3)" ] && [ -z "$missing" ]
  tap_result $? "README: the replay's losses are those too" "$missing"
  if ! grep -q '^#define STW_HAVE_MPI 1' "$STW_BUILDDIR/config.h" 2>/dev/null || ! command -v mpirun > /dev/null; then
    tap_skip "README: two ranks' losses need MPI and mpirun"
  else
    # shellcheck disable=SC2086
    $MPIRUN -np 2 $STOWAGE train $model --data "$data" --steps 20 > "$T/two.log" 2>&1
    missing=$( (shown 4; shown 6) | while read -r s l; do got "$T/two.log" | grep -q -x "$s $l" || echo "step $s loss $l"; done)
    [ -n "$(shown 6)" ] && [ -z "$missing" ]
    tap_result $? "README: two ranks' losses are what training on two ranks gives" "$missing" "$(tail -n 3 "$T/two.log")"
  fi
fi
tap_done
