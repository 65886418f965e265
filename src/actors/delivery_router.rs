//! DeliveryRouter: turns `advise` calls into deliveries for the host (D1–D10). It keeps the
//! held notes and the dedupe memory outside the advisor's context (G6).

use actix::{Actor, Context, Handler, Recipient, Supervised};

use crate::delivery::{AdviceTap, RaisedAdvice, RouterState};
use crate::domain::advice::Delivery;
use crate::domain::host::HostEvent;
use crate::messages::delivery::{
    CatchUpFinished, CloseWindow, DeliveryStatus, DiscardAttempt, GetDeliveryStatus,
    GetHeldPreamble, GetUndelivered, InjectAdvice, PauseAdvisor, PlanTurnEnd, RaiseAdvice,
    RegisterAdvisor, RegisterUnnamedAdvisor, RemoveAdvisor, ResetDelivery, ReviewEnded,
    ReviewSucceeded, SeedGuard, SetDeliveryEnabled,
};
use crate::messages::host::{RunInterrupted, RunStateChanged, TakeStepAdvice, UserPrompted};
use crate::settings::DeliveryPolicy;

/// The router actor: a thin shell over [`RouterState`] that forwards host events.
pub struct DeliveryRouter {
    state: RouterState,
    host: Recipient<HostEvent>,
    tap: Option<AdviceTap>,
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
            tap: None,
        }
    }

    /// The same router sending a copy of every raise and its outcome to `tap` (EV3).
    pub fn with_tap(mut self, tap: Option<AdviceTap>) -> Self {
        self.tap = tap;
        self
    }

    /// The same router with SP3's bounded blocker lane on or off (`advisor.spendControls`).
    pub fn with_spend_controls(mut self, on: bool) -> Self {
        self.state = self.state.with_spend_controls(on);
        self
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
        self.state = self.state.restarted();
    }
}

impl Handler<RaiseAdvice> for DeliveryRouter {
    type Result = actix::MessageResult<RaiseAdvice>;

    fn handle(&mut self, msg: RaiseAdvice, _ctx: &mut Context<Self>) -> Self::Result {
        let copy = self.tap.as_ref().map(|_| {
            let mut advisory = msg.advisory.clone();
            if let Some(label) = &msg.review.advisor {
                advisory.advisor = Some(label.name.to_string());
            }
            advisory
        });
        let (outcome, events) = self.state.raise(&msg.review, msg.advisory);
        if let (Some(tap), Some(advisory)) = (&self.tap, copy) {
            // A host that stopped listening is no reason to stop delivering.
            let _ = tap.send(RaisedAdvice {
                advisory,
                review: msg.review.number(),
                outcome: outcome.clone(),
                at: std::time::Instant::now(),
            });
        }
        self.emit(events);
        actix::MessageResult(outcome)
    }
}

impl Handler<InjectAdvice> for DeliveryRouter {
    type Result = actix::MessageResult<InjectAdvice>;

    fn handle(&mut self, msg: InjectAdvice, _ctx: &mut Context<Self>) -> Self::Result {
        let (outcome, events) = self.state.inject(msg.review, msg.advisory);
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
        if msg.conversation {
            self.state.new_conversation();
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
        // CA13, CA20: a final boundary opens its window and releases what was deferred into
        // it, before the turn's delta queues.
        let (events, planned) = self.state.plan_turn_end(
            msg.answered,
            msg.wip,
            msg.terminal,
            msg.can_wait,
            msg.window,
            msg.last_prompt,
            msg.review_mode,
        );
        self.emit(events);
        if let Some(plan) = &planned.catch_up {
            self.emit(vec![HostEvent::notice(plan.notice())]);
        }
        actix::MessageResult(planned)
    }
}

impl Handler<CloseWindow> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: CloseWindow, _ctx: &mut Context<Self>) {
        let events = self.state.close_window(msg.window);
        self.emit(events);
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
        let released = self.state.review_batch(&msg.review, msg.updates, msg.wip);
        self.emit(released);
        self.state.held_preamble(&msg.review)
    }
}

impl Handler<ReviewSucceeded> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: ReviewSucceeded, _ctx: &mut Context<Self>) {
        self.state.review_succeeded(&msg.review);
    }
}

impl Handler<ReviewEnded> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: ReviewEnded, _ctx: &mut Context<Self>) {
        let released = self.state.review_ended(msg.advisor.as_ref());
        self.emit(released);
    }
}

impl Handler<DiscardAttempt> for DeliveryRouter {
    type Result = usize;

    fn handle(&mut self, msg: DiscardAttempt, _ctx: &mut Context<Self>) -> usize {
        let span = tracing::info_span!(
            "discard_attempt",
            review = msg.review.number(),
            attempt = msg.attempt,
            advisor = msg.review.advisor.as_ref().map(|a| &*a.slug)
        );
        let _entered = span.enter();
        self.state.discard_attempt(&msg.review)
    }
}

impl Handler<GetUndelivered> for DeliveryRouter {
    type Result = Vec<Delivery>;

    fn handle(&mut self, _msg: GetUndelivered, _ctx: &mut Context<Self>) -> Vec<Delivery> {
        self.state.undelivered()
    }
}

/// Raises advice at the router (`advise`) and answers its outcome; while
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
        self.state.register_advisor(
            &msg.label,
            msg.policy,
            msg.max_notes,
            msg.max_severity,
            msg.review_mode,
        );
    }
}

impl Handler<PauseAdvisor> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: PauseAdvisor, _ctx: &mut Context<Self>) {
        self.state.pause_advisor(&msg.slug, msg.paused);
    }
}

impl Handler<RemoveAdvisor> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: RemoveAdvisor, _ctx: &mut Context<Self>) {
        self.state.remove_advisor(msg.advisor.as_deref());
    }
}

impl Handler<RegisterUnnamedAdvisor> for DeliveryRouter {
    type Result = ();

    fn handle(&mut self, msg: RegisterUnnamedAdvisor, _ctx: &mut Context<Self>) {
        self.state.register_unnamed(msg.max_notes);
    }
}

#[cfg(test)]
mod tests {
    //! The roster through the router's mailbox (RO13, RO15, RO16, RO18, RO21, RO22, D10).

    use super::*;
    use crate::delivery::ReviewRef;
    use crate::delivery::{DropReason, RaiseOutcome};
    use crate::domain::advice::{AdvisorLabel, Advisory, Severity};
    use actix::Addr;

    /// Collects the host events it is sent.
    #[derive(Default)]
    struct HostRecorder {
        events: Vec<HostEvent>,
    }

    impl Actor for HostRecorder {
        type Context = Context<Self>;
    }

    impl Handler<HostEvent> for HostRecorder {
        type Result = ();

        fn handle(&mut self, msg: HostEvent, _ctx: &mut Context<Self>) {
            self.events.push(msg);
        }
    }

    #[derive(actix::Message)]
    #[rtype(result = "Vec<HostEvent>")]
    struct TakeEvents;

    impl Handler<TakeEvents> for HostRecorder {
        type Result = actix::MessageResult<TakeEvents>;

        fn handle(&mut self, _msg: TakeEvents, _ctx: &mut Context<Self>) -> Self::Result {
            actix::MessageResult(std::mem::take(&mut self.events))
        }
    }

    fn arch() -> AdvisorLabel {
        AdvisorLabel::new("architecture", "Architecture")
    }

    fn sec() -> AdvisorLabel {
        AdvisorLabel::new("security", "Security")
    }

    /// An `interrupt` router with 2 notes per update, no immune turns, and a running primary.
    async fn running_router() -> (Addr<DeliveryRouter>, Addr<HostRecorder>) {
        let host = HostRecorder::default().start();
        let router =
            DeliveryRouter::new(DeliveryPolicy::Interrupt, 2, 0, host.clone().recipient()).start();
        router
            .send(RunStateChanged { running: true })
            .await
            .unwrap();
        (router, host)
    }

    /// `who` raises `note` in its review `review`, as its executor does.
    async fn raise(
        router: &Addr<DeliveryRouter>,
        who: &AdvisorLabel,
        review: u64,
        note: &str,
        severity: Option<Severity>,
    ) -> RaiseOutcome {
        router
            .send(RaiseAdvice {
                review: ReviewRef::new(Some(who.clone()), 0, review),
                advisory: Advisory::new(note, severity).with_advisor(&*who.name),
            })
            .await
            .unwrap()
    }

    #[actix::test]
    async fn ev3_the_tap_copies_every_raise_with_its_outcome_and_advisor() {
        let host = HostRecorder::default().start();
        let (tap, mut copies) = tokio::sync::mpsc::unbounded_channel();
        let router = DeliveryRouter::new(DeliveryPolicy::Interrupt, 2, 0, host.recipient())
            .with_tap(Some(tap))
            .start();
        router
            .send(RunStateChanged { running: true })
            .await
            .unwrap();
        let a = arch();
        let first = raise(&router, &a, 1, "Split the module", Some(Severity::Concern)).await;
        let again = raise(&router, &a, 2, "Split the module", Some(Severity::Concern)).await;
        assert_eq!(again, RaiseOutcome::Dropped(DropReason::Duplicate));
        let one = copies.try_recv().unwrap();
        let two = copies.try_recv().unwrap();
        assert!(copies.try_recv().is_err());
        assert_eq!((one.review, one.outcome), (1, first));
        assert_eq!(one.advisory.advisor.as_deref(), Some("Architecture"));
        assert_eq!(one.advisory.note, "Split the module");
        assert_eq!(two.outcome, RaiseOutcome::Dropped(DropReason::Duplicate));
        assert!(two.at >= one.at);
    }

    #[actix::test]
    async fn ro13_held_preambles_and_reviews_through_the_mailbox_are_per_advisor() {
        let host = HostRecorder::default().start();
        let router = DeliveryRouter::new(DeliveryPolicy::Reconfirm, 2, 0, host.recipient()).start();
        let (a, s) = (arch(), sec());
        assert_eq!(
            raise(&router, &a, 1, "arch worry", Some(Severity::Blocker)).await,
            RaiseOutcome::Held
        );
        assert_eq!(
            raise(&router, &s, 1, "sec worry", Some(Severity::Blocker)).await,
            RaiseOutcome::Held
        );
        let preamble = |who: &AdvisorLabel| GetHeldPreamble {
            review: ReviewRef::new(Some(who.clone()), 0, 2),
            updates: 1,
            wip: false,
        };
        let text = router.send(preamble(&a)).await.unwrap();
        assert!(
            text.contains("arch worry") && !text.contains("sec worry"),
            "{text}"
        );
        router
            .send(ReviewSucceeded {
                review: ReviewRef::new(Some(a.clone()), 0, 2),
            })
            .await
            .unwrap();
        let status = router.send(GetDeliveryStatus).await.unwrap();
        let held: Vec<&str> = status.held.iter().map(|h| h.note.as_str()).collect();
        assert_eq!(held, ["sec worry"]);
        assert_eq!(status.held[0].advisor.as_deref(), Some("Security"));
        assert_eq!(
            status.per_advisor["architecture"].dropped[&DropReason::Recanted],
            1
        );
        assert_eq!(status.per_advisor["security"].held, 1);
        assert_eq!(status.counts.raised(), 2);
        let rolled_back = router
            .send(DiscardAttempt {
                review: ReviewRef::new(Some(s.clone()), 0, 1),
                attempt: 1,
            })
            .await
            .unwrap();
        assert_eq!(rolled_back, 1, "Security's review 1 held one note");
    }

    #[actix::test]
    async fn ro15_ro16_registered_policy_and_cap_apply_to_that_advisor_only() {
        let (router, host) = running_router().await;
        let (a, s) = (arch(), sec());
        router
            .send(RegisterAdvisor {
                label: a.clone(),
                policy: None,
                max_notes: 1,
                max_severity: Severity::Concern,
                review_mode: Default::default(),
            })
            .await
            .unwrap();
        router
            .send(RegisterAdvisor {
                label: s.clone(),
                policy: Some(DeliveryPolicy::Reconfirm),
                max_notes: 4,
                max_severity: Severity::Blocker,
                review_mode: Default::default(),
            })
            .await
            .unwrap();
        assert_eq!(
            raise(&router, &a, 1, "tests never ran", Some(Severity::Blocker)).await,
            RaiseOutcome::Recorded
        );
        // RO10: its budget is 1 per update.
        assert_eq!(
            raise(&router, &a, 1, "rename x", None).await,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
        assert_eq!(
            raise(&router, &s, 1, "data loss", Some(Severity::Blocker)).await,
            RaiseOutcome::Held
        );
        assert_eq!(
            host.send(TakeEvents).await.unwrap(),
            vec![HostEvent::SteerReady]
        );
        let step = router.send(TakeStepAdvice).await.unwrap();
        assert_eq!(step.steers.len(), 1);
        assert!(
            step.steers[0]
                .content
                .starts_with("<advisory advisor=\"Architecture\" severity=\"concern\" guidance="),
            "{}",
            step.steers[0].content
        );
        let status = router.send(GetDeliveryStatus).await.unwrap();
        assert_eq!(status.per_advisor["architecture"].capped, 1);
        assert_eq!(status.per_advisor["architecture"].steer, 1);
        assert_eq!(status.per_advisor["security"].held, 1);
        assert_eq!(status.counts.capped, 1);
    }

    #[actix::test]
    async fn ro18_ro22_nits_of_two_advisors_go_out_as_one_aside_and_a_shared_note_once() {
        let (router, host) = running_router().await;
        let (a, s) = (arch(), sec());
        raise(&router, &a, 1, "rename x", None).await;
        raise(&router, &s, 1, "drop the clone", None).await;
        assert_eq!(
            raise(&router, &a, 1, "Check the null case", None).await,
            RaiseOutcome::Recorded
        );
        assert_eq!(
            raise(&router, &s, 1, "check the null case!", None).await,
            RaiseOutcome::Dropped(DropReason::DuplicateOf)
        );
        assert!(
            host.send(TakeEvents).await.unwrap().is_empty(),
            "nits interrupt nothing"
        );
        let step = router.send(TakeStepAdvice).await.unwrap();
        let aside = step.aside.expect("one aside message");
        let names: Vec<&str> = aside
            .notes
            .iter()
            .filter_map(|n| n.advisor.as_deref())
            .collect();
        assert_eq!(
            names,
            ["Architecture", "Security", "Architecture, Security"]
        );
        assert_eq!(
            aside.content.matches("<advisory advisor=").count(),
            3,
            "{}",
            aside.content
        );
        let status = router.send(GetDeliveryStatus).await.unwrap();
        assert_eq!(status.counts.aside, 3);
        assert_eq!(status.counts.dropped[&DropReason::DuplicateOf], 1);
        assert_eq!(status.per_advisor["architecture"].aside, 2);
        assert_eq!(status.per_advisor["security"].aside, 1);
        assert_eq!(status.counts.raised(), 4);
    }

    /// RO22 through the mailbox under each policy: the final answer's turn end, both
    /// advisors' reviews start, each raises the same concern and its review ends; the host
    /// gets one delivery naming both.
    #[actix::test]
    async fn ro22_under_each_policy_the_same_concern_about_the_final_turn_reaches_the_host_once() {
        for policy in [
            DeliveryPolicy::Defer,
            DeliveryPolicy::Interrupt,
            DeliveryPolicy::Reconfirm,
        ] {
            let host = HostRecorder::default().start();
            let router = DeliveryRouter::new(policy, 2, 0, host.clone().recipient()).start();
            let (a, s) = (arch(), sec());
            let plan = router
                .send(PlanTurnEnd {
                    terminal: true,
                    answered: true,
                    wip: false,
                    can_wait: true,
                    window: true,
                    last_prompt: Default::default(),
                    review_mode: Default::default(),
                })
                .await
                .unwrap();
            for who in [&a, &s] {
                router
                    .send(GetHeldPreamble {
                        review: ReviewRef::new(Some(who.clone()), 0, 1),
                        updates: 1,
                        wip: false,
                    })
                    .await
                    .unwrap();
            }
            for (who, note) in [(&a, "Data loss on retry"), (&s, "data loss on retry.")] {
                raise(&router, who, 1, note, Some(Severity::Concern)).await;
                router
                    .send(ReviewSucceeded {
                        review: ReviewRef::new(Some(who.clone()), 0, 1),
                    })
                    .await
                    .unwrap();
                router
                    .send(ReviewEnded {
                        advisor: Some(who.clone()),
                    })
                    .await
                    .unwrap();
            }
            if let Some(plan) = plan.catch_up {
                let end = crate::delivery::CatchUpEnd::TimedOut;
                router.send(CatchUpFinished { plan, end }).await.unwrap();
            }
            let window = plan.window.expect("a final boundary opens a window");
            router.send(CloseWindow { window }).await.unwrap();
            let events = host.send(TakeEvents).await.unwrap();
            let delivered: Vec<&Delivery> = events
                .iter()
                .filter_map(|e| match e {
                    HostEvent::Card { card } | HostEvent::Wake { card } => Some(card),
                    _ => None,
                })
                .collect();
            assert_eq!(delivered.len(), 1, "{policy:?}: {events:?}");
            assert_eq!(
                delivered[0].notes[0].advisor.as_deref(),
                Some("Architecture, Security"),
                "{policy:?}"
            );
            let status = router.send(GetDeliveryStatus).await.unwrap();
            assert_eq!(
                status.counts.dropped[&DropReason::DuplicateOf],
                1,
                "{policy:?}"
            );
        }
    }

    #[actix::test]
    async fn ro21_remove_advisor_drops_its_undelivered_notes_and_keeps_the_others() {
        let (router, host) = running_router().await;
        let (a, s) = (arch(), sec());
        raise(&router, &a, 1, "arch nit", None).await;
        raise(&router, &a, 1, "arch concern", Some(Severity::Concern)).await;
        raise(&router, &s, 1, "sec concern", Some(Severity::Concern)).await;
        router
            .send(RemoveAdvisor {
                advisor: Some(a.slug.clone()),
            })
            .await
            .unwrap();
        assert_eq!(
            host.send(TakeEvents).await.unwrap().len(),
            2,
            "two SteerReady"
        );
        let step = router.send(TakeStepAdvice).await.unwrap();
        assert!(step.aside.is_none());
        let notes: Vec<&str> = step
            .steers
            .iter()
            .map(|d| d.notes[0].note.as_str())
            .collect();
        assert_eq!(notes, ["sec concern"]);
        let status = router.send(GetDeliveryStatus).await.unwrap();
        assert_eq!(
            status.per_advisor["architecture"].dropped[&DropReason::Removed],
            2
        );
        assert_eq!(status.counts.dropped[&DropReason::Removed], 2);
        assert_eq!(status.counts.pending, 0);
        assert_eq!(status.counts.raised(), 3);
    }

    #[actix::test]
    async fn ro12_ro21_the_unnamed_advisor_removed_then_registered_again_with_a_new_budget() {
        let (router, _host) = running_router().await;
        let unnamed = |review: u64, note: &str| RaiseAdvice {
            review: ReviewRef::new(None, 0, review),
            advisory: Advisory::new(note, None),
        };
        router.send(unnamed(1, "rename x")).await.unwrap();
        router.send(RemoveAdvisor { advisor: None }).await.unwrap();
        assert_eq!(
            router.send(unnamed(1, "drop the clone")).await.unwrap(),
            RaiseOutcome::Dropped(DropReason::Removed)
        );
        assert!(router.send(TakeStepAdvice).await.unwrap().is_empty());
        router
            .send(RegisterUnnamedAdvisor { max_notes: 1 })
            .await
            .unwrap();
        assert_eq!(
            router.send(unnamed(2, "rename x")).await.unwrap(),
            RaiseOutcome::Recorded
        );
        assert_eq!(
            router.send(unnamed(2, "drop the clone")).await.unwrap(),
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
        let status = router.send(GetDeliveryStatus).await.unwrap();
        assert_eq!(status.counts.dropped[&DropReason::Removed], 2);
    }

    #[actix::test]
    async fn p3_ro13_a_branch_seed_gives_each_advisor_back_its_own_advice() {
        let (router, _host) = running_router().await;
        let (a, s) = (arch(), sec());
        router
            .send(ResetDelivery {
                epoch: 1,
                branch: true,
                conversation: true,
            })
            .await
            .unwrap();
        // The branch as the host shows it: named advisory elements, details dropped.
        let card = Delivery::new(
            crate::domain::advice::Channel::Card,
            vec![
                Advisory::new("check the null case", Some(Severity::Concern))
                    .with_advisor("Architecture"),
                Advisory::new("unnamed point", None),
            ],
            None,
        );
        let mut message = card.to_message();
        if let crate::domain::transcript::TranscriptMessage::Custom(c) = &mut message {
            c.details = None;
        }
        let advisories = crate::delivery::guard::branch_advisories(&[std::sync::Arc::new(message)]);
        router
            .send(SeedGuard {
                epoch: 1,
                advisories,
            })
            .await
            .unwrap();
        let raise_in = |who: &AdvisorLabel, note: &str| RaiseAdvice {
            review: ReviewRef::new(Some(who.clone()), 1, 1),
            advisory: Advisory::new(note, Some(Severity::Concern)).with_advisor(&*who.name),
        };
        assert_eq!(
            router
                .send(raise_in(&a, "Check the null case"))
                .await
                .unwrap(),
            RaiseOutcome::Dropped(DropReason::Duplicate),
            "Architecture already said it in this branch"
        );
        assert_eq!(
            router
                .send(raise_in(&s, "Check the null case"))
                .await
                .unwrap(),
            RaiseOutcome::Recorded,
            "Security never did"
        );
        let unnamed = RaiseAdvice {
            review: ReviewRef::new(None, 1, 1),
            advisory: Advisory::new("unnamed point", None),
        };
        assert_eq!(
            router.send(unnamed).await.unwrap(),
            RaiseOutcome::Dropped(DropReason::Duplicate)
        );
    }
}
