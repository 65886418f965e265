//! The real host CLIs — Claude Code 2.1.332 and Codex CLI 0.171.0 — driven headless for the
//! host end-to-end tests (`tests/suite/hosts_e2e.rs`), each against an in-process scripted
//! model server that speaks its own wire format: Anthropic Messages SSE for Claude Code
//! (`POST /v1/messages?beta=true`), OpenAI Responses SSE for Codex (`POST /v1/responses`).
//!
//! `scripts/hosts-e2e-setup.sh` installs Node 22 and both CLIs into `target/hosts-e2e` once.
//! Without `npm` the tests skip with a message, except under CI (`CI` set), where they fail.
//!
//! Each run gets a scratch directory: `HOME` (Claude Code's `~/.claude`, Codex's
//! `CODEX_HOME=~/.codex`), the XDG directories, the advisor's places (`ADVISOR_CONFIG_DIR`,
//! `ADVISOR_STATE_DIR`, `ADVISOR_RUNTIME_DIR`) and a project directory the CLI runs in. The
//! child's environment is built from nothing (`env_clear`): only `PATH` and `LANG` come from
//! the test process, so a developer's own keys, base URLs or settings never reach the CLI.
//!
//! No network namespace: the model servers live in the test process, and a CLI in a new
//! namespace (`unshare -n`) would see a loopback of its own and could not reach them. Traffic
//! stays on the machine because every base URL points at 127.0.0.1, the CLIs' own switches
//! for telemetry, updates, error reports and plugin syncs are off, and every proxy variable
//! points at a trap server on loopback (`NO_PROXY` exempts 127.0.0.1 only): an HTTP(S)
//! request to anywhere else lands in the trap, and [`Harness::trapped`] lists them so each
//! test asserts there were none.

#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use advisor::providers::testing::{BodyPart, RecordedRequest, ScriptedResponse, SseServer};
use serde_json::{json, Value};
use tokio::runtime::Runtime;

// ---------------------------------------------------------------------------------------------
// Installing the CLIs (once per test binary; the script itself is idempotent and cached)

/// Where the setup script put Node and the two CLIs.
pub struct HostTools {
    /// The directory holding `node` (put first on the CLIs' `PATH`).
    pub node_bin: PathBuf,
    /// The `claude` executable.
    pub claude: PathBuf,
    /// The `codex` executable.
    pub codex: PathBuf,
}

static TOOLS: OnceLock<Option<HostTools>> = OnceLock::new();

fn manifest(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The cache beside the binary under test: `target/hosts-e2e`.
fn cache_dir() -> PathBuf {
    let bin = super::advisor_bin();
    bin.parent()
        .and_then(Path::parent)
        .map(|t| t.join("hosts-e2e"))
        .unwrap_or_else(|| manifest("target/hosts-e2e"))
}

/// The installed CLIs, or `None` (after a message) when npm is missing outside CI.
pub fn tools() -> Option<&'static HostTools> {
    TOOLS.get_or_init(install).as_ref()
}

fn install() -> Option<HostTools> {
    if !super::npm::npm_or_skip("host") {
        return None;
    }
    let out = Command::new("timeout")
        .arg("1200")
        .arg("bash")
        .arg(manifest("scripts/hosts-e2e-setup.sh"))
        .arg(cache_dir())
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/hosts-e2e-setup.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "hosts setup failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("setup printed no {name}: {stdout}"))
    };
    Some(HostTools {
        node_bin: field("node_bin"),
        claude: field("claude_bin").join("claude"),
        codex: field("codex_bin").join("codex"),
    })
}

// ---------------------------------------------------------------------------------------------
// The primary model: a script of steps, played over each host's wire format

/// Which CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// Claude Code (`claude -p`).
    ClaudeCode,
    /// Codex CLI (`codex exec`).
    Codex,
}

impl Host {
    /// Both hosts, for tests that run a scenario on each.
    pub const ALL: [Host; 2] = [Host::ClaudeCode, Host::Codex];

    /// The name the advisor uses for this host (`advisor install <name>`, state dirs).
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::Codex => "codex",
        }
    }
}

/// One answer of the scripted primary model.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Run a shell command: Claude Code's `Bash` tool, Codex's `exec_command`.
    Shell(String),
    /// Call the tool `name` with `input` (Claude `tool_use`, Codex `function_call`).
    Tool {
        /// The tool's name as the CLI offers it.
        name: String,
        /// Its arguments.
        input: Value,
    },
    /// Call the freeform tool `name` with the text `input` (Codex `custom_tool_call`, e.g.
    /// `apply_patch`; Claude Code gets a `tool_use` with `{"input": input}`).
    Custom {
        /// The tool's name as the CLI offers it.
        name: String,
        /// Its whole input.
        input: String,
    },
    /// Say this and end the turn.
    Text(String),
}

impl Step {
    /// A shell step.
    pub fn shell(cmd: &str) -> Self {
        Step::Shell(cmd.into())
    }

    /// A text step.
    pub fn text(text: &str) -> Self {
        Step::Text(text.into())
    }
}

/// Chooses the step for a request body (from the host's request JSON).
pub type Picker = dyn Fn(&Value) -> Step + Send + Sync;

/// How many model outputs a request already holds: assistant messages for Claude Code, output
/// items (tool calls, assistant messages) in Codex's `input`. A script indexed by it is
/// stateless, so a retried request gets the same answer.
pub fn outputs_so_far(host: Host, body: &Value) -> usize {
    match host {
        Host::ClaudeCode => body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count()),
        Host::Codex => body["input"].as_array().map_or(0, |items| {
            items
                .iter()
                .filter(|i| {
                    matches!(
                        i["type"].as_str(),
                        Some("function_call" | "custom_tool_call" | "local_shell_call")
                    ) || (i["type"] == "message" && i["role"] == "assistant")
                })
                .count()
        }),
    }
}

/// A picker playing `script` in order; past its end the last text step repeats.
pub fn script(host: Host, steps: Vec<Step>) -> Arc<Picker> {
    Arc::new(move |body: &Value| {
        let n = outputs_so_far(host, body);
        steps.get(n).cloned().unwrap_or_else(|| {
            steps
                .iter()
                .rev()
                .find(|s| matches!(s, Step::Text(_)))
                .cloned()
                .unwrap_or_else(|| Step::text("Done."))
        })
    })
}

fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

/// The Anthropic Messages SSE stream Claude Code expects for one step: `message_start`, one
/// content block (start, delta, stop), `message_delta` with the stop reason, `message_stop`.
pub fn anthropic_sse(step: &Step, id: usize) -> String {
    anthropic_sse_sized(step, id, 100)
}

/// [`anthropic_sse`] reporting `input_tokens` of usage (a full context makes the CLI compact).
pub fn anthropic_sse_sized(step: &Step, id: usize, input_tokens: u64) -> String {
    let usage = json!({"input_tokens": input_tokens, "output_tokens": 1,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let (block, delta, stop) = match step {
        Step::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
        Step::Shell(cmd) => tool_block(
            id,
            "Bash",
            &json!({"command": cmd, "description": "run a command"}),
        ),
        Step::Tool { name, input } => tool_block(id, name, input),
        Step::Custom { name, input } => tool_block(id, name, &json!({ "input": input })),
    };
    sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": format!("msg_{id}"),
                "type": "message", "role": "assistant", "model": "scripted", "content": [],
                "stop_reason": null, "stop_sequence": null, "usage": usage}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": 20}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])
}

fn tool_block(id: usize, name: &str, input: &Value) -> (Value, Value, &'static str) {
    (
        json!({"type": "tool_use", "id": format!("toolu_{id:06}"), "name": name, "input": {}}),
        json!({"type": "input_json_delta", "partial_json": input.to_string()}),
        "tool_use",
    )
}

/// The OpenAI Responses SSE stream Codex expects for one step: `response.created`,
/// `response.output_item.added`, a text delta for a message, `response.output_item.done`,
/// `response.completed` with usage.
pub fn responses_sse(step: &Step, id: usize) -> String {
    responses_sse_sized(step, id, 100)
}

/// [`responses_sse`] reporting `input_tokens` of usage (a full context makes the CLI compact).
pub fn responses_sse_sized(step: &Step, id: usize, input_tokens: u64) -> String {
    let item = match step {
        Step::Text(text) => {
            json!({"type": "message", "role": "assistant", "id": format!("msg_{id}"),
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]})
        }
        Step::Shell(cmd) => function_call(id, "exec_command", &json!({"cmd": cmd})),
        Step::Tool { name, input } => function_call(id, name, input),
        Step::Custom { name, input } => {
            json!({"type": "custom_tool_call", "id": format!("ctc_{id}"),
                "call_id": format!("call_{id}"), "status": "completed", "name": name,
                "input": input})
        }
    };
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    match step {
        Step::Text(_) => added["content"] = json!([]),
        Step::Custom { .. } => added["input"] = json!(""),
        _ => added["arguments"] = json!(""),
    }
    let response = json!({"id": format!("resp_{id}"), "object": "response", "created_at": 0,
        "status": "in_progress", "model": "scripted", "output": []});
    let mut done = response.clone();
    done["status"] = json!("completed");
    done["output"] = json!([item]);
    done["usage"] = json!({"input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + 20});
    let mut events = vec![
        (
            "response.created",
            json!({"type": "response.created", "response": response}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
        ),
    ];
    if let Step::Text(text) = step {
        events.push((
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "output_index": 0,
                "content_index": 0, "item_id": format!("msg_{id}"), "delta": text}),
        ));
    }
    events.push((
        "response.output_item.done",
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    ));
    events.push((
        "response.completed",
        json!({"type": "response.completed", "response": done}),
    ));
    for (seq, (_, data)) in events.iter_mut().enumerate() {
        data["sequence_number"] = json!(seq);
    }
    sse(&events)
}

/// A Responses `function_call`; a `namespace.name` tool (Codex's `collaboration.spawn_agent`)
/// is called with its `namespace`.
fn function_call(id: usize, name: &str, input: &Value) -> Value {
    let mut call = json!({"type": "function_call", "id": format!("fc_{id}"),
        "call_id": format!("call_{id}"), "status": "completed", "name": name,
        "arguments": input.to_string()});
    if let Some((namespace, tool)) = name.split_once('.') {
        call["namespace"] = json!(namespace);
        call["name"] = json!(tool);
    }
    call
}

/// The scripted primary model of one run: an in-process [`SseServer`] whose responder plays
/// a [`Picker`] over the host's wire format and records every request.
pub struct PrimaryModel {
    host: Host,
    server: SseServer,
}

impl PrimaryModel {
    /// Starts the server on `rt` for `host`, answering each model request with `pick`'s step.
    /// A request that is not a model call (none was seen from either CLI) gets `{}`.
    pub fn start(rt: &Runtime, host: Host, pick: Arc<Picker>) -> Self {
        Self::start_sized(rt, host, pick, Arc::new(|_: &Value| 100))
    }

    /// [`PrimaryModel::start`], each answer reporting `input_tokens(request)` tokens of
    /// input usage.
    pub fn start_sized(
        rt: &Runtime,
        host: Host,
        pick: Arc<Picker>,
        input_tokens: Arc<dyn Fn(&Value) -> u64 + Send + Sync>,
    ) -> Self {
        Self::start_paced(rt, host, pick, input_tokens, Duration::ZERO)
    }

    /// [`PrimaryModel::start_sized`], each model answer's body held back `pause` first (a
    /// model that takes time to answer).
    pub fn start_paced(
        rt: &Runtime,
        host: Host,
        pick: Arc<Picker>,
        input_tokens: Arc<dyn Fn(&Value) -> u64 + Send + Sync>,
        pause: Duration,
    ) -> Self {
        let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let responder = Arc::new(move |request: &RecordedRequest| {
            let path = request.path.split('?').next().unwrap_or("");
            let model_call = match host {
                Host::ClaudeCode => path.ends_with("/v1/messages"),
                Host::Codex => path.ends_with("/v1/responses"),
            };
            if request.method != "POST" || !model_call {
                return ScriptedResponse::json(200, "{}");
            }
            let id = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let body = request.json();
            let (step, tokens) = (pick(&body), input_tokens(&body));
            let body = match host {
                Host::ClaudeCode => anthropic_sse_sized(&step, id, tokens),
                Host::Codex => responses_sse_sized(&step, id, tokens),
            };
            let mut answer = ScriptedResponse::sse(&body);
            if !pause.is_zero() {
                answer.body.insert(0, BodyPart::Pause(pause));
            }
            answer
        });
        let server = rt
            .block_on(SseServer::start_with(responder))
            .expect("bind the scripted primary model");
        Self { host, server }
    }

    /// The URL the host is pointed at: `ANTHROPIC_BASE_URL` (no `/v1`) for Claude Code, the
    /// provider's `base_url` (with `/v1`) for Codex.
    pub fn url(&self) -> String {
        match self.host {
            Host::ClaudeCode => format!("http://{}", self.server.addr()),
            Host::Codex => self.server.base_url(),
        }
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// The bodies of the model requests, in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests()
            .iter()
            .filter(|r| r.method == "POST")
            .map(RecordedRequest::json)
            .collect()
    }
}

/// The text a host sent to its model in this request, as one string: every string value in
/// the conversation (`messages` for Claude Code, `input` for Codex), so "did X reach the
/// model" is one `contains`. The system prompt and tool list are left out.
pub fn conversation_text(body: &Value) -> String {
    super::strings_in(&body["messages"]) + &super::strings_in(&body["input"])
}

// ---------------------------------------------------------------------------------------------
// The scratch places of one run and the CLI as a child process

/// The directories of one scenario (kept across runs of the same scenario, for resume).
pub struct Scratch {
    _dir: tempfile::TempDir,
    /// `HOME` (holds `.claude/` and `.codex/`).
    pub home: PathBuf,
    /// The project the CLI runs in (its `cwd`).
    pub project: PathBuf,
    /// `ADVISOR_CONFIG_DIR`: the advisor's `config.yml`, WATCHDOG files.
    pub config: PathBuf,
    /// `ADVISOR_STATE_DIR`: `hook-events.jsonl`, per-session transcripts.
    pub state: PathBuf,
    /// `ADVISOR_RUNTIME_DIR` (0700): the background process's socket and lock.
    pub runtime: PathBuf,
    /// Free for the test's own files (hook scripts, logs).
    pub work: PathBuf,
}

impl Scratch {
    /// Fresh, empty places.
    pub fn new() -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().to_path_buf();
        let at = |p: &str| root.join(p);
        let scratch = Self {
            home: at("home"),
            project: at("project"),
            config: at("advisor-config"),
            state: at("advisor-state"),
            runtime: at("run"),
            work: at("work"),
            _dir: dir,
        };
        for d in [
            &scratch.home.join(".claude"),
            &scratch.home.join(".codex"),
            &scratch.home.join(".config"),
            &scratch.home.join(".local/state"),
            &scratch.home.join(".cache"),
            &scratch.project,
            &scratch.config,
            &scratch.state,
            &scratch.runtime,
            &scratch.work,
        ] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::set_permissions(&scratch.runtime, std::fs::Permissions::from_mode(0o700))
            .expect("chmod the runtime dir");
        scratch
    }

    /// `CODEX_HOME`.
    pub fn codex_home(&self) -> PathBuf {
        self.home.join(".codex")
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

/// The events a hook is registered for on `host` (Codex has no `SessionEnd`).
pub fn hook_events(host: Host) -> &'static [&'static str] {
    match host {
        Host::ClaudeCode => &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SubagentStop",
            "SessionEnd",
        ],
        Host::Codex => &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
        ],
    }
}

/// Registers `command` as a command hook for every event of [`hook_events`] with `timeout`
/// seconds, where the host reads user hooks: `~/.claude/settings.json` for Claude Code,
/// `$CODEX_HOME/hooks.json` for Codex (the same JSON shape).
pub fn write_hooks(host: Host, scratch: &Scratch, command: &str, timeout: u32) {
    let mut hooks = serde_json::Map::new();
    for event in hook_events(host) {
        let mut entry = json!({"hooks": [{"type": "command", "command": command,
            "timeout": timeout}]});
        if event.ends_with("ToolUse") {
            entry["matcher"] = json!("*");
        }
        hooks.insert((*event).to_string(), json!([entry]));
    }
    let path = match host {
        Host::ClaudeCode => scratch.home.join(".claude/settings.json"),
        Host::Codex => scratch.codex_home().join("hooks.json"),
    };
    std::fs::write(path, json!({"hooks": hooks}).to_string()).expect("write the hook config");
}

/// Codex's `config.toml`: the scripted provider at `base_url` (Responses wire, no retries),
/// update checks and analytics off.
fn write_codex_config(scratch: &Scratch, base_url: &str, extra: &str) {
    let toml = format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"scripted\"\ncheck_for_update_on_startup = false\n{extra}\n\
         [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{base_url}\"\n\
         env_key = \"SCRIPTED_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\n\
         stream_max_retries = 0\n\n[analytics]\nenabled = false\n"
    );
    std::fs::write(scratch.codex_home().join("config.toml"), toml).expect("write config.toml");
}

/// What one CLI run did.
#[derive(Debug)]
pub struct RunOutput {
    /// The exit code (`None` when killed).
    pub code: Option<i32>,
    /// stdout: Claude Code's stream-json / Codex's `--json` events.
    pub stdout: String,
    /// stderr.
    pub stderr: String,
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// True when the run hit its time limit and was killed.
    pub timed_out: bool,
}

impl RunOutput {
    /// stdout's JSON lines.
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Panics with the run's output unless it exited 0.
    pub fn assert_ok(&self, what: &str) {
        assert!(
            self.code == Some(0) && !self.timed_out,
            "{what}: exit {:?} (timed out: {}) after {:?}\nstdout:\n{}\nstderr:\n{}",
            self.code,
            self.timed_out,
            self.wall,
            self.stdout,
            self.stderr
        );
    }
}

/// One scenario: the runtime the servers run on, the installed CLIs, the scratch places and
/// the proxy trap.
pub struct Harness {
    /// The CLIs.
    pub tools: &'static HostTools,
    /// The places.
    pub scratch: Scratch,
    trap: SseServer,
    /// Extra environment for the CLI (and so for its hooks), e.g. the advisor's key.
    pub env: Vec<(String, String)>,
    /// Extra top-level lines of Codex's `config.toml` (e.g. `model_auto_compact_token_limit`).
    pub codex_toml: String,
    /// The runtime the servers run on (dropped last).
    pub rt: Runtime,
}

impl Harness {
    /// A scenario, or `None` when the CLIs cannot be installed here (skipped outside CI).
    pub fn new() -> Option<Self> {
        let tools = tools()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let trap = rt
            .block_on(SseServer::start_with(Arc::new(|_: &RecordedRequest| {
                ScriptedResponse::json(403, r#"{"error":"no traffic may leave the machine"}"#)
            })))
            .expect("bind the proxy trap");
        Some(Self {
            tools,
            scratch: Scratch::new(),
            trap,
            env: Vec::new(),
            codex_toml: String::new(),
            rt,
        })
    }

    /// Requests that went to the proxy trap (meant for somewhere other than loopback).
    pub fn trapped(&self) -> Vec<String> {
        self.trap
            .requests()
            .iter()
            .map(|r| format!("{} {} host={:?}", r.method, r.path, r.header("host")))
            .collect()
    }

    /// A primary model for `host` on this harness's runtime.
    pub fn primary(&self, host: Host, pick: Arc<Picker>) -> PrimaryModel {
        PrimaryModel::start(&self.rt, host, pick)
    }

    /// [`Harness::primary`] whose answers each take `pause` (see [`PrimaryModel::start_paced`]).
    pub fn paced_primary(&self, host: Host, pick: Arc<Picker>, pause: Duration) -> PrimaryModel {
        PrimaryModel::start_paced(&self.rt, host, pick, Arc::new(|_: &Value| 100), pause)
    }

    /// The environment every CLI run gets, before the host's own variables.
    fn base_env(&self) -> Vec<(String, String)> {
        let s = &self.scratch;
        let path = format!(
            "{}:{}",
            self.tools.node_bin.display(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into())
        );
        let trap = format!("http://{}", self.trap.addr());
        let mut env: Vec<(String, String)> = vec![
            ("PATH".into(), path),
            ("HOME".into(), s.home.display().to_string()),
            ("LANG".into(), "C.UTF-8".into()),
            (
                "XDG_CONFIG_HOME".into(),
                s.home.join(".config").display().to_string(),
            ),
            (
                "XDG_STATE_HOME".into(),
                s.home.join(".local/state").display().to_string(),
            ),
            (
                "XDG_CACHE_HOME".into(),
                s.home.join(".cache").display().to_string(),
            ),
            ("XDG_RUNTIME_DIR".into(), s.runtime.display().to_string()),
            ("ADVISOR_CONFIG_DIR".into(), s.config.display().to_string()),
            ("ADVISOR_STATE_DIR".into(), s.state.display().to_string()),
            (
                "ADVISOR_RUNTIME_DIR".into(),
                s.runtime.display().to_string(),
            ),
            ("NO_PROXY".into(), "127.0.0.1,localhost".into()),
            ("no_proxy".into(), "127.0.0.1,localhost".into()),
        ];
        for var in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
            env.push((var.into(), trap.clone()));
            env.push((var.to_ascii_lowercase(), trap.clone()));
        }
        env
    }

    /// Runs `host` once on `prompt` in the project directory against `primary`, with `extra`
    /// arguments (e.g. Claude's `--resume ID`), killed after `limit`.
    pub fn run(
        &self,
        host: Host,
        primary: &PrimaryModel,
        prompt: &str,
        extra: &[&str],
        limit: Duration,
    ) -> RunOutput {
        let mut cmd = match host {
            Host::ClaudeCode => self.claude_command(primary, prompt, extra),
            Host::Codex => self.codex_command(primary, prompt, extra),
        };
        cmd.envs(self.env.iter().cloned());
        self.wait(cmd, limit)
    }

    /// `program` with the base environment only, run in the project directory.
    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .envs(self.base_env())
            .current_dir(&self.scratch.project)
            .stdin(Stdio::null());
        cmd
    }

    fn claude_command(&self, primary: &PrimaryModel, prompt: &str, extra: &[&str]) -> Command {
        let mut cmd = self.command(&self.tools.claude);
        cmd.args(["-p", prompt, "--output-format", "stream-json", "--verbose"])
            .arg("--dangerously-skip-permissions")
            .args(extra)
            .env("ANTHROPIC_BASE_URL", primary.url())
            .env("ANTHROPIC_API_KEY", "primary-secret")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            // --dangerously-skip-permissions is refused as root unless this is exactly "1".
            .env("IS_SANDBOX", "1");
        cmd
    }

    fn codex_command(&self, primary: &PrimaryModel, prompt: &str, extra: &[&str]) -> Command {
        write_codex_config(&self.scratch, &primary.url(), &self.codex_toml);
        let mut cmd = self.command(&self.tools.codex);
        cmd.arg("exec")
            .args(extra)
            .args(["--skip-git-repo-check", "--json"])
            .arg("--dangerously-bypass-approvals-and-sandbox")
            // Without it `codex exec` skips every hook, silently.
            .arg("--dangerously-bypass-hook-trust")
            // The curated-plugins sync looks up api.github.com otherwise.
            .args(["--disable", "plugins", "--disable", "remote_plugin"])
            .arg(prompt)
            .env("CODEX_HOME", self.scratch.codex_home())
            .env("SCRIPTED_API_KEY", "primary-secret");
        cmd
    }

    /// Spawns `cmd` with stdout and stderr in files and waits for it, killing it past
    /// `limit`.
    fn wait(&self, mut cmd: Command, limit: Duration) -> RunOutput {
        let n = std::fs::read_dir(&self.scratch.work).map_or(0, Iterator::count);
        let out_path = self.scratch.work.join(format!("run{n}.stdout"));
        let err_path = self.scratch.work.join(format!("run{n}.stderr"));
        cmd.stdout(std::fs::File::create(&out_path).expect("stdout file"))
            .stderr(std::fs::File::create(&err_path).expect("stderr file"));
        let start = Instant::now();
        let _runtime = self.rt.enter();
        let mut child = tokio::process::Command::from(cmd)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the host CLI");
        let (code, timed_out) = self.rt.block_on(async {
            match tokio::time::timeout(limit, child.wait()).await {
                Ok(status) => (status.expect("wait for the host CLI").code(), false),
                Err(_) => {
                    let _ = child.kill().await;
                    (None, true)
                }
            }
        });
        let wall = start.elapsed();
        let read = |p: &Path| {
            let mut s = String::new();
            let _ = std::fs::File::open(p).and_then(|mut f| f.read_to_string(&mut s));
            s
        };
        RunOutput {
            code,
            stdout: read(&out_path),
            stderr: read(&err_path),
            wall,
            timed_out,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A stand-in hook: a shell script that logs its stdin and answers from files

/// A command hook written as a small `sh` script in the scratch work dir: it appends its
/// stdin (one JSON line) to `hooks.jsonl` and prints `reply-<Event>.json` when that file
/// exists — for `Stop`, only while `stop_hook_active` is not true (one continuation).
pub struct ScriptHook {
    dir: PathBuf,
}

impl ScriptHook {
    /// Writes the script into `scratch.work/hook`.
    pub fn new(scratch: &Scratch) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch.work.join("hook");
        std::fs::create_dir_all(&dir).expect("mkdir hook");
        let script = r#"#!/bin/sh
dir=$(dirname "$0")
input=$(cat)
printf '%s\n' "$input" >> "$dir/hooks.jsonl"
event=$(printf '%s' "$input" | grep -o '"hook_event_name": *"[A-Za-z]*"' | head -n 1 | sed 's/.*"\([A-Za-z]*\)"$/\1/')
if [ "$event" = Stop ] && printf '%s' "$input" | grep -Eq '"stop_hook_active": *true'; then
  exit 0
fi
if [ -f "$dir/reply-$event.json" ]; then
  cat "$dir/reply-$event.json"
fi
exit 0
"#;
        let path = dir.join("hook.sh");
        std::fs::write(&path, script).expect("write hook.sh");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("chmod hook.sh");
        Self { dir }
    }

    /// The hook command to register.
    pub fn command(&self) -> String {
        self.dir.join("hook.sh").display().to_string()
    }

    /// Makes the hook answer `event` with `reply`.
    pub fn reply(&self, event: &str, reply: &Value) {
        std::fs::write(
            self.dir.join(format!("reply-{event}.json")),
            reply.to_string(),
        )
        .expect("write a hook reply");
    }

    /// The stdin of every hook call so far, in order.
    pub fn calls(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("hooks.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("hook stdin {l}: {e}")))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// The advisor attached for real: `advisor install`, its background process, its model

/// The `advisor` binary under test.
pub use super::advisor_bin;

/// How the scripted advisor model answers a review whose newest session update holds
/// `cue`: `advise` with `severity` and a note naming the cue ([`advice_note`]).
pub const CUES: [(&str, &str); 3] = [
    ("CUE-NIT", "nit"),
    ("CUE-CONCERN", "concern"),
    ("CUE-BLOCKER", "blocker"),
];

/// The note the scripted advisor raises on `cue`.
pub fn advice_note(cue: &str) -> String {
    format!("ADVICE-{cue}: look again at what this command wrote.")
}

/// The text of the user messages that end an Anthropic request (the newest session update
/// the advisor is sent), joined; empty when the last one carries a tool result (the
/// advisor's own tool call came back).
fn newest_update(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let last = messages.last()?;
    let tool_result = last["content"]
        .as_array()
        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"));
    if tool_result {
        return None;
    }
    let start = messages
        .iter()
        .rposition(|m| m["role"] != "user")
        .map_or(0, |i| i + 1);
    Some(messages[start..].iter().map(super::strings_in).collect())
}

/// The scripted advisor model (Anthropic Messages, as `anthropic/claude-sonnet-4-5` with
/// `ADVISOR_BASE_URL` pointing here): on a cue of [`CUES`] in the newest update it calls
/// `advise`; anything else, and the request after its own tool call, gets an empty text.
/// With `stall` set every request is held open and never answered (a hung provider).
/// Each `advise` answer touches `<marks>/advised-<n>` (from 0) so a primary's shell step
/// can wait for the advice to be in.
pub struct AdvisorModel {
    server: SseServer,
}

impl AdvisorModel {
    /// Starts it on `rt`.
    pub fn start(rt: &Runtime, marks: PathBuf, stall: bool) -> Self {
        use super::wire::Dialect;
        let advised = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let responder = Arc::new(move |request: &RecordedRequest| {
            if stall {
                return ScriptedResponse::sse_chunks(Vec::<Vec<u8>>::new()).then(BodyPart::Stall);
            }
            let dialect = Dialect::Anthropic;
            let update = newest_update(&request.json()).unwrap_or_default();
            for (cue, severity) in CUES {
                if update.contains(cue) {
                    let n = advised.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let _ = std::fs::write(marks.join(format!("advised-{n}")), "");
                    let args = json!({"severity": severity, "note": advice_note(cue)});
                    return ScriptedResponse::sse(&dialect.advise_answer("toolu_advise", &args));
                }
            }
            ScriptedResponse::sse(&dialect.answer(""))
        });
        let server = rt
            .block_on(SseServer::start_with(responder))
            .expect("bind the scripted advisor model");
        Self { server }
    }

    /// `ADVISOR_BASE_URL` for it.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The first request (from the `from`th on) that `pred` accepts, waiting for new ones
    /// until `limit` has passed since the call; `None` when none came.
    pub fn wait_for(
        &self,
        rt: &Runtime,
        from: usize,
        limit: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut n = from;
        loop {
            let found = self.bodies().into_iter().skip(n).find(|b| pred(b));
            if found.is_some() {
                return found;
            }
            n = n.max(self.server.request_count());
            // The timer is made inside the runtime (it needs one to exist).
            let arrived = rt.block_on(async {
                tokio::time::timeout_at(deadline, self.server.wait_for_requests(n + 1)).await
            });
            arrived.ok()?;
        }
    }

    /// Every request it received, as JSON.
    pub fn bodies(&self) -> Vec<Value> {
        self.server
            .requests()
            .iter()
            .map(RecordedRequest::json)
            .collect()
    }
}

/// What the scripted gate model ([`AdvisorModel::gate`]) does with a gate request.
#[derive(Debug, Clone)]
pub enum GateAnswer {
    /// Answers this verdict (`{"decision", "risk", "reason"}`) as its whole text.
    Verdict(Value),
    /// Holds the request open and never answers (a hung gate model).
    Hang,
}

/// Whether an advisor model request is the action gate's (its system prompt, GT3).
pub fn is_gate_request(body: &Value) -> bool {
    super::strings_in(body).contains("You are the gate of a coding agent")
}

impl AdvisorModel {
    /// A scripted advisor whose action-gate requests ([`is_gate_request`]) get `answer`;
    /// every other request (the advisor's reviews) gets an empty text (no advice).
    pub fn gate(rt: &Runtime, answer: GateAnswer) -> Self {
        use super::wire::Dialect;
        let responder = Arc::new(move |request: &RecordedRequest| {
            let dialect = Dialect::Anthropic;
            match &answer {
                _ if !is_gate_request(&request.json()) => {
                    ScriptedResponse::sse(&dialect.answer(""))
                }
                GateAnswer::Verdict(v) => ScriptedResponse::sse(&dialect.answer(&v.to_string())),
                GateAnswer::Hang => {
                    ScriptedResponse::sse_chunks(Vec::<Vec<u8>>::new()).then(BodyPart::Stall)
                }
            }
        });
        let server = rt
            .block_on(SseServer::start_with(responder))
            .expect("bind the scripted gate model");
        Self { server }
    }

    /// The requests that were the action gate's, as JSON.
    pub fn gate_bodies(&self) -> Vec<Value> {
        self.bodies().into_iter().filter(is_gate_request).collect()
    }
}

impl Harness {
    /// Attaches the advisor for real: `config.yml` in `ADVISOR_CONFIG_DIR` holding `config`
    /// (the `advisor:` keys), the model `anthropic/claude-sonnet-4-5` at `model`, and
    /// `advisor install <host> --user`, which writes the hook entries into the host's user
    /// settings.
    pub fn attach_advisor(&mut self, host: Host, model: &AdvisorModel, config: &str) {
        self.attach_advisor_with(host, model, config, &[]);
    }

    /// [`Harness::attach_advisor`] with `extra` arguments to `advisor install` (`--gate`).
    pub fn attach_advisor_with(
        &mut self,
        host: Host,
        model: &AdvisorModel,
        config: &str,
        extra: &[&str],
    ) {
        std::fs::write(self.scratch.config.join("config.yml"), config).expect("config.yml");
        self.env.extend([
            ("ADVISOR_MODEL".into(), "anthropic/claude-sonnet-4-5".into()),
            ("ADVISOR_BASE_URL".into(), model.base_url()),
            ("ANTHROPIC_API_KEY".into(), "advisor-secret".into()),
        ]);
        let out = self
            .command(&advisor_bin())
            .args(["install", host.name(), "--user"])
            .args(extra)
            .envs(self.env.iter().cloned())
            .output()
            .expect("run advisor install");
        assert!(
            out.status.success(),
            "advisor install {}: {}\n{}",
            host.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Where the scripted advisor leaves its marks (see [`AdvisorModel`]).
    pub fn marks(&self) -> PathBuf {
        let dir = self.scratch.work.join("marks");
        std::fs::create_dir_all(&dir).expect("mkdir marks");
        dir
    }

    /// The hook log `advisor hook` wrote (H5), one JSON object per call.
    pub fn hook_events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.scratch.state.join("hook-events.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The pids of the background processes serving this harness's runtime directory.
    pub fn daemons(&self) -> Vec<u32> {
        let wanted = format!("ADVISOR_RUNTIME_DIR={}", self.scratch.runtime.display());
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        procs
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                cmdline.split(|&b| b == 0).any(|a| a == b"hook-daemon")
                    && environ.split(|&b| b == 0).any(|v| v == wanted.as_bytes())
            })
            .collect()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        // The background process outlives the CLI by design (H4); end ours, by id.
        for pid in self.daemons() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}
