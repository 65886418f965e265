//! The emission guard's memory (P3): each dedupe key's highest rank, at most
//! [`HISTORY_CAP`] keys, the oldest forgotten first. It lives in the router, outside the
//! advisor's context, survives compaction and the other resets of R1 within one session
//! branch, and is seeded from the advisories present in the branch after a session switch,
//! resume, fork or tree move ([`branch_advisories`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::note::normalize_note;
use crate::domain::advice::{Advisory, Severity};
use crate::domain::transcript::{Content, RawJson, TranscriptMessage};

/// How many keys the history keeps (P3).
pub const HISTORY_CAP: usize = 4096;

/// Each key's highest rank, oldest key first.
#[derive(Debug, Clone, Default)]
pub struct GuardHistory {
    ranks: HashMap<String, u8>,
    order: VecDeque<String>,
}

impl GuardHistory {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keys remembered now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// The highest rank recorded for `key`.
    pub fn rank(&self, key: &str) -> Option<u8> {
        self.ranks.get(key).copied()
    }

    /// Whether a note of `rank` under `key` repeats what was raised (same or higher rank).
    pub fn repeats(&self, key: &str, rank: u8) -> bool {
        self.rank(key).is_some_and(|r| r >= rank)
    }

    /// Records `key` at `rank` (an escalation raises it; never lowered). A new key beyond
    /// the cap makes the oldest one forgotten.
    pub fn record(&mut self, key: &str, rank: u8) {
        if let Some(r) = self.ranks.get_mut(key) {
            *r = (*r).max(rank);
            return;
        }
        self.ranks.insert(key.to_string(), rank);
        self.order.push_back(key.to_string());
        while self.order.len() > HISTORY_CAP {
            if let Some(old) = self.order.pop_front() {
                self.ranks.remove(&old);
            }
        }
    }

    /// Forgets `key` when its recorded rank is `rank` (a note displaced before it reached
    /// the primary: a later repeat is not a duplicate of it).
    pub fn forget(&mut self, key: &str, rank: u8) {
        if self.ranks.get(key) == Some(&rank) {
            self.ranks.remove(key);
            if let Some(i) = self.order.iter().position(|k| k == key) {
                self.order.remove(i);
            }
        }
    }

    /// Starts over from the advisories present in a branch (P3's seed).
    pub fn seed(&mut self, advisories: &[Advisory]) {
        self.ranks.clear();
        self.order.clear();
        for a in advisories {
            let key = normalize_note(&a.note);
            if !key.is_empty() {
                self.record(&key, a.effective_severity().rank());
            }
        }
    }
}

/// The advisories present in a branch: the notes of its advisor messages (X2's
/// `customType` `advisor`), read from their `details` (a list of notes, or an object with
/// `notes`) or, failing that, from the `<advisory>` elements of their content (D2).
pub fn branch_advisories(messages: &[Arc<TranscriptMessage>]) -> Vec<Advisory> {
    let mut out = Vec::new();
    for message in messages {
        let TranscriptMessage::Custom(custom) = &**message else {
            continue;
        };
        if !custom.is_advisor_message() {
            continue;
        }
        let details = custom.details.as_ref().map(RawJson::to_value);
        let from_details = details.as_ref().and_then(details_notes);
        match from_details {
            Some(notes) => out.extend(notes),
            None => out.extend(content_notes(&custom.content)),
        }
    }
    out
}

fn details_notes(details: &Value) -> Option<Vec<Advisory>> {
    let list = match details {
        Value::Array(_) => details,
        Value::Object(map) => map.get("notes")?,
        _ => return None,
    };
    let notes: Vec<Advisory> = serde_json::from_value(list.clone()).ok()?;
    (!notes.is_empty()).then_some(notes)
}

/// The notes of the `<advisory …>` elements of an advisor message's text (D2 format).
fn content_notes(content: &Content) -> Vec<Advisory> {
    let text = content.joined_text("\n", false);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("<advisory") {
        let after = &rest[start..];
        let Some(open_end) = after.find('>') else {
            break;
        };
        let tag = &after[..open_end];
        let body_and_rest = &after[open_end + 1..];
        let Some(close) = body_and_rest.find("</advisory>") else {
            break;
        };
        let body = body_and_rest[..close].trim_matches('\n');
        let severity = attribute(tag, "severity").and_then(|s| s.parse::<Severity>().ok());
        let note = crate::xml::unescape(body);
        if !note.trim().is_empty() {
            let mut advisory = Advisory::new(note, severity);
            // RO18: a named advisor's advice names it; the seed gives it back to it.
            advisory.advisor = attribute(tag, "advisor").map(crate::xml::unescape);
            out.push(advisory);
        }
        rest = &body_and_rest[close + "</advisory>".len()..];
    }
    out
}

fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let pattern = format!(" {name}=\"");
    let at = tag.find(&pattern)? + pattern.len();
    let end = tag[at..].find('"')?;
    Some(&tag[at..at + end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::advice::{Channel, Delivery};
    use crate::domain::transcript::CustomMessage;

    #[test]
    fn p3_history_keeps_the_highest_rank_and_forgets_the_oldest_key_past_4096() {
        let mut h = GuardHistory::new();
        h.record("a", 2);
        h.record("a", 1);
        assert_eq!(h.rank("a"), Some(2));
        assert!(h.repeats("a", 2) && !h.repeats("a", 3));
        for i in 0..HISTORY_CAP {
            h.record(&format!("k{i}"), 1);
        }
        assert_eq!(h.len(), HISTORY_CAP);
        assert_eq!(h.rank("a"), None, "the oldest key went first");
        assert_eq!(h.rank("k0"), Some(1));
        h.record("k0", 3);
        h.record("new", 1);
        assert_eq!(
            h.rank("k0"),
            None,
            "an escalation does not make a key younger"
        );
        assert_eq!(h.rank("k1"), Some(1));
    }

    #[test]
    fn p3_branch_advisories_come_from_details_or_from_the_advisory_elements() {
        let delivery = Delivery::new(
            Channel::Card,
            vec![
                Advisory::new("Check the null case", Some(Severity::Concern)),
                Advisory::new("rename x", None),
            ],
            None,
        );
        let mut pi_style = delivery.to_message();
        if let TranscriptMessage::Custom(c) = &mut pi_style {
            c.details = Some(
                serde_json::json!({"channel": "card", "notes": [
                {"note": "a & b", "severity": "blocker"}]})
                .into(),
            );
        }
        let mut text_only = delivery.to_message();
        if let TranscriptMessage::Custom(c) = &mut text_only {
            c.details = None;
        }
        let other = TranscriptMessage::Custom(CustomMessage {
            custom_type: "other".into(),
            content: Content::Text("<advisory>not ours</advisory>".into()),
            display: true,
            details: None,
            attribution: None,
        });
        let messages: Vec<Arc<TranscriptMessage>> = [
            TranscriptMessage::user("<advisory>typed by the user</advisory>"),
            delivery.to_message(),
            pi_style,
            text_only,
            other,
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let found: Vec<(String, Option<Severity>)> = branch_advisories(&messages)
            .into_iter()
            .map(|a| (a.note, a.severity))
            .collect();
        let expected = vec![
            ("Check the null case".to_string(), Some(Severity::Concern)),
            ("rename x".to_string(), None),
            ("a & b".to_string(), Some(Severity::Blocker)),
            ("Check the null case".to_string(), Some(Severity::Concern)),
            ("rename x".to_string(), None),
        ];
        assert_eq!(found, expected);
        let mut h = GuardHistory::new();
        h.record("stale", 3);
        h.seed(&branch_advisories(&messages));
        assert_eq!(h.rank("stale"), None, "a seed starts over");
        assert_eq!(h.rank("check the null case"), Some(2));
        assert_eq!(h.rank("a b"), Some(3));
        assert_eq!(h.rank("rename x"), Some(1));
    }

    #[test]
    fn p3_ro18_named_advisories_keep_their_advisor_when_read_back_from_the_branch() {
        let delivery = Delivery::new(
            Channel::Aside,
            vec![
                Advisory::new("a \"quoted\" <tag>", Some(Severity::Nit))
                    .with_advisor("R&D \"Core\""),
                Advisory::new("check the null case", None).with_advisor("Architecture, Security"),
                Advisory::new("unnamed", None),
            ],
            Some("raised about an earlier step"),
        );
        let mut text_only = delivery.to_message();
        if let TranscriptMessage::Custom(c) = &mut text_only {
            c.details = None;
        }
        for message in [delivery.to_message(), text_only] {
            let found: Vec<(String, Option<Severity>, Option<String>)> =
                branch_advisories(&[Arc::new(message)])
                    .into_iter()
                    .map(|a| (a.note, a.severity, a.advisor))
                    .collect();
            assert_eq!(
                found,
                [
                    (
                        "a \"quoted\" <tag>".to_string(),
                        Some(Severity::Nit),
                        Some("R&D \"Core\"".to_string())
                    ),
                    (
                        "check the null case".to_string(),
                        None,
                        Some("Architecture, Security".to_string())
                    ),
                    ("unnamed".to_string(), None, None),
                ]
            );
        }
    }
}
