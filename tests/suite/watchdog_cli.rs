//! `advisor watchdog` as a user runs it (L4, L5). The environment is set on the child
//! process only.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn run(home: &Path, args: &[&str], agent_env: Option<&Path>) -> Output {
    let mut command = Command::new(crate::support::advisor_bin());
    command
        .arg("watchdog")
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env_remove("PI_CODING_AGENT_DIR");
    if let Some(dir) = agent_env {
        command.env("PI_CODING_AGENT_DIR", dir);
    }
    command.output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn l4_prints_exactly_the_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    fs::create_dir_all(home.join(".omp/agent")).unwrap();
    fs::create_dir_all(home.join("proj")).unwrap();
    fs::write(home.join(".omp/agent/WATCHDOG.md"), "user rules").unwrap();
    fs::write(home.join("proj/WATCHDOG.md"), "project rules @extra.md").unwrap();
    fs::write(home.join("proj/extra.md"), "plus extra").unwrap();

    let output = run(home, &["--cwd", "proj"], None);
    assert!(output.status.success());
    assert_eq!(
        stdout(&output),
        "Especially pay attention to:\n<attention>\nuser rules\n</attention>\n\n\
         Especially pay attention to:\n<attention>\nproject rules plus extra\n</attention>\n"
    );
    assert!(output.stderr.is_empty());
}

#[test]
fn l4_agent_dir_flag_and_environment_variable() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    for (name, text) in [("from-env", "env user"), ("from-flag", "flag user")] {
        fs::create_dir_all(home.join(name)).unwrap();
        fs::write(home.join(name).join("WATCHDOG.md"), text).unwrap();
    }
    let env_only = run(home, &[], Some(&home.join("from-env")));
    assert!(stdout(&env_only).contains("env user"));
    let flag = run(
        home,
        &["--agent-dir", "~/from-flag"],
        Some(&home.join("from-env")),
    );
    assert!(stdout(&flag).contains("flag user"));
    assert!(!stdout(&flag).contains("env user"));
}

#[test]
fn l4_nothing_found_prints_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &[], None);
    assert!(output.status.success());
    assert!(output.stdout.is_empty());
}

#[test]
fn l4_warnings_go_to_standard_error_only() {
    let dir = tempfile::tempdir().unwrap();
    // The temporary directory's name starts with a dot (a hidden owner, W2).
    let home = &dir.path().join("home");
    fs::create_dir(home).unwrap();
    fs::write(home.join("WATCHDOG.md"), [0xff]).unwrap();
    let output = run(home, &[], None);
    assert!(output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("UTF-8"), "{stderr}");
}

#[test]
fn l5_missing_cwd_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["--cwd", "nowhere"], None);
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("nowhere"));
}

#[test]
fn p8_l4_prints_the_project_instructions_before_the_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    fs::create_dir_all(home.join("proj/.git")).unwrap();
    fs::write(home.join("proj/AGENTS.md"), "Keep the public API stable.").unwrap();
    fs::write(home.join("proj/WATCHDOG.md"), "project rules").unwrap();
    let output = run(home, &["--cwd", "proj"], None);
    assert!(output.status.success());
    let text = stdout(&output);
    let file = format!(
        "<file path=\"{}\">\nKeep the public API stable.\n</file>\n</project-context>\n\n\
         Especially pay attention to:\n<attention>\nproject rules\n</attention>\n",
        home.join("proj/AGENTS.md").display()
    );
    assert!(text.starts_with("<project-context>\n"), "{text}");
    assert!(text.ends_with(&file), "{text}");
    // Only instruction files, no WATCHDOG.md: they are printed all the same.
    fs::remove_file(home.join("proj/WATCHDOG.md")).unwrap();
    let text = stdout(&run(home, &["--cwd", "proj"], None));
    assert!(text.contains("Keep the public API stable."), "{text}");
}
