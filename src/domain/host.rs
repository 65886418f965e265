//! The host-facing domain (SPEC A4): what a step boundary hands the host, why a transcript
//! was rewritten, and what the advisor tells the host through the recipient it passes in.

use actix::Message as ActixMessage;
use serde::{Deserialize, Serialize};

use crate::domain::advice::Delivery;

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

impl RewriteKind {
    /// The kind in the serve protocol's words (V2: `compaction`, `switch`, `new`, `fork`,
    /// `tree`, `rewind`, `prune`; `detected` for one the feed found).
    pub fn word(self) -> &'static str {
        match self {
            RewriteKind::Compaction => "compaction",
            RewriteKind::SessionSwitch => "switch",
            RewriteKind::NewSession => "new",
            RewriteKind::Branch => "fork",
            RewriteKind::TreeNavigation => "tree",
            RewriteKind::Rewind => "rewind",
            RewriteKind::Prune => "prune",
            RewriteKind::Detected => "detected",
        }
    }
}

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
        /// The named advisor the line is about (RO23); `None` for the unnamed advisor
        /// and for lines about the whole session.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        advisor: Option<String>,
    },
}

impl HostEvent {
    /// A line for the user about the session or its unnamed advisor.
    pub fn notice(text: impl Into<String>) -> Self {
        HostEvent::Notice {
            text: text.into(),
            advisor: None,
        }
    }
}
