//! The `read` tool (T3): numbered lines of a workspace file, or a directory's entries.
//!
//! - `path` may end in a selector: `:50` (from line 50), `:50-200` (lines 50 to 200),
//!   `:50+150` (150 lines from line 50). A suffix after the last `:` made only of digits, `-`
//!   and `+` is taken as a selector and must be well formed; any other suffix is part of the
//!   file name.
//! - Without an end, 300 lines are shown. One call shows at most 3,000 lines or 50 KB; a line
//!   longer than the whole budget is cut. Lines come as `N|text`.
//! - A result that stops before the end of the file (default length or a cap) ends with
//!   `[N more lines in file. Use :K to continue]`.
//! - A directory lists its entries, sorted by name, sub-directories with a trailing `/` and
//!   symlinks with a trailing `@` (at most 1,000 entries).
//! - Binary files (a NUL byte in the first 8 KB) are refused. Invalid UTF-8 is shown lossily:
//!   each bad byte sequence becomes `�`. Files over 64 MB are refused (use `search`).
//! - The tool keeps no record of what it showed: whether an earlier result is still in the
//!   advisor's context is the context's to say (SP2, `review::rereads`), so a result that
//!   stale-result eviction (P4) or a compaction removed is never pointed at. What `read`
//!   gives for that is its [`WorkspaceTool::fingerprint`]: the size and modification time of
//!   the file or directory it would show.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::model::ToolSchema;
use crate::regular_file::{self, FileError};
use crate::tools::confine::{self, Confined};
use crate::tools::{args, walk, ToolError, ToolSession, WorkspaceTool};

/// The tool's name.
pub const NAME: &str = "read";
/// Lines shown when the selector gives no end.
pub const DEFAULT_LINES: usize = 300;
/// Most lines one call shows.
pub const MAX_LINES: usize = 3_000;
/// Most bytes of output one call shows.
pub const MAX_BYTES: usize = 50 * 1024;
/// Most entries shown for a directory.
pub const MAX_DIR_ENTRIES: usize = 1_000;
/// Largest file `read` opens.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// How much of the start of a file is checked for a NUL byte.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// The description the model is offered, from `config/prompts/tool-read.md`.
const DESCRIPTION: &str = include_str!("../../config/prompts/tool-read.md").trim_ascii_end();

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// File or directory, relative to the workspace root, optionally followed by a line
    /// selector: `:50`, `:50-200` or `:50+150`.
    pub path: String,
}

/// Which lines to show: 1-based `start`, inclusive `end` when given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selector {
    /// First line, from 1.
    pub start: usize,
    /// Last line, inclusive; `None` for the default length.
    pub end: Option<usize>,
}

const SELECTOR_HELP: &str =
    "use :50 (from line 50), :50-200 (lines 50 to 200) or :50+150 (150 lines from line 50)";

/// Splits a trailing selector off `input`. A suffix after the last `:` that consists only of
/// digits, `-` and `+` is a selector and must parse; any other suffix belongs to the path.
pub fn split_selector(input: &str) -> Result<(&str, Option<Selector>), ToolError> {
    let Some(idx) = input.rfind(':') else {
        return Ok((input, None));
    };
    let (path, suffix) = (&input[..idx], &input[idx + 1..]);
    let selector_like = suffix
        .chars()
        .all(|c| c.is_ascii_digit() || c == '-' || c == '+');
    if !selector_like {
        return Ok((input, None));
    }
    let bad = |why: &str| {
        ToolError::InvalidArguments(format!("bad selector `:{suffix}`{why}; {SELECTOR_HELP}"))
    };
    let number = |s: &str| s.parse::<usize>().map_err(|_| bad(""));
    let selector = if let Some((a, b)) = suffix.split_once('-') {
        let (start, end) = (number(a)?, number(b)?);
        if end < start {
            return Err(bad(" (the range ends before it starts)"));
        }
        Selector {
            start,
            end: Some(end),
        }
    } else if let Some((a, b)) = suffix.split_once('+') {
        let (start, count) = (number(a)?, number(b)?);
        if count == 0 {
            return Err(bad(" (asks for 0 lines)"));
        }
        Selector {
            start,
            end: Some(start.saturating_add(count - 1)),
        }
    } else {
        Selector {
            start: number(suffix)?,
            end: None,
        }
    };
    if selector.start == 0 {
        return Err(bad(" (lines are numbered from 1)"));
    }
    if path.is_empty() {
        return Err(ToolError::InvalidArguments(format!(
            "`{input}` has a selector but no path"
        )));
    }
    Ok((path, Some(selector)))
}

/// The `read` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadTool;

impl WorkspaceTool for ReadTool {
    fn name(&self) -> &'static str {
        NAME
    }

    fn schema(&self) -> ToolSchema {
        args::schema_of::<ReadArgs>(NAME, DESCRIPTION)
    }

    fn run(&self, args: &Value, session: &ToolSession) -> Result<String, ToolError> {
        let args: ReadArgs = args::parse(NAME, args)?;
        read(session, &args.path)
    }

    fn fingerprint(&self, args: &Value, session: &ToolSession) -> Option<u64> {
        let args: ReadArgs = args::parse(NAME, args).ok()?;
        let root = confine::canonical_root(session.root()).ok()?;
        let (path, _) = split_selector(args.path.trim()).ok()?;
        let target = confine::resolve(&root, path).ok()?;
        let meta = std::fs::metadata(&target.path).ok()?;
        Some(walk::stat_hash(&target.path, Some(&meta)))
    }
}

/// Runs `read` for `path_arg` (path plus optional selector) in `session`.
pub fn read(session: &ToolSession, path_arg: &str) -> Result<String, ToolError> {
    if path_arg.trim().is_empty() {
        return Err(ToolError::InvalidArguments(
            "`path` is empty; give a file or directory relative to the workspace root".into(),
        ));
    }
    let root = confine::canonical_root(session.root())?;
    let (path, selector) = split_selector(path_arg.trim())?;
    let target = confine::resolve(&root, path)?;
    let meta =
        std::fs::metadata(&target.path).map_err(|e| confine::io_error(&target.display, &e))?;
    if meta.is_dir() {
        if selector.is_some() {
            return Err(ToolError::InvalidArguments(format!(
                "`{}` is a directory; line selectors apply to files (read `{}` without a selector to list it)",
                target.display, target.display
            )));
        }
        return list_dir(&target);
    }
    if !meta.is_file() {
        return Err(ToolError::Failed(format!(
            "`{}` is not a regular file",
            target.display
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ToolError::Failed(format!(
            "`{}` is {} MB, too large to read; use search to find the lines you need",
            target.display,
            meta.len() / (1024 * 1024)
        )));
    }
    // The metadata said "regular file"; the open checks it again on the opened file, so a
    // path swapped for a FIFO in between cannot block, and no more than the cap is read.
    let cap = usize::try_from(MAX_FILE_BYTES).unwrap_or(usize::MAX);
    let bytes = match regular_file::read_bytes_capped(&target.path, cap) {
        Ok(capped) if !capped.truncated => capped.content,
        Ok(_) => {
            return Err(ToolError::Failed(format!(
                "`{}` grew past {} MB while it was read; use search to find the lines you need",
                target.display,
                MAX_FILE_BYTES / (1024 * 1024)
            )))
        }
        Err(FileError::Io(e)) => return Err(confine::io_error(&target.display, &e)),
        Err(e) => return Err(ToolError::Failed(format!("`{}`: {e}", target.display))),
    };
    render_file(&target, &bytes, selector)
}

/// Renders the selected lines of a file's `bytes`.
pub fn render_file(
    target: &Confined,
    bytes: &[u8],
    selector: Option<Selector>,
) -> Result<String, ToolError> {
    let sniff = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    if sniff.contains(&0) {
        return Err(ToolError::Failed(format!(
            "`{}` is a binary file ({} bytes); read shows text files only",
            target.display,
            bytes.len()
        )));
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.is_empty() {
        return Ok(format!("`{}` is empty", target.display));
    }
    let lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let total = lines.len();
    let start = selector.map_or(1, |s| s.start);
    if start > total {
        return Err(ToolError::Failed(format!(
            "`{}` has {total} lines; line {start} is past the end",
            target.display
        )));
    }
    let explicit_end = selector.and_then(|s| s.end);
    let wanted_end = explicit_end
        .unwrap_or(start.saturating_add(DEFAULT_LINES - 1))
        .min(total);
    let end_cap = wanted_end.min(start.saturating_add(MAX_LINES - 1));

    let mut out = String::new();
    let mut shown_end = start - 1;
    for (idx, raw) in lines.iter().enumerate().take(end_cap).skip(start - 1) {
        let number = idx + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let text = String::from_utf8_lossy(raw);
        let prefix = format!("{number}|");
        let needed = prefix.len() + text.len() + 1;
        if out.len() + needed > MAX_BYTES {
            if shown_end < start {
                // A single line larger than the whole budget: show its head.
                let room = MAX_BYTES.saturating_sub(prefix.len() + 64);
                let cut = floor_char_boundary(&text, room);
                out.push_str(&prefix);
                out.push_str(&text[..cut]);
                out.push_str(&format!(" … [line cut: {} bytes]\n", text.len()));
                shown_end = number;
            }
            break;
        }
        out.push_str(&prefix);
        out.push_str(&text);
        out.push('\n');
        shown_end = number;
    }

    let cut_short = shown_end < wanted_end || (explicit_end.is_none() && shown_end < total);
    if cut_short && shown_end < total {
        out.push_str(&format!(
            "\n[{} more lines in file. Use :{} to continue]\n",
            total - shown_end,
            shown_end + 1
        ));
    }
    Ok(out.trim_end_matches('\n').to_string())
}

/// Largest index `<= max` that is a char boundary of `s`.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    let mut i = max.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Lists a directory: names sorted, `/` after sub-directories, `@` after symlinks.
fn list_dir(target: &Confined) -> Result<String, ToolError> {
    let entries =
        std::fs::read_dir(&target.path).map_err(|e| confine::io_error(&target.display, &e))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            match entry.file_type() {
                Ok(t) if t.is_dir() => name.push('/'),
                Ok(t) if t.is_symlink() => name.push('@'),
                _ => {}
            }
            name
        })
        .collect();
    if names.is_empty() {
        return Ok(format!("`{}` is an empty directory", target.display));
    }
    names.sort_unstable();
    let total = names.len();
    let mut out = names
        .into_iter()
        .take(MAX_DIR_ENTRIES)
        .collect::<Vec<_>>()
        .join("\n");
    if total > MAX_DIR_ENTRIES {
        out.push_str(&format!(
            "\n\n[{} more entries not shown; use find with a pattern to narrow]",
            total - MAX_DIR_ENTRIES
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    fn session_with(files: &[(&str, &[u8])]) -> (tempfile::TempDir, ToolSession) {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        let s = ToolSession::for_primary("p1", dir.path());
        (dir, s)
    }

    fn run(s: &ToolSession, path: &str) -> Result<String, ToolError> {
        ReadTool.run(&json!({ "path": path }), s)
    }

    #[test]
    fn t3_selectors_parse() {
        let sel = |s| split_selector(s).unwrap().1.unwrap();
        assert_eq!(
            sel("a:50"),
            Selector {
                start: 50,
                end: None
            }
        );
        assert_eq!(
            sel("a:50-200"),
            Selector {
                start: 50,
                end: Some(200)
            }
        );
        assert_eq!(
            sel("a:50+150"),
            Selector {
                start: 50,
                end: Some(199)
            }
        );
        assert_eq!(split_selector("a.rs").unwrap(), ("a.rs", None));
        assert_eq!(split_selector("c:/x.rs").unwrap(), ("c:/x.rs", None));
        for bad in [
            "a:0", "a:5-", "a:-5", "a:9-3", "a:4+0", "a:1-2-3", "a:", ":5",
        ] {
            let e = split_selector(bad).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{bad}: {e}");
        }
        let e = split_selector("a:9-3").unwrap_err().to_string();
        assert!(
            e.contains("bad selector `:9-3`") && e.contains(":50-200"),
            "{e}"
        );
    }

    #[test]
    fn t3_default_is_300_numbered_lines_with_a_continuation_hint() {
        let text = numbered(1000);
        let (_d, s) = session_with(&[("f.txt", text.as_bytes())]);
        let out = run(&s, "f.txt").unwrap();
        assert!(out.starts_with("1|line 1\n2|line 2\n"));
        assert!(out.contains("\n300|line 300\n"));
        assert!(!out.contains("301|"));
        assert!(
            out.ends_with("[700 more lines in file. Use :301 to continue]"),
            "{out}"
        );
    }

    #[test]
    fn t3_ranges_and_counts() {
        let text = numbered(1000);
        let (_d, s) = session_with(&[("f.txt", text.as_bytes())]);
        let out = run(&s, "f.txt:50-52").unwrap();
        assert_eq!(out, "50|line 50\n51|line 51\n52|line 52");
        let out = run(&s, "f.txt:60+2").unwrap();
        assert_eq!(out, "60|line 60\n61|line 61");
        let out = run(&s, "f.txt:990").unwrap();
        assert!(
            out.starts_with("990|line 990\n") && out.ends_with("1000|line 1000"),
            "{out}"
        );
        let e = run(&s, "f.txt:1001").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`f.txt` has 1000 lines; line 1001 is past the end"
        );
    }

    #[test]
    fn t3_read_caps_at_3000_lines() {
        let text = numbered(5000);
        let (_d, s) = session_with(&[("f.txt", text.as_bytes())]);
        let out = run(&s, "f.txt:1-5000").unwrap();
        assert!(out.contains("\n3000|line 3000\n"));
        assert!(!out.contains("3001|"));
        assert!(
            out.ends_with("[2000 more lines in file. Use :3001 to continue]"),
            "{out}"
        );
    }

    #[test]
    fn t3_read_caps_at_50_kb() {
        let line = "x".repeat(99);
        let text: String = (0..2000).map(|_| format!("{line}\n")).collect();
        let (_d, s) = session_with(&[("f.txt", text.as_bytes())]);
        let out = run(&s, "f.txt:1-2000").unwrap();
        let body = out.split("\n\n[").next().unwrap();
        assert!(body.len() <= MAX_BYTES, "{}", body.len());
        let shown = body.lines().count();
        assert!(shown > 400 && shown < 520, "{shown}");
        assert!(out.ends_with(&format!(
            "[{} more lines in file. Use :{} to continue]",
            2000 - shown,
            shown + 1
        )));
    }

    #[test]
    fn t3_a_line_longer_than_the_budget_is_cut() {
        let text = format!("{}\nsecond\n", "é".repeat(40_000));
        let (_d, s) = session_with(&[("f.txt", text.as_bytes())]);
        let out = run(&s, "f.txt").unwrap();
        assert!(out.starts_with("1|éé"));
        assert!(
            out.contains("[line cut: 80000 bytes]"),
            "{}",
            &out[out.len() - 200..]
        );
        assert!(out.ends_with("[1 more lines in file. Use :2 to continue]"));
        assert!(out.len() <= MAX_BYTES + 100);
    }

    #[test]
    fn t3_explicit_range_fully_shown_has_no_hint() {
        let text = numbered(10);
        let (_d, s) = session_with(&[("f.txt", text.as_bytes())]);
        assert_eq!(run(&s, "f.txt:2-3").unwrap(), "2|line 2\n3|line 3");
        assert_eq!(run(&s, "f.txt:9-50").unwrap(), "9|line 9\n10|line 10");
    }

    #[test]
    fn t3_crlf_invalid_utf8_and_empty_files() {
        let (_d, s) = session_with(&[
            ("crlf.txt", b"a\r\nb\r\n"),
            ("bad.txt", b"ok \xff\xfe end\n"),
            ("empty.txt", b""),
        ]);
        assert_eq!(run(&s, "crlf.txt").unwrap(), "1|a\n2|b");
        assert_eq!(run(&s, "bad.txt").unwrap(), "1|ok \u{fffd}\u{fffd} end");
        assert_eq!(run(&s, "empty.txt").unwrap(), "`empty.txt` is empty");
    }

    #[test]
    fn t3_binary_files_are_refused() {
        let (_d, s) = session_with(&[("b.bin", b"\x7fELF\x00\x01\x02")]);
        let e = run(&s, "b.bin").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`b.bin` is a binary file (7 bytes); read shows text files only"
        );
    }

    #[test]
    fn t3_directories_list_their_entries() {
        let (d, s) = session_with(&[("src/a.rs", b"x"), ("src/b/c.rs", b"y"), (".hidden", b"z")]);
        assert_eq!(run(&s, "src").unwrap(), "a.rs\nb/");
        assert_eq!(run(&s, ".").unwrap(), ".hidden\nsrc/");
        let e = run(&s, "src:5").unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        std::fs::create_dir(d.path().join("empty")).unwrap();
        assert_eq!(run(&s, "empty").unwrap(), "`empty` is an empty directory");
    }

    #[test]
    fn sp2_read_shows_its_lines_every_time_and_fingerprints_size_and_mtime() {
        let text = numbered(500);
        let (d, s) = session_with(&[("f.txt", text.as_bytes()), ("src/a.rs", b"x")]);
        let print = |args: Value| ReadTool.fingerprint(&args, &s);
        // The tool itself never claims the lines are already in the context: that is the
        // context's to say (SP2), so an evicted result can never be pointed at.
        assert!(run(&s, "f.txt:10-20").unwrap().starts_with("10|"));
        assert!(run(&s, "f.txt:12-18").unwrap().starts_with("12|"));
        assert!(run(&s, "f.txt:10-20").unwrap().starts_with("10|"));
        let before = print(json!({"path": "f.txt:10-20"})).expect("a file is fingerprinted");
        assert_eq!(print(json!({"path": "f.txt:10-20"})), Some(before));
        assert_eq!(
            print(json!({"path": "f.txt"})),
            Some(before),
            "the selector is the arguments' business, not the file's"
        );
        // A changed size changes the fingerprint.
        std::fs::write(d.path().join("f.txt"), numbered(501)).unwrap();
        let grown = print(json!({"path": "f.txt"})).unwrap();
        assert_ne!(grown, before);
        // The same size with a new modification time changes it too.
        let file = std::fs::File::options()
            .write(true)
            .open(d.path().join("f.txt"))
            .unwrap();
        file.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(7))
            .unwrap();
        assert_ne!(print(json!({"path": "f.txt"})).unwrap(), grown);
        // A directory is fingerprinted by its own metadata; bad arguments are not.
        assert!(print(json!({"path": "src"})).is_some());
        assert_eq!(print(json!({"path": "nope.txt"})), None);
        assert_eq!(print(json!({"path": "../outside"})), None);
        assert_eq!(print(json!({})), None);
    }

    #[test]
    fn t7_bad_input_is_a_tool_error() {
        let (_d, s) = session_with(&[("f.txt", b"x\n")]);
        let e = ReadTool.run(&json!({}), &s).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid arguments: read: missing field `path`"
        );
        let e = ReadTool.run(&json!({"path": 3}), &s).unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments(_)));
        let e = run(&s, "").unwrap_err();
        assert!(e.to_string().contains("`path` is empty"));
        let e = run(&s, "nope.txt").unwrap_err();
        assert!(matches!(e, ToolError::NotFound(_)));
    }
}
