//! The primary's transcript model (SPEC §2): the messages pi and oh-my-pi sessions hold,
//! deserialised from the JSON they use in session files.
//!
//! Every message role and assistant block type the formats know has a typed variant; anything
//! else is kept as an opaque item (`Unknown`) so that a newer session file never crashes the
//! runtime. Opaque items render as `[role]`.

use std::borrow::Cow;
use std::sync::Arc;

use parking_lot::RwLock;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

pub use super::raw_json::RawJson;

/// One content block of a user, developer, tool-result or custom message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image (its data is never rendered; it shows as `[image]`, or `[image: PATH]` when
    /// it carries the file it came from, CA24).
    Image {
        /// Base64 data, when present.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
        /// MIME type, when present.
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The file the image came from (pasted or dragged into the host), when the host
        /// recorded it (CA24).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// A block of a type this crate does not know, kept as it was.
    #[serde(untagged)]
    Unknown(Value),
}

/// Message content: either a bare string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// A bare string.
    Text(String),
    /// A list of content blocks.
    Blocks(Vec<ContentBlock>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl ContentBlock {
    /// How an image block reads in a rendered transcript (CA24): `[image: PATH]` when it
    /// carries the file it came from (a blank path counts as none), else `[image]`; `None`
    /// for any other block.
    pub fn image_label(&self) -> Option<Cow<'static, str>> {
        let ContentBlock::Image { path, .. } = self else {
            return None;
        };
        Some(match path.as_deref().map(str::trim) {
            Some(path) if !path.is_empty() => Cow::Owned(format!("[image: {path}]")),
            _ => Cow::Borrowed("[image]"),
        })
    }
}

impl Content {
    /// The text of the content: the string, or the text blocks joined by `sep`, with images
    /// rendered as `[image]` (`[image: PATH]` with a path, CA24) when `images` is true
    /// (unknown blocks are left out).
    pub fn joined_text(&self, sep: &str, images: bool) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Blocks(blocks) => {
                let mut parts: Vec<Cow<'_, str>> = Vec::with_capacity(blocks.len());
                for block in blocks {
                    match block {
                        ContentBlock::Text { text } => parts.push(Cow::Borrowed(text)),
                        ContentBlock::Image { .. } if images => {
                            parts.extend(block.image_label());
                        }
                        _ => {}
                    }
                }
                parts.join(sep)
            }
        }
    }
}

/// A user or developer message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// The message content.
    #[serde(default)]
    pub content: Content,
}

/// One block of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantBlock {
    /// Visible text.
    Text {
        /// The text.
        text: String,
    },
    /// Model reasoning.
    Thinking {
        /// The reasoning text.
        thinking: String,
    },
    /// Reasoning the provider withheld; never rendered.
    RedactedThinking,
    /// A tool call.
    ToolCall {
        /// The call id, matched by a later tool result.
        id: String,
        /// The tool name.
        name: String,
        /// The arguments object (key order preserved), kept as its JSON text.
        #[serde(default)]
        arguments: RawJson,
    },
    /// A block of a type this crate does not know, kept as it was.
    #[serde(untagged)]
    Unknown(Value),
}

/// An assistant (primary model) message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Its blocks, in order.
    #[serde(default)]
    pub content: Vec<AssistantBlock>,
    /// Why the model stopped (`stop`, `toolUse`, `length`, `aborted`, `error`…), when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The primary model's usage for this message, when the host recorded it (pi and
    /// oh-my-pi do; SP5). A malformed record reads as none, never as an error.
    #[serde(
        default,
        deserialize_with = "lenient_usage",
        skip_serializing_if = "Option::is_none"
    )]
    pub usage: Option<MessageUsage>,
    /// When the message was written, in milliseconds since the epoch, when recorded (pi and
    /// oh-my-pi do): tells a message kept across a compaction from a new one (SP5).
    #[serde(
        default,
        deserialize_with = "lenient_stamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub timestamp: Option<u64>,
}

impl AssistantMessage {
    /// A message of `content` that stopped for `stop_reason`, with no usage recorded.
    pub fn new(content: Vec<AssistantBlock>, stop_reason: Option<String>) -> Self {
        Self {
            content,
            stop_reason,
            usage: None,
            timestamp: None,
        }
    }
}

/// The primary model's usage of one assistant message as pi and oh-my-pi record it
/// (`usage: {input, output, cacheRead, cacheWrite, cost: {total}}`, SP5).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageUsage {
    /// Input tokens neither read from nor written to the cache.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// The cost in dollars, when the host priced the call (`cost.total`, or a number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// How many of its fields were present but implausible and read as absent (SP5,
    /// [`UsageCount`]).
    #[serde(skip)]
    pub ignored: u8,
}

/// The most tokens one field of one assistant message's recorded usage may plausibly hold
/// (SP5): no model reads or writes a billion tokens in one call.
pub const MAX_MESSAGE_TOKENS: u64 = 1_000_000_000;

/// The most dollars one assistant message's recorded cost may plausibly be (SP5).
pub const MAX_MESSAGE_COST: f64 = 10_000.0;

/// One token count of a recorded usage, as read (SP5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UsageCount {
    /// Not there, or `null`.
    #[default]
    Absent,
    /// A whole number from 0 to [`MAX_MESSAGE_TOKENS`].
    Count(u64),
    /// Anything else: negative, fractional, past the bound, a string, an object…; ignored.
    Implausible,
}

impl UsageCount {
    /// Reads one field's value.
    pub fn of(value: &Value) -> Self {
        match value {
            Value::Null => Self::Absent,
            other => match other.as_u64() {
                Some(n) if n <= MAX_MESSAGE_TOKENS => Self::Count(n),
                _ => Self::Implausible,
            },
        }
    }

    /// Reads a whole number already parsed.
    pub fn whole(n: u64) -> Self {
        if n <= MAX_MESSAGE_TOKENS {
            Self::Count(n)
        } else {
            Self::Implausible
        }
    }
}

impl MessageUsage {
    /// Reads a recorded `usage` object; `None` when it is not an object or names neither
    /// input nor output tokens. Each field is read on its own ([`MessageUsage::from_fields`]).
    pub fn from_value(value: &Value) -> Option<Self> {
        let object = value.as_object()?;
        let count = |key: &str| object.get(key).map_or(UsageCount::Absent, UsageCount::of);
        let cost = match object.get("cost") {
            Some(Value::Object(parts)) => parts.get("total").and_then(Value::as_f64),
            Some(other) => other.as_f64(),
            None => None,
        };
        Self::from_fields(
            [
                count("input"),
                count("output"),
                count("cacheRead"),
                count("cacheWrite"),
            ],
            cost,
        )
    }

    /// A usage from its four token counts (input, output, cache read, cache write) and its
    /// cost as read; `None` when neither input nor output is there. An implausible count
    /// ([`UsageCount::Implausible`]) or a cost that is not a finite number from 0 to
    /// [`MAX_MESSAGE_COST`] reads as absent and is counted in `ignored` (SP5): one bad field
    /// never discards the others, nor saturates a total.
    pub fn from_fields(counts: [UsageCount; 4], cost: Option<f64>) -> Option<Self> {
        let [input, output, cache_read, cache_write] = counts;
        if input == UsageCount::Absent && output == UsageCount::Absent {
            return None;
        }
        let mut ignored = 0u8;
        let mut read = |count: UsageCount| match count {
            UsageCount::Count(n) => n,
            UsageCount::Absent => 0,
            UsageCount::Implausible => {
                ignored += 1;
                0
            }
        };
        let (input, output) = (read(input), read(output));
        let (cache_read, cache_write) = (read(cache_read), read(cache_write));
        let cost = match cost {
            Some(c) if c.is_finite() && (0.0..=MAX_MESSAGE_COST).contains(&c) => Some(c),
            Some(_) => {
                ignored += 1;
                None
            }
            None => None,
        };
        Some(Self {
            input,
            output,
            cache_read,
            cache_write,
            cost,
            ignored,
        })
    }
}

/// `usage` of an assistant message: whatever it holds, read by [`MessageUsage::from_value`].
fn lenient_usage<'de, D: Deserializer<'de>>(d: D) -> Result<Option<MessageUsage>, D::Error> {
    Ok(MessageUsage::from_value(&Value::deserialize(d)?))
}

/// `timestamp` of an assistant message: a whole number of milliseconds, else none.
fn lenient_stamp<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Value::deserialize(d)?.as_u64())
}

impl AssistantMessage {
    /// True when the host skips this turn (SPEC L2: stop reason `aborted` or `error`).
    pub fn is_aborted_or_error(&self) -> bool {
        matches!(self.stop_reason.as_deref(), Some("aborted") | Some("error"))
    }

    /// True when the message contains at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        self.content
            .iter()
            .any(|b| matches!(b, AssistantBlock::ToolCall { .. }))
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    #[serde(default)]
    pub tool_call_id: String,
    /// The tool's name.
    #[serde(default)]
    pub tool_name: String,
    /// The result content.
    #[serde(default)]
    pub content: Content,
    /// Whether the tool failed.
    #[serde(default)]
    pub is_error: bool,
    /// Tool-specific details (for example `diff` for edits), kept as their JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<RawJson>,
}

/// A shell (`bashExecution`) or Python (`pythonExecution`) execution the user ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionMessage {
    /// The command line (bash) or code (python).
    #[serde(default, alias = "code")]
    pub command: String,
    /// Its output.
    #[serde(default)]
    pub output: String,
    /// The exit code, when it exited.
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// Whether it was cancelled.
    #[serde(default)]
    pub cancelled: bool,
    /// Whether the output was truncated.
    #[serde(default)]
    pub truncated: bool,
    /// Whether the user kept it out of the model context.
    #[serde(default)]
    pub exclude_from_context: bool,
}

/// A custom message injected by an extension (the advisor's own advice is one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    /// The extension-defined type (`advisor` for this crate's advice).
    #[serde(default)]
    pub custom_type: String,
    /// The content.
    #[serde(default)]
    pub content: Content,
    /// Whether the host shows it.
    #[serde(default)]
    pub display: bool,
    /// Extension-defined details, kept as their JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<RawJson>,
    /// Who wrote it, when the host records that: `agent` for the advisor's deliveries (D2,
    /// as oh-my-pi saves them), absent for a message the host does not attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<String>,
}

impl CustomMessage {
    /// True for messages the advisor itself injected (X2): filtered by type, never by text.
    pub fn is_advisor_message(&self) -> bool {
        matches!(self.custom_type.as_str(), "advisor" | "advisory")
    }
}

/// A summary of an abandoned branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryMessage {
    /// The summary text.
    #[serde(default)]
    pub summary: String,
    /// The entry id the branch left from.
    #[serde(default)]
    pub from_id: String,
}

/// A compaction summary standing in for older messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    /// The summary text.
    #[serde(default)]
    pub summary: String,
}

/// One message of the primary's transcript.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum TranscriptMessage {
    /// A user message.
    User(UserMessage),
    /// A developer (system-injected) message.
    Developer(UserMessage),
    /// A primary model response.
    Assistant(AssistantMessage),
    /// A tool result.
    ToolResult(ToolResultMessage),
    /// A user-run shell command.
    BashExecution(ExecutionMessage),
    /// A user-run Python snippet.
    PythonExecution(ExecutionMessage),
    /// An extension's custom message.
    Custom(CustomMessage),
    /// A branch summary.
    BranchSummary(BranchSummaryMessage),
    /// A compaction summary.
    CompactionSummary(CompactionSummaryMessage),
    /// A message of a role this crate does not know (or a known role whose fields did not
    /// parse), kept as it was and rendered as `[role]`.
    #[serde(untagged)]
    Unknown {
        /// The role name as found (`?` when absent).
        #[serde(skip)]
        role: String,
        /// The raw JSON.
        raw: Value,
    },
}

#[cfg(test)]
impl TranscriptMessage {
    /// Test helper: an assistant message with `text`, one `read` call when `calls`, and the
    /// stop reason `stop`.
    pub(crate) fn test_assistant(text: &str, calls: bool, stop: Option<&str>) -> Self {
        let mut content = vec![AssistantBlock::Text { text: text.into() }];
        if calls {
            content.push(AssistantBlock::ToolCall {
                id: "1".into(),
                name: "read".into(),
                arguments: serde_json::json!({}).into(),
            });
        }
        TranscriptMessage::Assistant(AssistantMessage::new(content, stop.map(str::to_string)))
    }
}

impl TranscriptMessage {
    /// The role name as it appears in session files.
    pub fn role(&self) -> &str {
        match self {
            TranscriptMessage::User(_) => "user",
            TranscriptMessage::Developer(_) => "developer",
            TranscriptMessage::Assistant(_) => "assistant",
            TranscriptMessage::ToolResult(_) => "toolResult",
            TranscriptMessage::BashExecution(_) => "bashExecution",
            TranscriptMessage::PythonExecution(_) => "pythonExecution",
            TranscriptMessage::Custom(_) => "custom",
            TranscriptMessage::BranchSummary(_) => "branchSummary",
            TranscriptMessage::CompactionSummary(_) => "compactionSummary",
            TranscriptMessage::Unknown { role, .. } => role,
        }
    }

    /// Convenience constructor for a plain-text user message.
    pub fn user(text: impl Into<String>) -> Self {
        TranscriptMessage::User(UserMessage {
            content: Content::Text(text.into()),
        })
    }

    /// True for a custom message the advisor injected (X2).
    pub fn is_advisor_message(&self) -> bool {
        matches!(self, TranscriptMessage::Custom(c) if c.is_advisor_message())
    }
}

fn parse_variant<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, Value> {
    T::deserialize(&value).map_err(|_| value)
}

impl<'de> Deserialize<'de> for TranscriptMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if !value.is_object() {
            return Err(D::Error::custom("a message must be a JSON object"));
        }
        let role = value
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let parsed = match role.as_str() {
            "user" => parse_variant(value).map(TranscriptMessage::User),
            "developer" => parse_variant(value).map(TranscriptMessage::Developer),
            "assistant" => parse_variant(value).map(TranscriptMessage::Assistant),
            "toolResult" => parse_variant(value).map(TranscriptMessage::ToolResult),
            "bashExecution" => parse_variant(value).map(TranscriptMessage::BashExecution),
            "pythonExecution" => parse_variant(value).map(TranscriptMessage::PythonExecution),
            "custom" => parse_variant(value).map(TranscriptMessage::Custom),
            "branchSummary" => parse_variant(value).map(TranscriptMessage::BranchSummary),
            "compactionSummary" => parse_variant(value).map(TranscriptMessage::CompactionSummary),
            _ => Err(value),
        };
        Ok(parsed.unwrap_or_else(|raw| TranscriptMessage::Unknown { role, raw }))
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        Ok(match kind {
            "text" => match value.get("text").and_then(Value::as_str) {
                Some(t) => ContentBlock::Text {
                    text: t.to_string(),
                },
                None => ContentBlock::Unknown(value),
            },
            "image" => ContentBlock::Image {
                data: value
                    .get("data")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                mime_type: value
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                path: value
                    .get("path")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            },
            _ => ContentBlock::Unknown(value),
        })
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value {
            Value::String(s) => Ok(Content::Text(s)),
            Value::Array(items) => items
                .into_iter()
                .map(|v| ContentBlock::deserialize(v).map_err(D::Error::custom))
                .collect::<Result<Vec<_>, _>>()
                .map(Content::Blocks),
            Value::Null => Ok(Content::default()),
            _ => Err(D::Error::custom("content must be a string or an array")),
        }
    }
}

impl<'de> Deserialize<'de> for AssistantBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        let text_of = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
        Ok(match kind {
            "text" => match text_of("text") {
                Some(text) => AssistantBlock::Text { text },
                None => AssistantBlock::Unknown(value),
            },
            "thinking" => match text_of("thinking") {
                Some(thinking) => AssistantBlock::Thinking { thinking },
                None => AssistantBlock::Unknown(value),
            },
            "redactedThinking" | "redacted_thinking" => AssistantBlock::RedactedThinking,
            "toolCall" => match (text_of("id"), text_of("name")) {
                (Some(id), Some(name)) => AssistantBlock::ToolCall {
                    id,
                    name,
                    arguments: value
                        .get("arguments")
                        .map_or_else(RawJson::null, |a| RawJson::from(a.clone())),
                },
                _ => AssistantBlock::Unknown(value),
            },
            _ => AssistantBlock::Unknown(value),
        })
    }
}

/// The primary's transcript as the host shares it with the advisor (SPEC X1, A4).
///
/// A cheap-to-clone handle over an append-only list of shared messages: the host appends
/// messages as they happen and passes a clone in each `TurnEnd`, so handing the transcript
/// over costs O(1) and the feed reads only the messages after its cursor. A host that rewrites
/// its history (compaction, branch switch) replaces the content with [`Transcript::replace`]
/// or starts a new `Transcript`, and tells the advisor with a `Rewrite`.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    content: Arc<RwLock<Messages>>,
}

/// What a [`Transcript`] holds: its messages and how many times they were replaced.
#[derive(Debug, Default)]
struct Messages {
    /// Bumped by every [`Transcript::replace`], so a [`TranscriptMark`] can tell that the
    /// messages it marked are gone.
    generation: u64,
    messages: Vec<Arc<TranscriptMessage>>,
}

impl Transcript {
    /// An empty transcript.
    pub fn new() -> Self {
        Self::default()
    }

    /// A transcript holding `messages`.
    pub fn from_messages(messages: impl IntoIterator<Item = TranscriptMessage>) -> Self {
        let t = Self::new();
        t.replace(messages);
        t
    }

    /// Appends one message.
    pub fn push(&self, message: TranscriptMessage) {
        self.content.write().messages.push(Arc::new(message));
    }

    /// Appends an already shared message.
    pub fn push_shared(&self, message: Arc<TranscriptMessage>) {
        self.content.write().messages.push(message);
    }

    /// Replaces the whole content (a host-side rewrite).
    pub fn replace(&self, messages: impl IntoIterator<Item = TranscriptMessage>) {
        let new: Vec<Arc<TranscriptMessage>> = messages.into_iter().map(Arc::new).collect();
        let mut content = self.content.write();
        content.messages = new;
        content.generation += 1;
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.content.read().messages.len()
    }

    /// True when there are no messages.
    pub fn is_empty(&self) -> bool {
        self.content.read().messages.is_empty()
    }

    /// The message at `index`, if any.
    pub fn get(&self, index: usize) -> Option<Arc<TranscriptMessage>> {
        self.content.read().messages.get(index).cloned()
    }

    /// The messages from `start` to the end (O(returned length)).
    pub fn tail(&self, start: usize) -> Vec<Arc<TranscriptMessage>> {
        let guard = self.content.read();
        guard
            .messages
            .get(start..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }

    /// A copy of every message handle.
    pub fn snapshot(&self) -> Vec<Arc<TranscriptMessage>> {
        self.content.read().messages.clone()
    }

    /// The transcript as it stands now, to be read later (O(1), nothing copied): what a turn
    /// end hands over.
    pub fn mark(&self) -> TranscriptMark {
        let content = self.content.read();
        TranscriptMark {
            transcript: self.clone(),
            len: content.messages.len(),
            generation: content.generation,
        }
    }
}

/// A [`Transcript`] as it stood at one moment: its first `len` messages, before any later
/// [`Transcript::replace`]. Taking one is O(1) and copies nothing; reading it later sees
/// exactly those messages, even after the host has appended more, and nothing once the
/// host has replaced the content (a rewrite the host announces on its own, R1).
#[derive(Debug, Clone)]
pub struct TranscriptMark {
    transcript: Transcript,
    len: usize,
    generation: u64,
}

impl TranscriptMark {
    /// The transcript the mark is on (live: it may have grown or been replaced since).
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// How many messages the transcript had when marked.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the transcript was empty when marked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Runs `read` over the marked messages, or answers `None` when the content was
    /// replaced since the mark was taken.
    pub fn read<R>(&self, read: impl FnOnce(&[Arc<TranscriptMessage>]) -> R) -> Option<R> {
        let content = self.transcript.content.read();
        if content.generation != self.generation {
            return None;
        }
        content.messages.get(..self.len).map(read)
    }

    /// The last marked message, if the mark is not empty and still current.
    pub fn last(&self) -> Option<Arc<TranscriptMessage>> {
        self.read(|messages| messages.last().cloned()).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_known_role() {
        let cases = [
            (json!({"role":"user","content":"hi"}), "user"),
            (
                json!({"role":"developer","content":[{"type":"text","text":"x"}]}),
                "developer",
            ),
            (
                json!({"role":"assistant","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"t"},{"type":"redactedThinking","data":"x"},{"type":"toolCall","id":"1","name":"read","arguments":{"path":"a"}}],"stopReason":"toolUse"}),
                "assistant",
            ),
            (
                json!({"role":"toolResult","toolCallId":"1","toolName":"read","content":[{"type":"text","text":"ok"}],"isError":false}),
                "toolResult",
            ),
            (
                json!({"role":"bashExecution","command":"ls","output":"a","exitCode":0,"cancelled":false,"truncated":false}),
                "bashExecution",
            ),
            (
                json!({"role":"custom","customType":"advisor","content":"x","display":true}),
                "custom",
            ),
            (
                json!({"role":"branchSummary","summary":"s","fromId":"abc"}),
                "branchSummary",
            ),
            (
                json!({"role":"compactionSummary","summary":"s","tokensBefore":5}),
                "compactionSummary",
            ),
        ];
        for (value, role) in cases {
            let m: TranscriptMessage = serde_json::from_value(value).unwrap();
            assert_eq!(m.role(), role);
            assert!(
                !matches!(m, TranscriptMessage::Unknown { .. }),
                "{role} parsed as unknown"
            );
        }
    }

    #[test]
    fn unknown_role_and_block_are_kept_opaque() {
        let m: TranscriptMessage =
            serde_json::from_value(json!({"role":"hologram","x":1})).unwrap();
        assert_eq!(m.role(), "hologram");
        assert!(matches!(m, TranscriptMessage::Unknown { .. }));
        let m: TranscriptMessage = serde_json::from_value(
            json!({"role":"assistant","content":[{"type":"sparkle","v":2}]}),
        )
        .unwrap();
        match m {
            TranscriptMessage::Assistant(a) => {
                assert!(matches!(a.content[0], AssistantBlock::Unknown(_)))
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn execution_accepts_null_exit_code() {
        let m: TranscriptMessage = serde_json::from_value(
            json!({"role":"bashExecution","command":"sleep","output":"","exitCode":null,"cancelled":true}),
        )
        .unwrap();
        match m {
            TranscriptMessage::BashExecution(e) => {
                assert!(e.cancelled);
                assert_eq!(e.exit_code, None);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn transcript_tail_is_after_cursor() {
        let t =
            Transcript::from_messages([TranscriptMessage::user("a"), TranscriptMessage::user("b")]);
        t.push(TranscriptMessage::user("c"));
        assert_eq!(t.len(), 3);
        assert_eq!(t.tail(2).len(), 1);
        assert_eq!(t.tail(5).len(), 0);
    }

    #[test]
    fn a4_a_mark_reads_the_transcript_as_it_stood_and_nothing_once_replaced() {
        let t = Transcript::from_messages([TranscriptMessage::user("one")]);
        let mark = t.mark();
        t.push(TranscriptMessage::user("two"));
        assert_eq!(mark.len(), 1);
        assert_eq!(
            mark.read(<[_]>::len),
            Some(1),
            "later messages are not in it"
        );
        assert_eq!(
            mark.last().as_deref(),
            Some(&TranscriptMessage::user("one"))
        );
        assert_eq!(t.mark().len(), 2);
        t.replace([TranscriptMessage::user("one"), TranscriptMessage::user("2")]);
        assert_eq!(
            mark.read(<[_]>::len),
            None,
            "replaced: the marked messages are gone"
        );
        assert_eq!(mark.last(), None);
        assert_eq!(mark.transcript().len(), 2, "the transcript itself is live");
        assert!(Transcript::new().mark().is_empty());
    }
}
