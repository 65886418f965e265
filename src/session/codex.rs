//! Codex CLI rollouts read as sessions (SPEC L6, L8): `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`
//! as Codex 0.171 writes it.
//!
//! Every line is an envelope `{timestamp, type, payload}`. A rollout is one linear thread;
//! the transcript is built from its `response_item`s, the items the model was sent and
//! produced:
//!
//! - `message` with role `user`: a prompt (`input_text`, `input_image`), unless it is
//!   context Codex adds (`<environment_context>`, `<user_instructions>`,
//!   `# AGENTS.md instructions…`, `<turn_aborted>`): skipped as `user-context`. A Stop
//!   hook's continuation (`<hook_prompt …>REASON</hook_prompt>`) is a hook message.
//! - `message` with role `developer`: a hook's additional context is a hook message (see
//!   [`super::hosts::hook_message`]; the advisor's own, opening with `<advisory`, is
//!   typed `advisor`); Codex's own instructions (text opening with an XML tag such as
//!   `<permissions instructions>`) are skipped as `developer-context`.
//! - the model's output items of one response — `reasoning` (its summary, else its text,
//!   as thinking), `message` with role `assistant`, `function_call`, `custom_tool_call`
//!   (`apply_patch`'s `input`), `local_shell_call` — make one assistant message; a
//!   `token_usage_record` or `event_msg` `token_count` closes it and gives it its usage
//!   (SP5), and so does any input item.
//! - `function_call_output`, `custom_tool_call_output`, `local_shell_call_output`: tool
//!   results, named after their call. A hook message written between a call and its output
//!   (Codex writes PostToolUse context before the output, and sends it to the model in that
//!   order) is placed after the outputs, so that a turn and its tool results stay together
//!   for the review.
//! - `compacted`: a compaction (R1) with its `message` as the summary.
//! - `session_meta` (the first one): the header — `id`, `cwd`, `timestamp`,
//!   `cli_version`. `turn_context`, `world_state`, `event_msg`, later `session_meta` lines
//!   and unknown types are skipped and counted.
//!
//! A rollout whose `session_meta` marks a sub-agent thread is a subagent's own session: read
//! only with [`ReadLimits::include_subagents`], else its items are counted under `subagent`.

use std::io::{self, BufRead, Seek};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;

use super::branch::{BranchEntry, SessionBranch, SessionFormat, SessionHeader};
use super::diagnostics::{Diagnostics, ReadLimits};
use super::hosts::{
    compaction_summary, each_line, hook_message, iso_millis, str_at, string_at, Resume,
};
use super::input::Lines;
use crate::domain::transcript::{
    AssistantBlock, AssistantMessage, Content, ContentBlock, MessageUsage, RawJson,
    ToolResultMessage, TranscriptMessage, UsageCount, UserMessage,
};

/// How user messages that are Codex's own context start.
const USER_CONTEXT: [&str; 5] = [
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
];

/// The state of one read.
#[derive(Debug, Default)]
pub(super) struct Rollout {
    header: SessionHeader,
    entries: Vec<BranchEntry>,
    /// The model's response being gathered, and when it started.
    open: Option<AssistantMessage>,
    /// The index in `entries` of the last assistant message.
    last_assistant: Option<usize>,
    /// Calls whose output has not come yet.
    awaiting: FxHashSet<String>,
    /// Hook messages written before the outputs of the calls they follow.
    deferred: Vec<TranscriptMessage>,
    /// Call id → tool name, for the results.
    tool_names: FxHashMap<String, String>,
    /// The first `session_meta` was read.
    has_meta: bool,
    /// The rollout is a sub-agent thread that is not to be read.
    skip_items: bool,
    /// What was skipped or broken so far.
    diagnostics: Diagnostics,
}

/// Reads a Codex rollout from its first line.
pub(super) fn read<R: BufRead + Seek>(
    lines: &mut Lines<R>,
    limits: &ReadLimits,
) -> io::Result<SessionBranch> {
    let (mut rollout, _) = Rollout::start(lines, limits)?;
    rollout.close();
    rollout.release_deferred();
    Ok(SessionBranch {
        header: rollout.header,
        entries: rollout.entries,
        diagnostics: rollout.diagnostics,
    })
}

impl Rollout {
    /// A rollout read from its first line, left open to take what is appended (SPEC H31).
    pub(super) fn start<R: BufRead + Seek>(
        lines: &mut Lines<R>,
        limits: &ReadLimits,
    ) -> io::Result<(Self, Resume)> {
        let mut rollout = Self::default();
        rollout.header.format = SessionFormat::Codex;
        rollout.header.version = 1;
        let resume = rollout.take_lines(lines, limits)?;
        Ok((rollout, resume))
    }

    /// Reads the lines from where `lines` stands on, as the rest of the same read.
    pub(super) fn take_lines<R: BufRead + Seek>(
        &mut self,
        lines: &mut Lines<R>,
        limits: &ReadLimits,
    ) -> io::Result<Resume> {
        let mut diagnostics = std::mem::take(&mut self.diagnostics);
        let resume = each_line(lines, limits, &mut diagnostics, |number, value, d| {
            self.line(number, &value, limits, d);
        });
        self.diagnostics = diagnostics;
        resume
    }

    /// The header read so far.
    pub(super) fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The entries so far, and those the end of the file would add now (the response being
    /// gathered, hook messages held back): together, what a read of the file as it is ends
    /// with.
    pub(super) fn entries(&self) -> (&[BranchEntry], Vec<BranchEntry>) {
        let mut pending = Vec::new();
        if let Some(open) = &self.open {
            pending.push(BranchEntry::Message(Arc::new(
                TranscriptMessage::Assistant(finished(open.clone())),
            )));
        }
        pending.extend(
            self.deferred
                .iter()
                .map(|m| BranchEntry::Message(Arc::new(m.clone()))),
        );
        (&self.entries, pending)
    }

    fn line(&mut self, number: usize, value: &Value, limits: &ReadLimits, d: &mut Diagnostics) {
        let (Some(kind), Some(payload)) = (
            str_at(value, "type"),
            value.get("payload").filter(|p| p.is_object()),
        ) else {
            d.malformed
                .push((number, "no `type` or no `payload` object".to_string()));
            return;
        };
        match kind {
            "session_meta" if !self.has_meta => self.meta(payload, limits),
            "response_item" if self.skip_items => d.skip("subagent"),
            "response_item" => {
                let stamp = str_at(value, "timestamp").and_then(iso_millis);
                if let Err(reason) = self.item(payload, stamp, d) {
                    d.malformed
                        .push((number, format!("unexpected entry shape: {reason}")));
                }
            }
            "compacted" => {
                self.close();
                self.release_deferred();
                self.entries.push(BranchEntry::Compaction {
                    summary: compaction_summary(&string_at(payload, "message").unwrap_or_default()),
                    first_kept: self.entries.len(),
                    tokens_before: None,
                });
            }
            "token_usage_record" => {
                self.close();
                self.attach_usage(payload.get("usage"));
                d.skip(kind);
            }
            "event_msg" => {
                if str_at(payload, "type") == Some("token_count") {
                    self.close();
                    self.attach_usage(payload.pointer("/info/last_token_usage"));
                }
                d.skip(kind);
            }
            other => d.skip(other),
        }
    }

    fn meta(&mut self, payload: &Value, limits: &ReadLimits) {
        self.has_meta = true;
        let header = &mut self.header;
        header.id = string_at(payload, "id").or_else(|| string_at(payload, "session_id"));
        header.cwd = string_at(payload, "cwd");
        header.timestamp = string_at(payload, "timestamp");
        header.cli_version = string_at(payload, "cli_version");
        header.parent_session = string_at(payload, "forked_from_id");
        let subagent = payload
            .get("source")
            .is_some_and(|s| s.get("subagent").is_some())
            || str_at(payload, "thread_source").is_some_and(|s| s.contains("agent"));
        self.skip_items = subagent && !limits.include_subagents;
    }

    fn item(
        &mut self,
        item: &Value,
        stamp: Option<u64>,
        d: &mut Diagnostics,
    ) -> Result<(), String> {
        match str_at(item, "type") {
            Some("message") => self.message(item, stamp, d),
            Some("reasoning") => {
                self.begin_response();
                self.output_block(reasoning(item), stamp);
                Ok(())
            }
            Some(kind @ ("function_call" | "custom_tool_call" | "local_shell_call")) => {
                self.begin_response();
                let call = self.call(kind, item)?;
                self.output_block(call, stamp);
                Ok(())
            }
            Some(
                "function_call_output" | "custom_tool_call_output" | "local_shell_call_output",
            ) => {
                self.close();
                self.result(item)
            }
            other => {
                d.skip(&format!("response_item:{}", other.unwrap_or("?")));
                Ok(())
            }
        }
    }

    fn message(
        &mut self,
        item: &Value,
        stamp: Option<u64>,
        d: &mut Diagnostics,
    ) -> Result<(), String> {
        let parts = match item.get("content") {
            Some(Value::Array(parts)) => parts,
            Some(Value::String(_)) | None | Some(Value::Null) => &Vec::new(),
            Some(_) => return Err("`content` is not a list".to_string()),
        };
        let role = str_at(item, "role").unwrap_or("?");
        if role == "assistant" {
            self.begin_response();
            for part in parts {
                let block = match string_at(part, "text") {
                    Some(text) => AssistantBlock::Text { text },
                    None => AssistantBlock::Unknown(part.clone()),
                };
                self.output_block(block, stamp);
            }
            return Ok(());
        }
        self.close();
        let text = joined_text(parts);
        match role {
            "user" => {
                // New input: the calls before it are answered or never will be.
                self.release_deferred();
                let trimmed = text.trim_start();
                if let Some(reason) = hook_prompt(trimmed) {
                    self.push_hook(hook_message(reason, Some("Stop")));
                } else if USER_CONTEXT.iter().any(|c| trimmed.starts_with(c)) {
                    d.skip("user-context");
                } else {
                    let blocks = parts.iter().map(user_block).collect();
                    self.push(TranscriptMessage::User(UserMessage {
                        content: Content::Blocks(blocks),
                    }));
                }
            }
            "developer" => {
                let trimmed = text.trim_start();
                if trimmed.starts_with('<') && !trimmed.starts_with("<advisory") {
                    d.skip("developer-context");
                } else if !trimmed.is_empty() {
                    self.push_hook(hook_message(text, None));
                }
            }
            other => d.skip(&format!("message:{other}")),
        }
        Ok(())
    }

    fn call(&mut self, kind: &str, item: &Value) -> Result<AssistantBlock, String> {
        let id = string_at(item, "call_id")
            .or_else(|| string_at(item, "id"))
            .ok_or("a call without `call_id`")?;
        let (name, arguments) = match kind {
            "function_call" => {
                let name = string_at(item, "name").ok_or("a call without `name`")?;
                let arguments = match item.get("arguments") {
                    Some(Value::String(text)) => serde_json::from_str::<Value>(text)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| Value::String(text.clone())),
                    Some(other) => other.clone(),
                    None => Value::Null,
                };
                (name, arguments)
            }
            "custom_tool_call" => {
                let name = string_at(item, "name").ok_or("a call without `name`")?;
                let input = item.get("input").cloned().unwrap_or(Value::Null);
                (name, serde_json::json!({ "input": input }))
            }
            _ => (
                "local_shell".to_string(),
                item.get("action").cloned().unwrap_or(Value::Null),
            ),
        };
        self.tool_names.insert(id.clone(), name.clone());
        self.awaiting.insert(id.clone());
        Ok(AssistantBlock::ToolCall {
            id,
            name,
            arguments: RawJson::from(arguments),
        })
    }

    fn result(&mut self, item: &Value) -> Result<(), String> {
        let id = string_at(item, "call_id").ok_or("an output without `call_id`")?;
        let (content, is_error) = output(item.get("output").unwrap_or(&Value::Null));
        self.awaiting.remove(&id);
        self.push(TranscriptMessage::ToolResult(ToolResultMessage {
            tool_name: self.tool_names.get(&id).cloned().unwrap_or_default(),
            tool_call_id: id,
            content,
            is_error,
            details: None,
        }));
        if self.awaiting.is_empty() {
            self.release_deferred();
        }
        Ok(())
    }

    /// Before an output item: when it opens a new response, whatever input that response
    /// answers has been written, so held hook messages go in now, and calls never answered
    /// are no longer waited for.
    fn begin_response(&mut self) {
        if self.open.is_none() {
            self.release_deferred();
        }
    }

    /// Adds one of the model's output items to the response being gathered.
    fn output_block(&mut self, block: AssistantBlock, stamp: Option<u64>) {
        let open = self.open.get_or_insert_with(|| {
            let mut message = AssistantMessage::new(Vec::new(), None);
            message.timestamp = stamp;
            message
        });
        open.content.push(block);
    }

    /// Ends the response being gathered: it becomes an assistant message.
    fn close(&mut self) {
        if let Some(message) = self.open.take() {
            self.last_assistant = Some(self.entries.len());
            self.push(TranscriptMessage::Assistant(finished(message)));
        }
    }

    fn attach_usage(&mut self, usage: Option<&Value>) {
        let (Some(index), Some(usage)) = (self.last_assistant, usage.and_then(codex_usage)) else {
            return;
        };
        if let Some(BranchEntry::Message(message)) = self.entries.get_mut(index) {
            if let TranscriptMessage::Assistant(a) = Arc::make_mut(message) {
                if a.usage.is_none() {
                    a.usage = Some(usage);
                }
            }
        }
    }

    fn push(&mut self, message: TranscriptMessage) {
        self.entries.push(BranchEntry::Message(Arc::new(message)));
    }

    /// A hook message: now, or after the outputs of the calls still running.
    fn push_hook(&mut self, message: TranscriptMessage) {
        if self.awaiting.is_empty() {
            self.push(message);
        } else {
            self.deferred.push(message);
        }
    }

    /// Writes the held hook messages; calls still unanswered are no longer waited for.
    fn release_deferred(&mut self) {
        self.awaiting.clear();
        for message in std::mem::take(&mut self.deferred) {
            self.push(message);
        }
    }
}

/// A gathered response as the assistant message it ends as: its stop reason set.
fn finished(mut message: AssistantMessage) -> AssistantMessage {
    let stop = if message.has_tool_calls() {
        "toolUse"
    } else {
        "stop"
    };
    message.stop_reason = Some(stop.to_string());
    message
}

/// `<hook_prompt …>REASON</hook_prompt>`: the reason.
fn hook_prompt(text: &str) -> Option<String> {
    let rest = text.strip_prefix("<hook_prompt")?;
    let body = &rest[rest.find('>')? + 1..];
    let body = body.trim_end();
    Some(
        body.strip_suffix("</hook_prompt>")
            .unwrap_or(body)
            .to_string(),
    )
}

/// The text parts of a message joined by newlines.
fn joined_text(parts: &[Value]) -> String {
    parts
        .iter()
        .filter_map(|p| str_at(p, "text"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn user_block(part: &Value) -> ContentBlock {
    match (str_at(part, "type"), string_at(part, "text")) {
        (_, Some(text)) => ContentBlock::Text { text },
        (Some("input_image"), None) => ContentBlock::Image {
            data: None,
            mime_type: None,
            path: None,
        },
        _ => ContentBlock::Unknown(part.clone()),
    }
}

/// A `reasoning` item as thinking: its summary, else its text; withheld reasoning (only
/// `encrypted_content`) as redacted.
fn reasoning(item: &Value) -> AssistantBlock {
    let texts = |key: &str| -> String {
        match item.get(key) {
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| str_at(p, "text"))
                .collect::<Vec<_>>()
                .join("\n\n"),
            _ => String::new(),
        }
    };
    let summary = texts("summary");
    let thinking = if summary.trim().is_empty() {
        texts("content")
    } else {
        summary
    };
    if thinking.trim().is_empty() {
        AssistantBlock::RedactedThinking
    } else {
        AssistantBlock::Thinking { thinking }
    }
}

/// A call's output as content, and whether it failed: a string (for `apply_patch`, a JSON
/// text `{output, metadata: {exit_code}}`), content items, or `{content, success}`.
fn output(value: &Value) -> (Content, bool) {
    match value {
        Value::String(text) => {
            let wrapped = serde_json::from_str::<Value>(text).ok();
            match wrapped
                .as_ref()
                .and_then(|w| w.get("output"))
                .and_then(Value::as_str)
            {
                Some(inner) => {
                    let exit = wrapped
                        .as_ref()
                        .and_then(|w| w.pointer("/metadata/exit_code"))
                        .and_then(Value::as_i64);
                    (
                        Content::Text(inner.to_string()),
                        exit.is_some_and(|c| c != 0),
                    )
                }
                None => (Content::Text(text.clone()), false),
            }
        }
        Value::Array(parts) => (
            Content::Blocks(parts.iter().map(user_block).collect()),
            false,
        ),
        Value::Object(_) => {
            let (content, _) = output(value.get("content").unwrap_or(&Value::Null));
            let failed = value.get("success").and_then(Value::as_bool) == Some(false);
            (content, failed)
        }
        _ => (Content::default(), false),
    }
}

/// OpenAI's usage as the message's usage (SP5): `input_tokens` counts the cached ones too,
/// so they are taken out of `input`.
fn codex_usage(value: &Value) -> Option<MessageUsage> {
    let count = |key: &str| value.get(key).map_or(UsageCount::Absent, UsageCount::of);
    let cached = count("cached_input_tokens");
    let input = match (count("input_tokens"), cached) {
        (UsageCount::Count(all), UsageCount::Count(cached)) => {
            UsageCount::Count(all.saturating_sub(cached))
        }
        (input, _) => input,
    };
    MessageUsage::from_fields(
        [
            input,
            count("output_tokens"),
            cached,
            count("cache_write_input_tokens"),
        ],
        None,
    )
}

#[cfg(test)]
#[path = "codex_tests.rs"]
mod tests;
