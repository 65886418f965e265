//! Running a corpus (EV2, EV5): every case replayed as `advisor replay` replays a session,
//! concurrently in one [`AdvisorRuntime`], each in a copy of its workspace, bounded by the
//! case timeout; what the advisor raised and delivered is recorded for scoring.
//!
//! How the session of a case is set up (settings, model, roster) is the host's
//! ([`CasePreparer`]): the `advisor` command prepares it exactly as `advisor replay` does,
//! tests and benchmarks with a scripted model. Everything after that is the replay's own.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use parking_lot::Mutex;
use tokio::sync::mpsc::unbounded_channel;

use crate::config::RuntimeConfig;
use crate::delivery::{RaiseOutcome, RaisedAdvice};
use crate::domain::transcript::{AssistantBlock, TranscriptMessage};
use crate::model::{ChatMessage, ModelClient, ModelRequest, ThinkingLevel};
use crate::replay::{LineChannel, Replay, ReplayEvent, ReplayOptions};
use crate::runtime::{AdvisorRuntime, SharedResources};
use crate::session::{read_session_with, ReadLimits, SessionDriver};
use crate::status::AdvisorStatus;
use crate::texts::fill_in_one_pass;

use super::corpus::{Case, WorkspaceCopy};
use super::score::{batch_turn, CaseCost, DeliveredNote, Fate, Observation, RaisedNote};
use super::scratch::RunScratch;

/// A case's session, set up and ready to replay.
pub struct PreparedCase {
    /// The session's configuration (its workspace root the case's copy).
    pub config: RuntimeConfig,
    /// The replay's options.
    pub options: ReplayOptions,
    /// The session file's driver.
    pub driver: SessionDriver,
}

/// Sets up the session of a case, as a host would (blocking: it reads settings files).
pub trait CasePreparer: Send + Sync {
    /// The session of `case` with `root` (the workspace copy) as its workspace root, its
    /// models reached through `shared`; an error skips the case, with the reason given.
    fn prepare(
        &self,
        case: &Case,
        root: &Path,
        shared: &Arc<SharedResources>,
    ) -> Result<PreparedCase, String>;
}

/// How a corpus is run.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Cases run at once (`--jobs`, default 4).
    pub jobs: usize,
    /// Runs of each case (`--runs`, default 1).
    pub runs: usize,
    /// The longest a case run may take before it is scored `timeout` (default 600 s).
    pub case_timeout: Duration,
    /// The temporary directory: each run makes its workspace copies in its own directory
    /// under `advisor-eval/` there ([`super::scratch`]).
    pub temp_dir: PathBuf,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            jobs: 4,
            runs: 1,
            case_timeout: Duration::from_secs(600),
            temp_dir: std::env::temp_dir(),
        }
    }
}

/// What the run reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalEvent {
    /// A case run ended.
    Finished {
        /// The case id.
        case: String,
        /// The run.
        run: usize,
        /// Whether it timed out.
        timed_out: bool,
    },
    /// Workspace copies left by runs that were killed were removed before this run began.
    Cleaned {
        /// How many runs' directories.
        runs: usize,
    },
    /// A case could not be set up and is skipped.
    Skipped {
        /// The case id.
        case: String,
        /// Why.
        reason: String,
    },
}

/// One case run's record.
#[derive(Debug, Clone)]
pub struct CaseRun {
    /// Index of the case in the list run.
    pub case: usize,
    /// The run, from 1.
    pub run: usize,
    /// What it saw.
    pub observation: Observation,
    /// The judge's verdict on each raised note (EV4), with a judge: `None` where it failed.
    pub verdicts: Option<Vec<Option<bool>>>,
    /// The model the session reviewed with, as status named it.
    pub model: Option<String>,
}

/// The records of a whole run.
#[derive(Debug, Clone, Default)]
pub struct RunRecords {
    /// Every finished case run, in case then run order.
    pub runs: Vec<CaseRun>,
    /// Cases that could not be set up, as `id: reason`.
    pub skipped: Vec<String>,
    /// Whether the run was stopped before every case ran.
    pub incomplete: bool,
}

/// Runs cases through one runtime (module docs).
pub struct EvalRunner<'a> {
    runtime: &'a AdvisorRuntime,
    preparer: Arc<dyn CasePreparer>,
    judge: Option<Arc<dyn ModelClient>>,
    options: EvalOptions,
}

/// How long a case that timed out is given to report its status and go away.
const CLEANUP_WAIT: Duration = Duration::from_secs(5);

impl<'a> EvalRunner<'a> {
    /// A runner on `runtime`, setting cases up with `preparer`.
    pub fn new(
        runtime: &'a AdvisorRuntime,
        preparer: Arc<dyn CasePreparer>,
        options: EvalOptions,
    ) -> Self {
        Self {
            runtime,
            preparer,
            judge: None,
            options,
        }
    }

    /// The same runner asking `judge` whether each note of a planted case is about its
    /// plant (EV4).
    pub fn with_judge(mut self, judge: Option<Arc<dyn ModelClient>>) -> Self {
        self.judge = judge;
        self
    }

    /// Runs every case `runs` times, `jobs` at once, reporting to `progress`; when `stop`
    /// completes first (Ctrl-C), what finished is returned, marked incomplete.
    pub async fn run(
        &self,
        cases: &[Case],
        mut progress: impl FnMut(EvalEvent),
        stop: impl Future<Output = ()>,
    ) -> RunRecords {
        let jobs: Vec<(usize, usize)> = (1..=self.options.runs.max(1))
            .flat_map(|run| (0..cases.len()).map(move |i| (i, run)))
            .collect();
        let total = jobs.len();
        let temp = self.options.temp_dir.clone();
        let scratch = tokio::task::spawn_blocking(move || RunScratch::create(&temp))
            .await
            .map_err(|e| e.to_string())
            .and_then(|made| made);
        let scratch = match scratch {
            Ok((scratch, runs)) => {
                if runs > 0 {
                    progress(EvalEvent::Cleaned { runs });
                }
                Ok(scratch)
            }
            Err(e) => Err(format!("no directory for the workspace copies: {e}")),
        };
        let parent = scratch
            .as_ref()
            .map(|s| s.path().to_path_buf())
            .map_err(|e| e.clone());
        let parent = &parent;
        let mut stream = stream::iter(jobs)
            .map(|(i, run)| async move {
                let ran = match parent {
                    Ok(dir) => self.run_case(i, &cases[i], run, dir).await,
                    Err(e) => Err(e.clone()),
                };
                (i, run, ran)
            })
            .buffer_unordered(self.options.jobs.max(1));
        let mut records = RunRecords::default();
        let mut skipped_ids = std::collections::BTreeSet::new();
        tokio::pin!(stop);
        let mut done = 0;
        loop {
            tokio::select! {
                next = stream.next() => match next {
                    Some((i, run, Ok(record))) => {
                        done += 1;
                        progress(EvalEvent::Finished {
                            case: cases[i].spec.id.clone(),
                            run,
                            timed_out: record.observation.timed_out,
                        });
                        records.runs.push(record);
                    }
                    Some((i, _, Err(reason))) => {
                        done += 1;
                        if skipped_ids.insert(i) {
                            let id = cases[i].spec.id.clone();
                            records.skipped.push(format!("{id}: {reason}"));
                            progress(EvalEvent::Skipped { case: id, reason });
                        }
                    }
                    None => break,
                },
                _ = &mut stop => {
                    records.incomplete = done < total;
                    break;
                }
            }
        }
        records.runs.sort_by_key(|r| (r.case, r.run));
        // A case that failed to set up in one run is left out of every run.
        records.runs.retain(|r| !skipped_ids.contains(&r.case));
        drop(stream);
        if let Ok(scratch) = scratch {
            let _ = tokio::task::spawn_blocking(move || drop(scratch)).await;
        }
        records
    }

    async fn run_case(
        &self,
        index: usize,
        case: &Case,
        run: usize,
        parent: &Path,
    ) -> Result<CaseRun, String> {
        let started = Instant::now();
        let preparer = Arc::clone(&self.preparer);
        let shared = Arc::clone(self.runtime.shared());
        let temp = parent.to_path_buf();
        let owned = case.clone();
        let (copy, prepared) = tokio::task::spawn_blocking(move || {
            let copy = WorkspaceCopy::new(&owned.workspace(), &temp, &owned.spec.id)?;
            let prepared = preparer.prepare(&owned, copy.path(), &shared)?;
            Ok::<_, String>((copy, prepared))
        })
        .await
        .map_err(|e| format!("setting the case up failed: {e}"))??;
        let PreparedCase {
            mut config,
            options,
            driver,
        } = prepared;
        let (tap, mut raised_rx) = unbounded_channel::<RaisedAdvice>();
        config.advice_tap = Some(tap);
        config.audit_path = Some(copy.audit_path());
        let turns = case.turns;
        let (handle, events) = self.runtime.open(config);
        let recorder = Arc::new(Mutex::new(Recorder::new(started)));
        let sink = Arc::clone(&recorder);
        let replay = Replay::new(driver, handle.clone(), events).with_options(options);
        let ran = tokio::time::timeout(
            self.options.case_timeout,
            replay.run(move |event| sink.lock().event(event)),
        )
        .await;
        let (timed_out, status) = match ran {
            Ok(Ok(outcome)) => (false, Some(outcome.status)),
            Ok(Err(e)) => {
                // Bounded as every other wait on the session here: a dispose that never
                // answers cannot hold the run.
                let _ = tokio::time::timeout(CLEANUP_WAIT, handle.dispose()).await;
                return Err(e.to_string());
            }
            Err(_) => {
                let status = tokio::time::timeout(CLEANUP_WAIT, handle.status()).await;
                (true, status.ok().and_then(Result::ok))
            }
        };
        let _ = tokio::time::timeout(CLEANUP_WAIT, handle.dispose()).await;
        let mut raised = Vec::new();
        while let Ok(r) = raised_rx.try_recv() {
            raised.push(r);
        }
        let audit_dir = copy.base().to_path_buf();
        let tool_calls = tokio::task::spawn_blocking(move || count_tool_calls(&audit_dir))
            .await
            .unwrap_or(0);
        drop(copy);
        let recorder = std::mem::take(&mut *recorder.lock());
        let mut observation = recorder.observation(turns, &raised);
        observation.timed_out = timed_out;
        observation.cost = cost_of(status.as_ref(), tool_calls, started.elapsed());
        let verdicts = match (&self.judge, &case.spec.plant) {
            (Some(judge), Some(_)) => Some(judge_notes(judge.as_ref(), case, &observation).await),
            (Some(_), None) => Some(vec![None; observation.raised.len()]),
            _ => None,
        };
        Ok(CaseRun {
            case: index,
            run,
            observation,
            verdicts,
            model: status.and_then(|s| s.model),
        })
    }
}

/// What the replay's events say, as they come: when each turn end was sent, and every
/// delivery note by note.
#[derive(Debug, Default)]
struct Recorder {
    started: Option<Instant>,
    last_step_secs: f64,
    turn_sent: Vec<f64>,
    delivered: Vec<DeliveredNote>,
}

impl Recorder {
    fn new(started: Instant) -> Self {
        Self {
            started: Some(started),
            ..Self::default()
        }
    }

    fn secs(&self) -> f64 {
        self.started.map_or(0.0, |s| s.elapsed().as_secs_f64())
    }

    fn event(&mut self, event: ReplayEvent) {
        match event {
            // A turn end is sent right after the step before it was reported.
            ReplayEvent::Progress(p) => {
                while self.turn_sent.len() < p.turns {
                    self.turn_sent.push(self.last_step_secs);
                }
                self.last_step_secs = self.secs();
            }
            ReplayEvent::Delivery { turn, delivery } => {
                self.notes(turn, delivery.channel.into(), &delivery)
            }
            ReplayEvent::Pending { turn, delivery } => {
                self.notes(turn, LineChannel::Pending, &delivery)
            }
            _ => {}
        }
    }

    fn notes(
        &mut self,
        turn: usize,
        channel: LineChannel,
        delivery: &crate::domain::advice::Delivery,
    ) {
        for n in &delivery.notes {
            self.delivered.push(DeliveredNote {
                turn,
                channel,
                note: n.note.clone(),
                severity: n.severity,
                advisor: n.advisor.clone(),
            });
        }
    }

    /// The observation: each raised note with its review's last turn and its fate.
    fn observation(self, turns: usize, raised: &[RaisedAdvice]) -> Observation {
        let started = self.started;
        let mut taken = vec![false; self.delivered.len()];
        let raised = raised
            .iter()
            .map(|r| {
                let at_secs =
                    started.map_or(0.0, |s| r.at.saturating_duration_since(s).as_secs_f64());
                let found = self
                    .delivered
                    .iter()
                    .enumerate()
                    .find(|(i, d)| !taken[*i] && d.note == r.advisory.note);
                let fate = match (found, &r.outcome) {
                    (Some((i, d)), outcome) => {
                        taken[i] = true;
                        match (d.channel, outcome) {
                            (LineChannel::Pending, RaiseOutcome::Held) => Fate::Held,
                            (LineChannel::Pending, _) => Fate::Pending,
                            (channel, _) => Fate::Delivered {
                                channel,
                                turn: d.turn,
                            },
                        }
                    }
                    (None, RaiseOutcome::Dropped(reason) | RaiseOutcome::Declined(reason)) => {
                        Fate::Dropped(*reason)
                    }
                    (None, RaiseOutcome::TooLong { .. }) => {
                        Fate::Dropped(crate::delivery::DropReason::TooLong)
                    }
                    (None, RaiseOutcome::Held) => Fate::Held,
                    (None, _) => Fate::Pending,
                };
                RaisedNote {
                    note: r.advisory.note.clone(),
                    severity: r.advisory.severity,
                    advisor: r.advisory.advisor.clone(),
                    batch_turn: batch_turn(&self.turn_sent, at_secs).min(turns.max(1)),
                    at_secs,
                    fate,
                }
            })
            .collect();
        Observation {
            turns,
            turn_sent_secs: self.turn_sent,
            raised,
            delivered: self.delivered,
            timed_out: false,
            cost: CaseCost::default(),
        }
    }
}

/// The cost of a run (EV5) from the session's final status: the unnamed advisor's, or with a
/// roster the session's totals over every named advisor (RO19: status then carries them in
/// its `agent` part, so the named ones are not added again).
fn cost_of(status: Option<&AdvisorStatus>, tool_calls: u64, wall: Duration) -> CaseCost {
    let mut cost = CaseCost {
        tool_calls,
        wall_secs: wall.as_secs_f64(),
        ..CaseCost::default()
    };
    let Some(status) = status else {
        return cost;
    };
    cost.failures = status.failures;
    // SP5: the spend block of the report.
    cost.advise_calls = status.spend.advisors.advise_calls;
    cost.primary = status.spend.primary;
    cost.gate = status.spend.gate;
    // status.agent is already the roster total (EV5: counted once).
    let agent = &status.agent;
    cost.requests = agent.model_calls;
    cost.reviews = agent.reviews;
    cost.dropped_turns = agent.dropped_turns;
    cost.input_tokens = agent.lifetime.input;
    cost.cached_tokens = agent.lifetime.cache_read;
    cost.cache_write_tokens = agent.lifetime.cache_write;
    cost.output_tokens = agent.lifetime.output;
    cost.cost = agent.lifetime.cost;
    cost.tool_spend = agent.tool_spend;
    cost.check_in = agent.check_in;
    cost
}

/// The advisor's tool calls, counted in the transcript files it kept under `dir` (the
/// workspace copy itself left out).
fn count_tool_calls(dir: &Path) -> u64 {
    let mut calls = 0;
    let files = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| e.file_name() != "workspace")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "jsonl"));
    for file in files {
        let Ok(branch) = read_session_with(file.path(), &ReadLimits::default()) else {
            continue;
        };
        for message in branch.messages() {
            if let TranscriptMessage::Assistant(a) = message {
                calls += a
                    .content
                    .iter()
                    .filter(|b| matches!(b, AssistantBlock::ToolCall { .. }))
                    .count() as u64;
            }
        }
    }
    calls
}

/// The judge's system text (`config/prompts/eval-judge-system.md`).
const JUDGE_SYSTEM: &str =
    include_str!("../../../config/prompts/eval-judge-system.md").trim_ascii_end();

/// The judge's question about one note (`config/prompts/eval-judge-question.md`), with
/// `{description}`, `{evidence}` and `{note}` placeholders.
const JUDGE_QUESTION: &str =
    include_str!("../../../config/prompts/eval-judge-question.md").trim_ascii_end();

/// The judge's question for one note (EV4).
pub fn judge_request(case: &Case, note: &str) -> ModelRequest {
    let plant = case.spec.plant.as_ref();
    let evidence = plant.map(|p| p.evidence.join(", ")).unwrap_or_default();
    let text = fill_in_one_pass(
        JUDGE_QUESTION,
        &[
            ("description", &case.spec.description),
            ("evidence", &evidence),
            ("note", note),
        ],
    );
    ModelRequest {
        system: JUDGE_SYSTEM.into(),
        messages: vec![ChatMessage::User { text }],
        tools: Vec::new(),
        max_tokens: 16,
        thinking: ThinkingLevel::Off,
        reminder: None,
    }
}

/// The judge's yes or no, from its answer: its first word; anything else is a failure.
pub fn judge_verdict(answer: &str) -> Option<bool> {
    let word: String = answer
        .trim()
        .chars()
        .take_while(|c| c.is_alphabetic())
        .collect::<String>()
        .to_ascii_lowercase();
    match word.as_str() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

/// The judge's verdict on every note raised in a planted case's run.
async fn judge_notes(judge: &dyn ModelClient, case: &Case, obs: &Observation) -> Vec<Option<bool>> {
    let mut verdicts = Vec::with_capacity(obs.raised.len());
    for note in &obs.raised {
        let answer = judge.complete(judge_request(case, &note.note)).await;
        verdicts.push(answer.ok().and_then(|r| {
            let text: String = r
                .parts
                .iter()
                .filter_map(|p| match p {
                    crate::model::AssistantPart::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            judge_verdict(&text)
        }));
    }
    verdicts
}
