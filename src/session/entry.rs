//! One entry line as the reader uses it (SPEC L1), and the general way to read it: serde's
//! derive over the fields the reader uses, each read as the transcript's own `Deserialize`
//! reads it, which decides what any shape means and words every malformed-line report.
//!
//! The fast way ([`super::direct`], by hand from the line's bytes) produces the same
//! [`Entry`] wherever it answers, and gives up everywhere else.

use std::borrow::Cow;

use serde::Deserialize;

use crate::domain::transcript::{Content, RawJson, TranscriptMessage};

/// The entry fields the reader uses, however they were read.
#[derive(Debug, PartialEq)]
pub(super) struct Entry<'a> {
    /// The entry's `type` (always present: an entry without one is malformed).
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

/// The fields of one entry line the reader uses, read the general way (everything else is
/// ignored unparsed, whatever it holds).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EntryFields<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    message: Option<TranscriptMessage>,
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
    content: Option<Content>,
    #[serde(default)]
    display: Option<bool>,
    details: Option<RawJson>,
    #[serde(default)]
    attribution: Option<String>,
}

impl<'a> EntryFields<'a> {
    /// The entry; `None` without a `type`.
    pub(super) fn into_entry(self) -> Option<Entry<'a>> {
        Some(Entry {
            kind: self.kind?.0,
            id: self.id.map(|t| t.0),
            message: self.message,
            summary: self.summary,
            first_kept_entry_id: self.first_kept_entry_id,
            first_kept_entry_index: self.first_kept_entry_index,
            tokens_before: self.tokens_before,
            from_id: self.from_id,
            custom_type: self.custom_type,
            content: self.content,
            display: self.display,
            details: self.details,
            attribution: self.attribution,
        })
    }
}

/// A string borrowed from the line when it has no escapes.
#[derive(Deserialize)]
#[serde(transparent)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
