#!/usr/bin/env bash
# Builds the real `tandem` binary with the hip backend linked in, in its own
# build directory (compile and link, through the shared ccache), then checks
# that `tandem generate --backend hip` runs: on a machine without a GPU it
# must end with the backend's one clear "no GPU device" error.
#   build_gpu_tandem.sh hip  <source dir> <build dir>   (-DTANDEM_HIP=ON, hipcc)
#   build_gpu_tandem.sh cuda <source dir> <build dir>   (-DTANDEM_CUDA=ON, nvcc)
# hipcc missing FAILS (scripts/install-deps.sh installs it); nvcc missing is
# reported as skipped (exit 77): it comes from NVIDIA's CUDA toolkit, not apt.
set -uo pipefail
kind=$1 src=$2 build=$3

case $kind in
  hip)
    if ! command -v hipcc >/dev/null; then
      echo "FAILED: hipcc not found (scripts/install-deps.sh installs Debian's hipcc)"
      exit 1
    fi
    option=-DTANDEM_HIP=ON
    ;;
  cuda)
    nvcc=$(command -v nvcc || true)
    [[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
    if [[ -z $nvcc ]]; then
      echo "SKIPPED: nvcc not found (PATH, /usr/local/cuda/bin; NVIDIA's CUDA toolkit, see scripts/install-deps.sh): tandem not built with -DTANDEM_CUDA=ON"
      exit 77
    fi
    option=(-DTANDEM_CUDA=ON -DTANDEM_NVCC="$nvcc")
    ;;
  *) echo "unknown kind $kind" >&2; exit 2 ;;
esac

start=$(date +%s)
mkdir -p "$build"
# tests off: only the binary is wanted. TANDEM_GPU_WERROR: a warning in a
# kernel fails this test (the compilers here are known), and the kernels'
# command line is the one tests/bench/gpu's build of tandem_gpu_check uses,
# so ccache compiles each kernel once for both (kernels/hip/gpu_objects.cmake).
if ! cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_BUILD_TESTS=OFF \
      -DTANDEM_GPU_WERROR=ON "${option[@]}" > "$build/configure.log" 2>&1; then
  cat "$build/configure.log"
  echo "FAILED: configuring $kind build"
  exit 1
fi
grep -E "hip backend" "$build/configure.log"
# hipcc asks rocm_agent_enumerator for GPUs even with --offload-arch; its
# traceback about a missing /sys/class/kfd on a GPU-less machine is noise
cmake --build "$build" -j"${TANDEM_GPU_BUILD_JOBS:-2}" --target tandem 2>&1 |
  grep -v -e '^Traceback' -e '^  File "/usr/bin/rocm_agent' -e '^    ' \
          -e '^FileNotFoundError' -e '^ *\^'
built=${PIPESTATUS[0]}
if [[ $built -ne 0 || ! -x $build/tandem ]]; then
  echo "FAILED: building tandem with ${option[*]}"
  exit 1
fi
echo "built $build/tandem in $(( $(date +%s) - start )) s"

out=$("$build/tandem" generate --backend hip --prompt "Once upon a time" --max-tokens 8 2>&1)
rc=$?
echo "tandem generate --backend hip: exit $rc: $out"
if [[ $rc -eq 0 ]]; then
  echo "ok: a GPU ran the hip backend"
  exit 0
fi
if [[ $out != *"hip backend: no GPU device"* ]]; then
  echo "FAILED: expected the no-device error"
  exit 1
fi
echo "ok: no GPU here, and the error says so"
