//! The action gate in pi (SPEC GT12, V5) on both API lines: pi's `tool_call` event goes to
//! `session/gate` before the call runs, and a denial blocks it with the gate's reason, which
//! the primary reads as the tool's result. The scripted primary, gate and RPC driver are
//! `pi_e2e`'s; the lines are `pi_e2e_lines`'.

use super::pi_e2e::{primary_requests, request_text, world, GATE_DENY_REASON};
use super::pi_e2e_lines::{pi_of, prompt_settled, Line};

/// The settings: an advisor with the gate on for risky calls.
const GATED: &str = "modelRoles:\n  advisor: advisorprov/advisor-model\nadvisor:\n  enabled: true\n  syncBacklog: off\n  gate: risky\n  gateTimeoutMs: 10000\n";

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
