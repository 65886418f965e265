//! `advisor replay --ask TURN:QUESTION` end to end (G8, L2, L5): the built binary replays the
//! example session against the in-process OpenAI-compatible server and the test reads what
//! a user would see — the answer right after that turn's deliveries — and what the advisor
//! was sent for the question.

use std::collections::BTreeMap;

use advisor::providers::testing::{ScriptedResponse, SseServer};
use serde_json::{json, Value};

use super::replay_e2e::{
    advise, chunk, finish, json_lines, last_user_text, manifest_path, plan, replay_in, silent,
    PROMPT_TOKENS,
};

/// A plain text answer, as the advisor gives to a question.
fn answer(text: &str) -> ScriptedResponse {
    finish(vec![
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
    ])
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "user")
                .map(|m| crate::support::wire_user_text(&m["content"]))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g8_l2_replay_ask_answers_after_that_turns_deliveries_from_the_reviewed_deltas() {
    let path = manifest_path("examples/sessions/median-fix.jsonl");
    let plan = plan(&path);
    let reviewed: Vec<usize> = plan.prompts.iter().map(|p| p.0).collect();
    assert_eq!(reviewed, [1, 2, 3, 4, 5, 6, 7], "every turn is reviewed");
    let note = "The failing test shows the pair should be mid - 1 and mid.";
    let question = "Which fix does the failing test point to?";
    let reply = "Average sorted[mid - 1] and sorted[mid] for even lengths.";
    let advice = BTreeMap::from([(4, (note, Some("concern")))]);
    // Request order under syncBacklog 1: turns 1–3, turn 4's advise call (an advise-only
    // turn ends its review, P2), the ask, then turns 5–7.
    let mut responses = Vec::new();
    for turn in 1..=7 {
        match advice.get(&turn) {
            Some((note, severity)) => responses.push(advise(note, *severity)),
            None => responses.push(silent()),
        }
        if turn == 4 {
            responses.push(answer(reply));
        }
    }
    let server = SseServer::start(responses).await.expect("bind");
    let root = tempfile::tempdir().expect("a temporary root");
    let ask = format!("4:{question}");

    let run = replay_in(root.path(), &path, &server, &["--json", "--ask", &ask]).await;
    assert!(run.ok, "stderr: {}", run.stderr);
    assert!(!run.stderr.contains("--ask"), "{}", run.stderr);
    let lines = json_lines(&run.stdout);
    let (status, rest) = lines.split_last().expect("output");
    assert_eq!(rest.len(), 2, "stdout:\n{}", run.stdout);
    assert_eq!(
        (&rest[0]["turn"], &rest[0]["channel"], &rest[0]["note"]),
        (&json!(4), &json!("steer"), &json!(note)),
        "turn 4's delivery first"
    );
    assert_eq!(
        rest[1],
        json!({"turn": 4, "ask": question, "answer": reply}),
        "then the answer"
    );

    let requests: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(requests.len(), 7 + 1);
    let ask_request = &requests[4];
    let texts = user_texts(ask_request);
    assert_eq!(texts.len(), 5, "turns 1–4, then the question");
    for (text, (turn, prompt, _)) in texts.iter().zip(&plan.prompts[..4]) {
        assert_eq!(
            text, prompt,
            "turn {turn}'s delta comes before the question"
        );
    }
    assert!(texts[4].ends_with(question), "{}", texts[4]);
    let tools = tool_names(ask_request);
    assert!(!tools.is_empty(), "the read-only tools stay");
    assert!(!tools.iter().any(|t| t == "advise"), "{tools:?}");
    assert!(tool_names(&requests[0]).iter().any(|t| t == "advise"));
    // The question and its answer stay in the context for the next review (G8).
    let next = &requests[5];
    assert_eq!(last_user_text(next), plan.prompts[4].1);
    let kept = next["messages"].to_string();
    assert!(kept.contains(question) && kept.contains(reply), "{kept}");

    let agent = &status["status"]["agent"];
    assert_eq!(agent["consults"], 1, "{agent}");
    assert_eq!(agent["consultUsage"]["input"], PROMPT_TOKENS, "{agent}");
    assert_eq!(agent["reviews"], 7, "{agent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g8_l2_a_refused_ask_prints_its_error_the_replay_goes_on_and_an_unreached_ask_is_one_stderr_line(
) {
    let path = manifest_path("examples/sessions/median-fix.jsonl");
    let server = SseServer::start((0..7).map(|_| silent()))
        .await
        .expect("bind");
    let root = tempfile::tempdir().expect("a temporary root");
    std::fs::create_dir_all(root.path().join(".omp")).expect("mkdir");
    std::fs::write(
        root.path().join(".omp/config.yml"),
        "advisor:\n  consult: false\n",
    )
    .expect("write the settings");

    let run = replay_in(
        root.path(),
        &path,
        &server,
        &["--ask", "2:Why edit median.py?", "--ask", "20:And now?"],
    )
    .await;
    assert!(
        run.ok,
        "an unreached ask keeps exit 0; stderr: {}",
        run.stderr
    );
    assert!(
        run.stdout.starts_with(
            "── turn 2 · ask ──\nQ: Why edit median.py?\nerror: the advisor could not answer: \
             consulting the advisor is turned off (advisor.consult: false)\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("replayed 7 turns in 1 runs, 0 compactions"),
        "the replay went on: {}",
        run.stdout
    );
    // Standard error also carries tracing's warning that the test model is not in the
    // catalog; the replay's own lines start with `advisor:`.
    let ours: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("advisor:"))
        .collect();
    assert_eq!(
        ours,
        ["advisor: --ask 20:And now? was never asked: the session ended before turn 20"]
    );
    assert_eq!(
        server.request_count(),
        7,
        "a refused ask makes no model call"
    );
}

#[test]
fn g8_l5_a_malformed_ask_is_one_error_line_and_a_non_zero_exit() {
    let example = manifest_path("examples/sessions/median-fix.jsonl");
    let cases = [
        ("why did it stop?", "is not TURN:QUESTION"),
        ("three:why?", "is not a turn number"),
        ("0:why?", "turn 0 does not exist"),
        ("2:", "the question of turn 2"),
    ];
    for (arg, expected) in cases {
        let out = std::process::Command::new(crate::support::advisor_bin())
            .arg("replay")
            .arg(&example)
            .args([
                "--model",
                "local/test",
                "--base-url",
                "http://127.0.0.1:9/v1",
            ])
            .args(["--ask", "1:fine", "--ask", arg])
            .output()
            .expect("the advisor binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{arg:?}");
        assert_eq!(stderr.lines().count(), 1, "{arg:?}: {stderr}");
        assert!(stderr.starts_with("advisor: --ask: "), "{stderr}");
        assert!(stderr.contains(expected), "{arg:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{arg:?}");
    }
}
