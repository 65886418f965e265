//! Claude Code transcripts and Codex rollouts as session files (L6–L8) from the outside:
//! `advisor render` matches golden output in every view, `advisor replay` reviews every turn
//! against the scripted model server, `advisor eval --check` takes host-format cases.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use advisor::providers::testing::SseServer;
use advisor::replay::eval::corpus::check_corpus;
use advisor::session::{read_session, SessionFormat};

use super::replay_e2e::{json_lines, last_user_text, plan, replay_in, script};

const CLAUDE: &str = "claude_transcript";
const CODEX: &str = "codex_rollout";

fn hosts(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hosts")
        .join(relative)
}

/// Standard output of `advisor ARGS… PATH`, which must succeed without a word on standard
/// error (no malformed line, no warning).
fn advisor(args: &[&str], path: &Path) -> String {
    let out = Command::new(crate::support::advisor_bin())
        .args(args)
        .arg(path)
        .output()
        .expect("advisor runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.is_empty(), "{stderr}");
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn render(path: &Path, view: &str) -> String {
    advisor(&["render", "--transcript", view], path)
}

/// `advisor render` of a host sample in `view` is byte for byte its golden file
/// (`tests/fixtures/hosts/render/NAME.VIEW.jsonl`, written by the same command).
fn assert_golden(name: &str, view: &str) {
    let got = render(&hosts(&format!("{name}.jsonl")), view);
    let golden = hosts(&format!("render/{name}.{view}.jsonl"));
    let want = std::fs::read_to_string(&golden).expect("the golden file is checked in");
    for (n, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "{} line {}", golden.display(), n + 1);
    }
    assert_eq!(got, want, "{}", golden.display());
}

#[test]
fn l6_l3_claude_transcript_renders_its_golden_output_in_every_view() {
    for view in ["expanded", "compact", "full"] {
        assert_golden(CLAUDE, view);
    }
}

#[test]
fn l6_l3_codex_rollout_renders_its_golden_output_in_every_view() {
    for view in ["expanded", "compact", "full"] {
        assert_golden(CODEX, view);
    }
}

#[test]
fn l6_l3_both_samples_show_the_prompt_the_calls_and_the_hook_text_turn_by_turn() {
    for (name, tool) in [(CLAUDE, "Bash"), (CODEX, "exec_command")] {
        let rows = json_lines(&render(&hosts(&format!("{name}.jsonl")), "compact"));
        let prompts: Vec<&str> = rows.iter().map(|r| r["prompt"].as_str().unwrap()).collect();
        assert_eq!(prompts.len(), 4, "{name}: four turns");
        assert!(
            prompts[0].contains("Create a.txt containing hi using"),
            "{name}"
        );
        assert!(
            prompts[0].contains(&format!("→ {tool}(echo DENYME > b.txt) ⇒")),
            "{name}"
        );
        assert!(
            prompts[1].contains(&format!("→ {tool}(echo hi > a.txt) ⇒ ok")),
            "{name}"
        );
        assert!(prompts[2].contains("[hook] ADVISOR-POST-CTX: nit: check the file you just wrote."));
        assert!(
            prompts[2].ends_with("**agent**:\nDone: wrote a.txt.\n"),
            "{name}"
        );
        assert!(prompts[3]
            .contains("[hook] ADVISOR-STOP-BLOCK: concern: you did not verify a.txt; verify it."));
    }
}

#[test]
fn l6_samples_read_with_their_format_version_and_skipped_lines_counted() {
    let claude = read_session(&hosts("claude_transcript.jsonl")).expect("reads");
    assert_eq!(claude.header.format, SessionFormat::ClaudeCode);
    assert_eq!(
        claude.header.id.as_deref(),
        Some("5170e527-b0bd-4965-9c59-ea51fe52b08f")
    );
    assert_eq!(claude.header.cwd.as_deref(), Some("$PROJ"));
    assert!(claude.diagnostics.malformed.is_empty());
    let skipped = &claude.diagnostics.skipped;
    assert_eq!(skipped.get("api-request-blob"), Some(&5));
    assert_eq!(skipped.get("attachment:prompt_snapshot"), Some(&2));
    assert_eq!(skipped.get("system:stop_hook_summary"), Some(&2));
    let usage: Vec<u64> = claude
        .messages()
        .filter_map(|m| match m {
            advisor::domain::transcript::TranscriptMessage::Assistant(a) => {
                a.usage.map(|u| u.input)
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        usage,
        [100, 100, 100, 100],
        "SP5: every assistant message carries its usage"
    );

    let codex = read_session(&hosts("codex_rollout.jsonl")).expect("reads");
    assert_eq!(codex.header.format, SessionFormat::Codex);
    assert_eq!(codex.header.cli_version.as_deref(), Some("0.171.0"));
    assert_eq!(
        codex.header.id.as_deref(),
        Some("01a24654-63f8-70f2-aea5-52c05096d014")
    );
    assert!(codex.diagnostics.malformed.is_empty());
    assert_eq!(codex.diagnostics.skipped.get("developer-context"), Some(&1));
    assert_eq!(codex.diagnostics.skipped.get("user-context"), Some(&1));
    let usage = codex
        .messages()
        .filter(|m| matches!(m, advisor::domain::transcript::TranscriptMessage::Assistant(a) if a.usage.is_some()))
        .count();
    assert_eq!(usage, 4);
}

/// `advisor replay` over a host sample with the scripted model: one review per turn, the
/// advice given at turn 3 printed at turn 3, and the reviews sent the transcript's text.
async fn replay_reviews_every_turn(name: &str) {
    let path = hosts(&format!("{name}.jsonl"));
    let plan = plan(&path);
    assert_eq!(plan.prompts.len(), 4, "{name}: four reviewed turns");
    let advice = BTreeMap::from([(
        3,
        ("Check a.txt before saying it is done.", Some("concern")),
    )]);
    let server = SseServer::start(script(&plan, &advice))
        .await
        .expect("bind");
    let root = tempfile::tempdir().expect("a root");
    let run = replay_in(root.path(), &path, &server, &["--json"]).await;
    assert!(run.ok, "{name}: {}", run.stderr);
    let lines = json_lines(&run.stdout);
    let (status, notes) = lines.split_last().expect("output");
    assert!(status.get("status").is_some(), "{name}: {status}");
    assert_eq!(notes.len(), 1, "{name}: {}", run.stdout);
    assert_eq!(notes[0]["turn"], 3);
    assert_eq!(notes[0]["note"], "Check a.txt before saying it is done.");
    assert_eq!(server.request_count(), 4, "{name}: one review per turn");
    let first = last_user_text(&server.requests()[0].json());
    assert!(
        first.contains("Create a.txt containing hi"),
        "{name}: {first}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l6_l2_claude_transcript_replays_with_a_review_per_turn() {
    replay_reviews_every_turn(CLAUDE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l6_l2_codex_rollout_replays_with_a_review_per_turn() {
    replay_reviews_every_turn(CODEX).await;
}

#[test]
fn l6_ev1_eval_check_takes_cases_whose_session_is_a_host_transcript() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval/hosts");
    let check = check_corpus(&corpus).expect("lists");
    assert!(check.problems.is_empty(), "{:?}", check.problems);
    let turns: Vec<(String, usize)> = check
        .cases
        .iter()
        .map(|c| (c.spec.id.clone(), c.turns))
        .collect();
    assert_eq!(
        turns,
        [
            ("claude-fake-done-01".to_string(), 4),
            ("codex-control-01".to_string(), 4)
        ]
    );
    let stdout = advisor(&["eval", "--check"], &corpus);
    assert!(
        stdout.contains("2 cases (1 planted, 1 controls)"),
        "{stdout}"
    );
}
