//! The figures README.md shows for review cadence (CA) and the spend controls (SP1–SP3),
//! measured with scripted advisors in one run each and checked against README's tables, so
//! a table cannot drift from what the code does: a failure names the row to update.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use advisor::domain::advice::Severity;
use advisor::replay::eval::corpus::check_corpus;
use advisor::replay::eval::report::{CaseLine, RunMeta};
use advisor::replay::eval::run::{EvalOptions, EvalRunner, RunRecords};
use advisor::replay::eval::score_records;
use advisor::replay::eval::testing::{ScriptedPreparer, SettingsTune};
use advisor::replay::LineChannel;
use advisor::settings::{AdvisorSettings, DeliveryPolicy, ReviewMode};
use advisor::{AdvisorRuntime, RuntimeOptions};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One run's figures: the report's summary and case lines, and the wakes delivered per case.
struct Measured {
    lines: Vec<CaseLine>,
    wakes: usize,
    blockers: usize,
}

/// An advisor runtime of `arbiters` arbiters and a one-worker tokio runtime to drive an
/// eval run on.
pub(crate) fn eval_runtimes(arbiters: usize) -> (AdvisorRuntime, tokio::runtime::Runtime) {
    let runtime = AdvisorRuntime::new(RuntimeOptions {
        arbiters,
        ..RuntimeOptions::default()
    })
    .unwrap();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    (runtime, tokio)
}

/// Runs `corpus` with `preparer`, four cases at once, as `advisor eval` would.
fn measure(corpus: &Path, preparer: ScriptedPreparer) -> Measured {
    let check = check_corpus(corpus).unwrap();
    assert!(check.problems.is_empty(), "{:?}", check.problems);
    let (runtime, tokio) = eval_runtimes(2);
    let temp = tempfile::tempdir().unwrap();
    let options = EvalOptions {
        jobs: 4,
        runs: 1,
        case_timeout: Duration::from_secs(120),
        temp_dir: temp.path().to_path_buf(),
    };
    let records: RunRecords = tokio.block_on(async {
        EvalRunner::new(&runtime, Arc::new(preparer), options)
            .run(&check.cases, |_| {}, std::future::pending())
            .await
    });
    assert!(records.skipped.is_empty(), "{:?}", records.skipped);
    assert!(!records.incomplete);
    assert!(records.runs.iter().all(|r| !r.observation.timed_out));
    let wakes = records
        .runs
        .iter()
        .flat_map(|r| &r.observation.delivered)
        .filter(|d| d.channel == LineChannel::Wake)
        .count();
    let blockers = records
        .runs
        .iter()
        .flat_map(|r| &r.observation.delivered)
        .filter(|d| d.severity == Some(Severity::Blocker))
        .count();
    let results = score_records(&check.cases, &records, RunMeta::default());
    let json = results.json_lines();
    let lines = json
        .lines()
        .filter(|l| !l.starts_with("{\"summary\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Measured {
        lines,
        wakes,
        blockers,
    }
}

pub(crate) fn tune(f: impl Fn(&mut AdvisorSettings) + Send + Sync + 'static) -> SettingsTune {
    Arc::new(f)
}

/// The cells of README's table row starting with `label`, after the label.
fn readme_row(label: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let prefix = format!("| {label} |");
    let line = readme
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("README.md has no table row `{prefix}`"));
    line[prefix.len()..]
        .trim_end_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

/// Checks README's row `label` against `measured`, naming the row and what it should say.
pub(crate) fn check_row(label: &str, measured: &[String]) {
    let shown = readme_row(label);
    let same = shown.len() == measured.len()
        && shown
            .iter()
            .zip(measured)
            .all(|(a, b)| a == b || near(a, b));
    assert!(
        same,
        "README.md's row `{label}` is out of date: it reads `| {label} | {} |`, measured \
         `| {label} | {} |`",
        shown.join(" | "),
        measured.join(" | ")
    );
}

/// Token figures (`272 k`, `23.3 M`) within 2 % of each other: the tokens a scripted
/// advisor reports vary a little from run to run with how turns fall into reviews.
fn near(shown: &str, measured: &str) -> bool {
    let split = |t: &str| {
        let (n, unit) = t.split_once(' ')?;
        Some((n.parse::<f64>().ok()?, unit.to_string()))
    };
    match (split(shown), split(measured)) {
        (Some((a, u)), Some((b, v))) if u == v && b > 0.0 => ((a - b) / b).abs() <= 0.02,
        _ => false,
    }
}

/// A one-case corpus holding `session` as a control case with an empty workspace.
fn session_corpus(dir: &Path, session: &Path) -> PathBuf {
    let case = dir.join("corpus/recorded");
    std::fs::create_dir_all(case.join("workspace")).unwrap();
    std::fs::copy(session, case.join("session.jsonl")).unwrap();
    std::fs::write(
        case.join("case.yml"),
        "id: recorded\nclass: none\ndescription: a recorded pi session of several prompts\n",
    )
    .unwrap();
    dir.join("corpus")
}

/// CA1–CA3 measured: one recorded pi session of many prompts, a scripted
/// advisor that never advises and reports its request's size as its input, under `turn`,
/// `turn` with `reviewInterval: 3` and `agent-end`. Each setting costs fewer requests and
/// fewer input tokens than the one before, and README's "Cadence" table shows these figures.
#[test]
fn ca1_ca3_cadence_cost_of_a_recorded_session_matches_the_readme_table() {
    let temp = tempfile::tempdir().unwrap();
    let session = root().join("tests/fixtures/pi-sessions/large-session.jsonl");
    let corpus = session_corpus(temp.path(), &session);
    let settings: [(&str, SettingsTune); 3] = [
        ("`reviewMode: turn`", tune(|_| {})),
        (
            "`reviewMode: turn`, `reviewInterval: 3`",
            tune(|s| s.review_interval = 3),
        ),
        (
            "`reviewMode: agent-end`",
            tune(|s| s.review_mode = ReviewMode::AgentEnd),
        ),
    ];
    let mut rows = Vec::new();
    for (label, tune) in settings {
        let preparer = ScriptedPreparer::new(HashMap::new(), DeliveryPolicy::Interrupt)
            .unwrap()
            .with_sized_usage()
            .with_settings(tune);
        let m = measure(&corpus, preparer);
        let line = &m.lines[0];
        eprintln!(
            "{label}: {} turn ends, {} reviews, {} requests, {} input tokens",
            line.turns, line.reviews, line.requests, line.input_tokens
        );
        rows.push((label, line.reviews, line.requests, line.input_tokens));
    }
    for pair in rows.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(a.2 > b.2 && a.3 > b.3, "{} costs less than {}", a.0, b.0);
    }
    for (label, reviews, requests, input) in &rows {
        let millions = format!("{:.1} M", *input as f64 / 1e6);
        check_row(
            label,
            &[reviews.to_string(), requests.to_string(), millions],
        );
    }
}

fn per_case(total: u64, cases: usize) -> String {
    format!("{:.1}", total as f64 / cases as f64)
}

/// SP1–SP3 measured (the off/on table): over the shipped corpus, an advisor that
/// rereads the same file every review, calls tools until a result says a call was not run
/// and raises a reworded blocker at every review costs fewer requests, tool calls per review
/// and input tokens, and wakes the primary less, with the spend controls on than with
/// `advisor.spendControls: false`; README's "Spend" table shows these figures.
#[test]
fn sp1_sp2_sp3_the_spend_controls_off_and_on_against_a_spending_advisor_match_the_readme() {
    let corpus = root().join("evals/corpus");
    let mut rows = Vec::new();
    for (label, on) in [("spend controls off", false), ("spend controls on", true)] {
        let preparer = ScriptedPreparer::new(HashMap::new(), DeliveryPolicy::Interrupt)
            .unwrap()
            .with_spender()
            .with_settings(tune(move |s| s.spend_controls = on));
        let m = measure(&corpus, preparer);
        let cases = m.lines.len();
        let requests: u64 = m.lines.iter().map(|l| l.requests).sum();
        let tools: u64 = m.lines.iter().map(|l| l.tool_calls).sum();
        let reviews: u64 = m.lines.iter().map(|l| l.reviews).sum();
        let input: u64 = m.lines.iter().map(|l| l.input_tokens).sum();
        let rereads: u64 = m.lines.iter().map(|l| l.rereads_saved).sum();
        let refused: u64 = m.lines.iter().map(|l| l.budget_refused).sum();
        eprintln!(
            "{label}: {cases} cases, {reviews} reviews, {requests} requests, {tools} tool \
             calls, {input} input tokens, {} wakes, {rereads} re-reads saved, {refused} \
             calls refused, {} blockers delivered",
            m.wakes, m.blockers
        );
        rows.push((
            label,
            [
                per_case(requests, cases),
                format!("{:.1}", tools as f64 / reviews as f64),
                format!("{:.0} k", input as f64 / cases as f64 / 1000.0),
                format!("{:.2}", m.blockers as f64 / cases as f64),
                format!("{:.2}", m.wakes as f64 / cases as f64),
            ],
            (requests, tools, input, m.blockers, m.wakes),
        ));
    }
    let (off, on) = (rows[0].2, rows[1].2);
    assert!(on.0 < off.0, "requests: on {} off {}", on.0, off.0);
    assert!(on.1 < off.1, "tool calls: on {} off {}", on.1, off.1);
    assert!(on.2 < off.2, "input tokens: on {} off {}", on.2, off.2);
    assert!(on.3 < off.3, "blockers: on {} off {}", on.3, off.3);
    // The replay awaits each turn's review (EV3), so an idle blocker joins the final
    // boundary's merged message (CA13) rather than waking the primary; SP3's wake limit
    // has its own tests. A wake here would be counted in the table.
    assert!(on.4 <= off.4, "wakes: on {} off {}", on.4, off.4);
    for (label, cells, _) in &rows {
        check_row(label, cells);
    }
}
