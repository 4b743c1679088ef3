#!/bin/sh
# Formula/soakd.rb: valid Ruby, and its service block generates (by Homebrew's
# rules, tests/homebrew/service_plist.rb) the LaunchAgent that launchd/ ships.
# Exit 77 (skipped) without ruby; CI installs it.
set -eu
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
if ! command -v ruby >/dev/null 2>&1; then
  echo "skipped: ruby is not installed (apt-get install ruby; macOS ships it)"
  exit 77
fi
ruby -c "$root/Formula/soakd.rb"
ruby "$root/tests/homebrew/service_plist.rb" "$root"
