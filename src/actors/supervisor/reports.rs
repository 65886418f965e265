//! The Supervisor's handlers of the agents' reports: failures are counted for status,
//! dropped backlogs (F2) and pauses (F3) are told to the user, questions (G8) are passed on.
//! Each report is its member's (RO13): one advisor failing or paused leaves the others
//! running, and a line about a named advisor names it. The agent decided what each
//! failure means; nothing here decides.

use actix::{AsyncContext, Context, Handler, ResponseFuture, WrapFuture};

use super::Supervisor;
use crate::actors::advisor_agent::AdvisorAgent;
use crate::messages::feed::{ObserveTurn, RewindCursor, TurnObserved};
use crate::messages::review::{
    AdvisorPaused, AskAdvisor, BacklogDropped, CheckedIn, NoticeRaised, QueueDelta, ReviewFailed,
    ReviewQuarantined,
};
use crate::review::failure::{dropped_notice, pause_notice, quarantine_notice};
use crate::review::AskError;

impl Handler<ReviewFailed> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ReviewFailed, _ctx: &mut Context<Self>) {
        if msg.epoch == self.epoch {
            if let Some(member) = self.member_of(msg.advisor.as_ref()) {
                member.failures += 1;
            }
        }
    }
}

impl Handler<BacklogDropped> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: BacklogDropped, _ctx: &mut Context<Self>) {
        if msg.epoch == self.epoch {
            let limit = self.config.settings.max_consecutive_failures;
            let text = dropped_notice(limit, &msg.error, msg.turns);
            self.notice_about(msg.advisor.as_ref(), text);
        }
    }
}

impl Handler<AdvisorPaused> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: AdvisorPaused, _ctx: &mut Context<Self>) {
        if msg.epoch == self.epoch {
            let text = pause_notice(&msg.reason, msg.resume_at.is_some());
            self.notice_about(msg.advisor.as_ref(), text);
        }
    }
}

impl Handler<ReviewQuarantined> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ReviewQuarantined, ctx: &mut Context<Self>) {
        if msg.epoch != self.epoch {
            return;
        }
        let (epoch, transcript) = (self.epoch, self.last_transcript.clone());
        let Some(member) = self.member_of(msg.advisor.as_ref()) else {
            return;
        };
        // The re-prime (or the next turn end after a rewind) covers what it held (CA8).
        member.cadence.drop_held();
        let turn = member.check_in.turn();
        let Some(children) = member.children.as_ref() else {
            return;
        };
        children.feed.do_send(RewindCursor);
        if msg.reprime {
            // P5: silently, the whole current transcript as one update (R1 bounds it).
            if let Some(transcript) = &transcript {
                let mark = transcript.mark();
                let wip = mark
                    .read(crate::delivery::turn_will_continue)
                    .unwrap_or(false);
                let (feed, agent) = (children.feed.clone(), children.agent.clone());
                let reprime = async move {
                    let observed = feed.send(ObserveTurn {
                        transcript: mark,
                        wip,
                    });
                    if let Ok(TurnObserved::Captured {
                        update: Some(update),
                        ..
                    }) = observed.await
                    {
                        agent.do_send(QueueDelta {
                            epoch,
                            updates: vec![update],
                            wip,
                            turn,
                        });
                    }
                };
                ctx.spawn(reprime.into_actor(self));
            }
        } else {
            self.notice_about(msg.advisor.as_ref(), quarantine_notice(&msg.labels));
        }
    }
}

impl Supervisor {
    /// The agent an ask goes to (RO20): the advisor named (its name or slug), else the
    /// unnamed advisor, else the roster's first running entry, else its first enabled one.
    /// One that does not run is [`AskError::NotRunning`], named when it has a name.
    fn asked(&self, advisor: Option<&str>) -> Result<actix::Addr<AdvisorAgent>, AskError> {
        let member = match advisor {
            Some(name) => {
                let index = self
                    .find_member(name)
                    .ok_or_else(|| AskError::UnknownAdvisor(name.to_string()))?;
                &self.members[index]
            }
            None => {
                let unnamed = self.members.iter().find(|m| m.plan.label.is_none());
                let running = || self.members.iter().find(|m| m.children.is_some());
                let first = || self.members.iter().find(|m| m.plan.enabled);
                match unnamed.or_else(running).or_else(first) {
                    Some(member) => member,
                    None => return Err(AskError::NotRunning),
                }
            }
        };
        member.agent().ok_or_else(|| match member.plan.name() {
            Some(name) => AskError::MemberNotRunning(name.to_string()),
            None => AskError::NotRunning,
        })
    }
}

impl Handler<AskAdvisor> for Supervisor {
    type Result = ResponseFuture<Result<String, AskError>>;

    fn handle(&mut self, msg: AskAdvisor, _ctx: &mut Context<Self>) -> Self::Result {
        let consult = self.config.settings.consult;
        let agent = self.asked(msg.advisor.as_deref());
        if let (true, Ok(asked)) = (consult, &agent) {
            // CA4 (our choice): an advisor holding updates first sends them as one review,
            // its counter unchanged, so its answer knows the latest work.
            let epoch = self.epoch;
            let holder = self
                .members
                .iter_mut()
                .find(|m| m.agent().as_ref() == Some(asked));
            if let Some(holder) = holder {
                if let Some((updates, wip)) = holder.cadence.take_held() {
                    asked.do_send(QueueDelta {
                        epoch,
                        updates,
                        wip,
                        turn: holder.check_in.turn(),
                    });
                }
            }
        }
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
    fn handle(&mut self, msg: CheckedIn, _ctx: &mut Context<Self>) {
        if msg.epoch != self.epoch {
            return;
        }
        if let Some(member) = self.member_of(msg.advisor.as_ref()) {
            member.check_in.checked_in(msg.turn, msg.after_turns);
        }
    }
}

impl Handler<NoticeRaised> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: NoticeRaised, _ctx: &mut Context<Self>) {
        self.notice_about(msg.advisor.as_ref(), msg.text);
    }
}
