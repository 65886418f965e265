#!/usr/bin/env python3
"""A scripted OpenAI-compatible advisor for the review-core measurement
(scripts/measure-review-core.sh). It answers `POST …/chat/completions` with a streamed reply
that is the same for the same sequence of requests, and reports usage the way a server with a
prefix cache would. Listens on 127.0.0.1 only; stops by itself after LIFETIME seconds.

What it answers, by the request's shape:
- no tools offered: a summary call (the advisor compacting its own context) -> a short text;
- the last message is a tool result of `read` -> one `advise` call: severity alternating
  concern, nit; a note that names the review, so no two notes are the same (P3);
- the last message is any other tool result (an `advise` answer, which P2 should make rare)
  -> a reply with no tool call;
- otherwise a review starts: every EVERY-th one reads WORKSPACE_FILE, the others answer with
  no tool call.

Usage (prompt tokens) is computed from the prompt, not the HTTP body: the tool definitions as
compact JSON, then per message its role, text (string or text parts) and tool calls (name and
argument string), with the tool call id of a tool result; tokens = ceil(characters / 4).
Cached tokens = the longest common prefix of that prompt text with the previous request's,
characters // 4 (an ideal prefix cache of one entry). Completion tokens = ceil(characters of
the reply's text and tool call names and arguments / 4), at least 1.

On SIGTERM or after each request, the counters go to SUMMARY_FILE as one JSON object.

usage: review-core-server.py PORT_FILE SUMMARY_FILE [EVERY=5] [WORKSPACE_FILE=notes/design.md]
       [LIFETIME_SECONDS=7200]
The chosen port is written to PORT_FILE.
"""
import http.server
import json
import math
import os
import sys
import threading

LOCK = threading.Lock()
STATE = {
    "requests": 0,
    "review_starts": 0,
    "reads": 0,
    "advises": 0,
    "silent": 0,
    "after_advise": 0,
    "summaries": 0,
    "prompt_tokens": 0,
    "cached_tokens": 0,
    "completion_tokens": 0,
    "body_bytes": 0,
    "max_prompt_tokens": 0,
}
PREVIOUS = {"prompt": ""}


def text_of(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return "".join(out)


def prompt_text(body):
    pieces = [json.dumps(body.get("tools") or [], separators=(",", ":"), sort_keys=True)]
    for m in body.get("messages") or []:
        pieces.append("\n" + str(m.get("role", "")) + "\n")
        if m.get("tool_call_id"):
            pieces.append(str(m["tool_call_id"]) + "\n")
        pieces.append(text_of(m.get("content")))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            pieces.append("\n" + str(fn.get("name", "")) + str(fn.get("arguments", "")))
    return "".join(pieces)


def common_prefix(a, b):
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def tool_name_of(messages, call_id):
    for m in reversed(messages):
        for call in m.get("tool_calls") or []:
            if call.get("id") == call_id:
                return (call.get("function") or {}).get("name")
    return None


def decide(body):
    """The reply: ("text", TEXT) or ("call", NAME, ARGUMENTS_JSON). Updates the counters."""
    messages = body.get("messages") or []
    if not body.get("tools"):
        STATE["summaries"] += 1
        return ("text", "Summary: the agent worked through the session's tasks; "
                        "notes so far were raised and answered.")
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        name = tool_name_of(messages, last.get("tool_call_id"))
        if name == "read":
            STATE["advises"] += 1
            n = STATE["advises"]
            severity = "concern" if n % 2 == 1 else "nit"
            note = (f"Review {STATE['review_starts']}: the change does not match "
                    f"{WORKSPACE_FILE} section {n}; check it before going on.")
            return ("call", "advise", json.dumps({"severity": severity, "note": note}))
        STATE["after_advise"] += 1
        return ("text", "")
    STATE["review_starts"] += 1
    if STATE["review_starts"] % EVERY == 0:
        STATE["reads"] += 1
        return ("call", "read", json.dumps({"path": WORKSPACE_FILE}))
    STATE["silent"] += 1
    return ("text", "")


def chunk(delta, finish=None, usage=None):
    obj = {"id": "scripted", "object": "chat.completion.chunk", "model": "scripted",
           "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage:
        obj["usage"] = usage
    return "data: " + json.dumps(obj) + "\n\n"


def write_summary():
    with open(SUMMARY_FILE + ".tmp", "w") as f:
        json.dump(STATE, f)
    os.replace(SUMMARY_FILE + ".tmp", SUMMARY_FILE)


class Scripted(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > 64 * 1024 * 1024:
            self.send_error(413)
            return
        raw = self.rfile.read(length)
        body = json.loads(raw)
        with LOCK:
            STATE["requests"] += 1
            STATE["body_bytes"] += len(raw)
            prompt = prompt_text(body)
            cached = common_prefix(prompt, PREVIOUS["prompt"]) // 4
            PREVIOUS["prompt"] = prompt
            prompt_tokens = math.ceil(len(prompt) / 4)
            reply = decide(body)
            if reply[0] == "text":
                completion = max(1, math.ceil(len(reply[1]) / 4))
                events = [chunk({"role": "assistant", "content": reply[1]}),
                          chunk({}, "stop")]
            else:
                _, name, args = reply
                completion = max(1, math.ceil((len(name) + len(args)) / 4))
                call = {"index": 0, "id": f"call_{STATE['requests']}", "type": "function",
                        "function": {"name": name, "arguments": args}}
                events = [chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
                          chunk({}, "tool_calls")]
            STATE["prompt_tokens"] += prompt_tokens
            STATE["cached_tokens"] += cached
            STATE["completion_tokens"] += completion
            STATE["max_prompt_tokens"] = max(STATE["max_prompt_tokens"], prompt_tokens)
            write_summary()
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                 "total_tokens": prompt_tokens + completion,
                 "prompt_tokens_details": {"cached_tokens": cached}}
        events.append(chunk(None, usage=usage))
        events.append("data: [DONE]\n\n")
        data = "".join(events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port_file, SUMMARY_FILE = sys.argv[1], sys.argv[2]
    EVERY = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    WORKSPACE_FILE = sys.argv[4] if len(sys.argv) > 4 else "notes/design.md"
    lifetime = float(sys.argv[5]) if len(sys.argv) > 5 else 7200.0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    server.daemon_threads = True
    write_summary()
    with open(port_file, "w") as f:
        f.write(str(server.server_address[1]))
    threading.Timer(lifetime, server.shutdown).start()
    server.serve_forever()
