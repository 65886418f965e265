//! The Supervisor's `/advisor` commands (C1–C4): on, off, toggle, test, status, dump.

use std::future::Future;

use actix::{Context, Handler, ResponseActFuture, ResponseFuture, WrapFuture};
use futures_util::FutureExt;

use super::Supervisor;
use crate::actors::wiring::test_advice;
use crate::command::{parse_command, AdvisorCommand};
use crate::messages::delivery::GetDeliveryStatus;
use crate::messages::host::{GetDump, GetStatus, RunCommand};
use crate::messages::review::{DumpContext, GetAgentStatus};
use crate::status::AdvisorStatus;

impl Supervisor {
    /// The status (C3): the supervisor's part now, the router's and the agent's asked for.
    fn status(&mut self) -> impl Future<Output = AdvisorStatus> + 'static {
        let router = self.router();
        let agent = self.children.as_ref().map(|c| c.agent.clone());
        let model = self.config.model.as_ref();
        let mut status = AdvisorStatus {
            enabled: self.enabled,
            model: model.map(|m| m.info().id),
            thinking: model.map(|m| m.thinking().as_str().to_string()),
            policy: self.config.settings.policy,
            failures: self.failure_count,
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
                    .unwrap_or_else(|_| "advisor: unavailable".into()),
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
                    self.disable()
                } else {
                    self.enable(ctx)
                }
            }
            Ok(AdvisorCommand::On) => self.enable(ctx),
            Ok(AdvisorCommand::Off) => self.disable(),
            Ok(AdvisorCommand::Test(advisory)) => {
                let fut = test_advice(self.router(), self.epoch, advisory);
                return Box::pin(fut.into_actor(self));
            }
            Ok(AdvisorCommand::Status) => {
                let fut = self.status().map(|s| s.render());
                return Box::pin(fut.into_actor(self));
            }
            Ok(AdvisorCommand::Dump { raw }) => {
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
