//! Messages of the TranscriptFeed (X1–X4).

use actix::Message as ActixMessage;

use crate::domain::transcript::{Transcript, TranscriptMark};

/// Takes a turn end: the feed computes the delta, queues it for the advisor, and answers
/// what it found.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "TurnObserved")]
pub struct ObserveTurn {
    /// The transcript as it stood after the turn.
    pub transcript: TranscriptMark,
    /// The epoch the delta belongs to.
    pub epoch: u64,
    /// The turn is work in progress (its delta is queued WIP, P1).
    pub wip: bool,
}

/// What the feed did with a turn end. The delta itself went to the advisor; the answer
/// only says whether there was one, or whether the transcript was rewritten (X1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnObserved {
    /// A non-blank delta was queued for review.
    Queued,
    /// Nothing worth reviewing; the cursor moved to the end (X3).
    Blank,
    /// The transcript shrank or its seen part changed: the caller resets (R1).
    Rewrite,
    /// The host replaced the transcript before the feed read this turn: nothing was
    /// queued and the cursor did not move (the host's rewrite follows).
    Superseded,
    /// The update touched no path the advisor's `when: { paths }` matches (RO17): nothing
    /// was queued and the cursor did not move; the next reviewed update carries it.
    Skipped,
}

/// How many updates the feed skipped for its `when: { paths }` (RO17) since it started;
/// 0 without a filter.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "u64")]
pub struct GetSkippedUpdates;

/// Moves the cursor to the transcript's end without a delta (X4).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct SeedCursor {
    /// The current transcript.
    pub transcript: Transcript,
    /// Its length at the moment of seeding.
    pub len: usize,
}

/// Rewinds the cursor to 0 (R1).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct RewindCursor;
