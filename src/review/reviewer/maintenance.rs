//! Context maintenance of a review (G5, P4): evicting stale tool results, promoting to a
//! larger-window model, compacting the older history into a summary, re-priming.

use std::sync::Arc;

use tracing::Instrument;

use super::{answer_text, ReviewPort, Reviewer};
use crate::model::{ChatMessage, ModelError, ModelRequest, StopReason, ToolSchema};
use crate::review::audit::AuditEvent;
use crate::review::context::{
    compaction_cut, context_threshold, keep_budget, needs_maintenance, render_for_summary,
    summary_message, MaintenanceKind,
};
use crate::review::texts;

/// Why a compaction's summary call gave no usable summary; maintenance re-primes instead.
#[derive(Debug, thiserror::Error)]
enum SummaryError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("the summary call stopped with {0:?}")]
    Stopped(StopReason),
    #[error("the summary call answered with no text")]
    Empty,
}

impl<P: ReviewPort> Reviewer<P> {
    /// P4: before the update goes in, stale results of earlier reviews give way to
    /// placeholders when that pays; counted (C3) and audited (P9).
    pub(super) fn evict_stale_results(&mut self) {
        if !self.engine.limits.evict_stale_results {
            return;
        }
        let Some(eviction) = self.run.context.evict_stale_results() else {
            return;
        };
        tracing::info!(
            evicted = eviction.evicted,
            tokens_saved = eviction.tokens_saved,
            "stale tool results evicted"
        );
        self.run.maintenance.record_eviction(&eviction);
        self.audit(AuditEvent::Eviction {
            evicted: eviction.evicted,
            tokens_saved: eviction.tokens_saved,
        });
    }

    /// G5 steps 1–3 before the update when the estimate with it passes the threshold.
    pub(super) async fn maintain_if_needed(&mut self, prompt: &str) {
        let threshold = self.threshold();
        if !needs_maintenance(&self.run.context, prompt, threshold) {
            return;
        }
        let span = tracing::info_span!(
            "context_maintenance",
            trigger = "threshold",
            estimate = self.run.context.estimate_with(prompt),
            threshold
        );
        self.maintain(prompt).instrument(span).await;
    }

    /// Promote when a larger-window model is configured and that brings the estimate under
    /// the new threshold; else compact, else re-prime.
    async fn maintain(&mut self, prompt: &str) {
        if let Some(candidate) = self.engine.promotion.take() {
            let (from, to) = (self.engine.model.info(), candidate.info());
            if to.context_window > from.context_window {
                tracing::info!(
                    from = %from.id,
                    to = %to.id,
                    window = to.context_window,
                    "context maintenance: promoted to the larger-window model"
                );
                self.engine.model = Arc::clone(&candidate);
                self.run.promoted = Some(candidate);
                // SP2: a promoted model starts a new advisor context for re-reads.
                self.run.context.rereads.clear();
                self.run.maintenance.record(MaintenanceKind::Promotion);
                self.audit_maintenance(MaintenanceKind::Promotion, "threshold");
                if !needs_maintenance(&self.run.context, prompt, self.threshold()) {
                    return;
                }
            } else {
                tracing::debug!(
                    promotion = %to.id,
                    "the promotion model's window is not larger: not promoting"
                );
            }
        }
        let kind = self.compact(prompt).await;
        self.finish_maintenance(prompt, kind, "threshold");
    }

    /// G5 step 2: summarise the older history and keep the recent part verbatim when that
    /// leaves room for `prompt`; a re-prime otherwise (nothing to summarise, the summary
    /// call failed, or the result is still too large).
    async fn compact(&mut self, prompt: &str) -> MaintenanceKind {
        let threshold = self.threshold();
        let Some(cut) = compaction_cut(&self.run.context.messages, keep_budget(threshold)) else {
            tracing::info!("the whole history fits the verbatim budget: nothing to summarise");
            return MaintenanceKind::Reprime;
        };
        let summary = match self.summarise(cut).await {
            Ok(summary) => self.redacted(summary),
            Err(err) => {
                tracing::warn!(error = %err, "compaction failed: re-priming instead");
                return MaintenanceKind::Reprime;
            }
        };
        let overhead = overhead_tokens(&self.run.system, &self.engine.tools);
        self.run
            .context
            .compact(cut, summary_message(&summary), overhead);
        let estimate = self.run.context.estimate_with(prompt);
        if estimate <= threshold {
            MaintenanceKind::Compaction
        } else {
            tracing::info!(
                estimate,
                threshold,
                "the compacted context is still too large"
            );
            MaintenanceKind::Reprime
        }
    }

    /// The summary call: the messages before `cut` rendered as text, the summarisation
    /// instruction as the system prompt, no tools. Its usage counts (G4).
    async fn summarise(&mut self, cut: usize) -> Result<String, SummaryError> {
        let older = &self.run.context.messages[..cut];
        let request = ModelRequest {
            system: texts::SUMMARY_INSTRUCTION.to_string(),
            messages: vec![ChatMessage::User {
                text: render_for_summary(older),
            }],
            tools: Vec::new(),
            max_tokens: self.max_tokens(),
            thinking: self.engine.model.thinking(),
            reminder: None,
        };
        let span = tracing::info_span!("summary_call", model = %self.engine.model.info().id, messages = cut);
        let response = self.call(request, span).await?;
        self.audit(AuditEvent::Spend {
            model: self.engine.model.info().id,
            usage: response.usage,
            // X5: the summary goes into the transcript file as the context gets it.
            text: self.redacted(answer_text(&response.parts)),
            error: None,
        });
        if response.stop == StopReason::ContextOverflow {
            return Err(SummaryError::Stopped(response.stop));
        }
        let text = answer_text(&response.parts);
        if text.is_empty() {
            return Err(SummaryError::Empty);
        }
        Ok(text)
    }

    /// Ends a maintenance event: a re-prime clears the history (a compaction has already
    /// replaced it; either way the context's re-read ledger starts afresh, SP2) and the event
    /// is counted and audited.
    pub(super) fn finish_maintenance(
        &mut self,
        prompt: &str,
        kind: MaintenanceKind,
        trigger: &str,
    ) {
        if kind == MaintenanceKind::Reprime {
            self.run.context.clear();
        }
        self.run.maintenance.record(kind);
        self.audit_maintenance(kind, trigger);
        tracing::info!(
            kind = kind.as_str(),
            messages = self.run.context.messages.len(),
            estimate = self.run.context.estimate_with(prompt),
            "context maintenance done"
        );
    }

    fn audit_maintenance(&self, kind: MaintenanceKind, trigger: &str) {
        if !self.port.audits() {
            return;
        }
        let summary = match (kind, self.run.context.messages.first()) {
            (MaintenanceKind::Compaction, Some(ChatMessage::User { text })) => Some(text.clone()),
            _ => None,
        };
        self.port.audit(AuditEvent::Maintenance {
            kind,
            trigger: trigger.to_string(),
            model: self.engine.model.info().id,
            messages: self.run.context.messages.len(),
            summary,
        });
    }

    /// The context threshold for the current model's window (G5).
    pub(super) fn threshold(&self) -> u64 {
        context_threshold(
            self.engine.model.info().context_window,
            self.engine.limits.compact_at_percent,
            self.engine.limits.compact_threshold_tokens,
        )
    }
}

/// Tokens the system prompt and tool schemas take (characters / 4), for the estimate of a
/// context no provider has measured yet.
fn overhead_tokens(system: &str, tools: &[ToolSchema]) -> u64 {
    let schemas = serde_json::to_string(tools).map_or(0, |s| s.len());
    ((system.len() + schemas) / 4) as u64
}
