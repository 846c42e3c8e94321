# Sourced by the bench scripts that drive real tandem processes through the
# e2e harness's Node clients (soak.sh, faults.sh, bad_input.sh): one place
# for what they share.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e_setup.sh"
#   e2e_setup NAME BUILD_DIR FILE...
#
# checks that the e2e npm clients are installed in BUILD_DIR/e2e (else says
# how to install them and exits 1), makes the work directory
# BUILD_DIR/e2e/NAME and copies FILE... (the .mjs the run needs) into it,
# exports TANDEM_BINARY and TANDEM_SOURCE_DIR for the harness, raises the
# open-file limit (many clients, many sockets) and changes into the work
# directory. Resolve relative output paths before calling it. Sets
# e2e_root (the repository), e2e_build (BUILD_DIR, absolute) and e2e_work.

e2e_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

e2e_setup() {
  local name=$1 build_arg=$2
  shift 2
  e2e_build="$(cd "$build_arg" && pwd)"
  e2e_work="$e2e_build/e2e/$name"
  if [[ ! -d "$e2e_build/e2e/node_modules" ]]; then
    echo "$name.sh: run tests/e2e/run.sh $e2e_build --setup first" >&2
    exit 1
  fi
  mkdir -p "$e2e_work"
  cp "$@" "$e2e_work"/
  export TANDEM_BINARY="$e2e_build/tandem" TANDEM_SOURCE_DIR="$e2e_root"
  ulimit -n 65536 2>/dev/null || true
  cd "$e2e_work"
}
