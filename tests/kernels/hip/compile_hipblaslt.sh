#!/usr/bin/env bash
# Compiles the vendor-BLAS path of kernels/hip (gpu_blas.cc, and the backend
# that calls it) with hipcc against hipBLASLt's public headers, for a machine
# whose ROCm has no hipBLASLt (Debian's 5.2): the headers come from git
# checkouts of ROCm/hipBLASLt and ROCm/hipBLAS (hipblaslt.h includes
# hipblas.h) at a ROCm release tag, with hip/library_types.h of ROCm/HIP at
# the same tag over the installed one (5.2's has no HIP_R_16BF; every ROCm
# that ships hipBLASLt has). The two headers each library's CMake generates
# (the export macros and the version) are written here as CMake's
# GenerateExportHeader and configure_file would; nothing else is changed.
#   compile_hipblaslt.sh <hipBLASLt git dir> <hipBLAS git dir> <HIP git dir> [tag] [repo root]
# e.g. with the tool library's mirrors (/work/.mirror/ROCm+X/repo):
#   compile_hipblaslt.sh $M/ROCm+hipBLASLt/repo $M/ROCm+hipBLAS/repo $M/ROCm+HIP/repo rocm-6.2.0
# It checks that the hipBLASLt names gpu_vendor.h maps to exist with the
# signatures gpu_blas.cc calls them with; linking and running need a ROCm
# with libhipblaslt and an AMD GPU.
set -euo pipefail
lt_git=$1 blas_git=$2 hip_git=$3 tag=${4:-rocm-6.2.0}
root=${5:-$(cd "$(dirname "$0")/../../.." && pwd)}
compiler=$(command -v hipcc || true)
if [[ -z $compiler ]]; then
  echo "SKIPPED: hipcc is not installed"
  exit 77
fi

inc=$(mktemp -d)
trap 'rm -rf "$inc"' EXIT
# the headers a release installs: library/include/* of each repository
headers() {  # git dir, destination folder
  mkdir -p "$2"
  for f in $(git -C "$1" ls-tree --name-only "$tag" library/include/); do
    git -C "$1" show "$tag:$f" > "$2/$(basename "$f")"
  done
}
headers "$lt_git" "$inc/hipblaslt"
headers "$blas_git" "$inc/hipblas"
cp "$inc/hipblas/hipblas.h" "$inc/hipblas.h"  # hipBLAS's own headers include it flat
mkdir -p "$inc/hip"
git -C "$hip_git" show "$tag:include/hip/library_types.h" > "$inc/hip/library_types.h"

# the library's version, as its CMake sets it (rocm_setup_version)
version() {  # git dir -> "major minor patch"
  git -C "$1" show "$tag:CMakeLists.txt" |
    sed -n 's/.*set *( *VERSION_STRING *"\([0-9]*\)\.\([0-9]*\)\.\([0-9]*\)".*/\1 \2 \3/p' | head -1
}
configure() {  # template, output, cmake project name, "major minor patch"
  read -r major minor patch <<< "$4"
  sed -e "s/@$3_VERSION_MAJOR@/${major:-0}/" -e "s/@$3_VERSION_MINOR@/${minor:-0}/" \
      -e "s/@$3_VERSION_PATCH@/${patch:-0}/" -e "s/@$3_VERSION_TWEAK@/0/" "$1" > "$2"
}
configure "$inc/hipblaslt/hipblaslt-version.h.in" "$inc/hipblaslt/hipblaslt-version.h" hipblaslt \
  "$(version "$lt_git")"
configure "$inc/hipblas/hipblas-version.h.in" "$inc/hipblas-version.h" hipblas "$(version "$blas_git")"
export_header() {  # output, macro prefix
  cat > "$1" <<EOF
#pragma once
#define $2_EXPORT __attribute__((visibility("default")))
#define $2_NO_EXPORT __attribute__((visibility("hidden")))
#define $2_DEPRECATED __attribute__((__deprecated__))
#define $2_DEPRECATED_EXPORT $2_EXPORT $2_DEPRECATED
#define $2_DEPRECATED_NO_EXPORT $2_NO_EXPORT $2_DEPRECATED
EOF
}
export_header "$inc/hipblaslt/hipblaslt-export.h" HIPBLASLT
export_header "$inc/hipblas-export.h" HIPBLAS

out=$(mktemp -d)
trap 'rm -rf "$inc" "$out"' EXIT
flags=(-x hip -std=c++20 -Werror -Wall -Wno-unused-parameter --offload-arch=gfx90a --offload-arch=gfx940)
failed=0
for src in kernels/hip/gpu_blas.cc kernels/hip/hip_backend.cc; do
  # -isystem: the libraries' headers are checked by their makers, not by
  # -Werror here. -H lists the headers read: the check counts only if
  # hipblaslt.h was one.
  if ! "$compiler" "${flags[@]}" -I"$root" -isystem "$inc" -H -c "$root/$src" -o "$out/o.o" 2> "$out/log"; then
    grep -v -e '^\.' -e 'rocm_agent' "$out/log" >&2
    echo "FAILED: $src against hipBLASLt $tag"
    failed=1
  elif ! grep -q "hipblaslt/hipblaslt.h" "$out/log"; then
    echo "FAILED: $src did not include hipblaslt/hipblaslt.h"
    failed=1
  else
    echo "ok: $src against hipBLASLt $tag ($(stat -c %s "$out/o.o") bytes)"
  fi
done
exit $failed
