#!/bin/sh
# Fails when a tracked C++ file is not formatted as .clang-format says.
#   scripts/format-check.sh          check (exit 1 and the files' names when not)
#   scripts/format-check.sh --fix    format them in place
# The tree is formatted with Debian 12's clang-format (14); other major versions
# break some lines differently, so the check names the version it ran.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
fmt=${CLANG_FORMAT:-clang-format}
if ! command -v "$fmt" >/dev/null 2>&1; then
  echo "format-check: $fmt not found (Debian: apt-get install clang-format; macOS: brew install clang-format)" >&2
  exit 2
fi
version=$("$fmt" --version | sed -n 's/.*version \([0-9][0-9]*\).*/\1/p')
[ "$version" = 14 ] || echo "format-check: $fmt is version $version; the tree is formatted with 14 (Debian 12), some lines may differ" >&2
files=$(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--fix" ]; then
  # shellcheck disable=SC2086
  "$fmt" -i $files
  exit 0
fi
bad=""
for f in $files; do
  "$fmt" --dry-run --Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
  echo "format-check: not formatted as .clang-format says (fix: scripts/format-check.sh --fix):"
  for f in $bad; do echo "  $f"; done
  exit 1
fi
echo "format-check: $(echo "$files" | wc -l) files formatted (clang-format $version)"
