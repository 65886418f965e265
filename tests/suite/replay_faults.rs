//! `advisor replay` against a misbehaving model server (M4, S1, G4): the
//! built binary replays a session against the in-process OpenAI-compatible server and the
//! test reads what a user would see — every turn's advice printed at its turn after a
//! transient 500 (S1 held through retries in a replay, F1), the settings file's
//! `advisor.requestTimeoutSecs` ending a stalled call (M4), and lifetime tokens marked
//! estimated when the server streams no usage (G4, C3).
//!
//! The retry after a failure without `Retry-After` comes after the F1 default of 1 s, so
//! these replays take a second or two of wall time; nothing here waits on a timer.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use advisor::providers::testing::{ScriptedResponse, SseServer};
use serde_json::{json, Value};

use super::replay_e2e::{
    advise, chunk, json_lines, last_user_text, manifest_path, plan, replay_in, silent,
    two_turn_session, Run,
};

/// The longest a replay here may take: far above what they need (a few seconds), far below
/// what a call without its limits would hang for (the 180 s idle timeout).
const REPLAY_LIMIT: Duration = Duration::from_secs(60);

/// A transient server error, without `Retry-After`.
fn server_error() -> ScriptedResponse {
    ScriptedResponse::json(500, r#"{"error":{"message":"internal server error"}}"#)
}

/// A silent answer from a server that streams no usage at all (llama-cpp-python's).
fn silent_without_usage() -> ScriptedResponse {
    ScriptedResponse::sse(
        &[
            chunk(
                json!({"role": "assistant", "content": "Nothing to add."}),
                None,
            ),
            chunk(json!({}), Some("stop")),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat(),
    )
}

/// Replays `session` with the root `root`, failing the test when it runs past
/// [`REPLAY_LIMIT`] (the child is killed then).
async fn bounded_replay(root: &Path, session: &Path, server: &SseServer, extra: &[&str]) -> Run {
    tokio::time::timeout(REPLAY_LIMIT, replay_in(root, session, server, extra))
        .await
        .unwrap_or_else(|_| panic!("the replay ran past {REPLAY_LIMIT:?}"))
}

/// The text-mode delivery blocks of a replay's output: `(turn, channel, content)` for each
/// `── turn N · CHANNEL ──` header, the content being the lines up to the next blank line.
fn blocks(stdout: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut lines = stdout.lines();
    while let Some(line) = lines.next() {
        let Some(header) = line
            .strip_prefix("── turn ")
            .and_then(|rest| rest.strip_suffix(" ──"))
        else {
            continue;
        };
        let (turn, channel) = header.split_once(" · ").expect("turn · channel");
        let content: Vec<&str> = lines.by_ref().take_while(|l| !l.is_empty()).collect();
        out.push((
            turn.parse().expect("a turn number"),
            channel.to_string(),
            content.join("\n"),
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s1_l2_a_transient_500_costs_one_retry_and_every_turn_keeps_its_advice() {
    let path = manifest_path("examples/sessions/median-fix.jsonl");
    let plan = plan(&path);
    let turns: Vec<usize> = plan.prompts.iter().map(|p| p.0).collect();
    assert_eq!(turns, [1, 2, 3, 4, 5, 6, 7], "every turn is reviewed");
    let failing_turn = 2;
    let advice: BTreeMap<usize, (&str, &str)> = BTreeMap::from([
        (
            2,
            ("The loop reads sorted[mid + 1] past the end.", "blocker"),
        ),
        (4, ("The test asserts on the unsorted input.", "blocker")),
        (5, ("Name the test after the even-length case.", "nit")),
        (6, ("The fix still averages the wrong pair.", "blocker")),
    ]);
    // Request order when each turn's wait holds through the retry: turn 2's first attempt
    // gets a 500; its retry, 1 s later, covers turn 2 alone and advises.
    let (mut responses, mut expected_prompts) = (Vec::new(), Vec::new());
    for (turn, prompt, _) in &plan.prompts {
        if *turn == failing_turn {
            responses.push(server_error());
            expected_prompts.push(prompt.clone());
        }
        // An advise-only turn ends its review (P2): no follow-up answer.
        match advice.get(turn) {
            Some((note, severity)) => responses.push(advise(note, Some(severity))),
            None => responses.push(silent()),
        }
        expected_prompts.push(prompt.clone());
    }
    let server = SseServer::start(responses).await.expect("bind");
    let root = tempfile::tempdir().expect("a temporary root");

    let run = bounded_replay(root.path(), &path, &server, &[]).await;
    assert!(run.ok, "stderr: {}", run.stderr);

    // Every turn reviewed on its own, in order, the failed one once more: nothing was
    // coalesced into a later review.
    let prompts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| last_user_text(&r.json()))
        .collect();
    assert_eq!(
        prompts.len(),
        expected_prompts.len(),
        "{} reviews, one retry",
        plan.prompts.len(),
    );
    assert_eq!(prompts, expected_prompts, "one review per turn, in order");

    // Each note printed at the turn whose review raised it; blockers interrupt (steer).
    let printed: Vec<(usize, String, String)> = blocks(&run.stdout);
    let expected: Vec<(usize, &str, &str)> = advice
        .iter()
        .map(|(turn, (note, severity))| {
            // SP8: the heading ends with the model that wrote the note.
            let channel = if *severity == "blocker" {
                "steer · local/test"
            } else {
                "aside · local/test"
            };
            (*turn, channel, *note)
        })
        .collect();
    assert_eq!(
        printed.len(),
        expected.len(),
        "one block per note; stdout:\n{}",
        run.stdout
    );
    for ((turn, channel, content), (want_turn, want_channel, note)) in printed.iter().zip(&expected)
    {
        assert_eq!(
            (*turn, channel.as_str()),
            (*want_turn, *want_channel),
            "stdout:\n{}",
            run.stdout
        );
        assert!(content.contains(note), "turn {turn}: {content}");
    }

    // C3, D10: one failure, recovered; nothing dropped (no blocker lost overBudget), nothing
    // left pending, no turn skipped.
    for line in [
        "replayed 7 turns in 1 runs, 0 compactions",
        "failures: 1 (0 consecutive), turns skipped: 0",
        "notes: delivered 4 (aside 1, steer 3, wake 0, card 0), held 0, dropped 0, pending 0",
    ] {
        assert!(run.stdout.contains(line), "{line}; stdout:\n{}", run.stdout);
    }
    assert!(!run.stdout.contains("overBudget"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn m4_request_timeout_secs_from_the_settings_file_ends_a_stalled_replay_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = two_turn_session(dir.path());
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join(".omp")).expect("mkdir");
    std::fs::write(
        root.join(".omp/config.yml"),
        "advisor:\n  requestTimeoutSecs: 1\n",
    )
    .expect("write config.yml");
    // The first call gets its headers and then nothing: only the total limit (1 s here;
    // the idle timeout is 180 s) ends it. The retry and turn 2 answer.
    let server = SseServer::start([silent().stall_after(0), silent(), silent()])
        .await
        .expect("bind");

    let run = bounded_replay(&root, &path, &server, &["--json"]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    let lines = json_lines(&run.stdout);
    let status = &lines.last().expect("a status line")["status"];
    assert_eq!(
        status["failures"], 1,
        "the stalled call failed (F1): {status}"
    );
    assert_eq!(status["consecutiveFailures"], 0, "{status}");
    assert_eq!(status["agent"]["reviews"], 2, "{status}");
    assert_eq!(status["agent"]["backlog"], 0, "{status}");
    assert_eq!(
        server.request_count(),
        3,
        "the stalled call, its retry, turn 2"
    );
    let prompts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| last_user_text(&r.json()))
        .collect();
    assert_eq!(prompts[0], prompts[1], "the retry is turn 1 again");
}

/// The numbers of the text status line `lifetime tokens…: input N, output M, …`.
fn lifetime_line(stdout: &str) -> (&str, u64, u64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("lifetime tokens"))
        .unwrap_or_else(|| panic!("no lifetime line in:\n{stdout}"));
    let number = |label: &str| -> u64 {
        line.split(label)
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {label:?} in {line:?}"))
    };
    (line, number("input "), number("output "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g4_c3_replay_status_marks_lifetime_tokens_estimated_when_no_usage_is_streamed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = two_turn_session(dir.path());
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("mkdir");

    // Text mode: the status says the totals are estimated, and they are not 0.
    let server = SseServer::start([silent_without_usage(), silent_without_usage()])
        .await
        .expect("bind");
    let run = bounded_replay(&root, &path, &server, &[]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    let (line, input, output) = lifetime_line(&run.stdout);
    assert!(line.starts_with("lifetime tokens (estimated): "), "{line}");
    assert!(input > 0 && output > 0, "{line}");
    assert!(
        run.stdout.contains("lifetime cost (estimated): $"),
        "{}",
        run.stdout
    );

    // --json: the status line carries the mark.
    let server = SseServer::start([silent_without_usage(), silent_without_usage()])
        .await
        .expect("bind");
    let run = bounded_replay(&root, &path, &server, &["--json"]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    let lines = json_lines(&run.stdout);
    let status: &Value = &lines.last().expect("a status line")["status"];
    assert_eq!(status["usageEstimated"], true, "{status}");
    assert_eq!(status["agent"]["lifetime"]["estimated"], true, "{status}");
    assert!(
        status["agent"]["lifetime"]["input"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{status}"
    );

    // Reported usage is not marked.
    let server = SseServer::start([silent(), silent()]).await.expect("bind");
    let run = bounded_replay(&root, &path, &server, &[]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    let (line, _, _) = lifetime_line(&run.stdout);
    assert!(line.starts_with("lifetime tokens: "), "{line}");
}

/// P11, L2: a replay whose end-of-file drain runs out with reviews still
/// outstanding says so once — how many turns were never reviewed, whether a review was in
/// flight and for how long — in the human output and in the `--json` status line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p11_l2_a_drain_that_ends_with_work_outstanding_says_so_in_text_and_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = two_turn_session(dir.path());
    for json_mode in [false, true] {
        // Every call gets its headers, then nothing (only the 180 s idle timeout would end
        // it): the first review is in flight when the 2 s drain runs out.
        let server = SseServer::start((0..4).map(|_| silent().stall_after(0)))
            .await
            .expect("bind");
        let root = tempfile::tempdir().expect("root");
        let mut args = vec!["--sync-backlog", "off", "--drain-timeout", "2"];
        if json_mode {
            args.push("--json");
        }
        let run = bounded_replay(root.path(), &path, &server, &args).await;
        assert!(run.ok, "stderr: {}", run.stderr);
        // The review started at turn 1, at least the 2 s of the drain before its end.
        let expected = "advisor: the end-of-file drain ended after 2 s with work outstanding: \
                        2 turns were never reviewed; a review was still in flight, for ";
        if json_mode {
            let lines = json_lines(&run.stdout);
            let notices: Vec<&Value> = lines.iter().filter(|l| l.get("notice").is_some()).collect();
            assert_eq!(notices.len(), 1, "one notice: {}", run.stdout);
            let notice = notices[0]["notice"].as_str().unwrap();
            assert!(notice.starts_with(expected), "{notice}");
            let last = lines.last().expect("a status line");
            let left = &last["outstanding"];
            assert!(left["inFlightSecs"].as_u64().unwrap() >= 2, "{last}");
            assert_eq!(
                (
                    &left["unreviewedTurns"],
                    &left["waitedSecs"],
                    &left["inputEndedInError"]
                ),
                (&json!(2), &json!(2), &json!(false)),
                "{last}"
            );
            assert_eq!(last["status"]["agent"]["backlog"], 2, "{last}");
        } else {
            assert_eq!(
                run.stderr.matches("work outstanding").count(),
                1,
                "{}",
                run.stderr
            );
            assert!(run.stderr.contains(expected), "{}", run.stderr);
        }
    }
}

/// P11 in virtual time: without `--drain-timeout` the drain waits up to 600 s, through a
/// review that never ends; 30 s when the session ended in an error.
#[tokio::test]
async fn p11_the_drain_waits_600_s_by_default_and_30_s_when_the_input_ended_in_an_error() {
    use crate::support::runtime::GatedModel;
    use advisor::model::scripted::ScriptedReply;
    use advisor::replay::{Replay, ReplayEvent};
    use advisor::session::{read_session, SessionDriver};
    use advisor::settings::SyncBacklog;
    use advisor::{AdvisorHandle, RuntimeConfig};
    use std::sync::Arc;

    let dir = tempfile::tempdir().expect("tempdir");
    let clean = two_turn_session(dir.path());
    // The same two turns, then the primary's run failing: an assistant error.
    let failed = dir.path().join("failed.jsonl");
    let text = std::fs::read_to_string(&clean).unwrap();
    let last_id = text
        .lines()
        .last()
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .and_then(|v| v["id"].as_str().map(str::to_string))
        .unwrap();
    let error = json!({"type": "message", "id": "e1", "parentId": last_id,
        "timestamp": "2025-06-02T09:15:00.000Z",
        "message": {"role": "assistant", "content": [], "stopReason": "error",
            "errorMessage": "overloaded", "timestamp": 1748855700000u64}});
    std::fs::write(&failed, format!("{text}{error}\n")).unwrap();

    tokio::time::pause();
    for (path, bound, in_error) in [(&clean, 600, false), (&failed, 30, true)] {
        // The model never answers: the first review stays in flight.
        let (model, _arrivals, _gate) = GatedModel::new(vec![ScriptedReply::text("")], true);
        let mut config = RuntimeConfig::new("p11", dir.path().to_path_buf(), Some(Arc::new(model)));
        config.settings.sync_backlog = SyncBacklog::Off;
        let (handle, events) = AdvisorHandle::spawn(config).await.expect("runtime");
        let driver = SessionDriver::new(read_session(path).expect("a session"));
        let started = tokio::time::Instant::now();
        let mut seen = Vec::new();
        let outcome = Replay::new(driver, handle.clone(), events)
            .run(|event| seen.push(event))
            .await
            .expect("the replay runs");
        let waited = started.elapsed().as_secs();
        handle.dispose().await.expect("dispose");
        assert_eq!(waited, bound, "{}", path.display());
        assert!(!outcome.drained);
        let left = outcome.outstanding.expect("work outstanding");
        assert_eq!(left.waited_secs, bound);
        assert_eq!(left.input_ended_in_error, in_error);
        assert!(left.unreviewed_turns >= 1, "{left:?}");
        assert!(left.in_flight_secs.is_some(), "{left:?}");
        let told = seen
            .iter()
            .filter(|e| matches!(e, ReplayEvent::Outstanding(_)))
            .count();
        assert_eq!(told, 1, "said once");
    }
}
