//! advisor: a second pair of eyes for coding agents.
//!
//! An advisor is a second model attached to a coding agent's session (the *primary*). After
//! each primary turn it reads what happened (a delta of the transcript), may check the
//! workspace with read-only tools (`read`, `search`, `find`), and may send short advice back
//! (a `nit`, a `concern` or a `blocker`) that the primary weighs but need not obey.
//!
//! The runtime is a set of actix actors behind one handle, [`AdvisorHandle`]. A host hands it the transcript after every turn and asks for advice
//! at every step boundary:
//!
//! ```
//! use std::sync::Arc;
//! use advisor::domain::transcript::{TranscriptMessage, Transcript};
//! use advisor::model::scripted::{ScriptedModel, ScriptedReply};
//! use advisor::settings::SyncBacklog;
//! use advisor::{AdvisorHandle, RuntimeConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A real host builds the model with `advisor::providers::build_client`.
//! let model = ScriptedModel::new([ScriptedReply::advise("1", "Run the tests first.", Some("nit"))]);
//! let mut config = RuntimeConfig::new("session-1", ".", Some(Arc::new(model)));
//! config.settings.sync_backlog = SyncBacklog::Below(1); // wait for each review
//! let (advisor, _events) = AdvisorHandle::spawn(config).await?;
//!
//! let transcript = Transcript::from_messages([TranscriptMessage::user("Refactor the parser")]);
//! advisor.turn_end(&transcript).await?;
//! let advice = advisor.step_boundary().await?;
//! assert_eq!(advice.aside.unwrap().notes[0].note, "Run the tests first.");
//! advisor.dispose().await?;
//! # Ok(())
//! # }
//! ```
//!
//! The behaviour follows the numbered specification in `docs/SPEC.md` of the repository;
//! rule ids cited in these docs (X1, D3, P1…) refer to it.
//!
//! # What a host uses
//!
//! The names a host needs are re-exported here: [`AdvisorHandle`] (the A4 calls),
//! [`AdvisorRuntime`] with [`RuntimeOptions`] (many sessions in one process, A6),
//! [`RuntimeConfig`] (what a session starts with), the transcript types [`Transcript`] and
//! [`TranscriptMessage`], what comes back ([`StepAdvice`], [`HostEvent`], [`AdvisorStatus`]),
//! the model seam ([`ModelClient`], built for a provider by [`build_client`]) and the
//! settings ([`AdvisorSettings`], [`SettingsEnv`], [`load_settings`]). A host that serves
//! another process rather than embedding uses [`serve`]; one that replays a recorded
//! session uses [`session`] and [`replay`]. The root also re-exports what tools built on
//! the crate drive directly from its private layers: the transcript views
//! ([`TranscriptView`], [`render_delta`]), the transcript cursor ([`FeedCursor`],
//! [`batch_parts`]), the secret [`Redactor`] and a recorded session's per-turn prompts
//! ([`TurnPrompts`]).
//!
//! # Layout
//!
//! Modules from the bottom up: a module imports only from those above it in this list,
//! never from one below, and from the defining module, never through a root re-export
//! (`use crate::Name`): the root sits above every module (`tests/suite/layering.rs` checks
//! both). Linked modules are public; the others are private, and what a
//! host needs of them is re-exported at the root. Internal modules, marked *(internal)*,
//! have nothing re-exported.
//!
//! - [`texts`]: the model- and user-facing text tables compiled in from `config/prompts/`
//!   (the `advisor` command reads its own lines with [`texts::Table`]).
//! - [`regular_file`]: bounded reads of regular files only (no FIFOs, no devices); the
//!   `advisor` command reads the hosts' hooks files with it too.
//! - [`xml`]: XML text and attribute escaping, written once (D2, RO18); the eval chart uses it too.
//! - `cache` *(internal)*: the one shape of the process-wide caches: a value per key, kept
//!   while its files are unchanged (A6).
//! - [`domain`]: the transcript, advisories and deliveries, host events: plain data.
//! - [`model`]: the model seam (`ModelClient`, requests, usage, the call limit) and a
//!   scripted model for tests.
//! - `redact`: secret redaction of deltas and tool results (X5).
//! - [`watchdog`]: WATCHDOG.md discovery and expansion (§8), and the project's instruction
//!   files and single-child-repository hint (P8).
//! - `render`: the expanded (default), compact and full transcript views (§3), their
//!   head-and-tail excerpts, and the context dump (C4).
//! - [`settings`]: the `advisor.*` settings, their files and environment (K1).
//! - [`providers`]: the two wire formats over reqwest, the model catalog, role resolution.
//! - [`roster`]: the roster of named advisors: `WATCHDOG.yml` discovery and resolution
//!   (§15).
//! - [`tools`]: the read-only workspace tools and `advise` (§9).
//! - `spend` *(internal)*: what the advisor spends and the rules over it: the tool budget
//!   (SP1, SP2), the silent advisor (SP4), the ratio to the primary (SP5), the ceiling (SP6).
//! - [`session`]: session-file reading and the host-driving sequence (L1), and where the
//!   advisor's transcript file of a session goes (P9).
//! - `feed`: the transcript cursor that turns a turn end into a delta (X1–X4), and the
//!   user messages a batch of deltas is sent as (`batch_parts`, §3 Expanded).
//! - `turn_prompts`: per-turn prompts of a recorded session, as `advisor render` prints them (L3).
//! - `review` *(internal)*: the review engine: queue and coalescing (G2), failure policy
//!   (F1–F3, P7), the backup reviewer (P6), context maintenance (G5), the `Reviewer` tool
//!   loop with its output quarantine (P5), consult (G8).
//! - [`gate`]: the action gate (§20): a risky tool call reviewed before it runs — the local
//!   classifier over the output quarantine's reading (GT2), the gate model's request and
//!   strict verdict, the session's cache, breaker and counters (GT1–GT12).
//! - `delivery` *(internal)*: routing and the outbox (D1–D3, D6–D8), reconfirm and catch-up
//!   (D4, D5, D9), outcome accounting (D10), one emission guard, policy and cap per advisor
//!   of a roster and the cross-advisor dedupe (RO13, RO15, RO16, RO22).
//! - `command` *(internal)*: the `/advisor` commands (C1–C4).
//! - `status`: the advisor's status (C3).
//! - `shared` *(internal)*: what every session of a process shares (HTTP clients, redactor,
//!   catalog, call limits, WATCHDOG.md cache).
//! - `config`: [`RuntimeConfig`], base-prompt assembly (G1), what each advisor of a roster
//!   is started with (`MemberPlan`, `RosterDiff`; RO11–RO13, RO21).
//! - `members` *(internal)*: the Supervisor's decisions about its members as plain state
//!   (`Members`; RO12–RO21, R1, CA1–CA12, SP6, SP7): each answers the `MemberChange`s the
//!   actor carries out; the `/advisor` commands and the status's parts (C1–C4), and what
//!   the Supervisor keeps over the session beside them (`SessionState`).
//! - `setup`: one session's [`RuntimeConfig`] from what a host worked out ([`SessionSetup`]):
//!   the models beside its own (G5, P6), WATCHDOG.md and the roster found where it is
//!   (W1, RO1, RO23); `advisor replay` and `advisor serve` both build sessions with it.
//! - `messages` *(internal)*: the actix message types, grouped by concern.
//! - `actors` *(internal)*: thin actor shells over the logic, one per file.
//! - `handle`: [`AdvisorHandle`], the host's side of one session (A3, A4).
//! - `runtime`: [`AdvisorRuntime`], the arbiter pool and shared resources (A6).
//! - [`replay`]: replaying a recorded session through a handle (L2), and under it
//!   [`replay::eval`], `advisor eval`, the planted-mistake benchmark: cases, runs, scores,
//!   reports (§18).
//! - [`serve`]: `advisor serve`, JSON-RPC 2.0 over stdio (V1–V4).
//! - [`hosts`]: the hook hosts Claude Code and Codex CLI: `advisor hook`, its background
//!   process and its places (§19); their settings (§21). Installing and checking their hooks
//!   belong to the `advisor` command (the workspace's `cli/` package).

#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod domain;
pub mod gate;
pub mod hosts;
pub mod model;
pub mod providers;
pub mod regular_file;
pub mod replay;
pub mod roster;
pub mod serve;
pub mod session;
pub mod settings;
pub mod texts;
pub mod tools;
pub mod watchdog;
pub mod xml;

pub(crate) mod actors;
pub(crate) mod cache;
pub(crate) mod command;
pub(crate) mod config;
pub(crate) mod delivery;
pub(crate) mod feed;
pub(crate) mod handle;
pub(crate) mod members;
pub(crate) mod messages;
pub(crate) mod redact;
pub(crate) mod render;
pub(crate) mod review;
pub(crate) mod runtime;
pub(crate) mod setup;
pub(crate) mod shared;
pub(crate) mod spend;
pub(crate) mod status;
pub(crate) mod turn_prompts;

pub use config::RuntimeConfig;
pub use delivery::{AdviceTap, RaiseOutcome, RaisedAdvice};
pub use domain::host::{HostEvent, RewriteKind, StepAdvice};
pub use domain::transcript::{Transcript, TranscriptMessage};
pub use feed::{batch_parts, FeedCursor, FeedOutcome, Update as FeedUpdate};
pub use handle::{AdvisorHandle, AskError, BacklogWait, HandleError, TurnEndOptions};
pub use model::ModelClient;
pub use providers::build_client;
pub use redact::{Redactor, SecretKind};
pub use render::{render_delta, ExpandedMemory, TranscriptView};
pub use runtime::{AdvisorRuntime, RuntimeOptions, SharedResources};
pub use settings::{load_settings, AdvisorSettings, SettingsEnv};
pub use setup::{
    session_role, HostSettings, KeyLookup, ModelSource, RequestedModel, SessionBasics,
    SessionInputs, SessionLoaded, SessionModel, SessionPrepared, SessionSetup, SetupError,
};
pub use status::{
    AdvisorSpend, AdvisorState, AdvisorStatus, AgentStatus, CadenceStatus, CeilingState,
    CeilingStatus, CheckInCounts, DeliveryCounts, DeliveryStatus, DropReason, FallbackStatus,
    NamedAdvisorStatus, PrimarySpend, RatioBasis, SessionSpend, SpendRatio, ToolCallCounts,
    ToolSpendCounts,
};
pub use turn_prompts::TurnPrompts;
