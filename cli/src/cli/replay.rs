//! `advisor replay SESSION` (L2): drives the full runtime over a recorded session as a host
//! would and prints what the advisor said, when, and what it cost.
//!
//! Output contract:
//! - text mode: each delivery as `── turn N · CHANNEL ──` (`── turn N · CHANNEL · NAME ──`
//!   for a named advisor's, RO23; then ` · MODEL`, the model that produced its notes, SP8)
//!   followed by the advisory XML the primary would receive; a merged final-boundary delivery
//!   (CA14) as one block per note, each headed `── turn N · CHANNEL · SEVERITY · T-K · NAME · MODEL ──`
//!   (`T-K` for a note about a turn K turns back), the guidance text opening the first block
//!   when the message has it;
//!   notices on standard error; a progress bar on standard error when it is a terminal; at
//!   the end, what the primary never received (queued nits, held notes) as
//!   `── turn N · pending ──` blocks, then the final status (C3) and one line per named
//!   advisor;
//! - `--json`: one JSON object per line on standard output:
//!   `{"turn":N,"channel":"aside|steer|wake|card|pending","severity":"nit"|…|null,"note":…,"content":…,"advisor":…,"model":…}`
//!   per note (`advisor` only for a named advisor's, `model` the model that produced it, SP8;
//!   `"turnsAgo":K` on each note of a merged final-boundary delivery, CA14) (the notes of one batched aside share `content`), `{"notice":"…"}` per notice,
//!   and a last `{"status":{…}}` line;
//! - `--ask TURN:QUESTION` (repeatable, G8): the question is put to the advisor right after
//!   that turn's step boundary, and its answer follows that turn's deliveries: text mode a
//!   `── turn N · ask ──` block with `Q: …` and `A: …` (or `error: …`), `--json` a
//!   `{"turn":N,"ask":…,"answer":…}` line (`"error"` in place of `"answer"` when the ask
//!   failed); a failed ask does not stop the replay. An ask for a turn the session never
//!   reaches is one line on standard error at the end (in both modes) and does not change
//!   the exit code; a malformed `--ask` is an error before anything runs;
//! - exit 0 when the replay ran to the end (a failing advisor shows in the status); exit 1
//!   with one line on standard error for unusable input (missing file, not a session file,
//!   a bad settings file, the advisor disabled by the settings, no model configured for
//!   the session nor for an enabled advisor of its roster, a malformed `--ask`).
//!
//! Settings (K1), in order, each over the one before: the defaults; `<agentDir>/config.yml`;
//! `<root>/.omp/config.yml`, where root is the replay's workspace root (`--root`, else the
//! session's cwd when it exists here, else the current directory); the environment
//! (`ADVISOR_COMPACT_AT`, `ADVISOR_NO_REVIEW`); then the flags. `syncBacklog` is the
//! exception: replay uses 1 unless `--sync-backlog` says otherwise, whatever the files say,
//! since a file's value paces a live agent and a replay has none (L2). Unknown keys in the
//! files are notices (standard error, or `{"notice":…}` lines with `--json`); a bad value
//! is an error.
//!
//! The model: `--model`, else `ADVISOR_MODEL`, else `modelRoles.advisor` from the files,
//! else `modes.advisor` from `<root>/.pi/modes.json` or `<agentDir>/modes.json` (M1).
//! `advisor.enabled: false` in the files stops the replay with one line (K2), unless
//! `--model` is given: naming a model on the command line asks for this run explicitly.
//! When no session model is named, or its provider's key is missing, the replay runs
//! without one as long as an enabled advisor of the roster builds a model of its own (the
//! unnamed advisor does not run beside a roster, RO12).
//!
//! The system prompt is `<agentDir>/system-prompts/advisor.md` when it exists (G1), and
//! the WATCHDOG.md files found from the root and in the agent directory are appended to it
//! (W1–W8) unless `--no-watchdog` is given; so is the roster of named advisors
//! (`WATCHDOG.yml`, RO1, RO23), whose warnings are notices. The agent directory is `PI_CODING_AGENT_DIR`,
//! else `~/.omp/agent`. Provider keys come from the environment (`OPENROUTER_API_KEY`,
//! `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, …), read here and handed to the library as a
//! lookup.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use advisor::domain::advice::{notes_models, Delivery};
use advisor::providers::{Catalog, ProviderError};
use advisor::replay::{
    delivery_lines, pending_lines, AskLine, LineChannel, Outstanding, Replay, ReplayAsk,
    ReplayEvent, ReplayOptions, ReplayOutcome,
};
use advisor::session::{read_session_arg, ReadLimits, SessionDriver};
use advisor::settings::{AdvisorSettings, DeliveryPolicy, SettingsEnv, SettingsLayer, SyncBacklog};
use advisor::TranscriptView;
use advisor::{AdvisorHandle, HandleError, RuntimeConfig};
use advisor::{
    KeyLookup, ModelSource, RequestedModel, SessionBasics, SessionInputs, SessionSetup, SetupError,
};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use super::{out, texts, CliError, ModelArgs};

/// Arguments of `advisor replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The session file (JSON lines): pi / oh-my-pi, a Claude Code transcript or a Codex
    /// rollout.
    pub session: PathBuf,
    /// Print one JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    // P9.
    /// Append the advisor's own transcript to this file, as an oh-my-pi session file
    /// (default: none is kept).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// The advisor model (default: $ADVISOR_MODEL, then `modelRoles.advisor` in
    /// config.yml, then `modes.advisor` in modes.json), and how to reach it.
    #[command(flatten)]
    pub provider: ModelArgs,
    /// Delivery policy: defer (the default), interrupt or reconfirm.
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<DeliveryPolicy>,
    /// How deltas are rendered: expanded (the default), compact or full.
    #[arg(long, value_parser = parse_view)]
    pub transcript: Option<TranscriptView>,
    /// How far each turn waits for the advisor: off, 1, 3 or 5 (replay default: 1).
    #[arg(long, value_parser = parse_sync)]
    pub sync_backlog: Option<SyncBacklog>,
    /// The workspace root for the advisor's tools, and where `.omp/config.yml`, WATCHDOG.md
    /// files and `.pi/modes.json` are looked up (default: the session's cwd when it exists,
    /// else the current directory).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Leave WATCHDOG.md files out of the advisor's system prompt.
    #[arg(long)]
    pub no_watchdog: bool,
    // P11.
    /// Longest wait, in seconds, for the advisor to drain at the end of the file, through
    /// retries (default: 600, or 30 when the session ended in an error).
    #[arg(long, value_name = "SECS")]
    pub drain_timeout: Option<u64>,
    // G8.
    /// Ask the advisor QUESTION right after the step boundary of turn TURN (counted from 1)
    /// and print its answer; repeatable.
    #[arg(long, value_name = "TURN:QUESTION")]
    pub ask: Vec<String>,
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
    let asks = parse_asks(&args.ask)?;
    let keys: KeyLookup = Arc::new(|name: &str| std::env::var(name).ok());
    let driver = read_driver(&args.session)?;
    let root = workspace_root(args.root.as_deref(), driver.header().cwd.as_deref())?;
    let printer = Printer::new(args.json, driver.len());
    let prepared = prepare_session(&args.flags(), &driver, root, keys, None)?;
    for line in &prepared.lines {
        match line {
            SetupLine::Warning(w) => printer.warning(w),
            SetupLine::Notice(n) => printer.notice(n),
        }
    }
    replay_in_runtime(prepared.config, driver, prepared.options, asks, printer)
}

/// The flags that shape a replayed session, shared by `advisor replay` and `advisor eval`
/// so both build a session the same way (EV2).
#[derive(Debug, Clone, Default)]
pub struct SessionFlags {
    /// `--model`, `--base-url`, `--api`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--api`.
    pub api: Option<advisor::providers::ApiKind>,
    /// `--policy`.
    pub policy: Option<DeliveryPolicy>,
    /// `--transcript`.
    pub transcript: Option<TranscriptView>,
    /// `--sync-backlog`.
    pub sync_backlog: Option<SyncBacklog>,
    /// `--no-watchdog`.
    pub no_watchdog: bool,
    /// `--drain-timeout`.
    pub drain_timeout: Option<u64>,
    /// `--audit`.
    pub audit: Option<PathBuf>,
    /// Settings given on the command line (`advisor eval --config`, `--set`), over the
    /// files and the environment, and their name in messages.
    pub host_layer: Option<(PathBuf, SettingsLayer)>,
}

impl ReplayArgs {
    /// The flags that shape the session.
    fn flags(&self) -> SessionFlags {
        SessionFlags {
            model: self.provider.model.clone(),
            base_url: self.provider.base_url.clone(),
            api: self.provider.api,
            policy: self.policy,
            transcript: self.transcript,
            sync_backlog: self.sync_backlog,
            no_watchdog: self.no_watchdog,
            drain_timeout: self.drain_timeout,
            audit: self.audit.clone(),
            host_layer: None,
        }
    }
}

/// A line the setup has for the user, in order: a settings or roster warning, or a notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupLine {
    /// A warning (printed with the warning prefix).
    Warning(String),
    /// A notice, as it is.
    Notice(String),
}

/// A session ready to replay.
pub struct PreparedSession {
    /// Its configuration.
    pub config: RuntimeConfig,
    /// The replay's options.
    pub options: ReplayOptions,
    /// What the setup has to say, in order.
    pub lines: Vec<SetupLine>,
}

/// Sets up the session of `driver` with `root` as its workspace root, as `advisor replay`
/// does (module docs: settings K1, model M1, WATCHDOG.md and roster); `shared` is the
/// runtime's shared HTTP clients when several sessions run in one process.
pub fn prepare_session(
    flags: &SessionFlags,
    driver: &SessionDriver,
    root: PathBuf,
    keys: KeyLookup,
    shared: Option<Arc<advisor::SharedResources>>,
) -> Result<PreparedSession, CliError> {
    let catalog = Catalog::builtin().map_err(|e| CliError::new(e.to_string()))?;
    let models = ModelSource {
        base_url: flags.base_url.clone(),
        api: flags.api,
        shared,
        ..ModelSource::new(Arc::new(catalog), Arc::clone(&keys))
    };
    let session_id = driver.header().id.clone();
    let loaded = SessionSetup::load(SessionInputs {
        basics: SessionBasics {
            host_layer: flags.host_layer.clone(),
            audit_path: flags.audit.clone(),
            ..SessionBasics::new(
                session_id.unwrap_or_else(|| "replay".to_string()),
                root,
                models,
            )
        },
        env: SettingsEnv::from_lookup(&*keys),
        watchdog: !flags.no_watchdog,
        // Replaying is an explicit request to run the advisor: only a file that says
        // `advisor.enabled: false` stops it (K2), not the files' default of off, and
        // `--model` asks for this run anyway.
        stop_when_disabled: flags.model.is_none(),
        settings: &|loaded, env| settings(flags, &loaded.settings, env),
        model: RequestedModel::Discover(flags.model.clone()),
    })
    .map_err(|e| match e {
        SetupError::Disabled { file } => disabled_error(Some(&file)),
        SetupError::Model(e) => model_error(e),
        other => CliError::new(other.to_string()),
    })?;
    // No session model (none named, or its key missing) is no error when a roster whose
    // advisors name their own models runs without one (RO12), as `advisor serve` does.
    if let Some(error) = loaded.no_model {
        let roster_runs = matches!(
            error,
            ProviderError::NoModel | ProviderError::MissingKey { .. }
        ) && roster_has_a_model(&loaded.prepared.config);
        if !roster_runs {
            return Err(model_error(error));
        }
    }
    let mut lines: Vec<SetupLine> = loaded
        .warnings
        .iter()
        .map(|w| SetupLine::Warning(w.to_string()))
        .collect();
    let prepared = loaded.prepared;
    lines.extend(prepared.notices.iter().cloned().map(SetupLine::Notice));
    let mut config = prepared.config;
    config.hold_wait_through_retries = true;
    lines.extend(
        config
            .roster
            .iter()
            .flat_map(|r| &r.roster.warnings)
            .map(|w| SetupLine::Warning(w.to_string())),
    );
    let options = ReplayOptions {
        merge_cut_turns: config.settings.transcript == TranscriptView::Expanded,
        ..drain_options(flags.drain_timeout)
    };
    Ok(PreparedSession {
        config,
        options,
        lines,
    })
}

/// Whether an enabled advisor of the session's roster has a model of its own to review
/// with: without a session model, the replay runs only when one does (RO8, RO12).
fn roster_has_a_model(config: &RuntimeConfig) -> bool {
    config.roster.iter().any(|setup| {
        setup
            .roster
            .advisors
            .iter()
            .any(|advisor| advisor.enabled.value && setup.models.build(advisor).is_ok())
    })
}

/// The session file (or standard input) as a driver; its malformed lines are reported on
/// standard error, one line each (L1).
fn read_driver(session: &Path) -> Result<SessionDriver, CliError> {
    let branch = read_session_arg(session, &ReadLimits::default())
        .map_err(|e| CliError::new(e.to_string()))?;
    for (line, reason) in &branch.diagnostics.malformed {
        let file = session.display().to_string();
        let vars = [
            ("file", file.as_str()),
            ("line", &line.to_string()),
            ("reason", reason.as_str()),
        ];
        eprintln!("{}", texts::line("malformed", &vars));
    }
    Ok(SessionDriver::new(branch))
}

/// Runs the replay on a one-worker runtime and disposes of the session at the end.
fn replay_in_runtime(
    config: RuntimeConfig,
    driver: SessionDriver,
    options: ReplayOptions,
    asks: Vec<ReplayAsk>,
    mut printer: Printer,
) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async move {
        let (handle, events) = AdvisorHandle::spawn(config)
            .await
            .map_err(|e| CliError::new(e.to_string()))?;
        let result = Replay::new(driver, handle.clone(), events)
            .with_options(options)
            .with_asks(asks)
            .run(|event| printer.event(event))
            .await;
        let _ = handle.dispose().await;
        result.map(|_| ()).map_err(|e| CliError::new(e.to_string()))
    })
}

/// The `--ask` arguments, checked before anything runs: a malformed one is one error line
/// (L5). Parsed here rather than by clap so the error stays on one line.
fn parse_asks(args: &[String]) -> Result<Vec<ReplayAsk>, CliError> {
    args.iter()
        .map(|arg| {
            arg.parse::<ReplayAsk>()
                .map_err(|e| CliError::new(format!("--ask: {e}")))
        })
        .collect()
}

/// The replay's settings: what the files and the environment say, then the settings given
/// on the command line (`advisor eval --config`, `--set`), replay's own `syncBacklog: 1`
/// (L2; only `--sync-backlog`, or a `syncBacklog` given on the command line, changes it),
/// then the flags. The advisor is on: a replay is a request to run it, and a file's
/// explicit `advisor.enabled: false` has already stopped the replay unless `--model` asked
/// for it anyway (K2).
fn settings(flags: &SessionFlags, files: &AdvisorSettings, env: &SettingsEnv) -> AdvisorSettings {
    let mut settings = files.clone().with_env(env);
    let host = flags.host_layer.as_ref().map(|(_, layer)| layer);
    if let Some(layer) = host {
        layer.apply_to(&mut settings);
    }
    settings.sync_backlog = flags
        .sync_backlog
        .or(host.and_then(|l| l.sync_backlog))
        .unwrap_or(SyncBacklog::Below(1));
    settings.enabled = true;
    if let Some(policy) = flags.policy {
        settings.policy = policy;
    }
    if let Some(view) = flags.transcript {
        settings.transcript = view;
    }
    settings
}

/// K2: the files disable the advisor and no `--model` asks for this run anyway.
fn disabled_error(file: Option<&Path>) -> CliError {
    let origin = file
        .map(|file| format!(" in {}", file.display()))
        .unwrap_or_default();
    CliError::new(format!(
        "the advisor is disabled (advisor.enabled: false{origin}); pass --model \
         provider/model-id to replay with it anyway"
    ))
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
             ADVISOR_MODEL, or modelRoles.advisor in config.yml), e.g. --model openrouter/anthropic/claude-sonnet-4.5 with \
             OPENROUTER_API_KEY set, or --model local/NAME --base-url http://127.0.0.1:8080/v1 \
             for a local OpenAI-compatible server",
        ),
        other => CliError::from(&other),
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

    /// A warning (settings, roster) as a notice line.
    fn warning(&self, warning: &str) {
        self.notice(&texts::line("warning", &[("warning", warning)]));
    }

    /// A line for the user: standard error in text mode, a `{"notice":…}` line with `--json`.
    fn notice(&self, text: &str) {
        if self.json {
            let line = json!({ "notice": text }).to_string();
            self.bar.suspend(|| out(&line));
        } else {
            self.bar.suspend(|| eprintln!("{text}"));
        }
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
            ReplayEvent::Pending { turn, delivery } => {
                let text = self.pending_text(turn, &delivery);
                self.bar.suspend(|| out(&text));
            }
            ReplayEvent::Notice { text, .. } => self.notice(&text),
            ReplayEvent::Answered {
                turn,
                question,
                answer,
            } => {
                let text = self.answer_text(turn, &question, &answer);
                self.bar.suspend(|| out(&text));
            }
            ReplayEvent::Outstanding(left) => self.notice(&outstanding_text(&left)),
            ReplayEvent::AskNotReached { turn, question } => {
                let text = not_reached_text(turn, &question);
                self.bar.suspend(|| eprintln!("{text}"));
            }
            ReplayEvent::Finished(outcome) => {
                self.bar.finish_and_clear();
                out(&self.finish_text(&outcome));
            }
        }
    }

    fn delivery_text(&self, turn: usize, delivery: &Delivery) -> String {
        self.lines_text(turn, delivery.channel.into(), delivery)
    }

    /// A delivery the primary never received (L2): channel `pending`.
    fn pending_text(&self, turn: usize, delivery: &Delivery) -> String {
        self.lines_text(turn, LineChannel::Pending, delivery)
    }

    fn lines_text(&self, turn: usize, channel: LineChannel, delivery: &Delivery) -> String {
        if self.json {
            let lines = match channel {
                LineChannel::Pending => pending_lines(turn, delivery),
                _ => delivery_lines(turn, delivery),
            };
            lines
                .iter()
                .filter_map(|line| serde_json::to_string(line).ok())
                .collect::<Vec<_>>()
                .join("\n")
        } else if delivery.notes.iter().any(|n| n.turns_ago.is_some()) {
            merged_text(turn, channel, delivery)
        } else {
            let mut named = match advisor_names(delivery) {
                Some(names) => format!(" · {names}"),
                None => String::new(),
            };
            // SP8: the model that produced the notes.
            if let Some(models) = notes_models(&delivery.notes) {
                named.push_str(&format!(" · {models}"));
            }
            format!(
                "── turn {turn} · {}{named} ──\n{}\n",
                channel.as_str(),
                delivery.content
            )
        }
    }

    /// An ask's answer or error (G8): one JSON line, or a `── turn N · ask ──` block.
    fn answer_text(
        &self,
        turn: usize,
        question: &str,
        answer: &Result<String, HandleError>,
    ) -> String {
        if self.json {
            return serde_json::to_string(&AskLine::new(turn, question, answer))
                .unwrap_or_default();
        }
        let reply = match answer {
            Ok(text) => format!("A: {}", text.trim_end()),
            Err(e) => format!("error: {e}"),
        };
        format!("── turn {turn} · ask ──\nQ: {}\n{reply}\n", question.trim())
    }

    fn finish_text(&self, outcome: &ReplayOutcome) -> String {
        if self.json {
            let mut line = json!({ "status": outcome.status });
            if let Some(left) = &outcome.outstanding {
                line["outstanding"] = json!(left);
            }
            return line.to_string();
        }
        let drained = if outcome.drained {
            ""
        } else {
            " (the advisor had not drained when the wait ended)"
        };
        let pending = match outcome.pending {
            0 => String::new(),
            n => format!(
                "; {n} note{} never delivered",
                if n == 1 { "" } else { "s" }
            ),
        };
        format!(
            "replayed {} turns in {} runs, {} compactions, in {:.1}s{drained}{pending}\n\n{}",
            outcome.turns,
            outcome.runs,
            outcome.compactions,
            outcome.elapsed.as_secs_f64(),
            outcome.status.render().trim_end()
        )
    }
}

/// A merged final-boundary delivery (CA14) in text mode: a block per note, in the
/// message's order, each headed `── turn N · CHANNEL · SEVERITY · T-K · NAME · MODEL ──`
/// (severity when given, `T-K` when the note is about a turn K turns back, the name for a
/// named advisor's, the model that produced the note, SP8), the guidance text (CA15) opening the first block when the message has it.
fn merged_text(turn: usize, channel: LineChannel, delivery: &Delivery) -> String {
    let guidance = delivery
        .content
        .strip_prefix(advisor::replay::merged_guidance())
        .is_some();
    let mut out = String::new();
    for (i, note) in delivery.notes.iter().enumerate() {
        let mut heading = format!("── turn {turn} · {}", channel.as_str());
        if let Some(severity) = note.severity {
            heading.push_str(" · ");
            heading.push_str(severity.as_str());
        }
        if let Some(k) = note.turns_ago.filter(|k| *k > 0) {
            heading.push_str(&format!(" · T-{k}"));
        }
        if let Some(name) = &note.advisor {
            heading.push_str(" · ");
            heading.push_str(name);
        }
        // SP8: the model that produced this note, as every other heading names it.
        if let Some(model) = notes_models(std::slice::from_ref(note)) {
            heading.push_str(" · ");
            heading.push_str(&model);
        }
        out.push_str(&heading);
        out.push_str(" ──\n");
        if i == 0 && guidance {
            out.push_str(advisor::replay::merged_guidance());
            out.push('\n');
        }
        out.push_str(&note.to_xml(None));
        out.push('\n');
    }
    out
}

/// The names of the named advisors whose notes a delivery carries, in order, each once
/// (RO23: `── turn N · steer · Architecture ──`); `None` for the unnamed advisor's.
fn advisor_names(delivery: &Delivery) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for name in delivery.notes.iter().filter_map(|n| n.advisor.as_deref()) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    (!names.is_empty()).then(|| names.join(", "))
}

/// The replay's options: `--drain-timeout` bounds the drain whatever the input ended in;
/// without it, P11's 600 s, or 30 s after an error.
fn drain_options(drain_timeout: Option<u64>) -> ReplayOptions {
    match drain_timeout {
        Some(secs) => ReplayOptions {
            drain_timeout: Duration::from_secs(secs),
            drain_timeout_after_error: Duration::from_secs(secs),
            drain_timeout_explicit: true,
            ..ReplayOptions::default()
        },
        None => ReplayOptions::default(),
    }
}

/// The one notice of a drain that ended with work outstanding (P11).
fn outstanding_text(left: &Outstanding) -> String {
    let turns = match left.unreviewed_turns {
        1 => texts::line("drainOneTurn", &[]),
        n => texts::line("drainTurns", &[("n", &n.to_string())]),
    };
    let in_flight = match left.in_flight_secs {
        Some(secs) => texts::line("drainInFlight", &[("secs", &secs.to_string())]),
        None => texts::line("drainIdle", &[]),
    };
    let why = if left.input_ended_in_error {
        format!(" {}", texts::line("drainAfterError", &[]))
    } else {
        String::new()
    };
    let vars = [
        ("secs", left.waited_secs.to_string()),
        ("turns", turns),
        ("inFlight", in_flight),
        ("why", why),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    texts::line("drainOutstanding", &vars)
}

/// The standard-error line for an ask whose turn never came.
fn not_reached_text(turn: usize, question: &str) -> String {
    let turn = turn.to_string();
    texts::line(
        "askNeverAsked",
        &[("turn", &turn), ("question", question.trim())],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use advisor::domain::advice::{Advisory, Channel, Severity};
    use advisor::settings::LoadedSettings;

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
        let none = SettingsEnv::default();
        let s = settings(&args(&[]).flags(), &AdvisorSettings::default(), &none);
        assert_eq!(s.sync_backlog, SyncBacklog::Below(1));
        assert_eq!(s.policy, DeliveryPolicy::Defer);
        let env = SettingsEnv {
            compact_at: Some("70".into()),
            no_review: true,
            ..SettingsEnv::default()
        };
        let s = settings(
            &args(&[
                "--sync-backlog",
                "off",
                "--policy",
                "reconfirm",
                "--transcript",
                "full",
            ])
            .flags(),
            &AdvisorSettings::default(),
            &env,
        );
        assert_eq!(s.sync_backlog, SyncBacklog::Off);
        assert_eq!(s.policy, DeliveryPolicy::Reconfirm);
        assert_eq!(s.transcript, TranscriptView::Full);
        assert_eq!(s.compact_at_percent, 70);
        assert!(s.no_review);
    }

    #[test]
    fn l2_k1_files_apply_under_the_flags_but_sync_backlog_is_replays_own() {
        let files = AdvisorSettings {
            policy: DeliveryPolicy::Reconfirm,
            transcript: TranscriptView::Full,
            sync_backlog: SyncBacklog::Off,
            immune_turns: 7,
            enabled: false,
            ..AdvisorSettings::default()
        };
        let none = SettingsEnv::default();
        let s = settings(&args(&[]).flags(), &files, &none);
        assert_eq!(s.policy, DeliveryPolicy::Reconfirm);
        assert_eq!(s.transcript, TranscriptView::Full);
        assert_eq!(s.immune_turns, 7);
        assert_eq!(s.sync_backlog, SyncBacklog::Below(1), "replay paces itself");
        assert!(s.enabled, "a replay runs the advisor");
        let s = settings(
            &args(&[
                "--policy",
                "interrupt",
                "--model",
                "a/b",
                "--sync-backlog",
                "5",
            ])
            .flags(),
            &files,
            &none,
        );
        assert_eq!(s.policy, DeliveryPolicy::Interrupt);
        assert_eq!(s.sync_backlog, SyncBacklog::Below(5));
        assert!(s.enabled, "--model asks for this run (K2)");
    }

    #[test]
    fn k2_disabled_error_names_the_file_and_the_way_out() {
        let loaded = LoadedSettings {
            disabled_by: Some(PathBuf::from("/p/.omp/config.yml")),
            ..LoadedSettings::default()
        };
        assert_eq!(
            disabled_error(loaded.disabled_by.as_deref()).to_string(),
            "the advisor is disabled (advisor.enabled: false in /p/.omp/config.yml); pass \
             --model provider/model-id to replay with it anyway"
        );
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
    fn sp8_the_heading_and_the_json_line_name_the_model_of_the_note() {
        let d = Delivery::new(
            Channel::Steer,
            vec![
                Advisory::new("the migration drops a column", Some(Severity::Blocker))
                    .with_advisor("Security")
                    .with_model("advisorprov/backup-model"),
            ],
            None,
        );
        let text = printer(false).delivery_text(3, &d);
        assert!(
            text.starts_with("── turn 3 · steer · Security · advisorprov/backup-model ──\n"),
            "{text}"
        );
        let line: serde_json::Value =
            serde_json::from_str(&printer(true).delivery_text(3, &d)).unwrap();
        assert_eq!(line["model"], "advisorprov/backup-model");
        let unnamed = Delivery::new(
            Channel::Card,
            vec![Advisory::new("check the null case", None).with_model("openai/gpt-5")],
            None,
        );
        let text = printer(false).delivery_text(4, &unnamed);
        assert!(
            text.starts_with("── turn 4 · card · openai/gpt-5 ──\n"),
            "{text}"
        );
    }

    #[test]
    fn l2_text_delivery_names_turn_and_channel_json_has_one_line_per_note() {
        let d = two_asides();
        let text = printer(false).delivery_text(5, &d);
        assert!(
            text.starts_with("── turn 5 · aside ──\n<advisory"),
            "{text}"
        );
        let json = printer(true).delivery_text(5, &d);
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
    fn l2_pending_notes_print_with_channel_pending_in_text_and_json() {
        let d = two_asides();
        let text = printer(false).pending_text(9, &d);
        assert!(
            text.starts_with("── turn 9 · pending ──\n<advisory"),
            "{text}"
        );
        let json = printer(true).pending_text(9, &d);
        let lines: Vec<serde_json::Value> = json
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        for line in &lines {
            assert_eq!(line["turn"], 9);
            assert_eq!(line["channel"], "pending");
            assert_eq!(line["content"], d.content);
        }
        assert_eq!(lines[1]["note"], "two");
    }

    /// An aside of two notes, the second a nit.
    fn two_asides() -> Delivery {
        Delivery::new(
            Channel::Aside,
            vec![
                Advisory::new("one", None),
                Advisory::new("two", Some(Severity::Nit)),
            ],
            None,
        )
    }

    fn printer(json: bool) -> Printer {
        Printer {
            json,
            bar: ProgressBar::hidden(),
        }
    }

    #[test]
    fn ca14_a_merged_delivery_prints_t_n_in_each_heading_and_turns_ago_in_json() {
        let mut late =
            Advisory::new("Check the token", Some(Severity::Concern)).with_advisor("Security");
        late.turns_ago = Some(2);
        late.model = Some("openai/gpt-5".into());
        let mut now = Advisory::new("Tidy", Some(Severity::Nit));
        now.turns_ago = Some(0);
        let notes = vec![now.clone(), late.clone()];
        let mut card = Delivery::new(Channel::Card, notes, None);
        card.content = format!(
            "{}\n{}\n{}",
            advisor::replay::merged_guidance(),
            now.to_xml(None),
            late.to_xml(None)
        );
        let text = printer(false).delivery_text(7, &card);
        assert_eq!(
            text,
            format!(
                "── turn 7 · card · nit ──\n{}\n{}\n── turn 7 · card · concern · T-2 · Security · openai/gpt-5 ──\n{}\n",
                advisor::replay::merged_guidance(),
                now.to_xml(None),
                late.to_xml(None)
            )
        );
        assert!(late.to_xml(None).contains(" turns_ago=\"2\" guidance="));
        let json = printer(true).delivery_text(7, &card);
        let lines: Vec<serde_json::Value> = json
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["turnsAgo"], 0);
        assert_eq!(lines[1]["turnsAgo"], 2);
        assert_eq!(lines[1]["advisor"], "Security");
        // A live delivery has no turnsAgo.
        let live = Delivery::new(Channel::Steer, vec![Advisory::new("x", None)], None);
        let json = printer(true).delivery_text(3, &live);
        assert!(!json.contains("turnsAgo"), "{json}");
    }

    #[test]
    fn ro23_each_printed_note_names_its_advisor_and_the_unnamed_one_is_unchanged() {
        let steer = Delivery::new(
            Channel::Steer,
            vec![Advisory::new("Split it", Some(Severity::Concern)).with_advisor("Architecture")],
            None,
        );
        let text = printer(false).delivery_text(3, &steer);
        assert!(
            text.starts_with(
                "── turn 3 · steer · Architecture ──\n<advisory advisor=\"Architecture\""
            ),
            "{text}"
        );
        let aside = Delivery::new(
            Channel::Aside,
            vec![
                Advisory::new("a", None).with_advisor("Architecture"),
                Advisory::new("b", None).with_advisor("Security"),
                Advisory::new("c", None).with_advisor("Architecture"),
            ],
            None,
        );
        let text = printer(false).pending_text(4, &aside);
        assert!(
            text.starts_with("── turn 4 · pending · Architecture, Security ──\n"),
            "{text}"
        );
        let lines: Vec<serde_json::Value> = printer(true)
            .delivery_text(4, &aside)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let names: Vec<&str> = lines
            .iter()
            .map(|l| l["advisor"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Architecture", "Security", "Architecture"]);
        let unnamed = Delivery::new(Channel::Steer, vec![Advisory::new("x", None)], None);
        let text = printer(false).delivery_text(3, &unnamed);
        assert!(text.starts_with("── turn 3 · steer ──\n"), "{text}");
        let line: serde_json::Value =
            serde_json::from_str(&printer(true).delivery_text(3, &unnamed)).unwrap();
        assert!(line.get("advisor").is_none(), "{line}");
    }

    #[test]
    fn ro23_the_final_status_lists_each_named_advisor_on_one_line() {
        use advisor::{AdvisorState, AgentStatus, DeliveryCounts, NamedAdvisorStatus};
        let named = |name: &str, state: AdvisorState, reason: Option<&str>| NamedAdvisorStatus {
            name: name.into(),
            slug: name.to_lowercase(),
            model: (state == AdvisorState::Running).then(|| "openai/gpt-5".to_string()),
            state,
            reason: reason.map(str::to_string),
            policy: DeliveryPolicy::Interrupt,
            skipped_updates: 0,
            cadence: advisor::CadenceStatus::default(),
            deliveries: DeliveryCounts::default(),
            agent: AgentStatus::default(),
            spend: Default::default(),
        };
        let mut outcome = drained_after(3);
        outcome.status.advisors = vec![
            named("Architecture", AdvisorState::Running, None),
            named("Security", AdvisorState::NoModel, Some("no API key")),
        ];
        let text = printer(false).finish_text(&outcome);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  Architecture: ") || l.starts_with("  Security: "))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].starts_with("  Architecture: openai/gpt-5, running"),
            "{text}"
        );
        assert!(
            lines[1].starts_with("  Security: no model (no API key), context "),
            "{text}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&printer(true).finish_text(&outcome)).unwrap();
        assert_eq!(json["status"]["advisors"][1]["state"], "noModel");
    }

    /// A replay of `turns` turns that ran to the end, the advisor enabled.
    fn drained_after(turns: usize) -> ReplayOutcome {
        ReplayOutcome {
            turns,
            runs: 1,
            compactions: 0,
            drained: true,
            outstanding: None,
            pending: 0,
            asks_not_reached: 0,
            elapsed: Duration::from_secs(1),
            status: advisor::AdvisorStatus {
                enabled: true,
                ..advisor::AdvisorStatus::default()
            },
        }
    }

    #[test]
    fn sp7_the_json_status_line_and_the_text_carry_the_check_ins() {
        let mut outcome = drained_after(4);
        outcome.status.agent.check_in = advisor::CheckInCounts {
            check_ins: 1,
            turns_skipped: 2,
        };
        let json: serde_json::Value =
            serde_json::from_str(&printer(true).finish_text(&outcome)).unwrap();
        let agent = &json["status"]["agent"];
        assert_eq!(
            (&agent["checkIns"], &agent["turnsSkipped"]),
            (&1.into(), &2.into())
        );
        let text = printer(false).finish_text(&outcome);
        assert!(
            text.contains(
                "check-ins: 1 review(s) chose when to look again; 2 turn end(s) started no review"
            ),
            "{text}"
        );
    }

    #[test]
    fn sp1_sp2_the_json_status_line_carries_the_tool_spend() {
        let mut outcome = drained_after(1);
        outcome.status.agent.tool_spend = advisor::ToolSpendCounts {
            budget_refused: 3,
            rereads_saved: 2,
            reread_bytes_saved: 900,
        };
        let json: serde_json::Value =
            serde_json::from_str(&printer(true).finish_text(&outcome)).unwrap();
        let agent = &json["status"]["agent"];
        assert_eq!(
            (
                &agent["budgetRefused"],
                &agent["rereadsSaved"],
                &agent["rereadBytesSaved"]
            ),
            (&3.into(), &2.into(), &900.into())
        );
        let text = printer(false).finish_text(&outcome);
        assert!(
            text.contains("tool spend: 3 call(s) past the tool budget not run"),
            "{text}"
        );
    }

    #[test]
    fn l5_no_model_error_names_the_ways_out() {
        let text = model_error(ProviderError::NoModel).to_string();
        for word in ["OPENROUTER_API_KEY", "--model", "--base-url"] {
            assert!(text.contains(word), "{text}");
        }
    }

    #[test]
    fn g8_l5_a_malformed_ask_is_one_line_naming_the_flag() {
        let ok = parse_asks(&["2:why?".into(), "1:what?".into()]).unwrap();
        assert_eq!((ok[0].turn, ok[1].turn), (2, 1));
        for bad in ["why", "x:why", "0:why", "3: "] {
            let err = parse_asks(&["1:fine".into(), bad.into()])
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("--ask: "), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }

    #[test]
    fn g8_text_ask_block_names_turn_question_and_answer_or_error() {
        let text = printer(false);
        assert_eq!(
            text.answer_text(3, " why? ", &Ok("Because.\n".into())),
            "── turn 3 · ask ──\nQ: why?\nA: Because.\n"
        );
        let failed = Err(HandleError::Ask(advisor::AskError::Disabled));
        let block = text.answer_text(3, "why?", &failed);
        assert!(
            block.ends_with("error: the advisor could not answer: consulting the advisor is turned off (advisor.consult: false)\n"),
            "{block}"
        );
        assert_eq!(
            not_reached_text(9, "why?"),
            "advisor: --ask 9:why? was never asked: the session ended before turn 9"
        );
    }
}
