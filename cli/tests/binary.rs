//! The `advisor` binary itself. Having an integration test makes cargo build the binary in
//! `cargo test --workspace`, where the library's integration tests, which run it, find it
//! beside their own executable.

use std::process::Command;

#[test]
fn the_binary_names_itself_and_its_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_advisor"))
        .arg("--version")
        .output()
        .expect("run advisor --version");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("advisor {}", env!("CARGO_PKG_VERSION"))
    );
}
