//! Roster loads shared by every session of a process (SPEC RO24, A6).
//!
//! A load ([`super::load`]) is done once per place (working directory, agent directory,
//! home), fallback settings, catalog and redaction; every session asking for the same
//! gets the same resolved roster — its compiled `when` globs included — for as long as its
//! RO21 fingerprint (the metadata of every roster file and import, and the candidate list)
//! is current. Eight sessions on one repository thus read and compile its `WATCHDOG.yml`
//! once, and an edit is seen by each at its next check, read once for all.
//!
//! Every method here touches the filesystem: call it off the actor threads.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use super::{load, refresh_by, Roster, RosterRefresh, RosterSettings, ROSTER_FILES};
use crate::cache::KeyedCache;
use crate::providers::Catalog;
use crate::redact::Redactor;
use crate::watchdog::{Fingerprint, WatchdogConfig};

/// Places remembered at most; past this the cache starts afresh (the loads in flight are
/// unaffected). A cached load holds at most 16 advisors and 256 compiled globs.
const MAX_PLACES: usize = 1024;

/// What a load depends on besides the files: the place, the settings the entries fall
/// back to, the catalog (by identity) and whether instructions are redacted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    cwd: PathBuf,
    agent_dir: Option<PathBuf>,
    home: Option<PathBuf>,
    settings: RosterSettings,
    catalog: usize,
    redacted: bool,
}

/// Counters of a [`RosterCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RosterCacheStats {
    /// Loads done (discovery, reads, parsing, glob compilation).
    pub loads: u64,
    /// Answers served from another session's load.
    pub shared: u64,
}

/// The process-wide roster cache, keyed by place and fallbacks.
#[derive(Debug)]
pub struct RosterCache {
    places: KeyedCache<Key, Roster>,
}

impl Default for RosterCache {
    fn default() -> Self {
        Self {
            places: KeyedCache::new(MAX_PLACES),
        }
    }
}

impl RosterCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The roster for `config` (as [`super::load`] resolves it), loaded when the place is
    /// new or its files changed, else another session's current load; concurrent callers
    /// for one place wait for a single load. Blocking.
    pub fn load(
        &self,
        config: &WatchdogConfig,
        settings: &RosterSettings,
        catalog: &Arc<Catalog>,
        redactor: Option<&Redactor>,
    ) -> Roster {
        Roster::clone(&self.current(config, settings, catalog, redactor))
    }

    /// [`super::refresh`] through the cache: `Unchanged` when `previous` is still current,
    /// else the current load (read once for every session of the place). Blocking.
    pub fn refresh(
        &self,
        config: &WatchdogConfig,
        settings: &RosterSettings,
        catalog: &Arc<Catalog>,
        redactor: Option<&Redactor>,
        previous: Option<&Fingerprint>,
    ) -> RosterRefresh {
        refresh_by(config, previous, || {
            self.load(config, settings, catalog, redactor)
        })
    }

    /// The counters now.
    pub fn stats(&self) -> RosterCacheStats {
        let counts = self.places.counts();
        RosterCacheStats {
            loads: counts.loads,
            shared: counts.shared,
        }
    }

    fn current(
        &self,
        config: &WatchdogConfig,
        settings: &RosterSettings,
        catalog: &Arc<Catalog>,
        redactor: Option<&Redactor>,
    ) -> Arc<Roster> {
        let key = Key {
            cwd: config.cwd.clone(),
            agent_dir: config.agent_dir.clone(),
            home: config.home.clone(),
            settings: settings.clone(),
            catalog: Arc::as_ptr(catalog) as usize,
            redacted: redactor.is_some(),
        };
        let current = |roster: &Roster| roster.fingerprint.is_current_named(config, &ROSTER_FILES);
        let load = || Ok::<_, Infallible>(load(config, settings, catalog, redactor));
        match self.places.get(key, None, current, load) {
            Ok(lookup) => lookup.value(),
            Err(never) => match never {},
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn place() -> (tempfile::TempDir, WatchdogConfig) {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fs::create_dir_all(repo.join(".git")).unwrap();
        fs::write(
            repo.join("WATCHDOG.yml"),
            "advisors:\n  - name: Migrations\n    when: {paths: [\"db/**\"]}\n",
        )
        .unwrap();
        let config = WatchdogConfig {
            cwd: repo,
            agent_dir: Some(dir.path().join("agent")),
            home: Some(dir.path().to_path_buf()),
            instructions: Default::default(),
        };
        (dir, config)
    }

    fn same_globs(a: &Roster, b: &Roster) -> bool {
        let when = |roster: &Roster| roster.advisors[0].when.value.clone().unwrap();
        when(a).shares_compiled_globs(&when(b))
    }

    #[test]
    fn ro24_sessions_on_one_project_share_one_load_and_its_compiled_globs() {
        let (_dir, config) = place();
        let cache = RosterCache::new();
        let catalog = Arc::new(Catalog::empty());
        let settings = RosterSettings::default();
        let first = cache.load(&config, &settings, &catalog, None);
        let second = cache.load(&config, &settings, &catalog, None);
        assert_eq!(first, second);
        assert!(same_globs(&first, &second), "compiled once");
        assert_eq!(
            cache.stats(),
            RosterCacheStats {
                loads: 1,
                shared: 1
            }
        );
        assert!(matches!(
            cache.refresh(&config, &settings, &catalog, None, Some(&first.fingerprint)),
            RosterRefresh::Unchanged
        ));
        // Other fallbacks are another load.
        let other = RosterSettings {
            advisor_role: Some(super::super::Sourced::default_value("a/b".into())),
            ..RosterSettings::default()
        };
        cache.load(&config, &other, &catalog, None);
        assert_eq!(cache.stats().loads, 2);
    }

    #[test]
    fn ro21_an_edit_is_read_once_for_every_session() {
        let (_dir, config) = place();
        let cache = RosterCache::new();
        let catalog = Arc::new(Catalog::empty());
        let settings = RosterSettings::default();
        let before = cache.load(&config, &settings, &catalog, None);
        fs::write(
            config.cwd.join("WATCHDOG.yml"),
            "advisors:\n  - name: Migrations\n    when: {paths: [\"migrations/**\"]}\n",
        )
        .unwrap();
        let RosterRefresh::Rebuilt(after) = cache.refresh(
            &config,
            &settings,
            &catalog,
            None,
            Some(&before.fingerprint),
        ) else {
            panic!("the edit is seen");
        };
        let RosterRefresh::Rebuilt(other) = cache.refresh(
            &config,
            &settings,
            &catalog,
            None,
            Some(&before.fingerprint),
        ) else {
            panic!("the other session gets the new roster");
        };
        assert!(same_globs(&after, &other));
        assert_eq!(
            after.advisors[0].when.value.as_ref().unwrap().patterns(),
            ["migrations/**"]
        );
        assert_eq!(
            cache.stats(),
            RosterCacheStats {
                loads: 2,
                shared: 1
            }
        );
    }
}
