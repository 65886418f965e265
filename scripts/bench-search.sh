#!/usr/bin/env bash
# Times the advisor's `search` (a literal and a regex) and `find '**/*.rs'` over a large tree,
# next to ripgrep with the same pattern and the same filters, in one run.
#
#   scripts/bench-search.sh [TREE]      # default tree: the cargo registry sources
#   RUNS=7 scripts/bench-search.sh      # runs per command (median reported), default 5
#   CRITERION=1 scripts/bench-search.sh # also run `cargo bench --bench search`
#
# Each command runs once to warm the page cache, then RUNS times; the median wall time is
# printed with the ratio advisor / ripgrep. The two commands of a case alternate run by run. ripgrep is installed when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

TREE="${1:-${CARGO_HOME:-$HOME/.cargo}/registry/src}"
RUNS="${RUNS:-5}"
[ -d "$TREE" ] || { echo "bench-search: no tree at $TREE" >&2; exit 1; }

if ! command -v rg >/dev/null 2>&1; then
    echo "installing ripgrep..." >&2
    if command -v apt-get >/dev/null 2>&1; then
        apt-get install -y ripgrep >/dev/null 2>&1 || cargo install ripgrep --locked
    else
        cargo install ripgrep --locked
    fi
fi

cargo build --release --bin advisor >&2
BIN="$PWD/target/release/advisor"
OUT="$(mktemp)"
trap 'rm -f "$OUT"' EXIT

# seconds CMD...: wall time of one run, output drained into a file.
seconds() {
    local start end
    start=$(date +%s.%N)
    "$@" >"$OUT" 2>/dev/null || true
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
}

median() {
    printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}

# compare LABEL: runs the commands in the arrays OURS and THEIRS alternately (so load from
# elsewhere hits both alike), RUNS times each after one warm-up, and prints both medians and
# their ratio.
compare() {
    local label="$1" ours=() theirs=()
    "${OURS[@]}" >"$OUT" 2>/dev/null || true
    "${THEIRS[@]}" >"$OUT" 2>/dev/null || true
    for _ in $(seq "$RUNS"); do
        ours+=("$(seconds "${OURS[@]}")")
        theirs+=("$(seconds "${THEIRS[@]}")")
    done
    local a b
    a=$(median "${ours[@]}")
    b=$(median "${theirs[@]}")
    printf '%-34s %10s %10s %8s\n' "$label" "$a" "$b" "$(echo "$a / $b" | bc -l | xargs printf '%.2f')"
}

# The filters of our `search`: hidden files, ignore files outside git repositories too, no
# `.git`, files over 4 MB skipped, context 1 before / 3 after, at most 201 matches per file.
RG_SEARCH=(rg --hidden --no-require-git --glob '!.git' --max-filesize 4M -n -B1 -A3 -m 201 --no-messages)

files=$(rg --files --hidden --no-require-git --glob '!.git' "$TREE" | wc -l)
size=$(du -sh "$TREE" | cut -f1)
echo "tree: $TREE ($files files, $size), $(nproc) cores, median of $RUNS runs, $(rg --version | head -1)"
printf '%-34s %10s %10s %8s\n' "case" "advisor s" "rg s" "ratio"

search_case() {
    local label="$1" pattern="$2" args
    args=$(printf '%s' "$pattern" | python3 -c 'import json,sys; print(json.dumps({"pattern": sys.stdin.read()}))')
    OURS=("$BIN" tool search --root "$TREE" --args "$args")
    THEIRS=("${RG_SEARCH[@]}" -e "$pattern" "$TREE")
    compare "search $label: $pattern"
}

search_case literal 'unsafe impl'
search_case regex 'fn \w+_mut\(&mut self'

OURS=("$BIN" tool find --root "$TREE" --args '{"paths": "**/*.rs", "limit": 200, "timeout": 60}')
THEIRS=(rg --files --hidden --no-require-git --glob '!.git' --glob '*.rs' "$TREE")
compare "find **/*.rs (rg --files -g)"

if [ "${CRITERION:-0}" = 1 ]; then
    ADVISOR_BENCH_TREE="$TREE" cargo bench --bench search
fi
