//! Files from outside, opened safely: only regular files, never a wait, never more than a
//! cap (K1, L1, W6).
//!
//! Every file the advisor reads or appends to (settings, the prompt override, WATCHDOG.md
//! files and their imports, the audit file) goes through here:
//!
//! - the path's metadata (symlinks followed) must say "regular file" before anything is
//!   opened, so a FIFO, a device such as `/dev/zero` or a socket is refused at once;
//! - the file is then opened with `O_NONBLOCK`, and the open file's own metadata is checked
//!   again, so a path swapped for a FIFO between the two steps cannot block either;
//! - a file of procfs, sysfs or another kernel pseudo filesystem is refused (checked on the
//!   open file, so after symlinks): it passes for a regular file but is made up on reading;
//! - reads stop after the cap plus one byte, so a file's size never decides how much memory
//!   is used.
//!
//! Everything here is blocking; actors call it from the blocking pool.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::Path;

/// Why a file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Nothing at that path.
    #[error("no such file")]
    Missing,
    /// Something other than a regular file: a directory, a FIFO, a device, a socket.
    #[error("not a regular file ({0})")]
    NotRegular(&'static str),
    /// A symlink where a file is appended to; it is never followed.
    #[error("a symlink (not followed)")]
    Symlink,
    /// The bytes are not UTF-8.
    #[error("not valid UTF-8")]
    NotUtf8,
    /// Any other I/O failure, such as a permission error.
    #[error("{0}")]
    Io(std::io::Error),
}

impl FileError {
    /// Whether the path holds a directory (which some callers skip silently).
    pub fn is_directory(&self) -> bool {
        matches!(self, FileError::NotRegular(kind) if *kind == DIRECTORY)
    }
}

const DIRECTORY: &str = "a directory";

/// What a bounded read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped<T> {
    /// The content, at most the cap.
    pub content: T,
    /// Whether the file held more than the cap.
    pub truncated: bool,
}

/// What kind of thing `metadata` describes, for messages ("a FIFO", "a directory").
pub fn file_kind(metadata: &Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_file() {
        return "a regular file";
    }
    if kind.is_dir() {
        return DIRECTORY;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}

/// Opens the regular file at `path` (symlinks followed) for reading, without ever waiting.
pub fn open_regular(path: &Path) -> Result<File, FileError> {
    check_regular(&std::fs::metadata(path).map_err(classify)?)?;
    let mut options = OpenOptions::new();
    options.read(true);
    non_blocking(&mut options);
    let file = options.open(path).map_err(classify)?;
    check_regular(&file.metadata().map_err(FileError::Io)?)?;
    check_not_pseudo(&file)?;
    Ok(file)
}

/// Refuses a file of a kernel pseudo filesystem (procfs, sysfs and their kin): its entries
/// pass for regular files but are made up on reading (`/proc/self/environ` is the
/// process's environment, secrets included). Checked on the open file, so a symlink into
/// `/proc` is refused wherever it sits.
#[cfg(target_os = "linux")]
fn check_not_pseudo(file: &File) -> Result<(), FileError> {
    // The `f_type` magic numbers of `statfs(2)`.
    const PSEUDO: [(i128, &str); 8] = [
        (0x9fa0, "a procfs file"),
        (0x6265_6572, "a sysfs file"),
        (0x6462_6720, "a debugfs file"),
        (0x7472_6163, "a tracefs file"),
        (0x7363_6673, "a securityfs file"),
        (0x2743_8cfc, "a cgroup file"),
        (0x6367_7270, "a cgroup file"),
        (0xcafe_4a11, "a bpf file"),
    ];
    let stat = rustix::fs::fstatfs(file).map_err(|err| FileError::Io(err.into()))?;
    let kind = i128::from(stat.f_type);
    match PSEUDO.iter().find(|(magic, _)| *magic == kind) {
        Some((_, what)) => Err(FileError::NotRegular(what)),
        None => Ok(()),
    }
}

#[cfg(not(target_os = "linux"))]
fn check_not_pseudo(_file: &File) -> Result<(), FileError> {
    Ok(())
}

/// Reads at most `cap` bytes of the regular file at `path`; `truncated` says it held more.
pub fn read_bytes_capped(path: &Path, cap: usize) -> Result<Capped<Vec<u8>>, FileError> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(FileError::Io)?;
    let truncated = bytes.len() > cap;
    bytes.truncate(cap);
    Ok(Capped {
        content: bytes,
        truncated,
    })
}

/// Reads at most `cap` bytes of the regular file at `path` as UTF-8 text. When the file is
/// longer, the text is cut at the cap (and back to the last whole character).
pub fn read_text_capped(path: &Path, cap: usize) -> Result<Capped<String>, FileError> {
    let Capped {
        content: mut bytes,
        truncated,
    } = read_bytes_capped(path, cap)?;
    match std::str::from_utf8(&bytes) {
        Ok(_) => {}
        // A character cut by the cap is dropped; anything else invalid is an error.
        Err(err) if truncated && err.error_len().is_none() => bytes.truncate(err.valid_up_to()),
        Err(_) => return Err(FileError::NotUtf8),
    }
    let text = String::from_utf8(bytes).map_err(|_| FileError::NotUtf8)?;
    Ok(Capped {
        content: text,
        truncated,
    })
}

/// Appends `bytes` to the file at `path`, creating it when missing. An existing path must
/// be a regular file; a FIFO is refused, never waited on, and a symlink is refused, never
/// followed (`O_NOFOLLOW`, so a link made after the check is refused too).
pub fn append_regular(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => return Err(FileError::Symlink),
        Ok(metadata) => check_regular(&metadata)?,
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        Err(err) => return Err(classify(err)),
    }
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    no_follow(&mut options);
    let mut file = options.open(path).map_err(|err| match err.raw_os_error() {
        Some(libc::ELOOP) => FileError::Symlink,
        _ => FileError::Io(err),
    })?;
    check_regular(&file.metadata().map_err(FileError::Io)?)?;
    file.write_all(bytes).map_err(FileError::Io)?;
    file.flush().map_err(FileError::Io)
}

/// Opens the file at `path` for appending, creating it when missing. An existing path must
/// be a regular file; a FIFO is refused, never waited on.
pub fn open_append(path: &Path) -> Result<File, FileError> {
    match std::fs::metadata(path) {
        Ok(metadata) => check_regular(&metadata)?,
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        Err(err) => return Err(classify(err)),
    }
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    non_blocking(&mut options);
    let file = options.open(path).map_err(FileError::Io)?;
    check_regular(&file.metadata().map_err(FileError::Io)?)?;
    Ok(file)
}

/// `text` cut to about `max` characters for a message, with `…` marking the cut.
pub fn clip(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(text),
        Some((at, _)) => std::borrow::Cow::Owned(format!("{}…", &text[..at])),
    }
}

/// How many characters of an outside value a notice or error shows at most.
pub const SHOWN_CHARS: usize = 200;

fn check_regular(metadata: &Metadata) -> Result<(), FileError> {
    if metadata.is_file() {
        Ok(())
    } else {
        Err(FileError::NotRegular(file_kind(metadata)))
    }
}

#[cfg(unix)]
fn non_blocking(options: &mut OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NONBLOCK);
}

#[cfg(not(unix))]
fn non_blocking(_options: &mut OpenOptions) {}

#[cfg(unix)]
fn no_follow(options: &mut OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
}

#[cfg(not(unix))]
fn no_follow(_options: &mut OpenOptions) {}

/// Folds "nothing there" errors into [`FileError::Missing`].
fn classify(err: std::io::Error) -> FileError {
    match err.kind() {
        ErrorKind::NotFound | ErrorKind::NotADirectory => FileError::Missing,
        _ => FileError::Io(err),
    }
}

/// Helpers for the crate's own tests.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    /// Makes a FIFO at `path` (and its parent directories) with the system's `mkfifo`.
    pub(crate) fn mkfifo(path: &Path) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

#[cfg(test)]
mod tests {
    use super::testing::mkfifo;
    use super::*;

    #[test]
    fn l1_fifos_devices_and_directories_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        mkfifo(&fifo);
        let err = read_text_capped(&fifo, 10).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file (a FIFO)");
        let err = append_regular(&fifo, b"x").unwrap_err();
        assert_eq!(err.to_string(), "not a regular file (a FIFO)");
        let zero = dir.path().join("zero.yml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let err = read_bytes_capped(&zero, 10).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file (a character device)");
        let err = read_bytes_capped(dir.path(), 10).unwrap_err();
        assert!(err.is_directory(), "{err}");
        assert!(matches!(
            read_bytes_capped(&dir.path().join("none"), 10),
            Err(FileError::Missing)
        ));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn p8_procfs_and_sysfs_files_are_refused_even_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let environ = dir.path().join("AGENTS.md");
        std::os::unix::fs::symlink("/proc/self/environ", &environ).unwrap();
        let err = read_text_capped(&environ, 1024).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file (a procfs file)");
        let err = read_bytes_capped(Path::new("/proc/self/status"), 1024).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file (a procfs file)");
        if Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
            let err = read_bytes_capped(
                Path::new("/sys/kernel/mm/transparent_hugepage/enabled"),
                1024,
            )
            .unwrap_err();
            assert_eq!(err.to_string(), "not a regular file (a sysfs file)");
        }
        // An ordinary file is still read.
        let plain = dir.path().join("plain.md");
        std::fs::write(&plain, "rules").unwrap();
        assert_eq!(read_text_capped(&plain, 10).unwrap().content, "rules");
    }

    #[test]
    fn k1_reads_stop_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        // Sparse: two gigabytes that are never read.
        File::create(&big).unwrap().set_len(2 << 30).unwrap();
        let read = read_bytes_capped(&big, 1024).unwrap();
        assert_eq!(read.content.len(), 1024);
        assert!(read.truncated);
        std::fs::write(&big, "héllo").unwrap();
        let read = read_text_capped(&big, 6).unwrap();
        assert_eq!((read.content.as_str(), read.truncated), ("héllo", false));
        let read = read_text_capped(&big, 2).unwrap();
        assert_eq!((read.content.as_str(), read.truncated), ("h", true));
        std::fs::write(&big, [b'a', 0xff, b'b']).unwrap();
        assert!(matches!(
            read_text_capped(&big, 10),
            Err(FileError::NotUtf8)
        ));
    }

    #[test]
    fn g7_append_creates_and_appends() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("audit.jsonl");
        append_regular(&file, b"a\n").unwrap();
        append_regular(&file, b"b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nb\n");
    }

    #[test]
    fn v4_append_never_follows_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "kept").unwrap();
        let link = dir.path().join("__advisor.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = append_regular(&link, b"x").unwrap_err();
        assert_eq!(err.to_string(), "a symlink (not followed)");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    }

    #[test]
    fn k1_clip_keeps_short_text_and_marks_a_cut() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("ééééé", 3), "ééé…");
    }
}
