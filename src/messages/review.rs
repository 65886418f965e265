//! Messages of the AdvisorAgent (G2–G5, G8) and its reports to the Supervisor (F1–F3).

use std::time::SystemTime;

use actix::Message as ActixMessage;
use serde::Serialize;

use crate::domain::advice::AdvisorLabel;
use crate::feed::Update;

pub use crate::review::{AgentStatus, AskEnd, AskError, AuditEvent, BacklogWait, PendingReviews};

/// Queues one scheduled review (CA2, CA3): the updates the advisor held, oldest first, then
/// the boundary's own delta; one backlog unit (CA12).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct QueueDelta {
    /// The epoch the deltas were rendered in; stale ones are ignored.
    pub epoch: u64,
    /// Each `### Session update\n\n` + a rendered delta (compact, full), or a turn's
    /// messages, rendered with their batch (expanded).
    pub updates: Vec<Update>,
    /// The review is work in progress: its last delta's turn goes on (§3 Expanded, P1). A
    /// batch is WIP when its last delta is ([`crate::review::queue::Batch::wip`]).
    pub wip: bool,
    /// The advisor's turn end the review was scheduled at
    /// ([`crate::review::check_in::CheckInWait::turn`]): a `check_in` of the review counts
    /// from it (SP7).
    pub turn: u64,
}

/// Resolves once the backlog is below `threshold`, or at once while the advisor is failing
/// or paused (S1, S2), or when waiters are released; says which. The time bound (30 s for
/// S1, the catch-up block's for D5) is the caller's.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "BacklogWait")]
pub struct AwaitBacklog {
    /// Wait until the backlog is below this.
    pub threshold: usize,
}

/// Wakes every backlog waiter (abort, reset, dispose).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct ReleaseWaiters;

/// Starts a new epoch: drops the context, the backlog and the in-flight review's effects
/// (R1), and ends a question queued or running at once (its model call dropped, G8).
/// Usage already spent stays counted.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct ResetAdvisor {
    /// The new epoch.
    pub epoch: u64,
    /// Why: what a question queued or running is answered with (its model call cancelled).
    pub cause: AskEnd,
    /// The agent is being stopped (`/advisor off`, a removed or rebuilt roster entry,
    /// RO19, RO21): its running review is cancelled too, so none of its model calls, tool
    /// calls or raises happen afterwards. A session reset (R1) lets it run to its end, its
    /// advice dropped and its usage counted.
    pub stopping: bool,
}

/// A review or ask failed (agent → supervisor, for status): counted in `failures` (C3).
/// What the failure does to the backlog the agent decided itself (F1–F3).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct ReviewFailed {
    /// The epoch it ran in.
    pub epoch: u64,
    /// The named advisor reporting (RO13); `None`: the unnamed advisor.
    pub advisor: Option<AdvisorLabel>,
}

/// The agent dropped its backlog after repeated failures (agent → supervisor, F2); the
/// supervisor tells the user.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct BacklogDropped {
    /// The epoch.
    pub epoch: u64,
    /// Turns dropped.
    pub turns: usize,
    /// The last failure.
    pub error: String,
    /// The named advisor reporting (RO13); `None`: the unnamed advisor.
    pub advisor: Option<AdvisorLabel>,
}

/// The output quarantine withheld a review (agent → supervisor, P5); the agent has cleared
/// its context and queue, the supervisor rewinds the feed.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct ReviewQuarantined {
    /// The epoch.
    pub epoch: u64,
    /// The first in a row: re-prime with the current transcript, silently. Otherwise the
    /// batch is dropped and the user told once.
    pub reprime: bool,
    /// The hazard classes that counted.
    pub labels: String,
    /// The named advisor reporting (RO13); `None`: the unnamed advisor.
    pub advisor: Option<AdvisorLabel>,
}

/// The agent paused (agent → supervisor, F3); the supervisor tells the user.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct AdvisorPaused {
    /// The epoch.
    pub epoch: u64,
    /// The status line's reason.
    pub reason: String,
    /// When it resumes by itself (a long `Retry-After`); `None` waits for the user.
    pub resume_at: Option<SystemTime>,
    /// The named advisor reporting (RO13); `None`: the unnamed advisor.
    pub advisor: Option<AdvisorLabel>,
}

/// Resumes a paused or failing advisor now (`/advisor on`, F3).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct ResumeReviews;

/// A new session began: a halt after repeated dropped batches ends (P7); other pauses stay.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct EndHalt;

/// Asks the advisor a question (G8); answers the text, or why there is none.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "Result<String, AskError>")]
pub struct AskAdvisor {
    /// The question.
    pub question: String,
    /// The advisor asked, by name or slug (RO20); `None`: the unnamed advisor, else the
    /// roster's first enabled entry.
    pub advisor: Option<String>,
}

/// A review called `check_in` (agent → supervisor, SP7): the advisor's next review starts
/// `after_turns` turn ends after the one its batch ended at.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct CheckedIn {
    /// The epoch the review ran in; a report from before a reset is ignored.
    pub epoch: u64,
    /// The advisor's turn end the review's batch ended at.
    pub turn: u64,
    /// After how many turn ends the next review starts, 1–5.
    pub after_turns: u8,
    /// The named advisor reporting (RO13); `None`: the unnamed advisor.
    pub advisor: Option<AdvisorLabel>,
    /// The reviews queued behind the calling one, taken out of the agent's queue: held
    /// back for the appointed review, or given back ([`RestoreReviews`]) when nothing waits.
    pub postponed: PendingReviews,
}

/// Puts reviews a `check_in` report took out of the agent's queue back, before those
/// queued since (supervisor → agent, SP7): nothing waited for them.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct RestoreReviews {
    /// The epoch they were taken in; stale ones are ignored.
    pub epoch: u64,
    /// The reviews.
    pub reviews: PendingReviews,
}

/// A line for the user from the agent, which has no host recipient of its own (agent →
/// supervisor → host `Notice`); e.g. a WATCHDOG.md warning (W3).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct NoticeRaised {
    /// The text.
    pub text: String,
    /// The named advisor reporting (RO13); `None`: the unnamed advisor.
    pub advisor: Option<AdvisorLabel>,
}

/// A model run of the agent (review, ask or summary) spent `usage`, whatever its epoch or
/// outcome: the supervisor adds it up over the session for the spend ceiling (SP6).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct SpendRecorded {
    /// The named advisor reporting (RO13); `None`: the unnamed advisor.
    pub advisor: Option<AdvisorLabel>,
    /// What the run spent.
    pub usage: crate::model::Usage,
}

/// Asks the agent for its part of the status.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "AgentStatus")]
pub struct GetAgentStatus;

/// Asks the agent for the newest part of its own context, at most `max_chars` characters of
/// messages (GT3: what the action gate is shown). While a review runs, the context as that
/// review started with it; empty when the advisor has no context yet.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "AdvisorContextTail")]
pub struct GetAdvisorContext {
    /// The bound, in characters of the messages.
    pub max_chars: usize,
}

/// The answer to [`GetAdvisorContext`]: the newest part of the context and how far into the
/// session it reaches (GT3: the transcript past it is what the advisor has not seen yet).
#[derive(Debug, Clone, Default)]
pub struct AdvisorContextTail {
    /// The newest messages, within the asked bound.
    pub messages: Vec<crate::model::ChatMessage>,
    /// The advisor's turn end its last completed review covered up to (the `turn` of its
    /// [`QueueDelta`]); `None` before any, or after a reset.
    pub turn: Option<u64>,
}

/// Asks the agent for its transcript (C4).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "String")]
pub struct DumpContext {
    /// Full dump with system prompt, tools, thinking and tool results.
    pub raw: bool,
}

/// One line of the advisor's audit transcript (G7): something that happened to its context,
/// with the epoch and review it happened in (agent → AuditLog).
#[derive(Debug, Clone, PartialEq, Serialize, ActixMessage)]
#[rtype(result = "()")]
#[serde(rename_all = "camelCase")]
pub struct AppendAudit {
    /// The epoch (R1); a reset starts a new one.
    pub epoch: u64,
    /// The review it belongs to.
    pub review: u64,
    /// Milliseconds since the Unix epoch when it happened.
    pub at_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub event: AuditEvent,
}

/// Resolves once every audit entry received so far is written (or failed); used before
/// dispose returns (R2, G7).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct FlushAudit;

/// Asks the audit log for the usage its file recorded before this session started (P9):
/// the lifetime totals a resumed session goes on from. Answers once the file is read.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "crate::model::Usage")]
pub struct GetRestoredUsage;
