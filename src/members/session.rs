//! What the Supervisor keeps over the session beside its [`Members`](super::Members), as
//! plain state ([`SessionState`]): the flags it shares with the session's handles (S1, D5,
//! CA11), the primary's spend (SP5), the last user prompt (CA17), the triage gate's
//! counters and the reviews waiting for its judge (SP9), and the action gate's cache,
//! breaker and counters (GT6–GT8).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::delivery::PromptCursor;
use crate::domain::host::RewriteKind;
use crate::domain::transcript::TranscriptMark;
use crate::feed::Update;
use crate::gate::GateState;
use crate::review::judge_gate::{GateCounts, GateDecision, JudgeRun};
use crate::status::{PrimarySpend, PrimaryTally};
use crate::texts::notice;

use super::{begins_conversation, MemberChange, SessionCounts};

/// A work-in-progress review waiting for the triage judge (SP9): whose, and its parts.
#[derive(Debug, Clone, PartialEq)]
pub struct GatedReview {
    /// The member's slug (`None`: the unnamed advisor).
    pub slug: Option<String>,
    /// The parts of the one review (CA3).
    pub updates: Vec<Update>,
    /// The member's turn end the review covers up to (SP7: a check-in counts from it).
    pub turn: u64,
}

/// What the supervisor keeps over the session beside its members.
#[derive(Default)]
pub struct SessionState {
    /// Whether a turn end may be held now (S1, D5, RO15), shared with the session's
    /// handles: kept current as roster entries come, go and change.
    turn_end_flag: Arc<AtomicBool>,
    /// A syncBacklog wait ran long and the user was told so (S1): said once per session.
    sync_wait_said: Arc<AtomicBool>,
    /// Set while a session transition is being prepared (CA11): catch-up waits return at
    /// once.
    transitioning: Arc<AtomicBool>,
    /// The primary's usage as its transcript's assistant messages record it (SP5).
    primary_spend: PrimaryTally,
    /// The last genuine user prompt, kept as the transcript grows (CA17, O(delta)).
    prompts: PromptCursor,
    /// The triage gate's counters (SP9).
    gate: GateCounts,
    /// WIP reviews scheduled at this boundary and waiting for the judge (SP9).
    gated: Vec<GatedReview>,
    /// The action gate's cache, breaker and counters (GT6–GT8).
    action_gate: GateState,
}

impl SessionState {
    /// Shares `flag` with the session's handles: from now on it says whether a turn end
    /// may be held (S1, D5, RO15).
    pub fn share_turn_end_flag(&mut self, flag: Arc<AtomicBool>) {
        self.turn_end_flag = flag;
    }

    /// Stores whether a turn end may be held now in the flag the handles read.
    pub fn set_turn_end_may_wait(&self, waits: bool) {
        self.turn_end_flag.store(waits, Ordering::Release);
    }

    /// CA11: whether a session transition is being prepared, stored for the catch-up waits.
    pub fn set_transitioning(&self, preparing: bool) {
        self.transitioning.store(preparing, Ordering::Relaxed);
    }

    /// The flags a turn end's waits share: the slow-wait line said (S1) and a transition
    /// being prepared (CA11).
    pub fn wait_flags(&self) -> (Arc<AtomicBool>, Arc<AtomicBool>) {
        (
            Arc::clone(&self.sync_wait_said),
            Arc::clone(&self.transitioning),
        )
    }

    /// A rewrite of `kind` (R1): what the primary spent stays, the rewritten transcript is
    /// not counted again (SP5), the prompts are read afresh (CA17); another conversation
    /// beginning ends a transition (CA11).
    pub fn rewritten(&mut self, kind: RewriteKind) {
        self.primary_spend.rewritten();
        self.prompts.rewritten();
        if begins_conversation(kind) {
            self.set_transitioning(false);
        }
    }

    /// Counts the primary's spend in `transcript` at a turn end (SP5); answers the line
    /// for the user when implausible usage values were ignored.
    pub fn primary_turn_ended(&mut self, transcript: &TranscriptMark) -> Option<String> {
        let tally = &mut self.primary_spend;
        transcript.read(|messages| tally.observe(messages));
        let count = tally.take_ignored()?;
        tracing::warn!(count, "implausible primary usage values ignored (SP5)");
        let count = count.to_string();
        Some(notice("primaryUsageIgnored", &[("count", &count)]))
    }

    /// The primary's spend so far (SP5).
    pub fn primary_spend(&self) -> Option<PrimarySpend> {
        self.primary_spend.spend()
    }

    /// The last user prompt's cursor, for a turn end's plan (CA17).
    pub fn prompts(&mut self) -> &mut PromptCursor {
        &mut self.prompts
    }

    /// The counters the status shows (SP5, SP9, GT8).
    pub fn counts(&self) -> SessionCounts {
        SessionCounts {
            gate: self.gate,
            action_gate: self.action_gate.counts(),
            primary: self.primary_spend(),
        }
    }

    /// The action gate's state (GT6–GT8).
    pub fn action_gate(&mut self) -> &mut GateState {
        &mut self.action_gate
    }

    /// Takes the WIP reviews out of a boundary's `changes` while the triage gate is `on`
    /// (SP9): they wait for the judge ([`SessionState::take_gated`]); final ones go as
    /// they are.
    pub fn gate_reviews(&mut self, changes: Vec<MemberChange>, on: bool) -> Vec<MemberChange> {
        if !on {
            return changes;
        }
        let mut rest = Vec::with_capacity(changes.len());
        for change in changes {
            match change {
                MemberChange::Queue {
                    slug,
                    updates,
                    wip: true,
                    turn,
                    ..
                } => self.gated.push(GatedReview {
                    slug,
                    updates,
                    turn,
                }),
                other => rest.push(other),
            }
        }
        rest
    }

    /// The reviews waiting for the judge, taken.
    pub fn take_gated(&mut self) -> Vec<GatedReview> {
        std::mem::take(&mut self.gated)
    }

    /// Counts one run of the judge and its decision (SP9).
    pub fn judged(&mut self, run: &JudgeRun, decision: GateDecision) {
        self.gate.record(run, decision);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(slug: &str, wip: bool) -> MemberChange {
        MemberChange::Queue {
            slug: Some(slug.into()),
            epoch: 0,
            updates: vec![Update::Text(slug.into())],
            wip,
            turn: 4,
        }
    }

    #[test]
    fn sp9_the_gate_takes_the_wip_reviews_and_leaves_final_ones_and_other_changes() {
        let mut session = SessionState::default();
        let changes = vec![
            queue("a", true),
            queue("b", false),
            MemberChange::Notice("n".into()),
        ];
        let off = session.gate_reviews(changes.clone(), false);
        assert_eq!(off.len(), 3, "the gate off takes nothing");
        assert!(session.take_gated().is_empty());
        let rest = session.gate_reviews(changes, true);
        assert_eq!(rest.len(), 2);
        assert!(matches!(&rest[0], MemberChange::Queue { wip: false, .. }));
        let gated = session.take_gated();
        assert_eq!(
            gated,
            [GatedReview {
                slug: Some("a".into()),
                updates: vec![Update::Text("a".into())],
                turn: 4,
            }]
        );
        assert!(session.take_gated().is_empty(), "taken once");
    }

    #[test]
    fn ca11_s1_the_flags_are_shared_and_a_new_conversation_ends_a_transition() {
        let mut session = SessionState::default();
        let flag = Arc::new(AtomicBool::new(false));
        session.share_turn_end_flag(Arc::clone(&flag));
        session.set_turn_end_may_wait(true);
        assert!(flag.load(Ordering::Acquire));
        let (_, transitioning) = session.wait_flags();
        session.set_transitioning(true);
        session.rewritten(RewriteKind::Compaction);
        assert!(
            transitioning.load(Ordering::Relaxed),
            "a compaction goes on"
        );
        session.rewritten(RewriteKind::NewSession);
        assert!(!transitioning.load(Ordering::Relaxed), "CA11: it began");
    }
}
