//! `advisor serve` (V1–V4): JSON-RPC 2.0 over standard input and output for an agent in
//! another process (pi, through `integrations/pi/`). The protocol lives in
//! `advisor::serve`; this file reads the flags and the environment, starts the shared runtime
//! every session's actors run on (A6) and the actix system the I/O runs in, and exits 0 when
//! the input ends or `shutdown` is called.
//!
//! Sessions that name no model get `--model` (with `--base-url` and `--api`), else
//! `ADVISOR_MODEL`, else `modelRoles.advisor` of their K1 files, else modes.json (M1).
//! Provider keys come from the environment (`OPENROUTER_API_KEY`, …).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use advisor::providers::Catalog;
use advisor::serve::ServeDefaults;
use advisor::serve::{serve, ServeOptions};
use advisor::settings::SettingsEnv;
use advisor::{AdvisorRuntime, RuntimeOptions};
use clap::Args;

use super::{CliError, ModelArgs};

/// Arguments of `advisor serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Write logs to this file (appended) instead of standard error.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// The advisor model for sessions that name none, and how to reach it.
    #[command(flatten)]
    pub provider: ModelArgs,
    // V4.
    /// The most transcript data the process holds for all its sessions, in MiB: a call that
    /// would pass it is refused with an error and nothing held is lost.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub max_held_mib: usize,
}

/// Opens (appends to) the `--log` file; a path that is not a regular file (a FIFO, a
/// directory) is one error, never a wait (L5).
pub fn open_log(path: &Path) -> Result<File, CliError> {
    advisor::serve::open_log(path).map_err(|e| CliError::new(e.to_string()))
}

/// Runs `advisor serve` until end of input or `shutdown`, then exits the process with 0.
pub fn run(args: ServeArgs) -> Result<(), CliError> {
    let lookup = |name: &str| std::env::var(name).ok();
    let env = SettingsEnv::from_lookup(&lookup);
    let catalog = Catalog::builtin().map_err(|e| CliError::new(e.to_string()))?;
    let mut defaults = ServeDefaults::new(Arc::new(catalog));
    defaults.model = args.provider.model.clone();
    defaults.base_url = args.provider.base_url.clone();
    defaults.api = args.provider.api;
    defaults.env = env;
    defaults.keys = Arc::new(|name: &str| std::env::var(name).ok());
    // A6: one shared runtime carries every session (a thread per core, one HTTP client per
    // provider, the per-provider limit); the I/O runs in this thread's actix system.
    let runtime =
        AdvisorRuntime::new(RuntimeOptions::default()).map_err(|e| CliError::new(e.to_string()))?;
    let system = actix::System::new();
    let end = system.block_on(async move {
        serve(
            tokio::io::stdin(),
            tokio::io::stdout(),
            ServeOptions {
                max_held_bytes: args.max_held_mib.saturating_mul(1 << 20),
                ..ServeOptions::new(defaults, runtime)
            },
        )
        .await
    });
    tracing::debug!(?end, "serve: done");
    // The blocking read of standard input may still be parked in the runtime's thread pool
    // (after `shutdown`); dropping the runtime would wait for it. Everything is written and
    // flushed by now, so leave at once.
    std::process::exit(0)
}
