//! The host protocol (SPEC A4): what the embedding agent server sends the advisor, and what
//! the advisor sends back through the [`HostEvent`] recipient the host passes in.

use actix::Message as ActixMessage;
use serde::{Deserialize, Serialize};

use crate::messages::advice::Delivery;
use crate::messages::transcript::Transcript;

/// A primary turn finished; carries the whole current transcript (shared, not copied).
/// Resolves after the syncBacklog wait (S1).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct TurnEnd {
    /// The transcript as it stands after the turn and its tool results.
    pub transcript: Transcript,
}

/// The host is about to call its model: returns the advice to fold in now.
#[derive(Debug, Clone, Copy, Default, ActixMessage)]
#[rtype(result = "StepAdvice")]
pub struct StepBoundary;

/// What a step boundary hands the host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepAdvice {
    /// One batched aside message with every queued nit, if any (D3).
    pub aside: Option<Delivery>,
    /// Steering cards to inject before the next model call.
    pub steers: Vec<Delivery>,
}

impl StepAdvice {
    /// True when there is nothing to fold in.
    pub fn is_empty(&self) -> bool {
        self.aside.is_none() && self.steers.is_empty()
    }

    /// Every delivery, aside first.
    pub fn deliveries(&self) -> impl Iterator<Item = &Delivery> {
        self.aside.iter().chain(self.steers.iter())
    }
}

/// The primary started (`running: true`) or went idle.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct RunState {
    /// Whether the primary is running.
    pub running: bool,
}

/// The host aborted the run; `by_user` latches auto-resume suppression (D6).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct Interrupt {
    /// Whether the user did it.
    pub by_user: bool,
}

/// A user-initiated prompt; clears the interrupt latch (D6).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct UserPrompt;

/// Why the host replaced its transcript (R1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RewriteKind {
    /// The primary's context was compacted.
    Compaction,
    /// Another session was loaded.
    SessionSwitch,
    /// A new session was started.
    NewSession,
    /// A branch or fork was created.
    Branch,
    /// The user navigated the session tree.
    TreeNavigation,
    /// The user rewound to an earlier message.
    Rewind,
    /// Tool outputs were pruned.
    Prune,
    /// The feed found the transcript shorter or changed (X1).
    Detected,
}

/// The host replaced its transcript: reset the advisor (R1).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct Rewrite {
    /// What kind of rewrite.
    pub kind: RewriteKind,
}

/// An `/advisor …` command line (C-rules); resolves to the text to show.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "String")]
pub struct RunCommand {
    /// The command line, with or without the leading `/advisor`.
    pub line: String,
}

/// Asks for the status (C3).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "crate::status::AdvisorStatus")]
pub struct GetStatus;

/// Asks for the advisor's transcript (C4): compact, or raw with the system prompt and tools.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "String")]
pub struct GetDump {
    /// Whether to include everything (system prompt, tool schemas, thinking, tool results).
    pub raw: bool,
}

/// Stops all work and wakes all waiters (R2).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct Dispose;

/// What the advisor tells the host, through the `Recipient<HostEvent>` it was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ActixMessage)]
#[rtype(result = "()")]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum HostEvent {
    /// The primary is idle and this concern/blocker should start a turn (D3).
    Wake {
        /// The advice to inject as the turn's message.
        card: Delivery,
    },
    /// A steering card is waiting; take it at the next step boundary.
    SteerReady,
    /// Append this advisory visibly; trigger no turn (D6).
    Card {
        /// The advice to show.
        card: Delivery,
    },
    /// A line for the user (warnings, catch-up notices, pauses).
    Notice {
        /// The text.
        text: String,
    },
}
