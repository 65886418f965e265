//! Many sessions in one process (SPEC A6): what each costs and what they share.
//!
//! One run, three parts, figures printed as they come:
//! 1. **idle**: 10,000 sessions opened on one shared runtime: wall time to open them (the
//!    `open` calls, then until every session answers a status query), heap per session
//!    (live heap bytes, counted by this binary's allocator, over sessions) and resident
//!    memory per session (RSS delta / sessions, from `/proc/self/statm`; only the first part
//!    run shows it fully, later ones reuse pages freed before), OS threads before and after
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
//! Parts 1 and 2 run twice in the same run: with today's single unnamed advisor, and with a
//! roster of three named advisors per session given in code (RO24): `architecture` and
//! `security` review every update, `migrations` only updates whose tool calls touched
//! `migrations/**` (RO17; every third turn edits a migration, the others `src/parser.rs`).
//! With the roster the idle figures add the memory per advisor, and the load checks, per
//! advisor, that every turn reached it (the server reads the turn markers in what each
//! advisor was sent; `migrations` gets the skipped turns with the next one it reviews, and
//! the last turn touches a migration), that `migrations` reviewed at most the matching
//! updates, and D10 (every advise the server sent that advisor is accounted for in its own
//! counters). The server tells the advisors apart by their instructions.
//!
//! Run with `cargo bench --bench sessions`. `SESSIONS_IDLE` and `SESSIONS_LOAD` (numbers)
//! scale the two workloads down for a quick look; `SESSIONS_BASELINE=0` leaves out the
//! dedicated runs, so a profiler sees the shared runtime alone; `SESSIONS_PACE_MS` sets the
//! paced runs' turn interval (500).

#[path = "../tests/support/heap.rs"]
mod heap;
#[path = "../tests/support/roster.rs"]
mod roster;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use advisor::domain::host::HostEvent;
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::ModelClient;
use advisor::providers::{client_for, resolve_config, ApiKind, ModelSpec};
use advisor::roster::RosterSetup;
use advisor::settings::SyncBacklog;
use advisor::{AdvisorHandle, AdvisorStatus, RuntimeConfig};
use advisor::{AdvisorRuntime, RuntimeOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::UnboundedReceiver;

/// Counts the live heap, so the idle figures are exact whatever ran before (RSS keeps
/// the pages an earlier part freed, so a later part's RSS growth understates it).
#[global_allocator]
static ALLOCATOR: heap::CountingAllocator = heap::CountingAllocator;

const TURNS: usize = 10;
const LIMIT: usize = 16;
/// Every turn seen, as a bit mask of [`TURNS`] bits.
const ALL_TURNS: u16 = (1 << TURNS) - 1;
/// The provider and model of the bench's advisors.
const PROVIDER: &str = "local";
const MODEL: &str = "bench-model";
/// How the server names requests from the unnamed advisor (no roster).
const UNNAMED: &str = "(unnamed)";

/// The path turn `turn` edits: a migration every third turn, the last turn included, else
/// the parser.
fn edited(turn: usize) -> &'static str {
    if turn.is_multiple_of(3) {
        "migrations/0001_orders.sql"
    } else {
        "src/parser.rs"
    }
}

/// Turns of [`TURNS`] that touch `migrations/**`.
fn migration_turns() -> u64 {
    (0..TURNS).filter(|&t| edited(t) != "src/parser.rs").count() as u64
}

/// The marker of session `session`'s turn `turn` in the user's message, read back by the
/// server.
fn turn_marker(session: usize, turn: usize) -> String {
    format!("[bench s{session} t{turn}]")
}

/// Who reviews each session.
#[derive(Clone)]
enum Advisors {
    /// Today's unnamed advisor (no roster, RO12).
    One,
    /// The three named advisors of [`roster::three`].
    Three(Box<RosterSetup>),
}

impl Advisors {
    fn three(model: &Arc<dyn ModelClient>) -> Self {
        Advisors::Three(Box::new(roster::setup(
            roster::three(PROVIDER, MODEL),
            Arc::clone(model),
        )))
    }

    fn count(&self) -> usize {
        match self {
            Advisors::One => 1,
            Advisors::Three(setup) => setup.roster.advisors.len(),
        }
    }

    fn label(&self) -> String {
        match self {
            Advisors::One => "1 advisor".into(),
            Advisors::Three(setup) => format!("{} advisors", setup.roster.advisors.len()),
        }
    }
}

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
    /// By advisor (its slug, or [`UNNAMED`]).
    advisors: Mutex<BTreeMap<String, AdvisorTraffic>>,
}

/// What the server saw of one advisor.
#[derive(Default, Clone)]
struct AdvisorTraffic {
    /// Requests that start a review (not the answers to its tool calls).
    reviews: u64,
    /// `advise` calls sent to it.
    advises: u64,
    /// By session: the turns whose marker it was sent, as a bit mask.
    seen: HashMap<usize, u16>,
}

impl ServerStats {
    fn reset(&self) {
        for a in [&self.requests, &self.reviews, &self.advises] {
            a.store(0, Ordering::SeqCst);
        }
        self.most.store(0, Ordering::SeqCst);
        self.lock_advisors().clear();
    }

    fn lock_advisors(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, AdvisorTraffic>> {
        self.advisors.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn traffic(&self) -> BTreeMap<String, AdvisorTraffic> {
        self.lock_advisors().clone()
    }
}

/// Every `(session, turn)` marker in `text`.
fn markers(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    text.match_indices("[bench s").filter_map(|(at, _)| {
        let rest = &text[at + "[bench s".len()..];
        let (session, rest) = rest.split_once(" t")?;
        let (turn, _) = rest.split_once(']')?;
        Some((session.parse().ok()?, turn.parse().ok()?))
    })
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
        let raw = &buf[start..start + length];
        let body: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
        let text = String::from_utf8_lossy(raw).into_owned();
        buf.drain(..start + length);
        let n = stats.now.fetch_add(1, Ordering::SeqCst) + 1;
        stats.most.fetch_max(n, Ordering::SeqCst);
        stats.requests.fetch_add(1, Ordering::SeqCst);
        let reply = answer(&body, &text, &stats);
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
/// silent answer ends the review. Each request is counted for the advisor whose
/// instructions are in its system prompt, with the turn markers it carries.
fn answer(body: &Value, text: &str, stats: &ServerStats) -> String {
    let after_tool = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    let system = body["messages"][0].to_string();
    let slug = roster::slug_in(&system).unwrap_or(UNNAMED).to_string();
    let usage = sse(
        json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}}),
    );
    let advise = !after_tool
        && stats
            .reviews
            .fetch_add(1, Ordering::SeqCst)
            .is_multiple_of(5);
    {
        let mut advisors = stats.lock_advisors();
        let traffic = advisors.entry(slug.clone()).or_default();
        if !after_tool {
            traffic.reviews += 1;
        }
        traffic.advises += u64::from(advise);
        for (session, turn) in markers(text) {
            if turn < TURNS {
                *traffic.seen.entry(session).or_default() |= 1 << turn;
            }
        }
    }
    let first = if advise {
        let n = stats.advises.fetch_add(1, Ordering::SeqCst);
        let args =
            json!({"note": format!("{slug}: check case {n} of the parser."), "severity": "nit"});
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

fn config(i: usize, model: Arc<dyn ModelClient>, advisors: &Advisors) -> RuntimeConfig {
    let mut cfg = RuntimeConfig::new(format!("session-{i}"), std::env::temp_dir(), Some(model));
    cfg.settings.sync_backlog = SyncBacklog::Off;
    cfg.settings.max_concurrent_reviews = LIMIT;
    if let Advisors::Three(setup) = advisors {
        cfg.roster = Some(RosterSetup::clone(setup));
    }
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

/// What the idle part measured.
struct IdleFigures {
    /// Until every session answered.
    open: Duration,
    /// Live heap per open session, in bytes.
    per_session: f64,
    threads: (usize, usize),
}

async fn idle(
    runtime: &AdvisorRuntime,
    sessions: usize,
    base_url: &str,
    roster: bool,
) -> IdleFigures {
    let model = runtime
        .shared()
        .build_client(&spec(base_url), &|_| None)
        .expect("client");
    let advisors = if roster {
        Advisors::three(&model)
    } else {
        Advisors::One
    };
    // Warm up: first use of every lazily built piece (limits, allocator arenas).
    let (h, e) = runtime.open(config(0, model.clone(), &advisors));
    h.status().await.expect("warm-up session answers");
    h.dispose().await.expect("dispose");
    drop(h);
    closed(e).await;

    let threads_before = threads();
    let rss_before = rss();
    let heap_before = heap::live();
    let started = Instant::now();
    let mut open = Vec::with_capacity(sessions);
    for i in 0..sessions {
        open.push(runtime.open(config(i, model.clone(), &advisors)));
    }
    let opened = started.elapsed();
    let answers = futures_util::future::join_all(open.iter().map(|(h, _)| h.status())).await;
    let answering = started.elapsed();
    assert!(answers.iter().all(Result::is_ok), "every session answers");
    if let Advisors::Three(_) = advisors {
        let named = answers
            .iter()
            .flatten()
            .filter(|s| s.advisors.len() == advisors.count())
            .count();
        assert_eq!(named, sessions, "every session runs the roster");
    }
    drop(answers);
    let heap_after = heap::live();
    let rss_after = rss();
    let threads_after = threads();
    let per_session = (heap_after - heap_before) as f64 / sessions as f64;
    println!(
        "idle, {}: {sessions} sessions on {} arbiters",
        advisors.label(),
        runtime.arbiters()
    );
    println!(
        "  open: {:.0} ms for the open() calls, {:.0} ms until every session answered",
        ms(opened),
        ms(answering)
    );
    println!(
        "  memory: heap {:.1} KB per session, {:.1} KB per advisor; RSS {:.1} MB -> {:.1} MB, {:.1} KB per session",
        per_session / 1024.0,
        per_session / 1024.0 / advisors.count() as f64,
        rss_before as f64 / 1e6,
        rss_after as f64 / 1e6,
        rss_after.saturating_sub(rss_before) as f64 / sessions as f64 / 1024.0,
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
    assert!(
        threads_after <= threads_before,
        "opening sessions started threads"
    );
    IdleFigures {
        open: answering,
        per_session,
        threads: (threads_before, threads_after),
    }
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
            .map(|i| runtime.open(config(i, model.clone(), &Advisors::One)))
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
    /// Advisors per session.
    advisors: usize,
    /// By advisor (slug, or [`UNNAMED`]): its own counters summed over the sessions.
    named: BTreeMap<String, NamedFigures>,
    /// What the server saw, by advisor.
    traffic: BTreeMap<String, AdvisorTraffic>,
}

/// One advisor's counters summed over every session.
#[derive(Default)]
struct NamedFigures {
    accounted: u64,
    reviews: u64,
    skipped: u64,
    backlog: usize,
    dropped_turns: u64,
}

impl NamedFigures {
    fn add(&mut self, deliveries: &advisor::DeliveryCounts, agent: &advisor::AgentStatus) {
        self.accounted += deliveries.delivered() + deliveries.held + deliveries.dropped_total();
        self.reviews += agent.reviews;
        self.backlog += agent.backlog;
        self.dropped_turns += agent.dropped_turns;
    }
}

/// Whether every advisor of the session has reviewed all it was given.
fn drained(status: &AdvisorStatus) -> bool {
    status.agent.backlog == 0 && status.advisors.iter().all(|a| a.agent.backlog == 0)
}

/// Drives every session through [`TURNS`] turns. With `pace`, each session ends a turn
/// every `pace` (start times spread evenly over one `pace`), like agents whose turns take
/// time; without, every session goes as fast as it can (a saturation run).
async fn drive(
    handles: Vec<(AdvisorHandle, UnboundedReceiver<HostEvent>)>,
    stats: &Arc<ServerStats>,
    pace: Option<Duration>,
    advisors: &Advisors,
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
                let text = format!("{} step {turn}: keep going", turn_marker(i, turn));
                for message in roster::turn(&format!("call-{turn}"), &text, edited(turn)) {
                    transcript.push(message);
                }
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
    // Until every turn is reviewed: each session's drain is awaited (the agents answer when
    // their backlog is empty), not polled — a status poll of every session every few
    // milliseconds asks each of its advisors, so it cost the roster run a share of the CPU
    // the reviews needed. The status loop below only confirms.
    let drains = handles.iter().map(|(h, _)| h.await_drain());
    futures_util::future::join_all(drains).await;
    let mut pending: Vec<&AdvisorHandle> = handles.iter().map(|(h, _)| h).collect();
    while !pending.is_empty() {
        let statuses = futures_util::future::join_all(pending.iter().map(|h| h.status())).await;
        let mut still = Vec::new();
        for (h, s) in pending.into_iter().zip(statuses) {
            if s.map_or(true, |s| !drained(&s)) {
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
        advisors: advisors.count(),
        named: BTreeMap::new(),
        traffic: stats.traffic(),
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
        if s.advisors.is_empty() {
            let one = figures.named.entry(UNNAMED.to_string()).or_default();
            one.add(&s.deliveries, &s.agent);
        }
        for named in &s.advisors {
            let one = figures.named.entry(named.slug.clone()).or_default();
            one.add(&named.deliveries, &named.agent);
            one.skipped += named.skipped_updates;
        }
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
    let name = format!("{name}, {} per session", plural(f.advisors));
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
    for (slug, named) in &f.named {
        let sent = f.traffic.get(slug).cloned().unwrap_or_default();
        println!(
            "  advisor {slug}: {} reviews ({} requests began one), {} updates skipped; D10: {} advise calls sent, {} accounted",
            named.reviews, sent.reviews, named.skipped, sent.advises, named.accounted
        );
    }
}

fn plural(advisors: usize) -> String {
    if advisors == 1 {
        "1 advisor".into()
    } else {
        format!("{advisors} advisors")
    }
}

/// The figures are only worth printing when the run was faithful: every turn reviewed,
/// every advise the server sent accounted for (D10), and the shared runtime's call limit
/// never exceeded (A6). A run that breaks one of these stops the bench.
fn check(name: &str, sessions: usize, f: &LoadFigures, limit: Option<usize>) {
    assert_eq!(f.backlog, 0, "{name}: turns left unreviewed");
    assert_eq!(f.dropped_turns, 0, "{name}: turns dropped");
    assert_eq!(f.failures, 0, "{name}: failed reviews");
    assert_eq!(f.accounted, f.advises, "{name}: D10 totals do not add up");
    assert_eq!(
        f.named.len(),
        f.advisors,
        "{name}: every advisor reports its counters"
    );
    let migrations = migration_turns();
    for (slug, named) in &f.named {
        let sent = f.traffic.get(slug).cloned().unwrap_or_default();
        assert_eq!(named.backlog, 0, "{name}, {slug}: turns left unreviewed");
        assert_eq!(named.dropped_turns, 0, "{name}, {slug}: turns dropped");
        assert_eq!(
            named.accounted, sent.advises,
            "{name}, {slug}: D10 totals of this advisor do not add up"
        );
        // Every turn reached this advisor: reviewed on its own or, for `migrations`,
        // carried into the next update it reviewed (RO17).
        assert_eq!(
            sent.seen.len(),
            sessions,
            "{name}, {slug}: sessions it was sent"
        );
        let holes = sent.seen.values().filter(|&&m| m != ALL_TURNS).count();
        assert_eq!(
            holes, 0,
            "{name}, {slug}: sessions with a turn it never saw"
        );
        if slug == "migrations" {
            let most = migrations * sessions as u64;
            assert!(
                named.reviews <= most && sent.reviews <= most,
                "{name}, {slug}: {} reviews for {most} matching updates",
                named.reviews
            );
            assert!(named.skipped > 0, "{name}, {slug}: no update skipped");
        } else {
            assert_eq!(named.skipped, 0, "{name}, {slug}: updates skipped");
        }
    }
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
    let idle_figures = [
        idle(&runtime, idle_sessions, &base_url, false).await,
        idle(&runtime, idle_sessions, &base_url, true).await,
    ];
    churn(&runtime, idle_sessions, 3, &base_url).await;

    let pace = Duration::from_millis(env_count("SESSIONS_PACE_MS", 500) as u64);
    // SESSIONS_BASELINE=0 runs the shared runtime alone (for profiling it).
    let baseline = env_count("SESSIONS_BASELINE", 1) != 0;
    let mut figures = Vec::new();
    let mut rosters = Vec::new();
    for pace in [None, Some(pace)] {
        // Shared runtime under load: one advisor per session, then three.
        let model = runtime
            .shared()
            .build_client(&spec(&base_url), &|_| None)
            .expect("client");
        let mut shared = Vec::new();
        for advisors in [Advisors::One, Advisors::three(&model)] {
            stats.reset();
            let handles: Vec<_> = (0..load_sessions)
                .map(|i| runtime.open(config(i, model.clone(), &advisors)))
                .collect();
            let mut run = drive(handles, &stats, pace, &advisors).await;
            report("shared runtime", load_sessions, pace, &mut run);
            check("shared runtime", load_sessions, &run, Some(LIMIT));
            shared.push(run);
        }
        let three = shared.pop().expect("the roster run");
        let one = shared.pop().expect("the one-advisor run");
        rosters.push((one, three));

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
                AdvisorHandle::spawn_dedicated(config(i, own, &Advisors::One))
                    .await
                    .expect("spawn"),
            );
        }
        let mut dedicated = drive(handles, &stats, pace, &Advisors::One).await;
        report(
            "dedicated threads (baseline)",
            load_sessions,
            pace,
            &mut dedicated,
        );
        // Each dedicated session has a call limit of its own: no process-wide bound.
        check("dedicated threads", load_sessions, &dedicated, None);
        figures.push(dedicated);
    }
    let p50 = |l: &[Duration]| ms(percentile(l, 0.50));
    let p99 = |l: &[Duration]| ms(percentile(l, 0.99));
    let rate = |f: &LoadFigures| f.latencies.len() as f64 / f.seconds;
    let names = ["as fast as possible", "paced"];
    for (name, ((shared, _), dedicated)) in names.iter().zip(rosters.iter().zip(&figures)) {
        println!(
            "ratio shared / dedicated ({name}): turns/s x{:.2}, turn_end p99 x{:.4}, step_boundary p99 x{:.3}",
            rate(shared) / rate(dedicated),
            p99(&shared.latencies) / p99(&dedicated.latencies).max(1e-9),
            p99(&shared.steps) / p99(&dedicated.steps).max(1e-9)
        );
    }
    // RO24: the roster beside the single advisor, from this run.
    let [one, three] = &idle_figures;
    println!(
        "3 advisors / 1 advisor, idle: heap {:.1} KB -> {:.1} KB per session ({:.1} KB per advisor), open {:.0} -> {:.0} ms, threads {} -> {} and {} -> {}",
        one.per_session / 1024.0,
        three.per_session / 1024.0,
        three.per_session / 1024.0 / 3.0,
        ms(one.open),
        ms(three.open),
        one.threads.0,
        one.threads.1,
        three.threads.0,
        three.threads.1
    );
    for (name, (one, three)) in names.iter().zip(&rosters) {
        let per_turn = |f: &LoadFigures| f.seconds * 1000.0 / f.latencies.len() as f64;
        println!(
            "3 advisors / 1 advisor, load ({name}): {:.0} -> {:.0} turns/s ({:.3} -> {:.3} ms of wall time per turn until reviewed), turn_end p50 {:.3} -> {:.3} ms, p99 {:.3} -> {:.3} ms, step_boundary p99 {:.3} -> {:.3} ms, {} -> {} reviews, threads {} -> {}",
            rate(one),
            rate(three),
            per_turn(one),
            per_turn(three),
            p50(&one.latencies),
            p50(&three.latencies),
            p99(&one.latencies),
            p99(&three.latencies),
            p99(&one.steps),
            p99(&three.steps),
            one.reviews,
            three.reviews,
            one.threads,
            three.threads
        );
    }
}
