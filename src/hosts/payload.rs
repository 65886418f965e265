//! A hook's standard input as Claude Code and Codex CLI send it, typed (SPEC H3).
//!
//! Both CLIs send one JSON object with the same keys: `session_id`, `transcript_path`,
//! `cwd`, `hook_event_name`, and per event `source`, `prompt`, `tool_name`, `tool_input`,
//! `tool_use_id`, `tool_response`, `stop_hook_active`, `last_assistant_message`, `reason`.
//! Codex adds `model` and `turn_id`; Claude Code adds `prompt_id` and `effort`.
//!
//! Fields are taken as they come: a missing or mistyped optional field reads as absent,
//! strings lose their control characters and are clipped, so nothing hostile reaches the
//! log or the background process. Only a payload that is not a JSON object, or has no
//! usable `session_id` or `hook_event_name`, is an error.

use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The largest hook input read: 1 MiB. A longer one is an error, read no further.
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;
/// The longest session id accepted.
pub const MAX_SESSION_ID_CHARS: usize = 256;
/// The longest path accepted (`transcript_path`, `cwd`).
pub const MAX_PATH_CHARS: usize = 4096;
/// The longest prompt or assistant message kept; longer ones are clipped.
pub const MAX_TEXT_CHARS: usize = 64 * 1024;
/// The longest short field kept (names, ids, sources, reasons).
pub const MAX_NAME_CHARS: usize = 256;
/// The largest `tool_input` or `tool_response` kept, as JSON text; a larger one is dropped
/// (the transcript has it).
pub const MAX_TOOL_JSON_BYTES: usize = 64 * 1024;

/// The CLI that called the hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookHost {
    /// Claude Code.
    #[serde(rename = "claude-code")]
    ClaudeCode,
    /// Codex CLI.
    #[serde(rename = "codex")]
    Codex,
}

impl HookHost {
    /// The host's name in logs, flags and directory names: `claude-code`, `codex`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookHost::ClaudeCode => "claude-code",
            HookHost::Codex => "codex",
        }
    }

    /// The host the environment names, when it does: `CLAUDECODE=1` or
    /// `CLAUDE_PROJECT_DIR` → Claude Code; `CODEX_HOME` → Codex.
    pub fn from_env(lookup: &dyn Fn(&str) -> Option<String>) -> Option<Self> {
        let set = |name: &str| lookup(name).is_some_and(|v| !v.trim().is_empty());
        if lookup("CLAUDECODE").as_deref() == Some("1") || set("CLAUDE_PROJECT_DIR") {
            Some(HookHost::ClaudeCode)
        } else if set("CODEX_HOME") {
            Some(HookHost::Codex)
        } else {
            None
        }
    }
}

impl FromStr for HookHost {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "claude-code" | "claude" | "claudecode" => Ok(HookHost::ClaudeCode),
            "codex" => Ok(HookHost::Codex),
            other => Err(format!(
                "unknown host {other:?}: expected claude-code or codex"
            )),
        }
    }
}

/// What a `SessionStart` says about how the session began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartSource {
    /// A new session.
    Startup,
    /// A session resumed (`--resume`, `--continue`).
    Resume,
    /// `/clear`.
    Clear,
    /// The context was compacted.
    Compact,
    /// Anything else (kept as startup).
    Other,
}

/// One hook event, typed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum HookEvent {
    /// The session started, resumed, was cleared or compacted.
    SessionStart {
        /// How.
        source: StartSource,
    },
    /// The user sent a prompt.
    UserPromptSubmit {
        /// The prompt, clipped.
        prompt: String,
    },
    /// A tool is about to run.
    PreToolUse {
        /// The tool (`Bash`, `Write`, `apply_patch`…).
        tool_name: String,
        /// Its input; `Null` when absent or larger than [`MAX_TOOL_JSON_BYTES`].
        tool_input: Value,
        /// The call's id.
        tool_use_id: Option<String>,
    },
    /// A tool ran.
    PostToolUse {
        /// The tool.
        tool_name: String,
        /// Its input; `Null` when absent or too large.
        tool_input: Value,
        /// The call's id.
        tool_use_id: Option<String>,
        /// What it returned (an object for Claude Code, a string for Codex); `Null` when
        /// absent or too large.
        tool_response: Value,
    },
    /// The agent is about to stop.
    Stop {
        /// True when the agent is already continuing because a Stop hook blocked.
        stop_hook_active: bool,
        /// The agent's last message, clipped.
        last_assistant_message: Option<String>,
    },
    /// A sub-agent is about to stop.
    SubagentStop {
        /// As for `Stop`.
        stop_hook_active: bool,
    },
    /// The session ended (Claude Code only).
    SessionEnd {
        /// Why (`clear`, `logout`, `prompt_input_exit`, `other`…).
        reason: Option<String>,
    },
    /// An event this crate does not handle (`Notification`, `PreCompact`…): answered empty.
    Other {
        /// The event's name, clipped.
        name: String,
    },
}

impl HookEvent {
    /// The event's name as the CLIs spell it.
    pub fn name(&self) -> &str {
        match self {
            HookEvent::SessionStart { .. } => "SessionStart",
            HookEvent::UserPromptSubmit { .. } => "UserPromptSubmit",
            HookEvent::PreToolUse { .. } => "PreToolUse",
            HookEvent::PostToolUse { .. } => "PostToolUse",
            HookEvent::Stop { .. } => "Stop",
            HookEvent::SubagentStop { .. } => "SubagentStop",
            HookEvent::SessionEnd { .. } => "SessionEnd",
            HookEvent::Other { name } => name,
        }
    }
}

/// A hook call's input, typed and cleaned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookPayload {
    /// The CLI.
    pub host: HookHost,
    /// The host's session id (control characters removed, at most
    /// [`MAX_SESSION_ID_CHARS`]).
    pub session_id: String,
    /// The session's transcript file as the CLI names it (not yet checked).
    pub transcript_path: Option<PathBuf>,
    /// The session's working directory.
    pub cwd: Option<PathBuf>,
    /// Codex's turn id.
    pub turn_id: Option<String>,
    /// Codex's model name.
    pub model: Option<String>,
    /// The sub-agent whose event this is (`agent_id`, letters, digits, `-` and `_` only):
    /// both CLIs send it on a sub-agent's own tool events and on its `SubagentStop`; `None`
    /// for the main agent's (W7).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The sub-agent's own transcript (`agent_transcript_path`, sent with `SubagentStop`).
    #[serde(default)]
    pub agent_transcript_path: Option<PathBuf>,
    /// The event.
    pub event: HookEvent,
}

impl HookPayload {
    /// A sub-agent's event as an event of the sub-agent's own session (W7, H30): the session
    /// id gains `.agent-<agent_id>` and the transcript is the sub-agent's own file —
    /// `agent_transcript_path` when given, else Claude Code's
    /// `<session>/subagents/agent-<agent_id>.jsonl` beside the main transcript, else (Codex,
    /// which names the sub-agent's rollout in `transcript_path`) the path as sent. A main
    /// agent's event is returned unchanged.
    pub fn into_subagent_session(mut self) -> Self {
        let Some(agent) = self.agent_id.clone() else {
            return self;
        };
        self.session_id = format!("{}.agent-{agent}", self.session_id);
        let own = self
            .agent_transcript_path
            .clone()
            .or_else(|| match self.host {
                HookHost::ClaudeCode => self.transcript_path.as_ref().and_then(|main| {
                    let stem = main.file_stem()?;
                    let dir = main.parent()?.join(stem).join("subagents");
                    Some(dir.join(format!("agent-{agent}.jsonl")))
                }),
                HookHost::Codex => self.transcript_path.clone(),
            });
        self.transcript_path = own;
        self
    }
}

/// Why a hook input cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// Longer than [`MAX_PAYLOAD_BYTES`].
    #[error("hook input over {MAX_PAYLOAD_BYTES} bytes")]
    TooLarge,
    /// Not JSON.
    #[error("hook input is not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("hook input is not a JSON object")]
    NotObject,
    /// A required field is missing, mistyped or blank.
    #[error("hook input has no usable {0}")]
    Missing(&'static str),
}

/// Parses a hook's input. `host` is what the caller knows (the `--host` flag, else the
/// environment, [`HookHost::from_env`]); without it, Codex is recognised by its `turn_id`
/// or `model` keys and anything else is taken for Claude Code.
pub fn parse_payload(bytes: &[u8], host: Option<HookHost>) -> Result<HookPayload, PayloadError> {
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(PayloadError::TooLarge);
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| PayloadError::NotJson(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(PayloadError::NotObject);
    };
    let session_id = text(&map, "session_id", MAX_SESSION_ID_CHARS)
        .filter(|s| !s.trim().is_empty())
        .ok_or(PayloadError::Missing("session_id"))?;
    let event_name = text(&map, "hook_event_name", MAX_NAME_CHARS)
        .filter(|s| !s.trim().is_empty())
        .ok_or(PayloadError::Missing("hook_event_name"))?;
    let turn_id = text(&map, "turn_id", MAX_NAME_CHARS);
    let model = text(&map, "model", MAX_NAME_CHARS);
    let host = host.unwrap_or(if turn_id.is_some() || model.is_some() {
        HookHost::Codex
    } else {
        HookHost::ClaudeCode
    });
    Ok(HookPayload {
        host,
        session_id,
        transcript_path: path(&map, "transcript_path"),
        cwd: path(&map, "cwd"),
        turn_id,
        model,
        agent_id: text(&map, "agent_id", MAX_NAME_CHARS).filter(|id| {
            !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        }),
        agent_transcript_path: path(&map, "agent_transcript_path"),
        event: event(&map, event_name),
    })
}

/// The typed event of `name` from the payload's fields.
fn event(map: &Map<String, Value>, name: String) -> HookEvent {
    let flag = |key: &str| map.get(key).and_then(Value::as_bool).unwrap_or(false);
    match name.as_str() {
        "SessionStart" => HookEvent::SessionStart {
            source: match text(map, "source", MAX_NAME_CHARS).as_deref() {
                Some("startup") | None => StartSource::Startup,
                Some("resume") => StartSource::Resume,
                Some("clear") => StartSource::Clear,
                Some("compact") => StartSource::Compact,
                Some(_) => StartSource::Other,
            },
        },
        "UserPromptSubmit" => HookEvent::UserPromptSubmit {
            prompt: multiline(map, "prompt").unwrap_or_default(),
        },
        "PreToolUse" => HookEvent::PreToolUse {
            tool_name: text(map, "tool_name", MAX_NAME_CHARS).unwrap_or_default(),
            tool_input: tool_json(map, "tool_input"),
            tool_use_id: text(map, "tool_use_id", MAX_NAME_CHARS),
        },
        "PostToolUse" => HookEvent::PostToolUse {
            tool_name: text(map, "tool_name", MAX_NAME_CHARS).unwrap_or_default(),
            tool_input: tool_json(map, "tool_input"),
            tool_use_id: text(map, "tool_use_id", MAX_NAME_CHARS),
            tool_response: tool_json(map, "tool_response"),
        },
        "Stop" => HookEvent::Stop {
            stop_hook_active: flag("stop_hook_active"),
            last_assistant_message: multiline(map, "last_assistant_message"),
        },
        "SubagentStop" => HookEvent::SubagentStop {
            stop_hook_active: flag("stop_hook_active"),
        },
        "SessionEnd" => HookEvent::SessionEnd {
            reason: text(map, "reason", MAX_NAME_CHARS),
        },
        _ => HookEvent::Other { name },
    }
}

/// A string field without control characters, clipped to `max` characters; `None` when
/// absent or not a string.
fn text(map: &Map<String, Value>, key: &str, max: usize) -> Option<String> {
    let raw = map.get(key)?.as_str()?;
    Some(raw.chars().filter(|c| !c.is_control()).take(max).collect())
}

/// A free-text field: line breaks and tabs kept, other control characters removed, clipped
/// to [`MAX_TEXT_CHARS`].
fn multiline(map: &Map<String, Value>, key: &str) -> Option<String> {
    let raw = map.get(key)?.as_str()?;
    Some(
        raw.chars()
            .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
            .take(MAX_TEXT_CHARS)
            .collect(),
    )
}

/// An absolute path field of at most [`MAX_PATH_CHARS`] characters with no control
/// characters; anything else reads as absent.
fn path(map: &Map<String, Value>, key: &str) -> Option<PathBuf> {
    let raw = map.get(key)?.as_str()?;
    let ok = !raw.is_empty()
        && raw.len() <= MAX_PATH_CHARS
        && raw.starts_with('/')
        && !raw.chars().any(char::is_control);
    ok.then(|| PathBuf::from(raw))
}

/// A tool's input or response, dropped (`Null`) when its JSON is over
/// [`MAX_TOOL_JSON_BYTES`].
fn tool_json(map: &Map<String, Value>, key: &str) -> Value {
    match map.get(key) {
        Some(value) if json_len_within(value, MAX_TOOL_JSON_BYTES) => value.clone(),
        _ => Value::Null,
    }
}

/// Whether `value` serialises to at most `cap` bytes (stops counting past the cap).
fn json_len_within(value: &Value, cap: usize) -> bool {
    struct Counter {
        len: usize,
        cap: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.len += buf.len();
            if self.len > self.cap {
                return Err(std::io::Error::other("over cap"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(&mut Counter { len: 0, cap }, value).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value, host: Option<HookHost>) -> Result<HookPayload, PayloadError> {
        parse_payload(v.to_string().as_bytes(), host)
    }

    #[test]
    fn w7_h30_a_subagents_event_belongs_to_the_subagents_own_session_and_file() {
        // Claude Code: the sub-agent's tool events name the main transcript; its own file
        // sits beside it, and SubagentStop names it.
        let claude = parse(
            json!({"session_id": "s1", "transcript_path": "/h/p/s1.jsonl",
                "hook_event_name": "PostToolUse", "agent_id": "a59a26be", "tool_name": "Bash"}),
            Some(HookHost::ClaudeCode),
        )
        .unwrap()
        .into_subagent_session();
        assert_eq!(claude.session_id, "s1.agent-a59a26be");
        let own = PathBuf::from("/h/p/s1/subagents/agent-a59a26be.jsonl");
        assert_eq!(claude.transcript_path.as_ref(), Some(&own));
        let stop = parse(
            json!({"session_id": "s1", "transcript_path": "/h/p/s1.jsonl",
                "hook_event_name": "SubagentStop", "agent_id": "a59a26be",
                "agent_transcript_path": "/h/p/s1/subagents/agent-a59a26be.jsonl"}),
            Some(HookHost::ClaudeCode),
        )
        .unwrap()
        .into_subagent_session();
        assert_eq!(stop.transcript_path.as_ref(), Some(&own));
        // Codex names the sub-agent's rollout in transcript_path.
        let codex = parse(
            json!({"session_id": "t1", "transcript_path": "/h/.codex/r-t2.jsonl",
                "hook_event_name": "PreToolUse", "agent_id": "t2", "turn_id": "u"}),
            None,
        )
        .unwrap()
        .into_subagent_session();
        assert_eq!(codex.session_id, "t1.agent-t2");
        assert_eq!(
            codex.transcript_path,
            Some(PathBuf::from("/h/.codex/r-t2.jsonl"))
        );
        // The main agent's events stay as they are; an agent id that could name another
        // path is no agent id.
        let main = parse(
            json!({"session_id": "s1", "transcript_path": "/h/p/s1.jsonl",
                "hook_event_name": "Stop", "agent_id": "../x"}),
            None,
        )
        .unwrap();
        assert_eq!(main.agent_id, None);
        assert_eq!(main.clone().into_subagent_session(), main);
    }

    #[test]
    fn h3_a_post_tool_use_of_each_host_is_typed() {
        let claude = parse(
            json!({"session_id": "s1", "transcript_path": "/h/t.jsonl", "cwd": "/p",
                "hook_event_name": "PostToolUse", "tool_name": "Bash",
                "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1",
                "tool_response": {"stdout": "a"}}),
            None,
        )
        .unwrap();
        assert_eq!(claude.host, HookHost::ClaudeCode);
        assert_eq!(claude.transcript_path, Some(PathBuf::from("/h/t.jsonl")));
        match &claude.event {
            HookEvent::PostToolUse {
                tool_name,
                tool_use_id,
                tool_response,
                ..
            } => {
                assert_eq!(tool_name, "Bash");
                assert_eq!(tool_use_id.as_deref(), Some("toolu_1"));
                assert_eq!(tool_response["stdout"], "a");
            }
            other => panic!("{other:?}"),
        }
        let codex = parse(
            json!({"session_id": "s2", "turn_id": "t", "model": "gpt", "hook_event_name": "Stop",
                "stop_hook_active": true, "last_assistant_message": "done"}),
            None,
        )
        .unwrap();
        assert_eq!(codex.host, HookHost::Codex);
        assert_eq!(
            codex.event,
            HookEvent::Stop {
                stop_hook_active: true,
                last_assistant_message: Some("done".into())
            }
        );
    }

    #[test]
    fn h3_the_flag_wins_over_the_payload_s_hints() {
        let p = parse(
            json!({"session_id": "s", "turn_id": "t", "hook_event_name": "Stop"}),
            Some(HookHost::ClaudeCode),
        )
        .unwrap();
        assert_eq!(p.host, HookHost::ClaudeCode);
    }

    #[test]
    fn h3_the_environment_names_the_host() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            HookHost::from_env(&env(&[("CLAUDECODE", "1")])),
            Some(HookHost::ClaudeCode)
        );
        assert_eq!(
            HookHost::from_env(&env(&[("CODEX_HOME", "/h/.codex")])),
            Some(HookHost::Codex)
        );
        assert_eq!(HookHost::from_env(&env(&[("CLAUDECODE", "0")])), None);
    }

    #[test]
    fn h3_hostile_fields_are_tolerated_and_cleaned() {
        let p = parse(
            json!({"session_id": "a\u{1b}[31mb\u{0}", "hook_event_name": "UserPromptSubmit",
                "prompt": format!("x\u{7}\ny{}", "z".repeat(MAX_TEXT_CHARS * 2)),
                "transcript_path": "relative/path", "cwd": 42}),
            None,
        )
        .unwrap();
        assert_eq!(p.session_id, "a[31mb");
        assert_eq!(p.transcript_path, None);
        assert_eq!(p.cwd, None);
        let HookEvent::UserPromptSubmit { prompt } = p.event else {
            panic!()
        };
        assert!(prompt.starts_with("x\ny"));
        assert_eq!(prompt.chars().count(), MAX_TEXT_CHARS);

        let p = parse(
            json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": ["x"],
                "tool_input": {"content": "y".repeat(MAX_TOOL_JSON_BYTES)}}),
            None,
        )
        .unwrap();
        assert_eq!(
            p.event,
            HookEvent::PreToolUse {
                tool_name: String::new(),
                tool_input: Value::Null,
                tool_use_id: None
            }
        );
        let p = parse(
            json!({"session_id": "s", "hook_event_name": "Stop", "stop_hook_active": "yes"}),
            None,
        )
        .unwrap();
        assert!(matches!(
            p.event,
            HookEvent::Stop {
                stop_hook_active: false,
                ..
            }
        ));
    }

    #[test]
    fn h3_unusable_input_is_an_error() {
        assert_eq!(
            parse_payload(b"not json", None).unwrap_err().to_string(),
            "hook input is not JSON: expected ident at line 1 column 2"
        );
        assert_eq!(
            parse_payload(b"[1]", None).unwrap_err(),
            PayloadError::NotObject
        );
        assert_eq!(
            parse(json!({"hook_event_name": "Stop"}), None).unwrap_err(),
            PayloadError::Missing("session_id")
        );
        assert_eq!(
            parse(json!({"session_id": " ", "hook_event_name": "Stop"}), None).unwrap_err(),
            PayloadError::Missing("session_id")
        );
        assert_eq!(
            parse(json!({"session_id": "s", "hook_event_name": 3}), None).unwrap_err(),
            PayloadError::Missing("hook_event_name")
        );
        let big = vec![b' '; MAX_PAYLOAD_BYTES + 1];
        assert_eq!(
            parse_payload(&big, None).unwrap_err(),
            PayloadError::TooLarge
        );
    }

    #[test]
    fn h3_unknown_events_and_sources_are_kept_by_name() {
        let p = parse(
            json!({"session_id": "s", "hook_event_name": "PreCompact"}),
            None,
        )
        .unwrap();
        assert_eq!(p.event.name(), "PreCompact");
        let p = parse(
            json!({"session_id": "s", "hook_event_name": "SessionStart", "source": "compact"}),
            None,
        )
        .unwrap();
        assert_eq!(
            p.event,
            HookEvent::SessionStart {
                source: StartSource::Compact
            }
        );
    }
}
