#!/bin/sh
# tests/install/run.sh CC HELLO.C TMPDIR LIBDIR [EXTRA_CFLAGS] — compiles HELLO.C with nothing but
# `pkg-config --cflags --libs stowage` (PKG_CONFIG_PATH points at the installed stowage.pc) and
# runs it against the installed library. EXTRA_CFLAGS carries a sanitizer build's flags, which a
# program linking a sanitized library must share.
set -eu
cc=$1 src=$2 tmp=$3 libdir=$4 extra=${5:-}
flags=$(pkg-config --cflags --libs stowage)
echo "installcheck: $cc $src $flags $extra"
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Wextra -Werror $extra "$src" -o "$tmp/hello" $flags
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/hello" | tee "$tmp/out"
grep -q "is sound" "$tmp/out"
echo "installcheck: ok"
