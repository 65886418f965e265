//! What the end-to-end tests of real agents (pi, Claude Code, Codex CLI) need before they can
//! install anything: `npm` on `PATH`.

use std::process::{Command, Stdio};

/// True when `npm` runs. Without it the `what` tests skip with a message, except under CI
/// (`CI` set), where this panics: there they must run.
pub fn npm_or_skip(what: &str) -> bool {
    let npm = Command::new("npm")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !npm {
        assert!(
            std::env::var_os("CI").is_none(),
            "npm is needed for the {what} end-to-end tests (required in CI)"
        );
        eprintln!("skipping the {what} end-to-end tests: npm not found on PATH");
    }
    npm
}
