//! The `advisor` command line: one module per subcommand.

pub mod render;
pub mod replay;
pub mod roster;
pub mod serve;
pub mod tool;
pub mod watchdog;

use clap::{Parser, Subcommand};

/// Command-line interface of the advisor runtime.
#[derive(Debug, Parser)]
#[command(
    name = "advisor",
    version,
    about = "A second pair of eyes for coding agents"
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print what the advisor would be sent for each turn of a session file (L3).
    Render(render::RenderArgs),
    /// Replay a session file through the advisor as a host would and print its advice (L2).
    Replay(replay::ReplayArgs),
    /// Run one advisor tool as the advisor would and print what the model would see.
    Tool(tool::ToolArgs),
    /// Print the watchdog blocks that would go into the system prompt (L4).
    Watchdog(watchdog::WatchdogArgs),
    /// Print the roster of named advisors resolved from WATCHDOG.yml files, with where
    /// each value came from (§15; the runtime does not run named advisors yet).
    Roster(roster::RosterArgs),
    /// Serve advisor sessions to another process over JSON-RPC on stdin/stdout (V1–V4).
    Serve(serve::ServeArgs),
}

/// A CLI failure: printed as one line on standard error, exit code 1 (L5).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CliError(pub String);

impl CliError {
    /// A new error line.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Render(args) => render::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Tool(args) => tool::run(args),
        Command::Watchdog(args) => watchdog::run(args),
        Command::Roster(args) => roster::run(args),
        Command::Serve(args) => serve::run(args),
    }
}
