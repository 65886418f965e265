//! `advisor serve` with a roster of named advisors (§15, RO23): `session/open` reports the
//! advisors resolved from the session's `WATCHDOG.yml` and the roster's warnings, and
//! `session/ask` takes an optional `advisor`.

use std::path::Path;
use std::sync::Arc;

use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::providers::testing::{ScriptedResponse, SseServer};
use advisor::providers::{ApiKind, Catalog};
use advisor::serve::{serve, ServeDefaults, ServeOptions};
use serde_json::{json, Value};

use super::replay_e2e::{advise, chunk, finish};
use super::serve_client::{assistant, user, RpcClient};
use super::serve_dispatch::{open, serve_runtime, start, Client};

/// A server whose sessions resolve their models at `server` (`--base-url`, `--api`), with
/// no model of their own: each roster entry's model is built there.
fn start_at(server: &SseServer) -> Client {
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let mut defaults = ServeDefaults::new(Arc::new(Catalog::builtin().expect("catalog")));
    defaults.base_url = Some(server.base_url());
    defaults.api = Some(ApiKind::OpenAiCompletions);
    let options = ServeOptions::new(defaults, serve_runtime());
    actix::spawn(serve(server_r, server_w, options));
    RpcClient::new(client_w, client_r)
}

/// A roster file in `dir/.omp/` (a temporary directory's name starts with `.`, so its plain
/// file would be ignored, W2).
fn roster_in(dir: &Path, text: &str) {
    std::fs::create_dir_all(dir.join(".omp")).unwrap();
    std::fs::write(dir.join(".omp/WATCHDOG.yml"), text).unwrap();
}

/// An answer that is only `text`.
fn text(text: &str) -> ScriptedResponse {
    finish(vec![
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
    ])
}

/// The model ids of the requests the server received, in order.
fn models_called(server: &SseServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Each named advisor of a `session/status` result with its state.
fn advisor_states(status: &Value) -> Vec<(&str, &str)> {
    status["advisors"]
        .as_array()
        .expect("advisors in the status")
        .iter()
        .map(|a| (a["name"].as_str().unwrap(), a["state"].as_str().unwrap()))
        .collect()
}

/// Two advisors (one paused) and a malformed entry.
const ROSTER: &str = "\
advisors:
  - name: Architecture
    model: openai/gpt-5:high
    policy: interrupt
    maxSeverity: concern
    when:
      paths: [\"src/**\"]
  - name: Security
    enabled: false
  - name: Broken
    maxSeverity: loud
";

#[actix::test]
async fn ro23_open_reports_the_resolved_advisors_and_the_roster_warnings() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    roster_in(dir.path(), ROSTER);
    let r = open(&mut c, "s1", dir.path(), json!({"policy": "reconfirm"})).await;
    let advisors = r["roster"]["advisors"].as_array().expect("advisors");
    assert_eq!(advisors.len(), 2, "{r}");
    assert_eq!(r["turnEndWaits"], true, "D5, RO15: {r}");
    assert_eq!(
        advisors[0],
        json!({"name": "Architecture", "slug": "architecture", "enabled": true,
            "model": "openai/gpt-5", "thinking": "high", "policy": "interrupt",
            "maxSeverity": "concern", "when": {"paths": ["src/**"]}})
    );
    let security = &advisors[1];
    assert_eq!(security["name"], "Security");
    assert_eq!(security["enabled"], false);
    assert_eq!(security["policy"], "reconfirm", "the session's policy");
    assert_eq!(security["maxSeverity"], "blocker");
    assert!(security.get("model").is_none(), "{security}");
    assert!(
        !security["noModel"].as_str().unwrap_or_default().is_empty(),
        "no model role anywhere: {security}"
    );
    assert!(security.get("when").is_none());
    let warnings = r["roster"]["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{r}");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.contains("WATCHDOG.yml")
            && warning.contains("Broken")
            && warning.contains("maxSeverity"),
        "{warning}"
    );
    // RO12: no roster file, no `roster` in the result.
    let plain = tempfile::tempdir().unwrap();
    let r = open(&mut c, "s2", plain.path(), json!({})).await;
    assert!(r.get("roster").is_none(), "{r}");
    assert_eq!(r["enabled"], true);
}

#[actix::test]
async fn ro23_session_ask_takes_an_advisor_and_refuses_a_bad_one() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({})).await;
    let e = c
        .call_err(
            "session/ask",
            json!({"sessionId": "s1", "question": "Why?", "advisor": 5}),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(e["data"], json!({"field": "advisor"}), "{e}");
    let e = c
        .call_err(
            "session/ask",
            json!({"sessionId": "s1", "question": "Why?", "advisor": "Nobody"}),
        )
        .await;
    assert_eq!(e["code"], -32000, "{e}");
    assert_eq!(e["data"], json!({"reason": "unknownAdvisor"}), "{e}");
    assert!(e["message"].as_str().unwrap().contains("Nobody"), "{e}");
    // V4: a name is bounded before it is looked up or echoed.
    let e = c
        .call_err(
            "session/ask",
            json!({"sessionId": "s1", "question": "Why?", "advisor": "n".repeat(1025)}),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(e["data"], json!({"field": "advisor"}), "{e}");
    assert!(e["message"].as_str().unwrap().len() < 200, "{e}");
}

#[actix::test]
async fn ro20_a_blank_advisor_name_asks_the_default_advisor() {
    let (mut c, _server) = start(ScriptedModel::new([ScriptedReply::text("Because.")]));
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({})).await;
    let r = c
        .call(
            "session/ask",
            json!({"sessionId": "s1", "question": "Why?", "advisor": "  "}),
        )
        .await;
    assert_eq!(r, json!({"answer": "Because."}));
}

/// One turn of `session`: a user message and a final answer, after `base`.
/// A WIP turn (`willContinue`), so its nits take D3's routing, not the merged delivery of
/// a final boundary (CA13).
async fn turn(c: &mut Client, base: Option<&str>, leaf: &str, ask: &str) -> Value {
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": base, "leaf": leaf, "willContinue": true,
            "messages": [user(ask), assistant("Done.")]}),
    )
    .await;
    c.call("session/stepBoundary", json!({"sessionId": "s1"}))
        .await
}

#[actix::test]
async fn ro23_two_advisors_through_serve_name_their_notes_status_and_asks_and_off_name_stops_one() {
    let server = SseServer::start([
        advise("Split parse() in two.", Some("nit")),
        advise("Never log the token.", Some("nit")),
        text("The token is redacted before logging."),
    ])
    .await
    .expect("bind");
    let mut c = start_at(&server);
    let dir = tempfile::tempdir().unwrap();
    roster_in(
        dir.path(),
        "advisors:\n  - name: Architecture\n    model: local/arch\n  - name: Security\n    model: local/sec\n",
    );
    let r = open(
        &mut c,
        "s1",
        dir.path(),
        json!({"syncBacklog": 1, "policy": "interrupt"}),
    )
    .await;
    let names: Vec<&str> = r["roster"]["advisors"]
        .as_array()
        .expect("the roster")
        .iter()
        .map(|a| a["model"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["local/arch", "local/sec"], "{r}");
    let off = c
        .call(
            "session/command",
            json!({"sessionId": "s1", "line": "/advisor off security"}),
        )
        .await;
    assert!(off["text"].as_str().unwrap().contains("Security"), "{off}");
    c.call(
        "session/runState",
        json!({"sessionId": "s1", "running": true}),
    )
    .await;

    // Turn 1: only Architecture reviews; its nit names it.
    let r = turn(&mut c, None, "e2", "Add a parser for the config").await;
    let note = &r["deliveries"][0]["notes"][0];
    assert_eq!(note["advisor"], "Architecture", "{r}");
    assert_eq!(note["note"], "Split parse() in two.");
    let content = r["deliveries"][0]["content"].as_str().unwrap();
    assert!(content.contains("advisor=\"Architecture\""), "{content}");
    assert_eq!(models_called(&server), ["arch"], "Security is off");
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    let states = advisor_states(&status);
    assert_eq!(
        states,
        [("Architecture", "running"), ("Security", "paused")],
        "{status}"
    );

    // Turn 2: Architecture off, Security on; only Security reviews.
    for line in ["/advisor off architecture", "/advisor on security"] {
        c.call("session/command", json!({"sessionId": "s1", "line": line}))
            .await;
    }
    let r = turn(&mut c, Some("e2"), "e4", "Log the request").await;
    let note = &r["deliveries"][0]["notes"][0];
    assert_eq!(note["advisor"], "Security", "{r}");
    assert_eq!(note["note"], "Never log the token.");
    assert_eq!(models_called(&server), ["arch", "sec"]);

    // An ask by name goes to that advisor's model (RO20).
    let r = c
        .call(
            "session/ask",
            json!({"sessionId": "s1", "question": "Is the token safe?", "advisor": "Security"}),
        )
        .await;
    assert_eq!(
        r,
        json!({"answer": "The token is redacted before logging."})
    );
    assert_eq!(models_called(&server), ["arch", "sec", "sec"]);
    // `/advisor dump NAME` passes through session/command (RO19): that advisor's context.
    let dump = c
        .call(
            "session/command",
            json!({"sessionId": "s1", "line": "/advisor dump security"}),
        )
        .await;
    let text = dump["text"].as_str().unwrap();
    assert!(
        text.contains("Security") && text.contains("Never log the token."),
        "{text}"
    );
    assert!(
        !text.contains("Split parse() in two."),
        "only Security's: {text}"
    );
}

#[actix::test]
async fn ro23_a_notice_about_a_named_advisor_carries_its_name() {
    let server = SseServer::start([ScriptedResponse::json(
        401,
        r#"{"error":{"message":"invalid api key"}}"#,
    )])
    .await
    .expect("bind");
    let mut c = start_at(&server);
    let dir = tempfile::tempdir().unwrap();
    roster_in(
        dir.path(),
        "advisors:\n  - name: Security\n    model: local/sec\n",
    );
    open(&mut c, "s1", dir.path(), json!({"syncBacklog": 1})).await;
    turn(&mut c, None, "e2", "Store the token").await;
    let n = c.notification("session/notice").await;
    let params = &n["params"];
    assert_eq!(params["advisor"], "Security", "{n}");
    assert!(
        params["text"]
            .as_str()
            .unwrap()
            .starts_with("advisor Security: paused"),
        "{n}"
    );
    assert_eq!(server.request_count(), 1, "a rejected key pauses it (F3)");
}

/// A server with the built-in catalog and nothing else: no `--base-url`, no keys, so a
/// provider only the host knows is reached only through what `session/open` passes.
pub(super) fn start_plain() -> Client {
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let defaults = ServeDefaults::new(Arc::new(Catalog::builtin().expect("catalog")));
    let options = ServeOptions::new(defaults, serve_runtime());
    actix::spawn(serve(server_r, server_w, options));
    RpcClient::new(client_w, client_r)
}

/// An endpoint object of `provider/id` at `server`, with `key`, as a host resolves one.
fn endpoint(server: &SseServer, provider: &str, id: &str, key: &str) -> Value {
    json!({"provider": provider, "id": id, "baseUrl": server.base_url(),
        "api": "openai-completions", "apiKey": key, "reasoning": true})
}

/// Entries of a host whose registry knows providers `advisor serve` does not: one without a
/// model, one naming the session's model at another thinking level, one naming a model of
/// another provider the host listed in `providers`, one naming a provider nobody knows.
const HOST_ROSTER: &str = "\
advisors:
  - name: Plain
  - name: Named
    model: hostprov/advisor-model:high
  - name: Sibling
    model: otherprov/other-model:low
  - name: Stranger
    model: elsewhere/some-model
";

#[actix::test]
async fn ro8_ro23_roster_entries_reach_the_endpoints_the_host_resolved() {
    let server = SseServer::start([text(""), text(""), text("")])
        .await
        .expect("bind");
    let mut c = start_plain();
    let dir = tempfile::tempdir().unwrap();
    roster_in(dir.path(), HOST_ROSTER);
    let mut model = endpoint(&server, "hostprov", "advisor-model", "host-key");
    model["headers"] = json!({"x-host": "pi"});
    model["thinking"] = json!("minimal");
    let r = c
        .call(
            "session/open",
            json!({"sessionId": "s1", "cwd": dir.path(), "agentDir": dir.path().join("agent"),
            "settings": {"syncBacklog": 1}, "model": model,
            "providers": [
                endpoint(&server, "otherprov", "listed-model", "other-key"),
                endpoint(&server, "otherprov", "other-model", "other-key"),
            ]}),
        )
        .await;
    let shown: Vec<(&str, &str, &str)> = r["roster"]["advisors"]
        .as_array()
        .expect("the roster")
        .iter()
        .map(|a| {
            let field = |k: &str| a[k].as_str().unwrap_or("-");
            (field("name"), field("model"), field("thinking"))
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("Plain", "hostprov/advisor-model", "minimal"),
            ("Named", "hostprov/advisor-model", "high"),
            ("Sibling", "otherprov/other-model", "low"),
            ("Stranger", "elsewhere/some-model", "medium"),
        ],
        "{r}"
    );
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    let states = advisor_states(&status);
    assert_eq!(
        states,
        [
            ("Plain", "running"),
            ("Named", "running"),
            ("Sibling", "running"),
            ("Stranger", "noModel"),
        ],
        "{status}"
    );
    let reason = status["advisors"][3]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("unknown provider `elsewhere`"),
        "the reason says why: {status}"
    );

    // One turn: the three with a model review it, each at its endpoint with its key,
    // headers and thinking level.
    c.call(
        "session/runState",
        json!({"sessionId": "s1", "running": true}),
    )
    .await;
    turn(&mut c, None, "e2", "Add a parser for the config").await;
    server.wait_for_requests(3).await;
    let mut calls: Vec<(String, String, String, String)> = server
        .requests()
        .iter()
        .map(|r| {
            let body = r.json();
            let text = |v: &Value| v.as_str().unwrap_or("-").to_string();
            (
                text(&body["model"]),
                r.header("authorization").unwrap_or("-").to_string(),
                r.header("x-host").unwrap_or("-").to_string(),
                text(&body["reasoning_effort"]),
            )
        })
        .collect();
    calls.sort();
    let call = |m: &str, key: &str, host: &str, effort: &str| {
        (
            m.to_string(),
            format!("Bearer {key}"),
            host.to_string(),
            effort.to_string(),
        )
    };
    assert_eq!(
        calls,
        [
            call("advisor-model", "host-key", "pi", "high"),
            call("advisor-model", "host-key", "pi", "minimal"),
            call("other-model", "other-key", "-", "low"),
        ]
    );
}

#[actix::test]
async fn ro23_a_bad_providers_entry_is_refused_naming_it() {
    let mut c = start_plain();
    let dir = tempfile::tempdir().unwrap();
    for (providers, field) in [
        (json!({"provider": "p"}), "providers"),
        (
            json!([{"id": "m", "baseUrl": "http://h/v1", "api": "openai-completions"}]),
            "providers[0].provider",
        ),
        (
            json!([{"provider": "p", "id": "m", "baseUrl": "http://h/v1", "api": "google"}]),
            "providers[0].api",
        ),
    ] {
        let e = c
            .call_err(
                "session/open",
                json!({"sessionId": "s1", "cwd": dir.path(), "providers": providers}),
            )
            .await;
        assert_eq!(e["code"], -32602, "{e}");
        assert_eq!(e["data"], json!({"field": field}), "{e}");
    }
}
