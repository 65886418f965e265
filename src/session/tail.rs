//! A host transcript read as it grows (SPEC H31): the background process of the hook hosts
//! reads a Claude Code transcript or Codex rollout at every hook event, and after the first
//! read it parses only the lines appended since, going on from the reader's state.
//!
//! The state keeps the offset after the last line taken (a last line not written whole is
//! left for the next read), the line count, and the reader's own state: for Claude Code the
//! branch's entries with the assistant message still being gathered and the links that
//! tell whether a new line extends the branch; for Codex the rollout's state with the
//! response being gathered and the hook messages held back. The file is read whole instead
//! when it is another file (device and inode), shorter than the offset, its first or last
//! 4 KiB before the offset changed, the text after a last line taken without its line break
//! is more than that break, or a new line does not extend the branch (a rewind, a new
//! chain, a loop, a parent named before it came). Either way the entries equal those of a
//! whole read of the file as it is ([`read_session_with`](super::read_session_with)).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::branch::{BranchEntry, SessionFormat, SessionHeader};
use super::claude::ClaudeTail;
use super::codex::Rollout;
use super::diagnostics::{ReadLimits, SessionError};
use super::hosts::Resume;
use super::input::{open_regular, Lines};
use super::reader::host_format_of;

/// How many bytes at the file's start and before the offset are compared at each read.
const GUARD_BYTES: u64 = 4096;

/// A host transcript read up to a point, ready to read only what is appended.
#[derive(Debug)]
pub struct HostTail {
    path: PathBuf,
    /// Device and inode of the file read.
    file: (u64, u64),
    limits: ReadLimits,
    resume: Resume,
    /// The file's first bytes, up to the offset.
    head: Vec<u8>,
    /// The bytes just before the offset.
    guard: Vec<u8>,
    reader: TailReader,
}

/// The reader's state of each host format.
#[derive(Debug)]
enum TailReader {
    Claude(Box<ClaudeTail>),
    Codex(Box<Rollout>),
}

/// How [`read_host_tail`] read the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailRead {
    /// Only what was appended since the last read.
    Appended,
    /// The whole file: the first read, or one the last read's state could not go on from.
    Whole,
    /// The file is not a host's transcript (a pi session): nothing kept, read it as such.
    NotHost,
}

/// Reads the host transcript at `path` into `tail`: only what was appended since, when
/// `tail` holds a read of the same file that can go on, else the whole file (SPEC H31).
/// Blocking. On an error `tail` is emptied.
pub fn read_host_tail(
    path: &Path,
    limits: &ReadLimits,
    tail: &mut Option<HostTail>,
) -> Result<TailRead, SessionError> {
    if let Some(state) = tail.as_mut() {
        if state.limits == *limits {
            match state.append(path) {
                Ok(true) => return Ok(TailRead::Appended),
                Ok(false) => {}
                Err(e) => {
                    *tail = None;
                    return Err(e);
                }
            }
        }
    }
    *tail = None;
    *tail = HostTail::open(path, limits)?;
    Ok(if tail.is_some() {
        TailRead::Whole
    } else {
        TailRead::NotHost
    })
}

impl HostTail {
    /// Reads the host transcript at `path` whole; `None` when it is a pi session.
    pub fn open(path: &Path, limits: &ReadLimits) -> Result<Option<Self>, SessionError> {
        let io_err = io_error(path);
        let file = open_regular(path)?;
        let file_id = id_of(&file).map_err(io_err)?;
        let mut lines = Lines::new(
            BufReader::with_capacity(1 << 16, file),
            limits.max_line_bytes,
        );
        let Some(format) = host_format_of(&mut lines, path)? else {
            return Ok(None);
        };
        lines.rewind(0).map_err(io_err)?;
        let (reader, resume) = match format {
            SessionFormat::ClaudeCode => {
                let (tail, resume) = ClaudeTail::start(&mut lines, limits).map_err(io_err)?;
                (TailReader::Claude(Box::new(tail)), resume)
            }
            SessionFormat::Codex | SessionFormat::Pi => {
                let (rollout, resume) = Rollout::start(&mut lines, limits).map_err(io_err)?;
                (TailReader::Codex(Box::new(rollout)), resume)
            }
        };
        let mut tail = Self {
            path: path.to_path_buf(),
            file: file_id,
            limits: *limits,
            resume,
            head: Vec::new(),
            guard: Vec::new(),
            reader,
        };
        tail.keep_guard(lines.into_inner().get_ref())
            .map_err(io_err)?;
        Ok(Some(tail))
    }

    /// Reads what was appended to `path` since the last read; `false` when this state
    /// cannot go on (another file, a rewritten one, a branch that took a turn): then it is
    /// spent and the file must be read whole.
    fn append(&mut self, path: &Path) -> Result<bool, SessionError> {
        if path != self.path || !self.reader.can_go_on() {
            return Ok(false);
        }
        let io_err = io_error(path);
        let file = open_regular(path)?;
        let meta = file.metadata().map_err(io_err)?;
        let offset = self.resume.offset;
        if (meta.dev(), meta.ino()) != self.file || meta.len() < offset {
            return Ok(false);
        }
        if !self.guard_holds(&file).map_err(io_err)? {
            return Ok(false);
        }
        if meta.len() == offset {
            return Ok(true);
        }
        let mut reader = BufReader::with_capacity(1 << 16, file);
        reader.seek(SeekFrom::Start(offset)).map_err(io_err)?;
        let mut start = offset;
        if self.resume.open {
            match line_break(&mut reader).map_err(io_err)? {
                LineEnd::Break(used) => start += used,
                LineEnd::NotYet => return Ok(true),
                LineEnd::More => return Ok(false),
            }
        }
        let mut lines = Lines::resumed(
            reader,
            self.limits.max_line_bytes,
            self.resume.number,
            start,
        );
        self.resume = match &mut self.reader {
            TailReader::Claude(tail) => tail.take_lines(&mut lines, &self.limits),
            TailReader::Codex(rollout) => rollout.take_lines(&mut lines, &self.limits),
        }
        .map_err(io_err)?;
        if !self.reader.can_go_on() {
            return Ok(false);
        }
        self.keep_guard(lines.into_inner().get_ref())
            .map_err(io_err)?;
        Ok(true)
    }

    /// The file's format.
    pub fn format(&self) -> SessionFormat {
        match self.reader {
            TailReader::Claude(_) => SessionFormat::ClaudeCode,
            TailReader::Codex(_) => SessionFormat::Codex,
        }
    }

    /// The bytes read so far: the offset the next read goes on from.
    pub fn offset(&self) -> u64 {
        self.resume.offset
    }

    /// The entries a whole read of the file now ends with, as the ones settled and those
    /// the file's end closes (an assistant message still being gathered, held hook
    /// messages): the first followed by the second.
    pub fn entries(&self) -> (&[BranchEntry], Vec<BranchEntry>) {
        match &self.reader {
            TailReader::Claude(tail) => tail.entries(),
            TailReader::Codex(rollout) => rollout.entries(),
        }
    }

    /// The header read so far.
    pub fn header(&self) -> &SessionHeader {
        match &self.reader {
            TailReader::Claude(tail) => tail.header(),
            TailReader::Codex(rollout) => rollout.header(),
        }
    }

    /// Remembers the file's first bytes and those before the offset.
    fn keep_guard(&mut self, file: &File) -> io::Result<()> {
        let offset = self.resume.offset;
        let before = offset.min(GUARD_BYTES);
        self.head = read_at(file, 0, before)?;
        self.guard = read_at(file, offset - before, before)?;
        Ok(())
    }

    /// Whether the bytes remembered are still there.
    fn guard_holds(&self, file: &File) -> io::Result<bool> {
        let before = self.guard.len() as u64;
        Ok(read_at(file, 0, self.head.len() as u64)? == self.head
            && read_at(file, self.resume.offset - before, before)? == self.guard)
    }
}

impl TailReader {
    fn can_go_on(&self) -> bool {
        match self {
            TailReader::Claude(tail) => tail.can_go_on(),
            TailReader::Codex(_) => true,
        }
    }
}

/// What follows a last line taken without its line break.
enum LineEnd {
    /// Blanks and the line break: this many bytes.
    Break(u64),
    /// Only blanks so far.
    NotYet,
    /// Something else: the line was not whole after all.
    More,
}

/// Reads past the blanks and the line break that end an open line.
fn line_break<R: BufRead>(reader: &mut R) -> io::Result<LineEnd> {
    let mut used = 0u64;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(LineEnd::NotYet);
        }
        for (i, byte) in available.iter().enumerate() {
            if *byte == b'\n' {
                reader.consume(i + 1);
                return Ok(LineEnd::Break(used + i as u64 + 1));
            }
            if !byte.is_ascii_whitespace() {
                return Ok(LineEnd::More);
            }
        }
        let n = available.len();
        reader.consume(n);
        used += n as u64;
    }
}

/// Up to `len` bytes of `file` at `offset` (fewer at its end).
fn read_at(file: &File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; usize::try_from(len).unwrap_or(0)];
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// Device and inode of an open file.
fn id_of(file: &File) -> io::Result<(u64, u64)> {
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

/// An I/O error as a session error about `path`.
fn io_error(path: &Path) -> impl Fn(io::Error) -> SessionError + Copy + '_ {
    move |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
#[path = "tail_tests.rs"]
mod tests;
