#!/bin/sh
# test-traces.sh — the bundled traces load, and re-synthesizing each with the command recorded in
# traces/README.md gives the same digest: the files, the README and the code agree.
. "$STW_SRCDIR/tests/tap.sh"
S=$STOWAGE
D=$STW_SRCDIR/traces

# README lines: | file | digest | `stowage synth ...` |
grep '^| `[a-z0-9.-]*\.json` | `[0-9a-f]\{64\}`' "$D/README.md" > "$TAP_TMP/rows"
test -s "$TAP_TMP/rows"; tap_result $? "traces/README.md lists the bundled traces"
while IFS='|' read -r _ file digest cmd _; do
  file=$(echo "$file" | tr -d ' `')
  digest=$(echo "$digest" | tr -d ' `')
  args=$(echo "$cmd" | tr -d '`' | sed 's/^ *stowage synth//; s/-o [^ ]*//')
  got=$($S inspect --json "$D/$file" | sed -n 's/.*"digest":[[:space:]]*"\([0-9a-f]*\)".*/\1/p')
  [ "$got" = "$digest" ]; tap_result $? "$file loads with the recorded digest" "got $got"
  # shellcheck disable=SC2086
  $S synth $args -o "$TAP_TMP/$file" 2>/dev/null
  again=$($S inspect --json "$TAP_TMP/$file" | sed -n 's/.*"digest":[[:space:]]*"\([0-9a-f]*\)".*/\1/p')
  [ "$again" = "$digest" ]; tap_result $? "$file is what its recorded command makes" "got $again"
done < "$TAP_TMP/rows"
n=$(ls "$D"/*.json | wc -l)
rows=$(wc -l < "$TAP_TMP/rows")
[ "$n" = "$rows" ]; tap_result $? "every bundled trace is in the README ($n files, $rows rows)"
tap_done
