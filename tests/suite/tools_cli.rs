//! `advisor tool NAME --root DIR --args JSON` from the outside: what a user sees.

use std::path::Path;
use std::process::{Command, Output};

fn advisor(root: &Path, tool: &str, args: &str) -> Output {
    Command::new(crate::support::advisor_bin())
        .args(["tool", tool, "--root"])
        .arg(root)
        .args(["--args", args])
        .output()
        .expect("the advisor binary runs")
}

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "fn main() {\n    run();\n}\n",
    )
    .unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn t3_tool_read_prints_what_the_model_sees() {
    let dir = tree();
    let out = advisor(dir.path(), "read", r#"{"path":"src/main.rs:2"}"#);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "2|    run();\n3|}\n");
    assert!(out.stderr.is_empty());
}

#[test]
fn t4_tool_search_and_t5_find_print_grouped_results() {
    let dir = tree();
    let out = advisor(dir.path(), "search", r#"{"pattern":"RUN","i":true}"#);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        "# src/main.rs\n 1|fn main() {\n*2|    run();\n 3|}\n"
    );
    let out = advisor(dir.path(), "find", r#"{"paths":"**/*.rs"}"#);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "# src/\nmain.rs\n");
}

#[test]
fn t7_tool_error_is_one_stderr_line_and_exit_1() {
    let dir = tree();
    let out = advisor(dir.path(), "read", r#"{"path":"/etc/passwd"}"#);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(
        err.starts_with("advisor: `/etc/passwd` is outside the workspace"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn l5_bad_json_and_unknown_tool_are_one_stderr_line_and_exit_1() {
    let dir = tree();
    let out = advisor(dir.path(), "read", "{path:");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("advisor: --args is not valid JSON"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);

    let out = advisor(dir.path(), "write", "{}");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("unknown tool `write`"), "{err}");

    let out = advisor(&dir.path().join("missing"), "read", "{}");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("is not a directory"));
}

#[test]
fn t1_tool_schema_prints_what_the_model_is_offered() {
    let dir = tree();
    let out = Command::new(crate::support::advisor_bin())
        .args(["tool", "search", "--schema", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["name"], "search");
    assert_eq!(
        schema["parameters"]["required"],
        serde_json::json!(["pattern"])
    );
}
