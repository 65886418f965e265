//! Rendering every delta of the shared 2.4 MB session through the
//! feed, next to serde_json parsing the same file, in one run.
//!
//! Run with `cargo bench --bench feed`. The fixture is vendored in the repository
//! (`tests/fixtures/pi-sessions/before-compaction.jsonl`); without it the benchmark
//! says so and measures nothing.

use std::hint::black_box;
use std::path::PathBuf;

use advisor::session::{read_session, SessionDriver};
use advisor::TranscriptView;
use advisor::TurnPrompts;
use criterion::{criterion_group, criterion_main, Criterion};

fn fixture() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pi-sessions/before-compaction.jsonl");
    path.exists().then_some(path)
}

fn feed_vs_parse(c: &mut Criterion) {
    let Some(path) = fixture() else {
        eprintln!("fixture missing: tests/fixtures/pi-sessions/before-compaction.jsonl");
        return;
    };
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    let branch = read_session(&path).expect("fixture parses");
    let mut group = c.benchmark_group("before-compaction");
    group.bench_function("serde_json parse of the file", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for line in text.lines() {
                let value: serde_json::Value = serde_json::from_str(line).expect("valid json");
                n += usize::from(value.is_object());
            }
            black_box(n)
        })
    });
    for view in [TranscriptView::Compact, TranscriptView::Full] {
        group.bench_function(format!("feed: every delta rendered ({view:?})"), |b| {
            // The feed is built once per runtime (its secret redactor compiles its patterns
            // then), so construction is setup; the timed part is every turn end's delta.
            b.iter_batched(
                || TurnPrompts::new(SessionDriver::new(branch.clone()), view),
                |prompts| {
                    let mut bytes = 0usize;
                    for prompt in prompts {
                        bytes += prompt.prompt.len();
                    }
                    black_box(bytes)
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, feed_vs_parse);
criterion_main!(benches);
