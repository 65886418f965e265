//! The advisor's transcript file in oh-my-pi's session format (P9, G7): plain code that
//! turns audit events into JSON lines and reads the totals back on resume.
//!
//! The file is a session file of version 3, so oh-my-pi's own tools read it: `omp stats`
//! counts the advisor's spend (assistant messages with `provider`, `model`, `api` and a
//! `usage` with its `cost`) and a session viewer shows the conversation.
//!
//! - the header `{"type":"session","version":3,"id","timestamp","cwd"}` opens a new file;
//! - each update, answer and tool result is a `message` entry with `id` and `parentId`
//!   (one chain, each entry the child of the one before). Updates are user messages marked
//!   `synthetic: true, attribution: "agent"` (written by the advisor's host, not typed by a
//!   user); within one review an update already written is not written again when an attempt
//!   is retried;
//! - a call that cost something without adding to the context (a compaction's summary call,
//!   a failed call that reported usage) is an assistant message too, so its spend counts;
//! - maintenance (compaction, re-prime, promotion, eviction) and discarded attempts are
//!   `custom` entries (`customType` `advisor-maintenance`, `advisor-eviction`,
//!   `advisor-attempt-discarded`) with their details under `data`.
//!
//! Append-only: nothing already written is rewritten by a compaction or an eviction.

use serde_json::{json, Value};

use super::audit::AuditEvent;
use crate::model::{AssistantPart, ChatMessage, StopReason, Usage};

/// What the advisor's earlier life left in the file (P9): read back when a session resumes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Restored {
    /// The usage of every assistant message in the file (G4's lifetime totals).
    pub lifetime: Usage,
    /// Entries with an id (the next id continues after them).
    pub entries: u64,
    /// The id of the last entry: the parent of the next one.
    pub last_id: Option<String>,
    /// Whether the file already has its session header.
    pub has_header: bool,
    /// Whether the file ends without a newline (a torn last line): the next write starts a
    /// new line first.
    pub torn: bool,
}

impl Restored {
    /// Reads an existing file's bytes. Lines that are not JSON (a torn last line, say) are
    /// skipped.
    pub fn read(bytes: &[u8]) -> Self {
        let mut restored = Self {
            torn: bytes.last().is_some_and(|b| *b != b'\n'),
            ..Self::default()
        };
        for line in bytes.split(|b| *b == b'\n') {
            let Ok(entry) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            match entry["type"].as_str() {
                Some("session") => restored.has_header = true,
                Some(_) => {}
                None => continue,
            }
            if let Some(id) = entry["id"].as_str().filter(|_| entry["type"] != "session") {
                restored.entries += 1;
                restored.last_id = Some(id.to_string());
            }
            let message = &entry["message"];
            if entry["type"] == "message" && message["role"] == "assistant" {
                restored.lifetime.add(&usage_of(&message["usage"]));
            }
        }
        restored
    }
}

/// The usage an assistant entry records.
fn usage_of(usage: &Value) -> Usage {
    let n = |key: &str| usage[key].as_u64().unwrap_or(0);
    Usage {
        input: n("input"),
        output: n("output"),
        cache_read: n("cacheRead"),
        cache_write: n("cacheWrite"),
        cost: usage["cost"]["total"].as_f64().unwrap_or(0.0),
        estimated: usage["estimated"].as_bool().unwrap_or(false),
    }
}

/// Turns audit events into lines of the transcript file.
#[derive(Debug)]
pub struct TranscriptWriter {
    cwd: String,
    salt: u64,
    seq: u64,
    last_id: Option<String>,
    has_header: bool,
    torn: bool,
    /// The review whose updates `written` remembers, and their hashes.
    review: (u64, u64),
    written: Vec<u64>,
}

impl TranscriptWriter {
    /// A writer continuing `restored` (empty for a new file), for a session working in
    /// `cwd`. `salt` makes this file's ids differ from another session's.
    pub fn new(cwd: impl Into<String>, salt: u64, restored: &Restored) -> Self {
        Self {
            cwd: cwd.into(),
            salt,
            seq: restored.entries,
            last_id: restored.last_id.clone(),
            has_header: restored.has_header,
            torn: restored.torn,
            review: (u64::MAX, u64::MAX),
            written: Vec::new(),
        }
    }

    /// The lines (each ending in a newline) for `event` of review `review` in `epoch`,
    /// which happened at `at_ms` (milliseconds since the Unix epoch); empty when there is
    /// nothing to write (an update already written by an earlier attempt of the review).
    pub fn lines(&mut self, epoch: u64, review: u64, at_ms: u64, event: &AuditEvent) -> String {
        let mut out = String::new();
        self.begin(epoch, review, at_ms, &mut out);
        if let Some(entry) = self.entry(epoch, review, at_ms, event) {
            push_line(&mut out, &entry);
        }
        out
    }

    /// What goes before an entry: the newline that ends a torn last line, the header of a
    /// new file; and a new review forgets the updates the last one wrote.
    fn begin(&mut self, epoch: u64, review: u64, at_ms: u64, out: &mut String) {
        if std::mem::take(&mut self.torn) {
            out.push('\n');
        }
        if !self.has_header {
            self.has_header = true;
            push_line(out, &title_line(at_ms));
            let header = json!({
                "type": "session",
                "version": 3,
                "id": uuid_like(self.salt, at_ms),
                "timestamp": iso_time(at_ms),
                "cwd": self.cwd,
            });
            push_line(out, &header);
        }
        if (epoch, review) != self.review {
            self.review = (epoch, review);
            self.written.clear();
        }
    }

    /// The entry for `event`; `None` for an update an earlier attempt already wrote.
    fn entry(&mut self, epoch: u64, review: u64, at_ms: u64, event: &AuditEvent) -> Option<Value> {
        let entry = match event {
            AuditEvent::Message { message } => match message {
                ChatMessage::User { text } => {
                    let hash = fingerprint(text);
                    if self.written.contains(&hash) {
                        return None;
                    }
                    self.written.push(hash);
                    self.message(at_ms, user_message(text, at_ms))
                }
                other => self.message(at_ms, plain_message(other, at_ms)),
            },
            AuditEvent::Reply {
                message,
                model,
                usage,
                stop,
            } => {
                let parts = match message {
                    ChatMessage::Assistant { parts } => parts.as_slice(),
                    _ => &[],
                };
                let body = assistant_message(parts, model, usage, stop_reason(stop), None, at_ms);
                self.message(at_ms, body)
            }
            AuditEvent::Spend {
                model,
                usage,
                text,
                error,
            } => {
                let parts = [AssistantPart::Text { text: text.clone() }];
                let parts = if text.is_empty() { &[][..] } else { &parts[..] };
                let stop = if error.is_some() { "error" } else { "stop" };
                let body = assistant_message(parts, model, usage, stop, error.as_deref(), at_ms);
                self.message(at_ms, body)
            }
            other => return self.custom_entry(epoch, review, at_ms, other),
        };
        Some(entry)
    }

    /// The custom entry of a maintenance, eviction or discarded attempt of review `review`.
    fn custom_entry(
        &mut self,
        epoch: u64,
        review: u64,
        at_ms: u64,
        event: &AuditEvent,
    ) -> Option<Value> {
        let entry = match event {
            AuditEvent::Maintenance {
                kind,
                trigger,
                model,
                messages,
                summary,
            } => self.custom(
                at_ms,
                "advisor-maintenance",
                json!({
                    "kind": kind.as_str(),
                    "trigger": trigger,
                    "model": model,
                    "messages": messages,
                    "summary": summary,
                    "epoch": epoch,
                    "review": review,
                }),
            ),
            AuditEvent::Eviction {
                evicted,
                tokens_saved,
            } => self.custom(
                at_ms,
                "advisor-eviction",
                json!({
                    "evicted": evicted,
                    "tokensSaved": tokens_saved,
                    "epoch": epoch,
                    "review": review,
                }),
            ),
            AuditEvent::AttemptDiscarded { attempt, error } => self.custom(
                at_ms,
                "advisor-attempt-discarded",
                json!({
                    "attempt": attempt,
                    "error": error,
                    "epoch": epoch,
                    "review": review,
                }),
            ),
            AuditEvent::Message { .. } | AuditEvent::Reply { .. } | AuditEvent::Spend { .. } => {
                return None
            }
        };
        Some(entry)
    }

    /// The next entry's id and its parent's, advancing the chain.
    fn next_ids(&mut self) -> (String, Value) {
        self.seq += 1;
        // A bijection of 32-bit values: ids differ for the first 2^32 entries of a file.
        let id = format!(
            "{:08x}",
            mix32((self.salt as u32).wrapping_add(self.seq as u32))
        );
        let parent = self
            .last_id
            .replace(id.clone())
            .map_or(Value::Null, Value::String);
        (id, parent)
    }

    fn message(&mut self, at_ms: u64, message: Value) -> Value {
        let (id, parent) = self.next_ids();
        json!({
            "type": "message",
            "id": id,
            "parentId": parent,
            "timestamp": iso_time(at_ms),
            "message": message,
        })
    }

    fn custom(&mut self, at_ms: u64, kind: &str, data: Value) -> Value {
        let (id, parent) = self.next_ids();
        json!({
            "type": "custom",
            "customType": kind,
            "data": data,
            "id": id,
            "parentId": parent,
            "timestamp": iso_time(at_ms),
        })
    }
}

/// How long oh-my-pi makes a session file's title line (its padding included, without the
/// newline), so that a title can later be written over it in place.
const TITLE_LINE_CHARS: usize = 255;

/// The title line that opens a new file, as oh-my-pi writes it (P9): an empty title, the
/// time, and spaces padding the line to [`TITLE_LINE_CHARS`].
fn title_line(at_ms: u64) -> Value {
    let mut title = json!({
        "type": "title",
        "v": 1,
        "title": "",
        "updatedAt": iso_time(at_ms),
        "pad": "",
    });
    let pad = TITLE_LINE_CHARS.saturating_sub(title.to_string().len());
    title["pad"] = Value::String(" ".repeat(pad));
    title
}

fn push_line(out: &mut String, value: &Value) {
    out.push_str(&value.to_string());
    out.push('\n');
}

/// An update to the advisor: a user message its host wrote (P9).
fn user_message(text: &str, at_ms: u64) -> Value {
    json!({
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "timestamp": at_ms,
        "synthetic": true,
        "attribution": "agent",
    })
}

/// A tool result (or, defensively, any other message appended without a reply).
fn plain_message(message: &ChatMessage, at_ms: u64) -> Value {
    match message {
        ChatMessage::ToolResult {
            call_id,
            name,
            text,
            is_error,
        } => json!({
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": text}],
            "isError": is_error,
            "timestamp": at_ms,
        }),
        ChatMessage::User { text } => user_message(text, at_ms),
        ChatMessage::Assistant { parts } => json!({
            "role": "assistant",
            "content": parts.iter().map(content_block).collect::<Vec<_>>(),
            "timestamp": at_ms,
        }),
    }
}

/// An answer of the advisor model with its usage and cost, as `omp stats` reads it.
fn assistant_message(
    parts: &[AssistantPart],
    model: &str,
    usage: &Usage,
    stop: &str,
    error: Option<&str>,
    at_ms: u64,
) -> Value {
    let (provider, model_id) = model.split_once('/').unwrap_or(("unknown", model));
    let mut message = json!({
        "role": "assistant",
        "content": parts.iter().map(content_block).collect::<Vec<_>>(),
        "api": "advisor",
        "provider": provider,
        "model": model_id,
        "usage": {
            "input": usage.input,
            "output": usage.output,
            "cacheRead": usage.cache_read,
            "cacheWrite": usage.cache_write,
            "totalTokens": usage.input + usage.output + usage.cache_read + usage.cache_write,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": usage.cost},
        },
        "stopReason": stop,
        "timestamp": at_ms,
    });
    if usage.estimated {
        message["usage"]["estimated"] = Value::Bool(true);
    }
    if let Some(error) = error {
        message["errorMessage"] = Value::String(error.to_string());
    }
    message
}

/// One content block of an assistant message, in the session format's shapes.
fn content_block(part: &AssistantPart) -> Value {
    match part {
        AssistantPart::Text { text } => json!({"type": "text", "text": text}),
        AssistantPart::Thinking { text, .. } => json!({"type": "thinking", "thinking": text}),
        AssistantPart::ToolCall {
            id,
            name,
            arguments,
        } => json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments}),
    }
}

/// The session format's stop reason.
fn stop_reason(stop: &StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "toolUse",
        StopReason::MaxTokens | StopReason::ContextOverflow => "length",
        StopReason::Refusal | StopReason::Other(_) => "stop",
    }
}

/// A 64-bit hash of a text (FNV-1a), to recognise an update already written (and to salt
/// a file's ids with its path).
pub fn fingerprint(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A 64-bit mixer (splitmix64's finaliser), for ids that look random but are reproducible.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A bijective 32-bit mixer (lowbias32), so consecutive numbers give unrelated-looking ids.
fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// A UUID-shaped id (version 7 layout: the time first) for the session header.
fn uuid_like(salt: u64, at_ms: u64) -> String {
    let rand = mix(salt ^ at_ms);
    format!(
        "{:08x}-{:04x}-7{:03x}-{:04x}-{:012x}",
        (at_ms >> 16) as u32,
        (at_ms & 0xffff) as u16,
        (rand >> 52) & 0xfff,
        ((rand >> 36) & 0x3fff) | 0x8000,
        rand & 0xffff_ffff_ffff
    )
}

/// `at_ms` as an ISO 8601 UTC time with milliseconds (`2026-01-02T03:04:05.678Z`).
pub fn iso_time(at_ms: u64) -> String {
    format!("{}.{:03}Z", civil_time(at_ms / 1000), at_ms % 1000)
}

/// `secs` since the epoch as an ISO 8601 UTC time to the second (`2026-01-02T03:04:05Z`).
pub fn iso_seconds(secs: u64) -> String {
    format!("{}Z", civil_time(secs))
}

/// `secs` since the epoch as a UTC date and time of day without a zone
/// (`2026-01-02T03:04:05`).
fn civil_time(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::context::MaintenanceKind;

    fn parse(lines: &str) -> Vec<Value> {
        lines
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn p9_iso_times() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_796_160_548_071), "2026-12-01T21:29:08.071Z");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    /// A review's events in order: the update, a reply calling `read`, its result, an
    /// eviction.
    fn review_events() -> [AuditEvent; 4] {
        let update = AuditEvent::Message {
            message: ChatMessage::User {
                text: "### Session update\n\nfix it".into(),
            },
        };
        let reply = AuditEvent::Reply {
            message: ChatMessage::Assistant {
                parts: vec![AssistantPart::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.rs"}),
                }],
            },
            model: "openrouter/qwen/qwen3".into(),
            usage: Usage {
                input: 100,
                output: 20,
                cache_read: 30,
                cost: 0.25,
                ..Usage::default()
            },
            stop: StopReason::ToolUse,
        };
        let result = AuditEvent::Message {
            message: ChatMessage::ToolResult {
                call_id: "c1".into(),
                name: "read".into(),
                text: "1|fn a() {}".into(),
                is_error: false,
            },
        };
        let evicted = AuditEvent::Eviction {
            evicted: 2,
            tokens_saved: 900,
        };
        [update, reply, result, evicted]
    }

    #[test]
    fn p9_a_new_file_is_a_version_3_session_of_chained_entries() {
        let mut w = TranscriptWriter::new("/work/repo", 7, &Restored::default());
        let events = review_events();
        let update = &events[0];
        let mut text = String::new();
        for event in &events {
            text.push_str(&w.lines(0, 1, 1_796_160_548_071, event));
        }
        let mut lines = parse(&text);
        assert_eq!(lines.len(), 6);
        // P9: oh-my-pi's title line first, padded so a title can be written in place.
        let title = lines.remove(0);
        assert_eq!(
            (
                title["type"].as_str(),
                title["v"].as_u64(),
                title["title"].as_str()
            ),
            (Some("title"), Some(1), Some(""))
        );
        assert_eq!(title["updatedAt"], "2026-12-01T21:29:08.071Z");
        assert!(title["pad"].as_str().unwrap().bytes().all(|b| b == b' '));
        assert_eq!(text.lines().next().unwrap().len(), 255);
        let header = &lines[0];
        assert_eq!(
            (header["type"].as_str(), header["version"].as_u64()),
            (Some("session"), Some(3))
        );
        assert_eq!(header["cwd"], "/work/repo");
        assert_eq!(header["timestamp"], "2026-12-01T21:29:08.071Z");
        assert_eq!(header["id"].as_str().unwrap().len(), 36);
        assert_eq!(lines[1]["parentId"], Value::Null);
        for pair in lines[1..].windows(2) {
            assert_eq!(pair[1]["parentId"], pair[0]["id"], "one chain");
        }
        let user = &lines[1]["message"];
        assert_eq!(
            (user["role"].as_str(), user["synthetic"].as_bool()),
            (Some("user"), Some(true))
        );
        assert_eq!(user["attribution"], "agent");
        assert_eq!(user["content"][0]["text"], "### Session update\n\nfix it");
        let answer = &lines[2]["message"];
        assert_eq!(
            (answer["provider"].as_str(), answer["model"].as_str()),
            (Some("openrouter"), Some("qwen/qwen3"))
        );
        assert_eq!(answer["usage"]["totalTokens"], 150);
        assert_eq!(answer["usage"]["cost"]["total"], 0.25);
        assert_eq!(answer["stopReason"], "toolUse");
        assert_eq!(answer["content"][0]["type"], "toolCall");
        assert_eq!(lines[3]["message"]["toolName"], "read");
        assert_eq!(lines[4]["type"], "custom");
        assert_eq!(lines[4]["customType"], "advisor-eviction");
        assert_eq!(lines[4]["data"]["tokensSaved"], 900);
        // A retried attempt of the same review does not write the update again; the next
        // review does.
        assert!(w.lines(0, 1, 5, update).is_empty());
        assert_eq!(parse(&w.lines(0, 2, 5, update)).len(), 1);
    }

    #[test]
    fn p9_resume_restores_the_totals_and_continues_the_chain() {
        let mut w = TranscriptWriter::new("/w", 1, &Restored::default());
        let mut text = String::new();
        let spend = |input, cost| AuditEvent::Spend {
            model: "anthropic/claude".into(),
            usage: Usage {
                input,
                output: 5,
                cost,
                ..Usage::default()
            },
            text: String::new(),
            error: Some("503".into()),
        };
        text.push_str(&w.lines(0, 1, 10, &spend(100, 0.5)));
        text.push_str(&w.lines(
            0,
            1,
            11,
            &AuditEvent::Maintenance {
                kind: MaintenanceKind::Reprime,
                trigger: "threshold".into(),
                model: "m".into(),
                messages: 0,
                summary: None,
            },
        ));
        text.push_str(&w.lines(0, 2, 12, &spend(50, 0.25)));
        text.push_str("{\"type\":\"mess"); // a torn last line
        let restored = Restored::read(text.as_bytes());
        assert!(restored.has_header);
        assert_eq!(restored.entries, 3);
        assert_eq!(
            (restored.lifetime.input, restored.lifetime.output),
            (150, 10)
        );
        assert!((restored.lifetime.cost - 0.75).abs() < 1e-12);
        let last = parse(text.lines().nth(4).unwrap())[0]["id"].clone();
        assert_eq!(restored.last_id.as_deref(), last.as_str());
        let mut again = TranscriptWriter::new("/w", 1, &restored);
        let appended = again.lines(1, 1, 13, &spend(1, 0.0));
        assert!(appended.starts_with('\n'), "the torn line is ended first");
        let more = parse(appended.trim_start());
        assert_eq!(more.len(), 1, "no second title or header");
        assert_eq!(more[0]["parentId"], last);
        assert_ne!(more[0]["id"], last);
    }
}
