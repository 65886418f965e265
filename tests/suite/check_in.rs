//! SP7, the advisor scheduling its next review with `check_in`, through the mailboxes (a
//! scripted advisor model that calls it) and through `advisor serve` (the requests the
//! scripted model server receives, and `session/status`'s counters).

use std::sync::Arc;

use advisor::domain::host::RewriteKind;
use advisor::domain::transcript::Transcript;
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::providers::testing::{ScriptedResponse, SseServer};
use advisor::settings::SyncBacklog;
use serde_json::{json, Value};

use super::cadence::{turn, turns_in};
use super::replay_e2e::{chunk, finish};
use super::serve_client::{assistant, user};
use super::serve_roster::start_plain;
use crate::support::runtime::{last_user_text, next_request, runtime, tool_results, GatedModel};

fn check_in(id: &str, args: Value) -> ScriptedReply {
    ScriptedReply::tool_call(id, "check_in", args)
}

/// What the first `check_in` of a review answers, for `afterTurns: 2`.
const NOTED_2: &str = "Noted: your next review starts after 2 turn ends. The updates until \
then come with it. End this review when you are done.";

#[actix::test]
async fn sp7_through_the_mailboxes_after_turns_2_at_turn_1_skips_turn_end_2_and_turn_end_3_reviews_both(
) {
    let model = ScriptedModel::new([check_in(
        "c1",
        json!({"afterTurns": 2, "reason": "the tests are running"}),
    )]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, true).await;
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        1,
        "a turn of check_in alone that succeeded ends the review"
    );
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        offered.contains(&"check_in"),
        "granted by default: {offered:?}"
    );
    turn(&h, &t, 2, true).await;
    assert_eq!(model.request_count(), 1, "turn end 2 starts no review");
    let status = h.status().await.unwrap();
    assert_eq!(status.cadence.held_updates, 1, "turn 2 is held");
    assert_eq!(
        (
            status.agent.check_in.check_ins,
            status.agent.check_in.turns_skipped
        ),
        (1, 1)
    );
    turn(&h, &t, 3, true).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(turns_in(&last_user_text(&requests[1])), [2, 3]);
    assert_eq!(tool_results(&requests[1]), [NOTED_2]);
    // The wait is over: turn end 4 is reviewed as usual.
    turn(&h, &t, 4, true).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(turns_in(&last_user_text(&requests[2])), [4]);
    let status = h.status().await.unwrap();
    assert_eq!(
        (
            status.agent.check_in.check_ins,
            status.agent.check_in.turns_skipped
        ),
        (1, 1)
    );
    let text = status.render();
    assert!(
        text.contains(
            "check-ins: 1 review(s) chose when to look again; 1 turn end(s) started no review"
        ),
        "{text}"
    );
}

#[actix::test]
async fn sp7_sp1_through_the_mailboxes_the_first_valid_call_wins_bad_arguments_are_tool_errors_and_no_budget_is_spent(
) {
    let model = ScriptedModel::new([ScriptedReply::tool_calls(&[
        ("c0", "check_in", json!({"afterTurns": 0})),
        ("c6", "check_in", json!({"afterTurns": 6})),
        ("cs", "check_in", json!({"afterTurns": "2"})),
        ("cm", "check_in", json!({})),
        ("c3", "check_in", json!({"afterTurns": 3})),
        ("c1", "check_in", json!({"afterTurns": 1})),
    ])]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        // SP1: check_in is no workspace tool; a budget of 0 leaves it free.
        cfg.settings.tool_budget = 0;
    });
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, true).await;
    turn(&h, &t, 2, true).await;
    turn(&h, &t, 3, true).await;
    assert_eq!(model.request_count(), 1, "afterTurns 3 won: 2 and 3 held");
    turn(&h, &t, 4, true).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(turns_in(&last_user_text(&requests[1])), [2, 3, 4]);
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 6, "{results:?}");
    assert!(
        results[0].contains("0 is outside that range"),
        "{results:?}"
    );
    assert!(
        results[1].contains("6 is outside that range"),
        "{results:?}"
    );
    assert!(results[2].contains("not text"), "{results:?}");
    assert!(
        results[3].contains("`afterTurns` is required"),
        "{results:?}"
    );
    assert!(
        results[4].starts_with("Noted: your next review starts after 3 turn ends."),
        "{results:?}"
    );
    assert!(
        results[5].starts_with("Not changed: this review already asked for its next review after 3 turn ends; only the first call counts."),
        "{results:?}"
    );
    let agent = h.status().await.unwrap().agent;
    assert_eq!(agent.tool_spend.budget_refused, 0);
    assert_eq!(
        (agent.check_in.check_ins, agent.check_in.turns_skipped),
        (1, 2)
    );
}

#[actix::test]
async fn sp7_through_the_mailboxes_a_final_boundary_a_user_prompt_an_abort_a_reset_and_advisor_off_end_the_wait(
) {
    let wait5 = || check_in("c", json!({"afterTurns": 5}));
    let model = ScriptedModel::new([wait5()]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, true).await;
    turn(&h, &t, 2, true).await;
    assert_eq!(model.request_count(), 1);
    // A final boundary ends the wait: it is reviewed with what was held.
    turn(&h, &t, 3, false).await;
    assert_eq!(model.request_count(), 2);
    assert_eq!(turns_in(&last_user_text(&model.requests()[1])), [2, 3]);

    // A user prompt, an abort, a reset and turning the advisor off each end it (a reset
    // and `/advisor off` drop the held update too: CA8, CA7).
    let enders = ["user prompt", "abort", "reset", "off and on"];
    for (i, ender) in enders.into_iter().enumerate() {
        let n = 4 + 3 * i;
        let before = model.request_count();
        model.push(wait5());
        turn(&h, &t, n, true).await;
        turn(&h, &t, n + 1, true).await;
        assert_eq!(
            model.request_count(),
            before + 1,
            "{ender}: turn end {} held",
            n + 1
        );
        match ender {
            "user prompt" => h.user_prompt().await.unwrap(),
            "abort" => h.interrupt(true).await.unwrap(),
            "reset" => h.rewrite(RewriteKind::Compaction).await.unwrap(),
            _ => {
                h.command("/advisor off").await.unwrap();
                h.command("/advisor on").await.unwrap();
            }
        }
        turn(&h, &t, n + 2, true).await;
        let requests = model.requests();
        assert_eq!(
            requests.len(),
            before + 2,
            "{ender}: the next turn end is reviewed"
        );
        if ["user prompt", "abort"].contains(&ender) {
            assert_eq!(
                turns_in(&last_user_text(&requests[before + 1])),
                [n + 1, n + 2]
            );
        }
    }
    let agent = h.status().await.unwrap().agent;
    assert_eq!(
        (agent.check_in.check_ins, agent.check_in.turns_skipped),
        (5, 5)
    );
}

#[actix::test]
async fn sp7_ca9_a_review_queued_behind_the_calling_one_is_postponed_and_a_held_turn_end_is_not_waited_on(
) {
    tokio::time::pause();
    let (model, mut arrivals, gate) =
        GatedModel::new(vec![check_in("c", json!({"afterTurns": 3}))], true);
    let gate = gate.expect("gated");
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([]);
    // Turns 1 and 2 are scheduled while review 1 is held at the gate: each turn end waits
    // its 30 s cap (virtual time) and returns with the backlog still there.
    turn(&h, &t, 1, true).await;
    let review_1 = next_request(&mut arrivals).await;
    assert_eq!(turns_in(&last_user_text(&review_1)), [1]);
    turn(&h, &t, 2, true).await;
    assert_eq!(h.status().await.unwrap().agent.backlog, 2);
    // Review 1 calls check_in {afterTurns: 3}: its batch ended at turn end 1, so the next
    // review waits for turn end 4, and the review of turn 2, queued behind it, waits too.
    gate.add_permits(10);
    h.await_drain().await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(
        status.agent.backlog, 0,
        "turn 2's review is held back, not run"
    );
    assert_eq!(status.cadence.held_updates, 1);
    let started = tokio::time::Instant::now();
    turn(&h, &t, 3, true).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(1),
        "turn end 3 scheduled nothing, so it waited for nothing: {:?}",
        started.elapsed()
    );
    let status = h.status().await.unwrap();
    assert_eq!(status.agent.check_in.turns_skipped, 2);
    turn(&h, &t, 4, true).await;
    let review_2 = next_request(&mut arrivals).await;
    assert_eq!(
        turns_in(&last_user_text(&review_2)),
        [2, 3, 4],
        "the appointment reviews what the check-in held, the postponed turn first"
    );
}

#[actix::test]
async fn sp7_through_the_mailboxes_a_user_prompt_while_the_calling_review_runs_ends_its_wait() {
    tokio::time::pause();
    let (model, mut arrivals, gate) =
        GatedModel::new(vec![check_in("c", json!({"afterTurns": 3}))], true);
    let gate = gate.expect("gated");
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Off, |_| {});
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, true).await;
    let _review_1 = next_request(&mut arrivals).await;
    // The user prompts while review 1 runs; review 1 then calls check_in {afterTurns: 3}.
    h.user_prompt().await.unwrap();
    gate.add_permits(10);
    h.await_drain().await.unwrap();
    // The prompt's turn is reviewed at its own turn end.
    turn(&h, &t, 2, true).await;
    let review_2 = next_request(&mut arrivals).await;
    assert_eq!(turns_in(&last_user_text(&review_2)), [2]);
    let agent = h.status().await.unwrap().agent;
    assert_eq!(
        (agent.check_in.check_ins, agent.check_in.turns_skipped),
        (1, 0)
    );
}

/// An OpenAI-style streamed answer calling `check_in` with `args`.
fn wire_check_in(args: Value) -> ScriptedResponse {
    finish(vec![
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_check_in",
                "type": "function", "function": {"name": "check_in", "arguments": args.to_string()}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ])
}

#[actix::test]
async fn sp7_through_advisor_serve_the_model_server_sees_no_request_at_the_skipped_turn_end_and_status_counts_it(
) {
    let dir = tempfile::tempdir().unwrap();
    let server = SseServer::start([
        wire_check_in(json!({"afterTurns": 2, "reason": "waiting for the test run"})),
        super::replay_e2e::advise(
            "The migration drops a column the tests still read.",
            Some("concern"),
        ),
    ])
    .await
    .expect("bind");
    let mut c = start_plain();
    let model = json!({"provider": "hostprov", "id": "advisor-model", "baseUrl": server.base_url(),
        "api": "openai-completions", "apiKey": "hostprov-key"});
    c.call(
        "session/open",
        json!({"sessionId": "s1", "cwd": dir.path(), "agentDir": dir.path().join("agent"),
            "settings": {"syncBacklog": 1}, "model": model}),
    )
    .await;
    let turn_end = |base: Value, leaf: &str, messages: Value| {
        json!({"sessionId": "s1", "base": base, "leaf": leaf, "willContinue": true,
            "messages": messages})
    };
    c.call(
        "session/turnEnd",
        turn_end(
            Value::Null,
            "e1",
            json!([
                user("Drop the legacy column"),
                assistant("Writing the migration first.")
            ]),
        ),
    )
    .await;
    assert_eq!(server.requests().len(), 1);
    let first = server.requests()[0].json();
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert!(tools.contains(&"check_in"), "{tools:?}");
    c.call(
        "session/turnEnd",
        turn_end(
            json!("e1"),
            "e2",
            json!([assistant("Running the test suite now.")]),
        ),
    )
    .await;
    assert_eq!(
        server.requests().len(),
        1,
        "turn end 2 sent the model nothing"
    );
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert_eq!(status["agent"]["checkIns"], 1, "{status}");
    assert_eq!(status["agent"]["turnsSkipped"], 1, "{status}");
    assert_eq!(status["cadence"]["heldUpdates"], 1, "{status}");
    c.call(
        "session/turnEnd",
        turn_end(
            json!("e2"),
            "e3",
            json!([assistant("Tests pass; removing the column.")]),
        ),
    )
    .await;
    server.wait_for_requests(2).await;
    let second = server.requests()[1].json().to_string();
    for seen in [
        "Running the test suite now.",
        "Tests pass; removing the column.",
        "Noted: your next review starts after 2 turn ends.",
    ] {
        assert!(second.contains(seen), "{seen} missing from {second}");
    }
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert_eq!(
        (
            &status["agent"]["checkIns"],
            &status["agent"]["turnsSkipped"]
        ),
        (&json!(1), &json!(1)),
        "{status}"
    );
    assert_eq!(status["cadence"]["heldUpdates"], 0, "{status}");
    assert!(
        status["text"].as_str().unwrap_or_default().contains(
            "check-ins: 1 review(s) chose when to look again; 1 turn end(s) started no review"
        ),
        "{status}"
    );
}
