//! Reading one WATCHDOG or imported file: regular files only (never a wait on a FIFO), at
//! most [`MAX_FILE_BYTES`] of each.

use std::path::{Path, PathBuf};

use crate::regular_file::{clip, read_text_capped, Capped, FileError, SHOWN_CHARS};

/// The most of one WATCHDOG file (or import) that is used: 256 KiB; the rest is cut with a
/// warning (W6).
pub const MAX_FILE_BYTES: usize = 256 * 1024;

/// The most of all watchdog content of one load: 1 MiB; the rest is left out with one
/// warning (W6).
pub const MAX_TOTAL_BYTES: usize = 1 << 20;

/// Why a file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Nothing at that path (skipped silently, W3).
    #[error("no such file")]
    Missing,
    /// A directory (skipped silently).
    #[error("not a regular file")]
    NotAFile,
    /// A FIFO, a device, a socket: refused at once, never waited on (skipped with a
    /// warning).
    #[error("not a regular file ({0})")]
    Special(&'static str),
    /// The bytes are not UTF-8 (skipped with a warning).
    #[error("not valid UTF-8")]
    NotUtf8,
    /// An import of a project file that would leave its project (left literal with a
    /// warning, W6 security).
    #[error("a project WATCHDOG file may only import files inside {}", clip(&.root.display().to_string(), SHOWN_CHARS))]
    Outside {
        /// The directory imports must stay in.
        root: PathBuf,
    },
    /// A project WATCHDOG file that is a symlink leading out of its project (skipped with a
    /// warning, W6 security).
    #[error("it is a symlink leading outside {}", clip(&.root.display().to_string(), SHOWN_CHARS))]
    LeadsOut {
        /// The directory it must stay in.
        root: PathBuf,
    },
    /// The load already used its whole size budget (left literal; the load warns once).
    #[error("the watchdog size limit is used up")]
    OverBudget,
    /// Any other I/O failure, such as a permission error (skipped with a warning).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Reads at most `cap` bytes of a regular file (symlinks followed) as UTF-8 text; the text
/// is cut at a character boundary and `truncated` set when the file is longer. Blocking.
pub fn read_text(path: &Path, cap: usize) -> Result<Capped<String>, ReadError> {
    read_text_capped(path, cap).map_err(|err| match err {
        FileError::Missing => ReadError::Missing,
        err if err.is_directory() => ReadError::NotAFile,
        FileError::NotRegular(kind) => ReadError::Special(kind),
        // Reads follow links; only appends refuse them.
        FileError::Symlink => ReadError::Special("a symlink"),
        FileError::NotUtf8 => ReadError::NotUtf8,
        FileError::Io(err) => ReadError::Io(err),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(path: &Path) -> Result<String, ReadError> {
        read_text(path, MAX_FILE_BYTES).map(|read| read.content)
    }

    #[test]
    fn w3_read_classifies_missing_directory_and_binary() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(matches!(
            text(&root.join("none.md")),
            Err(ReadError::Missing)
        ));
        std::fs::write(root.join("file"), "x").unwrap();
        assert!(matches!(
            text(&root.join("file/below.md")),
            Err(ReadError::Missing)
        ));
        std::fs::create_dir(root.join("dir.md")).unwrap();
        assert!(matches!(
            text(&root.join("dir.md")),
            Err(ReadError::NotAFile)
        ));
        std::fs::write(root.join("bin.md"), [0xff, 0xfe, 0x00]).unwrap();
        assert!(matches!(
            text(&root.join("bin.md")),
            Err(ReadError::NotUtf8)
        ));
        std::fs::write(root.join("ok.md"), "héllo").unwrap();
        assert_eq!(text(&root.join("ok.md")).unwrap(), "héllo");
    }
}
