//! The Supervisor's `/advisor` commands (C1–C4, RO19): on, off, toggle, test, status, dump,
//! for the whole roster or one named advisor, as [`Members::run_command`] answers them; and
//! the replay's end-of-file queries (L2): the awaited drain and what is still undelivered.
//!
//! [`Members::run_command`]: crate::members::Members::run_command

use std::future::Future;

use actix::{Addr, Context, Handler, ResponseActFuture, ResponseFuture, WrapFuture};
use futures_util::FutureExt;

use super::Supervisor;
use crate::actors::advisor_agent::AdvisorAgent;
use crate::actors::wiring::{await_all, test_advice};
use crate::domain::advice::Delivery;
use crate::members::CommandRun;
use crate::messages::delivery::{GetDeliveryStatus, GetUndelivered};
use crate::messages::host::{AwaitDrain, GetDump, GetStatus, RunCommand};
use crate::messages::review::{BacklogWait, DumpContext};
use crate::status::AdvisorStatus;
use crate::texts::notice;

impl Supervisor {
    /// The status (C3, RO19): the supervisor's part now (`Members::status_parts`),
    /// the router's and every member's agent's asked for, in member order.
    fn status(&mut self) -> impl Future<Output = AdvisorStatus> + 'static {
        let router = self.router();
        let agents: Vec<_> = (self.members.iter())
            .map(|m| self.links.actors_of(m.slug()).map(|a| a.agent_status()))
            .collect();
        let parts = self.members.status_parts(self.session.counts());
        async move {
            let delivery = router.send(GetDeliveryStatus).await.ok();
            let mut answers = Vec::with_capacity(agents.len());
            for agent in agents {
                answers.push(match agent {
                    Some(asked) => asked.await,
                    None => None,
                });
            }
            parts.assemble(delivery, answers)
        }
    }

    /// The advisors' transcripts (C4, RO19): the unnamed advisor's alone, or one section
    /// per named advisor, or the one `advisor` names.
    fn dump(&self, raw: bool, advisor: Option<&str>) -> impl Future<Output = String> + 'static {
        let chosen = self.members.chosen(advisor);
        let sections: Vec<(Option<String>, Option<Addr<AdvisorAgent>>)> = (chosen.iter())
            .flatten()
            .map(|m| {
                (
                    m.plan().name().map(str::to_string),
                    self.links.agent_of(m.slug()),
                )
            })
            .collect();
        let unknown = chosen.err();
        async move {
            if let Some(line) = unknown {
                return line;
            }
            let mut out = String::new();
            for (name, agent) in sections {
                if let Some(name) = &name {
                    out.push_str(&notice("dumpSection", &[("name", name)]));
                    out.push('\n');
                }
                out.push_str(&match agent {
                    Some(agent) => agent
                        .send(DumpContext { raw })
                        .await
                        .unwrap_or_else(|_| notice("unavailable", &[])),
                    None => format!("{}\n", notice("notRunning", &[])),
                });
            }
            out
        }
    }
}

impl Handler<RunCommand> for Supervisor {
    type Result = ResponseActFuture<Self, String>;

    fn handle(&mut self, msg: RunCommand, ctx: &mut Context<Self>) -> Self::Result {
        match self.members.run_command(&msg.line) {
            CommandRun::Answered(reply, changes) => {
                self.carry_out(ctx, changes);
                Box::pin(actix::fut::ready(reply))
            }
            CommandRun::Test {
                epoch,
                nth,
                advisory,
            } => Box::pin(test_advice(self.router(), epoch, nth, advisory).into_actor(self)),
            CommandRun::Status => Box::pin(self.status().map(|s| s.render()).into_actor(self)),
            CommandRun::Dump { raw, advisor } => {
                Box::pin(self.dump(raw, advisor.as_deref()).into_actor(self))
            }
        }
    }
}

impl Handler<GetStatus> for Supervisor {
    type Result = ResponseFuture<AdvisorStatus>;

    fn handle(&mut self, _msg: GetStatus, _ctx: &mut Context<Self>) -> Self::Result {
        Box::pin(self.status())
    }
}

impl Handler<GetDump> for Supervisor {
    type Result = ResponseFuture<String>;

    fn handle(&mut self, msg: GetDump, _ctx: &mut Context<Self>) -> Self::Result {
        Box::pin(self.dump(msg.raw, None))
    }
}

impl Handler<AwaitDrain> for Supervisor {
    type Result = ResponseFuture<BacklogWait>;

    fn handle(&mut self, _msg: AwaitDrain, ctx: &mut Context<Self>) -> Self::Result {
        // CA21 (2): every running advisor sends what it holds as one review, its counter
        // unchanged, so an `agent-end` or interval reviewer still sees the final answer.
        let agents = if self.members.enabled() {
            let changes = self.members.drain();
            self.carry_out(ctx, changes);
            self.agents()
        } else {
            Vec::new()
        };
        Box::pin(async move { await_all(&agents, 1).await })
    }
}

impl Handler<GetUndelivered> for Supervisor {
    type Result = ResponseFuture<Vec<Delivery>>;

    fn handle(&mut self, msg: GetUndelivered, _ctx: &mut Context<Self>) -> Self::Result {
        let router = self.router();
        Box::pin(async move { router.send(msg).await.unwrap_or_default() })
    }
}
