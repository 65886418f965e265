//! `advisor serve` protocol throughput (SPEC V1–V4). A client drives the built
//! binary over one pipe pair with 10,000 `session/turnEnd` + `session/stepBoundary` pairs
//! (each turn appends a user and an assistant message; `syncBacklog: off`), one call at a
//! time as pi does, and prints calls per second and the latency percentiles of each call.
//!
//! Two instant models:
//! 1. `no-review`: `ADVISOR_NO_REVIEW=1` in the child — no model calls, the protocol,
//!    session table, transcript append, feed and delivery paths only;
//! 2. `in-process server`: the session's model is a resolved endpoint pointing at the
//!    in-process OpenAI-compatible server, which answers every review at once with a silent
//!    reply (reviews run beside the calls and coalesce under load, G2).
//!
//! Run with `cargo bench --bench serve` (release build). The in-process server keeps every
//! request body it receives, so the second run's memory grows with the review count.

use std::process::Stdio;
use std::time::{Duration, Instant};

use advisor::providers::testing::{sse_event, ScriptedResponse, SseServer};
use advisor::serve::{InputLine, LineReader};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout, Command};

#[path = "../tests/support/binary.rs"]
mod binary;

const PAIRS: usize = 10_000;

/// A review answer with no text and no tool call, sent at once.
fn silent_reply() -> ScriptedResponse {
    let event = |v: Value| sse_event(None, &v.to_string());
    let choice =
        json!({"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"});
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101});
    let text = [
        event(json!({"id": "s", "object": "chat.completion.chunk", "choices": [choice]})),
        event(json!({"id": "s", "object": "chat.completion.chunk", "choices": [], "usage": usage})),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    ScriptedResponse::sse(&text)
}

struct Pipe {
    stdin: ChildStdin,
    lines: LineReader<ChildStdout>,
    next_id: u64,
}

impl Pipe {
    /// One call, waiting for its reply (notifications in between are skipped).
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.expect("write");
        self.stdin.flush().await.expect("flush");
        loop {
            let next = tokio::time::timeout(Duration::from_secs(30), self.lines.next())
                .await
                .expect("a reply in time")
                .expect("the server is alive");
            let InputLine::Line(bytes) = next else {
                panic!("an oversized reply")
            };
            let v: Value = serde_json::from_slice(&bytes).expect("JSON");
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v;
            }
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn report(name: &str, what: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "  {name:<18} {what:<13} p50 {:>7.1} µs  p99 {:>7.1} µs  max {:>8.1} µs",
        percentile(&samples, 0.50).as_secs_f64() * 1e6,
        percentile(&samples, 0.99).as_secs_f64() * 1e6,
        samples.last().copied().unwrap_or_default().as_secs_f64() * 1e6,
    );
}

async fn run(name: &str, model: Option<Value>, no_review: bool) {
    let cwd = tempfile::tempdir().expect("temp cwd");
    let home = tempfile::tempdir().expect("temp home");
    let mut cmd = Command::new(binary::advisor_bin());
    cmd.arg("serve")
        .env("HOME", home.path())
        .env("PI_CODING_AGENT_DIR", home.path())
        .env_remove("ADVISOR_MODEL")
        .env_remove("ADVISOR_DEBUG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if no_review {
        cmd.env("ADVISOR_NO_REVIEW", "1");
    } else {
        cmd.env_remove("ADVISOR_NO_REVIEW");
    }
    let mut child = cmd.spawn().expect("advisor serve starts");
    let mut pipe = Pipe {
        stdin: child.stdin.take().expect("stdin"),
        lines: LineReader::new(child.stdout.take().expect("stdout"), 1 << 30),
        next_id: 0,
    };
    // With no review the endpoint is never called.
    let model = model.unwrap_or_else(
        || json!({"id": "none", "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions"}),
    );
    pipe.call(
        "session/open",
        json!({"sessionId": "bench", "cwd": cwd.path(), "model": model,
            "settings": {"syncBacklog": "off"}}),
    )
    .await;
    let mut turn_end = Vec::with_capacity(PAIRS);
    let mut step = Vec::with_capacity(PAIRS);
    let mut base = Value::Null;
    let started = Instant::now();
    for i in 0..PAIRS {
        let leaf = format!("e{i}");
        let messages = json!([
            {"role": "user", "content": format!("step {i}: please continue with the refactor")},
            {"role": "assistant", "content": [{"type": "text", "text": format!("Done with step {i}.")}], "stopReason": "stop"},
        ]);
        let t = Instant::now();
        pipe.call(
            "session/turnEnd",
            json!({"sessionId": "bench", "base": base, "leaf": leaf, "messages": messages}),
        )
        .await;
        turn_end.push(t.elapsed());
        let t = Instant::now();
        pipe.call("session/stepBoundary", json!({"sessionId": "bench"}))
            .await;
        step.push(t.elapsed());
        base = json!(leaf);
    }
    let elapsed = started.elapsed();
    let status = pipe
        .call("session/status", json!({"sessionId": "bench"}))
        .await;
    println!(
        "{name}: {PAIRS} pairs in {:.2} s = {:.0} calls/s ({:.0} pairs/s); reviews {}, model calls {}",
        elapsed.as_secs_f64(),
        (2 * PAIRS) as f64 / elapsed.as_secs_f64(),
        PAIRS as f64 / elapsed.as_secs_f64(),
        status["result"]["agent"]["reviews"],
        status["result"]["agent"]["modelCalls"],
    );
    if let Some(cpu) = child.id().and_then(cpu_seconds) {
        println!(
            "  server CPU {cpu:.2} s ({:.0}% of one core over the run)",
            cpu * 100.0 / elapsed.as_secs_f64()
        );
    }
    report(name, "turnEnd", turn_end);
    report(name, "stepBoundary", step);
    drop(pipe.stdin);
    let t = Instant::now();
    let code = child.wait().await.expect("exit");
    println!(
        "  exit after EOF in {:.0} ms ({code})",
        t.elapsed().as_secs_f64() * 1e3
    );
}

/// User plus system CPU time of a process so far, from `/proc/PID/stat` (Linux; ticks at
/// the usual 100 Hz).
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

#[tokio::main]
async fn main() {
    run("no-review", None, true).await;
    let server = SseServer::start((0..(PAIRS + 100)).map(|_| silent_reply()))
        .await
        .expect("bind the in-process server");
    // A small window keeps each review request (and the server's record of it) bounded:
    // the advisor's append-only context is re-primed as it fills (G5).
    let endpoint = json!({"id": "instant", "baseUrl": server.base_url(),
        "api": "openai-completions", "contextWindow": 4096});
    run("in-process server", Some(endpoint), false).await;
}
