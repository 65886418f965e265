//! The AdvisorAgent's queries (C3, C4): its status, its context and the context dump.

use actix::{Context, Handler};

use crate::messages::review::{
    AdvisorContextTail, AgentStatus, DumpContext, GetAdvisorContext, GetAgentStatus,
};
use crate::render::dump::{advisor_dump, DumpHeader};

use super::AdvisorAgent;

impl AdvisorAgent {
    /// The advisor's context as `/advisor dump` prints it (C4); `raw` adds the header.
    fn dump(&self, raw: bool) -> String {
        let info = self.engine.model.info();
        let system = if self.last_system.is_empty() {
            &*self.engine.base_prompt
        } else {
            &self.last_system
        };
        let header = raw.then_some(DumpHeader {
            system,
            model: &info.id,
            thinking: self.engine.model.thinking().as_str(),
            tools: &self.engine.tools,
        });
        advisor_dump(&self.context.messages, header)
    }
}

impl Handler<GetAgentStatus> for AdvisorAgent {
    type Result = actix::MessageResult<GetAgentStatus>;

    fn handle(&mut self, _msg: GetAgentStatus, _ctx: &mut Context<Self>) -> Self::Result {
        let mut status = AgentStatus::of(
            &self.state,
            &self.totals,
            &self.context,
            &*self.engine.model,
        );
        status.fallback = self.fallback.status().cloned();
        status.fallbacks = self.fallback.switches();
        actix::MessageResult(status)
    }
}

impl Handler<GetAdvisorContext> for AdvisorAgent {
    type Result = actix::MessageResult<GetAdvisorContext>;

    fn handle(&mut self, msg: GetAdvisorContext, _ctx: &mut Context<Self>) -> Self::Result {
        let running = self.running_review.is_some() || self.running_ask.is_some();
        let messages = if running {
            crate::review::context::newest_messages(&self.context_tail, msg.max_chars)
        } else {
            self.context.newest(msg.max_chars)
        };
        actix::MessageResult(AdvisorContextTail {
            messages: messages.to_vec(),
            turn: self.context_turn,
        })
    }
}

impl Handler<DumpContext> for AdvisorAgent {
    type Result = String;

    fn handle(&mut self, msg: DumpContext, _ctx: &mut Context<Self>) -> String {
        self.dump(msg.raw)
    }
}
