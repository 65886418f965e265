//! The socket protocol between `advisor hook` (and `advisor status`) and the background
//! process (SPEC H4): one JSON line each way per connection, each line capped, each hook
//! request carrying the time its caller will wait.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use super::payload::HookPayload;

/// The longest request line: 2 MiB (a hook input is at most 1 MiB).
pub const MAX_REQUEST_BYTES: usize = 2 << 20;
/// The longest response line: 4 MiB (a status of many sessions).
pub const MAX_RESPONSE_BYTES: usize = 4 << 20;
/// The protocol's version; a peer speaking another one is answered with an error.
pub const PROTOCOL_VERSION: u32 = 1;

/// What a client asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Request {
    /// A hook event; answered within `deadline_ms`.
    Event {
        /// The protocol version ([`PROTOCOL_VERSION`]).
        v: u32,
        /// How long the hook waits for the answer, from when it sent the request.
        deadline_ms: u64,
        /// The event.
        payload: Box<HookPayload>,
        /// The session variables of the hook's environment ([`session_vars`]): a session
        /// this event opens takes its provider keys and model from them (H32). Absent from
        /// a client that does not send them: the background process's own apply.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        env: Option<BTreeMap<String, String>>,
    },
    /// The status of one session (by host session id, or a unique prefix) or of all.
    Status {
        /// The protocol version.
        v: u32,
        /// The session, `None` for all.
        session: Option<String>,
    },
    /// `on`, `off`, `pause` or `test <severity> <note>` (C2) for one session or all.
    Control {
        /// The protocol version.
        v: u32,
        /// The session, `None` for all.
        session: Option<String>,
        /// `on`, `off`, `pause` or `test <severity> <note>`.
        command: String,
    },
    /// Is anyone there? Answered with [`Response::Pong`].
    Ping {
        /// The protocol version.
        v: u32,
    },
}

impl Request {
    /// The request's protocol version.
    pub fn version(&self) -> u32 {
        match self {
            Request::Event { v, .. }
            | Request::Status { v, .. }
            | Request::Control { v, .. }
            | Request::Ping { v } => *v,
        }
    }
}

/// At most this many session variables cross the socket with an event.
pub const MAX_SESSION_VARS: usize = 64;
/// A session variable's name and value are each at most this many bytes; longer ones are
/// not sent.
pub const MAX_SESSION_VAR_BYTES: usize = 4096;

/// Whether `name` is a session variable (H32): a provider key (`*_API_KEY`, M2's names),
/// `ADVISOR_MODEL` or `ADVISOR_BASE_URL`.
pub fn is_session_var(name: &str) -> bool {
    name.ends_with("_API_KEY") || name == "ADVISOR_MODEL" || name == "ADVISOR_BASE_URL"
}

/// The session variables among `vars` (a hook's environment), within the caps: the first
/// [`MAX_SESSION_VARS`] by name, none over [`MAX_SESSION_VAR_BYTES`].
pub fn session_vars(vars: impl IntoIterator<Item = (String, String)>) -> BTreeMap<String, String> {
    let mut kept: BTreeMap<String, String> = vars
        .into_iter()
        .filter(|(name, value)| {
            is_session_var(name)
                && name.len() <= MAX_SESSION_VAR_BYTES
                && value.len() <= MAX_SESSION_VAR_BYTES
        })
        .collect();
    while kept.len() > MAX_SESSION_VARS {
        kept.pop_last();
    }
    kept
}

/// How a hook call ended, as the hook log records it (H5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Nothing was due.
    Empty,
    /// Context for the model (and/or a line for the user).
    Context,
    /// A Stop block.
    Block,
    /// A PreToolUse deny (the gate).
    Deny,
    /// A PreToolUse ask (the gate).
    Ask,
    /// A PreToolUse allow (the gate).
    Allow,
    /// No background process answered.
    DaemonDown,
    /// The background process did not answer in time.
    Timeout,
    /// Anything else went wrong (bad input, a protocol error).
    Error,
}

impl Outcome {
    /// The word the hook log uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Empty => "empty",
            Outcome::Context => "context",
            Outcome::Block => "block",
            Outcome::Deny => "deny",
            Outcome::Ask => "ask",
            Outcome::Allow => "allow",
            Outcome::DaemonDown => "daemon-down",
            Outcome::Timeout => "timeout",
            Outcome::Error => "error",
        }
    }
}

/// One session in a status answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionReport {
    /// `claude-code` or `codex`.
    pub host: String,
    /// The host's session id.
    pub session: String,
    /// The working directory.
    pub cwd: Option<String>,
    /// The status as `/advisor status` words it (C3).
    pub text: String,
    /// The status as data (`AdvisorStatus`), for `--json`.
    pub status: Value,
}

/// What the background process answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "camelCase")]
pub enum Response {
    /// A hook's answer: the JSON to print (none: print nothing) and the outcome to log.
    Hook {
        /// The hook's standard output.
        stdout: Option<Value>,
        /// The outcome.
        outcome: Outcome,
    },
    /// The sessions asked for.
    Status {
        /// The background process's id.
        pid: u32,
        /// The sessions.
        sessions: Vec<SessionReport>,
    },
    /// What each session said to a control command.
    Control {
        /// `(session, text)` pairs.
        results: Vec<(String, String)>,
    },
    /// The answer to a ping.
    Pong {
        /// The background process's id.
        pid: u32,
    },
    /// The request could not be served.
    Error {
        /// Why.
        message: String,
    },
}

/// A protocol failure.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The line is longer than its cap; it was read no further.
    #[error("line over {0} bytes")]
    TooLong(usize),
    /// The peer closed the connection before a line.
    #[error("the connection closed before an answer")]
    Closed,
    /// The line is not the JSON expected.
    #[error("bad line: {0}")]
    Json(#[from] serde_json::Error),
    /// Reading or writing failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Reads one line of at most `cap` bytes (the newline not counted) and parses it. Reads no
/// more than `cap + 1` bytes whatever the peer sends.
pub async fn read_json_line<T, R>(reader: &mut R, cap: usize) -> Result<T, ProtocolError>
where
    T: for<'de> Deserialize<'de>,
    R: AsyncBufRead + Unpin,
{
    let mut line = Vec::new();
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            if line.is_empty() {
                return Err(ProtocolError::Closed);
            }
            break;
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if line.len() + take > cap {
            return Err(ProtocolError::TooLong(cap));
        }
        line.extend_from_slice(&chunk[..take]);
        reader.consume(if done { take + 1 } else { take });
        if done {
            break;
        }
    }
    Ok(serde_json::from_slice(&line)?)
}

/// Writes `value` as one line and flushes.
pub async fn write_json_line<T, W>(writer: &mut W, value: &T) -> Result<(), ProtocolError>
where
    T: Serialize,
    W: AsyncWrite + Unpin,
{
    let mut bytes = serde_json::to_vec(value)?;
    bytes.push(b'\n');
    writer.write_all(&bytes).await?;
    writer.flush().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    #[test]
    fn h32_only_session_variables_cross_the_socket_within_their_caps() {
        let vars = [
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("MY_LAB_API_KEY", "sk-lab"),
            ("ADVISOR_MODEL", "anthropic/claude-sonnet-4-5"),
            ("ADVISOR_BASE_URL", "http://127.0.0.1:9"),
            ("HOME", "/home/u"),
            ("AWS_SECRET_ACCESS_KEY", "no"),
            ("PATH", "/bin"),
        ]
        .map(|(n, v)| (n.to_string(), v.to_string()));
        let kept = session_vars(vars);
        assert_eq!(
            kept.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "ADVISOR_BASE_URL",
                "ADVISOR_MODEL",
                "ANTHROPIC_API_KEY",
                "MY_LAB_API_KEY"
            ]
        );
        let long = (
            "OPENAI_API_KEY".to_string(),
            "k".repeat(MAX_SESSION_VAR_BYTES + 1),
        );
        assert!(session_vars([long]).is_empty());
        let many = (0..100).map(|i| (format!("P{i:03}_API_KEY"), "k".to_string()));
        assert_eq!(session_vars(many).len(), MAX_SESSION_VARS);
    }

    #[test]
    fn h32_an_event_carries_the_hooks_variables_and_an_older_clients_none() {
        let payload: HookPayload = crate::hosts::payload::parse_payload(
            br#"{"session_id":"s","hook_event_name":"Stop"}"#,
            None,
        )
        .unwrap();
        let env: BTreeMap<String, String> =
            [("OPENAI_API_KEY".to_string(), "sk-o".to_string())].into();
        let request = Request::Event {
            v: PROTOCOL_VERSION,
            deadline_ms: 100,
            payload: Box::new(payload.clone()),
            env: Some(env.clone()),
        };
        let text = serde_json::to_string(&request).unwrap();
        assert_eq!(serde_json::from_str::<Request>(&text).unwrap(), request);
        // The same request as a client that sends no variables writes it.
        let mut older: Value = serde_json::from_str(&text).unwrap();
        older.as_object_mut().unwrap().remove("env");
        let Request::Event { env, .. } = serde_json::from_value::<Request>(older).unwrap() else {
            panic!("an event");
        };
        assert_eq!(env, None);
    }

    #[tokio::test]
    async fn h4_a_line_round_trips_and_an_over_long_one_is_refused_unread() {
        let mut buf = Vec::new();
        write_json_line(&mut buf, &Request::Ping { v: 1 })
            .await
            .unwrap();
        let mut r = BufReader::new(&buf[..]);
        let back: Request = read_json_line(&mut r, 100).await.unwrap();
        assert_eq!(back, Request::Ping { v: 1 });
        let long = vec![b'x'; 10_000];
        let mut r = BufReader::with_capacity(64, &long[..]);
        let err = read_json_line::<Request, _>(&mut r, 100).await.unwrap_err();
        assert!(matches!(err, ProtocolError::TooLong(100)), "{err}");
        let mut r = BufReader::new(&b""[..]);
        let err = read_json_line::<Request, _>(&mut r, 100).await.unwrap_err();
        assert!(matches!(err, ProtocolError::Closed));
    }

    #[test]
    fn h5_outcomes_use_the_hook_log_words() {
        for o in [Outcome::DaemonDown, Outcome::Empty, Outcome::Block] {
            assert_eq!(
                serde_json::to_value(o).unwrap(),
                Value::String(o.as_str().into())
            );
        }
    }
}
