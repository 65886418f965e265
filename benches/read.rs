//! Reading a session file and rendering every prompt of it in the
//! compact view (SPEC L1, L3: what `advisor render --transcript compact` does), next to
//! serde_json's own parse of the same lines into `IgnoredAny` — the limit a JSON-lines reader
//! can approach — in the same run.
//!
//! Three files: a synthetic oh-my-pi (version 3) session of 40,000 short turns generated
//! here (a user prompt every 20 turns; each turn an assistant message with thinking, one
//! line of text and one `edit` call, then its tool result: about 82,000 messages of about
//! 400 bytes, 33 MB), and the two recorded pi sessions of `tests/fixtures/pi-sessions/`.
//!
//! Criterion measures each; then a summary line per file gives the median MB/s (10^6 bytes)
//! of five plain runs of each in this process, the ratio to the limit, the time dropping
//! what was read takes afterwards (timed apart, in criterion's runs too: `advisor render`
//! never frees it, the process ends instead; a library host pays it when it lets the
//! session go), and the peak
//! resident memory of five whole `advisor render --transcript compact FILE` processes (the
//! release binary, run as a child with its output thrown away; its `VmHWM` read every
//! millisecond until it exits — `ru_maxrss` would count the benchmark process, whose memory
//! the child shares until its `exec`; the highest of the five) with their median MB/s (user
//! + system CPU time from `wait4`).
//!
//! Run with `cargo bench --bench read`; `ADVISOR_BENCH_TURNS` changes the synthetic size, and
//! `ADVISOR_BENCH_BASELINE=/path/to/another/advisor` runs that binary's processes too,
//! alternating with this one's, and prints the ratio of CPU times (the machine's load moves
//! both alike, so the ratio is steadier than either figure).

use std::fmt::Write as _;
use std::fs::File;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use advisor::session::{read_session, SessionDriver};
use advisor::TranscriptView;
use advisor::TurnPrompts;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

#[path = "../tests/support/binary.rs"]
mod binary;

/// The synthetic session: `turns` turns in oh-my-pi's version 3 format.
fn synthetic_session(turns: usize) -> String {
    let mut out = String::with_capacity(turns * 820);
    out.push_str(
        r#"{"type":"session","version":3,"id":"bench","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/repo"}"#,
    );
    out.push('\n');
    let mut entry = 0usize;
    let mut line = |out: &mut String, message: &str| {
        entry += 1;
        let parent = match entry {
            1 => "null".to_string(),
            n => format!("\"{:08x}\"", n - 1),
        };
        let _ = writeln!(
            out,
            r#"{{"type":"message","id":"{entry:08x}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#
        );
    };
    for t in 0..turns {
        if t % 20 == 0 {
            let user = format!(
                r#"{{"role":"user","content":[{{"type":"text","text":"Please continue with step {t} of the refactor."}}],"timestamp":1}}"#
            );
            line(&mut out, &user);
        }
        let assistant = format!(
            r#"{{"role":"assistant","content":[{{"type":"thinking","thinking":"The next edit renames the helper in module {t}."}},{{"type":"text","text":"Renaming the helper in src/m{t}.rs."}},{{"type":"toolCall","id":"call_{t}","name":"edit","arguments":{{"path":"src/m{t}.rs","oldText":"fn old_helper()","newText":"fn new_helper()"}}}}],"stopReason":"toolUse","timestamp":2}}"#
        );
        line(&mut out, &assistant);
        let result = format!(
            r#"{{"role":"toolResult","toolCallId":"call_{t}","toolName":"edit","content":[{{"type":"text","text":"Successfully replaced text in src/m{t}.rs."}}],"isError":false,"details":{{"diff":"-1 fn old_helper()\n+1 fn new_helper()"}},"timestamp":3}}"#
        );
        line(&mut out, &result);
    }
    out
}

/// serde_json's own parse of every line into `IgnoredAny`: the limit.
fn limit(path: &Path) -> usize {
    let mut reader = BufReader::with_capacity(1 << 16, File::open(path).expect("readable"));
    let mut line = Vec::new();
    let mut lines = 0usize;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).expect("readable") == 0 {
            return lines;
        }
        if serde_json::from_slice::<serde::de::IgnoredAny>(&line).is_ok() {
            lines += 1;
        }
    }
}

/// What `advisor render --transcript compact` does: read the branch, render every prompt and
/// write it as a JSON line (here to a sink). Returns the number of prompts and what holds
/// the session, for the caller to drop outside the timing (the command never frees it: the
/// process ends), so that the drop is measured on its own.
fn read_and_render(path: &Path) -> (usize, TurnPrompts) {
    let branch = read_session(path).expect("a session");
    let mut prompts = TurnPrompts::new(SessionDriver::new(branch), TranscriptView::Compact);
    // As `advisor render` writes them: JSON lines into one buffer, handed on when full.
    let mut out = std::io::sink();
    let mut buffer: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut count = 0usize;
    for prompt in prompts.by_ref() {
        prompt.write_json_line(&mut buffer);
        if buffer.len() >= 1 << 16 {
            out.write_all(black_box(&buffer)).expect("sink");
            buffer.clear();
        }
        count += 1;
    }
    out.write_all(black_box(&buffer)).expect("sink");
    (count, prompts)
}

/// Peak resident memory of process `pid` so far, in MB (`VmHWM`); `None` once it exited.
fn peak_rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0 / 1e6)
}

/// Runs `advisor render --transcript compact path` as a child process; its peak resident
/// memory in MB (sampled every millisecond) and its CPU time (user + system) in seconds.
fn child_render(binary: &Path, path: &Path) -> Option<(f64, f64)> {
    let child = std::process::Command::new(binary)
        .args(["render", "--transcript", "compact"])
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let mut peak_mb = 0f64;
    while let Some(mb) = peak_rss_mb(child.id()) {
        peak_mb = peak_mb.max(mb);
        std::thread::sleep(Duration::from_millis(1));
    }
    let pid = libc::pid_t::try_from(child.id()).ok()?;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value; `wait4` reaps the child spawned
    // above (never waited for elsewhere) and writes into the two locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if reaped != pid {
        return None;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some((peak_mb, seconds(usage.ru_utime) + seconds(usage.ru_stime)))
}

fn median_seconds(runs: usize, mut run: impl FnMut()) -> f64 {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2].as_secs_f64()
}

struct Session {
    name: &'static str,
    path: PathBuf,
    bytes: u64,
    /// Keeps the synthetic file alive.
    _temp: Option<tempfile::NamedTempFile>,
}

fn sessions() -> Vec<Session> {
    let turns = std::env::var("ADVISOR_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40_000);
    let mut temp = tempfile::NamedTempFile::new().expect("a temporary file");
    temp.write_all(synthetic_session(turns).as_bytes())
        .expect("writable");
    temp.flush().expect("writable");
    let mut all = vec![Session {
        name: "synthetic-40k-turns",
        path: temp.path().to_path_buf(),
        bytes: 0,
        _temp: Some(temp),
    }];
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi-sessions");
    for (name, file) in [
        ("before-compaction", "before-compaction.jsonl"),
        ("large-session", "large-session.jsonl"),
    ] {
        let path = dir.join(file);
        if path.exists() {
            all.push(Session {
                name,
                path,
                bytes: 0,
                _temp: None,
            });
        } else {
            eprintln!("fixture {} is missing; not measured", path.display());
        }
    }
    for session in &mut all {
        session.bytes = std::fs::metadata(&session.path).expect("a file").len();
    }
    all
}

fn read_render(c: &mut Criterion) {
    let sessions = sessions();
    for session in &sessions {
        let mut group = c.benchmark_group(session.name);
        group
            .throughput(Throughput::Bytes(session.bytes))
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        group.bench_function("serde_json IgnoredAny (limit)", |b| {
            b.iter(|| black_box(limit(&session.path)))
        });
        group.bench_function("read + render compact", |b| {
            b.iter_with_large_drop(|| read_and_render(&session.path))
        });
        group.finish();
    }
    for session in &sessions {
        let mb = session.bytes as f64 / 1e6;
        let limit_s = median_seconds(5, || {
            black_box(limit(&session.path));
        });
        let mut held = Vec::new();
        let ours_s = median_seconds(5, || held.push(read_and_render(&session.path)));
        let prompts = held.first().map_or(0, |h| h.0);
        let drop_s = median_seconds(5, || drop(held.pop()));
        // Five processes: the highest peak, the median CPU time (and the baseline's, run in
        // turn with them).
        let ours = binary::advisor_bin();
        let baseline = std::env::var_os("ADVISOR_BENCH_BASELINE").map(PathBuf::from);
        let mut runs: Vec<(f64, f64)> = Vec::new();
        let mut base_cpu: Vec<f64> = Vec::new();
        for _ in 0..5 {
            runs.push(child_render(&ours, &session.path).unwrap_or((f64::NAN, f64::NAN)));
            if let Some(b) = &baseline {
                base_cpu.push(child_render(b, &session.path).map_or(f64::NAN, |r| r.1));
            }
        }
        let peak = runs.iter().map(|r| r.0).fold(f64::NAN, f64::max);
        let mut cpus: Vec<f64> = runs.iter().map(|r| r.1).collect();
        cpus.sort_by(f64::total_cmp);
        let cpu = cpus[2];
        if base_cpu.len() == 5 {
            base_cpu.sort_by(f64::total_cmp);
            println!(
                "{}: baseline process {:.0} MB/s of CPU time; this one takes {:.2}× its CPU time",
                session.name,
                mb / base_cpu[2],
                cpu / base_cpu[2]
            );
        }
        println!(
            "{}: {mb:.1} MB, {prompts} prompts; read + render compact {:.0} MB/s (then \
             dropping the session {:.1} ms), serde_json IgnoredAny {:.0} MB/s (ratio {:.2}); \
             `advisor render --transcript compact` process: {:.0} MB/s of CPU time, peak RSS \
             {peak:.1} MB ({:.2}× the file)",
            session.name,
            mb / ours_s,
            drop_s * 1e3,
            mb / limit_s,
            limit_s / ours_s,
            mb / cpu,
            peak / mb,
        );
    }
}

criterion_group!(benches, read_render);
criterion_main!(benches);
