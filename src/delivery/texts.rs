//! The texts of delivery that a model or the user reads, kept as data files under
//! `config/prompts/` and compiled in: the `advise` tool's answers, the held-notes preamble
//! (D9), the final-answer note (D4) and the catch-up notices (D5).
//!
//! The `advise` tool's answers live beside the tool ([`crate::tools::advise`]); the table
//! format and [`fill`] are in [`crate::texts`].

pub(crate) use crate::texts::{fill, plural, Table};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_notice_key_is_in_its_file() {
        for key in ["catchUpTerminal", "catchUpHeld", "bestEffort"] {
            assert!(NOTICES.lookup(key).is_some(), "{key}");
        }
    }

    #[test]
    fn d9_d4_prose_files_are_compiled_in_whole() {
        assert!(HELD_PREAMBLE.starts_with("### Held advisories — reconfirm\n"));
        assert!(HELD_PREAMBLE.contains("{notes}"));
        assert!(FINAL_ANSWER.starts_with('[') && FINAL_ANSWER.ends_with(']'));
        assert_eq!(EARLIER_STEP, "raised about an earlier step");
    }
}
