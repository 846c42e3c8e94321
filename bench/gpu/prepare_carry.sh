#!/usr/bin/env bash
# Prepares, on this machine, what a lent GPU machine (nvcc, cmake, ninja; no
# system packages, no network) needs to build and run tandem_gpu_check, in
# one folder to carry with the working tree (build-gpucarry/ by default:
# .gitignore's /build*/ keeps it out of git, and the device tool's `carry`
# names it):
#   DEST/deps/{include,lib}  abseil's headers and static archives,
#                            nlohmann-json's headers, xxhash (about 8 MB):
#                            what bench/gpu/CMakeLists.txt needs besides a
#                            GPU compiler
#   DEST/bin/tandem_gpu_check  built here with nvcc for sm_90 (the CUDA
#                            runtime, abseil and libstdc++ linked statically:
#                            it needs only the driver there), the fallback
#                            when the build there fails; left out with
#                            NO_BINARY=1 or without nvcc here.
#   bench/gpu/prepare_carry.sh [DEST]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-$root/build-gpucarry}
mkdir -p "$dest/deps/include" "$dest/deps/lib"
dest=$(cd "$dest" && pwd)

libdir=$(dirname "$(ls /usr/lib/*/libabsl_status.a /usr/lib/libabsl_status.a 2>/dev/null | head -1)")
if [[ ! -f $libdir/libabsl_status.a ]]; then
  echo "prepare_carry: abseil's static archives not found (libabsl-dev)" >&2
  exit 1
fi
cp -r /usr/include/absl /usr/include/nlohmann "$dest/deps/include/"
cp /usr/include/xxhash.h /usr/include/xxh3.h "$dest/deps/include/"
cp "$libdir"/libabsl_*.a "$libdir/libxxhash.a" "$dest/deps/lib/"
echo "prepare_carry: packages: $(du -sh "$dest/deps" | cut -f1) in $dest/deps"

if [[ ${NO_BINARY:-0} == 1 ]]; then
  exit 0
fi
# built against the packed prefix, as the GPU machine will build it
if bash "$root/bench/gpu/build_check.sh" cuda "$dest/build-sm90" "$dest/deps"; then
  mkdir -p "$dest/bin"
  cp "$dest/build-sm90/tandem_gpu_check" "$dest/bin/"
  rm -rf "$dest/build-sm90"
  echo "prepare_carry: $dest/bin/tandem_gpu_check (sm_90), needs: $(ldd "$dest/bin/tandem_gpu_check" | awk '{print $1}' | tr '\n' ' ')"
else
  rc=$?
  rm -rf "$dest/build-sm90"
  [[ $rc -eq 77 ]] && { echo "prepare_carry: no nvcc here: no prebuilt binary"; exit 0; }
  exit $rc
fi
echo "prepare_carry: $(du -sh "$dest" | cut -f1) to carry"
