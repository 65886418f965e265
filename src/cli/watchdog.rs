//! `advisor watchdog`.

use clap::Args;

use super::CliError;

/// Arguments of `advisor watchdog`.
#[derive(Debug, Args)]
pub struct WatchdogArgs {}

/// Runs `advisor watchdog`.
pub fn run(_args: WatchdogArgs) -> Result<(), CliError> {
    Err(CliError::new("advisor watchdog: not built yet"))
}
