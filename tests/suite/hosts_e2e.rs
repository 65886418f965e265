//! The hosts end to end: the real Claude Code 2.1.332 and Codex CLI 0.171.0 (pinned, installed
//! from npm by `scripts/hosts-e2e-setup.sh` into `target/hosts-e2e`) run headless against an
//! in-process scripted model server speaking each one's wire format, with command hooks
//! registered the way users register them. The tests assert what the model was sent and what
//! the run did (see `tests/support/hosts.rs` for the harness and why there is no network
//! namespace).
//!
//! Without `npm` the tests skip with a message, except under CI (`CI` set), where they fail.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::hosts::{
    conversation_text, script, write_hooks, Harness, Host, ScriptHook, Step,
};

/// How long one CLI run may take (they take about 3 s).
const RUN_LIMIT: Duration = Duration::from_secs(120);

const POST_CONTEXT: &str = "E2E-POST-CONTEXT: check the file you just wrote.";
const STOP_REASON: &str = "E2E-STOP-BLOCK: you did not verify a.txt; verify it.";

fn events_of(calls: &[Value]) -> Vec<String> {
    calls
        .iter()
        .map(|c| c["hook_event_name"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The harness itself, with a stand-in hook script: the hooks fire for every event, a
/// PostToolUse `additionalContext` reaches the next model request and no earlier one, a Stop
/// `decision: block` makes the agent continue exactly once with the reason in the next
/// request, and the second Stop says `stop_hook_active` and passes.
fn stand_in_hook_round_trip(host: Host) {
    let Some(h) = Harness::new() else { return };
    let hook = ScriptHook::new(&h.scratch);
    write_hooks(host, &h.scratch, &hook.command(), 30);
    hook.reply(
        "PostToolUse",
        &json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
            "additionalContext": POST_CONTEXT}}),
    );
    hook.reply("Stop", &json!({"decision": "block", "reason": STOP_REASON}));
    let primary = h.primary(
        host,
        script(
            host,
            vec![
                Step::shell("echo hi > a.txt"),
                Step::text("Done: wrote a.txt."),
                Step::text("Verified a.txt."),
            ],
        ),
    );
    let out = h.run(
        host,
        &primary,
        "Create a.txt containing hi, then stop.",
        &[],
        RUN_LIMIT,
    );
    out.assert_ok(host.name());
    eprintln!("{} stand-in hook run: {:?}", host.name(), out.wall);

    assert_eq!(
        std::fs::read_to_string(h.scratch.project.join("a.txt")).unwrap_or_default(),
        "hi\n",
        "the tool call ran in the project"
    );
    let bodies = primary.bodies();
    assert_eq!(bodies.len(), 3, "tool call, final text, one continuation");
    let texts: Vec<String> = bodies.iter().map(conversation_text).collect();
    assert!(!texts[0].contains("E2E-POST-CONTEXT"));
    assert!(
        texts[1].contains(POST_CONTEXT),
        "PostToolUse context reaches the request after the tool call: {}",
        texts[1]
    );
    assert!(!texts[1].contains("E2E-STOP-BLOCK"));
    assert!(
        texts[2].contains(STOP_REASON),
        "the Stop reason reaches the continuation: {}",
        texts[2]
    );

    let calls = hook.calls();
    let events = events_of(&calls);
    let mut expected = vec![
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "Stop",
    ];
    if host == Host::ClaudeCode {
        expected.push("SessionEnd");
    }
    assert_eq!(events, expected, "hook calls in order");
    let stops: Vec<&Value> = calls
        .iter()
        .filter(|c| c["hook_event_name"] == "Stop")
        .collect();
    assert_eq!(stops[0]["stop_hook_active"], json!(false));
    assert_eq!(stops[1]["stop_hook_active"], json!(true));
    let transcript = calls[0]["transcript_path"].as_str().unwrap_or_default();
    assert!(
        std::path::Path::new(transcript).is_file(),
        "the host wrote its transcript at transcript_path: {transcript}"
    );
    assert_eq!(
        h.trapped(),
        Vec::<String>::new(),
        "no traffic left loopback"
    );
}

#[test]
fn claude_code_stand_in_hook_context_and_stop_block_reach_the_model() {
    stand_in_hook_round_trip(Host::ClaudeCode);
}

#[test]
fn codex_stand_in_hook_context_and_stop_block_reach_the_model() {
    stand_in_hook_round_trip(Host::Codex);
}
