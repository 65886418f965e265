//! `advisor hook` (the command Claude Code and Codex CLI run at their hook events) and the
//! hidden `advisor hook-daemon` (the background process it starts). The logic lives in
//! `advisor::hosts`; this file reads the environment and the settings file at the edge.
//!
//! `advisor hook` always exits 0 and prints nothing unless the advisor has something for the
//! agent or the user (H9): a failure goes to the hook log, never to the CLI.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use advisor::hosts::client::{log_call, open_lock, read_input, run_hook, HookCall};
use advisor::hosts::daemon::{Daemon, DaemonOptions};
use advisor::hosts::paths::{current_uid, ensure_private_dir, HostPaths, PathEnv};
use advisor::hosts::payload::HookHost;
use advisor::providers::Catalog;
use advisor::settings::{load_config_files, AdvisorSettings};
use advisor::RuntimeOptions;
use clap::Args;

use super::CliError;

/// Arguments of `advisor hook`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The CLI running the hook: claude-code or codex (default: told by its environment).
    #[arg(long, value_parser = parse_host)]
    pub host: Option<HookHost>,
}

fn parse_host(s: &str) -> Result<HookHost, String> {
    s.parse()
}

/// The user's settings (`config.yml` of the settings directory) as far as the hook and
/// the background process read them before any session; defaults when unreadable.
fn user_settings(paths: &HostPaths) -> AdvisorSettings {
    load_config_files(&[paths.config_file()])
        .map(|loaded| loaded.settings)
        .unwrap_or_default()
}

/// Runs `advisor hook`: answers one hook call within its bound, exit status 0.
pub fn run(args: HookArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let env = PathEnv::from_process();
    let Ok(paths) = HostPaths::resolve(&env) else {
        return Ok(());
    };
    let host = args
        .host
        .or_else(|| HookHost::from_env(&|name| std::env::var(name).ok()));
    let settings = user_settings(&paths);
    let bound = Duration::from_millis(settings.hook_timeout_ms);
    // GT12: a PreToolUse answer may wait for the action gate's model, a second past its
    // bound (the gate off answers at once, so the longer bound costs nothing then); GT15:
    // that bound as the hook hosts apply it, within the host's own hook timeout.
    let gate_timeout = advisor::hosts::settings::hook_gate_timeout(settings.gate.timeout);
    let gate_bound = Some(gate_timeout + Duration::from_secs(1));
    let daemon_command = std::env::current_exe()
        .ok()
        .map(|exe| (exe, vec!["hook-daemon".to_string()]));
    let call = HookCall {
        paths,
        uid: env.uid,
        host,
        bound,
        gate_bound,
        daemon_command,
        // H31: the session this call opens takes its keys from this environment.
        env: advisor::hosts::protocol::session_vars(std::env::vars()),
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Ok(());
    };
    let result = runtime.block_on(async {
        match read_input(tokio::io::stdin(), bound).await {
            Ok(input) => run_hook(&call, &input, started).await,
            Err(e) => advisor::hosts::client::HookResult {
                stdout: None,
                outcome: advisor::hosts::protocol::Outcome::Error,
                host,
                event: None,
                session: None,
                error: Some(e),
            },
        }
    });
    // A standard input still open would hold a blocking reader: don't wait for it.
    runtime.shutdown_background();
    if let Some(stdout) = &result.stdout {
        super::out(&stdout.to_string());
    }
    let _ = log_call(
        &call.paths,
        call.uid,
        &result,
        started.elapsed().as_millis(),
    );
    Ok(())
}

/// Runs `advisor hook-daemon`: the background process, until it is idle or signalled.
pub fn run_daemon() -> Result<(), CliError> {
    // Its own session: the CLI's signals to the hook's group do not reach it.
    let _ = rustix::process::setsid();
    // Holds no project directory of the session that started it.
    let _ = std::env::set_current_dir("/");
    let env = PathEnv::from_process();
    let paths = HostPaths::resolve(&env).map_err(|e| CliError::new(e.to_string()))?;
    ensure_private_dir(&paths.runtime_dir, env.uid).map_err(|e| CliError::new(e.to_string()))?;
    let lock = open_lock(&paths.lock()).map_err(|e| CliError::new(e.to_string()))?;
    use rustix::fs::{flock, FlockOperation};
    if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
        // Another background process runs (or is starting): it serves.
        return Ok(());
    }
    let settings = user_settings(&paths);
    let catalog = Catalog::builtin().map_err(|e| CliError::new(e.to_string()))?;
    let options = DaemonOptions {
        paths: paths.clone(),
        uid: current_uid(),
        env: Arc::new(std::env::vars().collect::<BTreeMap<_, _>>()),
        model: None,
        catalog: Arc::new(catalog),
        runtime: RuntimeOptions::default(),
        idle: (settings.hook_idle_minutes > 0)
            .then(|| Duration::from_secs(settings.hook_idle_minutes * 60)),
        session_expiry: Duration::from_secs(12 * 3600),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::new(e.to_string()))?;
    let served = runtime.block_on(async {
        let listener = Daemon::bind(&paths, env.uid)?;
        let daemon = Daemon::new(options)?;
        tracing::info!(pid = std::process::id(), "hook daemon: serving");
        daemon.serve(listener, shutdown_signal()).await;
        Ok::<_, advisor::hosts::daemon::DaemonError>(())
    });
    let _ = std::fs::remove_file(paths.socket());
    drop(lock);
    runtime.shutdown_timeout(Duration::from_secs(2));
    served.map_err(|e| CliError::new(e.to_string()))
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
}
