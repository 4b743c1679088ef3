#!/bin/sh
# Install, uninstall or restart soakd as a launchd job on macOS.
#
#   launchd/install.sh install   [--daemon] [--bin PATH] [--config FILE] [--user NAME]
#   launchd/install.sh uninstall [--daemon]
#   launchd/install.sh restart   [--daemon]
#   launchd/install.sh render    [--daemon] [--bin PATH] [--config FILE] [--user NAME]
#
# Default: a LaunchAgent for the logged-in user (local runtimes run as that user),
# loaded with `launchctl bootstrap gui/<uid>`. --daemon: a LaunchDaemon that starts
# at boot without a login, still running as --user (never root), loaded with
# `sudo launchctl bootstrap system`. The store and logs live under the user's
# ~/Library/Application Support/soakd and ~/Library/Logs/soakd and are kept on
# uninstall. `render` prints the filled-in plist and touches nothing.
set -eu

LABEL=org.soakd.soakd
here=$(cd "$(dirname "$0")" && pwd)

action=${1:-}
case "$action" in
  -h|--help) action=help ;;
esac
[ -n "$action" ] && shift || true
kind=agent
bin=""
config=""
user=$(id -un)
while [ $# -gt 0 ]; do
  case "$1" in
    --daemon) kind=daemon ;;
    --bin) bin=$2; shift ;;
    --config) config=$2; shift ;;
    --user) user=$2; shift ;;
    -h|--help) action=help ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }

case "$action" in
  install|uninstall|restart|render) ;;
  help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac

# The user's home, also when run with sudo for --daemon.
home=$(eval echo "~$user")
case "$home" in "~"*) home="/Users/$user" ;; esac
state_dir="$home/Library/Application Support/soakd"
log_dir="$home/Library/Logs/soakd"
[ -n "$config" ] || config="$state_dir/soakd.json"
if [ -z "$bin" ]; then
  bin=$(command -v soakd 2>/dev/null || true)
  [ -n "$bin" ] || bin=/opt/homebrew/bin/soakd
fi

if [ "$kind" = daemon ]; then
  plist_dir=/Library/LaunchDaemons
  domain=system
else
  plist_dir="$home/Library/LaunchAgents"
  domain="gui/$(id -u "$user" 2>/dev/null || echo unknown-user)"
fi
plist="$plist_dir/$LABEL.plist"

xml_escape() { printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'; }
# Escapes a value for the replacement side of s|...|...| (after XML escaping).
sed_value() { xml_escape "$1" | sed -e 's/[|\\&]/\\&/g'; }

render() {
  sed -e "s|@SOAKD_BIN@|$(sed_value "$bin")|g" \
      -e "s|@CONFIG@|$(sed_value "$config")|g" \
      -e "s|@STATE_DIR@|$(sed_value "$state_dir")|g" \
      -e "s|@LOG_DIR@|$(sed_value "$log_dir")|g" \
      -e "s|@HOME@|$(sed_value "$home")|g" \
      -e "s|@USER@|$(sed_value "$user")|g" \
      "$here/$LABEL.$kind.plist.in"
}

need_macos() {
  if [ "$(uname -s)" != Darwin ]; then
    echo "install.sh: launchd is macOS only (use 'render' to see the plist here)" >&2
    exit 1
  fi
}

case "$action" in
  render)
    render
    ;;
  install)
    need_macos
    [ -x "$bin" ] || { echo "install.sh: soakd not found at $bin (pass --bin PATH)" >&2; exit 1; }
    [ -f "$config" ] || { echo "install.sh: no config at $config (copy examples/soakd.example.json there, or pass --config FILE)" >&2; exit 1; }
    "$bin" check-config "$config"
    mkdir -p "$state_dir" "$log_dir"
    chmod 700 "$state_dir"
    tmp=$(mktemp)
    render > "$tmp"
    plutil -lint "$tmp" >/dev/null
    if [ "$kind" = daemon ]; then
      chown "$user" "$state_dir" "$log_dir"
      launchctl bootout "$domain/$LABEL" 2>/dev/null || true
      install -m 644 -o root -g wheel "$tmp" "$plist"
    else
      mkdir -p "$plist_dir"
      launchctl bootout "$domain/$LABEL" 2>/dev/null || true
      install -m 644 "$tmp" "$plist"
    fi
    rm -f "$tmp"
    launchctl bootstrap "$domain" "$plist"
    launchctl kickstart -k "$domain/$LABEL"
    echo "soakd installed as $domain/$LABEL ($plist); logs in $log_dir"
    ;;
  uninstall)
    need_macos
    launchctl bootout "$domain/$LABEL" 2>/dev/null || true
    rm -f "$plist"
    echo "soakd uninstalled ($plist removed; store and logs kept in $state_dir and $log_dir)"
    ;;
  restart)
    need_macos
    launchctl kickstart -k "$domain/$LABEL"
    ;;
esac
