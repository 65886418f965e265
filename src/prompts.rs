//! What the advisor would be sent for each turn of a recorded session, without a model
//! (SPEC L3): the session is driven as a host would drive the runtime, through the same
//! [`FeedCursor`] the TranscriptFeed uses.

use crate::feed::{FeedCursor, FeedOutcome};
use crate::render::TranscriptView;
use crate::session::{HostStep, SessionDriver};

/// One turn's prompt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TurnPrompt {
    /// 1-based count of `TurnEnd`s.
    pub turn: usize,
    /// Exactly what the advisor would be sent: `### Session update\n\n` + the delta.
    pub prompt: String,
}

/// Iterates over the non-blank prompts of a session. A compaction, or an oh-my-pi reset
/// boundary (`/clear`), resets the cursor, so the next turn sends the whole rewritten
/// transcript (R1); with no model there is no window, so that replay is not bounded.
pub struct SessionPrompts {
    driver: SessionDriver,
    cursor: FeedCursor,
}

impl SessionPrompts {
    /// Prompts of `driver`'s session rendered with `view`.
    pub fn new(driver: SessionDriver, view: TranscriptView) -> Self {
        Self {
            driver,
            cursor: FeedCursor::new(view, None),
        }
    }

    /// Turns secret redaction (X5) on or off; it is on by default, as in the runtime.
    pub fn with_redaction(mut self, on: bool) -> Self {
        self.cursor = self.cursor.with_redaction(on);
        self
    }

    /// The driver (for diagnostics).
    pub fn driver(&self) -> &SessionDriver {
        &self.driver
    }
}

impl Iterator for SessionPrompts {
    type Item = TurnPrompt;

    fn next(&mut self) -> Option<TurnPrompt> {
        while let Some(step) = self.driver.next() {
            match step {
                HostStep::TurnEnded { turn, .. } => {
                    let transcript = self.driver.transcript();
                    match self.cursor.observe(&transcript) {
                        FeedOutcome::Delta(prompt) => return Some(TurnPrompt { turn, prompt }),
                        FeedOutcome::Blank => {}
                        // A rewrite the host did not announce: the cursor is back at 0 and
                        // the next turn sends everything, as in the runtime.
                        FeedOutcome::Rewrite => {}
                        // The driver's transcript is read as it stands: never superseded.
                        FeedOutcome::Superseded => {}
                    }
                }
                HostStep::Compacted => self.cursor.reset(),
                HostStep::RunStarted | HostStep::RunEnded => {}
            }
        }
        None
    }
}
