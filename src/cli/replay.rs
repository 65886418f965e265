//! `advisor replay SESSION` (L2): drives the full runtime over a recorded session as a host
//! would and prints what the advisor said, when, and what it cost.
//!
//! Output contract:
//! - text mode: each delivery as `── turn N · CHANNEL ──` followed by the advisory XML the
//!   primary would receive; notices on standard error; a progress bar on standard error
//!   when it is a terminal; the final status (C3) at the end;
//! - `--json`: one JSON object per line on standard output:
//!   `{"turn":N,"channel":"aside|steer|wake|card","severity":"nit"|…|null,"note":…,"content":…}`
//!   per note (the notes of one batched aside share `content`), `{"notice":"…"}` per notice,
//!   and a last `{"status":{…}}` line;
//! - exit 0 when the replay ran to the end (a failing advisor shows in the status); exit 1
//!   with one line on standard error for unusable input (missing file, not a session file,
//!   no model configured).
//!
//! The model comes from `--model`, else from `ADVISOR_MODEL`; provider keys from the
//! environment (`OPENROUTER_API_KEY`, `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, …), read here
//! and handed to the library as a lookup.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use advisor::messages::advice::Delivery;
use advisor::providers::{build_client, ApiKind, Catalog, ModelSpec, ProviderError};
use advisor::render::TranscriptView;
use advisor::replay::{delivery_lines, Replay, ReplayEvent, ReplayOptions, ReplayOutcome};
use advisor::session::{read_session, SessionDriver};
use advisor::settings::{AdvisorSettings, DeliveryPolicy, SyncBacklog};
use advisor::{AdvisorHandle, RuntimeConfig};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use super::CliError;

/// Arguments of `advisor replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The pi / oh-my-pi session file (JSON lines).
    pub session: PathBuf,
    /// Print one JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// The advisor model, `provider/model-id[:thinking]` (default: $ADVISOR_MODEL).
    #[arg(long)]
    pub model: Option<String>,
    /// The provider's base URL, e.g. `http://127.0.0.1:8080/v1` for a local server.
    #[arg(long)]
    pub base_url: Option<String>,
    /// The wire dialect: openai-completions or anthropic-messages.
    #[arg(long, value_parser = parse_api)]
    pub api: Option<ApiKind>,
    /// Delivery policy: interrupt or reconfirm.
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<DeliveryPolicy>,
    /// How deltas are rendered: compact or full.
    #[arg(long, value_parser = parse_view)]
    pub transcript: Option<TranscriptView>,
    /// How far each turn waits for the advisor: off, 1, 3 or 5 (replay default: 1).
    #[arg(long, value_parser = parse_sync)]
    pub sync_backlog: Option<SyncBacklog>,
    /// The workspace root for the advisor's tools (default: the session's cwd when it
    /// exists, else the current directory).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Longest wait, in seconds, for the advisor to drain at the end of the file.
    #[arg(long, default_value_t = 120)]
    pub drain_timeout: u64,
}

fn parse_api(s: &str) -> Result<ApiKind, String> {
    s.parse::<ApiKind>().map_err(|e| e.to_string())
}

fn parse_policy(s: &str) -> Result<DeliveryPolicy, String> {
    s.parse::<DeliveryPolicy>().map_err(|e| e.to_string())
}

fn parse_view(s: &str) -> Result<TranscriptView, String> {
    s.parse::<TranscriptView>().map_err(|e| e.to_string())
}

fn parse_sync(s: &str) -> Result<SyncBacklog, String> {
    s.parse::<SyncBacklog>().map_err(|e| e.to_string())
}

/// Runs `advisor replay`.
pub fn run(args: ReplayArgs) -> Result<(), CliError> {
    let env = |name: &str| std::env::var(name).ok();
    let branch = read_session(&args.session).map_err(|e| CliError::new(e.to_string()))?;
    for (line, reason) in &branch.diagnostics.malformed {
        eprintln!(
            "advisor: {}:{line}: skipped malformed line: {reason}",
            args.session.display()
        );
    }
    let spec = ModelSpec {
        role: args.model.clone().or_else(|| env("ADVISOR_MODEL")),
        base_url: args.base_url.clone(),
        api: args.api,
        ..ModelSpec::default()
    };
    let catalog = Catalog::builtin().map_err(|e| CliError::new(e.to_string()))?;
    let model = build_client(&spec, &catalog, &env).map_err(model_error)?;
    let driver = SessionDriver::new(branch);
    let root = workspace_root(args.root.as_deref(), driver.header().cwd.as_deref())?;
    let session_id = driver
        .header()
        .id
        .clone()
        .unwrap_or_else(|| "replay".to_string());
    let mut config = RuntimeConfig::new(session_id, root, Some(model));
    config.settings = settings(&args, env("ADVISOR_COMPACT_AT").as_deref());
    let options = ReplayOptions {
        drain_timeout: Duration::from_secs(args.drain_timeout),
        ..ReplayOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))?;
    let mut printer = Printer::new(args.json, driver.len());
    runtime.block_on(async move {
        let (handle, events) = AdvisorHandle::spawn(config)
            .await
            .map_err(|e| CliError::new(e.to_string()))?;
        let result = Replay::new(driver, handle.clone(), events)
            .with_options(options)
            .run(|event| printer.event(event))
            .await;
        let _ = handle.dispose().await;
        result.map(|_| ()).map_err(|e| CliError::new(e.to_string()))
    })
}

/// The replay's settings: the defaults, replay's `syncBacklog: 1`, then the flags.
fn settings(args: &ReplayArgs, compact_at: Option<&str>) -> AdvisorSettings {
    let mut settings = AdvisorSettings {
        sync_backlog: SyncBacklog::Below(1),
        ..AdvisorSettings::default()
    }
    .with_compact_at(compact_at);
    if let Some(sync) = args.sync_backlog {
        settings.sync_backlog = sync;
    }
    if let Some(policy) = args.policy {
        settings.policy = policy;
    }
    if let Some(view) = args.transcript {
        settings.transcript = view;
    }
    settings
}

/// `--root`, else the session's cwd when it is a directory here, else the current directory.
fn workspace_root(flag: Option<&Path>, session_cwd: Option<&str>) -> Result<PathBuf, CliError> {
    if let Some(root) = flag {
        if !root.is_dir() {
            return Err(CliError::new(format!(
                "--root `{}` is not a directory",
                root.display()
            )));
        }
        return Ok(root.to_path_buf());
    }
    if let Some(cwd) = session_cwd.map(Path::new).filter(|p| p.is_dir()) {
        return Ok(cwd.to_path_buf());
    }
    std::env::current_dir()
        .map_err(|e| CliError::new(format!("cannot read the current directory: {e}")))
}

/// The error line for a model that cannot be built; the no-model case names every way out.
fn model_error(error: ProviderError) -> CliError {
    match error {
        ProviderError::NoModel => CliError::new(
            "replay needs an advisor model: pass --model provider/model-id (or set \
             ADVISOR_MODEL), e.g. --model openrouter/anthropic/claude-sonnet-4.5 with \
             OPENROUTER_API_KEY set, or --model local/NAME --base-url http://127.0.0.1:8080/v1 \
             for a local OpenAI-compatible server",
        ),
        other => CliError::new(other.to_string()),
    }
}

/// Prints replay events as text or JSON lines, with a progress bar on a terminal.
struct Printer {
    json: bool,
    bar: ProgressBar,
}

impl Printer {
    fn new(json: bool, entries: usize) -> Self {
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(
                Some(entries as u64),
                ProgressDrawTarget::stderr_with_hz(10),
            );
            if let Ok(style) =
                ProgressStyle::with_template("{bar:40} {pos}/{len} entries · {msg} [{elapsed}]")
            {
                bar.set_style(style);
            }
            bar
        } else {
            ProgressBar::hidden()
        };
        Self { json, bar }
    }

    fn event(&mut self, event: ReplayEvent) {
        match event {
            ReplayEvent::Progress(p) => {
                self.bar.set_position(p.entries_done as u64);
                self.bar.set_message(format!("turn {}", p.turns));
            }
            ReplayEvent::Delivery { turn, delivery } => {
                let text = self.delivery_text(turn, &delivery);
                self.bar.suspend(|| out(&text));
            }
            ReplayEvent::Notice { text, .. } => {
                if self.json {
                    let line = json!({ "notice": text }).to_string();
                    self.bar.suspend(|| out(&line));
                } else {
                    self.bar.suspend(|| eprintln!("{text}"));
                }
            }
            ReplayEvent::Finished(outcome) => {
                self.bar.finish_and_clear();
                out(&self.finish_text(&outcome));
            }
        }
    }

    fn delivery_text(&self, turn: usize, delivery: &Delivery) -> String {
        if self.json {
            delivery_lines(turn, delivery)
                .iter()
                .filter_map(|line| serde_json::to_string(line).ok())
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            format!(
                "── turn {turn} · {} ──\n{}\n",
                delivery.channel.as_str(),
                delivery.content
            )
        }
    }

    fn finish_text(&self, outcome: &ReplayOutcome) -> String {
        if self.json {
            return json!({ "status": outcome.status }).to_string();
        }
        let drained = if outcome.drained {
            ""
        } else {
            " (the advisor had not drained when the wait ended)"
        };
        format!(
            "replayed {} turns in {} runs, {} compactions, in {:.1}s{drained}\n\n{}",
            outcome.turns,
            outcome.runs,
            outcome.compactions,
            outcome.elapsed.as_secs_f64(),
            outcome.status.render().trim_end()
        )
    }
}

/// Writes one block to standard output; a closed pipe is not an error worth reporting.
fn out(text: &str) {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = writeln!(lock, "{text}");
    let _ = lock.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use advisor::messages::advice::{Advisory, Channel, Severity};

    fn args(extra: &[&str]) -> ReplayArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            args: ReplayArgs,
        }
        let mut argv = vec!["advisor", "session.jsonl"];
        argv.extend_from_slice(extra);
        Wrap::parse_from(argv).args
    }

    #[test]
    fn l2_replay_defaults_to_sync_backlog_one_and_flags_override() {
        let s = settings(&args(&[]), None);
        assert_eq!(s.sync_backlog, SyncBacklog::Below(1));
        assert_eq!(s.policy, DeliveryPolicy::Interrupt);
        let s = settings(
            &args(&[
                "--sync-backlog",
                "off",
                "--policy",
                "reconfirm",
                "--transcript",
                "full",
            ]),
            Some("70"),
        );
        assert_eq!(s.sync_backlog, SyncBacklog::Off);
        assert_eq!(s.policy, DeliveryPolicy::Reconfirm);
        assert_eq!(s.transcript, TranscriptView::Full);
        assert_eq!(s.compact_at_percent, 70);
    }

    #[test]
    fn l2_root_prefers_the_flag_then_an_existing_session_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        assert_eq!(
            workspace_root(None, Some(d)).unwrap(),
            dir.path().to_path_buf()
        );
        let missing = dir.path().join("gone");
        let fallback = workspace_root(None, missing.to_str()).unwrap();
        assert_eq!(fallback, std::env::current_dir().unwrap());
        assert!(workspace_root(Some(&missing), Some(d)).is_err());
    }

    #[test]
    fn l2_text_delivery_names_turn_and_channel_json_has_one_line_per_note() {
        let d = Delivery::new(
            Channel::Aside,
            vec![
                Advisory::new("one", None),
                Advisory::new("two", Some(Severity::Nit)),
            ],
            None,
        );
        let text = Printer {
            json: false,
            bar: ProgressBar::hidden(),
        }
        .delivery_text(5, &d);
        assert!(
            text.starts_with("── turn 5 · aside ──\n<advisory"),
            "{text}"
        );
        let json = Printer {
            json: true,
            bar: ProgressBar::hidden(),
        }
        .delivery_text(5, &d);
        let lines: Vec<serde_json::Value> = json
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["content"], lines[1]["content"]);
        assert!(lines[0]["severity"].is_null());
        assert_eq!(lines[1]["severity"], "nit");
    }

    #[test]
    fn l5_no_model_error_names_the_ways_out() {
        let text = model_error(ProviderError::NoModel).to_string();
        for word in ["OPENROUTER_API_KEY", "--model", "--base-url"] {
            assert!(text.contains(word), "{text}");
        }
    }
}
