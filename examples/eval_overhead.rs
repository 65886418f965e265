//! The eval's own overhead (§18): a corpus replayed, scored and reported with an instant
//! scripted advisor (the known advisor, silent), so what is measured is the runtime, the
//! workspace copies, the scoring and the reports, not a model. `scripts/eval-bench.sh`
//! runs it and reports the wall time and the peak RSS per case:
//!
//! ```text
//! cargo run --release --example eval_overhead -- evals/corpus --jobs 4 [--only CASE-ID]
//! ```
//!
//! It prints one line: `cases N jobs J wall S s per-case MS ms peak-rss KIB KiB`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use advisor::eval::corpus::check_corpus;
use advisor::eval::report::RunMeta;
use advisor::eval::run::{EvalOptions, EvalRunner};
use advisor::eval::score_records;
use advisor::eval::testing::ScriptedPreparer;
use advisor::settings::DeliveryPolicy;
use advisor::{AdvisorRuntime, RuntimeOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let corpus = PathBuf::from(
        args.first()
            .ok_or("usage: eval_overhead CORPUS [--jobs N] [--only ID]")?,
    );
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let jobs: usize = flag("--jobs").map_or(Ok(4), |j| j.parse())?;
    let started = Instant::now();
    let check = check_corpus(&corpus)?;
    let mut cases = check.cases.clone();
    if let Some(only) = flag("--only") {
        cases.retain(|c| c.spec.id == only);
    }
    let preparer = Arc::new(ScriptedPreparer::new(
        HashMap::new(),
        DeliveryPolicy::Defer,
    )?);
    let runtime = AdvisorRuntime::new(RuntimeOptions::default())?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let options = EvalOptions {
        jobs,
        case_timeout: Duration::from_secs(600),
        ..EvalOptions::default()
    };
    let records = tokio.block_on(EvalRunner::new(&runtime, preparer, options).run(
        &cases,
        |_| {},
        std::future::pending(),
    ));
    let results = score_records(&cases, &records, RunMeta::default());
    let report = results.json_lines().len() + results.markdown().len() + results.table().len();
    let wall = started.elapsed().as_secs_f64();
    let n = cases.len().max(1);
    println!(
        "cases {} jobs {jobs} wall {wall:.2} s per-case {:.0} ms peak-rss {} KiB (report {report} bytes)",
        cases.len(),
        wall * 1000.0 / n as f64,
        peak_rss_kib()
    );
    Ok(())
}

/// The process's peak resident set (`VmHWM`), in KiB; 0 where /proc is not there.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
