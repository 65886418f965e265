//! Where the hook hosts keep their files (SPEC H2): the settings directory, the runtime
//! directory with the background process's socket and lock, and the state directory with
//! the hook log and each host session's advisor transcript.
//!
//! Nothing here reads the process environment: a program reads the variables at its edge
//! into a [`PathEnv`] (tests build one by hand) and [`HostPaths::resolve`] works out the
//! places from it.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::payload::HookHost;

/// The settings file's name, in the settings directory and in a project's `.advisor/`.
pub const CONFIG_FILE: &str = "config.yml";
/// The project directory holding the hook hosts' project settings.
pub const PROJECT_DIR: &str = ".advisor";
/// The background process's socket, in the runtime directory.
pub const SOCKET_FILE: &str = "hookd.sock";
/// The lock two racing hooks take so that one starts the background process.
pub const LOCK_FILE: &str = "hookd.lock";
/// The hook log, in the state directory (one JSON line per hook call).
pub const HOOK_EVENTS_FILE: &str = "hook-events.jsonl";
/// Where the hook log goes once it passes [`HOOK_EVENTS_MAX_BYTES`].
pub const HOOK_EVENTS_ROTATED: &str = "hook-events.1.jsonl";
/// The hook log's size past which it is rotated: 1 MiB.
pub const HOOK_EVENTS_MAX_BYTES: u64 = 1 << 20;
/// The background process's own log, in the state directory.
pub const DAEMON_LOG_FILE: &str = "hookd.log";
/// The advisor's transcript file (P9) in a session's directory.
pub const ADVISOR_TRANSCRIPT_FILE: &str = "__advisor.jsonl";
/// The longest session id kept as it is in a directory name; longer or stranger ids are
/// replaced by a digest.
const MAX_SESSION_DIR_CHARS: usize = 96;

/// The environment variables behind the places, as values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathEnv {
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// The effective user id (not a variable: the program asks the system).
    pub uid: u32,
    /// `XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `XDG_RUNTIME_DIR`.
    pub xdg_runtime_dir: Option<PathBuf>,
    /// `XDG_STATE_HOME`.
    pub xdg_state_home: Option<PathBuf>,
    /// `ADVISOR_CONFIG_DIR`: overrides the settings directory.
    pub config_dir: Option<PathBuf>,
    /// `ADVISOR_RUNTIME_DIR`: overrides the runtime directory.
    pub runtime_dir: Option<PathBuf>,
    /// `ADVISOR_STATE_DIR`: overrides the state directory.
    pub state_dir: Option<PathBuf>,
}

impl PathEnv {
    /// Reads the variables through `lookup`; blank and relative values count as unset.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>, uid: u32) -> Self {
        let path = |name: &str| {
            lookup(name)
                .filter(|v| !v.trim().is_empty())
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        Self {
            home: path("HOME"),
            uid,
            xdg_config_home: path("XDG_CONFIG_HOME"),
            xdg_runtime_dir: path("XDG_RUNTIME_DIR"),
            xdg_state_home: path("XDG_STATE_HOME"),
            config_dir: path("ADVISOR_CONFIG_DIR"),
            runtime_dir: path("ADVISOR_RUNTIME_DIR"),
            state_dir: path("ADVISOR_STATE_DIR"),
        }
    }

    /// The current process's environment and effective user id (for the binary's edge).
    pub fn from_process() -> Self {
        Self::from_lookup(&|name| std::env::var(name).ok(), current_uid())
    }
}

/// The effective user id of this process.
pub fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Why a place cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    /// Neither the variable nor a home directory says where the place is.
    #[error("cannot tell where the advisor's {what} directory is: set HOME or {var}")]
    Unknown {
        /// Which place.
        what: &'static str,
        /// The variable that would name it.
        var: &'static str,
    },
    /// The directory belongs to another user or others may write to it.
    #[error("refusing {}: {reason}", path.display())]
    Unsafe {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Creating or inspecting the directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// The places of the hook hosts, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPaths {
    /// The settings directory (the agent directory of these hosts).
    pub config_dir: PathBuf,
    /// The runtime directory (socket and lock).
    pub runtime_dir: PathBuf,
    /// The state directory (hook log, sessions).
    pub state_dir: PathBuf,
}

impl HostPaths {
    /// The places `env` names (H2): the `ADVISOR_*_DIR` overrides, else
    /// `$XDG_CONFIG_HOME/advisor` (`~/.config/advisor`), `$XDG_RUNTIME_DIR/advisor` when that
    /// directory exists and is ours (else `/tmp/advisor-<uid>`), `$XDG_STATE_HOME/advisor`
    /// (`~/.local/state/advisor`). Nothing is created; the runtime directory's parent is
    /// inspected (a stat).
    pub fn resolve(env: &PathEnv) -> Result<Self, PathsError> {
        let home_join = |rel: &str| env.home.as_ref().map(|h| h.join(rel));
        let config_dir = env
            .config_dir
            .clone()
            .or_else(|| env.xdg_config_home.as_ref().map(|d| d.join("advisor")))
            .or_else(|| home_join(".config/advisor"))
            .ok_or(PathsError::Unknown {
                what: "settings",
                var: "XDG_CONFIG_HOME",
            })?;
        let state_dir = env
            .state_dir
            .clone()
            .or_else(|| env.xdg_state_home.as_ref().map(|d| d.join("advisor")))
            .or_else(|| home_join(".local/state/advisor"))
            .ok_or(PathsError::Unknown {
                what: "state",
                var: "XDG_STATE_HOME",
            })?;
        let runtime_dir = env.runtime_dir.clone().unwrap_or_else(|| {
            env.xdg_runtime_dir
                .as_ref()
                .filter(|d| owned_by(d, env.uid))
                .map(|d| d.join("advisor"))
                .unwrap_or_else(|| PathBuf::from(format!("/tmp/advisor-{}", env.uid)))
        });
        Ok(Self {
            config_dir,
            runtime_dir,
            state_dir,
        })
    }

    /// The background process's socket.
    pub fn socket(&self) -> PathBuf {
        self.runtime_dir.join(SOCKET_FILE)
    }

    /// The lock file racing hooks take before starting the background process.
    pub fn lock(&self) -> PathBuf {
        self.runtime_dir.join(LOCK_FILE)
    }

    /// The hook log.
    pub fn hook_events(&self) -> PathBuf {
        self.state_dir.join(HOOK_EVENTS_FILE)
    }

    /// The hook log's rotated copy.
    pub fn hook_events_rotated(&self) -> PathBuf {
        self.state_dir.join(HOOK_EVENTS_ROTATED)
    }

    /// The background process's log.
    pub fn daemon_log(&self) -> PathBuf {
        self.state_dir.join(DAEMON_LOG_FILE)
    }

    /// The directory of one host session: `sessions/<host>-<session id>` (an id that is
    /// long or holds anything but letters, digits, `-`, `_` and `.` is replaced by a digest).
    pub fn session_dir(&self, host: &str, session_id: &str) -> PathBuf {
        self.state_dir
            .join("sessions")
            .join(format!("{host}-{}", session_dir_name(session_id)))
    }

    /// The advisor's transcript file (P9) of one host session.
    pub fn advisor_transcript(&self, host: &str, session_id: &str) -> PathBuf {
        self.session_dir(host, session_id)
            .join(ADVISOR_TRANSCRIPT_FILE)
    }

    /// The user's settings file.
    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join(CONFIG_FILE)
    }
}

/// The project's settings file for a session working in `cwd`: `<cwd>/.advisor/config.yml`.
pub fn project_config_file(cwd: &Path) -> PathBuf {
    cwd.join(PROJECT_DIR).join(CONFIG_FILE)
}

/// The settings files of a session working in `cwd`, weakest first: the user's, then the
/// project's, which overrides it key by key.
pub fn config_files(config_dir: &Path, cwd: &Path) -> Vec<PathBuf> {
    vec![config_dir.join(CONFIG_FILE), project_config_file(cwd)]
}

/// A session id as a directory name: kept when short and plain, else `h` and a digest.
fn session_dir_name(id: &str) -> String {
    let plain = !id.is_empty()
        && id.len() <= MAX_SESSION_DIR_CHARS
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if plain {
        id.to_string()
    } else {
        format!("h{:016x}", fnv1a(id.as_bytes()))
    }
}

/// FNV-1a, 64 bits: a stable digest for directory names (not a security measure).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether `dir` exists as a directory owned by `uid` (symlinks not followed).
fn owned_by(dir: &Path, uid: u32) -> bool {
    fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && m.uid() == uid)
}

/// Creates `dir` (and its parents) with mode 0700 if missing, then checks it: a real
/// directory (not a symlink), owned by `uid`, not writable by group or others. A directory
/// that fails the check is refused, never repaired, except that a directory of ours with a
/// wider mode is narrowed to 0700.
pub fn ensure_private_dir(dir: &Path, uid: u32) -> Result<(), PathsError> {
    let io_err = |source| PathsError::Io {
        path: dir.to_path_buf(),
        source,
    };
    match fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_err(e)),
    }
    let meta = fs::symlink_metadata(dir).map_err(io_err)?;
    let unsafe_dir = |reason: String| PathsError::Unsafe {
        path: dir.to_path_buf(),
        reason,
    };
    if !meta.is_dir() {
        return Err(unsafe_dir("not a directory (a symlink or a file)".into()));
    }
    if meta.uid() != uid {
        return Err(unsafe_dir(format!(
            "owned by uid {}, not {uid}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io_err)?;
    }
    Ok(())
}

/// Checks that the socket at `path` may be trusted: a socket (not a symlink), owned by
/// `uid`, in a directory that passes [`ensure_private_dir`]'s checks.
pub fn check_socket(path: &Path, uid: u32) -> Result<(), PathsError> {
    use std::os::unix::fs::FileTypeExt;
    let meta = fs::symlink_metadata(path).map_err(|source| PathsError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let unsafe_socket = |reason: String| PathsError::Unsafe {
        path: path.to_path_buf(),
        reason,
    };
    if !meta.file_type().is_socket() {
        return Err(unsafe_socket("not a socket".into()));
    }
    if meta.uid() != uid {
        return Err(unsafe_socket(format!(
            "owned by uid {}, not {uid}",
            meta.uid()
        )));
    }
    if let Some(parent) = path.parent() {
        let dir = fs::symlink_metadata(parent).map_err(|source| PathsError::Io {
            path: parent.to_path_buf(),
            source,
        })?;
        if !dir.is_dir() || dir.uid() != uid || dir.mode() & 0o022 != 0 {
            return Err(unsafe_socket(
                "its directory is not a private directory of ours".into(),
            ));
        }
    }
    Ok(())
}

/// Where Claude Code and Codex keep their own files (their user directories, the project's
/// hooks files): what those places depend on, read from the environment by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostDirs {
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR`: Claude Code's user directory instead of `~/.claude`.
    pub claude_config_dir: Option<PathBuf>,
    /// `CODEX_HOME`: Codex's user directory instead of `~/.codex`.
    pub codex_home: Option<PathBuf>,
    /// The working directory: the project whose own hooks files are meant.
    pub cwd: PathBuf,
}

impl HostDirs {
    /// The directories from `lookup` (blank values count as unset) and `cwd`.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>, cwd: PathBuf) -> Self {
        let get = |name: &str| {
            lookup(name)
                .filter(|v| !v.trim().is_empty())
                .map(PathBuf::from)
        };
        Self {
            home: get("HOME"),
            claude_config_dir: get("CLAUDE_CONFIG_DIR"),
            codex_home: get("CODEX_HOME"),
            cwd,
        }
    }

    /// The host's own user directory: `$CLAUDE_CONFIG_DIR` else `~/.claude`, `$CODEX_HOME`
    /// else `~/.codex`; `None` when neither it nor a home directory is known.
    pub fn user_dir(&self, host: HookHost) -> Option<PathBuf> {
        let (own, dir) = match host {
            HookHost::ClaudeCode => (&self.claude_config_dir, ".claude"),
            HookHost::Codex => (&self.codex_home, ".codex"),
        };
        own.clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(dir)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(home: &str) -> PathEnv {
        PathEnv {
            home: Some(PathBuf::from(home)),
            uid: 4242,
            ..PathEnv::default()
        }
    }

    #[test]
    fn h2_places_default_under_home_and_tmp() {
        let p = HostPaths::resolve(&env("/home/u")).unwrap();
        assert_eq!(p.config_dir, PathBuf::from("/home/u/.config/advisor"));
        assert_eq!(p.state_dir, PathBuf::from("/home/u/.local/state/advisor"));
        assert_eq!(p.runtime_dir, PathBuf::from("/tmp/advisor-4242"));
        assert_eq!(p.socket(), PathBuf::from("/tmp/advisor-4242/hookd.sock"));
        assert_eq!(p.lock(), PathBuf::from("/tmp/advisor-4242/hookd.lock"));
        assert_eq!(
            p.hook_events(),
            PathBuf::from("/home/u/.local/state/advisor/hook-events.jsonl")
        );
    }

    #[test]
    fn h2_xdg_and_overrides_win_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = env("/home/u");
        e.uid = current_uid();
        e.xdg_config_home = Some("/x/config".into());
        e.xdg_state_home = Some("/x/state".into());
        e.xdg_runtime_dir = Some(dir.path().to_path_buf());
        let p = HostPaths::resolve(&e).unwrap();
        assert_eq!(p.config_dir, PathBuf::from("/x/config/advisor"));
        assert_eq!(p.state_dir, PathBuf::from("/x/state/advisor"));
        assert_eq!(p.runtime_dir, dir.path().join("advisor"));
        e.config_dir = Some("/o/c".into());
        e.runtime_dir = Some("/o/r".into());
        e.state_dir = Some("/o/s".into());
        let p = HostPaths::resolve(&e).unwrap();
        assert_eq!(
            (p.config_dir, p.runtime_dir, p.state_dir),
            ("/o/c".into(), "/o/r".into(), "/o/s".into())
        );
    }

    #[test]
    fn h2_a_runtime_dir_of_another_user_is_not_used() {
        let mut e = env("/home/u");
        e.uid = current_uid().wrapping_add(1);
        e.xdg_runtime_dir = Some(std::env::temp_dir());
        let p = HostPaths::resolve(&e).unwrap();
        assert_eq!(
            p.runtime_dir,
            PathBuf::from(format!("/tmp/advisor-{}", e.uid))
        );
    }

    #[test]
    fn h2_blank_or_relative_variables_count_as_unset() {
        let lookup = |name: &str| match name {
            "HOME" => Some("/home/u".to_string()),
            "XDG_CONFIG_HOME" => Some("relative".to_string()),
            "XDG_STATE_HOME" => Some("  ".to_string()),
            _ => None,
        };
        let e = PathEnv::from_lookup(&lookup, 7);
        assert_eq!(e.xdg_config_home, None);
        assert_eq!(e.xdg_state_home, None);
        assert!(HostPaths::resolve(&PathEnv::default()).is_err());
    }

    #[test]
    fn h2_session_dirs_are_plain_names_or_digests() {
        let p = HostPaths::resolve(&env("/h")).unwrap();
        assert!(p
            .session_dir("codex", "01a2-b_c.d")
            .ends_with("sessions/codex-01a2-b_c.d"));
        for hostile in ["../../etc", "a/b", "", ".hidden", &"x".repeat(200), "a\nb"] {
            let dir = p.session_dir("claude-code", hostile);
            let name = dir.file_name().unwrap().to_str().unwrap();
            assert!(name.starts_with("claude-code-h"), "{hostile:?} → {name}");
            assert_eq!(dir.parent().unwrap(), p.state_dir.join("sessions"));
        }
    }

    #[test]
    fn h2_private_dirs_are_created_0700_and_foreign_ones_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        ensure_private_dir(&dir, current_uid()).unwrap();
        let mode = fs::metadata(&dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        ensure_private_dir(&dir, current_uid()).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        let err = ensure_private_dir(&dir, current_uid().wrapping_add(1)).unwrap_err();
        assert!(err.to_string().contains("owned by uid"), "{err}");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let err = ensure_private_dir(&link, current_uid()).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
    }

    #[test]
    fn h2_a_socket_path_that_is_a_file_or_foreign_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("rt");
        ensure_private_dir(&dir, current_uid()).unwrap();
        let file = dir.join(SOCKET_FILE);
        fs::write(&file, "x").unwrap();
        assert!(check_socket(&file, current_uid()).is_err());
        fs::remove_file(&file).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(&file).unwrap();
        check_socket(&file, current_uid()).unwrap();
        assert!(check_socket(&file, current_uid().wrapping_add(1)).is_err());
    }

    #[test]
    fn h2_project_settings_sit_in_dot_advisor() {
        assert_eq!(
            config_files(Path::new("/c"), Path::new("/p")),
            vec![
                PathBuf::from("/c/config.yml"),
                PathBuf::from("/p/.advisor/config.yml")
            ]
        );
    }
}
