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

/// Most entries a [`digest`] looks at; a larger tree gives no digest (SP2: its calls always
/// run).
pub const MAX_DIGEST_ENTRIES: u64 = 20_000;

/// How long a [`digest`] may walk; a slower one gives no digest.
pub const DIGEST_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A digest of the path, size and modification time of every entry `builder`'s walk sees
/// (SP2): stat only, no file is opened. Entries are combined in any order, so the parallel
/// walk gives the same digest for the same tree. `None` when the walk passes
/// [`MAX_DIGEST_ENTRIES`] or [`DIGEST_TIME_LIMIT`]: such a tree is not fingerprinted.
pub fn digest(builder: &WalkBuilder) -> Option<u64> {
    use std::sync::atomic::AtomicU64;
    let sum = AtomicU64::new(0);
    let count = AtomicU64::new(0);
    let deadline = Instant::now() + DIGEST_TIME_LIMIT;
    let timed_out = run_until(builder, deadline, || {
        let (sum, count) = (&sum, &count);
        move |entry: &DirEntry| {
            let meta = entry.metadata().ok();
            let one = stat_hash(entry.path(), meta.as_ref());
            sum.fetch_add(one, Ordering::Relaxed);
            count.fetch_add(1, Ordering::Relaxed);
        }
    });
    let count = count.into_inner();
    if timed_out || count > MAX_DIGEST_ENTRIES {
        return None;
    }
    Some(sum.into_inner() ^ count.rotate_left(32))
}

/// The hash of one path's size and modification time (SP2); a path whose metadata could not
/// be read hashes its path alone.
pub fn stat_hash(path: &Path, meta: Option<&std::fs::Metadata>) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    path.hash(&mut h);
    if let Some(meta) = meta {
        meta.len().hash(&mut h);
        meta.is_dir().hash(&mut h);
        meta.modified().ok().hash(&mut h);
    }
    h.finish()
}
