//! Mailbox tests of the whole pipeline: host handle → supervisor → feed → agent → executor
//! → router → host. Each test names the SPEC rule it checks.

use crate::support::runtime as support;

use std::sync::Arc;
use std::time::Duration;

use advisor::domain::advice::{Channel, Severity};
use advisor::domain::host::{HostEvent, RewriteKind};
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ChatMessage, ModelError};
use advisor::settings::SyncBacklog;
use advisor::{AdvisorHandle, RuntimeConfig};
use serde_json::json;
use support::*;

#[actix::test]
async fn x1_each_review_sees_only_the_delta_after_the_cursor() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("please fix the parser")]);
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("and add a test"));
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let second = last_user_text(&requests[1]);
    assert!(second.starts_with("### Session update\n\n"), "{second}");
    assert!(second.contains("and add a test"));
    assert!(!second.contains("please fix the parser"));
    // M5: the second request extends the first.
    assert_eq!(requests[1].messages[..1], requests[0].messages[..1]);
}

#[actix::test]
async fn x2_advisor_messages_filtered_by_type_literal_text_kept() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("start")]);
    h.turn_end(&t).await.unwrap();
    h.command("/advisor test nit injected advice words")
        .await
        .unwrap();
    let step = h.step_boundary().await.unwrap();
    t.push(step.aside.expect("the test nit").to_message());
    t.push(TranscriptMessage::user("my own <advisory>text</advisory>"));
    h.turn_end(&t).await.unwrap();
    let text = last_user_text(&model.requests()[1]);
    assert!(!text.contains("injected advice words"), "{text}");
    assert!(text.contains("my own <advisory>text</advisory>"));
}

/// X1, R1: a transcript shorter than what the feed saw resets the advisor, and the turn end
/// that revealed it sends the whole current transcript to a cleared context at once (a
/// host's last turn has no next turn end to wait for); the turn after sends its delta only.
#[actix::test]
async fn x1_r1_shrinking_transcript_resets_and_the_detecting_turn_sends_everything() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([
        TranscriptMessage::user("one"),
        TranscriptMessage::user("two"),
    ]);
    h.turn_end(&t).await.unwrap();
    t.replace([TranscriptMessage::user("one, rewritten")]);
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the detecting turn is reviewed");
    let text = last_user_text(&requests[1]);
    assert!(text.contains("one, rewritten"), "{text}");
    assert_eq!(
        requests[1].messages.len(),
        1,
        "the advisor context was cleared"
    );
    t.push(TranscriptMessage::user("three"));
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let text = last_user_text(&requests[2]);
    assert!(
        text.contains("three") && !text.contains("one, rewritten"),
        "only the delta after the replay: {text}"
    );
}

#[actix::test]
async fn x4_resume_seeds_the_cursor_at_the_end() {
    let model = ScriptedModel::new([]);
    let t = Transcript::from_messages([TranscriptMessage::user("old conversation")]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.initial_transcript = Some(t.clone())
    });
    t.push(TranscriptMessage::user("new request"));
    h.turn_end(&t).await.unwrap();
    let text = last_user_text(&model.requests()[0]);
    assert!(
        text.contains("new request") && !text.contains("old conversation"),
        "{text}"
    );
}

#[actix::test]
async fn x4_c1_enabling_mid_session_seeds_at_the_end() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.enabled = false
    });
    let t = Transcript::from_messages([TranscriptMessage::user("before enabling")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(model.request_count(), 0, "disabled: no review");
    assert_eq!(h.command("/advisor on").await.unwrap(), "advisor: on");
    t.push(TranscriptMessage::user("after enabling"));
    h.turn_end(&t).await.unwrap();
    let text = last_user_text(&model.requests()[0]);
    assert!(
        text.contains("after enabling") && !text.contains("before enabling"),
        "{text}"
    );
}

#[actix::test]
async fn g2_deltas_arriving_during_a_review_are_coalesced() {
    let (model, mut arrivals, gate) = GatedModel::new(vec![], true);
    let gate = gate.unwrap();
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Off, |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    h.turn_end(&t).await.unwrap();
    let first = next_request(&mut arrivals).await;
    assert!(last_user_text(&first).contains("turn one"));
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("turn three"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(h.status().await.unwrap().agent.backlog, 3);
    gate.add_permits(2);
    let second = next_request(&mut arrivals).await;
    let text = last_user_text(&second);
    assert!(
        text.contains("turn two") && text.contains("turn three"),
        "{text}"
    );
    assert_eq!(text.matches("### Session update").count(), 2);
}

#[actix::test]
async fn d3_nits_batch_into_one_aside_and_never_wake_an_idle_primary() {
    let model = ScriptedModel::new([ScriptedReply::tool_calls(&[
        (
            "c1",
            "advise",
            json!({"note": "rename tmp", "severity": "nit"}),
        ),
        ("c2", "advise", json!({"note": "drop the clone"})),
    ])]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    h.run_state(false).await.unwrap();
    let status = h.status().await.unwrap();
    assert!(drain(&mut rx).is_empty(), "nits never wake");
    assert_eq!(status.deliveries.pending, 2);
    let step = h.step_boundary().await.unwrap();
    let aside = step.aside.expect("one aside message");
    assert_eq!(aside.channel, Channel::Aside);
    assert_eq!(aside.notes.len(), 2);
    assert!(aside.content.contains("<advisory severity=\"nit\""));
    assert!(aside.content.contains("<advisory guidance="));
    // The advise tool answered the model: the next review's request shows it (the
    // advise-only turn ended the first review, P2).
    t.push(TranscriptMessage::user("next"));
    h.turn_end(&t).await.unwrap();
    let second = &model.requests()[1];
    assert!(second
        .messages
        .iter()
        .any(|m| matches!(m, ChatMessage::ToolResult { text, .. } if text == "Recorded.")));
}

#[actix::test]
async fn d3_concern_steers_while_running_and_blocker_wakes_while_idle() {
    let model = ScriptedModel::new([
        advise_then_look("a", "the migration drops a column", Some("concern")),
        ScriptedReply::text(""),
        advise_then_look("b", "tests were never run", Some("blocker")),
        ScriptedReply::text(""),
    ]);
    let (h, mut rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    let step = h.step_boundary().await.unwrap();
    assert_eq!(step.steers.len(), 1);
    assert!(step.steers[0].content.contains("severity=\"concern\""));
    h.run_state(false).await.unwrap();
    t.push(TranscriptMessage::user("more"));
    h.turn_end(&t).await.unwrap();
    match next_event(&mut rx).await {
        HostEvent::Wake { card } => {
            assert_eq!(card.notes[0].severity, Some(Severity::Blocker));
            assert_eq!(card.channel, Channel::Wake);
        }
        other => panic!("expected a wake, got {other:?}"),
    }
}

#[actix::test]
async fn d6_user_interrupt_turns_outbox_steers_into_cards_and_suppresses_wakes() {
    let model = ScriptedModel::new([
        advise_then_look("a", "wrong branch", Some("concern")),
        ScriptedReply::text(""),
        advise_then_look("b", "still wrong", Some("blocker")),
        ScriptedReply::text(""),
    ]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    h.interrupt(true).await.unwrap();
    match next_event(&mut rx).await {
        HostEvent::Card { card } => assert_eq!(card.channel, Channel::Card),
        other => panic!("expected a card, got {other:?}"),
    }
    assert!(h.step_boundary().await.unwrap().steers.is_empty());
    h.run_state(false).await.unwrap();
    t.push(TranscriptMessage::user("idle now"));
    h.turn_end(&t).await.unwrap();
    assert!(
        matches!(next_event(&mut rx).await, HostEvent::Card { .. }),
        "no wake while latched"
    );
    h.user_prompt().await.unwrap();
    h.command("/advisor test blocker after the prompt")
        .await
        .unwrap();
    assert!(matches!(next_event(&mut rx).await, HostEvent::Wake { .. }));
    assert_eq!(model.request_count(), 4, "no extra model call");
}

fn server_error() -> ScriptedReply {
    ScriptedReply::Fail(ModelError::Retryable {
        usage: None,
        message: "HTTP 500".into(),
        retry_after: None,
    })
}

/// Waits for the next notice, skipping nothing else (a test that expects only notices).
async fn next_notice(rx: &mut tokio::sync::mpsc::UnboundedReceiver<HostEvent>) -> String {
    match next_event(rx).await {
        HostEvent::Notice { text, .. } => text,
        other => panic!("expected a notice, got {other:?}"),
    }
}

#[actix::test]
async fn p7_three_failures_drop_the_batch_in_flight_the_pending_turn_is_reviewed_and_hears_of_the_gap(
) {
    tokio::time::pause();
    let (model, mut arrivals, gate) =
        GatedModel::new(vec![server_error(), server_error(), server_error()], true);
    let gate = gate.expect("gated");
    let (h, mut rx) = runtime(Arc::new(model), SyncBacklog::Off, |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    h.turn_end(&t).await.unwrap();
    for _ in 0..2 {
        next_request(&mut arrivals).await;
        gate.add_permits(1);
    }
    // The third try of "turn one" is in flight when "turn two" arrives.
    next_request(&mut arrivals).await;
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    gate.add_permits(1);
    let text = next_notice(&mut rx).await;
    assert!(text.contains("3 consecutive model failures"), "{text}");
    assert!(text.contains("skipped 1 turn"), "{text}");
    // P7: the pending turn was kept and is reviewed next, told of the gap.
    let fourth = next_request(&mut arrivals).await;
    let text = last_user_text(&fourth);
    assert!(text.contains("skipped 1 turn"), "{text}");
    assert!(
        text.contains("turn two") && !text.contains("turn one"),
        "{text}"
    );
    gate.add_permits(1);
    h.await_drain().await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(
        (
            status.agent.backlog,
            status.agent.dropped_turns,
            status.agent.reviews
        ),
        (0, 1, 1)
    );
    assert!(status.paused.is_none());
}

#[actix::test]
async fn p7_three_dropped_batches_in_a_row_halt_until_advisor_on_or_a_new_session() {
    tokio::time::pause();
    let model = ScriptedModel::new((0..18).map(|_| server_error()));
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("turn 1")]);
    for turn in 1..=3 {
        if turn > 1 {
            t.push(TranscriptMessage::user(format!("turn {turn}")));
        }
        h.turn_end(&t).await.unwrap();
        let text = next_notice(&mut rx).await;
        assert!(text.contains("skipped 1 turn of review"), "{turn}: {text}");
    }
    let text = next_notice(&mut rx).await;
    assert!(
        text.starts_with("advisor: paused: halted after 3 reviews in a row were dropped"),
        "{text}"
    );
    assert!(text.contains("/advisor on"), "{text}");
    assert_eq!(model.request_count(), 9);
    // Halted: a new turn is kept, nothing is sent.
    t.push(TranscriptMessage::user("turn 4"));
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert!(status.paused.as_deref().unwrap_or("").starts_with("halted"));
    assert_eq!((status.agent.backlog, status.agent.dropped_turns), (1, 3));
    assert!(status.render().contains("paused: halted after 3 reviews"));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(model.request_count(), 9, "no call while halted");
    // /advisor on resumes; the next review hears of the three missed turns. It fails too.
    h.command("/advisor on").await.unwrap();
    let text = next_notice(&mut rx).await;
    assert!(text.contains("skipped 1 turn of review"), "{text}");
    let requests = model.requests();
    let text = last_user_text(&requests[9]);
    assert!(
        text.contains("skipped 3 turns") && text.contains("turn 4"),
        "{text}"
    );
    // Two more dropped batches halt again; a new session ends that halt.
    for turn in 5..=6 {
        t.push(TranscriptMessage::user(format!("turn {turn}")));
        h.turn_end(&t).await.unwrap();
        next_notice(&mut rx).await;
    }
    assert!(next_notice(&mut rx).await.contains("halted"));
    h.rewrite(RewriteKind::NewSession).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("a new session")]);
    h.turn_end(&t).await.unwrap();
    h.await_drain().await.unwrap();
    let status = h.status().await.unwrap();
    assert!(status.paused.is_none(), "{:?}", status.paused);
    assert_eq!(
        model.request_count(),
        19,
        "the new session's turn was reviewed"
    );
    assert_eq!(status.agent.reviews, 1);
}

#[actix::test]
async fn f1_retry_waits_for_retry_after_in_virtual_time() {
    tokio::time::pause();
    let model = ScriptedModel::new([ScriptedReply::Fail(ModelError::Retryable {
        usage: None,
        message: "429".into(),
        retry_after: Some(Duration::from_secs(20)),
    })]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    let started = tokio::time::Instant::now();
    // S2: the wait is released at once while the advisor is failing.
    h.turn_end(&t).await.unwrap();
    assert_eq!(model.request_count(), 1);
    assert!(started.elapsed() < Duration::from_secs(1));
    // The retry comes after the server's delay, not before.
    t.push(TranscriptMessage::user("next"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(model.request_count(), 1, "still waiting for Retry-After");
    tokio::time::sleep(Duration::from_secs(19)).await;
    assert_eq!(model.request_count(), 1);
    tokio::time::sleep(Duration::from_secs(2)).await;
    h.await_drain().await.unwrap();
    assert_eq!(model.request_count(), 3);
    let text = last_user_text(&model.requests()[1]);
    assert!(
        text.contains("go") && !text.contains("next"),
        "the retry is the same batch (P7): {text}"
    );
    let text = last_user_text(&model.requests()[2]);
    assert!(text.contains("next"), "then the turn behind it: {text}");
    assert_eq!(h.status().await.unwrap().agent.backlog, 0);
}

#[actix::test]
async fn f3_permanent_error_pauses_with_a_notice_and_does_not_block() {
    let model = ScriptedModel::new([ScriptedReply::Fail(ModelError::Permanent {
        message: "HTTP 401: invalid key".into(),
    })]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    match next_event(&mut rx).await {
        HostEvent::Notice { text, .. } => assert!(text.contains("paused") && text.contains("401")),
        other => panic!("expected a notice, got {other:?}"),
    }
    t.push(TranscriptMessage::user("next"));
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert!(
        status.render().contains("paused: HTTP 401"),
        "{}",
        status.render()
    );
    assert_eq!(model.request_count(), 1, "no retries burnt");
    h.command("/advisor on").await.unwrap();
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        model.request_count(),
        3,
        "resumed: the batch kept, then the turn behind it (P7)"
    );
}

#[actix::test]
async fn r1_reset_discards_the_in_flight_reviews_advice() {
    let (model, mut arrivals, gate) = GatedModel::new(
        vec![advise_then_look("a", "stale advice", Some("blocker"))],
        true,
    );
    let gate = gate.unwrap();
    let (h, mut rx) = runtime(Arc::new(model), SyncBacklog::Off, |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    next_request(&mut arrivals).await;
    h.rewrite(RewriteKind::Compaction).await.unwrap();
    gate.add_permits(10);
    next_request(&mut arrivals).await; // the model is told its advice was discarded
    let status = h.status().await.unwrap();
    assert!(drain(&mut rx).is_empty(), "no wake for stale advice");
    assert_eq!(
        status
            .deliveries
            .dropped
            .get(&advisor::DropReason::StaleEpoch),
        Some(&1)
    );
}

#[actix::test]
async fn s1_sync_one_waits_for_a_full_drain() {
    let (model, mut arrivals, gate) = GatedModel::new(vec![], true);
    let gate = gate.unwrap();
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    let h2 = h.clone();
    let t2 = t.clone();
    let waiting = tokio::spawn(async move { h2.turn_end(&t2).await });
    next_request(&mut arrivals).await;
    assert!(!waiting.is_finished());
    gate.add_permits(1);
    waiting.await.unwrap().unwrap();
    assert_eq!(h.status().await.unwrap().agent.backlog, 0);
}

#[actix::test]
async fn s1_sync_three_waits_only_at_backlog_three() {
    let (model, mut arrivals, gate) = GatedModel::new(vec![], true);
    let gate = gate.unwrap();
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(3), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("one")]);
    h.turn_end(&t).await.unwrap(); // backlog 1: no wait
    next_request(&mut arrivals).await;
    t.push(TranscriptMessage::user("two"));
    h.turn_end(&t).await.unwrap(); // backlog 2: no wait
    t.push(TranscriptMessage::user("three"));
    let h2 = h.clone();
    let t2 = t.clone();
    let waiting = tokio::spawn(async move { h2.turn_end(&t2).await });
    tokio::task::yield_now().await;
    assert_eq!(h.status().await.unwrap().agent.backlog, 3);
    assert!(!waiting.is_finished(), "backlog 3 waits");
    gate.add_permits(1); // first batch done: backlog 2 (< 3)
    waiting.await.unwrap().unwrap();
}

#[actix::test]
async fn s1_wait_is_capped_at_30_seconds_in_virtual_time() {
    tokio::time::pause();
    let (model, mut arrivals, _gate) = GatedModel::new(vec![], true);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    let started = tokio::time::Instant::now();
    h.turn_end(&t).await.unwrap();
    let waited = started.elapsed();
    next_request(&mut arrivals).await;
    assert!(
        waited >= Duration::from_secs(30) && waited < Duration::from_secs(31),
        "{waited:?}"
    );
}

/// S1: a syncBacklog wait that runs past 5 s tells the user, once per session, what the agent
/// is waiting for and how to turn the wait off; a shorter wait says nothing.
#[actix::test]
async fn s1_a_wait_past_five_seconds_says_so_once_per_session() {
    tokio::time::pause();
    let (model, mut arrivals, gate) = GatedModel::new(vec![], true);
    let gate = gate.unwrap();
    let (h, mut rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let notices = |rx: &mut _| {
        drain(rx)
            .into_iter()
            .filter_map(|e| match e {
                HostEvent::Notice { text, .. } => Some(text),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // A review done within 4 s: no word.
    let t = Transcript::from_messages([TranscriptMessage::user("one")]);
    let (h2, t2) = (h.clone(), t.clone());
    let waiting = tokio::spawn(async move { h2.turn_end(&t2).await });
    next_request(&mut arrivals).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    gate.add_permits(1);
    waiting.await.unwrap().unwrap();
    assert_eq!(notices(&mut rx), Vec::<String>::new());
    // Two slow turns: each waits its 30 s, one notice in all, after 5 s of the first.
    for text in ["two", "three"] {
        t.push(TranscriptMessage::user(text));
        let (h2, t2) = (h.clone(), t.clone());
        let started = tokio::time::Instant::now();
        let waiting = tokio::spawn(async move { h2.turn_end(&t2).await });
        next_request(&mut arrivals).await;
        tokio::time::sleep(Duration::from_millis(5100)).await;
        let said = notices(&mut rx);
        if text == "two" {
            assert_eq!(said.len(), 1, "{said:?}");
            assert!(
                said[0].contains("waiting for the advisor")
                    && said[0].contains("advisor.syncBacklog: 1")
                    && said[0].contains("up to 30s")
                    && said[0].contains("advisor.syncBacklog: off"),
                "{said:?}"
            );
        } else {
            assert_eq!(said, Vec::<String>::new(), "said once per session");
        }
        waiting.await.unwrap().unwrap();
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(30) && waited < Duration::from_secs(31),
            "the notice does not change the wait: {waited:?}"
        );
        gate.add_permits(1);
    }
    assert_eq!(notices(&mut rx), Vec::<String>::new());
}

#[actix::test]
async fn s1_user_abort_releases_the_wait() {
    tokio::time::pause();
    let (model, mut arrivals, _gate) = GatedModel::new(vec![], true);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    let h2 = h.clone();
    let started = tokio::time::Instant::now();
    let waiting = tokio::spawn(async move { h2.turn_end(&t).await });
    next_request(&mut arrivals).await;
    h.interrupt(true).await.unwrap();
    waiting.await.unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[actix::test]
async fn d10_every_advisory_ends_delivered_held_or_dropped() {
    let model = ScriptedModel::new([
        ScriptedReply::tool_calls(&[
            ("1", "advise", json!({"note": "a nit about naming"})),
            ("2", "advise", json!({"note": "lgtm"})),
            (
                "3",
                "advise",
                json!({"note": "a concern", "severity": "concern"}),
            ),
        ]),
        advise_then_look("4", "a nit about naming", None),
        ScriptedReply::text(""),
    ]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("again"));
    h.turn_end(&t).await.unwrap();
    h.step_boundary().await.unwrap();
    let d = h.status().await.unwrap().deliveries;
    assert_eq!(d.raised(), 4);
    assert_eq!(d.pending, 0);
    assert_eq!((d.aside, d.steer, d.dropped_total()), (1, 1, 2));
}

#[actix::test]
async fn t6_unknown_severity_is_a_tool_error_not_a_failed_review() {
    let model = ScriptedModel::new([
        advise_then_look("a", "x", Some("urgent")),
        ScriptedReply::text(""),
    ]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert!(requests[1].messages.iter().any(|m| matches!(m,
        ChatMessage::ToolResult { text, is_error: true, .. } if text.contains("nit, concern or blocker"))));
    let status = h.status().await.unwrap();
    assert_eq!((status.failures, status.agent.reviews), (0, 1));
}

#[actix::test]
async fn g3_tool_rounds_are_bounded() {
    let replies: Vec<ScriptedReply> = (0..20)
        .map(|i| ScriptedReply::tool_call(&format!("c{i}"), "nosuchtool", json!({})))
        .collect();
    let model = ScriptedModel::new(replies);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.max_tool_rounds = 3
    });
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        model.request_count(),
        4,
        "three tool rounds plus the final answer"
    );
    let last = model.requests()[3].clone();
    assert!(last.messages.iter().any(|m| matches!(m,
        ChatMessage::ToolResult { text, .. } if text.contains("Tool budget for this update is used up"))));
}

#[actix::test]
async fn g4_lifetime_usage_survives_a_reset() {
    let usage = advisor::model::Usage {
        estimated: false,
        input: 100,
        output: 10,
        cache_read: 5,
        cache_write: 1,
        cost: 0.5,
    };
    let model = ScriptedModel::new([
        ScriptedReply::text("").with_usage(usage),
        ScriptedReply::text("").with_usage(usage),
    ]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    h.rewrite(RewriteKind::Compaction).await.unwrap();
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(status.agent.lifetime.input, 200);
    assert!((status.agent.lifetime.cost - 1.0).abs() < 1e-9);
    assert!(status.render().contains("lifetime cost: $1.0000"));
}

#[actix::test]
async fn k2_enabled_without_a_model_reports_it_and_does_not_crash() {
    let mut cfg = RuntimeConfig::new("p", std::env::temp_dir(), None);
    // D3's routing (the default before P1): the test nit is an aside.
    cfg.settings.policy = advisor::settings::DeliveryPolicy::Interrupt;
    let (h, _rx) = start(cfg);
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let text = h.command("/advisor status").await.unwrap();
    assert!(text.contains("no advisor model is assigned"), "{text}");
    // C2 still works through the normal delivery path.
    let reply = h.command("/advisor test nit be tidy please").await.unwrap();
    assert!(reply.contains("Recorded."), "{reply}");
    assert_eq!(
        h.step_boundary().await.unwrap().aside.unwrap().notes[0].note,
        "be tidy please"
    );
}

#[actix::test]
async fn c2_d8_each_test_injection_is_its_own_update_so_none_is_dropped_for_budget() {
    let mut cfg = RuntimeConfig::new("p", std::env::temp_dir(), None);
    cfg.settings.max_notes_per_update = 1;
    // Written for D3's routing (the default before P1): nits wait for the step boundary.
    cfg.settings.policy = advisor::settings::DeliveryPolicy::Interrupt;
    let (h, _rx) = start(cfg);
    for n in 0..3 {
        let reply = h
            .command(&format!("/advisor test nit note number {n}"))
            .await
            .unwrap();
        assert!(reply.contains("Recorded."), "{reply}");
    }
    let aside = h.step_boundary().await.unwrap().aside.unwrap();
    let notes: Vec<_> = aside.notes.iter().map(|n| n.note.as_str()).collect();
    assert_eq!(
        notes,
        ["note number 0", "note number 1", "note number 2"],
        "a user's checks of the delivery path are not budgeted as one review"
    );
}

#[actix::test]
async fn c4_dump_shows_the_advisor_transcript_and_raw_adds_the_system_prompt() {
    let model = ScriptedModel::new([ScriptedReply::text("nothing to add")]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let dump = h.command("/advisor dump").await.unwrap();
    assert!(
        dump.contains("### Session update") && dump.contains("nothing to add"),
        "{dump}"
    );
    let raw = h.dump(true).await.unwrap();
    assert!(raw.contains("## System prompt") && raw.contains("The workspace root is"));
    assert!(raw.contains("- advise:"), "{raw}");
}

#[actix::test]
async fn r2_dispose_stops_work_and_turn_end_returns() {
    let (model, _arrivals, _gate) = GatedModel::new(vec![], true);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Off, |_| {});
    h.dispose().await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    assert!(!h.status().await.unwrap().enabled);
}

#[test]
fn a3_handle_works_from_a_plain_tokio_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let model = ScriptedModel::new([advise_then_look(
            "a",
            "check the error path",
            Some("blocker"),
        )]);
        let cfg = config(Arc::new(model), SyncBacklog::Below(1), |_| {});
        let (h, mut events) = AdvisorHandle::spawn(cfg).await.unwrap();
        let t = Transcript::from_messages([TranscriptMessage::user("go")]);
        h.turn_end(&t).await.unwrap();
        let event = tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(event, HostEvent::Wake { .. }));
        h.dispose().await.unwrap();
    });
}

#[actix::test]
async fn w5_g1_watchdog_blocks_reach_the_system_prompt_and_reload_between_reviews() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("home/project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let file = project.join("WATCHDOG.md");
    std::fs::write(&file, "Never touch the billing module.").unwrap();
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.watchdog = Some(advisor::watchdog::WatchdogConfig {
            cwd: project.clone(),
            agent_dir: None,
            home: Some(dir.path().join("home")),
            instructions: Default::default(),
        })
    });
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let system = &model.requests()[0].system;
    assert!(system.contains(
        "Especially pay attention to:\n<attention>\nNever touch the billing module.\n</attention>"
    ), "{system}");
    let raw = h.dump(true).await.unwrap();
    assert!(raw.contains("<attention>"));
    // W8: a change shows up in the next review's system prompt.
    std::fs::write(&file, "Also watch the auth module.").unwrap();
    let later = std::time::SystemTime::now() + Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(later)
        .unwrap();
    t.push(TranscriptMessage::user("next"));
    h.turn_end(&t).await.unwrap();
    assert!(model.requests()[1]
        .system
        .contains("Also watch the auth module."));
}

#[actix::test]
async fn x5_w6_watchdog_blocks_are_redacted_exactly_when_redact_secrets_is_on() {
    let secret = format!("sk-or-v1-{}", "0a1b2c3d4e5f6789".repeat(4));
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("home/project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(
        project.join("WATCHDOG.md"),
        format!("The key {secret} is test-only."),
    )
    .unwrap();
    for redact in [true, false] {
        let model = ScriptedModel::new([]);
        let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
            cfg.settings.redact_secrets = redact;
            cfg.watchdog = Some(advisor::watchdog::WatchdogConfig {
                cwd: project.clone(),
                agent_dir: None,
                home: Some(dir.path().join("home")),
                instructions: Default::default(),
            });
        });
        let t = Transcript::from_messages([TranscriptMessage::user("go")]);
        h.turn_end(&t).await.unwrap();
        let system = &model.requests()[0].system;
        assert!(system.contains("is test-only."), "{system}");
        assert_eq!(
            system.contains(&secret),
            !redact,
            "redactSecrets {redact}: {system}"
        );
        h.dispose().await.unwrap();
    }
}

#[actix::test]
async fn t1_tool_list_is_exactly_read_search_find_advise_and_tools_run_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let model = ScriptedModel::new([
        ScriptedReply::tool_call("r1", "read", json!({"path": "notes.txt"})),
        ScriptedReply::text(""),
    ]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.primary_session_id = "primary-9".into();
        cfg.workspace_root = dir.path().into();
    });
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    let mut names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["advise", "check_in", "find", "read", "search"]);
    let result = requests[1]
        .messages
        .iter()
        .find_map(|m| match m {
            ChatMessage::ToolResult {
                text,
                is_error: false,
                ..
            } => Some(text.clone()),
            _ => None,
        })
        .expect("a successful tool result");
    assert!(
        result.contains("1|alpha") && result.contains("2|beta"),
        "{result}"
    );
}

#[actix::test]
async fn x5_tool_results_are_redacted_unless_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".env"),
        "OPENAI_API_KEY=sk-proj-Q3vT9xLm2Rk7Wb4Zp8Ny1Hc6Jd0Fs5Ga\n",
    )
    .unwrap();
    for redact in [true, false] {
        let model = ScriptedModel::new([
            ScriptedReply::tool_call("r1", "read", json!({"path": ".env"})),
            ScriptedReply::text(""),
        ]);
        let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
            cfg.primary_session_id = "p".into();
            cfg.workspace_root = dir.path().into();
            cfg.settings.redact_secrets = redact;
        });
        let t = Transcript::from_messages([TranscriptMessage::user("check the env file")]);
        h.turn_end(&t).await.unwrap();
        let result = model.requests()[1]
            .messages
            .iter()
            .find_map(|m| match m {
                ChatMessage::ToolResult { text, .. } => Some(text.clone()),
                _ => None,
            })
            .expect("a tool result");
        assert_eq!(
            result.contains("sk-proj-Q3vT9xLm2Rk7Wb4Zp8Ny1Hc6Jd0Fs5Ga"),
            !redact,
            "redact={redact}: {result}"
        );
        assert_eq!(result.contains("[redacted:"), redact, "{result}");
    }
}

/// X5: a letters-only passphrase holding its key's word leaves neither in the update nor in
/// a tool result.
#[actix::test]
async fn x5_a_passphrase_holding_its_key_s_word_is_redacted_in_updates_and_tool_results() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".env"), "DB_PASSWORD=SummerPasswordHorse\n").unwrap();
    let model = ScriptedModel::new([
        ScriptedReply::tool_call("r1", "read", json!({"path": ".env"})),
        ScriptedReply::text(""),
    ]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.primary_session_id = "p".into();
        cfg.workspace_root = dir.path().into();
    });
    let t = Transcript::from_messages([TranscriptMessage::user(
        "MY_SECRET=MixedCaseLettersOnlySecretValue",
    )]);
    h.turn_end(&t).await.unwrap();
    let sent: Vec<String> = model.requests()[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::ToolResult { text, .. } | ChatMessage::User { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    let sent = sent.join("\n");
    assert!(sent.contains("MY_SECRET=[redacted:env-secret]"), "{sent}");
    assert!(sent.contains("DB_PASSWORD=[redacted:env-secret]"), "{sent}");
    assert!(
        !sent.contains("SecretValue") && !sent.contains("PasswordHorse"),
        "{sent}"
    );
}

#[actix::test]
async fn w7_subagent_advisors_exist_only_when_enabled_and_rerun_discovery_for_their_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("home/project");
    let sub = project.join("crates/worker");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(project.join("WATCHDOG.md"), "Project rule.").unwrap();
    std::fs::write(sub.join("WATCHDOG.md"), "Worker rule.").unwrap();
    let model = ScriptedModel::new([]);
    let mut cfg = config(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.watchdog = Some(advisor::watchdog::WatchdogConfig {
            cwd: project.clone(),
            agent_dir: None,
            home: Some(dir.path().join("home")),
            instructions: Default::default(),
        })
    });
    assert!(cfg.for_subagent("sub-1", &sub).is_none(), "off by default");
    cfg.settings.subagents = true;
    let sub_cfg = cfg.for_subagent("sub-1", &sub).expect("subagents on");
    assert_eq!(sub_cfg.primary_session_id, "sub-1");
    let (main, _rx1) = start(cfg);
    let (subagent, _rx2) = start(sub_cfg);
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    main.turn_end(&t).await.unwrap();
    subagent.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert!(
        requests[0].system.contains("Project rule.")
            && !requests[0].system.contains("Worker rule.")
    );
    assert!(
        requests[1].system.contains("Project rule.") && requests[1].system.contains("Worker rule.")
    );
}

#[actix::test]
async fn c1_two_sessions_sharing_one_settings_object_stay_isolated() {
    let settings = advisor::settings::AdvisorSettings {
        sync_backlog: SyncBacklog::Below(1),
        ..Default::default()
    };
    let model = ScriptedModel::new([]);
    let mut a = RuntimeConfig::new(
        "session-a",
        std::env::temp_dir(),
        Some(Arc::new(model.clone())),
    );
    a.settings = settings.clone();
    let mut b = RuntimeConfig::new(
        "session-b",
        std::env::temp_dir(),
        Some(Arc::new(model.clone())),
    );
    b.settings = settings;
    let (ha, _ra) = start(a);
    let (hb, _rb) = start(b);
    assert_eq!(ha.command("/advisor off").await.unwrap(), "advisor: off");
    assert!(!ha.status().await.unwrap().enabled);
    assert!(
        hb.status().await.unwrap().enabled,
        "the other session is untouched"
    );
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    ha.turn_end(&t).await.unwrap();
    hb.turn_end(&t).await.unwrap();
    assert_eq!(model.request_count(), 1, "only session b reviewed");
    assert_eq!(ha.command("/advisor").await.unwrap(), "advisor: on");
}

#[actix::test]
async fn s2_f4_the_primary_never_waits_on_a_failing_or_paused_advisor() {
    tokio::time::pause();
    let model = ScriptedModel::new([
        // Turn one fails with a long retry pending: the advisor is failing.
        ScriptedReply::Fail(ModelError::Retryable {
            usage: None,
            message: "HTTP 503".into(),
            retry_after: Some(Duration::from_secs(600)),
        }),
    ]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("one")]);
    let started = tokio::time::Instant::now();
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("two"));
    h.turn_end(&t).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "failing: no wait, {:?}",
        started.elapsed()
    );
    assert_eq!(
        h.status().await.unwrap().agent.backlog,
        2,
        "both turns kept for the retry"
    );

    // Paused (F3): the wait is released at once too.
    let model = ScriptedModel::new([ScriptedReply::Fail(ModelError::Permanent {
        message: "HTTP 403".into(),
    })]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    h.turn_end(&t).await.unwrap();
    let started = tokio::time::Instant::now();
    t.push(TranscriptMessage::user("three"));
    h.turn_end(&t).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "paused: no wait"
    );
    assert!(h.status().await.unwrap().paused.is_some());
}

/// A4/S1: with nothing a turn end could wait for (`syncBacklog: off`, a policy
/// other than `reconfirm`), `turn_end` is answered on its first poll, before any actor of
/// the session has run (the test system has one thread, so none could have). Each turn is
/// still read as it stood when it ended: the host appending the next turn's message right
/// away does not fold it into this turn's delta, and a status query sees both deltas.
#[actix::test]
async fn a4_s1_turn_end_does_not_wait_when_nothing_can_make_it_wait() {
    use futures_util::FutureExt;
    let (model, mut arrivals, gate) = GatedModel::new(vec![], true);
    let gate = gate.unwrap();
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Off, |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    assert_eq!(
        h.turn_end(&t).now_or_never(),
        Some(Ok(())),
        "answered at once"
    );
    t.push(TranscriptMessage::user("turn two"));
    assert_eq!(
        h.turn_end(&t).now_or_never(),
        Some(Ok(())),
        "answered at once"
    );
    t.push(TranscriptMessage::user("turn three"));
    assert_eq!(
        h.status().await.unwrap().agent.backlog,
        2,
        "two deltas, read in order"
    );
    let first = last_user_text(&next_request(&mut arrivals).await);
    assert!(first.contains("turn one"), "{first}");
    assert!(
        !first.contains("turn two"),
        "the next turn's message: {first}"
    );
    gate.add_permits(1);
    let second = last_user_text(&next_request(&mut arrivals).await);
    assert!(second.contains("turn two"), "{second}");
    assert!(!second.contains("turn three"), "not yet ended: {second}");
    gate.add_permits(1);
    assert_eq!(
        h.await_drain().await.unwrap(),
        advisor::BacklogWait::Drained
    );
}

/// S1, D5: when a turn end may have to wait, it waits for the runtime: under a syncBacklog
/// threshold, and under `reconfirm` (its catch-up block) even with syncBacklog off.
#[actix::test]
async fn s1_d5_turn_end_waits_for_the_runtime_when_it_may_block() {
    use futures_util::FutureExt;
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    let (h, _rx) = runtime(
        Arc::new(ScriptedModel::new([])),
        SyncBacklog::Below(1),
        |_| {},
    );
    assert_eq!(h.turn_end(&t).now_or_never(), None, "syncBacklog 1 waits");
    let (h, _rx) = runtime(Arc::new(ScriptedModel::new([])), SyncBacklog::Off, |cfg| {
        cfg.settings.policy = advisor::settings::DeliveryPolicy::Reconfirm
    });
    assert_eq!(
        h.turn_end(&t).now_or_never(),
        None,
        "reconfirm may block (D5)"
    );
    h.turn_end(&t).await.unwrap();
}

/// A4, H10: turns handed over without waiting (`hand_over_turn`) are each observed in
/// order and reviewed, even in a session whose turn ends may wait (syncBacklog set), where a
/// dropped `turn_end` future would have lost its turn.
#[actix::test]
async fn a4_h10_turns_handed_over_without_waiting_are_each_reviewed() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::new();
    for i in 1..=3 {
        t.push(TranscriptMessage::user(format!("handed over turn {i}")));
        h.hand_over_turn(&t, Default::default()).unwrap();
    }
    let waited = h.hand_over_turn_waiting(&t, Default::default());
    drop(waited);
    assert_eq!(
        h.await_drain().await.unwrap(),
        advisor::BacklogWait::Drained
    );
    let text: String = model
        .requests()
        .iter()
        .map(last_user_text)
        .collect::<Vec<_>>()
        .join("\n");
    for i in 1..=3 {
        assert!(text.contains(&format!("handed over turn {i}")), "{text}");
    }
}

/// X1, R1: a turn end the runtime had not read yet when the host replaced the transcript
/// and announced the rewrite is left alone (its messages are gone): it queues no review of
/// the replaced content and causes no second reset; the next turn sends the new content
/// from the start, once.
#[actix::test]
async fn x1_r1_a_turn_replaced_before_it_was_read_queues_nothing() {
    use futures_util::FutureExt;
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("before compaction")]);
    assert_eq!(h.turn_end(&t).now_or_never(), Some(Ok(())));
    t.replace([
        TranscriptMessage::user("the summary"),
        TranscriptMessage::user("kept message"),
    ]);
    h.rewrite(RewriteKind::Compaction).await.unwrap();
    assert_eq!(
        h.await_drain().await.unwrap(),
        advisor::BacklogWait::Drained
    );
    assert_eq!(
        model.request_count(),
        0,
        "the superseded turn queued nothing"
    );
    t.push(TranscriptMessage::user("after compaction"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        h.await_drain().await.unwrap(),
        advisor::BacklogWait::Drained
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let text = last_user_text(&requests[0]);
    assert!(
        text.contains("the summary") && text.contains("after compaction"),
        "{text}"
    );
    assert!(!text.contains("before compaction"), "{text}");
}

/// A4: a host that ends turns faster than the session reads them fills the
/// session's bounded mailbox and then waits for its turn in line: nothing is lost, and
/// every turn is reviewed in order.
#[actix::test]
async fn a4_a_full_mailbox_makes_turn_end_wait_and_loses_no_turn() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |_| {});
    let t = Transcript::new();
    let mut waited_at = None;
    for i in 0..100 {
        t.push(TranscriptMessage::user(format!("turn number {i}")));
        let turn_end = h.turn_end(&t);
        tokio::pin!(turn_end);
        match futures_util::poll!(&mut turn_end) {
            std::task::Poll::Ready(done) => done.unwrap(),
            std::task::Poll::Pending => {
                turn_end.await.unwrap();
                waited_at = Some(i);
                break;
            }
        }
    }
    let last = waited_at.expect("the mailbox is bounded");
    assert!(last >= 8, "a few turns fit before the host waits: {last}");
    assert_eq!(
        h.await_drain().await.unwrap(),
        advisor::BacklogWait::Drained
    );
    // Every turn's message reached a review, once and in order.
    let reviewed: Vec<usize> = model
        .requests()
        .iter()
        .map(last_user_text)
        .flat_map(|text| {
            text.split("turn number ")
                .skip(1)
                .map(|rest| {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse::<usize>().expect("a turn number")
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(reviewed, (0..=last).collect::<Vec<_>>());
}
