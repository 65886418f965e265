//! The gate's local classifier (GT2): which proposed tool calls are risky enough to put to
//! the gate's model under `advisor.gate: risky`. It reads a shell command the way the output
//! quarantine does (P5, `review::quarantine::shell`: the same normaliser and the same split
//! into pipelines and commands) and a file tool's path against the workspace, without
//! touching the file system. Everything it does not pick passes without a model call.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::review::quarantine::shell::{self, CommandClass};

use super::ProposedAction;

/// The most characters of a tool's input the classifier reads; a longer input is risky as
/// it stands (GT9: nothing unread passes).
pub const MAX_CLASSIFIED_CHARS: usize = 64 * 1024;

/// Why a proposed call is risky (GT2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RiskKind {
    /// Writes a file from the shell or replaces a whole file (`write`, `Write`, an added
    /// file of a patch, `>`, `tee`, `sed -i`, `mv`, `cp`…), installs or commits.
    Write,
    /// Deletes: `rm`, `find -delete`, `git clean`, `git rm`, a deleted file of a patch,
    /// `docker compose down -v`, `DROP TABLE`…
    Delete,
    /// `git push` with `--force`, `--force-with-lease`, `--mirror`, `--delete` or a `+`
    /// refspec.
    ForcePush,
    /// `git reset`, `git checkout -- …`, `git restore`, `git stash drop|clear`, `git switch
    /// --discard-changes`.
    Reset,
    /// Talks to another host: `curl`, `wget`, `ssh`, `git push|pull|fetch|clone`, package
    /// installs, a web fetch tool.
    Network,
    /// Reads or prints secrets: `.env` files, private keys and credentials files, `env`,
    /// `printenv`, `echo $API_TOKEN`, `gh auth token`…
    Secret,
    /// Writes, edits or deletes outside the workspace.
    OutsideWorkspace,
    /// Runs fetched or decoded text as a program (`curl … | sh`), as P5 reads it.
    PipeToShell,
    /// The input could not be read whole (too long, or not the shape the tool takes).
    Unreadable,
}

impl RiskKind {
    /// The word the gate's prompt, status and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            RiskKind::Write => "write",
            RiskKind::Delete => "delete",
            RiskKind::ForcePush => "force-push",
            RiskKind::Reset => "reset",
            RiskKind::Network => "network",
            RiskKind::Secret => "secret",
            RiskKind::OutsideWorkspace => "outside-workspace",
            RiskKind::PipeToShell => "pipe-to-shell",
            RiskKind::Unreadable => "unreadable",
        }
    }
}

/// What the classifier read of one proposed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionReading {
    /// Why it is risky; empty: it passes under `risky`.
    pub risks: BTreeSet<RiskKind>,
    /// The identity of the action for the session's decision cache (GT6): the tool's kind
    /// and its normalised input, hashed.
    pub key: ActionKey,
}

/// The decision cache's key of an action (GT6): two calls that normalise alike share it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ActionKey {
    hash: u64,
    len: usize,
}

impl ActionKey {
    fn of(kind: &str, normalised: &str) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        kind.hash(&mut hasher);
        normalised.hash(&mut hasher);
        Self {
            hash: hasher.finish(),
            len: normalised.len(),
        }
    }
}

/// How a tool takes its input, by its name (pi, Claude Code, Codex).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolShape {
    /// A shell command (`bash`, `Bash`, `shell`, `exec_command`).
    Shell,
    /// Replaces or creates a whole file (`write`, `Write`).
    WriteFile,
    /// Edits a file in place (`edit`, `Edit`, `MultiEdit`, `NotebookEdit`).
    EditFile,
    /// A patch whose `*** Add|Update|Delete File:` lines name the files (`apply_patch`).
    Patch,
    /// Reads a file (`read`, `Read`): risky only when the file holds secrets.
    ReadFile,
    /// Fetches a URL (`WebFetch`, `fetch`).
    Fetch,
    /// Anything else: its input is still scanned for hazardous commands.
    Other,
}

fn shape_of(tool: &str) -> ToolShape {
    match tool.to_ascii_lowercase().as_str() {
        "bash" | "shell" | "exec_command" | "local_shell" | "exec" | "run_shell_command" => {
            ToolShape::Shell
        }
        "write" | "create" | "write_file" => ToolShape::WriteFile,
        "edit" | "multiedit" | "notebookedit" | "str_replace" | "edit_file" => ToolShape::EditFile,
        "apply_patch" | "applypatch" => ToolShape::Patch,
        "read" | "read_file" | "view" | "cat" => ToolShape::ReadFile,
        "webfetch" | "fetch" | "web_fetch" | "websearch" | "web_search" => ToolShape::Fetch,
        _ => ToolShape::Other,
    }
}

/// Where paths are read from: the workspace and the call's working directory.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    cwd: PathBuf,
}

impl Workspace {
    /// The workspace `root`; a call's `cwd` (relative: under the root) is where its
    /// relative paths start.
    pub fn new(root: &Path, cwd: Option<&Path>) -> Self {
        let root = lexical(root);
        let cwd = match cwd {
            Some(c) if c.is_absolute() => lexical(c),
            Some(c) => lexical(&root.join(c)),
            None => root.clone(),
        };
        Self { root, cwd }
    }

    /// Whether `path` (as written: absolute, relative to the cwd, or from `~`) lies outside
    /// the workspace. Decided on the text alone; symlinks are not followed.
    pub fn outside(&self, path: &str) -> bool {
        let path = path.trim();
        if path.is_empty() {
            return false;
        }
        if path.starts_with('~') || path.starts_with('$') {
            return true;
        }
        let full = lexical(&self.cwd.join(path));
        !full.starts_with(&self.root)
    }
}

/// `path` with `.` and `..` resolved on the text alone.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Reads `action` (GT2): its risks and its cache key.
pub fn classify(action: &ProposedAction, workspace: &Workspace) -> ActionReading {
    let shape = shape_of(&action.tool);
    let kind = format!("{:?}", shape);
    let mut risks = BTreeSet::new();
    let text = match input_text(action, shape) {
        Some(text) if text.len() <= MAX_CLASSIFIED_CHARS => text,
        Some(text) => {
            risks.insert(RiskKind::Unreadable);
            return ActionReading {
                risks,
                key: ActionKey::of(&kind, &text),
            };
        }
        None => {
            risks.insert(RiskKind::Unreadable);
            let raw = capped_json(&action.input);
            return ActionReading {
                risks,
                key: ActionKey::of(&kind, &raw),
            };
        }
    };
    let normalised = match shape {
        ToolShape::Shell | ToolShape::Other | ToolShape::Fetch => shell::normalise(&spaced(&text)),
        _ => text.clone(),
    };
    match shape {
        ToolShape::Shell => read_shell(&normalised, workspace, &mut risks),
        ToolShape::WriteFile => {
            risks.insert(RiskKind::Write);
            read_path(&text, workspace, &mut risks);
        }
        ToolShape::EditFile => read_path(&text, workspace, &mut risks),
        ToolShape::Patch => read_patch(&text, workspace, &mut risks),
        ToolShape::ReadFile => {
            if names_secret(&text.to_ascii_lowercase()) {
                risks.insert(RiskKind::Secret);
            }
        }
        ToolShape::Fetch => {
            risks.insert(RiskKind::Network);
        }
        ToolShape::Other => hazards_of(&normalised, &mut risks),
    }
    let key_text = match shape {
        ToolShape::WriteFile | ToolShape::EditFile | ToolShape::Other | ToolShape::Fetch => {
            capped_json(&action.input)
        }
        _ => normalised,
    };
    ActionReading {
        risks,
        key: ActionKey::of(&kind, &key_text),
    }
}

/// `text` with every control character but a line break a space: a terminal escape or a
/// NUL byte never hides a command's name from the reading (GT9).
fn spaced(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
        .collect()
}

/// The input as JSON text, at most a little past [`MAX_CLASSIFIED_CHARS`].
fn capped_json(input: &Value) -> String {
    let text = input.to_string();
    if text.len() <= MAX_CLASSIFIED_CHARS {
        return text;
    }
    let mut end = MAX_CLASSIFIED_CHARS;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}#{}", &text[..end], text.len())
}

/// The text the classifier reads for a tool of `shape`: the command, the path, the patch,
/// or the whole input as JSON. `None` when the input lacks what the tool takes.
fn input_text(action: &ProposedAction, shape: ToolShape) -> Option<String> {
    let input = &action.input;
    let field = |keys: &[&str]| keys.iter().find_map(|k| input.get(*k));
    match shape {
        ToolShape::Shell => match field(&["command", "cmd", "script"])? {
            Value::String(s) => Some(s.clone()),
            Value::Array(words) => {
                let words: Option<Vec<&str>> = words.iter().map(Value::as_str).collect();
                Some(words?.join(" "))
            }
            _ => None,
        },
        ToolShape::WriteFile | ToolShape::EditFile | ToolShape::ReadFile => {
            let path = field(&["path", "file_path", "filePath", "notebook_path", "file"])?;
            path.as_str().map(str::to_string)
        }
        ToolShape::Patch => match field(&["command", "patch", "input"]) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(words)) => {
                let words: Option<Vec<&str>> = words.iter().map(Value::as_str).collect();
                Some(words?.join("\n"))
            }
            _ => input.as_str().map(str::to_string),
        },
        ToolShape::Fetch | ToolShape::Other => {
            let mut out = String::new();
            string_leaves(input, &mut out, 0);
            Some(out)
        }
    }
}

/// Every string in `value` (keys too), a line each; stops a little past
/// [`MAX_CLASSIFIED_CHARS`] and below 32 levels of nesting (deeper counts as too long).
fn string_leaves(value: &Value, out: &mut String, depth: usize) {
    if out.len() > MAX_CLASSIFIED_CHARS {
        return;
    }
    if depth > 32 {
        out.push_str(&"#".repeat(MAX_CLASSIFIED_CHARS + 1));
        return;
    }
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| string_leaves(v, out, depth + 1)),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push_str(k);
            out.push('\n');
            string_leaves(v, out, depth + 1);
        }),
        _ => {}
    }
}

/// A file tool's path: outside the workspace, or a secrets file.
fn read_path(path: &str, workspace: &Workspace, risks: &mut BTreeSet<RiskKind>) {
    if workspace.outside(path) {
        risks.insert(RiskKind::OutsideWorkspace);
    }
    if names_secret(&path.to_ascii_lowercase()) {
        risks.insert(RiskKind::Secret);
    }
}

/// A patch's files (`*** Add File:`, `*** Update File:`, `*** Delete File:`, `*** Move
/// to:`): added files are writes, deleted ones deletes, any outside the workspace risky.
fn read_patch(patch: &str, workspace: &Workspace, risks: &mut BTreeSet<RiskKind>) {
    let mut files = 0;
    for line in patch.lines() {
        let line = line.trim();
        let (kind, path) = if let Some(p) = line.strip_prefix("*** Add File:") {
            (Some(RiskKind::Write), p)
        } else if let Some(p) = line.strip_prefix("*** Delete File:") {
            (Some(RiskKind::Delete), p)
        } else if let Some(p) = line.strip_prefix("*** Update File:") {
            (None, p)
        } else if let Some(p) = line.strip_prefix("*** Move to:") {
            (Some(RiskKind::Write), p)
        } else {
            continue;
        };
        files += 1;
        risks.extend(kind);
        read_path(path, workspace, risks);
    }
    if files == 0 {
        risks.insert(RiskKind::Unreadable);
    }
}

/// The hazards the output quarantine finds (P5) as risks.
fn hazards_of(normalised: &str, risks: &mut BTreeSet<RiskKind>) {
    for hazard in shell::hazards(normalised, false) {
        risks.insert(match hazard.class {
            CommandClass::Destructive => RiskKind::Delete,
            CommandClass::PipeToShell => RiskKind::PipeToShell,
            CommandClass::KeyExfiltration => RiskKind::Secret,
        });
    }
}

/// A normalised shell command line: every command of every pipeline, its redirections, and
/// the quarantine's hazards.
fn read_shell(normalised: &str, workspace: &Workspace, risks: &mut BTreeSet<RiskKind>) {
    hazards_of(normalised, risks);
    for target in redirections(normalised) {
        risks.insert(RiskKind::Write);
        if workspace.outside(&target) {
            risks.insert(RiskKind::OutsideWorkspace);
        }
        if names_secret(&target) {
            risks.insert(RiskKind::Secret);
        }
    }
    if mentions_secret_variable(normalised) || reads_secret_from_environment(normalised) {
        risks.insert(RiskKind::Secret);
    }
    if INLINE_NETWORK.iter().any(|w| normalised.contains(w)) {
        risks.insert(RiskKind::Network);
    }
    for pipeline in shell::pipelines(normalised) {
        for command in &pipeline {
            read_command(command, workspace, risks);
        }
    }
}

/// The files `>` and `>>` write to in `text`, except `/dev/null` and the standard streams.
fn redirections(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(found) = text[at..].find('>') {
        let start = at + found;
        at = start + 1;
        if start > 0 && matches!(bytes[start - 1], b'-' | b'=' | b'<') {
            continue;
        }
        let rest = text[at..].trim_start_matches('>').trim_start_matches('|');
        if rest.starts_with('&') || rest.starts_with('=') {
            continue;
        }
        let target: String = rest
            .trim_start()
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '&' | '|' | ')' | '`'))
            .collect();
        if target.is_empty() || target.starts_with("/dev/null") || target.starts_with("/dev/std") {
            continue;
        }
        out.push(target);
    }
    out
}

/// File names and places that hold secrets: `.env` files (not their templates), private
/// keys, credentials files (the quarantine's list, P5).
fn names_secret(text: &str) -> bool {
    if shell::KEY_FILES.iter().any(|k| text.contains(k)) && !text.trim_end().ends_with(".pub") {
        return true;
    }
    text.split(|c: char| c.is_whitespace() || matches!(c, '/' | '=' | '<' | '>' | ':' | ','))
        .any(|word| {
            let env_file = (word == ".env" || word.starts_with(".env."))
                && ![".example", ".sample", ".template", ".dist", ".defaults"]
                    .iter()
                    .any(|t| word.ends_with(t));
            env_file
                || word.ends_with(".pem")
                || word.ends_with(".key")
                || word.ends_with(".p12")
                || word.ends_with(".pfx")
                || word.ends_with(".keystore")
        })
}

/// What an inline script (a heredoc or `-c` to an interpreter) calls the network with.
const INLINE_NETWORK: &[&str] = &[
    "urllib.request",
    "urlopen(",
    "requests.get(",
    "requests.post(",
    "http.client",
    "fetch(http",
    "net/http",
];

/// An inline script reading a secret-named variable from the environment
/// (`os.environ['RATESFEED_KEY']`, `os.getenv(...)`, `process.env.API_KEY`).
fn reads_secret_from_environment(text: &str) -> bool {
    ["environ[", "environ.get(", "getenv(", "process.env."]
        .iter()
        .any(|access| {
            text.match_indices(access).any(|(at, _)| {
                let name: String = text[at + access.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                name.ends_with("key") || SECRET_WORDS.iter().any(|w| name.contains(w))
            })
        })
}

/// Words that name a secret in an environment variable's name.
const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "api_key",
    "apikey",
    "private_key",
    "credential",
    "access_key",
];

/// A `$NAME` or `${NAME}` whose name says it holds a secret (`$GITHUB_TOKEN`).
fn mentions_secret_variable(text: &str) -> bool {
    text.match_indices('$').any(|(at, _)| {
        let name: String = text[at + 1..]
            .trim_start_matches('{')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        SECRET_WORDS.iter().any(|w| name.contains(w))
    })
}

/// Programs that write or move files by their nature.
const WRITERS: &[&str] = &[
    "tee", "dd", "mv", "cp", "truncate", "chmod", "chown", "chgrp", "ln", "install", "patch",
    "rsync",
];

/// Programs that delete.
const DELETERS: &[&str] = &["rm", "rmdir", "unlink", "shred", "srm"];

/// Package managers and the subcommands of theirs that install, fetch or remove.
const PACKAGE_MANAGERS: &[(&str, &[&str])] = &[
    (
        "npm",
        &[
            "install",
            "i",
            "add",
            "ci",
            "uninstall",
            "remove",
            "publish",
            "update",
        ],
    ),
    ("yarn", &["add", "install", "remove", "publish", "upgrade"]),
    (
        "pnpm",
        &["add", "install", "i", "remove", "publish", "update"],
    ),
    ("pip", &["install", "uninstall", "download"]),
    ("pip3", &["install", "uninstall", "download"]),
    ("uv", &["add", "pip", "sync", "remove"]),
    ("poetry", &["add", "install", "remove", "publish", "update"]),
    ("cargo", &["install", "add", "remove", "publish", "update"]),
    ("go", &["get", "install"]),
    ("gem", &["install", "uninstall", "push"]),
    ("apt", &["install", "remove", "purge"]),
    ("apt-get", &["install", "remove", "purge"]),
    ("brew", &["install", "uninstall", "upgrade"]),
    ("dnf", &["install", "remove"]),
    ("yum", &["install", "remove"]),
    ("docker", &["pull", "push", "login", "run"]),
];

/// The risks of one command (its words, normalised).
fn read_command(command: &[String], workspace: &Workspace, risks: &mut BTreeSet<RiskKind>) {
    let mut words = command
        .iter()
        .skip_while(|w| {
            matches!(
                w.as_str(),
                "sudo" | "env" | "exec" | "command" | "nohup" | "time"
            ) || w.contains('=')
        })
        .map(String::as_str);
    let Some(first) = words.next() else {
        // `env` alone prints the environment.
        if command.iter().any(|w| w == "env") {
            risks.insert(RiskKind::Secret);
        }
        return;
    };
    let name = shell::name(first);
    let rest: Vec<&str> = words.collect();
    let operands = || rest.iter().filter(|w| !w.starts_with('-'));
    if DELETERS.contains(&name) {
        risks.insert(RiskKind::Delete);
    }
    if WRITERS.contains(&name)
        || (matches!(name, "sed" | "perl") && rest.iter().any(|w| w.starts_with("-i")))
    {
        risks.insert(RiskKind::Write);
    }
    let changes_files = DELETERS.contains(&name) || WRITERS.contains(&name);
    if changes_files && operands().any(|w| workspace.outside(w)) {
        risks.insert(RiskKind::OutsideWorkspace);
    }
    if shell::NETWORK.contains(&name) {
        risks.insert(RiskKind::Network);
    }
    if matches!(name, "printenv" | "env") || (name == "export" && rest.first() == Some(&"-p")) {
        risks.insert(RiskKind::Secret);
    }
    if rest.iter().any(|w| names_secret(w)) {
        risks.insert(RiskKind::Secret);
    }
    read_program(name, &rest, risks);
}

/// The risks of programs known by their subcommands: git, package managers, secret stores,
/// databases and containers.
fn read_program(name: &str, rest: &[&str], risks: &mut BTreeSet<RiskKind>) {
    let sub = rest.iter().find(|w| !w.starts_with('-')).copied();
    let has = |o: &str| {
        rest.iter()
            .any(|w| *w == o || w.starts_with(&format!("{o}=")))
    };
    match name {
        "git" => read_git(rest, risks),
        "gh" if sub == Some("auth") && has("token") => {
            risks.insert(RiskKind::Secret);
        }
        "gh" if matches!(sub, Some("pr" | "release" | "repo" | "api" | "issue")) => {
            risks.insert(RiskKind::Network);
        }
        "aws" if rest.contains(&"configure") || rest.contains(&"export-credentials") => {
            risks.insert(RiskKind::Secret);
        }
        "security" if sub.is_some_and(|s| s.starts_with("find-")) => {
            risks.insert(RiskKind::Secret);
        }
        "kubectl" if sub == Some("delete") => {
            risks.insert(RiskKind::Delete);
        }
        "kubectl" if rest.contains(&"secret") || rest.contains(&"secrets") => {
            risks.insert(RiskKind::Secret);
        }
        "terraform" | "tofu" if matches!(sub, Some("destroy" | "apply")) => {
            risks.insert(RiskKind::Delete);
        }
        "psql" | "mysql" | "sqlite3" | "mongo" | "mongosh" | "redis-cli" => {
            let sql = rest.join(" ");
            if [
                "drop ",
                "truncate ",
                "delete from",
                "flushall",
                "dropdatabase",
            ]
            .iter()
            .any(|k| sql.contains(k))
            {
                risks.insert(RiskKind::Delete);
            }
        }
        "docker" | "docker-compose" | "podman" => {
            let down_volumes = (rest.contains(&"down") && (has("-v") || has("--volumes")))
                || rest.contains(&"prune")
                || (matches!(sub, Some("volume" | "rm" | "rmi"))
                    && rest.iter().any(|w| matches!(*w, "rm" | "prune" | "-f")));
            if down_volumes || sub == Some("rm") || sub == Some("rmi") {
                risks.insert(RiskKind::Delete);
            }
        }
        _ => {}
    }
    if let Some((_, subs)) = PACKAGE_MANAGERS.iter().find(|(pm, _)| *pm == name) {
        if sub.is_some_and(|s| subs.contains(&s)) {
            risks.insert(RiskKind::Network);
            risks.insert(RiskKind::Write);
        }
    }
    if matches!(name, "npx" | "pipx" | "bunx" | "uvx") {
        risks.insert(RiskKind::Network);
    }
}

/// The risks of a `git` command (option groups split as P5 splits them).
fn read_git(rest: &[&str], risks: &mut BTreeSet<RiskKind>) {
    let words: Vec<String> = rest.iter().map(|w| w.to_string()).collect();
    let mut all = vec!["git".to_string()];
    all.extend(words);
    let split = shell::split_options(&all);
    let words: Vec<&str> = split.iter().skip(1).map(String::as_str).collect();
    // The subcommand: the first word that is not an option or an option's value (`-c x=y`,
    // `-C dir`).
    let mut sub = None;
    let mut skip_next = false;
    for (i, w) in words.iter().enumerate() {
        if skip_next {
            skip_next = false;
            continue;
        }
        if matches!(*w, "-c" | "-C" | "--git-dir" | "--work-tree") {
            skip_next = true;
            continue;
        }
        if !w.starts_with('-') {
            sub = Some((i, *w));
            break;
        }
    }
    let Some((at, sub)) = sub else { return };
    let args = &words[at + 1..];
    let has = |o: &str| {
        args.iter()
            .any(|w| *w == o || w.starts_with(&format!("{o}=")))
    };
    match sub {
        "push" => {
            risks.insert(RiskKind::Network);
            let forced = has("-f")
                || has("--force")
                || has("--force-with-lease")
                || has("--force-if-includes")
                || has("--mirror")
                || has("--delete")
                || has("-d")
                || args
                    .iter()
                    .any(|w| w.starts_with('+') || (w.starts_with(':') && w.len() > 1));
            if forced {
                risks.insert(RiskKind::ForcePush);
            }
        }
        "pull" | "fetch" | "clone" | "ls-remote" | "remote" | "submodule" => {
            risks.insert(RiskKind::Network);
        }
        "reset" | "restore" => {
            risks.insert(RiskKind::Reset);
        }
        "checkout" if rest.contains(&"--") || has(".") || has("-f") => {
            risks.insert(RiskKind::Reset);
        }
        "switch" if has("--discard-changes") || has("-f") || has("--force") => {
            risks.insert(RiskKind::Reset);
        }
        "stash" if args.first().is_some_and(|w| matches!(*w, "drop" | "clear")) => {
            risks.insert(RiskKind::Reset);
        }
        "clean" | "rm" => {
            risks.insert(RiskKind::Delete);
        }
        "branch" | "tag" if has("-d") || has("-D") || has("--delete") => {
            risks.insert(RiskKind::Delete);
        }
        "commit" | "merge" | "rebase" | "cherry-pick" | "revert" | "am" | "apply" | "mv" => {
            risks.insert(RiskKind::Write);
        }
        "config" if args.iter().any(|w| w.contains("credential")) => {
            risks.insert(RiskKind::Secret);
        }
        "filter-branch" | "filter-repo" | "update-ref" | "reflog" if !args.is_empty() => {
            risks.insert(RiskKind::Reset);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
