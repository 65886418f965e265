//! `advisor hook` and its background process (§19): the recorded hook inputs of both CLIs
//! parse (H3); the process, in this test's process with its places in a temporary
//! directory, turns a transcript into reviews by a scripted model served over the wire and
//! maps what they raise onto hook answers (H6, H7, H10, H13); a process that hangs, a stale
//! or foreign socket, hostile input and racing starts never make a hook wait past its bound
//! (H4, H9).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use advisor::hosts::client::{log_call, run_hook, HookCall};
use advisor::hosts::daemon::{Daemon, DaemonOptions};
use advisor::hosts::paths::{current_uid, ensure_private_dir, HostPaths};
use advisor::hosts::payload::{parse_payload, HookEvent, HookHost, HookPayload};
use advisor::hosts::protocol::{Outcome, Request, Response, PROTOCOL_VERSION};
use advisor::providers::testing::{ScriptedResponse, SseServer};
use advisor::providers::{ApiKind, Catalog};
use advisor::RuntimeOptions;
use serde_json::{json, Value};

use crate::support::sse_server;
use crate::support::wire::{client, Dialect};

pub(crate) const SESSION: &str = "5170e527-b0bd-4965-9c59-ea51fe52b08f";

/// A test's places, project and transcript, all under one temporary directory.
pub(crate) struct Places {
    _dir: tempfile::TempDir,
    paths: HostPaths,
    pub(crate) home: PathBuf,
    cwd: PathBuf,
    transcript: PathBuf,
}

impl Places {
    pub(crate) fn new(project_config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let home = root.join("home");
        let cwd = home.join("proj");
        std::fs::create_dir_all(cwd.join(".advisor")).unwrap();
        std::fs::write(cwd.join(".advisor/config.yml"), project_config).unwrap();
        let paths = HostPaths {
            config_dir: root.join("config"),
            runtime_dir: root.join("run"),
            state_dir: root.join("state"),
        };
        Self {
            transcript: home.join(format!("{SESSION}.jsonl")),
            _dir: dir,
            paths,
            home,
            cwd,
        }
    }

    /// A hook input of `event` with `extra` keys, as Claude Code sends it.
    fn input(&self, event: &str, extra: Value) -> Value {
        let mut v = json!({"session_id": SESSION, "transcript_path": self.transcript,
            "cwd": self.cwd, "hook_event_name": event, "permission_mode": "bypassPermissions"});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    }

    pub(crate) fn payload(&self, event: &str, extra: Value) -> HookPayload {
        parse_payload(self.input(event, extra).to_string().as_bytes(), None).unwrap()
    }

    /// Writes the transcript as a pi session file holding `messages`.
    fn write_transcript(&self, messages: &[Value]) {
        self.write_transcript_at(&self.transcript, messages);
    }

    /// Writes `path` as a pi session file holding `messages` (a sub-agent's transcript).
    pub(crate) fn write_transcript_at(&self, path: &Path, messages: &[Value]) {
        let mut lines = vec![json!({"type": "session", "version": 3, "id": SESSION,
            "timestamp": "2026-01-01T00:00:00.000Z", "cwd": self.cwd})
        .to_string()];
        for (i, m) in messages.iter().enumerate() {
            let parent = if i == 0 {
                Value::Null
            } else {
                json!(format!("m{i}"))
            };
            lines.push(
                json!({"type": "message", "id": format!("m{}", i + 1), "parentId": parent,
                    "timestamp": "2026-01-01T00:00:01.000Z", "message": m})
                .to_string(),
            );
        }
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    pub(crate) fn daemon(&self, model: Option<Arc<dyn advisor::ModelClient>>) -> Arc<Daemon> {
        self.daemon_with(model, &[])
    }

    /// [`Places::daemon`] whose process environment holds `vars` too.
    fn daemon_with(
        &self,
        model: Option<Arc<dyn advisor::ModelClient>>,
        vars: &[(&str, &str)],
    ) -> Arc<Daemon> {
        let mut env: BTreeMap<String, String> =
            [("HOME".to_string(), self.home.display().to_string())].into();
        env.extend(vars.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        Daemon::new(DaemonOptions {
            paths: self.paths.clone(),
            uid: current_uid(),
            env: Arc::new(env),
            model,
            catalog: Arc::new(Catalog::builtin().unwrap()),
            runtime: RuntimeOptions {
                arbiters: 1,
                max_concurrent_reviews: None,
                call_threads: 1,
            },
            idle: None,
            session_expiry: Duration::from_secs(3600),
        })
        .unwrap()
    }

    fn call(&self, bound: Duration) -> HookCall {
        HookCall {
            paths: self.paths.clone(),
            uid: current_uid(),
            host: Some(HookHost::ClaudeCode),
            bound,
            gate_bound: None,
            daemon_command: None,
            env: BTreeMap::new(),
        }
    }
}

pub(crate) fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

pub(crate) fn tool_call(id: &str, command: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "toolCall", "id": id, "name": "bash",
        "arguments": {"command": command}}], "stopReason": "toolUse"})
}

pub(crate) fn tool_result(id: &str, text: &str) -> Value {
    json!({"role": "toolResult", "toolCallId": id, "toolName": "bash",
        "content": [{"type": "text", "text": text}], "isError": false})
}

pub(crate) fn answer(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"})
}

/// A scripted review: one `advise` call with `note` at `severity` (an advise-only answer
/// ends the review, P2), then an empty answer for whatever asks next.
pub(crate) fn review(note: &str, severity: &str) -> Vec<ScriptedResponse> {
    let d = Dialect::OpenAi;
    vec![
        ScriptedResponse::sse(
            &d.advise_answer("call_1", &json!({"note": note, "severity": severity})),
        ),
        ScriptedResponse::sse(&d.answer("")),
    ]
}

pub(crate) async fn model(
    responses: Vec<ScriptedResponse>,
) -> (SseServer, Arc<dyn advisor::ModelClient>) {
    let server = sse_server::start(responses).await;
    let model = client(&server, Dialect::OpenAi.role(), ApiKind::OpenAiCompletions);
    (server, model)
}

/// Sends one hook event to `daemon` with a generous deadline (the reply is due at once;
/// nothing here waits on a model).
pub(crate) async fn send(daemon: &Arc<Daemon>, payload: HookPayload) -> (Option<Value>, Outcome) {
    let reply = daemon
        .event(
            payload,
            tokio::time::Instant::now() + Duration::from_secs(5),
        )
        .await;
    (reply.stdout, reply.outcome)
}

fn context(stdout: &Option<Value>) -> Option<&str> {
    stdout.as_ref()?["hookSpecificOutput"]["additionalContext"].as_str()
}

#[test]
fn h1_h3_every_recorded_hook_input_of_both_clis_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hosts");
    for (file, host) in [
        ("claude_hooks.jsonl", HookHost::ClaudeCode),
        ("codex_hooks.jsonl", HookHost::Codex),
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let mut events = Vec::new();
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            let Some(stdin) = record.get("stdin") else {
                continue;
            };
            // The environment says which CLI it is, as it does for a real hook.
            let env = record["env"].as_object().unwrap().clone();
            let from_env = HookHost::from_env(&|name| {
                env.get(name).and_then(Value::as_str).map(str::to_string)
            });
            assert_eq!(from_env, Some(host), "{file}");
            let p = parse_payload(stdin.to_string().as_bytes(), None).unwrap();
            assert_eq!(p.host, host, "{file}: {stdin}");
            assert_eq!(p.event.name(), stdin["hook_event_name"].as_str().unwrap());
            assert_eq!(p.session_id, stdin["session_id"].as_str().unwrap());
            match &p.event {
                HookEvent::PostToolUse {
                    tool_name,
                    tool_response,
                    tool_use_id,
                    ..
                } => {
                    assert!(
                        ["Bash", "Write", "apply_patch"].contains(&tool_name.as_str()),
                        "{file}: {tool_name}"
                    );
                    assert!(tool_use_id.is_some());
                    // Claude Code answers with an object, Codex with a string.
                    assert_eq!(tool_response.is_object(), host == HookHost::ClaudeCode);
                }
                HookEvent::Stop { .. } => assert!(stdin.get("stop_hook_active").is_some()),
                _ => {}
            }
            events.push(p.event.name().to_string());
        }
        for wanted in [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
        ] {
            assert!(events.iter().any(|e| e == wanted), "{file}: {events:?}");
        }
        // A Stop after a block says so.
        assert!(text.contains("\"stop_hook_active\": true"), "{file}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h6_h10_a_concern_after_a_tool_call_comes_back_as_context_at_the_next_post_tool_use() {
    let places = Places::new("advisor:\n  policy: interrupt\n");
    let (server, model) = model(review(
        "The migration drops users.email without a backup.",
        "concern",
    ))
    .await;
    let daemon = places.daemon(Some(model));
    places.write_transcript(&[]);
    let (out, outcome) = send(
        &daemon,
        places.payload("SessionStart", json!({"source": "startup"})),
    )
    .await;
    assert_eq!((out, outcome), (None, Outcome::Empty));
    places.write_transcript(&[user("Drop the email column")]);
    send(
        &daemon,
        places.payload(
            "UserPromptSubmit",
            json!({"prompt": "Drop the email column"}),
        ),
    )
    .await;
    // The tool ran; its result is in the file: the turn is complete and goes to review.
    places.write_transcript(&[
        user("Drop the email column"),
        tool_call("t1", "psql -c 'alter table users drop column email'"),
        tool_result("t1", "ALTER TABLE"),
    ]);
    let (out, _) = send(&daemon, places.payload("PostToolUse", json!({"tool_name": "Bash",
        "tool_input": {"command": "psql"}, "tool_use_id": "t1", "tool_response": {"stdout": "ALTER TABLE"}}))).await;
    assert_eq!(
        out, None,
        "nothing is due yet: the review runs after the answer"
    );
    assert!(daemon.drain(HookHost::ClaudeCode, SESSION).await);
    assert_eq!(
        server.request_count(),
        1,
        "one review, ended by its advise-only answer"
    );
    // The review saw the tool call.
    let first = server.requests()[0].json().to_string();
    assert!(
        first.contains("alter table users drop column email"),
        "{first}"
    );
    let (out, outcome) = send(
        &daemon,
        places.payload(
            "PostToolUse",
            json!({"tool_name": "Bash",
        "tool_use_id": "t2"}),
        ),
    )
    .await;
    assert_eq!(outcome, Outcome::Context);
    let out_v = out.as_ref().unwrap();
    assert_eq!(out_v["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    let text = context(&out).unwrap();
    assert!(text.contains("severity=\"concern\""), "{text}");
    assert!(
        text.contains("drops users.email without a backup"),
        "{text}"
    );
    // Delivered once.
    let (out, _) = send(
        &daemon,
        places.payload("PostToolUse", json!({"tool_name": "Bash"})),
    )
    .await;
    assert_eq!(out, None);
    // The advisor's transcript file (P9) is in the state directory.
    let audit = places.paths.advisor_transcript("claude-code", SESSION);
    assert!(audit.is_file(), "{}", audit.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h7_sp3_a_blocker_at_stop_blocks_once_and_the_continued_stop_passes() {
    let places = Places::new("advisor:\n  enabled: true\n");
    let mut responses = review("The tests were never run after the edit.", "blocker");
    // The final turn's review finds nothing.
    responses.push(ScriptedResponse::sse(&Dialect::OpenAi.answer("")));
    let (_server, model) = model(responses).await;
    let daemon = places.daemon(Some(model));
    places.write_transcript(&[user("Fix the parser")]);
    send(
        &daemon,
        places.payload("UserPromptSubmit", json!({"prompt": "Fix the parser"})),
    )
    .await;
    places.write_transcript(&[
        user("Fix the parser"),
        tool_call("t1", "sed -i s/a/b/ parser.rs"),
        tool_result("t1", ""),
    ]);
    send(
        &daemon,
        places.payload(
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "t1"}),
        ),
    )
    .await;
    assert!(daemon.drain(HookHost::ClaudeCode, SESSION).await);
    places.write_transcript(&[
        user("Fix the parser"),
        tool_call("t1", "sed -i s/a/b/ parser.rs"),
        tool_result("t1", ""),
        answer("Done: the parser is fixed."),
    ]);
    let (out, outcome) = send(
        &daemon,
        places.payload(
            "Stop",
            json!({"stop_hook_active": false,
        "last_assistant_message": "Done: the parser is fixed."}),
        ),
    )
    .await;
    assert_eq!(outcome, Outcome::Block, "{out:?}");
    let out = out.unwrap();
    assert_eq!(out["decision"], "block");
    let reason = out["reason"].as_str().unwrap();
    assert!(reason.contains("never run after the edit"), "{reason}");
    assert!(reason.contains("severity=\"blocker\""), "{reason}");
    // The agent continues for the block and stops again: this Stop passes.
    places.write_transcript(&[
        user("Fix the parser"),
        tool_call("t1", "sed -i s/a/b/ parser.rs"),
        tool_result("t1", ""),
        answer("Done: the parser is fixed."),
        user("Stop hook feedback: the tests were never run"),
        answer("I ran them: all pass."),
    ]);
    let (out, outcome) = send(
        &daemon,
        places.payload("Stop", json!({"stop_hook_active": true})),
    )
    .await;
    assert_stop_passes(&out, outcome);
}

/// A Stop's answer that lets the agent stop: no block, no decision.
pub(crate) fn assert_stop_passes(out: &Option<Value>, outcome: Outcome) {
    assert_ne!(outcome, Outcome::Block, "{out:?}");
    assert!(
        out.as_ref().is_none_or(|o| o.get("decision").is_none()),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h4_h5_h9_h13_through_the_socket_a_hook_is_answered_and_logged() {
    let places = Places::new("advisor:\n  enabled: true\n");
    let daemon = places.daemon(None);
    let listener = Daemon::bind(&places.paths, current_uid()).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(Arc::clone(&daemon).serve(listener, async {
        let _ = stopped.await;
    }));
    let call = places.call(Duration::from_secs(5));
    let input = places
        .input("SessionStart", json!({"source": "startup"}))
        .to_string();
    let started = Instant::now();
    let result = run_hook(&call, input.as_bytes(), started).await;
    assert_eq!(result.outcome, Outcome::Empty, "{result:?}");
    assert_eq!(result.event.as_deref(), Some("SessionStart"));
    // Without a model (none configured), the session's user hears why at the first prompt.
    let input = places
        .input("UserPromptSubmit", json!({"prompt": "hi"}))
        .to_string();
    let result = run_hook(&call, input.as_bytes(), Instant::now()).await;
    let message = result.stdout.as_ref().unwrap()["systemMessage"]
        .as_str()
        .unwrap();
    assert!(message.contains("no review model"), "{message}");
    log_call(&places.paths, current_uid(), &result, 3).unwrap();
    let log = std::fs::read_to_string(places.paths.hook_events()).unwrap();
    let line: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(line["host"], "claude-code");
    assert_eq!(line["event"], "UserPromptSubmit");
    assert_eq!(line["session"], SESSION);
    assert_eq!(line["outcome"], "context");
    assert_eq!(line["ms"], 3);
    assert!(line["ts"].as_str().unwrap().ends_with('Z'));
    // Status over the same socket shows the session in `/advisor status`'s words.
    let stream = tokio::net::UnixStream::connect(places.paths.socket())
        .await
        .unwrap();
    let status = advisor::hosts::client::exchange(
        stream,
        &Request::Status {
            v: PROTOCOL_VERSION,
            session: Some(SESSION[..8].to_string()),
        },
    )
    .await
    .unwrap();
    let Response::Status { sessions, .. } = status else {
        panic!("{status:?}")
    };
    assert_eq!(sessions.len(), 1);
    assert!(
        sessions[0].text.contains("policy: defer"),
        "{}",
        sessions[0].text
    );
    assert!(
        sessions[0].text.contains("primary:"),
        "{}",
        sessions[0].text
    );
    // Turning it off answers in `/advisor off`'s words.
    let reply = daemon
        .respond(Request::Control {
            v: PROTOCOL_VERSION,
            session: None,
            command: "pause".into(),
        })
        .await;
    let Response::Control { results } = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(results.len(), 1);
    let status = daemon
        .respond(Request::Status {
            v: PROTOCOL_VERSION,
            session: None,
        })
        .await;
    let Response::Status { sessions, .. } = status else {
        panic!()
    };
    assert_eq!(
        sessions[0].status["enabled"], false,
        "{:?}",
        sessions[0].status
    );
    // An old client's version is refused with a reason.
    let reply = daemon.respond(Request::Ping { v: 0 }).await;
    assert!(matches!(reply, Response::Error { .. }), "{reply:?}");
    let _ = stop.send(());
    served.await.unwrap();
    assert_eq!(daemon.sessions(), 0, "closed at shutdown");
}

#[tokio::test(start_paused = true)]
async fn h9_a_background_process_that_hangs_is_answered_empty_at_the_bound() {
    let places = Places::new("");
    ensure_private_dir(&places.paths.runtime_dir, current_uid()).unwrap();
    // Accepts and never answers.
    let listener = tokio::net::UnixListener::bind(places.paths.socket()).unwrap();
    let _hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let bound = Duration::from_millis(250);
    let call = places.call(bound);
    let input = places
        .input("PostToolUse", json!({"tool_name": "Bash"}))
        .to_string();
    let started = tokio::time::Instant::now();
    let result = run_hook(&call, input.as_bytes(), Instant::now()).await;
    assert_eq!(result.outcome, Outcome::Timeout, "{result:?}");
    assert_eq!(result.stdout, None);
    let took = started.elapsed();
    assert!(
        took >= bound - Duration::from_millis(5) && took <= bound + Duration::from_millis(5),
        "answered at the bound: {took:?}"
    );
}

#[tokio::test]
async fn h4_a_stale_or_foreign_socket_is_no_wait_and_no_trust() {
    let places = Places::new("");
    ensure_private_dir(&places.paths.runtime_dir, current_uid()).unwrap();
    // A socket file left by a killed process: nobody listens.
    drop(std::os::unix::net::UnixListener::bind(places.paths.socket()).unwrap());
    let call = places.call(Duration::from_secs(5));
    let input = places.input("PostToolUse", json!({})).to_string();
    let result = run_hook(&call, input.as_bytes(), Instant::now()).await;
    assert_eq!(result.outcome, Outcome::DaemonDown, "{result:?}");
    assert!(result.error.unwrap().contains("gone"));
    // A regular file where the socket should be is not trusted (and nothing is started).
    std::fs::remove_file(places.paths.socket()).unwrap();
    std::fs::write(places.paths.socket(), "").unwrap();
    let result = run_hook(&call, input.as_bytes(), Instant::now()).await;
    assert_eq!(result.outcome, Outcome::Error, "{result:?}");
    assert!(result.error.unwrap().contains("not a socket"));
}

#[tokio::test]
async fn h3_hostile_input_is_an_error_for_the_log_never_a_wait() {
    let places = Places::new("");
    let call = places.call(Duration::from_secs(5));
    for input in [
        b"not json".to_vec(),
        b"[]".to_vec(),
        br#"{"hook_event_name": "Stop"}"#.to_vec(),
        br#"{"session_id": 7, "hook_event_name": "Stop"}"#.to_vec(),
        vec![b' '; (1 << 20) + 1],
    ] {
        let result = run_hook(&call, &input, Instant::now()).await;
        assert_eq!(result.outcome, Outcome::Error);
        assert_eq!(result.stdout, None);
        assert!(result.error.is_some());
    }
    // Over the cap, the reader stops at the cap plus one byte.
    let big = vec![b'x'; 3 << 20];
    let err = advisor::hosts::client::read_input(&big[..], Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(err.contains("over"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h10_a_transcript_outside_home_and_cwd_or_a_fifo_gives_no_turns_and_a_prompt_answer() {
    let places = Places::new("advisor:\n  enabled: true\n");
    let (server, model) = model(review("unused", "nit")).await;
    let daemon = places.daemon(Some(model));
    let fifo = places.home.join("fifo.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    for path in [PathBuf::from("/etc/passwd"), fifo] {
        for event in ["SessionStart", "PostToolUse", "Stop"] {
            let mut input = places.input(
                event,
                json!({"source": "startup", "stop_hook_active": false}),
            );
            input["transcript_path"] = json!(path);
            let payload = parse_payload(input.to_string().as_bytes(), None).unwrap();
            let started = Instant::now();
            let (out, outcome) = send(&daemon, payload).await;
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{event} answered in time"
            );
            assert_ne!(outcome, Outcome::Timeout, "{event}: {out:?}");
        }
        assert!(daemon.drain(HookHost::ClaudeCode, SESSION).await);
    }
    assert_eq!(server.request_count(), 0, "nothing was reviewed");
}

#[test]
fn h4_racing_hooks_start_one_background_process() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let bin = &crate::support::advisor_bin();
    let input = json!({"session_id": "race", "hook_event_name": "SessionStart",
        "source": "startup", "cwd": root})
    .to_string();
    let envs = [
        ("HOME", root.join("home")),
        ("ADVISOR_CONFIG_DIR", root.join("config")),
        ("ADVISOR_RUNTIME_DIR", root.join("run")),
        ("ADVISOR_STATE_DIR", root.join("state")),
    ];
    let spawn = || {
        let mut cmd = std::process::Command::new(bin);
        cmd.arg("hook")
            .arg("--host")
            .arg("codex")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ADVISOR_NO_REVIEW", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        for (k, v) in &envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child
    };
    let children: Vec<_> = (0..4).map(|_| spawn()).collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a hook always exits 0");
        assert!(out.stdout.is_empty(), "nothing is due: {:?}", out.stdout);
    }
    // Each call is logged; those that found nobody say so.
    let log = std::fs::read_to_string(root.join("state/hook-events.jsonl")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    for line in &lines {
        // The bound (250 ms by default) held, whatever the start cost.
        assert!(line["ms"].as_u64().unwrap() <= 250 + 50, "{line}");
    }
    // Wait (bounded) for the background process, then count the processes serving it.
    let socket = root.join("run/hookd.sock");
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid = loop {
        if let Some(pid) = ping(&socket) {
            break pid;
        }
        assert!(Instant::now() < deadline, "no background process answered");
        std::thread::sleep(Duration::from_millis(20));
    };
    let runtime_env = format!("ADVISOR_RUNTIME_DIR={}", root.join("run").display());
    let deadline = Instant::now() + Duration::from_secs(20);
    let daemons = loop {
        let daemons = daemons_with(&runtime_env);
        if daemons.len() == 1 || Instant::now() > deadline {
            break daemons;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(daemons, vec![pid], "one background process serves");
    // SIGTERM ends it and removes its socket.
    let status = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while socket.exists() {
        assert!(Instant::now() < deadline, "the socket stayed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pid of the process answering on `socket`, if one does.
fn ping(socket: &Path) -> Option<u32> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let stream = tokio::net::UnixStream::connect(socket).await.ok()?;
        match advisor::hosts::client::exchange(
            stream,
            &Request::Ping {
                v: PROTOCOL_VERSION,
            },
        )
        .await
        .ok()?
        {
            Response::Pong { pid } => Some(pid),
            _ => None,
        }
    })
}

/// The `hook-daemon` processes whose environment holds `entry`.
fn daemons_with(entry: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for dir in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = dir.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(dir.path().join("cmdline")).unwrap_or_default();
        if !cmdline.split(|b| *b == 0).any(|a| a == b"hook-daemon") {
            continue;
        }
        let environ = std::fs::read(dir.path().join("environ")).unwrap_or_default();
        if environ.split(|b| *b == 0).any(|e| e == entry.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h10_l6_the_recorded_transcripts_of_both_clis_reach_the_reviewer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hosts");
    for (file, host, command) in [
        (
            "claude_transcript.jsonl",
            HookHost::ClaudeCode,
            "echo hi > a.txt",
        ),
        ("codex_rollout.jsonl", HookHost::Codex, "a.txt"),
    ] {
        let places = Places::new("advisor:\n  enabled: true\n");
        let (server, model) = model(quiet_reviews(8)).await;
        let daemon = places.daemon(Some(model));
        let input = |event: &str, extra: Value| {
            let mut v = places.input(event, extra);
            if host == HookHost::Codex {
                v["turn_id"] = json!("t-1");
            }
            parse_payload(v.to_string().as_bytes(), None).unwrap()
        };
        // The session starts before the CLI wrote its transcript…
        send(&daemon, input("SessionStart", json!({"source": "startup"}))).await;
        // …and the whole recorded run is there by its Stop.
        std::fs::copy(root.join(file), &places.transcript).unwrap();
        let (out, outcome) = send(&daemon, input("Stop", json!({"stop_hook_active": false}))).await;
        assert_ne!(outcome, Outcome::Timeout, "{file}: {out:?}");
        assert!(daemon.drain(host, SESSION).await, "{file}");
        let requests = server.requests();
        assert!(!requests.is_empty(), "{file}: no review");
        let seen: String = requests.iter().map(|r| r.json().to_string()).collect();
        assert!(
            seen.contains(command),
            "{file}: the review saw the tool call"
        );
        assert!(seen.contains("a.txt"), "{file}");
    }
}

/// GT12: with `advisor.gate: risky`, a PreToolUse of a risky call is put to the gate and
/// its denial comes back as the host's `permissionDecision` with the reason; a routine call
/// is answered empty (the host's own permission rules apply) without a model call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gt12_a_pre_tool_use_the_gate_denies_comes_back_as_a_permission_decision() {
    let places = Places::new("advisor:\n  gate: risky\n  policy: interrupt\n");
    let deny = r#"{"decision": "deny", "risk": "high", "reason": "The user said to keep build/."}"#;
    // The advisor's review of the opening may take one answer; the gate's is told apart.
    let answers = vec![
        ScriptedResponse::sse(&Dialect::OpenAi.answer(deny)),
        ScriptedResponse::sse(&Dialect::OpenAi.answer(deny)),
    ];
    let (server, model) = model(answers).await;
    let daemon = places.daemon(Some(model));
    places.write_transcript(&[user("Keep build/ please")]);
    send(
        &daemon,
        places.payload("SessionStart", json!({"source": "startup"})),
    )
    .await;
    let routine = places.payload(
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls -la"}, "tool_use_id": "t1"}),
    );
    assert_eq!(send(&daemon, routine).await, (None, Outcome::Empty));
    let risky = places.payload(
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}, "tool_use_id": "t2"}),
    );
    let (out, outcome) = send(&daemon, risky).await;
    assert_eq!(outcome, Outcome::Deny);
    let out = out.expect("a decision");
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecisionReason"],
        "The user said to keep build/."
    );
    let gate_calls = server
        .requests()
        .iter()
        .filter(|r| {
            r.json()
                .to_string()
                .contains("You are the gate of a coding agent")
        })
        .count();
    assert_eq!(gate_calls, 1, "one model call, for the risky call only");
}

/// The first hook of session `id` (a prompt), from a hook whose environment holds `env`
/// (`None`: a client that sends none); the line shown to the user, if any.
async fn open_session(
    daemon: &Arc<Daemon>,
    places: &Places,
    id: &str,
    env: Option<&[(&str, &str)]>,
) -> String {
    let mut payload = places.payload("UserPromptSubmit", json!({"prompt": "hi"}));
    payload.session_id = id.to_string();
    let env = env.map(|vars| {
        vars.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    });
    let reply = daemon
        .event_from(
            payload,
            env,
            tokio::time::Instant::now() + Duration::from_secs(10),
        )
        .await;
    reply
        .stdout
        .and_then(|out| out["systemMessage"].as_str().map(str::to_string))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h32_each_session_takes_the_keys_of_the_hook_that_opened_it() {
    let places = Places::new("");
    // The process was started by a hook whose environment held an Anthropic key.
    let daemon = places.daemon_with(None, &[("ANTHROPIC_API_KEY", "sk-first-hook")]);
    // A later hook from a shell without any key: its session has no model, and says so.
    let told = open_session(&daemon, &places, "no-key", Some(&[])).await;
    assert!(told.contains("no review model"), "{told:?}");
    // A hook whose environment holds a key: its session has a model.
    let told = open_session(
        &daemon,
        &places,
        "own-key",
        Some(&[("OPENAI_API_KEY", "sk-this-hook")]),
    )
    .await;
    assert!(!told.contains("no review model"), "{told:?}");
    // A client that sends no variables: the process's own key.
    let told = open_session(&daemon, &places, "older-client", None).await;
    assert!(!told.contains("no review model"), "{told:?}");
    let status = daemon.respond(Request::Status {
        v: PROTOCOL_VERSION,
        session: Some("own-key".into()),
    });
    let Response::Status { sessions, .. } = status.await else {
        panic!("a status");
    };
    assert!(sessions[0].text.contains("openai"), "{}", sessions[0].text);
}

/// The socket's daemon for `places`, served until the returned sender is sent or dropped.
fn serve_socket(
    places: &Places,
    daemon: &Arc<Daemon>,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let listener = Daemon::bind(&places.paths, current_uid()).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(Arc::clone(daemon).serve(listener, async {
        let _ = stopped.await;
    }));
    (stop, served)
}

/// GT12: the hook's PreToolUse bound comes from the user's settings, the session's
/// `gateTimeoutMs` from the project's; with the project's longer, the gate's model call is
/// cut before the hook's deadline (carried by the request) so the fail mode's answer —
/// `deny` under `closed` — reaches the hook inside its bound instead of the hook giving up
/// (when the call would run unreviewed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gt12_a_project_gate_timeout_past_the_hook_s_bound_still_answers_the_fail_mode() {
    let places =
        Places::new("advisor:\n  gate: risky\n  gateTimeoutMs: 60000\n  gateFailMode: closed\n");
    let hang = || ScriptedResponse::sse(&Dialect::OpenAi.answer("{}")).stall_after(0);
    let (_server, model) = model(vec![hang(), hang(), hang()]).await;
    let daemon = places.daemon(Some(model));
    places.write_transcript(&[user("Keep build/ please")]);
    let (stop, served) = serve_socket(&places, &daemon);
    let mut call = places.call(Duration::from_secs(1));
    let bound = Duration::from_secs(3);
    call.gate_bound = Some(bound);
    let risky = places
        .input(
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"},
                "tool_use_id": "t1"}),
        )
        .to_string();
    let started = Instant::now();
    let result = run_hook(&call, risky.as_bytes(), started).await;
    assert!(started.elapsed() < bound, "{:?}", started.elapsed());
    assert_eq!(result.outcome, Outcome::Deny, "{result:?}");
    let out = result.stdout.expect("a decision");
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("could not decide"), "{reason}");
    let _ = stop.send(());
    served.await.unwrap();
}

/// GT7 where nobody can be asked (Codex, GT15): three denials in a row, then the breaker's
/// escalation is an allow that says what the gate would have denied, answered as a note
/// (`systemMessage`, logged `allow`), never an empty, silent allow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gt7_on_codex_the_breaker_s_allow_is_a_note_never_silent() {
    let places = Places::new("advisor:\n  gate: risky\n  gateFailMode: open\n");
    let deny =
        r#"{"decision": "deny", "risk": "high", "reason": "The user said to keep the data."}"#;
    let answers = (0..6)
        .map(|_| ScriptedResponse::sse(&Dialect::OpenAi.answer(deny)))
        .collect();
    let (_server, model) = model(answers).await;
    let daemon = places.daemon(Some(model));
    places.write_transcript(&[user("Keep the data please")]);
    let (stop, served) = serve_socket(&places, &daemon);
    let mut call = places.call(Duration::from_secs(5));
    call.host = Some(HookHost::Codex);
    call.gate_bound = Some(Duration::from_secs(10));
    let mut answers = Vec::new();
    for (i, dir) in ["build", "dist", "out", "data"].iter().enumerate() {
        let input = places
            .input(
                "PreToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": format!("rm -rf {dir}")},
                    "tool_use_id": format!("t{i}")}),
            )
            .to_string();
        answers.push(run_hook(&call, input.as_bytes(), Instant::now()).await);
    }
    for denied in &answers[..3] {
        assert_eq!(denied.outcome, Outcome::Deny, "{denied:?}");
    }
    let note = &answers[3];
    assert_eq!(note.outcome, Outcome::Allow, "{note:?}");
    let message = note.stdout.as_ref().expect("a note")["systemMessage"]
        .as_str()
        .unwrap();
    assert!(message.starts_with("Gate note:"), "{message}");
    assert!(
        message.contains("The user said to keep the data."),
        "{message}"
    );
    let _ = stop.send(());
    served.await.unwrap();
}

/// What the advisor's model was sent in request `index`, as one string.
fn request_text(server: &SseServer, index: usize) -> String {
    server.requests()[index].json()["messages"].to_string()
}

/// Scripted reviews that find nothing, `n` of them.
pub(crate) fn quiet_reviews(n: usize) -> Vec<ScriptedResponse> {
    (0..n)
        .map(|_| ScriptedResponse::sse(&Dialect::OpenAi.answer("")))
        .collect()
}

/// The start both compaction tests share: a prompt and one reviewed tool call.
async fn one_reviewed_turn(places: &Places, daemon: &Arc<Daemon>) -> Vec<Value> {
    places.write_transcript(&[user("Build it")]);
    send(
        daemon,
        places.payload("UserPromptSubmit", json!({"prompt": "Build it"})),
    )
    .await;
    let before = vec![
        user("Build it"),
        tool_call("t1", "make OLD-STEP"),
        tool_result("t1", "ok"),
    ];
    places.write_transcript(&before);
    send(
        daemon,
        places.payload(
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "t1"}),
        ),
    )
    .await;
    assert!(daemon.drain(HookHost::ClaudeCode, SESSION).await);
    before
}

/// The transcript after a compaction: the summary, then the run's last command and answer.
fn compacted() -> Vec<Value> {
    vec![
        user("SUMMARY-OF-EARLIER-WORK"),
        tool_call("t9", "make NEW-STEP"),
        tool_result("t9", "ok"),
        answer("Done."),
    ]
}

/// X1, R1: a transcript rewritten without a word from the CLI and first read at `Stop` (the
/// run's last hook) is reviewed at that Stop, whole and in a fresh advisor context — the
/// reset does not wait for a next turn end that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x1_r1_a_rewrite_first_seen_at_stop_is_reviewed_at_that_stop() {
    let places = Places::new("advisor:\n  enabled: true\n");
    let (server, model) = model(quiet_reviews(4)).await;
    let daemon = places.daemon(Some(model));
    one_reviewed_turn(&places, &daemon).await;
    assert_eq!(server.request_count(), 1);
    assert!(request_text(&server, 0).contains("OLD-STEP"));
    stop_reviews_the_compacted_transcript_alone(&places, &daemon, &server).await;
}

/// H11, R1: Claude Code may run the `compact` SessionStart hook before it has written the
/// compaction to its transcript. A read then still shows the old conversation, with a turn
/// not yet reviewed; it is not replayed to the advisor reset for the compaction. The
/// compacted transcript, once written, is reviewed at once and alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h11_r1_a_compaction_announced_before_it_is_written_replays_nothing_compacted() {
    let places = Places::new("advisor:\n  enabled: true\n");
    let (server, model) = model(quiet_reviews(4)).await;
    let daemon = places.daemon(Some(model));
    let mut before = one_reviewed_turn(&places, &daemon).await;
    before.extend([tool_call("t2", "make PRE-COMPACT"), tool_result("t2", "ok")]);
    places.write_transcript(&before);
    send(
        &daemon,
        places.payload("SessionStart", json!({"source": "compact"})),
    )
    .await;
    assert!(daemon.drain(HookHost::ClaudeCode, SESSION).await);
    assert_eq!(
        server.request_count(),
        1,
        "nothing of the old conversation is replayed"
    );
    stop_reviews_the_compacted_transcript_alone(&places, &daemon, &server).await;
}

/// Writes [`compacted`] and ends the run: its Stop has the last turn reviewed, as the second
/// request, in a fresh context holding nothing from before the rewrite.
async fn stop_reviews_the_compacted_transcript_alone(
    places: &Places,
    daemon: &Arc<Daemon>,
    server: &SseServer,
) {
    places.write_transcript(&compacted());
    send(
        daemon,
        places.payload("Stop", json!({"stop_hook_active": false})),
    )
    .await;
    assert!(daemon.drain(HookHost::ClaudeCode, SESSION).await);
    assert_eq!(server.request_count(), 2, "the last turn was reviewed");
    let text = request_text(server, 1);
    assert!(
        text.contains("SUMMARY-OF-EARLIER-WORK") && text.contains("NEW-STEP"),
        "{text}"
    );
    assert!(
        !text.contains("OLD-STEP") && !text.contains("PRE-COMPACT"),
        "a fresh context: {text}"
    );
}

/// H10, H12: with `syncBacklog` set a turn end may make its caller wait, yet the tool calls'
/// turns, handed over after each PostToolUse's answer with nobody waiting, are each
/// reviewed: none is lost because no one waited for its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h10_h12_with_sync_backlog_set_every_tool_call_s_turn_is_reviewed() {
    let places = Places::new("advisor:\n  syncBacklog: 1\n");
    let (server, model) = model(quiet_reviews(6)).await;
    let daemon = places.daemon(Some(model));
    places.write_transcript(&[user("Build it")]);
    send(
        &daemon,
        places.payload("UserPromptSubmit", json!({"prompt": "Build it"})),
    )
    .await;
    let mut messages = vec![user("Build it")];
    for step in 1..=3 {
        let id = format!("t{step}");
        messages.push(tool_call(&id, &format!("make STEP-{step}")));
        messages.push(tool_result(&id, "ok"));
        places.write_transcript(&messages);
        send(
            &daemon,
            places.payload(
                "PostToolUse",
                json!({"tool_name": "Bash", "tool_use_id": id}),
            ),
        )
        .await;
        assert!(daemon.drain(HookHost::ClaudeCode, SESSION).await);
        assert_eq!(
            server.request_count(),
            step,
            "the turn of call {step} was reviewed"
        );
        let text = request_text(&server, step - 1);
        assert!(text.contains(&format!("STEP-{step}")), "{text}");
    }
}
