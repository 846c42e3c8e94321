#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds (Release; the build
# fetches the large test tokenizers), runs every test with ctest, then rebuilds the
# loaders, tokenizers, templates and engine under AddressSanitizer + UBSan and
# runs their tests again; then the threaded parts' tests under ThreadSanitizer
# (tests/CMakeLists.txt: TANDEM_TSAN_TESTS) and a bounded fuzz smoke of every
# parser of untrusted input (scripts/fuzz.sh, 10 s a target: a smoke that
# keeps CI within its 15 minutes; campaigns run for minutes a target).
# Usage: scripts/test.sh
#   TANDEM_SKIP_SANITIZE=1 skips all three sanitizer passes (ASan, TSan, fuzz);
#   TANDEM_SKIP_TSAN=1 / TANDEM_SKIP_FUZZ=1 skip one; TANDEM_FUZZ_SECONDS sets
#   the seconds per fuzz target.
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

if [[ "${TANDEM_SKIP_SANITIZE:-0}" != 1 && "${TANDEM_SKIP_TSAN:-0}" != 1 ]]; then
  tsan="$root/build-tsan"
  if [[ ! -f "$tsan/build.ninja" ]]; then
    cmake -S "$root" -B "$tsan" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DTANDEM_SANITIZE=thread
  fi
  cmake --build "$tsan" -j "$jobs" --target tandem_tsan_tests
  # suppressions: only uninstrumented third-party libraries (each explained
  # there). Left out: two volume tests (6 MiB through one stream, a 200000-block
  # snapshot) that outrun their deadlines at TSan's 5-15x slowdown; the other
  # passes run them. UCX_MEM_EVENTS=no: UCX's memory hooks (libucm patching
  # mmap/malloc) crash the TSan runtime at the first UCX call; the transports
  # do not need them (no registration cache).
  UCX_MEM_EVENTS=no TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$root/tests/tsan_suppressions.txt" \
    ctest --test-dir "$tsan" -L tsan --output-on-failure -j "$jobs" \
      -E 'QueuesBehindTheOneWriteInFlightWhileTheClientDoesNotRead|AssemblesASnapshotStreamedInParts'
fi

if [[ "${TANDEM_SKIP_SANITIZE:-0}" != 1 && "${TANDEM_SKIP_FUZZ:-0}" != 1 ]]; then
  bash "$root/scripts/fuzz.sh" "${TANDEM_FUZZ_SECONDS:-10}"
fi
