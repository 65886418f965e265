//! What the advisor would be sent for each turn of a recorded session, without a model
//! (SPEC L3): the session is driven as a host would drive the runtime, through the same
//! [`FeedCursor`] the TranscriptFeed uses.

use crate::feed::{batch_parts, FeedCursor, FeedOutcome, Update};
use crate::render::{ExpandedMemory, TranscriptView};
use crate::session::{HostStep, SessionDriver};

/// One turn's prompt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TurnPrompt {
    /// 1-based count of `TurnEnd`s.
    pub turn: usize,
    /// Exactly what the advisor would be sent: `### Session update\n\n` + the delta (the
    /// expanded view: its parts joined by `\n`).
    pub prompt: String,
    /// The expanded view: the user messages the advisor is sent, one per message shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<String>>,
    /// The expanded view: whether the turn will continue (the WIP footer is on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wip: Option<bool>,
}

/// Iterates over the non-blank prompts of a session. A compaction, or an oh-my-pi reset
/// boundary (`/clear`), resets the cursor, so the next turn sends the whole rewritten
/// transcript (R1); with no model there is no window, so that replay is not bounded.
///
/// In the expanded view each turn is its own review, and a tool-calling turn that no
/// completed assistant reply follows before the next user message (a run cut by an abort)
/// gives no prompt of its own: its messages go into the next one (SPEC §3 Expanded).
pub struct TurnPrompts {
    driver: SessionDriver,
    cursor: FeedCursor,
    merge_cut_turns: bool,
    memory: ExpandedMemory,
}

impl TurnPrompts {
    /// Prompts of `driver`'s session rendered with `view`.
    pub fn new(driver: SessionDriver, view: TranscriptView) -> Self {
        Self {
            driver,
            cursor: FeedCursor::new(view, None),
            merge_cut_turns: view == TranscriptView::Expanded,
            memory: ExpandedMemory::default(),
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

impl TurnPrompts {
    /// The next non-blank update of the session with its turn: what the runtime would queue
    /// for review at that turn end (several of them form a batch when the advisor is slow,
    /// see [`batch_parts`]).
    pub fn next_update(&mut self) -> Option<(usize, Update)> {
        while let Some(step) = self.driver.next() {
            match step {
                HostStep::TurnEnded { turn, terminal } => {
                    if self.merge_cut_turns && !terminal && self.driver.turn_was_cut() {
                        continue;
                    }
                    let transcript = self.driver.transcript();
                    match self.cursor.observe(&transcript) {
                        FeedOutcome::Delta(prompt) => return Some((turn, Update::Text(prompt))),
                        FeedOutcome::Turn(delta) => return Some((turn, Update::Turn(delta))),
                        // The mirror's cursor has no `when` filter (RO17): never skipped.
                        FeedOutcome::Blank => {}
                        // A rewrite the host did not announce: the cursor is back at 0 and
                        // the next turn sends everything, as in the runtime.
                        FeedOutcome::Rewrite => self.memory.clear(),
                        // The driver's transcript is read as it stands: never superseded.
                        FeedOutcome::Superseded => {}
                    }
                }
                HostStep::Compacted => {
                    self.cursor.reset();
                    self.memory.clear();
                }
                HostStep::RunStarted | HostStep::RunEnded => {}
            }
        }
        None
    }
}

impl Iterator for TurnPrompts {
    type Item = TurnPrompt;

    /// Each turn reviewed on its own.
    fn next(&mut self) -> Option<TurnPrompt> {
        let (turn, update) = self.next_update()?;
        Some(match update {
            Update::Text(prompt) => TurnPrompt {
                turn,
                prompt,
                parts: None,
                wip: None,
            },
            Update::Turn(delta) => {
                let wip = delta.wip;
                let parts = batch_parts(&[Update::Turn(delta)], &mut self.memory);
                TurnPrompt {
                    turn,
                    prompt: parts.join("\n"),
                    parts: Some(parts),
                    wip: Some(wip),
                }
            }
        })
    }
}
