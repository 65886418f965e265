//! Messages of the WatchdogLoader (SPEC §8).

use actix::Message as ActixMessage;

/// Asks for the current watchdog blocks; the loader reloads first when a discovered file
/// changed or a new candidate appeared (W8).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "WatchdogPrompt")]
pub struct GetWatchdogPrompt;

/// The watchdog part of the system prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchdogPrompt {
    /// One `Especially pay attention to:` block per file, in prompt order (W4, W5).
    pub blocks: Vec<String>,
    /// Warnings about unreadable files (W3), each reported once per change.
    pub warnings: Vec<String>,
}

impl WatchdogPrompt {
    /// The blocks joined by a blank line, as they go into the system prompt.
    pub fn joined(&self) -> String {
        self.blocks.join("\n\n")
    }
}
