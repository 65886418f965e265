//! `advisor render SESSION [--transcript expanded|compact|full]` (L3): prints what the advisor
//! would be sent for each turn, one JSON object per line, without a model. The expanded view
//! (the default) adds `parts`, the user messages the review is sent as, and `wip`.

use std::io::Write;
use std::path::PathBuf;

use advisor::session::{read_session_arg, ReadLimits, SessionDriver, STDIN_NAME};
use advisor::TranscriptView;
use advisor::TurnPrompts;
use clap::Args;

use super::{texts, CliError};

/// How many bytes of output are gathered before they are written.
const OUTPUT_BUFFER: usize = 64 * 1024;

/// Arguments of `advisor render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The session file (JSON lines): pi / oh-my-pi, a Claude Code transcript or a Codex
    /// rollout; `-` for standard input.
    pub session: PathBuf,
    /// How deltas are rendered: expanded, compact or full.
    #[arg(long, default_value = "expanded", value_parser = parse_view)]
    pub transcript: TranscriptView,
}

fn parse_view(s: &str) -> Result<TranscriptView, String> {
    s.parse::<TranscriptView>().map_err(|e| e.to_string())
}

/// Runs `advisor render`: `{"turn":N,"prompt":"…"}` per non-blank delta on standard output
/// (the expanded view adds `"parts":[…]` and `"wip":bool`);
/// skipped malformed lines are reported on standard error with their line numbers.
pub fn run(args: RenderArgs) -> Result<(), CliError> {
    let branch = read_session_arg(&args.session, &ReadLimits::default())
        .map_err(|e| CliError::new(e.to_string()))?;
    let name = if args.session.as_os_str() == "-" {
        STDIN_NAME.to_string()
    } else {
        args.session.display().to_string()
    };
    for (line, reason) in &branch.diagnostics.malformed {
        let vars = [
            ("file", name.as_str()),
            ("line", &line.to_string()),
            ("reason", reason.as_str()),
        ];
        eprintln!("{}", texts::line("malformed", &vars));
    }
    let mut prompts = TurnPrompts::new(SessionDriver::new(branch), args.transcript);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // Lines are written into one buffer, handed to standard output when it is full.
    let mut buffer: Vec<u8> = Vec::with_capacity(OUTPUT_BUFFER + OUTPUT_BUFFER / 4);
    for prompt in prompts.by_ref() {
        prompt.write_json_line(&mut buffer);
        if buffer.len() >= OUTPUT_BUFFER {
            if out.write_all(&buffer).is_err() {
                // The reader went away (for example `| head`): stop quietly.
                return Ok(());
            }
            buffer.clear();
        }
    }
    if out.write_all(&buffer).is_err() {
        return Ok(());
    }
    out.flush().ok();
    // The process ends here: freeing every message of a long session one by one would
    // cost a fifth of the run, and the system takes the memory back at once.
    std::mem::forget(prompts);
    Ok(())
}
