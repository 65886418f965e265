//! No paid re-reads (SP2): the `read`, `search` and `find` calls whose results an advisor
//! context holds, so a call repeating one of them over unchanged files is answered with a
//! one-line pointer instead of the body.
//!
//! The ledger is part of the [`AdvisorContext`](super::AdvisorContext) and is asked with the
//! context's messages: an entry counts only while the message it names is still there, a
//! result of the same tool carrying the very text that was sent. So a result that stale-result
//! eviction (P4) replaced by a placeholder, a compaction summarised or a failed attempt took
//! out is never pointed at — correct by construction, whatever cleared or rewrote it. A reset,
//! re-prime, compaction or promotion also empties the ledger (a new context).

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use crate::model::ChatMessage;
use crate::tools::{find, read, search};

/// Most calls one ledger remembers; the oldest give way.
pub const MAX_RECORDS: usize = 256;

/// The tools whose calls may be answered from an earlier result (SP2): the same ones whose
/// stale results P4 evicts.
pub const REREADABLE_TOOLS: [&str; 3] = [read::NAME, search::NAME, find::NAME];

/// Whether calls of the tool `name` may be answered from an earlier result (SP2).
pub fn rereadable(name: &str) -> bool {
    REREADABLE_TOOLS.contains(&name)
}

/// One call whose result went into the context.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadRecord {
    /// The tool.
    pub tool: String,
    /// Its arguments, as the model gave them.
    pub arguments: Value,
    /// The fingerprint of the files it covered (size and modification time), taken before
    /// it ran.
    pub fingerprint: u64,
    /// The review that made it (the agent's review number).
    pub review: u64,
    /// Its place among that review's tool calls, from 1.
    pub call: u32,
    /// The index of its result among the context's messages.
    pub index: usize,
    /// The hash of the result's text as the context holds it.
    text_hash: u64,
    /// The result's length in bytes: what a pointer saves.
    pub bytes: usize,
}

impl ReadRecord {
    /// The record of a call of `tool` with `arguments`, made as call `call` of review
    /// `review` over files giving `fingerprint`, whose result `text` is the context's
    /// message `index`.
    pub fn new(
        tool: &str,
        arguments: Value,
        fingerprint: u64,
        (review, call): (u64, u32),
        index: usize,
        text: &str,
    ) -> Self {
        Self {
            tool: tool.to_string(),
            arguments,
            fingerprint,
            review,
            call,
            index,
            text_hash: text_hash(text),
            bytes: text.len(),
        }
    }

    /// Whether `messages` still hold this result: at its index, a successful result of the
    /// same tool with the same text.
    fn held_by(&self, messages: &[ChatMessage]) -> bool {
        matches!(
            messages.get(self.index),
            Some(ChatMessage::ToolResult { name, text, is_error: false, .. })
                if *name == self.tool && text_hash(text) == self.text_hash
        )
    }
}

/// The calls an advisor context holds the results of (SP2).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadLedger {
    records: Vec<ReadRecord>,
}

impl ReadLedger {
    /// The latest call of `tool` with `arguments` whose result `messages` still hold.
    pub fn earlier(
        &self,
        tool: &str,
        arguments: &Value,
        messages: &[ChatMessage],
    ) -> Option<&ReadRecord> {
        self.records
            .iter()
            .rev()
            .find(|r| r.tool == tool && r.arguments == *arguments && r.held_by(messages))
    }

    /// Remembers `record`; an older record of the same call gives way, and past
    /// [`MAX_RECORDS`] the oldest does.
    pub fn record(&mut self, record: ReadRecord) {
        self.records
            .retain(|r| !(r.tool == record.tool && r.arguments == record.arguments));
        if self.records.len() >= MAX_RECORDS {
            self.records.remove(0);
        }
        self.records.push(record);
    }

    /// Forgets the results at or past message `len` (the context was cut back to `len`).
    pub fn truncate(&mut self, len: usize) {
        self.records.retain(|r| r.index < len);
    }

    /// Forgets every call (a new context: reset, re-prime, compaction, promotion).
    pub fn clear(&mut self) {
        self.records.clear();
    }

    /// How many calls are remembered.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether none is.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

fn text_hash(text: &str) -> u64 {
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(name: &str, text: &str) -> ChatMessage {
        ChatMessage::ToolResult {
            call_id: "c".into(),
            name: name.into(),
            text: text.into(),
            is_error: false,
        }
    }

    fn ledger_with(messages: &[ChatMessage], index: usize) -> ReadLedger {
        let mut ledger = ReadLedger::default();
        let ChatMessage::ToolResult { name, text, .. } = &messages[index] else {
            panic!("not a result");
        };
        ledger.record(ReadRecord::new(
            name,
            json!({"path": "a.rs"}),
            7,
            (2, 3),
            index,
            text,
        ));
        ledger
    }

    #[test]
    fn sp2_a_held_result_of_the_same_call_is_found() {
        let messages = vec![
            ChatMessage::User { text: "u".into() },
            result("read", "1|fn a() {}"),
        ];
        let ledger = ledger_with(&messages, 1);
        let found = ledger
            .earlier("read", &json!({"path": "a.rs"}), &messages)
            .expect("held");
        assert_eq!((found.review, found.call, found.bytes), (2, 3, 11));
        assert_eq!(found.fingerprint, 7);
        assert!(ledger
            .earlier("read", &json!({"path": "a.rs:2"}), &messages)
            .is_none());
        assert!(ledger
            .earlier("search", &json!({"path": "a.rs"}), &messages)
            .is_none());
    }

    #[test]
    fn sp2_an_evicted_compacted_or_cut_result_is_never_pointed_at() {
        let mut messages = vec![
            ChatMessage::User { text: "u".into() },
            result("read", "1|fn a() {}"),
        ];
        let ledger = ledger_with(&messages, 1);
        let args = json!({"path": "a.rs"});
        // P4 replaced the text by its placeholder.
        let mut evicted = messages.clone();
        evicted[1] = result("read", "[Stale result elided - 90 tokens]");
        assert!(ledger.earlier("read", &args, &evicted).is_none());
        // A compaction moved another message into its place.
        let mut compacted = messages.clone();
        compacted[1] = ChatMessage::User {
            text: "summary".into(),
        };
        assert!(ledger.earlier("read", &args, &compacted).is_none());
        // A failed attempt was cut off.
        messages.truncate(1);
        assert!(ledger.earlier("read", &args, &messages).is_none());
    }

    #[test]
    fn sp2_the_ledger_keeps_the_latest_record_of_a_call_and_is_bounded() {
        let messages: Vec<ChatMessage> = (0..=MAX_RECORDS + 1)
            .map(|i| result("find", &format!("r{i}")))
            .collect();
        let mut ledger = ReadLedger::default();
        let args = json!({"paths": "*.rs"});
        for i in [0, 1] {
            let text = format!("r{i}");
            ledger.record(ReadRecord::new("find", args.clone(), 1, (1, 1), i, &text));
        }
        assert_eq!(ledger.len(), 1);
        assert_eq!(ledger.earlier("find", &args, &messages).unwrap().index, 1);
        for i in 0..=MAX_RECORDS + 1 {
            let text = format!("r{i}");
            let args = json!({ "paths": text });
            ledger.record(ReadRecord::new("find", args, 1, (1, 1), i, &text));
        }
        assert_eq!(ledger.len(), MAX_RECORDS);
        ledger.truncate(10);
        assert_eq!(ledger.len(), 8, "indices 2..=9 are left");
        ledger.clear();
        assert!(ledger.is_empty());
        assert!(rereadable("read") && rereadable("search") && rereadable("find"));
        assert!(!rereadable("advise"));
    }
}
