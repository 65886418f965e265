//! The AdvisorAgent's links to the other actors, and the [`ReviewPort`] a review reaches
//! them through.

use std::sync::Arc;
use std::time::SystemTime;

use actix::Recipient;
use serde_json::Value;

use crate::delivery::ReviewRef;
use crate::domain::advice::AdvisorLabel;
use crate::messages::delivery::{DiscardAttempt, GetHeldPreamble, ReviewEnded, ReviewSucceeded};
use crate::messages::review::{
    AdvisorPaused, AppendAudit, BacklogDropped, CheckedIn, NoticeRaised, ReviewFailed,
    ReviewQuarantined, SpendRecorded,
};
use crate::messages::tools::ExecuteTool;
use crate::messages::watchdog::GetWatchdogPrompt;
use crate::review::reviewer::WatchdogBlocks;
use crate::review::{AuditEvent, ReviewPort, ToolReply};

/// Where the agent's reviews and reports go.
pub struct AgentLinks {
    /// The named advisor this agent is (RO13); `None`: the unnamed advisor (RO12).
    pub advisor: Option<AdvisorLabel>,
    /// Where tool calls go (the ToolExecutor).
    pub executor: Recipient<ExecuteTool>,
    /// The watchdog loader, when watchdog files are in use.
    pub watchdog: Option<Recipient<GetWatchdogPrompt>>,
    /// Failed reviews and asks, for status (the Supervisor).
    pub failed: Recipient<ReviewFailed>,
    /// Dropped backlogs (F2), told to the user (the Supervisor).
    pub dropped: Recipient<BacklogDropped>,
    /// Pauses (F3), told to the user (the Supervisor).
    pub paused: Recipient<AdvisorPaused>,
    /// Quarantined reviews (P5): the Supervisor rewinds the feed and re-primes.
    pub quarantined: Recipient<ReviewQuarantined>,
    /// Other lines for the user (the Supervisor, which forwards them to the host).
    pub notices: Recipient<NoticeRaised>,
    /// Reviews that scheduled the next one with `check_in` (the Supervisor, SP7).
    pub checked_in: Recipient<CheckedIn>,
    /// What each model run spent, for the spend ceiling (the Supervisor, SP6).
    pub spent: Recipient<SpendRecorded>,
    /// Where each review asks for the held-notes preamble (the DeliveryRouter, D9).
    pub held_preamble: Recipient<GetHeldPreamble>,
    /// Where successful reviews are reported so unconfirmed held notes are dropped (D9).
    pub review_succeeded: Recipient<ReviewSucceeded>,
    /// Where the end of every review is reported, so cards waiting for it go out (RO22).
    pub review_ended: Recipient<ReviewEnded>,
    /// Where discarded attempts are reported so their holds are rolled back (G5).
    pub discard_attempt: Recipient<DiscardAttempt>,
    /// Where the advisor's transcript is recorded, when the host gave an audit path (G7).
    pub audit: Option<Recipient<AppendAudit>>,
}

/// The [`ReviewPort`] of one review, over the agent's recipients.
pub(crate) struct AgentPort {
    /// The agent's links.
    pub links: Arc<AgentLinks>,
    /// The review, and whose (RO13).
    pub review: ReviewRef,
    /// The session updates the review covers (G2), for its note budget (D8).
    pub updates: usize,
    /// The batch reviewed is work in progress (P1: its nits and concerns are deferred).
    pub wip: bool,
}

impl ReviewPort for AgentPort {
    async fn execute_tool(
        &self,
        name: &str,
        arguments: Value,
        unchanged_since: Option<u64>,
        model: &str,
    ) -> Option<ToolReply> {
        let call = ExecuteTool {
            review: self.review.id,
            name: name.to_string(),
            arguments,
            unchanged_since,
            model: Some(model.to_string()),
        };
        let out = self.links.executor.send(call).await.ok()?;
        Some(ToolReply {
            text: out.text,
            is_error: out.is_error,
            fingerprint: out.fingerprint,
            unchanged: out.unchanged,
        })
    }

    fn review_number(&self) -> u64 {
        self.review.number()
    }

    async fn held_preamble(&self) -> String {
        let ask = GetHeldPreamble {
            review: self.review.clone(),
            updates: self.updates,
            wip: self.wip,
        };
        self.links.held_preamble.send(ask).await.unwrap_or_default()
    }

    async fn discard_attempt(&self, attempt: u32) {
        let discard = DiscardAttempt {
            review: self.review.clone(),
            attempt,
        };
        let _ = self.links.discard_attempt.send(discard).await;
    }

    async fn watchdog(&self) -> Option<WatchdogBlocks> {
        let prompt = self
            .links
            .watchdog
            .as_ref()?
            .send(GetWatchdogPrompt)
            .await
            .ok()?;
        Some(WatchdogBlocks {
            joined: prompt.joined(),
            warnings: prompt.warnings,
        })
    }

    fn audits(&self) -> bool {
        self.links.audit.is_some()
    }

    fn audit(&self, event: AuditEvent) {
        if let Some(log) = &self.links.audit {
            let at_ms = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            log.do_send(AppendAudit {
                epoch: self.review.epoch(),
                review: self.review.number(),
                at_ms,
                event,
            });
        }
    }

    fn notice(&self, text: String) {
        self.links.notices.do_send(NoticeRaised {
            text,
            advisor: self.links.advisor.clone(),
        });
    }
}
