//! Candidate discovery (W1), the hidden-directory rule (W2) and prompt order (W4).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::paths::normalize_lexically;
use super::{WatchdogConfig, WATCHDOG_FILE};

/// The directory whose WATCHDOG.md is kept even when it is hidden (W2).
const OMP_DIR: &str = ".omp";

/// Where a candidate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandidateKind {
    /// `<agentDir>/WATCHDOG.md`.
    User,
    /// `<dir>/.omp/WATCHDOG.md` at one level of the walk.
    ProjectOmp,
    /// `<dir>/WATCHDOG.md` at one level of the walk.
    ProjectPlain,
}

/// A path that may hold a WATCHDOG file; it need not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The file's path, lexically normalised.
    pub path: PathBuf,
    /// Where it comes from.
    pub kind: CandidateKind,
}

/// The directories the upward walk visits, from the working directory up to where it
/// stops: the git repository root (a directory holding a `.git` directory or file), else
/// the home directory when the working directory lies below it, else the filesystem root.
/// The stopping directory is included. Blocking (looks for `.git` at each level).
pub fn walk_dirs(cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let start = normalize_lexically(&absolute(cwd));
    let ancestors: Vec<&Path> = start.ancestors().collect();
    let repo_root = ancestors
        .iter()
        .position(|dir| dir.join(".git").symlink_metadata().is_ok());
    let home = home.map(|home| normalize_lexically(&absolute(home)));
    let stop = repo_root.or_else(|| {
        let home = home?;
        ancestors.iter().position(|dir| *dir == home)
    });
    let end = stop.map_or(ancestors.len(), |index| index + 1);
    ancestors[..end]
        .iter()
        .map(|dir| dir.to_path_buf())
        .collect()
}

/// Every candidate for `config`, in prompt order (W4): the user file, then the project
/// files from the farthest directory of the walk down to the working directory, `.omp`
/// before the plain file at each level. Hidden owners are left out (W2) and a path reached
/// twice is listed once, at its first position. Blocking (see [`walk_dirs`]).
pub fn candidates(config: &WatchdogConfig) -> Vec<Candidate> {
    candidates_named(config, &[WATCHDOG_FILE])
}

/// [`candidates`] for other file names found the same way (the roster's `WATCHDOG.yml` and
/// `WATCHDOG.yaml`, §15): the user files first (in the order of `names`), then at each level
/// of the walk, farthest first, for each name in turn the `.omp` file before the plain one.
/// Blocking (see [`walk_dirs`]).
pub fn candidates_named(config: &WatchdogConfig, names: &[&str]) -> Vec<Candidate> {
    let mut out = Vec::new();
    if let Some(dir) = &config.agent_dir {
        for name in names {
            out.push(Candidate {
                path: normalize_lexically(&absolute(&dir.join(name))),
                kind: CandidateKind::User,
            });
        }
    }
    for dir in walk_dirs(&config.cwd, config.home.as_deref()).iter().rev() {
        for name in names {
            out.push(Candidate {
                path: dir.join(OMP_DIR).join(name),
                kind: CandidateKind::ProjectOmp,
            });
            if !is_hidden_owner(dir) {
                out.push(Candidate {
                    path: dir.join(name),
                    kind: CandidateKind::ProjectPlain,
                });
            }
        }
    }
    let mut seen = HashSet::new();
    out.retain(|candidate| seen.insert(candidate.path.clone()));
    out
}

/// W2: a plain WATCHDOG.md is ignored when its directory's name starts with `.`, unless
/// that directory is `.omp`. Files inside `.omp` are always kept.
fn is_hidden_owner(dir: &Path) -> bool {
    dir.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with('.') && name != OMP_DIR)
}

/// Makes a path absolute against the current directory; unchanged when that fails.
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w2_hidden_owner_rule() {
        assert!(is_hidden_owner(Path::new("/r/.hidden")));
        assert!(!is_hidden_owner(Path::new("/r/.omp")));
        assert!(!is_hidden_owner(Path::new("/r/visible")));
        assert!(!is_hidden_owner(Path::new("/")));
    }

    #[test]
    fn w1_walk_without_repository_or_home_reaches_root() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        let walked = walk_dirs(&deep, None);
        assert_eq!(walked.first(), Some(&deep));
        // A stray `.git` above the temporary directory would stop the walk earlier; the
        // walk still ends at a directory that is an ancestor of the start.
        let last = walked.last().unwrap();
        assert!(deep.starts_with(last));
    }
}
