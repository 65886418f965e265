//! Whether a Claude Code or Codex session's action gate can act, and the `PreToolUse` hook it
//! needs for that (H33, GT10, GT12).
//!
//! The gate acts only at `PreToolUse`; with the gate off that hook answers nothing but still
//! costs the host one process per tool call. So `advisor install` writes it only when the
//! gate may be on ([`gate_switch`], [`host_gate`]), `advisor doctor` warns when the gate is on
//! and the hook is missing, and a session whose gate is on but that sees tool calls end
//! without any having been announced tells its user once ([`PreToolUseWatch`]).

use std::fmt;
use std::path::Path;

use super::paths::HostPaths;
use super::payload::{HookEvent, HookHost};
use super::settings::{host_settings, host_watchdog_config};
use crate::providers::Catalog;
use crate::roster::{Roster, RosterSettings};
use crate::settings::{GateMode, SettingsError};

/// What turns a session's action gate on (GT10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateSwitch {
    /// `advisor.gate` in the settings.
    Settings(GateMode),
    /// A roster entry's own `gate`.
    RosterEntry {
        /// The entry's name.
        name: String,
        /// Its `gate`.
        mode: GateMode,
    },
}

impl fmt::Display for GateSwitch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GateSwitch::Settings(mode) => write!(f, "advisor.gate: {}", mode.as_str()),
            GateSwitch::RosterEntry { name, mode } => {
                write!(f, "the roster entry {name}'s gate: {}", mode.as_str())
            }
        }
    }
}

/// One roster entry as the gate sees it: its name, whether it is enabled, its own `gate`.
pub type EntryGate<'a> = (&'a str, bool, Option<GateMode>);

/// What turns the gate on for a session whose `advisor.gate` is `settings` and whose roster
/// has `entries` (GT10), `None` when it is off: without entries, `advisor.gate` unless it is
/// off; with entries, the first that is enabled and whose gate (its own, else `advisor.gate`)
/// is not off.
pub fn gate_switch<'a>(
    settings: GateMode,
    entries: impl IntoIterator<Item = EntryGate<'a>>,
) -> Option<GateSwitch> {
    let mut any = false;
    for (name, enabled, own) in entries {
        any = true;
        let mode = own.unwrap_or(settings);
        if !enabled || mode == GateMode::Off {
            continue;
        }
        return Some(match own {
            Some(mode) => GateSwitch::RosterEntry {
                name: name.to_string(),
                mode,
            },
            None => GateSwitch::Settings(settings),
        });
    }
    (!any && settings != GateMode::Off).then_some(GateSwitch::Settings(settings))
}

/// The entries of `roster` as [`gate_switch`] takes them.
pub fn roster_gates(roster: &Roster) -> impl Iterator<Item = EntryGate<'_>> {
    roster
        .advisors
        .iter()
        .map(|a| (a.name.as_str(), a.enabled.value, a.gate.value))
}

/// What turns the gate on for a `host` session working in `cwd` as the files say now (H33):
/// the settings as [`host_settings`] loads them — their `advisor.gate` replaced by `gate`
/// when given (what `advisor install --gate` is about to write) — and the roster found where
/// WATCHDOG.md is; `env` looks a variable up. Blocking (it reads the files).
pub fn host_gate(
    host: HookHost,
    paths: &HostPaths,
    cwd: &Path,
    gate: Option<GateMode>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<GateSwitch>, SettingsError> {
    let loaded = host_settings(host, paths, cwd)?;
    let watchdog = host_watchdog_config(host, paths, cwd, env);
    let settings = RosterSettings::from_values(loaded.advisor_role.clone(), &loaded.settings);
    let catalog = Catalog::builtin().unwrap_or_else(|_| Catalog::empty());
    let roster = crate::roster::load(&watchdog, &settings, &catalog, None);
    let mode = gate.unwrap_or(loaded.settings.gate.mode);
    Ok(gate_switch(mode, roster_gates(&roster)))
}

/// The line a session tells its user when its gate is on but the host announces no tool
/// call before it runs (H33).
pub fn missing_pre_tool_use_notice(host: HookHost) -> String {
    format!(
        "advisor: the action gate is on but cannot act: the PreToolUse hook is not installed; \
         run `advisor install {}` again to add it",
        host.as_str()
    )
}

/// Watches a session's hook events for tool calls that end without having been announced
/// while its gate is on (H33): the `PreToolUse` hook is not installed.
#[derive(Debug, Clone, Default)]
pub struct PreToolUseWatch {
    gate_on: bool,
    events: u64,
    announced: bool,
    told: bool,
}

impl PreToolUseWatch {
    /// A watch for a session whose gate is on (`gate_on`) or off (it never tells).
    pub fn new(gate_on: bool) -> Self {
        Self {
            gate_on,
            ..Self::default()
        }
    }

    /// Takes one event of the session on `host`; the line to tell the user, once: at a
    /// `PostToolUse` with no `PreToolUse` seen before it, unless it is the session's first
    /// event (its call may have been announced to a session before this one).
    pub fn observe(&mut self, event: &HookEvent, host: HookHost) -> Option<String> {
        self.events += 1;
        match event {
            HookEvent::PreToolUse { .. } => self.announced = true,
            HookEvent::PostToolUse { .. }
                if self.gate_on && !self.announced && !self.told && self.events > 1 =>
            {
                self.told = true;
                return Some(missing_pre_tool_use_notice(host));
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn pre() -> HookEvent {
        HookEvent::PreToolUse {
            tool_name: "Bash".into(),
            tool_input: Value::Null,
            tool_use_id: None,
        }
    }

    fn post() -> HookEvent {
        HookEvent::PostToolUse {
            tool_name: "Bash".into(),
            tool_input: Value::Null,
            tool_use_id: None,
            tool_response: Value::Null,
        }
    }

    fn prompt() -> HookEvent {
        HookEvent::UserPromptSubmit {
            prompt: "go".into(),
        }
    }

    #[test]
    fn h33_gt10_without_a_roster_advisor_gate_decides() {
        let none: [EntryGate; 0] = [];
        assert_eq!(gate_switch(GateMode::Off, none), None);
        assert_eq!(
            gate_switch(GateMode::Risky, none),
            Some(GateSwitch::Settings(GateMode::Risky))
        );
        assert_eq!(
            gate_switch(GateMode::All, none).unwrap().to_string(),
            "advisor.gate: all"
        );
    }

    #[test]
    fn h33_gt10_a_roster_entry_s_own_gate_turns_it_on_or_off() {
        let on = gate_switch(GateMode::Off, [("Security", true, Some(GateMode::All))]);
        assert_eq!(
            on,
            Some(GateSwitch::RosterEntry {
                name: "Security".into(),
                mode: GateMode::All
            })
        );
        assert_eq!(
            on.unwrap().to_string(),
            "the roster entry Security's gate: all"
        );
        // Every entry's own gate off: the settings' gate is never asked.
        assert_eq!(
            gate_switch(GateMode::Risky, [("A", true, Some(GateMode::Off))]),
            None
        );
        // An entry without its own gate follows the settings.
        assert_eq!(
            gate_switch(GateMode::Risky, [("A", true, None)]),
            Some(GateSwitch::Settings(GateMode::Risky))
        );
        assert_eq!(gate_switch(GateMode::Off, [("A", true, None)]), None);
    }

    #[test]
    fn h33_gt10_a_disabled_entry_s_gate_does_not_count() {
        let entries = [
            ("Paused", false, Some(GateMode::All)),
            ("Second", true, Some(GateMode::Risky)),
        ];
        assert_eq!(
            gate_switch(GateMode::Off, entries),
            Some(GateSwitch::RosterEntry {
                name: "Second".into(),
                mode: GateMode::Risky
            })
        );
        assert_eq!(
            gate_switch(GateMode::Off, [("Paused", false, Some(GateMode::All))]),
            None
        );
    }

    #[test]
    fn h33_a_tool_call_ending_unannounced_with_the_gate_on_is_told_once() {
        let mut watch = PreToolUseWatch::new(true);
        assert_eq!(watch.observe(&prompt(), HookHost::Codex), None);
        let told = watch.observe(&post(), HookHost::Codex).expect("told");
        assert!(
            told.contains("the action gate is on but cannot act")
                && told.contains("`advisor install codex`"),
            "{told}"
        );
        assert_eq!(watch.observe(&post(), HookHost::Codex), None, "once");
    }

    #[test]
    fn h33_announced_calls_the_gate_off_or_a_first_event_tell_nothing() {
        let mut watch = PreToolUseWatch::new(true);
        watch.observe(&prompt(), HookHost::ClaudeCode);
        watch.observe(&pre(), HookHost::ClaudeCode);
        assert_eq!(watch.observe(&post(), HookHost::ClaudeCode), None);
        let mut off = PreToolUseWatch::new(false);
        off.observe(&prompt(), HookHost::ClaudeCode);
        assert_eq!(off.observe(&post(), HookHost::ClaudeCode), None);
        // A session opened by a PostToolUse: its call may have been announced to the one
        // before it; the next unannounced call is told.
        let mut joined = PreToolUseWatch::new(true);
        assert_eq!(joined.observe(&post(), HookHost::ClaudeCode), None);
        assert!(joined.observe(&post(), HookHost::ClaudeCode).is_some());
    }
}
