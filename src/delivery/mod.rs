//! Delivery policy (SPEC D1–D10): what happens to each advisory the advisor raises. Pure
//! logic, beneath the messages and actors; the DeliveryRouter actor wraps [`RouterState`]
//! and forwards the host events.
//!
//! - [`router`]: routing and the outbox (D1–D3, D6–D8), the router's state;
//! - [`advisors`]: each advisor's guard, policy and severity cap (RO13, RO15, RO16);
//! - `budget`: the note budget per session update a review covers (D8, SP3);
//! - [`lane`]: the bounded blocker lane — too-short and near-duplicate notes, the wake limit
//!   (SP3);
//! - [`held`]: the notes the `reconfirm` policy holds, and their preamble (D9);
//! - [`deferred`]: the notes the `defer` policy keeps back to the final boundary (P1);
//! - [`catch_up`]: terminal turns and the catch-up block (D4, D5);
//! - `outbox`: the aside queue, the outbox's steers and the cards waiting for a review (D3,
//!   RO22);
//! - [`outcome`]: outcome accounting and the tool's answers (D10);
//! - `review_ref`: which review and whose ([`ReviewRef`], [`ReviewId`], [`UpdateId`]);
//! - [`tap`]: a copy of every raise and its outcome for a measuring host (EV3);
//! - [`note`]: note normalisation and the content-free keys of the emission guard (P3);
//! - [`guard`]: the emission guard's memory, its cap and its seed from a branch (P3);
//! - [`window`]: the final-boundary window and its merged delivery (CA13–CA17);
//! - [`texts`]: the model- and user-facing texts, data files in `config/prompts/`.

pub mod advisors;
mod budget;
pub mod catch_up;
pub mod deferred;
pub mod guard;
pub mod held;
pub mod lane;
pub mod note;
mod outbox;
pub mod outcome;
mod review_ref;
pub mod router;
pub mod tap;
pub(crate) mod texts;
pub(crate) mod turn_end;
pub mod window;
#[cfg(test)]
mod window_tests;

pub use catch_up::{turn_will_continue, CatchUpEnd, CatchUpPlan};
pub use outcome::{DeliveryCounts, DropReason, RaiseOutcome};
pub use review_ref::{ReviewId, ReviewRef};
pub use router::{RouterState, TurnEndPlanned};
pub use tap::{AdviceTap, RaisedAdvice};
pub use window::LastPrompt;

use crate::domain::advice::Advisory;

/// The router's part of the status (C3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryStatus {
    /// Outcome counters (D10).
    pub counts: DeliveryCounts,
    /// Whether the user-interrupt latch is set (D6).
    pub suppressed: bool,
    /// The notes held now, oldest first (D9), of every advisor (each names its advisor,
    /// RO18).
    pub held: Vec<Advisory>,
    /// The counters of each named advisor, by slug (D10, RO13); `counts` is their sum with
    /// the unnamed advisor's. Empty without a roster.
    pub per_advisor: std::collections::BTreeMap<String, DeliveryCounts>,
}

#[cfg(test)]
pub(crate) mod testing {
    //! Routers and notes for the unit tests of the delivery modules.

    use super::{ReviewRef, RouterState};
    use crate::domain::advice::{Advisory, Severity};
    use crate::settings::DeliveryPolicy;

    // The routers of the tests of the other rules take placeholder notes (`"a"`, `"c1"`)
    // shorter than SP3's minimum; SP3's tests build theirs with `RouterState::new`.

    /// An `interrupt` router allowing 2 notes per update, of any length.
    pub(crate) fn router() -> RouterState {
        RouterState::new(DeliveryPolicy::Interrupt, 2).with_min_note_chars(0)
    }

    /// A `defer` router allowing 2 notes per update, no immune turns, of any length.
    pub(crate) fn defer() -> RouterState {
        RouterState::new(DeliveryPolicy::Defer, 2)
            .with_immune_turns(0)
            .with_min_note_chars(0)
    }

    /// A `reconfirm` router allowing 2 notes per update, of any length.
    pub(crate) fn reconfirm() -> RouterState {
        RouterState::new(DeliveryPolicy::Reconfirm, 2).with_min_note_chars(0)
    }

    /// Review `number` of `epoch` of the unnamed advisor (RO12).
    pub(crate) fn rv(epoch: u64, number: u64) -> ReviewRef {
        ReviewRef::new(None, epoch, number)
    }

    /// An advisory.
    pub(crate) fn adv(note: &str, sev: Option<Severity>) -> Advisory {
        Advisory::new(note, sev)
    }
}
