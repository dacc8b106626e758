#!/bin/sh
# test-gpu-bundle.sh — scripts/gpu-bundle.sh makes a tree that runs where it lands, without this
# machine's libraries: every file's RUNPATH starts at the bundle, every library it loads
# (but the C library's and CUDA's) comes from the bundle, a moved bundle finds its own modules,
# its programs and the Python package over its library run, the tarball is well under the 64 MiB
# a GPU run may carry, and tests/gpu/run.sh goes through every step of it here (each failing
# without a GPU). Skips without CUDA, patchelf or xz, and in a sanitizer build.
. "$STW_SRCDIR/tests/tap.sh"
B=$STW_BUILDDIR
if ! grep -q '^#define STW_HAVE_CUDA 1' "$B/config.h" 2>/dev/null; then
  echo "1..0 # SKIP a build without CUDA has no GPU bundle"
  exit 0
fi
for tool in patchelf xz readelf ldd; do
  if ! command -v $tool >/dev/null 2>&1; then
    echo "1..0 # SKIP $tool is not installed (scripts/bootstrap.sh installs patchelf)"
    exit 0
  fi
done
if ldd "$B/stowage" 2>/dev/null | grep -q libasan; then
  echo "1..0 # SKIP a sanitizer build is not bundled"
  exit 0
fi
cuda=$(sed -n 's/^CUDA_DIR = //p' "$B/Makefile")

mkdir -p "$TAP_TMP/empty"
out=$(sh "$STW_SRCDIR/scripts/gpu-bundle.sh" --builddir "$TAP_TMP/empty" "$TAP_TMP/none" 2>&1)
[ $? = 1 ] && [ "$out" = "gpu-bundle: $TAP_TMP/empty is not a configured build tree (scripts/bootstrap.sh)" ] &&
  [ ! -e "$TAP_TMP/none/stowage-gpu.tar.xz" ]
tap_result $? "gpu-bundle.sh refuses a folder that is no build tree, and writes nothing" "$out"
sh "$STW_SRCDIR/scripts/gpu-bundle.sh" --builddir "$B" "$TAP_TMP/out" > "$TAP_TMP/bundle.log" 2>&1
tap_result $? "gpu-bundle.sh makes the tarball" "$(cat "$TAP_TMP/bundle.log")"
tarball=$TAP_TMP/out/stowage-gpu.tar.xz
size=$(wc -c < "$tarball" 2>/dev/null || echo 0)
[ "$size" -gt 0 ] && [ "$size" -lt $((32 * 1024 * 1024)) ]
tap_result $? "the tarball is under 32 MiB (it is $size bytes)"

# unpacked where it was not made, then moved: nothing may point back
mkdir -p "$TAP_TMP/a" && xz -dc "$tarball" | tar -C "$TAP_TMP/a" -xf -
mv "$TAP_TMP/a/stowage-gpu" "$TAP_TMP/moved"
g=$TAP_TMP/moved
for f in bin/stowage bin/test-cuda bin/bench-cuda bin/nvtx-demo lib/libstowage.so.0 \
         lib/stowage/libstowage-compute-cuda.so lib/stowage/libstowage-cupti.so MANIFEST; do
  [ -f "$g/$f" ]; tap_result $? "the bundle holds $f"
done

bad=""
for f in $(find "$g/bin" "$g/lib" -type f); do
  rp=$(readelf -d "$f" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
  case $rp in '$ORIGIN'*) ;; *) bad="$bad ${f#$g/}:[$rp]" ;; esac
done
[ -z "$bad" ]; tap_result $? "every ELF file's RUNPATH starts at \$ORIGIN" "$bad"

# what each file loads: the bundle's, the C library's, or CUDA's (the driver, libcuda, is
# the GPU machine's, and missing here)
bad=""
for f in $(find "$g/bin" "$g/lib" -type f ! -name MANIFEST); do
  env -u LD_LIBRARY_PATH ldd "$f" > "$TAP_TMP/ldd" 2>&1
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    case $path in
      "$g"/*) ;;
      not) [ "$name" = libcuda.so.1 ] || bad="$bad ${f#$g/}:$name:missing" ;;
      "$cuda"/*) ;;
      *) printf '%s' "$name" | grep -Eq '^(libc|libm|libdl|libpthread|librt|libutil|libresolv)\.so' ||
           printf '%s' "$name" | grep -Eq '^lib(cudart|cublas|cublasLt|cupti|nccl)\.so' ||
           [ -f "$g/lib/fallback/$name" ] || bad="$bad ${f#$g/}:$name:$path" ;;
    esac
  done < "$TAP_TMP/ldd"
done
[ -z "$bad" ]; tap_result $? "every library a bundled file loads is the bundle's, the C library's, CUDA's or (held in lib/fallback/) the base system's" "$bad"
# the base system's libraries wait in lib/fallback/, out of every RUNPATH: the machine's own come
# first (PyTorch in the same process needs a libstdc++ as new as its own)
for name in libstdc++.so.6 libz.so.1 libffi.so.8; do
  [ -f "$g/lib/fallback/$name" ] && [ ! -e "$g/lib/$name" ]
  tap_result $? "$name waits in lib/fallback/, not in lib/"
done

out=$(env -u LD_LIBRARY_PATH "$g/bin/stowage" --build-info 2>&1)
printf '%s\n' "$out" | grep -q "^cuda compute *$g/lib/stowage/libstowage-compute-cuda.so (found"
tap_result $? "the moved stowage finds the CUDA compute table beside it" "$out"
printf '%s\n' "$out" | grep -q "^cupti injection *$g/lib/stowage/libstowage-cupti.so (found"
tap_result $? "... and the CUPTI injection library" "$out"

tr=$STW_SRCDIR/traces/gpt2-b8-s1024.json
a=$(env -u LD_LIBRARY_PATH "$g/bin/stowage" plan "$tr" --gpu 4GiB 2>&1 | tail -n 3)
b=$("$B/stowage" plan "$tr" --gpu 4GiB 2>&1 | tail -n 3)
[ -n "$a" ] && [ "$a" = "$b" ]; tap_result $? "the bundled stowage plans as the built one" "$a" "$b"

out=$(env -u LD_LIBRARY_PATH "$g/bin/test-cuda" 2>&1)
st=$?
[ $st = 0 ] && printf '%s' "$out" | grep -q "^ok"
tap_result $? "the bundled CUDA tests run (and skip without a GPU)" "$out"

if command -v python3 >/dev/null 2>&1; then
  out=$(cd / && STOWAGE_LIB=$g/lib/libstowage.so PYTHONPATH=$STW_SRCDIR/python \
        PYTHONDONTWRITEBYTECODE=1 env -u LD_LIBRARY_PATH python3 -c 'import stowage; print(stowage.version())' 2>&1)
  [ "$out" = "stowage 0.1.0" ]; tap_result $? "the Python package loads the bundled library" "$out"
else
  tap_skip "python3 is not installed"
fi

# the GPU script itself, on this machine without a GPU: it must go through every step (each
# failing in a line of its own), and leave its three files; a shell error would end the one
# GPU run there is
out=$(env -u LD_LIBRARY_PATH STW_GPU_OUT="$TAP_TMP/gpu-out" sh "$STW_SRCDIR/tests/gpu/run.sh" "$tarball" 2>&1)
st=$?
ls "$TAP_TMP/gpu-out" > "$TAP_TMP/gpu-files" 2>&1
[ $st = 0 ] && [ "$(cat "$TAP_TMP/gpu-files" | tr '\n' ' ')" = "logs.tar.gz preflight.txt summary.txt " ]
tap_result $? "tests/gpu/run.sh runs the bundle to its end and leaves three files" "$(tail -n 20 "$TAP_TMP/gpu-out/summary.txt" 2>/dev/null)" "$(echo "$out" | tail -n 5)"
steps=$(tar -xzf "$TAP_TMP/gpu-out/logs.tar.gz" -O logs/steps.txt 2>/dev/null | cut -d: -f1 | tr '\n' ' ')
want="test-cuda bench-cuda demo demo-debug cpu-fp32 cuda-fp32 cpu-mixed cuda-mixed cpu-fp32-flash cuda-fp32-flash resident torch-nvtx pytest torch-wrap-bench torch-wrap-profile gpt2-mfu gpt2-mfu-naive fidelity-resident fidelity "
[ "$steps" = "$want" ]; tap_result $? "... every step, in order" "ran: $steps" "want: $want"
grep -q "^cuda compute .*/stowage-gpu/lib/stowage/libstowage-compute-cuda.so (found" "$TAP_TMP/gpu-out/preflight.txt"
tap_result $? "... and its preflight finds the bundle's modules" "$(grep -A8 'build-info' "$TAP_TMP/gpu-out/preflight.txt")"
tap_done
