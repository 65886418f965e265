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
    advice_note, advisor_bin, conversation_text, script, write_hooks, AdvisorModel, Harness, Host,
    ScriptHook, Step,
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

// ---------------------------------------------------------------------------------------------
// The advisor attached for real: `advisor install`, `advisor hook`, its background process,
// and a scripted advisor model (Anthropic Messages) at `ADVISOR_BASE_URL` (H14)

/// A shell step that waits (at most 1 s) until the scripted advisor has answered with its
/// `advise` call, then half a second more for the advice to be queued: this step's
/// PostToolUse then meets it. (When the review of the cue's turn starts only once this step
/// is written, the wait runs out and a later PostToolUse meets the advice.)
fn wait_for_advice(h: &Harness) -> Step {
    let mark = h.marks().join("advised-0");
    Step::Shell(format!(
        "for i in $(seq 10); do [ -e {m} ] && break; sleep 0.1; done; sleep 0.5; echo waited",
        m = mark.display()
    ))
}

fn outcomes(h: &Harness, event: &str) -> Vec<String> {
    h.hook_events()
        .iter()
        .filter(|e| e["event"] == event)
        .map(|e| e["outcome"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The transcript the host wrote (from the first hook's input, recorded by the hook log's
/// session and the host's own places).
fn transcript_of(h: &Harness, host: Host) -> std::path::PathBuf {
    let root = match host {
        Host::ClaudeCode => h.scratch.home.join(".claude/projects"),
        Host::Codex => h.scratch.codex_home().join("sessions"),
    };
    let mut found = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                found.push(path);
            }
        }
    }
    assert_eq!(found.len(), 1, "one transcript: {found:?}");
    found.remove(0)
}

/// One run with the advisor attached for real: the servers, then the harness (dropped last).
struct AdvisedRun {
    advisor: AdvisorModel,
    /// Each model request's conversation as text.
    texts: Vec<String>,
    h: Harness,
}

/// Runs `host` once on a fixed prompt with the advisor attached (`config`: the `advisor:`
/// keys of its `config.yml`), the scripted advisor model (hung when `stall`) and the primary
/// playing `steps`; `None` when the CLIs cannot be installed here.
fn advised_run(
    host: Host,
    what: &str,
    config: &str,
    stall: bool,
    steps: impl FnOnce(&Harness) -> Vec<Step>,
) -> Option<AdvisedRun> {
    let mut h = Harness::new()?;
    let advisor = AdvisorModel::start(&h.rt, h.marks(), stall);
    h.attach_advisor(host, &advisor, config);
    let primary = h.primary(host, script(host, steps(&h)));
    let out = h.run(
        host,
        &primary,
        "Write the notes, then stop.",
        &[],
        RUN_LIMIT,
    );
    out.assert_ok(host.name());
    eprintln!("{} {what} run: {:?}", host.name(), out.wall);
    assert_eq!(
        h.trapped(),
        Vec::<String>::new(),
        "no traffic left loopback"
    );
    let texts = primary.bodies().iter().map(conversation_text).collect();
    Some(AdvisedRun { advisor, texts, h })
}

/// (a) A concern the advisor raises on a tool call (policy `interrupt`, so it steers while the
/// agent works rather than waiting for the end of the turn, P1) reaches the primary's next
/// request after the following tool call, as that PostToolUse's `additionalContext` (H6);
/// (f) `advisor replay` of the transcript the run wrote raises the same advice.
fn concern_reaches_the_next_request(host: Host) {
    let config = "advisor:\n  hookTimeoutMs: 2000\n  policy: interrupt\n";
    let Some(run) = advised_run(host, "concern", config, false, |h| {
        vec![
            Step::shell("echo CUE-CONCERN > notes.txt"),
            wait_for_advice(h),
            Step::shell("echo third > third.txt"),
            Step::shell("echo fourth > fourth.txt"),
            Step::text("Done: notes written."),
        ]
    }) else {
        return;
    };
    let (h, texts) = (&run.h, &run.texts);
    let note = advice_note("CUE-CONCERN");
    assert_eq!(
        texts.len(),
        5,
        "four tool calls and the final text, no continuation; hook log: {:?}",
        h.hook_events()
    );
    // The k-th PostToolUse answers before request k + 1; the wait step makes the first
    // PostToolUse to meet the advice the second (k = 1) on an idle machine, a later one on a
    // loaded machine.
    let posts = outcomes(h, "PostToolUse");
    let k = posts
        .iter()
        .position(|o| o == "context")
        .unwrap_or_else(|| panic!("a PostToolUse carried context: {:?}", h.hook_events()));
    assert!(
        k >= 1 && k + 1 < texts.len(),
        "PostToolUse outcomes: {posts:?}"
    );
    assert!(!texts[k].contains(&note), "not before it was delivered");
    assert!(
        texts[k + 1].contains(&note),
        "the concern reaches the request after that PostToolUse: {}\nhook log: {:?}\n\
         advisor requests: {:#?}",
        texts[k + 1],
        h.hook_events(),
        run.advisor
            .bodies()
            .iter()
            .map(|b| b["messages"].clone())
            .collect::<Vec<_>>(),
    );
    let replayed = replay_notes(h, host);
    assert_eq!(
        replayed,
        vec![("concern".to_string(), note)],
        "the replay raises what the live run raised"
    );
}

/// (f) `advisor replay --json` of the transcript `host` wrote in `h`, against a fresh scripted
/// advisor: the (severity, note) of each note it delivered.
fn replay_notes(h: &Harness, host: Host) -> Vec<(String, String)> {
    let replay_model = AdvisorModel::start(&h.rt, h.marks(), false);
    let replay = std::process::Command::new(advisor_bin())
        .arg("replay")
        .arg(transcript_of(h, host))
        .args([
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--json",
            "--no-watchdog",
        ])
        .args(["--base-url", &replay_model.base_url()])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &h.scratch.home)
        .env("ADVISOR_CONFIG_DIR", &h.scratch.config)
        .env("ANTHROPIC_API_KEY", "advisor-secret")
        .current_dir(&h.scratch.project)
        .output()
        .expect("run advisor replay");
    let stdout = String::from_utf8_lossy(&replay.stdout);
    assert!(
        replay.status.success(),
        "replay: {stdout}\n{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["note"].is_string())
        .map(|v| {
            let severity = v["severity"].as_str().unwrap_or("").to_string();
            (severity, v["note"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

#[test]
fn claude_code_h6_h14_a_concern_after_a_tool_call_reaches_the_next_request_and_replay_agrees() {
    concern_reaches_the_next_request(Host::ClaudeCode);
}

#[test]
fn codex_h6_h14_a_concern_after_a_tool_call_reaches_the_next_request_and_replay_agrees() {
    concern_reaches_the_next_request(Host::Codex);
}

/// (b) A blocker — or, under the default policy (`defer`), a concern — on the agent's final
/// answer, waited for at Stop (`syncBacklog: 1`, H12), blocks the stop once: the agent
/// continues with the advice as its next input, and the next Stop (`stop_hook_active`)
/// passes (H7).
fn advice_at_the_end_continues_once(host: Host, cue: &str) {
    let config = "advisor:\n  hookTimeoutMs: 6000\n  syncBacklog: 1\n";
    let Some(run) = advised_run(host, cue, config, false, |_| {
        vec![
            Step::shell("echo draft > notes.txt"),
            Step::text(&format!("Done: {cue} left as it is.")),
            Step::text("Fixed what the advisor raised."),
        ]
    }) else {
        return;
    };
    let (h, texts) = (&run.h, &run.texts);
    let note = advice_note(cue);
    assert_eq!(
        texts.len(),
        3,
        "one continuation, then the stop passes; hook log: {:?}",
        h.hook_events()
    );
    assert!(!texts[1].contains(&note));
    assert!(
        texts[2].contains(&note),
        "the advice is the continuation's input: {}",
        texts[2]
    );
    let stops = outcomes(h, "Stop");
    assert_eq!(stops.len(), 2, "two stops: {stops:?}");
    assert_eq!(stops[0], "block");
    assert_ne!(stops[1], "block", "no second block for the same batch");
}

#[test]
fn claude_code_h7_h12_a_blocker_at_the_end_continues_the_agent_exactly_once() {
    advice_at_the_end_continues_once(Host::ClaudeCode, "CUE-BLOCKER");
}

#[test]
fn codex_h7_h12_a_blocker_at_the_end_continues_the_agent_exactly_once() {
    advice_at_the_end_continues_once(Host::Codex, "CUE-BLOCKER");
}

#[test]
fn claude_code_h7_under_defer_a_concern_on_the_final_answer_continues_the_agent_once() {
    advice_at_the_end_continues_once(Host::ClaudeCode, "CUE-CONCERN");
}

#[test]
fn codex_h7_under_defer_a_concern_on_the_final_answer_continues_the_agent_once() {
    advice_at_the_end_continues_once(Host::Codex, "CUE-CONCERN");
}

/// (c) An advisor model that never answers (a hung provider) delays no hook past its bound
/// (H9) and the run completes as without the advisor.
fn hung_advisor_never_delays_a_hook(host: Host) {
    let config = "advisor:\n  hookTimeoutMs: 1000\n  syncBacklog: 1\n";
    let Some(run) = advised_run(host, "hung-advisor", config, true, |_| {
        vec![
            Step::shell("echo CUE-CONCERN > notes.txt"),
            Step::shell("echo second > more.txt"),
            Step::text("Done."),
        ]
    }) else {
        return;
    };
    assert_eq!(run.texts.len(), 3, "the run went on as scripted");
    assert!(
        !run.advisor.bodies().is_empty(),
        "a review was started (and hung)"
    );
    let events = run.h.hook_events();
    assert!(events.len() >= 5, "every hook logged: {events:?}");
    for e in &events {
        let ms = e["ms"].as_u64().unwrap_or(u64::MAX);
        assert!(
            ms <= 1500,
            "a hook answered within its 1 s bound (+0.5 s): {e}"
        );
    }
}

#[test]
fn claude_code_h9_a_hung_advisor_model_never_delays_a_hook_past_its_bound() {
    hung_advisor_never_delays_a_hook(Host::ClaudeCode);
}

#[test]
fn codex_h9_a_hung_advisor_model_never_delays_a_hook_past_its_bound() {
    hung_advisor_never_delays_a_hook(Host::Codex);
}

/// (d) A resumed session starts the advisor over (H11, R1): `claude -p --resume ID` and
/// `codex exec resume ID` run SessionStart with source `resume`, a session switch, so the
/// next review is sent the whole transcript again — the first run's command with the
/// second's — on a fresh advisor context.
fn resumed_session_is_reviewed_whole(host: Host) {
    let Some(mut h) = Harness::new() else { return };
    let advisor = AdvisorModel::start(&h.rt, h.marks(), false);
    h.attach_advisor(host, &advisor, "advisor:\n  hookTimeoutMs: 2000\n");
    let steps = vec![
        Step::shell("echo FIRST-RUN > a.txt"),
        Step::text("Done."),
        Step::shell("echo SECOND-RUN > b.txt"),
        Step::text("Done again."),
    ];
    let primary = h.primary(host, script(host, steps));
    let first = h.run(host, &primary, "Write a.txt, then stop.", &[], RUN_LIMIT);
    first.assert_ok("first run");
    let session = h.hook_events()[0]["session"]
        .as_str()
        .expect("the hook log names the session")
        .to_string();
    // The first run's reviews are in before the second starts.
    let reviewed_first = advisor.wait_for(&h.rt, 0, Duration::from_secs(20), |b| {
        crate::support::strings_in(&b["messages"]).contains("FIRST-RUN")
    });
    assert!(reviewed_first.is_some(), "the first run was reviewed");
    let before = advisor.bodies().len();
    let resume: [&str; 2] = match host {
        Host::ClaudeCode => ["--resume", &session],
        Host::Codex => ["resume", &session],
    };
    let second = h.run(
        host,
        &primary,
        "Now write b.txt, then stop.",
        &resume,
        RUN_LIMIT,
    );
    second.assert_ok("resumed run");
    eprintln!(
        "{} resume runs: {:?} + {:?}",
        host.name(),
        first.wall,
        second.wall
    );
    let starts: Vec<String> = h
        .hook_events()
        .iter()
        .filter(|e| e["event"] == "SessionStart")
        .map(|e| e["session"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        starts,
        vec![session.clone(), session],
        "the same session, resumed"
    );
    let review = advisor
        .wait_for(&h.rt, before, Duration::from_secs(20), |b| {
            crate::support::strings_in(&b["messages"]).contains("SECOND-RUN")
        })
        .expect("the resumed run was reviewed");
    let messages = review["messages"].as_array().cloned().unwrap_or_default();
    assert!(
        messages.iter().all(|m| m["role"] == "user"),
        "a fresh advisor context after the switch: {messages:#?}"
    );
    let text = crate::support::strings_in(&review["messages"]);
    assert!(
        text.contains("FIRST-RUN"),
        "the whole transcript is sent again after the switch: {text}"
    );
}

#[test]
fn claude_code_h11_r1_a_resumed_session_is_reviewed_from_the_whole_transcript() {
    resumed_session_is_reviewed_whole(Host::ClaudeCode);
}

#[test]
fn codex_h11_r1_a_resumed_session_is_reviewed_from_the_whole_transcript() {
    resumed_session_is_reviewed_whole(Host::Codex);
}
