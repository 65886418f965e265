//! DeliveryRouter: turns `advise` calls into deliveries for the host (D1–D10). It keeps the
//! held notes and the dedupe memory outside the advisor's context (G6).

use actix::{Actor, Context, Handler, Recipient, Supervised};

use crate::delivery::RouterState;
use crate::domain::advice::Delivery;
use crate::domain::host::HostEvent;
use crate::messages::delivery::{
    CatchUpFinished, DeliveryStatus, DiscardAttempt, GetDeliveryStatus, GetHeldPreamble,
    GetUndelivered, PlanTurnEnd, RaiseAdvice, RegisterAdvisor, RemoveAdvisor, ResetDelivery,
    ReviewSucceeded, SeedGuard, SetDeliveryEnabled,
};
use crate::messages::host::{RunInterrupted, RunStateChanged, TakeStepAdvice, UserPrompted};
use crate::settings::DeliveryPolicy;

/// The router actor: a thin shell over [`RouterState`] that forwards host events.
pub struct DeliveryRouter {
    state: RouterState,
    host: Recipient<HostEvent>,
}

impl DeliveryRouter {
    /// A router for `policy` sending host events to `host`, with `immune_turns` immune
    /// turns after an interrupting delivery (D7).
    pub fn new(
        policy: DeliveryPolicy,
        max_notes_per_update: usize,
        immune_turns: u32,
        host: Recipient<HostEvent>,
    ) -> Self {
        Self {
            state: RouterState::new(policy, max_notes_per_update).with_immune_turns(immune_turns),
            host,
        }
    }

    /// The same router refusing notes longer than `max_chars` characters (D10 `tooLong`).
    pub fn with_max_note_chars(mut self, max_chars: usize) -> Self {
        self.state = self.state.with_max_note_chars(max_chars);
        self
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
        self.state = RouterState::new(self.state.policy(), self.state.max_notes_per_update())
            .with_immune_turns(self.state.immune_turns())
            .with_max_note_chars(self.state.max_note_chars());
    }
}

impl Handler<RaiseAdvice> for DeliveryRouter {
    type Result = actix::MessageResult<RaiseAdvice>;

    fn handle(&mut self, msg: RaiseAdvice, _ctx: &mut Context<Self>) -> Self::Result {
        let (outcome, events) =
            self.state
                .raise_as(msg.advisor.as_ref(), msg.epoch, msg.review, msg.advisory);
        self.emit(events);
        actix::MessageResult(outcome)
    }
}

impl Handler<TakeStepAdvice> for DeliveryRouter {
    type Result = actix::MessageResult<TakeStepAdvice>;

    fn handle(&mut self, _msg: TakeStepAdvice, _ctx: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(self.state.step_boundary())
    }
}

impl Handler<RunStateChanged> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: RunStateChanged, _ctx: &mut Context<Self>) {
        let events = self.state.run_state(msg.running);
        self.emit(events);
    }
}

impl Handler<RunInterrupted> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: RunInterrupted, _ctx: &mut Context<Self>) {
        let events = self.state.interrupt(msg.by_user);
        self.emit(events);
    }
}

impl Handler<UserPrompted> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, _msg: UserPrompted, _ctx: &mut Context<Self>) {
        self.state.user_prompt();
    }
}

impl Handler<ResetDelivery> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: ResetDelivery, _ctx: &mut Context<Self>) {
        if msg.branch {
            self.state.reset_branch(msg.epoch);
        } else {
            self.state.reset(msg.epoch);
        }
    }
}

impl Handler<SeedGuard> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: SeedGuard, _ctx: &mut Context<Self>) {
        self.state.seed_guard(msg.epoch, &msg.advisories);
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
            held: self
                .state
                .held()
                .iter()
                .map(|h| h.advisory.clone())
                .collect(),
            per_advisor: self.state.per_advisor().clone(),
        })
    }
}

impl Handler<PlanTurnEnd> for DeliveryRouter {
    type Result = actix::MessageResult<PlanTurnEnd>;

    fn handle(&mut self, msg: PlanTurnEnd, _ctx: &mut Context<Self>) -> Self::Result {
        // P1: a final boundary releases what was deferred, before the turn's delta queues.
        let released = self.state.boundary(msg.answered, msg.wip);
        self.emit(released);
        let plan = self.state.turn_ended(msg.terminal, msg.can_wait);
        if let Some(plan) = &plan {
            self.emit(vec![HostEvent::notice(plan.notice())]);
        }
        actix::MessageResult(plan)
    }
}

impl Handler<CatchUpFinished> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: CatchUpFinished, _ctx: &mut Context<Self>) {
        let events = self.state.catch_up_finished(&msg.plan, msg.end);
        self.emit(events);
    }
}

impl Handler<GetHeldPreamble> for DeliveryRouter {
    type Result = String;

    fn handle(&mut self, msg: GetHeldPreamble, _ctx: &mut Context<Self>) -> String {
        let advisor = msg.advisor.as_ref();
        let released =
            self.state
                .advisor_review_batch(advisor, msg.epoch, msg.review, msg.updates, msg.wip);
        self.emit(released);
        self.state
            .advisor_held_preamble(advisor, msg.epoch, msg.review)
    }
}

impl Handler<ReviewSucceeded> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: ReviewSucceeded, _ctx: &mut Context<Self>) {
        self.state
            .advisor_review_succeeded(msg.advisor.as_ref(), msg.epoch, msg.review);
    }
}

impl Handler<DiscardAttempt> for DeliveryRouter {
    type Result = usize;

    fn handle(&mut self, msg: DiscardAttempt, _ctx: &mut Context<Self>) -> usize {
        let span = tracing::info_span!(
            "discard_attempt",
            review = msg.review,
            attempt = msg.attempt,
            advisor = msg.advisor.as_ref().map(|a| &*a.slug)
        );
        let _entered = span.enter();
        self.state
            .advisor_discard_attempt(msg.advisor.as_ref(), msg.epoch, msg.review)
    }
}

impl Handler<GetUndelivered> for DeliveryRouter {
    type Result = Vec<Delivery>;

    fn handle(&mut self, _msg: GetUndelivered, _ctx: &mut Context<Self>) -> Vec<Delivery> {
        self.state.undelivered()
    }
}

/// Raises advice at the router (`advise`, `/advisor test`) and answers its outcome; while
/// the router restarts (F5), the tool text that says so.
pub async fn raise_advice(
    router: &Recipient<RaiseAdvice>,
    raise: RaiseAdvice,
) -> Result<crate::delivery::RaiseOutcome, &'static str> {
    router
        .send(raise)
        .await
        .map_err(|_| crate::tools::advise::TOOL_RESULTS.get("routerRestarting"))
}

impl Handler<RegisterAdvisor> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: RegisterAdvisor, _ctx: &mut Context<Self>) {
        self.state
            .register_advisor(&msg.label, msg.policy, msg.max_notes, msg.max_severity);
    }
}

impl Handler<RemoveAdvisor> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: RemoveAdvisor, _ctx: &mut Context<Self>) {
        self.state.remove_advisor(&msg.slug);
    }
}
