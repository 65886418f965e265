//! D10, P3, SP3: the checks of a raised note's text, before anything about its advisor —
//! too long (a bounded count on the raw note, before it is normalised or stored), empty or
//! content-free once normalised, too short once trimmed.

use crate::delivery::lane::{is_too_short, MIN_NOTE_CHARS};
use crate::delivery::note::{is_content_free_key, normalize_note};
use crate::delivery::outcome::DropReason;
use crate::domain::advice::{Advisory, Severity};
use crate::texts::exceeds_chars;

/// The note cap when none is configured (`advisor.maxNoteChars`, K1).
pub const DEFAULT_MAX_NOTE_CHARS: usize = 2000;

/// The note limits of the raise pipeline.
#[derive(Debug, Clone, Copy)]
pub(super) struct NoteLimits {
    /// Notes longer than this are refused `tooLong` (D10).
    pub(super) max_chars: usize,
    /// Notes shorter than this once trimmed are dropped `tooShort` (SP3).
    pub(super) min_chars: usize,
    /// `advisor.spendControls`: false, the blocker lane is unbounded as before SP3 — no
    /// `tooShort` or `nearDuplicate` drops, blockers never counted against the budget, no
    /// wake limit.
    pub(super) spend_controls: bool,
}

impl Default for NoteLimits {
    fn default() -> Self {
        Self {
            max_chars: DEFAULT_MAX_NOTE_CHARS,
            min_chars: MIN_NOTE_CHARS,
            spend_controls: true,
        }
    }
}

impl NoteLimits {
    /// The dedupe key of `note` (D8's normalisation), or why it is refused: `tooLong`,
    /// `empty`, `contentFree`, `tooShort` (with the spend controls on), in that order.
    pub(super) fn key_of(&self, note: &str) -> Result<String, DropReason> {
        if exceeds_chars(note, self.max_chars) {
            return Err(DropReason::TooLong);
        }
        let key = normalize_note(note);
        if key.is_empty() {
            return Err(DropReason::Empty);
        }
        if is_content_free_key(&key) {
            return Err(DropReason::ContentFree);
        }
        if self.spend_controls && is_too_short(note, self.min_chars) {
            return Err(DropReason::TooShort);
        }
        Ok(key)
    }
}

/// RO16: a capped advisor never says more than its cap: lowers `advisory` to `cap`;
/// true when it did.
pub(super) fn cap_severity(cap: Severity, advisory: &mut Advisory) -> bool {
    if advisory.effective_severity() <= cap {
        return false;
    }
    tracing::info!(
        raised = advisory.effective_severity().as_str(),
        cap = cap.as_str(),
        "advisory severity capped"
    );
    advisory.severity = Some(cap);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d10_sp3_a_notes_text_is_checked_for_length_content_and_shortness_in_that_order() {
        let limits = NoteLimits {
            max_chars: 20,
            ..NoteLimits::default()
        };
        assert_eq!(limits.key_of(&"x".repeat(21)), Err(DropReason::TooLong));
        assert_eq!(limits.key_of("   "), Err(DropReason::Empty));
        assert_eq!(limits.key_of("ok done"), Err(DropReason::ContentFree));
        assert_eq!(limits.key_of("fix it"), Err(DropReason::TooShort));
        let lax = NoteLimits {
            spend_controls: false,
            ..limits
        };
        assert_eq!(lax.key_of("fix it"), Ok(normalize_note("fix it")));
        assert!(limits.key_of("Check the error path").is_ok());
    }

    #[test]
    fn ro16_a_capped_advisor_never_says_more_than_its_cap() {
        let mut blocker = Advisory::new("Check the error path", Some(Severity::Blocker));
        assert!(cap_severity(Severity::Concern, &mut blocker));
        assert_eq!(blocker.effective_severity(), Severity::Concern);
        assert!(
            !cap_severity(Severity::Concern, &mut blocker),
            "already within the cap"
        );
    }
}
