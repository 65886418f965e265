//! The triage gate (SP9) through the mailboxes, the judge a real HTTP client talking to the
//! in-process server in each wire format: a WIP update the judge clears is held for the
//! next review; one it flags, and every judge that answers nonsense, fails with a 500 or
//! hangs past 10 s (virtual time), is reviewed at once. Final updates never see the judge.

use crate::support::runtime as support;
use crate::support::sse_server::{ScriptedResponse, SseServer};
use crate::support::wire::{Dialect, DIALECTS, REPORTED_INPUT, REPORTED_OUTPUT};

use std::sync::Arc;
use std::time::Duration;

use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::ModelClient;
use advisor::settings::SyncBacklog;
use advisor::{AdvisorHandle, TurnEndOptions};
use support::*;

/// The judge: `dialect`'s client pointed at `server`, timeouts far past the gate's 10 s.
fn judge(server: &SseServer, dialect: Dialect) -> Arc<dyn ModelClient> {
    crate::support::wire::client(server, dialect.role(), dialect.api())
}

/// A session whose WIP updates go through `judge` (gate on, threshold 0.2) and whose turn
/// ends wait for their review (`syncBacklog: 1`).
fn gated(advisor: &ScriptedModel, judge: Arc<dyn ModelClient>) -> AdvisorHandle {
    let (h, _rx) = runtime(Arc::new(advisor.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.judge_gate = true;
        cfg.judge_model = Some(judge);
    });
    h
}

/// Ends turn `n` (a user line `turn n`), work in progress or final.
async fn turn(h: &AdvisorHandle, t: &Transcript, n: usize, wip: bool) {
    t.push(TranscriptMessage::user(format!("turn {n}")));
    let options = TurnEndOptions {
        will_continue: Some(wip),
    };
    h.turn_end_with(t, options).await.expect("the session runs");
}

const CLEAR: &str =
    r#"{"destructive": 0.05, "guessing": 0.1, "looping": 0.0, "hidingFailure": 0.19}"#;

#[actix::test]
async fn sp9_a_wip_update_the_judge_clears_is_held_and_goes_with_the_next_review() {
    for wire in DIALECTS {
        let server = SseServer::start([ScriptedResponse::sse(&wire.answer(CLEAR))])
            .await
            .expect("bind");
        let advisor = ScriptedModel::new([ScriptedReply::text("")]);
        let h = gated(&advisor, judge(&server, wire));
        let t = Transcript::new();
        turn(&h, &t, 1, true).await;
        assert_eq!(server.request_count(), 1, "{wire:?}: the judge was asked");
        assert_eq!(advisor.request_count(), 0, "{wire:?}: held, not reviewed");
        let request = server.requests()[0].json();
        let asked = request.to_string();
        assert!(
            asked.contains("turn 1") && asked.contains("hidingFailure"),
            "{asked}"
        );
        // The final update is reviewed without the judge, carrying the held one.
        turn(&h, &t, 2, false).await;
        assert_eq!(server.request_count(), 1, "{wire:?}: finals skip the judge");
        let requests = advisor.requests();
        assert_eq!(requests.len(), 1);
        let prompt = last_user_text(&requests[0]);
        assert!(
            prompt.contains("turn 1") && prompt.contains("turn 2"),
            "{wire:?}: {prompt}"
        );
        let status = h.status().await.unwrap();
        let gate = status.spend.gate.expect("the gate is on");
        assert_eq!((gate.gate_held, gate.gate_passed), (1, 0), "{wire:?}");
        assert_eq!(gate.judge_requests, 1);
        assert_eq!(
            (gate.judge_input_tokens, gate.judge_output_tokens),
            (REPORTED_INPUT, REPORTED_OUTPUT),
            "{wire:?}: the judge's tokens, apart"
        );
        assert_eq!(
            status.spend.advisors.requests, 1,
            "{wire:?}: the judge's call is not the advisor's"
        );
        assert!(
            status.render().contains(
                "triage gate: 1 update(s) held, 0 reviewed at once; judge: 1 request(s) (0 failed)"
            ),
            "{}",
            status.render()
        );
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["spend"]["gate"]["gateHeld"], 1);
    }
}

/// Runs one WIP turn against a judge answering `answer` and says whether it was reviewed
/// at once, with the gate's counters.
async fn reviewed_at_once(answer: ScriptedResponse, wire: Dialect) -> (bool, u64, u64) {
    let server = SseServer::start([answer]).await.expect("bind");
    let advisor = ScriptedModel::new([ScriptedReply::text("")]);
    let h = gated(&advisor, judge(&server, wire));
    let t = Transcript::new();
    turn(&h, &t, 1, true).await;
    let gate = h
        .status()
        .await
        .unwrap()
        .spend
        .gate
        .expect("the gate is on");
    (
        advisor.request_count() == 1,
        gate.gate_passed,
        gate.judge_failures,
    )
}

#[actix::test]
async fn sp9_a_flagged_update_a_nonsense_answer_and_a_500_are_reviewed_at_once() {
    for wire in DIALECTS {
        let flagged = wire.answer(
            r#"{"destructive": 0.0, "guessing": 0.2, "looping": 0.0, "hidingFailure": 0.0}"#,
        );
        assert_eq!(
            reviewed_at_once(ScriptedResponse::sse(&flagged), wire).await,
            (true, 1, 0),
            "{wire:?}: 0.2 reaches the threshold"
        );
        let nonsense = wire.answer("Looks fine to me!");
        assert_eq!(
            reviewed_at_once(ScriptedResponse::sse(&nonsense), wire).await,
            (true, 1, 1),
            "{wire:?}: a malformed answer never holds"
        );
        let failed = ScriptedResponse::json(500, r#"{"error": {"message": "overloaded"}}"#);
        assert_eq!(
            reviewed_at_once(failed, wire).await,
            (true, 1, 1),
            "{wire:?}: a failed judge never holds"
        );
    }
}

#[actix::test]
async fn sp9_a_judge_silent_for_10_s_lets_the_review_go_ahead() {
    tokio::time::pause();
    let wire = Dialect::OpenAi;
    let hang = ScriptedResponse::sse(&wire.answer(CLEAR)).stall_after(0);
    let start = tokio::time::Instant::now();
    assert_eq!(reviewed_at_once(hang, wire).await, (true, 1, 1));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(10) && waited < Duration::from_secs(11),
        "the turn end waited the judge's 10 s, no more: {waited:?}"
    );
}

#[actix::test]
async fn sp9_the_gate_is_off_by_default_and_every_wip_update_is_reviewed() {
    let server = SseServer::start([ScriptedResponse::sse(&Dialect::OpenAi.answer(CLEAR))])
        .await
        .expect("bind");
    let advisor = ScriptedModel::new([ScriptedReply::text(""), ScriptedReply::text("")]);
    let judge = judge(&server, Dialect::OpenAi);
    let (h, _rx) = runtime(Arc::new(advisor.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.judge_model = Some(judge);
    });
    let t = Transcript::new();
    turn(&h, &t, 1, true).await;
    turn(&h, &t, 2, true).await;
    assert_eq!(advisor.request_count(), 2);
    assert_eq!(server.request_count(), 0);
    assert_eq!(h.status().await.unwrap().spend.gate, None);
}
