#!/usr/bin/env bash
# The eval's overhead (§18 acceptance): `cargo bench --bench eval_overhead` — criterion times
# the whole shipped corpus with an instant scripted advisor, --jobs 4, then each case runs
# alone in a child process for its peak RSS. Prints the figures; changes nothing.
#
#   scripts/eval-bench.sh [criterion args…]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --bench eval_overhead -- "$@"
