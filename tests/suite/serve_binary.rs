//! `advisor serve` as a child process (V1–V4): the built binary over real pipes, its model a
//! resolved endpoint pointing at the in-process OpenAI-compatible server. The tests read
//! what a client sees on standard output, the exit status and the timing of the exit.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use advisor::providers::testing::{sse_event, ScriptedResponse, SseServer};
use serde_json::{json, Value};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::serve_client::{assistant, user, RpcClient};

type Client = RpcClient<ChildStdin, ChildStdout>;

struct Served {
    child: Child,
    client: Client,
    /// Holds the agent directory and home the child sees.
    _home: tempfile::TempDir,
}

/// Starts `advisor serve ARGS` with a throwaway home and agent directory, so no real user
/// settings are read.
fn spawn(args: &[&str], extra_env: &[(&str, &str)]) -> Served {
    let home = tempfile::tempdir().expect("a temporary home");
    let agent = home.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    let mut cmd = Command::new(crate::support::advisor_bin());
    cmd.arg("serve")
        .args(args)
        .env("HOME", home.path())
        .env("PI_CODING_AGENT_DIR", &agent)
        .env_remove("ADVISOR_MODEL")
        .env_remove("ADVISOR_NO_REVIEW")
        .env_remove("ADVISOR_COMPACT_AT")
        .env_remove("ADVISOR_DEBUG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("the advisor binary starts");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    Served {
        child,
        client: RpcClient::new(stdin, stdout),
        _home: home,
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    sse_event(
        None,
        &json!({"id": "c", "object": "chat.completion.chunk", "model": "test-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string(),
    )
}

fn finished(mut body: Vec<String>) -> ScriptedResponse {
    body.push(sse_event(
        None,
        &json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129}})
        .to_string(),
    ));
    body.push("data: [DONE]\n\n".into());
    ScriptedResponse::sse(&body.concat())
}

/// An answer calling `advise` once.
fn advise(note: &str, severity: &str) -> ScriptedResponse {
    let args = json!({"note": note, "severity": severity}).to_string();
    finished(vec![
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "advise", "arguments": args}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ])
}

/// An answer with no text and no tool call.
fn silent() -> ScriptedResponse {
    finished(vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({}), Some("stop")),
    ])
}

/// An answer that is only `text`.
fn text(text: &str) -> ScriptedResponse {
    finished(vec![
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
    ])
}

/// The endpoint object a host with its own model registry sends (V2).
fn endpoint(server: &SseServer) -> Value {
    json!({"id": "test-model", "baseUrl": server.base_url(), "api": "openai-completions",
        "apiKey": "dummy", "contextWindow": 64000, "maxTokens": 2048, "thinking": "off",
        "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0.0, "cacheWrite": 0.0}})
}

fn open_with(session: &str, cwd: &Path, model: Value, settings: Value) -> Value {
    json!({"sessionId": session, "cwd": cwd, "model": model, "settings": settings})
}

/// `s1` with syncBacklog on and a session file, so its audit goes beside it (G7).
fn synced_with_audit(session: &str, cwd: &Path, server: &SseServer, file: &Path) -> Value {
    let mut params = open_with(session, cwd, endpoint(server), json!({"syncBacklog": 1}));
    params["sessionFile"] = json!(file);
    params
}

async fn exit_within(child: &mut Child, limit: Duration) -> (std::process::ExitStatus, Duration) {
    let started = Instant::now();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server exits")
        .expect("wait on the child");
    let took = started.elapsed();
    assert!(took < limit, "exit took {took:?}");
    (status, took)
}

#[tokio::test]
async fn v2_binary_reviews_a_turn_through_a_resolved_endpoint_and_hands_back_the_nit() {
    // One request: an advise-only turn ends the review (P2).
    let server = SseServer::start([advise("Add a test for the empty input.", "nit")])
        .await
        .unwrap();
    let mut s = spawn(&[], &[]);
    let cwd = tempfile::tempdir().unwrap();
    let c = &mut s.client;
    c.call(
        "initialize",
        json!({"clientInfo": {"name": "pi", "version": "1.6.0"}}),
    )
    .await;
    let status = c
        .call(
            "session/open",
            open_with(
                "s1",
                cwd.path(),
                endpoint(&server),
                // D3's routing (the default before P1): the final answer's nit is an aside.
                json!({"syncBacklog": 1, "policy": "interrupt"}),
            ),
        )
        .await;
    assert_eq!(status["model"], "custom/test-model");
    assert_eq!(status["agent"]["contextWindow"], 64000);
    assert_eq!(status["thinking"], "off");
    c.call(
        "session/runState",
        json!({"sessionId": "s1", "running": true}),
    )
    .await;
    c.call(
        "session/turnEnd",
        // Work in progress: D3's aside, not a final boundary's merged card (CA13).
        json!({"sessionId": "s1", "base": null, "leaf": "e1", "willContinue": true,
            "messages": [user("Handle empty input in parse()"), assistant("I changed parse().")]}),
    )
    .await;
    let r = c
        .call("session/stepBoundary", json!({"sessionId": "s1"}))
        .await;
    assert_eq!(
        r["deliveries"],
        json!([{"channel": "aside",
            "content": "<advisory severity=\"nit\" guidance=\"weigh, don't blindly obey\">\nAdd a test for the empty input.\n</advisory>",
            "notes": [{"severity": "nit", "note": "Add a test for the empty input.", "model": "custom/test-model"}],
            "model": "custom/test-model"}])
    );
    let first = server.requests()[0].json();
    assert_eq!(first["model"], "test-model");
    let sent = first["messages"].to_string();
    assert!(sent.contains("Handle empty input in parse()"), "{sent}");
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer dummy"),
        "the endpoint's key is used"
    );
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert_eq!(status["agent"]["lifetime"]["input"], 120);
    assert!(status["text"]
        .as_str()
        .unwrap()
        .contains("delivered 1 (aside 1"));
    c.close_input();
    let (code, _) = exit_within(&mut s.child, Duration::from_secs(2)).await;
    assert!(code.success());
}

#[tokio::test]
async fn v4_binary_garbage_u2028_and_an_oversized_line_then_valid_requests_on_one_pipe() {
    let mut s = spawn(&[], &[]);
    let cwd = tempfile::tempdir().unwrap();
    let c = &mut s.client;
    // Garbage, then a valid request on the same pipe.
    c.send_raw(b"{\"jsonrpc\": \"2.0\", oops\n").await;
    let e = c.null_id_reply().await;
    assert_eq!(e["error"]["code"], -32700);
    let r = c.call("initialize", json!({})).await;
    assert_eq!(r["protocolVersion"], 1);
    // An id past f64's range is served and echoed as written (V4).
    c.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"initialize\"}\n")
        .await;
    let line = c.raw_line().await.expect("a reply");
    assert!(
        line.starts_with(r#"{"jsonrpc":"2.0","id":1e400,"result":{"#)
            && line.contains(r#""protocolVersion":1"#),
        "{line}"
    );
    // U+2028 inside a string is data, not a line break (V1).
    let mut open =
        json!({"sessionId": "s\u{2028}1", "cwd": cwd.path(), "settings": {"enabled": false}});
    c.call("session/open", open.take()).await;
    let r = c
        .call(
            "session/command",
            json!({"sessionId": "s\u{2028}1", "line": "/advisor\u{2028}status"}),
        )
        .await;
    assert!(
        r["text"].as_str().unwrap().contains("advisor: disabled"),
        "{r}"
    );
    // A line over 64 MiB (160 MiB here, written in pieces): -32600, and the server goes on
    // without having held it whole (its peak memory stays well under the line's size).
    c.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"initialize\",\"params\":{\"pad\":\"")
        .await;
    let piece = vec![b'x'; 1024 * 1024];
    for _ in 0..160 {
        c.send_raw(&piece).await;
    }
    c.send_raw(b"\"}}\n").await;
    let e = c.null_id_reply().await;
    assert_eq!(e["error"]["code"], -32600, "{e}");
    assert!(c.reply_now(&json!(99)).is_none());
    // session/ask is served: this session is off, so there is nobody to answer (G8).
    let e = c
        .call_err(
            "session/ask",
            json!({"sessionId": "s\u{2028}1", "question": "?"}),
        )
        .await;
    assert_eq!(
        (e["code"].clone(), e["data"].clone()),
        (json!(-32000), json!({"reason": "notRunning"})),
        "{e}"
    );
    #[cfg(target_os = "linux")]
    if let Some(pid) = s.child.id() {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let peak_kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        assert!(
            peak_kb < 120 * 1024,
            "peak memory {peak_kb} kB: the 160 MiB line was buffered"
        );
    }
    c.close_input();
    let (code, _) = exit_within(&mut s.child, Duration::from_secs(2)).await;
    assert!(code.success());
}

#[tokio::test]
async fn v1_g7_binary_exits_0_within_2s_of_eof_with_the_audit_flushed() {
    let server = SseServer::start([advise("Check the exit code.", "concern")])
        .await
        .unwrap();
    let mut s = spawn(&[], &[]);
    let cwd = tempfile::tempdir().unwrap();
    let session_file = cwd.path().join("sessions").join("abc.jsonl");
    std::fs::create_dir_all(session_file.parent().unwrap()).unwrap();
    let c = &mut s.client;
    c.call(
        "session/open",
        synced_with_audit("s1", cwd.path(), &server, &session_file),
    )
    .await;
    c.call(
        "session/open",
        open_with("s2", cwd.path(), endpoint(&server), json!({})),
    )
    .await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("delete the build dir")]}),
    )
    .await;
    let started = Instant::now();
    c.close_input();
    let (code, _) = exit_within(&mut s.child, Duration::from_secs(2)).await;
    assert!(code.success());
    assert!(started.elapsed() < Duration::from_secs(2));
    let audit = std::fs::read_to_string(cwd.path().join("sessions/abc/__advisor.jsonl")).unwrap();
    assert!(audit.contains("Check the exit code."), "{audit}");
    assert!(audit.contains("delete the build dir"), "{audit}");
}

/// V1's worst case in practice: at the end of input a `turnEnd` is still waiting on
/// syncBacklog for a model that has stalled mid-answer, so the grace runs out. The server
/// still exits 0 within its shutdown budget (1.5 s, half a second short of V1's 2 s), the
/// waiting call is answered, and the audit is flushed (G7).
#[tokio::test]
async fn v1_g7_binary_eof_with_a_turn_end_stuck_on_a_stalled_model_exits_within_the_budget() {
    let server = SseServer::start([advise("Never finished.", "blocker").stall_after(1)])
        .await
        .unwrap();
    let mut s = spawn(&[], &[]);
    let cwd = tempfile::tempdir().unwrap();
    let session_file = cwd.path().join("stuck.jsonl");
    let c = &mut s.client;
    c.call(
        "session/open",
        synced_with_audit("s1", cwd.path(), &server, &session_file),
    )
    .await;
    let waiting = c
        .request(
            "session/turnEnd",
            json!({"sessionId": "s1", "base": null, "leaf": "a",
                "messages": [user("drop the production table")]}),
        )
        .await;
    // The review is under way once the model (which then stalls) has its request.
    tokio::time::timeout(Duration::from_secs(10), server.wait_for_requests(1))
        .await
        .expect("the review never started");
    c.close_input();
    let (code, took) = exit_within(&mut s.child, advisor::serve::SHUTDOWN_BUDGET).await;
    assert!(code.success(), "exit {code:?} after {took:?}");
    c.read_to_end().await;
    let reply = c
        .reply_now(&waiting)
        .expect("the waiting turnEnd was answered");
    assert!(
        reply.get("result").is_some() || reply.get("error").is_some(),
        "{reply}"
    );
    let audit = std::fs::read_to_string(cwd.path().join("stuck/__advisor.jsonl")).unwrap();
    assert!(audit.contains("drop the production table"), "{audit}");
}

#[tokio::test]
async fn g8_v2_binary_session_ask_answers_from_the_reviewed_turn() {
    let server = SseServer::start([silent(), text("Run the migration on a copy first.")])
        .await
        .unwrap();
    let mut s = spawn(&[], &[]);
    let cwd = tempfile::tempdir().unwrap();
    let c = &mut s.client;
    c.call(
        "session/open",
        open_with(
            "s1",
            cwd.path(),
            endpoint(&server),
            json!({"syncBacklog": 1}),
        ),
    )
    .await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "e1",
            "messages": [user("Write the users-table migration"), assistant("Wrote 0042_users.sql.")]}),
    )
    .await;
    let r = c
        .call(
            "session/ask",
            json!({"sessionId": "s1", "question": "Safe to run it on production now?"}),
        )
        .await;
    assert_eq!(r, json!({"answer": "Run the migration on a copy first."}));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let ask = requests[1].json();
    let sent = ask["messages"].to_string();
    let turn = sent
        .find("Write the users-table migration")
        .expect("the turn");
    let question = sent
        .find("Safe to run it on production now?")
        .expect("the question");
    assert!(
        turn < question,
        "the question comes after the reviewed turn"
    );
    let tools = ask["tools"].to_string();
    assert!(!tools.contains("\"advise\""), "{tools}");
    c.close_input();
    let (code, _) = exit_within(&mut s.child, Duration::from_secs(2)).await;
    assert!(code.success());
}

#[tokio::test]
async fn v1_binary_log_path_that_is_a_fifo_is_one_error_line_not_a_wait() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("serve.log");
    super::serve_shared::mkfifo(&fifo);
    let fifo_arg = fifo.to_str().unwrap().to_string();
    let mut s = spawn(&["--log", &fifo_arg], &[]);
    let (code, _) = exit_within(&mut s.child, Duration::from_secs(5)).await;
    assert_eq!(code.code(), Some(1));
    let mut stderr = String::new();
    use tokio::io::AsyncReadExt;
    s.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();
    assert_eq!(
        stderr,
        format!(
            "advisor: cannot use the log file {}: not a regular file (a FIFO)\n",
            fifo.display()
        )
    );
}

#[tokio::test]
async fn v1_binary_shutdown_answers_and_exits_0_with_its_input_still_open() {
    let mut s = spawn(&[], &[]);
    let cwd = tempfile::tempdir().unwrap();
    let c = &mut s.client;
    c.call(
        "session/open",
        json!({"sessionId": "s1", "cwd": cwd.path()}),
    )
    .await;
    assert_eq!(c.call("shutdown", json!({})).await, json!({}));
    let (code, _) = exit_within(&mut s.child, Duration::from_secs(2)).await;
    assert!(code.success());
}

#[tokio::test]
async fn v1_binary_logs_go_to_the_log_file_and_stdout_carries_only_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let log_arg = log.to_str().unwrap().to_string();
    let mut s = spawn(&["--log", &log_arg], &[("ADVISOR_DEBUG", "1")]);
    let c = &mut s.client;
    c.send_raw(b"not json at all\n").await;
    c.null_id_reply().await;
    c.call("initialize", json!({})).await;
    c.close_input();
    c.read_to_end().await;
    let (code, _) = exit_within(&mut s.child, Duration::from_secs(2)).await;
    assert!(code.success());
    // Every stdout line parsed as JSON-RPC (the client checks); the logs are in the file.
    assert_eq!(c.seen.len(), 2);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("bad input line"), "{text}");
    let mut stderr = String::new();
    use tokio::io::AsyncReadExt;
    s.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();
    assert!(!stderr.contains("bad input line"), "{stderr}");
}

#[tokio::test]
async fn v2_binary_model_flags_are_the_default_for_sessions_that_name_none() {
    let server = SseServer::start([silent()]).await.unwrap();
    let base = server.base_url();
    let mut s = spawn(
        &[
            "--model",
            "local/flag-model:low",
            "--base-url",
            &base,
            "--api",
            "openai-completions",
        ],
        &[],
    );
    let cwd = tempfile::tempdir().unwrap();
    let c = &mut s.client;
    let status = c
        .call(
            "session/open",
            json!({"sessionId": "s1", "cwd": cwd.path(), "settings": {"syncBacklog": 1}}),
        )
        .await;
    assert_eq!(status["model"], "local/flag-model");
    assert_eq!(status["thinking"], "low");
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("hello")]}),
    )
    .await;
    assert_eq!(server.requests()[0].json()["model"], "flag-model");
    // A session naming its own model keeps it.
    let other = c
        .call(
            "session/open",
            open_with("s2", cwd.path(), endpoint(&server), json!({})),
        )
        .await;
    assert_eq!(other["model"], "custom/test-model");
    // A role that cannot be resolved is the client's error, naming `model`.
    let e = c
        .call_err(
            "session/open",
            json!({"sessionId": "s3", "cwd": cwd.path(), "model": "nowhere/model-x"}),
        )
        .await;
    assert_eq!(
        (e["code"].clone(), e["data"]["field"].clone()),
        (json!(-32602), json!("model"))
    );
}
