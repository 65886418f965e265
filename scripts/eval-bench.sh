#!/usr/bin/env bash
# The eval's overhead (§18 acceptance): the whole corpus with an instant scripted advisor,
# --jobs 4 (default), then each case alone for its peak RSS. Prints the figures; changes nothing.
#
#   scripts/eval-bench.sh [CORPUS] [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
corpus="${1:-evals/corpus}"
jobs="${2:-4}"
cargo build --release --example eval_overhead >/dev/null 2>&1
bin=target/release/examples/eval_overhead
echo "whole corpus, --jobs $jobs, $(nproc) cores:"
for i in 1 2 3; do "$bin" "$corpus" --jobs "$jobs"; done
echo "no case (the process's own baseline):"
"$bin" "$corpus" --jobs 1 --only ''
echo "each case alone (peak RSS of the process running it):"
max=0; total=0; n=0
for dir in "$corpus"/*/; do
  [ -f "$dir/case.yml" ] || continue
  id=$(sed -n 's/^id: *//p' "$dir/case.yml" | head -1)
  line=$("$bin" "$corpus" --jobs 1 --only "$id")
  kib=$(echo "$line" | sed -n 's/.*peak-rss \([0-9]*\) KiB.*/\1/p')
  total=$((total + kib)); n=$((n + 1))
  if [ "$kib" -gt "$max" ]; then max=$kib; maxid=$id; fi
done
echo "cases $n, peak RSS per case: mean $((total / n)) KiB, max $max KiB ($maxid)"
