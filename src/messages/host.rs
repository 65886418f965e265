//! The host protocol's mailbox types (SPEC A4): what the embedding agent server sends the
//! advisor. What it sends back ([`crate::domain::host::HostEvent`]) lives in the domain.

use crate::domain::host::StepAdvice;
use crate::domain::transcript::TranscriptMark;
use actix::Message as ActixMessage;

/// A primary turn finished; carries the whole transcript as it stood then (shared, not
/// copied). Resolves after the syncBacklog wait (S1).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct PrimaryTurnEnded {
    /// The transcript as it stood after the turn and its tool results.
    pub transcript: TranscriptMark,
    /// Whether the primary will call its model again in this run (the turn is work in
    /// progress, §3 Expanded, P1), as the host says; `None` derives it from the turn's last
    /// assistant message (it made a tool call: WIP).
    pub will_continue: Option<bool>,
}

/// The host is about to call its model: returns the advice to fold in now.
#[derive(Debug, Clone, Copy, Default, ActixMessage)]
#[rtype(result = "StepAdvice")]
pub struct TakeStepAdvice;

/// The primary started (`running: true`) or went idle.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct RunStateChanged {
    /// Whether the primary is running.
    pub running: bool,
}

/// The host is preparing a session transition — a switch, a new session or a fork —
/// (`preparing: true`), or it ended without one (`false`, say cancelled). While one is
/// being prepared every catch-up wait is released and new ones return at once (CA11); the
/// reset that begins the other conversation ends it too (R1, CA8).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct SessionTransitionChanged {
    /// Whether a transition is being prepared.
    pub preparing: bool,
}

/// The host's model catalog changed (a provider registered, models discovered): every
/// advisor without a model is resolved once more, quietly; one that resolves starts at the
/// transcript's end (CA23, X4).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct ModelCatalogChanged;

/// The host aborted the run; `by_user` latches auto-resume suppression (D6).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct RunInterrupted {
    /// Whether the user did it.
    pub by_user: bool,
}

/// A user-initiated prompt; clears the interrupt latch (D6).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct UserPrompted;

/// The host replaced its transcript: reset the advisor (R1).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct TranscriptRewritten {
    /// What kind of rewrite.
    pub kind: crate::domain::host::RewriteKind,
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
pub struct DisposeSession;

/// Waits for the advisor to drain its backlog: resolves `Drained` once nothing is left to
/// review (at once when no advisor runs), `Failing` at once while a retry is pending or the
/// advisor is paused (S2), `Released` on abort, reset or dispose. No time bound: that is
/// the caller's (L2's end-of-file wait).
#[derive(Debug, Clone, Copy, Default, ActixMessage)]
#[rtype(result = "crate::messages::review::BacklogWait")]
pub struct AwaitDrain;

/// Stops a session's supervisor after [`DisposeSession`], so nothing of the session stays
/// in memory even while the host still holds handle clones (A6: closing frees everything).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct CloseSession;

/// Puts a proposed tool call to the action gate before it runs (GT1, GT11).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "crate::gate::GateVerdict")]
pub struct GateAction {
    /// The call.
    pub action: crate::gate::ProposedAction,
    /// What the host says beside it (whether a person can be asked).
    pub options: crate::gate::GateOptions,
}
