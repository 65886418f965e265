//! The expanded view through the runtime's mailboxes (SPEC §3 Expanded, G2, P1): a review
//! is sent as one user message per transcript message, a coalesced batch gets one heading
//! and one run of labels, and the WIP footer follows the batch's last turn, as the host
//! says it (`will_continue`) or as the messages show.

use std::sync::Arc;

use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::ScriptedModel;
use advisor::model::{ChatMessage, ModelRequest};
use advisor::settings::SyncBacklog;
use advisor::TranscriptView;
use advisor::TurnEndOptions;
use serde_json::{json, Value};

use crate::support::runtime::{next_request, runtime, GatedModel};

const FOOTER: &str = "\n\n---\n\n[in progress — more steps follow]";

fn msg(value: Value) -> TranscriptMessage {
    serde_json::from_value(value).expect("a message")
}

fn read_call(id: &str, path: &str) -> TranscriptMessage {
    msg(
        json!({"role": "assistant", "stopReason": "toolUse", "content": [
        {"type": "toolCall", "id": id, "name": "read", "arguments": {"path": path, "i": "Read it"}}]}),
    )
}

fn read_result(id: &str, body: &str) -> TranscriptMessage {
    msg(
        json!({"role": "toolResult", "toolCallId": id, "toolName": "read",
        "content": [{"type": "text", "text": body}]}),
    )
}

fn answer(text: &str) -> TranscriptMessage {
    msg(
        json!({"role": "assistant", "stopReason": "stop", "content": [{"type": "text", "text": text}]}),
    )
}

/// The user messages that end a request: the review's parts.
fn parts(request: &ModelRequest) -> Vec<String> {
    let mut out: Vec<String> = request
        .messages
        .iter()
        .rev()
        .map_while(|m| match m {
            // P8's date-and-cwd reminder rides in front of the context's first user message.
            ChatMessage::User { text } => Some(crate::support::without_reminder(text).to_string()),
            _ => None,
        })
        .collect();
    out.reverse();
    out
}

fn expanded(c: &mut advisor::RuntimeConfig) {
    c.settings.transcript = TranscriptView::Expanded;
}

#[actix::test]
async fn expanded_g2_a_review_is_one_user_message_per_transcript_message() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), expanded);
    let t = Transcript::from_messages([
        TranscriptMessage::user("fix it"),
        read_call("c1", "a.rs"),
        read_result("c1", "fn main() {}"),
    ]);
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        parts(&requests[0]),
        vec![
            "### Session update\n\n**user**:\nfix it\n".to_string(),
            format!(
                "**agent**:\n// Read it\n→ read(a.rs) ⇒ ok · 1 line\nTool result:\n```text\nfn main() {{}}\n```\n{FOOTER}"
            ),
        ]
    );
}

#[actix::test]
async fn expanded_g2_a_coalesced_batch_has_one_heading_and_its_last_turn_decides_wip() {
    let (model, mut arrivals, gate) = GatedModel::new(vec![], true);
    let gate = gate.expect("gated");
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Off, expanded);
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let first = next_request(&mut arrivals).await;
    assert_eq!(parts(&first), vec!["### Session update\n\n**user**:\ngo\n"]);
    // Two turns queue while the first review runs: a tool call, then the final answer.
    t.push(read_call("c1", "a.rs"));
    t.push(read_result("c1", "x"));
    h.turn_end(&t).await.unwrap();
    t.push(answer("Done."));
    h.turn_end(&t).await.unwrap();
    assert_eq!(h.status().await.unwrap().agent.backlog, 3);
    gate.add_permits(2);
    let second = next_request(&mut arrivals).await;
    let got = parts(&second);
    assert_eq!(
        got,
        vec![
            "### Session update\n\n**agent**:\n// Read it\n→ read(a.rs) ⇒ ok · 1 line\nTool result:\n```text\nx\n```\n".to_string(),
            "Done.\n".into(),
        ],
        "one heading, one label, no footer: the batch's last turn is final"
    );
}

#[actix::test]
async fn expanded_p1_the_hosts_will_continue_decides_the_footer() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), expanded);
    let t = Transcript::from_messages([read_call("c1", "a.rs"), read_result("c1", "x")]);
    // A tool-calling turn the host says is final (a deadline stopped the run).
    let final_turn = TurnEndOptions {
        will_continue: Some(false),
    };
    h.turn_end_with(&t, final_turn).await.unwrap();
    t.push(answer("Retrying."));
    // A text turn the host says goes on (an internal retry).
    let goes_on = TurnEndOptions {
        will_continue: Some(true),
    };
    h.turn_end_with(&t, goes_on).await.unwrap();
    // Without a word from the host, a tool-calling turn is in progress.
    t.push(read_call("c2", "b.rs"));
    t.push(read_result("c2", "y"));
    h.turn_end(&t).await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let last_part = |r: &ModelRequest| parts(r).last().cloned().unwrap_or_default();
    assert!(!last_part(&requests[0]).ends_with(FOOTER));
    assert!(last_part(&requests[1]).ends_with(FOOTER));
    assert!(last_part(&requests[2]).ends_with(FOOTER));
}
