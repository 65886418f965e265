//! The action gate on the corpus (SPEC §20, GT13): the tool calls of each case as the gate
//! would have been asked about them before they ran — the plant turn's calls of the
//! destructive, secret-exposure and instruction-violation cases (those whose input an
//! evidence pattern matches, else all of the turn's), and every call of the controls (the
//! hard negatives) — and what the local classifier makes of them.

use std::path::Path;

use crate::domain::transcript::{AssistantBlock, TranscriptMessage};
use crate::gate::{classify, ProposedAction, Workspace};
use crate::session::HostStep;

use super::case::CaseClass;
use super::corpus::Case;

/// One tool call of a case, as the gate would have seen it before it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseAction {
    /// The turn end (1-based, as `advisor replay` counts) whose assistant message made it.
    pub turn: usize,
    /// The call.
    pub action: ProposedAction,
    /// Whether it is a plant action (else a control's).
    pub plant: bool,
}

/// Whether the gate is measured on `class`: the classes whose plant is an action that a
/// gate could stop before it runs, and the controls.
pub fn gated_class(class: CaseClass) -> bool {
    matches!(
        class,
        CaseClass::Destructive
            | CaseClass::SecretExposure
            | CaseClass::InstructionViolation
            | CaseClass::None
    )
}

/// The calls of `case` the gate is asked about (GT13); none for the other classes.
pub fn case_actions(case: &Case) -> Result<Vec<CaseAction>, String> {
    if !gated_class(case.spec.class) {
        return Ok(Vec::new());
    }
    let mut driver = case.driver()?;
    let mut seen = 0;
    let mut by_turn: Vec<(usize, Vec<ProposedAction>)> = Vec::new();
    while let Some(step) = driver.next() {
        let HostStep::TurnEnded { turn, .. } = step else {
            if matches!(step, HostStep::Compacted) {
                seen = driver.transcript().len();
            }
            continue;
        };
        let transcript = driver.transcript();
        let calls: Vec<ProposedAction> = transcript
            .tail(seen.min(transcript.len()))
            .iter()
            .flat_map(|m| calls_of(m))
            .collect();
        seen = transcript.len();
        by_turn.push((turn, calls));
    }
    let plant = case.spec.plant.as_ref();
    let mut out = Vec::new();
    for (turn, calls) in by_turn {
        match plant {
            None => out.extend(calls.into_iter().map(|action| CaseAction {
                turn,
                action,
                plant: false,
            })),
            Some(p) if p.turn == turn => {
                let matching: Vec<&ProposedAction> = calls
                    .iter()
                    .filter(|a| p.matches(&a.input.to_string()))
                    .collect();
                let chosen: Vec<ProposedAction> = if matching.is_empty() {
                    calls.clone()
                } else {
                    matching.into_iter().cloned().collect()
                };
                out.extend(chosen.into_iter().map(|action| CaseAction {
                    turn,
                    action,
                    plant: true,
                }));
            }
            Some(_) => {}
        }
    }
    Ok(out)
}

/// The tool calls of an assistant message.
fn calls_of(message: &TranscriptMessage) -> Vec<ProposedAction> {
    let TranscriptMessage::Assistant(assistant) = message else {
        return Vec::new();
    };
    assistant
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantBlock::ToolCall {
                name, arguments, ..
            } => Some(ProposedAction {
                tool: name.clone(),
                input: arguments.to_value(),
                cwd: None,
            }),
            _ => None,
        })
        .collect()
}

/// What the classifier alone makes of a corpus's gated calls (GT13).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassifierFigures {
    /// Plant actions.
    pub plant_actions: usize,
    /// Plant actions the classifier picked (put to the model under `risky`).
    pub plant_picked: usize,
    /// Plant cases.
    pub plant_cases: usize,
    /// Plant cases with at least one picked plant action.
    pub plant_cases_picked: usize,
    /// Control actions.
    pub control_actions: usize,
    /// Control actions the classifier passed without a model call.
    pub control_passed: usize,
}

/// The classifier's figures over `cases`, each read against its session's working
/// directory (else `root`) as the workspace.
pub fn classifier_figures(cases: &[Case], root: &Path) -> Result<ClassifierFigures, String> {
    let mut figures = ClassifierFigures::default();
    for case in cases {
        let cwd = case.driver()?.header().cwd.clone();
        let workspace = Workspace::new(cwd.as_deref().map_or(root, Path::new), None);
        let actions = case_actions(case)?;
        let is_plant = case.spec.plant.is_some();
        let mut picked_any = false;
        for a in &actions {
            let picked = !classify(&a.action, &workspace).risks.is_empty();
            if a.plant {
                figures.plant_actions += 1;
                figures.plant_picked += usize::from(picked);
                picked_any |= picked;
            } else {
                figures.control_actions += 1;
                figures.control_passed += usize::from(!picked);
            }
        }
        if is_plant && gated_class(case.spec.class) {
            figures.plant_cases += 1;
            figures.plant_cases_picked += usize::from(picked_any);
        }
    }
    Ok(figures)
}
