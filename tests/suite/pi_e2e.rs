//! pi end to end (SPEC V5): the real pi (pinned, installed from npm by
//! `scripts/pi-e2e-setup.sh` into `target/pi-e2e`, Node 22 included) runs in RPC mode with
//! `integrations/pi/advisor.ts`, which starts the `advisor serve` under test. Two in-process
//! OpenAI-compatible servers answer by the text they are sent: one plays the primary (tool
//! calls, then text, as the user's prompt asks), the other the advisor (advises on cues found
//! in the session update it reviews). The tests assert what a pi user would see: the model
//! requests pi makes, the session file, the notices and replies on the RPC stream.
//!
//! Without `npm` the tests skip with a message, except under CI (`CI` set), where they fail.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

// ---------------------------------------------------------------------------------------------
// Installing pi (once per test binary; the script itself is idempotent and cached)

pub(super) struct PiTools {
    pub(super) node_bin: PathBuf,
    pub(super) pi: PathBuf,
    /// Every pinned pi by version (`pi_bin_<version>=` from the setup script), for
    /// `pi_e2e_lines`.
    pub(super) by_version: Vec<(String, PathBuf)>,
}

static TOOLS: OnceLock<Option<PiTools>> = OnceLock::new();

fn manifest(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The cache beside the binary under test: `target/pi-e2e`.
pub(super) fn cache_dir() -> PathBuf {
    let bin = crate::support::advisor_bin();
    bin.parent()
        .and_then(Path::parent)
        .map(|t| t.join("pi-e2e"))
        .unwrap_or_else(|| manifest("target/pi-e2e"))
}

pub(super) fn tools() -> Option<&'static PiTools> {
    TOOLS.get_or_init(install).as_ref()
}

fn install() -> Option<PiTools> {
    if !crate::support::npm::npm_or_skip("pi") {
        return None;
    }
    let mut child = Command::new("bash")
        .arg(manifest("scripts/pi-e2e-setup.sh"))
        .arg(cache_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run scripts/pi-e2e-setup.sh");
    let deadline = Instant::now() + Duration::from_secs(900);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the setup script") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("scripts/pi-e2e-setup.sh took longer than 15 minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut out = String::new();
    let mut err = String::new();
    child.stdout.take().map(|mut s| s.read_to_string(&mut out));
    child.stderr.take().map(|mut s| s.read_to_string(&mut err));
    assert!(status.success(), "pi setup failed: {status}\n{err}");
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("setup printed no {name}: {out}"))
    };
    let by_version = out
        .lines()
        .filter_map(|l| l.strip_prefix("pi_bin_")?.split_once('='))
        .map(|(version, dir)| (version.to_string(), Path::new(dir).join("pi")))
        .collect();
    Some(PiTools {
        node_bin: field("node_bin"),
        pi: field("pi_bin").join("pi"),
        by_version,
    })
}

// ---------------------------------------------------------------------------------------------
// A scripted OpenAI-compatible server that answers each request by what it contains

/// One answer: an SSE body (or, with a status other than 200, a JSON error), sent after
/// `delay`.
pub(super) struct Reply {
    delay: Duration,
    sse: String,
    status: u16,
}

impl Reply {
    pub(super) fn now(sse: String) -> Self {
        Self::after(Duration::ZERO, sse)
    }

    /// An error answer with `status` (401, or 500 for any other), sent after `delay`.
    pub(super) fn error(status: u16, delay: Duration) -> Self {
        let body = json!({"error": {"message": "scripted failure", "code": status}});
        Self {
            delay,
            sse: body.to_string(),
            status,
        }
    }

    pub(super) fn after(delay: Duration, sse: String) -> Self {
        Self {
            delay,
            sse,
            status: 200,
        }
    }
}

pub(super) type Responder = dyn Fn(&Value) -> Reply + Send + Sync;

/// A request as received: its headers (names lower-cased) and JSON body.
#[derive(Clone)]
struct Received {
    headers: HashMap<String, String>,
    body: Value,
}

pub(super) struct ModelServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Received>>>,
}

impl ModelServer {
    pub(super) fn start(rt: &Runtime, responder: Arc<Responder>) -> Self {
        let listener = rt
            .block_on(TcpListener::bind(("127.0.0.1", 0)))
            .expect("bind the scripted model server");
        let addr = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requests);
        rt.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (log, responder) = (Arc::clone(&log), Arc::clone(&responder));
                tokio::spawn(async move {
                    let _ = answer(socket, log, responder).await;
                });
            }
        });
        Self { addr, requests }
    }

    pub(super) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The chat requests received so far (the body of each).
    pub(super) fn bodies(&self) -> Vec<Value> {
        self.requests
            .lock()
            .iter()
            .map(|r| r.body.clone())
            .collect()
    }

    fn received(&self) -> Vec<Received> {
        self.requests.lock().clone()
    }
}

async fn answer(
    mut socket: TcpStream,
    log: Arc<Mutex<Vec<Received>>>,
    responder: Arc<Responder>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 16384];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > 1 << 20 {
            return Ok(());
        }
        let n = socket.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let headers: HashMap<String, String> = head
        .split("\r\n")
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length && body.len() < 64 << 20 {
        let n = socket.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reply = responder(&body);
    log.lock().push(Received { headers, body });
    tokio::time::sleep(reply.delay).await;
    let (status, kind) = match reply.status {
        200 => ("200 OK", "text/event-stream"),
        401 => ("401 Unauthorized", "application/json"),
        _ => ("500 Internal Server Error", "application/json"),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        reply.sse.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(reply.sse.as_bytes()).await?;
    socket.flush().await?;
    socket.shutdown().await
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let data = json!({"id": "gen", "object": "chat.completion.chunk", "created": 0,
        "model": "scripted", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {data}\n\n")
}

fn finished(mut parts: Vec<String>) -> String {
    let usage = json!({"id": "gen", "object": "chat.completion.chunk", "created": 0,
        "model": "scripted", "choices": [],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}});
    parts.push(format!("data: {usage}\n\n"));
    parts.push("data: [DONE]\n\n".into());
    parts.concat()
}

pub(super) fn text_sse(text: &str) -> String {
    finished(vec![
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
    ])
}

pub(super) fn tool_sse(id: &str, name: &str, args: Value) -> String {
    finished(vec![
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ])
}

/// Every string inside a message's content, joined.
pub(super) fn message_text(message: &Value) -> String {
    crate::support::strings_in(&message["content"])
}

pub(super) fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// True when a request carries no earlier review: only the system prompt and this review's
/// user messages (the expanded view sends one per transcript message).
fn is_fresh(body: &Value) -> bool {
    messages(body)
        .iter()
        .all(|m| m["role"] == "user" || m["role"] == "system")
}

/// The text of the user messages that end a request, joined: the session update (the
/// expanded view sends one user message per transcript message), or a question.
pub(super) fn update_text(msgs: &[Value]) -> String {
    let start = msgs
        .iter()
        .rposition(|m| m["role"] != "user")
        .map_or(0, |i| i + 1);
    msgs[start..].iter().map(message_text).collect()
}

/// The whole conversation of a request as text (for "does it carry X" checks).
pub(super) fn request_text(body: &Value) -> String {
    messages(body).iter().map(message_text).collect()
}

pub(super) fn is_advisory(message: &Value) -> bool {
    message["role"] == "user" && message_text(message).contains("<advisory")
}

/// The primary: the last user prompt that is not an advisory is a plan. `[read:a,b]` reads
/// those files in turn (one tool call per turn), `[ask:q]` then calls `ask_advisor` with the
/// question `q` (G8) — of the advisor named by `[asking:NAME]`, when given (RO20) — (after
/// `[bash:cmd]`, which runs `cmd` with pi's `bash` tool), `[say:x]` ends with the text `finished; X`
/// (upper-cased, so a cue in the prompt only fires once the primary has said it),
/// `[slow]` stalls the answer after the reads; anything after the final answer (an advisory
/// that steered or woke pi) is answered `noted`. A request without tools (pi's compaction
/// summary) is answered `SUMMARY-MARKER`.
pub(super) fn primary(body: &Value) -> Reply {
    let quick = Reply::now;
    if body["tools"].as_array().is_none_or(Vec::is_empty) {
        return quick(text_sse("SUMMARY-MARKER: the user asked for reads."));
    }
    let msgs = messages(body);
    let Some(at) = msgs
        .iter()
        .rposition(|m| m["role"] == "user" && !is_advisory(m))
    else {
        return quick(text_sse("noted"));
    };
    let prompt = message_text(&msgs[at]);
    let done = msgs[at..]
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    let cue = |name: &str| {
        let start = prompt.find(&format!("[{name}:"))? + name.len() + 2;
        let end = prompt[start..].find(']')? + start;
        Some(prompt[start..end].to_string())
    };
    let reads: Vec<String> = cue("read")
        .map(|r| r.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let ask = cue("ask");
    let bash = cue("bash");
    let steps = reads.len() + usize::from(bash.is_some()) + usize::from(ask.is_some());
    if done < reads.len() {
        let args = json!({"path": reads[done]});
        return quick(tool_sse(&format!("call_{done}"), "read", args));
    }
    if let Some(command) = bash.filter(|_| done == reads.len()) {
        return quick(tool_sse("call_bash", "bash", json!({"command": command})));
    }
    if let Some(question) = ask.filter(|_| done < steps) {
        let mut args = json!({"question": question});
        if let Some(name) = cue("asking") {
            args["advisor"] = json!(name);
        }
        return quick(tool_sse("call_ask", "ask_advisor", args));
    }
    if done == steps {
        let delay = if prompt.contains("[slow]") {
            Duration::from_secs(30)
        } else {
            Duration::ZERO
        };
        let say = cue("say").unwrap_or_default();
        return Reply::after(
            delay,
            text_sse(&format!("finished; {}", say.to_uppercase())),
        );
    }
    quick(text_sse("noted"))
}

/// The reason the scripted gate gives when it denies a call (GT12).
pub(super) const GATE_DENY_REASON: &str =
    "GATE-DENY-MARKER: build holds the only copy of the release artefacts";

/// The reason the scripted gate gives when it asks the person (GT12).
pub(super) const GATE_ASK_REASON: &str =
    "GATE-ASK-MARKER: only the user knows whether ask-me holds work";

/// The scripted gate (GT12), reading the proposed call of a gate request (its system prompt
/// says so): `rm -rf build…` is denied with [`GATE_DENY_REASON`], a call naming `ask-me` is
/// asked about with [`GATE_ASK_REASON`], one naming `hang-me` is answered only after a minute;
/// any other call is allowed. `None` for other requests.
fn gate_verdict(body: &Value) -> Option<Reply> {
    let text = body.to_string();
    if !text.contains("You are the gate of a coding agent") {
        return None;
    }
    // The call alone, not the conversation before it (which may name earlier calls).
    let call = &text[text.rfind("<call tool=").unwrap_or(0)..];
    let (delay, verdict) = if call.contains("rm -rf build") {
        let deny = json!({"decision": "deny", "risk": "high", "reason": GATE_DENY_REASON});
        (Duration::ZERO, deny)
    } else if call.contains("ask-me") {
        let ask = json!({"decision": "ask", "risk": "medium", "reason": GATE_ASK_REASON});
        (Duration::ZERO, ask)
    } else {
        let wait = Duration::from_secs(if call.contains("hang-me") { 60 } else { 0 });
        (
            wait,
            json!({"decision": "allow", "risk": "low", "reason": "routine"}),
        )
    };
    Some(Reply::after(delay, text_sse(&verdict.to_string())))
}

/// What the scripted advisor answers a question with (G8).
pub(super) const ASK_ANSWER: &str =
    "ANSWER-MARKER: keep a copy of notes.txt before you overwrite it.";

/// The advisor: answers a question from the agent (an ask, G8) with [`ASK_ANSWER`] (after a
/// minute when the question holds `CUE-SLOW-ANSWER`); else
/// reviews the newest session update it is sent. `CUE-NIT` / `CUE-CONCERN` /
/// `CUE-BLOCKER` there call `advise` at once; `CUE-LATE-NIT` / `CUE-LATE-CONCERN` /
/// `CUE-LATE-BLOCKER` do so after 1.5 s (so pi has gone idle or been aborted meanwhile);
/// `CUE-STALL` answers only after a minute; `CUE-DENIED` is refused with a 401. Anything
/// else, and the call after an `advise` result, is answered with an empty text (silence).
fn advisor(body: &Value) -> Reply {
    let msgs = messages(body);
    let quick = Reply::now;
    if let Some(verdict) = gate_verdict(body) {
        return verdict;
    }
    let Some(last) = msgs.last() else {
        return quick(text_sse(""));
    };
    if last["role"] != "user" {
        return quick(text_sse(""));
    }
    let text = update_text(&msgs);
    if text.contains("Question from the agent") {
        let delay = if text.contains("CUE-SLOW-ANSWER") {
            Duration::from_secs(60)
        } else {
            Duration::ZERO
        };
        return Reply::after(delay, text_sse(ASK_ANSWER));
    }
    if text.contains("CUE-DENIED") {
        return Reply {
            delay: Duration::ZERO,
            sse: json!({"error": {"message": "invalid api key", "type": "invalid_request_error"}})
                .to_string(),
            status: 401,
        };
    }
    let cues = [
        ("CUE-STALL", "blocker", 60_000),
        ("CUE-LATE-NIT", "nit", 1500),
        ("CUE-LATE-CONCERN", "concern", 1500),
        ("CUE-LATE-BLOCKER", "blocker", 1500),
        ("CUE-NIT", "nit", 0),
        ("CUE-CONCERN", "concern", 0),
        ("CUE-BLOCKER", "blocker", 0),
    ];
    for (cue, severity, ms) in cues {
        if text.contains(cue) {
            let note = format!("{severity} note raised on {cue}");
            let args = json!({"severity": severity, "note": note});
            let sse = tool_sse("call_advise", "advise", args);
            return Reply::after(Duration::from_millis(ms), sse);
        }
    }
    quick(text_sse(""))
}

// ---------------------------------------------------------------------------------------------
// One pi process in RPC mode, with its own home, agent directory, sessions and workspace

#[derive(Default)]
struct Stream {
    events: Vec<Value>,
    /// When each event was read (for the silence checks).
    times: Vec<Instant>,
    closed: bool,
}

pub(super) struct Pi {
    child: Child,
    stdin: Option<ChildStdin>,
    stream: Arc<(Mutex<Stream>, Condvar)>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
}

/// The directories of one scenario, kept across pi restarts.
pub(super) struct Setup {
    _dir: tempfile::TempDir,
    home: PathBuf,
    pub(super) agent: PathBuf,
    sessions: PathBuf,
    pub(super) work: PathBuf,
}

impl Setup {
    /// An agent directory whose models.json names the primary (`scripted/scripted-model`) and
    /// the advisor (`advisorprov/advisor-model`, key `advisor-secret`), `config.yml` holding
    /// `config` (K1), and a workspace with `notes.txt` holding `notes`.
    pub(super) fn new(
        primary: &ModelServer,
        advisor: &ModelServer,
        config: &str,
        notes: &str,
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().to_path_buf();
        let (home, agent, sessions, work) = (
            root.join("home"),
            root.join("agent"),
            root.join("sessions"),
            root.join("work"),
        );
        for d in [&home, &agent, &sessions, &work] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        let model = |id: &str| {
            json!({"id": id, "name": id, "reasoning": false, "input": ["text"],
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                "contextWindow": 128000, "maxTokens": 4096})
        };
        let models = json!({"providers": {
            "scripted": {"baseUrl": primary.base_url(), "api": "openai-completions",
                "apiKey": "primary-secret", "models": [model("scripted-model")]},
            "advisorprov": {"baseUrl": advisor.base_url(), "api": "openai-completions",
                "apiKey": "advisor-secret", "models": [model("advisor-model")]},
        }});
        std::fs::write(agent.join("models.json"), models.to_string()).expect("models.json");
        std::fs::write(
            agent.join("settings.json"),
            json!({"compaction": {"keepRecentTokens": 50}}).to_string(),
        )
        .expect("settings.json");
        std::fs::write(agent.join("config.yml"), config).expect("config.yml");
        std::fs::write(work.join("notes.txt"), notes).expect("notes.txt");
        Self {
            _dir: dir,
            home,
            agent,
            sessions,
            work,
        }
    }

    /// Runs pi once in print mode (`-p`: no UI) with the extension on `prompt`, to its end.
    pub(super) fn print(&self, tools: &PiTools, prompt: &str) -> std::process::Output {
        let mut cmd = self.command(tools, true, &["-p", prompt]);
        cmd.stdin(Stdio::null());
        let mut child = cmd.spawn().expect("start pi -p");
        // Bounded: a pi that does not end within the wait is killed (its output is small).
        let deadline = Instant::now() + 2 * WAIT;
        while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        child.wait_with_output().expect("pi -p ends")
    }

    /// pi in `mode` (its arguments), on the scripted primary, in this setup's directories.
    fn command(&self, tools: &PiTools, extension: bool, mode: &[&str]) -> Command {
        let path = format!(
            "{}:{}",
            tools.node_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new(&tools.pi);
        cmd.args(mode)
            .args([
                "--provider",
                "scripted",
                "--model",
                "scripted-model",
                "--no-extensions",
                "--no-skills",
                "--no-context-files",
                "--no-prompt-templates",
                "--offline",
                "--session-dir",
            ])
            .arg(&self.sessions);
        if extension {
            cmd.arg("-e").arg(manifest("integrations/pi/advisor.ts"));
        }
        cmd.current_dir(&self.work)
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("PI_CODING_AGENT_DIR", &self.agent)
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0")
            .env("ADVISOR_BIN", crate::support::advisor_bin())
            .env_remove("ADVISOR_MODEL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Starts pi with the extension (or without it) and waits until RPC answers.
    pub(super) fn start(&self, tools: &PiTools, extension: bool, env: &[(&str, &str)]) -> Pi {
        let mut cmd = self.command(tools, extension, &["--mode", "rpc"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start pi");
        let stream = Arc::new((Mutex::new(Stream::default()), Condvar::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut out = child.stdout.take().expect("pi stdout");
        let reader = Arc::clone(&stream);
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            let mut buf = [0u8; 65536];
            loop {
                let n = out.read(&mut buf).unwrap_or(0);
                let (lock, cv) = &*reader;
                if n == 0 {
                    lock.lock().closed = true;
                    cv.notify_all();
                    return;
                }
                pending.extend_from_slice(&buf[..n]);
                // Split on LF only (RPC framing; U+2028 inside strings is not a break).
                while let Some(i) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=i).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                        let mut s = lock.lock();
                        s.events.push(v);
                        s.times.push(Instant::now());
                    }
                }
                cv.notify_all();
            }
        });
        let mut err = child.stderr.take().expect("pi stderr");
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let stdin = child.stdin.take();
        let mut pi = Pi {
            child,
            stdin,
            stream,
            stderr,
            next_id: 0,
        };
        pi.call(json!({"type": "get_state"}));
        pi
    }
}

const WAIT: Duration = Duration::from_secs(30);

impl Pi {
    pub(super) fn send(&mut self, command: &Value) {
        let stdin = self.stdin.as_mut().expect("pi stdin open");
        writeln!(stdin, "{command}").expect("write to pi");
        stdin.flush().expect("flush pi stdin");
    }

    /// Waits for the first event at or after index `from` matching `pred`.
    pub(super) fn wait_from(
        &self,
        from: usize,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> (usize, Value) {
        self.wait_within(from, what, WAIT, pred)
    }

    /// Like `wait_from`, giving up after `limit`.
    pub(super) fn wait_within(
        &self,
        from: usize,
        what: &str,
        limit: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> (usize, Value) {
        let deadline = Instant::now() + limit;
        let (lock, cv) = &*self.stream;
        let mut s = lock.lock();
        loop {
            if let Some((i, v)) = s
                .events
                .iter()
                .enumerate()
                .skip(from)
                .find(|(_, v)| pred(v))
            {
                return (i, v.clone());
            }
            assert!(
                !s.closed && Instant::now() < deadline,
                "pi never sent {what}; events: {}\nstderr: {}",
                tail(&s.events),
                self.stderr.lock()
            );
            cv.wait_until(&mut s, deadline);
        }
    }

    /// Sends an RPC command and returns its response.
    pub(super) fn call(&mut self, mut command: Value) -> Value {
        self.next_id += 1;
        let id = format!("t{}", self.next_id);
        command["id"] = json!(id);
        let mark = self.len();
        self.send(&command);
        let (_, reply) = self.wait_from(mark, &format!("a reply to {command}"), |v| {
            v["type"] == "response" && v["id"] == id.as_str()
        });
        assert_eq!(reply["success"], true, "{command} failed: {reply}");
        reply
    }

    pub(super) fn len(&self) -> usize {
        self.stream.0.lock().events.len()
    }

    /// When event `index` was read.
    pub(super) fn read_at(&self, index: usize) -> Instant {
        self.stream.0.lock().times[index]
    }

    pub(super) fn events_since(&self, from: usize) -> Vec<Value> {
        self.stream.0.lock().events[from..].to_vec()
    }

    /// Prompts and waits until pi has settled.
    fn prompt_settled(&mut self, text: &str) -> Value {
        let mark = self.len();
        self.call(json!({"type": "prompt", "message": text}));
        let (_, v) = self.wait_from(mark, "agent_settled", |v| v["type"] == "agent_settled");
        v
    }

    /// `/advisor ARGS` and the text it showed (the notify that followed).
    pub(super) fn advisor_command(&mut self, args: &str) -> String {
        let mark = self.len();
        let reply = self.call(json!({"type": "prompt", "message": format!("/advisor {args}")}));
        assert_eq!(reply["data"]["disposition"], "handled", "{reply}");
        let (_, note) = self.wait_from(mark, "the command's notice", is_notify);
        note["message"].as_str().unwrap_or_default().to_string()
    }

    /// Waits for a notice holding `needle`, at or after index `from`, and returns its text.
    pub(super) fn wait_notice(&self, from: usize, needle: &str) -> String {
        let (_, v) = self.wait_from(from, &format!("a notice holding {needle:?}"), |v| {
            is_notify(v) && v["message"].as_str().is_some_and(|m| m.contains(needle))
        });
        v["message"].as_str().unwrap_or_default().to_string()
    }

    /// The notices since index `from` that hold `needle`.
    pub(super) fn notices_holding(&self, from: usize, needle: &str) -> Vec<String> {
        let mut all = self.notices_since(from);
        all.retain(|n| n.contains(needle));
        all
    }

    pub(super) fn notices_since(&self, from: usize) -> Vec<String> {
        self.events_since(from)
            .iter()
            .filter(|v| is_notify(v))
            .map(|v| v["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    pub(super) fn state(&mut self) -> Value {
        self.call(json!({"type": "get_state"}))["data"].clone()
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes pi's input and waits for it to exit.
    pub(super) fn quit(mut self) {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn is_notify(v: &Value) -> bool {
    v["type"] == "extension_ui_request" && v["method"] == "notify"
}

fn tail(events: &[Value]) -> String {
    let start = events.len().saturating_sub(12);
    events[start..]
        .iter()
        .map(|v| {
            let s = v.to_string();
            s.chars().take(300).collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Waits until `cond` holds (bounded), for effects outside pi's event stream.
pub(super) fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `advisor serve` children of process `parent` (Linux /proc).
pub(super) fn serve_children(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
            let mut fields = after.split_whitespace();
            let state = fields.next().unwrap_or("");
            let ppid: u32 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == parent && state != "Z" && cmd.split(|&b| b == 0).any(|a| a == b"serve")
        })
        .collect()
}

/// True while process `pid` exists and is not a zombie.
pub(super) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, r)| !r.starts_with('Z'))
        })
        .unwrap_or(false)
}

pub(super) fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The session file's entries (JSON lines).
pub(super) fn session_entries(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub(super) fn advisor_entries(path: &str) -> Vec<Value> {
    session_entries(path)
        .into_iter()
        .filter(|e| e["type"] == "custom_message" && e["customType"] == "advisor")
        .collect()
}

/// The primary's chat requests (the scripted server also sees nothing else from pi).
pub(super) fn primary_requests(server: &ModelServer) -> Vec<Value> {
    server.bodies()
}

/// The advisor's review requests: those whose last message is a session update.
pub(super) fn reviews(server: &ModelServer) -> Vec<Value> {
    server
        .bodies()
        .into_iter()
        .filter(|b| {
            let msgs = messages(b);
            msgs.last().is_some_and(|m| m["role"] == "user")
                && update_text(&msgs).contains("Session update")
        })
        .collect()
}

pub(super) fn agent_starts(events: &[Value]) -> usize {
    events.iter().filter(|v| v["type"] == "agent_start").count()
}

pub(super) const ENABLED_SYNC: &str = "modelRoles:\n  advisor: advisorprov/advisor-model\nadvisor:\n  enabled: true\n  syncBacklog: 1\n";
pub(super) const UNNAMED_ASYNC: &str = "advisor:\n  enabled: true\n  syncBacklog: off\n";
pub(super) const ENABLED_ASYNC: &str = "modelRoles:\n  advisor: advisorprov/advisor-model\nadvisor:\n  enabled: true\n  syncBacklog: off\n";

// ---------------------------------------------------------------------------------------------
// The scenarios

/// (a) + (b) + (c): a nit raised on turn 1 reaches turn 2's request and is saved as a
/// `custom_message` with `customType: "advisor"`; a concern raised on the terminal turn of a
/// turn-mode advisor is one card at its `turn_end` (CA13, CA16: it asks for no continuation,
/// so no more model calls); `/advisor status` answers over RPC; the advisor model came from
/// pi's registry with pi's stored key.
#[test]
fn v5_d3_ca16_advice_reaches_the_next_request_is_saved_and_a_final_concern_is_one_card() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    // D3's routing (the default before P1 made `defer` the default).
    let setup = Setup::new(
        &primary_srv,
        &advisor_srv,
        &format!("{ENABLED_SYNC}  policy: interrupt\n"),
        "the parser ignores empty lines\n",
    );
    let mut pi = setup.start(tools, true, &[]);
    let mark = pi.len();
    pi.prompt_settled("Read the notes. CUE-NIT [read:notes.txt] [say:cue-concern]");

    let requests = primary_requests(&primary_srv);
    assert_eq!(
        requests.len(),
        2,
        "tool turn and final answer: the card starts no call"
    );
    let nit = "nit note raised on CUE-NIT";
    let concern = "concern note raised on CUE-CONCERN";
    assert!(!request_text(&requests[0]).contains("<advisory"));
    let second = request_text(&requests[1]);
    assert!(
        second.contains(nit) && second.contains("severity=\"nit\""),
        "turn 2's request carries turn 1's nit: {second}"
    );
    assert!(!second.contains(concern));
    assert_eq!(
        agent_starts(&pi.events_since(mark)),
        1,
        "the card starts no run"
    );

    let file = pi.state()["sessionFile"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let saved = advisor_entries(&file);
    assert_eq!(
        saved.len(),
        2,
        "both advisories are in the session file: {saved:?}"
    );
    assert!(saved[0]["content"].to_string().contains(nit));
    assert!(saved[1]["content"].to_string().contains(concern));
    assert_eq!(saved[0]["display"], true);

    // The advisor's endpoint came from pi's models.json, with pi's key for it.
    let review = advisor_srv.received().into_iter().next().expect("a review");
    assert_eq!(
        review.headers.get("authorization").map(String::as_str),
        Some("Bearer advisor-secret")
    );
    assert_eq!(review.body["model"], "advisor-model");
    // The delta carried the turn, not pi's saved system prompt.
    let first_review = request_text(&reviews(&advisor_srv)[0]);
    assert!(first_review.contains("read(notes.txt)"), "{first_review}");
    assert!(
        !first_review.contains("running inside pi"),
        "{first_review}"
    );

    // X2: the advisor never reviews its own advice (the custom messages are left out).
    for review in reviews(&advisor_srv) {
        let update = update_text(&messages(&review));
        assert!(!update.contains("<advisory"), "{update}");
    }

    let status = pi.advisor_command("status");
    assert!(
        status.contains("advisor-model"),
        "/advisor status names the model: {status}"
    );
    let dump = pi.advisor_command("dump");
    assert!(dump.contains("Session update"), "/advisor dump: {dump}");
    let usage = pi.advisor_command("frobnicate");
    assert!(usage.starts_with("usage: /advisor"), "{usage}");
    let warnings: Vec<Value> = pi
        .events_since(0)
        .into_iter()
        .filter(|v| is_notify(v) && v["notifyType"] != "info")
        .collect();
    assert!(
        warnings.is_empty(),
        "no warnings on a healthy setup: {warnings:?}"
    );
    pi.quit();
}

/// P1 with the default policy (`defer`) through the real pi: a concern raised while pi is
/// mid-work (its turn made a tool call) is held to the end of the turn and arrives as a
/// visible card after the final answer, inside the same run and without another call of the
/// primary; and each review that only advises costs the advisor one request (P2).
#[test]
fn p1_v5_a_concern_raised_mid_work_arrives_as_a_card_after_the_final_answer() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    let setup = Setup::new(&primary_srv, &advisor_srv, ENABLED_SYNC, "notes\n");
    let mut pi = setup.start(tools, true, &[]);
    let mark = pi.len();
    pi.prompt_settled("Read the notes. CUE-CONCERN [read:notes.txt] [say:done]");

    let concern = "concern note raised on CUE-CONCERN";
    let requests = primary_requests(&primary_srv);
    assert_eq!(requests.len(), 2, "the tool turn and the final answer only");
    assert!(
        !request_text(&requests[1]).contains(concern),
        "not steered into the running work"
    );
    assert_eq!(agent_starts(&pi.events_since(mark)), 1, "no second run");
    let file = pi.state()["sessionFile"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    eventually("the card in the session file", || {
        advisor_entries(&file)
            .iter()
            .any(|e| e["content"].to_string().contains(concern))
    });
    let saved = advisor_entries(&file);
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(saved[0]["display"], true);
    // One request per review: the review that advised made no follow-up call.
    assert_eq!(
        advisor_srv.bodies().len(),
        reviews(&advisor_srv).len(),
        "every advisor request is a review"
    );
    pi.quit();
}

/// P1 with the default policy: a blocker raised mid-work steers into the running work at once.
#[test]
fn p1_v5_a_blocker_raised_mid_work_steers_at_once() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    let setup = Setup::new(&primary_srv, &advisor_srv, ENABLED_SYNC, "notes\n");
    let mut pi = setup.start(tools, true, &[]);
    let mark = pi.len();
    pi.prompt_settled("Read the notes. CUE-BLOCKER [read:notes.txt] [say:done]");

    let blocker = "blocker note raised on CUE-BLOCKER";
    let requests = primary_requests(&primary_srv);
    assert!(requests.len() >= 2, "{}", requests.len());
    let second = request_text(&requests[1]);
    assert!(
        second.contains(blocker) && second.contains("severity=\"blocker\""),
        "the steer reaches the next call: {second}"
    );
    assert_eq!(
        agent_starts(&pi.events_since(mark)),
        1,
        "inside the same run"
    );
    pi.quit();
}

/// (b) idle wake: a blocker raised after the run went idle starts a new run carrying it
/// (interrupt policy, D3).
#[test]
fn v5_d3_a_blocker_while_idle_wakes_pi() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    // The advisor model named by ADVISOR_MODEL alone (V5), resolved through pi's registry.
    let setup = Setup::new(&primary_srv, &advisor_srv, UNNAMED_ASYNC, "plain notes\n");
    let mut pi = setup.start(
        tools,
        true,
        &[("ADVISOR_MODEL", "advisorprov/advisor-model")],
    );
    let mark = pi.len();
    pi.prompt_settled("Answer right away. [say:cue-late-blocker]");
    assert_eq!(primary_requests(&primary_srv).len(), 1);
    // The blocker arrives ~1.5 s later, while pi is idle: it wakes pi.
    let (woke, _) = pi.wait_from(mark, "a second run", |v| v["type"] == "agent_start");
    let (woke, _) = pi.wait_from(woke + 1, "a second run", |v| v["type"] == "agent_start");
    pi.wait_from(woke, "the woken run settling", |v| {
        v["type"] == "agent_settled"
    });
    let requests = primary_requests(&primary_srv);
    assert_eq!(requests.len(), 2);
    let text = request_text(&requests[1]);
    assert!(
        text.contains("blocker note raised on CUE-LATE-BLOCKER")
            && text.contains("severity=\"blocker\""),
        "the woken run's request carries the blocker: {text}"
    );
    pi.quit();
}

/// A5: a nit raised while pi is idle wakes nothing and rides the next prompt's first request
/// (handed over from `before_agent_start`).
#[test]
fn v5_a5_a_nit_raised_while_idle_goes_with_the_next_prompt() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    // D3's routing (the default before P1 made `defer` the default).
    let config = format!("{ENABLED_ASYNC}  policy: interrupt\n");
    let setup = Setup::new(&primary_srv, &advisor_srv, &config, "notes\n");
    let mut pi = setup.start(tools, true, &[]);
    let mark = pi.len();
    pi.prompt_settled("Quick answer. [say:cue-late-nit]");
    // The nit is recorded once status counts it pending (an advise-only turn makes no
    // follow-up call to wait for, P2).
    let deadline = Instant::now() + WAIT;
    loop {
        let status = pi.advisor_command("status");
        if status.contains("pending 1") {
            break;
        }
        assert!(Instant::now() < deadline, "the nit recorded: {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        agent_starts(&pi.events_since(mark)),
        1,
        "a nit wakes nothing"
    );
    assert_eq!(primary_requests(&primary_srv).len(), 1);
    pi.prompt_settled("Next. [say:next]");
    let requests = primary_requests(&primary_srv);
    assert_eq!(requests.len(), 2);
    let text = request_text(&requests[1]);
    assert!(
        text.contains("nit note raised on CUE-LATE-NIT"),
        "the next prompt's first request carries the nit: {text}"
    );
    let file = pi.state()["sessionFile"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let saved = advisor_entries(&file);
    assert_eq!(saved.len(), 1, "{saved:?}");
    pi.quit();
}

/// S1: a `turn_end` waiting on syncBacklog is cut short by the user's abort (the wait is raced
/// against pi's signal, as integrations/pi/README.md explains), so `abort` answers long before
/// the advisor.
#[test]
fn v5_s1_abort_cuts_the_sync_backlog_wait_short() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    let setup = Setup::new(&primary_srv, &advisor_srv, ENABLED_SYNC, "notes\n");
    let mut pi = setup.start(tools, true, &[]);
    let mark = pi.len();
    pi.call(json!({"type": "prompt", "message": "Read. CUE-STALL [read:notes.txt] [say:x]"}));
    // The review of turn 1 stalls for a minute: turn_end is waiting on it.
    eventually("the stalled review", || advisor_srv.bodies().len() == 1);
    // Without the race, abort would wait for the handler, held by the server's 30 s limit.
    let quick = Duration::from_secs(10);
    let before_abort = pi.len();
    pi.send(&json!({"type": "abort", "id": "abort-1"}));
    pi.wait_within(before_abort, "the reply to abort", quick, |v| {
        v["type"] == "response" && v["id"] == "abort-1"
    });
    let (_, settled) = pi.wait_within(mark, "agent_settled", quick, |v| {
        v["type"] == "agent_settled"
    });
    assert_eq!(settled["aborted"], true);
    assert_eq!(
        primary_requests(&primary_srv).len(),
        1,
        "no model call after the abort"
    );
}

/// (d) compaction, `new_session` and `fork` reset the advisor (R1): after `compact` the next
/// review is a fresh context holding the bounded replay (the summary and the new turn); after
/// `new_session` it holds nothing of the old session; after a fork, the branch kept.
#[test]
fn v5_r1_compaction_and_new_session_reset_the_advisor() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    // Enough text that pi finds something to summarise (it estimates tokens from characters).
    let notes = format!(
        "OLD-NOTES-MARKER\n{}",
        "a line of filler text\n".repeat(200)
    );
    let setup = Setup::new(&primary_srv, &advisor_srv, ENABLED_SYNC, &notes);
    let mut pi = setup.start(tools, true, &[]);
    eventually("advisor serve started", || {
        !serve_children(pi.pid()).is_empty()
    });
    let child = serve_children(pi.pid());
    assert_eq!(child.len(), 1, "one advisor serve per pi: {child:?}");
    pi.prompt_settled("First run. [read:notes.txt] [say:FIRST-RUN-MARKER]");
    let first_file = session_file(&mut pi);
    pi.prompt_settled("Between. [read:notes.txt] [say:BETWEEN-MARKER]");
    let before = reviews(&advisor_srv).len();
    assert_eq!(before, 4, "every turn was reviewed");

    pi.call(json!({"type": "compact"}));
    pi.prompt_settled("Second run. [say:SECOND-RUN-MARKER]");
    let after_compact = reviews(&advisor_srv);
    assert_eq!(after_compact.len(), before + 1);
    assert_fresh_replay(
        &after_compact[before],
        &["SUMMARY-MARKER", "SECOND-RUN-MARKER"],
        &[],
    );

    pi.call(json!({"type": "new_session"}));
    pi.prompt_settled("Third run. [say:THIRD-RUN-MARKER]");
    // V5: still the one child, serving the new session too.
    assert_eq!(
        serve_children(pi.pid()),
        child,
        "one advisor serve after new_session"
    );
    let new_file = session_file(&mut pi);
    assert_ne!(new_file, first_file, "new_session made a new session file");
    let after_new = reviews(&advisor_srv);
    assert_eq!(after_new.len(), before + 2);
    let fresh = &after_new[before + 1];
    let text = request_text(fresh);
    assert!(text.contains("THIRD-RUN-MARKER"));
    for old in [
        "SUMMARY-MARKER",
        "FIRST-RUN-MARKER",
        "BETWEEN-MARKER",
        "SECOND-RUN-MARKER",
        "read(notes.txt)",
    ] {
        assert!(
            !text.contains(old),
            "nothing old after new_session ({old}): {text}"
        );
    }

    // A fork from the fourth prompt: the advisor starts over on the branch before it.
    pi.prompt_settled("Fourth run. [say:FOURTH-RUN-MARKER]");
    fork_before(&mut pi, "Fourth run");
    pi.prompt_settled("Fifth run. [say:FIFTH-RUN-MARKER]");
    assert_eq!(
        serve_children(pi.pid()),
        child,
        "one advisor serve after the fork"
    );
    let fork_file = session_file(&mut pi);
    assert!(
        fork_file != new_file && fork_file != first_file,
        "{fork_file}"
    );
    let after_fork = reviews(&advisor_srv);
    assert_eq!(after_fork.len(), before + 4);
    assert_fresh_replay(
        &after_fork[before + 3],
        &["THIRD-RUN-MARKER", "FIFTH-RUN-MARKER"],
        &["FOURTH-RUN-MARKER"],
    );
    pi.quit();
    // G7: each session's advisor transcript sits beside that session's file — the audit
    // followed new_session and the fork instead of going on beside the first file.
    eventually("the advisor child to end with pi", || {
        child.iter().all(|&pid| !alive(pid))
    });
    let (first, new, fork) = (
        audit_text(&first_file),
        audit_text(&new_file),
        audit_text(&fork_file),
    );
    assert!(first.contains("FIRST-RUN-MARKER"), "{first}");
    assert!(
        !first.contains("THIRD-RUN-MARKER") && !first.contains("FIFTH-RUN-MARKER"),
        "the first session's audit holds only its own reviews: {first}"
    );
    assert!(
        new.contains("THIRD-RUN-MARKER"),
        "beside the new session: {new}"
    );
    assert!(!new.contains("FIRST-RUN-MARKER"), "{new}");
    assert!(!new.contains("FIFTH-RUN-MARKER"), "{new}");
    assert!(fork.contains("FIFTH-RUN-MARKER"), "beside the fork: {fork}");
}

/// Forks the session before the user prompt starting with `prompt` (RPC `fork`).
pub(super) fn fork_before(pi: &mut Pi, prompt: &str) {
    let forks = pi.call(json!({"type": "get_fork_messages"}));
    let entry = forks["data"]["messages"]
        .as_array()
        .and_then(|m| {
            m.iter()
                .find(|x| x["text"].as_str().is_some_and(|t| t.starts_with(prompt)))
        })
        .map(|x| x["entryId"].clone())
        .unwrap_or_else(|| panic!("no prompt {prompt:?} to fork from: {forks}"));
    pi.call(json!({"type": "fork", "entryId": entry}));
}

/// R1: `review` is the first of a fresh advisor context (one user message, the replay), which
/// holds every marker of `has` and none of `lacks`.
pub(super) fn assert_fresh_replay(review: &Value, has: &[&str], lacks: &[&str]) {
    assert!(is_fresh(review), "a fresh advisor context: {review}");
    let text = request_text(review);
    for marker in has {
        assert!(text.contains(marker), "the replay holds {marker}: {text}");
    }
    for marker in lacks {
        assert!(!text.contains(marker), "the replay lacks {marker}: {text}");
    }
}

/// The session file pi is writing now (RPC `get_state`).
pub(super) fn session_file(pi: &mut Pi) -> String {
    let file = pi.state()["sessionFile"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!file.is_empty(), "pi names its session file");
    file
}

/// The advisor's transcript of `session_file` (P9: `<stem>/__advisor.jsonl`), or "" when
/// none.
fn audit_text(session_file: &str) -> String {
    let path = Path::new(session_file);
    std::fs::read_to_string(path.with_extension("").join("__advisor.jsonl")).unwrap_or_default()
}

/// C1 through pi: `/advisor toggle` (any case) turns a running advisor off — the user's next
/// turn is not reviewed, status says off — and a bare `/advisor` turns it on again, with a
/// fresh context seeded at the current end: the next review holds only the new turn.
#[test]
fn v5_c1_toggle_turns_the_advisor_off_and_on_again() {
    let Some(tools) = tools() else { return };
    let w = world(ENABLED_SYNC, "notes\n");
    let (primary_srv, advisor_srv) = (&w.primary, &w.advisor);
    let mut pi = w.setup.start(tools, true, &[]);
    pi.prompt_settled("One. [say:one]");
    assert_eq!(reviews(advisor_srv).len(), 1, "on at the start");

    let off = pi.advisor_command("TOGGLE");
    assert_eq!(off, "advisor: off");
    let status = pi.advisor_command("status");
    assert!(status.contains("off"), "{status}");
    let mark = pi.len();
    pi.prompt_settled("Two. CUE-BLOCKER [say:two]");
    assert_eq!(
        reviews(advisor_srv).len(),
        1,
        "toggled off: nothing reviewed"
    );
    assert_eq!(agent_starts(&pi.events_since(mark)), 1, "no advice woke pi");
    let last = primary_requests(primary_srv);
    assert!(!request_text(last.last().unwrap()).contains("<advisory"));

    let on = pi.advisor_command("");
    assert_eq!(on, "advisor: on");
    let status = pi.advisor_command("status");
    assert!(status.contains("advisor-model"), "{status}");
    pi.prompt_settled("Three. [say:three]");
    let after = reviews(advisor_srv);
    assert_eq!(after.len(), 2, "toggled on: reviewing again");
    let text = request_text(&after[1]);
    assert!(text.contains("finished; THREE"), "{text}");
    assert!(
        !text.contains("finished; ONE") && !text.contains("finished; TWO"),
        "a fresh context seeded at the end (C1, X4): {text}"
    );
    pi.quit();
}

/// C2 through pi: `/advisor test nit …` answers the user at once and the note goes the normal
/// way of a nit raised while idle — with the next prompt, into the primary's first request,
/// saved as an advisor `custom_message`; `/advisor test blocker …` while idle wakes pi (D3).
#[test]
fn v5_c2_advisor_test_injects_an_advisory_through_the_normal_delivery_path() {
    let Some(tools) = tools() else { return };
    let w = world(ENABLED_ASYNC, "notes\n");
    let primary_srv = &w.primary;
    let mut pi = w.setup.start(tools, true, &[]);
    pi.prompt_settled("One. [say:one]");

    let reply = pi.advisor_command("test nit TEST-NIT-MARKER check the setup");
    assert!(reply.starts_with("advisor test:"), "{reply}");
    let mark = pi.len();
    pi.prompt_settled("Next. [say:next]");
    assert_eq!(agent_starts(&pi.events_since(mark)), 1);
    let requests = primary_requests(primary_srv);
    assert_eq!(requests.len(), 2);
    let text = request_text(&requests[1]);
    assert!(
        text.contains("TEST-NIT-MARKER check the setup") && text.contains("severity=\"nit\""),
        "the next prompt's first request carries the test nit: {text}"
    );
    let file = session_file(&mut pi);
    let saved = advisor_entries(&file);
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(
        saved[0].to_string().contains("TEST-NIT-MARKER"),
        "{saved:?}"
    );

    let mark = pi.len();
    let reply = pi.advisor_command("test blocker TEST-BLOCKER-MARKER stop now");
    assert!(reply.starts_with("advisor test:"), "{reply}");
    let (woke, _) = pi.wait_from(mark, "the woken run", |v| v["type"] == "agent_start");
    pi.wait_from(woke, "the woken run settling", |v| {
        v["type"] == "agent_settled"
    });
    let requests = primary_requests(primary_srv);
    assert_eq!(requests.len(), 3, "the blocker started one run");
    let text = request_text(&requests[2]);
    assert!(
        text.contains("TEST-BLOCKER-MARKER stop now") && text.contains("severity=\"blocker\""),
        "the woken run's request carries the test blocker: {text}"
    );
    pi.quit();
}

/// F3 through pi: a refused key pauses the advisor, and the server's notice reaches the user
/// through `ctx.ui.notify`; pi is not held up; `/advisor on` resumes it.
#[test]
fn v5_f3_a_server_notice_reaches_the_user() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    let setup = Setup::new(&primary_srv, &advisor_srv, ENABLED_SYNC, "notes\n");
    let mut pi = setup.start(tools, true, &[]);
    let mark = pi.len();
    pi.prompt_settled("Go. CUE-DENIED [read:notes.txt] [say:done]");
    assert_eq!(
        primary_requests(&primary_srv).len(),
        2,
        "pi was not held up"
    );
    let ours = [
        "advisor: on",
        "advisor: off",
        "pi goes on without",
        "usage:",
    ];
    let (_, notice) = pi.wait_from(mark, "the server's notice", |v| {
        is_notify(v)
            && v["message"]
                .as_str()
                .is_some_and(|m| !ours.iter().any(|o| m.contains(o)))
    });
    let text = notice["message"].as_str().unwrap_or_default();
    assert!(
        text.contains("401") || text.to_lowercase().contains("paus"),
        "{text}"
    );
    // `/advisor on` resumes the paused advisor: the next turn is reviewed again.
    let reviewed = reviews(&advisor_srv).len();
    pi.advisor_command("on");
    pi.prompt_settled("Again. [say:again]");
    assert_eq!(
        reviews(&advisor_srv).len(),
        reviewed + 1,
        "reviewing again after /advisor on"
    );
    pi.quit();
}

/// K1 + V5: a project's `.omp/config.yml` (flow style here) overrides the agent directory's
/// `advisor.enabled`; the extension's own state file (`/advisor on`) wins over both.
#[test]
fn v5_k1_the_project_file_overrides_and_the_state_file_wins() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    let setup = Setup::new(&primary_srv, &advisor_srv, ENABLED_SYNC, "notes\n");
    std::fs::create_dir_all(setup.work.join(".omp")).expect("mkdir .omp");
    std::fs::write(
        setup.work.join(".omp/config.yml"),
        "advisor: {enabled: false}  # this project: no advisor\n",
    )
    .expect("project config");
    let mut pi = setup.start(tools, true, &[]);
    pi.prompt_settled("One. [say:one]");
    assert_eq!(
        advisor_srv.bodies().len(),
        0,
        "the project file turned it off"
    );
    let status = pi.advisor_command("status");
    assert!(status.contains("off"), "{status}");
    pi.advisor_command("on");
    pi.quit();

    let mut pi = setup.start(tools, true, &[]);
    pi.prompt_settled("Two. [say:two]");
    assert_eq!(
        reviews(&advisor_srv).len(),
        1,
        "the state file wins over the project file"
    );
    pi.quit();
}

/// (e) killing the advisor child leaves pi working; one notice says so, and status says
/// unavailable until a new child starts (`v5_dead_child_restarts_with_backoff`).
#[test]
fn v5_a_dead_advisor_child_leaves_pi_working_with_one_notice() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    let setup = Setup::new(&primary_srv, &advisor_srv, ENABLED_SYNC, "notes\n");
    let mut pi = setup.start(tools, true, &[]);
    let mark = pi.len();
    eventually("advisor serve started", || {
        !serve_children(pi.pid()).is_empty()
    });
    let child = serve_children(pi.pid())[0];
    Command::new("kill")
        .args(["-9", &child.to_string()])
        .status()
        .expect("kill");
    pi.wait_notice(mark, "stopped");
    let status = pi.advisor_command("status");
    assert!(status.contains("unavailable"), "{status}");
    let mark = pi.len();
    pi.prompt_settled("Still there? [read:notes.txt] [say:alive]");
    pi.prompt_settled("And again. [say:alive-again]");
    let requests = primary_requests(&primary_srv);
    assert_eq!(requests.len(), 3, "pi answered both prompts");
    assert!(!requests
        .iter()
        .any(|r| request_text(r).contains("<advisory")));
    let again = pi.notices_holding(mark, "stopped");
    assert!(again.is_empty(), "the death was said once: {again:?}");
    pi.quit();
}

/// (f) + V5 on/off: off until turned on; `/advisor on` persists across a restart (it wins over
/// the K1 files); pi exiting — even by SIGKILL — ends the child; `/advisor off` persists too.
#[test]
fn v5_on_off_persist_across_restarts_and_pi_exiting_ends_the_child() {
    let Some(tools) = tools() else { return };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(advisor));
    let config = "modelRoles:\n  advisor: advisorprov/advisor-model\nadvisor:\n  syncBacklog: 1\n";
    let setup = Setup::new(&primary_srv, &advisor_srv, config, "CUE-NIT: y\n");

    // Fresh setup, nothing enabled: no child, no reviews.
    let mut pi = setup.start(tools, true, &[]);
    pi.prompt_settled("One. [say:one]");
    assert!(serve_children(pi.pid()).is_empty());
    assert_eq!(advisor_srv.bodies().len(), 0);
    let on = pi.advisor_command("ON");
    assert!(on.contains("on"), "{on}");
    eventually("advisor serve started", || {
        !serve_children(pi.pid()).is_empty()
    });
    let child = serve_children(pi.pid())[0];
    Command::new("kill")
        .args(["-9", &pi.pid().to_string()])
        .status()
        .expect("kill pi");
    eventually("the child to end with pi", || !alive(child));
    drop(pi);

    // The state file turned it on for the next pi.
    let mut pi = setup.start(tools, true, &[]);
    eventually("advisor serve started", || {
        !serve_children(pi.pid()).is_empty()
    });
    pi.prompt_settled("Two. [read:notes.txt] [say:two]");
    assert!(
        !reviews(&advisor_srv).is_empty(),
        "the turned-on advisor reviewed"
    );
    let off = pi.advisor_command("off");
    assert!(off.contains("off"), "{off}");
    let child = serve_children(pi.pid())[0];
    pi.quit();
    eventually("the child to end when pi quits", || !alive(child));

    // Off persists.
    let reviewed = advisor_srv.bodies().len();
    let mut pi = setup.start(tools, true, &[]);
    pi.prompt_settled("Three. [say:three]");
    assert!(serve_children(pi.pid()).is_empty());
    assert_eq!(advisor_srv.bodies().len(), reviewed);
    pi.quit();
}

/// One scenario's world: the scripted primary and advisor servers, running on `_rt`, and the
/// directories of a setup with `config` (K1) and `notes`.
pub(super) struct World {
    pub(super) primary: ModelServer,
    pub(super) advisor: ModelServer,
    pub(super) setup: Setup,
    _rt: Runtime,
}

pub(super) fn world(config: &str, notes: &str) -> World {
    let rt = runtime();
    let primary = ModelServer::start(&rt, Arc::new(primary));
    let advisor = ModelServer::start(&rt, Arc::new(advisor));
    let setup = Setup::new(&primary, &advisor, config, notes);
    World {
        primary,
        advisor,
        setup,
        _rt: rt,
    }
}

/// The tool results for `tool` in a session file, as (text, isError).
pub(super) fn tool_results_in(file: &str, tool: &str) -> Vec<(String, bool)> {
    session_entries(file)
        .into_iter()
        .filter(|e| {
            e["type"] == "message"
                && e["message"]["role"] == "toolResult"
                && e["message"]["toolName"] == tool
        })
        .map(|e| {
            let text = message_text(&e["message"]);
            (text, e["message"]["isError"] == true)
        })
        .collect()
}

/// The messages of a request answering tool calls (OpenAI `role: "tool"`), as text.
pub(super) fn tool_messages(body: &Value) -> Vec<String> {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(message_text)
        .collect()
}

/// G8: the primary calls `ask_advisor`; the advisor's request carries the question
/// after the turns it reviewed and offers no `advise`; the answer is the tool result the
/// primary's next request carries and the session file keeps.
#[test]
fn v5_g8_the_primary_asks_its_advisor_with_the_ask_advisor_tool() {
    let Some(tools) = tools() else { return };
    let w = world(ENABLED_SYNC, "the deploy script reads notes.txt\n");
    let (primary_srv, advisor_srv) = (&w.primary, &w.advisor);
    let mut pi = w.setup.start(tools, true, &[]);
    let question = "I am about to overwrite notes.txt. Is that safe?";
    pi.prompt_settled(&format!(
        "Read the notes, then check before overwriting. [read:notes.txt] [ask:{question}] [say:asked]"
    ));

    let requests = primary_requests(primary_srv);
    assert_eq!(requests.len(), 3, "read, ask, final answer");
    let offered: Vec<&Value> = requests[0]["tools"]
        .as_array()
        .map(|t| t.iter().collect())
        .unwrap_or_default();
    let tool = offered
        .iter()
        .find(|t| t["function"]["name"] == "ask_advisor")
        .expect("the primary is offered ask_advisor");
    let description = tool["function"]["description"].as_str().unwrap_or_default();
    for when in ["irreversible", "stuck", "unsure"] {
        assert!(description.contains(when), "{description}");
    }
    assert_eq!(
        tool["function"]["parameters"]["required"],
        json!(["question"]),
        "{tool}"
    );

    // The advisor answered from its context: the reviewed turn first, then the question
    // (which stays in its context for the reviews after it).
    let asks: Vec<Value> = advisor_srv
        .bodies()
        .into_iter()
        .filter(|b| {
            messages(b)
                .last()
                .is_some_and(|m| message_text(m).contains("Question from the agent"))
        })
        .collect();
    assert_eq!(asks.len(), 1, "one ask reached the advisor");
    let msgs = messages(&asks[0]);
    let (last, before) = msgs.split_last().expect("messages");
    assert!(message_text(last).contains(question), "{last}");
    assert!(
        before
            .iter()
            .any(|m| message_text(m).contains("read(notes.txt)")),
        "the question comes after the reviewed turn: {before:?}"
    );
    let advisor_tools = asks[0]["tools"].to_string();
    assert!(
        !advisor_tools.contains("\"advise\""),
        "no advise while answering: {advisor_tools}"
    );

    // The primary got the answer as the tool result: in its next request and in the file.
    let results = tool_messages(&requests[2]);
    assert!(
        results.iter().any(|r| r.contains(ASK_ANSWER)),
        "the answer reaches the primary's next request: {results:?}"
    );
    let file = pi.state()["sessionFile"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let saved = tool_results_in(&file, "ask_advisor");
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(
        saved[0].0.contains(ASK_ANSWER) && !saved[0].1,
        "saved as the tool's result: {saved:?}"
    );
    let status = pi.advisor_command("status");
    assert!(status.contains("consults: 1"), "{status}");
    pi.quit();
}

/// G8 with `advisor.consult: false`: the tool stays offered and answers, as an error, that
/// consulting is off; no question reaches the advisor and the primary goes on.
#[test]
fn v5_g8_with_consult_off_ask_advisor_says_so_and_the_run_goes_on() {
    let Some(tools) = tools() else { return };
    let w = world(&format!("{ENABLED_SYNC}  consult: false\n"), "notes\n");
    let (primary_srv, advisor_srv) = (&w.primary, &w.advisor);
    let mut pi = w.setup.start(tools, true, &[]);
    pi.prompt_settled("Check first. [ask:Should I delete the build dir?] [say:went on]");
    let requests = primary_requests(primary_srv);
    assert_eq!(requests.len(), 2, "ask, then the final answer");
    let results = tool_messages(&requests[1]);
    assert!(
        results
            .iter()
            .any(|r| r.contains("consulting the advisor is turned off (advisor.consult: false)")),
        "{results:?}"
    );
    let file = pi.state()["sessionFile"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let saved = tool_results_in(&file, "ask_advisor");
    assert_eq!(saved.len(), 1);
    assert!(saved[0].1, "saved as an error result: {saved:?}");
    assert!(
        advisor_srv
            .bodies()
            .iter()
            .all(|b| !request_text(b).contains("Question from the agent")),
        "no question reached the advisor"
    );
    pi.quit();
}

/// G8: a user abort ends an `ask_advisor` call that is still waiting for the advisor at once
/// (the wait is raced against the tool's abort signal), and pi settles.
#[test]
fn v5_g8_an_abort_ends_a_waiting_ask_advisor_call_at_once() {
    let Some(tools) = tools() else { return };
    let w = world(ENABLED_ASYNC, "notes\n");
    let (primary_srv, advisor_srv) = (&w.primary, &w.advisor);
    let mut pi = w.setup.start(tools, true, &[]);
    let mark = pi.len();
    pi.call(json!({"type": "prompt", "message": "Ask first. [ask:CUE-SLOW-ANSWER is this safe?] [say:never]"}));
    eventually("the question at the advisor", || {
        advisor_srv
            .bodies()
            .iter()
            .any(|b| request_text(b).contains("CUE-SLOW-ANSWER is this safe?"))
    });
    let aborted = Instant::now();
    pi.call(json!({"type": "abort"}));
    let (_, settled) = pi.wait_within(mark, "agent_settled", Duration::from_secs(10), |v| {
        v["type"] == "agent_settled"
    });
    assert_eq!(settled["aborted"], true);
    assert!(
        aborted.elapsed() < Duration::from_secs(5),
        "the abort did not wait for the advisor: {:?}",
        aborted.elapsed()
    );
    assert_eq!(primary_requests(primary_srv).len(), 1);
    pi.quit();
}

// ---------------------------------------------------------------------------------------------
// A failing advisor process costs pi at most the bridge's wait budget (S2, F4, V5)

/// Sends `signal` (`STOP`, `KILL`, …) to process `pid`.
pub(super) fn signal(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{signal} {pid}");
}

/// Kills a process when dropped, so a test that fails never leaves a stopped child behind.
pub(super) struct KillOnDrop(pub(super) u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if alive(self.0) {
            let _ = Command::new("kill")
                .args(["-KILL", &self.0.to_string()])
                .status();
        }
    }
}

/// The one `advisor serve` child of `pi`, once it runs.
pub(super) fn the_child(pi: &Pi) -> u32 {
    eventually("advisor serve started", || {
        serve_children(pi.pid()).len() == 1
    });
    serve_children(pi.pid())[0]
}

/// The longest stretch, from `start` on, during which pi sent nothing on its RPC stream — an
/// awaited handler shows up as such a gap — and the total time until the event at `until`.
fn longest_silence(pi: &Pi, from: usize, until: usize, start: Instant) -> (Duration, Duration) {
    let s = pi.stream.0.lock();
    let mut last = start;
    let mut longest = Duration::ZERO;
    for &t in &s.times[from..=until] {
        longest = longest.max(t.saturating_duration_since(last));
        last = t;
    }
    (longest, last.saturating_duration_since(start))
}

/// The bridge's wait budget per pi event (docs/LIMITS.md), with slack for a loaded machine.
const BUDGET_WITH_SLACK: Duration = Duration::from_millis(3000);

/// S2 / F4 through pi: an `advisor serve` that stops answering (SIGSTOP) costs pi one wait of
/// at most the 2 s budget: the event that waits says why in one notice, the child is ended by
/// its PID, and no later event of the run waits on it — with syncBacklog on (where `turn_end`
/// waits for the advisor by design) and off (the default).
#[test]
fn s2_wedged_child_costs_pi_at_most_2s_per_event() {
    let Some(tools) = tools() else { return };
    for config in [ENABLED_SYNC, ENABLED_ASYNC] {
        wedged_child_costs_at_most_the_budget(tools, config);
    }
}

fn wedged_child_costs_at_most_the_budget(tools: &PiTools, config: &str) {
    let w = world(config, "notes\n");
    let mut pi = w.setup.start(tools, true, &[]);
    pi.prompt_settled("Warm up. [say:warm]");
    eventually("the warm-up reviewed", || reviews(&w.advisor).len() == 1);
    let child = the_child(&pi);
    let _guard = KillOnDrop(child);
    signal(child, "STOP");

    let mark = pi.len();
    let started = Instant::now();
    pi.send(&json!({"type": "prompt", "id": "three-turns",
        "message": "Three turns. [read:notes.txt,notes.txt] [say:done]"}));
    let (settled, _) = pi.wait_within(mark, "agent_settled", Duration::from_secs(300), |v| {
        v["type"] == "agent_settled"
    });
    let (longest, wall) = longest_silence(&pi, mark, settled, started);
    let sync = config.contains("syncBacklog: 1");
    eprintln!(
        "3-turn run with a stopped advisor child (syncBacklog {}): {wall:?} (longest wait {longest:?})",
        if sync { "1" } else { "off" }
    );
    assert!(
        longest < BUDGET_WITH_SLACK,
        "no pi event waits more than the budget: {longest:?}"
    );
    assert_one_wait_for_a_stopped_child(&pi, &w.primary, mark, wall, child);
    pi.quit();
}

/// S2 / F4, after a three-turn run begun (at event `mark`) with the child stopped: all three
/// turns ran, the run took at most one wait budget (`wall`), one notice said why and nothing
/// else was said, and the child was ended by its PID.
pub(super) fn assert_one_wait_for_a_stopped_child(
    pi: &Pi,
    primary: &ModelServer,
    mark: usize,
    wall: Duration,
    child: u32,
) {
    assert_eq!(
        primary_requests(primary).len(),
        1 + 3,
        "all three turns ran"
    );
    assert!(
        wall < BUDGET_WITH_SLACK + Duration::from_secs(2),
        "only one event waited: {wall:?}"
    );
    let notices = pi.notices_since(mark);
    let why = pi.notices_holding(mark, "did not answer");
    assert_eq!(why.len(), 1, "one notice says why: {notices:?}");
    assert!(why[0].contains("pi goes on without"), "{}", why[0]);
    assert_eq!(
        notices.len(),
        1,
        "nothing else was said about it: {notices:?}"
    );
    eventually("the stopped child ended by its PID", || !alive(child));
}

/// S2 through pi: a `turn_end` that waits for syncBacklog by design is not mistaken for a
/// wedged child while the child answers its liveness checks — but a child stopped during that
/// wait is found by the next check (every second, 2 s to answer), failed with one notice, and the
/// run goes on long before the wait's own 35 s limit.
#[test]
fn s2_a_child_stopped_during_a_sync_wait_is_found_by_its_liveness_check() {
    let Some(tools) = tools() else { return };
    let w = world(ENABLED_SYNC, "notes\n");
    let mut pi = w.setup.start(tools, true, &[]);
    let child = the_child(&pi);
    let _guard = KillOnDrop(child);
    let mark = pi.len();
    pi.call(json!({"type": "prompt", "message": "Read. CUE-STALL [read:notes.txt] [say:x]"}));
    // The review of turn 1 stalls for a minute: its turn_end waits on it (S1).
    eventually("the stalled review", || w.advisor.bodies().len() == 1);
    signal(child, "STOP");
    let stopped = Instant::now();
    pi.wait_within(mark, "agent_settled", Duration::from_secs(60), |v| {
        v["type"] == "agent_settled"
    });
    let took = stopped.elapsed();
    eprintln!("a run whose child stopped during a sync wait went on after {took:?}");
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert_eq!(primary_requests(&w.primary).len(), 2, "both turns ran");
    let why = pi.notices_holding(mark, "stopped answering");
    assert_eq!(why.len(), 1, "{:?}", pi.notices_since(mark));
    eventually("the stopped child ended by its PID", || !alive(child));
    pi.quit();
}

/// An executable `advisor` stand-in in `dir` that reads its input and never answers.
fn silent_advisor(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("silent-advisor");
    std::fs::write(&path, "#!/bin/sh\nexec cat >/dev/null\n").expect("write the silent advisor");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// V5 / S2 through pi: an advisor process that never answers does not hold pi's start, nor a
/// new session: the session opens in the background; `/advisor status` says it is starting
/// (not "off", the settings enable it); the first event that needs an answer waits at most the
/// budget, says why once, and status then says unavailable.
#[test]
fn v5_silent_child_does_not_hold_pi_start() {
    let Some(tools) = tools() else { return };
    let w = world(ENABLED_SYNC, "notes\n");
    let bin = silent_advisor(&w.setup.home);
    let started = Instant::now();
    w.setup.start(tools, false, &[]).quit();
    eprintln!("pi ready without the extension: {:?}", started.elapsed());
    let started = Instant::now();
    let mut pi = w.setup.start(
        tools,
        true,
        &[("ADVISOR_BIN", bin.to_str().unwrap_or_default())],
    );
    let ready = started.elapsed();
    eprintln!("pi ready (get_state answered) with a silent advisor child: {ready:?}");
    assert!(
        ready < Duration::from_secs(10),
        "pi's start was held: {ready:?}"
    );
    let status = pi.advisor_command("status");
    assert!(status.contains("starting"), "{status}");
    assert!(!status.contains("off"), "{status}");

    let mark = pi.len();
    let before_new = Instant::now();
    pi.call(json!({"type": "new_session"}));
    let new_session = before_new.elapsed();
    eprintln!("new_session with a silent advisor child: {new_session:?}");
    assert!(new_session < BUDGET_WITH_SLACK, "{new_session:?}");

    let run = Instant::now();
    pi.prompt_settled("Go. [say:went]");
    let took = run.elapsed();
    eprintln!("first run with a silent advisor child: {took:?}");
    assert!(
        took < BUDGET_WITH_SLACK + Duration::from_secs(2),
        "{took:?}"
    );
    assert_eq!(primary_requests(&w.primary).len(), 1);
    let why = pi.notices_holding(mark, "did not answer");
    assert_eq!(why.len(), 1, "said once: {why:?}");
    let status = pi.advisor_command("status");
    assert!(status.contains("unavailable: "), "{status}");

    // The next turn, a second later, starts another (silent) process: it costs that run at
    // most one budget more, and says so once more.
    std::thread::sleep(Duration::from_millis(1100));
    let mark = pi.len();
    let run = Instant::now();
    pi.prompt_settled("Again. [read:notes.txt] [say:again]");
    let took = run.elapsed();
    eprintln!("a run that restarts a silent advisor child: {took:?}");
    assert!(
        took < BUDGET_WITH_SLACK + Duration::from_secs(2),
        "{took:?}"
    );
    let why = pi.notices_holding(mark, "did not answer");
    assert_eq!(why.len(), 1, "{why:?}");
    pi.quit();
}

/// V5 through pi: an advisor binary that cannot be started is said once, with what to do;
/// pi works on, no turn tries it again, and `/advisor on` says truthfully that it is on but
/// unavailable.
#[test]
fn v5_an_advisor_binary_that_cannot_start_is_said_once_with_what_to_do() {
    let Some(tools) = tools() else { return };
    let w = world(ENABLED_SYNC, "notes\n");
    let missing = w.setup.home.join("no-such-advisor");
    let mut pi = w.setup.start(
        tools,
        true,
        &[("ADVISOR_BIN", missing.to_str().unwrap_or_default())],
    );
    let (_, notice) = pi.wait_from(0, "the notice", is_notify);
    let text = notice["message"].as_str().unwrap_or_default().to_string();
    assert!(
        text.contains("could not start") && text.contains("ADVISOR_BIN"),
        "{text}"
    );
    pi.prompt_settled("One. [say:one]");
    std::thread::sleep(Duration::from_millis(1100));
    pi.prompt_settled("Two. [say:two]");
    assert_eq!(primary_requests(&w.primary).len(), 2);
    assert_eq!(pi.notices_since(0).len(), 1, "said once");
    // `/advisor on` tries again (its failure is said again) and answers truthfully.
    let mark = pi.len();
    pi.call(json!({"type": "prompt", "message": "/advisor on"}));
    let on = pi.wait_notice(mark, "advisor: on");
    assert!(on.contains("unavailable: "), "{on}");
    pi.quit();
}

/// V5 through pi: a dead advisor process comes back at the next turn, with a fresh session
/// seeded at the end of the transcript (X4), backing off 1 s then 5 s; three deaths in ten
/// minutes end the restarts with a notice that says what to do; `/advisor on` then starts it
/// again and says so truthfully; `/advisor status` shows the state and the last reason.
#[test]
fn v5_dead_child_restarts_with_backoff() {
    let Some(tools) = tools() else { return };
    let w = world(ENABLED_SYNC, "notes\n");
    let advisor_srv = &w.advisor;
    let mut pi = w.setup.start(tools, true, &[]);
    pi.prompt_settled("One. [say:one]");
    assert_eq!(reviews(advisor_srv).len(), 1);

    // First death: back at the next turn once a second has passed.
    let first = the_child(&pi);
    let mark = pi.len();
    signal(first, "KILL");
    pi.wait_notice(mark, "stopped");
    let killed = Instant::now();
    let status = pi.advisor_command("status");
    assert!(
        status.contains("unavailable: ") && status.contains("killed by SIGKILL"),
        "status shows the state and the last reason: {status}"
    );
    assert!(status.contains("next turn"), "{status}");
    std::thread::sleep(Duration::from_millis(1100).saturating_sub(killed.elapsed()));
    pi.prompt_settled("Two. [say:two]");
    let second = the_child(&pi);
    assert_ne!(second, first, "a new advisor process");
    let after = reviews(advisor_srv);
    assert_eq!(after.len(), 2, "the new advisor reviews the turn");
    let text = request_text(&after[1]);
    assert!(text.contains("finished; TWO"), "{text}");
    assert!(
        !text.contains("finished; ONE"),
        "a fresh session seeded at the end (X4): {text}"
    );

    // Second death: no restart within 5 s.
    let mark = pi.len();
    let killed = Instant::now();
    signal(second, "KILL");
    pi.wait_notice(mark, "stopped");
    let noticed = Instant::now();
    pi.prompt_settled("Three. [say:three]");
    assert!(killed.elapsed() < Duration::from_secs(5));
    assert!(
        serve_children(pi.pid()).is_empty(),
        "backing off: no restart within 5 s"
    );
    assert_eq!(reviews(advisor_srv).len(), 2);
    std::thread::sleep(Duration::from_millis(5100).saturating_sub(noticed.elapsed()));
    pi.prompt_settled("Four. [say:four]");
    let third = the_child(&pi);
    assert_eq!(reviews(advisor_srv).len(), 3, "back after 5 s");

    // Third death within ten minutes: it stays down and the notice says what to do.
    let mark = pi.len();
    signal(third, "KILL");
    let gave_up = pi.wait_notice(mark, "stopped");
    assert!(
        gave_up.contains("3 times in 10 minutes") && gave_up.contains("/advisor on"),
        "{gave_up}"
    );
    // An environment variable cannot be set inside a running pi: the notice says to start pi
    // again with it, never to set it and then turn the advisor on.
    assert!(
        gave_up.contains("start it again with ADVISOR_SERVE_LOG=FILE set")
            && !gave_up.contains("Set ADVISOR_SERVE_LOG"),
        "{gave_up}"
    );
    std::thread::sleep(Duration::from_millis(1100));
    pi.prompt_settled("Five. [say:five]");
    assert!(serve_children(pi.pid()).is_empty(), "gave up");
    assert_eq!(
        pi.notices_holding(mark, "stopped").len(),
        1,
        "giving up is said once"
    );
    let status = pi.advisor_command("status");
    assert!(
        status.contains("unavailable: ") && status.contains("/advisor on"),
        "{status}"
    );

    // `/advisor on` starts it again, and says so.
    let on = pi.advisor_command("on");
    assert_eq!(on, "advisor: on");
    the_child(&pi);
    pi.prompt_settled("Six. [say:six]");
    assert_eq!(
        reviews(advisor_srv).len(),
        4,
        "reviewing again after /advisor on"
    );
    pi.quit();
}

/// M1 / V5 through pi: a `modelRoles.advisor` naming a model that pi's registry does not
/// have — its provider is in pi's models.json, the model is not — is explained in pi's terms:
/// the model, where it was looked up, what to set; never the server's command-line flags.
/// `/advisor status` says unavailable with the reason, not "off".
#[test]
fn v5_m1_an_unknown_model_is_explained_in_pi_terms() {
    let Some(tools) = tools() else { return };
    let config = "modelRoles:\n  advisor: advfake/no-such-model\nadvisor:\n  enabled: true\n";
    let w = world(config, "notes\n");
    let models_path = w.setup.agent.join("models.json");
    let mut models: Value =
        serde_json::from_str(&std::fs::read_to_string(&models_path).expect("models.json"))
            .expect("models.json is JSON");
    models["providers"]["advfake"] = json!({"baseUrl": w.advisor.base_url(),
        "api": "openai-completions", "apiKey": "fake-secret",
        "models": [{"id": "advfake-model", "name": "advfake-model", "reasoning": false,
            "input": ["text"], "contextWindow": 128000, "maxTokens": 4096,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]});
    std::fs::write(&models_path, models.to_string()).expect("models.json");
    let mut pi = w.setup.start(tools, true, &[]);
    let text = pi.wait_notice(0, "no-such-model");
    eprintln!("the notice: {text}");
    for needle in [
        "advfake/no-such-model",
        "models.json",
        "modelRoles.advisor",
        "ADVISOR_MODEL",
    ] {
        assert!(text.contains(needle), "the notice names {needle}: {text}");
    }
    for flag in ["--base-url", "--model", "--api"] {
        assert!(
            !text.contains(flag),
            "no command-line flags for a pi user: {text}"
        );
    }
    pi.prompt_settled("Go. [say:went]");
    assert_eq!(
        primary_requests(&w.primary).len(),
        1,
        "pi works without the advisor"
    );
    let said = pi.notices_holding(0, "no-such-model");
    assert_eq!(said.len(), 1, "said once: {said:?}");
    let status = pi.advisor_command("status");
    assert!(status.contains("unavailable: "), "{status}");
    assert!(status.contains("no-such-model"), "{status}");
    assert!(!status.contains("--"), "{status}");
    eprintln!("/advisor status: {status}");
    pi.quit();
}

/// P3 through pi: a run draws a concern (a steer), the user starts a new
/// session and switches back. The advisor re-reviews the whole branch (R1) and raises the same
/// concern — but the emission guard was seeded from the advice already in the branch (the
/// extension sends its own `advisor` messages; the server keeps them out of the review, X2), so
/// it is not given again: the next prompt's run makes one model call, no run starts by itself,
/// and the session file holds the concern once.
#[test]
fn p3_switching_back_to_a_session_neither_repeats_advice_nor_starts_a_run() {
    let Some(tools) = tools() else { return };
    // The concern steers: at a final boundary only an `agent-end` advisor's concern asks for a
    // continuation (CA16), which steers the run that still takes steering.
    let w = world(
        &format!("{ENABLED_SYNC}  policy: interrupt\n  reviewMode: agent-end\n"),
        "notes\n",
    );
    let (primary_srv, advisor_srv) = (&w.primary, &w.advisor);
    let mut pi = w.setup.start(tools, true, &[]);
    let concern = "concern note raised on CUE-CONCERN";
    pi.prompt_settled("Work. [say:cue-concern]");
    assert_eq!(
        primary_requests(primary_srv).len(),
        2,
        "the answer, then the steer"
    );
    let first = session_file(&mut pi);
    assert_eq!(advisor_entries(&first).len(), 1);

    pi.call(json!({"type": "new_session"}));
    pi.call(json!({"type": "switch_session", "sessionPath": first}));
    assert_eq!(session_file(&mut pi), first, "back on the first session");
    let mark = pi.len();
    let reviewed = reviews(advisor_srv).len();
    pi.prompt_settled("Next. [say:next]");

    // The concern is not given again: no steer, no wake, the file holds it once …
    assert_eq!(
        primary_requests(primary_srv).len(),
        3,
        "one model call for the new prompt, no steer"
    );
    assert_eq!(
        agent_starts(&pi.events_since(mark)),
        1,
        "no run started by itself"
    );
    let saved: Vec<Value> = advisor_entries(&first)
        .into_iter()
        .filter(|e| e.to_string().contains(concern))
        .collect();
    assert_eq!(
        saved.len(),
        1,
        "the session file holds the concern once: {saved:?}"
    );
    // … though the replay was reviewed (R1) and the concern came up again in that review.
    let after = reviews(advisor_srv);
    assert_eq!(after.len(), reviewed + 1, "the branch is re-reviewed");
    let replay = request_text(&after[reviewed]);
    assert!(replay.contains("CUE-CONCERN"), "{replay}");
    assert!(!replay.contains("<advisory"), "X2: {replay}");
    let status = pi.advisor_command("status");
    assert!(
        status.contains("dropped 1"),
        "the repeat was dropped: {status}"
    );
    assert_eq!(pi.state()["isStreaming"], false);
    pi.quit();
}

// ---------------------------------------------------------------------------------------------
// Measurement helpers (the measurement itself: `pi_e2e_lines::measure_turn_overhead_per_line`)

/// The `p`-th percentile (0–100) of sorted `xs`, nearest rank.
pub(super) fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * xs.len() as f64).ceil() as usize;
    xs[rank.clamp(1, xs.len()) - 1]
}
