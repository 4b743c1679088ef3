#!/bin/sh
# The test command: installs what it needs, builds with AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs the whole suite with ctest.
#   scripts/test.sh [--no-sanitize] [ctest args...]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
sanitize=--sanitize
if [ "${1:-}" = "--no-sanitize" ]; then sanitize=""; shift; fi
export SOAKD_BUILD_DIR=${SOAKD_BUILD_DIR:-$top/build-test}
"$top/scripts/build.sh" $sanitize
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
cd "$SOAKD_BUILD_DIR"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --output-on-failure -j "$jobs" "$@"
