//! A large session with a long abandoned branch is read in bounded memory (SPEC L1).
//!
//! This test binary installs a counting allocator so that the reader's peak heap use can be
//! measured; it holds only this test so that nothing else allocates meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicUsize, Ordering};

use advisor::session::{read_session, BranchEntry};

/// The system allocator, counting live bytes and the high-water mark.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const LINES: usize = 50_000;
const MAIN_BRANCH: usize = 1_000;

/// Writes a version 3 session: a root prompt, an abandoned side branch of
/// `LINES - MAIN_BRANCH - 1` bulky entries, then the current branch of `MAIN_BRANCH` entries
/// continuing from the root. Returns the file size.
fn write_session(path: &std::path::Path) -> std::io::Result<u64> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        out,
        r#"{{"type":"session","version":3,"id":"big","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"}}"#
    )?;
    writeln!(
        out,
        r#"{{"type":"message","id":"root","parentId":null,"message":{{"role":"user","content":"start"}}}}"#
    )?;
    let bulk = "lorem ipsum dolor sit amet ".repeat(20);
    let side = LINES - MAIN_BRANCH - 1;
    let mut parent = "root".to_string();
    for i in 0..side {
        let id = format!("s{i:07x}");
        writeln!(
            out,
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","message":{{"role":"assistant","content":[{{"type":"text","text":"{bulk}{i}"}}],"stopReason":"stop"}}}}"#
        )?;
        parent = id;
    }
    parent = "root".to_string();
    for i in 0..MAIN_BRANCH {
        let id = format!("m{i:07x}");
        let role = if i % 2 == 0 { "assistant" } else { "user" };
        let body = if role == "user" {
            format!(r#"{{"role":"user","content":"prompt {i}"}}"#)
        } else {
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"answer {i}"}}],"stopReason":"stop"}}"#
            )
        };
        writeln!(
            out,
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","message":{body}}}"#
        )?;
        parent = id;
    }
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

#[test]
fn l1_a_50000_line_session_is_read_holding_only_its_current_branch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.jsonl");
    let size = write_session(&path).expect("written");

    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let branch = read_session(&path).expect("reads");
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let kept = LIVE.load(Ordering::Relaxed) - before;

    assert_eq!(branch.entries.len(), MAIN_BRANCH + 1);
    assert_eq!(branch.diagnostics.off_branch, LINES - MAIN_BRANCH - 1);
    assert!(branch.diagnostics.malformed.is_empty());
    assert!(matches!(
        branch.entries.last(),
        Some(BranchEntry::Message(_))
    ));
    eprintln!(
        "file {:.1} MB, {LINES} lines: peak heap while reading {:.2} MB, result {:.2} MB",
        size as f64 / 1e6,
        peak as f64 / 1e6,
        kept as f64 / 1e6
    );
    // The abandoned branch is most of the file; the reader may hold its ids, never its content.
    assert!(size > 25_000_000, "the file is {size} bytes");
    assert!(
        peak < 8_000_000,
        "peak heap {peak} bytes for a {size}-byte file"
    );
}
