//! The texts of delivery that a model or the user reads, kept as data files under
//! `config/prompts/` and compiled in: the `advise` tool's answers, the held-notes preamble
//! (D9), the final-answer note (D4) and the catch-up notices (D5).
//!
//! A table file holds one `key: text` per line; lines starting with `#` are comments.
//! `{name}` placeholders are filled by [`fill`].

/// The `advise` tool's answers and argument errors (D8, D9, D10, T6, T7).
pub(crate) const TOOL_RESULTS: Table = Table(include_str!(
    "../../config/prompts/delivery-tool-results.txt"
));

/// The catch-up block's lines for the user (D5).
pub(crate) const NOTICES: Table = Table(include_str!("../../config/prompts/delivery-notices.txt"));

/// The held-notes preamble of a review prompt (D9); `{notes}` is the list of held notes.
pub(crate) const HELD_PREAMBLE: &str =
    include_str!("../../config/prompts/delivery-held-preamble.md").trim_ascii_end();

/// Appended to advice delivered under `reconfirm` right after a terminal turn (D4).
pub(crate) const FINAL_ANSWER: &str =
    include_str!("../../config/prompts/delivery-final-answer.md").trim_ascii_end();

/// The `context` attribute of advice delivered under `reconfirm` (D4).
pub(crate) const EARLIER_STEP: &str =
    include_str!("../../config/prompts/delivery-earlier-step.txt").trim_ascii_end();

/// A `key: text` table compiled in from a data file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Table(&'static str);

impl Table {
    /// The text for `key`; the key itself when the table has no such line (the tests check
    /// that every key in use is there).
    pub(crate) fn get(&self, key: &'static str) -> &'static str {
        self.lookup(key).unwrap_or(key)
    }

    fn lookup(&self, key: &str) -> Option<&'static str> {
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

/// The plural ending of "note" for `n` notes.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
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
    fn every_notice_key_is_in_its_file() {
        for key in ["catchUpTerminal", "catchUpHeld", "bestEffort"] {
            assert!(NOTICES.lookup(key).is_some(), "{key}");
        }
    }

    #[test]
    fn every_advise_argument_error_key_is_in_its_file() {
        for key in [
            "notAnObject",
            "noteEmpty",
            "noteNotAString",
            "noteMissing",
            "severityNotAString",
        ] {
            assert!(TOOL_RESULTS.lookup(key).is_some(), "{key}");
        }
    }

    #[test]
    fn fill_replaces_every_placeholder() {
        assert_eq!(
            fill("{a} and {b}, {a}", &[("a", "1"), ("b", "2")]),
            "1 and 2, 1"
        );
    }

    #[test]
    fn d9_d4_prose_files_are_compiled_in_whole() {
        assert!(HELD_PREAMBLE.starts_with("### Held advisories — reconfirm\n"));
        assert!(HELD_PREAMBLE.contains("{notes}"));
        assert!(FINAL_ANSWER.starts_with('[') && FINAL_ANSWER.ends_with(']'));
        assert_eq!(EARLIER_STEP, "raised about an earlier step");
    }
}
