//! The runtime's actors, one per file.

pub mod advisor_agent;
pub mod agent_port;
pub mod audit_log;
pub mod delivery_router;
pub mod event_forwarder;
pub(crate) mod gate_ask;
pub(crate) mod links;
pub mod supervisor;
pub mod tool_executor;
pub mod transcript_feed;
pub mod watchdog_loader;
pub mod wiring;
