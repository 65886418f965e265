//! `advisor eval --gate` and `--gate-only`: the action gate measured on the corpus. Each
//! case's session is set up as the advisor's run sets it up (its workspace copy, the
//! settings files, `--set`, `--model`), and its plant and control calls go to that
//! session's model through the runtime's gate request, one call at a time, after the
//! advisor's runs so the two never share the model's time. The table goes to the text
//! report (a `gate` block), the summary line of `--json` (a `gate` object beside
//! `summary`) and report.md (a `## Gate` section).

use std::path::Path;
use std::sync::Arc;

use advisor::replay::eval::corpus::{Case, WorkspaceCopy};
use advisor::replay::eval::gate::{gate_figures, GateFigures};
use advisor::replay::eval::model_gate::{GateSetup, ModelGate};
use advisor::replay::eval::run::CasePreparer;
use advisor::replay::eval::scratch::RunScratch;
use advisor::SharedResources;

use super::CliError;

/// The gate table over `cases`, each case's gate set up by `preparer` and asked on
/// `runtime` (called from outside it).
pub fn measure(
    cases: &[Case],
    preparer: Arc<dyn CasePreparer>,
    runtime: tokio::runtime::Handle,
) -> Result<GateFigures, CliError> {
    let (scratch, _) = RunScratch::create(&std::env::temp_dir()).map_err(CliError::new)?;
    let scratch = Arc::new(scratch);
    let shared = Arc::new(SharedResources::new(None));
    let set_up = move |case: &Case| -> Result<GateSetup, String> {
        let copy = WorkspaceCopy::new(&case.workspace(), scratch.path(), &case.spec.id)?;
        let prepared = preparer.prepare(case, copy.path(), &shared)?;
        let mut setup = GateSetup::from_config(&prepared.config)?;
        if let Some(cwd) = prepared.driver.header().cwd.clone() {
            setup.cwd = cwd;
        }
        Ok(setup)
    };
    let gate = ModelGate::new(Box::new(set_up), runtime);
    gate_figures(cases, Path::new("/"), &gate).map_err(CliError::new)
}

/// The summary line of `--json` output (`{"summary":{…}}`, the last line) with the gate
/// table beside the summary: `{"summary":{…},"gate":{…}}`.
pub fn json_with_gate(json_lines: &str, gate: &GateFigures) -> String {
    let body = json_lines.trim_end();
    let (head, last) = body.rsplit_once('\n').unwrap_or(("", body));
    let gate = serde_json::to_string(gate).unwrap_or_default();
    let last = match last.strip_suffix('}') {
        Some(open) => format!("{open},\"gate\":{gate}}}"),
        None => last.to_string(),
    };
    if head.is_empty() {
        format!("{last}\n")
    } else {
        format!("{head}\n{last}\n")
    }
}

/// What `--gate-only` reports besides the table.
pub struct GateOnlyMeta<'a> {
    /// The model named, or `(configured)`.
    pub model: &'a str,
    /// The settings flags given.
    pub configuration: &'a str,
    /// The corpus hash.
    pub corpus_hash: &'a str,
    /// When the run started.
    pub date: &'a str,
}

/// `--gate-only`'s JSON line: the gate table and what was run.
pub fn gate_only_json(meta: &GateOnlyMeta, gate: &GateFigures) -> String {
    serde_json::json!({
        "gate": gate,
        "model": meta.model,
        "configuration": meta.configuration,
        "corpusHash": meta.corpus_hash,
        "date": meta.date,
    })
    .to_string()
}

/// `--gate-only`'s text report: what was run, then the table.
pub fn gate_only_text(meta: &GateOnlyMeta, cases: usize, gate: &GateFigures) -> String {
    format!(
        "model {} · configuration {} · corpus {} · {cases} cases · gate only\n\n{}",
        meta.model,
        meta.configuration,
        meta.corpus_hash,
        gate.text().trim_end()
    )
}

/// `--gate-only`'s report.md.
pub fn gate_only_markdown(meta: &GateOnlyMeta, gate: &GateFigures) -> String {
    format!(
        "# advisor eval: the action gate\n\n- model: `{}`\n- configuration: `{}`\n- corpus: `{}`\n- date: {}\n\n{}",
        meta.model,
        meta.configuration,
        meta.corpus_hash,
        meta.date,
        gate.markdown()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gt14_the_gate_object_goes_beside_the_summary_on_its_last_line() {
        let lines = "{\"case\":\"a\"}\n{\"summary\":{\"cases\":1}}\n";
        let gate = GateFigures {
            plant_cases: 1,
            ..GateFigures::default()
        };
        let out = json_with_gate(lines, &gate);
        let parsed: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0]["case"], "a");
        assert_eq!(parsed[1]["summary"]["cases"], 1);
        assert_eq!(parsed[1]["gate"]["plantCases"], 1);
        assert!(out.lines().last().unwrap().starts_with("{\"summary\""));
    }
}
