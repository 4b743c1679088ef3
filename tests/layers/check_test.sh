#!/bin/sh
# The layer check fails on a wrong include: a small tree with one include that
# points down and one that points up; the check must name the second, exit 1,
# and pass once it is removed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/core" "$t/storage" "$t/daemon"
printf '#pragma once\n' > "$t/core/clock.h"
printf '#pragma once\n' > "$t/daemon/daemon.h"
printf '#include "core/clock.h"\n#include <vector>\n' > "$t/storage/store.h"
printf '#include "core/clock.h"\n\n#include "daemon/daemon.h"\n' > "$t/storage/store.cc"

set +e
out=$(sh "$here/check.sh" "$t")
rc=$?
set -e
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: expected exit 1 for an upward include, got $rc"; exit 1; }
echo "$out" | grep -q '^storage/store.cc:3: includes "daemon/daemon.h"' ||
  { echo "FAIL: the upward include was not named with its file and line"; exit 1; }
[ "$(echo "$out" | grep -c 'includes')" -eq 1 ] || { echo "FAIL: a downward include was reported"; exit 1; }

printf '#include "core/clock.h"\n' > "$t/storage/store.cc"
sh "$here/check.sh" "$t" || { echo "FAIL: a clean tree was rejected"; exit 1; }

printf '#include "widgets/html.h"\n' > "$t/core/clock.h"
set +e
out=$(sh "$here/check.sh" "$t")
rc=$?
set -e
[ $rc -eq 1 ] && echo "$out" | grep -q 'is not a layer folder' ||
  { echo "FAIL: an include of an unknown folder passed: $out"; exit 1; }
echo "ok: wrong includes are caught"
