//! Getting at a session file's lines (SPEC L1, L5): opening only regular files (a FIFO is
//! turned away, never waited on), spooling standard input to an unlinked temporary file so
//! it can be read twice, and a line iterator that never buffers a line over its cap.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::diagnostics::{ReadLimits, SessionError};
use crate::regular_file::{self, FileError};

/// A UTF-8 byte-order mark, accepted (and dropped) at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Opens `path` for reading if, and only if, it is a regular file: the crate's one way of
/// opening a file from outside ([`regular_file::open_regular`]), its refusals worded as
/// session errors.
pub(super) fn open_regular(path: &Path) -> Result<File, SessionError> {
    regular_file::open_regular(path).map_err(|error| match error {
        FileError::NotRegular(_) => SessionError::NotAFile {
            path: path.to_path_buf(),
        },
        FileError::Io(source) => SessionError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => SessionError::Io {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::NotFound, other.to_string()),
        },
    })
}

/// Copies `input` to an unlinked temporary file, cutting every line at
/// `max_line_bytes + 1` bytes (still too long, so still reported) and failing past
/// `max_stdin_bytes`; returns the file, rewound.
pub(super) fn spool<R: Read>(
    mut input: R,
    limits: &ReadLimits,
    name: &Path,
) -> Result<File, SessionError> {
    let io_err = |source: io::Error| SessionError::Io {
        path: name.to_path_buf(),
        source,
    };
    let mut file = spool_file().map_err(io_err)?;
    let mut out = BufWriter::with_capacity(1 << 16, &mut file);
    let mut chunk = vec![0u8; 1 << 16];
    let (mut total, mut line_len) = (0u64, 0usize);
    let room = limits.max_line_bytes.saturating_add(1);
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(e)),
        };
        total = total.saturating_add(n as u64);
        if total > limits.max_stdin_bytes {
            return Err(SessionError::StdinTooLarge {
                limit: limits.max_stdin_bytes,
            });
        }
        for (i, part) in chunk[..n].split(|b| *b == b'\n').enumerate() {
            if i > 0 {
                out.write_all(b"\n").map_err(io_err)?;
                line_len = 0;
            }
            let keep = part.len().min(room - line_len);
            out.write_all(&part[..keep]).map_err(io_err)?;
            line_len += keep;
        }
    }
    out.flush().map_err(io_err)?;
    drop(out);
    file.seek(SeekFrom::Start(0)).map_err(io_err)?;
    Ok(file)
}

/// A new temporary file only this process can reach: created exclusively, then unlinked.
fn spool_file() -> io::Result<File> {
    let dir = std::env::temp_dir();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    for attempt in 0..16u32 {
        let path = dir.join(format!(
            "advisor-stdin-{}-{stamp}-{attempt}.jsonl",
            std::process::id()
        ));
        let mut options = OpenOptions::new();
        options.read(true).write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(&path) {
            Ok(file) => {
                // The open handle keeps the data; nothing is left behind on any exit.
                let _ = std::fs::remove_file(&path);
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary file name to spool standard input",
    ))
}

/// `line` without surrounding ASCII whitespace, and without a byte-order mark when it is
/// the file's first line (`number` 1).
fn trimmed(line: &[u8], number: usize) -> &[u8] {
    let line = match line.strip_prefix(BOM) {
        Some(rest) if number == 1 => rest,
        _ => line,
    };
    line.trim_ascii()
}

/// One line as [`Lines`] returns it.
pub(super) enum Line<'a> {
    /// The line, trimmed (never blank).
    Text(&'a [u8]),
    /// The line was longer than the cap: it was discarded unread.
    TooLong,
}

/// A line iterator over a byte source that counts line numbers and never buffers a line
/// longer than its cap. A line that lies whole in the source's buffer is handed out from
/// there, uncopied; only a line that straddles two buffer fills is gathered in its own
/// buffer, reused from line to line.
pub(super) struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    /// 1-based number of the line last returned (0 before the first).
    pub(super) number: usize,
    /// Longest line buffered, in bytes (line break excluded).
    max_line: usize,
    /// Bytes of the source's buffer the last line was lent from, consumed before the next.
    lent: usize,
    /// The last line read ended at the end of the input without a line break (only ever
    /// true for the last line: set where a line is gathered, the one way such a line is
    /// read).
    unterminated: bool,
    /// Bytes consumed from the source so far, from where it was positioned at the start.
    consumed: u64,
    /// Where in the source the raw line last read starts.
    line_start: u64,
}

/// A buffer grown past this by one long line is given back before the next line.
const KEEP_BUFFER: usize = 1 << 20;

/// Where [`Lines::read_raw`] left the line it read.
enum Raw {
    /// The first `n` bytes of the source's buffer.
    Lent(usize),
    /// In [`Lines::buf`].
    Gathered,
    /// Longer than the cap: skipped.
    TooLong,
}

impl<R: BufRead + Seek> Lines<R> {
    pub(super) fn new(reader: R, max_line: usize) -> Self {
        Self {
            reader,
            buf: Vec::new(),
            number: 0,
            max_line,
            lent: 0,
            unterminated: false,
            consumed: 0,
            line_start: 0,
        }
    }

    /// Lines of a source positioned at byte `offset` of a file whose first `number` lines
    /// were read before: numbers and offsets go on from there.
    pub(super) fn resumed(reader: R, max_line: usize, number: usize, offset: u64) -> Self {
        let mut lines = Self::new(reader, max_line);
        lines.number = number;
        lines.consumed = offset;
        lines.line_start = offset;
        lines
    }

    /// The source, positioned wherever reading stopped.
    pub(super) fn into_inner(self) -> R {
        self.reader
    }

    /// The offset just past the line last returned (its line break included).
    pub(super) fn position(&self) -> u64 {
        self.consumed + self.lent as u64
    }

    /// The offset where the line last returned starts.
    pub(super) fn line_start(&self) -> u64 {
        self.line_start
    }

    /// Reads the next raw line (line break excluded): lent from the source's buffer when it
    /// lies whole in it, else gathered into `buf` in chunks; a line that outgrows the cap
    /// is dropped and the rest of it skipped up to the next newline. `None` at the end of
    /// the input.
    fn read_raw(&mut self) -> io::Result<Option<Raw>> {
        if self.lent > 0 {
            self.reader.consume(self.lent);
            self.consumed += self.lent as u64;
            self.lent = 0;
        }
        self.line_start = self.consumed;
        if self.buf.capacity() > KEEP_BUFFER {
            self.buf = Vec::new();
        }
        let available = loop {
            match self.reader.fill_buf() {
                Ok(bytes) => break bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        if available.is_empty() {
            return Ok(None);
        }
        if let Some(newline) = memchr::memchr(b'\n', available) {
            if newline <= self.max_line {
                self.lent = newline + 1;
                self.number += 1;
                return Ok(Some(Raw::Lent(newline)));
            }
        }
        self.gather()
            .map(|fits| Some(if fits { Raw::Gathered } else { Raw::TooLong }))
    }

    /// Reads a line that does not lie whole in the source's buffer into `buf`; whether it
    /// fit under the cap.
    fn gather(&mut self) -> io::Result<bool> {
        self.buf.clear();
        let mut fits = true;
        self.unterminated = true;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            let newline = memchr::memchr(b'\n', available);
            let part = &available[..newline.unwrap_or(available.len())];
            if fits {
                let needed = self.buf.len() + part.len();
                if needed > self.max_line {
                    fits = false;
                    // Give the memory back at once: the rest of the line is only skipped.
                    self.buf = Vec::new();
                } else {
                    if needed > self.buf.capacity() {
                        // Grow by doubling, but never past the cap.
                        let target = needed.max(self.buf.capacity() * 2).min(self.max_line);
                        self.buf.reserve_exact(target - self.buf.len());
                    }
                    self.buf.extend_from_slice(part);
                }
            }
            let used = newline.map_or(available.len(), |i| i + 1);
            self.reader.consume(used);
            self.consumed += used as u64;
            if newline.is_some() {
                self.unterminated = false;
                break;
            }
        }
        self.number += 1;
        Ok(fits)
    }

    /// The next non-blank line (trimmed) or too-long line, with its 1-based number; `None`
    /// at the end. A byte-order mark opening the first line is dropped.
    pub(super) fn next_line(&mut self) -> io::Result<Option<(usize, Line<'_>)>> {
        let raw = loop {
            let Some(raw) = self.read_raw()? else {
                return Ok(None);
            };
            let blank = match raw {
                Raw::TooLong => false,
                Raw::Gathered => trimmed(&self.buf, self.number).is_empty(),
                Raw::Lent(n) => trimmed(&self.reader.fill_buf()?[..n], self.number).is_empty(),
            };
            if !blank {
                break raw;
            }
        };
        let number = self.number;
        let text = match raw {
            Raw::TooLong => return Ok(Some((number, Line::TooLong))),
            Raw::Gathered => trimmed(&self.buf, number),
            // The bytes are still in the source's buffer: nothing was consumed since.
            Raw::Lent(n) => trimmed(&self.reader.fill_buf()?[..n], number),
        };
        Ok(Some((number, Line::Text(text))))
    }

    /// The reason recorded for a line longer than the cap.
    /// The line buffer's capacity, for the tests of the cap.
    #[cfg(test)]
    pub(super) fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    pub(super) fn too_long(&self) -> String {
        format!("line longer than {} bytes, discarded unread", self.max_line)
    }

    /// True when the line last returned ended at the end of the input with no line break:
    /// in a file that is still being written, a line not written whole yet.
    pub(super) fn unterminated(&self) -> bool {
        self.unterminated
    }

    /// Goes back to the start and skips the first `lines` lines.
    pub(super) fn rewind(&mut self, lines: usize) -> io::Result<()> {
        // The seek drops the source's buffer, the lent line with it.
        self.lent = 0;
        self.unterminated = false;
        self.reader.seek(SeekFrom::Start(0))?;
        self.number = 0;
        self.consumed = 0;
        self.line_start = 0;
        for _ in 0..lines {
            if self.read_raw()?.is_none() {
                break;
            }
        }
        Ok(())
    }
}
