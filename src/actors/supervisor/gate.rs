//! The Supervisor's part of the triage gate (SP9): a work-in-progress review its cadence
//! scheduled is first shown to the judge model, off the supervisor's mailbox; the review is
//! queued when the judge says so (or fails, answers nonsense or takes 10 s), else its
//! updates are held for that advisor's next review. What to decide is
//! [`crate::review::judge_gate`]'s.

use actix::{ActorFutureExt, AsyncContext, Context, WrapFuture};

use super::Supervisor;
use crate::actors::wiring::JudgeDone;
use crate::feed::batch_parts;
use crate::messages::review::QueueDelta;
use crate::render::ExpandedMemory;
use crate::review::judge_gate::{ask_judge, decide, GateDecision};

impl Supervisor {
    /// Shows the reviews [`SessionState::gate_reviews`](crate::members::SessionState::gate_reviews) took at this boundary to the judge
    /// (one call for the boundary, about the first of them) and queues or holds them all as
    /// it decides. Answers a receiver that completes once that is done, for the turn end to
    /// wait on before its catch-up (CA9: the review it waits for is queued by then).
    pub(super) fn judge_gated(&mut self, ctx: &mut Context<Self>) -> Option<JudgeDone> {
        let pending = self.session.take_gated();
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
            act.session.judged(&run, decision);
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
