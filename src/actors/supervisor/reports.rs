//! The Supervisor's handlers of the agents' reports: failures are counted for status,
//! dropped backlogs (F2) and pauses (F3) are told to the user, questions (G8) are passed on.
//! Each report is its member's (RO13): one advisor failing or paused leaves the others
//! running, and a line about a named advisor names it. The agent decided what each
//! failure means; nothing here decides.

use actix::{AsyncContext, Context, Handler, ResponseFuture, WrapFuture};

use super::Supervisor;
use crate::actors::wiring::reprime;
use crate::messages::feed::RewindCursor;
use crate::messages::review::{
    AdvisorPaused, AskAdvisor, BacklogDropped, CheckedIn, NoticeRaised, PendingReviews,
    RestoreReviews, ReviewFailed, ReviewQuarantined,
};
use crate::review::failure::{dropped_notice, pause_notice, quarantine_notice};
use crate::review::AskError;

impl Handler<ReviewFailed> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ReviewFailed, _ctx: &mut Context<Self>) {
        self.members.review_failed(msg.epoch, msg.advisor.as_ref());
    }
}

impl Handler<BacklogDropped> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: BacklogDropped, _ctx: &mut Context<Self>) {
        if msg.epoch == self.members.epoch() {
            let limit = self.members.config().settings.max_consecutive_failures;
            let text = dropped_notice(limit, &msg.error, msg.turns);
            self.links.notice_about(msg.advisor.as_ref(), text);
        }
    }
}

impl Handler<AdvisorPaused> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: AdvisorPaused, _ctx: &mut Context<Self>) {
        if msg.epoch == self.members.epoch() {
            let text = pause_notice(&msg.reason, msg.resume_at.is_some());
            self.links.notice_about(msg.advisor.as_ref(), text);
        }
    }
}

impl Handler<ReviewQuarantined> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ReviewQuarantined, ctx: &mut Context<Self>) {
        if msg.epoch != self.members.epoch() {
            return;
        }
        let (transcript, turn) = self.members.quarantined(msg.advisor.as_ref());
        let slug = msg.advisor.as_ref().map(|l| &*l.slug);
        let Some(children) = self.links.actors_of(slug).and_then(|a| a.children.as_ref()) else {
            return;
        };
        children.feed.do_send(RewindCursor);
        if !msg.reprime {
            self.links
                .notice_about(msg.advisor.as_ref(), quarantine_notice(&msg.labels));
        } else if let Some(transcript) = transcript {
            // P5: silently, the whole current transcript as one update (R1 bounds it).
            let reprime = reprime(children, transcript.mark(), msg.epoch, turn);
            ctx.spawn(reprime.into_actor(self));
        }
    }
}

impl Handler<AskAdvisor> for Supervisor {
    type Result = ResponseFuture<Result<String, AskError>>;

    fn handle(&mut self, msg: AskAdvisor, ctx: &mut Context<Self>) -> Self::Result {
        let consult = self.members.config().settings.consult;
        let asked = self.members.asked(msg.advisor.as_deref());
        if let (true, Ok(slug)) = (consult, &asked) {
            // CA4 (our choice): an advisor holding updates first sends them as one review,
            // its counter unchanged, so its answer knows the latest work.
            let held = self.members.send_held(slug.as_deref());
            self.carry_out(ctx, held.into_iter().collect());
        }
        let agent = asked.and_then(|slug| {
            self.links
                .agent_of(slug.as_deref())
                .ok_or(AskError::NotRunning)
        });
        Box::pin(async move {
            if !consult {
                return Err(AskError::Disabled);
            }
            let agent = agent?;
            agent.send(msg).await.unwrap_or(Err(AskError::Released))
        })
    }
}

impl Handler<CheckedIn> for Supervisor {
    type Result = ();

    /// SP7: the advisor's next reviews wait for the turn end it asked for.
    /// The reviews queued behind the calling one wait too; given back when nothing waits.
    fn handle(&mut self, msg: CheckedIn, _ctx: &mut Context<Self>) {
        let PendingReviews {
            updates,
            units,
            wip,
            turn,
        } = msg.postponed;
        let back = self.members.checked_in(
            msg.epoch,
            msg.advisor.as_ref(),
            (msg.turn, msg.after_turns),
            (updates, wip),
        );
        let slug = msg.advisor.as_ref().map(|l| &*l.slug);
        if let (Some(updates), Some(agent)) = (back, self.links.agent_of(slug)) {
            agent.do_send(RestoreReviews {
                epoch: msg.epoch,
                reviews: PendingReviews {
                    updates,
                    units,
                    wip,
                    turn,
                },
            });
        }
    }
}

impl Handler<NoticeRaised> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: NoticeRaised, _ctx: &mut Context<Self>) {
        self.links.notice_about(msg.advisor.as_ref(), msg.text);
    }
}
