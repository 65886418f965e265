//! The eval's own overhead (§18 acceptance): the shipped corpus (`evals/corpus`) replayed,
//! scored and reported with an instant scripted advisor (the known advisor of EV9, silent),
//! `--jobs 4`, so what is measured is the runtime, the workspace copies, the scoring and the
//! reports, never a model. Goal: the whole corpus in under 10 s wall on 2 cores.
//!
//! 1. Criterion times one whole corpus run (group `eval corpus`, `jobs 4`).
//! 2. The peak RSS of a case: each case is run alone in a child process (this benchmark's
//!    own executable, told which case by `EVAL_OVERHEAD_CASE`), which prints its peak
//!    resident set (`VmHWM` from `/proc/self/status`); a child given no case gives the
//!    process's own baseline. The summary line gives the mean and the largest.
//!
//! Run with `cargo bench --bench eval_overhead`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use advisor::replay::eval::corpus::{check_corpus, Case};
use advisor::replay::eval::report::RunMeta;
use advisor::replay::eval::run::{EvalOptions, EvalRunner};
use advisor::replay::eval::score_records;
use advisor::replay::eval::testing::ScriptedPreparer;
use advisor::settings::DeliveryPolicy;
use advisor::{AdvisorRuntime, RuntimeOptions};
use criterion::{black_box, Criterion};

/// The variable that makes this executable a child running one case (empty: none).
const CHILD: &str = "EVAL_OVERHEAD_CASE";

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("evals/corpus")
}

/// One run of `cases` as `advisor eval` makes it: replay, scoring, the three reports.
/// Answers the size of the reports, so nothing is optimised away.
fn run_corpus(cases: &[Case], jobs: usize) -> usize {
    let preparer = Arc::new(
        ScriptedPreparer::new(HashMap::new(), DeliveryPolicy::Defer).expect("the catalog"),
    );
    let runtime = AdvisorRuntime::new(RuntimeOptions::default()).expect("a runtime");
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let options = EvalOptions {
        jobs,
        case_timeout: Duration::from_secs(600),
        ..EvalOptions::default()
    };
    let records = tokio.block_on(EvalRunner::new(&runtime, preparer, options).run(
        cases,
        |_| {},
        std::future::pending(),
    ));
    assert_eq!(records.runs.len(), cases.len(), "every case ran");
    let results = score_records(cases, &records, RunMeta::default());
    results.json_lines().len() + results.markdown().len() + results.table().len()
}

/// The process's peak resident set (`VmHWM`), in KiB; `None` without procfs.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The child: runs case `id` (none when empty) alone and prints its peak RSS in KiB.
fn child(corpus: &Path, id: &str) {
    let cases: Vec<Case> = check_corpus(corpus)
        .expect("the corpus")
        .cases
        .into_iter()
        .filter(|c| c.spec.id == id)
        .collect();
    if !cases.is_empty() {
        black_box(run_corpus(&cases, 1));
    }
    println!("{}", peak_rss_kib().unwrap_or(0));
}

/// Runs case `id` in a child process and answers its peak RSS in KiB.
fn child_peak(id: &str) -> u64 {
    let exe = std::env::current_exe().expect("this executable");
    let out = Command::new(exe)
        .env(CHILD, id)
        .output()
        .expect("the child runs");
    assert!(
        out.status.success(),
        "{id}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a KiB figure")
}

fn main() {
    let corpus = corpus_dir();
    if let Ok(id) = std::env::var(CHILD) {
        child(&corpus, &id);
        return;
    }
    let cases = check_corpus(&corpus).expect("the corpus").cases;
    let mut c = Criterion::default().configure_from_args();
    {
        let mut group = c.benchmark_group("eval corpus");
        group
            .sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(20));
        group.bench_function(format!("{} cases, jobs 4", cases.len()), |b| {
            b.iter(|| black_box(run_corpus(&cases, 4)))
        });
        group.finish();
    }
    c.final_summary();

    let started = Instant::now();
    black_box(run_corpus(&cases, 4));
    let wall = started.elapsed().as_secs_f64();
    let baseline = child_peak("");
    let mut peaks: Vec<(u64, String)> = cases
        .iter()
        .map(|c| (child_peak(&c.spec.id), c.spec.id.clone()))
        .collect();
    peaks.sort();
    let mean = peaks.iter().map(|(k, _)| k).sum::<u64>() / peaks.len().max(1) as u64;
    let (max, max_id) = peaks.last().cloned().unwrap_or_default();
    println!(
        "eval overhead: {} cases, jobs 4, {} cores: {wall:.2} s wall ({:.0} ms a case); \
         peak RSS of one case alone: mean {mean} KiB, max {max} KiB ({max_id}); \
         the process with no case: {baseline} KiB",
        cases.len(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        wall * 1000.0 / cases.len().max(1) as f64,
    );
}
