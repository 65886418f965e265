//! Messages of the TranscriptFeed (X1–X4).

use actix::Message as ActixMessage;

use crate::domain::transcript::{Transcript, TranscriptMark};
use crate::feed::Update;
use crate::members::Captured;

/// Takes a turn end: the feed captures the delta (CA3) and answers it.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "TurnObserved")]
pub struct ObserveTurn {
    /// The transcript as it stood after the turn.
    pub transcript: TranscriptMark,
    /// The turn is work in progress (its delta is queued WIP, P1).
    pub wip: bool,
}

/// What the feed captured at a turn end (CA3), or that the transcript was rewritten (X1).
#[derive(Debug, Clone, PartialEq)]
pub enum TurnObserved {
    /// The delta as the primary saw it at this turn end; the cursor moved to the end.
    Captured {
        /// The rendered delta, `None` when blank (X3).
        update: Option<Update>,
        /// Whether it touched a path the advisor's `when: { paths }` matches (RO17); true
        /// without `when`. An update it does not match is held, never eligible (CA4).
        paths_match: bool,
    },
    /// The transcript shrank or its seen part changed: the caller resets (R1).
    Rewrite,
    /// The host replaced the transcript before the feed read this turn: nothing was
    /// captured and the cursor did not move (the host's rewrite follows).
    Superseded,
}

impl TurnObserved {
    /// What the member `slug`'s feed captured, when it observed the turn (not a rewrite,
    /// not a superseded transcript).
    pub(crate) fn captured(self, slug: Option<String>) -> Option<Captured> {
        match self {
            TurnObserved::Captured {
                update,
                paths_match,
            } => Some(Captured {
                slug,
                update,
                paths_match,
            }),
            TurnObserved::Rewrite | TurnObserved::Superseded => None,
        }
    }
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
