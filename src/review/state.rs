//! What the advisor knows between reviews (G2, F1–F3, S1, S2, G8): the queue, whether a
//! review runs, whether it is failing or paused, the failure policy deciding what a failure
//! means, the turn ends waiting for the backlog and the questions waiting for an answer.
//!
//! The failure decision lives here, beside the queue and the failing flag it changes; the
//! actor only runs the timers and reports what happened.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::ask::{check_question, AskEnd, AskError, ASK_DRAIN_WAIT};
use super::failure::{halt_reason, timed_pause_reason, FailureAction, FailurePolicy};
use super::queue::{Batch, PendingReviews, ReviewPrompt, ReviewQueue};
use crate::feed::Update;
use crate::model::ModelError;

/// How a backlog wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BacklogWait {
    /// The backlog fell below the threshold.
    Drained,
    /// The advisor is failing (a retry pending, or the backlog dropped after repeated
    /// failures) or paused (S2).
    Failing,
    /// Waiters were released: abort, reset, dispose or a restart.
    Released,
}

/// Where an ask's answer goes.
pub type AskReply = oneshot::Sender<Result<String, AskError>>;

/// A question waiting for its turn (G8).
#[derive(Debug)]
pub struct PendingAsk {
    /// The question.
    pub question: String,
    /// Where the answer goes.
    pub reply: AskReply,
    /// From then on the ask goes before pending reviews.
    due: Instant,
}

/// The next thing to send to the model.
#[derive(Debug)]
pub enum Work {
    /// Review a batch of deltas with this prompt (G2).
    Review {
        /// The batch.
        batch: Batch,
        /// Its prompt (the missed-turns note included, F2).
        prompt: ReviewPrompt,
    },
    /// Answer a question (G8).
    Ask(PendingAsk),
}

/// What a failure led to (F1–F3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureStep {
    /// The batch went back to the queue; call [`ReviewState::retry_due`] after this delay.
    Retry(Duration),
    /// The batch in flight was dropped; the pending turns stay (P7).
    Dropped {
        /// Turns dropped.
        turns: usize,
    },
    /// The batch in flight was dropped and the advisor halted: the third batch dropped in a
    /// row (P7). A pause that only `/advisor on`, new settings or a new session end.
    Halted {
        /// Turns dropped.
        turns: usize,
        /// The status line's reason.
        reason: String,
    },
    /// The advisor paused (F3).
    Paused {
        /// The status line's reason.
        reason: String,
        /// When it resumes by itself: a long `Retry-After`. Pass `pause` to
        /// [`ReviewState::resume_timed`] after this delay.
        resume_after: Option<Duration>,
        /// Which pause this is, so a late timer cannot end a later pause.
        pause: u64,
    },
}

#[derive(Debug)]
struct Pause {
    reason: String,
    id: u64,
    /// A halt after repeated dropped batches (P7), which a new session also ends.
    halt: bool,
}

/// The advisor's review state; see the module docs.
#[derive(Debug)]
pub struct ReviewState {
    queue: ReviewQueue,
    policy: FailurePolicy,
    /// When the running review or ask started; `None` while nothing runs.
    busy_since: Option<Instant>,
    failing: bool,
    paused: Option<Pause>,
    pauses: u64,
    hold_through_retries: bool,
    waiters: Vec<(usize, oneshot::Sender<BacklogWait>)>,
    asks: VecDeque<PendingAsk>,
    dropped_turns: u64,
}

impl ReviewState {
    /// A fresh state; with `hold_through_retries` a pending retry does not release backlog
    /// waiters (a replay's choice, see [`crate::RuntimeConfig::hold_wait_through_retries`]).
    pub fn new(policy: FailurePolicy, hold_through_retries: bool) -> Self {
        Self {
            queue: ReviewQueue::new(),
            policy,
            busy_since: None,
            failing: false,
            paused: None,
            pauses: 0,
            hold_through_retries,
            waiters: Vec::new(),
            asks: VecDeque::new(),
            dropped_turns: 0,
        }
    }

    /// Queues one rendered delta (one turn) that is not WIP.
    #[cfg(test)]
    pub fn push(&mut self, delta: String) {
        self.queue.push(delta);
    }

    /// Queues one scheduled review of `updates`, held ones first (CA3): one backlog unit
    /// (CA12), scheduled at the advisor's turn end `turn` (SP7).
    pub fn push_review_at(&mut self, updates: Vec<Update>, wip: bool, turn: u64) {
        self.queue.push_review_at(updates, wip, turn);
    }

    /// Takes the reviews queued behind the running one out of the queue (SP7).
    pub fn take_pending(&mut self) -> PendingReviews {
        self.queue.take_pending()
    }

    /// Puts reviews [`Self::take_pending`] took back, before those queued since (SP7).
    pub fn restore_pending(&mut self, back: PendingReviews) {
        self.queue.restore_pending(back);
    }

    /// Turns not yet reviewed or dropped (G2).
    pub fn backlog(&self) -> usize {
        self.queue.backlog()
    }

    /// Whether a retry is pending after a failure.
    pub fn failing(&self) -> bool {
        self.failing
    }

    /// Why reviews are paused, if they are.
    pub fn paused(&self) -> Option<&str> {
        self.paused.as_ref().map(|p| p.reason.as_str())
    }

    /// Consecutive failures now.
    pub fn consecutive_failures(&self) -> u32 {
        self.policy.consecutive()
    }

    /// Turns dropped after repeated failures (F2), over the agent's life.
    pub fn dropped_turns(&self) -> u64 {
        self.dropped_turns
    }

    /// How long the running review or ask has run at `now`; `None` while nothing runs.
    pub fn running_for(&self, now: Instant) -> Option<Duration> {
        self.busy_since
            .map(|since| now.saturating_duration_since(since))
    }

    /// Questions waiting for an answer.
    #[cfg(test)]
    pub fn pending_asks(&self) -> usize {
        self.asks.len()
    }

    /// The next work when nothing runs and the advisor is neither failing nor paused: an
    /// ask that has waited [`ASK_DRAIN_WAIT`], else the pending deltas as one batch, else an
    /// ask (G8: after the backlog is drained or 30 s pass). Marks the state busy.
    pub fn next_work(&mut self, now: Instant) -> Option<Work> {
        if self.busy_since.is_some() || self.failing || self.paused.is_some() {
            return None;
        }
        self.asks.retain(|a| !a.reply.is_closed());
        let ask_due = self.asks.front().is_some_and(|a| a.due <= now);
        let work = if ask_due || self.queue.backlog() == 0 {
            self.asks.pop_front().map(Work::Ask)
        } else {
            None
        };
        let work = work.or_else(|| {
            let batch = self.queue.take_batch()?;
            let prompt = self.queue.prompt_for(&batch);
            Some(Work::Review { prompt, batch })
        })?;
        self.busy_since = Some(now);
        Some(work)
    }

    /// `ADVISOR_NO_REVIEW`: every pending delta counts as reviewed and questions are refused.
    pub fn skip_all(&mut self) {
        while self.queue.take_batch().is_some() {
            self.queue.finish_ok();
        }
        for ask in self.asks.drain(..) {
            let _ = ask.reply.send(Err(AskError::NoReview));
        }
        self.release_ready_waiters();
    }

    /// The running work belonged to an epoch that was reset meanwhile: nothing to record.
    pub fn finished_stale(&mut self) {
        self.busy_since = None;
    }

    /// The running review succeeded.
    pub fn review_succeeded(&mut self) {
        self.busy_since = None;
        self.queue.finish_ok();
        self.policy.succeeded();
        self.release_ready_waiters();
    }

    /// The running ask was answered: the model works, so the failure count starts over;
    /// the queue (and its missed-turns note, F2) is untouched.
    pub fn ask_succeeded(&mut self) {
        self.busy_since = None;
        self.policy.succeeded();
    }

    /// The running review or ask failed with `error` at wall-clock time `now`: the policy
    /// decides (F1–F3) and the queue, the flags and the waiters follow.
    pub fn failed(&mut self, error: &ModelError, now: SystemTime) -> FailureStep {
        self.busy_since = None;
        let step = match self.policy.failed(error) {
            FailureAction::Retry(after) => {
                self.queue.finish_failed();
                self.failing = true;
                FailureStep::Retry(after)
            }
            FailureAction::DropBatch => {
                let turns = self.drop_in_flight();
                self.fail_all_waiters();
                FailureStep::Dropped { turns }
            }
            FailureAction::Halt => {
                let turns = self.drop_in_flight();
                let reason = halt_reason(&error.to_string());
                match self.pause(reason.clone(), None, true) {
                    FailureStep::Paused { .. } => FailureStep::Halted { turns, reason },
                    other => other,
                }
            }
            FailureAction::Pause(reason) => {
                self.queue.finish_failed();
                self.pause(reason, None, false)
            }
            FailureAction::PauseFor { reason, wait } => {
                self.queue.finish_failed();
                let reason = timed_pause_reason(&reason, now + wait);
                self.pause(reason, Some(wait), false)
            }
        };
        self.release_ready_waiters();
        step
    }

    /// The running review failed and is retried at once, not as a strike: its batch goes
    /// back to the head of the queue (a switch to a backup model, P6).
    pub fn retry_now(&mut self) {
        self.busy_since = None;
        self.queue.finish_failed();
        self.policy.retried_elsewhere();
    }

    /// Drops the batch in flight (P7), counted in [`ReviewState::dropped_turns`].
    fn drop_in_flight(&mut self) -> usize {
        let turns = self.queue.drop_in_flight();
        self.dropped_turns += turns as u64;
        self.failing = false;
        turns
    }

    fn pause(&mut self, reason: String, resume_after: Option<Duration>, halt: bool) -> FailureStep {
        self.pauses += 1;
        self.paused = Some(Pause {
            reason: reason.clone(),
            id: self.pauses,
            halt,
        });
        self.fail_all_waiters();
        for ask in self.asks.drain(..) {
            let _ = ask.reply.send(Err(AskError::Paused(reason.clone())));
        }
        FailureStep::Paused {
            reason,
            resume_after,
            pause: self.pauses,
        }
    }

    /// The retry delay is over (F1).
    pub fn retry_due(&mut self) {
        self.failing = false;
    }

    /// `/advisor on`: resumes a paused or failing advisor now.
    pub fn resume(&mut self) {
        self.paused = None;
        self.failing = false;
    }

    /// A new session began (P7): a halt ends; any other pause stays (only the user or its
    /// timer ends it). Returns whether a halt ended.
    pub fn end_halt(&mut self) -> bool {
        if self.paused.as_ref().is_some_and(|p| p.halt) {
            self.resume();
            true
        } else {
            false
        }
    }

    /// The time of pause `pause` is up; returns whether that pause was still on (a later
    /// pause, or a resume by the user, is left alone).
    pub fn resume_timed(&mut self, pause: u64) -> bool {
        if self.paused.as_ref().is_some_and(|p| p.id == pause) {
            self.resume();
            true
        } else {
            false
        }
    }

    /// A reset (R1): the queue, the failing flag and the failure count start over, waiters
    /// are released and queued questions answered with `cause`. A pause stays (only the
    /// user or its timer ends it). A review still running stays busy until it ends
    /// ([`ReviewState::finished_stale`]), so two never run at once.
    pub fn reset(&mut self, cause: AskEnd) {
        self.start_over();
        for ask in self.asks.drain(..) {
            let _ = ask.reply.send(Err(AskError::Ended(cause)));
        }
    }

    /// The actor restarted (F5): a reset, and nothing runs any more.
    pub fn restarted(&mut self) {
        self.start_over();
        self.asks.clear();
        self.busy_since = None;
    }

    fn start_over(&mut self) {
        self.queue.clear();
        self.failing = false;
        self.policy.succeeded();
        self.release_waiters();
    }

    /// A turn end waits until the backlog is below `threshold` (S1): answered at once
    /// when it already is, or while the advisor is paused or failing (S2); otherwise the
    /// receiver resolves later (an `Err` means released).
    pub fn await_backlog(
        &mut self,
        threshold: usize,
    ) -> Result<BacklogWait, oneshot::Receiver<BacklogWait>> {
        if self.queue.backlog() < threshold {
            return Ok(BacklogWait::Drained);
        }
        if self.releases_waiters() {
            return Ok(BacklogWait::Failing);
        }
        let (tx, rx) = oneshot::channel();
        self.waiters.push((threshold, tx));
        Err(rx)
    }

    /// Queues a question (G8), unless it is empty or too long or the advisor is paused or
    /// failing: then the error comes back at once with the reply unused.
    pub fn queue_ask(
        &mut self,
        question: String,
        reply: AskReply,
        now: Instant,
    ) -> Result<(), (AskError, AskReply)> {
        if let Err(err) = check_question(&question) {
            return Err((err, reply));
        }
        if let Some(pause) = &self.paused {
            return Err((AskError::Paused(pause.reason.clone()), reply));
        }
        if self.failing {
            return Err((AskError::Failing, reply));
        }
        self.asks.push_back(PendingAsk {
            question,
            reply,
            due: now + ASK_DRAIN_WAIT,
        });
        Ok(())
    }

    /// Wakes every backlog waiter with "released" (abort, reset, dispose).
    pub fn release_waiters(&mut self) {
        self.waiters.clear();
    }

    /// Whether a waiter is let go because of the failure state (S2): paused, or failing
    /// unless the wait holds through retries.
    fn releases_waiters(&self) -> bool {
        self.paused.is_some() || (self.failing && !self.hold_through_retries)
    }

    fn release_ready_waiters(&mut self) {
        let backlog = self.queue.backlog();
        let failing = self.releases_waiters();
        let mut kept = Vec::with_capacity(self.waiters.len());
        for (threshold, tx) in self.waiters.drain(..) {
            if backlog < threshold {
                let _ = tx.send(BacklogWait::Drained);
            } else if failing {
                let _ = tx.send(BacklogWait::Failing);
            } else {
                kept.push((threshold, tx));
            }
        }
        self.waiters = kept;
    }

    fn fail_all_waiters(&mut self) {
        for (_, tx) in self.waiters.drain(..) {
            let _ = tx.send(BacklogWait::Failing);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot::error::TryRecvError;

    fn server_error() -> ModelError {
        ModelError::Retryable {
            usage: None,
            message: "HTTP 500".into(),
            retry_after: None,
        }
    }

    fn state(hold: bool) -> ReviewState {
        ReviewState::new(FailurePolicy::new(3, Duration::from_secs(1)), hold)
    }

    fn review_prompt(work: Option<Work>) -> String {
        match work {
            Some(Work::Review { prompt, .. }) => prompt.joined(),
            other => panic!("expected a review, got {other:?}"),
        }
    }

    #[test]
    fn g2_one_batch_at_a_time_and_the_next_takes_what_came_meanwhile() {
        let now = Instant::now();
        let mut s = state(false);
        s.push("a".into());
        assert_eq!(review_prompt(s.next_work(now)), "a");
        s.push("b".into());
        s.push("c".into());
        assert!(s.next_work(now).is_none(), "busy");
        assert_eq!(s.backlog(), 3);
        s.review_succeeded();
        assert_eq!(review_prompt(s.next_work(now)), "b\n\nc");
    }

    #[test]
    fn f1_a_failure_retries_later_and_s2_releases_the_waiter_at_once() {
        let now = Instant::now();
        let mut s = state(false);
        s.push("a".into());
        s.next_work(now);
        let mut rx = s.await_backlog(1).expect_err("waits");
        let step = s.failed(&server_error(), SystemTime::now());
        assert_eq!(step, FailureStep::Retry(Duration::from_secs(1)));
        assert_eq!(rx.try_recv(), Ok(BacklogWait::Failing));
        assert!(
            s.failing() && s.next_work(now).is_none(),
            "no review before the retry"
        );
        assert!(matches!(s.await_backlog(1), Ok(BacklogWait::Failing)));
        s.push("b".into());
        s.retry_due();
        assert_eq!(review_prompt(s.next_work(now)), "a", "the same batch (P7)");
        s.review_succeeded();
        assert_eq!(s.consecutive_failures(), 0);
        assert_eq!(review_prompt(s.next_work(now)), "b");
    }

    #[test]
    fn s2_a_wait_that_holds_through_retries_ends_when_the_retry_drains() {
        let now = Instant::now();
        let mut s = state(true);
        s.push("a".into());
        s.next_work(now);
        let mut rx = s.await_backlog(1).expect_err("waits");
        s.failed(&server_error(), SystemTime::now());
        assert_eq!(
            rx.try_recv(),
            Err(TryRecvError::Empty),
            "still waiting during the retry delay"
        );
        assert!(s.await_backlog(1).is_err(), "a new wait holds too");
        s.retry_due();
        assert_eq!(review_prompt(s.next_work(now)), "a");
        s.review_succeeded();
        assert_eq!(rx.try_recv(), Ok(BacklogWait::Drained));
    }

    #[test]
    fn s2_a_held_wait_ends_when_the_backlog_is_dropped_or_the_advisor_pauses() {
        let now = Instant::now();
        let mut s = state(true);
        s.push("a".into());
        let mut rx = s.await_backlog(1).expect_err("waits");
        for _ in 0..2 {
            s.next_work(now);
            s.failed(&server_error(), SystemTime::now());
            s.retry_due();
        }
        s.next_work(now);
        assert_eq!(
            s.failed(&server_error(), SystemTime::now()),
            FailureStep::Dropped { turns: 1 }
        );
        assert_eq!(rx.try_recv(), Ok(BacklogWait::Failing));
        assert_eq!(s.dropped_turns(), 1);
        assert!(!s.failing(), "F2 lets the next delta be reviewed");

        s.push("b".into());
        let mut rx = s.await_backlog(1).expect_err("waits");
        s.next_work(now);
        let step = s.failed(
            &ModelError::Permanent {
                message: "HTTP 401".into(),
            },
            SystemTime::now(),
        );
        assert!(matches!(
            step,
            FailureStep::Paused {
                resume_after: None,
                ..
            }
        ));
        assert_eq!(rx.try_recv(), Ok(BacklogWait::Failing));
        assert_eq!(s.paused(), Some("HTTP 401"));
        assert_eq!(s.backlog(), 1, "paused keeps the batch");
    }

    /// Fails the running review three times: one dropped batch (P7).
    fn three_strikes(s: &mut ReviewState, now: Instant) -> FailureStep {
        let mut step = None;
        for _ in 0..3 {
            s.next_work(now);
            step = Some(s.failed(&server_error(), SystemTime::now()));
            s.retry_due();
        }
        step.expect("three failures")
    }

    #[test]
    fn p7_a_third_strike_drops_only_the_batch_retried_and_what_queued_behind_it_is_reviewed_next() {
        let now = Instant::now();
        let mut s = state(false);
        s.push("a".into());
        s.next_work(now);
        s.push("b".into());
        s.failed(&server_error(), SystemTime::now());
        s.retry_due();
        // The retry is the batch as it was; "b" and "c" wait behind it.
        assert_eq!(review_prompt(s.next_work(now)), "a");
        s.push("c".into());
        s.failed(&server_error(), SystemTime::now());
        s.retry_due();
        assert_eq!(review_prompt(s.next_work(now)), "a");
        s.push("d".into());
        assert_eq!(
            s.failed(&server_error(), SystemTime::now()),
            FailureStep::Dropped { turns: 1 }
        );
        assert_eq!(
            s.backlog(),
            3,
            "the turns behind the dropped batch are kept"
        );
        let next = review_prompt(s.next_work(now));
        assert!(next.contains("skipped 1 turn"), "{next}");
        assert!(next.ends_with("b\n\nc\n\nd"), "{next}");
        s.failed(&server_error(), SystemTime::now());
        s.retry_due();
        s.next_work(now);
        s.failed(&server_error(), SystemTime::now());
        s.retry_due();
        s.push("e".into());
        assert!(review_prompt(s.next_work(now)).ends_with("b\n\nc\n\nd"));
        assert_eq!(
            s.failed(&server_error(), SystemTime::now()),
            FailureStep::Dropped { turns: 3 }
        );
        s.push("f".into());
        let FailureStep::Halted { turns, reason } = three_strikes(&mut s, now) else {
            panic!("the third dropped batch in a row halts");
        };
        assert_eq!(turns, 2);
        assert!(reason.starts_with("halted after 3 reviews in a row were dropped (last error: model call failed (retryable): HTTP 500"), "{reason}");
        assert_eq!(s.paused(), Some(reason.as_str()));
        assert_eq!(s.dropped_turns(), 6);
        s.push("g".into());
        assert!(s.next_work(now).is_none(), "halted");
        assert!(s.end_halt(), "a new session ends the halt");
        assert!(review_prompt(s.next_work(now)).ends_with("g"));
        // A pause that is not a halt outlives a new session.
        s.failed(
            &ModelError::Permanent {
                message: "insufficient_quota".into(),
            },
            SystemTime::now(),
        );
        assert!(!s.end_halt());
        assert_eq!(s.paused(), Some("insufficient_quota"));
        assert_eq!(s.backlog(), 1, "a quota pause keeps the batch");
    }

    #[test]
    fn f3_a_long_retry_after_pauses_until_then_and_only_its_timer_resumes_it() {
        let now = Instant::now();
        let mut s = state(false);
        s.push("a".into());
        s.next_work(now);
        let err = ModelError::Retryable {
            usage: None,
            message: "HTTP 429".into(),
            retry_after: Some(Duration::from_secs(100_000)),
        };
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_592_496);
        let FailureStep::Paused {
            reason,
            resume_after,
            pause,
        } = s.failed(&err, wall)
        else {
            panic!("expected a pause");
        };
        assert_eq!(resume_after, Some(Duration::from_secs(100_000)));
        assert!(
            reason.contains("HTTP 429") && reason.contains("wait until 2025-12-02 16:21:36 UTC"),
            "{reason}"
        );
        assert_eq!(s.paused(), Some(reason.as_str()));
        assert!(s.next_work(now).is_none());
        // The user resumed and a later permanent error paused again: the old timer is stale.
        s.resume();
        s.next_work(now);
        s.failed(
            &ModelError::Permanent {
                message: "401".into(),
            },
            wall,
        );
        assert!(!s.resume_timed(pause));
        assert_eq!(s.paused(), Some("401"));
    }

    #[test]
    fn g8_an_ask_waits_for_the_backlog_or_30_s_and_is_refused_while_paused_or_failing() {
        let now = Instant::now();
        let mut s = state(false);
        s.push("a".into());
        s.next_work(now);
        let (tx, mut rx) = oneshot::channel();
        s.queue_ask("why?".into(), tx, now).expect("queued");
        s.push("b".into());
        s.review_succeeded();
        assert_eq!(
            review_prompt(s.next_work(now)),
            "b",
            "the backlog goes first"
        );
        s.push("c".into());
        s.review_succeeded();
        let ask = match s.next_work(now + ASK_DRAIN_WAIT) {
            Some(Work::Ask(ask)) => ask,
            other => panic!("after 30 s the ask goes first, got {other:?}"),
        };
        assert_eq!(ask.question, "why?");
        s.ask_succeeded();
        assert_eq!(review_prompt(s.next_work(now)), "c");
        assert_eq!(
            rx.try_recv(),
            Err(TryRecvError::Empty),
            "the reply is the actor's to send"
        );
        drop(ask);

        s.failed(&server_error(), SystemTime::now());
        let (tx, _rx) = oneshot::channel();
        assert!(matches!(
            s.queue_ask("q".into(), tx, now),
            Err((AskError::Failing, _))
        ));
        s.retry_due();
        let (tx, _rx) = oneshot::channel();
        assert!(matches!(
            s.queue_ask(" \n".into(), tx, now),
            Err((AskError::BadQuestion(0), _))
        ));
        let (tx, mut queued) = oneshot::channel();
        s.queue_ask("q".into(), tx, now).expect("queued");
        s.next_work(now);
        s.failed(
            &ModelError::Permanent {
                message: "HTTP 403".into(),
            },
            SystemTime::now(),
        );
        assert_eq!(
            queued.try_recv(),
            Ok(Err(AskError::Paused("HTTP 403".into()))),
            "a pause answers the waiting asks"
        );
        let (tx, _rx) = oneshot::channel();
        assert!(matches!(
            s.queue_ask("q".into(), tx, now),
            Err((AskError::Paused(_), _))
        ));
    }

    #[test]
    fn r1_reset_releases_waiters_and_asks_but_keeps_a_pause() {
        let now = Instant::now();
        let mut s = state(false);
        s.push("a".into());
        s.next_work(now);
        let mut wait = s.await_backlog(1).expect_err("waits");
        let (tx, mut ask) = oneshot::channel();
        s.queue_ask("q".into(), tx, now).expect("queued");
        s.reset(AskEnd::TurnedOff);
        assert_eq!(wait.try_recv(), Err(TryRecvError::Closed), "released");
        assert_eq!(
            ask.try_recv(),
            Ok(Err(AskError::Ended(AskEnd::TurnedOff))),
            "answered with the cause"
        );
        assert_eq!(s.backlog(), 0);
        assert_eq!(s.pending_asks(), 0);
        s.push("b".into());
        assert!(s.next_work(now).is_none(), "the old review still runs");
        s.finished_stale();
        assert_eq!(review_prompt(s.next_work(now)), "b");
    }
}
