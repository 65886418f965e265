//! `advisor replay` end to end (L2, L5, S1, R1, D2, D3, C3): the built binary replays
//! session files against the in-process OpenAI-compatible server, scripted request by
//! request, and the test reads what a user would see on standard output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use advisor::providers::testing::{sse_event, ScriptedResponse, SseServer};
use advisor::session::{read_session, HostStep, SessionDriver};
use advisor::TranscriptView;
use advisor::{FeedCursor, FeedOutcome};
use serde_json::{json, Value};

/// Prompt tokens each scripted answer reports: small, so the advisor's context never passes
/// its re-prime threshold and every fresh context in the request stream comes from a reset.
pub(super) const PROMPT_TOKENS: u64 = 100;
pub(super) const COMPLETION_TOKENS: u64 = 7;
const COST: f64 = 0.0005;

pub(super) fn manifest_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The vendored recorded pi session.
fn fixture(name: &str) -> Option<PathBuf> {
    crate::support::fixtures::pi_fixture(name)
}

pub(super) fn chunk(delta: Value, finish: Option<&str>) -> String {
    sse_event(
        None,
        &json!({"id": "gen", "object": "chat.completion.chunk", "model": "test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string(),
    )
}

pub(super) fn finish(mut body: Vec<String>) -> ScriptedResponse {
    body.push(sse_event(
        None,
        &json!({"id": "gen", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS, "cost": COST}})
        .to_string(),
    ));
    body.push("data: [DONE]\n\n".to_string());
    ScriptedResponse::sse(&body.concat())
}

/// An answer with no text and no tool call: the advisor stays silent.
pub(super) fn silent() -> ScriptedResponse {
    finish(vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({}), Some("stop")),
    ])
}

/// An answer calling `advise` once.
pub(super) fn advise(note: &str, severity: Option<&str>) -> ScriptedResponse {
    let mut args = json!({ "note": note });
    if let Some(s) = severity {
        args["severity"] = json!(s);
    }
    finish(vec![
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_advise",
                "type": "function", "function": {"name": "advise", "arguments": args.to_string()}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ])
}

/// What the runtime will send for each turn of a session: the turns with a non-blank delta,
/// in order, with the prompt, and whether a compaction reset came just before.
pub(super) struct Plan {
    pub(super) prompts: Vec<(usize, String, bool)>,
    pub(super) turns: usize,
    pub(super) compactions: usize,
}

pub(super) fn plan(path: &Path) -> Plan {
    let mut driver = SessionDriver::new(read_session(path).expect("a session file"));
    let transcript = driver.transcript();
    // The runtime bounds the replay after a reset to twice the window in characters; the
    // test server's model is unknown to the catalog, so the window is the default 128k.
    let mut cursor = FeedCursor::new(TranscriptView::Compact, Some(256_000));
    let (mut prompts, mut compactions, mut reset) = (Vec::new(), 0, false);
    for step in driver.by_ref() {
        match step {
            HostStep::TurnEnded { turn, .. } => {
                if let FeedOutcome::Delta(prompt) = cursor.observe(&transcript) {
                    prompts.push((turn, prompt, std::mem::take(&mut reset)));
                }
            }
            HostStep::Compacted => {
                compactions += 1;
                cursor.reset();
                reset = true;
            }
            HostStep::RunStarted | HostStep::RunEnded => {}
        }
    }
    Plan {
        prompts,
        turns: driver.turns(),
        compactions,
    }
}

/// The scripted answers, in request order: per reviewed turn one silent answer, or an
/// `advise` call when `advice` names that turn (an advise-only turn ends its review, P2).
pub(super) fn script(
    plan: &Plan,
    advice: &BTreeMap<usize, (&str, Option<&str>)>,
) -> Vec<ScriptedResponse> {
    let mut out = Vec::new();
    for (turn, _, _) in &plan.prompts {
        match advice.get(turn) {
            Some((note, severity)) => out.push(advise(note, *severity)),
            None => out.push(silent()),
        }
    }
    out
}

pub(super) struct Run {
    pub(super) ok: bool,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

async fn replay(session: &Path, server: &SseServer, extra: &[&str]) -> Run {
    let root = tempfile::tempdir().expect("a temporary root");
    replay_in(root.path(), session, server, extra).await
}

/// [`replay`] with the workspace root `root` (where `.omp/config.yml` is read).
pub(super) async fn replay_in(
    root: &Path,
    session: &Path,
    server: &SseServer,
    extra: &[&str],
) -> Run {
    // These runs were written for D3's routing, the default policy before P1 made `defer`
    // the default: unless the test chooses a policy itself (a flag, or the root's
    // settings file), they ask for `interrupt`.
    let settings = std::fs::read_to_string(root.join(".omp/config.yml")).unwrap_or_default();
    let chosen = extra.contains(&"--policy") || settings.contains("policy:");
    let policy: &[&str] = if chosen {
        &[]
    } else {
        &["--policy", "interrupt"]
    };
    let out = tokio::process::Command::new(crate::support::advisor_bin())
        .arg("replay")
        .arg(session)
        .args(["--model", "local/test", "--api", "openai-completions"])
        .args(["--base-url", &server.base_url()])
        .arg("--root")
        .arg(root)
        // The compact view: `plan` predicts its prompts, one user message per review.
        .args(["--transcript", "compact"])
        .args(policy)
        .args(extra)
        .env_remove("ADVISOR_MODEL")
        .env_remove("ADVISOR_NO_REVIEW")
        .env_remove("ADVISOR_COMPACT_AT")
        // A test that gives up on a hung replay (a timeout around this call) ends it too.
        .kill_on_drop(true)
        .output()
        .await
        .expect("the advisor binary runs");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8(out.stdout).expect("utf-8 output"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub(super) fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

/// The last user message of a request body.
pub(super) fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| crate::support::wire_user_text(&m["content"]))
        .unwrap_or_default()
}

/// The first turn at or after `target` whose delta is reviewed.
fn reviewed_turn_at_or_after(plan: &Plan, target: usize) -> usize {
    plan.prompts
        .iter()
        .map(|(turn, _, _)| *turn)
        .find(|t| *t >= target)
        .expect("a reviewed turn")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l2_real_session_replays_with_advice_on_the_expected_turns_and_channels() {
    let Some(path) = fixture("before-compaction.jsonl") else {
        return;
    };
    let plan = plan(&path);
    assert_eq!(
        plan.turns, 465,
        "465 assistant turns are neither aborted nor errors"
    );
    assert_eq!(plan.compactions, 2);
    // Turns far apart, so immune turns (D7) never turn a concern into an aside.
    let (t_plain, t_nit, t_concern, t_blocker) = (
        reviewed_turn_at_or_after(&plan, 12),
        reviewed_turn_at_or_after(&plan, 120),
        reviewed_turn_at_or_after(&plan, 250),
        reviewed_turn_at_or_after(&plan, 400),
    );
    let advice = BTreeMap::from([
        (t_plain, ("Name the helper after what it returns.", None)),
        (
            t_nit,
            ("The <T> parameter & its bound are unused.", Some("nit")),
        ),
        (
            t_concern,
            (
                "The edit drops the error path of readConfig.",
                Some("concern"),
            ),
        ),
        (
            t_blocker,
            ("Tests run against the stale build output.", Some("blocker")),
        ),
    ]);
    let server = SseServer::start(script(&plan, &advice))
        .await
        .expect("bind");

    let run = replay(&path, &server, &["--json"]).await;
    assert!(run.ok, "exit status; stderr: {}", run.stderr);
    let lines = json_lines(&run.stdout);
    let (status, rest) = lines.split_last().expect("output");
    let deliveries: Vec<(u64, &str, Value, &str)> = rest
        .iter()
        .map(|l| {
            (
                l["turn"].as_u64().expect("turn"),
                l["channel"].as_str().expect("channel"),
                l["severity"].clone(),
                l["note"].as_str().expect("note"),
            )
        })
        .collect();
    let expected: Vec<(u64, &str, Value, &str)> = vec![
        (
            t_plain as u64,
            "aside",
            Value::Null,
            "Name the helper after what it returns.",
        ),
        (
            t_nit as u64,
            "aside",
            json!("nit"),
            "The <T> parameter & its bound are unused.",
        ),
        (
            t_concern as u64,
            "steer",
            json!("concern"),
            "The edit drops the error path of readConfig.",
        ),
        (
            t_blocker as u64,
            "steer",
            json!("blocker"),
            "Tests run against the stale build output.",
        ),
    ];
    assert_eq!(deliveries, expected, "stdout:\n{}", run.stdout);
    // D2: content is the XML the primary receives, escaped.
    assert_eq!(
        rest[1]["content"],
        "<advisory severity=\"nit\" guidance=\"weigh, don't blindly obey\">\n\
         The &lt;T&gt; parameter &amp; its bound are unused.\n</advisory>"
    );
    assert!(rest[0]["content"]
        .as_str()
        .is_some_and(|c| c.starts_with("<advisory guidance=")));

    // C3: the final status counts everything the replay did.
    let s = &status["status"];
    // One request per reviewed turn: an advise-only turn ends its review (P2).
    let calls = plan.prompts.len();
    assert_eq!(s["deliveries"]["aside"], 2, "{s}");
    assert_eq!(s["deliveries"]["steer"], 2);
    assert_eq!(s["deliveries"]["wake"], 0);
    assert_eq!(s["deliveries"]["pending"], 0);
    assert_eq!(s["failures"], 0);
    assert_eq!(s["agent"]["backlog"], 0);
    assert_eq!(s["agent"]["droppedTurns"], 0);
    assert_eq!(s["agent"]["reviews"], plan.prompts.len());
    assert_eq!(s["agent"]["modelCalls"], calls);
    assert_eq!(
        s["agent"]["lifetime"]["input"],
        PROMPT_TOKENS * calls as u64
    );
    assert_eq!(
        s["agent"]["lifetime"]["output"],
        COMPLETION_TOKENS * calls as u64
    );
    let cost = s["agent"]["lifetime"]["cost"].as_f64().expect("cost");
    assert!((cost - COST * calls as f64).abs() < 1e-9, "{cost}");

    // S1 with syncBacklog 1: one review per turn, in order; R1: each compaction reset the
    // advisor, so the request for the next turn starts a fresh context with the whole
    // compacted transcript.
    let requests: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(requests.len(), calls);
    let mut fresh = Vec::new();
    for (index, (turn, prompt, after_reset)) in plan.prompts.iter().enumerate() {
        let body = &requests[index];
        assert_eq!(
            &last_user_text(body),
            prompt,
            "request {index} is turn {turn}"
        );
        let messages = body["messages"].as_array().expect("messages").len();
        if messages == 2 {
            fresh.push(*turn);
        }
        if *after_reset {
            assert_eq!(messages, 2, "turn {turn} after a compaction starts fresh");
            assert!(prompt.contains("[compaction] "), "turn {turn}");
        }
    }
    let resets: Vec<usize> = plan.prompts.iter().filter(|p| p.2).map(|p| p.0).collect();
    assert_eq!(resets.len(), 2, "both compactions reset the advisor");
    let mut expected_fresh = vec![plan.prompts[0].0];
    expected_fresh.extend(resets);
    assert_eq!(
        fresh, expected_fresh,
        "fresh contexts come only from resets"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l2_example_session_replays_with_a_steer_after_the_failing_test() {
    let path = manifest_path("examples/sessions/median-fix.jsonl");
    let plan = plan(&path);
    assert_eq!(plan.prompts.len(), 7);
    let advice = BTreeMap::from([(
        4,
        (
            "The failing test shows the pair should be mid - 1 and mid.",
            Some("concern"),
        ),
    )]);
    let server = SseServer::start(script(&plan, &advice))
        .await
        .expect("bind");

    let run = replay(&path, &server, &[]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert!(
        run.stdout.starts_with(
            "── turn 4 · steer · local/test ──\n\
             <advisory severity=\"concern\" guidance=\"weigh, don't blindly obey\">\n\
             The failing test shows the pair should be mid - 1 and mid.\n</advisory>\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("replayed 7 turns in 1 runs, 0 compactions"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("notes: delivered 1 (aside 0, steer 1, wake 0, card 0)"),
        "{}",
        run.stdout
    );
    assert_eq!(server.request_count(), 7, "one request per turn (P2)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f3_l2_rejected_key_pauses_with_a_notice_line_and_the_replay_still_exits_0() {
    let path = manifest_path("examples/sessions/median-fix.jsonl");
    let server = SseServer::start([ScriptedResponse::json(
        401,
        r#"{"error":{"message":"invalid api key"}}"#,
    )])
    .await
    .expect("bind");

    let run = replay(&path, &server, &["--json"]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    let lines = json_lines(&run.stdout);
    let notices: Vec<&str> = lines.iter().filter_map(|l| l["notice"].as_str()).collect();
    assert_eq!(notices.len(), 1, "{}", run.stdout);
    assert!(notices[0].starts_with("advisor: paused"), "{}", notices[0]);
    let status = &lines.last().expect("a status line")["status"];
    assert!(status["paused"].is_string(), "{status}");
    assert_eq!(
        server.request_count(),
        1,
        "a paused advisor makes no more calls"
    );
}

#[test]
fn l5_unusable_input_is_one_clear_line_and_a_non_zero_exit() {
    let example = manifest_path("examples/sessions/median-fix.jsonl");
    let not_a_session = manifest_path("Cargo.toml");
    let cases: [(&Path, &[&str], &str); 3] = [
        (Path::new("/nonexistent/session.jsonl"), &[], "cannot read"),
        (&not_a_session, &[], "not a session file"),
        (&example, &[], "OPENROUTER_API_KEY"),
    ];
    for (session, extra, expected) in cases {
        let out = std::process::Command::new(crate::support::advisor_bin())
            .arg("replay")
            .arg(session)
            .args(extra)
            .env_remove("ADVISOR_MODEL")
            .output()
            .expect("the advisor binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{session:?}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(out.stdout.is_empty());
    }
    let out = std::process::Command::new(crate::support::advisor_bin())
        .arg("replay")
        .arg(&example)
        .env_remove("ADVISOR_MODEL")
        .output()
        .expect("the advisor binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for hint in ["--model", "--base-url"] {
        assert!(stderr.contains(hint), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_l2_audit_flag_writes_the_advisors_transcript_as_json_lines() {
    let path = manifest_path("examples/sessions/median-fix.jsonl");
    let plan = plan(&path);
    let server = SseServer::start(script(&plan, &BTreeMap::new()))
        .await
        .expect("bind");
    let dir = tempfile::tempdir().expect("tempdir");
    let audit = dir.path().join("median-fix__advisor.jsonl");
    let audit_arg = audit.to_string_lossy().into_owned();
    let run = replay(&path, &server, &["--audit", &audit_arg]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    let text = std::fs::read_to_string(&audit).expect("audit file written");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let users = lines
        .iter()
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "user")
        .count();
    assert_eq!(
        users,
        plan.prompts.len(),
        "one session update per reviewed turn"
    );
    assert!(lines.iter().any(|l| l["message"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("### Session update"))));
    assert_eq!(
        (lines[0]["type"].as_str(), lines[1]["type"].as_str()),
        (Some("title"), Some("session")),
        "P9: a session file of version 3, opened by oh-my-pi's title line"
    );
}

/// The first two turns of the example session (both call tools, so neither is terminal),
/// written to `dir`.
pub(super) fn two_turn_session(dir: &Path) -> PathBuf {
    let example = std::fs::read_to_string(manifest_path("examples/sessions/median-fix.jsonl"))
        .expect("the example session");
    let prefix: Vec<&str> = example.lines().take(7).collect();
    let path = dir.join("two-turns.jsonl");
    std::fs::write(&path, prefix.join("\n") + "\n").expect("write the session");
    let plan = plan(&path);
    assert_eq!((plan.turns, plan.prompts.len()), (2, 2));
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l2_d9_reconfirm_a_note_still_held_at_the_end_is_printed_with_channel_pending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = two_turn_session(dir.path());
    let note = "The fix reads sorted[mid + 1]; the lower middle is sorted[mid - 1].";
    let server = SseServer::start([silent(), advise(note, Some("concern"))])
        .await
        .expect("bind");

    let run = replay(&path, &server, &["--json", "--policy", "reconfirm"]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    let lines = json_lines(&run.stdout);
    let (status, rest) = lines.split_last().expect("output");
    // Held on turn 2 (D4), never reconfirmed: no review came after it. L2 prints it anyway.
    let notes: Vec<&Value> = rest.iter().filter(|l| l.get("channel").is_some()).collect();
    assert_eq!(notes.len(), 1, "stdout:\n{}", run.stdout);
    let line = notes[0];
    assert_eq!(line["turn"], 2);
    assert_eq!(line["channel"], "pending");
    assert_eq!(line["severity"], "concern");
    assert_eq!(line["note"], note);
    let content = line["content"].as_str().expect("content");
    assert!(
        content.contains("context=\"raised about an earlier step\""),
        "{content}"
    );
    let s = &status["status"];
    assert_eq!(s["deliveries"]["held"], 1, "{s}");
    assert_eq!(s["heldNotes"][0]["note"], note);
    assert_eq!(
        server.request_count(),
        2,
        "no follow-up after the advise (P2)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l2_a_nit_raised_after_the_last_step_boundary_is_reported_pending_after_the_awaited_drain()
{
    use crate::support::runtime::GatedModel;
    use advisor::model::scripted::ScriptedReply;
    use advisor::replay::{Replay, ReplayEvent, ReplayOptions};
    use advisor::settings::SyncBacklog;
    use advisor::{AdvisorHandle, RuntimeConfig};
    use std::sync::Arc;
    use std::time::Duration;

    let dir = tempfile::tempdir().expect("tempdir");
    let path = two_turn_session(dir.path());
    let driver = SessionDriver::new(read_session(&path).expect("a session"));
    let note = "Name the test after the even-length case it covers.";
    // Every answer waits until the replay has made its last host call: the nit can only
    // arrive after the last step boundary, while the replay awaits the drain.
    let (model, _arrivals, gate) = GatedModel::new(
        vec![
            ScriptedReply::advise("a", note, Some("nit")),
            ScriptedReply::text(""),
            ScriptedReply::text(""),
        ],
        true,
    );
    let gate = gate.expect("gated");
    let mut config = RuntimeConfig::new(
        "replay-e2e",
        dir.path().to_path_buf(),
        Some(Arc::new(model)),
    );
    config.settings.sync_backlog = SyncBacklog::Off;
    let (handle, events) = AdvisorHandle::spawn(config).await.expect("runtime");
    let options = ReplayOptions {
        drain_timeout: Duration::from_secs(60),
        ..ReplayOptions::default()
    };
    let mut seen = Vec::new();
    let mut released = false;
    let outcome = Replay::new(driver, handle.clone(), events)
        .with_options(options)
        .run(|event| {
            if let ReplayEvent::Progress(p) = &event {
                if p.entries_done == p.entries_total && !released {
                    released = true;
                    gate.add_permits(3);
                }
            }
            seen.push(event);
        })
        .await
        .expect("the replay runs");
    handle.dispose().await.expect("dispose");

    assert!(released, "the permits were granted at the end of the file");
    assert!(outcome.drained, "the drain was awaited to its end");
    assert_eq!(outcome.pending, 1);
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e, ReplayEvent::Delivery { .. })),
        "no step boundary came after the nit"
    );
    let pending: Vec<(usize, &str)> = seen
        .iter()
        .filter_map(|e| match e {
            ReplayEvent::Pending { turn, delivery } => {
                assert_eq!(delivery.channel, advisor::domain::advice::Channel::Aside);
                Some((*turn, delivery.notes[0].note.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(pending, [(2, note)]);
    let last_two: Vec<bool> = seen[seen.len() - 2..]
        .iter()
        .map(|e| matches!(e, ReplayEvent::Pending { .. }))
        .collect();
    assert_eq!(last_two, [true, false], "pending, then the final status");
    assert!(matches!(seen.last(), Some(ReplayEvent::Finished(_))));
    assert_eq!(outcome.status.deliveries.pending, 1);
    assert_eq!(outcome.status.agent.backlog, 0);
}
