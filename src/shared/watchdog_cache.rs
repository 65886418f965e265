//! WATCHDOG.md results shared by every session of a process (SPEC A6, W8).
//!
//! Discovery and expansion ([`crate::watchdog::load`]) are done once per place (working
//! directory, agent directory, home); every loader asking for the same place gets the same
//! result for as long as its W8 fingerprint (the modification times of every discovered and
//! imported file, and the candidate list) is current. Two sessions in one repository thus
//! read its files once; an edit is seen by both at their next review.
//!
//! Every method here touches the filesystem: call it on tokio's blocking pool.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::cache::{KeyedCache, Lookup};
use crate::redact::Redactor;
use crate::watchdog::{load_with, InstructionFiles, Loaded, WatchdogConfig};

/// Places remembered at most; past this the cache starts afresh (the entries being loaded
/// right now are unaffected). It bounds memory in a process that sees many directories.
const MAX_PLACES: usize = 4096;

/// The answer of [`WatchdogCache::refresh`].
#[derive(Debug, Clone)]
pub enum CachedRefresh {
    /// The caller's previous result is still current.
    Unchanged,
    /// Files were read for this call (first use of the place, or something changed).
    Loaded(Arc<Loaded>),
    /// Another session's current result; nothing was read for this call.
    Shared(Arc<Loaded>),
}

/// Counters of a [`WatchdogCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchdogCacheStats {
    /// Full loads done (discovery plus reads).
    pub loads: u64,
    /// Files read over all loads.
    pub files_read: u64,
    /// Answers served from another session's load.
    pub shared: u64,
}

/// Working directory, agent directory, home, whether the blocks are redacted (X5), and
/// which instruction files are read (P8).
type Place = (
    PathBuf,
    Option<PathBuf>,
    Option<PathBuf>,
    bool,
    InstructionFiles,
);

/// The process-wide WATCHDOG.md cache, keyed by place.
#[derive(Debug)]
pub struct WatchdogCache {
    places: KeyedCache<Place, Loaded>,
    files_read: AtomicU64,
}

impl Default for WatchdogCache {
    fn default() -> Self {
        Self {
            places: KeyedCache::new(MAX_PLACES),
            files_read: AtomicU64::new(0),
        }
    }
}

impl WatchdogCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current blocks for `config`; `previous` is what the caller holds from its last
    /// call; `redactor` redacts the blocks (X5), and redacted and unredacted results are
    /// kept apart. Loads when the place is new or its fingerprint is stale (W8); concurrent
    /// callers for one place wait for a single load. Blocking.
    pub fn refresh(
        &self,
        config: &WatchdogConfig,
        previous: Option<&Arc<Loaded>>,
        redactor: Option<&Redactor>,
    ) -> CachedRefresh {
        let key = (
            config.cwd.clone(),
            config.agent_dir.clone(),
            config.home.clone(),
            redactor.is_some(),
            // P8: a hook host's session reads other instruction files in the same place.
            config.instructions.clone(),
        );
        let current = |loaded: &Loaded| loaded.fingerprint.is_current(config);
        let load = || {
            let loaded = load_with(config, redactor);
            self.files_read
                .fetch_add(loaded.files_read as u64, Ordering::Relaxed);
            Ok::<_, Infallible>(loaded)
        };
        match self.places.get(key, previous, current, load) {
            Ok(Lookup::Unchanged(_)) => CachedRefresh::Unchanged,
            Ok(Lookup::Shared(shared)) => CachedRefresh::Shared(shared),
            Ok(Lookup::Loaded(loaded)) => CachedRefresh::Loaded(loaded),
            Err(never) => match never {},
        }
    }

    /// The counters now.
    pub fn stats(&self) -> WatchdogCacheStats {
        let counts = self.places.counts();
        WatchdogCacheStats {
            loads: counts.loads,
            files_read: self.files_read.load(Ordering::Relaxed),
            shared: counts.shared,
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
        fs::write(repo.join("WATCHDOG.md"), "watch the migrations @notes.md").unwrap();
        fs::write(repo.join("notes.md"), "and the lockfile").unwrap();
        let config = WatchdogConfig {
            cwd: repo,
            agent_dir: Some(dir.path().join("agent")),
            home: Some(dir.path().to_path_buf()),
            instructions: Default::default(),
        };
        (dir, config)
    }

    #[test]
    fn a6_two_sessions_in_one_repository_read_its_files_once() {
        let (_dir, config) = place();
        let cache = WatchdogCache::new();
        let CachedRefresh::Loaded(first) = cache.refresh(&config, None, None) else {
            panic!("the first session loads");
        };
        assert_eq!(first.prompt.blocks.len(), 1);
        assert!(first.prompt.blocks[0].contains("and the lockfile"));
        let CachedRefresh::Shared(second) = cache.refresh(&config, None, None) else {
            panic!("the second session shares the first one's load");
        };
        assert!(Arc::ptr_eq(&first, &second));
        assert!(matches!(
            cache.refresh(&config, Some(&first), None),
            CachedRefresh::Unchanged
        ));
        let stats = cache.stats();
        assert_eq!((stats.loads, stats.files_read, stats.shared), (1, 2, 1));
    }

    #[test]
    fn w8_an_edited_import_reloads_once_for_every_session() {
        let (_dir, config) = place();
        let cache = WatchdogCache::new();
        let CachedRefresh::Loaded(before) = cache.refresh(&config, None, None) else {
            panic!("first load");
        };
        // A different length changes the fingerprint even within one mtime tick.
        fs::write(config.cwd.join("notes.md"), "and the generated client code").unwrap();
        let CachedRefresh::Loaded(after) = cache.refresh(&config, Some(&before), None) else {
            panic!("the edit is seen");
        };
        assert!(after.prompt.blocks[0].contains("generated client code"));
        // The other session, still holding the old result, gets the new one unread.
        let CachedRefresh::Shared(other) = cache.refresh(&config, Some(&before), None) else {
            panic!("the other session shares the reload");
        };
        assert!(Arc::ptr_eq(&after, &other));
        assert_eq!(cache.stats().loads, 2);
    }

    #[test]
    fn a6_different_places_are_kept_apart() {
        let (_dir, config) = place();
        let (_dir2, other) = place();
        let cache = WatchdogCache::new();
        assert!(matches!(
            cache.refresh(&config, None, None),
            CachedRefresh::Loaded(_)
        ));
        assert!(matches!(
            cache.refresh(&other, None, None),
            CachedRefresh::Loaded(_)
        ));
        assert_eq!(cache.stats().loads, 2);
    }

    #[test]
    fn x5_redacted_and_unredacted_blocks_are_cached_apart() {
        let (_dir, config) = place();
        fs::write(
            config.cwd.join("notes.md"),
            "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
        )
        .unwrap();
        let cache = WatchdogCache::new();
        let redactor = Redactor::new().unwrap();
        let CachedRefresh::Loaded(redacted) = cache.refresh(&config, None, Some(&redactor)) else {
            panic!("a redacting session loads");
        };
        assert!(
            !redacted.prompt.blocks[0].contains("sk-proj-abcdefghijklmnop"),
            "{:?}",
            redacted.prompt.blocks
        );
        // A session with `advisor.redactSecrets: false` does not get the redacted result,
        // and a redacting one never gets the raw one.
        let CachedRefresh::Loaded(raw) = cache.refresh(&config, None, None) else {
            panic!("an unredacted session loads on its own");
        };
        assert!(raw.prompt.blocks[0].contains("sk-proj-abcdefghijklmnop"));
        assert!(matches!(
            cache.refresh(&config, None, Some(&redactor)),
            CachedRefresh::Shared(shared) if Arc::ptr_eq(&shared, &redacted)
        ));
    }
}
