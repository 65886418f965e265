#!/usr/bin/env python3
"""The memory figures for `advisor serve` (V4), peak resident memory of the
server process (VmHWM) under two loads, for one or more binaries:

  flood   a client writes N `initialize` requests (default 1,000,000) and never reads
          its standard output (item 10: the outgoing queue must be bounded and the server
          must stop reading while it is full);
  empty   one `session/turnEnd` line of about 64 MiB holding 2.3 million empty messages
          (item 9: what a held message costs), then `session/status` to show the server
          still serves.

usage: scripts/measure-serve-memory.py flood|empty BIN [BIN ...]
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def hwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def flood(binary, count=1_000_000, settle=float(os.environ.get("SETTLE", "15"))):
    proc = subprocess.Popen([binary, "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'
    written = [0]

    def write():
        try:
            batch = line * 1000
            for _ in range(count // 1000):
                proc.stdin.write(batch)
                written[0] += 1000
            proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    deadline = time.monotonic() + settle
    peak = 0
    while time.monotonic() < deadline and proc.poll() is None:
        peak = max(peak, hwm_kb(proc.pid))
        time.sleep(0.2)
        if written[0] >= count and not writer.is_alive():
            # Everything was taken in: let the server settle a little longer.
            deadline = min(deadline, time.monotonic() + 3)
    peak = max(peak, hwm_kb(proc.pid))
    proc.kill()
    proc.wait()
    print(f"{binary}: flood of {count} initialize, never read: "
          f"{written[0]} requests accepted by the pipe in {settle:.0f} s, peak RSS {peak / 1024:.0f} MB")


def empty(binary, messages=2_300_000):
    work = tempfile.mkdtemp()
    proc = subprocess.Popen([binary, "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=work)
    out = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()

    def send(obj):
        proc.stdin.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
        proc.stdin.flush()

    send({"jsonrpc": "2.0", "id": 1, "method": "session/open",
          "params": {"sessionId": "s", "cwd": work, "settings": {"enabled": False}}})
    empty_message = b'{"role":"user","content":""},'
    head = b'{"jsonrpc":"2.0","id":2,"method":"session/turnEnd","params":{"sessionId":"s","base":null,"leaf":"a","messages":['
    body = empty_message * messages
    line = head + body[:-1] + b"]}}\n"
    start = time.monotonic()
    proc.stdin.write(line)
    proc.stdin.flush()
    send({"jsonrpc": "2.0", "id": 3, "method": "session/status", "params": {"sessionId": "s"}})
    peak = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        peak = max(peak, hwm_kb(proc.pid))
        if sum(1 for l in out if b'"id":3' in l) >= 1:
            break
        time.sleep(0.1)
    wall = time.monotonic() - start
    peak = max(peak, hwm_kb(proc.pid))
    with open(f"/proc/{proc.pid}/status") as f:
        rss = next((int(l.split()[1]) for l in f if l.startswith("VmRSS:")), 0)
    replies = {json.loads(l).get("id"): json.loads(l) for l in out if l.strip()}
    turn = replies.get(2, {})
    status = replies.get(3, {})
    verdict = "ok" if "result" in turn else turn.get("error", {}).get("message", "no reply")
    serving = "serving" if "result" in status else "NOT serving"
    print(f"{binary}: turnEnd of {len(line) / 2**20:.1f} MiB with {messages} empty messages: "
          f"{verdict[:160]}; peak RSS {peak / 1024:.0f} MB, RSS after {rss / 1024:.0f} MB, "
          f"{wall:.1f} s; then {serving}")
    proc.stdin.close()
    proc.wait(timeout=10)


if __name__ == "__main__":
    mode, binaries = sys.argv[1], sys.argv[2:]
    for b in binaries:
        {"flood": flood, "empty": empty}[mode](b)
