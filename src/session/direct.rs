//! The quickest way to read one entry line (SPEC L1): the entries pi and oh-my-pi write
//! most — a `message` entry holding a user, developer, assistant or tool-result message —
//! read by hand straight from the line's bytes into the transcript's types, with no serde
//! visitor between the bytes and the values.
//!
//! It is the reader's one fast way. It answers only where the general way
//! ([`super::entry`]: serde's derive and the transcript's own `Deserialize`) answers the
//! same, and gives up (`None`) on anything else, leaving the line to the general way: an
//! escaped key, a key it reads written twice, another role, a block of another type,
//! another entry type's own fields (`summary`, `content`, …), a value of another type than
//! expected, a number other than plain digits where a number is read, a string serde would
//! refuse. Values it skips are checked by [`super::skim`]'s grammar scanner, which agrees
//! with serde_json on what it skips; a member of a message it does not use is skipped
//! whatever it holds (SPEC L1), where the general way's tree of the message refuses a number
//! past `f64` or a lone surrogate escape. The tests compare both ways on the recorded
//! sessions, on random mutations of pi's lines (`super::differential`), and a fuzz target
//! (`fuzz/`) does the same on any bytes.

use std::borrow::Cow;

use crate::domain::transcript::{
    AssistantBlock, AssistantMessage, Content, ContentBlock, MessageUsage, RawJson,
    ToolResultMessage, TranscriptMessage, UsageCount, UserMessage,
};

use super::entry::Entry;
use super::skim::{Leading, Scanner};

mod rare;

/// Reads one entry line with its `parentId` (`None` inside when absent or `null`); `None`
/// when the line is to be read the general way.
pub(super) fn entry<'a>(
    bytes: &'a [u8],
    scratch: &mut Scratch,
) -> Option<(Entry<'a>, Option<Cow<'a, str>>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut p = Parser::new(text, scratch);
    p.s.ws();
    p.s.eat(b'{')?;
    let mut keys = EntryKeys::default();
    p.object(|p, key| p.entry_member(&mut keys, key))?;
    p.finish_entry(keys)
}

/// [`entry`] for a line whose leading keys `lead` has read (the first pass took it at
/// them): the type, id and parent are taken from `lead` and the line is read from the
/// member after them. The same answer as [`entry`]'s: those keys are written without
/// whitespace, escapes or control characters, and a second one of them later in the line
/// gives up as it does there.
pub(super) fn entry_after<'a>(
    bytes: &'a [u8],
    lead: &Leading<'a>,
    scratch: &mut Scratch,
) -> Option<(Entry<'a>, Option<Cow<'a, str>>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (kind, id, parent) = lead.in_text(text)?;
    let mut keys = EntryKeys {
        kind: Some(Some(kind)),
        id: Some(Some(id)),
        parent: Some(parent),
        ..EntryKeys::default()
    };
    let mut p = Parser::new(text, scratch);
    p.s.at = lead.end();
    p.members(|p, key| p.entry_member(&mut keys, key), false)?;
    p.finish_entry(keys)
}

/// An entry's keys read so far (the outer `Option`: whether the key was met).
#[derive(Default)]
struct EntryKeys<'a> {
    kind: Option<Option<&'a str>>,
    id: Option<Option<&'a str>>,
    parent: Option<Option<&'a str>>,
    message: Option<TranscriptMessage>,
    // The fields of the other entry types (compaction, branch summary, custom message).
    summary: Option<Option<String>>,
    first_kept_entry_id: Option<Option<String>>,
    first_kept_entry_index: Option<Option<u64>>,
    tokens_before: Option<Option<u64>>,
    from_id: Option<Option<String>>,
    custom_type: Option<Option<String>>,
    content: Option<Option<Content>>,
    display: Option<Option<bool>>,
    details: Option<Option<RawJson>>,
    attribution: Option<Option<String>>,
}

/// Fills `slot` with `value` the first time; `None` (give up) the second, since the general
/// way refuses a field written twice (or, inside a message, reads the last one).
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

/// Buffers the reading of one line leaves empty for the next: a string with escapes, the
/// blocks of an array while it is read. One per file read, handed to [`entry`] for each
/// line, so that reading a line allocates only what it keeps.
#[derive(Default)]
pub(super) struct Scratch {
    text: String,
    blocks: Vec<AssistantBlock>,
    contents: Vec<ContentBlock>,
}

/// The scanner over the line, and the reused buffers.
struct Parser<'a, 'b> {
    s: Scanner<'a>,
    scratch: &'b mut Scratch,
}

impl<'a, 'b> Parser<'a, 'b> {
    fn new(text: &'a str, scratch: &'b mut Scratch) -> Self {
        Parser {
            s: Scanner::new(text),
            scratch,
        }
    }

    /// One member of an entry object into `keys`, the scanner at its value.
    fn entry_member(&mut self, keys: &mut EntryKeys<'a>, key: &str) -> Option<()> {
        match key {
            "type" => once(&mut keys.kind, self.s.string_or_null()?),
            "id" => once(&mut keys.id, self.s.string_or_null()?),
            "parentId" => once(&mut keys.parent, self.s.string_or_null()?),
            "message" => once(&mut keys.message, self.message()?),
            "summary" => once(&mut keys.summary, self.string_or_null()?),
            "firstKeptEntryId" => once(&mut keys.first_kept_entry_id, self.string_or_null()?),
            "firstKeptEntryIndex" => once(&mut keys.first_kept_entry_index, self.count()?),
            "tokensBefore" => once(&mut keys.tokens_before, self.count()?),
            "fromId" => once(&mut keys.from_id, self.string_or_null()?),
            "customType" => once(&mut keys.custom_type, self.string_or_null()?),
            "content" => once(&mut keys.content, self.content()?),
            "display" => once(&mut keys.display, self.boolean_or_null()?),
            "details" => once(&mut keys.details, self.raw()?),
            "attribution" => once(&mut keys.attribution, self.string_or_null()?),
            _ => self.s.value(),
        }
    }

    /// The entry of `keys`, once nothing but whitespace is left of the line.
    fn finish_entry(mut self, keys: EntryKeys<'a>) -> Option<(Entry<'a>, Option<Cow<'a, str>>)> {
        self.s.ws();
        if !self.s.at_end() {
            return None;
        }
        let entry = Entry {
            kind: Cow::Borrowed(keys.kind.flatten()?),
            id: keys.id.flatten().map(Cow::Borrowed),
            message: keys.message,
            summary: keys.summary.flatten(),
            first_kept_entry_id: keys.first_kept_entry_id.flatten(),
            first_kept_entry_index: keys.first_kept_entry_index.flatten(),
            tokens_before: keys.tokens_before.flatten(),
            from_id: keys.from_id.flatten(),
            custom_type: keys.custom_type.flatten(),
            content: keys.content.flatten(),
            display: keys.display.flatten(),
            details: keys.details.flatten(),
            attribution: keys.attribution.flatten(),
        };
        Some((entry, keys.parent.flatten().map(Cow::Borrowed)))
    }

    /// An object's members, its `{` eaten: `member` is called with each key, the scanner at
    /// the start of its value, and must read the value.
    fn object(&mut self, member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.s.ws();
        if self.s.peek()? == b'}' {
            self.s.at += 1;
            return Some(());
        }
        self.members(member, true)
    }

    /// The members of an object from the next key on (`first`), or from the separator after
    /// a member already read, to the closing `}`.
    fn members(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
        mut first: bool,
    ) -> Option<()> {
        loop {
            if !first {
                self.s.ws();
                match self.s.next()? {
                    b',' => {}
                    b'}' => return Some(()),
                    _ => return None,
                }
            }
            first = false;
            self.s.ws();
            self.s.eat(b'"')?;
            let key = self.s.plain_string()?;
            self.s.ws();
            self.s.eat(b':')?;
            self.s.ws();
            member(self, key)?;
        }
    }

    /// An array's elements, its `[` eaten, each read by `element` from its first byte, in a
    /// vector of exactly their number: gathered in the parser's reused vector `held`, then
    /// moved out in one allocation of the right size.
    fn array<T>(
        &mut self,
        held: fn(&mut Self) -> &mut Vec<T>,
        element: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        let mut items = std::mem::take(held(self));
        items.clear();
        let read = self.elements(&mut items, element);
        let exact = read.map(|()| {
            let mut exact = Vec::with_capacity(items.len());
            exact.append(&mut items);
            exact
        });
        *held(self) = items;
        exact
    }

    /// The elements of [`Parser::array`], appended to `items`.
    fn elements<T>(
        &mut self,
        items: &mut Vec<T>,
        mut element: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<()> {
        self.s.ws();
        if self.s.peek()? == b']' {
            self.s.at += 1;
            return Some(());
        }
        loop {
            items.push(element(self)?);
            self.s.ws();
            match self.s.next()? {
                b',' => self.s.ws(),
                b']' => return Some(()),
                _ => return None,
            }
        }
    }

    /// A string, its opening quote not yet eaten, with its escapes decoded as serde_json
    /// decodes them (a surrogate escape that serde_json refuses gives up).
    fn string(&mut self) -> Option<String> {
        self.s.eat(b'"')?;
        let start = self.s.at;
        self.s.run();
        if self.s.peek()? == b'"' {
            let text = self.s.since(start)?.to_owned();
            self.s.at += 1;
            return Some(text);
        }
        let mut out = std::mem::take(&mut self.scratch.text);
        out.clear();
        out.push_str(self.s.since(start)?);
        let decoded = self
            .escaped_rest(&mut out)
            .map(|()| out.as_str().to_owned());
        self.scratch.text = out;
        decoded
    }

    /// The rest of a string from an escape or a control character on, appended to `out`.
    fn escaped_rest(&mut self, out: &mut String) -> Option<()> {
        loop {
            match self.s.next()? {
                b'"' => return Some(()),
                b'\\' => out.push(self.escape()?),
                // A control character: serde_json refuses the string.
                _ => return None,
            }
            let start = self.s.at;
            self.s.run();
            out.push_str(self.s.since(start)?);
        }
    }

    /// The character of an escape, its backslash eaten.
    fn escape(&mut self) -> Option<char> {
        Some(match self.s.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        // A leading surrogate must be followed by an escaped trailing one.
                        self.s.eat(b'\\')?;
                        self.s.eat(b'u')?;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(unit)?,
                }
            }
            _ => return None,
        })
    }

    /// Four hex digits.
    fn hex4(&mut self) -> Option<u32> {
        let mut value = 0;
        for _ in 0..4 {
            let digit = char::from(self.s.next()?).to_digit(16)?;
            value = value * 16 + digit;
        }
        Some(value)
    }

    /// A string (`Some`) or `null` (`None`); any other value gives up.
    fn string_or_null(&mut self) -> Option<Option<String>> {
        if self.s.peek()? == b'n' {
            self.s.at += 1;
            return self.s.literal(b"ull").map(|()| None);
        }
        self.string().map(Some)
    }

    /// `true` or `false` (`Some`), or `null` (`None`).
    fn boolean_or_null(&mut self) -> Option<Option<bool>> {
        if self.s.peek()? == b'n' {
            self.s.at += 1;
            return self.s.literal(b"ull").map(|()| None);
        }
        self.boolean().map(Some)
    }

    /// `true` or `false`.
    fn boolean(&mut self) -> Option<bool> {
        match self.s.next()? {
            b't' => self.s.literal(b"rue").map(|()| true),
            b'f' => self.s.literal(b"alse").map(|()| false),
            _ => None,
        }
    }

    /// A number read as `Value::as_u64` reads it: plain digits that fit (`Some`) or `null`
    /// (`None`); any other value gives up.
    fn count(&mut self) -> Option<Option<u64>> {
        if self.s.peek()? == b'n' {
            self.s.at += 1;
            return self.s.literal(b"ull").map(|()| None);
        }
        let start = self.s.at;
        self.s.number()?;
        let digits = self.s.since(start)?;
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok().map(Some)
    }

    /// A number as serde_json reads it into an `f64` (the same parse: serde_json's own).
    fn float(&mut self) -> Option<f64> {
        let start = self.s.at;
        self.s.number()?;
        serde_json::from_str(self.s.since(start)?).ok()
    }

    /// A value kept as its JSON text (`null` is none), as [`RawJson::from_json_text`] keeps
    /// it: its compact printing, the same as the general way's tree of it.
    fn raw(&mut self) -> Option<Option<RawJson>> {
        let start = self.s.at;
        if self.s.peek()? == b'n' {
            self.s.at += 1;
            return self.s.literal(b"ull").map(|()| None);
        }
        self.s.value()?;
        RawJson::from_json_text(self.s.since(start)?).map(Some)
    }

    /// A block's `type`: a string without escapes, or `null`.
    fn kind(&mut self) -> Option<Option<BlockKind>> {
        Some(self.s.string_or_null()?.map(BlockKind::of))
    }

    /// A message object whose first key is `role`, of a known role (the rarer ones: `rare`).
    fn message(&mut self) -> Option<TranscriptMessage> {
        self.s.eat(b'{')?;
        self.s.ws();
        self.s.eat(b'"')?;
        if self.s.plain_string()? != "role" {
            return None;
        }
        self.s.ws();
        self.s.eat(b':')?;
        self.s.ws();
        self.s.eat(b'"')?;
        Some(match self.s.plain_string()? {
            "user" => TranscriptMessage::User(self.user()?),
            "developer" => TranscriptMessage::Developer(self.user()?),
            "assistant" => TranscriptMessage::Assistant(self.assistant()?),
            "toolResult" => TranscriptMessage::ToolResult(self.tool_result()?),
            "bashExecution" => TranscriptMessage::BashExecution(self.execution()?),
            "pythonExecution" => TranscriptMessage::PythonExecution(self.execution()?),
            "custom" => TranscriptMessage::Custom(self.custom()?),
            "branchSummary" => TranscriptMessage::BranchSummary(self.branch_summary()?),
            "compactionSummary" => TranscriptMessage::CompactionSummary(self.compaction_summary()?),
            _ => return None,
        })
    }

    /// The rest of a user or developer message.
    fn user(&mut self) -> Option<UserMessage> {
        let mut content: Option<Option<Content>> = None;
        self.members(
            |p, key| match key {
                "role" => None,
                "content" => once(&mut content, p.content()?),
                _ => p.s.value(),
            },
            false,
        )?;
        Some(UserMessage {
            content: content.flatten().unwrap_or_default(),
        })
    }

    /// The rest of an assistant message.
    fn assistant(&mut self) -> Option<AssistantMessage> {
        let mut content: Option<Vec<AssistantBlock>> = None;
        let mut stop_reason: Option<Option<String>> = None;
        let mut usage: Option<Option<MessageUsage>> = None;
        let mut timestamp: Option<Option<u64>> = None;
        self.members(
            |p, key| match key {
                "role" => None,
                "content" => {
                    p.s.eat(b'[')?;
                    let read = p.array(|p| &mut p.scratch.blocks, Self::assistant_block)?;
                    once(&mut content, read)
                }
                "stopReason" => once(&mut stop_reason, p.string_or_null()?),
                "usage" => once(&mut usage, p.usage()?),
                "timestamp" => once(&mut timestamp, p.count()?),
                _ => p.s.value(),
            },
            false,
        )?;
        let mut message = AssistantMessage::new(content.unwrap_or_default(), stop_reason.flatten());
        message.usage = usage.flatten();
        message.timestamp = timestamp.flatten();
        Some(message)
    }

    /// One block of an assistant message of a known type, as the general way reads it.
    fn assistant_block(&mut self) -> Option<AssistantBlock> {
        self.s.eat(b'{')?;
        let mut kind: Option<Option<BlockKind>> = None;
        let mut text: Option<Option<String>> = None;
        let mut thinking: Option<Option<String>> = None;
        let mut id: Option<Option<String>> = None;
        let mut name: Option<Option<String>> = None;
        let mut arguments: Option<Option<RawJson>> = None;
        self.object(|p, key| match key {
            "type" => once(&mut kind, p.kind()?),
            "text" => once(&mut text, p.string_or_null()?),
            "thinking" => once(&mut thinking, p.string_or_null()?),
            "id" => once(&mut id, p.string_or_null()?),
            "name" => once(&mut name, p.string_or_null()?),
            "arguments" => once(&mut arguments, p.raw()?),
            _ => p.s.value(),
        })?;
        AssistantBlockFields {
            kind: kind.flatten(),
            text: text.flatten(),
            thinking: thinking.flatten(),
            id: id.flatten(),
            name: name.flatten(),
            arguments: arguments.flatten(),
        }
        .into_block()
    }

    /// An assistant message's `usage`: an object (read as [`MessageUsage::from_value`] reads
    /// its tree: the four counts and the cost, the last of a key written twice) or `null`;
    /// any other value gives up.
    fn usage(&mut self) -> Option<Option<MessageUsage>> {
        match self.s.next()? {
            b'{' => {}
            b'n' => return self.s.literal(b"ull").map(|()| None),
            _ => return None,
        }
        let mut counts = [UsageCount::Absent; 4];
        let mut cost: Option<f64> = None;
        self.object(|p, key| {
            let slot = match key {
                "input" => 0,
                "output" => 1,
                "cacheRead" => 2,
                "cacheWrite" => 3,
                "cost" => {
                    cost = p.cost()?;
                    return Some(());
                }
                _ => return p.s.value(),
            };
            counts[slot] = p.count()?.map_or(UsageCount::Absent, UsageCount::whole);
            Some(())
        })?;
        Some(MessageUsage::from_fields(counts, cost))
    }

    /// A usage's `cost`: a number, an object's `total` (a number or `null`), `null`, a
    /// boolean or an array (none); a string gives up.
    fn cost(&mut self) -> Option<Option<f64>> {
        match self.s.peek()? {
            b'-' | b'0'..=b'9' => self.float().map(Some),
            b'{' => {
                self.s.at += 1;
                let mut total = None;
                self.object(|p, key| {
                    if key != "total" {
                        return p.s.value();
                    }
                    total = match p.s.peek()? {
                        b'-' | b'0'..=b'9' => Some(p.float()?),
                        b'n' => {
                            p.s.at += 1;
                            p.s.literal(b"ull")?;
                            None
                        }
                        _ => return None,
                    };
                    Some(())
                })?;
                Some(total)
            }
            b'n' | b't' | b'f' | b'[' => self.s.value().map(|()| None),
            _ => None,
        }
    }

    /// The rest of a tool-result message.
    fn tool_result(&mut self) -> Option<ToolResultMessage> {
        let mut tool_call_id: Option<String> = None;
        let mut tool_name: Option<String> = None;
        let mut content: Option<Option<Content>> = None;
        let mut is_error: Option<bool> = None;
        let mut details: Option<Option<RawJson>> = None;
        self.members(
            |p, key| match key {
                "role" => None,
                "toolCallId" => once(&mut tool_call_id, p.string()?),
                "toolName" => once(&mut tool_name, p.string()?),
                "content" => once(&mut content, p.content()?),
                "isError" => once(&mut is_error, p.boolean()?),
                "details" => once(&mut details, p.raw()?),
                _ => p.s.value(),
            },
            false,
        )?;
        Some(ToolResultMessage {
            tool_call_id: tool_call_id.unwrap_or_default(),
            tool_name: tool_name.unwrap_or_default(),
            content: content.flatten().unwrap_or_default(),
            is_error: is_error.unwrap_or_default(),
            details: details.flatten(),
        })
    }

    /// Message content: a string, `null` (none), or an array of text and image blocks.
    fn content(&mut self) -> Option<Option<Content>> {
        match self.s.peek()? {
            b'"' => self.string().map(|text| Some(Content::Text(text))),
            b'n' => {
                self.s.at += 1;
                self.s.literal(b"ull").map(|()| None)
            }
            b'[' => {
                self.s.at += 1;
                let blocks = self.array(|p| &mut p.scratch.contents, Self::content_block)?;
                Some(Some(Content::Blocks(blocks)))
            }
            _ => None,
        }
    }

    /// One text or image block of message content.
    fn content_block(&mut self) -> Option<ContentBlock> {
        self.s.eat(b'{')?;
        let mut kind: Option<Option<BlockKind>> = None;
        let mut text: Option<Option<String>> = None;
        let mut data: Option<Option<String>> = None;
        let mut mime_type: Option<Option<String>> = None;
        let mut path: Option<Option<String>> = None;
        self.object(|p, key| {
            let slot = match key {
                "type" => {
                    let read = p.kind()?;
                    return once(&mut kind, read);
                }
                "text" => &mut text,
                "data" => &mut data,
                "mimeType" => &mut mime_type,
                "path" => &mut path,
                _ => return p.s.value(),
            };
            let read = p.string_or_null()?;
            once(slot, read)
        })?;
        ContentBlockFields {
            kind: kind.flatten(),
            text: text.flatten(),
            data: data.flatten(),
            mime_type: mime_type.flatten(),
            path: path.flatten(),
        }
        .into_block()
    }
}

/// A block's `type`, told apart as it is read (no string kept): the types the general
/// way knows, and `Other` for any other string.
#[derive(Clone, Copy, Debug, PartialEq)]
enum BlockKind {
    Text,
    Thinking,
    RedactedThinking,
    ToolCall,
    Image,
    Other,
}

impl BlockKind {
    /// The kind `name` stands for.
    fn of(name: &str) -> Self {
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

/// The fields an assistant block of a known type may use.
struct AssistantBlockFields {
    kind: Option<BlockKind>,
    text: Option<String>,
    thinking: Option<String>,
    id: Option<String>,
    name: Option<String>,
    arguments: Option<RawJson>,
}

impl AssistantBlockFields {
    /// The block, as the general way reads it; `None` where it would keep the block opaque.
    fn into_block(self) -> Option<AssistantBlock> {
        use BlockKind as K;
        Some(
            match (self.kind, self.text, self.thinking, self.id, self.name) {
                (Some(K::Text), Some(text), ..) => AssistantBlock::Text { text },
                (Some(K::Thinking), _, Some(thinking), ..) => AssistantBlock::Thinking { thinking },
                (Some(K::RedactedThinking), ..) => AssistantBlock::RedactedThinking,
                (Some(K::ToolCall), _, _, Some(id), Some(name)) => AssistantBlock::ToolCall {
                    id,
                    name,
                    arguments: self.arguments.unwrap_or_else(RawJson::null),
                },
                _ => return None,
            },
        )
    }
}

/// The fields a content block of a known type may use.
struct ContentBlockFields {
    kind: Option<BlockKind>,
    text: Option<String>,
    data: Option<String>,
    mime_type: Option<String>,
    path: Option<String>,
}

impl ContentBlockFields {
    /// The block, as the general way reads it; `None` where it would keep the block opaque.
    fn into_block(self) -> Option<ContentBlock> {
        match (self.kind, self.text) {
            (Some(BlockKind::Text), Some(text)) => Some(ContentBlock::Text { text }),
            (Some(BlockKind::Image), _) => Some(ContentBlock::Image {
                data: self.data,
                mime_type: self.mime_type,
                path: self.path,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
