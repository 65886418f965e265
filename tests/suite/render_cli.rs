//! `advisor render` from the outside (L3, L5): the real session renders to valid JSON lines
//! whose prompts match golden text; bad lines are reported and skipped.

use crate::support::fixtures;
use fixtures::pi_fixture;

use std::process::Command;

fn render(path: &std::path::Path, extra: &[&str]) -> (Vec<serde_json::Value>, String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_advisor"))
        .arg("render")
        .arg(path)
        .args(extra)
        .output()
        .expect("advisor runs");
    let stdout = String::from_utf8(out.stdout).expect("utf-8 output");
    let rows = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("invalid JSON line {l:?}: {e}")))
        .collect();
    (
        rows,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

#[test]
fn l3_real_session_renders_valid_json_lines_matching_golden_prompts() {
    let Some(path) = pi_fixture("before-compaction.jsonl") else {
        return;
    };
    let (rows, stderr, ok) = render(&path, &[]);
    assert!(ok, "{stderr}");
    assert_eq!(rows.len(), 465, "one line per non-blank TurnEnd delta");
    let prompt = |turn: u64| -> String {
        rows.iter()
            .find(|r| r["turn"] == turn)
            .and_then(|r| r["prompt"].as_str())
            .unwrap_or_else(|| panic!("no prompt for turn {turn}"))
            .to_string()
    };
    assert_eq!(
        prompt(2),
        "### Session update\n\n**agent**:\nLet me get the rest of the tui-renderer file:\n\
→ read(/Users/badlogic/workspaces/pi-mono/packages/coding-agent/src/tui/tui-renderer.ts) ⇒ ok · 774 lines\n"
    );
    assert_eq!(
        prompt(465),
        "### Session update\n\n**user**:\nok\n\n**agent**:\n_thinking:_ The user said \"ok\" - they \
understand the difference. Nothing more needed here.\n👍\n"
    );
    assert!(prompt(1).starts_with(
        "### Session update\n\n**user**:\nalright, read @packages/coding-agent/src/main.ts"
    ));
    assert!(prompt(1).ends_with(
        "→ read(/Users/badlogic/workspaces/pi-mono/packages/coding-agent/src/main.ts) ⇒ ok · 1544 lines\n\
→ read(/Users/badlogic/workspaces/pi-mono/packages/coding-agent/src/tui/tui-renderer.ts) ⇒ ok · 1605 lines\n"
    ));
    // R1: after each compaction the whole compacted transcript is sent as one delta.
    let after_compaction: Vec<u64> = rows
        .iter()
        .filter(|r| {
            r["prompt"]
                .as_str()
                .unwrap_or("")
                .starts_with("### Session update\n\n[compaction] # Context Checkpoint")
        })
        .map(|r| r["turn"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(after_compaction, vec![171, 292]);
    assert!(prompt(171).contains("**user**:\ni reviwed what we have, it's good. continue\n"));
}

#[test]
fn l3_full_view_renders_too() {
    let Some(path) = pi_fixture("before-compaction.jsonl") else {
        return;
    };
    let (rows, stderr, ok) = render(&path, &["--transcript", "full"]);
    assert!(ok, "{stderr}");
    assert!(rows.len() > 400);
    assert!(rows[0]["prompt"]
        .as_str()
        .unwrap()
        .contains("#### User\n\n"));
}

#[test]
fn l5_malformed_line_is_reported_with_its_number_and_skipped_unknown_role_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let lines = [
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/tmp"}"#,
        r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"fix it"}}"#,
        r#"{"type":"message","id":"b","parentId":"a","message":{"role":"assist"#,
        r#"{"type":"message","id":"c","parentId":"a","message":{"role":"hologram","data":1}}"#,
        r#"{"type":"message","id":"d","parentId":"c","message":{"role":"assistant","content":[{"type":"sparkle"},{"type":"text","text":"done"}],"stopReason":"stop"}}"#,
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (rows, stderr, ok) = render(&path, &[]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains(":3:"), "line number reported: {stderr}");
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0]["prompt"],
        "### Session update\n\n**user**:\nfix it\n\n[hologram]\n\n**agent**:\ndone\n"
    );
}

#[test]
fn l5_missing_file_is_one_clear_line_and_nonzero_exit() {
    let out = Command::new(env!("CARGO_BIN_EXE_advisor"))
        .args(["render", "/nonexistent/session.jsonl"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("/nonexistent/session.jsonl"));
    assert!(out.stdout.is_empty());
}
