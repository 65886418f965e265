//! Where a run keeps its workspace copies (EV2): one directory per process under
//! `<temp>/advisor-eval/`, named after the process id and the process's start time, and in
//! it one directory per run of the process (`0`, `1`, …: runs of one process share its id
//! and start time, so each has its own), removed when the run ends. A run killed outright (SIGKILL, a crash) cannot remove its
//! own, so every run first removes the directories of runs whose process is gone; the start
//! time tells a live run from a dead one whose process id was reused.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The directory under the system's temporary directory that holds every run's copies.
pub const SCRATCH_ROOT: &str = "advisor-eval";

/// Who made a run directory: a process id and that process's start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunId {
    /// The process id.
    pub pid: u32,
    /// The process's start time in clock ticks since boot (`/proc/PID/stat`, field 22);
    /// 0 where the system does not tell.
    pub start: u64,
}

impl RunId {
    /// This process.
    pub fn current() -> Self {
        let pid = std::process::id();
        Self {
            pid,
            start: process_start(pid).unwrap_or(0),
        }
    }

    /// The run directory's name: `run-PID-START`.
    pub fn dir_name(&self) -> String {
        format!("run-{}-{}", self.pid, self.start)
    }

    /// The run that made a directory called `name`, if it is a run directory.
    pub fn parse(name: &str) -> Option<Self> {
        let (pid, start) = name.strip_prefix("run-")?.split_once('-')?;
        Some(Self {
            pid: pid.parse().ok()?,
            start: start.parse().ok()?,
        })
    }

    /// Whether the run is still going: its process exists and started when the directory
    /// says. Without procfs nothing can be told, and every run counts as alive.
    pub fn alive(&self) -> bool {
        if process_start(std::process::id()).is_none() {
            return true;
        }
        process_start(self.pid) == Some(self.start)
    }
}

/// The start time of process `pid` (field 22 of `/proc/PID/stat`, read within 4 KiB), or
/// `None` when there is no such process or no procfs.
pub fn process_start(pid: u32) -> Option<u64> {
    let mut text = String::new();
    fs::File::open(format!("/proc/{pid}/stat"))
        .ok()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or `)`: the fields
    // after the last `)` start at field 3.
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Removes the run directories under `root` whose run `alive` says is over, and answers
/// how many it removed. Anything else under `root` (other names, files, symlinks) is left.
pub fn remove_stale(root: &Path, alive: impl Fn(&RunId) -> bool) -> usize {
    let Ok(entries) = fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let name = entry.file_name();
        let Some(run) = name.to_str().and_then(RunId::parse) else {
            continue;
        };
        if is_dir && !alive(&run) && fs::remove_dir_all(entry.path()).is_ok() {
            tracing::info!(dir = %entry.path().display(), "removed the workspace copies of a run that did not end");
            removed += 1;
        }
    }
    removed
}

/// This run's directory for workspace copies, inside its process's; removed (with the
/// process's directory and the root, when they are left empty) when dropped.
#[derive(Debug)]
pub struct RunScratch {
    path: PathBuf,
}

impl RunScratch {
    /// Removes the directories of runs that are over under `<temp>/advisor-eval`, then makes
    /// this run's, in this process's (`run-PID-START/N`); answers it and how many stale
    /// directories were removed.
    pub fn create(temp: &Path) -> Result<(Self, usize), String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let root = temp.join(SCRATCH_ROOT);
        let removed = remove_stale(&root, RunId::alive);
        let run = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = root.join(RunId::current().dir_name()).join(run.to_string());
        // Another run may remove the root when it leaves it empty: try again once.
        let made = fs::create_dir_all(&path).or_else(|_| fs::create_dir_all(&path));
        made.map_err(|e| format!("{}: {e}", path.display()))?;
        Ok((Self { path }, removed))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunScratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
        // Each fails, as it should, while another run's directory is there.
        for dir in self.path.ancestors().skip(1).take(2) {
            let _ = fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process id that is certainly over: a child that has exited and been waited for.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn ev2_run_dir_names_round_trip_and_other_names_are_not_runs() {
        let id = RunId {
            pid: 4242,
            start: 987_654,
        };
        assert_eq!(id.dir_name(), "run-4242-987654");
        assert_eq!(RunId::parse(&id.dir_name()), Some(id));
        for other in [
            "run-",
            "run-12",
            "run-x-1",
            "advisor-eval-1-0-case",
            "run-1-2-3",
        ] {
            assert_eq!(RunId::parse(other), None, "{other}");
        }
    }

    #[test]
    fn ev2_this_process_is_alive_and_an_exited_or_reused_pid_is_not() {
        let me = RunId::current();
        assert!(me.start > 0, "procfs gives the start time on Linux");
        assert!(me.alive());
        let reused = RunId {
            start: me.start + 1,
            ..me
        };
        assert!(!reused.alive(), "same pid, another start: a reused pid");
        let gone = RunId {
            pid: dead_pid(),
            start: me.start,
        };
        assert!(!gone.alive());
    }

    #[test]
    fn ev2_a_new_run_removes_the_copies_of_killed_runs_and_keeps_live_ones() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join(SCRATCH_ROOT);
        let me = RunId::current();
        let killed = RunId {
            pid: dead_pid(),
            start: 17,
        };
        let reused = RunId {
            start: me.start + 1,
            ..me
        };
        // Another run still going: the process that started this test.
        let parent = std::os::unix::process::parent_id();
        let live = RunId {
            pid: parent,
            start: process_start(parent).unwrap(),
        };
        for run in [killed, reused, live] {
            let copy = root.join(run.dir_name()).join("3-case/workspace");
            fs::create_dir_all(&copy).unwrap();
            fs::write(copy.join("AGENTS.md"), "rules").unwrap();
        }
        fs::write(root.join("run-1-1"), "a file, not a run directory").unwrap();
        fs::create_dir_all(root.join("keep-me")).unwrap();

        let (scratch, removed) = RunScratch::create(temp.path()).unwrap();
        assert_eq!(removed, 2);
        assert!(!root.join(killed.dir_name()).exists());
        assert!(!root.join(reused.dir_name()).exists());
        assert!(root
            .join(live.dir_name())
            .join("3-case/workspace/AGENTS.md")
            .is_file());
        assert!(root.join("run-1-1").is_file() && root.join("keep-me").is_dir());
        assert_eq!(
            scratch.path().parent(),
            Some(root.join(me.dir_name()).as_path())
        );
        assert!(scratch.path().is_dir());
        drop(scratch);
        assert!(!root.join(me.dir_name()).exists());
        assert!(root.is_dir(), "the root stays while others use it");
    }

    #[test]
    fn ev2_the_last_run_to_end_removes_the_empty_root() {
        let temp = tempfile::tempdir().unwrap();
        let (scratch, removed) = RunScratch::create(temp.path()).unwrap();
        assert_eq!(removed, 0);
        drop(scratch);
        assert_eq!(fs::read_dir(temp.path()).unwrap().count(), 0);
    }

    #[test]
    fn ev2_two_runs_of_one_process_at_once_keep_their_own_copies() {
        let temp = tempfile::tempdir().unwrap();
        let (first, _) = RunScratch::create(temp.path()).unwrap();
        let (second, _) = RunScratch::create(temp.path()).unwrap();
        assert_ne!(first.path(), second.path(), "one process id, two runs");
        let copy = second.path().join("0-case/workspace");
        fs::create_dir_all(&copy).unwrap();
        fs::write(copy.join("AGENTS.md"), "rules").unwrap();
        drop(first);
        assert!(
            copy.join("AGENTS.md").is_file(),
            "the run that ended first leaves the other's copies alone"
        );
        drop(second);
        assert_eq!(fs::read_dir(temp.path()).unwrap().count(), 0);
    }
}
