//! The backup reviewer (P6) of a session whose host resolved its models itself (RO23: pi's
//! `models.json`): backups named in `retry.fallbackChains` are reached at the endpoints the
//! host passed in `providers`, the chain keyed by the session model's own selector applies,
//! and a chain is bounded (8 backups) and ends at an error retrying cannot fix (F3). Real HTTP
//! clients against in-process servers, through `advisor serve`'s protocol.

use std::path::Path;

use advisor::providers::testing::{ScriptedResponse, SseServer};
use serde_json::{json, Value};

use super::replay_e2e::advise;
use super::serve_client::{assistant, user};
use super::serve_dispatch::Client;
use super::serve_roster::start_plain;

/// An endpoint object of `provider/id` at `server`, as pi's extension passes one.
fn endpoint(server: &SseServer, provider: &str, id: &str) -> Value {
    json!({"provider": provider, "id": id, "baseUrl": server.base_url(),
        "api": "openai-completions", "apiKey": format!("{provider}-key")})
}

/// `retry:` settings in the project's `.omp/config.yml`.
fn retry_settings(dir: &Path, yaml: &str) {
    std::fs::create_dir_all(dir.join(".omp")).unwrap();
    std::fs::write(dir.join(".omp/config.yml"), yaml).unwrap();
}

/// Opens session `s1` with the session model `model` and the host's `providers`, its turn
/// ends waiting for the backlog (`syncBacklog: 1`, S1); returns the notices the open sent.
async fn open_with(c: &mut Client, dir: &Path, model: Value, providers: Vec<Value>) -> Vec<String> {
    c.call(
        "session/open",
        json!({"sessionId": "s1", "cwd": dir, "agentDir": dir.join("agent"),
            "settings": {"syncBacklog": 1}, "model": model, "providers": providers}),
    )
    .await;
    take_notices(c).await
}

/// The notices received and not yet taken.
async fn take_notices(c: &mut Client) -> Vec<String> {
    let mut texts = Vec::new();
    while c
        .notifications_now()
        .iter()
        .any(|n| n["method"] == "session/notice")
    {
        let n = c.notification("session/notice").await;
        texts.push(n["params"]["text"].as_str().unwrap_or_default().to_string());
    }
    texts
}

/// One finished primary turn.
async fn turn(c: &mut Client, ask: &str) {
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "leaf": "e1", "messages": [user(ask), assistant("Done.")]}),
    )
    .await;
}

/// The notices up to the first holding `needle`, that one included.
async fn notices_until(c: &mut Client, needle: &str) -> Vec<String> {
    let mut texts = Vec::new();
    loop {
        let n = c.notification("session/notice").await;
        let text = n["params"]["text"].as_str().unwrap_or_default().to_string();
        let done = text.contains(needle);
        texts.push(text);
        if done {
            return texts;
        }
    }
}

#[actix::test]
async fn p6_ro23_a_backup_named_from_the_hosts_providers_reviews_when_the_endpoint_model_fails() {
    // The session's own endpoint answers 500 to everything; the backup advises.
    let failing = SseServer::start([]).await.expect("bind");
    let backup = SseServer::start([advise("Check the parser's error path.", Some("nit"))])
        .await
        .expect("bind");
    let dir = tempfile::tempdir().unwrap();
    // Keyed by the session model's own selector, listing that model first.
    retry_settings(
        dir.path(),
        "retry:\n  fallbackChains:\n    hostprov/advisor-model: [hostprov/advisor-model, sideprov/side-model]\n",
    );
    let mut c = start_plain();
    let notices = open_with(
        &mut c,
        dir.path(),
        endpoint(&failing, "hostprov", "advisor-model"),
        vec![endpoint(&backup, "sideprov", "side-model")],
    )
    .await;
    assert!(
        !notices.iter().any(|n| n.contains("backup model")),
        "every backup is reached, the own model is no backup of itself: {notices:?}"
    );
    turn(&mut c, "Add a parser for the config").await;
    let shown = notices_until(&mut c, "reviewing with").await;
    let switched = shown.last().expect("a notice");
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        switched.starts_with("advisor: hostprov/advisor-model failed (")
            && switched.contains("reviewing with sideprov/side-model"),
        "{switched}"
    );
    backup.wait_for_requests(1).await;
    let request = &backup.requests()[0];
    assert_eq!(request.json()["model"], "side-model");
    assert_eq!(request.header("authorization"), Some("Bearer sideprov-key"));
    assert!(String::from_utf8_lossy(&request.body).contains("Add a parser for the config"));
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert_eq!(status["agent"]["reviews"], 1, "{status}");
    assert_eq!(status["model"], "sideprov/side-model", "{status}");
    assert_eq!(
        failing.request_count(),
        1,
        "one failed call, then the backup"
    );
}

#[actix::test]
async fn p6_f3_a_chain_is_cut_at_eight_backups_and_a_permanent_error_on_a_backup_pauses_naming_it()
{
    let unauthorized = || {
        ScriptedResponse::json(
            401,
            r#"{"error":{"message":"Incorrect API key provided","code":401}}"#,
        )
    };
    let server = SseServer::start((0..50).map(|_| unauthorized()))
        .await
        .expect("bind");
    let dir = tempfile::tempdir().unwrap();
    let chain: Vec<String> = (0..1000).map(|i| format!("p{i}/m")).collect();
    retry_settings(
        dir.path(),
        &format!(
            "retry:\n  fallbackChains:\n    advisor: [{}]\n",
            chain.join(", ")
        ),
    );
    let providers: Vec<Value> = (0..10)
        .map(|i| endpoint(&server, &format!("p{i}"), "m"))
        .collect();
    let mut c = start_plain();
    let notices = open_with(&mut c, dir.path(), endpoint(&server, "own", "m"), providers).await;
    let capped: Vec<&String> = notices
        .iter()
        .filter(|n| n.contains("fallbackChains"))
        .collect();
    assert_eq!(
        capped,
        ["advisor: retry.fallbackChains.advisor lists 1000 backups; only the first 8 are tried"],
        "{notices:?}"
    );
    assert!(
        !notices.iter().any(|n| n.contains("is off")),
        "no line per backup left out: {notices:?}"
    );
    turn(&mut c, "Add a parser for the config").await;
    let shown = notices_until(&mut c, "paused").await;
    assert_eq!(shown.len(), 2, "the switch and the pause: {shown:?}");
    assert!(
        shown[0].starts_with("advisor: own/m failed (") && shown[0].contains("reviewing with p0/m"),
        "{shown:?}"
    );
    let paused = &shown[1];
    assert!(
        paused.starts_with("advisor: paused: p0/m failed: ")
            && paused.contains("401")
            && paused.contains(
                "(backup chain: own/m → p0/m → p1/m → p2/m → p3/m → p4/m → p5/m → p6/m → p7/m)"
            ),
        "{paused}"
    );
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert_eq!(
        server.request_count(),
        2,
        "the own model and the first backup, then a pause"
    );
    assert_eq!(take_notices(&mut c).await, Vec::<String>::new());
    assert!(
        status["paused"]
            .as_str()
            .is_some_and(|p| p.contains("backup chain")),
        "{status}"
    );
}
