//! advisor: a second pair of eyes for coding agents.

pub mod messages;
pub mod model;
pub mod providers;
pub mod render;
pub mod session;
pub mod status;
pub mod tools;
pub mod watchdog;
