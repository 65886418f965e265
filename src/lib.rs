//! advisor: a second pair of eyes for coding agents.
//!
//! An advisor is a second model attached to a coding agent's session (the *primary*). After
//! each primary turn it reads what happened (a delta of the transcript), may check the
//! workspace with read-only tools (`read`, `search`, `find`), and may send short advice back
//! (a `nit`, a `concern` or a `blocker`) that the primary weighs but need not obey.
//!
//! The runtime is a set of actix actors (see [`actors`]) behind one handle,
//! [`AdvisorHandle`]. A host hands it the transcript after every turn and asks for advice
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

#![warn(missing_docs)]

pub mod actors;
pub mod command;
pub mod config;
pub mod delivery;
pub mod domain;
pub mod feed;
pub mod handle;
pub mod messages;
pub mod model;
pub mod prompts;
pub mod providers;
pub mod redact;
pub mod regular_file;
pub mod render;
pub mod replay;
pub mod review;
pub mod runtime;
pub mod serve;
pub mod session;
pub mod settings;
pub mod status;
pub mod tools;
pub mod watchdog;

pub use config::RuntimeConfig;
pub use handle::{AdvisorHandle, HandleError};
