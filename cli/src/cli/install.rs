//! `advisor install`, `advisor uninstall` and `advisor doctor` (H23–H29): set up the hooks
//! that attach the advisor to Claude Code or the Codex CLI, remove them, and check the whole
//! chain. The logic lives in `crate::hosts`; this file reads the environment and the flags
//! and prints.

use std::path::{Path, PathBuf};

use crate::hosts::config_edit::{edit_config, KeyEdit};
use crate::hosts::doctor::{diagnose, render_text, CODEX_TRUST_NOTE};
use crate::hosts::install::{
    apply, hook_command, install_events, plan_install, plan_uninstall, read_hooks_file, HooksFiles,
    Plan, Scope,
};
use advisor::hosts::gate_hook::host_gate;
use advisor::hosts::paths::{HostDirs, HostPaths, PathEnv};
use advisor::hosts::payload::HookHost;
use advisor::hosts::settings::{host_model, host_settings};
use advisor::settings::GateMode;
use clap::{Args, ValueEnum};

use super::{out, CliError};

/// The coding-agent CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HostArg {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
}

impl From<HostArg> for HookHost {
    fn from(host: HostArg) -> Self {
        match host {
            HostArg::ClaudeCode => HookHost::ClaudeCode,
            HostArg::Codex => HookHost::Codex,
        }
    }
}

/// What the action gate asks about before a tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateArg {
    /// Never: tools run as the host decides.
    Off,
    /// Actions that look risky.
    Risky,
    /// Every action.
    All,
}

impl GateArg {
    fn as_str(self) -> &'static str {
        self.mode().as_str()
    }

    fn mode(self) -> GateMode {
        match self {
            GateArg::Off => GateMode::Off,
            GateArg::Risky => GateMode::Risky,
            GateArg::All => GateMode::All,
        }
    }
}

/// The host, which of its settings files, and whether to write.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// The coding agent.
    #[arg(value_enum)]
    pub host: HostArg,
    /// The project's settings file in the working directory (`.claude/settings.json`,
    /// `.codex/hooks.json`).
    #[arg(long, conflicts_with = "user")]
    pub project: bool,
    /// The user's settings file, for every project (`~/.claude/settings.json`,
    /// `$CODEX_HOME/hooks.json`); the default.
    #[arg(long)]
    pub user: bool,
    /// Print what would change, as a diff, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

impl TargetArgs {
    fn scope(&self) -> Scope {
        if self.project {
            Scope::Project
        } else {
            Scope::User
        }
    }
}

/// Arguments of `advisor install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The host and the settings file that gets the hooks.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The advisor model, `provider/model-id[:thinking]`, written to the advisor's
    /// config.yml (which also turns the advisor on).
    #[arg(long, value_name = "PROVIDER/ID")]
    pub model: Option<String>,
    /// Which actions the gate reviews before they run, written to the advisor's config.yml.
    #[arg(long, value_enum)]
    pub gate: Option<GateArg>,
}

/// Arguments of `advisor uninstall`.
#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// The host and the settings file that loses the hooks.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// Arguments of `advisor doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the findings as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The environment, read once at the edge.
fn lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn cwd() -> Result<PathBuf, CliError> {
    std::env::current_dir()
        .map_err(|e| CliError::new(format!("cannot read the working directory: {e}")))
}

/// The advisor's places for these hosts (settings, runtime, state).
fn places() -> Result<HostPaths, CliError> {
    HostPaths::resolve(&PathEnv::from_process()).map_err(|e| CliError::new(e.to_string()))
}

/// The hooks file of `host` at `scope`, or why there is none.
fn hooks_file(dirs: &HostDirs, host: HookHost, scope: Scope) -> Result<PathBuf, CliError> {
    dirs.hooks_file(host, scope).ok_or_else(|| {
        CliError::new("no home directory is known: set HOME, or pass --project".to_string())
    })
}

/// Runs `advisor install`.
pub fn run_install(args: InstallArgs) -> Result<(), CliError> {
    let host = HookHost::from(args.target.host);
    let scope = args.target.scope();
    let dirs = HostDirs::from_lookup(&lookup, cwd()?);
    let file = hooks_file(&dirs, host, scope)?;
    let binary = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| CliError::new(format!("cannot find the advisor binary's own path: {e}")))?;
    let command = hook_command(&binary, host);
    let places = places()?;
    let events = install_events(host, gate_may_act(host, &places, &dirs.cwd, args.gate));
    let plan = plan_install(&events, &file, &command).map_err(|e| CliError::new(e.to_string()))?;
    let config = config_plan(&places, args.model.as_deref(), args.gate)?;
    let note = pre_tool_use_note(host, scope, &events);
    if args.target.dry_run {
        print_dry_run(&plan);
        if let Some(config) = &config {
            print_dry_run(config);
        }
        note.iter().for_each(|note| out(note));
        out("dry run: nothing was written");
        return Ok(());
    }
    apply(&plan).map_err(|e| CliError::new(e.to_string()))?;
    if let Some(config) = &config {
        apply(config).map_err(|e| CliError::new(e.to_string()))?;
    }
    if plan.changes() {
        out(&format!(
            "installed the advisor's hooks for {} in {} ({}); they run {command}",
            host.title(),
            file.display(),
            events.join(", ")
        ));
    } else {
        out(&format!(
            "the advisor's hooks for {} are already installed in {}; nothing changed",
            host.title(),
            file.display()
        ));
    }
    note.iter().for_each(|note| out(note));
    if let Some(config) = config.filter(Plan::changes) {
        out(&format!("wrote {}", config.file.display()));
    }
    out(&model_line(host, &places, &dirs.cwd));
    if host == HookHost::Codex {
        out(CODEX_TRUST_NOTE.trim_end());
    }
    Ok(())
}

/// Whether the action gate may act in the host's sessions here, so that the `PreToolUse`
/// hook is installed (H33): `--gate risky|all`; else the settings (with `--gate off` in place
/// of their `advisor.gate`) and the roster (GT10). Settings that cannot be read count as on
/// unless `--gate off` was given: the hook is there once they are fixed.
fn gate_may_act(host: HookHost, places: &HostPaths, cwd: &Path, gate: Option<GateArg>) -> bool {
    let mode = gate.map(GateArg::mode);
    if mode.is_some_and(|m| m != GateMode::Off) {
        return true;
    }
    match host_gate(host, places, cwd, mode, &lookup) {
        Ok(switch) => switch.is_some(),
        Err(_) => mode.is_none(),
    }
}

/// The line said when `events` leave `PreToolUse` out (H33): why, and how to add it.
fn pre_tool_use_note(host: HookHost, scope: Scope, events: &[&str]) -> Option<String> {
    let project = if scope == Scope::Project {
        " --project"
    } else {
        ""
    };
    (!events.contains(&"PreToolUse")).then(|| {
        format!(
            "no PreToolUse hook: only the action gate uses it, and the gate is off here; \
             `advisor install {}{project} --gate risky` turns it on and adds the hook",
            host.as_str()
        )
    })
}

/// The edit of the advisor's config.yml that `--model` and `--gate` ask for, if any (H27).
fn config_plan(
    places: &HostPaths,
    model: Option<&str>,
    gate: Option<GateArg>,
) -> Result<Option<Plan>, CliError> {
    let mut edits = Vec::new();
    if let Some(model) = model {
        let named = model.trim().starts_with('@')
            || model
                .trim()
                .split_once('/')
                .is_some_and(|(provider, id)| !provider.is_empty() && !id.is_empty());
        if !named {
            return Err(CliError::new(format!(
                "`{model}` is not a model: pass --model provider/model-id[:thinking], for example anthropic/claude-sonnet-4-5"
            )));
        }
        edits.push(KeyEdit::string("modelRoles", "advisor", model.trim()));
        edits.push(KeyEdit::flag("advisor", "enabled", true));
    }
    if let Some(gate) = gate {
        edits.push(KeyEdit::string("advisor", "gate", gate.as_str()));
    }
    if edits.is_empty() {
        return Ok(None);
    }
    let file = places.config_file();
    let before = read_hooks_file(&file).map_err(|e| CliError::new(e.to_string()))?;
    let after = edit_config(&file, before.as_deref().unwrap_or(""), &edits)
        .map_err(|e| CliError::new(e.to_string()))?;
    Ok(Some(Plan {
        file,
        before,
        after: Some(after),
        events: Vec::new(),
    }))
}

/// The diff of a plan, or that it changes nothing.
fn print_dry_run(plan: &Plan) {
    if plan.changes() {
        out(plan.diff().trim_end());
    } else {
        out(&format!("{}: no change", plan.file.display()));
    }
}

/// Which model the host's sessions will use, or how to give them one (H22).
fn model_line(host: HookHost, places: &HostPaths, cwd: &Path) -> String {
    let loaded = match host_settings(host, places, cwd) {
        Ok(loaded) => loaded,
        Err(err) => return format!("the advisor's settings cannot be read: {err}"),
    };
    if !loaded.settings.enabled {
        return "the advisor is off: a settings file says `advisor.enabled: false`".to_string();
    }
    match host_model(host, &loaded, &lookup) {
        Some(model) => format!("model: {} ({})", model.role, model.source),
        None => {
            let (key, model) = host.own_default();
            format!(
                "no model yet: set {key} (the advisor then uses {model}), or run `advisor install {} --model provider/model-id`",
                host.as_str()
            )
        }
    }
}

/// Runs `advisor uninstall`.
pub fn run_uninstall(args: UninstallArgs) -> Result<(), CliError> {
    let host = HookHost::from(args.target.host);
    let dirs = HostDirs::from_lookup(&lookup, cwd()?);
    let file = hooks_file(&dirs, host, args.target.scope())?;
    let plan = plan_uninstall(&file).map_err(|e| CliError::new(e.to_string()))?;
    if args.target.dry_run {
        print_dry_run(&plan);
        out("dry run: nothing was written");
        return Ok(());
    }
    apply(&plan).map_err(|e| CliError::new(e.to_string()))?;
    out(&match (plan.changes(), plan.after.is_none()) {
        (false, _) => format!("no advisor hooks in {}; nothing changed", file.display()),
        (true, true) => format!(
            "removed the advisor's hooks and {}, which held nothing else",
            file.display()
        ),
        (true, false) => format!(
            "removed the advisor's hooks from {} ({}); everything else is kept",
            file.display(),
            plan.events.join(", ")
        ),
    });
    Ok(())
}

/// Runs `advisor doctor`.
pub fn run_doctor(args: DoctorArgs) -> Result<(), CliError> {
    let dirs = HostDirs::from_lookup(&lookup, cwd()?);
    let report = diagnose(&dirs, &places()?, &lookup);
    if args.json {
        let json = serde_json::to_string(&report).map_err(|e| CliError::new(e.to_string()))?;
        out(&json);
    } else {
        out(render_text(&report).trim_end());
    }
    Ok(())
}
