#!/bin/sh
# test-layers.sh — the library's layers stay in order (docs/architecture.md): core (src/) <-
# planner <- runtime <- train, profile (side by side). Every #include of the library's sources is
# read and none may reach a layer above the including file's (nor the sibling); then the compiler
# is asked to build an upward include, and must refuse it: the guard of a public header
# (STW_BUILDING_LAYER), and the include path for a higher layer's internal header.
. "$STW_SRCDIR/tests/tap.sh"
R=$STW_SRCDIR

layer_of_dir() {
  case $1 in
    src) echo 1 ;; planner) echo 2 ;; runtime) echo 3 ;; train) echo 4 ;; profile) echo 5 ;;
    bind) echo 6 ;;
    *) echo 0 ;;
  esac
}
# a public header's layer, from its own guard
public_layer() {
  l=$(sed -n 's/^#if STW_BUILDING_LAYER < STW_LAYER_\([A-Z]*\).*/\1/p' "$R/include/stowage/$1" | head -n1)
  case $l in
    CORE) echo 1 ;; PLANNER) echo 2 ;; RUNTIME) echo 3 ;; TRAIN) echo 4 ;; PROFILE) echo 5 ;;
    BIND) echo 6 ;;
    *) echo 0 ;;
  esac
}
# whether layer $2 may be included from layer $1
allowed() {
  [ "$2" -le "$1" ] || return 1
  [ "$1" = 5 ] && [ "$2" = 4 ] && return 1
  return 0
}

up=0
n_edges=0
: > "$TAP_TMP/up"
for dir in src planner runtime train profile bind; do
  from=$(layer_of_dir $dir)
  for f in "$R/$dir"/*.c "$R/$dir"/*.h "$R/$dir"/*.cu; do
    [ -f "$f" ] || continue
    case $f in */hw-resources.*|*/cupti-inject.c) continue ;; esac
    for inc in $(sed -n 's/^#include [<"]\([^>"]*\)[>"].*/\1/p' "$f"); do
      to=
      case $inc in
        stowage/*) h=${inc#stowage/}; [ -f "$R/include/stowage/$h" ] && to=$(public_layer "$h") ;;
        *) for d in src planner runtime train profile; do
             [ -f "$R/$d/$inc" ] && to=$(layer_of_dir $d)
           done ;;
      esac
      [ -n "$to" ] || continue
      n_edges=$((n_edges + 1))
      if ! allowed "$from" "$to"; then
        up=$((up + 1))
        echo "${f#$R/} includes $inc" >> "$TAP_TMP/up"
      fi
    done
  done
done
[ "$n_edges" -gt 50 ]; tap_result $? "the library's includes are read ($n_edges edges)"
[ "$up" = 0 ]; tap_result $? "no include points up a layer ($up do)" "$(cat "$TAP_TMP/up")"

# every public header declares its layer
missing=
for h in "$R"/include/stowage/*.h; do
  case $(basename "$h") in api.h|stowage.h) continue ;; esac
  [ "$(public_layer "$(basename "$h")")" != 0 ] || missing="$missing $(basename "$h")"
done
[ -z "$missing" ]; tap_result $? "every public header names its layer" "missing:$missing"

# the compiler refuses an upward include
CC=${CC:-cc}
GLIB=$(pkg-config --cflags glib-2.0)
try() { # LAYER INCLUDE-DIRS... -- HEADER: compiles a file that includes HEADER as that layer
  layer=$1; shift
  dirs=
  while [ "$1" != "--" ]; do dirs="$dirs -I$R/$1"; shift; done
  shift
  printf '#include %s\nint stw_probe(void);\nint stw_probe(void) { return 0; }\n' "$1" > "$TAP_TMP/probe.c"
  # shellcheck disable=SC2086
  $CC -std=c11 -D_GNU_SOURCE -DSTW_BUILDING_LAYER=$layer -I"$R/include" $dirs $GLIB \
    -I"$STW_BUILDDIR" -c "$TAP_TMP/probe.c" -o "$TAP_TMP/probe.o" > "$TAP_TMP/cc.log" 2>&1
}
try 2 src planner -- '<stowage/plan.h>'
tap_result $? "the planner compiles with its own public header" "$(cat "$TAP_TMP/cc.log")"
if try 2 src planner -- '<stowage/runtime.h>'; then r=1; else r=0; fi
tap_result $r "the planner cannot include the runtime's public header"
grep -q "belongs to the runtime" "$TAP_TMP/cc.log"; tap_result $? "and the compiler says why" "$(cat "$TAP_TMP/cc.log")"
if try 1 src -- '"demand.h"'; then r=1; else r=0; fi
tap_result $r "the core cannot include the planner's internal header"
if try 5 src planner runtime profile -- '<stowage/trainer.h>'; then r=1; else r=0; fi
tap_result $r "the profilers cannot include the trainer beside them"
if try 3 src planner runtime -- '<stowage/events-build.h>'; then r=1; else r=0; fi
tap_result $r "the runtime cannot include the profilers above it"
# the installed library finds the CUDA runtime where configure found it (its RUNPATH), not only
# through the loader cache
if grep -q '^#define STW_HAVE_CUDA 1' "$STW_BUILDDIR/config.h" 2>/dev/null && command -v readelf >/dev/null; then
  dir=$(sed -n 's/^CUDA_DIR = //p' "$STW_BUILDDIR/Makefile")
  for f in .libs/libstowage.so stowage; do
    rp=$(readelf -d "$STW_BUILDDIR/$f" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
    printf '%s' "$rp" | tr ':' '\n' | grep -qx "$dir/lib64"
    tap_result $? "${f#.libs/}'s RUNPATH holds $dir/lib64" "RUNPATH: $rp"
  done
else
  tap_skip "libstowage.so's RUNPATH: a build without CUDA (or no readelf)"
fi
tap_done
