//! The quickest way to read one entry line (SPEC L1): the entries pi and oh-my-pi write
//! most — a `message` entry holding a user, developer, assistant or tool-result message —
//! read by hand straight from the line's bytes into the transcript's types, with no serde
//! visitor between the bytes and the values.
//!
//! It answers only where [`super::lean`] answers the same, and gives up (`None`) on
//! anything else, leaving the line to the lean way (and that way to the general one): an
//! escaped key, a key the lean way reads written twice, another role, a block of another
//! type, another entry type's own fields (`summary`, `content`, …), a value of another type
//! than expected, a number other than plain digits where a number is read, a string serde
//! would refuse. Values it skips are checked by [`super::skim`]'s grammar scanner, which
//! agrees with serde_json on what it skips. The tests compare both ways on the recorded
//! sessions and on random mutations of pi's lines.

use std::borrow::Cow;

use crate::domain::transcript::{
    AssistantBlock, AssistantMessage, Content, ContentBlock, MessageUsage, RawJson,
    ToolResultMessage, TranscriptMessage, UsageCount, UserMessage,
};

use super::lean::{AssistantBlockFields, BlockKind, ContentBlockFields, LeanEntry, LeanRaw, Named};
use super::skim::{Leading, Scanner};

/// Reads one entry line with its `parentId` (`None` inside when absent or `null`); `None`
/// when the line is to be read the lean way.
pub(super) fn entry<'a>(
    bytes: &'a [u8],
    scratch: &mut Scratch,
) -> Option<(LeanEntry<'a>, Option<Cow<'a, str>>)> {
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
) -> Option<(LeanEntry<'a>, Option<Cow<'a, str>>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (kind, id, parent) = lead.in_text(text)?;
    let mut keys = EntryKeys {
        kind: Some(Some(kind)),
        id: Some(Some(id)),
        parent: Some(parent),
        message: None,
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
}

/// Fills `slot` with `value` the first time; `None` (give up) the second, since the lean
/// way refuses a field written twice.
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
            // Fields of other entry types: the lean way reads them.
            "summary"
            | "firstKeptEntryId"
            | "firstKeptEntryIndex"
            | "tokensBefore"
            | "fromId"
            | "customType"
            | "content"
            | "display"
            | "details"
            | "attribution" => None,
            _ => self.s.value(),
        }
    }

    /// The entry of `keys`, once nothing but whitespace is left of the line.
    fn finish_entry(
        mut self,
        keys: EntryKeys<'a>,
    ) -> Option<(LeanEntry<'a>, Option<Cow<'a, str>>)> {
        self.s.ws();
        if !self.s.at_end() {
            return None;
        }
        let entry = LeanEntry {
            kind: Cow::Borrowed(keys.kind.flatten()?),
            id: keys.id.flatten().map(Cow::Borrowed),
            message: keys.message,
            summary: None,
            first_kept_entry_id: None,
            first_kept_entry_index: None,
            tokens_before: None,
            from_id: None,
            custom_type: None,
            content: None,
            display: None,
            details: None,
            attribution: None,
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

    /// A value kept as its JSON text (`null` is none), as the lean way's `LeanRaw` keeps it.
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
        Some(self.s.string_or_null()?.map(BlockKind::named))
    }

    /// A message object whose first key is `role`, of one of the roles read here.
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

    /// One block of an assistant message, as the lean way turns its fields into a block.
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
            arguments: arguments.flatten().map(LeanRaw),
        }
        .into_block::<serde_json::Error>()
        .ok()
    }

    /// An assistant message's `usage`: an object (read as the lean way's `LeanUsage` reads
    /// it) or `null`; any other value gives up.
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
        .into_block::<serde_json::Error>()
        .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::lean::parse_entry_with_parent;
    use crate::session::skim::{leading, mutated};
    use proptest::prelude::*;
    use std::path::Path;

    /// Whenever the hand-written way answers, the lean way answers the same, and so does
    /// the hand-written way from after the leading keys (where the line has them); returns
    /// whether the hand-written way answered.
    fn agrees(line: &str) -> bool {
        let bytes = line.as_bytes();
        // One scratch for both reads: what the first leaves behind must not change the second.
        let mut scratch = Scratch::default();
        let quick = entry(bytes, &mut scratch);
        if let Some(lead) = leading(bytes) {
            assert_eq!(bytes.get(lead.end()), Some(&b','), "{line}");
            assert_eq!(entry_after(bytes, &lead, &mut scratch), quick, "{line}");
        }
        let Some(quick) = quick else {
            return false;
        };
        assert_eq!(
            Some(&quick),
            parse_entry_with_parent(bytes).as_ref(),
            "{line}"
        );
        true
    }

    const USER: &str = r#"{"type":"message","id":"a1","parentId":"a0","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"hi \"x\" \u00e9 \ud83d\ude00\n"},{"type":"image","data":"AAA","mimeType":"image/png"}],"timestamp":1}}"#;
    const ASSISTANT: &str = r#"{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"thinking","thinking":"t\tu","thinkingSignature":"s"},{"type":"text","text":"a"},{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"a","n":[1,2.5,-3e2,null,true],"o":{}}}],"api":"x","usage":{"input":3,"output":4,"cacheRead":5,"cacheWrite":6,"totalTokens":18,"cost":{"input":0.1,"total":0.30000000000000004}},"stopReason":"toolUse","timestamp":1767225600000}}"#;
    const RESULT: &str = r#"{"type":"message","id":"a3","parentId":"a2","message":{"role":"toolResult","toolCallId":"c1","toolName":"edit","content":[{"type":"text","text":"ok"}],"details":{"diff":"-1 a\n+1 b"},"isError":false,"timestamp":3}}"#;

    #[test]
    fn l1_pi_lines_are_read_by_hand_as_the_lean_way_reads_them() {
        for line in [USER, ASSISTANT, RESULT] {
            assert!(agrees(line), "not read by hand: {line}");
        }
        let (read, parent) = entry(ASSISTANT.as_bytes(), &mut Scratch::default()).expect("read");
        assert_eq!(parent.as_deref(), Some("a1"));
        let Some(TranscriptMessage::Assistant(a)) = read.message else {
            panic!("an assistant message");
        };
        assert_eq!(a.content.len(), 3);
        assert_eq!(a.usage.map(|u| (u.input, u.cache_write)), Some((3, 6)));
        assert_eq!(a.timestamp, Some(1_767_225_600_000));
    }

    #[test]
    fn l1_shapes_read_by_hand_agree_with_the_lean_way() {
        let answered = [
            r#"{"type":"message","id":"1","parentId":null,"message":{"role":"user","content":"plain"}}"#,
            r#" { "type" : "message" , "message" : { "role" : "developer" , "content" : null } } "#,
            r#"{"type":"message","message":{"role":"user"}}"#,
            r#"{"type":"message","message":{"role":"user","content":[]}}"#,
            r#"{"type":"message","message":{"role":"user","content":[{"type":"image","path":"/a.png","data":null}]}}"#,
            r#"{"type":"message","message":{"role":"user","content":"\u0041\b\f\r\/\\"}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"redactedThinking","data":"x"},{"type":"toolCall","id":"c","name":"n","arguments":null},{"type":"toolCall","id":"c","name":"n"}],"stopReason":null}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{"b":1,"a":"\u00e9"}}]}}"#,
            r#"{"type":"message","message":{"role":"assistant","usage":{"output":2,"cost":1}}}"#,
            r#"{"type":"message","message":{"role":"assistant","usage":{"input":2,"cost":-1.5}}}"#,
            r#"{"type":"message","message":{"role":"assistant","usage":{"input":1,"input":7,"cost":[1,{"total":2}],"cost":null}}}"#,
            r#"{"type":"message","message":{"role":"assistant","usage":{"cacheRead":1,"cost":{"total":null}}}}"#,
            r#"{"type":"message","message":{"role":"assistant","usage":null,"timestamp":null}}"#,
            r#"{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"t","isError":true,"details":null,"content":"x"}}"#,
            r#"{"type":"model_change","id":"m","parentId":"a","provider":"p","modelId":"x"}"#,
            r#"{"type":"label","x":{"y":[1,{"z":"\ud800"}]}}"#,
        ];
        for line in answered {
            assert!(agrees(line), "not read by hand: {line}");
        }
        // Left to the lean way (which answers some of these, refuses others).
        let declined = [
            r#"{"type":null,"message":{"role":"user"}}"#,
            r#"{"type":"message","type":"message","message":{"role":"user"}}"#,
            r#"{"type":"message","parentId":"a","parentId":"b","message":{"role":"user"}}"#,
            r#"{"type":"message","parentId":1,"message":{"role":"user"}}"#,
            r#"{"typ\u0065":"message","message":{"role":"user"}}"#,
            r#"{"type":"message","message":null}"#,
            r#"{"type":"message","message":{"content":"x","role":"user"}}"#,
            r#"{"type":"message","message":{"role":"user","role":"user"}}"#,
            r#"{"type":"message","message":{"role":"custom","customType":"x"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"\ud800"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"\udc00\ud800"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"a	b"}}"#,
            r#"{"type":"message","message":{"role":"user","content":5}}"#,
            r#"{"type":"message","message":{"role":"user","content":[{"type":"thinking","thinking":"x"}]}}"#,
            r#"{"type":"message","message":{"role":"user","content":[{"type":"text"}]}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":null}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c"}]}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"image"}]}}"#,
            r#"{"type":"message","message":{"role":"assistant","timestamp":1.5}}"#,
            r#"{"type":"message","message":{"role":"assistant","timestamp":"1"}}"#,
            r#"{"type":"message","message":{"role":"assistant","usage":{"input":-1}}}"#,
            r#"{"type":"message","message":{"role":"assistant","usage":{"input":18446744073709551616}}}"#,
            r#"{"type":"message","message":{"role":"assistant","usage":{"input":1,"cost":"1"}}}"#,
            r#"{"type":"message","message":{"role":"assistant","usage":3}}"#,
            r#"{"type":"message","message":{"role":"toolResult","toolCallId":null}}"#,
            r#"{"type":"message","message":{"role":"toolResult","isError":null}}"#,
            r#"{"type":"compaction","summary":"s","firstKeptEntryId":"a"}"#,
            r#"{"type":"custom_message","customType":"x","content":"y"}"#,
            r#"{"type":"message","message":{"role":"user"}} x"#,
            r#"{"type":"message","message":{"role":"user",}}"#,
            r#"["type"]"#,
        ];
        for line in declined {
            assert!(
                entry(line.as_bytes(), &mut Scratch::default()).is_none(),
                "read by hand: {line}"
            );
        }
    }

    #[test]
    fn l1_recorded_message_lines_are_read_by_hand_as_the_lean_way_reads_them() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut dirs = vec![root];
        let (mut by_hand, mut messages) = (0usize, 0usize);
        while let Some(dir) = dirs.pop() {
            for item in std::fs::read_dir(&dir).expect("fixtures").flatten() {
                let path = item.path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "jsonl") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("a fixture");
                for line in text.lines() {
                    let common = [
                        r#""role":"user""#,
                        r#""role":"assistant""#,
                        r#""role":"toolResult""#,
                    ];
                    if common.iter().any(|role| line.contains(role)) {
                        messages += 1;
                    }
                    if agrees(line) {
                        by_hand += 1;
                    }
                }
            }
        }
        // The recorded sessions' user, assistant and tool-result messages take the quick way
        // (a few lines name a role inside text and are no such messages).
        assert!(messages > 300, "{messages} messages");
        assert!(
            by_hand * 100 >= messages * 95,
            "{by_hand} of {messages} message lines read by hand"
        );
    }

    /// Pieces that are often valid members and sometimes subtly not.
    fn member() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(r#""content":"x\n""#.to_string()),
            Just(r#""content":[{"type":"text","text":"t"}]"#.to_string()),
            Just(
                r#""content":[{"type":"toolCall","id":"i","name":"n","arguments":{}}]"#.to_string()
            ),
            Just(r#""usage":{"input":1,"cost":0.5}"#.to_string()),
            Just(r#""timestamp":12"#.to_string()),
            Just(r#""stopReason":"stop""#.to_string()),
            Just(r#""toolCallId":"c""#.to_string()),
            Just(r#""isError":false"#.to_string()),
            Just(r#""details":{"a":[1]}"#.to_string()),
            "[ -~]{0,10}".prop_map(|s| format!(r#""content":{s}"#)),
            "[ -~]{0,10}".prop_map(|s| format!(r#""usage":{{"input":{s}}}"#)),
            "[ -~]{0,10}".prop_map(|s| format!(r#""timestamp":{s}"#)),
            "(\\\\[ -~]|\\\\u[0-9a-fA-FdD]{4}|[a-z\"0-9]){0,6}"
                .prop_map(|s| format!(r#""content":"{s}""#)),
            "[\"\\\\a-z0-9:,{}\\[\\] .eE+-]{0,12}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn l1_any_mutation_of_a_pi_line_reads_by_hand_as_the_lean_way_reads_it(
            which in 0usize..3, at in 0usize..400, byte in 0u8..128, cut in proptest::bool::ANY
        ) {
            let base = [USER, ASSISTANT, RESULT][which];
            if let Some(line) = mutated(base, at, byte, cut) {
                agrees(&line);
            }
        }

        #[test]
        fn l1_messages_built_of_random_members_read_by_hand_as_the_lean_way_reads_them(
            role in prop_oneof![Just("user"), Just("assistant"), Just("toolResult")],
            members in proptest::collection::vec(member(), 0..5),
        ) {
            let mut fields = vec![format!(r#""role":"{role}""#)];
            fields.extend(members);
            let line = format!(
                r#"{{"type":"message","id":"x","message":{{{}}}}}"#,
                fields.join(",")
            );
            agrees(&line);
        }
    }
}
