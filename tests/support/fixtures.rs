//! The recorded pi sessions vendored under `tests/fixtures/pi-sessions/` (MIT, licence
//! `LICENSE-pi-mono` beside them).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The path of the vendored recorded pi session `name`. The files are part of the
/// repository, so a missing one is a broken checkout and fails the test.
pub fn pi_fixture(name: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pi-sessions")
        .join(name);
    assert!(path.is_file(), "fixture {} is missing", path.display());
    Some(path)
}
