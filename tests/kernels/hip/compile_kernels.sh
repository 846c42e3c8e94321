#!/usr/bin/env bash
# Compiles every kernel source of kernels/hip for a real GPU target, failing
# on any compiler error; exits 77 (ctest: skipped) when the compiler is not
# installed, saying so.
#   compile_kernels.sh hipcc gfx90a,gfx940 <repo root> <source>...
#   compile_kernels.sh nvcc sm_90 <repo root> <source>...
# (several comma-separated targets build into one object: hipcc compiles the
# device code once per target and the host code once.)
set -uo pipefail
kind=$1 arch=$2 root=$3
shift 3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

case $kind in
  hipcc)
    compiler=$(command -v hipcc || true)
    flags=(-x hip -std=c++20 -Werror -Wall -Wno-unused-parameter)
    for a in ${arch//,/ }; do flags+=("--offload-arch=$a"); done
    ;;
  nvcc)
    compiler=$(command -v nvcc || true)
    [[ -z $compiler && -x /usr/local/cuda/bin/nvcc ]] && compiler=/usr/local/cuda/bin/nvcc
    flags=(-x cu -std=c++20 -Werror all-warnings)
    for a in ${arch//,/ }; do flags+=("-gencode=arch=compute_${a#sm_},code=$a"); done
    ;;
  *) echo "unknown compiler kind $kind" >&2; exit 2 ;;
esac
if [[ -z $compiler ]]; then
  echo "SKIPPED: $kind is not installed; kernels/hip not compiled for $arch"
  exit 77
fi

# through ccache when installed, as the builds are: a run after one that
# compiled the same sources is all cache hits (this script ran ~100 s of the
# warm CI's release pass for hipcc and ~60 s for nvcc without it). The
# paths under the checkout are hashed relative to it, so a fresh clone
# elsewhere hits too (with absolute ones a CI clone at a new path ran it
# for 160 s and 97 s).
launcher=()
command -v ccache >/dev/null && launcher=(env CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1 ccache)

failed=0
for src in "$@"; do
  name=$(basename "$src" .cc)
  # hipcc asks rocm_agent_enumerator for GPUs even with --offload-arch; its
  # complaint about a missing /sys/class/kfd on a GPU-less machine is noise
  if ! "${launcher[@]}" "$compiler" "${flags[@]}" -I"$root" -c "$root/$src" -o "$out/$name.o" \
        2> >(grep -v -e '^Traceback' -e '^  File "/usr/bin/rocm_agent' -e '^    ' \
                     -e '^FileNotFoundError' -e '^\^' >&2); then
    echo "FAILED: $src for $arch"
    failed=1
  elif [[ ! -s $out/$name.o ]]; then
    echo "FAILED: $src for $arch produced no object"
    failed=1
  else
    echo "ok: $src for $arch ($(stat -c %s "$out/$name.o") bytes)"
  fi
done
exit $failed
