//! SPEC A6, R2, RO24: closing a session frees everything it held, and a session costs
//! bounded memory and no thread, with one advisor or with a roster of three. Opens 10,000
//! idle sessions on one shared runtime (scripted model, no network), disposes them, and
//! checks that the heap returns to its baseline within a small margin; then the same with
//! three named advisors per session (RO24), checking the heap each advisor holds (at most
//! 64 KiB) and that the process's thread count does not move while they are open.
//!
//! The heap is measured exactly: this test binary's global allocator counts the bytes live
//! at any moment. The count is process-wide, so this is a binary of its own with no test
//! harness (`harness = false` in Cargo.toml): nothing else runs in the process while it
//! measures. The process's resident memory (`VmRSS`) is printed beside it for a reader, but
//! not asserted: the allocator keeps freed pages, so RSS does not go back down. Threads are
//! counted from `/proc/self/status`, which is why they are checked here and not in the
//! shared test binary, where other tests start runtimes meanwhile.
//!
//! Why a warm-up round first: the first sessions build what the runtime keeps for the
//! process (the shared catalog, redaction patterns and watchdog results, the arbiters'
//! task slabs and queues grown to the peak, the runtime's own tables). A second round of
//! the same size then needs no new memory of that kind, so whatever it leaves behind is
//! what the sessions failed to free. It takes about 10 s in a debug build for one advisor,
//! about three times that for three.
//!
//! Why the margin is 256 KiB: that is about 26 bytes per session over 10,000 sessions. A
//! session that kept even one small allocation (a boxed id, a channel, a timer entry: tens
//! to hundreds of bytes) leaves 0.3 MB or more, and one that kept its actors (several KB
//! each) leaves tens of MB. The margin is room for the runtime's own counters and queues
//! settling, which do not grow with the number of sessions.

#[path = "support/heap.rs"]
mod heap;
#[path = "support/roster.rs"]
mod roster;
#[path = "suite/serve_client.rs"]
mod serve_client;

use std::sync::Arc;
use std::time::{Duration, Instant};

use advisor::domain::host::HostEvent;
use advisor::model::scripted::ScriptedModel;
use advisor::model::ModelClient;
use advisor::{AdvisorHandle, RuntimeConfig};
use advisor::{AdvisorRuntime, RuntimeOptions};
use heap::{live, CountingAllocator};
use tokio::sync::mpsc::UnboundedReceiver;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Sessions of the measured round.
const SESSIONS: usize = 10_000;
/// Sessions of the warm-up round: as many as the measured one, so the measured round
/// reaches no new high-water mark (a warm-up of 2,000 left about 350 KB of grown
/// capacity behind the measured 10,000, which is not what a session holds).
const WARM_UP: usize = SESSIONS;
/// What the sessions may leave behind in all (see the module comment).
const MARGIN: isize = 256 * 1024;
/// A round that does not finish in this long has hung.
const ROUND_LIMIT: Duration = Duration::from_secs(240);
/// The most heap one named advisor of an idle session may hold (RO24).
const PER_ADVISOR: isize = 64 * 1024;

/// Resident memory in KiB, for the printed figures.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// OS threads of this process now.
fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Threads:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// Waits until every actor that could send the session a host event is gone (the channel
/// closes when the last sender drops).
async fn closed(mut events: UnboundedReceiver<HostEvent>) {
    while events.recv().await.is_some() {}
}

/// What a round saw while its sessions were open.
struct Open {
    /// Live heap bytes.
    live: isize,
    /// OS threads of the process.
    threads: usize,
}

/// How a round's sessions are configured: `config(i)` for session `i`, and how many named
/// advisors each status must list (0: the unnamed advisor alone).
struct Sessions<'a> {
    config: &'a dyn Fn(usize) -> RuntimeConfig,
    named: usize,
}

/// Opens `n` idle sessions, waits until each answers (listing its named advisors),
/// disposes them all and waits until each one's actors are gone.
async fn round(rt: &AdvisorRuntime, n: usize, sessions_of: &Sessions<'_>) -> Open {
    let mut sessions: Vec<(AdvisorHandle, UnboundedReceiver<HostEvent>)> = Vec::with_capacity(n);
    for i in 0..n {
        sessions.push(rt.open((sessions_of.config)(i)));
    }
    let answers = sessions.iter().map(|(handle, _)| handle.status());
    for answer in futures_util::future::join_all(answers).await {
        let status = answer.expect("an open session answers");
        assert_eq!(
            status.advisors.len(),
            sessions_of.named,
            "the named advisors a session runs"
        );
    }
    assert_eq!(rt.sessions(), n);
    let open = Open {
        live: live(),
        threads: threads(),
    };
    let disposed = sessions.iter().map(|(handle, _)| handle.dispose());
    for done in futures_util::future::join_all(disposed).await {
        done.expect("dispose");
    }
    assert_eq!(rt.sessions(), 0);
    for (handle, events) in sessions {
        drop(handle);
        closed(events).await;
    }
    open
}

/// What one measured round (after its warm-up) cost.
struct Measured {
    /// Heap bytes per open session.
    per_session: isize,
    /// Heap bytes left after disposing them all.
    left: isize,
    /// Threads just before the measured round, and while its sessions were open.
    threads: (usize, usize),
}

/// A warm-up round and a measured round of [`SESSIONS`] sessions each, printed as `name`.
async fn measure(rt: &AdvisorRuntime, name: &str, config: &Sessions<'_>) -> Measured {
    let started = Instant::now();
    let warm = tokio::time::timeout(ROUND_LIMIT, round(rt, WARM_UP, config))
        .await
        .expect("the warm-up round finishes");
    let baseline = live();
    let rss_baseline = rss_kib();
    let threads_before = threads();
    let open = tokio::time::timeout(ROUND_LIMIT, round(rt, SESSIONS, config))
        .await
        .expect("the measured round finishes");
    let after = live();
    let measured = Measured {
        per_session: (open.live - baseline) / SESSIONS as isize,
        left: after - baseline,
        threads: (threads_before, open.threads),
    };
    println!(
        "memory, {name}: {SESSIONS} sessions twice in {:.1?}; heap live: baseline {} KiB, \
         {} B per open session (warm-up {} B), {} B left after disposing \
         (margin {} KiB); VmRSS {} -> {} KiB; threads {} before, {} while open",
        started.elapsed(),
        baseline / 1024,
        measured.per_session,
        (warm.live - baseline) / SESSIONS as isize,
        measured.left,
        MARGIN / 1024,
        rss_baseline,
        rss_kib(),
        measured.threads.0,
        measured.threads.1,
    );
    // The count sees the sessions: an open idle session holds kilobytes (its actors,
    // mailboxes, feed and settings), far more than the margin allows per session.
    assert!(
        measured.per_session > 10 * MARGIN / SESSIONS as isize,
        "{name}: the heap count does not see the sessions ({} B each)",
        measured.per_session
    );
    assert!(
        measured.left <= MARGIN,
        "{name}: disposed sessions left {} bytes on the heap ({} B per session; margin {MARGIN})",
        measured.left,
        measured.left / SESSIONS as isize
    );
    measured
}

/// Sessions opened through `advisor serve` for the thread count.
const SERVED_OPENS: usize = 3_000;

/// A6: `advisor serve` (in process, over pipes) opening [`SERVED_OPENS`] sessions, each
/// with its own file discovery (settings, instruction files, roster) and advisor transcript
/// file, starts no thread: the process's count is the same before and after.
async fn served_opens_start_no_thread() {
    use advisor::providers::Catalog;
    use advisor::serve::{serve, ServeDefaults, ServeOptions};
    use serde_json::json;
    use serve_client::RpcClient;

    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("AGENTS.md"), "Run the tests.\n").expect("AGENTS.md");
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let mut defaults = ServeDefaults::new(Arc::new(Catalog::builtin().expect("catalog")));
    defaults.fixed_model = Some(Arc::new(ScriptedModel::new([])));
    let runtime = AdvisorRuntime::new(RuntimeOptions {
        arbiters: 2,
        ..RuntimeOptions::default()
    })
    .expect("the runtime starts");
    let server = actix::spawn(serve(
        server_r,
        server_w,
        ServeOptions::new(defaults, runtime),
    ));
    let mut c = RpcClient::new(client_w, client_r);
    c.call("initialize", json!({})).await;
    let before = threads();
    let mut ids = Vec::with_capacity(SERVED_OPENS);
    for i in 0..SERVED_OPENS {
        let file = dir.path().join(format!("sessions/s{i}.jsonl"));
        let params = json!({"sessionId": format!("s{i}"), "cwd": dir.path(),
            "sessionFile": file, "settings": {"syncBacklog": 1}});
        ids.push(c.request("session/open", params).await);
    }
    for id in &ids {
        let reply = c.reply(id).await;
        assert!(reply.get("result").is_some(), "{reply}");
    }
    let after = threads();
    println!(
        "threads, {SERVED_OPENS} sessions opened through serve: {before} before, {after} after"
    );
    assert!(
        after <= before,
        "opening {SERVED_OPENS} sessions through serve started threads: {before} before, {after} after"
    );
    c.close_input();
    c.read_to_end().await;
    let _ = server.await;
    println!("test a6_served_opens_start_no_thread ... ok");
}

fn main() {
    // The server runs its dispatcher as local tasks: an actix system of its own, ended
    // before the heap is measured.
    actix::System::new().block_on(served_opens_start_no_thread());
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    tokio.block_on(async {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let cwd = dir.path();
        let rt = AdvisorRuntime::new(RuntimeOptions {
            arbiters: 2,
            ..RuntimeOptions::default()
        })
        .expect("the runtime starts");
        let model: Arc<dyn ModelClient> = Arc::new(ScriptedModel::new([]));

        let one = |i: usize| {
            RuntimeConfig::new(format!("s{i}"), cwd.to_path_buf(), Some(model.clone()))
        };
        let sessions = Sessions {
            config: &one,
            named: 0,
        };
        measure(&rt, "one advisor", &sessions).await;
        println!("test a6_r2_open_and_dispose_10000_sessions_returns_the_heap_to_baseline ... ok");

        let info = model.info();
        let (provider, id) = info.id.split_once('/').unwrap_or(("scripted", info.id.as_str()));
        let three = |i: usize| {
            let mut config = one(i);
            config.roster = Some(roster::setup(roster::three(provider, id), model.clone()));
            config
        };
        let sessions = Sessions {
            config: &three,
            named: 3,
        };
        let measured = measure(&rt, "three advisors", &sessions).await;
        let per_advisor = measured.per_session / 3;
        println!("memory, three advisors: {per_advisor} B per advisor (bound {PER_ADVISOR} B)");
        assert!(
            per_advisor <= PER_ADVISOR,
            "an idle advisor holds {per_advisor} B, over {PER_ADVISOR} B"
        );
        assert!(
            measured.threads.1 <= measured.threads.0,
            "opening {SESSIONS} sessions with three advisors started threads: {} before, {} while open",
            measured.threads.0,
            measured.threads.1
        );
        println!("test ro24_a6_10000_idle_sessions_with_three_advisors_hold_at_most_64_kib_per_advisor_and_start_no_thread ... ok");
        assert_eq!(Arc::strong_count(&model), 1, "no session holds the model");
    });
}
