//! G5 context maintenance through the host handle: promotion, compaction, re-prime, the
//! reactive overflow path and what each does to held notes (D9), lifetime usage (G4) and the
//! status (C3). Scripted usage drives the context estimate. Also what the agent reports
//! besides reviews: WATCHDOG.md warnings as notices (W3) and the audit transcript (G7).

use crate::support::runtime as support;

use std::sync::Arc;

use advisor::domain::advice::Severity;
use advisor::domain::host::HostEvent;
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{
    ChatMessage, ModelClient, ModelError, ModelFuture, ModelInfo, ModelRequest, Usage,
};
use advisor::settings::{DeliveryPolicy, SyncBacklog};
use advisor::AdvisorHandle;
use advisor::AdvisorStatus;
use advisor::DropReason;
use serde_json::json;
use support::*;
use tokio::sync::mpsc::UnboundedReceiver;

/// The system prompt of a compaction's summary call, as the engine compiles it in (G5).
const SUMMARY_INSTRUCTION: &str =
    include_str!("../../config/prompts/review-summary.md").trim_ascii_end();
/// The heading that opens a compacted context (G5).
const SUMMARY_HEADING: &str =
    include_str!("../../config/prompts/review-summary-heading.md").trim_ascii_end();

const BLOCKER: &str = "The migration drops the email column the user asked to keep.";
const PHANTOM: &str = "The retry loop sleeps while holding the lock.";

fn usage(input: u64, output: u64, cost: f64) -> Usage {
    Usage {
        input,
        output,
        cost,
        ..Usage::default()
    }
}

fn overflow() -> ScriptedReply {
    ScriptedReply::Fail(ModelError::ContextOverflow {
        usage: None,
        message: "prompt is too long".into(),
    })
}

/// A user message of about `tokens` tokens (4 characters each) that says `label`.
fn big_update(label: &str, tokens: usize) -> TranscriptMessage {
    let filler = "lorem ipsum dolor sit amet ".repeat(tokens * 4 / 27);
    TranscriptMessage::user(format!("{label}\n{filler}"))
}

/// Ends one turn per update, each adding that update to the transcript.
async fn turns(
    h: &AdvisorHandle,
    updates: impl IntoIterator<Item = TranscriptMessage>,
) -> Transcript {
    let t = Transcript::new();
    for update in updates {
        t.push(update);
        h.turn_end(&t).await.unwrap();
    }
    t
}

fn user_text(message: &ChatMessage) -> &str {
    match message {
        ChatMessage::User { text } => crate::support::without_reminder(text),
        other => panic!("expected a user message, got {other:?}"),
    }
}

const NIT: &str = "Check the empty-input case.";

/// Asserts the review ran to the end (its nit reached the host) and counted no failure,
/// whatever went wrong around it; returns the status.
async fn nit_delivered_without_failure(h: &AdvisorHandle) -> AdvisorStatus {
    let aside = h
        .step_boundary()
        .await
        .unwrap()
        .aside
        .expect("the review ran");
    assert_eq!(aside.notes[0].note, NIT);
    let status = h.status().await.unwrap();
    assert_eq!(status.failures, 0, "not a failed review");
    status
}

/// A scripted model with its own id and window (the promotion target, or its source).
#[derive(Clone)]
struct Named {
    script: ScriptedModel,
    id: &'static str,
}

impl Named {
    fn new(id: &'static str, window: u64, replies: Vec<ScriptedReply>) -> Self {
        Self {
            script: ScriptedModel::new(replies).with_context_window(window),
            id,
        }
    }
}

impl ModelClient for Named {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        self.script.complete(request)
    }

    fn info(&self) -> ModelInfo {
        ModelInfo {
            id: self.id.to_string(),
            ..self.script.info()
        }
    }
}

// ---------------------------------------------------------------------------------------
// Proactive maintenance
// ---------------------------------------------------------------------------------------

#[actix::test]
async fn g5_at_90_percent_of_a_100k_window_with_threshold_80_one_reprime_and_usage_kept() {
    let model = ScriptedModel::new([
        ScriptedReply::text("").with_usage(usage(90_000, 100, 0.5)),
        ScriptedReply::text("").with_usage(usage(500, 10, 0.01)),
    ])
    .with_context_window(100_000);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    turns(
        &h,
        [
            TranscriptMessage::user("turn one"),
            TranscriptMessage::user("turn two"),
        ],
    )
    .await;

    // The short history has nothing to summarise: the batch goes into an empty context,
    // and no summary call was made.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages.len(), 1);
    let prompt = user_text(&requests[1].messages[0]);
    assert!(
        prompt.contains("turn two") && !prompt.contains("turn one"),
        "{prompt}"
    );
    let status = h.status().await.unwrap();
    let a = &status.agent;
    assert_eq!((a.reprimes, a.compactions, a.promotions), (1, 0, 0));
    assert_eq!((a.lifetime.input, a.lifetime.output), (90_500, 110));
    assert!((a.lifetime.cost - 0.51).abs() < 1e-9, "{}", a.lifetime.cost);
    let shown = h.command("/advisor status").await.unwrap();
    assert!(
        shown.contains("context maintenance: 0 compaction(s), 1 re-prime(s), 0 promotion(s)\n"),
        "{shown}"
    );
    assert!(shown.contains("lifetime cost: $0.5100\n"), "{shown}");
}

#[actix::test]
async fn g5_at_60_percent_with_threshold_95_nothing_is_maintained() {
    let model = ScriptedModel::new([
        ScriptedReply::text("").with_usage(usage(60_000, 10, 0.0)),
        ScriptedReply::text(""),
    ])
    .with_context_window(100_000);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.compact_at_percent = 95
    });
    turns(
        &h,
        [
            TranscriptMessage::user("turn one"),
            TranscriptMessage::user("turn two"),
        ],
    )
    .await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].messages[..1],
        requests[0].messages[..],
        "append-only (M5)"
    );
    assert_eq!(requests[1].messages.len(), 3);
    let a = h.status().await.unwrap().agent;
    assert_eq!((a.reprimes, a.compactions, a.promotions), (0, 0, 0));
}

#[actix::test]
async fn g5_t3_compaction_summarises_the_older_history_keeps_recent_reviews_and_clears_reads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let model = ScriptedModel::new([
        // Review 1 reads a file.
        ScriptedReply::tool_call("r1", "read", json!({"path": "notes.txt"}))
            .with_usage(usage(26_000, 20, 0.1)),
        ScriptedReply::text("Looked fine.").with_usage(usage(26_100, 10, 0.1)),
        // Review 2 brings the context to 85 % of the window.
        ScriptedReply::text("").with_usage(usage(85_000, 10, 0.2)),
        // The summary call.
        ScriptedReply::text("- The agent is fixing the date parser.")
            .with_usage(usage(26_500, 150, 0.3)),
        // Review 3 reads the same file again.
        ScriptedReply::tool_call("r2", "read", json!({"path": "notes.txt"}))
            .with_usage(usage(7_000, 20, 0.05)),
        ScriptedReply::text("").with_usage(usage(7_100, 5, 0.05)),
    ])
    .with_context_window(100_000);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.workspace_root = dir.path().to_path_buf();
    });
    turns(
        &h,
        [
            big_update("first update", 25_000),
            TranscriptMessage::user("second update"),
            TranscriptMessage::user("third update"),
        ],
    )
    .await;

    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    // The summary call: its own instruction, no tools, the older part rendered as text.
    let summary = &requests[3];
    assert_eq!(summary.system, SUMMARY_INSTRUCTION);
    assert!(summary.tools.is_empty());
    assert_eq!(summary.messages.len(), 1);
    let older = user_text(&summary.messages[0]);
    assert!(
        older.contains("first update"),
        "the first review is summarised"
    );
    assert!(
        older.contains("→ read {\"path\":\"notes.txt\"}"),
        "{older:.300}"
    );
    assert!(older.contains("Looked fine."));
    assert!(
        !older.contains("second update"),
        "the recent review is kept"
    );
    // Review 3: the summary first, then the kept review verbatim, then the batch.
    let review = &requests[4];
    assert_eq!(review.messages.len(), 4);
    let first = user_text(&review.messages[0]);
    assert!(first.starts_with(SUMMARY_HEADING), "{first}");
    assert!(first.ends_with("- The agent is fixing the date parser."));
    assert_eq!(review.messages[1], requests[2].messages[4]);
    assert!(user_text(&review.messages[1]).contains("second update"));
    assert!(user_text(&review.messages[3]).contains("third update"));
    // T3: the tool session forgot the read, so the file is shown again in full.
    let reread = tool_results(&requests[5]);
    assert!(reread[0].contains("1|alpha"), "{reread:?}");

    let a = h.status().await.unwrap().agent;
    assert_eq!((a.compactions, a.reprimes, a.promotions), (1, 0, 0));
    assert_eq!(a.model_calls, 6, "the summary call counts");
    assert_eq!(
        a.lifetime.input,
        26_000 + 26_100 + 85_000 + 26_500 + 7_000 + 7_100
    );
    assert!((a.lifetime.cost - 0.8).abs() < 1e-9, "{}", a.lifetime.cost);
    assert!(
        a.context_tokens < 10_000,
        "the estimate follows the compacted context: {}",
        a.context_tokens
    );
}

#[actix::test]
async fn g5_a_failing_summary_call_falls_back_to_a_reprime_and_the_batch_is_still_sent() {
    let model = ScriptedModel::new([
        ScriptedReply::text("").with_usage(usage(90_000, 10, 0.0)),
        ScriptedReply::Fail(ModelError::Retryable {
            usage: None,
            message: "503 service unavailable".into(),
            retry_after: None,
        }),
        // An advise-only turn ends the review (P2).
        ScriptedReply::advise("a", NIT, Some("nit")),
    ])
    .with_context_window(100_000);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    turns(
        &h,
        [
            big_update("first update", 25_000),
            TranscriptMessage::user("second update"),
        ],
    )
    .await;

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[1].system, SUMMARY_INSTRUCTION,
        "compaction was tried"
    );
    assert_eq!(requests[2].messages.len(), 1, "re-primed");
    assert!(user_text(&requests[2].messages[0]).contains("second update"));
    let status = nit_delivered_without_failure(&h).await;
    let a = status.agent;
    assert_eq!((a.compactions, a.reprimes, a.reviews), (0, 1, 2));
}

#[actix::test]
async fn g5_g2_a_delta_arriving_while_maintenance_runs_waits_for_the_next_batch() {
    let (model, mut arrivals, gate) = GatedModel::new(
        vec![
            // 85 % of the gated model's 200k window.
            ScriptedReply::text("").with_usage(usage(170_000, 10, 0.0)),
            ScriptedReply::text("- summary of the first update"),
            ScriptedReply::text(""),
            ScriptedReply::text(""),
        ],
        true,
    );
    let gate = gate.unwrap();
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |cfg| {
        cfg.settings.sync_backlog = SyncBacklog::Off;
    });
    let t = Transcript::from_messages([big_update("first update", 25_000)]);
    h.turn_end(&t).await.unwrap();
    next_request(&mut arrivals).await;
    gate.add_permits(1);

    t.push(TranscriptMessage::user("second update"));
    h.turn_end(&t).await.unwrap();
    let summary = next_request(&mut arrivals).await;
    assert_eq!(
        summary.system, SUMMARY_INSTRUCTION,
        "maintenance is running"
    );
    t.push(TranscriptMessage::user("third update"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        h.status().await.unwrap().agent.backlog,
        2,
        "queued meanwhile"
    );

    gate.add_permits(1);
    let maintained = next_request(&mut arrivals).await;
    let batch = last_user_text(&maintained);
    assert!(
        batch.contains("second update") && !batch.contains("third update"),
        "{batch}"
    );
    assert!(user_text(&maintained.messages[0]).starts_with(SUMMARY_HEADING));
    gate.add_permits(1);
    let next = next_request(&mut arrivals).await;
    let batch = last_user_text(&next);
    assert!(
        batch.contains("third update") && !batch.contains("second update"),
        "{batch}"
    );
    assert_eq!(
        next.messages[..maintained.messages.len()],
        maintained.messages[..],
        "append-only again after the maintenance (M5)"
    );
    gate.add_permits(1);
}

// ---------------------------------------------------------------------------------------
// Promotion
// ---------------------------------------------------------------------------------------

#[actix::test]
async fn g5_promotion_switches_to_the_larger_window_model_for_the_rest_of_the_session() {
    let base = Named::new(
        "scripted/base",
        100_000,
        vec![ScriptedReply::text("").with_usage(usage(90_000, 10, 0.4))],
    );
    let large = Named::new(
        "scripted/large",
        400_000,
        vec![
            ScriptedReply::text("").with_usage(usage(91_000, 10, 0.6)),
            ScriptedReply::text(""),
        ],
    );
    let (h, _rx) = runtime(Arc::new(base.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.promotion_model = Some(Arc::new(large.clone()));
    });
    turns(
        &h,
        [
            TranscriptMessage::user("turn one"),
            TranscriptMessage::user("turn two"),
            TranscriptMessage::user("turn three"),
        ],
    )
    .await;

    assert_eq!(base.script.request_count(), 1);
    let before = &base.script.requests()[0];
    let after = large.script.requests();
    assert_eq!(after.len(), 2, "both later reviews on the larger model");
    // The larger window holds the whole history: nothing was compacted or cleared.
    assert_eq!(after[0].messages[..1], before.messages[..]);
    assert_eq!(after[0].messages.len(), 3);
    assert_eq!(after[1].messages[..3], after[0].messages[..]);

    let status = h.status().await.unwrap();
    assert_eq!(status.model.as_deref(), Some("scripted/large"));
    let a = &status.agent;
    assert_eq!(a.context_window, 400_000);
    assert_eq!((a.promotions, a.compactions, a.reprimes), (1, 0, 0));
    assert!((a.lifetime.cost - 1.0).abs() < 1e-9);
    let shown = h.command("/advisor status").await.unwrap();
    assert!(shown.contains("model: scripted/large"), "{shown}");
    assert!(shown.contains("0 compaction(s), 0 re-prime(s), 1 promotion(s)"));
}

#[actix::test]
async fn g5_a_promotion_model_with_no_larger_window_is_not_used() {
    let base = Named::new(
        "scripted/base",
        100_000,
        vec![
            ScriptedReply::text("").with_usage(usage(90_000, 10, 0.0)),
            ScriptedReply::text(""),
        ],
    );
    let small = Named::new("scripted/small", 64_000, vec![]);
    let (h, _rx) = runtime(Arc::new(base.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.promotion_model = Some(Arc::new(small.clone()));
    });
    turns(
        &h,
        [
            TranscriptMessage::user("turn one"),
            TranscriptMessage::user("turn two"),
        ],
    )
    .await;
    assert_eq!(small.script.request_count(), 0);
    assert_eq!(base.script.requests()[1].messages.len(), 1, "re-primed");
    let status = h.status().await.unwrap();
    assert_eq!(status.model.as_deref(), Some("scripted/base"));
    assert_eq!((status.agent.promotions, status.agent.reprimes), (0, 1));
}

// ---------------------------------------------------------------------------------------
// Reactive path
// ---------------------------------------------------------------------------------------

/// Reconfirm runtime whose first review (a large update) holds `BLOCKER`.
async fn held_after_a_large_first_review(
    then: Vec<ScriptedReply>,
) -> (
    AdvisorHandle,
    UnboundedReceiver<HostEvent>,
    ScriptedModel,
    Transcript,
) {
    // One request: an advise-only turn ends the review (P2).
    let mut script = vec![ScriptedReply::advise("a", BLOCKER, Some("blocker"))];
    script.extend(then);
    let model = ScriptedModel::new(script);
    let (h, rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.policy = DeliveryPolicy::Reconfirm
    });
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([big_update("first update", 25_000)]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(h.status().await.unwrap().held_notes.len(), 1);
    (h, rx, model, t)
}

#[actix::test]
async fn g5_f2_overflow_on_every_try_reprimes_once_per_try_fails_three_times_held_notes_kept() {
    tokio::time::pause();
    let (h, mut rx, model, t) =
        held_after_a_large_first_review((0..6).map(|_| overflow()).collect()).await;
    t.push(TranscriptMessage::user("second update"));
    h.turn_end(&t).await.unwrap();
    // Wait (in virtual time) for the third strike.
    loop {
        if let HostEvent::Notice { text, .. } = next_event(&mut rx).await {
            if text.contains("consecutive model failures") {
                assert!(text.contains("skipped 1 turn"), "{text}");
                break;
            }
        }
    }
    let requests = model.requests();
    // Review 1 (1 call, P2); each of the three tries: the attempt, then its replay.
    assert_eq!(requests.len(), 1 + 3 * 2);
    assert_eq!(
        requests[1].messages.len(),
        4,
        "the first attempt saw the whole history"
    );
    // Every replay went into a fresh context holding only the batch (G5 reactive path).
    for replay in [&requests[2], &requests[4], &requests[6]] {
        assert_eq!(replay.messages.len(), 1);
        let prompt = user_text(&replay.messages[0]);
        assert!(prompt.contains("second update"), "{prompt}");
        assert!(
            prompt.contains(&format!("- [BLOCKER] {BLOCKER}")),
            "{prompt}"
        );
    }
    assert!(
        requests.iter().all(|r| r.system != SUMMARY_INSTRUCTION),
        "the reactive path clears the history, it does not summarise"
    );
    let status = h.status().await.unwrap();
    assert_eq!(status.failures, 3);
    let a = &status.agent;
    assert_eq!((a.backlog, a.dropped_turns), (0, 1));
    assert_eq!((a.compactions, a.reprimes), (0, 3), "one re-prime per try");
    assert_eq!(
        status.held_notes.len(),
        1,
        "failed reviews prune nothing (D9)"
    );
    assert_eq!(status.held_notes[0].note, BLOCKER);
}

#[actix::test]
async fn g5_d9_overflow_that_clears_after_a_fresh_context_succeeds_and_prunes_a_recanted_hold() {
    let (h, mut rx, model, t) = held_after_a_large_first_review(vec![
        overflow(),
        ScriptedReply::text("The column is kept after all."),
    ])
    .await;
    t.push(TranscriptMessage::user("second update"));
    h.turn_end(&t).await.unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[1].messages.len(),
        4,
        "the attempt saw the whole history"
    );
    let replay = &requests[2];
    assert_eq!(replay.messages.len(), 1, "replayed into a fresh context");
    assert_eq!(
        user_text(&replay.messages[0]),
        user_text(&requests[1].messages[3]),
        "the same batch, held-notes preamble included"
    );
    let status = h.status().await.unwrap();
    assert_eq!(status.failures, 0);
    assert_eq!(
        (
            status.agent.compactions,
            status.agent.reprimes,
            status.agent.reviews
        ),
        (0, 1, 2)
    );
    assert!(status.held_notes.is_empty());
    assert_eq!(
        status.deliveries.dropped.get(&DropReason::Recanted),
        Some(&1)
    );
    assert!(h.step_boundary().await.unwrap().is_empty());
    let notices: Vec<HostEvent> = drain(&mut rx);
    assert!(
        notices
            .iter()
            .all(|e| matches!(e, HostEvent::Notice { .. })),
        "nothing delivered: {notices:?}"
    );
}

#[actix::test]
async fn g5_d9_a_phantom_hold_of_the_overflowed_attempt_is_rolled_back_an_earlier_hold_kept() {
    let model = ScriptedModel::new([
        // Review 1 holds BLOCKER (an advise-only turn ends the review, P2).
        ScriptedReply::advise("a", BLOCKER, Some("blocker")),
        // Review 2, attempt 1: holds PHANTOM and looks something up, then overflows.
        advise_then_look("b", PHANTOM, Some("blocker")),
        overflow(),
        // The replay reconfirms BLOCKER only.
        ScriptedReply::advise("c", BLOCKER, Some("blocker")),
    ]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.policy = DeliveryPolicy::Reconfirm
    });
    h.run_state(true).await.unwrap();
    turns(
        &h,
        [
            TranscriptMessage::user("first update"),
            TranscriptMessage::user("second update"),
        ],
    )
    .await;

    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        advise_results(&requests[2]).last().map(String::as_str),
        Some("Held pending reconfirmation."),
        "the phantom was held by the attempt"
    );
    assert_eq!(
        requests[3].messages.len(),
        1,
        "replayed into an empty context"
    );

    // The catch-up block settled: the reconfirmed BLOCKER goes out, the phantom never does.
    assert!(matches!(
        next_event(&mut rx).await,
        HostEvent::Notice { text, .. } if text.contains("waiting up to 15s")
    ));
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    let steers = h.step_boundary().await.unwrap().steers;
    assert_eq!(steers.len(), 1);
    assert_eq!(steers[0].notes[0].note, BLOCKER);
    assert_eq!(steers[0].notes[0].severity, Some(Severity::Blocker));
    let status = h.status().await.unwrap();
    assert!(status.held_notes.is_empty());
    assert_eq!(
        status.deliveries.dropped.get(&DropReason::Discarded),
        Some(&1)
    );
    assert_eq!(status.deliveries.held, 0);
    assert_eq!(
        status.deliveries.raised(),
        3,
        "every advisory ended somewhere (D10)"
    );
}

// ---------------------------------------------------------------------------------------
// Watchdog warnings (W3) and the audit transcript (G7)
// ---------------------------------------------------------------------------------------

#[actix::test]
async fn w3_an_unreadable_watchdog_file_is_one_notice_and_the_review_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("home/project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(project.join("WATCHDOG.md"), b"\xff\xfe not text").unwrap();
    let model = ScriptedModel::new([]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.watchdog = Some(advisor::watchdog::WatchdogConfig {
            cwd: project.clone(),
            agent_dir: None,
            home: Some(dir.path().join("home")),
            instructions: Default::default(),
        });
    });
    turns(
        &h,
        [
            TranscriptMessage::user("turn one"),
            TranscriptMessage::user("turn two"),
        ],
    )
    .await;
    match next_event(&mut rx).await {
        HostEvent::Notice { text, .. } => assert!(text.contains("WATCHDOG.md"), "{text}"),
        other => panic!("expected the warning, got {other:?}"),
    }
    assert_eq!(model.request_count(), 2, "both turns reviewed");
    h.dispose().await.unwrap();
    assert!(drain(&mut rx).is_empty(), "the unchanged file warns once");
}

/// The entries of a transcript file after its title line (P9: oh-my-pi's files open with one).
fn audit_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    let mut lines: Vec<serde_json::Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "title", "{:?}", lines[0]);
    lines.remove(0);
    lines
}

#[actix::test]
async fn p9_every_context_message_and_maintenance_event_is_a_session_file_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session-1/__advisor.jsonl");
    let model = ScriptedModel::new([
        // An advise-only turn ends the review (P2); its usage puts review 2 past the
        // threshold.
        ScriptedReply::advise("a", NIT, Some("nit")).with_usage(usage(90_000, 20, 0.01)),
        overflow(),
        ScriptedReply::text(""),
    ])
    .with_context_window(100_000);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |cfg| {
        cfg.audit_path = Some(path.clone());
    });
    turns(
        &h,
        [
            TranscriptMessage::user("turn one"),
            TranscriptMessage::user("turn two"),
        ],
    )
    .await;
    h.dispose().await.unwrap();

    let lines = audit_lines(&path);
    let kinds: Vec<String> = lines
        .iter()
        .map(|l| match l["type"].as_str().unwrap() {
            "message" => format!("message:{}", l["message"]["role"].as_str().unwrap()),
            "custom" => format!("custom:{}", l["customType"].as_str().unwrap()),
            other => other.to_string(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "session",
            // Review 1: the update, the advise call, its result (no follow-up call, P2).
            "message:user",
            "message:assistant",
            "message:toolResult",
            // Review 2: re-primed before the batch, then an attempt that overflowed,
            // re-primed again and replayed (the update is not written twice).
            "custom:advisor-maintenance",
            "message:user",
            "custom:advisor-attempt-discarded",
            "custom:advisor-maintenance",
            "message:assistant",
        ]
    );
    assert_eq!(lines[0]["version"], 3);
    for pair in lines[1..].windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"], "one chain");
    }
    let update = &lines[1]["message"];
    assert!(update["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("turn one"));
    assert_eq!(
        (
            update["synthetic"].as_bool(),
            update["attribution"].as_str()
        ),
        (Some(true), Some("agent"))
    );
    let advise = &lines[2]["message"];
    assert_eq!(advise["content"][0]["name"], "advise");
    assert_eq!(
        (advise["provider"].as_str(), advise["model"].as_str()),
        (Some("scripted"), Some("test"))
    );
    assert_eq!(advise["usage"]["input"], 90_000);
    assert_eq!(advise["usage"]["cost"]["total"], 0.01);
    assert_eq!(lines[3]["message"]["content"][0]["text"], "Recorded.");
    let data = |i: usize| &lines[i]["data"];
    assert_eq!(
        (data(4)["kind"].as_str(), data(4)["trigger"].as_str()),
        (Some("reprime"), Some("threshold"))
    );
    assert!(data(6)["error"]
        .as_str()
        .unwrap()
        .contains("prompt is too long"));
    assert_eq!(
        (data(7)["kind"].as_str(), data(7)["trigger"].as_str()),
        (Some("reprime"), Some("overflow"))
    );
    assert_eq!(data(7)["model"], "scripted/test");
    assert_eq!(data(7)["messages"], 0);
    assert_eq!(
        (data(4)["review"].as_u64(), data(7)["epoch"].as_u64()),
        (Some(2), Some(0))
    );
}

#[actix::test]
async fn p9_a_resumed_session_goes_on_from_the_lifetime_in_its_transcript_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s/__advisor.jsonl");
    for (round, expected) in [(1u64, 0.5), (2, 1.0)] {
        let model = ScriptedModel::new([ScriptedReply::text("").with_usage(usage(1_000, 10, 0.5))]);
        let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |cfg| {
            cfg.audit_path = Some(path.clone());
        });
        turns(
            &h,
            [TranscriptMessage::user(format!("turn of run {round}"))],
        )
        .await;
        let lifetime = h.status().await.unwrap().agent.lifetime;
        assert_eq!(
            (lifetime.input, lifetime.output),
            (1_000 * round, 10 * round),
            "run {round}"
        );
        assert!(
            (lifetime.cost - expected).abs() < 1e-9,
            "run {round}: {}",
            lifetime.cost
        );
        h.dispose().await.unwrap();
    }
    let lines = audit_lines(&path);
    assert_eq!(
        lines.iter().filter(|l| l["type"] == "session").count(),
        1,
        "one header: the second run appends"
    );
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[3]["parentId"], lines[2]["id"], "the chain goes on");
}

#[actix::test]
async fn p9_a_compaction_is_a_custom_entry_with_the_summary_and_its_call_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let model = ScriptedModel::new([
        ScriptedReply::text("").with_usage(usage(90_000, 10, 0.0)),
        ScriptedReply::text("- The agent fixes the parser.").with_usage(usage(30_000, 50, 0.2)),
    ])
    .with_context_window(100_000);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |cfg| {
        cfg.audit_path = Some(path.clone());
    });
    turns(
        &h,
        [
            big_update("first update", 25_000),
            TranscriptMessage::user("second"),
        ],
    )
    .await;
    h.dispose().await.unwrap();
    let lines = audit_lines(&path);
    let compaction = lines
        .iter()
        .find(|l| l["customType"] == "advisor-maintenance")
        .expect("a maintenance entry");
    assert_eq!(compaction["data"]["kind"], "compaction");
    assert_eq!(compaction["data"]["messages"], 1);
    let summary = compaction["data"]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(SUMMARY_HEADING) && summary.ends_with("- The agent fixes the parser.")
    );
    let call = lines
        .iter()
        .find(|l| l["message"]["usage"]["input"] == 30_000)
        .expect("the summary call's spend");
    assert_eq!(
        call["message"]["content"][0]["text"],
        "- The agent fixes the parser."
    );
}

#[actix::test]
async fn g7_an_unwritable_audit_file_is_one_warning_and_reviews_go_on() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where the session's artifacts directory should be.
    std::fs::write(dir.path().join("not-a-dir"), "").unwrap();
    let path = dir.path().join("not-a-dir/audit.jsonl");
    let model = ScriptedModel::new([
        ScriptedReply::advise("a", NIT, Some("nit")),
        ScriptedReply::text(""),
    ]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.audit_path = Some(path.clone());
    });
    turns(
        &h,
        [
            TranscriptMessage::user("turn one"),
            TranscriptMessage::user("turn two"),
        ],
    )
    .await;
    let status = nit_delivered_without_failure(&h).await;
    assert_eq!(status.agent.reviews, 2);
    h.dispose().await.unwrap();
    match next_event(&mut rx).await {
        HostEvent::Notice { text, .. } => {
            assert!(text.contains("could not write the audit log"), "{text}");
            assert!(text.contains("audit.jsonl"), "{text}");
        }
        other => panic!("expected the warning, got {other:?}"),
    }
    assert!(drain(&mut rx).is_empty(), "one warning, not one per line");
    assert!(!path.exists());
}

// ---------------------------------------------------------------------------------------
// Stale-result eviction (P4)
// ---------------------------------------------------------------------------------------

/// Three reviews; the first reads a 400-line file. Returns the model's requests and the
/// status after the third review.
async fn three_reviews_after_a_big_read(evict: bool) -> (Vec<ModelRequest>, String) {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..400)
        .map(|i| format!("line {i:03} of the generated parser table, kept verbatim\n"))
        .collect();
    std::fs::write(dir.path().join("table.rs"), body).unwrap();
    let model = ScriptedModel::new([
        ScriptedReply::tool_call("r1", "read", json!({"path": "table.rs:1-400"})),
        ScriptedReply::text("Looked fine."),
        ScriptedReply::text(""),
        ScriptedReply::text(""),
    ]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.workspace_root = dir.path().to_path_buf();
        cfg.settings.evict_stale_results = evict;
    });
    turns(
        &h,
        [
            TranscriptMessage::user("turn one"),
            TranscriptMessage::user("turn two"),
            TranscriptMessage::user("turn three"),
        ],
    )
    .await;
    let shown = h.command("/advisor status").await.unwrap();
    h.dispose().await.unwrap();
    (model.requests(), shown)
}

#[actix::test]
async fn p4_a_stale_read_is_elided_before_a_later_review_and_counted_in_status() {
    let (requests, shown) = three_reviews_after_a_big_read(true).await;
    assert_eq!(requests.len(), 4);
    let read = tool_results(&requests[1]);
    assert!(
        read[0].contains("line 399"),
        "the read ran: {:.80}",
        read[0]
    );
    // Review 2: the read belongs to the previous review, whose update is still the newest
    // one, so it is sent as it was.
    assert_eq!(tool_results(&requests[2]), read);
    // Review 3: it is older than the previous review's update and gives way.
    let tokens = (read[0].chars().count() as u64).div_ceil(4);
    let placeholder = format!("[Stale result elided - {tokens} tokens]");
    assert_eq!(
        tool_results(&requests[3]),
        std::slice::from_ref(&placeholder)
    );
    // Nothing else changed: the updates and the answers are as they were.
    assert_eq!(requests[3].messages.len(), requests[2].messages.len() + 2);
    for (i, (now, then)) in requests[3]
        .messages
        .iter()
        .zip(&requests[2].messages)
        .enumerate()
    {
        assert_eq!(now == then, i != 2, "message {i}");
    }
    let saved = tokens - (placeholder.chars().count() as u64).div_ceil(4);
    assert!(
        shown.contains(&format!(
            "stale results evicted: 1 ({saved} tokens saved)\n"
        )),
        "{shown}"
    );
}

#[actix::test]
async fn p4_with_evict_stale_results_off_the_read_stays() {
    let (requests, shown) = three_reviews_after_a_big_read(false).await;
    assert_eq!(tool_results(&requests[3]), tool_results(&requests[1]));
    assert!(!shown.contains("evicted"), "{shown}");
}
