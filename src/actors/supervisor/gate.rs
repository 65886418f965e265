//! The Supervisor's part of the triage gate (SP9): a work-in-progress review its cadence
//! scheduled is first shown to the judge model, off the supervisor's mailbox; the review is
//! queued when the judge says so (or fails, answers nonsense or takes 10 s), else its
//! updates are held for that advisor's next review. What to decide is
//! [`crate::review::judge_gate`]'s.

use actix::{ActorFutureExt, AsyncContext, Context, WrapFuture};

use super::Supervisor;
use crate::actors::wiring::JudgeDone;
use crate::feed::{batch_parts, Update};
use crate::members::MemberChange;
use crate::messages::review::QueueDelta;
use crate::render::ExpandedMemory;
use crate::review::judge_gate::{ask_judge, decide, GateDecision};

/// A work-in-progress review waiting for the judge: whose, and its parts.
pub(super) struct GatedReview {
    /// The member's slug (`None`: the unnamed advisor).
    pub slug: Option<String>,
    /// The parts of the one review (CA3).
    pub updates: Vec<Update>,
    /// The member's turn end the review covers up to (SP7: a check-in counts from it).
    pub turn: u64,
}

impl Supervisor {
    /// Takes the WIP reviews out of a boundary's `changes` while the gate is on (SP9): they
    /// wait for the judge ([`Supervisor::judge_gated`]); final ones go as they are.
    pub(super) fn gate_reviews(&mut self, changes: Vec<MemberChange>) -> Vec<MemberChange> {
        if !self.members.judge_gate_on() {
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
                } => self.session.gated.push(GatedReview {
                    slug,
                    updates,
                    turn,
                }),
                other => rest.push(other),
            }
        }
        rest
    }

    /// Shows the reviews [`Supervisor::gate_reviews`] took at this boundary to the judge
    /// (one call for the boundary, about the first of them) and queues or holds them all as
    /// it decides. Answers a receiver that completes once that is done, for the turn end to
    /// wait on before its catch-up (CA9: the review it waits for is queued by then).
    pub(super) fn judge_gated(&mut self, ctx: &mut Context<Self>) -> Option<JudgeDone> {
        let pending = std::mem::take(&mut self.session.gated);
        let judge = self.members.config().judge_model.clone();
        let (Some(first), Some(judge)) = (pending.first(), judge) else {
            return None;
        };
        let (done, judged) = tokio::sync::oneshot::channel();
        let text = batch_parts(&first.updates, &mut ExpandedMemory::default()).join("\n\n");
        let epoch = self.members.epoch();
        let threshold = self.members.config().settings.judge_threshold;
        let asked = async move { ask_judge(&*judge, &text).await };
        ctx.spawn(asked.into_actor(self).map(move |run, act, _ctx| {
            let decision = decide(&run.outcome, threshold);
            tracing::info!(?decision, outcome = ?run.outcome, "triage gate");
            act.session.gate.record(&run, decision);
            // Dropped at the end of this closure either way: the turn end goes on.
            let _done = done;
            if act.members.epoch() != epoch {
                // A reset meanwhile dropped what was held (CA8); the replay covers these.
                return;
            }
            for review in pending {
                let agent = act.links.agent_of(review.slug.as_deref());
                match (decision, agent) {
                    (GateDecision::ReviewNow, Some(agent)) => agent.do_send(QueueDelta {
                        epoch,
                        updates: review.updates,
                        wip: true,
                        turn: review.turn,
                    }),
                    _ => act
                        .members
                        .hold_back(review.slug.as_deref(), review.updates),
                }
            }
        }));
        Some(judged)
    }
}
