//! `advisor doctor` (H28, H29): whether the hooks are installed and fired, whether a model
//! and its key are there, whether the background process is up — as plain data gathered by
//! blocking functions, and one text and one JSON rendering of it.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::install::{
    command_program, host_events, is_our_command, parse_document, read_hooks_file, HooksFiles,
    Scope,
};
use advisor::hosts::gate_hook::{host_gate, GateSwitch};
use advisor::hosts::paths::{HostDirs, HostPaths};
use advisor::hosts::payload::HookHost;
use advisor::hosts::protocol::{Request, Response, PROTOCOL_VERSION};
use advisor::hosts::settings::{host_model, host_settings};
use advisor::providers::{resolve_config, Catalog, ModelSpec, ProviderError};

/// The most of the hook-events log read: its last 2 MiB (it rotates past 1 MiB).
pub const MAX_EVENTS_BYTES: u64 = 2 << 20;

/// One hooks file of one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HooksFileReport {
    /// `user` or `project`.
    pub scope: &'static str,
    /// The file.
    pub path: PathBuf,
    /// Whether the file exists.
    pub exists: bool,
    /// Why it could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The host's events that have an entry of ours.
    pub events: Vec<String>,
    /// The host's events without one (when some have one).
    pub missing_events: Vec<String>,
    /// The programs our entries run, each with whether it is an executable file.
    pub programs: Vec<ProgramReport>,
}

/// A program an entry of ours runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProgramReport {
    /// Its path, as the entry has it.
    pub path: String,
    /// Whether it is a regular file with an execute bit.
    pub executable: bool,
}

/// The last session of a host in the hook-events log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SessionReport {
    /// The session id.
    pub session: String,
    /// The first and last calls' times, as logged.
    pub first: String,
    /// See `first`.
    pub last: String,
    /// Calls per event.
    pub events: BTreeMap<String, u64>,
    /// Calls per outcome (`empty`, `context`, `block`, `daemon-down`, `timeout`, …).
    pub outcomes: BTreeMap<String, u64>,
    /// The slowest answer, in milliseconds.
    pub max_ms: u64,
}

/// The model a host's sessions would use here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelReport {
    /// The role string, when one is configured or defaulted.
    pub role: Option<String>,
    /// Where it came from.
    pub source: Option<String>,
    /// Whether the advisor is enabled by the settings.
    pub enabled: bool,
    /// `None` when the model can be used; else what is missing.
    pub problem: Option<String>,
}

/// Everything about one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostReport {
    /// The host.
    pub host: &'static str,
    /// Its user and project hooks files.
    pub files: Vec<HooksFileReport>,
    /// Its last session in the hook-events log.
    pub last_session: Option<SessionReport>,
    /// The model.
    pub model: ModelReport,
    /// The action gate and its `PreToolUse` hook (H33).
    pub gate: GateReport,
}

/// The action gate of a host's sessions here and the hook it needs (H33).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GateReport {
    /// Whether the gate is on for a session in the working directory (GT10).
    pub on: bool,
    /// What turns it on (`advisor.gate: risky`, a roster entry's gate), when it is on.
    pub source: Option<String>,
    /// Whether a file of the host has a `PreToolUse` entry of ours.
    pub pre_tool_use: bool,
    /// The gate is on, the host's hooks are installed, and no `PreToolUse` entry of ours is
    /// there: what is wrong and the command that fixes it.
    pub problem: Option<String>,
}

/// The background process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonReport {
    /// Its socket.
    pub socket: PathBuf,
    /// `running (pid N)` (it answered a ping), `not answering (why)`, `stale` (a socket
    /// nothing listens on), `absent`, `not a socket`, or an error.
    pub state: String,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    /// One per host.
    pub hosts: Vec<HostReport>,
    /// The hook-events log read.
    pub events_file: PathBuf,
    /// Why the log could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_error: Option<String>,
    /// The background process.
    pub daemon: DaemonReport,
}

/// Gathers the report (H28): `dirs` place the hosts' hooks files, `places` the advisor's
/// own; `env` looks up variables (keys, `ADVISOR_MODEL`). Blocking.
pub fn diagnose(
    dirs: &HostDirs,
    places: &HostPaths,
    env: &dyn Fn(&str) -> Option<String>,
) -> DoctorReport {
    let events_file = places.hook_events();
    let (sessions, events_error) = match read_events_tail(&events_file) {
        Ok(text) => (last_sessions(&text), None),
        Err(err) => (HashMap::new(), Some(err)),
    };
    let hosts = HookHost::ALL
        .into_iter()
        .map(|host| {
            // A settings file that cannot be read is the model's problem to report.
            let switch = host_gate(host, places, &dirs.cwd, None, env).ok().flatten();
            let files = hooks_files(dirs, host, switch.is_some());
            HostReport {
                host: host.as_str(),
                gate: gate_report(host, switch, &files),
                files,
                last_session: sessions.get(&host).cloned(),
                model: model_report(host, places, &dirs.cwd, env),
            }
        })
        .collect();
    DoctorReport {
        hosts,
        events_file,
        events_error,
        daemon: daemon_report(&places.socket()),
    }
}

/// The gate's part of a host's report (H33): the warning when the gate is on, the host's
/// hooks are installed and none of its files has our `PreToolUse` entry.
fn gate_report(
    host: HookHost,
    switch: Option<GateSwitch>,
    files: &[HooksFileReport],
) -> GateReport {
    let pre_tool_use = files
        .iter()
        .any(|f| f.events.iter().any(|e| e == "PreToolUse"));
    let installed = files.iter().any(|f| !f.events.is_empty());
    let problem = match &switch {
        Some(switch) if installed && !pre_tool_use => Some(format!(
            "the action gate is on ({switch}) but no PreToolUse hook of the advisor is installed, \
             so it cannot stop a call before it runs: run `advisor install {}` again",
            host.as_str()
        )),
        _ => None,
    };
    GateReport {
        on: switch.is_some(),
        source: switch.map(|s| s.to_string()),
        pre_tool_use,
        problem,
    }
}

/// The host's user and project hooks files, checked; the project's is left out when it is
/// the user's (a project in the home directory). `gate`: whether the action gate is on.
fn hooks_files(dirs: &HostDirs, host: HookHost, gate: bool) -> Vec<HooksFileReport> {
    let user = dirs.hooks_file(host, Scope::User);
    let project = dirs
        .hooks_file(host, Scope::Project)
        .filter(|p| Some(p) != user.as_ref());
    let user = user.map(|p| check_hooks_file(host, gate, Scope::User, &p));
    let project = project.map(|p| check_hooks_file(host, gate, Scope::Project, &p));
    user.into_iter().chain(project).collect()
}

/// What one hooks file holds of ours (H28, H33): `PreToolUse` counts as missing only when
/// the action gate is on (`gate`).
pub fn check_hooks_file(host: HookHost, gate: bool, scope: Scope, path: &Path) -> HooksFileReport {
    let mut report = HooksFileReport {
        scope: match scope {
            Scope::User => "user",
            Scope::Project => "project",
        },
        path: path.to_path_buf(),
        exists: false,
        error: None,
        events: Vec::new(),
        missing_events: Vec::new(),
        programs: Vec::new(),
    };
    let doc =
        match read_hooks_file(path).and_then(|t| t.map(|t| parse_document(path, &t)).transpose()) {
            Ok(None) => return report,
            Ok(Some(doc)) => doc,
            Err(err) => {
                report.exists = true;
                report.error = Some(err.to_string());
                return report;
            }
        };
    report.exists = true;
    for event in host_events(host) {
        let commands: Vec<&str> = doc
            .get("hooks")
            .and_then(|h| h.get(*event))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|g| g.get("hooks").and_then(Value::as_array))
            .flatten()
            .filter_map(|h| h.get("command").and_then(Value::as_str))
            .filter(|c| is_our_command(c))
            .collect();
        if commands.is_empty() {
            if gate || *event != "PreToolUse" {
                report.missing_events.push(event.to_string());
            }
            continue;
        }
        report.events.push(event.to_string());
        for program in commands.into_iter().filter_map(command_program) {
            if !report.programs.iter().any(|p| p.path == program) {
                let executable = is_executable(Path::new(&program));
                report.programs.push(ProgramReport {
                    path: program,
                    executable,
                });
            }
        }
    }
    if report.events.is_empty() {
        report.missing_events.clear();
    }
    report
}

/// Whether `path` is a regular file (symlinks followed) with an execute bit.
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The last [`MAX_EVENTS_BYTES`] of the log, from its first whole line. A log that is not a
/// regular file is refused.
fn read_events_tail(path: &Path) -> Result<String, String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let read = || -> std::io::Result<String> {
        let mut file = File::open(path)?;
        let start = meta.len().saturating_sub(MAX_EVENTS_BYTES);
        file.seek(SeekFrom::Start(start))?;
        let mut bytes = Vec::new();
        file.take(MAX_EVENTS_BYTES).read_to_end(&mut bytes)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(match (start, text.find('\n')) {
            (0, _) => text,
            (_, Some(at)) => text[at + 1..].to_string(),
            (_, None) => String::new(),
        })
    };
    read().map_err(|err| format!("cannot read {}: {err}", path.display()))
}

/// The last session of each host in a hook-events log (`{"ts", "host", "event", "session",
/// "ms", "outcome"}` per line; other lines are skipped): the session of the host's last
/// line, with the calls of that session counted.
pub fn last_sessions(text: &str) -> HashMap<HookHost, SessionReport> {
    let lines: Vec<(HookHost, Value)> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|v| Some((v.get("host")?.as_str()?.parse().ok()?, v)))
        .collect();
    let field = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let mut out = HashMap::new();
    for host in HookHost::ALL {
        let Some((_, last)) = lines.iter().rev().find(|(h, _)| *h == host) else {
            continue;
        };
        let session = field(last, "session");
        let mut report = SessionReport {
            session: session.clone(),
            ..SessionReport::default()
        };
        for (_, line) in lines
            .iter()
            .filter(|(h, v)| *h == host && field(v, "session") == session)
        {
            if report.first.is_empty() {
                report.first = field(line, "ts");
            }
            report.last = field(line, "ts");
            *report.events.entry(field(line, "event")).or_default() += 1;
            *report.outcomes.entry(field(line, "outcome")).or_default() += 1;
            let ms = line.get("ms").and_then(Value::as_u64).unwrap_or(0);
            report.max_ms = report.max_ms.max(ms);
        }
        out.insert(host, report);
    }
    out
}

/// The model a `host` session in `cwd` would use, and what stops it.
fn model_report(
    host: HookHost,
    places: &HostPaths,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> ModelReport {
    let loaded = match host_settings(host, places, cwd) {
        Ok(loaded) => loaded,
        Err(err) => {
            return ModelReport {
                role: None,
                source: None,
                enabled: false,
                problem: Some(err.to_string()),
            }
        }
    };
    let Some(model) = host_model(host, &loaded, env) else {
        return ModelReport {
            role: None,
            source: None,
            enabled: loaded.settings.enabled,
            problem: Some(
                "no model: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or run `advisor install HOST --model provider/model-id`"
                    .into(),
            ),
        };
    };
    let catalog = Catalog::builtin().unwrap_or_else(|_| Catalog::empty());
    let spec = ModelSpec {
        disabled_providers: loaded.settings.disabled_providers.clone(),
        ..ModelSpec::role(&model.role)
    };
    let problem = match resolve_config(&spec, &catalog, env) {
        Ok(_) => None,
        Err(ProviderError::MissingKey { env_var, .. }) => Some(format!("{env_var} is not set")),
        Err(err) => Some(err.to_string()),
    };
    ModelReport {
        role: Some(model.role),
        source: Some(model.source.to_string()),
        enabled: loaded.settings.enabled,
        problem,
    }
}

/// How long doctor waits for the background process to answer its ping.
const PING_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// The largest answer to a ping read.
const MAX_PONG_BYTES: u64 = 4096;

/// Whether the background process's socket is there and answers a ping (H28): `running`
/// (with its pid), `not answering`, `stale` (nothing listens), `absent`, `not a socket`.
fn daemon_report(socket: &Path) -> DaemonReport {
    let state = match std::fs::symlink_metadata(socket) {
        Ok(meta) if meta.file_type().is_socket() => ping(socket),
        Ok(_) => "not a socket".to_string(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => "absent".to_string(),
        Err(err) => err.to_string(),
    };
    DaemonReport {
        socket: socket.to_path_buf(),
        state,
    }
}

/// Pings the background process: one request line, one answer line, within
/// [`PING_TIMEOUT`] each way.
fn ping(socket: &Path) -> String {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;
    let stream = match UnixStream::connect(socket) {
        Ok(stream) => stream,
        Err(err) if err.kind() == std::io::ErrorKind::ConnectionRefused => {
            return "stale".to_string()
        }
        Err(err) => return format!("not answering ({err})"),
    };
    let exchange = || -> Result<Response, String> {
        stream
            .set_read_timeout(Some(PING_TIMEOUT))
            .map_err(|e| e.to_string())?;
        stream
            .set_write_timeout(Some(PING_TIMEOUT))
            .map_err(|e| e.to_string())?;
        let mut line = serde_json::to_vec(&Request::Ping {
            v: PROTOCOL_VERSION,
        })
        .map_err(|e| e.to_string())?;
        line.push(b'\n');
        (&stream).write_all(&line).map_err(|e| e.to_string())?;
        let mut answer = String::new();
        BufReader::new((&stream).take(MAX_PONG_BYTES))
            .read_line(&mut answer)
            .map_err(|e| e.to_string())?;
        serde_json::from_str(&answer).map_err(|e| e.to_string())
    };
    match exchange() {
        Ok(Response::Pong { pid }) => format!("running (pid {pid})"),
        Ok(other) => format!("not answering (it said {other:?})"),
        Err(err) => format!("not answering ({err})"),
    }
}

/// Whether a host's hooks are installed in any of its files.
fn installed(host: &HostReport) -> bool {
    host.files.iter().any(|f| !f.events.is_empty())
}

/// The report as text, one block per host, then the background process (H29).
pub fn render_text(report: &DoctorReport) -> String {
    let mut out = String::new();
    for host in &report.hosts {
        render_host(&mut out, host);
    }
    if let Some(err) = &report.events_error {
        out.push_str(&format!("hook log: {err}\n"));
    }
    let daemon = &report.daemon;
    out.push_str(&match daemon.state.as_str() {
        state if state.starts_with("running") => format!(
            "background process: {state}, socket {}\n",
            daemon.socket.display()
        ),
        "stale" => format!(
            "background process: not running (a stale socket {}); the next hook call starts it\n",
            daemon.socket.display()
        ),
        "absent" => format!(
            "background process: not running (no {}); the next hook call starts it\n",
            daemon.socket.display()
        ),
        other => format!(
            "background process: {} is {other}\n",
            daemon.socket.display()
        ),
    });
    out
}

/// One hooks file's lines.
fn render_file(out: &mut String, host: &HostReport, file: &HooksFileReport) {
    let state = match (&file.error, file.exists, file.events.len()) {
        (Some(err), ..) => format!("cannot be used: {err}"),
        (None, false, _) => "not there".to_string(),
        (None, true, 0) => "no advisor hooks".to_string(),
        (None, true, n) if file.missing_events.is_empty() => {
            let pre = file.events.iter().any(|e| e == "PreToolUse");
            if pre || host.gate.on {
                format!("advisor hooks on all {n} events")
            } else {
                format!("advisor hooks on all {n} events (no PreToolUse: the action gate is off)")
            }
        }
        (None, true, n) => format!(
            "advisor hooks on {n} events; missing on {} (run `advisor install {}` again)",
            file.missing_events.join(", "),
            host.host
        ),
    };
    out.push_str(&format!(
        "  {} hooks {}: {state}\n",
        file.scope,
        file.path.display()
    ));
    for program in file.programs.iter().filter(|p| !p.executable) {
        out.push_str(&format!(
            "    the hooks run {}, which is not an executable file: run `advisor install {}` again\n",
            program.path, host.host
        ));
    }
}

/// The gate's line (H33): the gate on without its hook, or the hook with the gate off.
fn render_gate(out: &mut String, host: &HostReport) {
    let gate = &host.gate;
    if let Some(problem) = &gate.problem {
        out.push_str(&format!("  {problem}\n"));
    } else if !gate.on && gate.pre_tool_use {
        out.push_str(&format!(
            "  the action gate is off, so the PreToolUse hook only adds a call per tool use: \
             `advisor install {}` again leaves it out\n",
            host.host
        ));
    }
}

/// One host's block.
fn render_host(out: &mut String, host: &HostReport) {
    let title = host
        .host
        .parse::<HookHost>()
        .map_or(host.host, HookHost::title);
    out.push_str(&format!("{title}:\n"));
    for file in &host.files {
        render_file(out, host, file);
    }
    render_gate(out, host);
    if !installed(host) {
        out.push_str(&format!(
            "  not installed: run `advisor install {}`\n",
            host.host
        ));
    }
    match &host.last_session {
        Some(s) => {
            let counts = |m: &BTreeMap<String, u64>| {
                m.iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push_str(&format!(
                "  last session {} ({} – {}): {}; outcomes: {}; slowest answer {} ms\n",
                s.session,
                s.first,
                s.last,
                counts(&s.events),
                counts(&s.outcomes),
                s.max_ms
            ));
        }
        None if installed(host) => {
            out.push_str("  no hook has fired yet\n");
            if host.host == HookHost::Codex.as_str() {
                out.push_str(CODEX_TRUST_NOTE);
            }
        }
        None => {}
    }
    let model = &host.model;
    let line = match (&model.role, &model.problem) {
        (Some(role), None) => format!("model {role} ({})", model.source.as_deref().unwrap_or("")),
        (Some(role), Some(problem)) => format!("model {role}: {problem}"),
        (None, Some(problem)) => problem.clone(),
        (None, None) => "no model".to_string(),
    };
    out.push_str(&format!("  {line}\n"));
    if !model.enabled {
        out.push_str("  the advisor is off (`advisor.enabled: false` in the settings)\n");
    }
}

/// What to tell a Codex user whose hooks never fired (H29): Codex skips untrusted hooks
/// without a word.
pub const CODEX_TRUST_NOTE: &str = "  Codex runs hooks only once they are trusted, and skips untrusted ones silently:\n    \
     start `codex` and trust the hooks when it asks, or pass --dangerously-bypass-hook-trust to `codex exec`\n";

#[cfg(test)]
mod tests;
