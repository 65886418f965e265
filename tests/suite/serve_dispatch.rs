//! `advisor serve` in process (V1–V4, X4, R1, D3, D6, C1–C3, G7, K1, K2): the server runs on
//! duplex pipes inside the test's actix system with a scripted model, and the tests read
//! what a client sees — replies, notifications and status text.

use std::path::Path;
use std::sync::Arc;

use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::ModelClient;
use advisor::providers::Catalog;
use advisor::serve::ServeDefaults;
use advisor::serve::{serve, ServeEnd, ServeOptions};
use advisor::{AdvisorRuntime, RuntimeOptions};
use serde_json::{json, Value};
use tokio::io::DuplexStream;
use tokio::task::JoinHandle;

use super::serve_client::{assistant, open_params, user, RpcClient};
use crate::support::runtime::{last_user_text, next_request, GatedModel};

pub(super) type Client = RpcClient<DuplexStream, DuplexStream>;

/// Starts a server on duplex pipes; every session uses `model` when given.
pub(super) fn start_with(
    model: Option<Arc<dyn ModelClient>>,
    max_line_bytes: usize,
) -> (Client, JoinHandle<ServeEnd>) {
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let mut defaults = ServeDefaults::new(Arc::new(Catalog::builtin().expect("catalog")));
    defaults.fixed_model = model;
    let options = ServeOptions {
        max_line_bytes,
        ..ServeOptions::new(defaults, serve_runtime())
    };
    let server = actix::spawn(serve(server_r, server_w, options));
    (RpcClient::new(client_w, client_r), server)
}

/// A small shared runtime for one test's server (A6): two arbiters, one call thread, the
/// per-provider limit from the first session's `advisor.maxConcurrentReviews`.
pub(super) fn serve_runtime() -> AdvisorRuntime {
    AdvisorRuntime::new(RuntimeOptions {
        arbiters: 2,
        max_concurrent_reviews: None,
        call_threads: 1,
    })
    .expect("the shared runtime starts")
}

pub(super) fn start(model: ScriptedModel) -> (Client, JoinHandle<ServeEnd>) {
    start_with(Some(Arc::new(model)), advisor::serve::MAX_LINE_BYTES)
}

pub(super) async fn open(client: &mut Client, session: &str, cwd: &Path, settings: Value) -> Value {
    client
        .call("session/open", open_params(session, cwd, settings))
        .await
}

#[actix::test]
async fn v2_initialize_reports_the_server_and_protocol_version() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let r = c
        .call(
            "initialize",
            json!({"clientInfo": {"name": "test", "version": "1"}}),
        )
        .await;
    assert_eq!(r["serverInfo"]["name"], "advisor");
    assert_eq!(r["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(r["protocolVersion"], 1);
}

#[actix::test]
async fn v2_d3_turn_end_then_step_boundary_hands_over_the_reviewed_nit() {
    let model = ScriptedModel::new([ScriptedReply::advise(
        "1",
        "Run the parser tests first.",
        Some("nit"),
    )]);
    let (mut c, _server) = start(model.clone());
    let dir = tempfile::tempdir().unwrap();
    // D3's routing (the default before P1): the final answer's nit is an aside.
    let settings = json!({"syncBacklog": 1, "policy": "interrupt"});
    let status = open(&mut c, "s1", dir.path(), settings).await;
    assert_eq!(status["enabled"], true);
    assert!(
        status["text"]
            .as_str()
            .unwrap()
            .starts_with("advisor: enabled\n"),
        "{status}"
    );
    c.call(
        "session/runState",
        json!({"sessionId": "s1", "running": true}),
    )
    .await;
    let r = c
        .call(
            "session/turnEnd",
            // Work in progress: D3's aside, not a final boundary's merged card (CA13).
            json!({"sessionId": "s1", "base": null, "leaf": "e2", "willContinue": true,
                "messages": [user("Fix the null check in the parser"), assistant("Done, I edited parse().")]}),
        )
        .await;
    assert_eq!(r, json!({}));
    let prompt = last_user_text(&model.requests()[0]);
    assert!(
        prompt.contains("Fix the null check in the parser"),
        "{prompt}"
    );
    let r = c
        .call("session/stepBoundary", json!({"sessionId": "s1"}))
        .await;
    let deliveries = r["deliveries"].as_array().unwrap();
    assert_eq!(deliveries.len(), 1, "{r}");
    assert_eq!(deliveries[0]["channel"], "aside");
    assert_eq!(
        deliveries[0]["notes"],
        json!([{"severity": "nit", "note": "Run the parser tests first.", "model": "scripted/test"}])
    );
    assert_eq!(deliveries[0]["model"], "scripted/test", "SP8");
    assert!(deliveries[0]["content"]
        .as_str()
        .unwrap()
        .contains("<advisory severity=\"nit\""));
    let r = c
        .call("session/stepBoundary", json!({"sessionId": "s1"}))
        .await;
    assert_eq!(r, json!({"deliveries": []}), "taken once");
}

#[actix::test]
async fn v2_d3_d6_steer_ready_wake_and_card_notifications_carry_the_session_and_card() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    // D3's routing, the default before P1.
    let interrupt = json!({"policy": "interrupt"});
    open(&mut c, "s1", dir.path(), interrupt.clone()).await;
    let sid = json!({"sessionId": "s1"});
    // Running: a concern becomes a steering card, announced by steerReady (D3).
    c.call(
        "session/runState",
        json!({"sessionId": "s1", "running": true}),
    )
    .await;
    let said = c
        .call(
            "session/command",
            json!({"sessionId": "s1", "line": "/advisor test concern Check the callers"}),
        )
        .await;
    assert_eq!(said["text"], "advisor test: Recorded.");
    let n = c.notification("session/steerReady").await;
    assert_eq!(n["params"], sid);
    let r = c.call("session/stepBoundary", sid.clone()).await;
    assert_eq!(r["deliveries"][0]["channel"], "steer");
    assert_eq!(r["deliveries"][0]["notes"][0]["note"], "Check the callers");
    // Idle: a blocker wakes the primary (D3).
    c.call(
        "session/runState",
        json!({"sessionId": "s1", "running": false}),
    )
    .await;
    c.call(
        "session/command",
        json!({"sessionId": "s1", "line": "test blocker Stop deleting files"}),
    )
    .await;
    let n = c.notification("session/wake").await;
    assert_eq!(n["params"]["sessionId"], "s1");
    assert_eq!(n["params"]["card"]["channel"], "wake");
    assert_eq!(
        n["params"]["card"]["notes"],
        json!([{"severity": "blocker", "note": "Stop deleting files"}])
    );
    assert!(n["params"]["card"]["content"]
        .as_str()
        .unwrap()
        .contains("Stop deleting files"));
    // (A fresh session: C2's test notes share one review's budget, see the report.)
    open(&mut c, "s2", dir.path(), interrupt).await;
    // After the user's interrupt, a blocker is a card: visible, no turn (D6).
    c.call(
        "session/interrupt",
        json!({"sessionId": "s2", "byUser": true}),
    )
    .await;
    c.call(
        "session/command",
        json!({"sessionId": "s2", "line": "test blocker Mind the lock order"}),
    )
    .await;
    let n = c.notification("session/card").await;
    assert_eq!(n["params"]["card"]["channel"], "card");
    assert_eq!(
        n["params"]["card"]["notes"][0]["note"],
        "Mind the lock order"
    );
    // A user prompt clears the latch: the next blocker wakes again.
    c.call("session/userPrompt", json!({"sessionId": "s2"}))
        .await;
    c.call(
        "session/command",
        json!({"sessionId": "s2", "line": "test blocker Another thing"}),
    )
    .await;
    let n = c.notification("session/wake").await;
    assert_eq!(n["params"]["card"]["notes"][0]["note"], "Another thing");
}

#[actix::test]
async fn v2_k1_unknown_settings_key_is_a_notice_and_a_bad_value_names_the_field() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({"polcy": "reconfirm"})).await;
    let n = c.notification("session/notice").await;
    assert_eq!(n["params"]["sessionId"], "s1");
    let text = n["params"]["text"].as_str().unwrap();
    assert!(
        text.contains("advisor.polcy") && text.contains("advisor.policy"),
        "{text}"
    );
    let e = c
        .call_err(
            "session/open",
            open_params("s2", dir.path(), json!({"policy": "loud"})),
        )
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["field"], "settings");
    assert!(e["message"].as_str().unwrap().contains("interrupt"), "{e}");
}

#[actix::test]
async fn v2_k1_enabled_unless_params_or_files_say_false_in_so_many_words() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".omp")).unwrap();
    // A file with an advisor block but no `enabled` key: on (the host owns on/off).
    std::fs::write(
        dir.path().join(".omp/config.yml"),
        "advisor:\n  policy: reconfirm\n",
    )
    .unwrap();
    let s = open(&mut c, "a", dir.path(), json!({})).await;
    assert_eq!(
        (s["enabled"].clone(), s["policy"].clone()),
        (json!(true), json!("reconfirm"))
    );
    std::fs::write(
        dir.path().join(".omp/config.yml"),
        "advisor:\n  enabled: false\n",
    )
    .unwrap();
    let s = open(&mut c, "b", dir.path(), json!({})).await;
    assert_eq!(s["enabled"], false);
    assert!(
        s["text"].as_str().unwrap().starts_with("advisor: disabled"),
        "{s}"
    );
    let s = open(&mut c, "c", dir.path(), json!({"enabled": true})).await;
    assert_eq!(s["enabled"], true, "the params win over the file");
    let other = tempfile::tempdir().unwrap();
    let s = open(&mut c, "d", other.path(), json!({"enabled": false})).await;
    assert_eq!(s["enabled"], false);
}

#[actix::test]
async fn k2_a_session_with_no_resolvable_model_opens_and_says_so() {
    let (mut c, _server) = start_with(None, 1 << 20);
    let dir = tempfile::tempdir().unwrap();
    let s = open(&mut c, "s1", dir.path(), json!({})).await;
    assert_eq!(s["model"], Value::Null);
    assert!(
        s["text"]
            .as_str()
            .unwrap()
            .contains("enabled, but no advisor model is assigned"),
        "{s}"
    );
    let r = c
        .call(
            "session/turnEnd",
            json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("hi")]}),
        )
        .await;
    assert_eq!(r, json!({}));
}

#[actix::test]
async fn v2_r1_base_mismatch_is_32010_with_expected_and_rewrite_recovers() {
    let model = ScriptedModel::new([]);
    let (mut c, _server) = start(model.clone());
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({"syncBacklog": 1})).await;
    let turn = |base: Value, leaf: &str, text: &str| json!({"sessionId": "s1", "base": base, "leaf": leaf, "messages": [user(text)]});
    c.call("session/turnEnd", turn(Value::Null, "a", "first turn"))
        .await;
    let e = c
        .call_err("session/turnEnd", turn(json!("zz"), "b", "lost turn"))
        .await;
    assert_eq!(e["code"], -32010);
    assert_eq!(e["data"], json!({"expected": "a"}));
    let e = c
        .call_err("session/turnEnd", turn(Value::Null, "b", "lost turn"))
        .await;
    assert_eq!(e["data"], json!({"expected": "a"}));
    let r = c
        .call(
            "session/rewrite",
            json!({"sessionId": "s1", "kind": "compaction", "leaf": "c",
                "messages": [{"role": "compactionSummary", "summary": "They fixed the parser."}, user("kept message")]}),
        )
        .await;
    assert_eq!(r, json!({}));
    c.call(
        "session/turnEnd",
        turn(json!("c"), "d", "after the compaction"),
    )
    .await;
    let prompt = last_user_text(model.requests().last().unwrap());
    // R1: the next review sees the whole current branch, not the lost turn.
    assert!(
        prompt.contains("[compaction] They fixed the parser."),
        "{prompt}"
    );
    assert!(
        prompt.contains("kept message") && prompt.contains("after the compaction"),
        "{prompt}"
    );
    assert!(!prompt.contains("lost turn"), "{prompt}");
    let e = c
        .call_err(
            "session/rewrite",
            json!({"sessionId": "s1", "kind": "teleport", "leaf": "x", "messages": []}),
        )
        .await;
    assert_eq!(
        (e["code"].clone(), e["data"]["field"].clone()),
        (json!(-32602), json!("kind"))
    );
}

/// `session/open` of `s1` with an earlier conversation ending at leaf `L`, syncBacklog 1.
fn seeded_open_params(cwd: &Path) -> Value {
    let mut params = open_params("s1", cwd, json!({"syncBacklog": 1}));
    params["messages"] = json!([user("an old request"), assistant("an old answer")]);
    params["leaf"] = json!("L");
    params
}

#[actix::test]
async fn x4_open_with_messages_is_seeded_so_the_old_conversation_is_not_replayed() {
    let model = ScriptedModel::new([]);
    let (mut c, _server) = start(model.clone());
    let dir = tempfile::tempdir().unwrap();
    let params = seeded_open_params(dir.path());
    c.call("session/open", params).await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": "L", "leaf": "M", "messages": [user("a new request")]}),
    )
    .await;
    let prompt = last_user_text(&model.requests()[0]);
    assert!(prompt.contains("a new request"), "{prompt}");
    assert!(!prompt.contains("an old request"), "{prompt}");
}

#[actix::test]
async fn c1_c3_v2_command_status_and_close() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({})).await;
    let r = c
        .call(
            "session/command",
            json!({"sessionId": "s1", "line": "/advisor status"}),
        )
        .await;
    let text = r["text"].as_str().unwrap();
    assert!(
        text.contains("advisor: enabled") && text.contains("backlog: 0"),
        "{text}"
    );
    let r = c
        .call(
            "session/command",
            json!({"sessionId": "s1", "line": "/advisor frobnicate"}),
        )
        .await;
    assert!(r["text"].as_str().unwrap().contains("usage"), "{r}");
    let r = c
        .call(
            "session/command",
            json!({"sessionId": "s1", "line": "/advisor off"}),
        )
        .await;
    assert!(!r["text"].as_str().unwrap().is_empty());
    let s = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert_eq!(s["enabled"], false);
    assert!(
        s["text"].as_str().unwrap().starts_with("advisor: disabled"),
        "{s}"
    );
    assert_eq!(
        c.call("session/close", json!({"sessionId": "s1"})).await,
        json!({})
    );
    let e = c
        .call_err("session/status", json!({"sessionId": "s1"}))
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["field"], "sessionId");
}

#[actix::test]
async fn v3_a_turn_end_waiting_on_sync_backlog_delays_no_other_call() {
    let (model, mut arrivals, gate) = GatedModel::new(Vec::new(), true);
    let gate = gate.unwrap();
    let (mut c, _server) = start_with(Some(Arc::new(model)), 1 << 20);
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "a", dir.path(), json!({"syncBacklog": 1})).await;
    open(&mut c, "b", dir.path(), json!({"syncBacklog": "off"})).await;
    let waiting = c
        .request(
            "session/turnEnd",
            json!({"sessionId": "a", "base": null, "leaf": "1", "messages": [user("slow review")]}),
        )
        .await;
    next_request(&mut arrivals).await;
    // The review of session a is held; everything else still answers.
    c.call("session/stepBoundary", json!({"sessionId": "a"}))
        .await;
    let s = c.call("session/status", json!({"sessionId": "a"})).await;
    assert_eq!(s["agent"]["backlog"], 1);
    c.call("session/status", json!({"sessionId": "b"})).await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "b", "base": null, "leaf": "1", "messages": [user("other session")]}),
    )
    .await;
    assert!(
        c.reply_now(&waiting).is_none(),
        "still waiting on the backlog"
    );
    // S1: an interrupt of its own session releases the wait, the review still held.
    c.call(
        "session/interrupt",
        json!({"sessionId": "a", "byUser": false}),
    )
    .await;
    let r = c.reply(&waiting).await;
    assert_eq!(r["result"], json!({}));
    // Replies came out of order: calls sent after the held one were answered before it.
    let position = |id: &Value| c.seen.iter().position(|v| &v["id"] == id).unwrap();
    assert!(position(&waiting) > position(&json!(waiting.as_u64().unwrap() + 1)));
    // R2: closing a session answers at once and releases its own waiting turnEnd.
    open(&mut c, "c", dir.path(), json!({"syncBacklog": 1})).await;
    let held = c
        .request(
            "session/turnEnd",
            json!({"sessionId": "c", "base": null, "leaf": "1", "messages": [user("held review")]}),
        )
        .await;
    next_request(&mut arrivals).await;
    assert_eq!(
        c.call("session/close", json!({"sessionId": "c"})).await,
        json!({})
    );
    let r = c.reply(&held).await;
    assert_eq!(r["result"], json!({}), "{r}");
    gate.add_permits(8);
}

/// A turn end read before the seeded open is answered is still this session's turn: the
/// seed (X4) is the length the host opened with, not whatever the log holds by the time the
/// session's actors start on their arbiter.
#[actix::test]
async fn x4_v3_a_turn_end_pipelined_behind_a_seeded_open_is_reviewed() {
    let model = ScriptedModel::new([]);
    let (mut c, _server) = start(model.clone());
    let dir = tempfile::tempdir().unwrap();
    let params = seeded_open_params(dir.path());
    let opened = c.request("session/open", params).await;
    let ended = c
        .request(
            "session/turnEnd",
            json!({"sessionId": "s1", "base": "L", "leaf": "M", "messages": [user("a new request")]}),
        )
        .await;
    assert_eq!(c.reply(&opened).await["result"]["enabled"], true);
    assert_eq!(c.reply(&ended).await["result"], json!({}));
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "the turn was reviewed");
    let prompt = last_user_text(&requests[0]);
    assert!(prompt.contains("a new request"), "{prompt}");
    assert!(!prompt.contains("an old request"), "{prompt}");
}

#[actix::test]
async fn v3_calls_pipelined_behind_an_open_wait_for_it_in_order() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    let opened = c
        .request("session/open", open_params("s1", dir.path(), json!({})))
        .await;
    let first = c
        .request(
            "session/turnEnd",
            json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("1")]}),
        )
        .await;
    let second = c
        .request(
            "session/turnEnd",
            json!({"sessionId": "s1", "base": "a", "leaf": "b", "messages": [user("2")]}),
        )
        .await;
    assert_eq!(c.reply(&opened).await["result"]["enabled"], true);
    assert_eq!(c.reply(&first).await["result"], json!({}));
    assert_eq!(c.reply(&second).await["result"], json!({}));
}

#[actix::test]
async fn v4_every_error_code_and_the_server_reads_on() {
    let (mut c, _server) = start_with(Some(Arc::new(ScriptedModel::new([]))), 1024);
    let dir = tempfile::tempdir().unwrap();
    // Not JSON: -32700 with a null id, then the next line on the same pipe is served.
    c.send_raw(b"this is not json\n").await;
    let e = c.null_id_reply().await;
    assert_eq!(e["error"]["code"], -32700);
    c.call("initialize", json!({})).await;
    // JSON that no reader can hold anywhere in the line is not JSON either: -32700, id null,
    // even when the rest of the line is a well-formed request.
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    for params in [
        r#"{"sessionId":"s1","line":"\ud800"}"#.to_string(),
        r#"{"sessionId":"s1","n":1e999999}"#.to_string(),
        format!(r#"{{"sessionId":"s1","deep":{deep}}}"#),
    ] {
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":9,"method":"session/command","params":{params}}}"#);
        c.send_raw(format!("{line}\n").as_bytes()).await;
        let e = c.null_id_reply().await;
        assert_eq!(e["error"]["code"], -32700, "{line} → {e}");
    }
    c.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\xff\"}\n")
        .await;
    assert_eq!(c.null_id_reply().await["error"]["code"], -32700);
    c.call("initialize", json!({})).await;
    // An id no float holds is still an id: served, and echoed as written.
    for id in [
        "1e400",
        "-1e99999",
        "123456789012345678901234567890",
        "-0",
        "1.50",
    ] {
        c.send_raw(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize"}}"#).as_bytes())
            .await;
        c.send_raw(b"\n").await;
        let line = c.raw_line().await.expect("a reply");
        assert!(
            line.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"#)),
            "{id} → {line}"
        );
    }
    // Wrong shapes: -32600.
    for line in [
        "[1, 2]",
        r#""text""#,
        r#"{"jsonrpc":"2.0","id":true,"method":"initialize"}"#,
        r#"{"id":1,"method":"initialize"}"#,
    ] {
        c.send_raw(format!("{line}\n").as_bytes()).await;
        let id = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v.get("id").filter(|i| i.is_number()).cloned())
            .unwrap_or(Value::Null);
        let e = c.reply(&id).await;
        assert_eq!(e["error"]["code"], -32600, "{line} → {e}");
    }
    // A line over the cap: -32600, not buffered, and the next line is read.
    let mut long = vec![b'x'; 5000];
    long.push(b'\n');
    c.send_raw(&long).await;
    let e = c.null_id_reply().await;
    assert_eq!(e["error"]["code"], -32600);
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than 1024"),
        "{e}"
    );
    c.call("initialize", json!({})).await;
    // Unknown methods: -32601.
    assert_eq!(
        c.call_err("session/frobnicate", json!({})).await["code"],
        -32601
    );
    // Missing, mistyped, unknown session: -32602 naming the field.
    let e = c
        .call_err(
            "session/ask",
            json!({"sessionId": "s1", "question": "why?"}),
        )
        .await;
    assert_eq!(
        (e["code"].clone(), e["data"]["field"].clone()),
        (json!(-32602), json!("sessionId")),
        "session/ask is served: an unknown session is named"
    );
    open(&mut c, "s1", dir.path(), json!({})).await;
    for (method, params, field) in [
        ("session/open", json!({"cwd": "/"}), "sessionId"),
        (
            "session/open",
            json!({"sessionId": "x", "cwd": dir.path().join("missing")}),
            "cwd",
        ),
        (
            "session/turnEnd",
            json!({"sessionId": "s1", "base": null, "messages": []}),
            "leaf",
        ),
        (
            "session/turnEnd",
            json!({"sessionId": "s1", "base": 5, "leaf": "a", "messages": []}),
            "base",
        ),
        (
            "session/turnEnd",
            json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": {}}),
            "messages",
        ),
        (
            "session/turnEnd",
            json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": ["x"]}),
            "messages[0]",
        ),
        (
            "session/runState",
            json!({"sessionId": "s1", "running": "yes"}),
            "running",
        ),
        ("session/interrupt", json!({"sessionId": "s1"}), "byUser"),
        (
            "session/transition",
            json!({"sessionId": "s1"}),
            "preparing",
        ),
        (
            "session/transition",
            json!({"sessionId": "s1", "preparing": 1}),
            "preparing",
        ),
        (
            "session/modelsChanged",
            json!({"sessionId": "nope"}),
            "sessionId",
        ),
        ("session/command", json!({"sessionId": "s1"}), "line"),
        ("session/ask", json!({"sessionId": "s1"}), "question"),
        (
            "session/ask",
            json!({"sessionId": "s1", "question": ["why?"]}),
            "question",
        ),
        (
            "session/ask",
            json!({"sessionId": "s1", "question": "  "}),
            "question",
        ),
        ("session/status", json!({"sessionId": "nope"}), "sessionId"),
        ("session/stepBoundary", json!({"sessionId": 7}), "sessionId"),
        ("session/stepBoundary", json!({}), "sessionId"),
    ] {
        let e = c.call_err(method, params.clone()).await;
        assert_eq!(e["code"], -32602, "{method} {params} → {e}");
        assert_eq!(e["data"]["field"], field, "{method} {params} → {e}");
        assert!(e["message"].as_str().unwrap().contains(field), "{e}");
    }
    // CA11, CA23: the host's transition and catalog reports answer `{}`.
    for (method, params) in [
        (
            "session/transition",
            json!({"sessionId": "s1", "preparing": true}),
        ),
        (
            "session/transition",
            json!({"sessionId": "s1", "preparing": false}),
        ),
        ("session/modelsChanged", json!({"sessionId": "s1"})),
    ] {
        assert_eq!(c.call(method, params).await, json!({}), "{method}");
    }
    // A notification is run but never answered.
    c.notify(
        "session/runState",
        json!({"sessionId": "s1", "running": true}),
    )
    .await;
    c.call("session/status", json!({"sessionId": "s1"})).await;
    assert!(c
        .seen
        .iter()
        .all(|v| v.get("id").is_some() || v.get("method").is_some()));
}

#[actix::test]
async fn v1_g7_end_of_input_disposes_every_session_with_its_audit_flushed() {
    let model = ScriptedModel::new([ScriptedReply::advise(
        "1",
        "Check the error path.",
        Some("concern"),
    )]);
    let (mut c, server) = start(model);
    let dir = tempfile::tempdir().unwrap();
    let session_file = dir.path().join("2026_abc.jsonl");
    let mut params = open_params("s1", dir.path(), json!({"syncBacklog": 1}));
    params["sessionFile"] = json!(session_file);
    c.call("session/open", params).await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("refactor it")]}),
    )
    .await;
    c.close_input();
    c.read_to_end().await;
    assert_eq!(server.await.unwrap(), ServeEnd::EndOfInput);
    let audit = std::fs::read_to_string(dir.path().join("2026_abc/__advisor.jsonl")).unwrap();
    assert!(audit.contains("Check the error path."), "{audit}");
}

#[actix::test]
async fn v1_shutdown_answers_then_the_server_ends() {
    let (mut c, server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({})).await;
    assert_eq!(c.call("shutdown", json!({})).await, json!({}));
    c.read_to_end().await;
    assert_eq!(server.await.unwrap(), ServeEnd::Shutdown);
}

#[actix::test]
async fn k1_w1_g1_agent_dir_param_names_where_the_user_files_are_read() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let agent = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    // Not the hidden temporary directory itself: project files there are ignored (W2).
    let cwd = root.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        agent.path().join("config.yml"),
        "advisor:\n  policy: reconfirm\n",
    )
    .unwrap();
    std::fs::write(
        agent.path().join("WATCHDOG.md"),
        "Never touch the migrations folder.\n",
    )
    .unwrap();
    std::fs::write(cwd.join("WATCHDOG.md"), "Keep the public API stable.\n").unwrap();
    let mut params = open_params("s1", &cwd, json!({"syncBacklog": 1}));
    params["agentDir"] = json!(agent.path());
    let s = c.call("session/open", params).await;
    assert_eq!(s["policy"], "reconfirm");
    // The first review (awaited: syncBacklog 1) builds the prompt with both watchdog
    // files (W1, W5).
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("go")]}),
    )
    .await;
    let dump = c
        .call(
            "session/command",
            json!({"sessionId": "s1", "line": "/advisor dump raw"}),
        )
        .await;
    let text = dump["text"].as_str().unwrap();
    assert!(
        text.contains("Never touch the migrations folder."),
        "{text}"
    );
    assert!(text.contains("Keep the public API stable."), "{text}");
}

#[actix::test]
async fn v2_opening_an_open_id_replaces_that_session() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({})).await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("one")]}),
    )
    .await;
    let s = open(&mut c, "s1", dir.path(), json!({"policy": "reconfirm"})).await;
    assert_eq!(s["policy"], "reconfirm");
    // A fresh session: its first base is null again.
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "b", "messages": [user("two")]}),
    )
    .await;
}

#[actix::test]
async fn k2_v2_a_files_model_that_cannot_be_built_is_a_notice_and_a_broken_file_is_32000() {
    let (mut c, _server) = start_with(None, 1 << 20);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".omp")).unwrap();
    std::fs::write(
        dir.path().join(".omp/config.yml"),
        "modelRoles:\n  advisor: openrouter/some-model\n",
    )
    .unwrap();
    let s = open(&mut c, "s1", dir.path(), json!({})).await;
    assert_eq!(s["model"], Value::Null);
    let n = c.notification("session/notice").await;
    let text = n["params"]["text"].as_str().unwrap();
    assert!(text.contains("OPENROUTER_API_KEY"), "{text}");
    std::fs::write(dir.path().join(".omp/config.yml"), "advisor: [unclosed\n").unwrap();
    let e = c
        .call_err("session/open", open_params("s2", dir.path(), json!({})))
        .await;
    assert_eq!(e["code"], -32000);
    assert!(e["message"].as_str().unwrap().contains("config.yml"), "{e}");
    let e = c
        .call_err("session/status", json!({"sessionId": "s2"}))
        .await;
    assert_eq!(e["code"], -32602, "a failed open leaves no session");
}

#[actix::test]
async fn c1_v2_an_empty_command_line_answers_the_usage_and_leaves_the_advisor_on() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "s1", dir.path(), json!({})).await;
    for line in ["", "  "] {
        let said = c
            .call("session/command", json!({"sessionId": "s1", "line": line}))
            .await;
        assert!(
            said["text"]
                .as_str()
                .unwrap()
                .starts_with("usage: /advisor"),
            "{said}"
        );
    }
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert_eq!(status["enabled"], true, "{status}");
}

/// V4 backpressure: a client that writes requests and never reads its
/// replies stops the server from reading — its writes block once the bounded outgoing
/// queue and the pipes are full — and when it reads at last, every request is answered.
#[actix::test]
async fn v4_a_client_that_never_reads_stops_the_server_reading_and_loses_no_reply() {
    use advisor::serve::{InputLine, LineReader};
    use tokio::io::AsyncWriteExt;

    tokio::time::pause();
    let (mut client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let defaults = ServeDefaults::new(Arc::new(Catalog::builtin().expect("catalog")));
    let _server = actix::spawn(serve(
        server_r,
        server_w,
        ServeOptions::new(defaults, serve_runtime()),
    ));
    const REQUESTS: usize = 50_000;
    let mut writer = actix::spawn(async move {
        for id in 0..REQUESTS {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize"}}"#);
            client_w.write_all(line.as_bytes()).await.unwrap();
            client_w.write_all(b"\n").await.unwrap();
        }
        client_w.shutdown().await.unwrap();
    });
    // Virtual time runs on only when nothing can move: the writer is stuck for good.
    assert!(
        tokio::time::timeout(std::time::Duration::from_secs(60), &mut writer)
            .await
            .is_err(),
        "the server read every request although nobody reads its replies"
    );
    let mut reader = LineReader::new(client_r, 1 << 20);
    let mut seen = vec![false; REQUESTS];
    for _ in 0..REQUESTS {
        let Some(InputLine::Line(bytes)) = reader.next().await else {
            panic!("a reply line");
        };
        let reply: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(reply["result"]["protocolVersion"], 1, "{reply}");
        seen[reply["id"].as_u64().unwrap() as usize] = true;
    }
    writer.await.unwrap();
    assert!(seen.iter().all(|s| *s), "every request answered once");
}

/// V4: the transcripts a server holds have a budget; the call that would
/// pass it is refused with a clear -32000, nothing of what is held is lost, the server goes
/// on serving, and closing a session gives its share back.
#[actix::test]
async fn v4_a_call_past_the_held_transcript_budget_is_refused_and_nothing_is_lost() {
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let mut defaults = ServeDefaults::new(Arc::new(Catalog::builtin().expect("catalog")));
    defaults.fixed_model = Some(Arc::new(ScriptedModel::new([])));
    let options = ServeOptions {
        max_held_bytes: 8 * 1024,
        ..ServeOptions::new(defaults, serve_runtime())
    };
    let _server = actix::spawn(serve(server_r, server_w, options));
    let mut c = RpcClient::new(client_w, client_r);
    let dir = tempfile::tempdir().unwrap();
    let off = json!({"enabled": false});
    open(&mut c, "s1", dir.path(), off.clone()).await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "a", "messages": [user("small")]}),
    )
    .await;
    let many: Vec<Value> = (0..40).map(|i| user(&format!("message {i}"))).collect();
    let e = c
        .call_err(
            "session/turnEnd",
            json!({"sessionId": "s1", "base": "a", "leaf": "b", "messages": many}),
        )
        .await;
    assert_eq!(e["code"], -32000, "{e}");
    assert_eq!(e["data"]["reason"], "heldBudget", "{e}");
    assert_eq!(e["data"]["budgetBytes"], 8 * 1024, "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("past its budget of 8 KiB for held transcripts")
            && message.contains("nothing was appended"),
        "{message}"
    );
    // Nothing appended: the leaf is still `a`; the server still serves.
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": "a", "leaf": "c", "messages": [user("next")]}),
    )
    .await;
    // A rewrite past it keeps the old branch, too.
    let e = c
        .call_err(
            "session/rewrite",
            json!({"sessionId": "s1", "kind": "compaction", "leaf": "z", "messages": many}),
        )
        .await;
    assert_eq!(e["data"]["reason"], "heldBudget", "{e}");
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": "c", "leaf": "d", "messages": []}),
    )
    .await;
    // Closing gives the share back: the same messages fit a new session.
    c.call("session/close", json!({"sessionId": "s1"})).await;
    let mut params = open_params("s2", dir.path(), off);
    params["messages"] = json!(many[..20]);
    c.call("session/open", params).await;
}

/// M1, V4: a protocol client has no command line; the error for a model
/// that cannot be reached speaks of what the client can set, never of `advisor` flags.
#[actix::test]
async fn m1_v4_serve_model_errors_tell_a_client_no_cli_flag() {
    let (mut c, _server) = start_with(None, advisor::serve::MAX_LINE_BYTES);
    let dir = tempfile::tempdir().unwrap();
    let mut params = open_params("s1", dir.path(), json!({}));
    params["model"] = json!("advfake/no-such-model");
    let e = c.call_err("session/open", params).await;
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("unknown provider `advfake`") && message.contains("base URL"),
        "{message}"
    );
    assert!(
        !message.contains("--") && !message.contains("pass "),
        "{message}"
    );
}

#[actix::test]
async fn v2_a_failed_reopen_leaves_the_open_session_running() {
    let (mut c, _server) = start(ScriptedModel::new([]));
    let dir = tempfile::tempdir().unwrap();
    open(&mut c, "b", dir.path(), json!({})).await;
    // A mark of this session: turned off.
    c.call(
        "session/command",
        json!({"sessionId": "b", "line": "/advisor off"}),
    )
    .await;
    let missing = dir.path().join("no-such-dir");
    // The re-open, and a status call sent right behind it (it waits for the open).
    let reopen = c
        .request("session/open", open_params("b", &missing, json!({})))
        .await;
    let behind = c.request("session/status", json!({"sessionId": "b"})).await;
    let e = c.reply(&reopen).await;
    assert_eq!(e["error"]["code"], -32602, "{e}");
    assert_eq!(e["error"]["data"]["field"], "cwd", "{e}");
    let s = c.reply(&behind).await;
    assert_eq!(s["result"]["enabled"], false, "the same session: {s}");
    let s = c.call("session/status", json!({"sessionId": "b"})).await;
    assert_eq!(s["enabled"], false, "{s}");
    let r = c
        .call("session/command", json!({"sessionId": "b", "line": "on"}))
        .await;
    assert!(!r["text"].as_str().unwrap().is_empty());
    assert_eq!(
        c.call("session/status", json!({"sessionId": "b"})).await["enabled"],
        true,
        "still served"
    );
    // A re-open that succeeds replaces it.
    c.call("session/command", json!({"sessionId": "b", "line": "off"}))
        .await;
    open(&mut c, "b", dir.path(), json!({})).await;
    let s = c.call("session/status", json!({"sessionId": "b"})).await;
    assert_eq!(s["enabled"], true, "a fresh session: {s}");
}
