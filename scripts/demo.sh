#!/bin/sh
# The demo: builds soakd, soakctl and the fake runtime (only what it runs, not
# the test suite), starts two fake runtimes (one healthy llama.cpp
# build, one overnight update that decodes 10x slower at 95 % draft acceptance),
# runs the daemon with examples/demo.json, which launches the third itself as a
# managed candidate (an oMLX server whose stream hangs after HTTP 200), time
# compressed to about three minutes, until every candidate has a verdict; then
# shows what soakctl and sqlite3 say.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
export SOAKD_BUILD_DIR=${SOAKD_BUILD_DIR:-$top/build}
"$top/scripts/build.sh" --target soakd soakctl soak-fake-runtime
b=$SOAKD_BUILD_DIR
demo="$b/demo"
cfg="$top/examples/demo.json"
fake="$b/tests/fake_runtime/soak-fake-runtime"
rm -rf "$demo"
mkdir -p "$demo"

pids=""
cleanup() { [ -z "$pids" ] || kill $pids 2>/dev/null || true; }
trap cleanup EXIT INT TERM

start_fake() {  # name, then soak-fake-runtime arguments
  name=$1
  shift
  "$fake" "$@" > "$demo/$name.out" 2> "$demo/$name.err" &
  pids="$pids $!"
  tries=0
  until grep -q '^listening on' "$demo/$name.out" 2>/dev/null; do
    tries=$((tries + 1))
    if [ $tries -gt 100 ] || ! kill -0 $! 2>/dev/null; then
      echo "demo: the fake runtime '$name' did not start:" >&2
      cat "$demo/$name.err" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "  $name: $(cat "$demo/$name.out") ($*)"
}

echo "== fake runtimes"
start_fake llama-b9430 --listen 127.0.0.1:18431:healthy --build b9430-5bec3532f --token-interval-ms 4
start_fake llama-b9502 --listen 127.0.0.1:18432:draft-slowdown --build b9502-64f7e03 --token-interval-ms 4 --draft-slowdown 10
echo "  omlx-35b: started by soakd itself from its launch block in examples/demo.json (a managed candidate)"
echo
echo "== soakd check-config examples/demo.json"
"$b/daemon/soakd" check-config "$cfg"
echo
echo "== soakd run (until every candidate has a verdict; about three minutes)"
"$b/daemon/soakd" run --config "$cfg" --log-stderr --exit-when-settled
echo
echo "== the managed runtime: what soakd launched, how it ended (soakctl history omlx-35b)"
"$b/soakctl/soakctl" --config "$cfg" history omlx-35b | grep -A2 'runtime launched' || true
echo "  its output: $demo/omlx-35b.runtime.log ($(wc -l < "$demo/omlx-35b.runtime.log") lines)"
echo
echo "== soakctl status"
"$b/soakctl/soakctl" --config "$cfg" status
echo
echo "== soakctl explain llama-b9502   (recomputed from the stored rows; first lines)"
"$b/soakctl/soakctl" --config "$cfg" explain llama-b9502 | head -n 16 || true
echo
echo "== soakctl verdict, as a script would ask"
for who in "--model qwen3.6-35b-a3b --runtime llama.cpp --build b9430-5bec3532f" \
           "--model qwen3.6-35b-a3b --runtime llama.cpp --build b9502-64f7e03"; do
  set +e
  # shellcheck disable=SC2086
  "$b/soakctl/soakctl" --config "$cfg" verdict $who
  echo "  (exit code $?)"
  set -e
done
echo
echo "== sqlite3: SELECT ... FROM promotion_status"
sqlite3 -header -column "$demo/soakd.db" \
  "SELECT candidate, runtime, build, verdict, stage, substr(reason, 1, 60) AS reason FROM promotion_status ORDER BY candidate"
echo
echo "The store is $demo/soakd.db; the daemon's log went to the terminal above."
