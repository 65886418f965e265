//! Issue 11's measurements (SPEC A6): many sessions in one process.
//!
//! One run, three parts, figures printed as they come:
//! 1. **idle**: 10,000 sessions opened on one shared runtime: wall time to open them (the
//!    `open` calls, then until every session answers a status query), resident memory per
//!    session (RSS delta / sessions, from `/proc/self/statm`), OS threads before and after
//!    (`Threads:` in `/proc/self/status`); then all disposed, and RSS again.
//! 2. **shared**: 1,000 sessions × 10 turns, `syncBacklog: off`, against an in-process
//!    OpenAI-compatible server (HTTP/1.1 keep-alive) that answers at once, with one
//!    `advise` every fifth review: turns per second, `turn_end` latency p50 / p99 / max as
//!    the host sees it (and that of the `step_boundary` each host makes right after), the most requests the server saw at once (the limit is 16), and
//!    the D10 check (every advise the server sent is delivered, held or dropped).
//! 3. **dedicated**: the same load through `AdvisorHandle::spawn_dedicated` (a thread and
//!    an actix system per session, each with its own HTTP client, as `spawn` was before
//!    A6), as the baseline.
//!
//! Run with `cargo bench --bench sessions`. `SESSIONS_IDLE` and `SESSIONS_LOAD` (numbers)
//! scale the two workloads down for a quick look; `SESSIONS_BASELINE=0` leaves out the
//! dedicated runs, so a profiler sees the shared runtime alone.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use advisor::domain::host::HostEvent;
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::ModelClient;
use advisor::providers::{client_for, resolve_config, ApiKind, ModelSpec};
use advisor::settings::SyncBacklog;
use advisor::{AdvisorHandle, RuntimeConfig};
use advisor::{AdvisorRuntime, RuntimeOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::UnboundedReceiver;

const TURNS: usize = 10;
const LIMIT: usize = 16;

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// OS threads of this process.
fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Threads:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Resident memory in bytes.
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

// ---------------------------------------------------------------------------------------
// The in-process OpenAI-compatible server.

#[derive(Default)]
struct ServerStats {
    now: AtomicUsize,
    most: AtomicUsize,
    requests: AtomicU64,
    reviews: AtomicU64,
    advises: AtomicU64,
}

impl ServerStats {
    fn reset(&self) {
        for a in [&self.requests, &self.reviews, &self.advises] {
            a.store(0, Ordering::SeqCst);
        }
        self.most.store(0, Ordering::SeqCst);
    }
}

async fn serve_forever(listener: TcpListener, stats: Arc<ServerStats>) {
    while let Ok((socket, _)) = listener.accept().await {
        let _ = socket.set_nodelay(true);
        tokio::spawn(connection(socket, Arc::clone(&stats)));
    }
}

/// One keep-alive connection: request after request until the client closes it.
async fn connection(mut socket: TcpStream, stats: Arc<ServerStats>) {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut tmp = vec![0u8; 64 * 1024];
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            match socket.read(&mut tmp).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let start = head_end + 4;
        while buf.len() < start + length {
            match socket.read(&mut tmp).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        }
        let body: Value =
            serde_json::from_slice(&buf[start..start + length]).unwrap_or(Value::Null);
        buf.drain(..start + length);
        let n = stats.now.fetch_add(1, Ordering::SeqCst) + 1;
        stats.most.fetch_max(n, Ordering::SeqCst);
        stats.requests.fetch_add(1, Ordering::SeqCst);
        let reply = answer(&body, &stats);
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{reply}",
            reply.len()
        );
        let written = socket.write_all(response.as_bytes()).await;
        stats.now.fetch_sub(1, Ordering::SeqCst);
        if written.is_err() {
            return;
        }
    }
}

fn sse(chunk: Value) -> String {
    format!("data: {chunk}\n\n")
}

/// A silent answer, or (every fifth review) one `advise` call; after a tool result, a
/// silent answer ends the review.
fn answer(body: &Value, stats: &ServerStats) -> String {
    let after_tool = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    let usage = sse(
        json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}}),
    );
    let advise = !after_tool
        && stats
            .reviews
            .fetch_add(1, Ordering::SeqCst)
            .is_multiple_of(5);
    let first = if advise {
        let n = stats.advises.fetch_add(1, Ordering::SeqCst);
        let args = json!({"note": format!("Check case {n} of the parser."), "severity": "nit"});
        sse(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": format!("call_{n}"), "type": "function", "function": {"name": "advise", "arguments": args.to_string()}}]}, "finish_reason": "tool_calls"}]}),
        )
    } else {
        sse(
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"}]}),
        )
    };
    format!("{first}{usage}data: [DONE]\n\n")
}

// ---------------------------------------------------------------------------------------
// Sessions.

fn spec(base_url: &str) -> ModelSpec {
    ModelSpec {
        role: Some("local/bench-model:off".into()),
        base_url: Some(base_url.into()),
        api: Some(ApiKind::OpenAiCompletions),
        ..ModelSpec::default()
    }
}

fn config(i: usize, model: Arc<dyn ModelClient>) -> RuntimeConfig {
    let mut cfg = RuntimeConfig::new(format!("session-{i}"), std::env::temp_dir(), Some(model));
    cfg.settings.sync_backlog = SyncBacklog::Off;
    cfg.settings.max_concurrent_reviews = LIMIT;
    cfg
}

async fn closed(mut events: UnboundedReceiver<HostEvent>) {
    while events.recv().await.is_some() {}
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn idle(runtime: &AdvisorRuntime, sessions: usize, base_url: &str) {
    let model = runtime
        .shared()
        .build_client(&spec(base_url), &|_| None)
        .expect("client");
    // Warm up: first use of every lazily built piece (limits, allocator arenas).
    let (h, e) = runtime.open(config(0, model.clone()));
    h.status().await.expect("warm-up session answers");
    h.dispose().await.expect("dispose");
    drop(h);
    closed(e).await;

    let threads_before = threads();
    let rss_before = rss();
    let started = Instant::now();
    let mut open = Vec::with_capacity(sessions);
    for i in 0..sessions {
        open.push(runtime.open(config(i, model.clone())));
    }
    let opened = started.elapsed();
    let answers = futures_util::future::join_all(open.iter().map(|(h, _)| h.status())).await;
    let answering = started.elapsed();
    assert!(answers.iter().all(Result::is_ok), "every session answers");
    drop(answers);
    let rss_after = rss();
    let threads_after = threads();
    println!(
        "idle: {sessions} sessions on {} arbiters",
        runtime.arbiters()
    );
    println!(
        "  open: {:.0} ms for the open() calls, {:.0} ms until every session answered",
        ms(opened),
        ms(answering)
    );
    println!(
        "  memory: RSS {:.1} MB -> {:.1} MB, {:.1} KB per session",
        rss_before as f64 / 1e6,
        rss_after as f64 / 1e6,
        (rss_after.saturating_sub(rss_before)) as f64 / sessions as f64 / 1024.0
    );
    println!("  threads: {threads_before} before, {threads_after} after");
    let started = Instant::now();
    for (h, _) in &open {
        h.dispose().await.expect("dispose");
    }
    let mut receivers = Vec::with_capacity(sessions);
    for (h, e) in open {
        drop(h);
        receivers.push(e);
    }
    for e in receivers {
        closed(e).await;
    }
    println!(
        "  close: {:.0} ms to dispose all; RSS after: {:.1} MB ({} sessions still open)",
        ms(started.elapsed()),
        rss() as f64 / 1e6,
        runtime.sessions()
    );
}

/// Opens and closes `sessions` sessions `rounds` times and prints RSS after each round: a
/// session that leaked would make it grow round after round (freed memory stays with the
/// allocator, so the first round's peak is the plateau).
async fn churn(runtime: &AdvisorRuntime, sessions: usize, rounds: usize, base_url: &str) {
    let model = runtime
        .shared()
        .build_client(&spec(base_url), &|_| None)
        .expect("client");
    let mut after = Vec::new();
    for _ in 0..rounds {
        let open: Vec<_> = (0..sessions)
            .map(|i| runtime.open(config(i, model.clone())))
            .collect();
        for (h, _) in &open {
            h.dispose().await.expect("dispose");
        }
        for (h, e) in open {
            drop(h);
            closed(e).await;
        }
        after.push(format!("{:.1}", rss() as f64 / 1e6));
    }
    println!(
        "  churn: {rounds} more rounds of {sessions} open + close, RSS after each (MB): {}",
        after.join(", ")
    );
}

struct LoadFigures {
    seconds: f64,
    latencies: Vec<Duration>,
    /// `step_boundary` latencies (the call right after each turn end).
    steps: Vec<Duration>,
    most: usize,
    advises: u64,
    accounted: u64,
    backlog: usize,
    dropped_turns: u64,
    failures: u64,
    reviews: u64,
    threads: usize,
}

/// Drives every session through [`TURNS`] turns. With `pace`, each session ends a turn
/// every `pace` (start times spread evenly over one `pace`), like agents whose turns take
/// time; without, every session goes as fast as it can (a saturation run).
async fn drive(
    handles: Vec<(AdvisorHandle, UnboundedReceiver<HostEvent>)>,
    stats: &Arc<ServerStats>,
    pace: Option<Duration>,
) -> LoadFigures {
    // Every session up and answering first, so the figures are turns, not start-up.
    let ready = futures_util::future::join_all(handles.iter().map(|(h, _)| h.status())).await;
    assert!(ready.iter().all(Result::is_ok), "every session answers");
    let started = Instant::now();
    let count = handles.len().max(1) as u32;
    let mut tasks = Vec::new();
    for (i, (handle, _events)) in handles.iter().enumerate() {
        let handle = handle.clone();
        let offset = pace.map(|p| p * i as u32 / count);
        tasks.push(tokio::spawn(async move {
            let transcript = Transcript::from_messages([TranscriptMessage::user("Fix the parser")]);
            let mut latencies = Vec::with_capacity(TURNS);
            let mut steps = Vec::with_capacity(TURNS);
            for turn in 0..TURNS {
                if let (Some(pace), Some(offset)) = (pace, offset) {
                    let at = started + offset + pace * turn as u32;
                    tokio::time::sleep_until(at.into()).await;
                }
                transcript.push(TranscriptMessage::user(format!("step {turn}: keep going")));
                let t = Instant::now();
                handle.turn_end(&transcript).await.expect("turn_end");
                latencies.push(t.elapsed());
                let t = Instant::now();
                handle.step_boundary().await.expect("step boundary");
                steps.push(t.elapsed());
                tokio::task::yield_now().await;
            }
            (latencies, steps)
        }));
    }
    let mut latencies = Vec::with_capacity(handles.len() * TURNS);
    let mut steps = Vec::with_capacity(handles.len() * TURNS);
    for task in tasks {
        let (turn_ends, step_boundaries) = task.await.expect("host task");
        latencies.extend(turn_ends);
        steps.extend(step_boundaries);
    }
    // Until every turn is reviewed.
    let mut pending: Vec<&AdvisorHandle> = handles.iter().map(|(h, _)| h).collect();
    while !pending.is_empty() {
        let statuses = futures_util::future::join_all(pending.iter().map(|h| h.status())).await;
        let mut still = Vec::new();
        for (h, s) in pending.into_iter().zip(statuses) {
            if s.map_or(true, |s| s.agent.backlog > 0) {
                still.push(h);
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let threads = threads();
    let mut figures = LoadFigures {
        seconds,
        latencies,
        steps,
        most: stats.most.load(Ordering::SeqCst),
        advises: stats.advises.load(Ordering::SeqCst),
        accounted: 0,
        backlog: 0,
        dropped_turns: 0,
        failures: 0,
        reviews: 0,
        threads,
    };
    for (h, _) in &handles {
        // Take what is still queued so every note is delivered or dropped.
        h.step_boundary().await.expect("last step boundary");
        let s = h.status().await.expect("status");
        let d = &s.deliveries;
        figures.accounted += d.delivered() + d.held + d.dropped_total();
        figures.backlog += s.agent.backlog;
        figures.dropped_turns += s.agent.dropped_turns;
        figures.failures += s.failures;
        figures.reviews += s.agent.reviews;
    }
    let mut receivers = Vec::new();
    for (h, e) in handles {
        h.dispose().await.expect("dispose");
        drop(h);
        receivers.push(e);
    }
    drop(receivers);
    figures
}

fn report(name: &str, sessions: usize, pace: Option<Duration>, f: &mut LoadFigures) {
    f.latencies.sort_unstable();
    f.steps.sort_unstable();
    let turns = f.latencies.len();
    let how = match pace {
        Some(p) => format!("one turn per {} ms per session", p.as_millis()),
        None => "as fast as possible".to_string(),
    };
    println!("{name}: {sessions} sessions x {TURNS} turns, syncBacklog off, {how}");
    println!(
        "  {turns} turns in {:.2} s until all reviewed: {:.0} turns/s; {} reviews",
        f.seconds,
        turns as f64 / f.seconds,
        f.reviews
    );
    println!(
        "  turn_end latency: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        ms(percentile(&f.latencies, 0.50)),
        ms(percentile(&f.latencies, 0.99)),
        ms(*f.latencies.last().unwrap_or(&Duration::ZERO))
    );
    println!(
        "  step_boundary latency: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        ms(percentile(&f.steps, 0.50)),
        ms(percentile(&f.steps, 0.99)),
        ms(*f.steps.last().unwrap_or(&Duration::ZERO))
    );
    println!(
        "  server: at most {} requests at once (limit {LIMIT}); threads during the run: {}",
        f.most, f.threads
    );
    println!(
        "  D10: {} advise calls sent, {} accounted (delivered/held/dropped); backlog left {}, turns dropped {}, failures {}",
        f.advises, f.accounted, f.backlog, f.dropped_turns, f.failures
    );
}

/// The figures are only worth printing when the run was faithful: every turn reviewed,
/// every advise the server sent accounted for (D10), and the shared runtime's call limit
/// never exceeded (A6). A run that breaks one of these stops the bench.
fn check(name: &str, f: &LoadFigures, limit: Option<usize>) {
    assert_eq!(f.backlog, 0, "{name}: turns left unreviewed");
    assert_eq!(f.dropped_turns, 0, "{name}: turns dropped");
    assert_eq!(f.failures, 0, "{name}: failed reviews");
    assert_eq!(f.accounted, f.advises, "{name}: D10 totals do not add up");
    if let Some(limit) = limit {
        assert!(
            f.most <= limit,
            "{name}: the server saw {} requests at once, over the limit {limit}",
            f.most
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let idle_sessions = env_count("SESSIONS_IDLE", 10_000);
    let load_sessions = env_count("SESSIONS_LOAD", 1_000);
    let threads_at_start = threads();
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let base_url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let stats = Arc::new(ServerStats::default());
    tokio::spawn(serve_forever(listener, Arc::clone(&stats)));

    let defaults = RuntimeOptions::default();
    let runtime = AdvisorRuntime::new(RuntimeOptions {
        call_threads: env_count("SESSIONS_CALL_THREADS", defaults.call_threads),
        ..defaults
    })
    .expect("runtime");
    println!(
        "threads: {threads_at_start} at start (host runtime), {} with the shared runtime",
        threads()
    );
    idle(&runtime, idle_sessions, &base_url).await;
    churn(&runtime, idle_sessions, 3, &base_url).await;

    let pace = Duration::from_millis(env_count("SESSIONS_PACE_MS", 500) as u64);
    // SESSIONS_BASELINE=0 runs the shared runtime alone (for profiling it).
    let baseline = env_count("SESSIONS_BASELINE", 1) != 0;
    let mut figures = Vec::new();
    for pace in [None, Some(pace)] {
        // Shared runtime under load.
        stats.reset();
        let model = runtime
            .shared()
            .build_client(&spec(&base_url), &|_| None)
            .expect("client");
        let handles: Vec<_> = (0..load_sessions)
            .map(|i| runtime.open(config(i, model.clone())))
            .collect();
        let mut shared = drive(handles, &stats, pace).await;
        report("shared runtime", load_sessions, pace, &mut shared);
        check("shared runtime", &shared, Some(LIMIT));

        if !baseline {
            continue;
        }
        // Baseline: a thread, a system and an HTTP client per session.
        stats.reset();
        let mut handles = Vec::with_capacity(load_sessions);
        for i in 0..load_sessions {
            let own = resolve_config(
                &spec(&base_url),
                &advisor::providers::Catalog::empty(),
                &|_| None,
            )
            .and_then(client_for)
            .expect("client");
            handles.push(
                AdvisorHandle::spawn_dedicated(config(i, own))
                    .await
                    .expect("spawn"),
            );
        }
        let mut dedicated = drive(handles, &stats, pace).await;
        report(
            "dedicated threads (baseline)",
            load_sessions,
            pace,
            &mut dedicated,
        );
        // Each dedicated session has a call limit of its own: no process-wide bound.
        check("dedicated threads", &dedicated, None);
        figures.push((shared, dedicated));
    }
    let p99 = |l: &[Duration]| ms(percentile(l, 0.99));
    let rate = |f: &LoadFigures| f.latencies.len() as f64 / f.seconds;
    for (name, (shared, dedicated)) in ["as fast as possible", "paced"].iter().zip(&figures) {
        println!(
            "ratio shared / dedicated ({name}): turns/s x{:.2}, turn_end p99 x{:.4}, step_boundary p99 x{:.3}",
            rate(shared) / rate(dedicated),
            p99(&shared.latencies) / p99(&dedicated.latencies).max(1e-9),
            p99(&shared.steps) / p99(&dedicated.steps).max(1e-9)
        );
    }
}
