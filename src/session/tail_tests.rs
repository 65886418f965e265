//! SPEC H31: a tail read equals a whole read of the file as it is, at every cut point.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;
use crate::session::read_session_with;

fn growing(include_subagents: bool) -> ReadLimits {
    ReadLimits {
        growing: true,
        include_subagents,
        ..ReadLimits::default()
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hosts")
        .join(name);
    fs::read(path).expect("fixture")
}

fn append(path: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open");
    file.write_all(bytes).expect("write");
}

/// The entries of the tail, settled then pending.
fn tail_entries(tail: &HostTail) -> Vec<BranchEntry> {
    let (settled, pending) = tail.entries();
    settled.iter().cloned().chain(pending).collect()
}

/// Reads `path` through `tail` and checks it against a whole read; how it was read.
fn check(path: &Path, limits: &ReadLimits, tail: &mut Option<HostTail>) -> Option<TailRead> {
    let whole = read_session_with(path, limits);
    let read = read_host_tail(path, limits, tail);
    match (whole, read) {
        (Ok(branch), Ok(how)) => {
            let state = tail.as_ref().expect("a host transcript keeps its state");
            assert_eq!(
                tail_entries(state),
                branch.entries,
                "{how:?} read of {} bytes differs",
                fs::metadata(path).map_or(0, |m| m.len())
            );
            assert_eq!(state.format(), branch.header.format);
            assert_eq!(state.header().id, branch.header.id);
            Some(how)
        }
        (Err(_), Err(_)) => None,
        (whole, read) => panic!("whole {whole:?} but tail {read:?}"),
    }
}

/// Writes `bytes` in the pieces `cuts` makes, reading after each; how each read went.
fn replay(bytes: &[u8], cuts: &[usize], limits: &ReadLimits) -> Vec<Option<TailRead>> {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.jsonl");
    let mut tail = None;
    let mut done = 0;
    let mut hows = Vec::new();
    for &cut in cuts.iter().chain([&bytes.len()]) {
        let cut = cut.clamp(done, bytes.len());
        append(&path, &bytes[done..cut]);
        done = cut;
        hows.push(check(&path, limits, &mut tail));
    }
    hows
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn cuts(&mut self, len: usize, count: usize) -> Vec<usize> {
        let mut cuts: Vec<usize> = (0..count).map(|_| self.below(len + 1)).collect();
        cuts.sort_unstable();
        cuts
    }
}

fn line_ends(bytes: &[u8]) -> Vec<usize> {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn h31_recorded_transcripts_read_in_pieces_equal_whole_reads() {
    for name in ["claude_transcript.jsonl", "codex_rollout.jsonl"] {
        let bytes = fixture(name);
        let ends = line_ends(&bytes);
        // Line by line: every read after the first takes only what was appended.
        let hows = replay(&bytes, &ends, &growing(false));
        assert!(
            hows[1..].iter().all(|h| *h == Some(TailRead::Appended)),
            "{name}: {hows:?}"
        );
        // Every line written in two pieces, cut inside it.
        let mut rng = Rng(0x5eed ^ bytes.len() as u64);
        let mut cuts = Vec::new();
        let mut start = 0;
        for &end in &ends {
            cuts.push(start + rng.below(end - start));
            cuts.push(end);
            start = end;
        }
        let hows = replay(&bytes, &cuts, &growing(false));
        assert!(hows.iter().flatten().any(|h| *h == TailRead::Appended));
        // Random cut points.
        for seed in 1..40u64 {
            let mut rng = Rng(seed * 7919);
            let count = 1 + rng.below(6);
            let cuts = rng.cuts(bytes.len(), count);
            replay(&bytes, &cuts, &growing(seed % 2 == 0));
        }
    }
}

/// A generated Claude Code transcript: prompts, assistant messages split over several
/// lines, tool calls and results, hook context, skipped lines, sidechain lines, lines
/// without a parent, rewinds, parents named before they come, and compactions.
fn claude_lines(rng: &mut Rng, count: usize) -> Vec<Value> {
    let mut lines = Vec::new();
    let mut uuids: Vec<String> = Vec::new();
    let mut tip: Option<String> = None;
    let mut calls: Vec<String> = Vec::new();
    for n in 0..count {
        let uuid = format!("u{n}");
        let parent = match rng.below(40) {
            0 if !uuids.is_empty() => json!(uuids[rng.below(uuids.len())]),
            1 => json!(format!("u{}", n + 1 + rng.below(3))),
            2 => Value::Null,
            _ => tip.clone().map_or(Value::Null, Value::from),
        };
        let mut line = match rng.below(12) {
            0..=2 => {
                json!({"type":"user","message":{"role":"user","content":format!("prompt {n}")}})
            }
            3..=5 => {
                let id = format!("msg_{}", n / 3);
                let block = if rng.below(2) == 0 {
                    let call = format!("call_{n}");
                    calls.push(call.clone());
                    json!({"type":"tool_use","id":call,"name":"Bash","input":{"command":"ls"}})
                } else {
                    json!({"type":"text","text":format!("answer {n}")})
                };
                json!({"type":"assistant","message":{"id":id,"content":[block],
                    "stop_reason": if rng.below(2) == 0 { Value::Null } else { json!("tool_use") },
                    "usage":{"input_tokens":n,"output_tokens":1}}})
            }
            6 | 7 => {
                let call = calls.pop().unwrap_or_else(|| "call_x".into());
                json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":call,"content":"ok"}]}})
            }
            8 => json!({"type":"attachment","attachment":{"type":"hook_additional_context",
                "content":[format!("context {n}")],"hookEvent":"PostToolUse"}}),
            9 => json!({"type":"queue-operation","operation":"enqueue"}),
            10 => json!({"type":"system","subtype":"compact_boundary",
                "logicalParentUuid": tip.clone(),"compactMetadata":{"preTokens":n}}),
            _ => {
                json!({"type":"user","isCompactSummary":true,"message":{"content":format!("summary {n}")}})
            }
        };
        let kind = line["type"].as_str().unwrap_or_default().to_string();
        if kind == "queue-operation" {
            lines.push(line);
            continue;
        }
        line["uuid"] = json!(uuid);
        line["sessionId"] = json!("s");
        if kind == "system" {
            line["parentUuid"] = Value::Null;
        } else if rng.below(25) == 0 {
            // No parent key: the line before.
        } else {
            line["parentUuid"] = parent;
        }
        if rng.below(15) == 0 {
            line["isSidechain"] = json!(true);
        } else {
            uuids.push(uuid.clone());
            tip = Some(uuid);
        }
        lines.push(line);
    }
    lines
}

/// A generated Codex rollout: prompts, reasoning, calls and their outputs, hook context
/// between a call and its output, token counts, compactions.
fn codex_lines(rng: &mut Rng, count: usize) -> Vec<Value> {
    let mut lines = vec![
        json!({"timestamp":"2026-12-05T13:08:55.000Z","type":"session_meta",
        "payload":{"id":"r","cwd":"/w","cli_version":"0.171.0"}}),
    ];
    let mut calls: Vec<String> = Vec::new();
    for n in 0..count {
        let payload = match rng.below(10) {
            0 | 1 => {
                json!({"type":"message","role":"user","content":[{"type":"input_text","text":format!("prompt {n}")}]})
            }
            2 => {
                json!({"type":"reasoning","summary":[{"type":"summary_text","text":format!("think {n}")}]})
            }
            3 => {
                json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":format!("answer {n}")}]})
            }
            4 | 5 => {
                let call = format!("call_{n}");
                calls.push(call.clone());
                json!({"type":"function_call","name":"exec","call_id":call,"arguments":"{\"cmd\":\"ls\"}"})
            }
            6 => {
                let call = calls.pop().unwrap_or_else(|| "call_x".into());
                json!({"type":"function_call_output","call_id":call,"output":"ok"})
            }
            7 => {
                json!({"type":"message","role":"developer","content":[{"type":"input_text","text":format!("hook context {n}")}]})
            }
            8 => {
                lines.push(json!({"timestamp":"2026-12-05T13:08:56.000Z","type":"event_msg",
                    "payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":n,"output_tokens":2}}}}));
                continue;
            }
            _ => {
                lines.push(
                    json!({"timestamp":"2026-12-05T13:08:56.000Z","type":"compacted",
                    "payload":{"message":format!("summary {n}")}}),
                );
                continue;
            }
        };
        lines.push(json!({"timestamp":"2026-12-05T13:08:56.000Z","type":"response_item","payload":payload}));
    }
    lines
}

fn text_of(lines: &[Value], rng: &mut Rng) -> Vec<u8> {
    let mut text = String::new();
    for line in lines {
        text.push_str(&line.to_string());
        // Now and then a blank line, or blanks before the line break.
        match rng.below(20) {
            0 => text.push_str("\n\n"),
            1 => text.push_str("  \n"),
            _ => text.push('\n'),
        }
    }
    text.into_bytes()
}

#[test]
fn h31_generated_transcripts_read_in_pieces_equal_whole_reads() {
    let mut appended = 0;
    let mut whole = 0;
    for seed in 1..120u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let count = 10 + rng.below(60);
        let lines = if seed % 3 == 0 {
            codex_lines(&mut rng, count)
        } else {
            claude_lines(&mut rng, count)
        };
        let bytes = text_of(&lines, &mut rng);
        let ends = line_ends(&bytes);
        // Mostly at line ends (as the hosts write), some inside lines.
        let mut cuts: Vec<usize> = (0..1 + rng.below(8))
            .map(|_| {
                let end = ends[rng.below(ends.len())];
                if rng.below(3) == 0 {
                    end.saturating_sub(1 + rng.below(40))
                } else {
                    end
                }
            })
            .collect();
        cuts.sort_unstable();
        for how in replay(&bytes, &cuts, &growing(seed % 4 == 1))
            .into_iter()
            .flatten()
        {
            match how {
                TailRead::Appended => appended += 1,
                TailRead::Whole => whole += 1,
                TailRead::NotHost => panic!("a host transcript read as pi's"),
            }
        }
    }
    // Both ways were taken: the test covers the reads that go on and those that start over.
    assert!(
        appended > 100 && whole > 100,
        "{appended} appended, {whole} whole"
    );
}

fn temp_file(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.jsonl");
    fs::write(&path, bytes).expect("write");
    (dir, path)
}

#[test]
fn h31_a_rewritten_or_replaced_file_is_read_whole() {
    let bytes = fixture("claude_transcript.jsonl");
    let ends = line_ends(&bytes);
    let half = ends[ends.len() / 2];
    let limits = growing(false);
    let (dir, path) = temp_file(&bytes[..half]);
    let mut tail = None;
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
    // Rewritten in place, longer than before, its first line changed.
    let mut rewritten = bytes.clone();
    rewritten[2] = b' ';
    fs::write(&path, &rewritten).expect("rewrite");
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
    // A line before the offset changed, the start kept.
    let mut changed = bytes.clone();
    let at = ends[ends.len() - 2] - 3;
    changed[at] = b' ';
    fs::write(&path, &changed).expect("rewrite");
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
    // Shorter than what was read.
    fs::write(&path, &bytes[..half]).expect("shrink");
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
    // Another file put in its place (another inode), same bytes and more.
    let other = dir.path().join("other.jsonl");
    fs::write(&other, &bytes).expect("write");
    fs::rename(&other, &path).expect("rename");
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
    // Unchanged: nothing to read, and nothing read again.
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Appended));
}

#[test]
fn h31_a_rewind_or_a_parent_named_before_it_came_reads_the_file_whole() {
    let line = |uuid: &str, parent: Value, text: &str| {
        let mut l = json!({"type":"user","uuid":uuid,"message":{"content":text}});
        l["parentUuid"] = parent;
        format!("{l}\n")
    };
    let limits = growing(false);
    let first = line("a", Value::Null, "one") + &line("b", json!("a"), "two");
    let (_dir, path) = temp_file(first.as_bytes());
    let mut tail = None;
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
    append(&path, line("c", json!("b"), "three").as_bytes());
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Appended));
    // A rewind: `d` follows `a`, leaving `b` and `c` off the branch.
    append(&path, line("d", json!("a"), "again").as_bytes());
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
    append(&path, line("e", json!("d"), "on").as_bytes());
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Appended));
    // `f` names a parent that comes later: a whole read links it there.
    append(&path, line("f", json!("later"), "early").as_bytes());
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Appended));
    append(&path, line("later", json!("f"), "loop").as_bytes());
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
}

#[test]
fn h31_a_last_line_taken_without_its_break_then_more_text_reads_whole() {
    let meta =
        json!({"timestamp":"2026-12-05T13:08:55.000Z","type":"session_meta","payload":{"id":"r"}});
    let item = |text: &str| {
        json!({"timestamp":"2026-12-05T13:08:55.000Z","type":"response_item","payload":
            {"type":"message","role":"user","content":[{"type":"input_text","text":text}]}})
        .to_string()
    };
    let limits = growing(false);
    let (_dir, path) = temp_file(format!("{meta}\n{}", item("one")).as_bytes());
    let mut tail = None;
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
    // Blanks, then the break: the same line, taken once.
    append(&path, b"  ");
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Appended));
    append(&path, format!("\n{}\n", item("two")).as_bytes());
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Appended));
    // A line taken whole that then goes on: the whole read finds it broken.
    append(&path, item("three").as_bytes());
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Appended));
    append(&path, b" trailing\n");
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
}

#[test]
fn h31_the_line_cap_holds_on_the_appended_part() {
    let limits = ReadLimits {
        max_line_bytes: 1024,
        ..growing(false)
    };
    let bytes = fixture("codex_rollout.jsonl");
    let ends = line_ends(&bytes);
    let mut rng = Rng(77);
    for _ in 0..20 {
        let cuts = rng.cuts(bytes.len(), 4);
        replay(&bytes, &cuts, &limits);
    }
    // A long line written in pieces is left for later until its end comes, then skipped.
    let (_dir, path) = temp_file(&bytes[..ends[0]]);
    let mut tail = None;
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Whole));
    let long = format!("{{\"type\":\"x\",\"pad\":\"{}\"}}", "y".repeat(3000));
    append(&path, &long.as_bytes()[..1500]);
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Appended));
    assert_eq!(tail.as_ref().map(HostTail::offset), Some(ends[0] as u64));
    append(&path, &long.as_bytes()[1500..]);
    append(&path, b"\n");
    append(&path, &bytes[ends[0]..]);
    assert_eq!(check(&path, &limits, &mut tail), Some(TailRead::Appended));
}

#[test]
fn h31_a_pi_session_keeps_no_tail() {
    let (_dir, path) = temp_file(b"{\"type\":\"session\",\"version\":3,\"id\":\"p\"}\n");
    let mut tail = None;
    assert_eq!(
        read_host_tail(&path, &growing(false), &mut tail).expect("read"),
        TailRead::NotHost
    );
    assert!(tail.is_none());
}
