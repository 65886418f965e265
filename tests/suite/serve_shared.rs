//! `advisor serve` on the shared runtime (A6) and its bounds (M1, M4): every
//! session of one server goes through one call limit per provider, which status shows (C3);
//! a session's `advisor.requestTimeoutSecs` bounds its model calls; a modes.json that is a
//! FIFO is a notice, never a wait.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use advisor::providers::testing::{BodyPart, ScriptedResponse, SseServer};
use advisor::serve::MAX_LINE_BYTES;
use serde_json::{json, Value};

use super::serve_client::user;
use super::serve_dispatch::{open, start_with};
use crate::support::runtime::{next_request, Counting, GatedModel};

/// Makes a FIFO at `path` (and its parent directories) with the system's `mkfifo`.
pub(super) fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[actix::test]
async fn a6_c3_sessions_of_one_server_share_the_providers_call_limit_and_status_shows_it() {
    let (gated, mut arrivals, gate) = GatedModel::new(Vec::new(), true);
    let gate = gate.expect("gated");
    let model = Counting::new(gated);
    let (mut c, _server) = start_with(Some(Arc::new(model.clone())), MAX_LINE_BYTES);
    let dir = tempfile::tempdir().unwrap();
    let settings = json!({"maxConcurrentReviews": 1, "syncBacklog": 1});
    open(&mut c, "a", dir.path(), settings.clone()).await;
    open(&mut c, "b", dir.path(), settings).await;
    // Both sessions end a turn; each turnEnd waits for its review (syncBacklog 1).
    let turns: Vec<Value> = {
        let mut ids = Vec::new();
        for s in ["a", "b"] {
            let params = json!({"sessionId": s, "base": null, "leaf": "t1",
                "messages": [user(&format!("turn of session {s}"))]});
            ids.push(c.request("session/turnEnd", params).await);
        }
        ids
    };
    // One review reaches the model; the other waits for the provider's only slot.
    next_request(&mut arrivals).await;
    let status = c.call("session/status", json!({"sessionId": "b"})).await;
    let calls = &status["providerCalls"];
    assert_eq!(
        (&calls["provider"], &calls["limit"], &calls["inFlight"]),
        (&json!("scripted"), &json!(1), &json!(1)),
        "{status}"
    );
    assert!(
        status["text"]
            .as_str()
            .unwrap()
            .contains("provider scripted: 1 of 1 calls in flight"),
        "{status}"
    );
    // The second review starts only once the first is let through.
    gate.add_permits(1);
    next_request(&mut arrivals).await;
    gate.add_permits(1);
    for id in &turns {
        let reply = c.reply(id).await;
        assert_eq!(reply["result"], json!({}), "{reply}");
    }
    assert_eq!(model.most(), 1, "never more than one call in flight");
    let status = c.call("session/status", json!({"sessionId": "a"})).await;
    let calls = &status["providerCalls"];
    assert_eq!(
        (
            &calls["inFlight"],
            &calls["waiting"],
            &calls["peak"],
            &calls["started"]
        ),
        (&json!(0), &json!(0), &json!(1), &json!(2)),
        "{status}"
    );
    assert_eq!(status["agent"]["reviews"], 1);
}

#[actix::test]
async fn m4_a_sessions_request_timeout_bounds_its_model_calls() {
    // The advisor's server sends headers, then an SSE comment byte every 50 ms for ever:
    // never idle long enough for the idle timeout, so only the total limit can end the call.
    let drip = ScriptedResponse::sse_chunks(Vec::<Vec<u8>>::new()).then(BodyPart::Drip {
        bytes: b":\n".to_vec(),
        every: Duration::from_millis(50),
    });
    let server = SseServer::start([drip]).await.expect("bind");
    let (mut c, _server) = start_with(None, MAX_LINE_BYTES);
    let dir = tempfile::tempdir().unwrap();
    let endpoint =
        json!({"id": "slow-model", "baseUrl": server.base_url(), "api": "openai-completions"});
    c.call(
        "session/open",
        json!({"sessionId": "s", "cwd": dir.path(), "model": endpoint,
            "settings": {"requestTimeoutSecs": 1}}),
    )
    .await;
    let started = Instant::now();
    let e = c
        .call_err(
            "session/ask",
            json!({"sessionId": "s", "question": "Is the plan sound?"}),
        )
        .await;
    let waited = started.elapsed();
    assert_eq!(server.request_count(), 1);
    assert_eq!(e["code"], -32000, "{e}");
    assert_eq!(e["data"], json!({"reason": "model"}), "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("total limit of 1 s (advisor.requestTimeoutSecs)"),
        "{message}"
    );
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_secs(20),
        "the session's 1 s limit, not the default 300 s: {waited:?}"
    );
    let status = c.call("session/status", json!({"sessionId": "s"})).await;
    assert_eq!(status["failures"], 1, "{status}");
}

#[actix::test]
async fn m1_a_fifo_as_modes_json_is_a_notice_not_a_wait() {
    let (mut c, _server) = start_with(None, MAX_LINE_BYTES);
    // The project's .pi/modes.json.
    let project = tempfile::tempdir().unwrap();
    mkfifo(&project.path().join(".pi/modes.json"));
    // The agent directory's modes.json (read when the session names an agentDir).
    let work = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    mkfifo(&agent.path().join("modes.json"));
    for (id, params) in [
        ("p", json!({"sessionId": "p", "cwd": project.path()})),
        (
            "u",
            json!({"sessionId": "u", "cwd": work.path(), "agentDir": agent.path()}),
        ),
    ] {
        let status = tokio::time::timeout(Duration::from_secs(10), c.call("session/open", params))
            .await
            .expect("the open answers instead of waiting on the FIFO");
        assert_eq!(status["model"], Value::Null, "{status}");
        let n = c.notification("session/notice").await;
        assert_eq!(n["params"]["sessionId"], id);
        let text = n["params"]["text"].as_str().unwrap();
        assert!(
            text.contains("modes.json") && text.contains("not a regular file (a FIFO)"),
            "{text}"
        );
    }
}

#[actix::test]
async fn a6_many_sessions_never_put_more_than_the_limit_in_flight_at_the_provider() {
    // Every answer ends its stream ([DONE]) 30 ms before the provider ends the response: a
    // call that let go of its slot at the end marker would let the next waiting session's
    // request reach the provider while this one is still open there.
    const LIMIT: usize = 4;
    const SESSIONS: usize = 24;
    const TURNS: usize = 3;
    let answer = crate::support::wire::Dialect::OpenAi.answer("");
    let responses = (0..SESSIONS * TURNS * 2)
        .map(|_| ScriptedResponse::sse(&answer).then(BodyPart::Pause(Duration::from_millis(30))));
    let server = SseServer::start(responses).await.expect("bind");
    let (mut c, _server) = super::serve_dispatch::start_with(None, MAX_LINE_BYTES);
    let dir = tempfile::tempdir().unwrap();
    let endpoint =
        json!({"id": "limited-model", "baseUrl": server.base_url(), "api": "openai-completions"});
    let sessions: Vec<String> = (0..SESSIONS).map(|i| format!("s{i}")).collect();
    for s in &sessions {
        c.call(
            "session/open",
            json!({"sessionId": s, "cwd": dir.path(), "model": endpoint,
                "settings": {"maxConcurrentReviews": LIMIT, "syncBacklog": 1}}),
        )
        .await;
    }
    let mut leaf: Option<String> = None;
    for turn in 0..TURNS {
        // Every session ends a turn at once; each turnEnd waits for its review (S1).
        let mut ids = Vec::new();
        for s in &sessions {
            let params = json!({"sessionId": s, "base": leaf, "leaf": format!("t{turn}"),
                "messages": [user(&format!("turn {turn} of session {s}"))]});
            ids.push(c.request("session/turnEnd", params).await);
        }
        for id in &ids {
            let reply = c.reply(id).await;
            assert_eq!(reply["result"], json!({}), "{reply}");
        }
        leaf = Some(format!("t{turn}"));
    }
    assert_eq!(
        server.request_count(),
        SESSIONS * TURNS,
        "one review per turn"
    );
    assert_eq!(
        server.peak_in_flight(),
        LIMIT,
        "the provider saw at most {LIMIT} requests at once, and the limit was used"
    );
    let status = c.call("session/status", json!({"sessionId": "s0"})).await;
    assert_eq!(status["providerCalls"]["peak"], json!(LIMIT), "{status}");
}
