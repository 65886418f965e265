//! SPEC A6, R2: closing a session frees everything it held. Opens 10,000 idle
//! sessions on one shared runtime (scripted model, no network), disposes them, and checks
//! that the heap returns to its baseline within a small margin.
//!
//! The heap is measured exactly: this test binary's global allocator counts the bytes live
//! at any moment. The count is process-wide, so this is a binary of its own with no test
//! harness (`harness = false` in Cargo.toml): nothing else runs in the process while it
//! measures. The process's resident memory (`VmRSS`) is printed beside it for a reader, but
//! not asserted: the allocator keeps freed pages, so RSS does not go back down.
//!
//! Why a warm-up round first: the first sessions build what the runtime keeps for the
//! process (the shared catalog, redaction patterns and watchdog results, the arbiters'
//! task slabs and queues grown to the peak, the runtime's own tables). A second round of
//! the same size then needs no new memory of that kind, so whatever it leaves behind is
//! what the sessions failed to free. It takes about 10 s in a debug build.
//!
//! Why the margin is 256 KiB: that is about 26 bytes per session over 10,000 sessions. A
//! session that kept even one small allocation (a boxed id, a channel, a timer entry: tens
//! to hundreds of bytes) leaves 0.3 MB or more, and one that kept its actors (several KB
//! each) leaves tens of MB. The margin is room for the runtime's own counters and queues
//! settling, which do not grow with the number of sessions.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use advisor::domain::host::HostEvent;
use advisor::model::scripted::ScriptedModel;
use advisor::model::ModelClient;
use advisor::{AdvisorHandle, RuntimeConfig};
use advisor::{AdvisorRuntime, RuntimeOptions};
use tokio::sync::mpsc::UnboundedReceiver;

/// Counts the heap bytes live now, over the system allocator.
struct CountingAllocator;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

fn count(delta: isize) {
    LIVE_BYTES.fetch_add(delta, Ordering::Relaxed);
}

// SAFETY: every call is passed to the system allocator unchanged; the counter only adds.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc(layout);
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc_zeroed(layout);
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = System.realloc(ptr, layout, new_size);
        if !new.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        new
    }
}

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
const ROUND_LIMIT: Duration = Duration::from_secs(120);

fn live() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

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

/// Waits until every actor that could send the session a host event is gone (the channel
/// closes when the last sender drops).
async fn closed(mut events: UnboundedReceiver<HostEvent>) {
    while events.recv().await.is_some() {}
}

/// Opens `SESSIONS` idle sessions, waits until each answers, disposes them all and waits
/// until each one's actors are gone. Returns the live heap bytes while they were open.
async fn round(rt: &AdvisorRuntime, model: &Arc<dyn ModelClient>, cwd: &Path, n: usize) -> isize {
    let mut sessions: Vec<(AdvisorHandle, UnboundedReceiver<HostEvent>)> = Vec::with_capacity(n);
    for i in 0..n {
        let config = RuntimeConfig::new(format!("s{i}"), cwd.to_path_buf(), Some(model.clone()));
        sessions.push(rt.open(config));
    }
    let answers = sessions.iter().map(|(handle, _)| handle.status());
    for answer in futures_util::future::join_all(answers).await {
        answer.expect("an open session answers");
    }
    assert_eq!(rt.sessions(), n);
    let open = live();
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

fn main() {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    tokio.block_on(async {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let rt = AdvisorRuntime::new(RuntimeOptions {
            arbiters: 2,
            ..RuntimeOptions::default()
        })
        .expect("the runtime starts");
        let model: Arc<dyn ModelClient> = Arc::new(ScriptedModel::new([]));

        let started = Instant::now();
        let warm = tokio::time::timeout(ROUND_LIMIT, round(&rt, &model, dir.path(), WARM_UP))
            .await
            .expect("the warm-up round finishes");
        let baseline = live();
        let rss_baseline = rss_kib();
        let open = tokio::time::timeout(ROUND_LIMIT, round(&rt, &model, dir.path(), SESSIONS))
            .await
            .expect("the measured round finishes");
        let after = live();
        let per_session = (open - baseline) / SESSIONS as isize;
        println!(
            "memory: {SESSIONS} sessions twice in {:.1?}; heap live: baseline {} KiB, \
             {per_session} B per open session (warm-up {} B), {} B left after disposing \
             (margin {} KiB); VmRSS {} -> {} KiB",
            started.elapsed(),
            baseline / 1024,
            (warm - baseline) / SESSIONS as isize,
            after - baseline,
            MARGIN / 1024,
            rss_baseline,
            rss_kib(),
        );
        // The count sees the sessions: an open idle session holds kilobytes (its actors,
        // mailboxes, feed and settings), far more than the margin allows per session.
        assert!(
            per_session > 10 * MARGIN / SESSIONS as isize,
            "the heap count does not see the sessions ({per_session} B each)"
        );
        assert!(
            after - baseline <= MARGIN,
            "disposed sessions left {} bytes on the heap ({} B per session; margin {MARGIN})",
            after - baseline,
            (after - baseline) / SESSIONS as isize
        );
        assert_eq!(Arc::strong_count(&model), 1, "no session holds the model");
    });
    println!("test a6_r2_open_and_dispose_10000_sessions_returns_the_heap_to_baseline ... ok");
}
