//! The advisor's workspace tools through the registry, as the ToolExecutor calls them:
//! isolation of tool sessions (T1), confinement (T2) and bad input (T7) on temporary trees.

use std::path::Path;

use advisor::tools::{ToolError, ToolRegistry, ToolSession};
use serde_json::{json, Value};

fn write(root: &Path, name: &str, content: &[u8]) {
    let p = root.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=400).map(|i| format!("fn f{i}() {{}}\n")).collect();
    write(dir.path(), "src/lib.rs", lines.as_bytes());
    write(dir.path(), "README.md", b"# demo\n");
    dir
}

fn call(session: &ToolSession, tool: &str, args: Value) -> Result<String, ToolError> {
    let registry = ToolRegistry::workspace();
    let tool = registry.get(tool).expect("tool is registered");
    tool.run(&args, session)
}

#[test]
fn t1_registry_has_exactly_read_search_find_plus_advise() {
    let registry = ToolRegistry::workspace();
    assert_eq!(registry.names(), ["find", "read", "search"]);
    let schemas = registry.schemas_with_advise();
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["find", "read", "search", "advise", "check_in"]);
    for s in &schemas {
        assert!(
            s.description.len() > 80,
            "{} has a real description",
            s.name
        );
        assert_eq!(s.parameters["type"], "object", "{}", s.name);
        let text = s.parameters.to_string();
        assert!(!text.contains("null") && !text.contains("$ref"), "{text}");
        let props = s.parameters["properties"].as_object().unwrap();
        for (field, prop) in props {
            assert!(
                prop["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{}.{field} lacks a description",
                s.name
            );
        }
    }
    let search = &schemas[2].parameters;
    assert_eq!(search["required"], json!(["pattern"]));
    assert_eq!(search["properties"]["i"]["type"], "boolean");
    assert_eq!(search["properties"]["skip"]["type"], "integer");
    assert_eq!(search["properties"]["gitignore"]["default"], true);
    let find = &schemas[0].parameters;
    assert_eq!(find["properties"]["limit"]["maximum"], 200.0);
    assert_eq!(find["properties"]["timeout"]["minimum"], 0.5);
}

#[test]
fn t1_sp2_advisor_sessions_are_apart_and_a_read_always_shows_its_lines() {
    let dir = workspace();
    let a = ToolSession::for_primary("alpha", dir.path());
    let b = ToolSession::for_member("alpha", Some("db"), dir.path());
    assert_eq!(a.id(), "alpha-advisor");
    assert_eq!(b.id(), "alpha-advisor.db");
    let first = call(&a, "read", json!({"path": "src/lib.rs:1-10"})).unwrap();
    assert!(first.starts_with("1|fn f1() {}"));
    // The tool session keeps no record of what it showed (SP2: whether the lines are still
    // in an advisor's context is that context's to say), so the lines come every time.
    let again = call(&a, "read", json!({"path": "src/lib.rs:1-10"})).unwrap();
    assert_eq!(again, first);
    assert_eq!(
        call(&b, "read", json!({"path": "src/lib.rs:1-10"})).unwrap(),
        first
    );
}

/// Every bad input is an error text for the model, never a panic.
#[test]
fn t7_bad_input_is_always_a_tool_error() {
    let dir = workspace();
    let s = ToolSession::for_primary("p", dir.path());
    let cases: Vec<(&str, Value, &str)> = vec![
        ("read", json!({}), "missing field `path`"),
        ("read", json!({"path": ["a"]}), "invalid type"),
        ("read", json!(null), "JSON object"),
        ("read", json!({"path": "src/lib.rs:abc-"}), "does not exist"),
        (
            "read",
            json!({"path": "src/lib.rs:7-2"}),
            "bad selector `:7-2`",
        ),
        ("read", json!({"path": "src/lib.rs:0"}), "bad selector `:0`"),
        ("read", json!({"path": "src/nope.rs"}), "does not exist"),
        ("read", json!({"path": "src:1-5"}), "is a directory"),
        (
            "read",
            json!({"path": "../outside"}),
            "climbs above the workspace root",
        ),
        (
            "read",
            json!({"path": "/etc/passwd"}),
            "outside the workspace",
        ),
        ("read", json!({"path": "/"}), "filesystem root"),
        ("search", json!({"pattern": "fn ("}), "invalid regex"),
        ("search", json!({"pattern": 5}), "invalid type"),
        (
            "search",
            json!({"pattern": "x", "i": "yes"}),
            "invalid type",
        ),
        (
            "search",
            json!({"pattern": "x", "paths": "/"}),
            "filesystem root",
        ),
        (
            "search",
            json!({"pattern": "x", "paths": "/etc"}),
            "outside the workspace",
        ),
        (
            "find",
            json!({"paths": 3}),
            "a string or an array of strings",
        ),
        (
            "find",
            json!({"paths": "README.md/*"}),
            "is a file, not a directory",
        ),
        ("find", json!({"paths": "../**"}), "climbs above"),
        (
            "find",
            json!({"paths": "*", "limit": 1000}),
            "`limit` must be between 1 and 200",
        ),
    ];
    for (tool, args, expected) in cases {
        let err = call(&s, tool, args.clone()).expect_err(&format!("{tool} {args}"));
        let text = err.to_string();
        assert!(text.contains(expected), "{tool} {args}: {text}");
        assert!(!text.contains('\n'), "one line: {text}");
    }
}

#[test]
fn t3_invalid_utf8_is_shown_lossily() {
    let dir = workspace();
    write(dir.path(), "latin1.txt", b"caf\xe9\n");
    let s = ToolSession::for_primary("p", dir.path());
    assert_eq!(
        call(&s, "read", json!({"path": "latin1.txt"})).unwrap(),
        "1|caf\u{fffd}"
    );
    let found = call(&s, "search", json!({"pattern": "caf"})).unwrap();
    assert_eq!(found, "# latin1.txt\n*1|caf\u{fffd}");
}

#[test]
fn t3_t4_a_10_mb_file_is_read_in_pages_and_skipped_by_search() {
    let dir = workspace();
    let big: String = (1..=200_000)
        .map(|i| format!("row {i:06} {}\n", "x".repeat(40)))
        .collect();
    assert!(big.len() > 10_000_000);
    write(dir.path(), "big.log", big.as_bytes());
    let s = ToolSession::for_primary("p", dir.path());
    let page = call(&s, "read", json!({"path": "big.log"})).unwrap();
    assert!(page.starts_with("1|row 000001 "));
    assert!(
        page.ends_with("[199700 more lines in file. Use :301 to continue]"),
        "{page}"
    );
    let tail = call(&s, "read", json!({"path": "big.log:199999"})).unwrap();
    assert!(tail.starts_with("199999|row 199999") && tail.contains("200000|row 200000"));
    let found = call(&s, "search", json!({"pattern": "row 000001"})).unwrap();
    assert_eq!(
        found,
        "No matches for `row 000001`.\n\n[1 file(s) over 4 MB were skipped.]"
    );
}

#[cfg(unix)]
#[test]
fn t2_symlinks_out_of_the_root_and_loops_are_refused_and_never_walked() {
    use std::os::unix::fs::symlink;
    let dir = workspace();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.txt", b"token = hunter2\n");
    symlink(
        outside.path().join("secret.txt"),
        dir.path().join("leak.txt"),
    )
    .unwrap();
    symlink(outside.path(), dir.path().join("leakdir")).unwrap();
    symlink(dir.path().join("loop"), dir.path().join("loop")).unwrap();
    let s = ToolSession::for_primary("p", dir.path());

    let err = call(&s, "read", json!({"path": "leak.txt"})).unwrap_err();
    assert!(matches!(err, ToolError::OutsideWorkspace(_)), "{err}");
    assert!(
        err.to_string().contains("symlink that leads outside"),
        "{err}"
    );
    let err = call(&s, "read", json!({"path": "leakdir/secret.txt"})).unwrap_err();
    assert!(matches!(err, ToolError::OutsideWorkspace(_)), "{err}");
    let err = call(&s, "search", json!({"pattern": "x", "paths": "leakdir"})).unwrap_err();
    assert!(matches!(err, ToolError::OutsideWorkspace(_)), "{err}");
    let err = call(&s, "find", json!({"paths": "leakdir/*"})).unwrap_err();
    assert!(matches!(err, ToolError::OutsideWorkspace(_)), "{err}");
    let err = call(&s, "read", json!({"path": "loop"})).unwrap_err();
    assert!(err.to_string().contains("symlink loop"), "{err}");

    // A whole-workspace search or find does not follow the links.
    let found = call(&s, "search", json!({"pattern": "hunter2"})).unwrap();
    assert_eq!(found, "No matches for `hunter2`.");
    let listed = call(&s, "find", json!({"paths": "**/secret.txt"})).unwrap();
    assert_eq!(listed, "No files match `**/secret.txt`.");
}

#[test]
fn t2_paths_inside_the_root_may_be_absolute_or_use_dot_dot() {
    let dir = workspace();
    let s = ToolSession::for_primary("p", dir.path());
    let abs = dir.path().canonicalize().unwrap().join("README.md");
    let out = call(&s, "read", json!({"path": abs.to_str().unwrap()})).unwrap();
    assert_eq!(out, "1|# demo");
    let out = call(&s, "read", json!({"path": "src/../README.md"})).unwrap();
    assert_eq!(out, "1|# demo", "the same file by another path");
}
