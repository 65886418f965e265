//! `advisor render`.

use clap::Args;

use super::CliError;

/// Arguments of `advisor render`.
#[derive(Debug, Args)]
pub struct RenderArgs {}

/// Runs `advisor render`.
pub fn run(_args: RenderArgs) -> Result<(), CliError> {
    Err(CliError::new("advisor render: not built yet"))
}
