//! The texts the review engine shows the advisor model, kept as data files under
//! `config/prompts/` (`review-*.md`) so they can be read and edited as prose.
//!
//! Each file is included at build time; the trailing newline an editor leaves is trimmed.
//! Placeholders are `{name}`, filled by [`fill`].

/// The note opening the first review after F2 dropped turns; `{turns}` is "1 turn" or
/// "N turns".
pub const MISSED_TURNS: &str =
    include_str!("../../config/prompts/review-missed-turns.md").trim_ascii_end();

/// Appended to the last tool result of the last allowed tool round (G3): finish now.
pub const FINISH_NOW: &str =
    include_str!("../../config/prompts/review-finish-now.md").trim_ascii_end();

/// The tool result of a call made after the tool budget was used up (G3).
pub const TOOL_NOT_RUN: &str =
    include_str!("../../config/prompts/review-tool-not-run.md").trim_ascii_end();

/// The tool result of a call past the review's tool budget (SP1); `{calls}` is "1 tool
/// call" or "N tool calls".
pub const BUDGET_SPENT: &str =
    include_str!("../../config/prompts/review-budget-spent.md").trim_ascii_end();

/// The one-line result of a call repeating an earlier one whose result is still in the
/// context, over unchanged files (SP2); `{review}` and `{call}` name the earlier call,
/// `{bytes}` its result's length.
pub const REREAD_SAVED: &str =
    include_str!("../../config/prompts/review-reread-saved.md").trim_ascii_end();

/// Appended once to the result of the call a model has made [`crate::review::repeat::REPEAT_LIMIT`]
/// times in a row with the same arguments (P2); `{count}` is that number.
pub const REPEATED_CALL: &str =
    include_str!("../../config/prompts/review-repeated-call.md").trim_ascii_end();

/// The tool result of a call repeated once more after [`REPEATED_CALL`]: it is not run and
/// the review ends (P2).
pub const REPEAT_NOT_RUN: &str =
    include_str!("../../config/prompts/review-repeat-not-run.md").trim_ascii_end();

/// The tool result when the tool executor could not be reached (it is restarting, F5).
pub const EXECUTOR_RESTARTING: &str =
    include_str!("../../config/prompts/review-executor-restarting.md").trim_ascii_end();

/// The date and working directory reminder prepended to the first user message of each
/// request (P8); `{date}` is YYYY-MM-DD, `{cwd}` the working directory.
pub const REMINDER: &str = include_str!("../../config/prompts/review-reminder.md").trim_ascii_end();

/// What the transcript file records for a reply the output quarantine withheld (P5, P9),
/// in oh-my-pi's words, as the text and error of an errored assistant message;
/// `{labels}` names the hazard classes.
pub const QUARANTINED: &str =
    include_str!("../../config/prompts/review-quarantined.md").trim_ascii_end();

/// The system prompt of the summary call a compaction makes (G5).
pub const SUMMARY_INSTRUCTION: &str =
    include_str!("../../config/prompts/review-summary.md").trim_ascii_end();

/// The heading of the message that opens a compacted context; the summary follows it.
pub const SUMMARY_HEADING: &str =
    include_str!("../../config/prompts/review-summary-heading.md").trim_ascii_end();

/// The line under [`SUMMARY_HEADING`] that tells the advisor what the summary stands for.
pub const SUMMARY_INTRO: &str =
    include_str!("../../config/prompts/review-summary-intro.md").trim_ascii_end();

/// The user message an ask (G8) becomes; `{question}` is the question.
pub const ASK: &str = include_str!("../../config/prompts/review-ask.md").trim_ascii_end();

/// The tool result of an `advise` call made while answering a question (G8).
pub const ASK_NO_ADVISE: &str =
    include_str!("../../config/prompts/review-ask-no-advise.md").trim_ascii_end();

pub(crate) use crate::texts::fill;

/// "1 tool call" or "N tool calls".
pub fn tool_calls(n: u32) -> String {
    format!("{n} tool call{}", if n == 1 { "" } else { "s" })
}

/// "1 turn" or "N turns".
pub fn turns(n: usize) -> String {
    format!("{n} turn{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_trimmed_and_placeholders_fill() {
        for text in [
            MISSED_TURNS,
            FINISH_NOW,
            TOOL_NOT_RUN,
            BUDGET_SPENT,
            REREAD_SAVED,
            EXECUTOR_RESTARTING,
            SUMMARY_INSTRUCTION,
            SUMMARY_HEADING,
            SUMMARY_INTRO,
            ASK,
            ASK_NO_ADVISE,
        ] {
            assert!(!text.is_empty() && text.trim_end() == text, "{text:?}");
        }
        assert_eq!(fill("a {x} b {x}", &[("x", "y")]), "a y b y");
        assert_eq!(turns(1), "1 turn");
        assert_eq!(turns(2), "2 turns");
        assert!(fill(MISSED_TURNS, &[("turns", &turns(3))]).contains("skipped 3 turns of"));
    }
}
