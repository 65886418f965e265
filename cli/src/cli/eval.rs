//! `advisor eval CORPUS` (§18): replays every case of a corpus through the advisor as
//! `advisor replay` would, scores what it said against the planted mistakes and the
//! controls, and reports the figures; `advisor eval --check CORPUS` only checks the
//! corpus; `advisor eval compare A.json B.json …` sets results side by side.
//!
//! Output contract:
//! - `--check`: one line per problem on standard output (`FILE: FIELD: what is wrong`),
//!   then exit 1 when there is any; exit 0 and a one-line count when there is none;
//! - a run: one warning line on standard error per case skipped; a progress bar on
//!   standard error when it is a terminal; then on standard output the table per class
//!   and in total (text), or with `--json` one JSON line per case run and a summary line
//!   (the schema is in docs/EVAL.md). `--out DIR` writes `results.json` (the JSON lines) and
//!   `report.md` as well. Ctrl-C stops the run: what finished is reported, marked
//!   incomplete, and the exit code is 1;
//! - `compare`: the side-by-side table on standard output; `--svg FILE` writes the chart.
//!
//! Each case's session is set up by the same code as `advisor replay`'s
//! ([`super::replay::prepare_session`]), with the case's workspace copy as its root, so the
//! settings files, the environment, WATCHDOG.md and the roster apply as they do there;
//! `--set` and `--config` add settings over the files.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::compare::{compare_table, label_of, read_summary, svg_chart, Column};
use advisor::providers::{Catalog, ModelSpec};
use advisor::replay::eval::corpus::{check_corpus, Case, CorpusCheck, WorkspaceCopy};
use advisor::replay::eval::report::iso_seconds;
use advisor::replay::eval::report::{judge_line, RunMeta};
use advisor::replay::eval::run::{CasePreparer, EvalEvent, EvalOptions, EvalRunner, PreparedCase};
use advisor::replay::eval::score_records;
use advisor::replay::eval::scratch::RunScratch;
use advisor::settings::{AdvisorSettings, DeliveryPolicy, SettingsLayer, SyncBacklog};
use advisor::TranscriptView;
use advisor::{
    AdvisorRuntime, KeyLookup, ModelClient, ModelSource, RuntimeOptions, SharedResources,
};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::replay::{prepare_session, SessionFlags};
use super::{eval_gate, out, CliError, ModelArgs};

/// The largest settings file `--config` reads, and the largest results file `compare` reads.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
const MAX_RESULTS_BYTES: u64 = 256 * 1024 * 1024;

/// Arguments of `advisor eval`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EvalArgs {
    /// `compare`, or nothing to run or check a corpus.
    #[command(subcommand)]
    pub command: Option<EvalCommand>,
    /// Running or checking a corpus.
    #[command(flatten)]
    pub run: EvalRunArgs,
}

/// `advisor eval compare`.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Set the results of several runs (their `--json` output or results.json) side by
    /// side, each figure with its difference from the first.
    Compare(CompareArgs),
}

/// Arguments of `advisor eval compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Results files (`advisor eval --json` output, or results.json from `--out`).
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Also write a chart of catches within one turn against cost per case, one labelled
    /// point per results file, to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// Arguments of `advisor eval CORPUS`.
#[derive(Debug, Args)]
pub struct EvalRunArgs {
    /// The corpus: a directory of case directories (each with session.jsonl, case.yml and
    /// workspace/).
    pub corpus: Option<PathBuf>,
    /// Only check the corpus: one line per problem, exit 1 when there is any.
    #[arg(long)]
    pub check: bool,
    /// Print one JSON line per case run and a summary line instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write results.json and report.md into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Cases run at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub jobs: usize,
    /// Runs of each case (the report gives the mean and the min–max).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub runs: usize,
    /// Longest a case may run, in seconds, before it is scored as a timeout.
    #[arg(long, default_value_t = 600, value_name = "SECS")]
    pub case_timeout: u64,
    /// An advisor setting as in config.yml, dotted (e.g. advisor.policy=interrupt);
    /// repeatable, over --config and the settings files.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// A settings file in config.yml's format, over the settings files.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The advisor model (default: $ADVISOR_MODEL, then `modelRoles.advisor` in
    /// config.yml, then `modes.advisor` in modes.json), and how to reach it.
    #[command(flatten)]
    pub provider: ModelArgs,
    /// Also ask this model (`provider/model-id`) whether each note of a planted case is
    /// about the plant, and report its results beside the patterns' and how often they agree.
    #[arg(long, value_name = "MODEL")]
    pub judge: Option<String>,
    /// Delivery policy: defer (the default), interrupt or reconfirm.
    #[arg(long, value_parser = |s: &str| s.parse::<DeliveryPolicy>().map_err(|e| e.to_string()))]
    pub policy: Option<DeliveryPolicy>,
    /// How deltas are rendered: expanded (the default), compact or full.
    #[arg(long, value_parser = |s: &str| s.parse::<TranscriptView>().map_err(|e| e.to_string()))]
    pub transcript: Option<TranscriptView>,
    /// How far each turn waits for the advisor: off, 1, 3 or 5 (default: 1, which the
    /// turn latencies assume).
    #[arg(long, value_parser = |s: &str| s.parse::<SyncBacklog>().map_err(|e| e.to_string()))]
    pub sync_backlog: Option<SyncBacklog>,
    /// Leave WATCHDOG.md files out of the advisor's system prompt.
    #[arg(long)]
    pub no_watchdog: bool,
    /// Also measure the action gate: after the advisor's runs, put each plant call and
    /// each control call to the gate (advisor.gate: risky) with the same model, one call at
    /// a time, and add the gate table to the report, --json and report.md.
    #[arg(long)]
    pub gate: bool,
    /// Measure only the action gate, as --gate does, without replaying the advisor.
    #[arg(long)]
    pub gate_only: bool,
}

/// Runs `advisor eval`.
pub fn run(args: EvalArgs) -> Result<(), CliError> {
    match args.command {
        Some(EvalCommand::Compare(compare)) => run_compare(compare),
        None => run_corpus(args.run),
    }
}

fn run_compare(args: CompareArgs) -> Result<(), CliError> {
    let mut columns = Vec::new();
    for path in &args.results {
        let name = path.display().to_string();
        let text = read_bounded(path, MAX_RESULTS_BYTES)?;
        let summary = read_summary(&name, &text).map_err(|e| CliError::new(e.to_string()))?;
        columns.push(Column {
            label: label_of(&summary),
            summary,
        });
    }
    // Two runs of the same model and configuration are told apart by their file names.
    for i in 0..columns.len() {
        if columns
            .iter()
            .filter(|c| c.label == columns[i].label)
            .count()
            > 1
        {
            let stem = args.results[i]
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            columns[i].label = format!("{} ({stem})", columns[i].label);
        }
    }
    out(&compare_table(&columns));
    if let Some(svg) = &args.svg {
        std::fs::write(svg, svg_chart(&columns))
            .map_err(|e| CliError::new(format!("--svg {}: {e}", svg.display())))?;
    }
    Ok(())
}

fn run_corpus(args: EvalRunArgs) -> Result<(), CliError> {
    let corpus = args.corpus.clone().ok_or_else(|| {
        CliError::new("advisor eval needs a corpus directory (e.g. evals/corpus)")
    })?;
    let check =
        check_corpus(&corpus).map_err(|e| CliError::new(format!("{}: {e}", corpus.display())))?;
    if args.check {
        return report_check(&check);
    }
    for problem in &check.problems {
        eprintln!("advisor: warning: skipped: {problem}");
    }
    if check.cases.is_empty() {
        return Err(CliError::new(format!(
            "{}: no usable case",
            corpus.display()
        )));
    }
    let host_layer = host_layer(&args.set, args.config.as_deref())?;
    let flags = SessionFlags {
        model: args.provider.model.clone(),
        base_url: args.provider.base_url.clone(),
        api: args.provider.api,
        policy: args.policy,
        transcript: args.transcript,
        sync_backlog: args.sync_backlog,
        no_watchdog: args.no_watchdog,
        drain_timeout: None,
        audit: None,
        host_layer,
    };
    let keys: KeyLookup = Arc::new(|name: &str| std::env::var(name).ok());
    let preparer = Arc::new(CliPreparer {
        flags,
        keys: Arc::clone(&keys),
    });
    // A model that cannot be built fails every case alike: say so once, before anything runs.
    preflight(preparer.as_ref(), &check.cases[0])?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))?;
    let started = SystemTime::now();
    if args.gate_only {
        let gate = eval_gate::measure(&check.cases, preparer, tokio.handle().clone())?;
        return report_gate_only(&args, &check, iso_date(started), &gate);
    }
    let mut results = run_cases(&args, &check, Arc::clone(&preparer), keys, &tokio, started)?;
    results.skipped.splice(0..0, skipped_lines(&check));
    // An interrupted run reports what finished, without the gate.
    let gate = if args.gate && !results.meta.incomplete {
        Some(eval_gate::measure(
            &check.cases,
            preparer,
            tokio.handle().clone(),
        )?)
    } else {
        None
    };
    report_run(&args, &results, gate.as_ref())
}

/// A run's report: the table (and the gate's) as text or JSON lines, and in `--out`; an
/// interrupted run is an error after it.
fn report_run(
    args: &EvalRunArgs,
    results: &advisor::replay::eval::report::Results,
    gate: Option<&advisor::replay::eval::gate::GateFigures>,
) -> Result<(), CliError> {
    let mut json = results.json_lines();
    let mut markdown = results.markdown();
    if let Some(gate) = gate {
        json = eval_gate::json_with_gate(&json, gate);
        markdown = format!("{}\n\n{}", markdown.trim_end(), gate.markdown());
    }
    if args.json {
        out(json.trim_end());
    } else {
        let mut text = text_report(results);
        if let Some(gate) = gate {
            text = format!("{text}\n\n{}", gate.text().trim_end());
        }
        out(&text);
    }
    if let Some(dir) = &args.out {
        write_out(dir, &json, &markdown)?;
    }
    if results.meta.incomplete {
        return Err(CliError::new(
            "interrupted: the report covers only the case runs that finished (marked incomplete)",
        ));
    }
    Ok(())
}

/// Replays every case through the advisor and scores the runs.
fn run_cases(
    args: &EvalRunArgs,
    check: &CorpusCheck,
    preparer: Arc<CliPreparer>,
    keys: KeyLookup,
    tokio: &tokio::runtime::Runtime,
    started: SystemTime,
) -> Result<advisor::replay::eval::report::Results, CliError> {
    let judge = match &args.judge {
        Some(role) => Some(judge_model(role, &args.provider, keys)?),
        None => None,
    };
    let runtime = AdvisorRuntime::new(RuntimeOptions::default())
        .map_err(|e| CliError::new(format!("cannot start the advisor runtime: {e}")))?;
    let options = EvalOptions {
        jobs: args.jobs.max(1),
        runs: args.runs.max(1),
        case_timeout: Duration::from_secs(args.case_timeout.max(1)),
        temp_dir: std::env::temp_dir(),
    };
    let runs = options.runs;
    let bar = progress_bar((check.cases.len() * runs) as u64);
    let records = tokio.block_on(async {
        let runner = EvalRunner::new(&runtime, preparer, options).with_judge(judge);
        let mut warned = std::collections::BTreeSet::new();
        let stop = async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        runner
            .run(
                &check.cases,
                |event| match event {
                    EvalEvent::Finished { case, .. } => {
                        bar.set_message(case);
                        bar.inc(1);
                    }
                    EvalEvent::Cleaned { runs } => {
                        bar.suspend(|| eprintln!("{}", cleaned_line(runs)))
                    }
                    EvalEvent::Skipped { case, reason } => {
                        bar.inc(1);
                        if warned.insert(case.clone()) {
                            bar.suspend(|| {
                                eprintln!("advisor: warning: skipped: {case}: {reason}")
                            });
                        }
                    }
                },
                stop,
            )
            .await
    });
    bar.finish_and_clear();
    let model = records
        .runs
        .iter()
        .find_map(|r| r.model.clone())
        .or(args.provider.model.clone())
        .unwrap_or_else(|| "(none)".into());
    let meta = RunMeta {
        model,
        configuration: configuration(args),
        corpus_hash: check.hash.clone(),
        runs,
        date: iso_date(started),
        incomplete: records.incomplete,
    };
    let mut results = score_records(&check.cases, &records, meta);
    results.skipped = records.skipped.clone();
    Ok(results)
}

/// One line per case the check skipped, its problems joined.
fn skipped_lines(check: &CorpusCheck) -> Vec<String> {
    check
        .skipped
        .iter()
        .map(|dir| {
            let problems: Vec<String> = check
                .problems
                .iter()
                .filter(|p| p.file.starts_with(dir))
                .map(|p| p.to_string())
                .collect();
            problems.join("; ")
        })
        .collect()
}

/// `--gate-only`: the gate table alone, as text or a JSON line, and in `--out`.
fn report_gate_only(
    args: &EvalRunArgs,
    check: &CorpusCheck,
    date: String,
    gate: &advisor::replay::eval::gate::GateFigures,
) -> Result<(), CliError> {
    let configuration = configuration(args);
    let meta = eval_gate::GateOnlyMeta {
        model: args.provider.model.as_deref().unwrap_or("(configured)"),
        configuration: &configuration,
        corpus_hash: &check.hash,
        date: &date,
    };
    let json = eval_gate::gate_only_json(&meta, gate);
    if args.json {
        out(&json);
    } else {
        out(&eval_gate::gate_only_text(&meta, check.cases.len(), gate));
    }
    if let Some(dir) = &args.out {
        write_out(
            dir,
            &format!("{json}\n"),
            &eval_gate::gate_only_markdown(&meta, gate),
        )?;
    }
    Ok(())
}

/// `--check`: every problem on its line, exit 1 when there is any.
fn report_check(check: &CorpusCheck) -> Result<(), CliError> {
    for problem in &check.problems {
        out(&problem.to_string());
    }
    let planted = check
        .cases
        .iter()
        .filter(|c| c.spec.plant.is_some())
        .count();
    if check.problems.is_empty() {
        out(&format!(
            "{} cases ({planted} planted, {} controls), corpus {}: no problems",
            check.cases.len(),
            check.cases.len() - planted,
            check.hash
        ));
        return Ok(());
    }
    Err(CliError::new(format!(
        "{} problem{} in {} case{}",
        check.problems.len(),
        if check.problems.len() == 1 { "" } else { "s" },
        check.skipped.len(),
        if check.skipped.len() == 1 { "" } else { "s" },
    )))
}

/// The text report: what was run, the table, the judge's line, the skipped cases.
fn text_report(results: &advisor::replay::eval::report::Results) -> String {
    let s = results.summary();
    let mut text = format!(
        "model {} · configuration {} · corpus {} · {} cases, {} planted and {} control runs, {} skipped, {} timeouts, {} failed model calls, {} turns never reviewed{}\n\n",
        s.meta.model,
        s.meta.configuration,
        s.meta.corpus_hash,
        s.cases,
        s.planted,
        s.controls,
        s.skipped,
        s.timeouts,
        s.failures,
        s.dropped_turns,
        if s.meta.incomplete { " · INCOMPLETE" } else { "" },
    );
    text.push_str(&results.table());
    if let Some(j) = &s.judge {
        text.push('\n');
        text.push_str(&judge_line(j));
        text.push('\n');
    }
    text.trim_end().to_string()
}

fn write_out(dir: &Path, json: &str, markdown: &str) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::new(format!("--out {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(fail)?;
    std::fs::write(dir.join("results.json"), json).map_err(fail)?;
    std::fs::write(dir.join("report.md"), markdown).map_err(fail)
}

/// Sets up cases exactly as `advisor replay` sets up a session.
struct CliPreparer {
    flags: SessionFlags,
    keys: KeyLookup,
}

impl CasePreparer for CliPreparer {
    fn prepare(
        &self,
        case: &Case,
        root: &Path,
        shared: &Arc<SharedResources>,
    ) -> Result<PreparedCase, String> {
        let driver = case.driver()?;
        let prepared = prepare_session(
            &self.flags,
            &driver,
            root.to_path_buf(),
            Arc::clone(&self.keys),
            Some(Arc::clone(shared)),
        )
        .map_err(|e| e.to_string())?;
        Ok(PreparedCase {
            config: prepared.config,
            options: prepared.options,
            driver,
        })
    }
}

/// The line saying that the copies of runs killed before they ended were removed (EV2).
fn cleaned_line(runs: usize) -> String {
    format!("advisor: removed the workspace copies of {runs} earlier eval run(s) that did not end")
}

/// Sets the first case up once, so a missing model is one error line, not a skipped corpus.
fn preflight(preparer: &CliPreparer, case: &Case) -> Result<(), CliError> {
    let (scratch, removed) = RunScratch::create(&std::env::temp_dir()).map_err(CliError::new)?;
    if removed > 0 {
        eprintln!("{}", cleaned_line(removed));
    }
    let copy = WorkspaceCopy::new(&case.workspace(), scratch.path(), &case.spec.id)
        .map_err(CliError::new)?;
    let shared = Arc::new(SharedResources::new(None));
    preparer
        .prepare(case, copy.path(), &shared)
        .map(|_| ())
        .map_err(CliError::new)
}

/// The judge's model (EV4), reached like the advisor's own (`--base-url`, `--api`).
fn judge_model(
    role: &str,
    provider: &ModelArgs,
    keys: KeyLookup,
) -> Result<Arc<dyn ModelClient>, CliError> {
    let catalog = Catalog::builtin().map_err(|e| CliError::new(e.to_string()))?;
    let models = ModelSource {
        base_url: provider.base_url.clone(),
        api: provider.api,
        ..ModelSource::new(Arc::new(catalog), keys)
    };
    let spec = ModelSpec {
        base_url: provider.base_url.clone(),
        api: provider.api,
        ..models.spec(Some(role.to_string()), &AdvisorSettings::default())
    };
    models
        .build(&spec)
        .map_err(|e| CliError::new(format!("--judge {role}: {}", CliError::from(&e))))
}

/// `--config FILE` and the `--set` pairs as one settings layer, the pairs over the file;
/// checked as config.yml is (a bad value is an error; an unknown key given with --set too).
fn host_layer(
    sets: &[String],
    config: Option<&Path>,
) -> Result<Option<(PathBuf, SettingsLayer)>, CliError> {
    let mut layer: Option<(PathBuf, SettingsLayer)> = None;
    if let Some(file) = config {
        let text = read_bounded(file, MAX_CONFIG_BYTES)?;
        let (parsed, warnings) =
            SettingsLayer::parse(file, &text).map_err(|e| CliError::new(e.to_string()))?;
        for warning in warnings {
            eprintln!("advisor: warning: {warning}");
        }
        layer = Some((file.to_path_buf(), parsed));
    }
    if sets.is_empty() {
        return Ok(layer);
    }
    let text = sets_yaml(sets)?;
    let name = PathBuf::from("--set");
    let (parsed, warnings) =
        SettingsLayer::parse(&name, &text).map_err(|e| CliError::new(e.to_string()))?;
    if let Some(warning) = warnings.first() {
        return Err(CliError::new(warning.to_string()));
    }
    Ok(Some(match layer {
        Some((file, base)) => (
            PathBuf::from(format!("{} and --set", file.display())),
            parsed.over(base),
        ),
        None => (name, parsed),
    }))
}

/// The `--set KEY=VALUE` pairs as a config.yml document: dotted keys nest, values are read
/// as YAML scalars (`5`, `true`, `interrupt`).
fn sets_yaml(sets: &[String]) -> Result<String, CliError> {
    use serde_norway::{Mapping, Value};
    let mut root = Mapping::new();
    for set in sets {
        let (key, raw) = set
            .split_once('=')
            .ok_or_else(|| CliError::new(format!("--set {set}: expected KEY=VALUE")))?;
        let parts: Vec<&str> = key.trim().split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(CliError::new(format!(
                "--set {set}: `{key}` is not a dotted key"
            )));
        }
        let value: Value =
            serde_norway::from_str(raw).unwrap_or_else(|_| Value::String(raw.into()));
        let mut node = &mut root;
        for part in &parts[..parts.len() - 1] {
            let entry = node
                .entry(Value::String((*part).into()))
                .or_insert_with(|| Value::Mapping(Mapping::new()));
            if !entry.is_mapping() {
                *entry = Value::Mapping(Mapping::new());
            }
            let Value::Mapping(next) = entry else {
                return Err(CliError::new(format!(
                    "--set {set}: `{key}` is not a dotted key"
                )));
            };
            node = next;
        }
        node.insert(Value::String(parts[parts.len() - 1].into()), value);
    }
    serde_norway::to_string(&Value::Mapping(root)).map_err(|e| CliError::new(e.to_string()))
}

/// The configuration as the report names it: the settings flags given, or `defaults`.
fn configuration(args: &EvalRunArgs) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(file) = &args.config {
        parts.push(format!("--config {}", file.display()));
    }
    parts.extend(args.set.iter().map(|s| format!("--set {s}")));
    if let Some(p) = args.policy {
        parts.push(format!("--policy {}", format!("{p:?}").to_lowercase()));
    }
    if let Some(t) = args.transcript {
        parts.push(format!("--transcript {}", t.as_str()));
    }
    if let Some(s) = args.sync_backlog {
        parts.push(format!("--sync-backlog {s}"));
    }
    if args.no_watchdog {
        parts.push("--no-watchdog".into());
    }
    if let Some(j) = &args.judge {
        parts.push(format!("--judge {j}"));
    }
    if parts.is_empty() {
        "defaults".into()
    } else {
        parts.join(" ")
    }
}

/// A regular file of at most `cap` bytes, as text.
fn read_bounded(path: &Path, cap: u64) -> Result<String, CliError> {
    let fail = |why: String| CliError::new(format!("{}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    if meta.len() > cap {
        return Err(fail(format!("larger than {} MiB", cap / 1024 / 1024)));
    }
    std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))
}

/// A progress bar over the case runs, on standard error when it is a terminal.
fn progress_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(10));
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} case runs · {msg} [{elapsed}]")
    {
        bar.set_style(style);
    }
    bar
}

/// `YYYY-MM-DDTHH:MM:SSZ` of `time`.
fn iso_date(time: SystemTime) -> String {
    iso_seconds(time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ev7_set_pairs_nest_and_are_checked_as_config_yml_is() {
        let text = sets_yaml(&[
            "advisor.policy=interrupt".into(),
            "advisor.immuneTurns=4".into(),
        ])
        .unwrap();
        let (layer, warnings) = SettingsLayer::parse(Path::new("--set"), &text).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(layer.policy, Some(DeliveryPolicy::Interrupt));
        assert_eq!(layer.immune_turns, Some(4));
        let bad = host_layer(&["advisor.immuneTurns=many".into()], None).unwrap_err();
        assert!(bad.to_string().contains("immuneTurns"), "{bad}");
        let unknown = host_layer(&["advisor.nope=1".into()], None).unwrap_err();
        assert!(unknown.to_string().contains("nope"), "{unknown}");
        assert!(host_layer(&["advisor.policy".into()], None).is_err());
    }

    #[test]
    fn ev6_dates_are_utc_iso() {
        let t = UNIX_EPOCH + Duration::from_secs(1_796_204_415);
        assert_eq!(iso_date(t), "2026-12-02T09:40:15Z");
        assert_eq!(iso_date(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }
}
