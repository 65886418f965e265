//! The `search` tool (T4): a regular-expression search over the workspace.
//!
//! - The pattern is Rust `regex` syntax, matched line by line (a pattern that needs to match a
//!   newline is refused); `i: true` makes it case-insensitive.
//! - `paths` (a string or a list) narrows the search to files or directories under the root;
//!   the default is the whole workspace. Each is confined like every tool path (T2).
//! - `.gitignore` (plus `.ignore`, `.git/info/exclude` and the global git excludes) is honoured
//!   by default, even outside a git repository; `gitignore: false` searches ignored files too.
//!   Hidden files are always searched; the `.git` directory never is. Symlinks are not
//!   followed, so a walk never leaves the root.
//! - Output is grouped by file, files in path order: a `# path` header, then match lines
//!   `*N|text` and context lines ` N|text` (one line before each match, three after).
//! - Paging: 20 files per page, `skip` to page on. At most 20 matches are shown per file when
//!   several files match, 200 when only one does. Lines are cut at 512 characters.
//! - Binary files (a NUL byte) are skipped; invalid UTF-8 in a shown line is rendered lossily
//!   (`�`). Files over 4 MB are skipped and counted in a notice.
//! - The search stops at a 30 s limit: the files searched so far are shown, with a notice.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::model::ToolSchema;
use crate::regular_file;
use crate::tools::args::{self, PathList};
use crate::tools::confine::{self, Confined};
use crate::tools::{walk, ToolError, ToolSession, WorkspaceTool};

/// The tool's name.
pub const NAME: &str = "search";
/// Files shown per page.
pub const FILES_PER_PAGE: usize = 20;
/// Matches shown per file when several files match.
pub const MATCHES_PER_FILE: usize = 20;
/// Matches shown when exactly one file matches.
pub const MATCHES_SINGLE_FILE: usize = 200;
/// Characters kept of a shown line.
pub const MAX_LINE_CHARS: usize = 512;
/// Files larger than this are skipped.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The time limit of one search.
pub const TIME_LIMIT: Duration = Duration::from_secs(30);
/// Context lines before a match.
pub const BEFORE: usize = 1;
/// Context lines after a match.
pub const AFTER: usize = 3;

/// The description the model is offered, from `config/prompts/tool-search.md`.
const DESCRIPTION: &str = include_str!("../../config/prompts/tool-search.md").trim_ascii_end();

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Regular expression in Rust regex syntax, matched within single lines.
    pub pattern: String,
    /// Files or directories to search, relative to the workspace root (one string or a
    /// list). Default: the whole workspace.
    pub paths: Option<PathList>,
    /// Case-insensitive matching when true.
    #[serde(default)]
    pub i: bool,
    /// Skip files ignored by .gitignore when true; false searches them too.
    #[serde(default = "args::yes")]
    pub gitignore: bool,
    /// Number of matching files to skip, for paging (20 files per page).
    #[serde(default)]
    pub skip: usize,
}

/// A search, independent of how it was asked for.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    /// The regex.
    pub pattern: String,
    /// Case-insensitive.
    pub case_insensitive: bool,
    /// Honour ignore files.
    pub gitignore: bool,
    /// Matching files to skip (paging).
    pub skip: usize,
    /// Time budget of the walk.
    pub time_limit: Duration,
}

/// The `search` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct SearchTool;

impl WorkspaceTool for SearchTool {
    fn name(&self) -> &'static str {
        NAME
    }

    fn schema(&self) -> ToolSchema {
        args::schema_of::<SearchArgs>(NAME, DESCRIPTION)
    }

    fn run(&self, args: &Value, session: &ToolSession) -> Result<String, ToolError> {
        let args: SearchArgs = args::parse(NAME, args)?;
        let query = SearchQuery {
            pattern: args.pattern,
            case_insensitive: args.i,
            gitignore: args.gitignore,
            skip: args.skip,
            time_limit: TIME_LIMIT,
        };
        let paths = args.paths.unwrap_or_default();
        search(session.root(), paths.items(), &query)
    }

    fn fingerprint(&self, args: &Value, session: &ToolSession) -> Option<u64> {
        let args: SearchArgs = args::parse(NAME, args).ok()?;
        let root = confine::canonical_root(session.root()).ok()?;
        let paths = args.paths.unwrap_or_default();
        let targets = targets(&root, paths.items()).ok()?;
        let starts: Vec<&Path> = targets.iter().map(|t| t.path.as_path()).collect();
        walk::digest(&walk::builder(&starts, true, args.gitignore))
    }
}

/// Runs `query` over `paths` (root-relative; empty means the whole root) under `root`.
pub fn search(root: &Path, paths: &[String], query: &SearchQuery) -> Result<String, ToolError> {
    if query.pattern.is_empty() {
        return Err(ToolError::InvalidArguments(
            "`pattern` is empty; give a regular expression".into(),
        ));
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(query.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&query.pattern)
        .map_err(|e| {
            ToolError::InvalidArguments(format!(
                "invalid regex `{}`: {}",
                query.pattern,
                one_line(&e.to_string())
            ))
        })?;
    let root = confine::canonical_root(root)?;
    let targets = targets(&root, paths)?;
    let outcome = walk(&root, &targets, &matcher, query);
    Ok(render(&outcome, query))
}

/// Confines every requested path; no paths means the root.
fn targets(root: &Path, paths: &[String]) -> Result<Vec<Confined>, ToolError> {
    if paths.is_empty() {
        return Ok(vec![Confined {
            path: root.to_path_buf(),
            display: ".".into(),
        }]);
    }
    paths
        .iter()
        .map(|p| match confine::resolve(root, p) {
            Err(ToolError::NotFound(_)) if p.contains(['*', '?', '[', '{']) => {
                Err(ToolError::InvalidArguments(format!(
                    "`paths` takes files or directories, not glob patterns like `{p}`; search their directory instead"
                )))
            }
            other => other,
        })
        .collect()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One shown line of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    number: u64,
    is_match: bool,
    text: String,
}

/// Matches collected in one file.
#[derive(Debug)]
struct FileHits {
    display: String,
    lines: Vec<Line>,
    matches: usize,
}

/// What a walk found.
#[derive(Debug, Default)]
struct Outcome {
    files: Vec<FileHits>,
    too_large: usize,
    timed_out: bool,
}

/// Collects match and context lines of one file, up to the searcher's match limit.
struct Collector {
    lines: Vec<Line>,
    matches: usize,
}

impl Collector {
    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        self.lines.push(Line {
            number: number.unwrap_or(0),
            is_match,
            text: cut_line(&String::from_utf8_lossy(bytes)),
        });
    }
}

impl Sink for Collector {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matches += 1;
        self.push(mat.line_number(), mat.bytes(), true);
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.push(ctx.line_number(), ctx.bytes(), false);
        Ok(true)
    }
}

/// `text` cut to [`MAX_LINE_CHARS`] characters, `…` marking a cut.
fn cut_line(text: &str) -> String {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((idx, _)) => format!("{}…", &text[..idx]),
        None => text.to_string(),
    }
}

/// Walks the targets in parallel, searching each file, until done or out of time.
fn walk(root: &Path, targets: &[Confined], matcher: &RegexMatcher, query: &SearchQuery) -> Outcome {
    let deadline = Instant::now() + query.time_limit;
    let starts: Vec<&Path> = targets.iter().map(|t| t.path.as_path()).collect();
    let builder = walk::builder(&starts, true, query.gitignore);
    let found: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let too_large = AtomicUsize::new(0);
    let timed_out = walk::run_until(&builder, deadline, || {
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(BEFORE)
            .after_context(AFTER)
            .binary_detection(BinaryDetection::quit(0))
            .max_matches(Some(MATCHES_SINGLE_FILE as u64 + 1))
            .build();
        let matcher = matcher.clone();
        let (found, too_large) = (&found, &too_large);
        move |entry: &ignore::DirEntry| {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return;
            }
            // Opened as `read` opens files: never waiting on a FIFO put in the file's place
            // after the walk saw it, never reading a procfs or sysfs file.
            let Ok(file) = regular_file::open_regular(entry.path()) else {
                return;
            };
            if file.metadata().is_ok_and(|m| m.len() > MAX_FILE_BYTES) {
                too_large.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let mut sink = Collector {
                lines: Vec::new(),
                matches: 0,
            };
            let searched = searcher.search_file(&matcher, &file, &mut sink);
            if searched.is_ok() && sink.matches > 0 {
                found.lock().push(FileHits {
                    display: confine::display_under(root, entry.path()),
                    lines: sink.lines,
                    matches: sink.matches,
                });
            }
        }
    });
    let mut files = found.into_inner();
    files.sort_unstable_by(|a, b| a.display.cmp(&b.display));
    files.dedup_by(|a, b| a.display == b.display);
    Outcome {
        files,
        too_large: too_large.into_inner(),
        timed_out,
    }
}

/// Renders one page of the outcome as the model sees it.
fn render(outcome: &Outcome, query: &SearchQuery) -> String {
    let total = outcome.files.len();
    let per_file = if total == 1 {
        MATCHES_SINGLE_FILE
    } else {
        MATCHES_PER_FILE
    };
    let mut blocks: Vec<String> = Vec::new();
    if total == 0 {
        blocks.push(format!("No matches for `{}`.", query.pattern));
    } else if query.skip >= total {
        blocks.push(format!(
            "skip {} is past the last matching file: {total} file(s) matched.",
            query.skip
        ));
    }
    let page_end = (query.skip + FILES_PER_PAGE).min(total);
    for hits in outcome.files.iter().take(page_end).skip(query.skip) {
        blocks.push(render_file(hits, per_file));
    }
    if total > 0 && query.skip < total && (query.skip > 0 || page_end < total) {
        let mut line = format!(
            "[{total} files matched; showing files {}-{page_end}.",
            query.skip + 1
        );
        if page_end < total {
            line.push_str(&format!(" Use skip: {page_end} for the next page."));
        }
        line.push(']');
        blocks.push(line);
    }
    if outcome.too_large > 0 {
        blocks.push(format!(
            "[{} file(s) over 4 MB were skipped.]",
            outcome.too_large
        ));
    }
    if outcome.timed_out {
        blocks.push(format!(
            "[The search hit its {} s time limit; results are partial. Narrow `paths` or the pattern.]",
            query.time_limit.as_secs_f64()
        ));
    }
    blocks.join("\n\n")
}

/// One file's block: header, lines up to the `cap`-th match, and a note on the rest.
fn render_file(hits: &FileHits, cap: usize) -> String {
    let stop_at = hits
        .lines
        .iter()
        .filter(|l| l.is_match)
        .nth(cap)
        .map(|l| l.number);
    let mut out = format!("# {}", hits.display);
    for line in &hits.lines {
        if stop_at.is_some_and(|n| line.number >= n) {
            break;
        }
        let mark = if line.is_match { '*' } else { ' ' };
        out.push_str(&format!("\n{mark}{}|{}", line.number, line.text));
    }
    // The searcher stops counting shortly after MATCHES_SINGLE_FILE + 1 matches.
    let counted = hits.matches.min(MATCHES_SINGLE_FILE + 1);
    if counted > cap {
        let more = counted - cap;
        let at_least = if hits.matches > MATCHES_SINGLE_FILE {
            "at least "
        } else {
            ""
        };
        if cap < MATCHES_SINGLE_FILE {
            out.push_str(&format!(
                "\n[{at_least}{more} more matches in this file; search it alone to see up to {MATCHES_SINGLE_FILE}]"
            ));
        } else {
            out.push_str(&format!(
                "\n[{at_least}{more} more matches in this file; narrow the pattern]"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, ToolSession) {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        let s = ToolSession::for_primary("p", dir.path());
        (dir, s)
    }

    fn run(s: &ToolSession, args: Value) -> Result<String, ToolError> {
        SearchTool.run(&args, s)
    }

    #[test]
    fn sp2_search_is_fingerprinted_by_the_files_it_would_search() {
        let (d, s) = tree(&[("src/x.rs", "needle\n"), ("docs/y.md", "text\n")]);
        let print = |args: Value| SearchTool.fingerprint(&args, &s);
        let all = json!({"pattern": "needle"});
        let src = json!({"pattern": "needle", "paths": "src"});
        let (before, before_src) = (print(all.clone()).unwrap(), print(src.clone()).unwrap());
        assert_eq!(
            print(all.clone()),
            Some(before),
            "the same tree, the same print"
        );
        // A file outside `src` changes the whole tree's print, not `src`'s.
        std::fs::write(d.path().join("docs/y.md"), "more text\n").unwrap();
        assert_ne!(print(all.clone()).unwrap(), before);
        assert_eq!(print(src.clone()), Some(before_src));
        // A new file in `src` changes `src`'s.
        std::fs::write(d.path().join("src/z.rs"), "needle\n").unwrap();
        assert_ne!(print(src).unwrap(), before_src);
        assert_eq!(print(json!({"pattern": "x", "paths": "../out"})), None);
        assert_eq!(print(json!({"paths": "src"})), None, "bad arguments");
    }

    #[test]
    fn t4_grouped_output_with_one_line_before_and_three_after() {
        let text = "a\nb\nneedle one\nc\nd\ne\nf\ng\n";
        let (_d, s) = tree(&[("src/x.rs", text), ("y.txt", "nothing\n")]);
        let out = run(&s, json!({"pattern": "needle"})).unwrap();
        assert_eq!(out, "# src/x.rs\n 2|b\n*3|needle one\n 4|c\n 5|d\n 6|e");
    }

    #[test]
    fn t4_files_in_path_order_and_case_flag() {
        let (_d, s) = tree(&[("b.txt", "Foo\n"), ("a.txt", "foo\n")]);
        let out = run(&s, json!({"pattern": "foo"})).unwrap();
        assert_eq!(out, "# a.txt\n*1|foo");
        let out = run(&s, json!({"pattern": "foo", "i": true})).unwrap();
        assert_eq!(out, "# a.txt\n*1|foo\n\n# b.txt\n*1|Foo");
    }

    #[test]
    fn t4_gitignore_honoured_by_default_hidden_included_git_dir_never() {
        let (_d, s) = tree(&[
            (".gitignore", "target/\n"),
            ("target/out.txt", "hit\n"),
            (".hidden/h.txt", "hit\n"),
            (".git/config", "hit\n"),
            ("src/s.txt", "hit\n"),
        ]);
        let out = run(&s, json!({"pattern": "hit"})).unwrap();
        assert_eq!(out, "# .hidden/h.txt\n*1|hit\n\n# src/s.txt\n*1|hit");
        let out = run(&s, json!({"pattern": "hit", "gitignore": false})).unwrap();
        assert!(
            out.contains("# target/out.txt") && !out.contains(".git/"),
            "{out}"
        );
    }

    #[test]
    fn t4_pages_of_20_files_with_skip() {
        let files: Vec<(String, String)> = (0..45)
            .map(|i| (format!("f{i:02}.txt"), "hit\n".to_string()))
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_d, s) = tree(&refs);
        let out = run(&s, json!({"pattern": "hit"})).unwrap();
        assert_eq!(out.matches("\n# ").count() + 1, 20);
        assert!(out.starts_with("# f00.txt"));
        assert!(out
            .ends_with("[45 files matched; showing files 1-20. Use skip: 20 for the next page.]"));
        let out = run(&s, json!({"pattern": "hit", "skip": 40})).unwrap();
        assert!(out.starts_with("# f40.txt"));
        assert!(
            out.ends_with("[45 files matched; showing files 41-45.]"),
            "{out}"
        );
        let out = run(&s, json!({"pattern": "hit", "skip": 50})).unwrap();
        assert_eq!(
            out,
            "skip 50 is past the last matching file: 45 file(s) matched."
        );
    }

    #[test]
    fn t4_twenty_matches_per_file_when_several_match() {
        let many: String = (1..=30).map(|i| format!("hit {i}\n")).collect();
        let (_d, s) = tree(&[("a.txt", &many), ("b.txt", "hit\n")]);
        let out = run(&s, json!({"pattern": "hit"})).unwrap();
        let a = out.split("\n\n").next().unwrap();
        assert_eq!(a.matches("\n*").count(), 20);
        assert!(a.contains("*20|hit 20") && !a.contains("21|"), "{a}");
        assert!(a.ends_with("[10 more matches in this file; search it alone to see up to 200]"));
    }

    #[test]
    fn t4_two_hundred_matches_when_one_file_matches() {
        let many: String = (1..=250).map(|i| format!("hit {i}\n")).collect();
        let (_d, s) = tree(&[("a.txt", &many)]);
        let out = run(&s, json!({"pattern": "hit"})).unwrap();
        assert_eq!(out.matches("\n*").count(), 200);
        assert!(
            out.contains("*200|hit 200\n[at least 1 more matches"),
            "{out}"
        );
    }

    #[test]
    fn t4_long_lines_are_cut_at_512_characters() {
        let long = format!("hit{}\n", "é".repeat(1000));
        let (_d, s) = tree(&[("a.txt", &long)]);
        let out = run(&s, json!({"pattern": "hit"})).unwrap();
        let line = out.lines().nth(1).unwrap();
        assert_eq!(line.chars().count(), "*1|".len() + 512 + 1);
        assert!(line.ends_with('…'));
    }

    #[test]
    fn t4_files_over_4_mb_and_binary_files_are_skipped() {
        let big = "hit\n".repeat(1_100_000);
        let (d, s) = tree(&[("big.txt", &big), ("small.txt", "hit\n")]);
        std::fs::write(d.path().join("bin.dat"), b"hit\x00\x01").unwrap();
        let out = run(&s, json!({"pattern": "hit"})).unwrap();
        assert_eq!(
            out,
            "# small.txt\n*1|hit\n\n[1 file(s) over 4 MB were skipped.]"
        );
    }

    #[test]
    fn t4_time_limit_gives_partial_results_and_a_notice() {
        let (d, _s) = tree(&[("a.txt", "hit\n")]);
        let query = SearchQuery {
            pattern: "hit".into(),
            case_insensitive: false,
            gitignore: true,
            skip: 0,
            time_limit: Duration::ZERO,
        };
        let out = search(d.path(), &[], &query).unwrap();
        assert!(
            out.contains("hit its 0 s time limit; results are partial"),
            "{out}"
        );
    }

    #[test]
    fn t4_paths_narrow_the_search_and_are_confined() {
        let (_d, s) = tree(&[("src/a.txt", "hit\n"), ("doc/b.txt", "hit\n")]);
        let out = run(&s, json!({"pattern": "hit", "paths": "doc"})).unwrap();
        assert_eq!(out, "# doc/b.txt\n*1|hit");
        let out = run(&s, json!({"pattern": "hit", "paths": ["src/a.txt", "doc"]})).unwrap();
        assert_eq!(out, "# doc/b.txt\n*1|hit\n\n# src/a.txt\n*1|hit");
        let e = run(&s, json!({"pattern": "hit", "paths": "/"})).unwrap_err();
        assert!(matches!(e, ToolError::OutsideWorkspace(_)), "{e}");
        let e = run(&s, json!({"pattern": "hit", "paths": "../"})).unwrap_err();
        assert!(matches!(e, ToolError::OutsideWorkspace(_)), "{e}");
        let e = run(&s, json!({"pattern": "hit", "paths": "nope"})).unwrap_err();
        assert!(matches!(e, ToolError::NotFound(_)), "{e}");
        let e = run(&s, json!({"pattern": "hit", "paths": "src/**/*.txt"})).unwrap_err();
        assert!(
            e.to_string()
                .contains("not glob patterns like `src/**/*.txt`"),
            "{e}"
        );
    }

    #[test]
    fn t7_invalid_regex_and_bad_arguments_are_tool_errors() {
        let (_d, s) = tree(&[("a.txt", "x\n")]);
        let e = run(&s, json!({"pattern": "fn ("})).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid arguments: invalid regex `fn (`"),
            "{e}"
        );
        assert!(!e.to_string().contains('\n'));
        let e = run(&s, json!({"pattern": "a\nb"})).unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments(_)), "{e}");
        let e = run(&s, json!({})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid arguments: search: missing field `pattern`"
        );
        let e = run(&s, json!({"pattern": "x", "skip": -1})).unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments(_)), "{e}");
        let e = run(&s, json!({"pattern": ""})).unwrap_err();
        assert!(e.to_string().contains("`pattern` is empty"));
    }

    #[test]
    fn t4_invalid_utf8_is_shown_lossily_and_no_match_says_so() {
        let (d, s) = tree(&[]);
        std::fs::write(d.path().join("a.txt"), b"hit \xff here\n").unwrap();
        let out = run(&s, json!({"pattern": "hit"})).unwrap();
        assert_eq!(out, "# a.txt\n*1|hit \u{fffd} here");
        let out = run(&s, json!({"pattern": "absent"})).unwrap();
        assert_eq!(out, "No matches for `absent`.");
    }
}
