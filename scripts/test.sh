#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds (Release; the build
# fetches the large test tokenizers), runs every test with ctest, then rebuilds the
# loaders, tokenizers, templates and engine under AddressSanitizer + UBSan and
# runs their tests again.
# Usage: scripts/test.sh            (TANDEM_SKIP_SANITIZE=1 skips the ASan pass)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)

bash "$root/scripts/build.sh" "$root/build"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"

if [[ "${TANDEM_SKIP_SANITIZE:-0}" != 1 ]]; then
  san="$root/build-asan"
  if [[ ! -f "$san/build.ninja" ]]; then
    # -O1 with line tables only (-g1): quick to build, fast enough to run,
    # and sanitizer reports still name file:line.
    cmake -S "$root" -B "$san" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DTANDEM_SANITIZE=ON
  fi
  cmake --build "$san" -j "$jobs" --target tandem_tests
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$san" --output-on-failure -j "$jobs"
fi
