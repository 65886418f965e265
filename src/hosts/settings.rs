//! The settings of a Claude Code or Codex CLI session (H20–H22): where they live, how they
//! layer, and which model the advisor uses when nothing names one.
//!
//! - The agent directory is the settings directory of [`HostPaths`] (H2); its `config.yml`
//!   has the same keys as oh-my-pi's (`modelRoles.advisor`, `advisor.*`), and
//!   `<cwd>/.advisor/config.yml` overrides it key by key ([`host_settings`]).
//! - Installing the hooks is the user's opt-in, so for these hosts the advisor is on unless a
//!   settings file says `advisor.enabled: false` (pi's fresh setup is off, K1).
//! - The model: `ADVISOR_MODEL`, else `modelRoles.advisor`, else the host's default for the
//!   key the environment holds ([`default_host_model`], [`host_model`]).
//!
//! Everything takes the environment as a lookup function and the places as values; nothing
//! here reads the process environment. Loading is blocking.

use std::fmt;
use std::path::Path;

use super::paths::HostDirs;
use super::paths::{HostPaths, PROJECT_DIR};
use super::payload::HookHost;
use crate::settings::{load_settings_in, LoadedSettings, SettingsError};
use crate::watchdog::{InstructionFiles, WatchdogConfig};

/// The host's timeout (seconds) for an ordinary hook call: the hook answers within 250 ms
/// (or `advisor.hookTimeoutMs`); this is the backstop.
pub const HOOK_TIMEOUT_SECS: u64 = 10;

/// The host's timeout (seconds) for PreToolUse, where the action gate may ask a model: the
/// gate's own bound (at most 30 s) plus a margin.
pub const PRE_TOOL_USE_TIMEOUT_SECS: u64 = 35;

/// The longest the action gate's model may take in a hook host (GT15): the installed
/// PreToolUse timeout less 5 s, so the gate's fail mode decides before the host kills the
/// hook (a killed hook's answer is dropped and the call runs, whatever `gateFailMode` says).
pub const MAX_HOOK_GATE_TIMEOUT: std::time::Duration =
    std::time::Duration::from_secs(PRE_TOOL_USE_TIMEOUT_SECS - 5);

/// `advisor.gateTimeoutMs` as a hook host applies it: at most [`MAX_HOOK_GATE_TIMEOUT`].
pub fn hook_gate_timeout(configured: std::time::Duration) -> std::time::Duration {
    configured.min(MAX_HOOK_GATE_TIMEOUT)
}

/// The default advisor model for a Claude Code session with `ANTHROPIC_API_KEY` set (H22).
pub const CLAUDE_CODE_DEFAULT_MODEL: &str = "anthropic/claude-sonnet-4-5";

/// The default advisor model for a Codex session with `OPENAI_API_KEY` set (H22).
pub const CODEX_DEFAULT_MODEL: &str = "openai/gpt-5";

impl HookHost {
    /// Both hosts, in the order they are listed to users.
    pub const ALL: [HookHost; 2] = [HookHost::ClaudeCode, HookHost::Codex];

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

/// The settings of a `host` session working in `cwd` (H20, H21): the agent directory's
/// `config.yml`, then `<cwd>/.advisor/config.yml` key by key, the prompt override from the
/// agent directory; the advisor on unless a file says `advisor.enabled: false`. Errors
/// name the file, as for pi's settings. Blocking.
pub fn host_settings(
    host: HookHost,
    paths: &HostPaths,
    cwd: &Path,
) -> Result<LoadedSettings, SettingsError> {
    let mut loaded = load_settings_in(Some(&paths.config_dir), cwd, PROJECT_DIR)?;
    // H21: `enabled` is false with nobody to blame only when no file set it.
    if loaded.disabled_by.is_none() {
        loaded.settings.enabled = true;
    }
    // GT15: the gate decides (its fail mode included) before the host's hook timeout.
    loaded.settings.gate.timeout = hook_gate_timeout(loaded.settings.gate.timeout);
    tracing::debug!(host = host.as_str(), files = ?loaded.files, "host settings loaded");
    Ok(loaded)
}

/// The instruction files the `host`'s agent reads (P8): Claude Code's `CLAUDE.md` files
/// with the user's in `$CLAUDE_CONFIG_DIR` (else `~/.claude`), Codex's `AGENTS.md` files
/// with the user's in `$CODEX_HOME` (else `~/.codex`). `env` looks a variable up.
pub fn host_instruction_files(
    host: HookHost,
    env: &dyn Fn(&str) -> Option<String>,
) -> InstructionFiles {
    let user_dir = HostDirs::from_lookup(env, Default::default()).user_dir(host);
    match host {
        HookHost::ClaudeCode => InstructionFiles::ClaudeCode { user_dir },
        HookHost::Codex => InstructionFiles::Codex { user_dir },
    }
}

/// The watchdog configuration of a `host` session working in `cwd` (W1, P8): WATCHDOG
/// files from the settings directory and the project, the host's instruction files.
pub fn host_watchdog_config(
    host: HookHost,
    paths: &HostPaths,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> WatchdogConfig {
    let home = env("HOME")
        .filter(|h| !h.trim().is_empty())
        .map(std::path::PathBuf::from);
    WatchdogConfig {
        cwd: cwd.to_path_buf(),
        agent_dir: Some(paths.config_dir.clone()),
        home,
        instructions: host_instruction_files(host, env),
    }
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

    use crate::settings::lookup_from as lookup;

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
    fn gt15_a_gate_timeout_past_the_hosts_hook_timeout_is_cut_so_the_fail_mode_decides() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("config");
        let cwd = tmp.path().join("proj");
        fs::create_dir_all(&cwd).unwrap();
        fs::create_dir_all(&config).unwrap();
        let places = HostPaths {
            config_dir: config.clone(),
            state_dir: tmp.path().join("state"),
            runtime_dir: tmp.path().join("run"),
        };
        let timeout = |ms: u64| {
            let yaml = format!("advisor:\n  gate: risky\n  gateTimeoutMs: {ms}\n");
            fs::write(config.join("config.yml"), yaml).unwrap();
            host_settings(HookHost::ClaudeCode, &places, &cwd)
                .unwrap()
                .settings
                .gate
                .timeout
        };
        assert_eq!(timeout(1500), std::time::Duration::from_millis(1500));
        assert_eq!(timeout(120_000), std::time::Duration::from_secs(30));
        // The hook waits a second past the gate; the host kills it only later.
        let bound = super::hook_gate_timeout(std::time::Duration::from_secs(600))
            + std::time::Duration::from_secs(1);
        assert!(bound < std::time::Duration::from_secs(super::PRE_TOOL_USE_TIMEOUT_SECS));
    }

    #[test]
    fn h20_h21_host_settings_layer_the_project_file_and_default_to_enabled() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("config");
        let cwd = tmp.path().join("proj");
        fs::create_dir_all(cwd.join(".advisor")).unwrap();
        fs::create_dir_all(cwd.join(".omp")).unwrap();
        fs::create_dir_all(&config).unwrap();
        let places = HostPaths {
            config_dir: config.clone(),
            state_dir: tmp.path().join("state"),
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
    fn p8_a_host_session_reads_its_hosts_instruction_files() {
        let env = lookup(&[("HOME", "/home/u"), ("CODEX_HOME", "/ch")]);
        let paths = HostPaths {
            config_dir: "/home/u/.config/advisor".into(),
            state_dir: "/s".into(),
            runtime_dir: "/r".into(),
        };
        let config = host_watchdog_config(HookHost::ClaudeCode, &paths, Path::new("/p"), &env);
        assert_eq!(config.agent_dir, Some("/home/u/.config/advisor".into()));
        assert_eq!(config.home, Some("/home/u".into()));
        assert_eq!(
            config.instructions,
            InstructionFiles::ClaudeCode {
                user_dir: Some("/home/u/.claude".into())
            }
        );
        assert_eq!(
            host_instruction_files(HookHost::Codex, &env),
            InstructionFiles::Codex {
                user_dir: Some("/ch".into())
            }
        );
    }
}
