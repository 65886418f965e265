//! The queue of deltas waiting for review and their coalescing into batches (G2), with
//! the record of turns dropped after repeated failures (F2).

use std::collections::VecDeque;

use super::texts;

/// A batch of deltas reviewed together (G2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The deltas, oldest first.
    pub deltas: Vec<String>,
    /// Turns the batch covers (one per delta).
    pub turns: usize,
    /// The batch is work in progress: its last delta's turn made tool calls and the primary
    /// goes on (§3 Expanded's footer, P1's deferral).
    pub wip: bool,
}

/// The queue of deltas waiting for review (G2) and the record of turns dropped by F2.
#[derive(Debug, Default)]
pub struct ReviewQueue {
    pending: VecDeque<String>,
    /// Whether the newest pending delta is WIP (a batch is WIP when its last delta is).
    pending_wip: bool,
    in_flight: Option<Batch>,
    missed_turns: usize,
}

impl ReviewQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues one delta (one turn) that is not WIP.
    #[cfg(test)]
    pub fn push(&mut self, delta: String) {
        self.push_turn(delta, false);
    }

    /// Queues one delta (one turn); `wip` when the turn is work in progress (P1).
    pub fn push_turn(&mut self, delta: String, wip: bool) {
        self.pending.push_back(delta);
        self.pending_wip = wip;
    }

    /// Turns not yet reviewed or dropped, the in-flight batch included (G2).
    pub fn backlog(&self) -> usize {
        self.pending.len() + self.in_flight.as_ref().map_or(0, |b| b.turns)
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
            wip: std::mem::take(&mut self.pending_wip),
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
            let note = texts::fill(
                texts::MISSED_TURNS,
                &[("turns", &texts::turns(self.missed_turns))],
            );
            format!("{note}\n\n{body}")
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
            if self.pending.is_empty() {
                self.pending_wip = batch.wip;
            }
            for delta in batch.deltas.into_iter().rev() {
                self.pending.push_front(delta);
            }
        }
    }

    /// Drops the in-flight batch and everything pending (F2); returns how many turns.
    pub fn drop_all(&mut self) -> usize {
        let n = self.backlog();
        self.pending.clear();
        self.pending_wip = false;
        self.in_flight = None;
        self.missed_turns += n;
        n
    }

    /// Forgets everything (R1 reset): nothing is counted as missed.
    pub fn clear(&mut self) {
        self.pending.clear();
        self.pending_wip = false;
        self.in_flight = None;
        self.missed_turns = 0;
    }
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
    fn p1_a_batch_is_wip_when_its_last_delta_is() {
        let mut q = ReviewQueue::new();
        q.push_turn("a".into(), false);
        q.push_turn("b".into(), true);
        assert!(q.take_batch().unwrap().wip);
        q.finish_ok();
        q.push_turn("c".into(), true);
        q.push_turn("d".into(), false);
        let batch = q.take_batch().unwrap();
        assert!(!batch.wip, "the last turn was final");
        // A failed batch keeps its flag unless newer turns came meanwhile.
        q.finish_failed();
        assert!(!q.take_batch().unwrap().wip);
        q.push_turn("e".into(), true);
        q.finish_failed();
        assert!(q.take_batch().unwrap().wip, "the newer WIP turn is last");
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
}
