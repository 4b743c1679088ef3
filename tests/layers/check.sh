#!/bin/sh
# The layer check: every project include points down (docs/DESIGN.md §4.1).
#
#   core <- platform, storage, probes/transport, judges
#        <- detectors, probes, schedules, reports <- campaigns <- managed
#        <- soakctl, daemon
#
# Each library folder may include from itself and from the folders listed for
# it below, nothing else; an include of a folder that is not in the table fails
# too, so a new folder must be placed before it can be used. Tests may include
# anything. Usage: check.sh [SOURCE_ROOT]   (default: the repository).
# Exit 0 when every include points down; 1 with one line per violation.
set -eu
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}

allowed() {  # folder -> the folders it may include besides itself
  case "$1" in
    core) echo "" ;;
    platform) echo "core" ;;
    detectors) echo "core platform" ;;
    storage) echo "core" ;;
    probes/transport) echo "core" ;;
    probes) echo "core probes/transport" ;;
    judges) echo "core" ;;
    schedules) echo "core judges" ;;
    reports) echo "core storage judges" ;;
    campaigns) echo "core storage probes/transport probes judges schedules" ;;
    managed) echo "core platform storage probes/transport probes campaigns" ;;
    soakctl) echo "core storage probes/transport probes judges schedules reports campaigns" ;;
    daemon) echo "core platform detectors storage probes/transport probes judges schedules reports campaigns managed" ;;
    *) return 1 ;;
  esac
}

folder_of() {  # path relative to root -> its layer folder (probes/transport before probes)
  case "$1" in
    probes/transport/*) echo probes/transport ;;
    */*) echo "${1%%/*}" ;;
    *) echo "" ;;
  esac
}

bad=0
checked=0
for layer in core platform detectors storage probes/transport probes judges schedules reports campaigns managed soakctl daemon; do
  [ -d "$root/$layer" ] || continue
  for f in $(cd "$root" && find "$layer" -type f \( -name '*.h' -o -name '*.cc' \) | sort); do
    [ "$(folder_of "$f")" = "$layer" ] || continue   # probes/transport files are checked as their own layer
    checked=$((checked + 1))
    ok="$layer $(allowed "$layer")"
    # "#include "x/y.h"" lines, with their line numbers
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' "$root/$f" 2>/dev/null |
      sed 's/^\([0-9]*\):.*"\([^"]*\)".*/\1 \2/' > "${TMPDIR:-/tmp}/layers.$$" || true
    while read -r line inc; do
      target=$(folder_of "$inc")
      hit=0
      for a in $ok; do [ "$a" = "$target" ] && hit=1; done
      if [ $hit -eq 0 ]; then
        if allowed "$target" >/dev/null 2>&1; then
          echo "$f:$line: includes \"$inc\": $layer may include only from: $ok (an include must point down)"
        else
          echo "$f:$line: includes \"$inc\": \"$target\" is not a layer folder (place it in tests/layers/check.sh first)"
        fi
        bad=$((bad + 1))
      fi
    done < "${TMPDIR:-/tmp}/layers.$$"
    rm -f "${TMPDIR:-/tmp}/layers.$$"
  done
done

if [ $checked -eq 0 ]; then
  echo "layers: no source files under $root" >&2
  exit 2
fi
if [ $bad -gt 0 ]; then
  echo "layers: $bad include(s) point the wrong way in $checked file(s)"
  exit 1
fi
echo "layers: $checked files, every include points down"
