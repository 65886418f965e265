//! The review backlog and failure policy (SPEC G2, G5, F1–F3). Pure logic; the
//! AdvisorAgent and the Supervisor wrap it.

use std::collections::VecDeque;
use std::time::Duration;

use crate::model::{ChatMessage, ModelError, Usage};

/// A batch of deltas reviewed together (G2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The deltas, oldest first.
    pub deltas: Vec<String>,
    /// Turns the batch covers (one per delta).
    pub turns: usize,
}

/// The queue of deltas waiting for review (G2) and the record of turns dropped by F2.
#[derive(Debug, Default)]
pub struct ReviewQueue {
    pending: VecDeque<String>,
    in_flight: Option<Batch>,
    missed_turns: usize,
}

impl ReviewQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues one delta (one turn).
    pub fn push(&mut self, delta: String) {
        self.pending.push_back(delta);
    }

    /// Turns not yet reviewed or dropped, the in-flight batch included (G2).
    pub fn backlog(&self) -> usize {
        self.pending.len() + self.in_flight.as_ref().map_or(0, |b| b.turns)
    }

    /// Whether a batch is under review.
    pub fn in_flight(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Turns dropped since the last successful review (F2).
    pub fn missed_turns(&self) -> usize {
        self.missed_turns
    }

    /// Takes every pending delta as one batch, when none is in flight (coalescing, G2).
    pub fn take_batch(&mut self) -> Option<Batch> {
        if self.in_flight.is_some() || self.pending.is_empty() {
            return None;
        }
        let deltas: Vec<String> = self.pending.drain(..).collect();
        let batch = Batch {
            turns: deltas.len(),
            deltas,
        };
        self.in_flight = Some(batch.clone());
        Some(batch)
    }

    /// The review prompt of a batch: the missed-turns notice (F2) when turns were dropped,
    /// then the deltas joined by a blank line.
    pub fn prompt_for(&self, batch: &Batch) -> String {
        let body = batch.deltas.join("\n\n");
        if self.missed_turns == 0 {
            body
        } else {
            format!(
                "[Note: after repeated model failures the advisor skipped {} turn{} of the session; \
this update starts after that gap, so earlier context may be missing.]\n\n{body}",
                self.missed_turns,
                if self.missed_turns == 1 { "" } else { "s" }
            )
        }
    }

    /// The in-flight batch was reviewed.
    pub fn finish_ok(&mut self) {
        self.in_flight = None;
        self.missed_turns = 0;
    }

    /// The in-flight batch failed: it goes back to the head of the queue, to be merged with
    /// newer deltas on the next try (F1).
    pub fn finish_failed(&mut self) {
        if let Some(batch) = self.in_flight.take() {
            for delta in batch.deltas.into_iter().rev() {
                self.pending.push_front(delta);
            }
        }
    }

    /// Drops the in-flight batch and everything pending (F2); returns how many turns.
    pub fn drop_all(&mut self) -> usize {
        let n = self.backlog();
        self.pending.clear();
        self.in_flight = None;
        self.missed_turns += n;
        n
    }

    /// Forgets everything (R1 reset): nothing is counted as missed.
    pub fn clear(&mut self) {
        self.pending.clear();
        self.in_flight = None;
        self.missed_turns = 0;
    }
}

/// What to do after a failed review (F1–F3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureAction {
    /// Put the batch back and retry after this delay.
    Retry(Duration),
    /// Third strike: drop the backlog, warn, let the primary go on (F2).
    DropBacklog,
    /// Retrying cannot fix it: pause with this reason (F3).
    Pause(String),
}

/// Counts consecutive failures and decides what each one means (F1–F3).
#[derive(Debug, Clone)]
pub struct FailurePolicy {
    consecutive: u32,
    limit: u32,
    default_delay: Duration,
}

impl FailurePolicy {
    /// A policy dropping the backlog after `limit` consecutive failures, retrying after
    /// `default_delay` when the provider gave no `Retry-After`.
    pub fn new(limit: u32, default_delay: Duration) -> Self {
        Self {
            consecutive: 0,
            limit: limit.max(1),
            default_delay,
        }
    }

    /// Consecutive failures so far.
    pub fn consecutive(&self) -> u32 {
        self.consecutive
    }

    /// A review succeeded: the count starts over.
    pub fn succeeded(&mut self) {
        self.consecutive = 0;
    }

    /// A review failed with `error`: what to do.
    pub fn failed(&mut self, error: &ModelError) -> FailureAction {
        if let ModelError::Permanent { message } = error {
            self.consecutive = 0;
            return FailureAction::Pause(message.clone());
        }
        self.consecutive += 1;
        if self.consecutive >= self.limit {
            self.consecutive = 0;
            return FailureAction::DropBacklog;
        }
        let delay = match error {
            ModelError::Retryable {
                retry_after: Some(d),
                ..
            } => *d,
            _ => self.default_delay,
        };
        FailureAction::Retry(delay)
    }
}

/// The advisor's own conversation: append-only between maintenance events (M5), with the
/// usage needed for the context estimate (G5).
#[derive(Debug, Default, Clone)]
pub struct AdvisorContext {
    /// The messages, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Prompt tokens the last response reported (input + cache read + cache write).
    last_prompt_tokens: u64,
    /// Number of messages that last report covered.
    covered: usize,
}

impl AdvisorContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a response's usage: the context up to `covered` messages is now measured.
    pub fn record_usage(&mut self, usage: &Usage, covered: usize) {
        self.last_prompt_tokens = usage.prompt_tokens();
        self.covered = covered.min(self.messages.len());
    }

    /// G5's estimate of the context with `incoming` appended: the last reported prompt
    /// plus characters / 4 of everything after it.
    pub fn estimate_with(&self, incoming: &str) -> u64 {
        let after: usize = self.messages[self.covered.min(self.messages.len())..]
            .iter()
            .map(ChatMessage::char_len)
            .sum();
        self.last_prompt_tokens + ((after + incoming.len()) / 4) as u64
    }

    /// Clears the history (re-prime, reset).
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Rolls back to `len` messages (a failed review leaves no trace).
    pub fn truncate(&mut self, len: usize) {
        self.messages.truncate(len);
        self.covered = self.covered.min(len);
    }
}

/// The context threshold in tokens (G5): an absolute setting wins, else a percentage of the
/// window.
pub fn context_threshold(window: u64, percent: u8, absolute: Option<u64>) -> u64 {
    absolute.unwrap_or(window * u64::from(percent) / 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g2_pending_deltas_coalesce_into_one_batch() {
        let mut q = ReviewQueue::new();
        q.push("a".into());
        q.push("b".into());
        assert_eq!(q.backlog(), 2);
        let batch = q.take_batch().unwrap();
        assert_eq!(batch.turns, 2);
        assert_eq!(q.prompt_for(&batch), "a\n\nb");
        q.push("c".into());
        assert!(q.take_batch().is_none(), "one batch at a time");
        assert_eq!(q.backlog(), 3, "in-flight turns count");
        q.finish_ok();
        assert_eq!(q.take_batch().unwrap().deltas, vec!["c".to_string()]);
    }

    #[test]
    fn f1_failed_batch_returns_to_the_head_and_merges() {
        let mut q = ReviewQueue::new();
        q.push("a".into());
        q.take_batch();
        q.push("b".into());
        q.finish_failed();
        assert_eq!(q.take_batch().unwrap().deltas, vec!["a", "b"]);
    }

    #[test]
    fn f2_dropped_turns_are_announced_to_the_next_review() {
        let mut q = ReviewQueue::new();
        q.push("a".into());
        q.take_batch();
        q.push("b".into());
        assert_eq!(q.drop_all(), 2);
        assert_eq!(q.backlog(), 0);
        q.push("c".into());
        let batch = q.take_batch().unwrap();
        let prompt = q.prompt_for(&batch);
        assert!(prompt.contains("skipped 2 turns"), "{prompt}");
        assert!(prompt.ends_with("c"));
        q.finish_ok();
        q.push("d".into());
        let batch = q.take_batch().unwrap();
        assert_eq!(q.prompt_for(&batch), "d");
    }

    #[test]
    fn f2_three_strikes_then_count_resets() {
        let mut p = FailurePolicy::new(3, Duration::from_secs(1));
        let err = ModelError::Retryable {
            message: "500".into(),
            retry_after: None,
        };
        assert_eq!(p.failed(&err), FailureAction::Retry(Duration::from_secs(1)));
        assert_eq!(p.failed(&err), FailureAction::Retry(Duration::from_secs(1)));
        assert_eq!(p.failed(&err), FailureAction::DropBacklog);
        assert_eq!(p.consecutive(), 0);
        assert_eq!(p.failed(&err), FailureAction::Retry(Duration::from_secs(1)));
        p.succeeded();
        assert_eq!(p.consecutive(), 0);
    }

    #[test]
    fn f1_retry_after_is_honoured_and_f3_permanent_pauses() {
        let mut p = FailurePolicy::new(3, Duration::from_secs(1));
        let err = ModelError::Retryable {
            message: "429".into(),
            retry_after: Some(Duration::from_secs(7)),
        };
        assert_eq!(p.failed(&err), FailureAction::Retry(Duration::from_secs(7)));
        let err = ModelError::Permanent {
            message: "401 unauthorized".into(),
        };
        assert_eq!(
            p.failed(&err),
            FailureAction::Pause("401 unauthorized".into())
        );
    }

    #[test]
    fn g5_estimate_adds_chars_after_the_last_report() {
        let mut c = AdvisorContext::new();
        c.messages.push(ChatMessage::User {
            text: "x".repeat(400),
        });
        c.record_usage(
            &Usage {
                input: 1000,
                cache_read: 500,
                ..Usage::default()
            },
            1,
        );
        c.messages.push(ChatMessage::User {
            text: "y".repeat(400),
        });
        assert_eq!(c.estimate_with(&"z".repeat(400)), 1500 + 200);
        assert_eq!(context_threshold(100_000, 80, None), 80_000);
        assert_eq!(context_threshold(100_000, 80, Some(5)), 5);
    }
}
