//! `session/ask` (V2, G8): the primary's question answered by the advisor of a served
//! session, from the turns it reviewed; bounded, concurrent with the other calls on the pipe
//! (V3), and a clear JSON-RPC error when there is no answer (V4).

use std::time::Duration;

use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ChatMessage, ModelError};
use advisor::serve::lines::MAX_LINE_BYTES;
use serde_json::json;
use std::sync::Arc;

use super::serve_client::{assistant, user};
use super::serve_dispatch::{open, start, start_with};
use crate::support::runtime::{next_request, GatedModel};

#[actix::test]
async fn g8_v2_session_ask_answers_after_the_reviewed_turns_and_offers_no_advise() {
    let model = ScriptedModel::new([
        ScriptedReply::text(""),
        ScriptedReply::text("Yes: parse_all() replaced parse() everywhere."),
    ]);
    let (mut c, _server) = start(model.clone());
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({"syncBacklog": 1})).await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "e2",
            "messages": [user("Rename parse to parse_all"), assistant("Renamed it in 4 files.")]}),
    )
    .await;
    let r = c
        .call(
            "session/ask",
            json!({"sessionId": "s1", "question": "Did the rename reach every caller?"}),
        )
        .await;
    assert_eq!(
        r,
        json!({"answer": "Yes: parse_all() replaced parse() everywhere."})
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the review, then the ask");
    let ask = &requests[1];
    let users: Vec<&str> = ask
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::User { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // The reviewed turn (one user message per transcript message), then the question.
    let (question, reviewed) = users.split_last().expect("user messages");
    assert!(!reviewed.is_empty(), "the reviewed turn, then the question");
    assert!(reviewed.concat().contains("Rename parse to parse_all"));
    assert!(question.ends_with("Did the rename reach every caller?"));
    assert!(ask.tools.iter().all(|t| t.name != "advise"));
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert_eq!(status["agent"]["consults"], 1, "{status}");
}

#[actix::test]
async fn g8_v3_an_ask_waiting_behind_a_review_holds_up_no_other_call() {
    let (model, mut arrivals, gate) = GatedModel::new(
        vec![ScriptedReply::text(""), ScriptedReply::text("Keep going.")],
        true,
    );
    let gate = gate.expect("gated");
    let (mut c, _server) = start_with(Some(Arc::new(model)), MAX_LINE_BYTES);
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({"syncBacklog": "off"})).await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("go")]}),
    )
    .await;
    next_request(&mut arrivals).await;
    // The review is held; the ask queues behind it.
    let ask = c
        .request(
            "session/ask",
            json!({"sessionId": "s1", "question": "Am I on track?"}),
        )
        .await;
    // Meanwhile the session's other calls answer.
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert_eq!(status["enabled"], true);
    let r = c
        .call("session/stepBoundary", json!({"sessionId": "s1"}))
        .await;
    assert_eq!(r, json!({"deliveries": []}));
    c.call(
        "session/runState",
        json!({"sessionId": "s1", "running": true}),
    )
    .await;
    assert!(c.reply_now(&ask).is_none(), "the ask still waits");
    gate.add_permits(2);
    let reply = c.reply(&ask).await;
    assert_eq!(reply["result"], json!({"answer": "Keep going."}), "{reply}");
}

#[actix::test]
async fn g8_v4_an_ask_while_paused_or_with_consult_off_is_a_32000_error_at_once() {
    let model = ScriptedModel::new([ScriptedReply::Fail(ModelError::Permanent {
        message: "HTTP 401: invalid key".into(),
    })]);
    let (mut c, _server) = start(model.clone());
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({"syncBacklog": 1})).await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("go")]}),
    )
    .await;
    let e = tokio::time::timeout(
        Duration::from_secs(5),
        c.call_err(
            "session/ask",
            json!({"sessionId": "s1", "question": "Anything?"}),
        ),
    )
    .await
    .expect("an error at once, not a wait");
    assert_eq!(e["code"], -32000, "{e}");
    assert_eq!(e["data"], json!({"reason": "paused"}));
    let message = e["message"].as_str().unwrap();
    assert!(
        message.starts_with("the advisor could not answer: the advisor is paused")
            && message.contains("401"),
        "{message}"
    );
    assert_eq!(model.request_count(), 1, "no model call for the ask");

    open(&mut c, "s2", dir.path(), json!({"consult": false})).await;
    let e = c
        .call_err(
            "session/ask",
            json!({"sessionId": "s2", "question": "Anything?"}),
        )
        .await;
    assert_eq!(
        (e["code"].clone(), e["data"].clone()),
        (json!(-32000), json!({"reason": "disabled"}))
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("consulting the advisor is turned off (advisor.consult: false)"),
        "{e}"
    );
    assert_eq!(model.request_count(), 1);
}
