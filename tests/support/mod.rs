//! Helpers shared by the integration tests.

#![allow(dead_code, unused_imports)]

pub mod fixtures;
pub mod roster;
pub mod runtime;
pub mod sse_server;
pub mod virtual_clock;
pub mod wire;

/// A user message's text without the date and working directory reminder the advisor
/// prepends to the first user message of each request (P8).
pub fn without_reminder(text: &str) -> &str {
    match text.split_once("</system-reminder>\n\n") {
        Some((reminder, rest)) if reminder.starts_with("<system-reminder>\n") => rest,
        _ => text,
    }
}
