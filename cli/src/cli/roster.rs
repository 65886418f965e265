//! `advisor roster`: prints the roster of named advisors resolved from the WATCHDOG.yml
//! files (§15, RO14): each advisor, each field with where it came from, and the warnings,
//! as text or (`--json`) as one JSON document. Everything goes to standard output; the
//! sessions of `advisor replay` and `advisor serve` run the advisors it lists (RO23).

use std::fmt::Write as _;
use std::io::Write;

use clap::Args;

use advisor::providers::Catalog;
use advisor::roster::{load, Roster, RosterAdvisor, RosterSettings, Sourced};
use advisor::settings::{config_files, describe_cadence, read_config_layers, SyncBacklog};
use advisor::Redactor;

use super::watchdog::DiscoveryArgs;
use super::CliError;

/// Arguments of `advisor roster`.
#[derive(Debug, Args)]
pub struct RosterArgs {
    /// Where to discover from.
    #[command(flatten)]
    pub discovery: DiscoveryArgs,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `advisor roster`: reads the settings files (K1) for the fallbacks
/// (`modelRoles.advisor`, `advisor.maxNotesPerUpdate`, `advisor.redactSecrets`), then the
/// roster, and prints it.
pub fn run(args: RosterArgs) -> Result<(), CliError> {
    let config = args.discovery.config()?;
    let layers = read_config_layers(&config_files(config.agent_dir.as_deref(), &config.cwd))
        .map_err(|err| CliError::new(err.to_string()))?;
    let settings = RosterSettings::from_layers(&layers);
    let redact = layers
        .iter()
        .rev()
        .find_map(|(_, layer, _)| layer.redact_secrets)
        .unwrap_or(true);
    let redactor = if redact {
        Some(Redactor::new().map_err(|err| CliError::new(err.to_string()))?)
    } else {
        None
    };
    let catalog = Catalog::builtin().map_err(|err| CliError::new(err.to_string()))?;
    let roster = load(&config, &settings, &catalog, redactor.as_ref());
    let text = if args.json {
        json(&roster)?
    } else {
        human(&roster)
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|err| CliError::new(format!("cannot write to standard output: {err}")))
}

/// The roster as one JSON document (one line, then a newline); each warning also carries
/// its line as the text form prints it (`text`).
pub fn json(roster: &Roster) -> Result<String, CliError> {
    let failed =
        |err: serde_json::Error| CliError::new(format!("cannot write the roster as JSON: {err}"));
    let mut value = serde_json::to_value(roster).map_err(failed)?;
    if let Some(warnings) = value.get_mut("warnings").and_then(|w| w.as_array_mut()) {
        for (warning, source) in warnings.iter_mut().zip(&roster.warnings) {
            if let Some(object) = warning.as_object_mut() {
                object.insert("text".into(), source.to_string().into());
            }
        }
    }
    let mut text = serde_json::to_string(&value).map_err(failed)?;
    text.push('\n');
    Ok(text)
}

/// The roster as text: the files read, the shared instructions, one block per advisor
/// (each field with its source in brackets), then the warnings.
pub fn human(roster: &Roster) -> String {
    let mut out = String::new();
    if roster.files.is_empty() {
        out.push_str("no roster file (WATCHDOG.yml or WATCHDOG.yaml) found\n");
    } else {
        out.push_str("roster files:\n");
        for file in &roster.files {
            let _ = writeln!(out, "  {}", file.display());
        }
    }
    if let Some(shared) = &roster.instructions {
        let files: Vec<String> = shared
            .files
            .iter()
            .map(|file| file.display().to_string())
            .collect();
        let _ = writeln!(out, "\nshared instructions  [{}]", files.join(", "));
        indented(&mut out, &shared.text);
    }
    if let Some(notes) = &roster.max_notes_per_update {
        let _ = writeln!(
            out,
            "\nshared maxNotesPerUpdate: {}  [{}]",
            notes.value, notes.source
        );
    }
    if roster.is_empty() {
        out.push_str("\nno named advisor: the unnamed advisor runs alone\n");
    }
    for advisor in &roster.advisors {
        advisor_block(&mut out, advisor, roster.inherited_sync_backlog.as_ref());
    }
    if !roster.warnings.is_empty() {
        out.push_str("\nwarnings:\n");
        for warning in &roster.warnings {
            let _ = writeln!(out, "  {warning}");
        }
    }
    out
}

/// One advisor's block; `inherited` is the `advisor.syncBacklog` an entry without its own
/// follows (CA9).
fn advisor_block(
    out: &mut String,
    advisor: &RosterAdvisor,
    inherited: Option<&Sourced<SyncBacklog>>,
) {
    let _ = writeln!(
        out,
        "\nadvisor {} (\"{}\")  [{}]",
        advisor.slug,
        advisor.name,
        advisor.file.display()
    );
    for replaced in &advisor.overrides {
        let _ = writeln!(out, "  replaces the entry in {}", replaced.display());
    }
    let enabled = if advisor.enabled.value {
        "yes"
    } else {
        "no (paused)"
    };
    line(out, "enabled", enabled, &advisor.enabled);
    line(
        out,
        "model",
        &advisor.model.value.to_string(),
        &advisor.model,
    );
    let tools: Vec<&str> = advisor.tools.value.iter().map(|t| t.as_str()).collect();
    let tools = if tools.is_empty() {
        "none".to_string()
    } else {
        tools.join(", ")
    };
    line(out, "tools", &tools, &advisor.tools);
    line(
        out,
        "maxNotesPerUpdate",
        &advisor.max_notes_per_update.value.to_string(),
        &advisor.max_notes_per_update,
    );
    let policy = advisor
        .policy
        .value
        .map_or("the session's (advisor.policy)", |policy| policy.as_str());
    line(out, "policy", policy, &advisor.policy);
    line(
        out,
        "maxSeverity",
        advisor.max_severity.value.as_str(),
        &advisor.max_severity,
    );
    // SP1: shown when the entry sets it; otherwise advisor.toolBudget applies.
    if let Some(budget) = advisor.tool_budget.value {
        line(out, "toolBudget", &budget.to_string(), &advisor.tool_budget);
    }
    // SP6: shown when the entry sets it; otherwise advisor.maxSpendRatio applies.
    if let Some(ratio) = advisor.max_spend_ratio.value {
        line(
            out,
            "maxSpendRatio",
            &ratio.to_string(),
            &advisor.max_spend_ratio,
        );
    }
    let when = match &advisor.when.value {
        Some(filter) => format!("paths {}", filter.patterns().join(", ")),
        None => "every update".to_string(),
    };
    line(out, "when", &when, &advisor.when);
    cadence_lines(out, advisor, inherited);
    match &advisor.instructions.value {
        Some(text) => {
            let _ = writeln!(out, "  instructions:  [{}]", advisor.instructions.source);
            indented(out, text);
        }
        None => line(out, "instructions", "none", &advisor.instructions),
    }
}

/// The effective cadence and catch-up (CA6): `cadence: agent-end · every 3 eligible
/// updates`, `catch-up: inherit → strict (advisor.syncBacklog)`, each with its sources.
fn cadence_lines(
    out: &mut String,
    advisor: &RosterAdvisor,
    inherited: Option<&Sourced<SyncBacklog>>,
) {
    let (mode, interval) = (&advisor.review_mode.source, &advisor.review_interval.source);
    let sources = if mode == interval {
        mode.to_string()
    } else {
        format!("reviewMode: {mode}; reviewInterval: {interval}")
    };
    let cadence = describe_cadence(advisor.review_mode.value, advisor.review_interval.value);
    let _ = writeln!(out, "  cadence: {cadence}  [{sources}]");
    let catch_up = match advisor.sync_backlog.value {
        Some(own) => own.to_string(),
        None => {
            let followed = inherited.map_or(SyncBacklog::Off, |s| s.value);
            format!("inherit → {followed} (advisor.syncBacklog)")
        }
    };
    line(out, "catch-up", &catch_up, &advisor.sync_backlog);
}

/// `  key: value  [source]`.
fn line<T>(out: &mut String, key: &str, value: &str, sourced: &Sourced<T>) {
    let _ = writeln!(out, "  {key}: {value}  [{}]", sourced.source);
}

/// `text`, each line indented by four spaces (blank lines stay empty).
fn indented(out: &mut String, text: &str) {
    for text_line in text.lines() {
        if text_line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "    {text_line}");
        }
    }
}
