#!/bin/sh
# The demo: builds soakd, starts the bundled fake runtime, runs the daemon with
# examples/demo.json (time compressed to minutes) until every candidate has a
# verdict, then shows `soakctl status`.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
export SOAKD_BUILD_DIR=${SOAKD_BUILD_DIR:-$top/build}
"$top/scripts/build.sh"
b=$SOAKD_BUILD_DIR
demo="$b/demo"
rm -rf "$demo"
mkdir -p "$demo"

echo "== soakd check-config examples/demo.json"
"$b/daemon/soakd" check-config "$top/examples/demo.json"
echo
echo "== soakd run (until every candidate has a verdict)"
"$b/daemon/soakd" run --config "$top/examples/demo.json" --log-stderr --exit-when-settled
echo
echo "== soakctl status"
"$b/daemon/soakctl" --config "$top/examples/demo.json" status
echo
echo "== events (sqlite3)"
sqlite3 -header -column "$demo/soakd.db" "SELECT id, datetime(ts_ms/1000,'unixepoch') AS at, kind, detail FROM events"
