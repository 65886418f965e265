//! Message types, grouped by concern.

pub mod delivery;
pub mod feed;
pub mod host;
pub mod review;
pub mod tools;
pub mod watchdog;
