#!/bin/sh
# soakctl loads only what it reads the store with (soakctl/CMakeLists.txt):
# SQLite and the C library, never libuv, spdlog, fmt or libcurl, which only the
# daemon's loop, logger and transport need; with --static-cxx (GNU/Linux
# builds outside the sanitizers) not libstdc++ or libgcc_s either.
# Usage: links_lean.sh PROGRAM [--static-cxx]
# Exit 0 when the program's shared libraries are as above, 1 naming each one
# that is not, 77 (skipped) where no tool here lists them.
set -eu
prog=$1
static_cxx=${2:-}
[ -x "$prog" ] || { echo "links_lean: no program at $prog" >&2; exit 2; }

if command -v readelf >/dev/null 2>&1 && [ "$(uname -s)" != Darwin ]; then
  readelf -h "$prog" >/dev/null 2>&1 || { echo "links_lean: $prog is not a program readelf can read" >&2; exit 2; }
  libs=$(readelf -d "$prog" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
elif command -v otool >/dev/null 2>&1; then
  libs=$(otool -L "$prog" | sed -n '2,$s/^[[:space:]]*\([^ ]*\).*/\1/p' | sed 's#.*/##')
else
  echo "links_lean: neither readelf nor otool here to list $prog's libraries; skipped"
  exit 77
fi
[ -n "$libs" ] || { echo "links_lean: found no shared libraries in $prog (not a dynamic program?)" >&2; exit 2; }

unwanted='libuv libspdlog libfmt libcurl'
[ "$static_cxx" = --static-cxx ] && unwanted="$unwanted libstdc++ libgcc_s"
bad=0
for lib in $libs; do
  for u in $unwanted; do
    case "$lib" in
      "$u"*) echo "$prog loads $lib, which it should not (soakctl/CMakeLists.txt)"; bad=$((bad + 1)) ;;
    esac
  done
done
echo "links_lean: $(basename "$prog") loads:" $libs
[ $bad -eq 0 ]
