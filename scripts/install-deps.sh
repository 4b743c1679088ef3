#!/bin/sh
# Installs what soakd needs to build and test: a C++20 compiler, CMake,
# pkg-config and the libraries (libuv, libcurl, SQLite, nlohmann_json, spdlog,
# Catch2), from the system package manager. Debian/Ubuntu: apt-get.
# macOS: Homebrew. Nothing is downloaded by the build itself.
set -eu

if [ "$(uname -s)" = Darwin ]; then
  if ! command -v brew >/dev/null 2>&1; then
    echo "install-deps: Homebrew is needed on macOS (https://brew.sh)" >&2
    exit 1
  fi
  brew install cmake pkg-config libuv curl sqlite nlohmann-json spdlog catch2
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: no apt-get here; install by hand: g++ (C++20), cmake, pkg-config, libuv, libcurl, sqlite3, nlohmann-json, spdlog, catch2" >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "install-deps: run as root or install sudo" >&2
    exit 1
  fi
fi

PKGS="g++ make cmake pkg-config libuv1-dev libcurl4-openssl-dev libsqlite3-dev sqlite3 \
nlohmann-json3-dev libspdlog-dev catch2 libplist-utils"

missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "install-deps: installing$missing"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # shellcheck disable=SC2086
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
