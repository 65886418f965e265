//! Installing and removing the advisor's hooks in Claude Code's and Codex's settings (H23–H26).
//!
//! Claude Code reads hooks from `~/.claude/settings.json` (or `$CLAUDE_CONFIG_DIR`) and a
//! project's `.claude/settings.json`; Codex from `$CODEX_HOME/hooks.json` (`~/.codex`) and a
//! project's `.codex/hooks.json`. Both take the same shape: `hooks` maps an event name to a
//! list of groups `{matcher?, hooks: [{type: "command", command, timeout}]}`.
//!
//! An entry is ours when its command runs `advisor hook` (the program's file name starts with
//! `advisor`, its first argument is `hook`, [`is_our_command`]); everything else in the file —
//! the user's own hooks, other keys, their order — is kept. The file is written back with the
//! indentation it had (two spaces when new), through a temporary file renamed over it, with its
//! mode kept. A file that is not JSON, not an object, a symlink or not a regular file is
//! refused and left alone.
//!
//! Planning ([`plan_install`], [`plan_uninstall`]) reads and computes; [`apply`] writes. Both
//! are blocking.

use std::fs;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use advisor::hosts::paths::HostDirs;
use advisor::hosts::payload::HookHost;
use advisor::regular_file::{read_text_capped, FileError};

/// The largest hooks file read: 4 MiB.
pub const MAX_HOOKS_FILE_BYTES: usize = 4 << 20;

/// Every hook event the advisor listens to, in the order entries are written.
pub const ALL_EVENTS: [&str; 7] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStop",
    "SessionEnd",
];

pub use advisor::hosts::settings::{HOOK_TIMEOUT_SECS, PRE_TOOL_USE_TIMEOUT_SECS};

/// The events `host` has hooks for: Codex has no SessionEnd.
pub fn host_events(host: HookHost) -> &'static [&'static str] {
    match host {
        HookHost::ClaudeCode => &ALL_EVENTS,
        HookHost::Codex => &ALL_EVENTS[..6],
    }
}

/// The events installed for `host` (H33): all of [`host_events`] when the action gate may be
/// on (`gate`), else all but `PreToolUse`, which only the gate uses.
pub fn install_events(host: HookHost, gate: bool) -> Vec<&'static str> {
    host_events(host)
        .iter()
        .copied()
        .filter(|event| gate || *event != "PreToolUse")
        .collect()
}

/// The timeout written for `event`.
pub fn hook_timeout_secs(event: &str) -> u64 {
    match event {
        "PreToolUse" => PRE_TOOL_USE_TIMEOUT_SECS,
        _ => HOOK_TIMEOUT_SECS,
    }
}

/// Which settings file: the user's, for every project, or the project's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `~/.claude/settings.json`, `$CODEX_HOME/hooks.json`.
    User,
    /// `<cwd>/.claude/settings.json`, `<cwd>/.codex/hooks.json`.
    Project,
}

/// The hooks file of each host and scope, in the hosts' directories.
pub trait HooksFiles {
    /// The hooks file of `host` at `scope`; `None` for a user file when no home directory
    /// (nor the host's own variable) is known.
    fn hooks_file(&self, host: HookHost, scope: Scope) -> Option<PathBuf>;
}

impl HooksFiles for HostDirs {
    fn hooks_file(&self, host: HookHost, scope: Scope) -> Option<PathBuf> {
        let (project_dir, name) = match host {
            HookHost::ClaudeCode => (".claude", "settings.json"),
            HookHost::Codex => (".codex", "hooks.json"),
        };
        match scope {
            Scope::User => self.user_dir(host).map(|d| d.join(name)),
            Scope::Project => Some(self.cwd.join(project_dir).join(name)),
        }
    }
}

/// Why a hooks file could not be read, changed or written. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The path is a symlink: replacing it would cut the link, writing through it would
    /// change a file elsewhere.
    #[error("{} is a symlink; edit the file it points to by hand, or replace the link with a file", .0.display())]
    Symlink(PathBuf),
    /// The path holds something other than a regular file.
    #[error("{} is not a regular file ({kind})", file.display())]
    NotRegular {
        /// The file.
        file: PathBuf,
        /// What it is.
        kind: String,
    },
    /// The file could not be read.
    #[error("cannot read {}: {message}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        message: String,
    },
    /// The file is not valid JSON, or its top level is not an object; it is left as it is.
    #[error("{} is not valid JSON ({message}); fix it first, it was not changed", file.display())]
    NotJson {
        /// The file.
        file: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A value where the hooks go has another shape than the hosts use.
    #[error("{}: {message}; fix it first, it was not changed", file.display())]
    Shape {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The file could not be written.
    #[error("cannot write {}: {message}", file.display())]
    Write {
        /// The file.
        file: PathBuf,
        /// Why.
        message: String,
    },
}

/// What installing or removing would do to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The file.
    pub file: PathBuf,
    /// Its text now; `None` when it does not exist.
    pub before: Option<String>,
    /// Its text afterwards; `None` when it is to be removed (or stays missing).
    pub after: Option<String>,
    /// The events whose entries are added or rewritten (install) or removed (uninstall).
    pub events: Vec<String>,
}

impl Plan {
    /// Whether anything would change.
    pub fn changes(&self) -> bool {
        self.before != self.after
    }

    /// The unified diff of the change (empty when none), for `--dry-run`.
    pub fn diff(&self) -> String {
        super::diff::unified_diff(
            &self.file.display().to_string(),
            self.before.as_deref(),
            self.after.as_deref(),
        )
    }
}

/// The command the hooks run: the advisor binary at `binary` (quoted for the shell when it
/// needs it), `hook --host <host>`.
pub fn hook_command(binary: &Path, host: HookHost) -> String {
    format!(
        "{} hook --host {}",
        shell_quote(&binary.display().to_string()),
        host.as_str()
    )
}

/// `text` as one shell word: as it is when it holds only safe characters, else in single
/// quotes.
fn shell_quote(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The words of a shell command line (quotes and backslashes undone; no expansion).
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                w.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => w.extend(chars.next()),
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// Whether a hook command is one of ours (H24): it runs a program whose file name starts
/// with `advisor`, with `hook` as its first argument.
pub fn is_our_command(command: &str) -> bool {
    let words = shell_words(command);
    let program = words.first().map(|p| p.rsplit('/').next().unwrap_or(p));
    program.is_some_and(|p| p.starts_with("advisor")) && words.get(1).is_some_and(|a| a == "hook")
}

/// The program an entry of ours runs (its first word), to check it exists.
pub fn command_program(command: &str) -> Option<String> {
    shell_words(command).into_iter().next()
}

/// The group written for `event`: `{matcher: "*"}` for the tool events, then our hook.
fn our_group(event: &str, command: &str) -> Value {
    let mut group = Map::new();
    if matches!(event, "PreToolUse" | "PostToolUse") {
        group.insert("matcher".into(), Value::from("*"));
    }
    let mut hook = Map::new();
    hook.insert("type".into(), Value::from("command"));
    hook.insert("command".into(), Value::from(command));
    hook.insert("timeout".into(), Value::from(hook_timeout_secs(event)));
    group.insert("hooks".into(), Value::Array(vec![Value::Object(hook)]));
    Value::Object(group)
}

/// Whether a hook object is ours.
fn is_our_hook(hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(is_our_command)
}

/// The hook objects of one event list, with their group index.
fn our_hooks(groups: &[Value]) -> Vec<(usize, &Value)> {
    groups
        .iter()
        .enumerate()
        .flat_map(|(i, group)| {
            group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|hook| is_our_hook(hook))
                .map(move |hook| (i, hook))
        })
        .collect()
}

/// Removes our hooks from one event list; a group left without hooks by that is removed.
/// Whether anything was removed.
fn remove_ours(groups: &mut Vec<Value>) -> bool {
    let before = groups.len();
    let mut removed = false;
    groups.retain_mut(|group| {
        let Some(hooks) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let had = hooks.len();
        hooks.retain(|hook| !is_our_hook(hook));
        removed |= hooks.len() != had;
        !(hooks.is_empty() && had > 0)
    });
    removed || groups.len() != before
}

/// The `hooks` object of a settings document, created (at the end) when missing.
fn hooks_object<'a>(
    doc: &'a mut Map<String, Value>,
    file: &Path,
) -> Result<&'a mut Map<String, Value>, InstallError> {
    doc.entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| InstallError::Shape {
            file: file.to_path_buf(),
            message: "`hooks` is not an object".into(),
        })
}

/// Puts our entries for `events` into `doc` (H23, H24, H33): for each exactly one group
/// holding our hook (matcher `*` on the tool events, the timeout of [`hook_timeout_secs`]);
/// an entry of ours that differs (an older binary path, another timeout) is replaced, ours
/// for any other event (one the host lacks, `PreToolUse` with the gate off) is removed.
/// Returns the events changed.
pub fn install_into(
    doc: &mut Map<String, Value>,
    events: &[&str],
    command: &str,
    file: &Path,
) -> Result<Vec<String>, InstallError> {
    let hooks = hooks_object(doc, file)?;
    check_event_lists(hooks, file)?;
    let mut changed = Vec::new();
    for event in ALL_EVENTS {
        let wanted = events.contains(&event);
        let desired = our_group(event, command);
        let list = hooks.get(event).and_then(Value::as_array);
        let ours = list.map(|l| our_hooks(l)).unwrap_or_default();
        let current = match ours.as_slice() {
            [(i, _)] => list.map(|l| &l[*i]) == Some(&desired),
            _ => false,
        };
        if wanted == current && (wanted || ours.is_empty()) {
            continue;
        }
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| shape(file, event))?;
        remove_ours(groups);
        if wanted {
            groups.push(desired);
        } else if groups.is_empty() {
            hooks.remove(event);
        }
        changed.push(event.to_string());
    }
    Ok(changed)
}

/// Removes every entry of ours from `doc` (H26), and each list, the `hooks` object too, that
/// this leaves empty. Returns the events changed.
pub fn uninstall_from(
    doc: &mut Map<String, Value>,
    file: &Path,
) -> Result<Vec<String>, InstallError> {
    let Some(hooks) = doc.get_mut("hooks") else {
        return Ok(Vec::new());
    };
    let hooks = hooks.as_object_mut().ok_or_else(|| InstallError::Shape {
        file: file.to_path_buf(),
        message: "`hooks` is not an object".into(),
    })?;
    let mut changed = Vec::new();
    let events: Vec<String> = hooks.keys().cloned().collect();
    for event in events {
        let Some(groups) = hooks.get_mut(&event).and_then(Value::as_array_mut) else {
            continue;
        };
        if !remove_ours(groups) {
            continue;
        }
        if groups.is_empty() {
            hooks.remove(&event);
        }
        changed.push(event);
    }
    if !changed.is_empty() && hooks.is_empty() {
        doc.remove("hooks");
    }
    Ok(changed)
}

/// Checks that every event list we may touch is a list.
fn check_event_lists(hooks: &Map<String, Value>, file: &Path) -> Result<(), InstallError> {
    match ALL_EVENTS
        .iter()
        .find(|event| hooks.get(**event).is_some_and(|v| !v.is_array()))
    {
        Some(event) => Err(shape(file, event)),
        None => Ok(()),
    }
}

fn shape(file: &Path, event: &str) -> InstallError {
    InstallError::Shape {
        file: file.to_path_buf(),
        message: format!("`hooks.{event}` is not a list"),
    }
}

/// Reads a hooks file: `None` when missing. A symlink, anything but a regular file, a file
/// over [`MAX_HOOKS_FILE_BYTES`] or one that is not UTF-8 is an error. Blocking.
pub fn read_hooks_file(file: &Path) -> Result<Option<String>, InstallError> {
    match fs::symlink_metadata(file) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(InstallError::Symlink(file.to_path_buf()))
        }
        Ok(_) => {}
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(read_error(file, err.to_string())),
    }
    match read_text_capped(file, MAX_HOOKS_FILE_BYTES) {
        Ok(read) if read.truncated => Err(read_error(file, "larger than 4 MiB".into())),
        Ok(read) => Ok(Some(read.content)),
        Err(FileError::Missing) => Ok(None),
        Err(FileError::NotRegular(kind)) => Err(InstallError::NotRegular {
            file: file.to_path_buf(),
            kind: kind.to_string(),
        }),
        Err(err) => Err(read_error(file, err.to_string())),
    }
}

fn read_error(file: &Path, message: String) -> InstallError {
    InstallError::Read {
        file: file.to_path_buf(),
        message,
    }
}

/// Parses a hooks file's text: a blank file is an empty object; anything but a JSON object
/// is refused.
pub fn parse_document(file: &Path, text: &str) -> Result<Map<String, Value>, InstallError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let not_json = |message: String| InstallError::NotJson {
        file: file.to_path_buf(),
        message,
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(not_json(format!(
            "its top level is {}, not an object",
            json_kind(&other)
        ))),
        Err(err) => Err(not_json(err.to_string())),
    }
}

/// What kind of JSON value `value` is, for messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The indentation of a JSON text: that of its first indented line (two spaces when none).
fn indentation(text: &str) -> String {
    text.lines()
        .skip(1)
        .find_map(|line| {
            let indent: String = line
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            (!indent.is_empty()).then_some(indent)
        })
        .unwrap_or_else(|| "  ".to_string())
}

/// `doc` written out pretty with `indent`, ending in a newline.
fn render(doc: &Map<String, Value>, indent: &str) -> String {
    use serde::Serialize;
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    // Serialising a map of JSON values to memory cannot fail.
    let _ = doc.serialize(&mut ser);
    let mut text = String::from_utf8_lossy(&out).into_owned();
    text.push('\n');
    text
}

/// Plans putting our hooks for `events` ([`install_events`]) into `file`, running `command`
/// (H23, H33).
pub fn plan_install(events: &[&str], file: &Path, command: &str) -> Result<Plan, InstallError> {
    let before = read_hooks_file(file)?;
    let mut doc = parse_document(file, before.as_deref().unwrap_or(""))?;
    let events = install_into(&mut doc, events, command, file)?;
    let after = if events.is_empty() {
        before.clone()
    } else {
        Some(render(&doc, &indentation(before.as_deref().unwrap_or(""))))
    };
    Ok(Plan {
        file: file.to_path_buf(),
        before,
        after,
        events,
    })
}

/// Plans removing our hooks from `file` (H26): a file left as an empty object is removed.
pub fn plan_uninstall(file: &Path) -> Result<Plan, InstallError> {
    let before = read_hooks_file(file)?;
    let Some(text) = before.clone() else {
        return Ok(Plan {
            file: file.to_path_buf(),
            before: None,
            after: None,
            events: Vec::new(),
        });
    };
    let mut doc = parse_document(file, &text)?;
    let events = uninstall_from(&mut doc, file)?;
    let after = match (events.is_empty(), doc.is_empty()) {
        (true, _) => before.clone(),
        (false, true) => None,
        (false, false) => Some(render(&doc, &indentation(&text))),
    };
    Ok(Plan {
        file: file.to_path_buf(),
        before,
        after,
        events,
    })
}

/// Carries a plan out: nothing when it changes nothing; else the new text goes to a
/// temporary file beside the target (created with the target's mode, or 0644 for a new
/// one), synced, and renamed over it; a plan to remove the file removes it. The file is
/// checked again first, so a symlink put there since planning is refused. Blocking.
pub fn apply(plan: &Plan) -> Result<(), InstallError> {
    if !plan.changes() {
        return Ok(());
    }
    let file = &plan.file;
    let write_error = |err: std::io::Error| InstallError::Write {
        file: file.clone(),
        message: err.to_string(),
    };
    let mode = match fs::symlink_metadata(file) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(InstallError::Symlink(file.clone()))
        }
        Ok(meta) if !meta.is_file() => {
            return Err(InstallError::NotRegular {
                file: file.clone(),
                kind: "not a file".into(),
            })
        }
        Ok(meta) => Some(meta.permissions().mode() & 0o7777),
        Err(err) if err.kind() == ErrorKind::NotFound => None,
        Err(err) => return Err(write_error(err)),
    };
    let Some(text) = &plan.after else {
        return fs::remove_file(file).map_err(write_error);
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(write_error)?;
    let name = file
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let temp = dir.join(format!(".{name}.advisor-{}.tmp", std::process::id()));
    let result = write_new(&temp, text.as_bytes(), mode.unwrap_or(0o644))
        .and_then(|()| fs::rename(&temp, file));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result.map_err(write_error)
}

/// Creates `path` (which must not exist) with `mode`, writes `bytes` and syncs it.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    // The umask may have narrowed the mode; the target's mode is kept exactly.
    file.set_permissions(fs::Permissions::from_mode(mode))?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests;
