//! Reading one WATCHDOG or imported file.

use std::io::ErrorKind;
use std::path::Path;

/// Why a file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Nothing at that path (skipped silently, W3).
    #[error("no such file")]
    Missing,
    /// Something other than a regular file, such as a directory (skipped silently).
    #[error("not a regular file")]
    NotAFile,
    /// The bytes are not UTF-8 (skipped with a warning).
    #[error("not valid UTF-8")]
    NotUtf8,
    /// Any other I/O failure, such as a permission error (skipped with a warning).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Reads a regular file (symlinks followed) as UTF-8 text. Blocking.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let metadata = std::fs::metadata(path).map_err(classify)?;
    if !metadata.is_file() {
        return Err(ReadError::NotAFile);
    }
    let bytes = std::fs::read(path).map_err(classify)?;
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8)
}

/// Folds "nothing there" errors into [`ReadError::Missing`].
fn classify(err: std::io::Error) -> ReadError {
    match err.kind() {
        ErrorKind::NotFound | ErrorKind::NotADirectory => ReadError::Missing,
        _ => ReadError::Io(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w3_read_classifies_missing_directory_and_binary() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(matches!(
            read_text(&root.join("none.md")),
            Err(ReadError::Missing)
        ));
        std::fs::write(root.join("file"), "x").unwrap();
        assert!(matches!(
            read_text(&root.join("file/below.md")),
            Err(ReadError::Missing)
        ));
        std::fs::create_dir(root.join("dir.md")).unwrap();
        assert!(matches!(
            read_text(&root.join("dir.md")),
            Err(ReadError::NotAFile)
        ));
        std::fs::write(root.join("bin.md"), [0xff, 0xfe, 0x00]).unwrap();
        assert!(matches!(
            read_text(&root.join("bin.md")),
            Err(ReadError::NotUtf8)
        ));
        std::fs::write(root.join("ok.md"), "héllo").unwrap();
        assert_eq!(read_text(&root.join("ok.md")).unwrap(), "héllo");
    }
}
