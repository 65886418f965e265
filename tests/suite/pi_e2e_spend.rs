//! pi end to end, on both pi lines: an advisor that raises a new blocker at every review while
//! pi is idle. Its first blocker wakes pi once; the woken run is the advisor's own
//! continuation (CA17), so its turns are held for the next scheduled review instead of being
//! reviewed, and the loop ends there, before SP3's two-wakes-per-prompt limit is reached.
//! Every advice message names its model in `details.model` (SP8). Where the limit does bind —
//! several roster advisors each raising a blocker about the user's run after pi went idle,
//! none of them about a continuation — the first two wake pi and the third is a card
//! (`wakesRefused`). The scripted servers and the RPC driver are `pi_e2e`'s.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::pi_e2e::{
    advisor_entries, agent_starts, messages, runtime, session_file, text_sse, tool_sse,
    update_text, ModelServer, Reply, Setup, ENABLED_ASYNC,
};
use super::pi_e2e_lines::{advisor_command, pi_of, prompt_settled, Line};
use super::pi_e2e_roster::system_text;

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

/// Three roster advisors, each told apart by the marker in its instructions.
const THREE_REVIEWERS: &str = "\
advisors:
  - name: Gate
    instructions: You are GATE-REVIEWER; weigh each deploy step.
  - name: Tests
    instructions: You are TEST-REVIEWER; weigh each change to the tests.
  - name: Secrets
    instructions: You are SECRET-REVIEWER; weigh each change for leaked secrets.
";

/// Each advisor's marker, how late its blocker comes, and the blocker: the first arrives
/// after pi went idle, each later one after the run the one before woke has ended.
const IDLE_BLOCKERS: [(&str, &str, u64, &str); 3] = [
    (
        "Gate",
        "GATE-REVIEWER",
        1500,
        "blocker: the deploy step runs before the database backup finished",
    ),
    (
        "Tests",
        "TEST-REVIEWER",
        5500,
        "blocker: the failing integration test was deleted instead of fixed",
    ),
    (
        "Secrets",
        "SECRET-REVIEWER",
        9500,
        "blocker: the API token is printed into the build log",
    ),
];

/// The roster's advisors: each raises its one blocker about an update holding the cue, late;
/// silence otherwise (and after the `advise` result).
fn idle_blockers(body: &Value) -> Reply {
    let msgs = messages(body);
    let last_is_user = msgs.last().is_some_and(|m| m["role"] == "user");
    let system = system_text(body);
    let who = IDLE_BLOCKERS.iter().find(|(_, m, _, _)| system.contains(m));
    match who {
        Some((_, _, ms, note)) if last_is_user && update_text(&msgs).contains("LOOP-CUE") => {
            let args = json!({"severity": "blocker", "note": note});
            Reply::after(
                Duration::from_millis(*ms),
                tool_sse("call_advise", "advise", args),
            )
        }
        _ => Reply::now(text_sse("")),
    }
}

fn three_idle_blockers_wake_twice_then_card(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let rt = runtime();
    let primary = ModelServer::start(&rt, Arc::new(looping_primary));
    let advisor = ModelServer::start(&rt, Arc::new(idle_blockers));
    let setup = Setup::new(&primary, &advisor, ENABLED_ASYNC, "plain notes\n");
    std::fs::write(setup.work.join("WATCHDOG.yml"), THREE_REVIEWERS).expect("WATCHDOG.yml");
    let mut pi = setup.start(&tools, true, &[]);
    let mark = pi.len();
    prompt_settled(&mut pi, line, "Answer right away.");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while advisor_entries(&session_file(&mut pi)).len() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "three advice messages: {:?}",
            advisor_entries(&session_file(&mut pi))
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Had a woken run been reviewed, more blockers would follow within 10 s; wait for the
    // last woken run to end.
    std::thread::sleep(Duration::from_secs(3));
    let entries = advisor_entries(&session_file(&mut pi));
    let delivered: Vec<(String, String)> = entries
        .iter()
        .map(|e| {
            let field = |k: &str| e["details"][k].as_str().unwrap_or_default().to_string();
            (field("advisor"), field("channel"))
        })
        .collect();
    let expected: Vec<(String, String)> =
        [("Gate", "wake"), ("Tests", "wake"), ("Secrets", "card")]
            .iter()
            .map(|(a, c)| (a.to_string(), c.to_string()))
            .collect();
    assert_eq!(delivered, expected, "{entries:?}");
    for (entry, (_, _, _, note)) in entries.iter().zip(IDLE_BLOCKERS) {
        assert!(entry["content"].to_string().contains(note), "{entry}");
    }
    assert_eq!(
        agent_starts(&pi.events_since(mark)),
        3,
        "the prompt's run and two wakes"
    );
    assert_eq!(primary.bodies().len(), 3, "the card started no run");
    // CA17: each advisor reviewed the user's run once; the woken runs were not reviewed.
    for (name, marker, _, _) in IDLE_BLOCKERS {
        let requests = advisor
            .bodies()
            .iter()
            .filter(|b| system_text(b).contains(marker))
            .count();
        assert_eq!(requests, 1, "{name}");
    }
    let status = advisor_command(&mut pi, "status");
    assert!(
        status.contains("wakes refused: 1 (past 2 per user prompt; sent as cards)"),
        "{status}"
    );
    pi.quit();
}

#[test]
fn sp3_ca17_on_pi_16_three_advisors_idle_blockers_wake_twice_then_the_third_is_a_card() {
    three_idle_blockers_wake_twice_then_card(Line::Current);
}

#[test]
fn sp3_ca17_on_pi_073_three_advisors_idle_blockers_wake_twice_then_the_third_is_a_card() {
    three_idle_blockers_wake_twice_then_card(Line::Legacy);
}
