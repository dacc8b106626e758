#!/bin/sh
# test-warnings.sh — the sources compile without a warning under another compiler's warning set:
# every C file of the library, its modules and the CLI through clang -Wall -Wextra -Werror
# (-fsyntax-only: nothing is built), with the include paths and flags this build found. GCC's
# -Werror build is the suite itself; a compiler that warns where GCC does not (clang on
# GOption's terminators, say) would otherwise fail a user's build. Skips without clang.
. "$STW_SRCDIR/tests/tap.sh"
if ! command -v clang >/dev/null 2>&1; then
  echo "1..0 # SKIP clang is not installed"
  exit 0
fi
B=$STW_BUILDDIR
var() { sed -n "s/^$1 = //p" "$B/Makefile"; }
have() { grep -q "^#define $1 1" "$B/config.h"; }
flags="-std=c11 -Wall -Wextra -Werror -fsyntax-only -fopenmp -D_GNU_SOURCE -DHAVE_CONFIG_H
  -DSTW_BUILDING_LAYER=9 -I$B -I$STW_SRCDIR/include -I$STW_SRCDIR/src -I$B/src
  -I$STW_SRCDIR/planner -I$STW_SRCDIR/runtime -I$STW_SRCDIR/train -I$STW_SRCDIR/profile
  -I$STW_SRCDIR/cli $(var GLIB_CFLAGS) $(var CJSON_CFLAGS) $(var CUDA_CFLAGS) $(var MPI_CFLAGS)
  -DSTW_CUPTI_INSTALLED=\"m\" -DSTW_CUPTI_BUILT=\"m\" -DSTW_CUDA_DIR=\"d\"
  -DSTW_COMPUTE_CUDA_INSTALLED=\"m\" -DSTW_COMPUTE_CUDA_BUILT=\"m\"
  -DSTW_COMM_NCCL_INSTALLED=\"m\" -DSTW_COMM_NCCL_BUILT=\"m\""
n=0
bad=""
for f in "$STW_SRCDIR"/src/*.c "$STW_SRCDIR"/planner/*.c "$STW_SRCDIR"/runtime/*.c \
         "$STW_SRCDIR"/train/*.c "$STW_SRCDIR"/profile/*.c "$STW_SRCDIR"/bind/*.c \
         "$STW_SRCDIR"/cli/*.c; do
  case $f in
    */backend-cuda.c) have STW_HAVE_CUDA || continue ;;
    */backend-nocuda.c) have STW_HAVE_CUDA && continue ;;
    */comm-mpi.c) have STW_HAVE_MPI || continue ;;
    */comm-nompi.c) have STW_HAVE_MPI && continue ;;
    */cupti-inject.c) have STW_HAVE_CUPTI || continue
      # the injection library is built as gnu11 with its own flags (Makefile.am)
      # shellcheck disable=SC2086
      clang -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -fsyntax-only $(var CUPTI_CFLAGS) \
        $(var CUDA_CFLAGS) "$f" > "$TAP_TMP/out" 2>&1 || bad="$bad$(cat "$TAP_TMP/out")
"
      n=$((n + 1))
      continue ;;
  esac
  # shellcheck disable=SC2086
  clang $flags "$f" > "$TAP_TMP/out" 2>&1 || bad="$bad$(cat "$TAP_TMP/out")
"
  n=$((n + 1))
done
[ -z "$bad" ] && [ "$n" -gt 40 ]
tap_result $? "$n C files compile under clang -Wall -Wextra -Werror" "$bad"
tap_done
