//! The queue of deltas waiting for review and their coalescing into batches (G2), with
//! the record of turns dropped after repeated failures (F2). A batch that failed is retried
//! as it was, alone: the turns that came meanwhile wait behind it (P7).

use std::collections::VecDeque;

use super::texts;
use crate::feed::{batch_parts, Update};
use crate::render::ExpandedMemory;

/// A batch of deltas reviewed together (G2).
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The deltas, oldest first.
    pub deltas: Vec<Update>,
    /// Turns the batch covers (one per delta).
    pub turns: usize,
    /// Scheduled reviews the batch covers (CA12): its backlog units and its note budget;
    /// one review carrying held updates is one unit however many deltas it has.
    pub units: usize,
    /// The batch is work in progress: its last delta's turn made tool calls and the primary
    /// goes on (§3 Expanded's footer, P1's deferral).
    pub wip: bool,
    /// The advisor's turn end its newest review was scheduled at (SP7: a `check_in` counts
    /// from it); 0 when the reviews were queued without one.
    pub last_turn: u64,
}

/// The reviews queued behind a running one, taken out of the queue (SP7: a `check_in`
/// postpones them) and possibly put back before anything queued since.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PendingReviews {
    /// Their deltas, oldest first.
    pub updates: Vec<Update>,
    /// Scheduled reviews among them (CA12).
    pub units: usize,
    /// The newest delta is work in progress.
    pub wip: bool,
    /// The advisor's turn end the newest of them was scheduled at.
    pub turn: u64,
}

/// What one review sends the advisor: its user messages, in order. The compact and full
/// views make one; the expanded view one per message of the batch (SPEC §3 Expanded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewPrompt {
    /// The user messages, never empty.
    pub parts: Vec<String>,
}

impl ReviewPrompt {
    /// A prompt of one message.
    pub fn single(text: String) -> Self {
        Self { parts: vec![text] }
    }

    /// The parts joined by `\n`: the single-string form.
    pub fn joined(&self) -> String {
        self.parts.join("\n")
    }

    /// Puts `text` and a blank line before the first part.
    pub fn prefix(&mut self, text: &str) {
        match self.parts.first_mut() {
            Some(first) => first.insert_str(0, &format!("{text}\n\n")),
            None => self.parts.push(text.to_string()),
        }
    }
}

/// The queue of deltas waiting for review (G2) and the record of turns dropped by F2.
#[derive(Debug, Default)]
pub struct ReviewQueue {
    pending: VecDeque<Update>,
    /// Scheduled reviews among `pending` (CA12).
    pending_units: usize,
    /// Whether the newest pending delta is WIP (a batch is WIP when its last delta is).
    pending_wip: bool,
    /// The turn end the newest pending review was scheduled at (SP7).
    pending_turn: u64,
    in_flight: Option<Batch>,
    /// A batch that failed, to be retried as it was before the pending deltas (P7).
    retry: Option<Batch>,
    missed_turns: usize,
    /// The expanded view's standing context already sent (kept across reviews).
    memory: ExpandedMemory,
    /// `memory` as the in-flight batch leaves it: kept when the review succeeds.
    in_flight_memory: Option<ExpandedMemory>,
}

impl ReviewQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues one delta (one turn) that is not WIP.
    #[cfg(test)]
    pub fn push(&mut self, delta: impl Into<Update>) {
        self.push_turn(delta.into(), false);
    }

    /// Queues one delta (one turn); `wip` when the turn is work in progress (P1).
    #[cfg(test)]
    pub fn push_turn(&mut self, delta: Update, wip: bool) {
        self.push_review(vec![delta], wip);
    }

    /// Queues one scheduled review of `deltas` (held updates first, CA3): one backlog unit
    /// (CA12); `wip` when its last delta is work in progress (P1). Nothing to queue when
    /// `deltas` is empty.
    pub fn push_review(&mut self, deltas: Vec<Update>, wip: bool) {
        if deltas.is_empty() {
            return;
        }
        self.pending.extend(deltas);
        self.pending_units += 1;
        self.pending_wip = wip;
    }

    /// [`Self::push_review`] of a review scheduled at the advisor's turn end `turn`: the
    /// batch taking it ends there (SP7).
    pub fn push_review_at(&mut self, deltas: Vec<Update>, wip: bool, turn: u64) {
        if deltas.is_empty() {
            return;
        }
        self.push_review(deltas, wip);
        self.pending_turn = self.pending_turn.max(turn);
    }

    /// Takes the pending reviews out of the queue (not the in-flight batch nor a retry).
    pub fn take_pending(&mut self) -> PendingReviews {
        PendingReviews {
            updates: self.pending.drain(..).collect(),
            units: std::mem::take(&mut self.pending_units),
            wip: std::mem::take(&mut self.pending_wip),
            turn: std::mem::take(&mut self.pending_turn),
        }
    }

    /// Puts reviews [`Self::take_pending`] took back before those queued since.
    pub fn restore_pending(&mut self, back: PendingReviews) {
        if back.updates.is_empty() {
            return;
        }
        if self.pending.is_empty() {
            self.pending_wip = back.wip;
        }
        for update in back.updates.into_iter().rev() {
            self.pending.push_front(update);
        }
        self.pending_units += back.units;
        self.pending_turn = self.pending_turn.max(back.turn);
    }

    /// Scheduled reviews not yet reviewed or dropped, the in-flight batch and a batch
    /// waiting for its retry included (G2, CA12: one unit however many held updates a
    /// review carries).
    pub fn backlog(&self) -> usize {
        let units = |b: &Option<Batch>| b.as_ref().map_or(0, |b| b.units);
        self.pending_units + units(&self.in_flight) + units(&self.retry)
    }

    /// The next batch, when none is in flight: a failed batch waiting for its retry, as it
    /// was (P7), else every pending delta as one batch (coalescing, G2).
    pub fn take_batch(&mut self) -> Option<Batch> {
        if self.in_flight.is_some() {
            return None;
        }
        if let Some(batch) = self.retry.take() {
            self.in_flight = Some(batch.clone());
            return Some(batch);
        }
        if self.pending.is_empty() {
            return None;
        }
        let deltas: Vec<Update> = self.pending.drain(..).collect();
        let batch = Batch {
            turns: deltas.len(),
            units: std::mem::take(&mut self.pending_units),
            deltas,
            wip: std::mem::take(&mut self.pending_wip),
            last_turn: std::mem::take(&mut self.pending_turn),
        };
        self.in_flight = Some(batch.clone());
        Some(batch)
    }

    /// The review prompt of a batch: the missed-turns notice (F2) when turns were dropped,
    /// then the deltas: rendered texts joined by a blank line, expanded turns one message
    /// per part ([`batch_parts`]). The standing context it sends is remembered once the
    /// review succeeds.
    pub fn prompt_for(&mut self, batch: &Batch) -> ReviewPrompt {
        let mut memory = self.memory.clone();
        let mut parts = batch_parts(&batch.deltas, &mut memory);
        self.in_flight_memory = Some(memory);
        if parts.is_empty() {
            parts.push(String::new());
        }
        let mut prompt = ReviewPrompt { parts };
        if self.missed_turns > 0 {
            let note = texts::fill(
                texts::MISSED_TURNS,
                &[("turns", &texts::turns(self.missed_turns))],
            );
            prompt.prefix(&note);
        }
        prompt
    }

    /// The in-flight batch was reviewed.
    pub fn finish_ok(&mut self) {
        self.in_flight = None;
        self.missed_turns = 0;
        if let Some(memory) = self.in_flight_memory.take() {
            self.memory = memory;
        }
    }

    /// The in-flight batch failed: it is the next batch, retried as it was, and the deltas
    /// that came meanwhile wait behind it (F1, P7). What it would have sent of the standing
    /// context is forgotten.
    pub fn finish_failed(&mut self) {
        self.in_flight_memory = None;
        if let Some(batch) = self.in_flight.take() {
            self.retry = Some(batch);
        }
    }

    /// Drops the batch in flight, not the pending deltas (P7); returns how many turns, which
    /// the next review is told it missed. What it would have sent of the standing context is
    /// forgotten.
    pub fn drop_in_flight(&mut self) -> usize {
        let n = self.in_flight.take().map_or(0, |b| b.turns);
        self.in_flight_memory = None;
        self.missed_turns += n;
        n
    }

    /// Forgets everything (R1 reset): nothing is counted as missed, and the standing
    /// context counts as never sent.
    pub fn clear(&mut self) {
        self.pending.clear();
        self.pending_units = 0;
        self.pending_wip = false;
        self.pending_turn = 0;
        self.in_flight = None;
        self.retry = None;
        self.in_flight_memory = None;
        self.missed_turns = 0;
        self.memory.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g2_pending_deltas_coalesce_into_one_batch() {
        let mut q = ReviewQueue::new();
        q.push("a");
        q.push("b");
        assert_eq!(q.backlog(), 2);
        let batch = q.take_batch().unwrap();
        assert_eq!(batch.turns, 2);
        assert_eq!(q.prompt_for(&batch).joined(), "a\n\nb");
        q.push("c");
        assert!(q.take_batch().is_none(), "one batch at a time");
        assert_eq!(q.backlog(), 3, "in-flight turns count");
        q.finish_ok();
        assert_eq!(q.take_batch().unwrap().deltas, vec![Update::from("c")]);
    }

    #[test]
    fn ca12_a_review_carrying_held_updates_is_one_backlog_unit() {
        let mut q = ReviewQueue::new();
        q.push_review(vec!["1".into(), "2".into(), "3".into()], false);
        assert_eq!(q.backlog(), 1);
        q.push_review(Vec::new(), false);
        assert_eq!(q.backlog(), 1, "nothing to send queues nothing");
        q.push_turn("4".into(), false);
        assert_eq!(q.backlog(), 2);
        let batch = q.take_batch().unwrap();
        assert_eq!((batch.turns, batch.units), (4, 2));
        assert_eq!(q.prompt_for(&batch).joined(), "1\n\n2\n\n3\n\n4");
        assert_eq!(q.backlog(), 2);
        q.finish_ok();
        assert_eq!(q.backlog(), 0);
    }

    #[test]
    fn sp7_a_batch_ends_at_the_turn_end_of_its_newest_review() {
        let mut q = ReviewQueue::new();
        q.push_review_at(vec!["1".into()], true, 1);
        q.push_review_at(vec!["2".into(), "3".into()], true, 3);
        q.push_review_at(Vec::new(), true, 4);
        let batch = q.take_batch().unwrap();
        assert_eq!(batch.last_turn, 3, "nothing queued at turn end 4");
        q.finish_failed();
        q.push_review_at(vec!["5".into()], false, 5);
        assert_eq!(q.take_batch().unwrap().last_turn, 3, "the retry as it was");
        q.finish_ok();
        assert_eq!(q.take_batch().unwrap().last_turn, 5);
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
        // A failed batch keeps its flag; a newer WIP turn is the next batch's.
        q.push_turn("e".into(), true);
        q.finish_failed();
        assert!(
            !q.take_batch().unwrap().wip,
            "the retry is the batch as it was"
        );
        q.finish_ok();
        assert!(q.take_batch().unwrap().wip, "the newer WIP turn is last");
    }

    #[test]
    fn p7_a_failed_batch_is_retried_as_it_was_and_what_came_meanwhile_waits_behind_it() {
        let mut q = ReviewQueue::new();
        q.push("a");
        q.take_batch();
        q.push("b");
        q.finish_failed();
        assert_eq!(q.backlog(), 2);
        assert_eq!(q.take_batch().unwrap().deltas, vec![Update::from("a")]);
        q.push("c");
        q.finish_failed();
        assert_eq!(q.take_batch().unwrap().deltas, vec![Update::from("a")]);
        q.finish_ok();
        assert_eq!(
            q.take_batch().unwrap().deltas,
            vec![Update::from("b"), Update::from("c")]
        );
    }

    #[test]
    fn p7_a_dropped_batch_keeps_the_pending_turns_and_is_announced_to_the_next_review() {
        let mut q = ReviewQueue::new();
        q.push("a");
        q.push("b");
        q.take_batch();
        q.push("c");
        assert_eq!(q.drop_in_flight(), 2);
        assert_eq!(q.backlog(), 1, "the pending turn stays");
        let batch = q.take_batch().unwrap();
        let prompt = q.prompt_for(&batch).joined();
        assert!(prompt.contains("skipped 2 turns"), "{prompt}");
        assert!(prompt.ends_with("c"));
        q.finish_ok();
        q.push("d");
        let batch = q.take_batch().unwrap();
        assert_eq!(q.prompt_for(&batch).joined(), "d");
    }
}
