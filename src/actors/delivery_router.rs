//! DeliveryRouter: turns `advise` calls into deliveries for the host (D1–D3, D6, D8, D10).

use actix::{Actor, Context, Handler, Recipient, Supervised};

use crate::delivery::RouterState;
use crate::messages::delivery::{
    DeliveryStatus, GetDeliveryStatus, RaiseAdvice, ResetDelivery, SetDeliveryEnabled,
};
use crate::messages::host::{HostEvent, Interrupt, RunState, StepBoundary, UserPrompt};
use crate::settings::DeliveryPolicy;

/// The router actor: a thin shell over [`RouterState`] that forwards host events.
pub struct DeliveryRouter {
    state: RouterState,
    host: Recipient<HostEvent>,
}

impl DeliveryRouter {
    /// A router for `policy` sending host events to `host`.
    pub fn new(
        policy: DeliveryPolicy,
        max_notes_per_update: usize,
        host: Recipient<HostEvent>,
    ) -> Self {
        Self {
            state: RouterState::new(policy, max_notes_per_update),
            host,
        }
    }

    fn emit(&self, events: Vec<HostEvent>) {
        for event in events {
            self.host.do_send(event);
        }
    }
}

impl Actor for DeliveryRouter {
    type Context = Context<Self>;
}

impl Supervised for DeliveryRouter {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.state = RouterState::new(self.state.policy(), self.state.max_notes_per_update());
    }
}

impl Handler<RaiseAdvice> for DeliveryRouter {
    type Result = actix::MessageResult<RaiseAdvice>;

    fn handle(&mut self, msg: RaiseAdvice, _ctx: &mut Context<Self>) -> Self::Result {
        let (outcome, events) = self.state.raise(msg.epoch, msg.review, msg.advisory);
        self.emit(events);
        actix::MessageResult(outcome)
    }
}

impl Handler<StepBoundary> for DeliveryRouter {
    type Result = actix::MessageResult<StepBoundary>;

    fn handle(&mut self, _msg: StepBoundary, _ctx: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(self.state.step_boundary())
    }
}

impl Handler<RunState> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: RunState, _ctx: &mut Context<Self>) {
        let events = self.state.run_state(msg.running);
        self.emit(events);
    }
}

impl Handler<Interrupt> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: Interrupt, _ctx: &mut Context<Self>) {
        let events = self.state.interrupt(msg.by_user);
        self.emit(events);
    }
}

impl Handler<UserPrompt> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, _msg: UserPrompt, _ctx: &mut Context<Self>) {
        self.state.user_prompt();
    }
}

impl Handler<ResetDelivery> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: ResetDelivery, _ctx: &mut Context<Self>) {
        self.state.reset(msg.epoch);
    }
}

impl Handler<SetDeliveryEnabled> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: SetDeliveryEnabled, _ctx: &mut Context<Self>) {
        self.state.set_enabled(msg.enabled);
    }
}

impl Handler<GetDeliveryStatus> for DeliveryRouter {
    type Result = actix::MessageResult<GetDeliveryStatus>;

    fn handle(&mut self, _msg: GetDeliveryStatus, _ctx: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(DeliveryStatus {
            counts: self.state.counts().clone(),
            suppressed: self.state.suppressed(),
        })
    }
}
