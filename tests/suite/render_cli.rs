//! `advisor render` from the outside (L3, L5): the real session renders to valid JSON lines
//! whose prompts match golden text; bad lines are reported and skipped.

use crate::support::fixtures;
use fixtures::pi_fixture;

use std::process::Command;

fn render(path: &std::path::Path, extra: &[&str]) -> (Vec<serde_json::Value>, String, bool) {
    let out = Command::new(crate::support::advisor_bin())
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
    let (rows, stderr, ok) = render(&path, &["--transcript", "compact"]);
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
    let (rows, stderr, ok) = render(&path, &["--transcript", "compact"]);
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
    let out = Command::new(crate::support::advisor_bin())
        .args(["render", "/nonexistent/session.jsonl"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("/nonexistent/session.jsonl"));
    assert!(out.stdout.is_empty());
}

/// What `advisor ARGS` printed, with `input` on its standard input; fails the test when
/// the command has not finished within ten seconds (and kills it, by its id).
fn run_bounded(args: &[&std::ffi::OsStr], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(crate::support::advisor_bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("advisor starts");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("a stdin pipe");
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        // The command may exit without reading: a broken pipe is fine.
        let _ = stdin.write_all(&input);
    });
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match finished.recv_timeout(std::time::Duration::from_secs(10)) {
        Ok(output) => {
            let _ = feeder.join();
            output.expect("advisor ran")
        }
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("advisor {args:?} did not finish within 10 s");
        }
    }
}

/// `advisor render --transcript compact SESSION`, the view these tests' golden text is in.
fn render_compact(session: &std::ffi::OsStr, input: &[u8]) -> std::process::Output {
    run_bounded(
        &[os("render"), os("--transcript"), os("compact"), session],
        input,
    )
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

/// Standard output as JSON rows, and standard error, of a finished run.
fn rows_of(out: &std::process::Output) -> (Vec<serde_json::Value>, String) {
    let stdout = String::from_utf8(out.stdout.clone()).expect("utf-8 output");
    let rows = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("invalid JSON line {l:?}: {e}")))
        .collect();
    (rows, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn assert_one_error_line(out: &std::process::Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert_eq!(stderr.trim(), expected);
    assert!(out.stdout.is_empty());
}

const NOT_A_FILE: &str =
    "is not a regular file (sessions are read from regular files, or `-` for standard input)";

#[test]
fn l1_render_dev_zero_is_one_clear_error_at_once() {
    let out = run_bounded(&[os("render"), os("/dev/zero")], b"");
    assert_one_error_line(&out, &format!("advisor: /dev/zero {NOT_A_FILE}"));
}

#[test]
fn l1_replay_opens_sessions_the_same_way() {
    let out = run_bounded(&[os("replay"), os("/dev/zero")], b"");
    assert_one_error_line(&out, &format!("advisor: /dev/zero {NOT_A_FILE}"));
    let dir = tempfile::tempdir().unwrap();
    let out = run_bounded(&[os("replay"), dir.path().as_os_str()], b"");
    assert_one_error_line(
        &out,
        &format!("advisor: {} {NOT_A_FILE}", dir.path().display()),
    );
}

#[test]
fn l1_a_fifo_session_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("session.jsonl");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo failed");
    // Nobody ever writes to the FIFO: opening it for reading would wait forever.
    let out = run_bounded(&[os("render"), fifo.as_os_str()], b"");
    assert_one_error_line(&out, &format!("advisor: {} {NOT_A_FILE}", fifo.display()));
}

/// A version 3 session with an abandoned branch: one turn on the current branch.
const TREE: &str = concat!(
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/tmp"}"#,
    "\n",
    r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"fix it"}}"#,
    "\n",
    r#"{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"text","text":"abandoned"}],"stopReason":"stop"}}"#,
    "\n",
    r#"{"type":"message","id":"c","parentId":"a","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"stopReason":"stop"}}"#,
    "\n",
);

#[test]
fn l1_render_dash_reads_standard_input() {
    let out = render_compact(os("-"), TREE.as_bytes());
    let (rows, stderr) = rows_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        rows,
        [
            serde_json::json!({"turn":1,"prompt":"### Session update\n\n**user**:\nfix it\n\n**agent**:\ndone\n"})
        ]
    );
    // Diagnostics name standard input, not `-`.
    let broken = format!("{TREE}{{oops\n");
    let out = run_bounded(&[os("render"), os("-")], broken.as_bytes());
    let (_, stderr) = rows_of(&out);
    assert!(
        stderr.contains("advisor: standard input:5: skipped malformed line: invalid JSON"),
        "{stderr}"
    );
    let out = run_bounded(&[os("render"), os("-")], b"");
    assert_one_error_line(&out, "advisor: standard input is empty");
}

/// Writes a version 3 session of `entries` (after its header) and returns its path.
fn write_session(dir: &tempfile::TempDir, entries: &[String]) -> std::path::PathBuf {
    let path = dir.path().join("s.jsonl");
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/tmp"}"#;
    std::fs::write(&path, format!("{header}\n{}\n", entries.join("\n"))).unwrap();
    path
}

/// A `message` entry: a user prompt, or (`agent`) a finished assistant reply.
fn entry(id: &str, parent: Option<&str>, agent: bool, text: &str) -> String {
    let message = if agent {
        serde_json::json!({"role":"assistant","content":[{"type":"text","text":text}],"stopReason":"stop"})
    } else {
        serde_json::json!({"role":"user","content":text})
    };
    serde_json::json!({"type":"message","id":id,"parentId":parent,"message":message}).to_string()
}

#[test]
fn l1_a_parent_loop_is_reported_and_the_well_formed_branch_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_session(
        &dir,
        &[
            entry("e1", None, false, "one"),
            entry("e2", Some("e1"), true, "two"),
            entry("e3", Some("e4"), false, "three"),
            entry("e4", Some("e3"), true, "four"),
        ],
    );
    let out = render_compact(path.as_os_str(), b"");
    let (rows, stderr) = rows_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("changed while it was read"), "{stderr}");
    assert!(
        stderr.contains(":4: skipped malformed line: parentId loop: line 4 → line 5 → line 4;"),
        "{stderr}"
    );
    assert_eq!(
        rows,
        [
            serde_json::json!({"turn":1,"prompt":"### Session update\n\n**user**:\none\n\n**agent**:\ntwo\n"})
        ]
    );
}

#[test]
fn l1_a_byte_order_mark_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bom.jsonl");
    std::fs::write(&path, format!("\u{feff}{TREE}")).unwrap();
    let out = render_compact(path.as_os_str(), b"");
    let (rows, stderr) = rows_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(rows.len(), 1, "{stderr}");
    assert_eq!(rows[0]["turn"], 1);
}

#[test]
fn r1_reset_boundary_resets_the_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_session(
        &dir,
        &[
            entry("e1", None, false, "first"),
            entry("e2", Some("e1"), true, "answer"),
            entry("e3", Some("e2"), false, "never answered"),
            r#"{"type":"reset_boundary","id":"e4","parentId":"e3","timestamp":"2026-01-01T00:01:00Z"}"#
                .to_string(),
            entry("e5", Some("e4"), false, "fresh start"),
            entry("e6", Some("e5"), true, "done"),
        ],
    );
    let out = render_compact(path.as_os_str(), b"");
    let (rows, stderr) = rows_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        rows,
        [
            serde_json::json!({"turn":1,"prompt":"### Session update\n\n**user**:\nfirst\n\n**agent**:\nanswer\n"}),
            // After `/clear` the primary's context holds only what follows it.
            serde_json::json!({"turn":2,"prompt":"### Session update\n\n**user**:\nfresh start\n\n**agent**:\ndone\n"}),
        ]
    );
}
