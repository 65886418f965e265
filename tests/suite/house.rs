//! The house rules a machine keeps: the product speaks of what it does and why, not of how
//! it was made; no source file grows past what a reader takes in (functions are kept short by
//! clippy's `too_many_lines`, set in `clippy.toml` and warned in both crates' roots); the
//! Supervisor's shell and the agent's stay short, the Supervisor type (its shell and every
//! part) stays within 900 code lines, its state is split by lifetime (a few fields), and `Members` lives outside `config/`. Each count is over the source as it is, so a
//! file that grows fails here.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of `text` before its first `#[cfg(test)]`.
fn lines_before_tests(text: &str) -> usize {
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .count()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a readable directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn the_supervisor_and_agent_shells_stay_under_400_lines() {
    for shell in ["src/actors/supervisor.rs", "src/actors/advisor_agent.rs"] {
        let lines = lines_before_tests(&read(&root().join(shell)));
        assert!(lines <= 400, "{shell}: {lines} non-test lines, over 400");
    }
}

#[test]
fn the_supervisor_keeps_its_state_in_at_most_8_fields() {
    let text = read(&root().join("src/actors/supervisor.rs"));
    let body = text
        .split("pub struct Supervisor {")
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .expect("src/actors/supervisor.rs declares struct Supervisor");
    let fields: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//") && line.contains(':'))
        .collect();
    assert!(!fields.is_empty(), "no fields read from struct Supervisor");
    assert!(
        fields.len() <= 8,
        "struct Supervisor has {} fields: {fields:?}",
        fields.len()
    );
}

/// Code lines as clippy's `too_many_lines` counts them: no blank line, no comment-only
/// line, nothing from the first `#[cfg(test)]` on.
fn code_lines_before_tests(text: &str) -> usize {
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .count()
}

/// The Supervisor type's files: the shell and every file of `src/actors/supervisor/` (each
/// an `impl Supervisor` or `impl Handler<…> for Supervisor`) but its tests.
fn supervisor_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("src/actors/supervisor.rs")];
    let mut parts = rust_files(&root().join("src/actors/supervisor"));
    parts.retain(|f| !f.ends_with("tests.rs"));
    parts.sort();
    files.extend(parts);
    files
}

#[test]
fn the_supervisor_type_is_at_most_900_code_lines() {
    let files = supervisor_files();
    assert!(files.len() > 2, "the shell and its parts: {files:?}");
    let counted: Vec<(String, usize)> = files
        .iter()
        .map(|f| {
            let shown = f.strip_prefix(root()).unwrap_or(f).display().to_string();
            (shown, code_lines_before_tests(&read(f)))
        })
        .collect();
    let total: usize = counted.iter().map(|(_, n)| n).sum();
    assert!(
        total <= 900,
        "the Supervisor is {total} code lines, over 900: {counted:?}"
    );
}

#[test]
fn the_supervisor_s_code_lines_leave_out_blanks_comments_and_tests() {
    let text =
        "//! doc\nuse a;\n\n/// b\nfn b() {\n    // c\n    d();\n}\n#[cfg(test)]\nmod tests {}\n";
    assert_eq!(code_lines_before_tests(text), 4);
}

#[test]
fn members_lives_outside_config_and_each_file_stays_under_900_lines() {
    assert!(
        !root().join("src/config/members/state.rs").exists(),
        "Members belongs in src/members/, not config/"
    );
    let files = rust_files(&root().join("src/members"));
    assert!(
        files.iter().any(|f| f.ends_with("mod.rs")),
        "src/members/ has Members"
    );
    for file in files {
        let text = read(&file);
        // A tests file counts whole.
        let lines = if file.ends_with("tests.rs") {
            text.lines().count()
        } else {
            lines_before_tests(&text)
        };
        assert!(lines <= 900, "{}: {lines} lines, over 900", file.display());
    }
}

/// Text files of the repository a user reads: sources, docs, scripts, manifests. Recorded
/// data (`tests/fixtures/`, the eval corpus) and build output are not the product's words.
fn product_files(root: &Path) -> Vec<PathBuf> {
    const SKIP: [&str; 6] = [
        "target",
        ".git",
        "node_modules",
        "fixtures",
        "corpus",
        "proptest-regressions",
    ];
    const TEXT: [&str; 10] = [
        "rs", "md", "sh", "toml", "ts", "js", "mjs", "py", "yml", "txt",
    ];
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable directory") {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !SKIP.contains(&name) {
                    dirs.push(path);
                }
            } else if path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| TEXT.contains(&e))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `issue 12`, `Issue 31's`, `issues 18`, `round 5`: history, which lives in the commits.
fn history_mentions(text: &str) -> Vec<String> {
    let pattern = regex::Regex::new(r"(?i)\b(issues?|round) #?[0-9]+\b").expect("a valid pattern");
    text.lines()
        .enumerate()
        .filter(|(_, line)| pattern.is_match(line))
        .map(|(n, line)| format!("{}: {}", n + 1, line.trim()))
        .collect()
}

#[test]
fn the_product_names_no_issue_or_round_of_its_making() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // This file names the shapes it looks for.
    let found: Vec<String> = product_files(root)
        .iter()
        .filter(|path| !path.ends_with("tests/suite/house.rs"))
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let shown = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string();
            history_mentions(&text)
                .into_iter()
                .map(move |line| format!("{shown}:{line}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "history in the product:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_history_check_sees_issue_and_round_mentions_and_leaves_round_trips() {
    let text = "Issue 31's benchmark\nas in round 6\nissues 18 and 19\na round trip\nround-robin\noh-my-pi #11133\n";
    assert_eq!(
        history_mentions(text),
        [
            "1: Issue 31's benchmark",
            "2: as in round 6",
            "3: issues 18 and 19"
        ]
    );
}

/// Lines of a source file a reader of the product goes through: all of a test file
/// (`tests.rs`, or under a `tests/` folder), else the lines before its `#[cfg(test)]` module.
fn product_lines(path: &Path, text: &str) -> usize {
    let test_file = path.file_name().is_some_and(|n| n == "tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests");
    if test_file {
        return text.lines().count();
    }
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .count()
}

#[test]
fn no_source_file_of_either_crate_is_over_900_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long: Vec<String> = Vec::new();
    for dir in [root.join("src"), root.join("cli/src")] {
        for path in product_files(&dir) {
            if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let lines = product_lines(&path, &text);
                if lines > 900 {
                    let shown = path
                        .strip_prefix(root)
                        .unwrap_or(&path)
                        .display()
                        .to_string();
                    long.push(format!("{shown}: {lines} lines"));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "files over 900 lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn a_file_s_lines_stop_at_its_tests_unless_it_is_a_test_file() {
    let text = "fn a() {}\n\n#[cfg(test)]\nmod tests {}\n";
    assert_eq!(product_lines(Path::new("src/a.rs"), text), 2);
    assert_eq!(product_lines(Path::new("src/a/tests.rs"), text), 4);
    assert_eq!(product_lines(Path::new("src/a/tests/b.rs"), text), 4);
}

#[test]
fn the_function_length_rule_is_clippy_s_at_80_lines_in_both_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = std::fs::read_to_string(root.join("clippy.toml")).expect("clippy.toml");
    assert!(config
        .lines()
        .any(|l| l.replace(' ', "") == "too-many-lines-threshold=80"));
    for crate_root in ["src/lib.rs", "cli/src/main.rs"] {
        let text = std::fs::read_to_string(root.join(crate_root)).expect("a crate root");
        assert!(
            text.contains("#![warn(clippy::too_many_lines)]"),
            "{crate_root} warns of long functions"
        );
    }
}
