//! Delivery policy (SPEC D1–D10): what happens to each advisory the advisor raises. Pure
//! logic, beneath the messages and actors; the DeliveryRouter actor wraps [`RouterState`]
//! and forwards the host events.
//!
//! - [`router`]: routing and the outbox (D1–D3, D6–D8), the router's state;
//! - `budget`: the note budget per session update a review covers (D8);
//! - [`held`]: the notes the `reconfirm` policy holds, and their preamble (D9);
//! - [`catch_up`]: terminal turns and the catch-up block (D4, D5);
//! - [`outcome`]: outcome accounting and the tool's answers (D10);
//! - [`note`]: note normalisation and the length cap of the emission guard (D8, D10);
//! - [`texts`]: the model- and user-facing texts, data files in `config/prompts/`.

mod budget;
pub mod catch_up;
pub mod held;
pub mod note;
pub mod outcome;
pub mod router;
pub(crate) mod texts;

pub use catch_up::{
    turn_was_terminal, CatchUp, CatchUpEnd, CatchUpPlan, HeldRelease, CATCH_UP_BACKOFF,
    TERMINAL_CATCH_UP,
};
pub use held::HeldNote;
pub use note::{exceeds_chars, is_content_free, normalize_note};
pub use outcome::{DeliveryCounts, DropReason, RaiseOutcome};
pub use router::{RouterState, DEFAULT_MAX_NOTE_CHARS};

/// The `context` attribute of advice delivered under `reconfirm` (D4): by the time it
/// arrives the agent has moved on.
pub const EARLIER_STEP_CONTEXT: &str = texts::EARLIER_STEP;

/// Appended to advice delivered under `reconfirm` right after a terminal turn (D4).
pub const FINAL_ANSWER_NOTE: &str = texts::FINAL_ANSWER;

/// The heading of the held-notes preamble of a review prompt (D9).
pub const HELD_HEADING: &str = "### Held advisories — reconfirm";

#[cfg(test)]
pub(crate) mod testing {
    //! Routers and notes for the unit tests of the delivery modules.

    use super::RouterState;
    use crate::domain::advice::{Advisory, Severity};
    use crate::settings::DeliveryPolicy;

    /// An `interrupt` router allowing 2 notes per update.
    pub(crate) fn router() -> RouterState {
        RouterState::new(DeliveryPolicy::Interrupt, 2)
    }

    /// A `reconfirm` router allowing 2 notes per update.
    pub(crate) fn reconfirm() -> RouterState {
        RouterState::new(DeliveryPolicy::Reconfirm, 2)
    }

    /// An advisory.
    pub(crate) fn adv(note: &str, sev: Option<Severity>) -> Advisory {
        Advisory::new(note, sev)
    }

    #[test]
    fn d9_the_heading_constant_is_the_preamble_files_first_line() {
        assert_eq!(
            super::texts::HELD_PREAMBLE.lines().next(),
            Some(super::HELD_HEADING)
        );
    }
}
