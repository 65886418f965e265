//! The compact view (SPEC §3, compat with oh-my-pi's advisor): role labels, one line per
//! tool call with its status, result bodies never shown.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{
    content_is_blank, decimal, is_blank, push_joined, push_one_line, ToolIndex, ONE_LINE_MAX,
};
use crate::domain::transcript::{
    AssistantBlock, AssistantMessage, Content, ContentBlock, ExecutionMessage, ToolResultMessage,
    TranscriptMessage,
};

/// Argument keys whose value names what a tool call acts on, in order of preference.
pub(super) const ARG_KEYS: [&str; 14] = [
    "path",
    "file_path",
    "filePath",
    "command",
    "cmd",
    "pattern",
    "url",
    "query",
    "prompt",
    "assignment",
    "message",
    "op",
    "name",
    "id",
];

/// The argument carrying a tool call's stated intent.
const INTENT_KEY: &str = "_i";

/// Maximum characters of an intent line.
const INTENT_MAX: usize = 80;

/// The role labels of the compact and expanded views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Label {
    User,
    Developer,
    Agent,
}

impl Label {
    pub(super) fn text(self) -> &'static str {
        match self {
            Label::User => "**user**:",
            Label::Developer => "**developer**:",
            Label::Agent => "**agent**:",
        }
    }
}

/// Renders `delta` in the compact view; `""` when nothing shows.
///
/// Lines are written straight into one buffer, each followed by `\n`, so the buffer is the
/// lines joined by `\n` plus one `\n`; a message's trailing blank line is one more `\n`.
pub(super) fn render(delta: &[Arc<TranscriptMessage>]) -> String {
    let mut out = String::new();
    render_into(delta, &mut out);
    out
}

/// Appends [`render`]'s text of `delta` to `out`, which may already hold text: that text
/// is left as it is.
pub(super) fn render_into(delta: &[Arc<TranscriptMessage>], out: &mut String) {
    let start = out.len();
    write_lines(delta, out);
    finish(out, start);
}

/// Writes the lines of `delta`, each followed by `\n`.
fn write_lines(delta: &[Arc<TranscriptMessage>], out: &mut String) {
    let index = ToolIndex::build(delta);
    let mut last: Option<Label> = None;
    for message in delta {
        match message.as_ref() {
            TranscriptMessage::User(u) => render_user(out, &mut last, Label::User, &u.content),
            TranscriptMessage::Developer(u) => {
                render_user(out, &mut last, Label::Developer, &u.content)
            }
            TranscriptMessage::Assistant(a) => render_assistant(out, &mut last, a, &index),
            TranscriptMessage::ToolResult(r) => {
                if !index.has_call(&r.tool_call_id) {
                    last = None;
                    out.push_str("→ ");
                    out.push_str(&r.tool_name);
                    out.push_str("() ⇒ ");
                    push_result_status(out, r);
                    out.push_str("\n\n");
                }
            }
            other => {
                if push_one_liner(out, other) {
                    last = None;
                    out.push_str("\n\n");
                }
            }
        }
    }
}

/// Trims the text written from `start` on; nothing when it is blank, else the trimmed
/// text plus one `\n`.
fn finish(out: &mut String, start: usize) {
    let end = start + out[start..].trim_end().len();
    out.truncate(end);
    let blank = out[start..].len() - out[start..].trim_start().len();
    if blank > 0 {
        out.drain(start..start + blank);
    }
    if out.len() > start {
        out.push('\n');
    }
}

/// Writes the label unless it is the last one printed.
fn push_label(out: &mut String, last: &mut Option<Label>, label: Label) {
    if *last != Some(label) {
        out.push_str(label.text());
        out.push('\n');
        *last = Some(label);
    }
}

fn render_user(out: &mut String, last: &mut Option<Label>, label: Label, content: &Content) {
    if content_is_blank(content, true) {
        return;
    }
    push_label(out, last, label);
    push_joined(out, content, "\n", true);
    out.push_str("\n\n");
}

fn render_assistant(
    out: &mut String,
    last: &mut Option<Label>,
    message: &AssistantMessage,
    index: &ToolIndex<'_>,
) {
    let shows = message.content.iter().any(|block| match block {
        AssistantBlock::Text { text } => !is_blank(text),
        AssistantBlock::Thinking { thinking } => !is_blank(thinking),
        AssistantBlock::ToolCall { .. } => true,
        AssistantBlock::RedactedThinking | AssistantBlock::Unknown(_) => false,
    });
    if !shows {
        return;
    }
    push_label(out, last, Label::Agent);
    for block in &message.content {
        match block {
            AssistantBlock::Text { text } if !is_blank(text) => {
                out.push_str(text);
                out.push('\n');
            }
            AssistantBlock::Thinking { thinking } if !is_blank(thinking) => {
                out.push_str("_thinking:_ ");
                out.push_str(thinking);
                out.push('\n');
            }
            AssistantBlock::ToolCall {
                id,
                name,
                arguments,
            } => {
                // Arguments kept as their compact text are read in place; others (a value
                // that is not an object, or one holding a float) as a tree.
                let fields = arguments.as_text().and_then(ArgFields::read);
                let tree = match &fields {
                    Some(_) => None,
                    None => Some(arguments.to_value()),
                };
                let intent = match (&fields, &tree) {
                    (Some(fields), _) => fields.string(INTENT_KEY),
                    (None, Some(tree)) => {
                        tree.get(INTENT_KEY).and_then(Value::as_str).map(Into::into)
                    }
                    (None, None) => None,
                };
                if let Some(intent) = intent {
                    if !is_blank(&intent) {
                        push_intent_line(out, &intent);
                    }
                }
                out.push_str("→ ");
                out.push_str(name);
                out.push('(');
                match (&fields, &tree) {
                    (Some(fields), _) => fields.push_arg(out),
                    (None, Some(tree)) => push_arg(out, tree),
                    (None, None) => {}
                }
                out.push_str(") ⇒ ");
                match index.result_for(id) {
                    Some(result) => push_result_status(out, result),
                    None => out.push_str("pending"),
                }
                out.push('\n');
            }
            _ => {}
        }
    }
    out.push('\n');
}

/// Writes the ARG of a tool line (SPEC §3): a preferred key's string (or string array), else
/// the first string argument, else the compact JSON of the arguments, else nothing.
pub(super) fn push_arg(out: &mut String, arguments: &Value) {
    let Some(args) = arguments.as_object() else {
        if !arguments.is_null() {
            push_one_line(out, &arguments.to_string(), ONE_LINE_MAX);
        }
        return;
    };
    for key in ARG_KEYS {
        match args.get(key) {
            Some(Value::String(s)) if !s.is_empty() => {
                push_one_line(out, s, ONE_LINE_MAX);
                return;
            }
            Some(Value::Array(items)) if !items.is_empty() => {
                let strings: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
                if let Some(strings) = strings {
                    push_one_line(out, &strings.join(", "), ONE_LINE_MAX);
                    return;
                }
            }
            _ => {}
        }
    }
    let first_string = args.iter().find_map(|(k, v)| match v {
        Value::String(s) if k != INTENT_KEY && !s.is_empty() => Some(s),
        _ => None,
    });
    if let Some(s) = first_string {
        push_one_line(out, s, ONE_LINE_MAX);
        return;
    }
    if args.keys().any(|k| k != INTENT_KEY) {
        push_one_line(out, &compact_json_without_intent(args), ONE_LINE_MAX);
    }
}

/// A tool call's arguments object read in place from its compact JSON text (what
/// `serde_json` prints for it, so no key appears twice): each key with its value's text,
/// in order. What [`push_arg`] writes from the tree, [`ArgFields::push_arg`] writes from
/// these, byte for byte.
enum ArgFields<'a> {
    /// Up to [`INLINE_FIELDS`] fields whose keys are borrowed, held in place.
    Inline {
        /// The fields, the first `len` of them in use.
        fields: [Field<'a>; INLINE_FIELDS],
        /// How many fields are in use.
        len: usize,
    },
    /// Any number of fields.
    Heap(Vec<(Cow<'a, str>, &'a str)>),
}

/// A field's key and its value's text, both borrowed from the arguments' text.
type Field<'a> = (&'a str, &'a str);

/// How many fields [`ArgFields`] holds without an allocation.
const INLINE_FIELDS: usize = 6;

/// A string, borrowed from the text when it holds no escapes.
#[derive(Deserialize)]
#[serde(transparent)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'a> ArgFields<'a> {
    /// The fields of `text` when it is an object; `None` otherwise.
    fn read(text: &'a str) -> Option<Self> {
        if !text.starts_with('{') {
            return None;
        }
        if let Some(fields) = Self::scan(text) {
            return Some(fields);
        }
        let fields: SerdeFields<'a> = serde_json::from_str(text).ok()?;
        Some(ArgFields::Heap(
            fields
                .0
                .into_iter()
                .map(|(k, raw)| (k.0, raw.get()))
                .collect(),
        ))
    }

    /// The fields of `text`, serde_json's compact printing of an object (what
    /// [`RawJson::as_text`](crate::domain::transcript::RawJson::as_text) holds: valid JSON),
    /// found by walking its tokens: what the parse in [`ArgFields::read`] gives, without a
    /// parser's bookkeeping. `None` (the parse then decides) on a key holding an escape or
    /// on any text that is not of that printing's shape.
    fn scan(text: &'a str) -> Option<Self> {
        let b = text.as_bytes();
        let mut fields = ArgFields::Inline {
            fields: [("", ""); INLINE_FIELDS],
            len: 0,
        };
        if b.get(1) == Some(&b'}') {
            return (b.len() == 2).then_some(fields);
        }
        let mut at = 1;
        loop {
            if b.get(at) != Some(&b'"') {
                return None;
            }
            let end = plain_string_end(b, at + 1)?;
            let key = text.get(at + 1..end)?;
            at = end + 1;
            if b.get(at) != Some(&b':') {
                return None;
            }
            let start = at + 1;
            at = value_end(b, start)?;
            fields.push(key, text.get(start..at)?);
            match b.get(at) {
                Some(b',') => at += 1,
                Some(b'}') if at + 1 == b.len() => return Some(fields),
                _ => return None,
            }
        }
    }

    /// Adds a field found by the walk.
    fn push(&mut self, key: &'a str, value: &'a str) {
        let spilled = match self {
            ArgFields::Heap(heap) => {
                heap.push((Cow::Borrowed(key), value));
                return;
            }
            ArgFields::Inline { fields, len } => match fields.get_mut(*len) {
                Some(free) => {
                    *free = (key, value);
                    *len += 1;
                    return;
                }
                None => fields
                    .iter()
                    .chain([(key, value)].iter())
                    .map(|&(k, v)| (Cow::Borrowed(k), v))
                    .collect(),
            },
        };
        *self = ArgFields::Heap(spilled);
    }

    /// Each field's key and value text, in order.
    fn iter(&self) -> impl Iterator<Item = (&str, &'a str)> + '_ {
        let (inline, heap): (&[Field<'a>], &[(Cow<'a, str>, &'a str)]) = match self {
            ArgFields::Inline { fields, len } => (&fields[..*len], &[]),
            ArgFields::Heap(heap) => (&[], heap),
        };
        inline
            .iter()
            .copied()
            .chain(heap.iter().map(|(k, v)| (&**k, *v)))
    }

    /// The value of `key` when it is a string.
    fn string(&self, key: &str) -> Option<Cow<'a, str>> {
        let (_, raw) = self.iter().find(|(k, _)| *k == key)?;
        as_string(raw)
    }

    /// [`push_arg`] of the object these fields make.
    fn push_arg(&self, out: &mut String) {
        for key in ARG_KEYS {
            let Some((_, raw)) = self.iter().find(|(k, _)| *k == key) else {
                continue;
            };
            match raw.as_bytes().first() {
                Some(b'"') => {
                    if let Some(s) = as_string(raw).filter(|s| !s.is_empty()) {
                        push_one_line(out, &s, ONE_LINE_MAX);
                        return;
                    }
                }
                Some(b'[') => {
                    // An array of strings only; anything else in it passes the key over.
                    if let Ok(strings) = serde_json::from_str::<Vec<Str<'_>>>(raw) {
                        if !strings.is_empty() {
                            let strings: Vec<&str> = strings.iter().map(|s| &*s.0).collect();
                            push_one_line(out, &strings.join(", "), ONE_LINE_MAX);
                            return;
                        }
                    }
                }
                _ => {}
            }
        }
        let first_string = self
            .iter()
            .filter(|(k, _)| *k != INTENT_KEY)
            .find_map(|(_, raw)| as_string(raw).filter(|s| !s.is_empty()));
        if let Some(s) = first_string {
            push_one_line(out, &s, ONE_LINE_MAX);
            return;
        }
        if self.iter().any(|(k, _)| k != INTENT_KEY) {
            let mut json = String::from("{");
            for (k, raw) in self.iter().filter(|(k, _)| *k != INTENT_KEY) {
                if json.len() > 1 {
                    json.push(',');
                }
                // The value's text is already its compact printing.
                let _ = write!(json, "{}:{}", Value::from(k), raw);
            }
            json.push('}');
            push_one_line(out, &json, ONE_LINE_MAX);
        }
    }
}

/// The index of the quote closing the string whose contents start at `from`, when the
/// string holds no escape and no control character (its contents are then its value).
fn plain_string_end(b: &[u8], from: usize) -> Option<usize> {
    let len = b
        .get(from..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    (b[from + len] == b'"').then_some(from + len)
}

/// The index of the quote closing the string whose contents start at `from`, escapes
/// skipped; `None` at a control character (which JSON does not allow there).
fn string_end(b: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        at += b
            .get(at..)?
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        match b[at] {
            b'"' => return Some(at),
            b'\\' => at += 2,
            _ => return None,
        }
    }
}

/// The index just past the value starting at `from` in compact JSON text.
fn value_end(b: &[u8], from: usize) -> Option<usize> {
    match b.get(from)? {
        b'"' => string_end(b, from + 1).map(|end| end + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = from;
            loop {
                match b.get(at)? {
                    b'"' => at = string_end(b, at + 1)?,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        // A number, `true`, `false` or `null`: up to the first byte that cannot be in one.
        b'-' | b'0'..=b'9' | b'a'..=b'z' => {
            let len = b[from..]
                .iter()
                .position(|&c| !matches!(c, b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'E'))
                .unwrap_or(b.len() - from);
            Some(from + len)
        }
        _ => None,
    }
}

/// The fields as serde_json reads them (the general path of [`ArgFields::read`]).
struct SerdeFields<'a>(Vec<(Str<'a>, &'a RawValue)>);

impl<'de> Deserialize<'de> for SerdeFields<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = SerdeFields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(entry) = map.next_entry::<Str<'de>, &'de RawValue>()? {
                    fields.push(entry);
                }
                Ok(SerdeFields(fields))
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}

/// The string a raw value's text holds; `None` when it holds something else.
fn as_string(raw: &str) -> Option<Cow<'_, str>> {
    if !raw.starts_with('"') {
        return None;
    }
    // No escape and no control character: the contents are the string.
    if plain_string_end(raw.as_bytes(), 1) == Some(raw.len() - 1) {
        return raw.get(1..raw.len() - 1).map(Cow::Borrowed);
    }
    serde_json::from_str::<Str<'_>>(raw).ok().map(|s| s.0)
}

/// `{"k":v,…}` of every argument but the intent, keys in their original order.
fn compact_json_without_intent(args: &Map<String, Value>) -> String {
    let mut json = String::from("{");
    for (k, v) in args.iter().filter(|(k, _)| *k != INTENT_KEY) {
        if json.len() > 1 {
            json.push(',');
        }
        // Writing JSON into a String cannot fail.
        let _ = write!(json, "{}:{}", Value::from(k.as_str()), v);
    }
    json.push('}');
    json
}

/// Writes the intent line `// INTENT` (cut to 80 characters) and its newline.
pub(super) fn push_intent_line(out: &mut String, intent: &str) {
    out.push_str("// ");
    push_one_line(out, intent, INTENT_MAX);
    out.push('\n');
}

/// Writes `ok · N lines` or `error · N lines — FIRST` for a tool result.
fn push_result_status(out: &mut String, result: &ToolResultMessage) {
    let (lines, first) = text_lines(&result.content);
    push_status(out, result.is_error, lines, first);
}

/// Writes `ok · N lines`, or `error · N lines — FIRST` (FIRST on one line; the dash left out
/// when it is blank).
pub(super) fn push_status(out: &mut String, is_error: bool, lines: usize, first: &str) {
    out.push_str(if is_error { "error · " } else { "ok · " });
    push_line_count(out, lines);
    if is_error {
        let mark = out.len();
        out.push_str(" — ");
        let before = out.len();
        push_one_line(out, first, ONE_LINE_MAX);
        if out.len() == before {
            out.truncate(mark);
        }
    }
}

/// Writes `N lines` (`1 line` singular).
pub(super) fn push_line_count(out: &mut String, n: usize) {
    let mut digits = [0; 20];
    out.extend(decimal(n, &mut digits).iter().map(|&d| char::from(d)));
    out.push_str(if n == 1 { " line" } else { " lines" });
}

/// Number of `\n`-separated lines of the content's text blocks joined by `\n` (0 when that
/// text is empty), and its first line; computed without building the joined text.
fn text_lines(content: &Content) -> (usize, &str) {
    match content {
        Content::Text(s) if s.is_empty() => (0, ""),
        Content::Text(s) => {
            let (newlines, first) = newlines_and_first_line(s);
            (newlines + 1, first)
        }
        Content::Blocks(blocks) => {
            let mut texts = blocks.iter().filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            });
            let Some(first) = texts.next() else {
                return (0, "");
            };
            let mut parts = 1usize;
            let (mut count, first_line) = newlines_and_first_line(first);
            for text in texts {
                parts += 1;
                count += count_newlines(text);
            }
            if parts == 1 && first.is_empty() {
                return (0, "");
            }
            (count + parts, first_line)
        }
    }
}

/// Writes the one-line form of an execution, custom message, summary or unknown message.
/// Returns false (writing nothing) for messages that have no such line: roles rendered
/// elsewhere and executions excluded from context.
pub(super) fn push_one_liner(out: &mut String, message: &TranscriptMessage) -> bool {
    match message {
        TranscriptMessage::BashExecution(e) => push_execution(out, "bash!", e),
        TranscriptMessage::PythonExecution(e) => push_execution(out, "python!", e),
        TranscriptMessage::Custom(c) => {
            out.push('[');
            out.push_str(&c.custom_type);
            out.push_str("] ");
            push_one_line(out, &c.content.joined_text("\n", true), ONE_LINE_MAX);
            true
        }
        TranscriptMessage::BranchSummary(b) => {
            out.push_str("[branch] from ");
            out.push_str(&b.from_id);
            out.push_str(": ");
            push_one_line(out, &b.summary, ONE_LINE_MAX);
            true
        }
        TranscriptMessage::CompactionSummary(c) => {
            out.push_str("[compaction] ");
            push_one_line(out, &c.summary, ONE_LINE_MAX);
            true
        }
        TranscriptMessage::Unknown { role, .. } => {
            out.push('[');
            out.push_str(role);
            out.push(']');
            true
        }
        TranscriptMessage::User(_)
        | TranscriptMessage::Developer(_)
        | TranscriptMessage::Assistant(_)
        | TranscriptMessage::ToolResult(_) => false,
    }
}

/// Writes `→ TAG CMD ⇒ STATUS · N lines` for an execution; false (nothing written) when it
/// is excluded from context.
pub(super) fn push_execution(out: &mut String, tag: &str, e: &ExecutionMessage) -> bool {
    if e.exclude_from_context {
        return false;
    }
    out.push_str("→ ");
    out.push_str(tag);
    out.push(' ');
    push_one_line(out, &e.command, ONE_LINE_MAX);
    out.push_str(" ⇒ ");
    match e.exit_code {
        _ if e.cancelled => out.push_str("cancelled"),
        Some(code) if code != 0 => {
            let _ = write!(out, "error · exit {code}");
        }
        _ => out.push_str("ok"),
    }
    out.push_str(" · ");
    push_line_count(out, output_lines(&e.output));
    true
}

/// Number of `\n` bytes in `s`. Counted in chunks with a byte-sized accumulator, which
/// the compiler vectorises: tool outputs are the bulk of a delta's bytes.
fn count_newlines(s: &str) -> usize {
    s.as_bytes()
        .chunks(255)
        .map(|chunk| {
            let n: u8 = chunk.iter().map(|b| u8::from(*b == b'\n')).sum();
            usize::from(n)
        })
        .sum()
}

/// The number of `\n` bytes in `s` and the text before the first of them (all of `s`
/// when it has none), in one pass.
fn newlines_and_first_line(s: &str) -> (usize, &str) {
    match memchr::memchr(b'\n', s.as_bytes()) {
        None => (0, s),
        Some(end) => (1 + count_newlines(&s[end + 1..]), &s[..end]),
    }
}

/// Number of `\n`-separated lines of `s`, 0 when empty.
pub(super) fn output_lines(s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        count_newlines(s) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;
    use serde_json::json;

    fn arg(v: Value) -> String {
        let mut out = String::new();
        push_arg(&mut out, &v);
        out
    }

    #[test]
    fn arg_prefers_known_keys_in_order() {
        assert_eq!(arg(json!({"command": "ls", "path": "a.rs"})), "a.rs");
        assert_eq!(arg(json!({"path": "", "cmd": "pwd"})), "pwd");
        assert_eq!(arg(json!({"paths": 1, "path": ["a", "b"]})), "a, b");
        assert_eq!(arg(json!({"path": ["a", 1], "zzz": "x"})), "x");
        assert_eq!(
            arg(json!({"_i": "why", "limit": 5, "all": true})),
            "{\"limit\":5,\"all\":true}"
        );
        assert_eq!(arg(json!({"_i": "why"})), "");
        assert_eq!(arg(json!({})), "");
        assert_eq!(arg(Value::Null), "");
    }

    #[test]
    fn l1_arguments_read_in_place_render_as_their_tree_does() {
        let cases = [
            json!({"command": "ls", "path": "a.rs"}),
            json!({"path": "", "cmd": "pwd"}),
            json!({"paths": 1, "path": ["a", "b"]}),
            json!({"path": ["a", 1], "zzz": "x"}),
            json!({"path": [], "zzz": ""}),
            json!({"_i": "why", "limit": 5, "all": true}),
            json!({"_i": "why"}),
            json!({"_i": 7, "q\"uote": "x\ny"}),
            json!({"_i": "", "k\u{1}": {"a": [1, "b"]}, "n": null}),
            json!({"é": "ünïcode\t", "path": [["nested"]]}),
            json!({}),
        ];
        for case in cases {
            let raw = crate::domain::transcript::RawJson::from(case.clone());
            let text = raw.as_text().expect("kept as text");
            let fields = ArgFields::read(text).expect("an object");
            let mut out = String::new();
            fields.push_arg(&mut out);
            assert_eq!(out, arg(case.clone()), "{text}");
            assert_eq!(
                fields.string(INTENT_KEY).as_deref(),
                case.get(INTENT_KEY).and_then(Value::as_str),
                "{text}"
            );
        }
        assert!(ArgFields::read("[1]").is_none());
        assert!(ArgFields::read("null").is_none());
    }

    /// The fields as the general path (serde_json's parse) reads them.
    fn parsed(text: &str) -> Option<Vec<(String, String)>> {
        let fields: SerdeFields<'_> = serde_json::from_str(text).ok()?;
        Some(
            fields
                .0
                .into_iter()
                .map(|(k, raw)| (k.0.into_owned(), raw.get().to_string()))
                .collect(),
        )
    }

    /// The fields the token walk finds, or `None` when it leaves `text` to the parse.
    fn scanned(text: &str) -> Option<Vec<(String, String)>> {
        let fields = ArgFields::scan(text)?;
        Some(
            fields
                .iter()
                .map(|(k, raw)| (k.to_string(), raw.to_string()))
                .collect(),
        )
    }

    #[test]
    fn l1_argument_walk_finds_what_the_parse_finds_or_leaves_it_to_the_parse() {
        let texts = [
            r#"{}"#,
            r#"{"path":"src/m0.rs","oldText":"fn old_helper()","newText":"fn new_helper()"}"#,
            r#"{"a":"q\"uote","b":"back\\slash","c":"\u0001\n"}"#,
            r#"{"a":{"b":[1,"}",{"c":"]"}],"d":null},"e":-12,"f":true,"g":false}"#,
            r#"{"é":"ünïcode ⇒ 😀","n":[],"o":{}}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"k\"ey":1}"#,
            r#"{"a":"\\"}"#,
            r#"{"a":[[["x"]]],"b":"\"}\""}"#,
            // Not serde_json's compact printing: left to the parse, or answered alike.
            r#"{ "a":1}"#,
            r#"{"a": 1}"#,
            r#"{"a":1 }"#,
            r#"{"a" :1}"#,
            r#"{"a":1}x"#,
            r#"{"a":1,}"#,
            r#"{"a":1.5e3}"#,
            "{\"a\":\"tab\there\"}",
        ];
        for text in texts {
            if let Some(fields) = scanned(text) {
                assert_eq!(Some(fields), parsed(text), "{text}");
            }
        }
        assert!(
            scanned(r#"{"k\"ey":1}"#).is_none(),
            "a key with an escape is parsed"
        );
        assert!(scanned(r#"{"a":1}"#).is_some());
        // Escaped values and nested values are walked, not left to the parse.
        for text in &texts[..6] {
            assert!(scanned(text).is_some(), "{text}");
        }
        // More fields than are held in place.
        for n in [5, 6, 7, 9] {
            let text =
                Value::Object((0..n).map(|i| (format!("k{i}"), json!(i))).collect()).to_string();
            assert_eq!(scanned(&text), parsed(&text), "{text}");
            assert_eq!(scanned(&text).map(|f| f.len()), Some(n), "{text}");
            let mut out = String::new();
            ArgFields::read(&text)
                .expect("an object")
                .push_arg(&mut out);
            assert_eq!(out, arg(serde_json::from_str(&text).unwrap()));
        }
    }

    #[test]
    fn l1_a_plain_string_value_is_borrowed_as_the_parse_reads_it() {
        for raw in [
            r#""""#,
            r#""a""#,
            r#""a\"b""#,
            r#""\\""#,
            r#""\u00e9""#,
            r#""é""#,
            "\"a\tb\"",
            "1",
            "null",
            r#""unterminated"#,
        ] {
            let parsed = serde_json::from_str::<Str<'_>>(raw).ok().map(|s| s.0);
            let parsed = parsed.filter(|_| raw.starts_with('"'));
            assert_eq!(as_string(raw), parsed, "{raw}");
        }
    }

    #[test]
    fn line_count_is_written_as_format_writes_it() {
        for n in [0, 1, 2, 9, 10, 99, 100, 12_345, usize::MAX] {
            let mut out = String::from("x");
            push_line_count(&mut out, n);
            let unit = if n == 1 { "line" } else { "lines" };
            assert_eq!(out, format!("x{n} {unit}"));
        }
    }

    proptest::proptest! {
        /// On serde_json's compact printing of any object, the walk finds the parse's fields.
        #[test]
        fn l1_argument_walk_equals_the_parse_on_printed_objects(
            pairs in proptest::collection::vec((
                "[a-c\"\\\u{0}-\u{1f}é]{0,3}",
                proptest::prop_oneof![
                    proptest::strategy::Just(json!(null)),
                    proptest::arbitrary::any::<i64>().prop_map(|n| json!(n)),
                    proptest::arbitrary::any::<bool>().prop_map(|b| json!(b)),
                    "[a-c\"\\\u{0}-\u{1f}é{}\\[\\],:]{0,6}".prop_map(|s| json!(s)),
                    "[a-c\"{}]{0,4}".prop_map(|s| json!([s, {"k": [s]}])),
                ],
            ), 0..10)
        ) {
            let text = Value::Object(pairs.into_iter().collect()).to_string();
            let general = parsed(&text);
            proptest::prop_assert!(general.is_some());
            if let Some(fields) = scanned(&text) {
                proptest::prop_assert_eq!(Some(fields), general, "{}", text);
            }
            let read = ArgFields::read(&text).expect("an object");
            let mut out = String::new();
            read.push_arg(&mut out);
            let tree: Value = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(out, arg(tree));
        }
    }

    #[test]
    fn newline_count_crosses_chunk_boundaries() {
        for n in [0, 1, 254, 255, 256, 600] {
            assert_eq!(count_newlines(&"\n".repeat(n)), n);
            assert_eq!(count_newlines(&"ab\n".repeat(n)), n);
        }
    }

    #[test]
    fn lines_of_blocks_match_joined_text() {
        let cases = [
            json!([]),
            json!([{"type": "text", "text": ""}]),
            json!([{"type": "text", "text": ""}, {"type": "text", "text": ""}]),
            json!([{"type": "text", "text": "a\nb"}, {"type": "image"}, {"type": "text", "text": "c"}]),
            json!("one"),
            json!(""),
            json!("x\n"),
            json!("a\n\nb\nc"),
            json!([{"type": "text", "text": "\nfirst"}, {"type": "text", "text": "x\ny\n"}]),
        ];
        for case in cases {
            let content: Content = serde_json::from_value(case).unwrap();
            let joined = content.joined_text("\n", false);
            let expected = if joined.is_empty() {
                0
            } else {
                joined.split('\n').count()
            };
            let (n, first) = text_lines(&content);
            assert_eq!(n, expected, "{joined:?}");
            assert_eq!(first, joined.split('\n').next().unwrap_or(""));
        }
    }
}
