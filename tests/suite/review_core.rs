//! The review core of SPEC §14 through the host handle: the emission guard's memory and
//! keys (P3), a replayed branch that starts no run (issue 18 item 5), the advise-only end
//! of a review and the repeated-call guard (P2), and the `defer` policy (P1).

use crate::support::runtime as support;

use std::sync::Arc;

use advisor::domain::host::{HostEvent, RewriteKind};
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::settings::{DeliveryPolicy, SyncBacklog};
use advisor::status::DropReason;
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

fn dropped(status: &advisor::status::AdvisorStatus, reason: DropReason) -> u64 {
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
async fn p3_issue18_5_a_replayed_branch_starts_no_run_until_the_user_prompts() {
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
