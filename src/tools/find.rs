//! The `find` tool (T5): files and directories of the workspace matching glob patterns.
//!
//! - `paths` holds one glob or a list, relative to the workspace root. A pattern without `/`
//!   matches entry names at any depth (`*.rs`, `Cargo.toml`); a pattern with `/` matches the
//!   whole root-relative path (`src/**/*.rs`, `tests/*`), where `*` stays within one path
//!   component and `**` crosses any number. `{a,b}` alternatives and `[abc]` classes work.
//!   The literal leading directories of a pattern are where the walk starts, and are confined
//!   like every tool path (T2): `..`, absolute paths outside the root and `/` are refused.
//! - Hidden files are included (`hidden: false` leaves them out) and `.gitignore` is honoured
//!   (`gitignore: false` includes ignored files); the `.git` directory is never listed and
//!   symlinks are not followed.
//! - Results are sorted by modification time, newest first, cut to `limit` (1–200, default
//!   100), and grouped under `# dir/` headers (`# ./` for the root), groups ordered by their
//!   newest entry; directories carry a trailing `/`.
//! - The walk stops at `timeout` seconds (0.5–60, default 5) and shows what it found, with a
//!   notice.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use globset::{Glob, GlobBuilder, GlobMatcher};
use parking_lot::Mutex;
use rustc_hash::FxHashSet;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::model::ToolSchema;
use crate::tools::args::{self, PathList};
use crate::tools::confine;
use crate::tools::{walk, ToolError, ToolSession, WorkspaceTool};

/// The tool's name.
pub const NAME: &str = "find";
/// Results shown when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;
/// Largest `limit`.
pub const MAX_LIMIT: usize = 200;
/// Timeout when `timeout` is not given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Smallest accepted `timeout`, seconds.
pub const MIN_TIMEOUT_SECS: f64 = 0.5;
/// Largest accepted `timeout`, seconds.
pub const MAX_TIMEOUT_SECS: f64 = 60.0;

/// The description the model is offered, from `config/prompts/tool-find.md`.
const DESCRIPTION: &str = include_str!("../../config/prompts/tool-find.md").trim_ascii_end();

/// Arguments of `find`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindArgs {
    /// Glob pattern, or a list of them, relative to the workspace root (e.g. `**/*.rs`).
    pub paths: PathList,
    /// Include hidden files and directories when true.
    #[serde(default = "args::yes")]
    pub hidden: bool,
    /// Skip files ignored by .gitignore when true; false lists them too.
    #[serde(default = "args::yes")]
    pub gitignore: bool,
    /// Most results to show, 1 to 200.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 200))]
    pub limit: u64,
    /// Seconds to spend looking, 0.5 to 60; partial results after that.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 0.5, max = 60))]
    pub timeout: f64,
}

fn default_limit() -> u64 {
    DEFAULT_LIMIT as u64
}

fn default_timeout() -> f64 {
    DEFAULT_TIMEOUT.as_secs_f64()
}

/// A find, independent of how it was asked for.
#[derive(Debug, Clone)]
pub struct FindQuery {
    /// Glob patterns.
    pub patterns: Vec<String>,
    /// Include hidden entries.
    pub hidden: bool,
    /// Honour ignore files.
    pub gitignore: bool,
    /// Most results shown.
    pub limit: usize,
    /// Time budget of the walk.
    pub timeout: Duration,
}

/// The `find` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct FindTool;

impl WorkspaceTool for FindTool {
    fn name(&self) -> &'static str {
        NAME
    }

    fn schema(&self) -> ToolSchema {
        args::schema_of::<FindArgs>(NAME, DESCRIPTION)
    }

    fn run(&self, args: &Value, session: &ToolSession) -> Result<String, ToolError> {
        let args: FindArgs = args::parse(NAME, args)?;
        find(session.root(), &query_of(args)?)
    }

    fn fingerprint(&self, args: &Value, session: &ToolSession) -> Option<u64> {
        let args: FindArgs = args::parse(NAME, args).ok()?;
        let query = query_of(args).ok()?;
        let root = confine::canonical_root(session.root()).ok()?;
        let mut digest = 0u64;
        for pattern in &query.patterns {
            let plan = plan(&root, pattern).ok()?;
            let builder = walk::builder(&[plan.base.as_path()], query.hidden, query.gitignore);
            digest = digest.rotate_left(7) ^ walk::digest(&builder)?;
        }
        Some(digest)
    }
}

/// Validates the arguments into a query.
fn query_of(args: FindArgs) -> Result<FindQuery, ToolError> {
    let limit = match args.limit {
        n if (1..=MAX_LIMIT as u64).contains(&n) => n as usize,
        n => {
            return Err(ToolError::InvalidArguments(format!(
                "`limit` must be between 1 and {MAX_LIMIT}, got {n}"
            )))
        }
    };
    let timeout = match args.timeout {
        t if (MIN_TIMEOUT_SECS..=MAX_TIMEOUT_SECS).contains(&t) => Duration::from_secs_f64(t),
        t => {
            return Err(ToolError::InvalidArguments(format!(
            "`timeout` must be between {MIN_TIMEOUT_SECS} and {MAX_TIMEOUT_SECS} seconds, got {t}"
        )))
        }
    };
    if args.paths.items().is_empty() {
        return Err(ToolError::InvalidArguments(
            "`paths` is empty; give at least one glob pattern such as `**/*.rs`".into(),
        ));
    }
    Ok(FindQuery {
        patterns: args.paths.0,
        hidden: args.hidden,
        gitignore: args.gitignore,
        limit,
        timeout,
    })
}

/// How one pattern is matched.
#[derive(Debug)]
struct Plan {
    /// Root-relative directory the walk starts from (the pattern's literal prefix).
    prefix: PathBuf,
    /// Canonical form of that directory.
    base: PathBuf,
    /// Match against the entry name (pattern without `/`) or the root-relative path.
    by_name: bool,
    matcher: GlobMatcher,
}

fn has_meta(part: &str) -> bool {
    part.contains(['*', '?', '[', '{'])
}

/// Turns one pattern into a confined walk plan.
fn plan(root: &Path, pattern: &str) -> Result<Plan, ToolError> {
    if pattern.trim().is_empty() {
        return Err(ToolError::InvalidArguments(
            "a pattern in `paths` is empty; give a glob such as `**/*.rs`".into(),
        ));
    }
    let rel = confine::relative(root, pattern)?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        return Err(ToolError::InvalidArguments(format!(
            "`{pattern}` names the workspace root, not a pattern; use `*` for its entries or `**` for everything"
        )));
    }
    let literal = parts[..parts.len() - 1]
        .iter()
        .take_while(|p| !has_meta(p))
        .count();
    let prefix: PathBuf = parts[..literal].iter().collect();
    let base = confine::resolve(root, &confine::display_of(&prefix))?;
    if !base.path.is_dir() {
        return Err(ToolError::InvalidArguments(format!(
            "`{}` is a file, not a directory; patterns look inside directories",
            base.display
        )));
    }
    let glob_text = parts.join("/");
    let glob = GlobBuilder::new(&glob_text)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| ToolError::InvalidArguments(format!("invalid glob `{pattern}`: {e}")))?;
    Ok(Plan {
        prefix,
        base: base.path,
        by_name: parts.len() == 1,
        matcher: Glob::compile_matcher(&glob),
    })
}

/// One entry found.
#[derive(Debug, Clone)]
struct Found {
    rel: PathBuf,
    is_dir: bool,
    modified: SystemTime,
}

/// Runs `query` under `root`.
pub fn find(root: &Path, query: &FindQuery) -> Result<String, ToolError> {
    let root = confine::canonical_root(root)?;
    let plans = query
        .patterns
        .iter()
        .map(|p| plan(&root, p))
        .collect::<Result<Vec<_>, _>>()?;
    let deadline = Instant::now() + query.timeout;
    let found: Mutex<Vec<Found>> = Mutex::new(Vec::new());
    let mut timed_out = false;
    for plan in &plans {
        timed_out = walk(plan, query, deadline, &found);
        if timed_out {
            break;
        }
    }
    let mut found = found.into_inner();
    let mut seen = FxHashSet::default();
    found.retain(|f| seen.insert(f.rel.clone()));
    found.sort_unstable_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.rel.cmp(&b.rel)));
    Ok(render(&found, query, timed_out))
}

/// Walks one plan, adding matches to `found`; true when the deadline cut it short.
fn walk(plan: &Plan, query: &FindQuery, deadline: Instant, found: &Mutex<Vec<Found>>) -> bool {
    let builder = walk::builder(&[plan.base.as_path()], query.hidden, query.gitignore);
    walk::run_until(&builder, deadline, || {
        move |entry: &ignore::DirEntry| {
            if entry.depth() == 0 {
                return;
            }
            let Ok(below) = entry.path().strip_prefix(&plan.base) else {
                return;
            };
            // Only a pattern with a literal prefix needs the prefix put back (the walk may
            // have started from a symlink's target); the common case allocates nothing.
            let rel = if plan.prefix.as_os_str().is_empty() {
                Cow::Borrowed(below)
            } else {
                Cow::Owned(plan.prefix.join(below))
            };
            let hit = if plan.by_name {
                plan.matcher.is_match(entry.file_name())
            } else {
                plan.matcher.is_match(&rel)
            };
            if hit {
                let meta = entry.metadata().ok();
                found.lock().push(Found {
                    rel: rel.into_owned(),
                    is_dir: entry.file_type().is_some_and(|t| t.is_dir()),
                    modified: meta
                        .and_then(|m| m.modified().ok())
                        .unwrap_or(SystemTime::UNIX_EPOCH),
                });
            }
        }
    })
}

/// Renders the newest `limit` entries grouped by directory.
fn render(found: &[Found], query: &FindQuery, timed_out: bool) -> String {
    let mut blocks: Vec<String> = Vec::new();
    if found.is_empty() {
        blocks.push(format!("No files match {}.", quoted(&query.patterns)));
    }
    let shown = &found[..found.len().min(query.limit)];
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for f in shown {
        let dir = match f.rel.parent() {
            Some(p) if !p.as_os_str().is_empty() => format!("{}/", confine::display_of(p)),
            _ => "./".to_string(),
        };
        let mut name = f
            .rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if f.is_dir {
            name.push('/');
        }
        match groups.iter_mut().find(|(d, _)| *d == dir) {
            Some((_, names)) => names.push(name),
            None => groups.push((dir, vec![name])),
        }
    }
    for (dir, names) in groups {
        blocks.push(format!("# {dir}\n{}", names.join("\n")));
    }
    if found.len() > shown.len() {
        blocks.push(format!(
            "[{} more matches not shown ({} in all); raise `limit` (at most {MAX_LIMIT}) or narrow the pattern.]",
            found.len() - shown.len(),
            found.len()
        ));
    }
    if timed_out {
        blocks.push(format!(
            "[find stopped at its {} s timeout; results are partial.]",
            query.timeout.as_secs_f64()
        ));
    }
    blocks.join("\n\n")
}

fn quoted(patterns: &[String]) -> String {
    patterns
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs::File;

    /// Creates files (or directories for names ending in `/`) with increasing mtimes in
    /// the given order, so the last one is the newest.
    fn tree(entries: &[&str]) -> (tempfile::TempDir, ToolSession) {
        let dir = tempfile::tempdir().unwrap();
        let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for (i, name) in entries.iter().enumerate() {
            let p = dir.path().join(name.trim_end_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            if name.ends_with('/') {
                std::fs::create_dir_all(&p).unwrap();
            } else {
                std::fs::write(&p, "x").unwrap();
            }
            let t = base + Duration::from_secs(10 * i as u64);
            File::open(&p).unwrap().set_modified(t).unwrap();
        }
        let s = ToolSession::for_primary("p", dir.path());
        (dir, s)
    }

    fn run(s: &ToolSession, args: Value) -> Result<String, ToolError> {
        FindTool.run(&args, s)
    }

    #[test]
    fn sp2_find_is_fingerprinted_by_the_directories_it_walks() {
        let (d, s) = tree(&["src/a.rs", "src/b.rs", "docs/c.md"]);
        let print = |args: Value| FindTool.fingerprint(&args, &s);
        let rs = json!({"paths": "src/*.rs"});
        let before = print(rs.clone()).expect("a small tree is fingerprinted");
        assert_eq!(print(rs.clone()), Some(before));
        std::fs::write(d.path().join("docs/new.md"), "x").unwrap();
        assert_eq!(print(rs.clone()), Some(before), "outside the walk");
        std::fs::write(d.path().join("src/new.rs"), "x").unwrap();
        assert_ne!(print(rs).unwrap(), before, "a new entry where it walks");
        assert_eq!(print(json!({"paths": ""})), None, "bad arguments");
    }

    #[test]
    fn t5_newest_first_grouped_by_directory() {
        let (_d, s) = tree(&["src/a.rs", "b.rs", "src/c.rs", "src/sub/d.rs", "README.md"]);
        let out = run(&s, json!({"paths": "*.rs"})).unwrap();
        assert_eq!(out, "# src/sub/\nd.rs\n\n# src/\nc.rs\na.rs\n\n# ./\nb.rs");
        let out = run(&s, json!({"paths": "src/*.rs"})).unwrap();
        assert_eq!(out, "# src/\nc.rs\na.rs");
        let out = run(&s, json!({"paths": ["src/**/*.rs", "README.md"]})).unwrap();
        assert_eq!(
            out,
            "# ./\nREADME.md\n\n# src/sub/\nd.rs\n\n# src/\nc.rs\na.rs"
        );
    }

    #[test]
    fn t5_directories_have_a_trailing_slash() {
        let (_d, s) = tree(&["src/x.rs", "src/tools/", "src/tools/y.rs"]);
        let out = run(&s, json!({"paths": "src/*"})).unwrap();
        assert_eq!(out, "# src/\ntools/\nx.rs");
    }

    #[test]
    fn t5_hidden_and_gitignore_flags() {
        let (d, s) = tree(&[
            ".gitignore",
            "target/out.rs",
            ".cfg/h.rs",
            ".git/x.rs",
            "a.rs",
        ]);
        std::fs::write(d.path().join(".gitignore"), "target/\n").unwrap();
        let out = run(&s, json!({"paths": "**/*.rs"})).unwrap();
        assert_eq!(out, "# ./\na.rs\n\n# .cfg/\nh.rs");
        let out = run(&s, json!({"paths": "**/*.rs", "hidden": false})).unwrap();
        assert_eq!(out, "# ./\na.rs");
        let out = run(&s, json!({"paths": "**/*.rs", "gitignore": false})).unwrap();
        assert_eq!(out, "# ./\na.rs\n\n# .cfg/\nh.rs\n\n# target/\nout.rs");
    }

    #[test]
    fn t5_limit_cuts_to_the_newest_with_a_notice() {
        let (_d, s) = tree(&["a.rs", "b.rs", "c.rs"]);
        let out = run(&s, json!({"paths": "*.rs", "limit": 2})).unwrap();
        assert_eq!(
            out,
            "# ./\nc.rs\nb.rs\n\n[1 more matches not shown (3 in all); raise `limit` (at most 200) or narrow the pattern.]"
        );
    }

    #[test]
    fn t5_limit_and_timeout_ranges_are_checked() {
        let (_d, s) = tree(&["a.rs"]);
        for bad in [
            json!({"paths": "*", "limit": 0}),
            json!({"paths": "*", "limit": 201}),
        ] {
            let e = run(&s, bad).unwrap_err();
            assert!(
                e.to_string().contains("`limit` must be between 1 and 200"),
                "{e}"
            );
        }
        for bad in [
            json!({"paths": "*", "timeout": 0.1}),
            json!({"paths": "*", "timeout": 61}),
        ] {
            let e = run(&s, bad).unwrap_err();
            assert!(
                e.to_string()
                    .contains("`timeout` must be between 0.5 and 60"),
                "{e}"
            );
        }
        assert!(run(&s, json!({"paths": "*", "limit": 200, "timeout": 0.5})).is_ok());
    }

    #[test]
    fn t5_timeout_gives_partial_results_and_a_notice() {
        let (d, _s) = tree(&["a.rs"]);
        let query = FindQuery {
            patterns: vec!["**".into()],
            hidden: true,
            gitignore: true,
            limit: 10,
            timeout: Duration::ZERO,
        };
        let out = find(d.path(), &query).unwrap();
        assert!(
            out.ends_with("[find stopped at its 0 s timeout; results are partial.]"),
            "{out}"
        );
    }

    #[test]
    fn t2_patterns_are_confined() {
        let (_d, s) = tree(&["a.rs"]);
        for bad in ["../*", "/", "/etc/*", "src/../../x"] {
            let e = run(&s, json!({"paths": bad})).unwrap_err();
            assert!(matches!(e, ToolError::OutsideWorkspace(_)), "{bad}: {e}");
        }
    }

    #[test]
    fn t7_bad_input_is_a_tool_error() {
        let (_d, s) = tree(&["a.rs"]);
        let e = run(&s, json!({})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid arguments: find: missing field `paths`"
        );
        let e = run(&s, json!({"paths": "a["})).unwrap_err();
        assert!(e.to_string().contains("invalid glob `a[`"), "{e}");
        let e = run(&s, json!({"paths": []})).unwrap_err();
        assert!(e.to_string().contains("`paths` is empty"), "{e}");
        let e = run(&s, json!({"paths": "a.rs/*"})).unwrap_err();
        assert!(e.to_string().contains("is a file, not a directory"), "{e}");
        let e = run(&s, json!({"paths": "nope/*.rs"})).unwrap_err();
        assert!(matches!(e, ToolError::NotFound(_)), "{e}");
        let e = run(&s, json!({"paths": "*", "limit": "5"})).unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments(_)), "{e}");
        let out = run(&s, json!({"paths": "*.py"})).unwrap();
        assert_eq!(out, "No files match `*.py`.");
    }
}
