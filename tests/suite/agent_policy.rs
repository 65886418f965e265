//! Mailbox tests of the agent's failure policy and accounting through the handle: a long
//! `Retry-After` pauses and resumes by itself (F3), a replay's wait holds
//! through retries (S1), failed calls' usage counts and estimated totals
//! are marked (G4, C3), a request timeout is a counted failure
//! (F1, M4).

use crate::support::runtime as support;

use std::sync::Arc;
use std::time::Duration;

use advisor::domain::host::HostEvent;
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ModelError, Usage};
use advisor::settings::SyncBacklog;
use support::*;
use tokio::sync::mpsc::UnboundedReceiver;

fn server_error() -> ScriptedReply {
    ScriptedReply::Fail(ModelError::Retryable {
        usage: None,
        message: "HTTP 500".into(),
        retry_after: None,
    })
}

async fn notice(rx: &mut UnboundedReceiver<HostEvent>) -> String {
    match next_event(rx).await {
        HostEvent::Notice { text, .. } => text,
        other => panic!("expected a notice, got {other:?}"),
    }
}

/// A model whose first call is refused with a 429 asking for `secs` of patience.
fn rate_limited_once(secs: u64) -> ScriptedModel {
    ScriptedModel::new([ScriptedReply::Fail(ModelError::Retryable {
        usage: None,
        message: "HTTP 429: rate limited".into(),
        retry_after: Some(Duration::from_secs(secs)),
    })])
}

#[actix::test]
async fn f3_a_retry_after_of_100000_s_pauses_says_until_when_and_resumes_by_itself() {
    tokio::time::pause();
    let model = rate_limited_once(100_000);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    let started = tokio::time::Instant::now();
    h.turn_end(&t).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(1), "S2: no wait");

    let text = notice(&mut rx).await;
    assert!(text.starts_with("advisor: paused: HTTP 429"), "{text}");
    assert!(
        text.contains("wait until 20") && text.contains(" UTC"),
        "{text}"
    );
    assert!(text.contains("resumes by itself"), "{text}");
    let status = h.status().await.unwrap();
    let reason = status.paused.clone().expect("paused");
    assert!(
        reason.contains("the provider asked to wait until"),
        "{reason}"
    );
    assert!(status.render().contains(&format!("paused: {reason}")));
    assert_eq!(status.failures, 1);

    // Paused: a new turn is queued, not reviewed, and the primary does not wait.
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    tokio::time::sleep(Duration::from_secs(99_990)).await;
    assert_eq!(model.request_count(), 1, "no call before the wait is over");
    assert_eq!(h.status().await.unwrap().agent.backlog, 2);

    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(
        notice(&mut rx).await,
        "advisor: resumed: the provider's wait is over"
    );
    // A turn with nothing new waits for the drain (S1): the resumed review has run.
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(model.request_count(), 3);
    assert_eq!((status.agent.backlog, status.agent.reviews), (0, 2));
    assert!(status.paused.is_none());
    // P7: the batch kept is reviewed as it was, then the turn queued behind it.
    let prompt = last_user_text(&model.requests()[1]);
    assert!(
        prompt.contains("turn one") && !prompt.contains("turn two"),
        "{prompt}"
    );
    assert!(last_user_text(&model.requests()[2]).contains("turn two"));
}

#[actix::test]
async fn m4_a_retry_after_of_five_minutes_is_still_a_retry() {
    tokio::time::pause();
    let model = rate_limited_once(300);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert!(status.paused.is_none() && status.agent.failing);
    tokio::time::sleep(Duration::from_secs(301)).await;
    h.turn_end(&t).await.unwrap();
    assert_eq!(model.request_count(), 2, "retried after the server's delay");
    assert!(drain(&mut rx).is_empty(), "no pause notice");
}

/// The requests' last update texts.
fn updates(model: &ScriptedModel) -> Vec<String> {
    model.requests().iter().map(last_user_text).collect()
}

/// With the replay flag (S1), a turn end whose review fails once waits at least
/// `held` for the retry, and the next turn is still reviewed on its own.
async fn one_failure_is_waited_out(model: ScriptedModel, held: Duration) {
    tokio::time::pause();
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.hold_wait_through_retries = true;
    });
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    let started = tokio::time::Instant::now();
    h.turn_end(&t).await.unwrap();
    assert!(
        started.elapsed() >= held,
        "the wait held until the retry ran: {:?}",
        started.elapsed()
    );
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    let texts = updates(&model);
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert!(texts[0].contains("turn one") && texts[1].contains("turn one"));
    assert!(
        texts[2].contains("turn two") && !texts[2].contains("turn one"),
        "turn two is reviewed on its own: {}",
        texts[2]
    );
    let status = h.status().await.unwrap();
    assert_eq!((status.failures, status.agent.reviews), (1, 2));
}

#[actix::test]
async fn s1_with_the_replay_flag_a_500_costs_one_retry_and_turns_stay_separate() {
    // The 1 s retry delay (F1).
    one_failure_is_waited_out(ScriptedModel::new([server_error()]), Duration::from_secs(1)).await;
}

#[actix::test]
async fn s1_with_the_replay_flag_a_retry_after_past_the_30_s_cap_still_holds_the_wait() {
    // 60 s: longer than the syncBacklog cap (30 s), shorter than a pause (F3, 5 min).
    one_failure_is_waited_out(rate_limited_once(60), Duration::from_secs(60)).await;
}

#[actix::test]
async fn s2_p7_without_the_flag_a_live_host_goes_on_and_the_retry_is_the_batch_as_it_was() {
    tokio::time::pause();
    let model = ScriptedModel::new([server_error()]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("turn one")]);
    let started = tokio::time::Instant::now();
    h.turn_end(&t).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "S2: released at once"
    );
    t.push(TranscriptMessage::user("turn two"));
    h.turn_end(&t).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    h.turn_end(&t).await.unwrap();
    let texts = updates(&model);
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert!(texts[1].contains("turn one") && !texts[1].contains("turn two"));
    assert!(texts[2].contains("turn two"), "{texts:?}");
}

#[actix::test]
async fn f3_a_held_wait_still_ends_at_once_when_the_advisor_pauses() {
    tokio::time::pause();
    let model = ScriptedModel::new([ScriptedReply::Fail(ModelError::Permanent {
        message: "HTTP 401".into(),
    })]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |cfg| {
        cfg.hold_wait_through_retries = true
    });
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    let started = tokio::time::Instant::now();
    h.turn_end(&t).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(h.status().await.unwrap().paused.is_some());
}

#[actix::test]
async fn g4_c3_a_failed_call_s_usage_counts_and_estimated_totals_are_marked() {
    tokio::time::pause();
    let guessed = Usage {
        input: 1_000,
        output: 20,
        estimated: true,
        ..Usage::default()
    };
    let reported = Usage {
        input: 500,
        output: 10,
        cost: 0.01,
        ..Usage::default()
    };
    let model = ScriptedModel::new([
        ScriptedReply::Fail(ModelError::Retryable {
            usage: Some(guessed),
            message: "stream ended early".into(),
            retry_after: None,
        }),
        ScriptedReply::text("").with_usage(reported),
    ]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(model.request_count(), 2);
    let lifetime = status.agent.lifetime;
    assert_eq!((lifetime.input, lifetime.output), (1_500, 30));
    assert!(status.usage_estimated && lifetime.estimated);
    let text = status.render();
    assert!(
        text.contains("lifetime tokens (estimated): input 1500, output 30"),
        "{text}"
    );
    assert!(
        text.contains("lifetime cost (estimated): $0.0100"),
        "{text}"
    );
}

#[actix::test]
async fn g4_c3_reported_usage_is_not_marked_estimated() {
    let usage = Usage {
        input: 100,
        output: 5,
        ..Usage::default()
    };
    let model = ScriptedModel::new([ScriptedReply::text("").with_usage(usage)]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert!(!status.usage_estimated);
    assert!(status
        .render()
        .contains("lifetime tokens: input 100, output 5"));
}

#[actix::test]
async fn f1_a_request_timeout_is_a_counted_failure_in_status() {
    tokio::time::pause();
    let model = ScriptedModel::new([ScriptedReply::Fail(ModelError::Retryable {
        usage: None,
        message: "the model call took longer than 300 s (advisor.requestTimeoutSecs)".into(),
        retry_after: None,
    })]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Below(1), |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(
        (
            status.failures,
            status.consecutive_failures,
            status.agent.failing
        ),
        (1, 1, true)
    );
    assert!(status.render().contains("failures: 1 (1 consecutive)"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    h.turn_end(&t).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(
        (
            status.failures,
            status.consecutive_failures,
            status.agent.reviews
        ),
        (1, 0, 1),
        "retried and reviewed; the count of failures stays"
    );
}
