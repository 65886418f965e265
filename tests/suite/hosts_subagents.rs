//! A sub-agent's own session in the background process (H30), at the level of the hook's
//! requests: advice on a sub-agent's last turn continues the sub-agent once at its
//! `SubagentStop` as a Stop block does for the main agent (H7), and a main session's
//! `SessionEnd` ends its sub-agents' sessions with it.

use std::path::PathBuf;

use advisor::hosts::payload::{HookHost, HookPayload};
use advisor::hosts::protocol::Outcome;
use advisor::providers::testing::ScriptedResponse;
use serde_json::{json, Value};

use super::hosts_hook::{
    answer, assert_stop_passes, model, quiet_reviews, review, send, tool_call, tool_result, user,
    Places, SESSION,
};
use crate::support::wire::Dialect;

const AGENT: &str = "a59a26be";

/// The sub-agent's transcript where Claude Code writes it: `<session>/subagents/agent-<id>.jsonl`
/// beside the main transcript.
fn agent_transcript(places: &Places, agent: &str) -> PathBuf {
    places
        .home
        .join(SESSION)
        .join("subagents")
        .join(format!("agent-{agent}.jsonl"))
}

/// A hook input of the sub-agent `agent` of session `session`.
fn agent_payload(
    places: &Places,
    session: &str,
    agent: &str,
    event: &str,
    extra: Value,
) -> HookPayload {
    let mut extra = extra;
    extra["agent_id"] = json!(agent);
    let mut payload = places.payload(event, extra);
    payload.session_id = session.to_string();
    payload
}

fn agent_session(session: &str, agent: &str) -> String {
    format!("{session}.agent-{agent}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h30_h7_a_blocker_on_a_subagents_last_turn_continues_it_once_at_subagent_stop() {
    let places = Places::new("advisor:\n  enabled: true\n  subagents: true\n");
    let mut responses = review("The sub-agent never ran the tests it cites.", "blocker");
    responses.push(ScriptedResponse::sse(&Dialect::OpenAi.answer("")));
    let (_server, model) = model(responses).await;
    let daemon = places.daemon(Some(model));
    let file = agent_transcript(&places, AGENT);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let work = [
        user("Find where the parser drops the last token"),
        tool_call("t1", "grep -n token parser.rs"),
        tool_result("t1", "12: tokens.pop();"),
    ];
    places.write_transcript_at(&file, &work);
    let tool = json!({"tool_name": "Bash", "tool_use_id": "t1"});
    send(
        &daemon,
        agent_payload(&places, SESSION, AGENT, "PostToolUse", tool),
    )
    .await;
    let own = agent_session(SESSION, AGENT);
    assert!(daemon.drain(HookHost::ClaudeCode, &own).await);
    let mut done = work.to_vec();
    done.push(answer("Line 12 drops it; the tests pass."));
    places.write_transcript_at(&file, &done);
    let stop = |active: bool| {
        json!({"stop_hook_active": active, "agent_transcript_path": file,
            "last_assistant_message": "Line 12 drops it; the tests pass."})
    };
    let (out, outcome) = send(
        &daemon,
        agent_payload(&places, SESSION, AGENT, "SubagentStop", stop(false)),
    )
    .await;
    assert_eq!(outcome, Outcome::Block, "{out:?}");
    let out = out.unwrap();
    assert_eq!(out["decision"], "block");
    let reason = out["reason"].as_str().unwrap();
    assert!(reason.contains("never ran the tests"), "{reason}");
    // The main agent's session saw none of it: it was never opened.
    assert!(!daemon.drain(HookHost::ClaudeCode, SESSION).await);
    // The sub-agent continues for the block and stops again: this SubagentStop passes.
    done.push(user("SubagentStop hook feedback: the tests were never run"));
    done.push(answer("I ran them: all pass."));
    places.write_transcript_at(&file, &done);
    let (out, outcome) = send(
        &daemon,
        agent_payload(&places, SESSION, AGENT, "SubagentStop", stop(true)),
    )
    .await;
    assert_stop_passes(&out, outcome);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h30_a_main_sessions_end_ends_its_subagents_sessions_and_no_others() {
    let places = Places::new("advisor:\n  enabled: true\n  subagents: true\n");
    let (_server, model) = model(quiet_reviews(8)).await;
    let daemon = places.daemon(Some(model));
    let other = "0d3c3f0e-7a57-4a51-9a0b-5d1e2b3c4d5e";
    let file = agent_transcript(&places, AGENT);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    places.write_transcript_at(&file, &[user("Look around")]);
    send(
        &daemon,
        places.payload("UserPromptSubmit", json!({"prompt": "Delegate the search"})),
    )
    .await;
    let tool = json!({"tool_name": "Bash", "tool_use_id": "t1"});
    send(
        &daemon,
        agent_payload(&places, SESSION, AGENT, "PostToolUse", tool.clone()),
    )
    .await;
    send(
        &daemon,
        agent_payload(&places, other, "b1", "PostToolUse", tool),
    )
    .await;
    assert_eq!(
        daemon.sessions(),
        3,
        "the main session and two sub-agents' are open"
    );
    send(
        &daemon,
        places.payload("SessionEnd", json!({"reason": "prompt_input_exit"})),
    )
    .await;
    // A drain of an ended session finds no session (or its queue closed under it).
    assert!(!daemon.drain(HookHost::ClaudeCode, SESSION).await);
    assert!(
        !daemon
            .drain(HookHost::ClaudeCode, &agent_session(SESSION, AGENT))
            .await,
        "the sub-agent's session ended with its main session"
    );
    assert!(
        daemon
            .drain(HookHost::ClaudeCode, &agent_session(other, "b1"))
            .await,
        "another session's sub-agent stays open"
    );
}
