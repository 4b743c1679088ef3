#!/bin/sh
# Configures and builds soakd into ./build (or $SOAKD_BUILD_DIR).
#   scripts/build.sh [--sanitize] [--release]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SOAKD_BUILD_DIR:-$top/build}
type=RelWithDebInfo
sanitize=OFF
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=ON ;;
    --release) type=Release ;;
    *) echo "build.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=$type -DSOAKD_SANITIZE=$sanitize >/dev/null
cmake --build "$build" -j "$jobs"
