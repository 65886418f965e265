//! The hosts end to end, continued: sub-agents and compaction on the real Claude Code 2.1.332
//! and Codex CLI 0.171.0 (the harness: `tests/support/hosts.rs`), with the advisor attached
//! for real (`advisor install`, `advisor hook`, its background process) and a scripted
//! advisor model.
//!
//! - Sub-agents (W7, L6–L8, H30): Claude Code's `Agent` tool runs a sub-agent whose lines go to
//!   its own `<session>/subagents/agent-<id>.jsonl`; Codex runs one through
//!   `collaboration.spawn_agent` once the `multi_agent_v2` feature is on (it is off by
//!   default in 0.171.0, and without it no spawn tool is offered), in a rollout of its own.
//!   With `advisor.subagents` off (the default) no review holds the sub-agent's tool calls;
//!   with it on the sub-agent's session is reviewed by an advisor of its own.
//! - Compaction (R1, H11, L7, L8): both CLIs compact on their own in headless runs when the
//!   model reports a context past their limit (Claude Code: `CLAUDE_CODE_AUTO_COMPACT_WINDOW`;
//!   Codex: `model_auto_compact_token_limit`), ask the model for the summary, and run
//!   `SessionStart` with source `compact`. The advisor resets: the next review is a fresh
//!   context holding the summary and what followed, and advice from before is neither lost
//!   nor raised again.
//!
//! Without `npm` the tests skip with a message, except under CI (`CI` set), where they fail.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::hosts::{
    advice_note, conversation_text, outputs_so_far, script, write_hooks, AdvisorModel, Harness,
    Host, Picker, PrimaryModel, ScriptHook, Step,
};
use crate::support::strings_in;

/// How long one CLI run may take (they take 5–15 s).
const RUN_LIMIT: Duration = Duration::from_secs(180);
/// How long a review may take to reach the scripted advisor after the run.
const REVIEW_WAIT: Duration = Duration::from_secs(30);

/// The sub-agent's task: the scripted model knows a sub-agent's conversation by it.
const SUB_TASK: &str = "SUBAGENT-TASK: write sub.txt with echo.";
const SUB_COMMAND: &str = "echo SUBAGENT-RAN > sub.txt";
const MAIN_COMMAND: &str = "echo MAIN-RAN > main.txt";

fn pick_by(steps: Vec<Step>, n: usize) -> Step {
    steps
        .get(n)
        .or(steps.last())
        .cloned()
        .unwrap_or_else(|| Step::text("Done."))
}

/// Whether a Codex request is a sub-agent's: its input holds a message from the root agent
/// to a task below it (`agent_message` with recipient `/root/…`).
fn codex_subagent_request(body: &Value) -> bool {
    body["input"].as_array().is_some_and(|items| {
        items.iter().any(|i| {
            i["type"] == "agent_message"
                && i["recipient"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("/root/"))
        })
    })
}

/// The primary model for the sub-agent scenario: the main conversation delegates
/// [`SUB_TASK`] (Claude Code `Agent` in the foreground; Codex `spawn_agent` then
/// `wait_agent`), then runs [`MAIN_COMMAND`] and ends; the sub-agent's own conversation runs
/// [`SUB_COMMAND`] and reports.
fn subagent_picker(host: Host) -> Arc<Picker> {
    subagent_picker_with(
        host,
        vec![
            Step::shell(SUB_COMMAND),
            Step::text("Subagent done: wrote sub.txt."),
        ],
    )
}

/// [`subagent_picker`] whose sub-agent plays `sub_steps`.
fn subagent_picker_with(host: Host, sub_steps: Vec<Step>) -> Arc<Picker> {
    Arc::new(move |body: &Value| {
        let n = outputs_so_far(host, body);
        let sub = match host {
            Host::ClaudeCode => body["messages"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m["role"] == "user"))
                .is_some_and(|first| strings_in(first).contains(SUB_TASK)),
            Host::Codex => codex_subagent_request(body),
        };
        if sub {
            return pick_by(sub_steps.clone(), n);
        }
        let mut steps = match host {
            Host::ClaudeCode => vec![Step::Tool {
                name: "Agent".into(),
                input: json!({"description": "write the sub file", "prompt": SUB_TASK,
                    "subagent_type": "general-purpose", "run_in_background": false}),
            }],
            Host::Codex => vec![
                Step::Tool {
                    name: "collaboration.spawn_agent".into(),
                    input: json!({"task_name": "sub_task", "message": SUB_TASK,
                        "fork_turns": "none"}),
                },
                Step::Tool {
                    name: "collaboration.wait_agent".into(),
                    input: json!({"timeout_ms": 30000}),
                },
            ],
        };
        steps.extend([Step::shell(MAIN_COMMAND), Step::text("Main done.")]);
        pick_by(steps, n)
    })
}

/// One sub-agent run with `advisor.subagents` set to `subagents`; returns the harness and the
/// scripted advisor after the main session's last review came in, or `None` when the CLIs
/// cannot be installed here.
fn subagent_run(host: Host, subagents: bool) -> Option<(Harness, AdvisorModel)> {
    let mut h = Harness::new()?;
    let advisor = AdvisorModel::start(&h.rt, h.marks(), false);
    let config = format!("advisor:\n  hookTimeoutMs: 2000\n  subagents: {subagents}\n");
    h.attach_advisor(host, &advisor, &config);
    let primary = h.primary(host, subagent_picker(host));
    // Codex 0.171.0 offers a spawn tool only with this feature on.
    let extra: &[&str] = match host {
        Host::ClaudeCode => &[],
        Host::Codex => &["--enable", "multi_agent_v2"],
    };
    let out = h.run(
        host,
        &primary,
        "Delegate the file, then stop.",
        extra,
        RUN_LIMIT,
    );
    out.assert_ok(host.name());
    eprintln!(
        "{} sub-agent run (subagents: {subagents}): {:?}",
        host.name(),
        out.wall
    );
    assert_eq!(
        h.trapped(),
        Vec::<String>::new(),
        "no traffic left loopback"
    );
    for (file, text) in [("sub.txt", "SUBAGENT-RAN\n"), ("main.txt", "MAIN-RAN\n")] {
        assert_eq!(
            std::fs::read_to_string(h.scratch.project.join(file)).unwrap_or_default(),
            text,
            "{file}: the sub-agent and then the main agent ran their commands"
        );
    }
    let sub_requests = primary
        .bodies()
        .iter()
        .filter(|b| {
            conversation_text(b).contains(SUB_TASK) && !conversation_text(b).contains("MAIN-RAN")
        })
        .count();
    assert!(sub_requests >= 2, "the sub-agent had its own conversation");
    // The main session's final turn is reviewed once the agent stopped (H12).
    let main_reviewed = advisor.wait_for(&h.rt, 0, REVIEW_WAIT, |b| {
        strings_in(&b["messages"]).contains("Main done.")
    });
    assert!(
        main_reviewed.is_some(),
        "the main session was reviewed to its end; hook log: {:?}",
        h.hook_events()
    );
    Some((h, advisor))
}

fn reviews_holding(advisor: &AdvisorModel, text: &str) -> Vec<Value> {
    advisor
        .bodies()
        .into_iter()
        .filter(|b| strings_in(&b["messages"]).contains(text))
        .collect()
}

/// W7 off (the default): the main session is reviewed with the delegation as the main agent
/// saw it — the `Agent`/`spawn_agent` call and the sub-agent's report — and no review holds
/// the sub-agent's own tool call.
fn subagent_left_out_by_default(host: Host) {
    let Some((h, advisor)) = subagent_run(host, false) else {
        return;
    };
    let main = reviews_holding(&advisor, "MAIN-RAN");
    assert!(!main.is_empty(), "the main agent's command was reviewed");
    assert!(
        main.iter()
            .any(|b| strings_in(&b["messages"]).contains(SUB_TASK)),
        "the delegation is part of the main session's review"
    );
    assert_eq!(
        reviews_holding(&advisor, "SUBAGENT-RAN").len(),
        0,
        "no review holds the sub-agent's tool call; hook log: {:?}",
        h.hook_events()
    );
}

/// W7 on: the sub-agent's session gets an advisor of its own (H30): a review holds the
/// sub-agent's tool call and none of the main agent's, and the main session's reviews hold
/// none of the sub-agent's lines.
fn subagent_reviewed_when_on(host: Host) {
    let Some((h, advisor)) = subagent_run(host, true) else {
        return;
    };
    let sub = advisor.wait_for(&h.rt, 0, REVIEW_WAIT, |b| {
        strings_in(&b["messages"]).contains("SUBAGENT-RAN")
    });
    let sub = sub.unwrap_or_else(|| {
        panic!(
            "the sub-agent was reviewed; hook log: {:?}\nadvisor requests: {:#?}",
            h.hook_events(),
            advisor
                .bodies()
                .iter()
                .map(|b| strings_in(&b["messages"]))
                .collect::<Vec<_>>()
        )
    });
    assert!(
        !strings_in(&sub["messages"]).contains("MAIN-RAN"),
        "the sub-agent's review is its own session's"
    );
    for main in reviews_holding(&advisor, "MAIN-RAN") {
        assert!(
            !strings_in(&main["messages"]).contains("SUBAGENT-RAN"),
            "the main session's review holds none of the sub-agent's lines"
        );
    }
}

/// H30, H7: a blocker on a sub-agent's last turn (waited for at `SubagentStop`,
/// `syncBacklog: 1`, H12) continues the sub-agent once: Claude Code honours the block at
/// `SubagentStop`, the sub-agent's next request holds the advice, and the second
/// `SubagentStop` (`stop_hook_active`) passes; the main agent then finishes.
#[test]
fn claude_code_h30_h7_a_blocker_on_a_subagents_last_turn_continues_it_once() {
    let host = Host::ClaudeCode;
    let Some(mut h) = Harness::new() else {
        return;
    };
    let advisor = AdvisorModel::start(&h.rt, h.marks(), false);
    let config = "advisor:\n  hookTimeoutMs: 6000\n  syncBacklog: 1\n  subagents: true\n";
    h.attach_advisor(host, &advisor, config);
    let sub_steps = vec![
        Step::shell(SUB_COMMAND),
        Step::text("Subagent done: CUE-BLOCKER left as it is."),
        Step::text("Subagent fixed what the advisor raised."),
    ];
    let primary = h.primary(host, subagent_picker_with(host, sub_steps));
    let out = h.run(
        host,
        &primary,
        "Delegate the file, then stop.",
        &[],
        RUN_LIMIT,
    );
    out.assert_ok(host.name());
    assert_eq!(
        h.trapped(),
        Vec::<String>::new(),
        "no traffic left loopback"
    );
    let note = advice_note("CUE-BLOCKER");
    let texts: Vec<String> = primary.bodies().iter().map(conversation_text).collect();
    let continued = texts
        .iter()
        .filter(|t| t.contains(SUB_TASK) && t.contains(&note))
        .count();
    assert!(
        continued >= 1,
        "the continued sub-agent's request holds the advice; hook log: {:?}",
        h.hook_events()
    );
    let stops: Vec<String> = h
        .hook_events()
        .iter()
        .filter(|e| e["event"] == "SubagentStop")
        .map(|e| e["outcome"].as_str().unwrap_or("?").to_string())
        .collect();
    assert_eq!(stops.len(), 2, "the sub-agent stopped twice: {stops:?}");
    assert_eq!(stops[0], "block");
    assert_ne!(stops[1], "block", "no second block for the same batch");
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Subagent fixed what the advisor raised.")),
        "the main agent got the continued sub-agent's report"
    );
}

#[test]
fn claude_code_w7_l7_h30_a_subagents_tool_calls_are_not_reviewed_by_default() {
    subagent_left_out_by_default(Host::ClaudeCode);
}

#[test]
fn codex_w7_l8_h30_a_subagents_tool_calls_are_not_reviewed_by_default() {
    subagent_left_out_by_default(Host::Codex);
}

#[test]
fn claude_code_w7_h30_with_subagents_on_the_subagent_is_reviewed_in_its_own_session() {
    subagent_reviewed_when_on(Host::ClaudeCode);
}

#[test]
fn codex_w7_h30_with_subagents_on_the_subagent_is_reviewed_in_its_own_session() {
    subagent_reviewed_when_on(Host::Codex);
}

// ---------------------------------------------------------------------------------------------
// Compaction

/// The summary the scripted model writes when asked to compact.
const SUMMARY: &str = "COMPACT-SUMMARY: the agent wrote notes and four files.";
/// Tool steps before the compaction: Claude Code compacts only a conversation with several
/// rounds (fewer fail as `too_few_groups`).
const ROUNDS: usize = 5;

/// Whether `body` asks for the compaction summary: Claude Code's compaction request tells
/// the model to answer with text only; Codex's is a context checkpoint.
fn summary_request(body: &Value) -> bool {
    let text = conversation_text(body);
    text.contains("Respond with TEXT ONLY") || text.contains("CONTEXT CHECKPOINT COMPACTION")
}

/// The primary model for the compaction scenario: a concern cue, a wait for the advice,
/// more commands; the last round before the compaction reports a full context; the summary
/// request gets [`SUMMARY`]; after it, one more command and the end.
fn compaction_picker(host: Host, advised: std::path::PathBuf) -> Arc<Picker> {
    Arc::new(move |body: &Value| {
        if summary_request(body) {
            return Step::text(&format!("<summary>{SUMMARY}</summary>"));
        }
        let text = conversation_text(body);
        if text.contains("COMPACT-SUMMARY") {
            return if text.contains("POST-COMPACT") {
                Step::text("Done after the compaction.")
            } else {
                Step::shell("echo POST-COMPACT > after.txt")
            };
        }
        let wait = format!(
            "for i in $(seq 30); do [ -e {m} ] && break; sleep 0.1; done; sleep 0.5; echo waited",
            m = advised.display()
        );
        let mut steps = vec![
            Step::shell("echo CUE-CONCERN > notes.txt"),
            Step::Shell(wait),
        ];
        steps.extend((2..ROUNDS).map(|i| Step::Shell(format!("echo PRE-COMPACT-{i} > f{i}.txt"))));
        steps.push(Step::shell("echo POST-COMPACT > after.txt"));
        steps.push(Step::text("Done after the compaction."));
        pick_by(steps, outputs_so_far(host, body))
    })
}

/// The usage each answer reports: a full context on the last round before the compaction.
fn compaction_usage(host: Host) -> Arc<dyn Fn(&Value) -> u64 + Send + Sync> {
    Arc::new(move |body: &Value| {
        let full = !summary_request(body)
            && !conversation_text(body).contains("COMPACT-SUMMARY")
            && outputs_so_far(host, body) == ROUNDS - 1;
        if full {
            150_000
        } else {
            100
        }
    })
}

/// R1 on the real CLIs: an automatic compaction mid-run resets the advisor. The hook log shows
/// a second `SessionStart` (source `compact`) in the run; the next review is a fresh advisor
/// context holding the summary and the command after it, none of the compacted commands
/// verbatim; the concern raised before the compaction was delivered once (before it), and is
/// neither sent for review nor delivered again.
fn compaction_resets_the_advisor(host: Host) {
    let Some(mut h) = Harness::new() else { return };
    let advisor = AdvisorModel::start(&h.rt, h.marks(), false);
    let config = "advisor:\n  hookTimeoutMs: 2000\n  policy: interrupt\n";
    h.attach_advisor(host, &advisor, config);
    match host {
        Host::ClaudeCode => h
            .env
            .push(("CLAUDE_CODE_AUTO_COMPACT_WINDOW".into(), "20000".into())),
        Host::Codex => h.codex_toml = "model_auto_compact_token_limit = 10000".into(),
    }
    let advised = h.marks().join("advised-0");
    let primary = PrimaryModel::start_sized(
        &h.rt,
        host,
        compaction_picker(host, advised),
        compaction_usage(host),
    );
    let out = h.run(
        host,
        &primary,
        "Write the notes and files, then stop.",
        &[],
        RUN_LIMIT,
    );
    out.assert_ok(host.name());
    eprintln!("{} compaction run: {:?}", host.name(), out.wall);
    assert_eq!(
        h.trapped(),
        Vec::<String>::new(),
        "no traffic left loopback"
    );
    let bodies = primary.bodies();
    assert!(
        bodies.iter().any(summary_request),
        "the CLI compacted (asked for a summary)"
    );
    assert_eq!(
        std::fs::read_to_string(h.scratch.project.join("after.txt")).unwrap_or_default(),
        "POST-COMPACT\n",
        "the agent went on after the compaction"
    );
    let events = h.hook_events();
    let starts: Vec<usize> = positions(&events, |e| e["event"] == "SessionStart");
    assert_eq!(
        starts.len(),
        2,
        "startup, then the compaction's SessionStart: {events:?}"
    );
    let delivered = positions(&events, |e| e["outcome"] == "context");
    assert_eq!(
        delivered.len(),
        1,
        "the concern was delivered once, never again after the reset: {events:?}"
    );
    assert!(
        delivered[0] < starts[1],
        "delivered before the compaction: {events:?}"
    );
    let note = advice_note("CUE-CONCERN");
    let holding: Vec<usize> = positions(&bodies, |b| conversation_text(b).contains(&note));
    assert!(!holding.is_empty(), "the concern reached the agent's model");

    let review = advisor
        .wait_for(&h.rt, 0, REVIEW_WAIT, |b| {
            strings_in(&b["messages"]).contains("POST-COMPACT")
        })
        .unwrap_or_else(|| panic!("the run after the compaction was reviewed: {events:?}"));
    let messages = review["messages"].as_array().cloned().unwrap_or_default();
    assert!(
        messages.iter().all(|m| m["role"] == "user"),
        "a fresh advisor context after the compaction: {messages:#?}"
    );
    let text = strings_in(&review["messages"]);
    assert!(
        text.contains("COMPACT-SUMMARY"),
        "the summary is sent: {text}"
    );
    assert!(
        !text.contains("PRE-COMPACT-2"),
        "nothing compacted is sent verbatim: {text}"
    );
    // The reset leaves the concern behind: the fresh review does not hold its cue, so it is
    // not raised again, and the hook log above shows it delivered once.
    assert!(
        !text.contains("CUE-CONCERN"),
        "the advice from before the compaction is not reviewed again: {text}"
    );
}

fn positions<T>(items: &[T], pred: impl Fn(&T) -> bool) -> Vec<usize> {
    items
        .iter()
        .enumerate()
        .filter(|(_, x)| pred(x))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn claude_code_r1_h11_l7_an_automatic_compaction_resets_the_advisor_and_keeps_advice_once() {
    compaction_resets_the_advisor(Host::ClaudeCode);
}

#[test]
fn codex_r1_h11_l8_an_automatic_compaction_resets_the_advisor_and_keeps_advice_once() {
    compaction_resets_the_advisor(Host::Codex);
}

// ---------------------------------------------------------------------------------------------
// What each CLI shows of a hook's `systemMessage`

/// H8 on the real CLIs: the cards and notices for the user go out as `systemMessage` at
/// `UserPromptSubmit` and `Stop` (and the gate's notes at `PreToolUse`). `claude -p` shows
/// each as a `system` line of its stream-json; `codex exec` shows none of them, at any event
/// (docs/HOSTS.md says so). A stand-in hook answers each event with a marked message.
fn what_the_cli_shows_of_system_messages(host: Host) {
    let Some(h) = Harness::new() else { return };
    let hook = ScriptHook::new(&h.scratch);
    write_hooks(host, &h.scratch, &hook.command(), 30);
    let events = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"];
    for event in events {
        hook.reply(event, &json!({"systemMessage": format!("NOTE-AT-{event}")}));
    }
    let steps = vec![Step::shell("echo X > x.txt"), Step::text("Done.")];
    let primary = h.primary(host, script(host, steps));
    let out = h.run(host, &primary, "Write x.txt.", &[], RUN_LIMIT);
    out.assert_ok(host.name());
    let shown = |event: &str| {
        let mark = format!("NOTE-AT-{event}");
        out.stdout.contains(&mark) || out.stderr.contains(&mark)
    };
    let shown: Vec<&str> = events.into_iter().filter(|e| shown(e)).collect();
    match host {
        Host::ClaudeCode => assert_eq!(shown, events, "claude -p shows each message"),
        Host::Codex => assert_eq!(shown, Vec::<&str>::new(), "codex exec shows none"),
    }
    let models = conversation_text(primary.bodies().last().expect("a model request"));
    assert!(
        !models.contains("NOTE-AT-"),
        "a message for the user, not the model"
    );
}

#[test]
fn claude_code_h8_claude_p_shows_every_hook_system_message() {
    what_the_cli_shows_of_system_messages(Host::ClaudeCode);
}

#[test]
fn codex_h8_codex_exec_shows_no_hook_system_message() {
    what_the_cli_shows_of_system_messages(Host::Codex);
}
