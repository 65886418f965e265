//! Text tables compiled in from the data files under `config/prompts/`, and the small
//! helpers that fill them. Every model- or user-facing sentence lives in such a file; the
//! modules that speak (the `advise` tool, delivery, the review engine) include their own,
//! and so does the `advisor` command with [`Table`], the one item the crate root re-exports
//! (as `TextTable`).
//!
//! A table file holds one `key: text` per line; lines starting with `#` are comments.
//! `{name}` placeholders are filled by [`fill`]; [`exceeds_chars`] measures a text against a
//! character cap without walking a long one to its end.

/// The notices and command answers the user reads (`config/prompts/notices.txt`).
pub(crate) const NOTICES: Table = Table(include_str!("../config/prompts/notices.txt"));

/// The status lines (`config/prompts/status.txt`): `/advisor status` and the spend figures
/// other notices quote.
pub(crate) const STATUS: Table = Table(include_str!("../config/prompts/status.txt"));

/// The notice `key` of [`NOTICES`], filled with `vars`.
pub(crate) fn notice(key: &'static str, vars: &[(&str, &str)]) -> String {
    fill(NOTICES.get(key), vars)
}

/// A `key: text` table compiled in from a data file (`include_str!`): one `key: text` per
/// line, `#` comment lines skipped.
#[derive(Debug, Clone, Copy)]
pub struct Table(
    /// The file's text.
    pub &'static str,
);

impl Table {
    /// The text for `key`; the key itself when the table has no such line (the tests check
    /// that every key in use is there).
    pub fn get(&self, key: &'static str) -> &'static str {
        self.lookup(key).unwrap_or(key)
    }

    /// The text for `key` with each `{name}` of `vars` replaced by its value (`fill`).
    pub fn line(&self, key: &'static str, vars: &[(&str, &str)]) -> String {
        fill(self.get(key), vars)
    }

    /// The text for `key`, trimmed; `None` when the table has no such line.
    pub fn lookup(&self, key: &str) -> Option<&'static str> {
        self.0
            .lines()
            .filter(|line| !line.starts_with('#'))
            .find_map(|line| {
                let (k, text) = line.split_once(':')?;
                (k == key).then(|| text.trim())
            })
    }
}

/// `template` with each `{name}` of `vars` replaced by its value.
pub(crate) fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (name, value) in vars {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

/// `template` with each `{name}` of `vars` replaced by its value in one pass: a value that
/// itself holds a `{name}` (a note quoting a placeholder) is copied as it is, not filled.
pub(crate) fn fill_in_one_pass(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let hit = vars.iter().find_map(|(name, value)| {
            let tail = after.strip_prefix(name)?.strip_prefix('}')?;
            Some((*value, tail))
        });
        match hit {
            Some((value, tail)) => {
                out.push_str(value);
                rest = tail;
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The JSON kind of a value ("a string", "null"…), for messages about a value of the
/// wrong kind.
pub(crate) fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The plural ending of "note" for `n` notes.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// True when `note` has more than `max_chars` characters. Costs O(1) for a note whose byte
/// length is within the cap, and at most `max_chars` steps otherwise: a 50 MB note is never
/// walked to its end, copied or normalised.
pub(crate) fn exceeds_chars(note: &str, max_chars: usize) -> bool {
    note.len() > max_chars && note.chars().nth(max_chars).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_skip_comments_and_trim_the_text() {
        let t = Table("# key: no\nkey:  the text \nother: x: y\n");
        assert_eq!(t.get("key"), "the text");
        assert_eq!(t.get("other"), "x: y");
        assert_eq!(t.get("missing"), "missing");
    }

    #[test]
    fn every_notice_key_in_use_is_in_its_file() {
        let keys = [
            "on",
            "off",
            "noModelAssigned",
            "unavailable",
            "test",
            "warning",
            "auditFailed",
            "noTranscriptFile",
            "noModel",
            "promotionOff",
            "backupOff",
            "backupsCapped",
            "pausedTimed",
            "pausedUntilFixed",
            "resumed",
            "droppedBatch",
            "quarantined",
            "switched",
            "reverted",
            "syncWait",
        ];
        for key in keys {
            assert!(
                NOTICES.lookup(key).is_some(),
                "{key} is missing from notices.txt"
            );
        }
    }

    #[test]
    fn fill_in_one_pass_leaves_placeholders_inside_values_alone() {
        assert_eq!(
            fill_in_one_pass("{a} and {b}, {a} {c}", &[("a", "{b}"), ("b", "2")]),
            "{b} and 2, {b} {c}"
        );
    }

    #[test]
    fn fill_replaces_every_placeholder() {
        assert_eq!(
            fill("{a} and {b}, {a}", &[("a", "1"), ("b", "2")]),
            "1 and 2, 1"
        );
        assert_eq!(plural(1), "");
        assert_eq!(plural(2), "s");
    }

    #[test]
    fn d10_the_length_cap_counts_characters_not_bytes() {
        assert!(!exceeds_chars("abc", 3));
        assert!(exceeds_chars("abcd", 3));
        // Three characters, six bytes: within a cap of three.
        assert!(!exceeds_chars("äöü", 3));
        assert!(exceeds_chars("äöüx", 3));
        assert!(!exceeds_chars("", 0));
        assert!(exceeds_chars(&"x".repeat(100_000), 2000));
    }
}
