#!/usr/bin/env bash
# The hardening figures (caps, silence limit, memory) for one or more `advisor` binaries (e.g. a build from before
# the hardening and the current one), measured in one run:
#   1. `advisor render` of a 100 MB single-line session: peak resident memory and wall time;
#   2. `advisor replay` of examples/sessions/median-fix.jsonl against a server that drips one
#      byte every 3 s: wall time and the final status line.
# usage: scripts/measure-hardening.sh BIN [BIN ...]
# env: REQUEST_TIMEOUT_SECS (written as advisor.requestTimeoutSecs for the replay; unset =
#      the default), DRAIN_TIMEOUT (replay --drain-timeout, default 120)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT

# A valid header and one 100 MB message line.
python3 - "$work/big.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"type": "session", "version": 3, "id": "big", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/tmp"}) + "\n")
    text = "x" * (100 * 1024 * 1024)
    f.write(json.dumps({"type": "message", "id": "m1", "parentId": None, "timestamp": "2025-01-01T00:00:01Z",
                        "message": {"role": "user", "content": text, "timestamp": 1}}))
PY
ls -l "$work/big.jsonl" | awk '{printf "session file: %d bytes, one line after the header\n", $5}'

mkdir -p "$work/agent" "$work/root/.omp"
if [ -n "${REQUEST_TIMEOUT_SECS:-}" ]; then
  printf 'advisor:\n  enabled: true\n  requestTimeoutSecs: %s\n' "$REQUEST_TIMEOUT_SECS" > "$work/root/.omp/config.yml"
fi
cp -r examples/sessions/median-fix "$work/root/median-fix" 2>/dev/null || true
python3 scripts/drip-server.py "$work/port" 3 3600 &
server=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

for bin in "$@"; do
  echo "== $bin"
  /usr/bin/time -f "render 100 MB line: peak RSS %M KB, wall %e s, exit %x" \
    "$bin" render "$work/big.jsonl" > /dev/null 2> "$work/render.err" || true
  grep -v '^$' "$work/render.err" | tail -3
  start=$(date +%s.%N)
  PI_CODING_AGENT_DIR="$work/agent" timeout 3000 "$bin" replay examples/sessions/median-fix.jsonl \
    --root "$work/root" --model local/drip --base-url "http://127.0.0.1:$port/v1" \
    --api openai-completions --drain-timeout "${DRAIN_TIMEOUT:-120}" \
    > "$work/replay.out" 2> "$work/replay.err" || echo "replay exit $?"
  end=$(date +%s.%N)
  python3 -c "print(f'replay against a 1-byte-per-3-s drip: wall {float($end) - float($start):.1f} s')"
  grep -iE "failure|status|paused|reviews|calls" "$work/replay.out" "$work/replay.err" | tail -4 || true
done
