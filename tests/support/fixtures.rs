//! The shared pi session fixtures (`../shared/fixtures/pi-sessions/` beside the crate).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The recorded pi session `name`, or `None` (the caller skips) when the shared fixtures are
/// not checked out. Under CI (`CI` set) a missing fixture fails the test instead.
pub fn pi_fixture(name: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/pi-sessions")
        .join(name);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "fixture {} is missing (required in CI)",
        path.display()
    );
    eprintln!("skipping: fixture {} not found", path.display());
    None
}
