//! The spend controls of the tool loop through the mailboxes and through `advisor serve`
//! (SP1 tool budget, SP2 no paid re-reads): a scripted model makes the calls, the real
//! ToolExecutor runs them over a temporary workspace, and the tests read what the model was
//! sent next and what the status counts.

use std::path::Path;
use std::sync::Arc;

use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::providers::testing::SseServer;
use advisor::settings::SyncBacklog;
use advisor::AdvisorHandle;
use serde_json::{json, Value};

use super::replay_e2e::{chunk, finish};
use super::serve_client::{assistant, open_params, user};
use super::serve_roster::start_plain;
use crate::support::runtime::{runtime, tool_results};

/// What a call past the default budget of 3 is answered (SP1).
const SPENT_3: &str = "Not run: this review's budget of 3 tool calls is spent. Advise now with \
what you have, or end the review.";

/// A workspace with `a.txt` … `e.txt`, each one line naming itself.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c", "d", "e"] {
        std::fs::write(
            dir.path().join(format!("{name}.txt")),
            format!("file {name}\n"),
        )
        .unwrap();
    }
    dir
}

/// `read` calls of `paths`, made in one answer (parallel calls).
fn reads(paths: &[&str]) -> Vec<(String, &'static str, Value)> {
    paths
        .iter()
        .enumerate()
        .map(|(i, path)| (format!("r{i}"), "read", json!({ "path": path })))
        .collect()
}

fn parallel(calls: &[(String, &'static str, Value)]) -> ScriptedReply {
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
        .collect();
    ScriptedReply::tool_calls(&calls)
}

/// Ends one turn per update on a handle that waits for each review (S1).
async fn turns(h: &AdvisorHandle, updates: &[&str]) {
    let t = Transcript::new();
    for update in updates {
        t.push(TranscriptMessage::user(*update));
        h.turn_end(&t).await.unwrap();
    }
}

#[actix::test]
async fn sp1_through_the_mailboxes_calls_past_the_default_budget_are_refused_and_advise_goes_out() {
    let dir = workspace();
    let mut calls = reads(&["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]);
    calls.push((
        "n".into(),
        "advise",
        json!({"note": "Check the empty-input case.", "severity": "nit"}),
    ));
    let model = ScriptedModel::new([parallel(&calls), ScriptedReply::text("")]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.workspace_root = dir.path().to_path_buf();
    });
    turns(&h, &["Fix the parser"]).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let sent = tool_results(&requests[1]);
    assert_eq!(
        &sent[..5],
        ["1|file a", "1|file b", "1|file c", SPENT_3, SPENT_3],
        "three reads ran, the fourth and fifth were refused"
    );
    let aside = h.step_boundary().await.unwrap().aside.expect("advise ran");
    assert_eq!(aside.notes[0].note, "Check the empty-input case.");
    let agent = h.status().await.unwrap().agent;
    assert_eq!(agent.tool_spend.budget_refused, 2);
    let text = h.status().await.unwrap().render();
    assert!(
        text.contains("tool spend: 2 call(s) past the tool budget not run"),
        "{text}"
    );
}

#[actix::test]
async fn sp2_through_the_mailboxes_a_re_read_is_a_pointer_until_the_file_changes() {
    let dir = workspace();
    let read = || ScriptedReply::tool_call("r", "read", json!({"path": "a.txt"}));
    let ok = || ScriptedReply::text("");
    let model = ScriptedModel::new([read(), ok(), read(), ok(), read(), ok()]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.workspace_root = dir.path().to_path_buf();
        // These results are small; P4 would not evict them anyway.
        cfg.settings.evict_stale_results = false;
    });
    turns(&h, &["one", "two"]).await;
    let requests = model.requests();
    assert_eq!(tool_results(&requests[1]), ["1|file a"]);
    assert_eq!(
        tool_results(&requests[3]),
        [
            "1|file a",
            "[Not sent again: this is the same call as call 1 of review 1, and the files it \
             covers are unchanged since, so its result (8 bytes) is still above in your context.]"
        ]
    );
    // The file changes (its size): the read runs again.
    std::fs::write(dir.path().join("a.txt"), "file a, edited\n").unwrap();
    let t = Transcript::new();
    for update in ["one", "two", "three"] {
        t.push(TranscriptMessage::user(update));
    }
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert_eq!(tool_results(&requests[5])[2], "1|file a, edited");
    let agent = h.status().await.unwrap().agent;
    let spend = agent.tool_spend;
    assert_eq!((spend.rereads_saved, spend.reread_bytes_saved), (1, 8));
}

/// The defect SP2 fixes, through the real executor: once P4 evicted a read's result, the
/// same read shows the lines again; it never says they are already in the context.
#[actix::test]
async fn sp2_p4_through_the_mailboxes_an_evicted_read_is_read_again_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (1..=200)
        .map(|i| format!("line {i} of the module\n"))
        .collect();
    std::fs::write(dir.path().join("big.rs"), &body).unwrap();
    let read = || ScriptedReply::tool_call("r", "read", json!({"path": "big.rs"}));
    let ok = || ScriptedReply::text("");
    // Review 1 reads; review 2 does not; before review 3 P4 evicts review 1's result, and
    // review 3 reads the same file again.
    let model = ScriptedModel::new([read(), ok(), ok(), read(), ok()]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.workspace_root = dir.path().to_path_buf();
    });
    turns(&h, &["one", "two", "three"]).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    let last = tool_results(&requests[4]);
    assert!(last[0].starts_with("[Stale result elided"), "{last:?}");
    assert!(
        last[1].starts_with("1|line 1 of the module\n2|line 2"),
        "the lines are sent again: {:.200}",
        last[1]
    );
    assert!(!last[1].contains("unchanged"), "{:.200}", last[1]);
    let agent = h.status().await.unwrap().agent;
    assert_eq!((agent.evictions, agent.tool_spend.rereads_saved), (1, 0));
}

/// An OpenAI-style streamed answer making `calls` in parallel.
fn wire_calls(
    calls: &[(String, &'static str, Value)],
) -> advisor::providers::testing::ScriptedResponse {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(index, (id, name, args))| {
            json!({"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    finish(vec![
        chunk(json!({"role": "assistant", "tool_calls": tool_calls}), None),
        chunk(json!({}), Some("tool_calls")),
    ])
}

/// The tool results a recorded OpenAI request carries, in order.
fn wire_tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| match &m["content"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Opens `s1` on the model at `server`, `settings` as its settings, turn ends waiting for
/// the review (S1).
async fn open_at(
    c: &mut super::serve_dispatch::Client,
    dir: &Path,
    server: &SseServer,
    settings: Value,
) {
    let model = json!({"provider": "hostprov", "id": "advisor-model", "baseUrl": server.base_url(),
        "api": "openai-completions", "apiKey": "hostprov-key"});
    c.call(
        "session/open",
        json!({"sessionId": "s1", "cwd": dir, "agentDir": dir.join("agent"),
            "settings": settings, "model": model}),
    )
    .await;
}

#[actix::test]
async fn sp1_through_advisor_serve_the_refusal_reaches_the_model_s_next_request() {
    let dir = workspace();
    let calls = reads(&["a.txt", "b.txt", "c.txt", "d.txt"]);
    let server = SseServer::start([
        wire_calls(&calls),
        super::replay_e2e::advise("Check the empty-input case.", Some("nit")),
    ])
    .await
    .expect("bind");
    let mut c = start_plain();
    open_at(
        &mut c,
        dir.path(),
        &server,
        json!({"syncBacklog": 1, "toolBudget": 2}),
    )
    .await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "leaf": "e1", "messages": [user("Fix the parser"), assistant("Done.")]}),
    )
    .await;
    server.wait_for_requests(2).await;
    let second = server.requests()[1].json();
    let spent = "Not run: this review's budget of 2 tool calls is spent. Advise now with what \
                 you have, or end the review.";
    assert_eq!(
        wire_tool_results(&second),
        ["1|file a", "1|file b", spent, spent]
    );
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    assert_eq!(status["agent"]["budgetRefused"], 2, "{status}");
    assert_eq!(status["agent"]["rereadsSaved"], 0, "{status}");
    assert!(
        status["text"]
            .as_str()
            .unwrap_or_default()
            .contains("tool spend: 2 call(s) past the tool budget not run"),
        "{status}"
    );
}

#[actix::test]
async fn sp1_k1_through_advisor_serve_a_bad_budget_names_the_key_and_the_range() {
    let dir = workspace();
    let mut c = start_plain();
    for bad in [json!(51), json!(-1), json!("three"), json!(2.5)] {
        let e = c
            .call_err(
                "session/open",
                open_params("s1", dir.path(), json!({ "toolBudget": bad })),
            )
            .await;
        assert_eq!(e["code"], -32602, "{e}");
        let message = e["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("advisor.toolBudget")
                && message.contains("a whole number from 0 to 50"),
            "{bad}: {message}"
        );
    }
}
