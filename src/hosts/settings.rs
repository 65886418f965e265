//! The settings of a Claude Code or Codex CLI session (H20–H22): where they live, how they
//! layer, and which model the advisor uses when nothing names one.
//!
//! - The agent directory is `$ADVISOR_CONFIG_DIR`, else `$XDG_CONFIG_HOME/advisor`, else
//!   `~/.config/advisor`; its `config.yml` has the same keys as oh-my-pi's (`modelRoles.advisor`,
//!   `advisor.*`), and `<cwd>/.advisor/config.yml` overrides it key by key ([`host_settings`]).
//! - Installing the hooks is the user's opt-in, so for these hosts the advisor is on unless a
//!   settings file says `advisor.enabled: false` (pi's fresh setup is off, K1).
//! - The model: `ADVISOR_MODEL`, else `modelRoles.advisor`, else the host's default for the
//!   key the environment holds ([`default_host_model`], [`host_model`]).
//!
//! Everything takes the environment as a lookup function and the places as values; nothing
//! here reads the process environment. Loading is blocking.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::settings::{load_settings_in, LoadedSettings, SettingsError};

/// The project's settings directory for these hosts, relative to the working directory.
pub const PROJECT_SETTINGS_DIR: &str = ".advisor";

/// The file `advisor hook` appends one line per hook call to, in the state directory.
pub const HOOK_EVENTS_FILE: &str = "hook-events.jsonl";

/// The background process's socket, in the runtime directory.
pub const SOCKET_FILE: &str = "hookd.sock";

/// The default advisor model for a Claude Code session with `ANTHROPIC_API_KEY` set (H22).
pub const CLAUDE_CODE_DEFAULT_MODEL: &str = "anthropic/claude-sonnet-4-5";

/// The default advisor model for a Codex session with `OPENAI_API_KEY` set (H22).
pub const CODEX_DEFAULT_MODEL: &str = "openai/gpt-5";

/// A coding-agent CLI the advisor attaches to through its hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookHost {
    /// Anthropic's Claude Code (`claude`).
    ClaudeCode,
    /// OpenAI's Codex CLI (`codex`).
    Codex,
}

impl HookHost {
    /// Both hosts, in the order they are listed to users.
    pub const ALL: [HookHost; 2] = [HookHost::ClaudeCode, HookHost::Codex];

    /// The host's name on the command line and in files: `claude-code` or `codex`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookHost::ClaudeCode => "claude-code",
            HookHost::Codex => "codex",
        }
    }

    /// The host's name for people: `Claude Code` or `Codex`.
    pub fn title(self) -> &'static str {
        match self {
            HookHost::ClaudeCode => "Claude Code",
            HookHost::Codex => "Codex",
        }
    }

    /// The key variable of the host's own provider and the default model it gives (H22):
    /// `ANTHROPIC_API_KEY` and [`CLAUDE_CODE_DEFAULT_MODEL`] for Claude Code,
    /// `OPENAI_API_KEY` and [`CODEX_DEFAULT_MODEL`] for Codex.
    pub fn own_default(self) -> (&'static str, &'static str) {
        self.default_models()[0]
    }

    /// The providers whose key gives this host a default model, its own first, each with
    /// the model it gives (H22).
    fn default_models(self) -> [(&'static str, &'static str); 2] {
        let anthropic = ("ANTHROPIC_API_KEY", CLAUDE_CODE_DEFAULT_MODEL);
        let openai = ("OPENAI_API_KEY", CODEX_DEFAULT_MODEL);
        match self {
            HookHost::ClaudeCode => [anthropic, openai],
            HookHost::Codex => [openai, anthropic],
        }
    }
}

impl fmt::Display for HookHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A host name that is neither `claude-code` nor `codex`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown host `{0}`: expected claude-code or codex")]
pub struct UnknownHost(pub String);

impl FromStr for HookHost {
    type Err = UnknownHost;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "claude-code" | "claude" => Ok(HookHost::ClaudeCode),
            "codex" => Ok(HookHost::Codex),
            other => Err(UnknownHost(other.to_string())),
        }
    }
}

/// Where the advisor keeps its files for these hosts (HOSTS "Places").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPlaces {
    /// The agent directory: `config.yml`, `WATCHDOG.md`, `system-prompts/advisor.md`;
    /// `None` when neither it nor a home directory is known.
    pub config_dir: Option<PathBuf>,
    /// The state directory: the hook-events log and the advisor's session files; `None`
    /// when neither it nor a home directory is known.
    pub state_dir: Option<PathBuf>,
    /// The runtime directory holding the background process's socket.
    pub runtime_dir: PathBuf,
}

impl HostPlaces {
    /// The places the environment gives (read through `lookup`; blank values count as
    /// unset, and `XDG_*` values that are not absolute are ignored, as the XDG spec says):
    /// `ADVISOR_CONFIG_DIR`, else `$XDG_CONFIG_HOME/advisor`, else `~/.config/advisor`;
    /// `ADVISOR_STATE_DIR`, else `$XDG_STATE_HOME/advisor`, else `~/.local/state/advisor`;
    /// `ADVISOR_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/advisor`, else `/tmp/advisor-<uid>`.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>, uid: u32) -> Self {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let xdg = |name: &str| get(name).map(PathBuf::from).filter(|p| p.is_absolute());
        let home = get("HOME").map(PathBuf::from);
        let place = |own: &str, xdg_name: &str, fallback: &[&str]| {
            get(own).map(PathBuf::from).or_else(|| {
                xdg(xdg_name).map(|dir| dir.join("advisor")).or_else(|| {
                    home.as_ref()
                        .map(|home| fallback.iter().fold(home.clone(), |p, part| p.join(part)))
                })
            })
        };
        let runtime_dir = get("ADVISOR_RUNTIME_DIR")
            .map(PathBuf::from)
            .or_else(|| xdg("XDG_RUNTIME_DIR").map(|dir| dir.join("advisor")))
            .unwrap_or_else(|| PathBuf::from(format!("/tmp/advisor-{uid}")));
        Self {
            config_dir: place(
                "ADVISOR_CONFIG_DIR",
                "XDG_CONFIG_HOME",
                &[".config", "advisor"],
            ),
            state_dir: place(
                "ADVISOR_STATE_DIR",
                "XDG_STATE_HOME",
                &[".local", "state", "advisor"],
            ),
            runtime_dir,
        }
    }

    /// The agent directory's `config.yml`, when the directory is known.
    pub fn config_file(&self) -> Option<PathBuf> {
        self.config_dir
            .as_ref()
            .map(|dir| dir.join(crate::settings::CONFIG_FILE))
    }

    /// `<state>/hook-events.jsonl`, when the state directory is known.
    pub fn hook_events_file(&self) -> Option<PathBuf> {
        self.state_dir
            .as_ref()
            .map(|dir| dir.join(HOOK_EVENTS_FILE))
    }

    /// `<runtime>/hookd.sock`.
    pub fn socket_path(&self) -> PathBuf {
        self.runtime_dir.join(SOCKET_FILE)
    }
}

/// The settings of a `host` session working in `cwd` (H20, H21): the agent directory's
/// `config.yml`, then `<cwd>/.advisor/config.yml` key by key, the prompt override from the
/// agent directory; the advisor on unless a file says `advisor.enabled: false`. Errors
/// name the file, as for pi's settings. Blocking.
pub fn host_settings(
    host: HookHost,
    places: &HostPlaces,
    cwd: &Path,
) -> Result<LoadedSettings, SettingsError> {
    let mut loaded = load_settings_in(places.config_dir.as_deref(), cwd, PROJECT_SETTINGS_DIR)?;
    // H21: `enabled` is false with nobody to blame only when no file set it.
    if loaded.disabled_by.is_none() {
        loaded.settings.enabled = true;
    }
    tracing::debug!(host = host.as_str(), files = ?loaded.files, "host settings loaded");
    Ok(loaded)
}

/// The advisor model a `host` session uses when neither `ADVISOR_MODEL` nor a settings
/// file names one (H22): for Claude Code, `anthropic/claude-sonnet-4-5` when
/// `ANTHROPIC_API_KEY` is set, else `openai/gpt-5` when `OPENAI_API_KEY` is; for Codex the
/// same two the other way round; `None` without either key. `env` looks a variable up
/// (blank counts as unset).
pub fn default_host_model(host: HookHost, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    host.default_models()
        .into_iter()
        .find(|(var, _)| env(var).is_some_and(|v| !v.trim().is_empty()))
        .map(|(_, model)| model.to_string())
}

/// Where the model of a host session came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// `ADVISOR_MODEL`.
    Environment,
    /// `modelRoles.advisor` in a settings file.
    Settings,
    /// The host's default for the key in the environment (H22), naming the variable.
    HostDefault(&'static str),
}

impl fmt::Display for ModelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSource::Environment => f.write_str("ADVISOR_MODEL"),
            ModelSource::Settings => f.write_str("modelRoles.advisor in the settings"),
            ModelSource::HostDefault(var) => write!(f, "the default with {var} set"),
        }
    }
}

/// The model a host session uses and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostModel {
    /// The role string, `provider/model-id[:thinking]`.
    pub role: String,
    /// Where it came from.
    pub source: ModelSource,
}

/// The advisor model of a `host` session (H22): `ADVISOR_MODEL`, else the settings'
/// `modelRoles.advisor`, else [`default_host_model`]; `None` when none of them gives one.
pub fn host_model(
    host: HookHost,
    loaded: &LoadedSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<HostModel> {
    let set = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
    if let Some(role) = set(env("ADVISOR_MODEL")) {
        return Some(HostModel {
            role,
            source: ModelSource::Environment,
        });
    }
    if let Some(role) = set(loaded.advisor_role.clone()) {
        return Some(HostModel {
            role,
            source: ModelSource::Settings,
        });
    }
    let role = default_host_model(host, env)?;
    let var = host
        .default_models()
        .into_iter()
        .find(|(_, model)| *model == role)
        .map_or("", |(var, _)| var);
    Some(HostModel {
        role,
        source: ModelSource::HostDefault(var),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn places_follow_the_advisor_variables_then_xdg_then_home() {
        let places = HostPlaces::from_lookup(&lookup(&[("HOME", "/home/u")]), 1000);
        assert_eq!(places.config_dir, Some("/home/u/.config/advisor".into()));
        assert_eq!(
            places.state_dir,
            Some("/home/u/.local/state/advisor".into())
        );
        assert_eq!(places.runtime_dir, PathBuf::from("/tmp/advisor-1000"));
        assert_eq!(
            places.hook_events_file(),
            Some("/home/u/.local/state/advisor/hook-events.jsonl".into())
        );
        let places = HostPlaces::from_lookup(
            &lookup(&[
                ("HOME", "/home/u"),
                ("XDG_CONFIG_HOME", "/x/config"),
                ("XDG_STATE_HOME", "relative/state"),
                ("XDG_RUNTIME_DIR", "/run/user/7"),
            ]),
            7,
        );
        assert_eq!(places.config_dir, Some("/x/config/advisor".into()));
        assert_eq!(
            places.state_dir,
            Some("/home/u/.local/state/advisor".into()),
            "a relative XDG value is ignored"
        );
        assert_eq!(
            places.socket_path(),
            PathBuf::from("/run/user/7/advisor/hookd.sock")
        );
        let places = HostPlaces::from_lookup(
            &lookup(&[
                ("XDG_CONFIG_HOME", "/x/config"),
                ("ADVISOR_CONFIG_DIR", "/c"),
                ("ADVISOR_STATE_DIR", "/s"),
                ("ADVISOR_RUNTIME_DIR", "/r"),
            ]),
            7,
        );
        assert_eq!(places.config_dir, Some("/c".into()));
        assert_eq!(places.state_dir, Some("/s".into()));
        assert_eq!(places.runtime_dir, PathBuf::from("/r"));
        assert_eq!(HostPlaces::from_lookup(&lookup(&[]), 0).config_dir, None);
    }

    #[test]
    fn h22_the_default_model_follows_the_key_the_host_gives_its_own_provider_first() {
        let both = lookup(&[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")]);
        assert_eq!(
            default_host_model(HookHost::ClaudeCode, &both).as_deref(),
            Some(CLAUDE_CODE_DEFAULT_MODEL)
        );
        assert_eq!(
            default_host_model(HookHost::Codex, &both).as_deref(),
            Some(CODEX_DEFAULT_MODEL)
        );
        let openai = lookup(&[("ANTHROPIC_API_KEY", " "), ("OPENAI_API_KEY", "o")]);
        assert_eq!(
            default_host_model(HookHost::ClaudeCode, &openai).as_deref(),
            Some(CODEX_DEFAULT_MODEL)
        );
        assert_eq!(default_host_model(HookHost::Codex, &lookup(&[])), None);
    }

    #[test]
    fn h22_advisor_model_beats_the_settings_which_beat_the_default() {
        let mut loaded = LoadedSettings::default();
        let env = lookup(&[("ANTHROPIC_API_KEY", "k")]);
        let model = host_model(HookHost::ClaudeCode, &loaded, &env).unwrap();
        assert_eq!(model.role, CLAUDE_CODE_DEFAULT_MODEL);
        assert_eq!(model.source, ModelSource::HostDefault("ANTHROPIC_API_KEY"));
        loaded.advisor_role = Some("openrouter/x/y".into());
        let model = host_model(HookHost::ClaudeCode, &loaded, &env).unwrap();
        assert_eq!(
            (model.role.as_str(), model.source),
            ("openrouter/x/y", ModelSource::Settings)
        );
        let env = lookup(&[("ADVISOR_MODEL", "local/m")]);
        let model = host_model(HookHost::Codex, &loaded, &env).unwrap();
        assert_eq!(
            (model.role.as_str(), model.source),
            ("local/m", ModelSource::Environment)
        );
        assert_eq!(
            host_model(HookHost::Codex, &LoadedSettings::default(), &lookup(&[])),
            None
        );
    }

    #[test]
    fn h20_h21_host_settings_layer_the_project_file_and_default_to_enabled() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("config");
        let cwd = tmp.path().join("proj");
        fs::create_dir_all(cwd.join(".advisor")).unwrap();
        fs::create_dir_all(cwd.join(".omp")).unwrap();
        fs::create_dir_all(&config).unwrap();
        let places = HostPlaces {
            config_dir: Some(config.clone()),
            state_dir: None,
            runtime_dir: tmp.path().join("run"),
        };
        let loaded = host_settings(HookHost::Codex, &places, &cwd).unwrap();
        assert!(loaded.settings.enabled, "on without any file");
        assert!(loaded.files.is_empty());

        fs::write(
            config.join("config.yml"),
            "modelRoles:\n  advisor: a/one\nadvisor:\n  immuneTurns: 5\n",
        )
        .unwrap();
        fs::write(cwd.join(".omp/config.yml"), "advisor:\n  enabled: false\n").unwrap();
        fs::write(
            cwd.join(".advisor/config.yml"),
            "modelRoles:\n  advisor: p/two\n",
        )
        .unwrap();
        let loaded = host_settings(HookHost::ClaudeCode, &places, &cwd).unwrap();
        assert!(loaded.settings.enabled, "pi's .omp file is not read");
        assert_eq!(loaded.advisor_role.as_deref(), Some("p/two"));
        assert_eq!(loaded.settings.immune_turns, 5);
        assert_eq!(loaded.files.len(), 2);

        fs::write(
            cwd.join(".advisor/config.yml"),
            "advisor:\n  enabled: false\n",
        )
        .unwrap();
        let loaded = host_settings(HookHost::ClaudeCode, &places, &cwd).unwrap();
        assert!(!loaded.settings.enabled);
        assert_eq!(loaded.disabled_by, Some(cwd.join(".advisor/config.yml")));

        fs::write(cwd.join(".advisor/config.yml"), "advisor: [broken\n").unwrap();
        let err = host_settings(HookHost::ClaudeCode, &places, &cwd).unwrap_err();
        assert!(err.to_string().contains(".advisor/config.yml"), "{err}");
    }

    #[test]
    fn host_names_parse_and_print() {
        for host in HookHost::ALL {
            assert_eq!(host.as_str().parse::<HookHost>(), Ok(host));
        }
        assert!("pi"
            .parse::<HookHost>()
            .unwrap_err()
            .to_string()
            .contains("claude-code or codex"));
    }
}
