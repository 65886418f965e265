//! `search` (literal and regex) and `find` over a large tree, next to ripgrep with the same
//! pattern and the same filters. The tree is `$ADVISOR_BENCH_TREE`, or the cargo registry
//! sources (`$CARGO_HOME/registry/src`, `~/.cargo/registry/src` by default). ripgrep is run
//! when `rg` is on the PATH; `scripts/bench-search.sh` installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use advisor::tools::find::{self, FindQuery};
use advisor::tools::search::{self, SearchQuery};
use criterion::{criterion_group, criterion_main, Criterion};

/// The literal and the regex searched for.
const PATTERNS: [(&str, &str); 2] = [
    ("literal", "unsafe impl"),
    ("regex", r"fn \w+_mut\(&mut self"),
];

fn tree() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("ADVISOR_BENCH_TREE") {
        return Some(PathBuf::from(dir));
    }
    let cargo_home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| Path::new(&h).join(".cargo")))
        .ok()?;
    let src = cargo_home.join("registry/src");
    src.is_dir().then_some(src)
}

fn has_rg() -> bool {
    Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// ripgrep with the filters of our `search`: hidden files, ignore files without requiring a
/// git repository, no `.git`, files over 4 MB skipped, one line of context before and three
/// after, at most 201 matches per file; the output goes to a pipe that is drained (not
/// `/dev/null`, where ripgrep stops at the first match).
fn rg(tree: &Path, pattern: &str) {
    let out = Command::new("rg")
        .args([
            "--hidden",
            "--no-require-git",
            "--glob",
            "!.git",
            "--max-filesize",
            "4M",
        ])
        .args([
            "-n",
            "-B1",
            "-A3",
            "-m",
            "201",
            "--no-messages",
            "-e",
            pattern,
        ])
        .arg(tree)
        .stderr(Stdio::null())
        .output();
    std::hint::black_box(out.map(|o| o.stdout.len()).unwrap_or(0));
}

fn bench(c: &mut Criterion) {
    let Some(tree) = tree() else {
        eprintln!("no bench tree: set ADVISOR_BENCH_TREE");
        return;
    };
    let rg_available = has_rg();
    let mut group = c.benchmark_group("search");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for (label, pattern) in PATTERNS {
        let query = SearchQuery {
            pattern: pattern.to_string(),
            case_insensitive: false,
            gitignore: true,
            skip: 0,
            time_limit: search::TIME_LIMIT,
        };
        group.bench_function(format!("{label}/advisor"), |b| {
            b.iter(|| search::search(&tree, &[], &query).map(|s| s.len()))
        });
        if rg_available {
            group.bench_function(format!("{label}/rg"), |b| b.iter(|| rg(&tree, pattern)));
        }
    }
    group.finish();

    let mut group = c.benchmark_group("find");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    let query = FindQuery {
        patterns: vec!["**/*.rs".to_string()],
        hidden: true,
        gitignore: true,
        limit: 200,
        timeout: Duration::from_secs(60),
    };
    group.bench_function("rs_files/advisor", |b| {
        b.iter(|| find::find(&tree, &query).map(|s| s.len()))
    });
    if rg_available {
        group.bench_function("rs_files/rg_files", |b| {
            b.iter(|| {
                Command::new("rg")
                    .args(["--files", "--hidden", "--no-require-git", "--glob", "!.git"])
                    .args(["--glob", "*.rs"])
                    .arg(&tree)
                    .output()
                    .map(|o| o.stdout.len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
