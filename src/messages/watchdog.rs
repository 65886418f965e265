//! Messages of the WatchdogLoader (SPEC §8).

use actix::Message as ActixMessage;

pub use crate::watchdog::WatchdogPrompt;

/// Asks for the current watchdog blocks; the loader reloads first when a discovered file
/// changed or a new candidate appeared (W8).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "WatchdogPrompt")]
pub struct GetWatchdogPrompt;
