//! The environment variables behind the settings (K1), as values: the program reads them
//! at its edge (a lookup function) and passes them in, so nothing in the library reads or
//! depends on the process environment.

use std::path::{Path, PathBuf};

use crate::watchdog::WatchdogConfig;

/// What the environment says about the advisor's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsEnv {
    /// `ADVISOR_DEBUG`: debug tracing for the crate.
    pub debug: bool,
    /// `ADVISOR_COMPACT_AT`, raw (parsed when the settings are loaded).
    pub compact_at: Option<String>,
    /// `ADVISOR_NO_REVIEW`: no model calls; delivery paths still work.
    pub no_review: bool,
    /// `PI_CODING_AGENT_DIR`, raw (`~` not yet expanded; blank counts as unset).
    pub agent_dir: Option<String>,
    /// `ADVISOR_MODEL`: the CLI's fallback for `--model`.
    pub model: Option<String>,
    /// `HOME`: where `~` points and the default agent directory lives.
    pub home: Option<PathBuf>,
}

impl SettingsEnv {
    /// Reads the variables through `lookup` (for example `|name| std::env::var(name).ok()`).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        Self {
            debug: env_flag(lookup("ADVISOR_DEBUG").as_deref()),
            compact_at: lookup("ADVISOR_COMPACT_AT"),
            no_review: env_flag(lookup("ADVISOR_NO_REVIEW").as_deref()),
            agent_dir: lookup("PI_CODING_AGENT_DIR"),
            model: lookup("ADVISOR_MODEL").filter(|m| !m.trim().is_empty()),
            home: lookup("HOME")
                .filter(|h| !h.trim().is_empty())
                .map(PathBuf::from),
        }
    }

    /// The watchdog configuration for `cwd` (W1): the agent directory is
    /// `PI_CODING_AGENT_DIR` with `~` expanded, else `~/.omp/agent`.
    pub fn watchdog_config(&self, cwd: &Path) -> WatchdogConfig {
        WatchdogConfig::from_env_values(
            cwd.to_path_buf(),
            self.agent_dir.clone(),
            self.home.clone(),
        )
    }

    /// The agent directory (`PI_CODING_AGENT_DIR`, else `~/.omp/agent`), `None` when neither
    /// it nor a home directory is known.
    pub fn agent_dir(&self) -> Option<PathBuf> {
        self.watchdog_config(Path::new(".")).agent_dir
    }
}

/// Whether a flag variable is on: set to anything but blank, `0`, `false`, `no` or `off`
/// (case-insensitive).
pub fn env_flag(raw: Option<&str>) -> bool {
    match raw.map(|v| v.trim().to_ascii_lowercase()) {
        None => false,
        Some(v) => !matches!(v.as_str(), "" | "0" | "false" | "no" | "off"),
    }
}

/// An environment lookup over fixed pairs, for tests (they never touch the process's own).
#[cfg(test)]
pub(crate) fn lookup_from(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k1_flags_are_on_unless_blank_or_negative() {
        assert!(!env_flag(None));
        for off in ["", " ", "0", "false", "No", "OFF"] {
            assert!(!env_flag(Some(off)), "{off:?}");
        }
        for on in ["1", "true", "yes", "anything"] {
            assert!(env_flag(Some(on)), "{on:?}");
        }
    }

    #[test]
    fn k1_environment_is_read_through_the_lookup_only() {
        let env = SettingsEnv::from_lookup(&lookup_from(&[
            ("ADVISOR_DEBUG", "1"),
            ("ADVISOR_COMPACT_AT", "70"),
            ("ADVISOR_NO_REVIEW", "true"),
            ("PI_CODING_AGENT_DIR", "~/agent"),
            ("ADVISOR_MODEL", "local/x"),
            ("HOME", "/home/u"),
        ]));
        assert!(env.debug && env.no_review);
        assert_eq!(env.compact_at.as_deref(), Some("70"));
        assert_eq!(env.model.as_deref(), Some("local/x"));
        assert_eq!(env.agent_dir(), Some(PathBuf::from("/home/u/agent")));

        let empty = SettingsEnv::from_lookup(&lookup_from(&[("HOME", "/home/u")]));
        assert!(!empty.debug && !empty.no_review);
        assert_eq!(empty.agent_dir(), Some(PathBuf::from("/home/u/.omp/agent")));
        assert_eq!(SettingsEnv::default().agent_dir(), None);
    }

    #[test]
    fn k1_env_overrides_compact_at_and_no_review_on_the_settings() {
        let env = SettingsEnv {
            compact_at: Some("60".into()),
            no_review: true,
            ..SettingsEnv::default()
        };
        let s = super::super::AdvisorSettings::default().with_env(&env);
        assert_eq!(s.compact_at_percent, 60);
        assert!(s.no_review);
    }
}
