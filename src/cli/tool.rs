//! `advisor tool`.

use clap::Args;

use super::CliError;

/// Arguments of `advisor tool`.
#[derive(Debug, Args)]
pub struct ToolArgs {}

/// Runs `advisor tool`.
pub fn run(_args: ToolArgs) -> Result<(), CliError> {
    Err(CliError::new("advisor tool: not built yet"))
}
