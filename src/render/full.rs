//! The full view (SPEC §3, compat with pi-omplike-advisor): one section per message, nothing
//! truncated; tool arguments as an indented tree, tool results with their bodies. User and
//! developer messages get `#### User` / `#### Developer` sections, each attached image shown
//! as `[image]` so the advisor knows one was there.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::compact::push_one_liner;
use super::{content_is_blank, push_joined, ToolIndex};
use crate::domain::transcript::{
    AssistantBlock, AssistantMessage, Content, ContentBlock, ToolResultMessage, TranscriptMessage,
};

/// Containers nested this deep are shown as `[…]`.
const MAX_DEPTH: usize = 8;

/// Renders `delta` in the full view; `""` when no message yields a section.
pub(super) fn render(delta: &[Arc<TranscriptMessage>]) -> String {
    let index = ToolIndex::build(delta);
    let mut out = String::new();
    for message in delta {
        let mark = out.len();
        if mark > 0 {
            out.push_str("\n\n");
        }
        let wrote = match message.as_ref() {
            TranscriptMessage::User(u) => push_user(&mut out, "#### User\n\n", &u.content),
            TranscriptMessage::Developer(u) => {
                push_user(&mut out, "#### Developer\n\n", &u.content)
            }
            TranscriptMessage::Assistant(a) => push_assistant(&mut out, a, &index),
            TranscriptMessage::ToolResult(r) => {
                push_tool_result(&mut out, r);
                true
            }
            other => push_one_liner(&mut out, other),
        };
        if !wrote {
            out.truncate(mark);
        }
    }
    out
}

fn push_user(out: &mut String, heading: &str, content: &Content) -> bool {
    if content_is_blank(content, true) {
        return false;
    }
    out.push_str(heading);
    match content {
        Content::Text(s) => out.push_str(s.trim()),
        Content::Blocks(_) => {
            let start = out.len();
            push_joined(out, content, "\n", true);
            trim_tail_in_place(out, start);
        }
    }
    true
}

/// Trims the text written to `out` since `start`, in place.
fn trim_tail_in_place(out: &mut String, start: usize) {
    let end = start + out[start..].trim_end().len();
    out.truncate(end);
    let lead = out[start..].len() - out[start..].trim_start().len();
    if lead > 0 {
        out.drain(start..start + lead);
    }
}

fn push_assistant(out: &mut String, message: &AssistantMessage, index: &ToolIndex<'_>) -> bool {
    let heading_at = out.len();
    out.push_str("#### Assistant");
    let items_start = out.len();
    for block in &message.content {
        match block {
            AssistantBlock::Thinking { thinking } if !thinking.trim().is_empty() => {
                out.push_str("\n\n<thinking>\n");
                out.push_str(thinking.trim());
                out.push_str("\n</thinking>");
            }
            AssistantBlock::Text { text } if !text.trim().is_empty() => {
                out.push_str("\n\n");
                out.push_str(text.trim());
            }
            AssistantBlock::ToolCall {
                id,
                name,
                arguments,
            } => {
                out.push_str("\n\n");
                push_tool_call(out, name, &arguments.to_value(), index.result_for(id));
            }
            _ => {}
        }
    }
    if out.len() == items_start {
        out.truncate(heading_at);
        return false;
    }
    true
}

fn push_tool_call(
    out: &mut String,
    name: &str,
    arguments: &Value,
    result: Option<&ToolResultMessage>,
) {
    out.push_str("→ tool `");
    out.push_str(name);
    out.push('`');
    let edits = arguments.get("edits").and_then(Value::as_array);
    if let (Some(edits), Some(_)) = (edits, result.and_then(success_diff)) {
        let path = arguments.get("path").and_then(Value::as_str).unwrap_or("?");
        let _ = write!(
            out,
            "({path}) — {} block(s); diff in tool result",
            edits.len()
        );
        return;
    }
    match arguments {
        Value::Null => {}
        Value::Object(args) if args.is_empty() => {}
        Value::Object(args) => {
            out.push_str(":\n");
            push_argument_tree(out, args);
        }
        other => {
            out.push(':');
            push_value(out, other, 1);
        }
    }
}

/// The non-blank `details.diff` of a successful result.
fn success_diff(result: &ToolResultMessage) -> Option<String> {
    if result.is_error {
        return None;
    }
    let details = result.details.as_ref()?.to_value();
    details
        .get("diff")?
        .as_str()
        .filter(|d| !d.trim().is_empty())
        .map(str::to_string)
}

fn push_tool_result(out: &mut String, result: &ToolResultMessage) {
    out.push_str("#### Tool result: `");
    out.push_str(&result.tool_name);
    out.push('`');
    if result.is_error {
        out.push_str(" (error)");
    }
    out.push_str("\n\n");
    if let Some(diff) = success_diff(result) {
        out.push_str(&diff);
        return;
    }
    let start = out.len();
    match &result.content {
        Content::Text(s) => out.push_str(s),
        Content::Blocks(blocks) => {
            for block in blocks {
                if let ContentBlock::Text { text } = block {
                    out.push_str(text);
                }
            }
        }
    }
    if out.len() == start {
        out.push_str("(no text output)");
    }
}

/// Writes the argument tree of an arguments object: one `key:VALUE` line per top-level key.
pub(super) fn push_argument_tree(out: &mut String, args: &Map<String, Value>) {
    for (i, (key, value)) in args.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(key);
        out.push(':');
        push_value(out, value, 1);
    }
}

/// Writes the VALUE part of a tree entry for a value nested `depth` containers deep (the
/// top-level arguments are at depth 1); its entries are indented by `2 * depth` spaces.
fn push_value(out: &mut String, value: &Value, depth: usize) {
    match value {
        Value::Null => out.push_str(" null"),
        Value::Bool(b) => out.push_str(if *b { " true" } else { " false" }),
        Value::Number(n) => {
            let _ = write!(out, " {n}");
        }
        Value::String(s) => {
            out.push(if s.contains('\n') { '\n' } else { ' ' });
            out.push_str(s);
        }
        Value::Array(items) if items.is_empty() => out.push_str(" []"),
        Value::Object(entries) if entries.is_empty() => out.push_str(" {}"),
        _ if depth >= MAX_DEPTH => out.push_str(" […]"),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                push_indent(out, depth);
                let _ = write!(out, "- [{i}]");
                push_value(out, item, depth + 1);
            }
        }
        Value::Object(entries) => {
            for (key, item) in entries {
                push_indent(out, depth);
                out.push_str(key);
                out.push(':');
                push_value(out, item, depth + 1);
            }
        }
    }
}

fn push_indent(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree(v: Value) -> String {
        let mut out = String::new();
        if let Value::Object(map) = v {
            push_argument_tree(&mut out, &map);
        }
        out
    }

    #[test]
    fn r_golden_argument_tree() {
        let args = json!({"command": "ls\npwd", "timeout": 5, "opts": {"a": [1, "two\nlines", {}], "b": []}});
        assert_eq!(
            tree(args),
            "command:\nls\npwd\ntimeout: 5\nopts:\n  a:\n    - [0] 1\n    - [1]\ntwo\nlines\n    - [2] {}\n  b: []"
        );
    }

    #[test]
    fn tree_scalars_and_depth_cap() {
        assert_eq!(
            tree(json!({"a": null, "b": false, "c": 1.5, "d": ""})),
            "a: null\nb: false\nc: 1.5\nd: "
        );
        let mut deep = json!(1);
        for _ in 0..10 {
            deep = json!([deep]);
        }
        let out = tree(json!({ "x": deep }));
        assert!(out.ends_with("- [0] […]"), "{out}");
        assert_eq!(out.matches("- [0]").count(), 7);
    }
}
