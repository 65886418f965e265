//! What the advisor costs a host's run: the same scripted primary run of five turns (four
//! shell calls and a closing answer) on the real Claude Code and Codex CLIs, with the
//! advisor's hooks installed (its model scripted to answer at once with nothing to say) and
//! without, alternating, timed from spawn to exit. The budget: a run with the advisor on is
//! no slower than with it off except for delivered notes, and here none is delivered (every
//! hook answered empty, checked from the hook log). A measurement, not a check: `#[ignore]`d,
//! it prints its figures (docs/HOSTS.md, "What the advisor costs a run"):
//! `cargo test -p advisor --test all hosts_overhead -- --ignored --nocapture`.

use std::time::Duration;

use crate::support::hosts::{script, AdvisorModel, Harness, Host, Step};

/// Runs per side.
const RUNS: usize = 10;
/// How long one CLI run may take.
const RUN_LIMIT: Duration = Duration::from_secs(120);
const PROMPT: &str = "Write the four files, then stop.";

fn steps() -> Vec<Step> {
    let mut steps: Vec<Step> = (1..=4)
        .map(|n| Step::shell(&format!("echo {n} > f{n}.txt")))
        .collect();
    steps.push(Step::text("Done: four files written."));
    steps
}

/// The median and the 90th percentile (nearest rank) of `walls`, in milliseconds.
fn median_p90(walls: &[Duration]) -> (f64, f64) {
    let mut ms: Vec<f64> = walls.iter().map(|w| w.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let rank = |q: f64| ms[((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
    let median = if ms.len().is_multiple_of(2) {
        (ms[ms.len() / 2 - 1] + ms[ms.len() / 2]) / 2.0
    } else {
        ms[ms.len() / 2]
    };
    (median, rank(0.9))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Measures `host`: prints the figures; `None` when the CLIs cannot be installed here.
fn measure(host: Host) -> Option<()> {
    let off = Harness::new()?;
    let mut on = Harness::new()?;
    let advisor = AdvisorModel::start(&on.rt, on.marks(), false);
    on.attach_advisor(host, &advisor, "advisor:\n  enabled: true\n");
    let primary_off = off.primary(host, script(host, steps()));
    let primary_on = on.primary(host, script(host, steps()));
    let run = |h: &Harness, primary| {
        let out = h.run(host, primary, PROMPT, &[], RUN_LIMIT);
        out.assert_ok(host.name());
        out.wall
    };
    // One run each first, not counted: the first run with the advisor starts its
    // background process (H4), a cost paid once per user, not per run.
    let cold = run(&on, &primary_on);
    run(&off, &primary_off);
    // The cold run's first hook found no process yet (`daemon-down`): left out.
    let counted_from = on.hook_events().len();
    let load_before = loadavg();
    let (mut walls_on, mut walls_off) = (Vec::new(), Vec::new());
    for i in 0..RUNS {
        if i.is_multiple_of(2) {
            walls_off.push(run(&off, &primary_off));
            walls_on.push(run(&on, &primary_on));
        } else {
            walls_on.push(run(&on, &primary_on));
            walls_off.push(run(&off, &primary_off));
        }
    }
    let events: Vec<serde_json::Value> = on.hook_events().split_off(counted_from);
    let outcome = |e: &serde_json::Value| e["outcome"].as_str().unwrap_or("?").to_string();
    let delivered: Vec<String> = events
        .iter()
        .map(outcome)
        .filter(|o| o != "empty")
        .collect();
    assert!(
        !events.is_empty(),
        "{}: the advisor's hooks ran",
        host.name()
    );
    assert_eq!(
        delivered,
        Vec::<String>::new(),
        "{}: every hook answered empty",
        host.name()
    );
    let mut hook_ms: Vec<Duration> = events
        .iter()
        .filter_map(|e| e["ms"].as_u64().map(Duration::from_millis))
        .collect();
    hook_ms.sort();
    let (off_median, off_p90) = median_p90(&walls_off);
    let (on_median, on_p90) = median_p90(&walls_on);
    let (hook_median, hook_p90) = median_p90(&hook_ms);
    eprintln!(
        "{host}: {RUNS} runs each, alternating; off median {off_median:.0} ms p90 {off_p90:.0} ms; \
         on median {on_median:.0} ms p90 {on_p90:.0} ms; ratio on/off median {:.3} p90 {:.3}; \
         {} hook calls ({:.1} per run) answered in median {hook_median:.0} ms p90 {hook_p90:.0} ms; \
         first run with the advisor (starts its process) {} ms; load {load_before} before, {} after",
        on_median / off_median,
        on_p90 / off_p90,
        events.len(),
        events.len() as f64 / RUNS as f64,
        cold.as_millis(),
        loadavg(),
        host = host.name(),
    );
    Some(())
}

#[test]
#[ignore = "a measurement: runs each real CLI 22 times; prints the figures"]
fn hosts_overhead_claude_code_with_and_without_the_advisor() {
    if measure(Host::ClaudeCode).is_none() {
        eprintln!("skipped: the host CLIs are not installed here");
    }
}

#[test]
#[ignore = "a measurement: runs each real CLI 22 times; prints the figures"]
fn hosts_overhead_codex_with_and_without_the_advisor() {
    if measure(Host::Codex).is_none() {
        eprintln!("skipped: the host CLIs are not installed here");
    }
}
