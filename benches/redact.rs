//! SPEC X5's benchmark: redacting every prompt of the shared 2.4 MB session, next to
//! producing those prompts (driver, cursor, renderer) without redaction, in one run.
//!
//! Run with `cargo bench --bench redact`. The fixture is vendored in the repository
//! (`tests/fixtures/pi-sessions/before-compaction.jsonl`); without it the benchmark
//! says so and measures nothing.

use std::hint::black_box;
use std::path::PathBuf;

use advisor::session::{read_session, SessionBranch, SessionDriver};
use advisor::Redactor;
use advisor::TranscriptView;
use advisor::TurnPrompts;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

fn fixture() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pi-sessions/before-compaction.jsonl");
    path.exists().then_some(path)
}

/// The session's prompts as [`TurnPrompts`] drives them, with redaction off.
fn plain_prompts(branch: SessionBranch, view: TranscriptView) -> Vec<String> {
    TurnPrompts::new(SessionDriver::new(branch), view)
        .with_redaction(false)
        .map(|p| p.prompt)
        .collect()
}

fn redact_vs_produce(c: &mut Criterion) {
    let Some(path) = fixture() else {
        eprintln!("fixture missing: tests/fixtures/pi-sessions/before-compaction.jsonl");
        return;
    };
    let branch = read_session(&path).expect("fixture parses");
    let redactor = Redactor::new().expect("built-in patterns compile");
    let mut group = c.benchmark_group("before-compaction");
    for view in [TranscriptView::Compact, TranscriptView::Full] {
        let prompts = plain_prompts(branch.clone(), view);
        let bytes: usize = prompts.iter().map(String::len).sum();
        let found: usize = prompts.iter().map(|p| redactor.find(p).len()).sum();
        eprintln!(
            "{view}: {} prompts, {bytes} bytes, {found} redactions",
            prompts.len()
        );
        group.bench_function(format!("prompts without redaction ({view})"), |b| {
            b.iter_batched(
                || branch.clone(),
                |branch| black_box(plain_prompts(branch, view).len()),
                BatchSize::LargeInput,
            )
        });
        group.bench_function(format!("redaction of every prompt ({view})"), |b| {
            b.iter(|| {
                let mut changed = 0usize;
                for prompt in &prompts {
                    changed += usize::from(matches!(
                        redactor.redact(prompt),
                        std::borrow::Cow::Owned(_)
                    ));
                }
                black_box(changed)
            })
        });
        // The matching path: every prompt carries one credential to replace.
        let key = format!("sk-proj-{}", "aZ3kQ9mX2pL7rT5vB8nC1dF4".repeat(2));
        let planted: Vec<String> = prompts
            .iter()
            .map(|p| format!("{p}\nexport OPENAI_API_KEY={key}\n"))
            .collect();
        group.bench_function(
            format!("redaction of every prompt, one key each ({view})"),
            |b| {
                b.iter(|| {
                    black_box(
                        planted
                            .iter()
                            .map(|p| redactor.redact(p).len())
                            .sum::<usize>(),
                    )
                })
            },
        );
        group.bench_function(
            format!("prompts with redaction, TurnPrompts ({view})"),
            |b| {
                b.iter_batched(
                    || SessionDriver::new(branch.clone()),
                    |driver| black_box(TurnPrompts::new(driver, view).count()),
                    BatchSize::LargeInput,
                )
            },
        );
    }
    group.finish();
}

criterion_group!(benches, redact_vs_produce);
criterion_main!(benches);
