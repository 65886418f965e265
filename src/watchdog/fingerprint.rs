//! A cheap metadata fingerprint of everything a load looked at (W8).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::discovery::candidates_named;
use super::{WatchdogConfig, WATCHDOG_FILE};

/// What the metadata says about one path: enough to notice an edit without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Size in bytes.
    pub len: u64,
    /// Last modification time, when the platform reports one.
    pub modified: Option<SystemTime>,
    /// Whether it is a regular file (symlinks followed).
    pub is_file: bool,
}

/// Reads the metadata of `path` (symlinks followed); `None` when nothing is there or the
/// metadata cannot be read. Blocking, but reads no content.
pub fn stamp(path: &Path) -> Option<Stamp> {
    let metadata = std::fs::metadata(path).ok()?;
    Some(Stamp {
        len: metadata.len(),
        modified: metadata.modified().ok(),
        is_file: metadata.is_file(),
    })
}

/// The candidate paths of one load and every import path it tried, each with its stamp
/// taken just before it was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprint {
    candidates: Vec<(PathBuf, Option<Stamp>)>,
    imports: Vec<(PathBuf, Option<Stamp>)>,
}

impl Fingerprint {
    /// Records a candidate with its current stamp.
    pub fn push_candidate(&mut self, path: &Path) {
        self.candidates.push((path.to_path_buf(), stamp(path)));
    }

    /// Records an import target with its current stamp.
    pub fn push_import(&mut self, path: &Path) {
        self.imports.push((path.to_path_buf(), stamp(path)));
    }

    /// Whether a load for `config` now would see the same files with the same metadata:
    /// the same candidate list (no new candidate, no new repository root), and every
    /// candidate and import target unchanged in existence, size and modification time.
    /// Blocking; reads metadata only.
    pub fn is_current(&self, config: &WatchdogConfig) -> bool {
        self.is_current_named(config, &[WATCHDOG_FILE])
    }

    /// [`Fingerprint::is_current`] for a load of other file names found the same way (the
    /// roster's, §15 RO21). Blocking; reads metadata only.
    pub fn is_current_named(&self, config: &WatchdogConfig, names: &[&str]) -> bool {
        let now = candidates_named(config, names);
        now.len() == self.candidates.len()
            && now
                .iter()
                .zip(&self.candidates)
                .all(|(candidate, (path, old))| candidate.path == *path && stamp(path) == *old)
            && self.imports.iter().all(|(path, old)| stamp(path) == *old)
    }
}
