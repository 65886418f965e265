//! The `reconfirm` delivery policy (D4, D5, D9, G6) and immune turns (D7), through the host
//! handle: what the host receives, what the advisor model is told, what status shows.

use crate::support::runtime as support;

use std::sync::Arc;
use std::time::Duration;

use advisor::domain::advice::{Channel, Severity};
use advisor::domain::host::{HostEvent, RewriteKind};
use advisor::domain::transcript::{
    AssistantBlock, AssistantMessage, Transcript, TranscriptMessage,
};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ModelClient, Usage};
use advisor::settings::{DeliveryPolicy, SyncBacklog};
use advisor::DropReason;
use advisor::{AdvisorHandle, RuntimeConfig};
use support::*;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

/// Appended to advice delivered right after a terminal turn under `reconfirm` (D4).
const FINAL_ANSWER_NOTE: &str =
    include_str!("../../config/prompts/delivery-final-answer.md").trim_ascii_end();

const BLOCKER: &str = "The migration drops the email column the user asked to keep.";
const CONCERN: &str = "The loop never terminates on empty input.";
const EARLIER: &str = "context=\"raised about an earlier step\"";

/// A reconfirm runtime whose first turn waits for its review (`syncBacklog: 1`).
fn reconfirm(model: Arc<dyn ModelClient>) -> (AdvisorHandle, UnboundedReceiver<HostEvent>) {
    runtime(model, SyncBacklog::Below(1), reconfirming)
}

/// Sets `advisor.policy: reconfirm`.
fn reconfirming(cfg: &mut RuntimeConfig) {
    cfg.settings.policy = DeliveryPolicy::Reconfirm;
}

/// The primary's final answer: an assistant message with no tool calls (a terminal turn).
fn final_answer(text: &str) -> TranscriptMessage {
    TranscriptMessage::Assistant(AssistantMessage::new(
        vec![AssistantBlock::Text { text: text.into() }],
        Some("stop".into()),
    ))
}

fn notice(event: HostEvent) -> String {
    match event {
        HostEvent::Notice { text, .. } => text,
        other => panic!("expected a notice, got {other:?}"),
    }
}

/// The script of a first review that raises `BLOCKER`, followed by `then`.
fn blocker_then(then: Vec<ScriptedReply>) -> Vec<ScriptedReply> {
    let mut script = vec![
        advise_then_look("a", BLOCKER, Some("blocker")),
        ScriptedReply::text(""),
    ];
    script.extend(then);
    script
}

/// A model whose first review raises `BLOCKER` and whose second raises it again at
/// `severity`.
fn reraised_as(severity: &str) -> ScriptedModel {
    ScriptedModel::new(blocker_then(vec![
        advise_then_look("b", BLOCKER, Some(severity)),
        ScriptedReply::text(""),
    ]))
}

/// Two turn ends, the first of them reviewed before the second ends.
async fn two_turns(h: &AdvisorHandle, running: bool) -> Transcript {
    h.run_state(running).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("next"));
    h.turn_end(&t).await.unwrap();
    t
}

/// Runs one turn end while granting `permits` model answers, and waits for it.
async fn turn_with_permits(
    h: &AdvisorHandle,
    t: &Transcript,
    gate: &tokio::sync::Semaphore,
    permits: usize,
) {
    let (h2, t2) = (h.clone(), t.clone());
    let waiting = tokio::spawn(async move { h2.turn_end(&t2).await });
    gate.add_permits(permits);
    waiting.await.unwrap().unwrap();
}

#[actix::test]
async fn d4_d9_d5_blocker_held_on_turn_one_reconfirmed_on_turn_two_delivered_after_the_block() {
    let model = reraised_as("blocker");
    let (h, mut rx) = reconfirm(Arc::new(model.clone()));
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("drop the unused columns")]);
    h.turn_end(&t).await.unwrap();
    // Turn 1: held, nothing reaches the host, the advisor is told so.
    assert!(drain(&mut rx).is_empty());
    assert!(h.step_boundary().await.unwrap().is_empty());
    assert_eq!(
        advise_results(&model.requests()[1]),
        vec!["Held pending reconfirmation."]
    );
    let status = h.status().await.unwrap();
    assert_eq!(status.deliveries.held, 1);
    let shown = h.command("/advisor status").await.unwrap();
    assert!(shown.contains("held notes: 1\n"), "{shown}");
    assert!(
        shown.contains(&format!("  - [BLOCKER] {BLOCKER}\n")),
        "{shown}"
    );

    // Turn 2: the turn end waits; the review is asked to reconfirm; it does.
    t.push(TranscriptMessage::user("and rename the table"));
    h.turn_end(&t).await.unwrap();
    let prompt = last_user_text(&model.requests()[2]);
    assert!(
        prompt.starts_with("### Held advisories — reconfirm\n"),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!("- [BLOCKER] {BLOCKER}\n")),
        "{prompt}"
    );
    assert!(
        prompt.contains("### Session update\n\n") && prompt.contains("rename the table"),
        "{prompt}"
    );
    assert!(notice(next_event(&mut rx).await).contains("waiting up to 15s to catch up"));
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    let step = h.step_boundary().await.unwrap();
    assert_eq!(step.steers.len(), 1);
    let steer = &step.steers[0];
    assert_eq!(steer.channel, Channel::Steer);
    assert_eq!(steer.notes[0].severity, Some(Severity::Blocker));
    assert!(steer.content.contains("severity=\"blocker\""));
    assert!(steer.content.contains(EARLIER), "{}", steer.content);
    assert!(!steer.content.contains(FINAL_ANSWER_NOTE));
    let status = h.status().await.unwrap();
    assert_eq!((status.deliveries.held, status.deliveries.steer), (0, 1));
    assert!(status.held_notes.is_empty());
}

#[actix::test]
async fn d4_d5_blocker_first_raised_on_a_terminal_turn_is_delivered_after_one_review() {
    let model = ScriptedModel::new([
        advise_then_look("a", BLOCKER, Some("blocker")),
        ScriptedReply::text(""),
    ]);
    let (h, mut rx) = reconfirm(Arc::new(model.clone()));
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([
        TranscriptMessage::user("drop the unused columns"),
        final_answer("Done: the migration drops them."),
    ]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(model.request_count(), 2, "one review");
    assert!(notice(next_event(&mut rx).await).contains("catching up before the turn ends"));
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    let steer = h.step_boundary().await.unwrap().steers.remove(0);
    assert!(steer.content.contains("severity=\"blocker\""));
    assert!(
        steer.content.ends_with(FINAL_ANSWER_NOTE),
        "{}",
        steer.content
    );
    // Going idle has nothing left to wake with.
    h.run_state(false).await.unwrap();
    assert!(drain(&mut rx).is_empty());
}

#[actix::test]
async fn d4_nits_go_out_at_once_tagged_and_after_a_terminal_turn_carry_the_final_answer_text() {
    let model = ScriptedModel::new([
        advise_then_look("a", "Name the helper after what it returns.", Some("nit")),
        ScriptedReply::text(""),
    ]);
    let (h, mut rx) = reconfirm(Arc::new(model.clone()));
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go"), final_answer("All done.")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(
        advise_results(&model.requests()[1]),
        vec!["Recorded."],
        "nits are not held"
    );
    assert!(notice(next_event(&mut rx).await).contains("catching up"));
    // CA13: raised inside the terminal turn's window, the nit goes out with its merged card.
    let card = match next_event(&mut rx).await {
        HostEvent::Card { card } => card,
        other => panic!("expected the merged card, got {other:?}"),
    };
    assert!(card.content.contains(EARLIER), "{}", card.content);
    assert!(card.content.ends_with(FINAL_ANSWER_NOTE));
    assert!(h.step_boundary().await.unwrap().is_empty());
    assert!(drain(&mut rx).is_empty());
}

#[actix::test]
async fn r1_d9_review_orphaned_by_a_reset_holds_nothing() {
    let (model, mut arrivals, gate) =
        GatedModel::new(vec![advise_then_look("a", BLOCKER, Some("blocker"))], true);
    let gate = gate.unwrap();
    let (h, mut rx) = runtime(Arc::new(model), SyncBacklog::Off, reconfirming);
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    next_request(&mut arrivals).await;
    h.rewrite(RewriteKind::Compaction).await.unwrap();
    gate.add_permits(10);
    let follow_up = next_request(&mut arrivals).await;
    assert!(
        advise_results(&follow_up)[0].contains("reset"),
        "{:?}",
        advise_results(&follow_up)
    );
    let status = h.status().await.unwrap();
    assert!(status.held_notes.is_empty());
    assert_eq!(status.deliveries.held, 0);
    assert_eq!(
        status.deliveries.dropped.get(&DropReason::StaleEpoch),
        Some(&1)
    );
    assert!(drain(&mut rx).is_empty());
}

#[actix::test]
async fn d9_held_blocker_reraised_as_a_nit_stays_a_blocker() {
    let model = reraised_as("nit");
    let (h, mut rx) = reconfirm(Arc::new(model.clone()));
    two_turns(&h, false).await;
    assert!(notice(next_event(&mut rx).await).contains("waiting up to 15s"));
    match next_event(&mut rx).await {
        HostEvent::Wake { card } => {
            assert_eq!(card.notes[0].severity, Some(Severity::Blocker));
            assert_eq!(card.notes[0].note, BLOCKER);
            assert!(card.content.contains("severity=\"blocker\""));
        }
        other => panic!("expected a wake (the primary is idle), got {other:?}"),
    }
    assert!(
        h.step_boundary().await.unwrap().aside.is_none(),
        "no nit either"
    );
}

#[actix::test]
async fn d9_recanted_blocker_is_dropped() {
    let model = ScriptedModel::new(blocker_then(vec![ScriptedReply::text(
        "The column is kept after all.",
    )]));
    let (h, mut rx) = reconfirm(Arc::new(model.clone()));
    let t = two_turns(&h, true).await;
    assert!(last_user_text(&model.requests()[2]).contains(BLOCKER));
    assert!(notice(next_event(&mut rx).await).contains("waiting up to 15s"));
    assert!(drain(&mut rx).is_empty(), "nothing delivered");
    assert!(h.step_boundary().await.unwrap().is_empty());
    let status = h.status().await.unwrap();
    assert!(status.held_notes.is_empty());
    assert_eq!(
        status.deliveries.dropped.get(&DropReason::Recanted),
        Some(&1)
    );
    assert_eq!(status.deliveries.raised(), 1);
    // Nothing held now: the next non-terminal turn does not wait, and no preamble.
    t.push(TranscriptMessage::user("third"));
    h.turn_end(&t).await.unwrap();
    assert!(drain(&mut rx).is_empty());
    assert!(!last_user_text(&model.requests()[3]).contains("Held advisories"));
}

#[actix::test]
async fn g6_held_notes_survive_context_maintenance() {
    let big = Usage {
        input: 9_000,
        ..Usage::default()
    };
    let model = ScriptedModel::new([
        advise_then_look("a", BLOCKER, Some("blocker")).with_usage(big),
        ScriptedReply::text("").with_usage(big),
    ])
    .with_context_window(10_000);
    let (h, _rx) = reconfirm(Arc::new(model.clone()));
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("next"));
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(status.agent.reprimes, 1, "the context was re-primed");
    let second_review = &model.requests()[2];
    assert_eq!(second_review.messages.len(), 1, "a fresh context");
    assert!(last_user_text(second_review).contains(&format!("- [BLOCKER] {BLOCKER}")));
}

#[actix::test]
async fn d5_non_terminal_turn_with_nothing_held_does_not_wait() {
    tokio::time::pause();
    let (model, mut arrivals, _gate) = GatedModel::new(vec![], true);
    let (h, mut rx) = runtime(Arc::new(model), SyncBacklog::Off, reconfirming);
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    let started = Instant::now();
    h.turn_end(&t).await.unwrap();
    assert_eq!(started.elapsed(), Duration::ZERO);
    next_request(&mut arrivals).await;
    assert!(drain(&mut rx).is_empty(), "no catch-up notice");
}

#[actix::test]
async fn d5_terminal_turn_waits_even_with_nothing_held() {
    tokio::time::pause();
    let (model, _arrivals, _gate) = GatedModel::new(vec![], true);
    let (h, mut rx) = runtime(Arc::new(model), SyncBacklog::Off, reconfirming);
    let t = Transcript::from_messages([TranscriptMessage::user("go"), final_answer("Done.")]);
    let started = Instant::now();
    h.turn_end(&t).await.unwrap();
    assert_eq!(started.elapsed().as_secs(), 120);
    assert!(notice(next_event(&mut rx).await).contains("up to 120s"));
    assert!(
        drain(&mut rx).is_empty(),
        "nothing held: no best-effort notice"
    );
}

/// A reconfirm runtime whose first review holds `BLOCKER`; later answers need permits.
async fn held_after_turn_one(
    replies: Vec<ScriptedReply>,
) -> (
    AdvisorHandle,
    UnboundedReceiver<HostEvent>,
    Arc<tokio::sync::Semaphore>,
    Transcript,
) {
    let (model, _arrivals, gate) = GatedModel::new(blocker_then(replies), true);
    let gate = gate.unwrap();
    let (h, rx) = reconfirm(Arc::new(model));
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("turn 1")]);
    turn_with_permits(&h, &t, &gate, 2).await;
    assert_eq!(h.status().await.unwrap().held_notes.len(), 1);
    (h, rx, gate, t)
}

#[actix::test]
async fn d5_held_and_timeout_keeps_the_notes_and_backoff_is_15_30_60_120_120_seconds() {
    tokio::time::pause();
    let (h, mut rx, _gate, t) = held_after_turn_one(vec![]).await;
    let mut waits = Vec::new();
    for turn in 2..=6 {
        t.push(TranscriptMessage::user(format!("turn {turn}")));
        let started = Instant::now();
        h.turn_end(&t).await.unwrap();
        let waited = started.elapsed().as_secs();
        waits.push(waited);
        let text = notice(next_event(&mut rx).await);
        assert!(text.contains(&format!("waiting up to {waited}s")), "{text}");
        assert!(
            drain(&mut rx).is_empty(),
            "mid-run timeout delivers nothing"
        );
        assert_eq!(h.status().await.unwrap().held_notes.len(), 1);
    }
    assert_eq!(waits, vec![15, 30, 60, 120, 120]);
}

#[actix::test]
async fn d5_held_and_settled_delivers_and_resets_the_streak() {
    tokio::time::pause();
    let second = "The new index is never used by the query.";
    let (h, mut rx, gate, t) = held_after_turn_one(vec![
        // Review 2 reconfirms, but only after its block timed out.
        advise_then_look("b", BLOCKER, Some("blocker")),
        ScriptedReply::text(""),
        // Review 3 reconfirms again and holds a second blocker.
        ScriptedReply::tool_calls(&[
            (
                "c",
                "advise",
                serde_json::json!({"note": BLOCKER, "severity": "blocker"}),
            ),
            (
                "d",
                "advise",
                serde_json::json!({"note": second, "severity": "blocker"}),
            ),
        ]),
        ScriptedReply::text(""),
    ])
    .await;
    t.push(TranscriptMessage::user("turn 2"));
    h.turn_end(&t).await.unwrap();
    assert!(notice(next_event(&mut rx).await).contains("up to 15s"));
    t.push(TranscriptMessage::user("turn 3"));
    let started = Instant::now();
    turn_with_permits(&h, &t, &gate, 4).await;
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(
        notice(next_event(&mut rx).await).contains("up to 30s"),
        "the streak grew"
    );
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    let steers = h.step_boundary().await.unwrap().steers;
    assert_eq!(steers.len(), 1, "only the reconfirmed note");
    assert_eq!(steers[0].notes[0].note, BLOCKER);
    let held = h.status().await.unwrap().held_notes;
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].note, second);
    // Settled: the next block starts again at 15 s.
    t.push(TranscriptMessage::user("turn 4"));
    h.turn_end(&t).await.unwrap();
    assert!(notice(next_event(&mut rx).await).contains("up to 15s"));
}

#[actix::test]
async fn d5_terminal_timeout_delivers_held_notes_best_effort_with_a_notice() {
    tokio::time::pause();
    let (h, mut rx, _gate, t) = held_after_turn_one(vec![]).await;
    t.push(final_answer("Done."));
    let started = Instant::now();
    h.turn_end(&t).await.unwrap();
    assert_eq!(started.elapsed().as_secs(), 120);
    assert!(notice(next_event(&mut rx).await).contains("catching up before the turn ends"));
    let text = notice(next_event(&mut rx).await);
    assert!(text.contains("1 held note unconfirmed"), "{text}");
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    h.run_state(false).await.unwrap();
    match next_event(&mut rx).await {
        HostEvent::Wake { card } => {
            assert_eq!(card.notes[0].note, BLOCKER);
            assert!(card.content.ends_with(FINAL_ANSWER_NOTE));
        }
        other => panic!("expected a wake, got {other:?}"),
    }
    assert!(h.status().await.unwrap().held_notes.is_empty());
}

#[actix::test]
async fn d5_abort_releases_the_block_delivers_nothing_and_keeps_the_notes() {
    tokio::time::pause();
    let (model, mut arrivals, gate) = GatedModel::new(
        blocker_then(vec![advise_then_look("b", BLOCKER, Some("blocker"))]),
        true,
    );
    let gate = gate.unwrap();
    let (h, mut rx) = reconfirm(Arc::new(model));
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("turn 1")]);
    turn_with_permits(&h, &t, &gate, 2).await;
    next_request(&mut arrivals).await;
    next_request(&mut arrivals).await;
    t.push(TranscriptMessage::user("turn 2"));
    let (h2, t2) = (h.clone(), t.clone());
    let started = Instant::now();
    let waiting = tokio::spawn(async move { h2.turn_end(&t2).await });
    next_request(&mut arrivals).await;
    h.interrupt(false).await.unwrap();
    waiting.await.unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(notice(next_event(&mut rx).await).contains("up to 15s"));
    assert!(drain(&mut rx).is_empty(), "nothing delivered");
    assert!(h.step_boundary().await.unwrap().is_empty());
    let status = h.status().await.unwrap();
    assert_eq!(status.held_notes.len(), 1);
    assert_eq!(status.held_notes[0].note, BLOCKER);
}

#[actix::test]
async fn d7_concern_is_an_aside_during_immune_turns_blocker_still_interrupts() {
    let model = ScriptedModel::new([
        advise_then_look("a", CONCERN, Some("concern")),
        ScriptedReply::text(""),
        advise_then_look("b", "The retry ignores Retry-After.", Some("concern")),
        ScriptedReply::text(""),
        advise_then_look(
            "c",
            "The test deletes the fixture directory.",
            Some("blocker"),
        ),
        ScriptedReply::text(""),
    ]);
    let (h, mut rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("turn 1")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    assert_eq!(h.step_boundary().await.unwrap().steers.len(), 1);
    // Turn 2 is immune: the concern comes as an aside.
    t.push(TranscriptMessage::user("turn 2"));
    h.turn_end(&t).await.unwrap();
    assert!(drain(&mut rx).is_empty(), "no steer");
    let step = h.step_boundary().await.unwrap();
    assert!(step.steers.is_empty());
    let aside = step.aside.expect("the concern as an aside");
    assert_eq!(aside.channel, Channel::Aside);
    assert!(aside.content.contains("severity=\"concern\""));
    // A blocker still interrupts.
    t.push(TranscriptMessage::user("turn 3"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(next_event(&mut rx).await, HostEvent::SteerReady);
    let steers = h.step_boundary().await.unwrap().steers;
    assert_eq!(steers[0].notes[0].severity, Some(Severity::Blocker));
}

#[actix::test]
async fn d7_immunity_lapses_after_the_configured_turns() {
    let model = ScriptedModel::new([
        advise_then_look("a", CONCERN, Some("concern")),
        ScriptedReply::text(""),
        ScriptedReply::text(""),
        advise_then_look("b", "The retry ignores Retry-After.", Some("concern")),
        ScriptedReply::text(""),
    ]);
    let (h, mut rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |cfg| {
        cfg.settings.immune_turns = 1
    });
    h.run_state(false).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("turn 1")]);
    h.turn_end(&t).await.unwrap();
    assert!(matches!(next_event(&mut rx).await, HostEvent::Wake { .. }));
    for turn in 2..=3 {
        t.push(TranscriptMessage::user(format!("turn {turn}")));
        h.turn_end(&t).await.unwrap();
    }
    assert!(
        matches!(next_event(&mut rx).await, HostEvent::Wake { .. }),
        "one immune turn, then concerns interrupt again"
    );
}
