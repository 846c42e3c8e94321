#!/usr/bin/env bash
# Configures and builds tandem_gpu_check (bench/gpu/CMakeLists.txt, the
# gRPC-free project) for one vendor in BUILD, then runs `info`: on a machine
# without a GPU it must end with the runtime's "no GPU device".
#   bench/gpu/build_check.sh cuda|hip|emu BUILD [DEPS]
# DEPS: a prefix made by pack_deps.sh (default: the system's packages).
# TANDEM_GPU_WERROR=ON: the GPU compilers' warnings are errors.
# A missing nvcc exits 77 (skipped, said so): it is NVIDIA's toolkit, not a
# Debian package; a missing hipcc fails (scripts/install-deps.sh installs it).
set -uo pipefail
vendor=$1 build=$2 deps=${3:-}
root=$(cd "$(dirname "$0")/../.." && pwd)

args=(-DTANDEM_GPU_VENDOR="$vendor")
case $vendor in
  cuda)
    nvcc=$(command -v nvcc || true)
    [[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
    if [[ -z $nvcc ]]; then
      echo "SKIPPED: nvcc not found (PATH, /usr/local/cuda/bin; NVIDIA's CUDA toolkit, see scripts/install-deps.sh): tandem_gpu_check not built for cuda"
      exit 77
    fi
    args+=(-DGPU_COMPILER="$nvcc")
    ;;
  hip)
    if ! command -v hipcc >/dev/null; then
      echo "FAILED: hipcc not found (scripts/install-deps.sh installs Debian's hipcc)"
      exit 1
    fi
    ;;
  emu) ;;
  *) echo "unknown vendor $vendor" >&2; exit 2 ;;
esac
args+=(-DTANDEM_GPU_DEPS="$deps")  # empty: the system's (also after a prefix)
# TANDEM_GPU_WERROR=ON: a warning fails the GPU compiles (the CI's ctests, whose
# compilers are known; a lent machine's nvcc may warn where this one does not)
args+=(-DTANDEM_GPU_WERROR="${TANDEM_GPU_WERROR:-OFF}")
# ccache with the paths under the checkout hashed relative to it: a fresh
# clone at another path hits the cache too (absolute, a CI clone at a new
# path rebuilt the CUDA objects for 93 s).
command -v ccache >/dev/null &&
  args+=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=1;ccache")

start=$(date +%s)
mkdir -p "$build"
if ! cmake -S "$root/bench/gpu" -B "$build" -G Ninja "${args[@]}" > "$build/configure.log" 2>&1; then
  cat "$build/configure.log"
  echo "FAILED: configuring tandem_gpu_check for $vendor"
  exit 1
fi
grep "tandem_gpu_check:" "$build/configure.log"
# hipcc asks rocm_agent_enumerator for GPUs even with --offload-arch; its
# traceback about a missing /sys/class/kfd on a GPU-less machine is noise
cmake --build "$build" -j"${TANDEM_GPU_BUILD_JOBS:-2}" 2>&1 |
  grep -v -e '^Traceback' -e '^  File "/usr/bin/rocm_agent' -e '^    ' \
          -e '^FileNotFoundError' -e '^ *\^'
if [[ ${PIPESTATUS[0]} -ne 0 || ! -x $build/tandem_gpu_check ]]; then
  echo "FAILED: building tandem_gpu_check for $vendor"
  exit 1
fi
echo "built $build/tandem_gpu_check for $vendor in $(( $(date +%s) - start )) s"

out=$("$build/tandem_gpu_check" info 2>&1)
rc=$?
echo "tandem_gpu_check info: exit $rc: $out"
if [[ $rc -eq 0 ]]; then
  echo "ok: a device answered"
  exit 0
fi
if [[ $rc -eq 3 && $out == *"no GPU device"* ]]; then
  echo "ok: no GPU here, and the check says so"
  exit 0
fi
echo "FAILED: expected a device or the no-device error"
exit 1
