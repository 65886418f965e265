//! What the advisor costs a host's run: the same scripted primary run of five turns (four
//! shell calls and a closing answer) on the real Claude Code and Codex CLIs, with the
//! advisor's hooks installed (its model scripted to answer at once with nothing to say),
//! without any hook, and with hooks that run `true` on the same events (the floor: what the
//! CLI itself spends on calling a hook that does nothing), in turn, timed from spawn to exit;
//! once with a primary model that answers at once, once with one that takes a second per
//! answer (as a real model's turn takes seconds). The budget: a run with the advisor on is
//! no slower than with it off except for delivered notes, and here none is delivered (every
//! hook answered empty, checked from the hook log). A measurement, not a check: `#[ignore]`d,
//! it prints its figures (docs/HOSTS.md, "What the advisor costs a run"):
//! `cargo test -p advisor --test all hosts_overhead -- --ignored --nocapture`.

use std::time::Duration;

use crate::support::hosts::{script, AdvisorModel, Harness, Host, Step};

/// The hooks file `advisor install <host> --user` writes to in `h`.
fn user_hooks_file(h: &Harness, host: Host) -> std::path::PathBuf {
    match host {
        Host::ClaudeCode => h.scratch.home.join(".claude/settings.json"),
        Host::Codex => h.scratch.codex_home().join("hooks.json"),
    }
}

/// Gives `floor` the hook entries installed in `on`, each running `true` instead.
fn copy_hooks_running_true(on: &Harness, floor: &Harness, host: Host) {
    let text = std::fs::read_to_string(user_hooks_file(on, host)).expect("installed hooks");
    let mut doc: serde_json::Value = serde_json::from_str(&text).expect("hooks JSON");
    let events = doc["hooks"].as_object_mut().expect("a hooks object");
    for groups in events.values_mut() {
        for group in groups.as_array_mut().into_iter().flatten() {
            for hook in group["hooks"].as_array_mut().into_iter().flatten() {
                hook["command"] = "true".into();
            }
        }
    }
    let path = user_hooks_file(floor, host);
    std::fs::create_dir_all(path.parent().expect("a directory")).expect("mkdir");
    std::fs::write(path, doc.to_string()).expect("write the floor's hooks");
}

/// Runs per side with an instant model.
const RUNS: usize = 10;
/// Runs per side with a model that takes a second per answer.
const PACED_RUNS: usize = 4;
/// The answer time of the paced model: a real model's turn takes one to several seconds.
const PACED: Duration = Duration::from_secs(1);
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

/// The CPU time the processes `pids` have used so far (user and system, every thread), in
/// milliseconds, from /proc (clock ticks of 10 ms).
fn cpu_ms(pids: &[u32]) -> f64 {
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|stat| {
            // The fields after the command's closing parenthesis; utime and stime are the
            // 12th and 13th of them.
            let rest = stat.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let ticks =
                fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
            Some(ticks as f64 * 10.0)
        })
        .sum()
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Measures `host` with a primary model whose every answer takes `pause`, `runs` runs a
/// side: prints the figures; `None` when the CLIs cannot be installed here.
fn measure(host: Host, pause: Duration, runs: usize) -> Option<()> {
    let mut off = Harness::new()?;
    let mut floor = Harness::new()?;
    let mut on = Harness::new()?;
    let advisor = AdvisorModel::start(&on.rt, on.marks(), false);
    on.attach_advisor(host, &advisor, "advisor:\n  enabled: true\n");
    copy_hooks_running_true(&on, &floor, host);
    // The same environment on every side (the advisor's key and model among it), so the
    // sides differ by their hooks alone.
    off.env = on.env.clone();
    floor.env = on.env.clone();
    let sides = [&off, &floor, &on];
    let primaries: Vec<_> = sides
        .iter()
        .map(|h| h.paced_primary(host, script(host, steps()), pause))
        .collect();
    let run = |side: usize| {
        let out = sides[side].run(host, &primaries[side], PROMPT, &[], RUN_LIMIT);
        out.assert_ok(host.name());
        out.wall
    };
    // One run each first, not counted: the first run with the advisor starts its
    // background process (H4), a cost paid once per user, not per run.
    let cold = run(2);
    run(0);
    run(1);
    // The cold run's first hook found no process yet (`daemon-down`): left out.
    let counted_from = on.hook_events().len();
    let daemons = on.daemons();
    let cpu_before = cpu_ms(&daemons);
    let load_before = loadavg();
    let mut walls: [Vec<Duration>; 3] = Default::default();
    for i in 0..runs {
        // Each side goes first, second and third in turn.
        for k in 0..3 {
            let side = (i + k) % 3;
            walls[side].push(run(side));
        }
    }
    let daemon_cpu = (cpu_ms(&daemons) - cpu_before) / runs as f64;
    let events: Vec<serde_json::Value> = on.hook_events().split_off(counted_from);
    check_nothing_delivered(host, &events);
    let mut hook_ms: Vec<Duration> = events
        .iter()
        .filter_map(|e| e["ms"].as_u64().map(Duration::from_millis))
        .collect();
    hook_ms.sort();
    let [off_w, floor_w, on_w] = walls.map(|w| median_p90(&w));
    let (hook_median, hook_p90) = median_p90(&hook_ms);
    eprintln!(
        "{host}, model answers in {} ms: {runs} runs each, in turn; off median {:.0} ms p90 {:.0} ms; \
         hooks running `true` median {:.0} ms p90 {:.0} ms; \
         advisor on median {:.0} ms p90 {:.0} ms; ratio on/off median {:.3} p90 {:.3}; \
         floor/off median {:.3}; on/floor median {:.3}; \
         {} hook calls ({:.1} per run) answered in median {hook_median:.0} ms p90 {hook_p90:.0} ms; \
         the background process used {daemon_cpu:.0} ms of CPU per run; \
         first run with the advisor (starts its process) {} ms; load {load_before} before, {} after",
        pause.as_millis(),
        off_w.0,
        off_w.1,
        floor_w.0,
        floor_w.1,
        on_w.0,
        on_w.1,
        on_w.0 / off_w.0,
        on_w.1 / off_w.1,
        floor_w.0 / off_w.0,
        on_w.0 / floor_w.0,
        events.len(),
        events.len() as f64 / runs as f64,
        cold.as_millis(),
        loadavg(),
        host = host.name(),
    );
    Some(())
}

/// The hooks ran and every one answered empty: nothing was delivered to the agent.
fn check_nothing_delivered(host: Host, events: &[serde_json::Value]) {
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
}

#[test]
#[ignore = "a measurement: runs each real CLI 33 times; prints the figures"]
fn hosts_overhead_claude_code_with_and_without_the_advisor() {
    if measure(Host::ClaudeCode, Duration::ZERO, RUNS).is_none() {
        eprintln!("skipped: the host CLIs are not installed here");
    }
}

#[test]
#[ignore = "a measurement: runs each real CLI 33 times; prints the figures"]
fn hosts_overhead_codex_with_and_without_the_advisor() {
    if measure(Host::Codex, Duration::ZERO, RUNS).is_none() {
        eprintln!("skipped: the host CLIs are not installed here");
    }
}

#[test]
#[ignore = "a measurement: 15 runs of each real CLI on a model answering in 1 s"]
fn hosts_overhead_paced_claude_code_with_and_without_the_advisor() {
    if measure(Host::ClaudeCode, PACED, PACED_RUNS).is_none() {
        eprintln!("skipped: the host CLIs are not installed here");
    }
}

#[test]
#[ignore = "a measurement: 15 runs of each real CLI on a model answering in 1 s"]
fn hosts_overhead_paced_codex_with_and_without_the_advisor() {
    if measure(Host::Codex, PACED, PACED_RUNS).is_none() {
        eprintln!("skipped: the host CLIs are not installed here");
    }
}
