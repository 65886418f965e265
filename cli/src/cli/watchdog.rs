//! `advisor watchdog`: prints the watchdog blocks that would go into the advisor's system
//! prompt (L4), and nothing else on standard output. Warnings go to standard error.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use advisor::watchdog::{load, WatchdogConfig};

use super::{texts, CliError};

/// Arguments of `advisor watchdog`.
#[derive(Debug, Args)]
pub struct WatchdogArgs {
    /// Where to discover from.
    #[command(flatten)]
    pub discovery: DiscoveryArgs,
}

/// Where WATCHDOG files are discovered from, for `advisor watchdog` and `advisor roster`.
#[derive(Debug, Args)]
pub struct DiscoveryArgs {
    /// Working directory to discover from (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// User agent directory, where the user's own files live (default:
    /// `PI_CODING_AGENT_DIR`, else `~/.omp/agent`).
    #[arg(long, value_name = "DIR")]
    pub agent_dir: Option<String>,
}

impl DiscoveryArgs {
    /// The discovery configuration: `--cwd` (relative to the current directory; default
    /// the current directory, which must be a directory), `--agent-dir` else
    /// `PI_CODING_AGENT_DIR`, and `HOME`, read here at the edge.
    pub fn config(self) -> Result<WatchdogConfig, CliError> {
        let current = std::env::current_dir()
            .map_err(|err| CliError::new(format!("cannot read the current directory: {err}")))?;
        let cwd = match self.cwd {
            Some(dir) => current.join(dir),
            None => current,
        };
        if !cwd.is_dir() {
            return Err(CliError::new(format!(
                "--cwd {}: not a directory",
                cwd.display()
            )));
        }
        let agent_dir = self
            .agent_dir
            .or_else(|| std::env::var("PI_CODING_AGENT_DIR").ok());
        let home = std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from);
        Ok(WatchdogConfig::from_env_values(cwd, agent_dir, home))
    }
}

/// Runs `advisor watchdog`: reads `PI_CODING_AGENT_DIR` and `HOME` here, at the edge, and
/// prints the blocks joined by a blank line, followed by one newline (nothing at all when
/// there is no block).
pub fn run(args: WatchdogArgs) -> Result<(), CliError> {
    let config = args.discovery.config()?;
    let prompt = load(&config).prompt;
    let mut stderr = std::io::stderr().lock();
    for warning in &prompt.warnings {
        // Nothing sensible is left to do when standard error is gone.
        let _ = writeln!(
            stderr,
            "{}",
            texts::line("warning", &[("warning", &warning.to_string())])
        );
    }
    // The project's instruction files and the child-repository hint too (P8): everything
    // that follows the built-in prompt.
    let joined = prompt.joined();
    if joined.is_empty() {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{joined}")
        .and_then(|()| stdout.flush())
        .map_err(|err| CliError::new(format!("cannot write to standard output: {err}")))
}
