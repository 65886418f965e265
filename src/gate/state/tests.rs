use std::collections::BTreeSet;

use super::*;
use crate::gate::classify::{classify, RiskKind, Workspace};
use crate::gate::ProposedAction;

fn reading(command: &str) -> ActionReading {
    let action = ProposedAction {
        tool: "bash".into(),
        input: serde_json::json!({ "command": command }),
        cwd: None,
    };
    classify(&action, &Workspace::new(std::path::Path::new("/w"), None))
}

fn policy(can_ask: bool, fail_mode: Option<GateFailMode>) -> GatePolicy {
    GatePolicy {
        mode: GateMode::Risky,
        fail_mode,
        can_ask,
        has_model: true,
    }
}

fn answered(decision: GateDecision) -> GateRun {
    GateRun {
        outcome: Ok(GateAnswer {
            decision,
            risk: GateRisk::High,
            reason: "because".into(),
        }),
        usage: Usage {
            input: 100,
            output: 10,
            cost: 0.01,
            ..Usage::default()
        },
    }
}

fn failed() -> GateRun {
    GateRun {
        outcome: Err(GateError::TimedOut(15_000)),
        usage: Usage::default(),
    }
}

/// Puts `command` to `state`, answering a model call with `run`.
fn gate(state: &mut GateState, command: &str, run: &GateRun, policy: GatePolicy) -> GateVerdict {
    let reading = reading(command);
    match state.begin(&reading, policy) {
        GateStep::Decided(v) => v,
        GateStep::AskModel => state.finish(reading.key, run, policy),
    }
}

#[test]
fn gt1_gt2_off_passes_everything_and_risky_passes_what_the_classifier_passes() {
    let mut state = GateState::default();
    let off = GatePolicy {
        mode: GateMode::Off,
        ..policy(true, None)
    };
    assert_eq!(
        state.begin(&reading("rm -rf /"), off),
        GateStep::Decided(verdict(
            GateDecision::Allow,
            GateRisk::Low,
            "The gate is off.",
            VerdictSource::Classifier
        ))
    );
    let GateStep::Decided(v) = state.begin(&reading("ls"), policy(true, None)) else {
        panic!("no model call for a routine command");
    };
    assert_eq!(
        (v.decision, v.source),
        (GateDecision::Allow, VerdictSource::Classifier)
    );
    assert_eq!(
        state.begin(&reading("rm -rf build"), policy(true, None)),
        GateStep::AskModel
    );
    let all = GatePolicy {
        mode: GateMode::All,
        ..policy(true, None)
    };
    assert_eq!(state.begin(&reading("ls"), all), GateStep::AskModel);
    let c = state.counts();
    assert_eq!(
        (c.proposed, c.ungated, c.passed, c.model_requests),
        (4, 1, 1, 0)
    );
}

#[test]
fn gt6_an_identical_action_reuses_the_decision_without_a_model_call() {
    let mut state = GateState::default();
    let p = policy(true, None);
    let first = gate(
        &mut state,
        "rm -rf build",
        &answered(GateDecision::Allow),
        p,
    );
    assert_eq!(first.source, VerdictSource::Model);
    let again = gate(&mut state, "r''m -rf build", &failed(), p);
    assert_eq!(
        (again.decision, again.source),
        (GateDecision::Allow, VerdictSource::Cache)
    );
    let c = state.counts();
    assert_eq!((c.model_requests, c.cache_hits, c.allowed), (1, 1, 2));
    assert_eq!(
        (c.input_tokens, c.output_tokens, c.cost),
        (100, 10, Some(0.01)),
        "GT8"
    );
}

#[test]
fn gt5_failures_go_to_the_fail_mode_and_are_not_cached() {
    for (can_ask, mode, expected) in [
        (true, None, GateDecision::Ask),
        (false, None, GateDecision::Allow),
        (true, Some(GateFailMode::Closed), GateDecision::Deny),
        (false, Some(GateFailMode::Ask), GateDecision::Deny),
        (true, Some(GateFailMode::Open), GateDecision::Allow),
    ] {
        let mut state = GateState::default();
        let v = gate(&mut state, "rm -rf build", &failed(), policy(can_ask, mode));
        assert_eq!(
            (v.decision, v.source),
            (expected, VerdictSource::FailMode),
            "{can_ask} {mode:?}"
        );
        assert!(
            v.reason.contains("did not answer within 15000 ms"),
            "{}",
            v.reason
        );
        let retried = gate(
            &mut state,
            "rm -rf build",
            &answered(GateDecision::Deny),
            policy(can_ask, mode),
        );
        assert_eq!(
            retried.source,
            VerdictSource::Model,
            "a failure is not cached"
        );
    }
    let mut state = GateState::default();
    let no_model = GatePolicy {
        has_model: false,
        ..policy(false, Some(GateFailMode::Closed))
    };
    let v = gate(&mut state, "rm -rf build", &failed(), no_model);
    assert_eq!(v.decision, GateDecision::Deny);
    assert!(v.reason.contains("no model"));
}

#[test]
fn gt7_the_breaker_lets_three_denials_stand_then_asks() {
    let mut state = GateState::default();
    let p = policy(true, None);
    let deny = answered(GateDecision::Deny);
    let mut seen = Vec::new();
    for i in 0..5 {
        let v = gate(&mut state, &format!("rm -rf dir{i}"), &deny, p);
        seen.push((v.decision, v.source));
    }
    assert_eq!(
        seen,
        [
            (GateDecision::Deny, VerdictSource::Model),
            (GateDecision::Deny, VerdictSource::Model),
            (GateDecision::Deny, VerdictSource::Model),
            (GateDecision::Ask, VerdictSource::Breaker),
            (GateDecision::Ask, VerdictSource::Breaker),
        ]
    );
    // An allow closes the run of denials: the next denial stands again.
    gate(&mut state, "rm -rf ok", &answered(GateDecision::Allow), p);
    assert_eq!(
        gate(&mut state, "rm -rf x", &deny, p).decision,
        GateDecision::Deny
    );
    let c = state.counts();
    assert_eq!((c.denied, c.breaker, c.asked), (4, 2, 2));
}

#[test]
fn gt7_ten_of_the_last_fifty_trip_it_even_with_allows_between() {
    let mut state = GateState::default();
    let p = policy(true, None);
    let mut decisions = Vec::new();
    for i in 0..12 {
        gate(
            &mut state,
            &format!("rm -rf ok{i}"),
            &answered(GateDecision::Allow),
            p,
        );
        let v = gate(
            &mut state,
            &format!("rm -rf no{i}"),
            &answered(GateDecision::Deny),
            p,
        );
        decisions.push(v.decision);
    }
    let denied = decisions
        .iter()
        .filter(|d| **d == GateDecision::Deny)
        .count();
    assert_eq!(denied, BREAKER_WINDOW_DENIALS);
    assert_eq!(decisions[10], GateDecision::Ask);
}

#[test]
fn gt7_where_nobody_can_be_asked_it_notes_and_a_closed_gate_keeps_denying() {
    let deny = answered(GateDecision::Deny);
    let mut state = GateState::default();
    let p = policy(false, None);
    let verdicts: Vec<GateVerdict> = (0..4)
        .map(|i| gate(&mut state, &format!("rm -rf d{i}"), &deny, p))
        .collect();
    let last = &verdicts[3];
    assert_eq!(
        (last.decision, last.source),
        (GateDecision::Allow, VerdictSource::Breaker)
    );
    assert!(
        last.reason.starts_with("Gate note:"),
        "never silent: {}",
        last.reason
    );
    assert!(last.reason.contains("because"));
    let mut closed = GateState::default();
    let p = policy(false, Some(GateFailMode::Closed));
    let decisions: BTreeSet<_> = (0..20)
        .map(|i| gate(&mut closed, &format!("rm -rf d{i}"), &deny, p).decision)
        .collect();
    assert_eq!(
        decisions,
        BTreeSet::from([GateDecision::Deny]),
        "GT5: closed never allows"
    );
}

#[test]
fn gt7_a_cached_denial_counts_for_the_breaker() {
    let mut state = GateState::default();
    let p = policy(true, None);
    let deny = answered(GateDecision::Deny);
    let sources: Vec<_> = (0..4)
        .map(|_| gate(&mut state, "git push --force", &deny, p))
        .map(|v| (v.decision, v.source))
        .collect();
    assert_eq!(sources[1], (GateDecision::Deny, VerdictSource::Cache));
    assert_eq!(sources[3], (GateDecision::Ask, VerdictSource::Breaker));
    assert_eq!(state.counts().model_requests, 1);
}

#[test]
fn gt2_the_reading_knows_its_risks() {
    assert_eq!(
        reading("git push --force").risks,
        BTreeSet::from([RiskKind::ForcePush, RiskKind::Network])
    );
}

#[test]
fn gt5_without_a_model_a_decided_step_stands_and_an_ask_goes_to_the_fail_mode() {
    let mut state = GateState::default();
    let risky = reading("rm -rf target");
    // The policy says a model is there; none is handed over when asked.
    let no_model = policy(false, Some(GateFailMode::Closed));
    let step = state.begin(&risky, no_model);
    assert_eq!(step, GateStep::AskModel);
    let verdict = state.without_model(step, risky.key, no_model);
    assert_eq!(verdict.decision, GateDecision::Deny);
    assert_eq!(state.counts().model_failures, 1);
    let harmless = reading("ls");
    let step = state.begin(&harmless, no_model);
    let GateStep::Decided(decided) = step.clone() else {
        panic!("the classifier passes ls");
    };
    assert_eq!(state.without_model(step, harmless.key, no_model), decided);
}
