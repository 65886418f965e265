#!/usr/bin/env bash
# The review-core figures: advisor requests and tokens per session for
# tests/fixtures/pi-sessions/before-compaction.jsonl replayed (`advisor replay`) against
# scripts/review-core-server.py, a scripted OpenAI-compatible advisor that reports usage,
# in three configurations, one run each:
#   compact-interrupt  transcript: compact,  policy: interrupt, evictStaleResults: false
#   expanded-defer     transcript: expanded, policy: defer,     evictStaleResults: true
#   expanded-defer-noevict  the same with evictStaleResults: false
# The scripted advisor reads WORKSPACE_FILE (a generated 300-line file in the replay's root) on
# every EVERY-th review and then advises, alternating concern and nit; the other reviews
# answer with no tool call. See the server's docstring for how it counts tokens.
#
# usage: scripts/measure-review-core.sh [BIN]   (default target/release/advisor)
# env: EVERY (default 5), CONFIGS (space-separated subset of the names above),
#      KEEP=DIR (keep each run's files there: replay output, settings, server summary)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/advisor}
session=tests/fixtures/pi-sessions/before-compaction.jsonl
every=${EVERY:-5}
configs=${CONFIGS:-"compact-interrupt expanded-defer expanded-defer-noevict"}
work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  if [ -z "${KEEP:-}" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

settings() {
  case "$1" in
    compact-interrupt) echo "compact interrupt false" ;;
    expanded-defer) echo "expanded defer true" ;;
    expanded-defer-noevict) echo "expanded defer false" ;;
    *) echo "unknown configuration $1" >&2; exit 2 ;;
  esac
}

for name in $configs; do
  read -r transcript policy evict <<< "$(settings "$name")"
  run="$work/$name"
  rm -rf "$run"
  mkdir -p "$run/agent" "$run/root/.omp" "$run/root/notes"
  printf 'advisor:\n  enabled: true\n  transcript: %s\n  policy: %s\n  evictStaleResults: %s\n' \
    "$transcript" "$policy" "$evict" > "$run/root/.omp/config.yml"
  # The file the scripted advisor reads: 300 numbered design notes, ~19 KB, the same every run.
  python3 -c '
import sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 301):
        f.write(f"{i:03d}. The module keeps its state in one struct; step {i} checks the invariant.\n")
' "$run/root/notes/design.md"
  python3 scripts/review-core-server.py "$run/port" "$run/server.json" "$every" notes/design.md &
  server=$!
  for _ in $(seq 100); do [ -s "$run/port" ] && break; sleep 0.1; done
  port=$(cat "$run/port")
  start=$(date +%s.%N)
  PI_CODING_AGENT_DIR="$run/agent" "$bin" replay "$session" --json --root "$run/root" \
    --model local/scripted --base-url "http://127.0.0.1:$port/v1" --api openai-completions \
    --drain-timeout 600 > "$run/replay.jsonl" 2> "$run/replay.err" || echo "replay exit $?" >&2
  end=$(date +%s.%N)
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=
  python3 - "$name" "$run" "$start" "$end" <<'PY'
import json, sys
name, run, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
srv = json.load(open(f"{run}/server.json"))
status, channels = {}, {}
for line in open(f"{run}/replay.jsonl"):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if "status" in o:
        status = o["status"]
    elif "channel" in o:
        channels[o["channel"]] = channels.get(o["channel"], 0) + 1
agent = status.get("agent", {})
life = agent.get("lifetime", {})
delivered = sum(v for k, v in channels.items() if k != "pending")
row = {
    "config": name,
    "requests (server)": srv["requests"],
    "modelCalls (status)": agent.get("modelCalls"),
    "reviews": agent.get("reviews"),
    "summary calls": srv["summaries"],
    "input tokens (server, incl. cached)": srv["prompt_tokens"],
    "cached (server)": srv["cached_tokens"],
    "uncached input (status)": life.get("input"),
    "output tokens": srv["completion_tokens"],
    "evictions": agent.get("evictions"),
    "evicted tokens": agent.get("evictedTokens"),
    "advisor compactions": agent.get("compactions"),
    "notes delivered": delivered,
    "by channel": channels,
    "notes dropped (status)": status.get("deliveries", {}).get("dropped", {}),
    "reads/advises/after-advise": f'{srv["reads"]}/{srv["advises"]}/{srv["after_advise"]}',
    "wall s": round(end - start, 1),
}
print(json.dumps(row))
PY
done
