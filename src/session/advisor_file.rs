//! Where the advisor's transcript file goes (P9, G7), and which session paths are refused
//! (P9).
//!
//! oh-my-pi keeps a session's artifacts in a directory named after the session file without
//! its `.jsonl`; the advisor's own transcript is `__advisor.jsonl` in there. So
//! `…/sessions/<project>/<ts>_<id>.jsonl` gives `…/sessions/<project>/<ts>_<id>/__advisor.jsonl`,
//! which oh-my-pi's `omp stats` counts as an advisor transcript.
//!
//! A session path comes from outside (a host, a protocol client), so it is checked before
//! anything is created: it must name a `.jsonl` file (not `/`, `..`, `/dev/null`), a relative
//! one is taken from the session's working directory (never the server's), it may not climb
//! with `..` or point into `/dev`, `/proc` or `/sys`, an existing session file must be a
//! regular file, and a symlink where the artifacts directory or the transcript file goes is
//! refused (the file is also opened without following links, so a link made later is refused
//! too). Blocking (metadata): call it off actor threads.

use std::path::{Component, Path, PathBuf};

/// The transcript file's name inside the session's artifacts directory.
pub const ADVISOR_FILE_NAME: &str = "__advisor.jsonl";

/// Why no transcript file is kept for a session path; each is one notice to the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdvisorFilePathError {
    /// The path does not name a session file (`/`, `..`, `/dev/null`, no `.jsonl`), or
    /// something other than a regular file is there.
    #[error("`{0}` is not a regular session file path")]
    NotASessionFile(String),
    /// The path climbs out with `..`, or lies under `/dev`, `/proc` or `/sys`, or the
    /// artifacts directory is a link elsewhere.
    #[error("`{0}` is outside where a session file should be")]
    Outside(String),
    /// A symlink sits where the transcript file goes; it is never followed.
    #[error("a symlink is at the audit path `{0}`")]
    Symlink(String),
}

/// The advisor transcript file of the session file `session_file` (P9): a relative path is
/// taken from `cwd`, the session's working directory. Checked as the module docs say; the
/// directory is not created here.
pub fn advisor_file_path(session_file: &Path, cwd: &Path) -> Result<PathBuf, AdvisorFilePathError> {
    let shown = session_file.display().to_string();
    let not_session = || AdvisorFilePathError::NotASessionFile(shown.clone());
    let outside = || AdvisorFilePathError::Outside(shown.clone());
    let name = session_file
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(not_session)?;
    let stem = name.strip_suffix(".jsonl").ok_or_else(not_session)?;
    if stem.is_empty() || stem == "." || stem == ".." {
        return Err(not_session());
    }
    if session_file
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(outside());
    }
    let absolute = if session_file.is_absolute() {
        session_file.to_path_buf()
    } else {
        cwd.join(session_file)
    };
    if ["/dev", "/proc", "/sys"]
        .iter()
        .any(|root| absolute.starts_with(root))
    {
        return Err(outside());
    }
    match std::fs::metadata(&absolute) {
        Ok(meta) if !meta.is_file() => return Err(not_session()),
        _ => {}
    }
    let dir = absolute.with_file_name(stem);
    if let Ok(meta) = std::fs::symlink_metadata(&dir) {
        if meta.file_type().is_symlink() {
            return Err(outside());
        }
        if !meta.is_dir() {
            return Err(not_session());
        }
    }
    let file = dir.join(ADVISOR_FILE_NAME);
    if let Ok(meta) = std::fs::symlink_metadata(&file) {
        if meta.file_type().is_symlink() {
            return Err(AdvisorFilePathError::Symlink(file.display().to_string()));
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p9_the_transcript_is_in_the_session_artifacts_directory() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("2026-01-01T00-00-00Z_abc.jsonl");
        assert_eq!(
            advisor_file_path(&session, Path::new("/elsewhere")).unwrap(),
            dir.path().join("2026-01-01T00-00-00Z_abc/__advisor.jsonl")
        );
        // Relative: from the session's working directory, not the process's.
        assert_eq!(
            advisor_file_path(Path::new("s/run.jsonl"), dir.path()).unwrap(),
            dir.path().join("s/run/__advisor.jsonl")
        );
    }

    #[test]
    fn v4_paths_that_are_not_session_files_are_refused() {
        let cwd = tempfile::tempdir().unwrap();
        for bad in [
            "/",
            "..",
            ".",
            "/dev/null",
            "/tmp/notes.txt",
            "/tmp/.jsonl",
            "",
        ] {
            let err = advisor_file_path(Path::new(bad), cwd.path()).unwrap_err();
            assert!(
                matches!(err, AdvisorFilePathError::NotASessionFile(_)),
                "{bad}: {err}"
            );
            assert_eq!(
                err.to_string(),
                format!("`{bad}` is not a regular session file path")
            );
        }
        for bad in [
            "../up.jsonl",
            "a/../../b.jsonl",
            "/dev/shm/s.jsonl",
            "/proc/1/x.jsonl",
        ] {
            let err = advisor_file_path(Path::new(bad), cwd.path()).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("`{bad}` is outside where a session file should be")
            );
        }
        // A directory named like a session file is not one.
        std::fs::create_dir(cwd.path().join("d.jsonl")).unwrap();
        let err = advisor_file_path(Path::new("d.jsonl"), cwd.path()).unwrap_err();
        assert!(matches!(err, AdvisorFilePathError::NotASessionFile(_)));
    }

    #[test]
    fn v4_a_symlink_at_the_audit_path_or_for_the_directory_is_refused() {
        let cwd = tempfile::tempdir().unwrap();
        let target = cwd.path().join("target.jsonl");
        std::fs::write(&target, "").unwrap();
        std::fs::create_dir(cwd.path().join("s")).unwrap();
        let link = cwd.path().join("s").join(ADVISOR_FILE_NAME);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = advisor_file_path(Path::new("s.jsonl"), cwd.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("a symlink is at the audit path `{}`", link.display())
        );
        std::os::unix::fs::symlink("/etc", cwd.path().join("t")).unwrap();
        let err = advisor_file_path(Path::new("t.jsonl"), cwd.path()).unwrap_err();
        assert!(matches!(err, AdvisorFilePathError::Outside(_)), "{err}");
    }
}
