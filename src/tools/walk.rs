//! The directory walk shared by `search` and `find`: the `ignore` crate's parallel walker,
//! configured the same way for both tools.
//!
//! Ignore rules (`.gitignore`, `.ignore`, `.git/info/exclude`, the global git excludes and
//! those of parent directories) apply when `gitignore` is set, whether or not the root is a
//! git repository. Symlinks are never followed, so a walk cannot leave the root it started
//! in, and the `.git` directory is never entered.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ignore::{DirEntry, WalkBuilder, WalkState};

/// A walker over `starts` (at least one), with hidden entries included when
/// `include_hidden` and ignore files honoured when `gitignore`.
pub fn builder(starts: &[&Path], include_hidden: bool, gitignore: bool) -> WalkBuilder {
    let mut builder = WalkBuilder::new(starts.first().copied().unwrap_or(Path::new(".")));
    for start in starts.iter().skip(1) {
        builder.add(start);
    }
    builder
        .hidden(!include_hidden)
        .follow_links(false)
        .ignore(gitignore)
        .git_ignore(gitignore)
        .git_exclude(gitignore)
        .git_global(gitignore)
        .parents(gitignore)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git");
    builder
}

/// Runs `builder`'s parallel walk until it ends or `deadline` passes; returns whether the
/// deadline cut it short. `make_visitor` is called once per walker thread and the visitor it
/// returns sees every entry that thread reads without error (the starting paths included,
/// at depth 0).
pub fn run_until<M, V>(builder: &WalkBuilder, deadline: Instant, make_visitor: M) -> bool
where
    M: Fn() -> V + Sync,
    V: FnMut(&DirEntry) + Send,
{
    let timed_out = AtomicBool::new(false);
    builder.build_parallel().run(|| {
        let mut visit = make_visitor();
        let timed_out = &timed_out;
        Box::new(move |entry| {
            if Instant::now() >= deadline {
                timed_out.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            if let Ok(entry) = entry {
                visit(&entry);
            }
            WalkState::Continue
        })
    });
    timed_out.into_inner()
}
