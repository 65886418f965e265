//! The Supervisor's `/advisor` commands (C1–C4): on, off, toggle, test, status, dump; and
//! the replay's end-of-file queries (L2): the awaited drain and what is still undelivered.

use std::future::Future;

use actix::{Context, Handler, ResponseActFuture, ResponseFuture, WrapFuture};
use futures_util::FutureExt;

use super::Supervisor;
use crate::actors::wiring::test_advice;
use crate::command::{parse_command, AdvisorCommand};
use crate::domain::advice::Delivery;
use crate::messages::delivery::{GetDeliveryStatus, GetUndelivered};
use crate::messages::host::{AwaitDrain, GetDump, GetStatus, RunCommand};
use crate::messages::review::{
    AskEnd, AwaitBacklog, BacklogWait, DumpContext, GetAgentStatus, GetRestoredUsage,
};
use crate::status::AdvisorStatus;

impl Supervisor {
    /// The status (C3): the supervisor's part now, the router's and the agent's asked for.
    fn status(&mut self) -> impl Future<Output = AdvisorStatus> + 'static {
        let router = self.router();
        let agent = self.children.as_ref().map(|c| c.agent.clone());
        let audit = self.audit.clone();
        let model = self.config.model.as_ref();
        let mut status = AdvisorStatus {
            enabled: self.enabled,
            model: model.map(|m| m.info().id),
            thinking: model.map(|m| m.thinking().as_str().to_string()),
            policy: self.config.settings.policy,
            failures: self.failure_count,
            provider_calls: self.config.provider_calls(),
            ..AdvisorStatus::default()
        };
        async move {
            if let Ok(delivery) = router.send(GetDeliveryStatus).await {
                status.add_delivery(delivery);
            }
            if let Some(agent) = agent {
                if let Ok(a) = agent.send(GetAgentStatus).await {
                    status.add_agent(a);
                }
            }
            if let Some(audit) = audit {
                // P9: a resumed session's lifetime goes on from its transcript file.
                if let Ok(restored) = audit.send(GetRestoredUsage).await {
                    status.agent.lifetime.add(&restored);
                }
            }
            status
        }
    }

    /// The advisor's transcript (C4).
    fn dump(&self, raw: bool) -> impl Future<Output = String> + 'static {
        let agent = self.children.as_ref().map(|c| c.agent.clone());
        async move {
            match agent {
                Some(agent) => agent
                    .send(DumpContext { raw })
                    .await
                    .unwrap_or_else(|_| crate::texts::notice("unavailable", &[])),
                None => "(the advisor is not running)\n".to_string(),
            }
        }
    }
}

impl Handler<RunCommand> for Supervisor {
    type Result = ResponseActFuture<Self, String>;

    fn handle(&mut self, msg: RunCommand, ctx: &mut Context<Self>) -> Self::Result {
        let reply = match parse_command(&msg.line) {
            Ok(AdvisorCommand::Toggle) => {
                if self.enabled {
                    self.disable(AskEnd::TurnedOff)
                } else {
                    self.enable(ctx)
                }
            }
            Ok(AdvisorCommand::On { advisor: None }) => self.enable(ctx),
            Ok(AdvisorCommand::Off { advisor: None }) => self.disable(AskEnd::TurnedOff),
            // RO19: pausing one advisor of a roster; built with the roster runtime.
            Ok(
                AdvisorCommand::On { advisor: Some(_) } | AdvisorCommand::Off { advisor: Some(_) },
            ) => crate::command::USAGE.to_string(),
            Ok(AdvisorCommand::Test(advisory)) => {
                self.tests_injected += 1;
                let fut = test_advice(self.router(), self.epoch, self.tests_injected, advisory);
                return Box::pin(fut.into_actor(self));
            }
            Ok(AdvisorCommand::Status) => {
                let fut = self.status().map(|s| s.render());
                return Box::pin(fut.into_actor(self));
            }
            Ok(AdvisorCommand::Dump { raw, .. }) => {
                return Box::pin(self.dump(raw).into_actor(self));
            }
            Err(usage) => usage,
        };
        Box::pin(actix::fut::ready(reply))
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
        Box::pin(self.dump(msg.raw))
    }
}

impl Handler<AwaitDrain> for Supervisor {
    type Result = ResponseFuture<BacklogWait>;

    fn handle(&mut self, _msg: AwaitDrain, _ctx: &mut Context<Self>) -> Self::Result {
        let agent = self.children.as_ref().filter(|_| self.enabled);
        let Some(agent) = agent.map(|c| c.agent.clone()) else {
            return Box::pin(async { BacklogWait::Drained });
        };
        Box::pin(async move {
            agent
                .send(AwaitBacklog { threshold: 1 })
                .await
                .unwrap_or(BacklogWait::Released)
        })
    }
}

impl Handler<GetUndelivered> for Supervisor {
    type Result = ResponseFuture<Vec<Delivery>>;

    fn handle(&mut self, msg: GetUndelivered, _ctx: &mut Context<Self>) -> Self::Result {
        let router = self.router();
        Box::pin(async move { router.send(msg).await.unwrap_or_default() })
    }
}
