//! Large sessions are read in bounded memory (SPEC L1).
//!
//! The integration tests share one binary, so the counting allocator it installs counts
//! per thread: each test measures the heap its own thread holds, whatever other tests
//! allocate meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{BufWriter, Write};

use advisor::session::{read_session, read_session_with, BranchEntry, ReadLimits};

/// The system allocator, counting the calling thread's live bytes and high-water mark.
struct Counting;

thread_local! {
    // `const` thread locals of a `Copy` type need no lazy initialisation and no destructor,
    // so using them inside the allocator cannot recurse into it.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        count(-(layout.size() as isize));
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the peak and the retained heap growth (bytes) of
/// this thread while it ran.
fn measure<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let out = f();
    let peak = PEAK.with(Cell::get) - before;
    let kept = LIVE.with(Cell::get) - before;
    (out, peak.max(0) as usize, kept.max(0) as usize)
}

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

    let (branch, peak, kept) = measure(|| read_session(&path).expect("reads"));

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

#[test]
fn l1_a_line_over_the_cap_is_skipped_without_being_buffered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("long-line.jsonl");
    let mut out = BufWriter::new(std::fs::File::create(&path).expect("created"));
    writeln!(
        out,
        r#"{{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"}}"#
    )
    .expect("written");
    // An 8 MB message line, then a garbage line of 8 MB, then a normal one.
    let bulk = "x".repeat(8_000_000);
    writeln!(
        out,
        r#"{{"type":"message","id":"a","parentId":null,"message":{{"role":"user","content":"{bulk}"}}}}"#
    )
    .expect("written");
    writeln!(out, "{bulk}").expect("written");
    writeln!(
        out,
        r#"{{"type":"message","id":"b","parentId":null,"message":{{"role":"user","content":"short"}}}}"#
    )
    .expect("written");
    out.flush().expect("flushed");
    drop(out);
    drop(bulk);

    let limits = ReadLimits {
        max_line_bytes: 1 << 20,
        ..ReadLimits::default()
    };
    let (branch, peak, _) = measure(|| read_session_with(&path, &limits).expect("reads"));
    let lines: Vec<usize> = branch
        .diagnostics
        .malformed
        .iter()
        .map(|(l, _)| *l)
        .collect();
    assert_eq!(lines, [2, 3], "{:?}", branch.diagnostics.malformed);
    assert_eq!(branch.entries.len(), 1);
    eprintln!(
        "16 MB of over-long lines: peak heap {:.2} MB",
        peak as f64 / 1e6
    );
    // The 1 MiB cap bounds the line buffer; nothing near a whole line is ever held.
    assert!(peak < 2_500_000, "peak heap {peak} bytes");
}
