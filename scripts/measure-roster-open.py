#!/usr/bin/env python3
"""The roster-open figures for a cloned repository's roster (SPEC RO24, A6), for one
or more `advisor` binaries:

  globs    a project whose WATCHDOG.yml (about 223 KB) lists 10,000 `when.paths` globs
           over ten entries; 8 `session/open` on it, one after the other: the server's
           resident memory (VmRSS) before the first and after the eighth, and the time
           each open took;
  threads  10,000 `session/open` written at once (pipelined) on one project with a
           WATCHDOG.md and a small WATCHDOG.yml: the server's thread count before, the
           most seen while they open (sampled every 20 ms), and after the last answer.

usage: scripts/measure-roster-open.py globs|threads BIN [BIN ...]
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def project(roster_text):
    root = tempfile.mkdtemp()
    repo = os.path.join(root, "repo")
    os.makedirs(os.path.join(repo, ".git"))
    os.makedirs(os.path.join(root, "agent"))
    with open(os.path.join(repo, "WATCHDOG.md"), "w") as f:
        f.write("Watch the migrations.\n")
    with open(os.path.join(repo, "WATCHDOG.yml"), "w") as f:
        f.write(roster_text)
    return root, repo


class Server:
    def __init__(self, binary, home):
        env = dict(os.environ, HOME=home, PI_CODING_AGENT_DIR=os.path.join(home, "agent"))
        self.proc = subprocess.Popen([binary, "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     cwd=home, env=env)
        self.answers = {}
        self.cond = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "id" in msg:
                with self.cond:
                    self.answers[msg["id"]] = msg
                    self.cond.notify_all()

    def write(self, lines):
        self.proc.stdin.write(b"".join(lines))
        self.proc.stdin.flush()

    def wait(self, ids, timeout=600):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not all(i in self.answers for i in ids):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{sum(i in self.answers for i in ids)} of {len(ids)}")
                self.cond.wait(left)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def open_line(i, repo):
    return (json.dumps({"jsonrpc": "2.0", "id": i, "method": "session/open",
                        "params": {"sessionId": f"s{i}", "cwd": repo}},
                       separators=(",", ":")) + "\n").encode()


def globs(binary):
    lines = ["advisors:\n"]
    for entry in range(10):
        lines.append(f"  - name: Reviewer {entry}\n    model: openai/gpt-5\n    when:\n     paths:\n")
        for i in range(1_000):
            lines.append(f"      - s{entry}/m{i:04d}/*.rs\n")
    text = "".join(lines)
    home, repo = project(text)
    server = Server(binary, home)
    time.sleep(0.5)
    before = status_kb(server.proc.pid, "VmRSS")
    times = []
    for i in range(1, 9):
        start = time.monotonic()
        server.write([open_line(i, repo)])
        server.wait([i])
        times.append(time.monotonic() - start)
        if "error" in server.answers[i]:
            print("open failed:", server.answers[i]["error"])
    after = status_kb(server.proc.pid, "VmRSS")
    warnings = len(server.answers[1].get("result", {}).get("roster", {}).get("warnings", []))
    server.close()
    print(f"{binary}: WATCHDOG.yml of {len(text) / 1000:.0f} KB, 10,000 globs; 8 sessions: "
          f"RSS {before / 1024:.0f} MB -> {after / 1024:.0f} MB "
          f"(+{(after - before) / 1024:.0f} MB); opens took "
          f"{', '.join(f'{t:.2f}' for t in times)} s; {warnings} roster warnings")


def threads(binary, count=10_000):
    text = ("advisors:\n  - name: Architecture\n    model: openai/gpt-5\n"
            "  - name: Migrations\n    model: openai/gpt-5\n    when: {paths: [\"db/**\"]}\n")
    home, repo = project(text)
    server = Server(binary, home)
    time.sleep(0.5)
    pid = server.proc.pid
    before = status_kb(pid, "Threads")
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], status_kb(pid, "Threads"))
            except OSError:
                return
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.monotonic()
    server.write([open_line(i, repo) for i in range(1, count + 1)])
    server.wait(range(1, count + 1))
    wall = time.monotonic() - start
    done.set()
    sampler.join()
    after = status_kb(pid, "Threads")
    failed = sum(1 for i in range(1, count + 1) if "error" in server.answers[i])
    server.close()
    print(f"{binary}: {count} pipelined session/open ({failed} failed) in {wall:.1f} s: "
          f"threads {before} before, {peak[0]} at most while opening, {after} after")


if __name__ == "__main__":
    mode, binaries = sys.argv[1], sys.argv[2:]
    for b in binaries:
        {"globs": globs, "threads": threads}[mode](b)
