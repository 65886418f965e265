//! The hook's side (SPEC H3–H5, H9): read the input under its caps, find or start the
//! background process, ask it within the bound, and log the call.

use std::collections::BTreeMap;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, BufReader};
use tokio::net::UnixStream;

use crate::regular_file::append_regular;

use super::paths::{check_socket, ensure_private_dir, HostPaths, HOOK_EVENTS_MAX_BYTES};
use super::payload::{parse_payload, HookEvent, HookHost, HookPayload, MAX_PAYLOAD_BYTES};
use super::protocol::{
    read_json_line, write_json_line, Outcome, Request, Response, MAX_RESPONSE_BYTES,
    PROTOCOL_VERSION,
};

/// What a hook call came to: what to print, and the log line's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct HookResult {
    /// The JSON to print on standard output; `None` prints nothing.
    pub stdout: Option<Value>,
    /// The outcome.
    pub outcome: Outcome,
    /// The host, when known.
    pub host: Option<HookHost>,
    /// The event's name, when known.
    pub event: Option<String>,
    /// The session, when known.
    pub session: Option<String>,
    /// What went wrong, for the log.
    pub error: Option<String>,
}

impl HookResult {
    fn failed(outcome: Outcome, error: impl Into<String>) -> Self {
        Self {
            stdout: None,
            outcome,
            host: None,
            event: None,
            session: None,
            error: Some(error.into()),
        }
    }
}

/// How a hook call runs.
#[derive(Debug, Clone)]
pub struct HookCall {
    /// The places.
    pub paths: HostPaths,
    /// The effective user id.
    pub uid: u32,
    /// The host the installer named, else the one the environment names.
    pub host: Option<HookHost>,
    /// The answer bound (H9).
    pub bound: Duration,
    /// The bound of a PreToolUse answer, which the action gate may take (GT12:
    /// `advisor.gateTimeoutMs` + 1 s); `None`: [`HookCall::bound`].
    pub gate_bound: Option<Duration>,
    /// The program to start as the background process (`advisor`), with its arguments
    /// (`hook-daemon`); `None` never starts one.
    pub daemon_command: Option<(std::path::PathBuf, Vec<String>)>,
    /// The session variables of the hook's environment (provider keys, `ADVISOR_MODEL`,
    /// `ADVISOR_BASE_URL`: [`session_vars`](super::protocol::session_vars)), sent with
    /// each event (H32).
    pub env: BTreeMap<String, String>,
}

/// Reads at most [`MAX_PAYLOAD_BYTES`] (plus one, to tell an over-long input) from `input`
/// within `limit`.
pub async fn read_input<R: tokio::io::AsyncRead + Unpin>(
    input: R,
    limit: Duration,
) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    let mut capped = input.take(MAX_PAYLOAD_BYTES as u64 + 1);
    match tokio::time::timeout(limit, capped.read_to_end(&mut buf)).await {
        Err(_) => Err("hook input not read within the bound".into()),
        Ok(Err(e)) => Err(format!("reading hook input: {e}")),
        Ok(Ok(_)) if buf.len() > MAX_PAYLOAD_BYTES => {
            Err(format!("hook input over {MAX_PAYLOAD_BYTES} bytes"))
        }
        Ok(Ok(_)) => Ok(buf),
    }
}

/// Answers one hook call whose input is `input`, started at `started`: never later than
/// `call.bound` after it, whatever the background process does.
pub async fn run_hook(call: &HookCall, input: &[u8], started: Instant) -> HookResult {
    let payload = match parse_payload(input, call.host) {
        Ok(payload) => payload,
        Err(e) => return HookResult::failed(Outcome::Error, e.to_string()),
    };
    let bound = match (&payload.event, call.gate_bound) {
        (HookEvent::PreToolUse { .. }, Some(gate)) => gate.max(call.bound),
        _ => call.bound,
    };
    let deadline = started + bound;
    let mut result = match ask(call, &payload, deadline).await {
        Ok(Response::Hook { stdout, outcome }) => HookResult {
            stdout,
            outcome,
            host: None,
            event: None,
            session: None,
            error: None,
        },
        Ok(Response::Error { message }) => HookResult::failed(Outcome::Error, message),
        Ok(other) => HookResult::failed(Outcome::Error, format!("unexpected answer {other:?}")),
        Err(failure) => failure,
    };
    result.host = Some(payload.host);
    result.event = Some(payload.event.name().to_string());
    result.session = Some(payload.session_id.clone());
    result
}

/// Sends `payload` to the background process and waits for its answer until `deadline`;
/// starts the process when none answers.
async fn ask(
    call: &HookCall,
    payload: &HookPayload,
    deadline: Instant,
) -> Result<Response, HookResult> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    let request = Request::Event {
        v: PROTOCOL_VERSION,
        deadline_ms: remaining.as_millis() as u64,
        payload: Box::new(payload.clone()),
        env: Some(call.env.clone()),
    };
    let exchange = async {
        let stream = match connect(call).await {
            Ok(stream) => stream,
            Err(Connect::Absent(why)) => {
                let started = start_daemon(call);
                let note = match started {
                    Ok(true) => format!("{why}; started the background process"),
                    Ok(false) => format!("{why}; the background process is starting"),
                    Err(e) => format!("{why}; could not start the background process: {e}"),
                };
                return Err(HookResult::failed(Outcome::DaemonDown, note));
            }
            Err(Connect::Refused(why)) => return Err(HookResult::failed(Outcome::Error, why)),
        };
        exchange(stream, &request)
            .await
            .map_err(|e| HookResult::failed(Outcome::Error, e))
    };
    match tokio::time::timeout_at(deadline.into(), exchange).await {
        Ok(result) => result,
        Err(_) => Err(HookResult::failed(
            Outcome::Timeout,
            "the background process did not answer within the bound",
        )),
    }
}

/// Why no connection was made.
enum Connect {
    /// No process listens: start one.
    Absent(String),
    /// The socket or its directory is not to be trusted: start nothing.
    Refused(String),
}

/// Connects to the socket after checking the directory and the socket (H4).
async fn connect(call: &HookCall) -> Result<UnixStream, Connect> {
    ensure_private_dir(&call.paths.runtime_dir, call.uid)
        .map_err(|e| Connect::Refused(e.to_string()))?;
    let socket = call.paths.socket();
    match fs::symlink_metadata(&socket) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Connect::Absent("no background process".into()))
        }
        _ => {}
    }
    check_socket(&socket, call.uid).map_err(|e| Connect::Refused(e.to_string()))?;
    UnixStream::connect(&socket)
        .await
        .map_err(|e| Connect::Absent(format!("background process gone ({e})")))
}

/// One request and its answer over `stream`.
pub async fn exchange(stream: UnixStream, request: &Request) -> Result<Response, String> {
    let (read, mut write) = stream.into_split();
    write_json_line(&mut write, request)
        .await
        .map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(read);
    read_json_line(&mut reader, MAX_RESPONSE_BYTES)
        .await
        .map_err(|e| e.to_string())
}

/// Starts the background process unless one holds the lock (it is starting or running):
/// `Ok(true)` when started. The child is detached: its standard streams are not the
/// hook's, so the CLI never waits for it, and it makes itself a session leader.
pub fn start_daemon(call: &HookCall) -> Result<bool, String> {
    let Some((program, args)) = &call.daemon_command else {
        return Ok(false);
    };
    let lock = open_lock(&call.paths.lock()).map_err(|e| e.to_string())?;
    use rustix::fs::{flock, FlockOperation};
    if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
        return Ok(false);
    }
    // Released at once: the process takes the lock itself and keeps it for its life, so a
    // second one started by a racing hook gives up.
    let _ = flock(&lock, FlockOperation::Unlock);
    let log = ensure_private_dir(&call.paths.state_dir, call.uid)
        .ok()
        .and_then(|()| crate::regular_file::open_append(&call.paths.daemon_log()).ok())
        .map(Stdio::from)
        .unwrap_or_else(Stdio::null);
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map(|_| true)
        .map_err(|e| e.to_string())
}

/// Opens (creating, mode 0600) the lock file; never follows a symlink.
pub fn open_lock(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

/// Appends the call's line to the hook log (H5), rotating it past 1 MiB. Failures are
/// returned for the caller to ignore: the log never changes the answer.
pub fn log_call(paths: &HostPaths, uid: u32, result: &HookResult, ms: u128) -> Result<(), String> {
    ensure_private_dir(&paths.state_dir, uid).map_err(|e| e.to_string())?;
    let file = paths.hook_events();
    if fs::metadata(&file).is_ok_and(|m| m.len() > HOOK_EVENTS_MAX_BYTES) {
        let _ = fs::rename(&file, paths.hook_events_rotated());
    }
    let mut line = json!({
        "ts": crate::review::transcript_file::iso_seconds(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        ),
        "host": result.host.map(HookHost::as_str),
        "event": result.event,
        "session": result.session,
        "ms": ms as u64,
        "outcome": result.outcome.as_str(),
    });
    if let Some(error) = &result.error {
        line["error"] = json!(error);
    }
    let mut bytes = line.to_string().into_bytes();
    bytes.push(b'\n');
    append_regular(&file, &bytes).map_err(|e| e.to_string())
}
