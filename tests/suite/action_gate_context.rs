//! The action gate through the supervisor's and the advisor agent's mailboxes, on scripted
//! models: what the gate's model is sent (GT3: the asked advisor's own context once it has
//! one, the recent transcript before) and which advisor a roster entry's own `gate` turns the
//! gate on for (GT10).

use crate::support::roster::{advisor, PerSlug};
use crate::support::runtime as support;

use std::collections::HashMap;
use std::sync::Arc;

use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::gate::{GateDecision, ProposedAction, VerdictSource};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ChatMessage, ModelClient, ModelRequest};
use advisor::roster::{Roster, RosterSetup, Sourced};
use advisor::settings::{GateFailMode, GateMode, SyncBacklog};
use serde_json::json;
use support::*;

/// The scripted gate's denial.
const DENY: &str =
    r#"{"decision": "deny", "risk": "high", "reason": "GATE-REASON keep the release build."}"#;

/// Said by the advisor in its review of turn one; only its own context holds it.
const REVIEWER_MEMORY: &str = "REVIEWER-MEMORY: the user ships the release from build/.";

fn bash(command: &str) -> ProposedAction {
    ProposedAction {
        tool: "bash".into(),
        input: json!({ "command": command }),
        cwd: None,
    }
}

/// The one user message of a gate request.
fn gate_text(request: &ModelRequest) -> String {
    assert!(
        request
            .system
            .contains("You are the gate of a coding agent"),
        "a gate request: {}",
        request.system
    );
    match request.messages.as_slice() {
        [ChatMessage::User { text }] => text.clone(),
        other => panic!("one user message: {other:?}"),
    }
}

/// Gates `command` while a review waits for its answer, then lets both answer (the review
/// first): the gate's denial is checked and the text it was sent returned.
async fn gate_while_held(
    h: &advisor::AdvisorHandle,
    command: &str,
    arrivals: &mut tokio::sync::mpsc::UnboundedReceiver<ModelRequest>,
    permits: &tokio::sync::Semaphore,
) -> String {
    let (verdict, request) = tokio::join!(h.gate(bash(command)), async {
        let request = next_request(arrivals).await;
        permits.add_permits(2);
        request
    });
    assert_eq!(verdict.unwrap().decision, GateDecision::Deny);
    gate_text(&request)
}

#[actix::test]
async fn gt3_the_gate_is_shown_the_advisor_s_own_context_once_it_has_one() {
    let replies = vec![
        ScriptedReply::text(REVIEWER_MEMORY),
        ScriptedReply::text(DENY),
        ScriptedReply::text(DENY),
        ScriptedReply::text("second review"),
        ScriptedReply::text(DENY),
    ];
    let (model, mut arrivals, permits) = GatedModel::new(replies, true);
    let permits = permits.expect("a held model");
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Off, |cfg| {
        cfg.settings.gate.mode = GateMode::Risky;
        cfg.settings.gate.fail_mode = Some(GateFailMode::Closed);
    });
    let t = Transcript::from_messages([TranscriptMessage::user("TURN-ONE tidy the repo")]);
    h.turn_end(&t).await.unwrap();
    let review = next_request(&mut arrivals).await;
    assert!(last_user_text(&review).contains("TURN-ONE"));

    // First turn: its review is still running and the advisor has no context yet, so the
    // gate reads the recent transcript.
    let first = gate_while_held(&h, "rm -rf build", &mut arrivals, &permits).await;
    assert!(first.contains("TURN-ONE tidy the repo"), "{first}");
    assert!(!first.contains("[update to the reviewer]"), "{first}");
    h.await_drain().await.unwrap();

    // The review of turn one is done: the gate reads the advisor's own context, its answer
    // included, and no second rendering of the transcript.
    permits.add_permits(1);
    let verdict = h.gate(bash("rm -rf dist")).await.unwrap();
    assert_eq!(
        (verdict.decision, verdict.source),
        (GateDecision::Deny, VerdictSource::Model)
    );
    let own = gate_text(&next_request(&mut arrivals).await);
    assert!(own.contains("[update to the reviewer]"), "{own}");
    assert!(own.contains("TURN-ONE tidy the repo"), "{own}");
    assert!(
        own.contains(REVIEWER_MEMORY),
        "the advisor's own answer: {own}"
    );
    assert_eq!(own.matches("TURN-ONE").count(), 1, "one copy: {own}");

    // While the review of turn two runs, the gate reads the context as that review took it
    // and, after it, the transcript past what that context covers: turn two, once.
    t.push(TranscriptMessage::user("TURN-TWO now clean up"));
    h.turn_end(&t).await.unwrap();
    let second = next_request(&mut arrivals).await;
    assert!(last_user_text(&second).contains("TURN-TWO"));
    let during = gate_while_held(&h, "rm -rf out", &mut arrivals, &permits).await;
    assert!(during.contains(REVIEWER_MEMORY), "{during}");
    assert_eq!(during.matches("TURN-TWO").count(), 1, "{during}");
    assert_eq!(during.matches("TURN-ONE").count(), 1, "one copy: {during}");
    let unseen = during.find(UNSEEN).expect("the unseen part");
    assert!(during[unseen..].contains("TURN-TWO"), "{during}");
    assert!(!during[unseen..].contains("TURN-ONE"), "{during}");
}

/// The heading of the transcript's part the advisor has not been sent yet.
const UNSEEN: &str = "[newer in the session, not yet sent to the reviewer]";

/// GT3: with `reviewInterval: 2` the advisor is sent every other turn, so between its
/// reviews the newest turns are only in the transcript; the gate is shown them after the
/// advisor's own context, and nothing it already has twice.
#[actix::test]
async fn gt3_the_gate_is_shown_the_turns_the_lagging_advisor_was_not_sent() {
    let replies = vec![
        ScriptedReply::text(REVIEWER_MEMORY),
        ScriptedReply::text(DENY),
    ];
    let (model, mut arrivals, _permits) = GatedModel::new(replies, false);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Off, |cfg| {
        cfg.settings.gate.mode = GateMode::Risky;
        cfg.settings.gate.fail_mode = Some(GateFailMode::Closed);
        cfg.settings.review_interval = 2;
    });
    let t = Transcript::from_messages([TranscriptMessage::user("TURN-ONE tidy the repo")]);
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("TURN-TWO tidy more"));
    h.turn_end(&t).await.unwrap();
    let review = next_request(&mut arrivals).await;
    assert!(last_user_text(&review).contains("TURN-TWO"));
    h.await_drain().await.unwrap();
    // Turn three is held for the next review: only the transcript has it.
    t.push(TranscriptMessage::user("TURN-THREE delete the build"));
    h.turn_end(&t).await.unwrap();
    let verdict = h.gate(bash("rm -rf build")).await.unwrap();
    assert_eq!(verdict.decision, GateDecision::Deny);
    let sent = gate_text(&next_request(&mut arrivals).await);
    assert!(sent.contains(REVIEWER_MEMORY), "its own context: {sent}");
    for turn in ["TURN-ONE", "TURN-TWO", "TURN-THREE"] {
        assert_eq!(sent.matches(turn).count(), 1, "{turn} once: {sent}");
    }
    let unseen = sent.find(UNSEEN).expect("the unseen part");
    assert!(sent[unseen..].contains("TURN-THREE"), "{sent}");
    assert!(!sent[unseen..].contains("TURN-TWO"), "{sent}");
}

#[actix::test]
async fn gt10_a_roster_entry_s_own_gate_turns_the_gate_on_with_its_model() {
    let style = Arc::new(ScriptedModel::new([]));
    let security = Arc::new(ScriptedModel::new([ScriptedReply::text(DENY)]));
    let mut guarded = advisor("security", "openai", "gpt-5", None);
    guarded.gate = Sourced::default_value(Some(GateMode::Risky));
    guarded.gate_fail_mode = Sourced::default_value(Some(GateFailMode::Closed));
    let roster = Roster {
        advisors: vec![advisor("style", "openai", "gpt-5", None), guarded],
        ..Roster::default()
    };
    let models: HashMap<String, Arc<dyn ModelClient>> = [
        ("style".to_string(), style.clone() as Arc<dyn ModelClient>),
        (
            "security".to_string(),
            security.clone() as Arc<dyn ModelClient>,
        ),
    ]
    .into();
    let (h, _rx) = runtime(Arc::new(ScriptedModel::new([])), SyncBacklog::Off, |cfg| {
        cfg.model = None;
        assert_eq!(
            cfg.settings.gate.mode,
            GateMode::Off,
            "the session's gate is off"
        );
        cfg.roster = Some(RosterSetup {
            roster,
            models: Arc::new(PerSlug(models)),
            reload: None,
        });
    });
    let routine = h.gate(bash("ls")).await.unwrap();
    assert_eq!(routine.source, VerdictSource::Classifier);
    let denied = h.gate(bash("rm -rf build")).await.unwrap();
    assert_eq!(
        (denied.decision, denied.source, denied.reason.as_str()),
        (
            GateDecision::Deny,
            VerdictSource::Model,
            "GATE-REASON keep the release build."
        )
    );
    assert_eq!(security.request_count(), 1, "the entry's own model");
    assert_eq!(style.request_count(), 0);
    let gate = h.status().await.unwrap().spend.action_gate.expect("on");
    assert_eq!((gate.proposed, gate.passed, gate.denied), (2, 1, 1));

    // Its fail mode too: `closed` where nobody can be asked, with no answer left.
    let failed = h
        .gate_with(
            bash("rm -rf dist"),
            advisor::gate::GateOptions {
                can_ask: false,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (failed.decision, failed.source),
        (GateDecision::Deny, VerdictSource::FailMode)
    );
}
