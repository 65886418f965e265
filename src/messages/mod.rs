//! Message types, grouped by concern.

pub mod advice;
pub mod host;
pub mod transcript;
pub mod watchdog;
