//! `advisor hook`'s round trip (SPEC H9): the built binary is started as Claude Code starts
//! it — a new process, the hook input on standard input — and answers through the
//! background process's socket. The background process runs in this process (its places in
//! a temporary directory), so only the hook's own cost is measured: process start, input,
//! socket, answer, hook log.
//!
//! The cases, `PostToolUse` each time, as Claude Code calls the hook and again as Codex does
//! (`codex-…`):
//! 1. `nothing-due`: the advisor has nothing for the agent (budget: p99 ≤ 20 ms);
//! 2. `note-due`: a nit waits (injected with `/advisor test`, C2, outside the measured time)
//!    and comes back as `additionalContext` (checked);
//! 3. `floor-true`: `true` started the same way, the same input on its standard input — what
//!    any hook command costs; the ratio of `nothing-due` to it is printed.
//!
//! Criterion reports the mean; the p50 and p99 of every measured call are printed after it.
//! Last, the background process's memory after 200 reviews: 200 turns (a tool call and its
//! result each) reviewed one by one by an instant model that raises one nit per review
//! (nothing recorded on the model's side), resident set size before and after.
//!
//! Then `transcript-read`, the background process's read of the transcript at one hook event
//! (SPEC H10, H31) on a 20 MB Claude Code transcript that one new turn was appended to:
//! `whole` reads and parses the file whole (as every event did before H31), `appended` reads
//! only the new turn through the session's [`HostTail`](advisor::session::HostTail); both
//! hand back the same messages (checked). The ratio is printed after them.
//!
//! Run with `cargo bench --bench hook` (release build); `cargo bench --bench hook --
//! transcript-read` runs only the last group.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use advisor::hosts::daemon::{Daemon, DaemonOptions};
use advisor::hosts::paths::{current_uid, HostPaths};
use advisor::hosts::payload::{parse_payload, HookHost};
use advisor::hosts::protocol::{Request, Response, PROTOCOL_VERSION};
use advisor::model::scripted::ScriptedReply;
use advisor::model::{ModelClient, ModelFuture, ModelInfo, ModelRequest};
use advisor::providers::Catalog;
use advisor::RuntimeOptions;
use criterion::Criterion;
use serde_json::{json, Value};

#[path = "../tests/support/binary.rs"]
mod binary;

const SESSION: &str = "bench-session";

/// The background process on its own runtime, and the places the hook is pointed at.
struct Rig {
    /// The CLI the hook says it runs under (`--host`).
    host: &'static str,
    _dir: tempfile::TempDir,
    root: PathBuf,
    daemon: Arc<Daemon>,
    runtime: tokio::runtime::Runtime,
    notes: usize,
}

fn options(root: &Path, model: Option<Arc<dyn ModelClient>>) -> DaemonOptions {
    let env: BTreeMap<String, String> =
        [("HOME".to_string(), root.join("home").display().to_string())].into();
    DaemonOptions {
        paths: HostPaths {
            config_dir: root.join("config"),
            runtime_dir: root.join("run"),
            state_dir: root.join("state"),
        },
        uid: current_uid(),
        env: Arc::new(env),
        model,
        catalog: Arc::new(Catalog::builtin().expect("catalog")),
        runtime: RuntimeOptions::default(),
        idle: None,
        session_expiry: Duration::from_secs(3600),
    }
}

impl Rig {
    fn start(host: &'static str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("home/proj")).expect("dirs");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let options = options(&root, Some(Arc::new(Instant_)));
        let paths = options.paths.clone();
        let daemon = runtime.block_on(async {
            let listener = Daemon::bind(&paths, current_uid()).expect("bind");
            let daemon = Daemon::new(options).expect("daemon");
            tokio::spawn(Arc::clone(&daemon).serve(listener, std::future::pending()));
            daemon
        });
        let rig = Self {
            host,
            _dir: dir,
            root,
            daemon,
            runtime,
            notes: 0,
        };
        // The session opens and runs before anything is measured.
        rig.hook("UserPromptSubmit", json!({"prompt": "go"}));
        rig
    }

    fn input(&self, event: &str, extra: Value) -> String {
        let mut v = json!({"session_id": SESSION, "hook_event_name": event,
            "cwd": self.root.join("home/proj"), "permission_mode": "default"});
        for (k, x) in extra.as_object().expect("object") {
            v[k] = x.clone();
        }
        v.to_string()
    }

    /// Runs the built `advisor hook` once: its wall time and its standard output.
    fn hook(&self, event: &str, extra: Value) -> (Duration, Vec<u8>) {
        self.spawn(
            Command::new(binary::advisor_bin()).args(["hook", "--host", self.host]),
            event,
            extra,
        )
    }

    /// Runs `true` as a hook is run, the same input on its standard input: the floor any
    /// hook command costs (process start and exit).
    fn floor(&self, event: &str, extra: Value) -> (Duration, Vec<u8>) {
        self.spawn(&mut Command::new("/bin/true"), event, extra)
    }

    /// Runs `command` with the hook input of `event` on standard input, the places in its
    /// environment: its wall time and its standard output.
    fn spawn(&self, command: &mut Command, event: &str, extra: Value) -> (Duration, Vec<u8>) {
        let input = self.input(event, extra);
        let started = Instant::now();
        let mut child = command
            .env_clear()
            .env("HOME", self.root.join("home"))
            .env("ADVISOR_CONFIG_DIR", self.root.join("config"))
            .env("ADVISOR_RUNTIME_DIR", self.root.join("run"))
            .env("ADVISOR_STATE_DIR", self.root.join("state"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the hook command");
        // `true` may exit before it reads: a refused write is part of what it costs.
        let _ = child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes());
        let out = child.wait_with_output().expect("the hook command");
        let took = started.elapsed();
        assert!(out.status.success());
        (took, out.stdout)
    }

    /// Puts one nit in the session's aside queue (C2), outside the measured time.
    fn note(&mut self) {
        self.notes += 1;
        let command = format!("test nit bench note number {}", self.notes);
        let reply = self.runtime.block_on(self.daemon.respond(Request::Control {
            v: PROTOCOL_VERSION,
            session: Some(SESSION.into()),
            command,
        }));
        assert!(matches!(reply, Response::Control { .. }), "{reply:?}");
    }
}

/// An instant model that raises one nit per review and records nothing.
struct Instant_;

static REVIEWS: AtomicUsize = AtomicUsize::new(0);

impl ModelClient for Instant_ {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        // A review's first call advises; the call after the advise result ends it.
        let advised = request
            .messages
            .last()
            .is_some_and(|m| format!("{m:?}").contains("advise"));
        let reply = if advised {
            ScriptedReply::text("")
        } else {
            let n = REVIEWS.fetch_add(1, Ordering::Relaxed);
            ScriptedReply::advise(
                "a1",
                &format!("Review {n}: the loop re-reads config.yml on every pass."),
                Some("nit"),
            )
        };
        Box::pin(async move {
            match reply {
                ScriptedReply::Respond(r) => Ok(r),
                ScriptedReply::Fail(e) => Err(e),
            }
        })
    }

    fn info(&self) -> ModelInfo {
        ModelInfo {
            id: "bench/instant".into(),
            context_window: 200_000,
            max_output: 4096,
            reasoning: false,
        }
    }
}

fn percentile(times: &mut [Duration], p: f64) -> Duration {
    times.sort();
    let index = ((times.len() as f64 - 1.0) * p).round() as usize;
    times[index.min(times.len() - 1)]
}

fn report(name: &str, times: &mut [Duration]) {
    println!(
        "hook/{name}: {} calls, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        times.len(),
        percentile(times, 0.50).as_secs_f64() * 1e3,
        percentile(times, 0.99).as_secs_f64() * 1e3,
        percentile(times, 1.0).as_secs_f64() * 1e3,
    );
}

/// Measures `advisor hook` for `rig`'s host, under `prefix`: nothing due, then a note due.
fn hook_pair(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rig: &mut Rig,
    prefix: &str,
) -> (Vec<Duration>, Vec<Duration>) {
    let mut nothing = Vec::new();
    group.bench_function(format!("{prefix}nothing-due"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (took, out) = rig.hook("PostToolUse", json!({"tool_name": "Bash"}));
                assert!(out.is_empty(), "nothing was due");
                nothing.push(took);
                total += took;
            }
            total
        })
    });
    let mut due = Vec::new();
    group.bench_function(format!("{prefix}note-due"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                rig.note();
                let (took, out) = rig.hook("PostToolUse", json!({"tool_name": "Bash"}));
                let out: Value = serde_json::from_slice(&out).expect("a JSON answer");
                assert!(
                    out["hookSpecificOutput"]["additionalContext"]
                        .as_str()
                        .is_some_and(|c| c.contains("bench note")),
                    "{out}"
                );
                due.push(took);
                total += took;
            }
            total
        })
    });
    (nothing, due)
}

fn round_trips(c: &mut Criterion) {
    let mut group = c.benchmark_group("hook");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    let mut rig = Rig::start("claude-code");
    let (mut nothing, mut due) = hook_pair(&mut group, &mut rig, "");
    let mut floor = Vec::new();
    group.bench_function("floor-true", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (took, _) = rig.floor("PostToolUse", json!({"tool_name": "Bash"}));
                floor.push(took);
                total += took;
            }
            total
        })
    });
    drop(rig);
    let mut codex = Rig::start("codex");
    let (mut codex_nothing, mut codex_due) = hook_pair(&mut group, &mut codex, "codex-");
    group.finish();
    report("nothing-due", &mut nothing);
    report("note-due", &mut due);
    report("codex-nothing-due", &mut codex_nothing);
    report("codex-note-due", &mut codex_due);
    report("floor-true", &mut floor);
    println!(
        "hook/nothing-due / hook/floor-true: p50 {:.2}x",
        percentile(&mut nothing, 0.5).as_secs_f64() / percentile(&mut floor, 0.5).as_secs_f64()
    );
}

/// Resident set size and its peak, in KiB, from /proc.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The background process's memory after `turns` reviews, each turn driven as the CLI would
/// (the transcript grows by a tool call and its result; PostToolUse; the review drained).
fn memory_after_reviews(turns: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let cwd = root.join("home/proj");
    std::fs::create_dir_all(&cwd).expect("dirs");
    let transcript = root.join("home/t.jsonl");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let before = rss_kib();
    let start = REVIEWS.load(Ordering::Relaxed);
    runtime.block_on(async {
        let daemon = Daemon::new(options(&root, Some(Arc::new(Instant_)))).expect("daemon");
        let mut lines = vec![json!({"type": "session", "version": 3, "id": "m",
            "timestamp": "2026-01-01T00:00:00.000Z", "cwd": cwd})
        .to_string()];
        push(&mut lines, json!({"role": "user", "content": "Refactor the config loader"}));
        let event = |name: &str| {
            let v = json!({"session_id": "mem", "hook_event_name": name, "cwd": cwd,
                "transcript_path": transcript, "prompt": "Refactor the config loader"});
            parse_payload(v.to_string().as_bytes(), Some(HookHost::ClaudeCode)).expect("payload")
        };
        let deadline = || tokio::time::Instant::now() + Duration::from_secs(5);
        daemon.event(event("UserPromptSubmit"), deadline()).await;
        for turn in 0..turns {
            let id = format!("call_{turn}");
            push(&mut lines, json!({"role": "assistant", "content": [{"type": "toolCall", "id": id,
                "name": "bash", "arguments": {"command": format!("cargo test config::case_{turn}")}}],
                "stopReason": "toolUse"}));
            push(&mut lines, json!({"role": "toolResult", "toolCallId": id, "toolName": "bash",
                "content": [{"type": "text", "text": format!("test config::case_{turn} ... ok\n{}", "x".repeat(400))}],
                "isError": false}));
            std::fs::write(&transcript, lines.join("\n") + "\n").expect("transcript");
            daemon.event(event("PostToolUse"), deadline()).await;
            daemon.drain(HookHost::ClaudeCode, "mem").await;
        }
        let reviews = REVIEWS.load(Ordering::Relaxed) - start;
        let after = rss_kib();
        println!(
            "hook daemon memory: {reviews} reviews of {turns} turns; RSS {} KiB before, {} KiB after \
             (+{} KiB), peak {} KiB; transcript {} KiB",
            before.0,
            after.0,
            after.0.saturating_sub(before.0),
            after.1,
            std::fs::metadata(&transcript).map_or(0, |m| m.len() / 1024),
        );
    });
}

/// Appends a pi session entry holding `message`.
fn push(lines: &mut Vec<String>, message: Value) {
    let n = lines.len();
    let parent = if n == 1 {
        Value::Null
    } else {
        json!(format!("e{}", n - 1))
    };
    lines.push(
        json!({"type": "message", "id": format!("e{n}"), "parentId": parent,
            "timestamp": "2026-01-01T00:00:01.000Z", "message": message})
        .to_string(),
    );
}

/// One Claude Code turn as Claude Code writes it: the assistant's tool call (two lines of
/// one API message), the tool's result; `n` numbers its uuids, `parent` is the line before.
fn claude_turn(n: usize, parent: &str) -> (String, String) {
    let pad = "The tool ran and printed its usual output; nothing unexpected was found. ".repeat(8);
    let (think, call, result) = (format!("a{n}"), format!("c{n}"), format!("r{n}"));
    let lines = [
        json!({"parentUuid": parent, "isSidechain": false, "type": "assistant", "uuid": think,
            "sessionId": "s", "timestamp": "2026-12-05T13:08:55.769Z",
            "message": {"id": format!("msg_{n}"), "role": "assistant", "content":
                [{"type": "text", "text": format!("Step {n}: checking the module. {pad}")}],
                "stop_reason": null}}),
        json!({"parentUuid": think, "isSidechain": false, "type": "assistant", "uuid": call,
            "sessionId": "s", "timestamp": "2026-12-05T13:08:55.770Z",
            "message": {"id": format!("msg_{n}"), "role": "assistant", "content":
                [{"type": "tool_use", "id": format!("toolu_{n}"), "name": "Bash",
                  "input": {"command": format!("grep -n helper src/m{n}.rs")}}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 3, "output_tokens": 40, "cache_read_input_tokens": 9000}}}),
        json!({"parentUuid": call, "isSidechain": false, "type": "user", "uuid": result,
            "sessionId": "s", "timestamp": "2026-12-05T13:08:56.100Z",
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": format!("toolu_{n}"), "content": format!("{n}: fn helper() {{}}\n{pad}{pad}")}]}}),
    ];
    let text = lines.iter().map(|l| format!("{l}\n")).collect();
    (text, result)
}

/// Writes a Claude Code transcript of at least `size` bytes at `path`: its length, the
/// number of turns and the uuid of its last line.
fn write_claude_transcript(path: &Path, size: usize) -> (u64, usize, String) {
    let first = json!({"parentUuid": null, "type": "user", "uuid": "p0", "sessionId": "s",
        "message": {"role": "user", "content": "Rename the helper everywhere."}});
    let mut text = format!("{first}\n");
    let mut parent = "p0".to_string();
    let mut n = 0;
    while text.len() < size {
        let (turn, last) = claude_turn(n, &parent);
        text.push_str(&turn);
        parent = last;
        n += 1;
    }
    std::fs::write(path, &text).expect("the transcript");
    (text.len() as u64, n, parent)
}

/// Appends turn `n` after the line `parent` to the transcript at `path`; its last uuid.
fn append_turn(path: &Path, n: usize, parent: &str) -> String {
    let (turn, last) = claude_turn(n, parent);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("the transcript");
    file.write_all(turn.as_bytes()).expect("a turn appended");
    last
}

/// Reading the transcript at one hook event: whole (before H31) and only what was appended.
fn transcript_reads(c: &mut Criterion) {
    use advisor::hosts::turns::{current_messages, read_transcript, read_transcript_tail};
    use advisor::session::{HostTail, ReadLimits};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("transcript.jsonl");
    let (base, n, mut parent) = write_claude_transcript(&path, 20 << 20);
    let limits = ReadLimits {
        growing: true,
        ..ReadLimits::default()
    };
    let home = Some(dir.path());
    let append = |n: usize, parent: &str| append_turn(&path, n, parent);
    // The state the previous event left: the 20 MB read.
    let reopen = |tail: &mut Option<HostTail>| {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("the transcript");
        file.set_len(base).expect("cut back");
        *tail = None;
        read_transcript_tail(&path, home, None, &limits, tail).expect("read");
    };
    let mut tail = None;
    reopen(&mut tail);
    append(n, &parent);
    let whole = current_messages(&read_transcript(&path, home, None, &limits).expect("read"));
    let appended = read_transcript_tail(&path, home, None, &limits, &mut tail).expect("read");
    assert_eq!(whole, appended, "both reads hand over the same messages");
    println!(
        "transcript-read: {} MB, {} messages",
        base >> 20,
        whole.len()
    );
    let mut group = c.benchmark_group("transcript-read");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    let mut means = [0.0f64; 2];
    group.bench_function("whole", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let branch = read_transcript(&path, home, None, &limits).expect("read");
                assert_eq!(current_messages(&branch).len(), whole.len());
            }
            let took = start.elapsed();
            means[0] = took.as_secs_f64() / iters as f64;
            took
        })
    });
    group.bench_function("appended", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                // Untimed: back to the 20 MB state every 1000 turns, then one turn written.
                if i % 1000 == 0 {
                    reopen(&mut tail);
                    parent = format!("r{}", n - 1);
                }
                let k = n + 1 + (i % 1000) as usize;
                parent = append(k, &parent);
                let start = Instant::now();
                let messages =
                    read_transcript_tail(&path, home, None, &limits, &mut tail).expect("read");
                total += start.elapsed();
                assert!(messages.len() > whole.len() - 10);
            }
            means[1] = total.as_secs_f64() / iters as f64;
            total
        })
    });
    group.finish();
    println!(
        "transcript-read: whole {:.3} ms, appended {:.3} ms per event: {:.0}x",
        means[0] * 1e3,
        means[1] * 1e3,
        means[0] / means[1].max(f64::MIN_POSITIVE)
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let only_reads = std::env::args().any(|a| a.contains("transcript-read"));
    if !only_reads {
        round_trips(&mut criterion);
    }
    transcript_reads(&mut criterion);
    criterion.final_summary();
    if !only_reads {
        memory_after_reviews(200);
    }
}
