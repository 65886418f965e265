//! The `advisor` command line: one module per subcommand.

pub mod eval;
mod eval_gate;
pub mod hook;
pub mod install;
pub mod render;
pub mod replay;
pub mod roster;
pub mod serve;
pub mod status;
pub mod texts;
pub mod tool;
pub mod watchdog;

use advisor::providers::ApiKind;
use clap::{Args, Parser, Subcommand};
use std::io::Write;

/// `--model`, `--base-url` and `--api`, shared by `advisor replay` and `advisor serve`.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The advisor model, `provider/model-id[:thinking]` (default: $ADVISOR_MODEL, else
    /// `modelRoles.advisor` in config.yml, else `modes.advisor` in modes.json).
    #[arg(long)]
    pub model: Option<String>,
    /// The provider's base URL, e.g. `http://127.0.0.1:8080/v1` for a local server
    /// (default: the provider's own).
    #[arg(long)]
    pub base_url: Option<String>,
    /// The wire dialect: openai-completions or anthropic-messages (default: the provider's,
    /// else openai-completions).
    #[arg(long, value_parser = parse_api)]
    pub api: Option<ApiKind>,
}

fn parse_api(s: &str) -> Result<ApiKind, String> {
    s.parse::<ApiKind>().map_err(|e| e.to_string())
}

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
    // L3. Help text is for users: rule ids stay in comments.
    /// Print what the advisor would be sent for each turn of a session file.
    Render(render::RenderArgs),
    // L2.
    /// Replay a session file through the advisor as a host would and print its advice.
    Replay(replay::ReplayArgs),
    /// Run one advisor tool as the advisor would and print what the model would see.
    Tool(tool::ToolArgs),
    // L4.
    /// Print the watchdog blocks that would go into the system prompt.
    Watchdog(watchdog::WatchdogArgs),
    // §15, RO14.
    /// Print the roster of named advisors resolved from WATCHDOG.yml files, with where
    /// each value came from; replay and serve sessions run these advisors.
    Roster(roster::RosterArgs),
    // V1–V4.
    /// Serve advisor sessions to another process over JSON-RPC on stdin/stdout.
    Serve(serve::ServeArgs),
    /// Measure the advisor on a corpus of recorded sessions with planted mistakes and
    /// controls: catches, latency, false alarms and cost (`compare` sets results side by side).
    Eval(eval::EvalArgs),
    // §19, H1–H12.
    /// Answer a Claude Code or Codex CLI hook event (the installer sets this command up).
    Hook(hook::HookArgs),
    /// The background process `advisor hook` starts (internal).
    #[command(hide = true)]
    HookDaemon,
    // H13.
    /// Show the advisor's status for the Claude Code and Codex sessions it watches.
    Status(status::StatusArgs),
    /// Turn the advisor on for a Claude Code or Codex session (or all of them).
    On(status::ControlArgs),
    /// Turn the advisor off for a Claude Code or Codex session (or all of them).
    Off(status::ControlArgs),
    /// Pause the advisor for a Claude Code or Codex session, as `off` (`on` resumes it).
    Pause(status::ControlArgs),
    // H23–H27.
    /// Attach the advisor to Claude Code or the Codex CLI: write its hooks into the
    /// agent's settings (and with --model, the model into the advisor's settings).
    Install(install::InstallArgs),
    // H26.
    /// Remove the advisor's hooks from Claude Code's or the Codex CLI's settings, and
    /// nothing else.
    Uninstall(install::UninstallArgs),
    // H28, H29.
    /// Check the set-up: hooks installed and firing, a model and its key, the background
    /// process.
    Doctor(install::DoctorArgs),
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

impl From<&advisor::providers::ProviderError> for CliError {
    /// The library's sentence (in terms of settings and environment), plus the flags that
    /// fix it on this command line (M1: only the CLI speaks of flags).
    fn from(error: &advisor::providers::ProviderError) -> Self {
        use advisor::providers::ProviderError;
        let hint = match error {
            ProviderError::NoModel => {
                Some("or pass --model provider/model-id (with --base-url for a local server)")
            }
            ProviderError::MissingKey { .. } => {
                Some("or pass --model for another provider, or --base-url for a local server")
            }
            ProviderError::BadModelId(_) => Some("pass --model provider/model-id"),
            ProviderError::UnknownProvider(_) => {
                Some("pass --base-url (and --api openai-completions|anthropic-messages)")
            }
            _ => None,
        };
        match hint {
            Some(hint) => Self(format!("{error}; {hint}")),
            None => Self(error.to_string()),
        }
    }
}

/// Writes one block to standard output; a closed pipe is not an error worth reporting.
pub fn out(text: &str) {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = writeln!(lock, "{text}");
    let _ = lock.flush();
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
        Command::Eval(args) => eval::run(args),
        Command::Hook(args) => hook::run(args),
        Command::HookDaemon => hook::run_daemon(),
        Command::Status(args) => status::run_status(args),
        Command::On(args) => status::run_control("on", args),
        Command::Off(args) => status::run_control("off", args),
        Command::Pause(args) => status::run_control("pause", args),
        Command::Install(args) => install::run_install(args),
        Command::Uninstall(args) => install::run_uninstall(args),
        Command::Doctor(args) => install::run_doctor(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn m1_the_cli_adds_its_flags_to_the_library_s_model_errors() {
        use advisor::providers::ProviderError;
        let cases = [
            (ProviderError::NoModel, "--model"),
            (
                ProviderError::MissingKey {
                    provider: "openrouter".into(),
                    env_var: "OPENROUTER_API_KEY".into(),
                },
                "--base-url",
            ),
            (ProviderError::BadModelId("x".into()), "--model"),
            (ProviderError::UnknownProvider("acme".into()), "--base-url"),
        ];
        for (error, flag) in cases {
            let line = CliError::from(&error).to_string();
            assert!(line.starts_with(&error.to_string()), "{line}");
            assert!(line.contains(flag), "{line}");
        }
    }
}
