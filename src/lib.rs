//! advisor: a second pair of eyes for coding agents.

pub mod actors;
pub mod command;
pub mod delivery;
pub mod feed;
pub mod handle;
pub mod messages;
pub mod model;
pub mod prompts;
pub mod providers;
pub mod render;
pub mod review;
pub mod session;
pub mod settings;
pub mod status;
pub mod tools;
pub mod watchdog;

pub use actors::supervisor::RuntimeConfig;
pub use handle::{AdvisorHandle, HandleError};
