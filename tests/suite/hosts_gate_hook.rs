//! The runtime's safety net for a gate without its hook (H33), at the level of the hook's
//! requests: a session whose action gate is on (its settings, or a roster entry's own gate,
//! GT10) that sees a tool call end with none announced before it tells its user once that
//! the PreToolUse hook is missing, with the command that adds it.

use std::sync::Arc;

use advisor::hosts::daemon::Daemon;
use serde_json::{json, Value};

use super::hosts_hook::{model, send, Places};

/// The notice, as the user reads it.
const NOTICE: &str = "advisor: the action gate is on but cannot act: the PreToolUse hook is \
                      not installed; run `advisor install claude-code` again to add it";

fn post(places: &Places, id: &str) -> advisor::hosts::payload::HookPayload {
    places.payload(
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": id,
            "tool_response": {"stdout": "a.txt"}}),
    )
}

fn pre(places: &Places, id: &str) -> advisor::hosts::payload::HookPayload {
    places.payload(
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": id}),
    )
}

/// The lines the user is shown at the next prompt.
async fn shown_at_prompt(daemon: &Arc<Daemon>, places: &Places) -> String {
    let (out, _) = send(
        daemon,
        places.payload("UserPromptSubmit", json!({"prompt": "go on"})),
    )
    .await;
    out.as_ref()
        .and_then(|o| o["systemMessage"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// A daemon for `places` with a model that is never asked (no transcript, no risky call).
async fn daemon(places: &Places) -> Arc<Daemon> {
    let (_server, model) = model(Vec::new()).await;
    places.daemon(Some(model))
}

/// A session that starts, gets a prompt, then `calls` (each a PostToolUse, with its
/// PreToolUse first when `announced`), then a prompt: what that prompt shows the user.
async fn run(places: &Places, calls: usize, announced: bool) -> (Arc<Daemon>, String) {
    let daemon = daemon(places).await;
    send(
        &daemon,
        places.payload("SessionStart", json!({"source": "startup"})),
    )
    .await;
    shown_at_prompt(&daemon, places).await;
    for i in 0..calls {
        let id = format!("t{i}");
        if announced {
            send(&daemon, pre(places, &id)).await;
        }
        let (out, _) = send(&daemon, post(places, &id)).await;
        assert_eq!(out, None::<Value>, "PostToolUse carries no user line");
    }
    let shown = shown_at_prompt(&daemon, places).await;
    (daemon, shown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h33_the_gate_on_and_a_tool_call_unannounced_tells_the_user_once() {
    let places = Places::new("advisor:\n  gate: risky\n");
    let (daemon, shown) = run(&places, 2, false).await;
    assert_eq!(shown.matches(NOTICE).count(), 1, "{shown:?}");
    send(&daemon, post(&places, "t9")).await;
    let later = shown_at_prompt(&daemon, &places).await;
    assert!(!later.contains("PreToolUse"), "told once: {later:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h33_gt10_a_roster_entry_s_own_gate_counts() {
    let places = Places::new("advisor:\n  gate: off\n");
    std::fs::write(
        places.home.join("proj/WATCHDOG.yml"),
        "advisors:\n  - name: Security\n    gate: all\n",
    )
    .unwrap();
    let (_daemon, shown) = run(&places, 1, false).await;
    assert!(shown.contains(NOTICE), "{shown:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h33_announced_calls_or_the_gate_off_tell_nothing() {
    let places = Places::new("advisor:\n  gate: risky\n");
    let (_daemon, shown) = run(&places, 2, true).await;
    assert!(!shown.contains("PreToolUse"), "{shown:?}");
    let places = Places::new("advisor:\n  gate: off\n");
    let (_daemon, shown) = run(&places, 2, false).await;
    assert!(!shown.contains("PreToolUse"), "{shown:?}");
}
