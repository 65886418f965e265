//! The expanded view (SPEC §3 Expanded, compat with oh-my-pi 18.3's advisor): each message
//! of a review's batch renders on its own into one part, and the advisor sees tool results,
//! diffs, the ask input and intents, excerpted head and tail ([`super::excerpt`]).
//!
//! A batch shares its tool-result index, the set of results already shown and the last role
//! label; the primary's standing context is remembered across batches in
//! [`ExpandedMemory`], which the caller commits only when the review went through.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Map, Value};

use super::compact::{
    output_lines as line_count, push_execution, push_intent_line, push_status, Label, ARG_KEYS,
};
use super::excerpt::{
    excerpt, push_block, ASK_STRING_MAX_BYTES, ASK_STRING_MAX_LINES, BLOCK_MAX_BYTES,
    DIFF_MAX_LINES, RESULT_MAX_LINES,
};
use super::{push_one_line, ONE_LINE_MAX};
use crate::domain::transcript::{
    AssistantBlock, AssistantMessage, Content, ContentBlock, CustomMessage, ExecutionMessage,
    RawJson, ToolResultMessage, TranscriptMessage,
};

/// The heading that starts every update the advisor is sent (X3): the first part of a
/// batch, and every queued delta of the other views (`feed.rs`).
pub const UPDATE_HEADING: &str = "### Session update\n\n";
/// Appended to the last part of a batch whose last turn will continue (WIP).
pub const WIP_FOOTER: &str = "\n\n---\n\n[in progress — more steps follow]";
/// Replaces standing context the advisor was already sent, unchanged.
pub const UNCHANGED_CONTEXT: &str = "(unchanged — still in effect)";

/// oh-my-pi 18's intent argument, then the older one.
const INTENT_KEYS: [&str; 2] = ["i", "_i"];
/// Custom message kinds that carry the primary's standing context, shown verbatim.
const PRIMARY_CONTEXT_KINDS: [&str; 2] = ["plan-mode-context", "plan-mode-reference"];
/// A hidden custom message kind that is shown all the same.
const SHOWN_HIDDEN_KIND: &str = "image-attachment-description";

/// What the expanded view remembers across batches: the standing context last sent per
/// kind. Cleared on every reset (R1); a failed review must not commit its copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpandedMemory {
    sent: FxHashMap<String, String>,
}

impl ExpandedMemory {
    /// Forgets everything (an advisor reset).
    pub fn clear(&mut self) {
        self.sent.clear();
    }
}

/// State shared by the parts of one batch.
struct Batch<'a> {
    /// Call id → the last result answering it in the batch.
    results: FxHashMap<&'a str, &'a ToolResultMessage>,
    /// Calls whose result was shown under them.
    shown: FxHashSet<&'a str>,
    /// The last role label written.
    label: Option<Label>,
}

/// Renders one batch (the messages of its turns, oldest first) into its parts: the first
/// starts with [`UPDATE_HEADING`], the last of a `wip` batch ends with [`WIP_FOOTER`]. Empty when
/// nothing shows. `memory` is updated with the standing context sent.
pub fn render_batch(
    messages: &[Arc<TranscriptMessage>],
    wip: bool,
    memory: &mut ExpandedMemory,
) -> Vec<String> {
    let mut parts = render_parts(messages, memory);
    if let Some(first) = parts.first_mut() {
        first.insert_str(0, UPDATE_HEADING);
    }
    if wip {
        if let Some(last) = parts.last_mut() {
            last.push_str(WIP_FOOTER);
        }
    }
    parts
}

/// The parts of `messages` without heading or footer.
pub(super) fn render_parts(
    messages: &[Arc<TranscriptMessage>],
    memory: &mut ExpandedMemory,
) -> Vec<String> {
    let mut results = FxHashMap::default();
    for message in messages {
        if let TranscriptMessage::ToolResult(r) = message.as_ref() {
            results.insert(r.tool_call_id.as_str(), r);
        }
    }
    let mut batch = Batch {
        results,
        shown: FxHashSet::default(),
        label: None,
    };
    let mut parts = Vec::new();
    for message in messages {
        let mut part = String::new();
        batch.render(&mut part, message, memory);
        let trimmed = part.trim();
        if trimmed.is_empty() {
            continue;
        }
        let mut text = trimmed.to_string();
        text.push('\n');
        parts.push(text);
    }
    parts
}

impl<'a> Batch<'a> {
    /// Writes one message's lines, each followed by `\n`.
    fn render(
        &mut self,
        out: &mut String,
        message: &'a TranscriptMessage,
        memory: &mut ExpandedMemory,
    ) {
        match message {
            TranscriptMessage::User(u) => self.user(out, Label::User, &u.content),
            TranscriptMessage::Developer(u) => self.user(out, Label::Developer, &u.content),
            TranscriptMessage::Assistant(a) => self.assistant(out, a),
            TranscriptMessage::ToolResult(r) => {
                if !self.shown.contains(r.tool_call_id.as_str()) {
                    push_tool(out, &r.tool_name, None, Some(r));
                    out.push('\n');
                    self.label = None;
                }
            }
            TranscriptMessage::BashExecution(e) => self.execution(out, "user-bash!", e),
            TranscriptMessage::PythonExecution(e) => self.execution(out, "user-python!", e),
            TranscriptMessage::Custom(c) => self.custom(out, c, memory),
            TranscriptMessage::BranchSummary(b) => {
                out.push_str("[branch] from ");
                out.push_str(&b.from_id);
                out.push_str(": ");
                push_one_line(out, &b.summary, ONE_LINE_MAX);
                out.push('\n');
                self.label = None;
            }
            TranscriptMessage::CompactionSummary(c) => {
                out.push_str("[compaction] ");
                push_one_line(out, &c.summary, ONE_LINE_MAX);
                out.push('\n');
                self.label = None;
            }
            TranscriptMessage::Unknown { role, raw } if role == "fileMention" => {
                let paths: Vec<&str> = raw
                    .get("files")
                    .and_then(Value::as_array)
                    .map(|files| {
                        files
                            .iter()
                            .map(|f| f.get("path").and_then(Value::as_str).unwrap_or(""))
                            .collect()
                    })
                    .unwrap_or_default();
                out.push_str("[file-mention] ");
                push_one_line(out, &paths.join(", "), ONE_LINE_MAX);
                out.push('\n');
                self.label = None;
            }
            TranscriptMessage::Unknown { .. } => {}
        }
    }

    fn push_label(&mut self, out: &mut String, label: Label) {
        if self.label != Some(label) {
            out.push_str(label.text());
            out.push('\n');
            self.label = Some(label);
        }
    }

    fn user(&mut self, out: &mut String, label: Label, content: &Content) {
        let text = content_text(content);
        if text.trim().is_empty() {
            return;
        }
        self.push_label(out, label);
        out.push_str(&text);
        out.push('\n');
    }

    fn assistant(&mut self, out: &mut String, message: &'a AssistantMessage) {
        let mut entries: Vec<String> = Vec::new();
        for block in &message.content {
            match block {
                AssistantBlock::Text { text } if !text.trim().is_empty() => {
                    entries.push(text.clone());
                }
                AssistantBlock::Thinking { thinking } if !thinking.trim().is_empty() => {
                    entries.push(format!("_thinking:_ {thinking}"));
                }
                AssistantBlock::ToolCall {
                    id,
                    name,
                    arguments,
                } => {
                    let result = self.results.get(id.as_str()).copied();
                    if result.is_some() {
                        self.shown.insert(id.as_str());
                    }
                    let mut entry = String::new();
                    push_tool(&mut entry, name, Some(&arguments.to_value()), result);
                    entries.push(entry);
                }
                _ => {}
            }
        }
        if entries.is_empty() {
            return;
        }
        self.push_label(out, Label::Agent);
        for entry in entries {
            out.push_str(&entry);
            out.push('\n');
        }
    }

    fn execution(&mut self, out: &mut String, tag: &str, e: &ExecutionMessage) {
        if e.exclude_from_context {
            return;
        }
        self.push_label(out, Label::User);
        push_execution(out, tag, e);
        out.push('\n');
    }

    fn custom(&mut self, out: &mut String, c: &CustomMessage, memory: &mut ExpandedMemory) {
        let standing = PRIMARY_CONTEXT_KINDS.contains(&c.custom_type.as_str());
        if !c.display && !standing && c.custom_type != SHOWN_HIDDEN_KIND {
            return;
        }
        self.label = None;
        if standing {
            let text = match &c.content {
                Content::Text(s) => {
                    let sent = memory.sent.get(&c.custom_type) == Some(s);
                    if !sent {
                        memory.sent.insert(c.custom_type.clone(), s.clone());
                    }
                    if sent {
                        UNCHANGED_CONTEXT.to_string()
                    } else {
                        s.clone()
                    }
                }
                other => content_text(other),
            };
            let text = text.trim();
            if !text.is_empty() {
                out.push_str("<primary-context kind=\"");
                out.push_str(&c.custom_type);
                out.push_str("\">\n");
                crate::xml::push_text(out, text);
                out.push_str("\n</primary-context>\n");
            }
            return;
        }
        push_custom_line(out, c);
        out.push('\n');
    }
}

/// `[KIND] …`: the one-line form of a visible custom message.
fn push_custom_line(out: &mut String, c: &CustomMessage) {
    let details = c.details.as_ref().map(RawJson::to_value);
    let details = details.as_ref();
    let field = |key: &str| {
        details
            .and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let or_unknown = |s: &'static str| -> String {
        let v = field(s);
        if v.is_empty() {
            "?".to_string()
        } else {
            v.to_string()
        }
    };
    let irc = match c.custom_type.as_str() {
        "irc:incoming" => Some((format!("[irc] {} → me: ", or_unknown("from")), "message")),
        "irc:relay" => Some((
            format!("[irc] {} → {}: ", or_unknown("from"), or_unknown("to")),
            "body",
        )),
        "irc:workpool" => Some((
            format!("[pool] {} → {}: ", field("pool"), or_unknown("to")),
            "body",
        )),
        _ => None,
    };
    if let Some((head, text)) = irc {
        out.push_str(&head);
        push_one_line(out, field(text), ONE_LINE_MAX);
        return;
    }
    match c.custom_type.as_str() {
        "async-result" => {
            let jobs: Vec<&Value> = match details.and_then(|d| d.get("jobs")) {
                Some(Value::Array(jobs)) if !jobs.is_empty() => jobs.iter().collect(),
                _ => details.into_iter().collect(),
            };
            let jobs = if jobs.is_empty() {
                vec![&Value::Null]
            } else {
                jobs
            };
            let labels: Vec<&str> = jobs
                .iter()
                .map(|job| match (job.get("label"), job.get("jobId")) {
                    (Some(Value::String(l)), _) if !l.is_empty() => l.as_str(),
                    (_, Some(Value::String(id))) => id.as_str(),
                    _ => "job",
                })
                .collect();
            out.push_str("[async-result] ");
            push_one_line(out, &labels.join(", "), ONE_LINE_MAX);
        }
        kind => {
            out.push('[');
            out.push_str(kind);
            out.push_str("] ");
            push_one_line(out, &content_text(&c.content), ONE_LINE_MAX);
        }
    }
}

/// The text of a content: the string, or the text blocks joined by `\n` with every other
/// block as `[image]` (an image with its file as `[image: PATH]`, CA24).
fn content_text(content: &Content) -> String {
    match content {
        Content::Text(s) => s.clone(),
        Content::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => std::borrow::Cow::Borrowed(text.as_str()),
                other => other
                    .image_label()
                    .unwrap_or(std::borrow::Cow::Borrowed("[image]")),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The intent of a call: its non-blank `i` (else `_i`) argument.
fn intent(arguments: &Value) -> Option<&str> {
    INTENT_KEYS
        .iter()
        .find_map(|k| arguments.get(*k).and_then(Value::as_str))
        .filter(|s| !s.trim().is_empty())
}

/// Writes a tool call (or a result standing alone when `arguments` is `None`): the intent
/// line, the tool line with its status, then the diff, the ask input and the result body.
fn push_tool(
    out: &mut String,
    name: &str,
    arguments: Option<&Value>,
    result: Option<&ToolResultMessage>,
) {
    if let Some(intent) = arguments.and_then(intent) {
        push_intent_line(out, intent);
    }
    out.push_str("→ ");
    out.push_str(name);
    out.push('(');
    if let Some(arguments) = arguments {
        push_arg(out, name, arguments);
    }
    out.push_str(") ⇒ ");
    let text = result.map(|r| content_text(&r.content));
    match (result, &text) {
        (Some(r), Some(text)) => {
            let first = text.split('\n').next().unwrap_or("");
            push_status(out, r.is_error, line_count(text), first);
        }
        _ => out.push_str("pending"),
    }
    let details = result
        .and_then(|r| r.details.as_ref())
        .map(RawJson::to_value);
    let diff = details
        .as_ref()
        .and_then(|d| d.get("diff"))
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty());
    if let Some(diff) = diff {
        out.push('\n');
        push_block(out, diff, "diff", DIFF_MAX_LINES);
    }
    if name == "ask" {
        let input = arguments
            .and_then(ask_arguments)
            .or_else(|| result.and_then(ask_questions));
        if let Some(input) = input {
            out.push_str("\nAsk input:\n");
            push_block(out, &input, "json", RESULT_MAX_LINES);
        }
    }
    if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
        out.push_str("\nTool result:\n");
        push_block(out, &text, "text", RESULT_MAX_LINES);
    }
}

/// The ask input: the arguments without the intent, pretty JSON with each string value
/// excerpted first, then the whole excerpted.
fn ask_arguments(arguments: &Value) -> Option<String> {
    let object = arguments.as_object()?;
    let kept: Map<String, Value> = object
        .iter()
        .filter(|(k, _)| k.as_str() != "i")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some(ask_json(Value::Object(kept)))
}

/// The ask input of a result standing alone: the questions its details name.
fn ask_questions(result: &ToolResultMessage) -> Option<String> {
    let details = result.details.as_ref()?.to_value();
    let details = details.as_object()?;
    let questions: Vec<Value> = if let Some(Value::Array(results)) = details.get("results") {
        results
            .iter()
            .filter_map(|r| r.get("question").and_then(Value::as_str))
            .map(|q| Value::String(q.to_string()))
            .collect()
    } else if let Some(Value::Array(qs)) = details.get("questions") {
        qs.iter().filter(|q| q.is_string()).cloned().collect()
    } else if let Some(Value::String(q)) = details.get("question") {
        vec![Value::String(q.clone())]
    } else {
        Vec::new()
    };
    if questions.is_empty() {
        return None;
    }
    let mut object = Map::new();
    object.insert("questions".into(), Value::Array(questions));
    Some(ask_json(Value::Object(object)))
}

fn ask_json(mut value: Value) -> String {
    excerpt_strings(&mut value);
    let pretty = serde_json::to_string_pretty(&value).unwrap_or_default();
    excerpt(&pretty, BLOCK_MAX_BYTES, RESULT_MAX_LINES).0
}

fn excerpt_strings(value: &mut Value) {
    match value {
        Value::String(s) => {
            let (kept, cut) = excerpt(s, ASK_STRING_MAX_BYTES, ASK_STRING_MAX_LINES);
            if cut {
                *s = kept;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(excerpt_strings),
        Value::Object(map) => map.values_mut().for_each(excerpt_strings),
        _ => {}
    }
}

/// A non-empty string, or a non-empty all-string array joined by `, `.
fn arg_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Array(items) if !items.is_empty() => {
            let strings: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            strings.map(|s| s.join(", "))
        }
        _ => None,
    }
}

/// The ARG of a tool line in the expanded view (SPEC §3: the compact rule plus `advise`,
/// `grep`, `glob`, `ast_grep`, `note` and `{}`).
fn push_arg(out: &mut String, name: &str, arguments: &Value) {
    let Some(args) = arguments.as_object() else {
        return;
    };
    let string = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let special = match name {
        "advise" => match (string("severity"), string("note")) {
            (Some(sev), Some(note)) => Some(format!("{sev}: {note}")),
            (Some(one), None) | (None, Some(one)) => Some(one.to_string()),
            (None, None) => None,
        },
        "grep" => {
            let pattern = arg_text(args.get("pattern"));
            let path = arg_text(args.get("path")).or_else(|| arg_text(args.get("paths")));
            match (pattern, path) {
                (Some(p), Some(at)) => Some(format!("{p} @ {at}")),
                (Some(one), None) | (None, Some(one)) => Some(one),
                (None, None) => None,
            }
        }
        "glob" => arg_text(args.get("path")).or_else(|| arg_text(args.get("paths"))),
        "ast_grep" => arg_text(args.get("pat")),
        _ => None,
    };
    // The compact view's keys, with `note` before `message`.
    let keys = ARG_KEYS.iter().flat_map(|k| match *k {
        "message" => ["note", "message"].as_slice(),
        _ => std::slice::from_ref(k),
    });
    let chosen = special.or_else(|| keys.into_iter().find_map(|k| arg_text(args.get(*k))));
    if let Some(text) = chosen {
        push_one_line(out, &text, ONE_LINE_MAX);
        return;
    }
    let mut rest = Map::new();
    for (k, v) in args {
        if INTENT_KEYS.contains(&k.as_str()) {
            continue;
        }
        if let Value::String(s) = v {
            if !s.is_empty() {
                push_one_line(out, s, ONE_LINE_MAX);
                return;
            }
        }
        rest.insert(k.clone(), v.clone());
    }
    if rest.is_empty() {
        out.push_str("{}");
    } else {
        push_one_line(out, &Value::Object(rest).to_string(), ONE_LINE_MAX);
    }
}

#[cfg(test)]
mod tests;
