//! Consulting the advisor (G8): the host asks a question on the primary's behalf and the
//! advisor answers from its own context, after the pending backlog (or 30 s), without the
//! `advise` tool.

use std::time::Duration;

use super::texts;
use crate::domain::host::RewriteKind;

/// How long an ask lets pending reviews go first before it takes the next free slot (G8).
pub const ASK_DRAIN_WAIT: Duration = Duration::from_secs(30);

/// The longest question accepted, in characters; a longer one is refused before it is
/// queued.
pub const MAX_QUESTION_CHARS: usize = 8_000;

/// Why an ask gave no answer. Every path ends in one of these; an ask never hangs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// `advisor.consult: false`.
    #[error("consulting the advisor is turned off (advisor.consult: false)")]
    Disabled,
    /// The advisor is off or has no model (K2).
    #[error("the advisor is not running")]
    NotRunning,
    /// The named advisor an ask went to is off, paused or has no model (RO20).
    #[error("advisor {0} is not running")]
    MemberNotRunning(String),
    /// `ADVISOR_NO_REVIEW`: no model calls are made.
    #[error("the advisor makes no model calls (ADVISOR_NO_REVIEW)")]
    NoReview,
    /// The question is empty or longer than `MAX_QUESTION_CHARS` (8,000).
    #[error("the question must be 1 to {MAX_QUESTION_CHARS} characters, it has {0}")]
    BadQuestion(usize),
    /// The advisor is paused (F3).
    #[error("the advisor is paused: {0}")]
    Paused(String),
    /// A retry of a failed review is pending (F1).
    #[error("the advisor is failing (a retry is pending); ask again later")]
    Failing,
    /// The model call of the ask failed (F1–F3 apply to it like to a review).
    #[error("the advisor's model call failed: {0}")]
    Model(String),
    /// The answer carried unsafe directives and was withheld (P5).
    #[error("the advisor's answer was withheld for unsafe directives ({0})")]
    Quarantined(String),
    /// The model answered with no text.
    #[error("the advisor gave no answer")]
    NoAnswer,
    /// The total time limit passed.
    #[error("the advisor did not answer within {0} s")]
    TimedOut(u64),
    /// A reset, an abort of the runtime or dispose came first.
    #[error("the advisor was reset or stopped before it answered")]
    Released,
    /// The ask was ended before its answer, queued or with its model call running (the
    /// call is cancelled): the cause says why.
    #[error("the ask was ended: {0}")]
    Ended(AskEnd),
    /// The ask named an advisor the session's roster does not have (RO20).
    #[error("no advisor named \"{0}\" in this session")]
    UnknownAdvisor(String),
}

/// What ended an ask before its answer (G8, R1, R2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AskEnd {
    /// The host rewrote the transcript (R1): the advisor's context is gone.
    #[error("the transcript was rewritten ({})", .0.word())]
    Rewritten(RewriteKind),
    /// `/advisor off`.
    #[error("the advisor was turned off")]
    TurnedOff,
    /// The session was disposed (closed, replaced or shut down).
    #[error("the session was closed")]
    Disposed,
    /// The advisor's output was quarantined (P5) and its context cleared.
    #[error("the advisor's context was reset after a quarantined answer")]
    Quarantined,
}

impl AskEnd {
    /// The cause as one word for a protocol (`rewritten`, `turnedOff`, `closed`,
    /// `quarantined`).
    pub fn code(self) -> &'static str {
        match self {
            AskEnd::Rewritten(_) => "rewritten",
            AskEnd::TurnedOff => "turnedOff",
            AskEnd::Disposed => "closed",
            AskEnd::Quarantined => "quarantined",
        }
    }
}

/// The total time limit of an ask: the drain wait plus one request timeout of the model.
pub fn ask_time_limit(request_timeout: Duration) -> Duration {
    ASK_DRAIN_WAIT + request_timeout
}

/// Checks a question's size before anything is buffered for it.
pub fn check_question(question: &str) -> Result<(), AskError> {
    let chars = question.trim().chars().count();
    if chars == 0 || chars > MAX_QUESTION_CHARS {
        return Err(AskError::BadQuestion(chars));
    }
    Ok(())
}

/// The user message the question becomes in the advisor's context.
pub fn ask_prompt(question: &str) -> String {
    texts::fill(texts::ASK, &[("question", question.trim())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g8_the_question_is_framed_and_bounded() {
        let prompt = ask_prompt("  Is the cache invalidated on rename?\n");
        assert!(
            prompt.starts_with("### Question from the agent"),
            "{prompt}"
        );
        assert!(
            prompt.ends_with("\n\nIs the cache invalidated on rename?"),
            "{prompt}"
        );
        assert_eq!(
            ask_time_limit(Duration::from_secs(300)),
            Duration::from_secs(330)
        );
        assert_eq!(check_question("  "), Err(AskError::BadQuestion(0)));
        assert_eq!(check_question(&"é".repeat(MAX_QUESTION_CHARS)), Ok(()));
        assert_eq!(
            check_question(&"é".repeat(MAX_QUESTION_CHARS + 1)),
            Err(AskError::BadQuestion(MAX_QUESTION_CHARS + 1))
        );
        assert_eq!(
            AskError::TimedOut(330).to_string(),
            "the advisor did not answer within 330 s"
        );
    }

    #[test]
    fn g8_v2_an_ask_ended_by_a_rewrite_names_the_kind_in_the_protocols_words() {
        let ended = |kind| AskError::Ended(AskEnd::Rewritten(kind)).to_string();
        assert_eq!(
            ended(RewriteKind::TreeNavigation),
            "the ask was ended: the transcript was rewritten (tree)"
        );
        assert_eq!(
            ended(RewriteKind::SessionSwitch),
            "the ask was ended: the transcript was rewritten (switch)"
        );
    }
}
