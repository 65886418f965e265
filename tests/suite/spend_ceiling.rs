//! Mailbox tests of the spend ceiling (SP6): an advisor whose spend ratio runs past
//! `maxSpendRatio` once the primary has used 200k input tokens reviews only at the end of
//! each run, told once; past twice the ceiling it is paused until `/advisor on`.

use crate::support::runtime as support;

use std::sync::Arc;

use advisor::domain::host::HostEvent;
use advisor::domain::transcript::{AssistantMessage, MessageUsage, Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::Usage;
use advisor::settings::{ReviewMode, SyncBacklog};
use advisor::{AdvisorHandle, CeilingState, TurnEndOptions};
use support::*;

/// A review's answer that read `input` tokens and said nothing.
fn quiet(input: u64) -> ScriptedReply {
    ScriptedReply::text("").with_usage(Usage {
        input,
        output: 5,
        ..Usage::default()
    })
}

/// Ends a primary turn of `t` that used `input` tokens (unpriced), work in progress or final.
async fn turn(h: &AdvisorHandle, t: &Transcript, n: u64, input: u64, wip: bool) {
    t.push(TranscriptMessage::user(format!("turn {n}")));
    let mut message = AssistantMessage::new(Vec::new(), Some("stop".into()));
    message.usage = Some(MessageUsage {
        input,
        output: 10,
        cache_read: 0,
        cache_write: 0,
        cost: None,
        ignored: 0,
    });
    message.timestamp = Some(n);
    t.push(TranscriptMessage::Assistant(message));
    let options = TurnEndOptions {
        will_continue: Some(wip),
    };
    h.turn_end_with(t, options).await.expect("the session runs");
}

/// The notices among `events` about the spend ceiling.
fn ceiling_notices(events: &[HostEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Notice { text, .. } if text.contains("spend ratio") => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[actix::test]
async fn sp6_past_the_ceiling_the_advisor_reviews_only_at_run_ends_told_once() {
    let model = ScriptedModel::new([quiet(200_000)]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.max_spend_ratio = Some(0.5);
    });
    let t = Transcript::new();
    // Turn 1: the primary used 300k, the advisor's review 200k (0.67× > 0.5).
    turn(&h, &t, 1, 300_000, false).await;
    assert_eq!(model.request_count(), 1);
    assert!(
        ceiling_notices(&drain(&mut rx)).is_empty(),
        "checked at the next turn end"
    );
    // Turn 2 (WIP): the ceiling switches the advisor to agent-end first, so it is held.
    turn(&h, &t, 2, 10_000, true).await;
    let told = ceiling_notices(&drain(&mut rx));
    assert_eq!(
        told,
        [
            "advisor: spend ratio 0.65× by input tokens is past the ceiling of 0.5 \
          (advisor.maxSpendRatio); it reviews only at the end of each run for the rest of the \
          session"
        ]
    );
    turn(&h, &t, 3, 10_000, true).await;
    assert_eq!(model.request_count(), 1, "WIP rounds are held at agent-end");
    let status = h.status().await.unwrap();
    assert_eq!(status.cadence.review_mode, ReviewMode::AgentEnd);
    assert_eq!(status.cadence.held_updates, 2);
    let ceiling = status.spend.advisors.ceiling.unwrap();
    assert_eq!(
        (ceiling.max_spend_ratio, ceiling.state),
        (0.5, CeilingState::AgentEnd)
    );
    assert!(
        status
            .render()
            .contains("spend ceiling 0.5× (advisor.maxSpendRatio): past it, reviewing only at the end of each run"),
        "{}",
        status.render()
    );
    // The run's final boundary reviews the whole run in one request; no second notice.
    model.push(quiet(1_000));
    turn(&h, &t, 4, 10_000, false).await;
    assert_eq!(model.request_count(), 2);
    assert!(ceiling_notices(&drain(&mut rx)).is_empty(), "told once");
    let json = serde_json::to_value(h.status().await.unwrap()).unwrap();
    assert_eq!(json["spend"]["advisors"]["ceiling"]["state"], "agentEnd");
    assert_eq!(json["spend"]["advisors"]["ceiling"]["maxSpendRatio"], 0.5);
}

#[actix::test]
async fn sp6_past_twice_the_ceiling_the_advisor_is_paused_until_advisor_on() {
    let model = ScriptedModel::new([quiet(700_000)]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.max_spend_ratio = Some(1.0);
    });
    let t = Transcript::new();
    turn(&h, &t, 1, 300_000, false).await;
    // 700k ÷ 310k = 2.26 > 2 × 1.0: switched and paused, both told with the ratio.
    turn(&h, &t, 2, 10_000, false).await;
    let told = ceiling_notices(&drain(&mut rx));
    assert_eq!(told.len(), 2, "{told:?}");
    assert!(
        told[1].contains("spend ratio 2.26× by input tokens is past twice the ceiling (2); paused"),
        "{told:?}"
    );
    assert_eq!(
        model.request_count(),
        1,
        "the paused advisor reviews nothing"
    );
    let status = h.status().await.unwrap();
    assert_eq!(
        status.paused.as_deref(),
        Some("paused by the spend ceiling")
    );
    assert_eq!(
        status.spend.advisors.ceiling.unwrap().state,
        CeilingState::Paused
    );
    turn(&h, &t, 3, 10_000, false).await;
    assert_eq!(model.request_count(), 1);
    // `/advisor on` resumes it; the ceiling still applies (agent-end) and does not pause it
    // again at once.
    h.command("/advisor on").await.unwrap();
    model.push(quiet(100));
    turn(&h, &t, 4, 10_000, true).await;
    turn(&h, &t, 5, 10_000, false).await;
    assert_eq!(model.request_count(), 2, "one review at the run's end");
    assert!(ceiling_notices(&drain(&mut rx)).is_empty());
    let status = h.status().await.unwrap();
    assert_eq!(status.paused, None);
    assert_eq!(status.cadence.review_mode, ReviewMode::AgentEnd);
}

#[actix::test]
async fn sp6_nothing_happens_before_the_primary_used_200k_input_tokens() {
    let model = ScriptedModel::new([quiet(150_000), quiet(150_000), quiet(150_000)]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.max_spend_ratio = Some(0.1);
    });
    let t = Transcript::new();
    // 199,999 input tokens of the primary: the ratio (1.5×) says nothing yet.
    turn(&h, &t, 1, 199_999, true).await;
    turn(&h, &t, 2, 0, true).await;
    // A message without usage adds nothing.
    t.push(TranscriptMessage::user("turn 3"));
    t.push(TranscriptMessage::Assistant(AssistantMessage::new(
        Vec::new(),
        None,
    )));
    h.turn_end(&t).await.unwrap();
    assert!(ceiling_notices(&drain(&mut rx)).is_empty());
    assert_eq!(model.request_count(), 3, "every WIP round reviewed");
    let status = h.status().await.unwrap();
    assert_eq!(status.cadence.review_mode, ReviewMode::Turn);
    assert_eq!(
        status.spend.advisors.ceiling.unwrap().state,
        CeilingState::Under
    );
}

/// Ends a primary turn whose assistant message records `usage` as the host wrote it (JSON).
async fn turn_with_usage(h: &AdvisorHandle, t: &Transcript, n: u64, usage: serde_json::Value) {
    t.push(TranscriptMessage::user(format!("turn {n}")));
    let message: AssistantMessage = serde_json::from_value(
        serde_json::json!({"content": [], "stopReason": "stop", "usage": usage, "timestamp": n}),
    )
    .expect("an assistant message");
    t.push(TranscriptMessage::Assistant(message));
    let options = TurnEndOptions {
        will_continue: Some(false),
    };
    h.turn_end_with(t, options).await.expect("the session runs");
}

#[actix::test]
async fn sp5_sp6_implausible_primary_usage_is_ignored_field_by_field_told_once_and_the_ceiling_trips(
) {
    let model = ScriptedModel::new([quiet(200_000)]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.max_spend_ratio = Some(0.5);
    });
    let t = Transcript::new();
    // u64::MAX beside a real count: the real one counts, the saturating one does not.
    turn_with_usage(
        &h,
        &t,
        1,
        serde_json::json!({"input": 300_000, "output": 10, "cacheRead": u64::MAX}),
    )
    .await;
    let told: Vec<String> = drain(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            HostEvent::Notice { text, .. } if text.contains("implausible") => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].contains("1 so far are ignored"), "{told:?}");
    // Negative, fractional, string and 1e308 fields: the message's other fields still count.
    turn_with_usage(
        &h,
        &t,
        2,
        serde_json::json!({"input": 10_000, "output": -1, "cacheRead": 1.5,
            "cacheWrite": "7", "cost": 1e308}),
    )
    .await;
    let events = drain(&mut rx);
    let status = h.status().await.unwrap();
    let primary = status.spend.primary.expect("the primary's usage is known");
    assert_eq!(
        (primary.input_uncached, primary.input_cached, primary.output),
        (310_000, 0, 10)
    );
    assert_eq!(primary.cost, None);
    // 200k ÷ 310k = 0.65 > 0.5: the ceiling trips, told once; the ignored values are not
    // told again.
    assert_eq!(
        ceiling_notices(&events).len(),
        1,
        "the ceiling trips: {events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, HostEvent::Notice { text, .. } if text.contains("implausible"))),
        "told once per session: {events:?}"
    );
    assert!(
        status.render().contains("0.65"),
        "the ratio is a plausible figure: {}",
        status.render()
    );
}
