//! `session/ask` (V2, G8): the primary's question answered by the advisor of a served
//! session, from the turns it reviewed; bounded, concurrent with the other calls on the pipe
//! (V3), and a clear JSON-RPC error when there is no answer (V4).

use std::time::Duration;

use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ChatMessage, ModelError};
use advisor::serve::MAX_LINE_BYTES;
use serde_json::{json, Value};
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

/// A model whose first call answers at once and whose later calls never do; each stalled
/// call tells `dropped` when its future is dropped (the HTTP request cancelled).
struct StallingModel {
    script: ScriptedModel,
    calls: std::sync::atomic::AtomicUsize,
    arrivals: tokio::sync::mpsc::UnboundedSender<()>,
    dropped: Arc<tokio::sync::Notify>,
}

struct DropSignal(Arc<tokio::sync::Notify>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

impl advisor::model::ModelClient for StallingModel {
    fn complete(&self, request: advisor::model::ModelRequest) -> advisor::model::ModelFuture {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n == 0 {
            return self.script.complete(request);
        }
        let _ = self.arrivals.send(());
        let signal = DropSignal(Arc::clone(&self.dropped));
        Box::pin(async move {
            let _signal = signal;
            std::future::pending().await
        })
    }

    fn info(&self) -> advisor::model::ModelInfo {
        self.script.info()
    }
}

#[actix::test]
async fn g8_r1_r2_an_ask_is_ended_at_once_by_close_reopen_rewrite_or_off_and_its_call_dropped() {
    let cases: [(&str, Value, &str, &str); 4] = [
        (
            "session/close",
            json!({"sessionId": "s1"}),
            "closed",
            "the session was closed (session/close)",
        ),
        (
            "reopen",
            Value::Null,
            "closed",
            "the session was opened again",
        ),
        (
            "session/rewrite",
            json!({"sessionId": "s1", "kind": "compaction", "leaf": "b",
                "messages": [user("summary")]}),
            "rewritten",
            "the transcript was rewritten (compaction)",
        ),
        (
            "session/command",
            json!({"sessionId": "s1", "line": "/advisor off"}),
            "turnedOff",
            "the advisor was turned off",
        ),
    ];
    for (action, params, cause, says) in cases {
        let (arrivals, mut arrived) = tokio::sync::mpsc::unbounded_channel();
        let dropped = Arc::new(tokio::sync::Notify::new());
        let model = StallingModel {
            script: ScriptedModel::new([ScriptedReply::text("")]),
            calls: Default::default(),
            arrivals,
            dropped: Arc::clone(&dropped),
        };
        let (mut c, _server) = start_with(Some(Arc::new(model)), MAX_LINE_BYTES);
        let dir = tempfile::tempdir().unwrap();
        open(&mut c, "s1", dir.path(), json!({"syncBacklog": 1})).await;
        c.call(
            "session/turnEnd",
            json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("go")]}),
        )
        .await;
        let ask = c
            .request(
                "session/ask",
                json!({"sessionId": "s1", "question": "Am I on track?"}),
            )
            .await;
        arrived.recv().await.expect("the ask's model call started");
        if action == "reopen" {
            open(&mut c, "s1", dir.path(), json!({"syncBacklog": 1})).await;
        } else {
            c.call(action, params).await;
        }
        // At once: well inside the 300 s request timeout the ask would otherwise wait.
        let reply = tokio::time::timeout(Duration::from_secs(5), c.reply(&ask))
            .await
            .unwrap_or_else(|_| panic!("{action}: the ask still waits"));
        let error = &reply["error"];
        assert_eq!(error["code"], -32000, "{action}: {reply}");
        assert_eq!(
            error["data"],
            json!({"reason": "ended", "cause": cause}),
            "{action}"
        );
        let message = error["message"].as_str().unwrap();
        assert!(
            message.starts_with("the advisor could not answer: the ask was ended: ")
                && message.contains(says),
            "{action}: {message}"
        );
        tokio::time::timeout(Duration::from_secs(5), dropped.notified())
            .await
            .unwrap_or_else(|_| panic!("{action}: the model call was not dropped"));
    }
}
