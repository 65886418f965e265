//! `advisor replay` with a roster of named advisors (§15, RO23): the binary over a small
//! recorded session against the in-process HTTP model server, with two advisors found in
//! the workspace root's `WATCHDOG.yml`.

use std::path::Path;

use advisor::providers::testing::{ScriptedResponse, SseServer};
use serde_json::Value;

use super::replay_e2e::{advise, json_lines, replay_in, silent, two_turn_session};

const NOTE: &str = "The fix reads sorted[mid + 1]; the lower middle is sorted[mid - 1].";

/// Two advisors at the test server (`--base-url`), each with its own model id.
fn roster_in(root: &Path) {
    std::fs::create_dir_all(root.join(".omp")).unwrap();
    std::fs::write(
        root.join(".omp/WATCHDOG.yml"),
        "advisors:\n  - name: Architecture\n    model: local/arch\n  - name: Security\n    model: local/sec\n",
    )
    .unwrap();
}

/// Turn 1: both advisors silent; turn 2: both raise the same concern. The answers of one
/// turn are alike, so whichever advisor asks first gets the same one (syncBacklog 1 keeps
/// the turns apart).
fn answers() -> Vec<ScriptedResponse> {
    vec![
        silent(),
        silent(),
        advise(NOTE, Some("concern")),
        advise(NOTE, Some("concern")),
    ]
}

/// The advisor names a note's `advisor` carries (one name, or several comma-joined, RO22).
fn names(advisor: &str) -> Vec<String> {
    advisor.split(", ").map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ro23_replay_names_each_notes_advisor_in_json_and_text_and_lists_each_in_the_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = two_turn_session(dir.path());
    let root = tempfile::tempdir().expect("root");
    roster_in(root.path());

    let server = SseServer::start(answers()).await.expect("bind");
    let run = replay_in(root.path(), &path, &server, &["--json"]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert_eq!(
        requested_models(&server),
        ["arch", "arch", "sec", "sec"],
        "each advisor reviews each turn"
    );
    let lines = json_lines(&run.stdout);
    let notes: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("channel").is_some())
        .collect();
    assert!(!notes.is_empty(), "stdout:\n{}", run.stdout);
    let mut named: Vec<String> = notes
        .iter()
        .flat_map(|n| names(n["advisor"].as_str().expect("a named note")))
        .collect();
    named.sort();
    named.dedup();
    assert_eq!(
        named,
        ["Architecture", "Security"],
        "stdout:\n{}",
        run.stdout
    );
    for note in &notes {
        assert_eq!(note["turn"], 2);
        assert_eq!(note["note"], NOTE);
    }
    let status = &lines.last().expect("a status line")["status"];
    let listed: Vec<&str> = status["advisors"]
        .as_array()
        .expect("advisors in the status")
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["Architecture", "Security"], "{status}");

    let server = SseServer::start(answers()).await.expect("bind");
    let run = replay_in(root.path(), &path, &server, &[]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    let headers: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("── turn 2 · "))
        .collect();
    assert!(!headers.is_empty(), "stdout:\n{}", run.stdout);
    for header in &headers {
        assert!(
            // SP8: each advisor's model after its name.
            header.ends_with(" · Architecture · local/arch ──")
                || header.ends_with(" · Security · local/sec ──")
                || header.ends_with(" · Architecture, Security · local/arch, local/sec ──")
                || header.ends_with(" · Security, Architecture · local/sec, local/arch ──"),
            "{header}"
        );
    }
    for name in ["Architecture", "Security"] {
        let line = format!("  {name}: local/");
        assert!(
            run.stdout.lines().any(|l| l.starts_with(&line)),
            "{name} in the final status:\n{}",
            run.stdout
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ro23_replay_no_watchdog_leaves_the_roster_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = two_turn_session(dir.path());
    let root = tempfile::tempdir().expect("root");
    roster_in(root.path());
    let server = SseServer::start([silent(), advise(NOTE, Some("concern"))])
        .await
        .expect("bind");
    let run = replay_in(root.path(), &path, &server, &["--json", "--no-watchdog"]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    let lines = json_lines(&run.stdout);
    let note = lines
        .iter()
        .find(|l| l.get("channel").is_some())
        .expect("the unnamed advisor's note");
    assert!(note.get("advisor").is_none(), "{note}");
    assert!(lines.last().unwrap()["status"].get("advisors").is_none());
    assert_eq!(server.request_count(), 2, "one advisor, two turns");
}

/// `advisor replay` of `session` in `root` naming no session model unless `extra` does (no
/// `--model`, no `ADVISOR_MODEL`, an empty agent directory), the roster's `local/…` models
/// reached at the test server.
async fn replay_without_a_model(
    root: &Path,
    session: &Path,
    server: &SseServer,
    extra: &[&str],
) -> super::replay_e2e::Run {
    let agent = tempfile::tempdir().expect("agent dir");
    let out = tokio::process::Command::new(crate::support::advisor_bin())
        .arg("replay")
        .arg(session)
        .args(["--api", "openai-completions", "--json"])
        .args(["--base-url", &server.base_url()])
        .args(["--policy", "interrupt", "--transcript", "compact"])
        .arg("--root")
        .arg(root)
        .args(extra)
        .env("PI_CODING_AGENT_DIR", agent.path())
        .env_remove("ADVISOR_MODEL")
        .env_remove("OPENROUTER_API_KEY")
        .env_remove("ADVISOR_NO_REVIEW")
        .env_remove("ADVISOR_COMPACT_AT")
        .kill_on_drop(true)
        .output()
        .await
        .expect("the advisor binary runs");
    super::replay_e2e::Run {
        ok: out.status.success(),
        stdout: String::from_utf8(out.stdout).expect("utf-8 output"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The model ids the server was asked for, sorted.
fn requested_models(server: &SseServer) -> Vec<String> {
    let mut models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap_or_default().to_string())
        .collect();
    models.sort();
    models
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ro12_replay_runs_a_roster_whose_advisors_name_their_models_without_a_session_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = two_turn_session(dir.path());
    let root = tempfile::tempdir().expect("root");
    roster_in(root.path());
    // No model named anywhere; then one named whose provider's key is missing.
    for extra in [&[][..], &["--model", "openrouter/some/model"][..]] {
        let server = SseServer::start(answers()).await.expect("bind");
        let run = replay_without_a_model(root.path(), &path, &server, extra).await;
        assert!(run.ok, "{extra:?}: stderr: {}", run.stderr);
        assert_eq!(requested_models(&server), ["arch", "arch", "sec", "sec"]);
        let lines = json_lines(&run.stdout);
        assert!(
            lines
                .iter()
                .any(|l| l.get("channel").is_some() && l["note"] == NOTE),
            "stdout:\n{}",
            run.stdout
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ro12_replay_without_a_model_for_any_advisor_is_one_error_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = two_turn_session(dir.path());
    let root = tempfile::tempdir().expect("root");
    std::fs::create_dir_all(root.path().join(".omp")).unwrap();
    // One entry without a model (it would use the session's), one turned off.
    std::fs::write(
        root.path().join(".omp/WATCHDOG.yml"),
        "advisors:\n  - name: Architecture\n  - name: Security\n    model: local/sec\n    enabled: false\n",
    )
    .unwrap();
    let server = SseServer::start(answers()).await.expect("bind");
    let run = replay_without_a_model(root.path(), &path, &server, &[]).await;
    assert!(!run.ok, "stdout: {}", run.stdout);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("--model"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(server.request_count(), 0);
}
