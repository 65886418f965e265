//! House targets for the Supervisor and the members it runs: its shell and the agent's stay
//! short, its state is split by lifetime (a few fields), and `Members`' files stay under the
//! file cap. Each count is over the source as it is, so a file that grows fails here.

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
