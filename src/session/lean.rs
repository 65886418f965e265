//! The fast way to read one entry line (SPEC L1): straight from the line's bytes into the
//! typed transcript, with no intermediate `serde_json::Value` tree, names and kinds borrowed
//! from the line, and containers sized to what they hold.
//!
//! It covers the shapes pi and oh-my-pi write: a message object whose first key is `role`,
//! of a known role, with blocks of known types and fields of the expected types. Anything
//! else — an unknown role or block type, a field of the wrong shape, a duplicate key, a
//! non-object where an object is expected — makes it give up, and the caller reads the line
//! the general way ([`super::reader`]'s `RawEntry` and the transcript's own `Deserialize`),
//! which decides what such a line means. So this path only ever answers where the general
//! one would answer the same, and every diagnostic comes from the general one.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::domain::transcript::{
    AssistantBlock, AssistantMessage, BranchSummaryMessage, CompactionSummaryMessage, Content,
    ContentBlock, CustomMessage, ExecutionMessage, MessageUsage, RawJson, ToolResultMessage,
    TranscriptMessage, UsageCount, UserMessage,
};

/// The entry fields the reader uses, however they were read.
#[derive(Debug, PartialEq)]
pub(super) struct LeanEntry<'a> {
    /// The entry's `type` (always present: an entry without one is left to the general way).
    pub(super) kind: Cow<'a, str>,
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) message: Option<TranscriptMessage>,
    pub(super) summary: Option<String>,
    pub(super) first_kept_entry_id: Option<String>,
    pub(super) first_kept_entry_index: Option<u64>,
    pub(super) tokens_before: Option<u64>,
    pub(super) from_id: Option<String>,
    pub(super) custom_type: Option<String>,
    pub(super) content: Option<Content>,
    pub(super) display: Option<bool>,
    pub(super) details: Option<RawJson>,
    pub(super) attribution: Option<String>,
}

/// Reads one entry line the fast way through serde's visitors; `None` when the line is to
/// be read the general way (a line that is not UTF-8 included). The line is checked as
/// UTF-8 once, in one go, rather than string by string as serde_json does with bytes. (The
/// commonest lines are read by hand before this is asked: [`super::direct`].)
pub(super) fn parse_entry(bytes: &[u8]) -> Option<LeanEntry<'_>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let Obj(fields) =
        serde_json::from_str::<Obj<EntryFields<'_, FastMessage, FastContent, LeanRaw>>>(text)
            .ok()?;
    fields.into_entry(|m| m.0, |c| c.0, |v| v.0)
}

/// The fields of one entry line the reader uses (everything else is ignored unparsed), with
/// the message, content and details read as `M`, `C` and `V`: the transcript's own types
/// the general way, the fast way's types here.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EntryFields<'a, M, C, V> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    // An absent `Option` reads as `None` (`default` would ask `M: Default`).
    message: Option<M>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    first_kept_entry_id: Option<String>,
    #[serde(default)]
    first_kept_entry_index: Option<u64>,
    #[serde(default)]
    tokens_before: Option<u64>,
    #[serde(default)]
    from_id: Option<String>,
    #[serde(default)]
    custom_type: Option<String>,
    content: Option<C>,
    #[serde(default)]
    display: Option<bool>,
    details: Option<V>,
    #[serde(default)]
    attribution: Option<String>,
}

impl<'a, M, C, V> EntryFields<'a, M, C, V> {
    /// The entry, its message, content and details turned into the transcript's types;
    /// `None` without a `type`.
    pub(super) fn into_entry(
        self,
        message: impl FnOnce(M) -> TranscriptMessage,
        content: impl FnOnce(C) -> Content,
        details: impl FnOnce(V) -> RawJson,
    ) -> Option<LeanEntry<'a>> {
        Some(LeanEntry {
            kind: self.kind?.0,
            id: self.id.map(|t| t.0),
            message: self.message.map(message),
            summary: self.summary,
            first_kept_entry_id: self.first_kept_entry_id,
            first_kept_entry_index: self.first_kept_entry_index,
            tokens_before: self.tokens_before,
            from_id: self.from_id,
            custom_type: self.custom_type,
            content: self.content.map(content),
            display: self.display,
            details: self.details.map(details),
            attribution: self.attribution,
        })
    }
}

/// A string borrowed from the line when it has no escapes.
#[derive(Deserialize)]
#[serde(transparent)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// A JSON object read into `T`; anything else (serde would read a struct from an array
/// too) is refused.
struct Obj<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjVisitor<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer
            .deserialize_map(ObjVisitor(PhantomData))
            .map(Obj)
    }
}

/// Whether a field was present at all (whatever its value, `null` included): a second
/// `role` key makes the fast way give up, since the general way reads the last one.
#[derive(Default)]
struct Seen(bool);

impl<'de> Deserialize<'de> for Seen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Seen(true))
    }
}

/// Refuses a view that saw a second `role`.
fn once<E: de::Error>(role: &Seen) -> Result<(), E> {
    if role.0 {
        Err(E::custom("duplicate role"))
    } else {
        Ok(())
    }
}

/// A message of a known role, its `role` first.
struct FastMessage(TranscriptMessage);

impl<'de> Deserialize<'de> for FastMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = FastMessage;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastMessage, A::Error> {
        match map.next_key::<Role>()? {
            Some(Role::Key) => {}
            _ => return Err(de::Error::custom("role is not the first key")),
        }
        let rest = |map| MapAccessDeserializer::new(map);
        let message = match map.next_value::<Role>()? {
            Role::User => {
                TranscriptMessage::User(UserView::deserialize(rest(map))?.into_message()?)
            }
            Role::Developer => {
                TranscriptMessage::Developer(UserView::deserialize(rest(map))?.into_message()?)
            }
            Role::Assistant => {
                TranscriptMessage::Assistant(AssistantView::deserialize(rest(map))?.into_message()?)
            }
            Role::ToolResult => TranscriptMessage::ToolResult(
                ToolResultView::deserialize(rest(map))?.into_message()?,
            ),
            Role::BashExecution => TranscriptMessage::BashExecution(
                ExecutionView::deserialize(rest(map))?.into_message()?,
            ),
            Role::PythonExecution => TranscriptMessage::PythonExecution(
                ExecutionView::deserialize(rest(map))?.into_message()?,
            ),
            Role::Custom => {
                TranscriptMessage::Custom(CustomView::deserialize(rest(map))?.into_message()?)
            }
            Role::BranchSummary => TranscriptMessage::BranchSummary(
                BranchSummaryView::deserialize(rest(map))?.into_message()?,
            ),
            Role::CompactionSummary => TranscriptMessage::CompactionSummary(
                CompactionSummaryView::deserialize(rest(map))?.into_message()?,
            ),
            Role::Key | Role::Other => {
                return Err(de::Error::custom("role left to the general way"))
            }
        };
        Ok(FastMessage(message))
    }
}

/// A message's first key (`Key` when it is `role`) or its role, told apart as it is read
/// (no string kept); `Other` for any other string.
enum Role {
    Key,
    User,
    Developer,
    Assistant,
    ToolResult,
    BashExecution,
    PythonExecution,
    Custom,
    BranchSummary,
    CompactionSummary,
    Other,
}

impl Named for Role {
    const WHAT: &'static str = "a role";
    fn named(name: &str) -> Self {
        match name {
            "role" => Role::Key,
            "user" => Role::User,
            "developer" => Role::Developer,
            "assistant" => Role::Assistant,
            "toolResult" => Role::ToolResult,
            "bashExecution" => Role::BashExecution,
            "pythonExecution" => Role::PythonExecution,
            "custom" => Role::Custom,
            "branchSummary" => Role::BranchSummary,
            "compactionSummary" => Role::CompactionSummary,
            _ => Role::Other,
        }
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(NamedVisitor(PhantomData))
    }
}

/// A string told apart as it is read, with no string kept: a role, a block type.
pub(super) trait Named {
    /// What the string names (for serde's messages).
    const WHAT: &'static str;
    /// The value `name` stands for.
    fn named(name: &str) -> Self;
}

struct NamedVisitor<T>(PhantomData<T>);

impl<T: Named> Visitor<'_> for NamedVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::WHAT)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Ok(T::named(v))
    }
}

/// [`UserMessage`]'s fields.
#[derive(Deserialize)]
struct UserView {
    #[serde(default)]
    role: Seen,
    #[serde(default)]
    content: Option<FastContent>,
}

impl UserView {
    fn into_message<E: de::Error>(self) -> Result<UserMessage, E> {
        once(&self.role)?;
        Ok(UserMessage {
            content: self.content.map(|c| c.0).unwrap_or_default(),
        })
    }
}

/// [`AssistantMessage`]'s fields.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AssistantView {
    #[serde(default)]
    role: Seen,
    #[serde(default)]
    content: AssistantBlocks,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<LeanUsage>,
    #[serde(default)]
    timestamp: Option<serde_json::Value>,
}

impl AssistantView {
    fn into_message<E: de::Error>(self) -> Result<AssistantMessage, E> {
        once(&self.role)?;
        let mut message = AssistantMessage::new(self.content.0, self.stop_reason);
        message.usage = self.usage.and_then(|u| u.0);
        message.timestamp = self.timestamp.and_then(|v| v.as_u64());
        Ok(message)
    }
}

/// A visitor's answer of "none" for an array (read through), a boolean, a string or `null`.
macro_rules! none_for_other_values {
    ($lean:ident) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$lean, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($lean(None))
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<$lean, E> {
            Ok($lean(None))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<$lean, E> {
            Ok($lean(None))
        }
        fn visit_unit<E: de::Error>(self) -> Result<$lean, E> {
            Ok($lean(None))
        }
    };
}

/// An assistant message's `usage`, read as [`MessageUsage::from_value`] reads its tree,
/// without building one (a real session has one per assistant message): the four counts
/// and the cost, the last of a key written twice, everything else skipped unread.
struct LeanUsage(Option<MessageUsage>);

impl<'de> Deserialize<'de> for LeanUsage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct UsageVisitor;
        impl<'de> Visitor<'de> for UsageVisitor {
            type Value = LeanUsage;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a usage object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LeanUsage, A::Error> {
                let mut counts = [UsageCount::Absent; 4];
                let mut cost: Option<f64> = None;
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    let slot = match &*key.0 {
                        "input" => 0,
                        "output" => 1,
                        "cacheRead" => 2,
                        "cacheWrite" => 3,
                        "cost" => {
                            cost = map.next_value::<LeanCost>()?.0;
                            continue;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    counts[slot] = UsageCount::of(&map.next_value::<serde_json::Value>()?);
                }
                Ok(LeanUsage(MessageUsage::from_fields(counts, cost)))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<LeanUsage, E> {
                Ok(LeanUsage(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<LeanUsage, E> {
                Ok(LeanUsage(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<LeanUsage, E> {
                Ok(LeanUsage(None))
            }
            none_for_other_values!(LeanUsage);
        }
        deserializer.deserialize_any(UsageVisitor)
    }
}

/// A usage's `cost`: a number, or an object's `total` (as `Value::as_f64` reads them).
struct LeanCost(Option<f64>);

impl<'de> Deserialize<'de> for LeanCost {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CostVisitor;
        impl<'de> Visitor<'de> for CostVisitor {
            type Value = LeanCost;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a cost")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LeanCost, A::Error> {
                let mut total = None;
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    if key.0 == "total" {
                        total = map.next_value::<serde_json::Value>()?.as_f64();
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(LeanCost(total))
            }
            none_for_other_values!(LeanCost);
            // `Value::as_f64` of an integer is the integer cast.
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LeanCost, E> {
                Ok(LeanCost(Some(v as f64)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LeanCost, E> {
                Ok(LeanCost(Some(v as f64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LeanCost, E> {
                Ok(LeanCost(Some(v)))
            }
        }
        deserializer.deserialize_any(CostVisitor)
    }
}

/// [`ToolResultMessage`]'s fields.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolResultView {
    #[serde(default)]
    role: Seen,
    #[serde(default)]
    tool_call_id: String,
    #[serde(default)]
    tool_name: String,
    #[serde(default)]
    content: Option<FastContent>,
    #[serde(default)]
    is_error: bool,
    #[serde(default)]
    details: Option<LeanRaw>,
}

impl ToolResultView {
    fn into_message<E: de::Error>(self) -> Result<ToolResultMessage, E> {
        once(&self.role)?;
        Ok(ToolResultMessage {
            tool_call_id: self.tool_call_id,
            tool_name: self.tool_name,
            content: self.content.map(|c| c.0).unwrap_or_default(),
            is_error: self.is_error,
            details: self.details.map(|v| v.0),
        })
    }
}

/// [`ExecutionMessage`]'s fields.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecutionView {
    #[serde(default)]
    role: Seen,
    #[serde(default, alias = "code")]
    command: String,
    #[serde(default)]
    output: String,
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default)]
    cancelled: bool,
    #[serde(default)]
    truncated: bool,
    #[serde(default)]
    exclude_from_context: bool,
}

impl ExecutionView {
    fn into_message<E: de::Error>(self) -> Result<ExecutionMessage, E> {
        once(&self.role)?;
        Ok(ExecutionMessage {
            command: self.command,
            output: self.output,
            exit_code: self.exit_code,
            cancelled: self.cancelled,
            truncated: self.truncated,
            exclude_from_context: self.exclude_from_context,
        })
    }
}

/// [`CustomMessage`]'s fields.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CustomView {
    #[serde(default)]
    role: Seen,
    #[serde(default)]
    custom_type: String,
    #[serde(default)]
    content: Option<FastContent>,
    #[serde(default)]
    display: bool,
    #[serde(default)]
    details: Option<LeanRaw>,
    #[serde(default)]
    attribution: Option<String>,
}

impl CustomView {
    fn into_message<E: de::Error>(self) -> Result<CustomMessage, E> {
        once(&self.role)?;
        Ok(CustomMessage {
            custom_type: self.custom_type,
            content: self.content.map(|c| c.0).unwrap_or_default(),
            display: self.display,
            details: self.details.map(|v| v.0),
            attribution: self.attribution,
        })
    }
}

/// [`BranchSummaryMessage`]'s fields.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BranchSummaryView {
    #[serde(default)]
    role: Seen,
    #[serde(default)]
    summary: String,
    #[serde(default)]
    from_id: String,
}

impl BranchSummaryView {
    fn into_message<E: de::Error>(self) -> Result<BranchSummaryMessage, E> {
        once(&self.role)?;
        Ok(BranchSummaryMessage {
            summary: self.summary,
            from_id: self.from_id,
        })
    }
}

/// [`CompactionSummaryMessage`]'s fields.
#[derive(Deserialize)]
struct CompactionSummaryView {
    #[serde(default)]
    role: Seen,
    #[serde(default)]
    summary: String,
}

impl CompactionSummaryView {
    fn into_message<E: de::Error>(self) -> Result<CompactionSummaryMessage, E> {
        once(&self.role)?;
        Ok(CompactionSummaryMessage {
            summary: self.summary,
        })
    }
}

/// An assistant message's blocks: an array of known blocks (a missing field is empty, as
/// in the general way; `null` is refused there and here).
#[derive(Default)]
struct AssistantBlocks(Vec<AssistantBlock>);

impl<'de> Deserialize<'de> for AssistantBlocks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlocksVisitor;
        impl<'de> Visitor<'de> for BlocksVisitor {
            type Value = AssistantBlocks;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of blocks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                collect_exact(seq, |seq| {
                    seq.next_element::<Obj<AssistantBlockFields>>()?
                        .map(|Obj(fields)| fields.into_block())
                        .transpose()
                })
                .map(AssistantBlocks)
            }
        }
        deserializer.deserialize_seq(BlocksVisitor)
    }
}

/// How many elements of an array [`collect_exact`] holds on the stack.
const HELD: usize = 4;

/// The elements `next` reads from `seq`, in a vector of exactly their number: the first
/// [`HELD`] are held on the stack until the array ends, so a short array (the usual one)
/// costs a single allocation of the right size instead of growing and shrinking.
fn collect_exact<S, T, E>(
    mut seq: S,
    mut next: impl FnMut(&mut S) -> Result<Option<T>, E>,
) -> Result<Vec<T>, E> {
    let mut held: [Option<T>; HELD] = [None, None, None, None];
    let mut count = 0;
    while count < HELD {
        match next(&mut seq)? {
            Some(item) => held[count] = Some(item),
            None => break,
        }
        count += 1;
    }
    let more = if count == HELD { next(&mut seq)? } else { None };
    let mut items = Vec::with_capacity(count + usize::from(more.is_some()));
    for slot in &mut held[..count] {
        if let Some(item) = slot.take() {
            items.push(item);
        }
    }
    if let Some(item) = more {
        items.push(item);
        while let Some(item) = next(&mut seq)? {
            items.push(item);
        }
        items.shrink_to_fit();
    }
    Ok(items)
}

/// The fields an assistant block of a known type may use.
#[derive(Deserialize)]
pub(super) struct AssistantBlockFields {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<BlockKind>,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) thinking: Option<String>,
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) arguments: Option<LeanRaw>,
}

impl AssistantBlockFields {
    /// The block, as the general way reads it; an error where it would keep the block
    /// opaque.
    pub(super) fn into_block<E: de::Error>(self) -> Result<AssistantBlock, E> {
        use BlockKind as K;
        Ok(
            match (self.kind, self.text, self.thinking, self.id, self.name) {
                (Some(K::Text), Some(text), ..) => AssistantBlock::Text { text },
                (Some(K::Thinking), _, Some(thinking), ..) => AssistantBlock::Thinking { thinking },
                (Some(K::RedactedThinking), ..) => AssistantBlock::RedactedThinking,
                (Some(K::ToolCall), _, _, Some(id), Some(name)) => AssistantBlock::ToolCall {
                    id,
                    name,
                    arguments: self.arguments.map_or_else(RawJson::null, |v| v.0),
                },
                _ => return Err(E::custom("block left to the general way")),
            },
        )
    }
}

/// A block's `type`, told apart as it is read (no string kept): the types the general
/// way knows, and `Other` for any other string.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum BlockKind {
    Text,
    Thinking,
    RedactedThinking,
    ToolCall,
    Image,
    Other,
}

impl Named for BlockKind {
    const WHAT: &'static str = "a block type";
    fn named(name: &str) -> Self {
        match name {
            "text" => BlockKind::Text,
            "thinking" => BlockKind::Thinking,
            "redactedThinking" | "redacted_thinking" => BlockKind::RedactedThinking,
            "toolCall" => BlockKind::ToolCall,
            "image" => BlockKind::Image,
            _ => BlockKind::Other,
        }
    }
}

impl<'de> Deserialize<'de> for BlockKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(NamedVisitor(PhantomData))
    }
}

/// Message content: a string or an array of text and image blocks.
struct FastContent(Content);

impl<'de> Deserialize<'de> for FastContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = FastContent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(FastContent(Content::Text(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(FastContent(Content::Text(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(FastContent(Content::default()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                collect_exact(seq, |seq| {
                    seq.next_element::<Obj<ContentBlockFields>>()?
                        .map(|Obj(fields)| fields.into_block())
                        .transpose()
                })
                .map(|blocks| FastContent(Content::Blocks(blocks)))
            }
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

/// The fields a content block of a known type may use.
#[derive(Deserialize)]
pub(super) struct ContentBlockFields {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<BlockKind>,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) data: Option<String>,
    #[serde(default, rename = "mimeType")]
    pub(super) mime_type: Option<String>,
    #[serde(default)]
    pub(super) path: Option<String>,
}

impl ContentBlockFields {
    /// The block, as the general way reads it; an error where it would keep the block
    /// opaque.
    pub(super) fn into_block<E: de::Error>(self) -> Result<ContentBlock, E> {
        match (self.kind, self.text) {
            (Some(BlockKind::Text), Some(text)) => Ok(ContentBlock::Text { text }),
            (Some(BlockKind::Image), _) => Ok(ContentBlock::Image {
                data: self.data,
                mime_type: self.mime_type,
                path: self.path,
            }),
            _ => Err(E::custom("block left to the general way")),
        }
    }
}

/// A value only passed along, kept as its JSON text: borrowed from the line while read, and
/// copied as it is when it is already serde_json's compact printing of itself.
pub(super) struct LeanRaw(pub(super) RawJson);

impl<'de> Deserialize<'de> for LeanRaw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(deserializer)?;
        RawJson::from_json_text(raw.get())
            .map(LeanRaw)
            .ok_or_else(|| de::Error::custom("a raw value that does not parse"))
    }
}

/// Reads one entry line the fast way together with its `parentId` (`None` inside when the
/// key is absent or `null`), for the single pass over a version 2/3 file. `None` whenever
/// [`parse_entry`] would answer `None`, and also for a `parentId` that is neither a string
/// nor `null`, or written twice: lines the first pass's own parse refuses.
pub(super) fn parse_entry_with_parent(
    bytes: &[u8],
) -> Option<(LeanEntry<'_>, Option<Cow<'_, str>>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let WithParent(fields, parent) = serde_json::from_str::<
        WithParent<EntryFields<'_, FastMessage, FastContent, LeanRaw>>,
    >(text)
    .ok()?;
    Some((fields.into_entry(|m| m.0, |c| c.0, |v| v.0)?, parent))
}

/// A JSON object read into `T`, its `parentId` key taken out on the way (so `T` never sees
/// it) and kept beside.
struct WithParent<'de, T>(T, Option<Cow<'de, str>>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for WithParent<'de, T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TapVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for TapVisitor<T> {
            type Value = WithParent<'de, T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let mut parent = None;
                let fields = T::deserialize(MapAccessDeserializer::new(ParentTap {
                    map,
                    parent: &mut parent,
                }))?;
                Ok(WithParent(fields, parent.flatten()))
            }
        }
        deserializer.deserialize_map(TapVisitor(PhantomData))
    }
}

/// A map whose `parentId` entry is read into `parent` (present: `Some`) and hidden.
struct ParentTap<'p, 'de, A> {
    map: A,
    parent: &'p mut Option<Option<Cow<'de, str>>>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for ParentTap<'_, 'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        while let Some(Text(key)) = self.map.next_key::<Text<'de>>()? {
            if key != "parentId" {
                return seed
                    .deserialize(de::value::CowStrDeserializer::<A::Error>::new(key))
                    .map(Some);
            }
            if self.parent.is_some() {
                return Err(de::Error::custom("duplicate parentId"));
            }
            let value: Option<Text<'de>> = self.map.next_value()?;
            *self.parent = Some(value.map(|t| t.0));
        }
        Ok(None)
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The general way: what the reader's `RawEntry` reads from a message.
    fn general(message: &Value) -> TranscriptMessage {
        serde_json::from_value(message.clone()).expect("a message")
    }

    fn lean(message: &Value) -> Option<TranscriptMessage> {
        let line = json!({"type": "message", "id": "1", "message": message}).to_string();
        parse_entry(line.as_bytes()).and_then(|e| e.message)
    }

    #[test]
    fn l1_known_shapes_read_the_fast_way_equal_the_general_way() {
        let messages = [
            json!({"role":"user","content":"hi"}),
            json!({"role":"user","content":null}),
            json!({"role":"user"}),
            json!({"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"AAA","mimeType":"image/png"},{"type":"image"}]}),
            // CA24: an image carrying the file it came from.
            json!({"role":"user","content":[{"type":"image","data":"AAA","mimeType":"image/png","path":"/tmp/a.png"}]}),
            json!({"role":"developer","content":[{"type":"text","text":"x\n\"y\""}]}),
            json!({"role":"assistant","content":[{"type":"thinking","thinking":"t","thinkingSignature":"s"},{"type":"text","text":"a"},{"type":"redactedThinking","data":"x"},{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"a","z":[1,2.5,-3,null,true],"a":{"b":{}}}}],"stopReason":"toolUse","usage":{"input":1}}),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c2","name":"x","arguments":null}],"stopReason":null}),
            // SP5: usage in every shape the tree reading accepts.
            json!({"role":"assistant","usage":{"input":3,"output":4,"cacheRead":5,"cacheWrite":6,"totalTokens":18,"cost":{"input":0.1,"output":0.2,"total":0.3}},"timestamp":17}),
            json!({"role":"assistant","usage":{"output":2,"cost":1}}),
            json!({"role":"assistant","usage":{"input":2,"cost":-1.5}}),
            json!({"role":"assistant","usage":{"input":2.0,"output":-1,"cacheRead":"7","cost":"1"}}),
            json!({"role":"assistant","usage":{"input":1,"cost":{"total":{"x":1}}}}),
            json!({"role":"assistant","usage":{"input":1,"cost":[1,{"total":2}]}}),
            json!({"role":"assistant","usage":{"input":18446744073709551615_u64,"cost":{"total":2}}}),
            json!({"role":"assistant","usage":{"cacheRead":1,"cost":0}}),
            json!({"role":"assistant","usage":5}),
            json!({"role":"assistant","usage":[{"input":1}]}),
            json!({"role":"assistant","usage":"x"}),
            json!({"role":"assistant","usage":null,"timestamp":"t"}),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c3","name":"x"}]}),
            json!({"role":"assistant"}),
            json!({"role":"toolResult","toolCallId":"c1","toolName":"edit","content":[{"type":"text","text":"ok"}],"isError":false,"details":{"diff":"-a\n+b"}}),
            json!({"role":"toolResult","toolCallId":"c1","toolName":"bash","content":"plain","isError":true}),
            json!({"role":"bashExecution","command":"ls","output":"a","exitCode":0,"cancelled":false,"truncated":false}),
            json!({"role":"pythonExecution","code":"print(1)","output":"1","exitCode":null,"excludeFromContext":true}),
            json!({"role":"custom","customType":"advisor","content":"x","display":true,"details":{"k":[1]}}),
            json!({"role":"branchSummary","summary":"s","fromId":"abc"}),
            json!({"role":"compactionSummary","summary":"s","tokensBefore":5}),
        ];
        for message in messages {
            let fast = lean(&message);
            assert_eq!(fast.as_ref(), Some(&general(&message)), "{message}");
        }
    }

    #[test]
    fn l1_arrays_of_any_length_read_into_vectors_of_exactly_their_length() {
        for len in 0..12usize {
            let mut source = 0..len;
            let items = collect_exact(&mut source, |s| Ok::<_, ()>(s.next())).expect("items");
            assert_eq!(items, (0..len).collect::<Vec<_>>());
            assert_eq!(items.capacity(), len);
            // An error at any element is passed on.
            for fail_at in 0..len {
                let mut source = 0..len;
                let read = collect_exact(&mut source, |s| match s.next() {
                    Some(i) if i == fail_at => Err(i),
                    other => Ok(other),
                });
                assert_eq!(read, Err(fail_at));
            }
        }
        // Blocks read the fast way equal the general way, whatever their number.
        for len in [0, 1, 3, 4, 5, 9] {
            let blocks: Vec<Value> = (0..len)
                .map(|i| json!({"type": "text", "text": format!("t{i}")}))
                .collect();
            for message in [
                json!({"role": "user", "content": blocks}),
                json!({"role": "assistant", "content": blocks}),
            ] {
                let fast = lean(&message).expect("read the fast way");
                assert_eq!(fast, general(&message), "{message}");
                let blocks = match &fast {
                    TranscriptMessage::User(u) => match &u.content {
                        Content::Blocks(b) => (b.len(), b.capacity()),
                        other => panic!("not blocks: {other:?}"),
                    },
                    TranscriptMessage::Assistant(a) => (a.content.len(), a.content.capacity()),
                    other => panic!("unexpected: {other:?}"),
                };
                assert_eq!(blocks, (len, len));
            }
        }
    }

    #[test]
    fn l1_block_types_read_as_the_general_way_reads_them_escaped_or_odd() {
        // Lines as written (escapes kept): the fast way's answer, when it gives one, is
        // the general way's.
        let messages = [
            r#"{"role":"assistant","content":[{"type":"te\u0078t","text":"a"},{"type":"redacted_thinking"},{"type":"tool\u0043all","id":"1","name":"n","arguments":{"a":"\u00e9"}}]}"#,
            r#"{"role":"user","content":[{"type":"imag\u0065","path":"p"},{"text":"no type","type":"text"}]}"#,
            r#"{"role":"toolResult","content":[{"type":"text","text":"a","type":"text"}]}"#,
            r#"{"role":"user","content":[{"type":null,"text":"a"}]}"#,
            r#"{"role":"user","content":[{"type":7,"text":"a"}]}"#,
            r#"{"role":"user","content":[{"type":"Text","text":"a"}]}"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"t","type":"text"}]}"#,
            r#"{"role":"assistant","content":[{"type":["text"],"text":"a"}]}"#,
        ];
        let mut fast_count = 0;
        for message in messages {
            let line = format!(r#"{{"type":"message","id":"1","message":{message}}}"#);
            let general: TranscriptMessage = serde_json::from_str(message).expect("a message");
            if let Some(fast) = parse_entry(line.as_bytes()).and_then(|e| e.message) {
                assert_eq!(fast, general, "{message}");
                fast_count += 1;
            }
        }
        // The first two are the fast way's; the rest (a key twice, a type that is not a
        // known string) are left to the general way.
        assert_eq!(fast_count, 2);
    }

    #[test]
    fn l1_roles_read_as_the_general_way_reads_them_escaped_or_odd() {
        // (message as written, whether the fast way reads it)
        let messages = [
            (r#"{"r\u006fle":"us\u0065r","content":"x"}"#, true),
            (r#"{"role":"compactionSummary","summary":"s"}"#, true),
            (r#"{"role":"role","content":"x"}"#, false),
            (r#"{"role":"User","content":"x"}"#, false),
            (r#"{"role":null,"content":"x"}"#, false),
            (r#"{"role":["user"],"content":"x"}"#, false),
            (r#"{"user":"role","content":"x"}"#, false),
        ];
        for (message, fast_way) in messages {
            let line = format!(r#"{{"type":"message","id":"1","message":{message}}}"#);
            let general: TranscriptMessage = serde_json::from_str(message).expect("a message");
            let fast = parse_entry(line.as_bytes()).and_then(|e| e.message);
            assert_eq!(fast.is_some(), fast_way, "{message}");
            if let Some(fast) = fast {
                assert_eq!(fast, general, "{message}");
            }
        }
    }

    #[test]
    fn sp5_a_usage_key_written_twice_reads_as_the_general_way_reads_it() {
        let message = r#"{"role":"assistant","content":[],"usage":{"input":1,"output":2,"input":7,"cost":{"total":1,"total":2.5},"cacheRead":3,"cacheRead":null}}"#;
        let line = format!(r#"{{"type":"message","id":"1","message":{message}}}"#);
        let fast = parse_entry(line.as_bytes()).and_then(|e| e.message);
        let general: TranscriptMessage = serde_json::from_str(message).expect("a message");
        assert_eq!(fast.as_ref(), Some(&general));
        match general {
            TranscriptMessage::Assistant(a) => {
                let usage = a.usage.expect("usage");
                assert_eq!(
                    (usage.input, usage.cache_read, usage.cost),
                    (7, 0, Some(2.5))
                );
            }
            other => panic!("not an assistant message: {other:?}"),
        }
    }

    #[test]
    fn l1_every_other_shape_is_left_to_the_general_way() {
        let messages = [
            json!({"content":"no role first","role":"user"}),
            json!({"role":"hologram","x":1}),
            json!({"role":"hookMessage","customType":"r","content":"x"}),
            json!({"role":"user","content":42}),
            json!({"role":"user","content":[{"type":"sparkle"}]}),
            json!({"role":"user","content":["bare string block"]}),
            json!({"role":"user","content":[{"type":"text","text":7}]}),
            json!({"role":"user","content":[{"type":"image","data":7}]}),
            json!({"role":"assistant","content":null}),
            json!({"role":"assistant","content":[{"type":"text"}]}),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"1"}]}),
            json!({"role":"assistant","content":[["text","a"]]}),
            json!({"role":"assistant","content":[],"stopReason":3}),
            json!({"role":"toolResult","toolCallId":null}),
            json!({"role":"bashExecution","command":"a","code":"b"}),
            json!({"role":"bashExecution","exitCode":1.5}),
        ];
        for message in messages {
            assert_eq!(lean(&message), None, "{message}");
        }
        // A second `role` (serde_json's Value keeps the last one), a message that is not
        // an object, an entry that is an array.
        let twice =
            r#"{"type":"message","message":{"role":"user","content":"a","role":"assistant"}}"#;
        assert!(parse_entry(twice.as_bytes()).is_none());
        let twice_null = r#"{"type":"message","message":{"role":"user","role":null}}"#;
        assert!(parse_entry(twice_null.as_bytes()).is_none());
        assert!(parse_entry(br#"{"type":"message","message":["user"]}"#).is_none());
        assert!(parse_entry(br#"["message","1"]"#).is_none());
        assert!(parse_entry(br#"{"id":"1"}"#).is_none());
        assert!(parse_entry(br#"{"type":"message","type":"x"}"#).is_none());
    }
}
