//! Messages of the DeliveryRouter (D-rules).

use actix::Message as ActixMessage;

use crate::delivery::turn_end::TurnEndPlan;
pub use crate::delivery::DeliveryStatus;
use crate::delivery::{
    CatchUpEnd, CatchUpPlan, LastPrompt, RaiseOutcome, ReviewId, ReviewRef, TurnEndPlanned,
};
use crate::domain::advice::{AdvisorLabel, Advisory, Delivery};
use crate::members::Members;

/// The advisor called `advise` (mid-review, G3).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "RaiseOutcome")]
pub struct RaiseAdvice {
    /// The review that raised it, and whose (RO13).
    pub review: ReviewRef,
    /// The advice.
    pub advisory: Advisory,
}

/// `/advisor test` (C2): raises `advisory` as the unnamed advisor's through the normal
/// delivery path and answers its outcome. Unlike [`RaiseAdvice`] it is the user's check: it
/// does not put the unnamed advisor's policy in use (RO15) and is taken when a roster
/// replaced the unnamed advisor too (RO12, RO21).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "RaiseOutcome")]
pub struct InjectAdvice {
    /// The session's epoch and the review number it counts as (each injection its own
    /// update, D8).
    pub review: ReviewId,
    /// The advice.
    pub advisory: Advisory,
}

/// Starts a new delivery epoch (R1).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct ResetDelivery {
    /// The new epoch.
    pub epoch: u64,
    /// The reset moved to another branch (session switch, resume, new session, fork, tree
    /// move, rewind): its replay starts no run until the next user prompt (P3), and the guard is seeded from the branch ([`SeedGuard`]).
    pub branch: bool,
    /// Another conversation begins (CA8: new session, switch or resume, fork, tree move;
    /// not a rewind): T, the guidance turn, the immune turns and the continuation mark
    /// start over.
    pub conversation: bool,
}

/// Seeds the emission guard's memory from the advisories present in the branch the advisor
/// now reviews (P3), sent with the first turn end after a branch change.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct SeedGuard {
    /// The epoch the seed belongs to.
    pub epoch: u64,
    /// The branch's advisories, oldest first.
    pub advisories: Vec<Advisory>,
}

/// Enables or disables delivery (C1, R2).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct SetDeliveryEnabled {
    /// Whether delivery is on.
    pub enabled: bool,
}

/// Plans delivery at a primary turn end (supervisor → router, after the host's
/// [`crate::messages::host::PrimaryTurnEnded`]): counts the boundary (D7, CA14), opens the
/// window of a final boundary and releases the deferred notes into it (CA13, CA20), and
/// answers whether the boundary is an advisor continuation's (CA17) and, under `reconfirm`,
/// whether the turn end waits for the advisor (D5). The window is closed by
/// [`CloseWindow`] when the turn end's waits are over.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "TurnEndPlanned")]
pub struct PlanTurnEnd {
    /// The turn's last assistant message called no tools (D4).
    pub terminal: bool,
    /// The turn ended a final answer: its last assistant message stopped, called no
    /// tools and has text (P1's terminal answer).
    pub answered: bool,
    /// The turn is work in progress (P1); a turn end that is not is a final boundary.
    pub wip: bool,
    /// An advisor runs that the turn end could wait for.
    pub can_wait: bool,
    /// A final boundary opens the window (CA13): its turn ended in an assistant message
    /// without tool calls, or the host said the run stops.
    pub window: bool,
    /// The transcript's last genuine user prompt (CA17).
    pub last_prompt: LastPrompt,
    /// The unnamed advisor's review mode as the settings say now (CA1, CA5).
    pub review_mode: crate::settings::ReviewMode,
}

impl RegisterAdvisor {
    /// What the router is told of the named member `slug` of `members` (RO10, RO15, RO16;
    /// CA6, CA16, CA18: the entry's own review mode); `None` for the unnamed advisor.
    pub(crate) fn of(members: &Members, slug: Option<&str>) -> Option<Self> {
        let member = members.get(slug)?;
        let plan = member.plan();
        Some(Self {
            label: plan.label.clone()?,
            policy: plan.policy,
            max_notes: plan.max_notes,
            max_severity: plan.max_severity,
            // SP6: at agent-end once its spend ceiling switched it.
            review_mode: member.cadence_in_effect(&members.config().settings).mode,
        })
    }
}

/// What the supervisor sends the router for a turn end's `plan`
/// ([`TurnEndPlan::decide`]): the seed guard at `epoch` when the plan seeds it (P3), then
/// the router's [`PlanTurnEnd`] (D4, D7, P1, CA13, CA17), with the unnamed advisor's
/// `review_mode` as the settings say now (CA1, CA5).
pub(crate) fn turn_end_messages(
    plan: TurnEndPlan,
    epoch: u64,
    review_mode: crate::settings::ReviewMode,
) -> (Option<SeedGuard>, PlanTurnEnd) {
    let seed = (plan.seed_guard).map(|advisories| SeedGuard { epoch, advisories });
    let planned = PlanTurnEnd {
        terminal: plan.terminal,
        answered: plan.answered,
        wip: plan.wip,
        can_wait: plan.review,
        window: plan.window,
        last_prompt: plan.last_prompt,
        review_mode,
    };
    (seed, planned)
}

/// The turn end's waits are over (supervisor → router, CA13): the final-boundary window
/// `window` closes and what it buffered goes out as one message (CA14–CA16). A window
/// closed already (a later turn end closed it) changes nothing.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct CloseWindow {
    /// The window's id, as [`PlanTurnEnd`] answered it.
    pub window: u64,
}

/// A catch-up block ended (supervisor → router): deliver or keep the held notes (D5).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct CatchUpFinished {
    /// The block, as planned.
    pub plan: CatchUpPlan,
    /// How it ended.
    pub end: CatchUpEnd,
}

/// A review is about to start (agent → router): sets its note budget (D8) and asks for
/// its held-notes preamble (D9), empty when nothing is held.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "String")]
pub struct GetHeldPreamble {
    /// The review, and whose (RO13).
    pub review: ReviewRef,
    /// The session updates (turns) the review covers, its batch (G2): the review may raise
    /// `updates` × `maxNotesPerUpdate` non-blocker notes (D8).
    pub updates: usize,
    /// The batch is work in progress (P1): under `defer` the review's nits and concerns
    /// wait for the next final boundary; a review of a final batch releases what waits.
    pub wip: bool,
}

/// A review succeeded (agent → router): held notes it did not raise again are dropped (D9).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct ReviewSucceeded {
    /// The review, and whose (RO13).
    pub review: ReviewRef,
}

/// The advisor's review in progress ended, whatever its end — success, failure, a reset, a
/// stop (agent → router): cards waiting for it go out (RO22).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct ReviewEnded {
    /// The named advisor whose review it was (RO13); `None`: the unnamed advisor.
    pub advisor: Option<AdvisorLabel>,
}

/// An attempt of a review was thrown away and the review will be tried again (agent →
/// router, G5): the holds and reconfirmations the attempt made are rolled back (delivered
/// advice cannot be recalled). Sent, and awaited, before the next attempt starts; answers
/// how many holds were rolled back.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "usize")]
pub struct DiscardAttempt {
    /// The review, and whose (RO13).
    pub review: ReviewRef,
    /// The attempt's number within the review, from 1 (for tracing).
    pub attempt: u32,
}

/// Asks for what the router still holds back from the primary, as it would be delivered
/// now: queued nits, outbox steers, deferred notes (P1), held notes (L2's end of a replay).
/// Takes nothing.
#[derive(Debug, Clone, Copy, Default, ActixMessage)]
#[rtype(result = "Vec<Delivery>")]
pub struct GetUndelivered;

/// Asks for the router's counters and latch.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "DeliveryStatus")]
pub struct GetDeliveryStatus;

/// Registers a named advisor of the roster with the router (RO13, RO15, RO16): its own
/// emission guard (D8 budget, dedupe), delivery policy and severity cap. Sent by the
/// supervisor before the advisor's first review, and again when its entry changes (RO21).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct RegisterAdvisor {
    /// The advisor.
    pub label: AdvisorLabel,
    /// Its delivery policy (RO15); `None`: the session's.
    pub policy: Option<crate::settings::DeliveryPolicy>,
    /// Its D8 budget per update (RO10).
    pub max_notes: usize,
    /// Its severity cap (RO16).
    pub max_severity: crate::domain::advice::Severity,
    /// Its review mode (CA1, CA6): whether its concern asks for a continuation on its own
    /// (CA16, CA18).
    pub review_mode: crate::settings::ReviewMode,
}

/// A named advisor was paused by `/advisor off NAME` (`paused`), or resumed (RO19): while
/// paused, whatever it raises — a review that was already running when the pause came —
/// is dropped `disabled` (D10) and never reaches the primary; notes it raised before stay.
/// Registering it again ([`RegisterAdvisor`]) resumes it too.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct PauseAdvisor {
    /// The advisor's slug.
    pub slug: std::sync::Arc<str>,
    /// Paused (`true`) or resumed.
    pub paused: bool,
}

/// An advisor left the roster (RO21), or the unnamed advisor was replaced by the roster's
/// entries (RO12): the notes it still holds are dropped with reason `removed` (D10), and so
/// is whatever its reviews still raise until it is registered again ([`RegisterAdvisor`],
/// or [`RegisterUnnamedAdvisor`] for the unnamed advisor).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct RemoveAdvisor {
    /// The advisor's slug; `None`: the unnamed advisor.
    pub advisor: Option<std::sync::Arc<str>>,
}

/// The unnamed advisor runs (RO12): sent by the supervisor when it starts the unnamed
/// advisor again after the roster's last entry went, or when the shared settings of roster
/// files without entries change (RO21). Sets its notes per update and takes its raises
/// again after a [`RemoveAdvisor`].
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct RegisterUnnamedAdvisor {
    /// Its D8 budget per update: the roster's shared `maxNotesPerUpdate`, else the
    /// session's.
    pub max_notes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::ReviewMode;

    fn plan(seed: Option<Vec<Advisory>>) -> TurnEndPlan {
        TurnEndPlan {
            terminal: true,
            answered: true,
            wip: false,
            window: true,
            seed_guard: seed,
            review: true,
            last_prompt: LastPrompt::default(),
        }
    }

    #[test]
    fn p3_a_turn_end_seeds_the_guard_at_the_epoch_only_when_its_plan_says_so() {
        let note = Advisory::new("Check the null case", None);
        let (seed, planned) = turn_end_messages(plan(Some(vec![note])), 3, ReviewMode::AgentEnd);
        let seed = seed.expect("the plan seeds the guard");
        assert_eq!(seed.epoch, 3);
        assert_eq!(seed.advisories[0].note, "Check the null case");
        assert!(planned.terminal && planned.answered && !planned.wip);
        assert!(planned.can_wait && planned.window);
        assert_eq!(planned.review_mode, ReviewMode::AgentEnd);
        let (seed, _) = turn_end_messages(plan(None), 3, ReviewMode::AgentEnd);
        assert!(seed.is_none());
    }
}
