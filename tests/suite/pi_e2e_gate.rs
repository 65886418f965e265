//! The action gate in pi (SPEC GT12, V5) on both API lines: pi's `tool_call` event goes to
//! `session/gate` before the call runs, and a denial blocks it with the gate's reason, which
//! the primary reads as the tool's result; an `ask` is pi's confirm dialog (over RPC an
//! `extension_ui_request` the test answers); a gate model that hangs gives the fail mode
//! within the bound; the breaker's and the fail mode's notes are shown; a roster entry alone
//! turns the gate on. The scripted primary, gate and RPC driver are `pi_e2e`'s; the lines are
//! `pi_e2e_lines`'.

use std::time::Duration;

use serde_json::{json, Value};

use super::pi_e2e::{primary_requests, request_text, world, Pi, GATE_ASK_REASON, GATE_DENY_REASON};
use super::pi_e2e_lines::{pi_of, prompt_settled, Line};

/// The settings: an advisor, the gate as the test adds.
const ADVISOR_ON: &str = "modelRoles:\n  advisor: advisorprov/advisor-model\nadvisor:\n  enabled: true\n  syncBacklog: off\n";

/// The settings: an advisor with the gate on for risky calls.
const GATED: &str = concat!(
    "modelRoles:\n  advisor: advisorprov/advisor-model\nadvisor:\n  enabled: true\n  syncBacklog: off\n",
    "  gate: risky\n  gateTimeoutMs: 10000\n"
);

/// The primary calls `bash` with `rm -rf build`; the gate's model denies it: the directory is
/// still there and the primary's next request carries the gate's reason as the tool result.
fn a_denied_bash_never_runs(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let w = world(GATED, "notes\n");
    let build = w.setup.work.join("build");
    std::fs::create_dir_all(&build).expect("build dir");
    std::fs::write(build.join("artefact.bin"), "release").expect("artefact");
    let mut pi = w.setup.start(&tools, true, &[]);
    prompt_settled(&mut pi, line, "Clean up. [bash:rm -rf build] [say:cleaned]");
    assert!(
        build.join("artefact.bin").exists(),
        "the denied command never ran"
    );
    let requests = primary_requests(&w.primary);
    assert_eq!(requests.len(), 2, "the bash call and the final answer");
    let after = request_text(&requests[1]);
    assert!(
        after.contains(GATE_DENY_REASON),
        "the primary reads the gate's reason: {after}"
    );
    pi.quit();
}

#[test]
fn gt12_pi_073_a_denied_bash_call_never_runs_and_the_primary_reads_why() {
    a_denied_bash_never_runs(Line::Legacy);
}

#[test]
fn gt12_pi_16_a_denied_bash_call_never_runs_and_the_primary_reads_why() {
    a_denied_bash_never_runs(Line::Current);
}

/// A risky call the gate's model allows runs: the gate is put to the model (`rm` is risky) and
/// its allow lets pi go on, so the gate blocks only what it denies.
fn an_allowed_bash_runs(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let w = world(GATED, "notes\n");
    let scratch = w.setup.work.join("scratch");
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let mut pi = w.setup.start(&tools, true, &[]);
    prompt_settled(&mut pi, line, "Tidy. [bash:rm -rf scratch] [say:tidied]");
    assert!(!scratch.exists(), "the allowed command ran");
    let asked = w.advisor.bodies().iter().any(|b| {
        let text = b.to_string();
        text.contains("rm -rf scratch") && text.contains("You are the gate")
    });
    assert!(asked, "the gate's model was asked about the call");
    let requests = primary_requests(&w.primary);
    assert!(!request_text(&requests[1]).contains("action gate"));
    pi.quit();
}

#[test]
fn gt12_pi_073_an_allowed_bash_call_runs() {
    an_allowed_bash_runs(Line::Legacy);
}

#[test]
fn gt12_pi_16_an_allowed_bash_call_runs() {
    an_allowed_bash_runs(Line::Current);
}

/// Prompts, answers the confirm dialog the run opens with `confirmed`, and waits for the end
/// of the run; returns the dialog's request.
fn prompt_confirming(pi: &mut Pi, line: Line, text: &str, confirmed: bool) -> Value {
    let mark = pi.len();
    pi.call(json!({"type": "prompt", "message": text}));
    let (_, dialog) = pi.wait_from(mark, "a confirm dialog", |v| {
        v["type"] == "extension_ui_request" && v["method"] == "confirm"
    });
    pi.send(&json!({"type": "extension_ui_response", "id": dialog["id"], "confirmed": confirmed}));
    pi.wait_from(mark, line.settled(), |v| v["type"] == line.settled());
    dialog
}

/// The gate's model answers `ask`: pi asks the person (RPC: a `confirm` request holding the
/// reason). Declined, the call is blocked and the primary reads why; confirmed, it runs.
fn an_ask_is_the_person_s_to_decide(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let w = world(GATED, "notes\n");
    let (kept, gone) = (w.setup.work.join("ask-me-1"), w.setup.work.join("ask-me-2"));
    for dir in [&kept, &gone] {
        std::fs::create_dir_all(dir).expect("dir");
    }
    let mut pi = w.setup.start(&tools, true, &[]);
    let no = prompt_confirming(
        &mut pi,
        line,
        "One. [bash:rm -rf ask-me-1] [say:one]",
        false,
    );
    assert!(
        no["message"]
            .as_str()
            .unwrap_or_default()
            .contains(GATE_ASK_REASON),
        "{no}"
    );
    assert!(kept.exists(), "the declined call never ran");
    let requests = primary_requests(&w.primary);
    let after = request_text(&requests[1]);
    assert!(
        after.contains("The user declined this call") && after.contains(GATE_ASK_REASON),
        "the primary reads why: {after}"
    );
    prompt_confirming(&mut pi, line, "Two. [bash:rm -rf ask-me-2] [say:two]", true);
    assert!(!gone.exists(), "the confirmed call ran");
    pi.quit();
}

#[test]
fn gt12_pi_073_an_ask_blocks_when_the_person_says_no_and_runs_when_yes() {
    an_ask_is_the_person_s_to_decide(Line::Legacy);
}

#[test]
fn gt12_pi_16_an_ask_blocks_when_the_person_says_no_and_runs_when_yes() {
    an_ask_is_the_person_s_to_decide(Line::Current);
}

/// The gate's model hangs past `gateTimeoutMs` (1 s): the fail mode decides — `closed`
/// blocks the call with the reason, `open` lets it run — the person is shown the note, and
/// the call is held no longer than the extension's bound (the timeout plus 5 s).
fn a_hanging_gate_gives_the_fail_mode(line: Line, closed: bool) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let mode = if closed { "closed" } else { "open" };
    let config =
        format!("{ADVISOR_ON}  gate: risky\n  gateTimeoutMs: 1000\n  gateFailMode: {mode}\n");
    let w = world(&config, "notes\n");
    let dir = w.setup.work.join("hang-me");
    std::fs::create_dir_all(&dir).expect("dir");
    let mut pi = w.setup.start(&tools, true, &[]);
    let mark = pi.len();
    prompt_settled(&mut pi, line, "Go. [bash:rm -rf hang-me] [say:went]");
    // pi announces the call before its `tool_call` handlers run and ends it after them.
    let (start, _) = pi.wait_from(mark, "the call's start", |v| {
        v["type"] == "tool_execution_start"
    });
    let (end, _) = pi.wait_from(mark, "the call's end", |v| {
        v["type"] == "tool_execution_end"
    });
    let held = pi.read_at(end) - pi.read_at(start);
    assert!(
        held >= Duration::from_millis(1_000) && held < Duration::from_millis(1_000 + 5_000),
        "the gate's timeout, within the extension's bound: held {held:?}"
    );
    assert_eq!(dir.exists(), closed, "closed blocks, open runs");
    let note = pi.wait_notice(mark, "advisor gate (bash)");
    assert!(
        note.contains("could not decide") && note.contains(&format!("gateFailMode: {mode}")),
        "{note}"
    );
    let after = request_text(&primary_requests(&w.primary)[1]);
    assert_eq!(
        after.contains("did not answer within 1000 ms"),
        closed,
        "{after}"
    );
    pi.quit();
}

#[test]
fn gt5_pi_073_a_hanging_gate_blocks_under_closed() {
    a_hanging_gate_gives_the_fail_mode(Line::Legacy, true);
}

#[test]
fn gt5_pi_073_a_hanging_gate_lets_the_call_run_under_open() {
    a_hanging_gate_gives_the_fail_mode(Line::Legacy, false);
}

#[test]
fn gt5_pi_16_a_hanging_gate_blocks_under_closed() {
    a_hanging_gate_gives_the_fail_mode(Line::Current, true);
}

#[test]
fn gt5_pi_16_a_hanging_gate_lets_the_call_run_under_open() {
    a_hanging_gate_gives_the_fail_mode(Line::Current, false);
}

/// `gateFailMode: ask` where pi has a UI: the gate's model hangs past `gateTimeoutMs`, pi
/// shows the fail mode's note and asks the person (RPC: a `confirm` request); confirmed, the
/// call runs.
fn a_hanging_gate_under_ask_asks_the_person(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let config = format!("{ADVISOR_ON}  gate: risky\n  gateTimeoutMs: 1000\n  gateFailMode: ask\n");
    let w = world(&config, "notes\n");
    let dir = w.setup.work.join("hang-me");
    std::fs::create_dir_all(&dir).expect("dir");
    let mut pi = w.setup.start(&tools, true, &[]);
    let mark = pi.len();
    let dialog = prompt_confirming(&mut pi, line, "Go. [bash:rm -rf hang-me] [say:went]", true);
    let message = dialog["message"].as_str().unwrap_or_default();
    assert!(message.contains("please confirm this call"), "{dialog}");
    let note = pi.wait_notice(mark, "advisor gate (bash)");
    assert!(note.contains("did not answer within 1000 ms"), "{note}");
    assert!(!dir.exists(), "the confirmed call ran");
    pi.quit();
}

#[test]
fn gt5_pi_073_a_hanging_gate_under_ask_asks_the_person() {
    a_hanging_gate_under_ask_asks_the_person(Line::Legacy);
}

#[test]
fn gt5_pi_16_a_hanging_gate_under_ask_asks_the_person() {
    a_hanging_gate_under_ask_asks_the_person(Line::Current);
}

/// Three denials in a row; the fourth is escalated by the breaker to an ask: pi shows its
/// note and asks the person, who declines.
fn the_breaker_s_escalation_is_shown(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let w = world(GATED, "notes\n");
    let mut pi = w.setup.start(&tools, true, &[]);
    for n in 1..=3 {
        prompt_settled(
            &mut pi,
            line,
            &format!("N{n}. [bash:rm -rf build{n}] [say:n{n}]"),
        );
    }
    let mark = pi.len();
    let dialog = prompt_confirming(&mut pi, line, "N4. [bash:rm -rf build4] [say:n4]", false);
    let message = dialog["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("in a row") && message.contains(GATE_DENY_REASON),
        "{dialog}"
    );
    let note = pi.wait_notice(mark, "advisor gate (bash)");
    assert!(note.contains("so it asks instead"), "{note}");
    pi.quit();
}

#[test]
fn gt7_pi_073_the_breaker_s_ask_is_shown_and_asked() {
    the_breaker_s_escalation_is_shown(Line::Legacy);
}

#[test]
fn gt7_pi_16_the_breaker_s_ask_is_shown_and_asked() {
    the_breaker_s_escalation_is_shown(Line::Current);
}

/// The K1 settings leave the gate off; a `WATCHDOG.yml` entry's own `gate: risky` turns it on,
/// and pi puts the call to it (GT10): the denied call never runs.
fn a_roster_entry_alone_turns_the_gate_on(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let w = world(ADVISOR_ON, "notes\n");
    let roster = "advisors:\n  - name: Guard\n    gate: risky\n    gateFailMode: closed\n";
    std::fs::write(w.setup.work.join("WATCHDOG.yml"), roster).expect("WATCHDOG.yml");
    let build = w.setup.work.join("build");
    std::fs::create_dir_all(&build).expect("build dir");
    let mut pi = w.setup.start(&tools, true, &[]);
    prompt_settled(&mut pi, line, "Warm up. [say:ready]");
    prompt_settled(&mut pi, line, "Clean up. [bash:rm -rf build] [say:cleaned]");
    assert!(build.exists(), "the denied command never ran");
    let requests = primary_requests(&w.primary);
    let after = request_text(requests.last().expect("requests"));
    assert!(after.contains(GATE_DENY_REASON), "{after}");
    pi.quit();
}

#[test]
fn gt10_pi_073_a_roster_entry_s_own_gate_is_put_to_from_pi() {
    a_roster_entry_alone_turns_the_gate_on(Line::Legacy);
}

#[test]
fn gt10_pi_16_a_roster_entry_s_own_gate_is_put_to_from_pi() {
    a_roster_entry_alone_turns_the_gate_on(Line::Current);
}

/// Print mode (`pi -p`) has no UI: pi sends `canAsk: false`, so an `ask` is blocked with the
/// reason, and a hanging gate with `gateFailMode` unset lets the call run (GT5: `open` where
/// nobody can be asked), with its note.
fn without_a_ui_nobody_is_asked(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let config = format!("{ADVISOR_ON}  gate: risky\n  gateTimeoutMs: 1000\n");
    let w = world(&config, "notes\n");
    let (asked, hung) = (w.setup.work.join("ask-me"), w.setup.work.join("hang-me"));
    for dir in [&asked, &hung] {
        std::fs::create_dir_all(dir).expect("dir");
    }
    let out = w.setup.print(&tools, "One. [bash:rm -rf ask-me] [say:one]");
    assert!(out.status.success(), "{out:?}");
    assert!(
        asked.exists(),
        "an ask where nobody can be asked is blocked"
    );
    let after = request_text(&primary_requests(&w.primary)[1]);
    assert!(
        after.contains("nobody can be asked") && after.contains(GATE_ASK_REASON),
        "{after}"
    );
    let out = w
        .setup
        .print(&tools, "Two. [bash:rm -rf hang-me] [say:two]");
    assert!(out.status.success(), "{out:?}");
    assert!(
        !hung.exists(),
        "open where nobody can be asked: the call ran"
    );
    let gate_asks: Vec<String> = w
        .advisor
        .bodies()
        .iter()
        .map(Value::to_string)
        .filter(|b| b.contains("You are the gate"))
        .collect();
    assert_eq!(gate_asks.len(), 2, "both calls were put to the gate");
}

#[test]
fn gt5_pi_073_print_mode_blocks_an_ask_and_fails_open() {
    without_a_ui_nobody_is_asked(Line::Legacy);
}

#[test]
fn gt5_pi_16_print_mode_blocks_an_ask_and_fails_open() {
    without_a_ui_nobody_is_asked(Line::Current);
}
