//! Messages of the TranscriptFeed (X1–X4).

use actix::Message as ActixMessage;

use crate::feed::FeedOutcome;
use crate::messages::transcript::Transcript;

/// Takes a turn end: the feed computes the delta, queues it for the advisor, and answers
/// what it found.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "FeedOutcome")]
pub struct ObserveTurn {
    /// The transcript after the turn.
    pub transcript: Transcript,
    /// The epoch the delta belongs to.
    pub epoch: u64,
}

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
