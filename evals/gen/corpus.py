"""Building blocks for the eval corpus: a session builder that writes pi session files
(format version 3) and keeps a virtual workspace consistent with the tool calls.

Every case is a small Python function that drives a `Session`: user prompts, assistant
steps with tool calls (read, bash, edit, write, grep, find, ls) and their results. Reads,
greps and finds are answered from the virtual workspace; edits must match it (as pi's
edit tool demands) and change it; the workspace at the end of the session is written to
the case's `workspace/`. Ids, parent ids, timestamps, tool call ids and usage figures are
derived deterministically from the case id, so regenerating gives identical bytes.

Standard library only.
"""

import difflib
import fnmatch
import hashlib
import json
import os
import random
import re
import shutil

ANTHROPIC = ("anthropic", "claude-sonnet-4-5", "anthropic-messages")
OPENAI = ("openai", "gpt-5.1-codex", "openai-responses")
# $ per million tokens: input, output, cache read, cache write.
PRICES = {
    "claude-sonnet-4-5": (3.0, 15.0, 0.3, 3.75),
    "gpt-5.1-codex": (1.25, 10.0, 0.125, 0.0),
}


class CaseError(Exception):
    """A case definition that does not fit its own workspace (an edit that does not match)."""


# ---------------------------------------------------------------- tool calls


class Call:
    """One tool call; `run` computes its result against the workspace."""

    name = ""

    def args(self):
        raise NotImplementedError

    def run(self, fs):
        """Returns (text, is_error, details or None)."""
        raise NotImplementedError


class Read(Call):
    name = "read"

    def __init__(self, path, offset=None, limit=None, text=None):
        self.path, self.offset, self.limit, self.text = path, offset, limit, text

    def args(self):
        a = {"path": self.path}
        if self.offset is not None:
            a["offset"] = self.offset
        if self.limit is not None:
            a["limit"] = self.limit
        return a

    def run(self, fs):
        if self.text is not None:
            return self.text, False, None
        if self.path not in fs:
            return f"ENOENT: no such file or directory, access '{self.path}'", True, None
        lines = fs[self.path].split("\n")
        if fs[self.path].endswith("\n"):
            lines = lines[:-1]
        start = (self.offset or 1) - 1
        end = start + self.limit if self.limit else len(lines)
        body = "\n".join(lines[start:end])
        if end < len(lines):
            body += f"\n\n[{len(lines) - end} more lines in file. Use offset={end + 1} to continue]"
        return body, False, None


class Bash(Call):
    name = "bash"

    def __init__(self, command, output="", code=0, effect=None, timeout=None):
        self.command, self.output, self.code, self.effect = command, output, code, effect
        self.timeout = timeout

    def args(self):
        a = {"command": self.command}
        if self.timeout:
            a["timeout"] = self.timeout
        return a

    def run(self, fs):
        if self.effect:
            self.effect(fs)
        out = self.output.rstrip("\n")
        if self.code:
            out = (out + "\n\n" if out else "") + f"Command exited with code {self.code}"
        elif not out:
            out = "(no output)"
        return out, bool(self.code), None


def pi_diff(old, new, context=3):
    """pi's edit diff: numbered lines, `+`/`-` marks, `...` between hunks."""
    a, b = old.split("\n"), new.split("\n")
    width = len(str(max(len(a), len(b))))
    out = []
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for gi, group in enumerate(sm.get_grouped_opcodes(context)):
        if gi > 0 or group[0][1] > 0:
            out.append(" " * (width + 1) + "...")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i1, i2):
                    out.append(f" {str(j1 + k - i1 + 1).rjust(width)} {a[k]}")
                continue
            for k in range(i1, i2):
                out.append(f"-{str(k + 1).rjust(width)} {a[k]}")
            for k in range(j1, j2):
                out.append(f"+{str(k + 1).rjust(width)} {b[k]}")
    last = sm.get_grouped_opcodes(context)
    groups = list(last)
    if groups and groups[-1][-1][2] < len(a):
        out.append(" " * (width + 1) + "...")
    return "\n".join(out)


class Edit(Call):
    name = "edit"

    def __init__(self, path, old, new, fail=None):
        self.path, self.old, self.new, self.fail = path, old, new, fail

    def args(self):
        return {"path": self.path, "oldText": self.old, "newText": self.new}

    def run(self, fs):
        if self.fail:
            return self.fail, True, None
        text = fs.get(self.path)
        if text is None:
            raise CaseError(f"edit of missing file {self.path}")
        n = text.count(self.old)
        if n != 1:
            raise CaseError(f"edit of {self.path}: oldText found {n} times: {self.old[:60]!r}")
        after = text.replace(self.old, self.new)
        fs[self.path] = after
        msg = (
            f"Successfully replaced text in {self.path}. "
            f"Changed {len(self.old)} characters to {len(self.new)} characters."
        )
        return msg, False, {"diff": pi_diff(text, after)}


class Write(Call):
    name = "write"

    def __init__(self, path, content):
        self.path, self.content = path, content

    def args(self):
        return {"path": self.path, "content": self.content}

    def run(self, fs):
        fs[self.path] = self.content
        return f"Successfully wrote {len(self.content.encode())} bytes to {self.path}", False, None


class Grep(Call):
    name = "grep"

    def __init__(self, pattern, path=".", glob=None, ignore_case=False, text=None):
        self.pattern, self.path, self.glob, self.ignore_case = pattern, path, glob, ignore_case
        self.text = text

    def args(self):
        a = {"pattern": self.pattern, "path": self.path}
        if self.glob:
            a["glob"] = self.glob
        if self.ignore_case:
            a["ignoreCase"] = True
        return a

    def run(self, fs):
        if self.text is not None:
            return self.text, False, None
        rx = re.compile(self.pattern, re.I if self.ignore_case else 0)
        hits = []
        for path in sorted(fs):
            if self.path not in (".", "") and not (
                path == self.path or path.startswith(self.path.rstrip("/") + "/")
            ):
                continue
            if self.glob and not fnmatch.fnmatch(os.path.basename(path), self.glob):
                continue
            for no, line in enumerate(fs[path].split("\n"), 1):
                if rx.search(line):
                    hits.append(f"{path}:{no}: {line}")
        return ("\n".join(hits) if hits else "No matches found"), False, None


class Find(Call):
    name = "find"

    def __init__(self, pattern, path=".", text=None):
        self.pattern, self.path, self.text = pattern, path, text

    def args(self):
        return {"pattern": self.pattern, "path": self.path}

    def run(self, fs):
        if self.text is not None:
            return self.text, False, None
        pat = self.pattern
        hits = [
            p
            for p in sorted(fs)
            if (self.path in (".", "") or p.startswith(self.path.rstrip("/") + "/"))
            and (fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(os.path.basename(p), pat))
        ]
        return ("\n".join(hits) if hits else "No files found matching pattern"), False, None


class Ls(Call):
    name = "ls"

    def __init__(self, path="."):
        self.path = path

    def args(self):
        return {"path": self.path}

    def run(self, fs):
        base = "" if self.path in (".", "") else self.path.rstrip("/") + "/"
        entries = set()
        for p in fs:
            if p.startswith(base):
                rest = p[len(base):]
                entries.add(rest.split("/")[0] + ("/" if "/" in rest else ""))
        return "\n".join(sorted(entries)) or "(empty directory)", False, None


# ---------------------------------------------------------------- the session


class Session:
    """Builds one pi v3 session; `turn` counts assistant messages (turn ends, as `render`)."""

    def __init__(self, case_id, project, files, model=ANTHROPIC, start="2025-10-14T09:00:00"):
        self.case_id = case_id
        self.rng = random.Random(case_id)
        self.fs = dict(files)
        self.provider, self.model, self.api = model
        self.cwd = f"/home/dev/{project}"
        h = hashlib.sha256(case_id.encode()).hexdigest()
        self.session_id = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"
        # Spread the cases over days so that no two share a clock.
        day = int(h[:4], 16) % 60
        self.clock = _epoch(start) + day * 86400 + (int(h[4:8], 16) % 28800)
        self.lines = []
        self.last_id = None
        self.counter = 0
        self.turn = 0
        self.marks = {}
        self.context = 3200 + self.rng.randint(0, 900)  # system prompt and tool schemas
        self.calls = 0
        self.orient = None  # a function that adds the opening look around, set by the case list
        self._header()

    # -- plumbing
    def _id(self):
        self.counter += 1
        return hashlib.sha256(f"{self.case_id}/{self.counter}".encode()).hexdigest()[:8]

    def _tick(self, lo=1.0, hi=4.0):
        self.clock += self.rng.uniform(lo, hi)
        return self.clock

    def _entry(self, kind, **fields):
        eid = self._id()
        e = {"type": kind, "id": eid, "parentId": self.last_id, "timestamp": _iso(self.clock)}
        e.update(fields)
        self.lines.append(e)
        self.last_id = eid
        return e

    def _header(self):
        self.lines.append(
            {
                "type": "session",
                "version": 3,
                "id": self.session_id,
                "timestamp": _iso(self.clock),
                "cwd": self.cwd,
            }
        )
        self._entry("model_change", provider=self.provider, modelId=self.model)
        self._entry("thinking_level_change", thinkingLevel="medium")

    def _call_id(self):
        self.calls += 1
        h = hashlib.sha256(f"{self.case_id}#call{self.calls}".encode()).hexdigest()
        if self.provider == "openai":
            return f"call_{h[:24]}|fc_{h[24:56]}"
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        n = int(h, 16)
        tail = ""
        for _ in range(22):
            n, r = divmod(n, len(alphabet))
            tail += alphabet[r]
        return "toolu_01" + tail

    def _usage(self, out_chars, new_chars):
        out = max(12, int(out_chars / 3.6) + self.rng.randint(4, 40))
        new = int(new_chars / 3.8) + self.rng.randint(20, 120)
        cached = self.context
        self.context += new + out
        pin, pout, pcr, pcw = PRICES[self.model]
        if self.provider == "anthropic":
            u = {"input": self.rng.randint(3, 9), "output": out, "cacheRead": cached, "cacheWrite": new}
        else:
            u = {"input": new, "output": out, "cacheRead": cached, "cacheWrite": 0}
        u["totalTokens"] = u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
        c = {
            "input": u["input"] * pin / 1e6,
            "output": u["output"] * pout / 1e6,
            "cacheRead": u["cacheRead"] * pcr / 1e6,
            "cacheWrite": u["cacheWrite"] * pcw / 1e6,
        }
        c = {k: round(v, 8) for k, v in c.items()}
        c["total"] = round(sum(c.values()), 8)
        u["cost"] = c
        return u

    # -- the public surface
    def user(self, text):
        first = not any(e.get("message", {}).get("role") == "user" for e in self.lines if e["type"] == "message")
        self._tick(20, 90)
        self._pending_user = len(text)
        self._entry(
            "message",
            message={"role": "user", "content": [{"type": "text", "text": text}], "timestamp": _ms(self.clock)},
        )
        if first and self.orient:
            self.orient(self)
        return self

    def step(self, text=None, calls=(), think=None, mark=None):
        """One assistant message and the results of its tool calls: one turn end."""
        content = []
        out_chars = 0
        if think:
            content.append({"type": "thinking", "thinking": think})
            out_chars += len(think)
        if text:
            content.append({"type": "text", "text": text})
            out_chars += len(text)
        ids = []
        for c in calls:
            cid = self._call_id()
            ids.append(cid)
            content.append({"type": "toolCall", "id": cid, "name": c.name, "arguments": c.args()})
            out_chars += len(json.dumps(c.args()))
        new_chars = getattr(self, "_pending_user", 0) + getattr(self, "_pending_results", 0)
        self._pending_user = 0
        self._tick(2, 9 + out_chars / 300)
        usage = self._usage(out_chars, new_chars)
        self._entry(
            "message",
            message={
                "role": "assistant",
                "content": content,
                "api": self.api,
                "provider": self.provider,
                "model": self.model,
                "usage": usage,
                "stopReason": "toolUse" if calls else "stop",
                "timestamp": _ms(self.clock),
            },
        )
        self.turn += 1
        results = 0
        for c, cid in zip(calls, ids):
            text_out, is_error, details = c.run(self.fs)
            results += len(text_out)
            self._tick(0.05, 2.5 if c.name != "bash" else 12)
            msg = {
                "role": "toolResult",
                "toolCallId": cid,
                "toolName": c.name,
                "content": [{"type": "text", "text": text_out}],
                "isError": is_error,
                "timestamp": _ms(self.clock),
            }
            if details is not None:
                msg["details"] = details
            self._entry("message", message=msg)
        self._pending_results = results
        if mark:
            for m in mark.split(","):
                self.marks[m.strip()] = self.turn
        return self

    def mark(self, name):
        """Marks the last turn (for plant.turn / plant.fixedAt)."""
        self.marks[name] = self.turn
        return self

    def jsonl(self):
        return "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in self.lines)


def _epoch(iso):
    import datetime as dt

    return dt.datetime.fromisoformat(iso).replace(tzinfo=dt.timezone.utc).timestamp()


def _iso(t):
    import datetime as dt

    d = dt.datetime.fromtimestamp(t, dt.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def _ms(t):
    return int(t * 1000)


# ---------------------------------------------------------------- the case


def _yaml_str(s):
    return "'" + s.replace("'", "''") + "'"


class Case:
    def __init__(self, cid, cls, description, severity=None, evidence=None, fixed=False, notes=None):
        self.id, self.cls, self.description = cid, cls, description
        self.severity, self.evidence, self.fixed = severity, evidence or [], fixed
        self.notes = notes

    def yaml(self, session):
        lines = [f"id: {self.id}", f"class: {self.cls}", f"description: {_yaml_str(self.description)}"]
        if self.cls != "none":
            if "plant" not in session.marks:
                raise CaseError(f"{self.id}: no plant mark")
            lines.append("plant:")
            lines.append(f"  turn: {session.marks['plant']}")
            lines.append(f"  severity: {self.severity}")
            lines.append("  evidence: [" + ", ".join(_yaml_str(e) for e in self.evidence) + "]")
            if "fixed" in session.marks:
                lines.append(f"  fixedAt: {session.marks['fixed']}")
        return "\n".join(lines) + "\n"


def write_case(root, case, session):
    d = os.path.join(root, case.id)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "workspace"))
    for e in case.evidence:
        re.compile(e, re.I)
    with open(os.path.join(d, "session.jsonl"), "w", encoding="utf-8") as f:
        f.write(session.jsonl())
    with open(os.path.join(d, "case.yml"), "w", encoding="utf-8") as f:
        f.write(case.yaml(session))
    for path, content in sorted(session.fs.items()):
        p = os.path.join(d, "workspace", path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(content)
