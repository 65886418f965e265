//! pi end to end, on both pi lines: an advisor that raises a new blocker at every review while
//! pi is idle. Its first blocker wakes pi once; the woken run is the advisor's own
//! continuation (CA17), so its turns are held for the next scheduled review instead of being
//! reviewed, and the loop ends there, before SP3's two-wakes-per-prompt limit is reached
//! (that limit is covered through `advisor serve` and the router's tests). Every advice
//! message names its model in `details.model` (SP8). The scripted servers and the RPC
//! driver are `pi_e2e`'s.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::pi_e2e::{
    advisor_entries, agent_starts, messages, runtime, session_file, text_sse, tool_sse,
    update_text, ModelServer, Reply, Setup, ENABLED_ASYNC,
};
use super::pi_e2e_lines::{advisor_command, pi_of, prompt_settled, Line};

/// The primary: every answer is a final one that leaves the loop's cue behind.
fn looping_primary(body: &Value) -> Reply {
    let rounds = messages(body)
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    Reply::now(text_sse(&format!("finished round {rounds}; LOOP-CUE")))
}

/// The advisor: a new blocker, in new words, about every update that holds the cue, 1.5 s
/// late so pi is idle by then; silence after the `advise` result.
fn looping_advisor(body: &Value) -> Reply {
    let msgs = messages(body);
    let last_is_user = msgs.last().is_some_and(|m| m["role"] == "user");
    if !last_is_user || !update_text(&msgs).contains("LOOP-CUE") {
        return Reply::now(text_sse(""));
    }
    let k = msgs.len();
    let note = format!("blocker {k}: step {k}a of the build {k}b is still broken {k}c");
    let args = json!({"severity": "blocker", "note": note});
    Reply::after(
        Duration::from_millis(1500),
        tool_sse("call_advise", "advise", args),
    )
}

fn idle_blocker_loop_stops_after_one_wake(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let rt = runtime();
    let primary = ModelServer::start(&rt, Arc::new(looping_primary));
    let advisor = ModelServer::start(&rt, Arc::new(looping_advisor));
    let setup = Setup::new(&primary, &advisor, ENABLED_ASYNC, "plain notes\n");
    let mut pi = setup.start(&tools, true, &[]);
    let mark = pi.len();
    prompt_settled(&mut pi, line, "Answer right away.");
    // The first blocker wakes pi; wait for it.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let file = session_file(&mut pi);
        if !advisor_entries(&file).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // A review takes 1.5 s: had the woken run been reviewed, more advice would follow.
    std::thread::sleep(Duration::from_secs(6));
    let entries = advisor_entries(&session_file(&mut pi));
    let channels: Vec<String> = entries
        .iter()
        .map(|e| {
            e["details"]["channel"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    // CA17 stops the loop before SP3's wake limit is reached: the woken run is the advisor's
    // own continuation, its turns are held, not reviewed, so no second blocker is raised.
    assert_eq!(channels, ["wake"], "{entries:?}");
    assert_eq!(
        agent_starts(&pi.events_since(mark)),
        2,
        "the prompt's run and one wake"
    );
    assert_eq!(primary.bodies().len(), 2, "no run after the woken one");
    // SP8: every advice message names its model.
    for entry in &entries {
        assert_eq!(
            entry["details"]["model"], "advisorprov/advisor-model",
            "{entry}"
        );
        assert!(entry["content"].to_string().contains("blocker"), "{entry}");
    }
    let status = advisor_command(&mut pi, "status");
    assert!(!status.contains("wakes refused"), "{status}");
    pi.quit();
}

#[test]
fn ca17_sp8_on_pi_16_an_idle_blocker_loop_stops_after_one_wake_its_continuation_unreviewed() {
    idle_blocker_loop_stops_after_one_wake(Line::Current);
}

#[test]
fn ca17_sp8_on_pi_073_an_idle_blocker_loop_stops_after_one_wake_its_continuation_unreviewed() {
    idle_blocker_loop_stops_after_one_wake(Line::Legacy);
}
