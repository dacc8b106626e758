#!/bin/sh
# test-mpi.sh — several ranks under mpirun: the communicators (test-comm, with 2 and 4 ranks and
# alone). Skipped, saying so, in a build without MPI or without mpirun.
. "$STW_SRCDIR/tests/tap.sh"
B=$STW_BUILDDIR
if ! grep -q '^#define STW_HAVE_MPI 1' "$B/config.h" 2>/dev/null; then
  echo "1..0 # SKIP this build has no MPI (Debian: libopenmpi-dev openmpi-bin)"
  exit 0
fi
if ! command -v mpirun > /dev/null 2>&1; then
  echo "1..0 # SKIP mpirun is not installed (Debian: openmpi-bin)"
  exit 0
fi
# as root, more ranks than cores, shared memory only (no network here)
MPIRUN="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader \
  --mca btl_vader_single_copy_mechanism none -x OMP_NUM_THREADS=1"
export OMPI_MCA_rmaps_base_oversubscribe=1

out=$("$B/tests/test-comm" 2>&1); tap_result $? "the communicators alone: one rank" "$out"
for n in 2 4; do
  # shellcheck disable=SC2086
  out=$($MPIRUN -np $n "$B/tests/test-comm" 2>&1)
  st=$?
  oks=$(printf '%s\n' "$out" | grep -c "^ok .* ($n ranks)")
  [ "$st" = 0 ] && [ "$oks" = 6 ]; tap_result $? "the communicators on $n ranks (6 checks)" "$out"
done
tap_done
