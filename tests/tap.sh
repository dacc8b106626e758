# tap.sh — a tiny TAP producer for the shell tests. Source it, then call the checks; finish with
# tap_done. Every check prints "ok N - what" or "not ok N - what" with the evidence.
tap_n=0
tap_failed=0
TAP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/stw-test.XXXXXX")
trap 'rm -rf "$TAP_TMP"' EXIT

tap_result() { # STATUS DESCRIPTION [EVIDENCE...]
  tap_n=$((tap_n + 1))
  if [ "$1" = 0 ]; then
    echo "ok $tap_n - $2"
  else
    tap_failed=$((tap_failed + 1))
    echo "not ok $tap_n - $2"
    shift 2
    for line in "$@"; do printf '%s\n' "$line" | sed 's/^/# /'; done
  fi
}

# mpirun as the tests start ranks: as root, more ranks than cores, shared memory only (no network
# here), one thread each; under the sanitizers, Open MPI's own leaks at MPI_Finalize suppressed
# (tests/lsan-mpi.supp: its components kept loaded and full stacks, so that they match).
MPIRUN="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader \
  --mca btl_vader_single_copy_mechanism none -x OMP_NUM_THREADS=1 \
  -x OMPI_MCA_mca_base_component_disable_dlclose=1 \
  -x ASAN_OPTIONS=fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS} \
  -x LSAN_OPTIONS=suppressions=$STW_SRCDIR/tests/lsan-mpi.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

tap_skip() { # REASON: a check that cannot run here, saying why
  tap_n=$((tap_n + 1))
  echo "ok $tap_n # SKIP $1"
}

# expect STATUS NEEDLE DESCRIPTION -- COMMAND...: runs COMMAND, checks its exit status and that
# its stdout+stderr contains NEEDLE (empty NEEDLE: anything).
expect() {
  want=$1 needle=$2 what=$3
  shift 4
  out=$("$@" 2>&1)
  got=$?
  if [ "$got" != "$want" ]; then
    tap_result 1 "$what" "exit status $got, expected $want" "output: $(printf %s "$out" | head -c 600)"
  elif [ -n "$needle" ] && ! printf '%s' "$out" | grep -qF -- "$needle"; then
    tap_result 1 "$what" "output lacks: $needle" "output: $(printf %s "$out" | head -c 600)"
  else
    tap_result 0 "$what"
  fi
}

# check DESCRIPTION -- COMMAND...: passes when COMMAND exits 0.
check() {
  what=$1
  shift 2
  if out=$("$@" 2>&1); then tap_result 0 "$what"; else tap_result 1 "$what" "$out"; fi
}

tap_done() {
  echo "1..$tap_n"
  [ "$tap_failed" = 0 ]
}
