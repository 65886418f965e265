//! Reading the settings files (K1) and the prompt override (G1). Blocking: call these while
//! the program starts, never on an actor thread. The caller passes every path in.

use std::path::{Path, PathBuf};

use super::{AdvisorSettings, SettingsError, SettingsLayer, SettingsWarning};
use crate::regular_file::{read_text_capped, FileError};

/// The settings file's name, in the agent directory and in a project's `.omp/`.
pub const CONFIG_FILE: &str = "config.yml";

/// The prompt override, relative to the agent directory (G1).
pub const PROMPT_OVERRIDE_FILE: &str = "system-prompts/advisor.md";

/// The largest settings file (or prompt override) that is read: 1 MiB. A longer one is an
/// error naming the file; no more than this (plus one byte) is ever read.
pub const MAX_SETTINGS_BYTES: usize = 1 << 20;

/// Everything the files say, layered over the defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSettings {
    /// The defaults with every file's keys applied, the later file winning.
    pub settings: AdvisorSettings,
    /// `modelRoles.advisor`, if a file sets it.
    pub advisor_role: Option<String>,
    /// Every text role of `modelRoles:` (the advisor's included): what a role alias such as
    /// `@slow` resolves through (CA25).
    pub model_roles: std::collections::BTreeMap<String, String>,
    /// The content of `<agentDir>/system-prompts/advisor.md` when it exists and is not
    /// blank: it replaces the built-in prompt (G1).
    pub system_prompt_override: Option<String>,
    /// The files that were read, in order (missing ones are not listed).
    pub files: Vec<PathBuf>,
    /// The file whose `advisor.enabled: false` is in effect, if any (K2).
    pub disabled_by: Option<PathBuf>,
    /// Unknown keys and other things worth a line to the user; nothing here is printed.
    pub warnings: Vec<SettingsWarning>,
}

impl Default for LoadedSettings {
    /// What no file at all gives: the defaults with the advisor off (a fresh setup, K1).
    fn default() -> Self {
        Self {
            settings: AdvisorSettings {
                enabled: false,
                ..AdvisorSettings::default()
            },
            advisor_role: None,
            model_roles: Default::default(),
            system_prompt_override: None,
            files: Vec::new(),
            disabled_by: None,
            warnings: Vec::new(),
        }
    }
}

/// The settings files in the order they apply: `<agentDir>/config.yml` (when the agent
/// directory is known), then `<cwd>/.omp/config.yml`, which overrides it.
pub fn config_files(agent_dir: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    config_files_in(agent_dir, cwd, PI_PROJECT_DIR)
}

/// The project directory of oh-my-pi's settings, relative to the working directory.
pub const PI_PROJECT_DIR: &str = ".omp";

/// [`config_files`] with the project's settings in `<cwd>/<project_dir>/config.yml`
/// instead of `.omp/` (the Claude Code and Codex hosts use `.advisor/`).
pub fn config_files_in(agent_dir: Option<&Path>, cwd: &Path, project_dir: &str) -> Vec<PathBuf> {
    let mut files = Vec::with_capacity(2);
    if let Some(dir) = agent_dir {
        files.push(dir.join(CONFIG_FILE));
    }
    files.push(cwd.join(project_dir).join(CONFIG_FILE));
    files
}

/// The settings files' layers ([`read_config_layers`]), each over the ones before it, over
/// the defaults. Missing files were skipped; an unreadable file, text that is not YAML, or
/// a bad value was an error naming the file.
///
/// As in oh-my-pi, the advisor is off until a file says `advisor.enabled: true`: a fresh
/// settings file gives a disabled advisor (the library's own
/// [`AdvisorSettings::default`], for hosts that build settings in code, is enabled).
fn layered(layers: ConfigLayers) -> LoadedSettings {
    let mut merged = SettingsLayer::default();
    let mut loaded = LoadedSettings::default();
    for (file, layer, warnings) in layers {
        match layer.enabled {
            Some(false) => loaded.disabled_by = Some(file.clone()),
            Some(true) => loaded.disabled_by = None,
            None => {}
        }
        tracing::debug!(file = %file.display(), ?layer, "settings file read");
        merged = layer.over(merged);
        for warning in warnings {
            // CA5: each distinct bad value is told once, whichever files repeat it.
            let repeated = matches!(&warning, SettingsWarning::BadValue { key, value, .. }
                if loaded.warnings.iter().any(|w| matches!(w,
                    SettingsWarning::BadValue { key: k, value: v, .. } if k == key && v == value)));
            if !repeated {
                loaded.warnings.push(warning);
            }
        }
        loaded.files.push(file);
    }
    merged.apply_to(&mut loaded.settings);
    loaded.advisor_role = merged.advisor_role;
    loaded.model_roles = merged.model_roles;
    loaded
}

/// Each settings file with what it says, in order ([`read_config_layers`]).
pub type ConfigLayers = Vec<(PathBuf, SettingsLayer, Vec<SettingsWarning>)>;

/// What a session's settings files say, read once: the layered settings with the prompt
/// override ([`load_settings`]) and each file's own layer ([`read_config_layers`], for the
/// roster's fallbacks, RO8).
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsFiles {
    /// The files layered over the defaults, the prompt override read.
    pub loaded: LoadedSettings,
    /// Each existing file with what it says, in order.
    pub layers: ConfigLayers,
}

/// Reads the settings files of a session working in `cwd` once, for both readings
/// ([`SettingsFiles`]). Blocking.
pub fn read_settings_files(
    agent_dir: Option<&Path>,
    cwd: &Path,
) -> Result<SettingsFiles, SettingsError> {
    read_settings_files_in(agent_dir, cwd, PI_PROJECT_DIR)
}

/// [`read_settings_files`] with the project's settings file in `<cwd>/<project_dir>/`
/// ([`config_files_in`]). Blocking.
pub fn read_settings_files_in(
    agent_dir: Option<&Path>,
    cwd: &Path,
    project_dir: &str,
) -> Result<SettingsFiles, SettingsError> {
    let layers = read_config_layers(&config_files_in(agent_dir, cwd, project_dir))?;
    let mut loaded = layered(layers.clone());
    if let Some(dir) = agent_dir {
        let (prompt, warning) = read_prompt_override(dir)?;
        loaded.system_prompt_override = prompt;
        loaded.warnings.extend(warning);
    }
    Ok(SettingsFiles { loaded, layers })
}

/// Every file [`read_settings_files`] reads, missing ones included (what a cache of its
/// result watches).
pub fn settings_paths(agent_dir: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let mut paths = config_files(agent_dir, cwd);
    paths.extend(agent_dir.map(prompt_override_path));
    paths
}

/// Each existing settings file of `files` with what it says, in order, without layering
/// them: for callers that need to know which file sets a key (`advisor roster`, §15).
/// Missing files are left out; the errors are those of reading each file. Blocking.
pub fn read_config_layers(files: &[PathBuf]) -> Result<ConfigLayers, SettingsError> {
    let mut layers = Vec::with_capacity(files.len());
    for file in files {
        let Some(text) = read_optional(file)? else {
            continue;
        };
        let (layer, warnings) = SettingsLayer::parse(file, &text)?;
        layers.push((file.clone(), layer, warnings));
    }
    Ok(layers)
}

/// `<agentDir>/system-prompts/advisor.md`.
pub fn prompt_override_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join(PROMPT_OVERRIDE_FILE)
}

/// The prompt override of G1: `Ok(None)` when the file does not exist; a blank file is
/// ignored with a warning; an unreadable one (or one that is not UTF-8) is an error.
pub fn read_prompt_override(
    agent_dir: &Path,
) -> Result<(Option<String>, Option<SettingsWarning>), SettingsError> {
    let file = prompt_override_path(agent_dir);
    match read_optional(&file)? {
        None => Ok((None, None)),
        Some(text) if text.trim().is_empty() => {
            Ok((None, Some(SettingsWarning::BlankPrompt { file })))
        }
        Some(text) => Ok((Some(text), None)),
    }
}

/// Everything of K1 and G1 for a session working in `cwd`: the config files
/// ([`config_files`]) layered over the defaults, and the prompt override from the agent
/// directory. `agent_dir` is `None` when it cannot be known (no `PI_CODING_AGENT_DIR` and
/// no home directory): only the project file is read then.
pub fn load_settings(
    agent_dir: Option<&Path>,
    cwd: &Path,
) -> Result<LoadedSettings, SettingsError> {
    read_settings_files(agent_dir, cwd).map(|files| files.loaded)
}

/// [`load_settings`] with the project's settings file in `<cwd>/<project_dir>/` instead
/// of `.omp/` ([`config_files_in`]).
pub fn load_settings_in(
    agent_dir: Option<&Path>,
    cwd: &Path,
    project_dir: &str,
) -> Result<LoadedSettings, SettingsError> {
    read_settings_files_in(agent_dir, cwd, project_dir).map(|files| files.loaded)
}

/// The given settings files layered over the defaults, without a prompt override: for a
/// host that names its files itself. Blocking.
pub fn load_config_files(files: &[PathBuf]) -> Result<LoadedSettings, SettingsError> {
    read_config_layers(files).map(layered)
}

/// A file's text, `None` when it does not exist. Anything else that is not a regular file
/// (a directory, a FIFO, a device) is an error naming the file at once, never a wait and
/// never silently skipped; so is a file over [`MAX_SETTINGS_BYTES`], of which no more than
/// the cap is read.
fn read_optional(file: &Path) -> Result<Option<String>, SettingsError> {
    let error = |message: String| SettingsError::Read {
        file: file.to_path_buf(),
        message,
    };
    match read_text_capped(file, MAX_SETTINGS_BYTES) {
        Ok(read) if read.truncated => Err(SettingsError::TooLarge {
            file: file.to_path_buf(),
            limit: "1 MiB",
        }),
        Ok(read) => Ok(Some(read.content)),
        Err(FileError::Missing) => Ok(None),
        Err(err) => Err(error(err.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regular_file::testing::mkfifo;
    use crate::settings::{DeliveryPolicy, SyncBacklog};
    use std::fs;

    struct Dirs {
        _tmp: tempfile::TempDir,
        agent: PathBuf,
        project: PathBuf,
    }

    /// The agent's or the project's `config.yml`, or the prompt override.
    fn settings_file(d: &Dirs, which: &str) -> PathBuf {
        match which {
            "agent" => d.agent.join(CONFIG_FILE),
            "project" => d.project.join(".omp").join(CONFIG_FILE),
            _ => prompt_override_path(&d.agent),
        }
    }

    fn dirs() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        let agent = tmp.path().join("agent");
        let project = tmp.path().join("project");
        fs::create_dir_all(&agent).unwrap();
        fs::create_dir_all(project.join(".omp")).unwrap();
        Dirs {
            _tmp: tmp,
            agent,
            project,
        }
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn k1_missing_files_give_the_defaults_with_the_advisor_off() {
        let off = AdvisorSettings {
            enabled: false,
            ..AdvisorSettings::default()
        };
        let d = dirs();
        let loaded = load_settings(Some(&d.agent), &d.project).unwrap();
        assert_eq!(loaded.settings, off, "disabled by default in a fresh setup");
        assert!(loaded.files.is_empty() && loaded.warnings.is_empty());
        assert_eq!(loaded.advisor_role, None);
        assert_eq!(loaded.system_prompt_override, None);
        assert_eq!(loaded.disabled_by, None);
        let loaded = load_settings(None, Path::new("/nonexistent/project")).unwrap();
        assert_eq!(loaded.settings, off);
    }

    #[test]
    fn k1_a_fresh_settings_file_leaves_the_advisor_disabled_until_enabled() {
        let d = dirs();
        std::fs::write(d.agent.join(CONFIG_FILE), "advisor:\n  policy: reconfirm\n").unwrap();
        let loaded = load_settings(Some(&d.agent), &d.project).unwrap();
        assert!(!loaded.settings.enabled);
        assert_eq!(loaded.disabled_by, None, "not disabled explicitly");
        std::fs::write(d.agent.join(CONFIG_FILE), "advisor:\n  enabled: true\n").unwrap();
        assert!(
            load_settings(Some(&d.agent), &d.project)
                .unwrap()
                .settings
                .enabled
        );
    }

    #[test]
    fn k1_project_file_overrides_the_agent_file_key_by_key() {
        let d = dirs();
        write(
            &d.agent.join(CONFIG_FILE),
            "modelRoles:\n  advisor: a/agent-model\nadvisor:\n  policy: reconfirm\n  \
             syncBacklog: 3\n  enabled: false\n  colr: 1\n",
        );
        write(
            &d.project.join(".omp").join(CONFIG_FILE),
            "advisor:\n  syncBacklog: 5\n  enabled: true\n",
        );
        let loaded = load_settings(Some(&d.agent), &d.project).unwrap();
        assert_eq!(loaded.advisor_role.as_deref(), Some("a/agent-model"));
        assert_eq!(loaded.settings.policy, DeliveryPolicy::Reconfirm);
        assert_eq!(loaded.settings.sync_backlog, SyncBacklog::Below(5));
        assert!(loaded.settings.enabled);
        assert_eq!(loaded.disabled_by, None);
        assert_eq!(loaded.files.len(), 2);
        assert_eq!(loaded.warnings.len(), 1);
        assert!(loaded.warnings[0].to_string().contains("`advisor.colr`"));

        write(
            &d.project.join(".omp").join(CONFIG_FILE),
            "modelRoles:\n  advisor: p/project-model\n",
        );
        let loaded = load_settings(Some(&d.agent), &d.project).unwrap();
        assert_eq!(loaded.advisor_role.as_deref(), Some("p/project-model"));
        assert!(!loaded.settings.enabled);
        assert_eq!(loaded.disabled_by, Some(d.agent.join(CONFIG_FILE)));
    }

    #[test]
    fn k1_a_file_that_is_not_yaml_is_an_error_naming_it() {
        let d = dirs();
        let file = d.project.join(".omp").join(CONFIG_FILE);
        write(&file, "advisor:\n  policy: [interrupt\n");
        let message = load_settings(Some(&d.agent), &d.project)
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with(&format!("{} is not a valid settings file", file.display())),
            "{message}"
        );
        fs::write(&file, [0xff, 0xfe]).unwrap();
        let message = load_settings(Some(&d.agent), &d.project)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains(&file.display().to_string()) && message.contains("UTF-8"),
            "{message}"
        );
    }

    /// Runs `f` on its own thread and fails (instead of hanging) when it takes over 20 s.
    fn within_seconds<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(20))
            .expect("finished without waiting on the file")
    }

    #[test]
    fn k1_a_settings_file_over_1_mib_is_an_error_naming_the_file() {
        let d = dirs();
        let file = d.agent.join(CONFIG_FILE);
        let mut text = String::from("advisor:\n  policy: reconfirm\n");
        while text.len() <= MAX_SETTINGS_BYTES {
            text.push_str("# a comment line that pads the file past the cap\n");
        }
        write(&file, &text);
        let message = load_settings(Some(&d.agent), &d.project)
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            format!(
                "{} is larger than the 1 MiB limit for settings files",
                file.display()
            )
        );
        text.truncate(MAX_SETTINGS_BYTES - 100);
        write(&file, &text);
        let loaded = load_settings(Some(&d.agent), &d.project).unwrap();
        assert_eq!(loaded.settings.policy, DeliveryPolicy::Reconfirm);
    }

    #[test]
    fn k1_a_settings_symlink_to_dev_zero_is_an_error_not_a_read() {
        let d = dirs();
        let file = d.project.join(".omp").join(CONFIG_FILE);
        std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
        let message = load_settings(Some(&d.agent), &d.project)
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            format!(
                "cannot read {}: not a regular file (a character device)",
                file.display()
            )
        );
    }

    #[test]
    fn k1_a_fifo_as_either_config_or_the_prompt_override_is_an_error_not_a_wait() {
        for which in ["agent", "project", "prompt"] {
            let d = dirs();
            let file = settings_file(&d, which);
            mkfifo(&file);
            let (agent, project) = (d.agent.clone(), d.project.clone());
            let result = within_seconds(move || load_settings(Some(&agent), &project));
            assert_eq!(
                result.unwrap_err().to_string(),
                format!(
                    "cannot read {}: not a regular file (a FIFO)",
                    file.display()
                ),
                "{which}"
            );
        }
    }

    #[test]
    fn k1_a_directory_as_either_config_or_the_prompt_override_is_an_error_naming_it() {
        for which in ["agent", "project", "prompt"] {
            let d = dirs();
            let file = settings_file(&d, which);
            fs::create_dir_all(&file).unwrap();
            let err = load_settings(Some(&d.agent), &d.project).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "cannot read {}: not a regular file (a directory)",
                    file.display()
                ),
                "{which}"
            );
        }
    }

    #[test]
    fn g1_prompt_override_is_read_from_the_agent_dir() {
        let d = dirs();
        let file = prompt_override_path(&d.agent);
        write(&file, "You are a strict reviewer.\n");
        let loaded = load_settings(Some(&d.agent), &d.project).unwrap();
        assert_eq!(
            loaded.system_prompt_override.as_deref(),
            Some("You are a strict reviewer.\n")
        );

        fs::write(&file, "  \n").unwrap();
        let loaded = load_settings(Some(&d.agent), &d.project).unwrap();
        assert_eq!(loaded.system_prompt_override, None);
        assert_eq!(loaded.warnings, [SettingsWarning::BlankPrompt { file }]);
    }
}
