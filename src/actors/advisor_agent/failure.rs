//! The AdvisorAgent's failures (F1–F3, P5, P6): a quarantined turn, a failed review, the
//! backup model, the policy's step carried out, dropped backlogs and pauses reported.

use std::time::SystemTime;

use actix::{AsyncContext, Context};
use futures_util::FutureExt;
use tokio::time::Instant;

use crate::messages::review::{
    AdvisorPaused, BacklogDropped, NoticeRaised, ReviewFailed, ReviewQuarantined,
};
use crate::model::ModelError;
use crate::review::failure::resumed_notice;
use crate::review::fallback;
use crate::review::quarantine::{self, Hazard};
use crate::review::{FailureStep, ReviewRun};

use super::AdvisorAgent;

impl AdvisorAgent {
    /// P5: the review's turn was withheld. The batch is gone with the advisor's context and
    /// queue; the supervisor rewinds the feed and, the first time in a row, re-primes with
    /// the current transcript (silently); the second time it tells the user and the next
    /// turn end starts afresh.
    pub(super) fn quarantined(&mut self, hazards: &[Hazard], epoch: u64) {
        self.totals.quarantines += 1;
        self.quarantine_streak += 1;
        let reprime = self.quarantine_streak < quarantine::NOTICE_AT;
        if !reprime {
            self.quarantine_streak = 0;
        }
        self.state.finished_stale();
        self.state.reset(crate::review::ask::AskEnd::Quarantined);
        self.context.clear();
        self.links.quarantined.do_send(ReviewQuarantined {
            epoch,
            reprime,
            labels: quarantine::labels(hazards),
            advisor: self.links.advisor.clone(),
        });
    }

    /// Applies the failure policy (F1–F3) and reports what it decided.
    pub(super) fn failed(&mut self, error: ModelError, ctx: &mut Context<Self>) {
        tracing::warn!(%error, "review failed");
        self.links.failed.do_send(ReviewFailed {
            epoch: self.epoch,
            advisor: self.links.advisor.clone(),
        });
        if self.switch_to_backup(&error) {
            return;
        }
        let error = self.fallback.explained(&*self.engine.model, error);
        let step = self.state.failed(&error, SystemTime::now());
        self.carry_out(step, &error, ctx);
    }

    /// P6: when the fallback picks a backup model for `error`, the same batch goes to it at
    /// once, the advisor's history kept; says whether it did.
    pub(super) fn switch_to_backup(&mut self, error: &ModelError) -> bool {
        let Some(switch) = self
            .fallback
            .on_failure(&*self.engine.model, error, Instant::now())
        else {
            return false;
        };
        let to = switch.model.info().id;
        tracing::warn!(from = %switch.from, %to, "reviewing with a backup model");
        self.links.notices.do_send(NoticeRaised {
            text: fallback::switch_notice(&switch.from, &to, &switch.reason),
            advisor: self.links.advisor.clone(),
        });
        self.engine.model = switch.model;
        self.state.retry_now();
        true
    }

    /// Carries out what the failure policy decided (F1–F3): a retry later, a dropped
    /// batch, a halt, or a pause (resumed by itself when it has an end).
    pub(super) fn carry_out(
        &mut self,
        step: FailureStep,
        error: &ModelError,
        ctx: &mut Context<Self>,
    ) {
        let epoch = self.epoch;
        match step {
            FailureStep::Retry(after) => {
                ctx.run_later(after, move |act, ctx| {
                    if act.epoch == epoch {
                        act.state.retry_due();
                        act.maybe_start(ctx);
                    }
                });
            }
            FailureStep::Dropped { turns } => {
                tracing::warn!(turns, %error, "advisor failed repeatedly; batch dropped");
                self.report_dropped(turns, error);
            }
            FailureStep::Halted { turns, reason } => {
                tracing::warn!(turns, %error, "advisor halted after repeated dropped batches");
                self.report_dropped(turns, error);
                self.report_paused(reason, None);
            }
            FailureStep::Paused {
                reason,
                resume_after,
                pause,
            } => {
                tracing::warn!(%reason, "advisor paused");
                let resume_at = resume_after.map(|after| SystemTime::now() + after);
                if let Some(after) = resume_after {
                    ctx.run_later(after, move |act, ctx| {
                        if act.state.resume_timed(pause) {
                            act.links.notices.do_send(NoticeRaised {
                                text: resumed_notice(),
                                advisor: act.links.advisor.clone(),
                            });
                            act.maybe_start(ctx);
                        }
                    });
                }
                self.report_paused(reason, resume_at);
            }
        }
    }

    /// Tells the supervisor a batch of `turns` was dropped after `error` (F2).
    pub(super) fn report_dropped(&self, turns: usize, error: &ModelError) {
        self.links.dropped.do_send(BacklogDropped {
            epoch: self.epoch,
            turns,
            error: error.to_string(),
            advisor: self.links.advisor.clone(),
        });
    }

    /// Tells the supervisor the advisor paused (F3, P7), until `resume_at` when it ends.
    pub(super) fn report_paused(&self, reason: String, resume_at: Option<SystemTime>) {
        self.links.paused.do_send(AdvisorPaused {
            epoch: self.epoch,
            reason,
            resume_at,
            advisor: self.links.advisor.clone(),
        });
    }
}

/// A review's future with its panics caught (F5): a model client or a tool that panics
/// while the review runs on this actor's thread would otherwise take the actor's task with
/// it, and the session would never review again. A panic ends the run as a failure with a
/// fresh context ([`ReviewRun::panicked`]).
pub(super) fn contained(
    review: impl std::future::Future<Output = ReviewRun>,
) -> impl std::future::Future<Output = ReviewRun> {
    std::panic::AssertUnwindSafe(review)
        .catch_unwind()
        .map(|outcome| outcome.unwrap_or_else(|payload| ReviewRun::panicked(payload.as_ref())))
}
