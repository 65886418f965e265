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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

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

type Slot = Arc<Mutex<Option<Entry>>>;

/// Counters of a [`SettingsCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SettingsCacheStats {
    /// Times the files were read.
    pub loads: u64,
    /// Answers served from an earlier read.
    pub shared: u64,
}

/// The process-wide settings cache, keyed by place.
#[derive(Default)]
pub struct SettingsCache {
    places: Mutex<HashMap<Place, Slot>>,
    loads: AtomicU64,
    shared: AtomicU64,
}

impl std::fmt::Debug for SettingsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingsCache")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
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
        let slot = self.slot(agent_dir, cwd);
        let mut entry = slot.lock();
        if let Some(current) = entry.as_ref() {
            if current.stamps.iter().all(|(path, old)| stamp(path) == *old) {
                self.shared.fetch_add(1, Ordering::Relaxed);
                return Ok(Arc::clone(&current.files));
            }
        }
        let stamps = settings_paths(agent_dir, cwd)
            .into_iter()
            .map(|path| {
                let now = stamp(&path);
                (path, now)
            })
            .collect();
        self.loads.fetch_add(1, Ordering::Relaxed);
        *entry = None;
        let files = Arc::new(read_settings_files(agent_dir, cwd)?);
        *entry = Some(Entry {
            stamps,
            files: Arc::clone(&files),
        });
        Ok(files)
    }

    /// The counters now.
    pub fn stats(&self) -> SettingsCacheStats {
        SettingsCacheStats {
            loads: self.loads.load(Ordering::Relaxed),
            shared: self.shared.load(Ordering::Relaxed),
        }
    }

    fn slot(&self, agent_dir: Option<&Path>, cwd: &Path) -> Slot {
        let key = (agent_dir.map(Path::to_path_buf), cwd.to_path_buf());
        let mut places = self.places.lock();
        if places.len() >= MAX_PLACES && !places.contains_key(&key) {
            places.clear();
        }
        Arc::clone(places.entry(key).or_default())
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
