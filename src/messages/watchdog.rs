//! Messages of the WatchdogLoader (SPEC §8).

use actix::Message as ActixMessage;

pub use crate::watchdog::WatchdogPrompt;

/// Asks for the current watchdog blocks; the loader reloads first when a discovered file
/// changed or a new candidate appeared (W8).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "WatchdogPrompt")]
pub struct GetWatchdogPrompt;

/// Asks the loader how much work it has done; for status lines and tests.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "WatchdogStats")]
pub struct GetWatchdogStats;

/// Counters of a `WatchdogLoader`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchdogStats {
    /// Prompt requests answered.
    pub requests: u64,
    /// Full loads done (the first request, then one per detected change).
    pub loads: u64,
    /// Files read over all loads (WATCHDOG files and imports).
    pub files_read: u64,
}
