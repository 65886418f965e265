//! Mailbox tests of consulting the advisor through the handle (G8): an ask is
//! serialised with reviews, answers from the advisor's own context, never offers `advise`,
//! is kept in the context and the audit file (G7), is counted in status, and fails at once
//! or after a bound instead of hanging.

use crate::support::runtime as support;

use std::sync::Arc;
use std::time::Duration;

use advisor::domain::host::RewriteKind;
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ChatMessage, ModelError, ModelRequest, Usage};
use advisor::settings::SyncBacklog;
use advisor::AskError;
use advisor::{HandleError, RuntimeConfig};
use serde_json::json;
use support::*;

fn tool_names(request: &ModelRequest) -> Vec<&str> {
    request.tools.iter().map(|t| t.name.as_str()).collect()
}

fn user_texts(request: &ModelRequest) -> Vec<&str> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::User { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[actix::test]
async fn g8_an_ask_during_a_review_waits_for_it_and_sees_its_delta() {
    let (model, mut arrivals, gate) = GatedModel::new(
        vec![
            ScriptedReply::text(""),
            ScriptedReply::text("It renamed parse() to parse_all()."),
        ],
        true,
    );
    let gate = gate.expect("gated");
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("rename parse to parse_all")]);
    h.turn_end(&t).await.unwrap();
    let review = next_request(&mut arrivals).await;
    assert!(last_user_text(&review).contains("rename parse to parse_all"));

    let asking = {
        let h = h.clone();
        tokio::spawn(async move { h.ask("What did the agent rename?").await })
    };
    // The ask is queued behind the running review: no second request until it ends.
    tokio::task::yield_now().await;
    assert_eq!(model.script.request_count(), 1);
    gate.add_permits(2);
    let answer = asking.await.expect("task").expect("an answer");
    assert_eq!(answer, "It renamed parse() to parse_all().");

    let ask = next_request(&mut arrivals).await;
    let texts = user_texts(&ask);
    assert_eq!(texts.len(), 2, "the review's delta, then the question");
    assert!(texts[0].contains("rename parse to parse_all"));
    assert!(
        texts[1].ends_with("What did the agent rename?"),
        "{}",
        texts[1]
    );
    assert!(
        !tool_names(&ask).contains(&"advise") && !tool_names(&ask).contains(&"check_in"),
        "a question schedules no review either (SP7): {:?}",
        tool_names(&ask)
    );
    assert_eq!(
        tool_names(&review)[tool_names(&review).len() - 2..],
        ["advise", "check_in"],
        "reviews keep them"
    );

    // G8: the question and answer stay in the context for later reviews.
    t.push(TranscriptMessage::user("now add tests"));
    h.turn_end(&t).await.unwrap();
    gate.add_permits(1);
    let later = next_request(&mut arrivals).await;
    let texts = user_texts(&later);
    assert_eq!(texts.len(), 3);
    assert!(texts[1].ends_with("What did the agent rename?"));
    assert!(later.messages.iter().any(|m| matches!(
        m,
        ChatMessage::Assistant { parts } if format!("{parts:?}").contains("parse_all()")
    )));
}

#[actix::test]
async fn g8_an_ask_may_read_but_an_advise_call_is_refused_and_raises_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the cache is keyed by path\n").unwrap();
    let model = ScriptedModel::new([
        ScriptedReply::advise("a", "sneak in a blocker", Some("blocker")),
        ScriptedReply::tool_call("r", "read", json!({"path": "notes.txt"})),
        ScriptedReply::text("Keyed by path, so a rename misses."),
    ]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |cfg| {
        cfg.workspace_root = dir.path().to_path_buf();
    });
    let answer = h.ask("Does a rename invalidate the cache?").await.unwrap();
    assert_eq!(answer, "Keyed by path, so a rename misses.");
    let last = model.requests().pop().unwrap();
    let results = tool_results(&last);
    assert!(results[0].contains("Not available"), "{results:?}");
    assert!(
        results[1].contains("the cache is keyed by path"),
        "{results:?}"
    );
    let status = h.status().await.unwrap();
    assert_eq!(status.deliveries.delivered(), 0);
    assert!(drain(&mut rx).is_empty(), "no wake, card or notice");
    assert!(h.step_boundary().await.unwrap().aside.is_none());
}

#[actix::test]
async fn g8_while_paused_or_failing_an_ask_fails_at_once() {
    tokio::time::pause();
    let model = ScriptedModel::new([ScriptedReply::Fail(ModelError::Retryable {
        usage: None,
        message: "HTTP 503".into(),
        retry_after: Some(Duration::from_secs(60)),
    })]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |_| {});
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let _ = h.status().await.unwrap();
    let started = tokio::time::Instant::now();
    let err = h.ask("anything?").await.unwrap_err();
    assert_eq!(err, HandleError::Ask(AskError::Failing));
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(model.request_count(), 1);

    let model = ScriptedModel::new([ScriptedReply::Fail(ModelError::Permanent {
        message: "HTTP 401: invalid key".into(),
    })]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |_| {});
    h.turn_end(&t).await.unwrap();
    let _ = h.status().await.unwrap();
    match h.ask("anything?").await {
        Err(HandleError::Ask(AskError::Paused(reason))) => assert!(reason.contains("401")),
        other => panic!("expected a paused error, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(model.request_count(), 1, "no call for the ask");
}

#[actix::test]
async fn g8_r1_an_ask_after_a_reset_knows_nothing_of_before() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |cfg| {
        cfg.settings.sync_backlog = SyncBacklog::Below(1);
    });
    let t = Transcript::from_messages([TranscriptMessage::user("the secret plan")]);
    h.turn_end(&t).await.unwrap();
    h.rewrite(RewriteKind::SessionSwitch).await.unwrap();
    model.push(ScriptedReply::text("I have seen nothing yet."));
    h.ask("What is the plan?").await.unwrap();
    let ask = model.requests().pop().unwrap();
    assert_eq!(ask.messages.len(), 1, "the question alone");
    assert!(!format!("{:?}", ask.messages).contains("secret plan"));
}

#[actix::test]
async fn g8_k1_consult_off_makes_ask_an_error_and_no_model_means_not_running() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |cfg| {
        cfg.settings.consult = false
    });
    assert_eq!(
        h.ask("hello?").await,
        Err(HandleError::Ask(AskError::Disabled))
    );
    assert_eq!(model.request_count(), 0);

    let mut cfg = RuntimeConfig::new("p", std::env::temp_dir(), None);
    cfg.settings.consult = true;
    let (h, _rx) = start(cfg);
    assert_eq!(
        h.ask("hello?").await,
        Err(HandleError::Ask(AskError::NotRunning))
    );
}

#[actix::test]
async fn g8_g4_c3_asks_are_counted_with_their_tokens_and_a_failed_ask_follows_f1() {
    tokio::time::pause();
    let usage = Usage {
        input: 300,
        output: 40,
        cost: 0.002,
        ..Usage::default()
    };
    let model = ScriptedModel::new([
        ScriptedReply::text("Fine.").with_usage(usage),
        ScriptedReply::Fail(ModelError::Retryable {
            usage: None,
            message: "HTTP 500".into(),
            retry_after: None,
        }),
    ]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |_| {});
    assert_eq!(h.ask("ok?").await.unwrap(), "Fine.");
    match h.ask("again?").await {
        Err(HandleError::Ask(AskError::Model(text))) => assert!(text.contains("HTTP 500")),
        other => panic!("expected a model error, got {other:?}"),
    }
    let status = h.status().await.unwrap();
    assert_eq!(status.agent.consults, 2);
    assert_eq!(status.agent.consult_usage.input, 300);
    assert_eq!(
        status.agent.lifetime.input, 300,
        "asks count in the lifetime (G4)"
    );
    assert_eq!((status.failures, status.agent.failing), (1, true));
    assert!(
        status
            .render()
            .contains("consults: 2 (input 300, output 40 tokens"),
        "{}",
        status.render()
    );
    // F1: the failing state ends after the retry delay; asks work again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    model.push(ScriptedReply::text("Back."));
    assert_eq!(h.ask("now?").await.unwrap(), "Back.");
}

#[actix::test]
async fn g8_an_ask_that_never_gets_an_answer_times_out_instead_of_hanging() {
    tokio::time::pause();
    let (model, mut arrivals, _gate) = GatedModel::new(vec![], true);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Off, |cfg| {
        cfg.settings.request_timeout = Duration::from_secs(60);
    });
    let asking = {
        let h = h.clone();
        tokio::spawn(async move { h.ask("hello?").await })
    };
    next_request(&mut arrivals).await;
    let started = tokio::time::Instant::now();
    let result = asking.await.expect("task");
    assert_eq!(result, Err(HandleError::Ask(AskError::TimedOut(90))));
    let waited = started.elapsed();
    assert!(
        waited > Duration::from_secs(60) && waited < Duration::from_secs(91),
        "the drain wait plus one request timeout: {waited:?}"
    );
}

#[actix::test]
async fn g8_g7_the_question_and_answer_are_audit_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s__advisor.jsonl");
    let model = ScriptedModel::new([ScriptedReply::text("Because of the lock.")]);
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Off, |cfg| {
        cfg.audit_path = Some(path.clone())
    });
    h.ask("Why is it slow?").await.unwrap();
    h.dispose().await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // P9: after oh-my-pi's title line, the session header, then the question and the answer.
    assert!(text.starts_with("{\"type\":\"title\""), "{text}");
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1]["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .ends_with("Why is it slow?"));
    assert_eq!(
        lines[2]["message"]["content"][0]["text"],
        "Because of the lock."
    );
}
