//! `advisor replay` of the shared 2.4 MB session through the whole
//! runtime (feed, agent, executor, router, supervisor, host handle), in-process.
//!
//! Two runs, both with `syncBacklog: 1` as replay uses by default:
//! 1. `no-review`: `ADVISOR_NO_REVIEW` semantics, no model calls — the runtime's own
//!    overhead per turn (cursor, rendering, queue, waits, delivery, mailboxes);
//! 2. `in-process server`: every review is a real streaming HTTP request to the in-process
//!    OpenAI-compatible server, which answers at once with a silent reply.
//!
//! Each run prints wall time, turns per second and the process's peak resident memory so
//! far (`VmHWM` from `/proc/self/status`). The server keeps every request body it receives,
//! so the second figure includes those bytes; they are printed beside it.
//!
//! Run with `cargo bench --bench replay`. Without the fixture the benchmark says so and
//! measures nothing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use advisor::model::ModelClient;
use advisor::providers::testing::{sse_event, ScriptedResponse, SseServer};
use advisor::providers::{build_client, ApiKind, Catalog, ModelSpec};
use advisor::replay::Replay;
use advisor::session::{read_session, SessionBranch, SessionDriver};
use advisor::settings::SyncBacklog;
use advisor::{AdvisorHandle, RuntimeConfig};

const FIXTURE: &str = "tests/fixtures/pi-sessions/before-compaction.jsonl";

fn silent_reply() -> ScriptedResponse {
    let body = [
        sse_event(
            None,
            r#"{"id":"b","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}"#,
        ),
        sse_event(
            None,
            r#"{"id":"b","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":1,"total_tokens":101}}"#,
        ),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    ScriptedResponse::sse(&body)
}

/// Peak resident memory of this process so far, in MB (`VmHWM`), when the kernel says.
fn peak_memory_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

struct Figures {
    turns: usize,
    seconds: f64,
    reviews: u64,
    calls: u64,
}

async fn replay(branch: SessionBranch, model: Arc<dyn ModelClient>, no_review: bool) -> Figures {
    let mut config = RuntimeConfig::new("bench", std::env::temp_dir(), Some(model));
    config.settings.sync_backlog = SyncBacklog::Below(1);
    config.settings.no_review = no_review;
    let started = Instant::now();
    let (handle, events) = AdvisorHandle::spawn(config).await.expect("runtime starts");
    let outcome = Replay::new(SessionDriver::new(branch), handle.clone(), events)
        .run(|_| {})
        .await
        .expect("replay runs");
    let seconds = started.elapsed().as_secs_f64();
    let _ = handle.dispose().await;
    Figures {
        turns: outcome.turns,
        seconds,
        reviews: outcome.status.agent.reviews,
        calls: outcome.status.agent.model_calls,
    }
}

fn report(name: &str, f: &Figures, peak: Option<f64>, extra: &str) {
    println!(
        "replay/{name}: {} turns in {:.3} s = {:.0} turns/s; reviews {}, model calls {}; \
         peak memory (VmHWM) {:.1} MB{extra}",
        f.turns,
        f.seconds,
        f.turns as f64 / f.seconds,
        f.reviews,
        f.calls,
        peak.unwrap_or(f64::NAN),
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too, which is fine.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    if !path.exists() {
        if std::env::var_os("CI").is_some() {
            panic!("fixture {} is missing (required in CI)", path.display());
        }
        eprintln!(
            "replay bench: fixture {} is missing; nothing measured",
            path.display()
        );
        return;
    }
    let read_started = Instant::now();
    let branch = read_session(&path).expect("fixture parses");
    println!(
        "read_session: {:.3} s; peak memory so far {:.1} MB",
        read_started.elapsed().as_secs_f64(),
        peak_memory_mb().unwrap_or(f64::NAN)
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async move {
        let turns = SessionDriver::new(branch.clone())
            .filter(|s| matches!(s, advisor::session::HostStep::TurnEnded { .. }))
            .count();
        let server = SseServer::start((0..turns).map(|_| silent_reply()))
            .await
            .expect("bind 127.0.0.1:0");
        let spec = ModelSpec {
            role: Some("local/bench".into()),
            base_url: Some(server.base_url()),
            api: Some(ApiKind::OpenAiCompletions),
            ..ModelSpec::default()
        };
        let catalog = Catalog::builtin().expect("catalog");
        let model = build_client(&spec, &catalog, &|_: &str| None).expect("client");

        let quiet = replay(branch.clone(), Arc::clone(&model), true).await;
        report("no-review", &quiet, peak_memory_mb(), "");

        let full = replay(branch, model, false).await;
        // Read the peak before copying the server's record out.
        let peak = peak_memory_mb();
        let recorded: usize = server.requests().iter().map(|r| r.body.len()).sum();
        report(
            "in-process server",
            &full,
            peak,
            &format!(
                " (of which the server's record of {} request bodies: {:.1} MB)",
                server.request_count(),
                recorded as f64 / (1024.0 * 1024.0)
            ),
        );
    });
}
