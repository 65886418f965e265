//! The Supervisor's handlers of the agent's reports: failures are counted for status,
//! dropped backlogs (F2) and pauses (F3) are told to the user, questions (G8) are passed on.
//! The agent decided what each failure means; nothing here decides.

use actix::{Context, Handler, ResponseFuture};

use super::Supervisor;
use crate::messages::feed::{ObserveTurn, RewindCursor};
use crate::messages::review::{
    AdvisorPaused, AskAdvisor, BacklogDropped, NoticeRaised, ReviewFailed, ReviewQuarantined,
};
use crate::messages::tools::ClearToolSession;
use crate::review::failure::{dropped_notice, pause_notice, quarantine_notice};
use crate::review::AskError;

impl Handler<ReviewFailed> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ReviewFailed, _ctx: &mut Context<Self>) {
        if msg.epoch == self.epoch {
            self.failure_count += 1;
        }
    }
}

impl Handler<BacklogDropped> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: BacklogDropped, _ctx: &mut Context<Self>) {
        if msg.epoch == self.epoch {
            let limit = self.config.settings.max_consecutive_failures;
            self.notice(dropped_notice(limit, &msg.error, msg.turns));
        }
    }
}

impl Handler<AdvisorPaused> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: AdvisorPaused, _ctx: &mut Context<Self>) {
        if msg.epoch == self.epoch {
            self.notice(pause_notice(&msg.reason, msg.resume_at.is_some()));
        }
    }
}

impl Handler<ReviewQuarantined> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ReviewQuarantined, _ctx: &mut Context<Self>) {
        if msg.epoch != self.epoch {
            return;
        }
        let Some(children) = &self.children else {
            return;
        };
        children.feed.do_send(RewindCursor);
        children.executor.do_send(ClearToolSession);
        if msg.reprime {
            // P5: silently, the whole current transcript as one update (R1 bounds it).
            if let Some(transcript) = &self.last_transcript {
                let mark = transcript.mark();
                let wip = mark
                    .read(crate::delivery::turn_will_continue)
                    .unwrap_or(false);
                children.feed.do_send(ObserveTurn {
                    transcript: mark,
                    epoch: self.epoch,
                    wip,
                });
            }
        } else {
            self.notice(quarantine_notice(&msg.labels));
        }
    }
}

impl Handler<AskAdvisor> for Supervisor {
    type Result = ResponseFuture<Result<String, AskError>>;

    fn handle(&mut self, msg: AskAdvisor, _ctx: &mut Context<Self>) -> Self::Result {
        let agent = self.children.as_ref().map(|c| c.agent.clone());
        let consult = self.config.settings.consult;
        Box::pin(async move {
            if !consult {
                return Err(AskError::Disabled);
            }
            // RO20: a session without a roster has only the unnamed advisor.
            if let Some(name) = msg.advisor.clone() {
                return Err(AskError::UnknownAdvisor(name));
            }
            let agent = agent.ok_or(AskError::NotRunning)?;
            agent.send(msg).await.unwrap_or(Err(AskError::Released))
        })
    }
}

impl Handler<NoticeRaised> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: NoticeRaised, _ctx: &mut Context<Self>) {
        self.notice(msg.text);
    }
}
