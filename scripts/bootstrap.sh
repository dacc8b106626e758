#!/bin/sh
# scripts/bootstrap.sh — installs what stowage needs to build (Debian packages, only those
# missing; needs root for that), then configures and builds it in the source tree.
set -e
cd "$(dirname "$0")/.."
need=""
# liburing-dev: the storage tier's reads and writes through io_uring (without it, a pool of
# threads). libopenblas-openmp-dev: the CPU trainer's matmuls (OpenBLAS's OpenMP build shares the trainer's
# threads); configure falls back to the trainer's own loops without it. libdnnl-dev: oneDNN, the
# CPU trainer's bf16 matmuls in mixed precision (without it, fp32 ones). libopenmpi-dev and
# openmpi-bin: training on several ranks (without them, one rank); patchelf and xz-utils: `make
# gpu-bundle` (the tree a GPU machine runs, scripts/gpu-bundle.sh)
for p in gcc make autoconf automake libtool pkg-config libglib2.0-dev libglib2.0-dev-bin \
         libcjson-dev zlib1g-dev liburing-dev libopenblas-openmp-dev libdnnl-dev libopenmpi-dev \
         openmpi-bin patchelf xz-utils; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "stowage needs these Debian packages:$need; run this as root to install them" >&2
    exit 1
  fi
  echo "installing:$need" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure ${STOWAGE_CONFIGURE_FLAGS:-}
make -j"$(nproc)"
