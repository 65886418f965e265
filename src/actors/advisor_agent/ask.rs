//! The AdvisorAgent's side of consulting (G8): questions are queued in the review state,
//! bounded in time, and answered from the run that took them.

use actix::{Context, Handler, ResponseFuture};
use tokio::time::Instant;

use super::{AdvisorAgent, RunningAsk};
use crate::messages::review::AskAdvisor;
use crate::review::ask::ask_time_limit;
use crate::review::{AskError, ReviewRun};

impl AdvisorAgent {
    /// An ask's run ended: its answer (or why there is none) goes to the asker; a failed
    /// ask is a failure like a review's (F1–F3).
    pub(super) fn ask_done(&mut self, mut run: ReviewRun, epoch: u64, ctx: &mut Context<Self>) {
        let Some(RunningAsk { reply, .. }) = self.running_ask.take() else {
            // An ended ask's future is cancelled and never comes here.
            tracing::warn!("an ask finished that was not running");
            return;
        };
        let answer = if !self.absorb(&mut run, epoch, true) {
            Err(AskError::Released)
        } else {
            match run.result {
                Ok(()) if run.quarantined.is_some() => {
                    // P5: the answer is withheld; the context keeps nothing of it.
                    self.totals.quarantines += 1;
                    self.state.ask_succeeded();
                    let hazards = run.quarantined.take().unwrap_or_default();
                    Err(AskError::Quarantined(crate::review::quarantine::labels(
                        &hazards,
                    )))
                }
                Ok(()) => {
                    self.state.ask_succeeded();
                    if run.answer.is_empty() {
                        Err(AskError::NoAnswer)
                    } else {
                        Ok(run.answer)
                    }
                }
                Err(err) => {
                    let text = err.to_string();
                    self.failed(err, ctx);
                    Err(AskError::Model(text))
                }
            }
        };
        let _ = reply.send(answer);
        self.maybe_start(ctx);
    }
}

impl Handler<AskAdvisor> for AdvisorAgent {
    type Result = ResponseFuture<Result<String, AskError>>;

    fn handle(&mut self, msg: AskAdvisor, ctx: &mut Context<Self>) -> Self::Result {
        let refused = |err| -> Self::Result { Box::pin(async move { Err(err) }) };
        if !self.settings.consult {
            return refused(AskError::Disabled);
        }
        if self.settings.no_review {
            return refused(AskError::NoReview);
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Err((err, _)) = self.state.queue_ask(msg.question, tx, Instant::now()) {
            return refused(err);
        }
        self.maybe_start(ctx);
        let limit = ask_time_limit(self.settings.request_timeout);
        Box::pin(async move {
            match tokio::time::timeout(limit, rx).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => Err(AskError::Released),
                Err(_) => Err(AskError::TimedOut(limit.as_secs())),
            }
        })
    }
}
