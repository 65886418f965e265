//! The review core of SPEC §14 through the host handle: the emission guard's memory and
//! keys (P3), a replayed branch that starts no run (P3), the advise-only end
//! of a review and the repeated-call guard (P2), and the `defer` policy (P1).

use crate::support::runtime as support;

use std::sync::Arc;

use advisor::domain::host::{HostEvent, RewriteKind};
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::settings::{DeliveryPolicy, SyncBacklog};
use advisor::DropReason;
use support::*;

fn advise(note: &str, severity: &str) -> ScriptedReply {
    ScriptedReply::advise("a", note, Some(severity))
}

/// A session on `model` whose turn ends return after their review, under `policy`, with
/// no immune turns (D7) so every concern routes as the policy says.
fn session(
    model: &ScriptedModel,
    policy: DeliveryPolicy,
) -> (
    advisor::AdvisorHandle,
    tokio::sync::mpsc::UnboundedReceiver<HostEvent>,
) {
    runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.policy = policy;
        cfg.settings.immune_turns = 0;
    })
}

/// The advisor's card for `note` as the host stores it in its transcript (D2).
fn advisor_card(note: &str, severity: advisor::domain::advice::Severity) -> TranscriptMessage {
    use advisor::domain::advice::{Advisory, Channel, Delivery};
    Delivery::new(
        Channel::Card,
        vec![Advisory::new(note, Some(severity))],
        None,
    )
    .to_message()
}

fn dropped(status: &advisor::AdvisorStatus, reason: DropReason) -> u64 {
    status.deliveries.dropped.get(&reason).copied().unwrap_or(0)
}

#[actix::test]
async fn p3_guard_history_survives_compaction_and_keys_ignore_case_and_punctuation() {
    let model = ScriptedModel::new([]);
    let (h, mut rx) = session(&model, DeliveryPolicy::Interrupt);
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("migrate the users table")]);
    model.push(advise("Check the null case in parse_user.", "concern"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    assert_eq!(h.step_boundary().await.unwrap().steers.len(), 1);
    // The primary compacts: R1 resets the advisor, which reviews the whole transcript again
    // and raises the same note with other case and punctuation.
    t.replace([TranscriptMessage::user(
        "summary: migrating the users table",
    )]);
    h.rewrite(RewriteKind::Compaction).await.unwrap();
    model.push(advise("check the NULL case in parse_user!!", "concern"));
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(dropped(&status, DropReason::Duplicate), 1, "{status:?}");
    assert!(
        h.step_boundary().await.unwrap().is_empty(),
        "not given again"
    );
    assert!(drain(&mut rx).is_empty());
    // A content-free key from P3's list is dropped too.
    t.push(TranscriptMessage::user("go on"));
    model.push(advise("No further input needed.", "nit"));
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(dropped(&status, DropReason::ContentFree), 1, "{status:?}");
    assert_eq!(status.deliveries.delivered(), 1);
    h.dispose().await.unwrap();
}

#[actix::test]
async fn p3_after_a_session_switch_the_guard_is_seeded_from_the_branch_under_review() {
    use advisor::domain::advice::Severity;
    let model = ScriptedModel::new([]);
    let (h, _rx) = session(&model, DeliveryPolicy::Interrupt);
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("session A")]);
    model.push(advise("Wrap the two writes in one transaction.", "concern"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(h.step_boundary().await.unwrap().steers.len(), 1);
    // Another session, whose branch holds no advice: the note is news there.
    t.replace([TranscriptMessage::user("session B")]);
    h.rewrite(RewriteKind::SessionSwitch).await.unwrap();
    h.user_prompt().await.unwrap();
    model.push(advise("Wrap the two writes in one transaction.", "concern"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        h.step_boundary().await.unwrap().steers.len(),
        1,
        "seeded from B, which never had it"
    );
    // Back to a branch that already holds a card with another note: not given again.
    t.replace([
        TranscriptMessage::user("session A"),
        advisor_card("The retry loop never gives up.", Severity::Concern),
    ]);
    h.rewrite(RewriteKind::SessionSwitch).await.unwrap();
    h.user_prompt().await.unwrap();
    model.push(advise("the retry loop never gives up", "concern"));
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(dropped(&status, DropReason::Duplicate), 1, "{status:?}");
    assert!(h.step_boundary().await.unwrap().is_empty());
    // An escalation of advice in the branch still passes.
    t.push(TranscriptMessage::user("go on"));
    model.push(advise("The retry loop never gives up.", "blocker"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(h.step_boundary().await.unwrap().steers.len(), 1);
    h.dispose().await.unwrap();
}

#[actix::test]
async fn p3_a_replayed_branch_starts_no_run_until_the_user_prompts() {
    let model = ScriptedModel::new([]);
    let (h, mut rx) = session(&model, DeliveryPolicy::Interrupt);
    // The primary is idle: the user switched back to an older session.
    let t = Transcript::from_messages([TranscriptMessage::user("old session")]);
    h.rewrite(RewriteKind::SessionSwitch).await.unwrap();
    model.push(advise(
        "The deploy script deletes the old release first.",
        "blocker",
    ));
    h.turn_end(&t).await.unwrap();
    match next_event(&mut rx).await {
        HostEvent::Card { card } => assert!(card.content.contains("deletes the old release")),
        other => panic!("expected a card, got {other:?}"),
    }
    let status = h.status().await.unwrap();
    assert_eq!((status.deliveries.card, status.deliveries.wake), (1, 0));
    // The user's next prompt ends the replay: advice may wake the primary again.
    h.user_prompt().await.unwrap();
    t.push(TranscriptMessage::user("and now?"));
    model.push(advise(
        "The new release is never health-checked.",
        "concern",
    ));
    h.turn_end(&t).await.unwrap();
    assert!(matches!(next_event(&mut rx).await, HostEvent::Wake { .. }));
    h.dispose().await.unwrap();
}

#[actix::test]
async fn p2_a_review_ends_at_an_advise_only_turn_without_a_follow_up_call() {
    use serde_json::json;
    let model = ScriptedModel::new([]);
    let (h, _rx) = session(&model, DeliveryPolicy::Interrupt);
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    // An advise-only turn (two notes, with text): one request for the whole review.
    model.push(ScriptedReply::tool_calls(&[
        (
            "1",
            "advise",
            json!({"note": "The cache key ignores the locale."}),
        ),
        (
            "2",
            "advise",
            json!({"note": "The test never runs the error path.", "severity": "concern"}),
        ),
    ]));
    model.push(ScriptedReply::text("never asked for"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(model.request_count(), 1);
    let status = h.status().await.unwrap();
    assert_eq!((status.agent.reviews, status.failures), (1, 0));
    h.dispose().await.unwrap();
    // A turn that also calls another tool goes on: the model sees that tool's result.
    let model = ScriptedModel::new([
        ScriptedReply::tool_calls(&[
            ("1", "find", json!({"pattern": "*.rs"})),
            ("2", "advise", json!({"note": "Rename the flag."})),
        ]),
        ScriptedReply::text(""),
        // Review 2: the last advise fails (an unknown severity): the model is asked again
        // and sees the error.
        ScriptedReply::tool_calls(&[
            ("3", "advise", json!({"note": "Add a timeout."})),
            (
                "4",
                "advise",
                json!({"note": "Log the retry.", "severity": "urgent"}),
            ),
        ]),
        ScriptedReply::text(""),
    ]);
    let (h, _rx) = session(&model, DeliveryPolicy::Interrupt);
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        model.request_count(),
        2,
        "a mixed turn has a follow-up call"
    );
    t.push(TranscriptMessage::user("next"));
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        4,
        "a failed last advise has a follow-up call"
    );
    let results = tool_results(&requests[3]);
    assert!(
        results.last().unwrap().contains("nit, concern or blocker"),
        "{results:?}"
    );
    h.dispose().await.unwrap();
}

#[actix::test]
async fn p2_the_fifth_identical_call_is_told_to_stop_and_a_sixth_ends_the_review() {
    use serde_json::json;
    let read = || ScriptedReply::tool_call("r", "read", json!({"path": "README.md"}));
    let model = ScriptedModel::new([read(), read(), read(), read(), read(), read()]);
    let (h, _rx) = session(&model, DeliveryPolicy::Interrupt);
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        6,
        "the sixth identical call ends the review"
    );
    let told: Vec<usize> = requests
        .iter()
        .map(|r| {
            tool_results(r)
                .iter()
                .filter(|text| text.contains("5 times in a row"))
                .count()
        })
        .collect();
    assert_eq!(told, [0, 0, 0, 0, 0, 1], "told once, after the fifth call");
    let status = h.status().await.unwrap();
    assert_eq!((status.agent.reviews, status.failures), (1, 0), "a success");
    // The sixth call was not run; the next review's context says so and nothing else waits.
    t.push(TranscriptMessage::user("next"));
    model.push(ScriptedReply::text(""));
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 7);
    let results = tool_results(&requests[6]);
    assert_eq!(results.len(), 6);
    assert!(results[5].starts_with("Not run"), "{results:?}");
    h.dispose().await.unwrap();
}

/// An assistant message that calls a tool (the turn is work in progress).
pub(super) fn tool_call_turn(command: &str) -> TranscriptMessage {
    serde_json::from_value(serde_json::json!({
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": command}}],
        "stopReason": "toolUse"
    }))
    .unwrap()
}

/// The result of [`tool_call_turn`]'s call.
pub(super) fn tool_output(text: &str) -> TranscriptMessage {
    serde_json::from_value(serde_json::json!({
        "role": "toolResult", "toolCallId": "c1", "toolName": "bash",
        "content": [{"type": "text", "text": text}], "isError": false
    }))
    .unwrap()
}

/// A terminal answer: stopped, text, no tool calls.
pub(super) fn final_answer(text: &str) -> TranscriptMessage {
    serde_json::from_value(serde_json::json!({
        "role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"
    }))
    .unwrap()
}

/// A session with the default settings (policy included), no immune turns.
fn default_session(
    model: &ScriptedModel,
) -> (
    advisor::AdvisorHandle,
    tokio::sync::mpsc::UnboundedReceiver<HostEvent>,
) {
    let mut cfg = advisor::RuntimeConfig::new(
        "primary-1",
        std::env::temp_dir(),
        Some(Arc::new(model.clone())),
    );
    cfg.settings.sync_backlog = SyncBacklog::Below(1);
    cfg.settings.immune_turns = 0;
    start(cfg)
}

#[actix::test]
async fn p1_defer_is_the_default_and_a_concern_raised_mid_work_arrives_as_a_card_after_the_final_answer(
) {
    let model = ScriptedModel::new([]);
    let (h, mut rx) = default_session(&model);
    assert_eq!(h.status().await.unwrap().policy, DeliveryPolicy::Defer);
    h.user_prompt().await.unwrap();
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([
        TranscriptMessage::user("drop the old users table"),
        tool_call_turn("psql -c 'drop table users_old'"),
        tool_output("DROP TABLE"),
    ]);
    model.push(advise(
        "Nothing checked that users_old was unused.",
        "concern",
    ));
    h.turn_end(&t).await.unwrap();
    // Mid-work: nothing reaches the primary, no event.
    assert!(h.step_boundary().await.unwrap().is_empty());
    let status = h.status().await.unwrap();
    assert_eq!(
        (status.deliveries.pending, status.deliveries.delivered()),
        (1, 0)
    );
    assert!(drain(&mut rx).is_empty());
    // The final answer: the note arrives as a card (visible, starts no turn).
    t.push(final_answer("Dropped users_old."));
    h.turn_end(&t).await.unwrap();
    match next_event(&mut rx).await {
        HostEvent::Card { card } => assert!(card.content.contains("users_old was unused")),
        other => panic!("expected a card, got {other:?}"),
    }
    h.run_state(false).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!((status.deliveries.card, status.deliveries.steer), (1, 0));
    // The advisor was told its note waits for the end of the turn.
    let requests = model.requests();
    let told = tool_results(requests.last().unwrap());
    assert!(
        told[0].starts_with("Queued for the end of the turn"),
        "{told:?}"
    );
    h.dispose().await.unwrap();
}

#[actix::test]
async fn p1_a_blocker_mid_work_steers_at_once_and_the_advisor_hears_it_was_delivered() {
    let model = ScriptedModel::new([]);
    let (h, mut rx) = default_session(&model);
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([
        TranscriptMessage::user("clean up"),
        tool_call_turn("rm -r build/"),
        tool_output(""),
    ]);
    model.push(advise("That path is the release directory.", "blocker"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    assert_eq!(h.step_boundary().await.unwrap().steers.len(), 1);
    t.push(tool_call_turn("ls"));
    model.push(ScriptedReply::text(""));
    h.turn_end(&t).await.unwrap();
    let told = tool_results(model.requests().last().unwrap());
    assert_eq!(told, ["Delivered."]);
    h.dispose().await.unwrap();
}

#[actix::test]
async fn p1_will_continue_from_the_host_decides_and_a_user_abort_does_not_release() {
    use advisor::TurnEndOptions;
    let model = ScriptedModel::new([]);
    let (h, mut rx) = default_session(&model);
    h.run_state(true).await.unwrap();
    // The host says the run goes on although the last message has no tool call.
    let t = Transcript::from_messages([
        TranscriptMessage::user("go"),
        final_answer("Thinking out loud."),
    ]);
    model.push(advise("The config is read twice.", "nit"));
    let going_on = TurnEndOptions {
        will_continue: Some(true),
    };
    h.turn_end_with(&t, going_on).await.unwrap();
    assert!(h.step_boundary().await.unwrap().is_empty(), "deferred");
    // The user aborts: the note waits on for the next final boundary.
    h.interrupt(true).await.unwrap();
    h.run_state(false).await.unwrap();
    assert!(h.step_boundary().await.unwrap().is_empty());
    let status = h.status().await.unwrap();
    assert_eq!(status.deliveries.pending, 1, "{status:?}");
    assert!(drain(&mut rx).is_empty());
    // The next run's final turn end (the host says so) releases it, as a card after the answer.
    h.user_prompt().await.unwrap();
    h.run_state(true).await.unwrap();
    t.push(TranscriptMessage::user("go on"));
    t.push(tool_call_turn("cat config.toml"));
    let done = TurnEndOptions {
        will_continue: Some(false),
    };
    h.turn_end_with(&t, done).await.unwrap();
    // CA16: the final boundary's window sends it as one card (no continuation for a nit).
    match next_event(&mut rx).await {
        HostEvent::Card { card } => assert_eq!(card.notes[0].note, "The config is read twice."),
        other => panic!("expected the merged card, got {other:?}"),
    }
    assert!(h.step_boundary().await.unwrap().is_empty());
    h.dispose().await.unwrap();
}

#[actix::test]
async fn p1_a_reset_discards_deferred_notes_and_the_advisor_hears_why_others_were_dropped() {
    let model = ScriptedModel::new([]);
    let (h, mut rx) = default_session(&model);
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([
        TranscriptMessage::user("go"),
        tool_call_turn("make"),
        tool_output("ok"),
    ]);
    model.push(ScriptedReply::tool_calls(&[
        (
            "1",
            "advise",
            serde_json::json!({"note": "make test was never run", "severity": "concern"}),
        ),
        (
            "2",
            "advise",
            serde_json::json!({"note": "Make test was never run!"}),
        ),
        ("3", "advise", serde_json::json!({"note": "LGTM"})),
        ("4", "advise", serde_json::json!({"note": "!!!"})),
    ]));
    h.turn_end(&t).await.unwrap();
    t.push(tool_call_turn("make install"));
    model.push(ScriptedReply::text(""));
    h.turn_end(&t).await.unwrap();
    let told = tool_results(model.requests().last().unwrap());
    assert_eq!(told.len(), 4);
    assert!(
        told[0].starts_with("Queued for the end of the turn"),
        "{told:?}"
    );
    assert!(
        told[1].starts_with("Queued"),
        "a repeat of a deferred note: {told:?}"
    );
    assert!(told[2].starts_with("Dropped: there is nothing the agent can act on"));
    assert!(told[3].starts_with("Dropped: the note is empty"));
    // Compaction resets the advisor: the deferred note is discarded, never delivered.
    h.rewrite(RewriteKind::Compaction).await.unwrap();
    t.push(final_answer("Installed."));
    model.push(ScriptedReply::text(""));
    h.turn_end(&t).await.unwrap();
    h.run_state(false).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(dropped(&status, DropReason::Reset), 1, "{status:?}");
    assert_eq!(status.deliveries.delivered(), 0);
    assert!(drain(&mut rx).is_empty());
    h.dispose().await.unwrap();
}

#[actix::test]
async fn p1_serve_will_continue_defers_a_concern_and_the_final_turn_end_releases_a_card() {
    use super::serve_client::{assistant, user};
    use super::serve_dispatch::{open, start};
    use serde_json::json;
    let model = ScriptedModel::new([advise("The lock is taken twice.", "concern")]);
    let (mut c, _server) = start(model.clone());
    let dir = tempfile::tempdir().unwrap();
    open(
        &mut c,
        "s1",
        dir.path(),
        json!({"syncBacklog": 1, "policy": "defer"}),
    )
    .await;
    c.call(
        "session/runState",
        json!({"sessionId": "s1", "running": true}),
    )
    .await;
    let bad = c
        .call_err(
            "session/turnEnd",
            json!({"sessionId": "s1", "base": null, "leaf": "e1", "messages": [], "willContinue": "yes"}),
        )
        .await;
    assert!(bad.to_string().contains("willContinue"), "{bad}");
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "e2", "willContinue": true,
            "messages": [user("add locking"), assistant("Taking the lock, then more steps.")]}),
    )
    .await;
    let r = c
        .call("session/stepBoundary", json!({"sessionId": "s1"}))
        .await;
    assert_eq!(
        r,
        json!({"deliveries": []}),
        "deferred while the agent works"
    );
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": "e2", "leaf": "e3", "willContinue": false,
            "messages": [assistant("Locking added.")]}),
    )
    .await;
    let n = c.notification("session/card").await;
    assert_eq!(
        n["params"]["card"]["notes"][0]["note"],
        "The lock is taken twice."
    );
}

#[actix::test]
async fn p3_serve_a_switched_to_branch_is_reviewed_without_waking_the_agent() {
    use super::serve_client::{assistant, user};
    use super::serve_dispatch::{open, start};
    use serde_json::json;
    let model = ScriptedModel::new([advise("The release tag was never pushed.", "blocker")]);
    let (mut c, _server) = start(model.clone());
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({"syncBacklog": 1})).await;
    c.call(
        "session/rewrite",
        json!({"sessionId": "s1", "kind": "resume", "leaf": "r2",
            "messages": [user("tag the release"), assistant("Tagged v1.2.")]}),
    )
    .await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": "r2", "leaf": "r2", "messages": []}),
    )
    .await;
    let n = c.notification("session/card").await;
    assert_eq!(n["params"]["card"]["channel"], "card");
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert!(
        !status.to_string().contains("\"wake\":1"),
        "no run started: {status}"
    );
}
