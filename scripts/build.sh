#!/bin/sh
# Configures and builds soakd into ./build (or $SOAKD_BUILD_DIR).
#   scripts/build.sh [--sanitize] [--release] [--target NAME...]
# Without --target: everything of the default build (programs, libraries and
# the test suite; benchmarks are built on demand: --target benches). With it:
# only those targets and what they link, e.g. scripts/demo.sh builds
# --target soakd soakctl soak-fake-runtime.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SOAKD_BUILD_DIR:-$top/build}
type=RelWithDebInfo
sanitize=OFF
targets=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize=ON ;;
    --release) type=Release ;;
    --target)
      shift
      while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do targets="$targets $1"; shift; done
      [ -n "$targets" ] || { echo "build.sh: --target needs at least one target name" >&2; exit 2; }
      continue ;;
    *) echo "build.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=$type -DSOAKD_SANITIZE=$sanitize >/dev/null
if [ -n "$targets" ]; then
  # shellcheck disable=SC2086
  cmake --build "$build" -j "$jobs" --target $targets
else
  cmake --build "$build" -j "$jobs"
fi
