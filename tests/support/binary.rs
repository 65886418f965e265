//! Where the `advisor` command under test is. It is the binary of the workspace's other
//! package (`cli/`, `advisor-cli`), so cargo gives this package's tests no
//! `CARGO_BIN_EXE_advisor`; it builds it into the same target directory and profile as the
//! test or bench executable instead (for tests, when the workspace is tested; benches need it
//! built first). Benches include this file by its path.

use std::path::PathBuf;

/// The `advisor` binary of this build: `<target>/<profile>/advisor`, where the running test
/// or bench is `<target>/<profile>/deps/<name>-<hash>` (so `CARGO_TARGET_DIR`, `--target` and
/// the profile are whatever built this executable). Panics, saying how to build it, when the
/// binary is not there.
pub fn advisor_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the running test's own path");
    let binary = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join(format!("advisor{}", std::env::consts::EXE_SUFFIX)));
    match binary {
        Some(path) if path.is_file() => path,
        _ => panic!(
            "no `advisor` binary beside {}: it belongs to the workspace's `advisor-cli` \
             package, which `cargo test -p advisor` does not build; run `cargo test --workspace`, \
             and before the benches `cargo build --release -p advisor-cli`",
            exe.display()
        ),
    }
}
