//! Mailbox tests of spend made visible (SPEC §17): an advisor that reviews without advising
//! is told once (SP4); status shows each advisor's and the primary's spend and their ratio,
//! unknown when the session's messages carry no usage (SP5).

use crate::support::runtime as support;

use std::sync::Arc;

use advisor::domain::host::HostEvent;
use advisor::domain::transcript::{AssistantMessage, MessageUsage, Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::Usage;
use advisor::settings::SyncBacklog;
use advisor::RatioBasis;
use serde_json::json;
use support::*;

/// One review's answer: no tool call, `input` tokens read.
fn quiet(input: u64, cost: f64) -> ScriptedReply {
    ScriptedReply::text("").with_usage(Usage {
        input,
        output: 5,
        cost,
        ..Usage::default()
    })
}

/// The notices among `events` that tell of a silent advisor.
fn silent_notices(events: &[HostEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Notice { text, .. } if text.contains("without one advise call") => {
                Some(text.clone())
            }
            _ => None,
        })
        .collect()
}

#[actix::test]
async fn sp4_fifty_reviews_without_advise_over_100k_input_tell_the_user_once() {
    let model = ScriptedModel::new([]).with_id("local/quiet");
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::new();
    for turn in 1..=60 {
        model.push(quiet(2_500, 0.0));
        t.push(TranscriptMessage::user(format!("turn {turn}")));
        h.turn_end(&t).await.unwrap();
        let told = silent_notices(&drain(&mut rx));
        match turn {
            50 => assert_eq!(
                told,
                [
                    "advisor: 50 reviews on local/quiet without one advise call, 125000 input \
                  tokens spent; check its model and instructions"
                ],
                "the 50th review is told"
            ),
            _ => assert!(told.is_empty(), "turn {turn}: {told:?}"),
        }
    }
    assert_eq!(h.status().await.unwrap().agent.reviews, 60);
}

#[actix::test]
async fn sp4_an_advisor_that_advised_once_is_never_told() {
    let model = ScriptedModel::new([]).with_id("local/quiet");
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::new();
    model.push(ScriptedReply::advise("a1", "check the retry path", None));
    for turn in 1..=55 {
        model.push(quiet(5_000, 0.0));
        t.push(TranscriptMessage::user(format!("turn {turn}")));
        h.turn_end(&t).await.unwrap();
    }
    assert!(silent_notices(&drain(&mut rx)).is_empty());
}

/// A primary turn as pi records it: the assistant message carries its usage and timestamp.
fn primary_turn(at: u64, input: u64, cache_read: u64, cost: Option<f64>) -> TranscriptMessage {
    let mut message = AssistantMessage::new(Vec::new(), Some("stop".into()));
    message.usage = Some(MessageUsage {
        input,
        output: 100,
        cache_read,
        cache_write: 0,
        cost,
        ignored: 0,
    });
    message.timestamp = Some(at);
    TranscriptMessage::Assistant(message)
}

#[actix::test]
async fn sp5_status_shows_the_advisor_s_spend_the_primary_s_and_their_ratio() {
    let model = ScriptedModel::new([
        ScriptedReply::tool_calls(&[
            ("r1", "find", json!({"pattern": "*.rs"})),
            ("r2", "find", json!({"pattern": "*.md"})),
        ])
        .with_usage(Usage {
            input: 1_000,
            cache_read: 3_000,
            output: 20,
            cost: 0.01,
            ..Usage::default()
        }),
        ScriptedReply::advise("a1", "the loop never ends", Some("concern")).with_usage(Usage {
            input: 500,
            cache_read: 4_000,
            output: 30,
            cost: 0.01,
            ..Usage::default()
        }),
        ScriptedReply::text("").with_usage(Usage {
            input: 100,
            output: 5,
            cost: 0.02,
            ..Usage::default()
        }),
    ]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([
        TranscriptMessage::user("fix it"),
        primary_turn(1, 2_000, 18_000, Some(0.10)),
    ]);
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("and the tests"));
    t.push(primary_turn(2, 1_000, 19_000, Some(0.06)));
    h.turn_end(&t).await.unwrap();

    let status = h.status().await.unwrap();
    let advisors = &status.spend.advisors;
    assert_eq!((advisors.requests, advisors.reviews), (3, 2));
    assert_eq!(
        (
            advisors.input_uncached,
            advisors.input_cached,
            advisors.output
        ),
        (1_600, 7_000, 55)
    );
    assert!((advisors.cost.unwrap() - 0.04).abs() < 1e-9);
    assert_eq!((advisors.tool_calls, advisors.advise_calls), (2, 1));
    assert_eq!(advisors.tool_calls_per_review, Some(1.5));
    let primary = status.spend.primary.as_ref().unwrap();
    assert_eq!(
        (
            primary.messages,
            primary.input_uncached,
            primary.input_cached
        ),
        (2, 3_000, 37_000)
    );
    let ratio = advisors.ratio.unwrap();
    assert_eq!(ratio.basis, RatioBasis::Cost);
    assert!((ratio.value - 0.25).abs() < 1e-9, "{ratio:?}");

    let text = status.render();
    for line in [
        "spend: 3 request(s), 2 review(s), input 1600 uncached + 7000 cached, output 55 tokens, \
         cost $0.0400, tool calls per review 1.5 (2 tool, 1 advise)",
        "primary: input 3000 uncached + 37000 cached, output 200 tokens, cost $0.1600 (2 message(s))",
        "advisor ÷ primary: 0.25× by cost",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["spend"]["advisors"]["ratio"]["basis"], "cost");
    assert_eq!(json["spend"]["primary"]["inputCached"], 37_000);
}

#[actix::test]
async fn sp5_a_session_without_usage_shows_the_ratio_as_unknown_never_0() {
    let model = ScriptedModel::new([quiet(4_000, 0.0)]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([
        TranscriptMessage::user("go"),
        TranscriptMessage::Assistant(AssistantMessage::new(Vec::new(), Some("stop".into()))),
    ]);
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(status.spend.primary, None);
    assert_eq!(status.spend.advisors.ratio, None);
    assert_eq!(status.spend.advisors.cost, None, "no prices: unknown");
    let text = status.render();
    assert!(
        text.contains("primary: its session's messages carry no usage"),
        "{text}"
    );
    assert!(text.contains("advisor ÷ primary: unknown"), "{text}");
    assert!(text.contains("cost unknown"), "{text}");
    let json = serde_json::to_value(&status).unwrap();
    assert!(json["spend"]["advisors"]["ratio"].is_null());
}

#[actix::test]
async fn sp5_an_unpriced_advisor_is_compared_by_input_tokens_and_a_compaction_keeps_the_totals() {
    let model = ScriptedModel::new([quiet(4_000, 0.0), quiet(4_000, 0.0)]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([
        TranscriptMessage::user("go"),
        primary_turn(1, 10_000, 30_000, Some(1.0)),
    ]);
    h.turn_end(&t).await.unwrap();
    // A compaction keeps the last turn and adds a new one.
    h.rewrite(advisor::RewriteKind::Compaction).await.unwrap();
    t.replace([
        TranscriptMessage::user("summary"),
        primary_turn(1, 10_000, 30_000, Some(1.0)),
        TranscriptMessage::user("more"),
        primary_turn(2, 0, 40_000, Some(0.5)),
    ]);
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    let primary = status.spend.primary.as_ref().unwrap();
    assert_eq!(primary.messages, 2, "the kept turn is not counted twice");
    assert_eq!(primary.input_uncached + primary.input_cached, 80_000);
    let ratio = status.spend.advisors.ratio.unwrap();
    assert_eq!(ratio.basis, RatioBasis::InputTokens);
    assert!((ratio.value - 0.1).abs() < 1e-9, "{ratio:?}");
}
