//! Claude Code transcripts read as sessions (SPEC L6, L7): `~/.claude/projects/<project>/<session>.jsonl`
//! as Claude Code 2.1 writes it.
//!
//! Every line is a JSON object with a `type`. The lines that link into the conversation carry
//! `uuid` and `parentUuid`; the current branch is the way up from the last such line, as for
//! a pi tree (a rewound prompt leaves the old branch in the file). What each line becomes:
//!
//! - `user`: a prompt (`message.content` a string or text/image blocks) is a user message;
//!   `tool_result` blocks become tool results (the tool's name taken from the call);
//!   a Stop hook's continuation (`isMeta` with `hookText`, or text opening with
//!   `Stop hook feedback:`) is a hook message (see [`super::hosts::hook_message`]); other
//!   `isMeta` lines are skipped; `isCompactSummary` is the summary of a compaction.
//! - `assistant`: one line per content block; consecutive lines of one API message (the same
//!   `message.id`) are merged into one assistant message, one turn. Blocks `text`,
//!   `thinking`, `redacted_thinking`, `tool_use`; `message.usage` becomes the message's usage
//!   (SP5), `stop_reason` is mapped onto pi's (`end_turn` → `stop`, `tool_use` →
//!   `toolUse`, `max_tokens` → `length`), an API error line (`isApiErrorMessage`) is `error`.
//! - `attachment` of type `hook_additional_context`: a hook message; `queued_command` (a
//!   prompt typed while the agent worked): a user message; every other attachment skipped.
//! - `system` with subtype `compact_boundary`: a compaction (R1); the branch goes on up
//!   through its `logicalParentUuid`, so the messages before it are read too. Other
//!   `system` lines skipped.
//! - `summary` and `custom-title` lines name the session (the header's title); every other
//!   type (`queue-operation`, `api-request*`, `tools-used`, `cost-state`, `last-prompt`, …)
//!   is skipped and counted.
//!
//! Lines with `isSidechain: true` are a subagent's: never part of the main branch; counted
//! under `sidechain`. A file that holds only such lines (`agent-*.jsonl`) is read as the
//! subagent's own session when [`ReadLimits::include_subagents`] is set.

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

/// The lead Claude Code writes before a Stop hook's reason.
const STOP_FEEDBACK: &str = "Stop hook feedback:";

/// What a conversation line's parent is.
#[derive(Debug)]
enum Parent {
    /// `parentUuid: null`: the start of a chain.
    Root,
    /// The line with this `uuid`.
    Id(String),
    /// No usable `parentUuid`: the line before it in the file.
    Previous,
}

/// What one conversation line holds.
#[derive(Debug)]
enum Payload {
    /// One block (or several) of an API message, `message.id` when recorded.
    Assistant(Option<String>, AssistantMessage),
    /// Messages in order (a prompt, tool results, a hook message).
    Messages(Vec<TranscriptMessage>),
    /// A compaction boundary and the context size before it.
    Boundary(Option<u64>),
    /// The summary that opens the context after a compaction.
    CompactSummary(String),
    /// Nothing for the transcript; counted under this kind when on the branch.
    Skip(String),
}

/// One line that links into the conversation.
#[derive(Debug)]
struct Node {
    uuid: Option<String>,
    parent: Parent,
    sidechain: bool,
    line: usize,
    payload: Payload,
}

/// The state of one read.
#[derive(Debug, Default)]
struct Transcript {
    header: SessionHeader,
    nodes: Vec<Node>,
    /// Tool call id → tool name, for the results.
    tool_names: FxHashMap<String, String>,
    /// A `custom-title` was seen: it wins over `summary` lines.
    custom_title: bool,
}

/// Reads a Claude Code transcript from its first line.
pub(super) fn read<R: BufRead + Seek>(
    lines: &mut Lines<R>,
    limits: &ReadLimits,
) -> io::Result<SessionBranch> {
    Ok(ClaudeTail::start(lines, limits)?.0.into_branch())
}

/// A Claude Code transcript read so far, left open to take what is appended (SPEC H31):
/// the branch's entries as built, and what tells whether a new line extends that branch.
#[derive(Debug)]
pub(super) struct ClaudeTail {
    transcript: Transcript,
    links: Links,
    entries: Entries,
    diagnostics: Diagnostics,
}

impl ClaudeTail {
    /// Reads the transcript from its first line.
    pub(super) fn start<R: BufRead + Seek>(
        lines: &mut Lines<R>,
        limits: &ReadLimits,
    ) -> io::Result<(Self, Resume)> {
        let mut diagnostics = Diagnostics::default();
        let mut transcript = Transcript::default();
        transcript.header.format = SessionFormat::ClaudeCode;
        transcript.header.version = 1;
        let resume = each_line(lines, limits, &mut diagnostics, |number, value, d| {
            transcript.line(number, &value, d);
        })?;
        Ok((transcript.into_tail(limits, diagnostics), resume))
    }

    /// Reads the lines from where `lines` stands on. Each conversation line whose parent is
    /// the branch's last line extends the branch; any other (a rewind, a new chain, a line
    /// naming a parent that came later) leaves the tail unable to go on
    /// ([`ClaudeTail::can_go_on`]): the file must be read whole.
    pub(super) fn take_lines<R: BufRead + Seek>(
        &mut self,
        lines: &mut Lines<R>,
        limits: &ReadLimits,
    ) -> io::Result<Resume> {
        let Self {
            transcript,
            links,
            entries,
            diagnostics,
        } = self;
        each_line(lines, limits, diagnostics, |number, value, d| {
            transcript.line(number, &value, d);
            if let Some(node) = transcript.nodes.pop() {
                links.extend(node, entries, d);
            }
        })
    }

    /// Whether the lines taken so far all extended the branch.
    pub(super) fn can_go_on(&self) -> bool {
        !self.links.stuck
    }

    /// The branch's entries so far, and the assistant message still being gathered (which
    /// the end of the file closes).
    pub(super) fn entries(&self) -> (&[BranchEntry], Vec<BranchEntry>) {
        let pending = self.entries.open.as_ref().map(|(_, message)| {
            BranchEntry::Message(Arc::new(TranscriptMessage::Assistant(message.clone())))
        });
        (&self.entries.entries, pending.into_iter().collect())
    }

    /// The header read so far.
    pub(super) fn header(&self) -> &SessionHeader {
        &self.transcript.header
    }

    /// The branch as read.
    fn into_branch(self) -> SessionBranch {
        SessionBranch {
            header: self.transcript.header,
            entries: self.entries.finish(),
            diagnostics: self.diagnostics,
        }
    }
}

/// How new lines link to the branch read so far.
#[derive(Debug, Default)]
struct Links {
    /// The branch is made of sidechain lines (a subagent's own file).
    side: bool,
    /// Conversation lines so far, of either kind.
    seen: usize,
    /// uuid → the first line of the branch's kind carrying it.
    index: FxHashMap<String, usize>,
    /// The branch's last line.
    tip: Option<usize>,
    /// Parent ids no line of the branch's kind has had so far.
    dangling: FxHashSet<String>,
    /// A line did not extend the branch, or the branch loops.
    stuck: bool,
}

impl Links {
    /// Takes a new line: its payload goes onto the branch when its parent is the branch's
    /// last line, as a read of the whole file would place it.
    fn extend(&mut self, node: Node, entries: &mut Entries, d: &mut Diagnostics) {
        let at = self.seen;
        self.seen += 1;
        if node.sidechain != self.side {
            // A main line in a file of sidechain lines makes the main lines the branch.
            self.stuck |= self.side;
            d.skip("sidechain");
            return;
        }
        if let Some(uuid) = node.uuid {
            if self.dangling.contains(&uuid) {
                // A line named before it came: a whole read links the earlier one to it.
                self.stuck = true;
                return;
            }
            self.index.entry(uuid).or_insert(at);
        }
        let parent = match &node.parent {
            Parent::Root => None,
            Parent::Id(id) => match self.index.get(id) {
                Some(&found) => Some(found),
                None => {
                    self.dangling.insert(id.clone());
                    self.tip
                }
            },
            Parent::Previous => self.tip,
        };
        if parent != self.tip {
            self.stuck = true;
            return;
        }
        self.tip = Some(at);
        entries.push(node.payload, d);
    }
}

impl Transcript {
    fn line(&mut self, number: usize, value: &Value, d: &mut Diagnostics) {
        let Some(kind) = str_at(value, "type") else {
            let reason = if value.is_object() {
                "no `type`"
            } else {
                "not a JSON object"
            };
            d.malformed.push((number, reason.to_string()));
            return;
        };
        self.note_header(value);
        let uuid = string_at(value, "uuid");
        if uuid.is_none() && !matches!(kind, "user" | "assistant") {
            self.note_title(kind, value);
            d.skip(kind);
            return;
        }
        let payload = match self.payload(kind, value) {
            Ok(payload) => payload,
            Err(reason) => {
                d.malformed
                    .push((number, format!("unexpected entry shape: {reason}")));
                return;
            }
        };
        let parent = match value.get("parentUuid") {
            Some(Value::String(id)) => Parent::Id(id.clone()),
            Some(Value::Null) => match str_at(value, "logicalParentUuid") {
                Some(id) if matches!(payload, Payload::Boundary(_)) => Parent::Id(id.to_string()),
                _ => Parent::Root,
            },
            _ => Parent::Previous,
        };
        self.nodes.push(Node {
            uuid,
            parent,
            sidechain: value.get("isSidechain").and_then(Value::as_bool) == Some(true),
            line: number,
            payload,
        });
    }

    /// The session id, working directory, start time and Claude Code version, from the
    /// first lines that carry them.
    fn note_header(&mut self, value: &Value) {
        let header = &mut self.header;
        if header.id.is_none() {
            header.id = string_at(value, "sessionId");
        }
        if header.cwd.is_none() {
            header.cwd = string_at(value, "cwd").or_else(|| {
                value
                    .pointer("/attachment/snapshot/workingDirectory")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
        }
        if header.timestamp.is_none() {
            header.timestamp = string_at(value, "timestamp");
        }
        if header.cli_version.is_none() {
            header.cli_version = string_at(value, "version");
        }
    }

    fn note_title(&mut self, kind: &str, value: &Value) {
        match kind {
            "custom-title" => {
                if let Some(title) = string_at(value, "customTitle") {
                    self.header.title = Some(title);
                    self.custom_title = true;
                }
            }
            "summary" if !self.custom_title => {
                if let Some(title) = string_at(value, "summary") {
                    self.header.title = Some(title);
                }
            }
            _ => {}
        }
    }

    fn payload(&mut self, kind: &str, value: &Value) -> Result<Payload, String> {
        match kind {
            "user" => self.user(value),
            "assistant" => self.assistant(value),
            "attachment" => Ok(attachment(value)),
            "system" => Ok(match str_at(value, "subtype") {
                Some("compact_boundary") => Payload::Boundary(
                    value
                        .pointer("/compactMetadata/preTokens")
                        .and_then(Value::as_u64),
                ),
                subtype => Payload::Skip(format!("system:{}", subtype.unwrap_or("?"))),
            }),
            other => Ok(Payload::Skip(other.to_string())),
        }
    }

    fn user(&self, value: &Value) -> Result<Payload, String> {
        let content = message_content(value)?;
        let flag = |key: &str| value.get(key).and_then(Value::as_bool) == Some(true);
        if flag("isCompactSummary") {
            return Ok(Payload::CompactSummary(compaction_summary(&plain_text(
                content,
            ))));
        }
        if flag("isMeta") {
            let text = plain_text(content);
            return Ok(match text.strip_prefix(STOP_FEEDBACK) {
                Some(rest) => Payload::Messages(vec![hook_message(
                    rest.trim_start().to_string(),
                    Some("Stop"),
                )]),
                None if flag("hookText") => {
                    Payload::Messages(vec![hook_message(text, Some("Stop"))])
                }
                None => Payload::Skip("user:meta".to_string()),
            });
        }
        let items = match content {
            Value::String(text) => return Ok(Payload::Messages(vec![user_text(text.clone())])),
            Value::Array(items) => items,
            _ => return Err("`message.content` is neither a string nor a list".to_string()),
        };
        let mut messages = Vec::new();
        let mut blocks = Vec::new();
        for item in items {
            if str_at(item, "type") == Some("tool_result") {
                messages.push(self.tool_result(item));
            } else {
                blocks.push(content_block(item));
            }
        }
        if !blocks.is_empty() {
            messages.push(TranscriptMessage::User(UserMessage {
                content: Content::Blocks(blocks),
            }));
        }
        Ok(Payload::Messages(messages))
    }

    fn tool_result(&self, item: &Value) -> TranscriptMessage {
        let id = string_at(item, "tool_use_id").unwrap_or_default();
        let content = match item.get("content") {
            Some(Value::String(text)) => Content::Text(text.clone()),
            Some(Value::Array(blocks)) => {
                Content::Blocks(blocks.iter().map(content_block).collect())
            }
            _ => Content::default(),
        };
        TranscriptMessage::ToolResult(ToolResultMessage {
            tool_name: self.tool_names.get(&id).cloned().unwrap_or_default(),
            tool_call_id: id,
            content,
            is_error: item.get("is_error").and_then(Value::as_bool) == Some(true),
            details: None,
        })
    }

    fn assistant(&mut self, value: &Value) -> Result<Payload, String> {
        let content = message_content(value)?;
        let blocks = match content {
            Value::String(text) => vec![AssistantBlock::Text { text: text.clone() }],
            Value::Array(items) => items.iter().map(|b| self.assistant_block(b)).collect(),
            _ => return Err("`message.content` is neither a string nor a list".to_string()),
        };
        let message = value.get("message").unwrap_or(&Value::Null);
        let stop_reason = if value.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
            Some("error".to_string())
        } else {
            str_at(message, "stop_reason").map(stop_reason)
        };
        let mut assistant = AssistantMessage::new(blocks, stop_reason);
        assistant.usage = message.get("usage").and_then(usage);
        assistant.timestamp = str_at(value, "timestamp").and_then(iso_millis);
        Ok(Payload::Assistant(string_at(message, "id"), assistant))
    }

    fn assistant_block(&mut self, block: &Value) -> AssistantBlock {
        let text = |key: &str| string_at(block, key);
        match str_at(block, "type") {
            Some("text") => text("text").map(|text| AssistantBlock::Text { text }),
            Some("thinking") => {
                text("thinking").map(|thinking| AssistantBlock::Thinking { thinking })
            }
            Some("redacted_thinking") => Some(AssistantBlock::RedactedThinking),
            Some("tool_use") => match (text("id"), text("name")) {
                (Some(id), Some(name)) => {
                    self.tool_names.insert(id.clone(), name.clone());
                    let arguments = block
                        .get("input")
                        .map_or_else(RawJson::null, |a| RawJson::from(a.clone()));
                    Some(AssistantBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    })
                }
                _ => None,
            },
            _ => None,
        }
        .unwrap_or_else(|| AssistantBlock::Unknown(block.clone()))
    }

    /// The current branch: the way up from the last line of the session's own kind (main
    /// lines, or a subagent file's sidechain lines), then its payloads in order; kept open
    /// to take what is appended.
    fn into_tail(mut self, limits: &ReadLimits, mut d: Diagnostics) -> ClaudeTail {
        let mut nodes = std::mem::take(&mut self.nodes);
        let main = nodes.iter().any(|n| !n.sidechain);
        let side = !main && limits.include_subagents;
        let other = nodes.iter().filter(|n| n.sidechain != side).count();
        if other > 0 {
            *d.skipped.entry("sidechain".to_string()).or_insert(0) += other;
        }
        let mut links = link_index(&mut nodes, side);
        let path = branch_path(&nodes, &mut links, &mut d);
        d.off_branch += nodes.iter().filter(|n| n.sidechain == side).count() - path.len();
        let mut payloads: Vec<Option<Payload>> =
            nodes.into_iter().map(|n| Some(n.payload)).collect();
        let mut entries = Entries::default();
        for index in path {
            if let Some(payload) = payloads.get_mut(index).and_then(Option::take) {
                entries.push(payload, &mut d);
            }
        }
        links.seen = payloads.len();
        ClaudeTail {
            transcript: self,
            links,
            entries,
            diagnostics: d,
        }
    }
}

/// The links of the lines of the wanted kind: each uuid's first line (the uuids moved out
/// of the nodes), the last line, the parent ids none of them has.
fn link_index(nodes: &mut [Node], side: bool) -> Links {
    let mut links = Links {
        side,
        ..Links::default()
    };
    for (i, node) in nodes.iter_mut().enumerate() {
        if node.sidechain != side {
            continue;
        }
        links.tip = Some(i);
        if let Some(uuid) = node.uuid.take() {
            links.index.entry(uuid).or_insert(i);
        }
    }
    for node in nodes.iter().filter(|n| n.sidechain == side) {
        if let Parent::Id(id) = &node.parent {
            if !links.index.contains_key(id) {
                links.dangling.insert(id.clone());
            }
        }
    }
    links
}

/// The indices of the branch's lines, root first: the way up from the last line of the
/// wanted kind. A parent that is not in the file is taken as the line before (of that
/// kind); a loop is reported at the line where it closes and ends the way up (and leaves
/// `links` unable to go on).
fn branch_path(nodes: &[Node], links: &mut Links, d: &mut Diagnostics) -> Vec<usize> {
    let mut previous = vec![None; nodes.len()];
    let mut last = None;
    for (i, node) in nodes.iter().enumerate() {
        if node.sidechain == links.side {
            previous[i] = last;
            last = Some(i);
        }
    }
    let mut on = vec![false; nodes.len()];
    let mut path = Vec::new();
    let mut at = last;
    while let Some(i) = at {
        if on[i] {
            d.malformed.push((
                nodes[i].line,
                "its parents loop back to it; the branch stops here".into(),
            ));
            links.stuck = true;
            break;
        }
        on[i] = true;
        path.push(i);
        at = match &nodes[i].parent {
            Parent::Root => None,
            Parent::Id(id) => links.index.get(id.as_str()).copied().or(previous[i]),
            Parent::Previous => previous[i],
        };
    }
    path.reverse();
    path
}

/// The branch's entries as they are built: split assistant lines merged, compactions
/// placed.
#[derive(Debug, Default)]
struct Entries {
    entries: Vec<BranchEntry>,
    /// The assistant message being gathered and its API message id.
    open: Option<(Option<String>, AssistantMessage)>,
    /// The index of a compaction still waiting for its summary.
    waiting: Option<usize>,
}

impl Entries {
    fn push(&mut self, payload: Payload, d: &mut Diagnostics) {
        let payload = match payload {
            Payload::Assistant(id, message) => {
                if let Some((open_id, open)) = &mut self.open {
                    if id.is_some() && *open_id == id {
                        merge(open, message);
                        return;
                    }
                }
                self.close();
                self.open = Some((id, message));
                return;
            }
            Payload::Skip(kind) => {
                d.skip(&kind);
                return;
            }
            other => other,
        };
        self.close();
        match payload {
            Payload::Messages(messages) => {
                self.waiting = None;
                self.entries.extend(
                    messages
                        .into_iter()
                        .map(|m| BranchEntry::Message(Arc::new(m))),
                );
            }
            Payload::Boundary(tokens_before) => {
                self.waiting = Some(self.entries.len());
                self.entries.push(BranchEntry::Compaction {
                    summary: String::new(),
                    first_kept: self.entries.len(),
                    tokens_before,
                });
            }
            Payload::CompactSummary(text) => {
                if let Some(BranchEntry::Compaction { summary, .. }) =
                    self.waiting.take().and_then(|i| self.entries.get_mut(i))
                {
                    *summary = text;
                } else {
                    self.entries.push(BranchEntry::Compaction {
                        summary: text,
                        first_kept: self.entries.len(),
                        tokens_before: None,
                    });
                }
            }
            Payload::Assistant(..) | Payload::Skip(_) => {}
        }
    }

    fn close(&mut self) {
        if let Some((_, message)) = self.open.take() {
            self.waiting = None;
            self.entries.push(BranchEntry::Message(Arc::new(
                TranscriptMessage::Assistant(message),
            )));
        }
    }

    fn finish(mut self) -> Vec<BranchEntry> {
        self.close();
        self.entries
    }
}

/// Adds the next line of the same API message: its blocks after the others, its stop
/// reason and usage (the later line's, which Claude Code writes last) when it has them.
fn merge(open: &mut AssistantMessage, next: AssistantMessage) {
    open.content.extend(next.content);
    if next.stop_reason.is_some() {
        open.stop_reason = next.stop_reason;
    }
    if next.usage.is_some() {
        open.usage = next.usage;
    }
}

/// `message.content` of a user or assistant line.
fn message_content(value: &Value) -> Result<&Value, String> {
    let message = value
        .get("message")
        .filter(|m| m.is_object())
        .ok_or("`message` is not an object")?;
    Ok(message.get("content").unwrap_or(&Value::Null))
}

fn attachment(value: &Value) -> Payload {
    let attachment = value.get("attachment").unwrap_or(&Value::Null);
    match str_at(attachment, "type") {
        Some("hook_additional_context") => {
            let text = match attachment.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            if text.trim().is_empty() {
                return Payload::Skip("attachment:hook_additional_context".into());
            }
            Payload::Messages(vec![hook_message(text, str_at(attachment, "hookEvent"))])
        }
        Some("queued_command") => match string_at(attachment, "prompt") {
            Some(prompt) => Payload::Messages(vec![user_text(prompt)]),
            None => Payload::Skip("attachment:queued_command".into()),
        },
        kind => Payload::Skip(format!("attachment:{}", kind.unwrap_or("?"))),
    }
}

fn user_text(text: String) -> TranscriptMessage {
    TranscriptMessage::User(UserMessage {
        content: Content::Text(text),
    })
}

/// A user or tool-result content block: text, an image (its data never kept), or opaque.
fn content_block(item: &Value) -> ContentBlock {
    match str_at(item, "type") {
        Some("text") => match string_at(item, "text") {
            Some(text) => ContentBlock::Text { text },
            None => ContentBlock::Unknown(item.clone()),
        },
        Some("image") => ContentBlock::Image {
            data: None,
            mime_type: item
                .pointer("/source/media_type")
                .and_then(Value::as_str)
                .map(str::to_string),
            path: None,
        },
        _ => ContentBlock::Unknown(item.clone()),
    }
}

/// The text of a content value: the string, or its text blocks joined by newlines.
fn plain_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter(|i| str_at(i, "type") == Some("text"))
            .filter_map(|i| str_at(i, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Claude's stop reasons in pi's words; an unknown one kept as it is.
fn stop_reason(reason: &str) -> String {
    match reason {
        "end_turn" | "stop_sequence" | "pause_turn" => "stop",
        "tool_use" => "toolUse",
        "max_tokens" | "model_context_window_exceeded" => "length",
        "refusal" => "error",
        other => other,
    }
    .to_string()
}

/// Anthropic's usage object as the message's usage (SP5): `input_tokens` (already without
/// the cache), `output_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`.
fn usage(value: &Value) -> Option<MessageUsage> {
    let count = |key: &str| value.get(key).map_or(UsageCount::Absent, UsageCount::of);
    MessageUsage::from_fields(
        [
            count("input_tokens"),
            count("output_tokens"),
            count("cache_read_input_tokens"),
            count("cache_creation_input_tokens"),
        ],
        None,
    )
}

#[cfg(test)]
#[path = "claude_tests.rs"]
mod tests;
