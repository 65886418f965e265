//! `advisor status` and `advisor on|off|pause` (H13): ask the hook hosts' background process
//! about its sessions, or turn a session's advisor on or off.

use std::time::Duration;

use advisor::hosts::client::exchange;
use advisor::hosts::paths::{check_socket, HostPaths, PathEnv};
use advisor::hosts::protocol::{Request, Response, PROTOCOL_VERSION};
use clap::Args;
use serde_json::json;
use tokio::net::UnixStream;

use super::{out, CliError};

/// How long the background process may take to answer.
const ANSWER_TIME: Duration = Duration::from_secs(10);

/// What is printed when no background process runs.
const NOT_RUNNING: &str = "no advisor background process is running (the first hook call of \
                           a Claude Code or Codex session starts it)";

/// Arguments of `advisor status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Only this session (its id, or the start of it).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// One JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `advisor on`, `advisor off` and `advisor pause`.
#[derive(Debug, Args)]
pub struct ControlArgs {
    /// Only this session (its id, or the start of it); default: every open session.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

/// Sends `request` to the background process; `Ok(None)` when none runs.
fn ask(request: &Request) -> Result<Option<Response>, CliError> {
    let env = PathEnv::from_process();
    let paths = HostPaths::resolve(&env).map_err(|e| CliError::new(e.to_string()))?;
    let socket = paths.socket();
    if !socket.exists() {
        return Ok(None);
    }
    check_socket(&socket, env.uid).map_err(|e| CliError::new(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(e.to_string()))?;
    runtime.block_on(async {
        let Ok(stream) = UnixStream::connect(&socket).await else {
            return Ok(None);
        };
        match tokio::time::timeout(ANSWER_TIME, exchange(stream, request)).await {
            Ok(Ok(response)) => Ok(Some(response)),
            Ok(Err(e)) => Err(CliError::new(format!("the background process: {e}"))),
            Err(_) => Err(CliError::new(
                "the background process did not answer within 10 s",
            )),
        }
    })
}

/// Runs `advisor status`.
pub fn run_status(args: StatusArgs) -> Result<(), CliError> {
    let request = Request::Status {
        v: PROTOCOL_VERSION,
        session: args.session,
    };
    match ask(&request)? {
        None if args.json => out(&json!({"running": false}).to_string()),
        None => out(NOT_RUNNING),
        Some(Response::Status { pid, sessions }) if args.json => {
            out(&json!({"running": true, "pid": pid, "sessions": sessions}).to_string())
        }
        Some(Response::Status { pid, sessions }) => {
            let mut text = format!(
                "advisor background process {pid}: {} session(s)",
                sessions.len()
            );
            for s in sessions {
                let cwd = s.cwd.map(|c| format!(" in {c}")).unwrap_or_default();
                text.push_str(&format!("\n\n{} {}{cwd}\n{}", s.host, s.session, s.text));
            }
            out(&text);
        }
        Some(Response::Error { message }) => return Err(CliError::new(message)),
        Some(other) => return Err(CliError::new(format!("unexpected answer {other:?}"))),
    }
    Ok(())
}

/// Runs `advisor on`, `advisor off` or `advisor pause` (`command`).
pub fn run_control(command: &str, args: ControlArgs) -> Result<(), CliError> {
    let request = Request::Control {
        v: PROTOCOL_VERSION,
        session: args.session,
        command: command.to_string(),
    };
    match ask(&request)? {
        None => out(NOT_RUNNING),
        Some(Response::Control { results }) if results.is_empty() => out("no open session"),
        Some(Response::Control { results }) => {
            let lines: Vec<String> = results
                .into_iter()
                .map(|(session, text)| format!("{session}: {text}"))
                .collect();
            out(&lines.join("\n"));
        }
        Some(Response::Error { message }) => return Err(CliError::new(message)),
        Some(other) => return Err(CliError::new(format!("unexpected answer {other:?}"))),
    }
    Ok(())
}
