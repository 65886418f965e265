//! The action gate on the real hook hosts (SPEC GT12, GT15): Claude Code 2.1.332 (`claude -p`)
//! and Codex CLI 0.171.0 (`codex exec`) run headless against a scripted primary model, with the
//! advisor installed the way a user installs it (`advisor install <host> --user --gate risky`)
//! and a scripted gate model (`tests/support/hosts.rs`). Each test asserts what the run did to
//! the workspace and what the primary model was sent after the gated call.
//!
//! Without `npm` the tests skip with a message, except under CI (`CI` set), where they fail.

use std::time::Duration;

use advisor::gate::{GateDecision, GateRisk, GateVerdict, VerdictSource};
use advisor::hosts::host_session::gate_reply;
use advisor::hosts::payload::HookHost;
use advisor::hosts::protocol::Outcome;
use serde_json::{json, Value};

use crate::support::hosts::{
    conversation_text, script, write_hooks, AdvisorModel, GateAnswer, Harness, Host, RunOutput,
    ScriptHook, Step,
};

/// How long one CLI run may take (they take a few seconds).
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The reason the scripted gate gives when it denies.
const DENY_REASON: &str = "GATE-DENY-MARKER: build holds the only copy of the release artefacts.";

/// The reason the scripted gate gives when it asks.
const ASK_REASON: &str = "GATE-ASK-MARKER: only the user can say whether build may go.";

/// The part of `gateFailMode: closed`'s reason that does not depend on the failure.
const FAIL_CLOSED: &str = "so the call is denied (advisor.gateFailMode: closed)";

/// The advisor's `config.yml` (`advisor.gate` itself is written by `install --gate risky`).
fn gate_config(timeout_ms: u64, fail_mode: Option<&str>) -> String {
    let mut config = format!("advisor:\n  hookTimeoutMs: 2000\n  gateTimeoutMs: {timeout_ms}\n");
    if let Some(mode) = fail_mode {
        config.push_str(&format!("  gateFailMode: {mode}\n"));
    }
    config
}

fn verdict(decision: &str, reason: &str) -> GateAnswer {
    GateAnswer::Verdict(json!({"decision": decision, "risk": "high", "reason": reason}))
}

/// A directory `name` in the project holding one file; its path.
fn directory_with_a_file(h: &Harness, name: &str) -> std::path::PathBuf {
    let dir = h.scratch.project.join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("artefact.bin"), "release\n").expect("artefact");
    dir
}

/// The shell command that removes `dir` on `host`: `rm -rf` on Claude Code; `rm -r` on Codex,
/// which itself refuses `rm -f` style commands (so only there a denial of `rm -rf` could not
/// be told from Codex's own).
fn remove(host: Host, dir: &str) -> String {
    match host {
        Host::ClaudeCode => format!("rm -rf {dir}"),
        Host::Codex => format!("rm -r {dir}"),
    }
}

/// One run with the gate on: the scripted gate model, the primary's requests, the harness.
struct GatedRun {
    gate: AdvisorModel,
    /// Each primary model request's body.
    bodies: Vec<Value>,
    /// Each primary model request's conversation as text.
    texts: Vec<String>,
    out: RunOutput,
    h: Harness,
}

impl GatedRun {
    /// The PreToolUse hook calls as the hook log has them: (outcome, answer ms).
    fn pre_tool_uses(&self) -> Vec<(String, u64)> {
        self.h
            .hook_events()
            .iter()
            .filter(|e| e["event"] == "PreToolUse")
            .map(|e| {
                let outcome = e["outcome"].as_str().unwrap_or("?").to_string();
                (outcome, e["ms"].as_u64().unwrap_or(u64::MAX))
            })
            .collect()
    }

    /// The gate's model requests whose proposed call holds `command`.
    fn gate_requests_about(&self, command: &str) -> usize {
        self.gate
            .gate_bodies()
            .iter()
            .filter(|b| crate::support::strings_in(b).contains(command))
            .count()
    }
}

/// Runs `host` once with the gate installed (`config`, `install --gate risky`), the gate model
/// answering `answer`, a `build/` and a `scratch/` directory (one file each) in the project
/// and the primary playing `steps`; `None` when the CLIs cannot be installed here.
fn gated_run(
    host: Host,
    what: &str,
    config: &str,
    answer: GateAnswer,
    steps: Vec<Step>,
) -> Option<GatedRun> {
    let mut h = Harness::new()?;
    directory_with_a_file(&h, "build");
    directory_with_a_file(&h, "scratch");
    let gate = AdvisorModel::gate(&h.rt, answer);
    h.attach_advisor_with(host, &gate, config, &["--gate", "risky"]);
    let primary = h.primary(host, script(host, steps));
    let out = h.run(host, &primary, "Clean up the project.", &[], RUN_LIMIT);
    out.assert_ok(host.name());
    eprintln!("{} gate {what} run: {:?}", host.name(), out.wall);
    assert_eq!(
        h.trapped(),
        Vec::<String>::new(),
        "no traffic left loopback"
    );
    let bodies = primary.bodies();
    let texts = bodies.iter().map(conversation_text).collect();
    let run = GatedRun {
        gate,
        bodies,
        texts,
        out,
        h,
    };
    eprintln!(
        "{} gate {what}: PreToolUse (outcome, ms): {:?}",
        host.name(),
        run.pre_tool_uses()
    );
    Some(run)
}

/// Where each host puts a PreToolUse denial's reason in the next model request: Claude Code
/// as the tool's result, marked an error; Codex as the call's output, "Command blocked by
/// PreToolUse hook: <reason>".
fn assert_denial_reaches_the_model(host: Host, body: &Value, reason: &str) {
    let seen = match host {
        Host::ClaudeCode => body["messages"].as_array().is_some_and(|messages| {
            messages.iter().any(|m| {
                m["content"].as_array().is_some_and(|blocks| {
                    blocks.iter().any(|b| {
                        b["type"] == "tool_result"
                            && b["is_error"] == json!(true)
                            && crate::support::strings_in(&b["content"]).contains(reason)
                    })
                })
            })
        }),
        Host::Codex => body["input"].as_array().is_some_and(|items| {
            items.iter().any(|i| {
                let output = crate::support::strings_in(&i["output"]);
                i["type"] == "function_call_output"
                    && output.starts_with("Command blocked by PreToolUse hook: ")
                    && output.contains(reason)
            })
        }),
    };
    assert!(
        seen,
        "{}: the model reads the denial as the call's result: {body}",
        host.name()
    );
}

// ---------------------------------------------------------------------------------------------
// 1. A denial: the call never runs and the agent reads why

fn a_denied_rm_never_runs(host: Host) {
    let rm = remove(host, "build");
    let steps = vec![Step::shell(&rm), Step::text("Done.")];
    let config = gate_config(10_000, None);
    let Some(run) = gated_run(host, "deny", &config, verdict("deny", DENY_REASON), steps) else {
        return;
    };
    let build = run.h.scratch.project.join("build/artefact.bin");
    assert!(build.is_file(), "the denied `{rm}` never ran");
    assert_eq!(run.texts.len(), 2, "the call and the final answer");
    assert!(!run.texts[0].contains(DENY_REASON));
    assert_denial_reaches_the_model(host, &run.bodies[1], DENY_REASON);
    assert_eq!(run.gate_requests_about(&rm), 1);
    let outcomes: Vec<String> = run.pre_tool_uses().into_iter().map(|(o, _)| o).collect();
    assert_eq!(outcomes, ["deny"], "hook log: {:?}", run.h.hook_events());
}

#[test]
fn gt12_claude_code_a_denied_rm_rf_never_runs_and_the_model_reads_why() {
    a_denied_rm_never_runs(Host::ClaudeCode);
}

#[test]
fn gt12_codex_a_denied_rm_rf_never_runs_and_the_model_reads_why() {
    a_denied_rm_never_runs(Host::Codex);
}

/// Codex's `apply_patch` (a freeform tool; its PreToolUse carries `tool_name: apply_patch`
/// and the patch as `tool_input.command`) is read by its file lines (GT2): a patch deleting a
/// file is put to the gate, and the gate's denial keeps the file.
#[test]
fn gt2_gt12_codex_a_denied_apply_patch_delete_never_runs() {
    let patch = "*** Begin Patch\n*** Delete File: build/artefact.bin\n*** End Patch\n";
    let steps = vec![
        Step::Custom {
            name: "apply_patch".into(),
            input: patch.into(),
        },
        Step::text("Done."),
    ];
    let config = gate_config(10_000, None);
    let deny = verdict("deny", DENY_REASON);
    let Some(run) = gated_run(Host::Codex, "apply_patch", &config, deny, steps) else {
        return;
    };
    assert!(
        run.h.scratch.project.join("build/artefact.bin").is_file(),
        "the denied patch never ran"
    );
    assert_eq!(run.texts.len(), 2, "the call and the final answer");
    let output = run.bodies[1]["input"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|i| i["type"] == "custom_tool_call_output")
        })
        .map(|i| crate::support::strings_in(&i["output"]))
        .unwrap_or_default();
    assert!(
        output.starts_with("Command blocked by PreToolUse hook: ") && output.contains(DENY_REASON),
        "the model reads the denial as the patch's output: {}",
        run.texts[1]
    );
    assert_eq!(
        run.gate_requests_about("Delete File: build/artefact.bin"),
        1
    );
    let outcomes: Vec<String> = run.pre_tool_uses().into_iter().map(|(o, _)| o).collect();
    assert_eq!(outcomes, ["deny"], "hook log: {:?}", run.h.hook_events());
}

// ---------------------------------------------------------------------------------------------
// 2. An allow: the risky call runs; a harmless call never reaches the gate's model

fn an_allowed_rm_runs_and_ls_passes(host: Host) {
    let steps = vec![
        Step::shell("ls -la"),
        Step::shell(&remove(host, "scratch")),
        Step::text("Done."),
    ];
    let config = gate_config(10_000, None);
    let allow = verdict("allow", "scratch is a temporary directory.");
    let Some(run) = gated_run(host, "allow", &config, allow, steps) else {
        return;
    };
    assert!(
        !run.h.scratch.project.join("scratch").exists(),
        "the allowed removal of scratch ran"
    );
    assert!(run.h.scratch.project.join("build/artefact.bin").is_file());
    assert_eq!(run.texts.len(), 3, "two calls and the final answer");
    assert!(
        run.texts[1].contains("artefact") || run.texts[1].contains("scratch"),
        "`ls -la` ran and its listing reached the model: {}",
        run.texts[1]
    );
    let gated = run.gate.gate_bodies();
    assert_eq!(
        gated.len(),
        1,
        "one gate model request, for the risky call only"
    );
    assert_eq!(run.gate_requests_about(&remove(host, "scratch")), 1);
    let outcomes: Vec<String> = run.pre_tool_uses().into_iter().map(|(o, _)| o).collect();
    assert_eq!(
        outcomes,
        ["empty", "allow"],
        "`ls` passed by the classifier, `rm` allowed by the model"
    );
}

#[test]
fn gt2_gt12_claude_code_an_allowed_rm_runs_and_ls_passes_without_a_model_call() {
    an_allowed_rm_runs_and_ls_passes(Host::ClaudeCode);
}

#[test]
fn gt2_gt12_codex_an_allowed_rm_runs_and_ls_passes_without_a_model_call() {
    an_allowed_rm_runs_and_ls_passes(Host::Codex);
}

// ---------------------------------------------------------------------------------------------
// 3. A hung gate model: `gateFailMode` within the hook's bound

/// `gateTimeoutMs` of the hung-gate runs; the hook's bound is a second more (GT12).
const HUNG_TIMEOUT_MS: u64 = 1500;

fn assert_within_the_bound(run: &GatedRun, outcome: &str) {
    let calls = run.pre_tool_uses();
    assert_eq!(calls.len(), 1, "one PreToolUse: {calls:?}");
    let (got, ms) = &calls[0];
    assert_eq!(got, outcome, "hook log: {:?}", run.h.hook_events());
    assert!(
        *ms >= HUNG_TIMEOUT_MS && *ms <= HUNG_TIMEOUT_MS + 1000,
        "the hook waited out the gate's timeout and answered within its bound: {ms} ms"
    );
    eprintln!("hung gate: PreToolUse answered in {ms} ms");
}

fn a_hung_gate_fails_closed(host: Host) {
    let rm = remove(host, "build");
    let steps = vec![Step::shell(&rm), Step::text("Done.")];
    let config = gate_config(HUNG_TIMEOUT_MS, Some("closed"));
    let Some(run) = gated_run(host, "hung-closed", &config, GateAnswer::Hang, steps) else {
        return;
    };
    assert!(
        run.h.scratch.project.join("build/artefact.bin").is_file(),
        "under gateFailMode: closed the call never ran"
    );
    assert_eq!(run.texts.len(), 2);
    assert_denial_reaches_the_model(host, &run.bodies[1], FAIL_CLOSED);
    assert_eq!(run.gate_requests_about(&rm), 1);
    assert_within_the_bound(&run, "deny");
}

#[test]
fn gt5_gt12_claude_code_a_hung_gate_model_fails_closed_within_the_hook_bound() {
    a_hung_gate_fails_closed(Host::ClaudeCode);
}

#[test]
fn gt5_gt12_codex_a_hung_gate_model_fails_closed_within_the_hook_bound() {
    a_hung_gate_fails_closed(Host::Codex);
}

fn a_hung_gate_fails_open(host: Host) {
    let steps = vec![Step::shell(&remove(host, "scratch")), Step::text("Done.")];
    let config = gate_config(HUNG_TIMEOUT_MS, Some("open"));
    let Some(run) = gated_run(host, "hung-open", &config, GateAnswer::Hang, steps) else {
        return;
    };
    assert!(
        !run.h.scratch.project.join("scratch").exists(),
        "under gateFailMode: open the call ran"
    );
    assert_eq!(run.texts.len(), 2);
    assert_within_the_bound(&run, "allow");
    // The allow's reason goes out as `systemMessage`: Claude Code shows it (a `system` line
    // of its stream-json, "PreToolUse:Bash says: …"); `codex exec` shows it nowhere (GT15).
    let shown: Vec<&str> = run
        .out
        .stdout
        .lines()
        .filter(|l| l.contains("gateFailMode: open"))
        .collect();
    match host {
        Host::ClaudeCode => assert!(
            shown
                .iter()
                .any(|l| l.contains(r#""type":"system""#) && l.contains("PreToolUse:Bash says: ")),
            "claude -p shows the fail-open note: {}",
            run.out.stdout
        ),
        Host::Codex => assert_eq!(shown, Vec::<&str>::new(), "codex exec shows no note"),
    }
    assert!(
        run.texts.iter().all(|t| !t.contains("gateFailMode: open")),
        "the note is for the user, not the model"
    );
}

#[test]
fn gt5_gt12_claude_code_a_hung_gate_model_fails_open_within_the_hook_bound() {
    a_hung_gate_fails_open(Host::ClaudeCode);
}

#[test]
fn gt5_gt12_codex_a_hung_gate_model_fails_open_within_the_hook_bound() {
    a_hung_gate_fails_open(Host::Codex);
}

// ---------------------------------------------------------------------------------------------
// 4. `ask` in a headless run

/// The host's own handling of `permissionDecision: ask` in a headless run, with a stand-in
/// hook answering it: Claude Code (`-p`) does not run the call and hands the reason to the
/// model as the tool's error; Codex (`exec`) ignores the answer ("unsupported
/// permissionDecision:ask") and runs the call. If either changes, GT15 must be looked at again.
fn host_handles_a_hook_ask(host: Host) {
    let Some(h) = Harness::new() else { return };
    let hook = ScriptHook::new(&h.scratch);
    write_hooks(host, &h.scratch, &hook.command(), 30);
    hook.reply(
        "PreToolUse",
        &json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "ask", "permissionDecisionReason": ASK_REASON}}),
    );
    let steps = vec![Step::shell("echo ASKED > asked.txt"), Step::text("Done.")];
    let primary = h.primary(host, script(host, steps));
    let out = h.run(host, &primary, "Write asked.txt.", &[], RUN_LIMIT);
    out.assert_ok(host.name());
    let ran = h.scratch.project.join("asked.txt").exists();
    let bodies = primary.bodies();
    assert_eq!(bodies.len(), 2, "the call and the final answer");
    match host {
        Host::ClaudeCode => {
            assert!(!ran, "claude -p: an ask does not run the call");
            assert_denial_reaches_the_model(host, &bodies[1], ASK_REASON);
        }
        Host::Codex => {
            assert!(ran, "codex exec: an ask is ignored and the call runs");
            assert!(!conversation_text(&bodies[1]).contains(ASK_REASON));
        }
    }
}

#[test]
fn gt15_claude_code_headless_treats_a_hook_ask_as_a_denial() {
    host_handles_a_hook_ask(Host::ClaudeCode);
}

#[test]
fn gt15_codex_exec_ignores_a_hook_ask_and_runs_the_call() {
    host_handles_a_hook_ask(Host::Codex);
}

/// The gate's `ask` through the advisor: on Claude Code the hook answers `ask` (headless:
/// the call does not run, the model reads the reason); on Codex, which would ignore an ask,
/// the hook answers `deny` with the reason, so the call does not run there either.
fn a_gate_ask_never_runs_headless(host: Host) {
    let rm = remove(host, "build");
    let steps = vec![Step::shell(&rm), Step::text("Done.")];
    let config = gate_config(10_000, None);
    let Some(run) = gated_run(host, "ask", &config, verdict("ask", ASK_REASON), steps) else {
        return;
    };
    assert!(
        run.h.scratch.project.join("build/artefact.bin").is_file(),
        "the call the gate asked about never ran unconfirmed"
    );
    assert_eq!(run.texts.len(), 2);
    assert_denial_reaches_the_model(host, &run.bodies[1], ASK_REASON);
    let outcomes: Vec<String> = run.pre_tool_uses().into_iter().map(|(o, _)| o).collect();
    let expected = match host {
        Host::ClaudeCode => "ask",
        Host::Codex => "deny",
    };
    assert_eq!(outcomes, [expected], "hook log: {:?}", run.h.hook_events());
}

#[test]
fn gt15_claude_code_a_gate_ask_is_answered_ask_and_never_runs_headless() {
    a_gate_ask_never_runs_headless(Host::ClaudeCode);
}

#[test]
fn gt15_codex_a_gate_ask_is_answered_deny_and_never_runs() {
    a_gate_ask_never_runs_headless(Host::Codex);
}

// ---------------------------------------------------------------------------------------------
// The hook's answer for each verdict, per host (no CLI needed)

fn gate_verdict(decision: GateDecision, source: VerdictSource) -> GateVerdict {
    GateVerdict {
        decision,
        risk: GateRisk::High,
        reason: "the reason".into(),
        source,
    }
}

#[test]
fn gt15_a_gate_ask_is_an_ask_on_claude_code_and_a_deny_on_codex() {
    let ask = || Some(gate_verdict(GateDecision::Ask, VerdictSource::Model));
    let decision = |host| {
        let reply = gate_reply(host, ask());
        let out = reply.stdout.expect("a decision");
        assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert_eq!(
            out["hookSpecificOutput"]["permissionDecisionReason"],
            "the reason"
        );
        (
            out["hookSpecificOutput"]["permissionDecision"].clone(),
            reply.outcome,
        )
    };
    assert_eq!(decision(HookHost::ClaudeCode), (json!("ask"), Outcome::Ask));
    assert_eq!(decision(HookHost::Codex), (json!("deny"), Outcome::Deny));
    for host in [HookHost::ClaudeCode, HookHost::Codex] {
        let deny = gate_reply(
            host,
            Some(gate_verdict(GateDecision::Deny, VerdictSource::Model)),
        );
        assert_eq!(
            deny.stdout.expect("a denial")["hookSpecificOutput"]["permissionDecision"],
            "deny"
        );
        let allow = gate_reply(
            host,
            Some(gate_verdict(GateDecision::Allow, VerdictSource::Model)),
        );
        assert_eq!((allow.stdout, allow.outcome), (None, Outcome::Allow));
        let none = gate_reply(host, None);
        assert_eq!((none.stdout, none.outcome), (None, Outcome::Empty));
    }
}

/// H33 on the real CLI: the gate turned on by hand (`advisor.gate: risky` in `config.yml`)
/// after an install without it. No PreToolUse hook is installed, so the gate never sees the
/// call and it runs; the session tells the user once, at Stop, that the gate cannot act.
fn a_gate_without_its_hook_is_told(host: Host) {
    let Some(mut h) = Harness::new() else {
        return;
    };
    directory_with_a_file(&h, "scratch");
    let gate = AdvisorModel::gate(&h.rt, verdict("deny", DENY_REASON));
    h.attach_advisor(host, &gate, "advisor:\n  enabled: true\n");
    std::fs::write(
        h.scratch.config.join("config.yml"),
        "advisor:\n  enabled: true\n  gate: risky\n",
    )
    .expect("config.yml");
    let steps = vec![Step::shell(&remove(host, "scratch")), Step::text("Done.")];
    let primary = h.primary(host, script(host, steps));
    let out = h.run(host, &primary, "Clean up the project.", &[], RUN_LIMIT);
    out.assert_ok(host.name());
    let events = h.hook_events();
    assert!(
        events.iter().all(|e| e["event"] != "PreToolUse"),
        "no PreToolUse hook: {events:?}"
    );
    assert!(
        !h.scratch.project.join("scratch").exists(),
        "the gate never saw the call"
    );
    assert_eq!(gate.gate_bodies().len(), 0, "no gate request");
    let stops: Vec<&Value> = events.iter().filter(|e| e["event"] == "Stop").collect();
    assert_eq!(
        stops.first().map(|e| e["outcome"].clone()),
        Some(json!("context")),
        "the notice goes out at Stop: {events:?}"
    );
    if host == Host::ClaudeCode {
        let shown: Vec<&str> = out
            .stdout
            .lines()
            .filter(|l| l.contains("the action gate is on but cannot act"))
            .collect();
        assert_eq!(shown.len(), 1, "claude -p shows it once: {}", out.stdout);
        assert!(
            shown[0].contains("`advisor install claude-code` again"),
            "{}",
            shown[0]
        );
    }
}

#[test]
fn h33_claude_code_the_gate_on_without_its_hook_is_told_once() {
    a_gate_without_its_hook_is_told(Host::ClaudeCode);
}

#[test]
fn h33_codex_the_gate_on_without_its_hook_is_told_once() {
    a_gate_without_its_hook_is_told(Host::Codex);
}
