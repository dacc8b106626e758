#!/bin/sh
# scripts/gpu-bundle.sh [--dir] [--builddir DIR] [OUT] — what tests/gpu/run.sh needs on a GPU
# machine that cannot build (no autotools, no GLib or cJSON development files, no package
# registry), made from a build tree with CUDA (`make gpu-bundle` builds what it takes and runs
# this): OUT/stowage-gpu.tar.xz (default OUT: gpu-bundle/), holding stowage-gpu/
#   bin/   stowage, test-cuda (the CUDA backend's unit tests), bench-cuda, nvtx-demo
#   lib/   libstowage.so.0 and every shared library these need that is not the C library's or
#          CUDA's (GLib, cJSON, OpenBLAS, Open MPI, ...): the GPU image may lack them
#   lib/fallback/  the base system's libraries among those (libstdc++, libgcc_s, zlib, libffi,
#          libmount, ...): a newer image has its own, which PyTorch in the same process needs,
#          so tests/gpu/run.sh moves one into lib/ only where the machine lacks it
#   lib/stowage/  the modules: the CUDA compute table, the CUPTI injection library, NCCL's
#   MANIFEST  what built it, and every file with its size
# Every file's RUNPATH finds the bundle first ($ORIGIN), then the CUDA toolkit's folder; the CUDA
# libraries themselves are the GPU machine's (they must match its driver). --dir leaves the
# folder OUT/stowage-gpu instead of the tarball. Exits 1, saying why, when the build has no CUDA,
# a file is missing or a library cannot be found.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "gpu-bundle: $*" >&2; exit 1; }
dir_only=0
build=$src
while [ $# -gt 0 ]; do
  case $1 in
    --dir) dir_only=1; shift ;;
    --builddir) build=$2; shift 2 ;;
    *) break ;;
  esac
done
out=${1:-gpu-bundle}
cd "$build"
[ -f config.h ] && [ -f Makefile ] || fail "$build is not a configured build tree (scripts/bootstrap.sh)"
grep -q '^#define STW_HAVE_CUDA 1' config.h ||
  fail "this build has no CUDA (configure found no CUDA toolkit): nothing to bundle"
command -v patchelf >/dev/null || fail "patchelf is missing (apt-get install patchelf)"
for f in stowage tests/test-cuda bench/bench-cuda .libs/libstowage.so.0; do
  [ -f "$f" ] || fail "$build/$f is missing (make gpu-bundle builds it)"
done
cuda=$(sed -n 's/^CUDA_DIR = //p' Makefile)
nvcc=$(sed -n 's/^NVCC = //p' Makefile)
jobs=$(nproc 2>/dev/null || echo 2)

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/stowage-bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
b=$work/stowage-gpu
mkdir -p "$b/bin" "$b/lib/stowage" "$b/lib/fallback"
cp stowage tests/test-cuda bench/bench-cuda "$b/bin/"
"$nvcc" -O2 -o "$b/bin/nvtx-demo" "$src/tests/gpu/nvtx-demo.cu" > "$work/nvcc.log" 2>&1 ||
  fail "nvcc could not build tests/gpu/nvtx-demo.cu: $(tail -n 3 "$work/nvcc.log")"
cp -L .libs/libstowage.so.0 "$b/lib/"
ln -s libstowage.so.0 "$b/lib/libstowage.so"
for m in libstowage-compute-cuda.so libstowage-cupti.so libstowage-comm-nccl.so; do
  [ -f ".libs/$m" ] && cp ".libs/$m" "$b/lib/stowage/"
done

# The libraries every ELF file needs, transitively, but the C library's own and CUDA's (the
# toolkit's and the driver's: the GPU machine has them, matched to its driver).
system='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libutil|libresolv)\.so'
gpu='^lib(cuda|cudart|cublas|cublasLt|cupti|nccl|nvToolsExt|nvrtc|cudnn[a-z_]*|nvJitLink)\.so'
base='^lib(stdc\+\+|gcc_s|z|ffi|selinux|mount|blkid|udev|pcre2-8)\.so'
queue=$(find "$b/bin" "$b/lib" -type f)
while [ -n "$queue" ]; do
  next=""
  for f in $queue; do
    ldd "$f" > "$work/ldd" 2>&1 || fail "ldd $f: $(cat "$work/ldd")"
    while read -r name arrow path _; do
      [ "$arrow" = "=>" ] || continue
      if printf '%s' "$name" | grep -Eq "$system|$gpu"; then continue; fi
      [ "$path" = "not" ] && fail "$f needs $name, which is not found here"
      dest=$b/lib
      printf '%s' "$name" | grep -Eq "$base" && dest=$b/lib/fallback
      [ -e "$dest/$name" ] && continue
      cp -L "$path" "$dest/$name"
      next="$next $dest/$name"
    done < "$work/ldd"
  done
  queue=$next
done

# RUNPATHs: the bundle first, then the toolkit's folder
for f in "$b"/bin/*; do patchelf --set-rpath "\$ORIGIN/../lib:$cuda/lib64" "$f"; done
for f in "$b"/lib/*.so*; do [ -L "$f" ] || patchelf --set-rpath "\$ORIGIN:$cuda/lib64" "$f"; done
for f in "$b"/lib/stowage/*; do patchelf --set-rpath "\$ORIGIN/..:$cuda/lib64" "$f"; done
for f in "$b"/lib/fallback/*; do patchelf --set-rpath "\$ORIGIN/..:\$ORIGIN" "$f"; done

{
  echo "stowage GPU bundle: $(./stowage --version 2>&1 | head -n 1), built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "on $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(ldd --version | head -n 1)"
  echo "CUDA $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') at $cuda"
  (cd "$b" && find . -type f | sort | while read -r f; do echo "$(wc -c < "$f") $f"; done)
} > "$b/MANIFEST"

if [ "$dir_only" = 1 ]; then
  rm -rf "$out/stowage-gpu"
  mv "$b" "$out/stowage-gpu"
  echo "gpu-bundle: $out/stowage-gpu, $(du -sh "$out/stowage-gpu" | cut -f1)"
else
  tar -C "$work" -cf - stowage-gpu | xz -T"$jobs" -6 > "$work/stowage-gpu.tar.xz"
  mv "$work/stowage-gpu.tar.xz" "$out/stowage-gpu.tar.xz"
  echo "gpu-bundle: $out/stowage-gpu.tar.xz, $(du -h "$out/stowage-gpu.tar.xz" | cut -f1) ($(du -sh "$b" | cut -f1) unpacked)"
fi
