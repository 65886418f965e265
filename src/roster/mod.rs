//! The roster of named advisors: `WATCHDOG.yml` discovery and resolution (SPEC §15, RO1–RO17).
//!
//! This is the configuration layer: [`load`] finds every `WATCHDOG.yml` / `WATCHDOG.yaml`
//! where WATCHDOG.md is found (RO1), reads them with the same caps and confinement (RO3),
//! checks each file and entry (RO4–RO6), merges them by slug (RO2, RO7) and resolves every
//! field of every advisor, recording where each value came from ([`Source`]); [`refresh`]
//! re-reads only when a roster file or an import changed (RO21). Nothing here starts a
//! reviewer: a host puts the result in `RuntimeConfig::roster` as a [`RosterSetup`], and
//! the supervisor runs one advisor per entry (RO12–RO24), with the `policy`, `maxSeverity`
//! and `when` checked and kept here (RO15–RO17).
//!
//! All functions that touch the filesystem are blocking; call them at the program's edge
//! or from the blocking pool.

mod cache;
mod parse;
mod path_filter;
mod setup;
mod tools;
mod yaml;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;

pub use cache::{RosterCache, RosterCacheStats};
pub use parse::MAX_NAME_CHARS;
pub(crate) use parse::{clean_name, slugify, unprintable};
pub use path_filter::PathFilter;
pub use setup::{RosterModels, RosterReload, RosterSetup};
pub use tools::RosterTool;

use crate::domain::advice::Severity;
use crate::model::ThinkingLevel;
use crate::providers::{expand_role_alias, resolve_role, Catalog, ProviderError};
use crate::redact::Redactor;
use crate::regular_file::{clip, SHOWN_CHARS};
use crate::settings::{
    provider_listed, AdvisorSettings, ReviewMode, SettingsLayer, SettingsWarning, SyncBacklog,
};
use crate::texts::{fill, Table};
use crate::watchdog::{
    candidates_named, read_text, size_text, Budget, Candidate, Confinement, Fingerprint, ReadError,
    WatchdogConfig, MAX_FILE_BYTES, MAX_TOTAL_BYTES,
};
use parse::{parse_file, Entry, ParsedFile};

/// What the roster says to the user about its files (`config/prompts/roster-warnings.txt`).
const TEXTS: Table = Table(include_str!("../../config/prompts/roster-warnings.txt"));

/// The line `key` of the roster's texts, filled with `vars`.
pub(crate) fn text(key: &'static str, vars: &[(&str, &str)]) -> String {
    fill(TEXTS.get(key), vars)
}

/// The roster file names, in the order they are looked for at each place (RO1).
pub const ROSTER_FILES: [&str; 2] = ["WATCHDOG.yml", "WATCHDOG.yaml"];

/// The largest `maxNotesPerUpdate` an advisor gets (RO10); a larger value is capped.
pub const MAX_NOTES_PER_UPDATE: usize = 32;

/// The most advisors a roster runs (RO24): a cloned repository's file of a thousand
/// entries must not cost the user a thousand model calls a turn. Entries past it (in a
/// file, then in the merged roster) are skipped with one warning per file.
pub const MAX_ADVISORS: usize = 16;

/// The most `when.paths` globs one advisor keeps (RO17, RO24); the rest are dropped with a
/// warning.
pub const MAX_GLOBS_PER_ADVISOR: usize = 64;

/// The most `when.paths` globs one roster file keeps over all its entries (RO17, RO24): a
/// 10,000-glob file cost 240 MB and 2 s per session before.
pub const MAX_GLOBS_PER_FILE: usize = 256;

/// `maxNotesPerUpdate` when nothing sets it (RO10).
pub const DEFAULT_NOTES_PER_UPDATE: usize = 4;

/// Where a resolved value came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Source {
    /// Nothing set it: the rule's default.
    Default,
    /// The advisor's own entry in this roster file.
    Entry {
        /// The roster file.
        file: PathBuf,
    },
    /// The top level of this roster file.
    TopLevel {
        /// The roster file.
        file: PathBuf,
    },
    /// An advisor setting (K1).
    Setting {
        /// The key, e.g. `modelRoles.advisor`.
        key: &'static str,
        /// The settings file that sets it, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        file: Option<PathBuf>,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str(&text("sourceDefault", &[])),
            Source::Entry { file } => write!(f, "{}", file.display()),
            Source::TopLevel { file } => f.write_str(&text(
                "sourceTopLevel",
                &[("file", &file.display().to_string())],
            )),
            Source::Setting { key, file: None } => {
                f.write_str(&text("sourceSetting", &[("key", key)]))
            }
            Source::Setting {
                key,
                file: Some(file),
            } => f.write_str(&text(
                "sourceSettingIn",
                &[("key", key), ("file", &file.display().to_string())],
            )),
        }
    }
}

/// A value with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub source: Source,
}

impl<T> Sourced<T> {
    /// `value` from `source`.
    pub fn new(value: T, source: Source) -> Self {
        Self { value, source }
    }

    /// `value` as the default.
    pub fn default_value(value: T) -> Self {
        Self::new(value, Source::Default)
    }
}

/// Something about the roster files worth a line to the user; never an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RosterWarning {
    /// The roster file.
    pub file: PathBuf,
    /// The entry: `"Name"` (quoted) or `#N` (its position in the file's list) when it has
    /// no usable name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advisor: Option<String>,
    /// The key concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What is wrong and what was done about it.
    pub message: String,
}

impl RosterWarning {
    /// A warning about a file or one of its top-level keys.
    fn file(file: &Path, field: Option<&str>, message: String) -> Self {
        Self {
            file: file.to_path_buf(),
            advisor: None,
            field: field.map(str::to_string),
            message,
        }
    }

    /// A warning about one entry.
    fn entry(file: &Path, label: &str, field: Option<&str>, message: String) -> Self {
        Self {
            file: file.to_path_buf(),
            advisor: Some(label.to_string()),
            field: field.map(str::to_string),
            message,
        }
    }
}

impl fmt::Display for RosterWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.file.display().to_string();
        let file = clip(&path, SHOWN_CHARS);
        let line = match &self.advisor {
            Some(advisor) => text(
                "entryWarning",
                &[
                    ("file", &file),
                    ("advisor", advisor),
                    ("message", &self.message),
                ],
            ),
            None => text(
                "fileWarning",
                &[("file", &file), ("message", &self.message)],
            ),
        };
        f.write_str(&line)
    }
}

/// An advisor's own delivery policy (RO15): the session policy values (P1, D3, D4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyChoice {
    /// `defer` (P1).
    Defer,
    /// `interrupt` (D3).
    Interrupt,
    /// `reconfirm` (D4).
    Reconfirm,
}

impl PolicyChoice {
    /// The value as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyChoice::Defer => "defer",
            PolicyChoice::Interrupt => "interrupt",
            PolicyChoice::Reconfirm => "reconfirm",
        }
    }
}

impl FromStr for PolicyChoice {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "defer" => Ok(Self::Defer),
            "interrupt" => Ok(Self::Interrupt),
            "reconfirm" => Ok(Self::Reconfirm),
            _ => Err(()),
        }
    }
}

/// The model an advisor uses (RO8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ModelChoice {
    /// A role string that resolves (M1).
    Resolved {
        /// The role string as written.
        role: String,
        /// The provider.
        provider: String,
        /// The model id at the provider.
        model: String,
        /// The reasoning effort.
        thinking: ThinkingLevel,
    },
    /// No usable model: the advisor shows `no model` in status and the others run.
    NoModel {
        /// The role string that did not resolve, if there was one.
        #[serde(skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        /// Why.
        reason: String,
    },
}

impl ModelChoice {
    /// `provider/model` at `thinking`, as a host that builds a roster in code names it
    /// (its role string is `provider/model:thinking`).
    pub fn resolved(provider: &str, model: &str, thinking: ThinkingLevel) -> Self {
        ModelChoice::Resolved {
            role: format!("{provider}/{model}:{}", thinking.as_str()),
            provider: provider.to_string(),
            model: model.to_string(),
            thinking,
        }
    }
}

impl fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelChoice::Resolved {
                provider,
                model,
                thinking,
                ..
            } => write!(f, "{provider}/{model} (thinking {})", thinking.as_str()),
            ModelChoice::NoModel { reason, .. } => {
                f.write_str(&text("noModel", &[("reason", reason)]))
            }
        }
    }
}

/// One advisor of the roster, every field resolved with its source.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RosterAdvisor {
    /// The slug (RO7): its id, and its part of file names and tool session ids.
    pub slug: String,
    /// `name` as written (trimmed).
    pub name: String,
    /// The roster file of the entry in effect.
    pub file: PathBuf,
    /// Less specific files whose entry of the same slug this one replaces (RO2).
    pub overrides: Vec<PathBuf>,
    /// `enabled` (default true; false: listed as paused, no actors built).
    pub enabled: Sourced<bool>,
    /// `model`, else `modelRoles.advisor` (RO8).
    pub model: Sourced<ModelChoice>,
    /// The granted tools (RO9).
    pub tools: Sourced<Vec<RosterTool>>,
    /// The entry's own `instructions`, imports expanded (RO11).
    pub instructions: Sourced<Option<String>>,
    /// `maxNotesPerUpdate` (RO10).
    pub max_notes_per_update: Sourced<usize>,
    /// `policy`; `None` is the session's policy (RO15).
    pub policy: Sourced<Option<PolicyChoice>>,
    /// `maxSeverity` (RO16); `blocker` caps nothing.
    pub max_severity: Sourced<Severity>,
    /// `when`; `None` reviews every update (RO17).
    pub when: Sourced<Option<PathFilter>>,
    /// `reviewMode` (CA6); omitted is `turn`, whatever the settings say (CA5).
    pub review_mode: Sourced<ReviewMode>,
    /// `reviewInterval` (CA6); omitted is 1, whatever the settings say (CA5).
    pub review_interval: Sourced<u64>,
    /// `syncBacklog` (CA6, CA9); `None` inherits `advisor.syncBacklog` live, its source
    /// the setting when one is known.
    pub sync_backlog: Sourced<Option<SyncBacklog>>,
    /// `toolBudget` (SP1); `None` is the session's `advisor.toolBudget`.
    pub tool_budget: Sourced<Option<u32>>,
    /// `maxSpendRatio` (SP6); `None` is the session's `advisor.maxSpendRatio`.
    pub max_spend_ratio: Sourced<Option<f64>>,
    /// `gate` (GT10); `None` is the session's `advisor.gate`.
    pub gate: Sourced<Option<crate::settings::GateMode>>,
    /// `gateFailMode` (GT10); `None` is the session's `advisor.gateFailMode`.
    pub gate_fail_mode: Sourced<Option<crate::settings::GateFailMode>>,
}

impl RosterAdvisor {
    /// An entry named `name` using `model`, every other field at its default (RO7–RO17),
    /// with no file: for a host or a test that builds its roster in code.
    /// The name is cleaned as a file's is (RO7: no control or bidi characters, at most
    /// [`MAX_NAME_CHARS`] characters).
    pub fn new(name: &str, model: ModelChoice) -> Self {
        let name = parse::clean_name(name).name;
        Self {
            slug: slugify(&name),
            name,
            file: PathBuf::new(),
            overrides: Vec::new(),
            enabled: Sourced::default_value(true),
            model: Sourced::default_value(model),
            tools: Sourced::default_value(RosterTool::DEFAULT_SET.to_vec()),
            instructions: Sourced::default_value(None),
            max_notes_per_update: Sourced::default_value(DEFAULT_NOTES_PER_UPDATE),
            policy: Sourced::default_value(None),
            max_severity: Sourced::default_value(Severity::Blocker),
            when: Sourced::default_value(None),
            review_mode: Sourced::default_value(ReviewMode::Turn),
            review_interval: Sourced::default_value(1),
            sync_backlog: Sourced::default_value(None),
            tool_budget: Sourced::default_value(None),
            max_spend_ratio: Sourced::default_value(None),
            gate: Sourced::default_value(None),
            gate_fail_mode: Sourced::default_value(None),
        }
    }

    /// Whether `other` differs from this entry at most in its cadence fields (CA7).
    pub fn same_but_cadence(&self, other: &RosterAdvisor) -> bool {
        let mut retuned = other.clone();
        retuned.review_mode = self.review_mode.clone();
        retuned.review_interval = self.review_interval.clone();
        retuned.sync_backlog = self.sync_backlog.clone();
        *self == retuned
    }
}

/// The top-level `instructions` of all roster files, concatenated (RO6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedInstructions {
    /// The texts, user file first, outermost to innermost, joined by a blank line.
    pub text: String,
    /// The files that gave them, in that order.
    pub files: Vec<PathBuf>,
}

/// The resolved roster.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Roster {
    /// The roster files read, in load order (skipped ones are not listed).
    pub files: Vec<PathBuf>,
    /// The shared instructions, if any file has some.
    pub instructions: Option<SharedInstructions>,
    /// The top-level `maxNotesPerUpdate` in effect (the most specific file's), if any.
    pub max_notes_per_update: Option<Sourced<usize>>,
    /// `advisor.syncBacklog` as the settings give it, when they set it: what an entry
    /// without its own `syncBacklog` follows (CA9, RO14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inherited_sync_backlog: Option<Sourced<SyncBacklog>>,
    /// The advisors in roster order: the order each slug first appears.
    pub advisors: Vec<RosterAdvisor>,
    /// Everything skipped, dropped, capped or refused, in load order.
    pub warnings: Vec<RosterWarning>,
    /// What the load looked at, to tell later whether it is still current (RO21).
    #[serde(skip)]
    pub fingerprint: Fingerprint,
}

impl Roster {
    /// Whether there is no named advisor (RO12: today's unnamed advisor runs alone).
    pub fn is_empty(&self) -> bool {
        self.advisors.is_empty()
    }

    /// A roster built in code (no files): `advisors` in order, with `shared` as the shared
    /// instructions (RO6), when given.
    pub fn in_code(advisors: Vec<RosterAdvisor>, shared: Option<&str>) -> Self {
        Self {
            advisors,
            instructions: shared.map(|text| SharedInstructions {
                text: text.to_string(),
                files: Vec::new(),
            }),
            ..Self::default()
        }
    }
}

/// The outcome of [`refresh`].
#[derive(Debug, Clone, PartialEq)]
pub enum RosterRefresh {
    /// No roster file changed since the previous load; nothing was read.
    Unchanged,
    /// Something changed (or there was no previous load): a fresh load.
    Rebuilt(Box<Roster>),
}

/// Reloads only when `previous` no longer matches the disk's metadata (RO21, as W8): a
/// roster file or an import changed, appeared or disappeared. Blocking.
pub fn refresh(
    config: &WatchdogConfig,
    settings: &RosterSettings,
    catalog: &Catalog,
    redactor: Option<&Redactor>,
    previous: Option<&Fingerprint>,
) -> RosterRefresh {
    refresh_by(config, previous, || {
        load(config, settings, catalog, redactor)
    })
}

/// `Unchanged` when `previous` still matches the disk's metadata (RO21), else what `reload`
/// gives. Blocking.
pub(crate) fn refresh_by(
    config: &WatchdogConfig,
    previous: Option<&Fingerprint>,
    reload: impl FnOnce() -> Roster,
) -> RosterRefresh {
    match previous {
        Some(fingerprint) if fingerprint.is_current_named(config, &ROSTER_FILES) => {
            RosterRefresh::Unchanged
        }
        _ => RosterRefresh::Rebuilt(Box::new(reload())),
    }
}

/// What the settings say that the roster falls back to (RO8, RO10).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RosterSettings {
    /// `modelRoles.advisor`, when set.
    pub advisor_role: Option<Sourced<String>>,
    /// `advisor.maxNotesPerUpdate`, when set.
    pub max_notes_per_update: Option<Sourced<usize>>,
    /// `advisor.syncBacklog`, when set: what an entry without its own follows (CA9).
    pub sync_backlog: Option<Sourced<SyncBacklog>>,
    /// The text roles of `modelRoles:`: what an entry's role alias (`model: "@slow"`)
    /// resolves through (CA25).
    pub model_roles: BTreeMap<String, String>,
    /// `disabledProviders` (CA22): an entry whose model is of one of these has no model.
    pub disabled_providers: Vec<String>,
}

impl RosterSettings {
    /// From the settings files as [`crate::settings::read_config_layers`] gives them: the
    /// last file that sets a key is its source.
    pub fn from_layers(layers: &[(PathBuf, SettingsLayer, Vec<SettingsWarning>)]) -> Self {
        let mut out = Self::default();
        for (file, layer, _) in layers {
            let source = |key| Source::Setting {
                key,
                file: Some(file.clone()),
            };
            if let Some(role) = &layer.advisor_role {
                out.advisor_role = Some(Sourced::new(role.clone(), source("modelRoles.advisor")));
            }
            if let Some(notes) = layer.max_notes_per_update {
                out.max_notes_per_update =
                    Some(Sourced::new(notes, source("advisor.maxNotesPerUpdate")));
            }
            if let Some(sync) = layer.sync_backlog {
                out.sync_backlog = Some(Sourced::new(sync, source("advisor.syncBacklog")));
            }
            out.model_roles.extend(layer.model_roles.clone());
            if let Some(disabled) = &layer.disabled_providers {
                out.disabled_providers = disabled.clone();
            }
        }
        out
    }

    /// From settings a host built in code, with the model role it uses.
    pub fn from_values(advisor_role: Option<String>, settings: &AdvisorSettings) -> Self {
        let setting = |key| Source::Setting { key, file: None };
        Self {
            advisor_role: advisor_role
                .filter(|role| !role.trim().is_empty())
                .map(|role| Sourced::new(role, setting("modelRoles.advisor"))),
            max_notes_per_update: Some(Sourced::new(
                settings.max_notes_per_update,
                setting("advisor.maxNotesPerUpdate"),
            )),
            sync_backlog: Some(Sourced::new(
                settings.sync_backlog,
                setting("advisor.syncBacklog"),
            )),
            model_roles: BTreeMap::new(),
            disabled_providers: settings.disabled_providers.clone(),
        }
    }
}

/// Discovers, reads and resolves the roster for `config` (RO1–RO11): `redactor` (`None`:
/// redaction off) passes over every instruction text, as over WATCHDOG.md blocks (X5).
/// Blocking.
pub fn load(
    config: &WatchdogConfig,
    settings: &RosterSettings,
    catalog: &Catalog,
    redactor: Option<&Redactor>,
) -> Roster {
    let confinement = Confinement::new(config);
    let mut budget = Budget::default();
    let mut warnings = Vec::new();
    let mut files = Vec::new();
    let mut fingerprint = Fingerprint::default();
    for candidate in candidates_named(config, &ROSTER_FILES) {
        fingerprint.push_candidate(&candidate.path);
        let Some(text) = read_roster_file(&candidate, &confinement, &mut warnings) else {
            continue;
        };
        let Some(mut parsed) = parse_file(&candidate.path, &text, &mut warnings) else {
            continue;
        };
        let mut expand = |text: Option<String>, warnings: &mut Vec<RosterWarning>| {
            let mut found = Vec::new();
            let expanded = confinement.expand(
                text?.trim(),
                &candidate,
                &mut budget,
                &mut |path| fingerprint.push_import(path),
                &mut found,
            );
            warnings.extend(found.into_iter().map(|warning| {
                let message = warning
                    .strip_prefix("watchdog: ")
                    .unwrap_or(&warning)
                    .to_string();
                RosterWarning::file(&candidate.path, Some("instructions"), message)
            }));
            let expanded = match redactor {
                Some(redactor) => redactor.redact(&expanded).into_owned(),
                None => expanded,
            };
            let trimmed = expanded.trim();
            (!trimmed.is_empty()).then(|| trimmed.to_string())
        };
        parsed.instructions = expand(parsed.instructions.take(), &mut warnings);
        for entry in &mut parsed.entries {
            entry.instructions = expand(entry.instructions.take(), &mut warnings);
        }
        files.push((candidate.path, parsed));
    }
    if budget.cut {
        if let Some((file, _)) = files.last() {
            warnings.push(RosterWarning::file(
                file,
                Some("instructions"),
                text("importsOver", &[("size", &size_text(MAX_TOTAL_BYTES))]),
            ));
        }
    }
    let mut roster = merge(files, settings, catalog, warnings);
    roster.fingerprint = fingerprint;
    for warning in &roster.warnings {
        tracing::warn!(target: "advisor::roster", "{warning}");
    }
    tracing::debug!(
        target: "advisor::roster",
        files = roster.files.len(),
        advisors = roster.advisors.len(),
        "roster loaded"
    );
    roster
}

/// Reads one roster file within the caps (RO3); `None` when it is missing or skipped (the
/// reason in `warnings`, except for a missing file).
fn read_roster_file(
    candidate: &Candidate,
    confinement: &Confinement,
    warnings: &mut Vec<RosterWarning>,
) -> Option<String> {
    let skipped = |err: &ReadError| {
        let problem = err.to_string();
        RosterWarning::file(
            &candidate.path,
            None,
            text("fileSkipped", &[("problem", &problem)]),
        )
    };
    if let Err(err) = confinement.check(candidate) {
        if !matches!(err, ReadError::Missing) {
            warnings.push(skipped(&err));
        }
        return None;
    }
    match read_text(&candidate.path, MAX_FILE_BYTES) {
        Ok(read) if read.truncated => {
            warnings.push(RosterWarning::file(
                &candidate.path,
                None,
                text(
                    "fileSkipped",
                    &[(
                        "problem",
                        &text("tooLarge", &[("size", &size_text(MAX_FILE_BYTES))]),
                    )],
                ),
            ));
            None
        }
        Ok(read) => Some(read.content),
        Err(ReadError::Missing) => None,
        // A directory named like a roster file is a mistake worth a line, as a FIFO is.
        Err(ReadError::NotAFile) => {
            warnings.push(skipped(&ReadError::Special("a directory")));
            None
        }
        Err(err) => {
            warnings.push(skipped(&err));
            None
        }
    }
}

/// An entry with the file it came from and the files it replaced.
struct Placed {
    file: PathBuf,
    entry: Entry,
    overrides: Vec<PathBuf>,
}

/// Merges the parsed files, in load order, into the roster (RO2, RO6) and resolves every
/// advisor's fields (RO8–RO11, RO15–RO17). Pure.
fn merge(
    files: Vec<(PathBuf, ParsedFile)>,
    settings: &RosterSettings,
    catalog: &Catalog,
    mut warnings: Vec<RosterWarning>,
) -> Roster {
    let mut shared: Vec<(String, PathBuf)> = Vec::new();
    let mut top_notes = None;
    let mut placed: Vec<Placed> = Vec::new();
    let mut paths = Vec::with_capacity(files.len());
    for (file, parsed) in files {
        if let Some(text) = parsed.instructions {
            shared.push((text, file.clone()));
        }
        if let Some(notes) = parsed.max_notes_per_update {
            top_notes = Some(Sourced::new(notes, Source::TopLevel { file: file.clone() }));
        }
        for entry in parsed.entries {
            match placed.iter_mut().find(|p| p.entry.slug == entry.slug) {
                Some(earlier) if earlier.file == file => {
                    warnings.push(RosterWarning::entry(
                        &file,
                        &format!("\"{}\"", clip(&entry.name, SHOWN_CHARS)),
                        Some("name"),
                        text("duplicateSlug", &[("slug", &entry.slug)]),
                    ));
                    earlier.entry = entry;
                }
                Some(earlier) => {
                    let replaced = std::mem::replace(&mut earlier.file, file.clone());
                    earlier.overrides.push(replaced);
                    earlier.entry = entry;
                }
                None => placed.push(Placed {
                    file: file.clone(),
                    entry,
                    overrides: Vec::new(),
                }),
            }
        }
        paths.push(file);
    }
    let instructions = (!shared.is_empty()).then(|| SharedInstructions {
        text: shared
            .iter()
            .map(|(text, _)| text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
        files: shared.into_iter().map(|(_, file)| file).collect(),
    });
    if placed.len() > MAX_ADVISORS {
        let mut dropped: Vec<(PathBuf, usize)> = Vec::new();
        for extra in placed.drain(MAX_ADVISORS..) {
            match dropped.iter_mut().find(|(file, _)| *file == extra.file) {
                Some((_, count)) => *count += 1,
                None => dropped.push((extra.file, 1)),
            }
        }
        warnings.extend(
            dropped
                .into_iter()
                .map(|(file, count)| parse::too_many(&file, count)),
        );
    }
    let advisors = placed
        .into_iter()
        .map(|placed| resolve(placed, top_notes.as_ref(), settings, catalog))
        .collect();
    Roster {
        files: paths,
        instructions,
        max_notes_per_update: top_notes,
        inherited_sync_backlog: settings.sync_backlog.clone(),
        advisors,
        warnings,
        fingerprint: Fingerprint::default(),
    }
}

/// Resolves one advisor's fields.
fn resolve(
    placed: Placed,
    top_notes: Option<&Sourced<usize>>,
    settings: &RosterSettings,
    catalog: &Catalog,
) -> RosterAdvisor {
    let Placed {
        file,
        entry,
        overrides,
    } = placed;
    let own = || Source::Entry { file: file.clone() };
    let max_notes_per_update = match (entry.max_notes_per_update, top_notes) {
        (Some(notes), _) => Sourced::new(notes, own()),
        (None, Some(top)) => top.clone(),
        (None, None) => match &settings.max_notes_per_update {
            Some(setting) => Sourced::new(
                setting.value.clamp(1, MAX_NOTES_PER_UPDATE),
                setting.source.clone(),
            ),
            None => Sourced::default_value(DEFAULT_NOTES_PER_UPDATE),
        },
    };
    let model = match (&entry.model, &settings.advisor_role) {
        (Some(role), _) => Sourced::new(model_choice(role, settings, catalog), own()),
        (None, Some(role)) => Sourced::new(
            model_choice(&role.value, settings, catalog),
            role.source.clone(),
        ),
        (None, None) => Sourced::default_value(ModelChoice::NoModel {
            role: None,
            reason: text("noModelRole", &[]),
        }),
    };
    RosterAdvisor {
        enabled: or_default(entry.enabled, true, own()),
        model,
        tools: or_default(entry.tools, RosterTool::DEFAULT_SET.to_vec(), own()),
        instructions: or_default(entry.instructions.map(Some), None, own()),
        max_notes_per_update,
        policy: or_default(entry.policy.map(Some), None, own()),
        max_severity: or_default(entry.max_severity, Severity::Blocker, own()),
        when: or_default(entry.when.map(Some), None, own()),
        review_mode: or_default(entry.review_mode, ReviewMode::Turn, own()),
        review_interval: or_default(entry.review_interval, 1, own()),
        sync_backlog: match (entry.sync_backlog, &settings.sync_backlog) {
            (Some(own_value), _) => Sourced::new(Some(own_value), own()),
            (None, Some(setting)) => Sourced::new(None, setting.source.clone()),
            (None, None) => Sourced::default_value(None),
        },
        tool_budget: or_default(entry.tool_budget.map(Some), None, own()),
        max_spend_ratio: or_default(entry.max_spend_ratio.map(Some), None, own()),
        gate: or_default(entry.gate.map(Some), None, own()),
        gate_fail_mode: or_default(entry.gate_fail_mode.map(Some), None, own()),
        slug: entry.slug,
        name: entry.name,
        file,
        overrides,
    }
}

/// The entry's `value` from `source`, else `default` as the default.
fn or_default<T>(value: Option<T>, default: T, source: Source) -> Sourced<T> {
    match value {
        Some(value) => Sourced::new(value, source),
        None => Sourced::default_value(default),
    }
}

/// Resolves a role string (M1) into the advisor's model, or says why it cannot be used: a
/// role alias (`@slow`) through `modelRoles` (CA25), and a model of a disabled provider is
/// none, the reason naming the provider (CA22).
fn model_choice(role: &str, settings: &RosterSettings, catalog: &Catalog) -> ModelChoice {
    let advisor = settings.advisor_role.as_ref().map(|r| r.value.as_str());
    let expanded = match expand_role_alias(role, &settings.model_roles, advisor) {
        Ok(expanded) => expanded,
        Err(e) => {
            return ModelChoice::NoModel {
                role: Some(role.to_string()),
                reason: e.to_string(),
            }
        }
    };
    match resolve_role(expanded, catalog) {
        Ok(resolved) if provider_listed(&settings.disabled_providers, &resolved.provider) => {
            ModelChoice::NoModel {
                role: Some(role.to_string()),
                reason: ProviderError::DisabledProvider(resolved.provider).to_string(),
            }
        }
        Ok(resolved) => ModelChoice::Resolved {
            role: expanded.to_string(),
            provider: resolved.provider,
            model: resolved.model,
            thinking: resolved.thinking,
        },
        Err(_) => ModelChoice::NoModel {
            role: Some(role.to_string()),
            reason: text("badModel", &[("model", &clip(role, SHOWN_CHARS))]),
        },
    }
}

#[cfg(test)]
mod tests;
