//! Settings files shared by every session of a process (SPEC K1, A6).
//!
//! The files of one place (agent directory and working directory: `config.yml` in each,
//! the prompt override) are read once ([`read_settings_files`]); every session opening there
//! gets the same result for as long as the metadata of each of those paths (existence,
//! size, modification time) is what it was just before they were read, as the WATCHDOG.md
//! and roster caches judge their files (W8, RO21). Eight sessions opening on one repository
//! read its settings once; an edit is read by the next session to open. A read that fails
//! is not kept: each session tells its own error.
//!
//! Every method here touches the filesystem: call it off the actor threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cache::KeyedCache;
use crate::settings::{read_settings_files, settings_paths, SettingsError, SettingsFiles};
use crate::watchdog::{stamp, Stamp};

/// Places remembered at most; past this the cache starts afresh.
const MAX_PLACES: usize = 4096;

/// Agent directory and working directory.
type Place = (Option<PathBuf>, PathBuf);

/// One place's result and the stamps its files had just before they were read.
struct Entry {
    stamps: Vec<(PathBuf, Option<Stamp>)>,
    files: Arc<SettingsFiles>,
}

/// Counters of a [`SettingsCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SettingsCacheStats {
    /// Times the files were read.
    pub loads: u64,
    /// Answers served from an earlier read.
    pub shared: u64,
}

/// The process-wide settings cache, keyed by place.
#[derive(Debug)]
pub struct SettingsCache {
    places: KeyedCache<Place, Entry>,
}

impl Default for SettingsCache {
    fn default() -> Self {
        Self {
            places: KeyedCache::new(MAX_PLACES),
        }
    }
}

impl SettingsCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The settings files of `cwd` with the agent directory `agent_dir`: the kept result
    /// while every file's metadata is unchanged, else read now (and kept when it reads).
    /// Sessions asking for one place at once wait for one read. Blocking.
    pub fn load(
        &self,
        agent_dir: Option<&Path>,
        cwd: &Path,
    ) -> Result<Arc<SettingsFiles>, SettingsError> {
        let place = (agent_dir.map(Path::to_path_buf), cwd.to_path_buf());
        let unchanged = |entry: &Entry| entry.stamps.iter().all(|(path, old)| stamp(path) == *old);
        let read = || {
            let stamps = settings_paths(agent_dir, cwd)
                .into_iter()
                .map(|path| {
                    let now = stamp(&path);
                    (path, now)
                })
                .collect();
            let files = Arc::new(read_settings_files(agent_dir, cwd)?);
            Ok(Entry { stamps, files })
        };
        let entry = self.places.get(place, None, unchanged, read)?.value();
        Ok(Arc::clone(&entry.files))
    }

    /// The counters now.
    pub fn stats(&self) -> SettingsCacheStats {
        let counts = self.places.counts();
        SettingsCacheStats {
            loads: counts.loads,
            shared: counts.shared,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn k1_a6_one_place_is_read_once_until_a_file_changes_and_errors_are_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (agent, cwd) = (dir.path().join("agent"), dir.path().join("repo"));
        fs::create_dir_all(cwd.join(".omp")).unwrap();
        fs::create_dir_all(&agent).unwrap();
        let project = cwd.join(".omp/config.yml");
        fs::write(&project, "advisor:\n  enabled: true\n").unwrap();
        let cache = SettingsCache::new();
        let first = cache.load(Some(&agent), &cwd).unwrap();
        for _ in 0..7 {
            let again = cache.load(Some(&agent), &cwd).unwrap();
            assert!(Arc::ptr_eq(&first, &again));
        }
        assert_eq!(
            cache.stats(),
            SettingsCacheStats {
                loads: 1,
                shared: 7
            }
        );
        assert!(first.loaded.settings.enabled);
        assert_eq!(first.layers.len(), 1);
        // A file that appears (the agent directory's), changes or goes is read again.
        fs::write(agent.join("config.yml"), "advisor:\n  reviewInterval: 2\n").unwrap();
        let second = cache.load(Some(&agent), &cwd).unwrap();
        assert_eq!(second.loaded.settings.review_interval, 2);
        assert_eq!(cache.stats().loads, 2);
        fs::write(&project, "advisor:\n  enabled: [\n").unwrap();
        assert!(cache.load(Some(&agent), &cwd).is_err());
        assert!(cache.load(Some(&agent), &cwd).is_err(), "not kept");
        assert_eq!(cache.stats().loads, 4);
        // Another place is its own.
        let elsewhere = dir.path().join("other");
        fs::create_dir_all(&elsewhere).unwrap();
        cache.load(Some(&agent), &elsewhere).unwrap();
        assert_eq!(cache.stats().loads, 5);
    }
}
