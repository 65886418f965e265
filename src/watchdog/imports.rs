//! `@` import expansion (W6).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::paths::{expand_tilde, normalize_lexically};
use super::read::ReadError;
use crate::regular_file::{clip, SHOWN_CHARS};

/// Content at this import depth is inlined without expanding its own imports (W6).
pub const MAX_IMPORT_DEPTH: usize = 5;

/// Characters that end an import path without being part of it (W6).
const TRAILING_PUNCTUATION: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\''];

/// The outcome of expanding one WATCHDOG file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expansion {
    /// The text with every resolvable import replaced by the imported content.
    pub text: String,
    /// Imports that named a file which exists but could not be read.
    pub warnings: Vec<String>,
}

/// Expands the `@path` imports of `text`, the content of the WATCHDOG file at `file`.
///
/// `read` fetches one (lexically normalised, absolute or home-based) path; it is the only
/// way this function touches files, so tests can pass an in-memory map. One visited set
/// serves the whole expansion, seeded with `file`: an import of a path already imported
/// (or of `file` itself) stays literal, which covers repeats and cycles alike.
#[cfg(test)]
pub fn expand_imports(
    text: &str,
    file: &Path,
    home: Option<&Path>,
    read: &mut dyn FnMut(&Path) -> Result<String, ReadError>,
) -> Expansion {
    expand_imports_within(text, file, home, None, read)
}

/// `expand_imports` for a file whose imports must stay inside `scope` when it is given:
/// a project file, which may come from a cloned repository (W6 security). There, absolute
/// and `~` imports, and relative ones that lead out of `scope`, stay literal with a
/// warning. `read` is where symlinks leading out are caught (it answers
/// [`ReadError::Outside`]); this function looks at paths only.
pub fn expand_imports_within(
    text: &str,
    file: &Path,
    home: Option<&Path>,
    scope: Option<&Path>,
    read: &mut dyn FnMut(&Path) -> Result<String, ReadError>,
) -> Expansion {
    let file = normalize_lexically(file);
    let mut expander = Expander {
        home,
        scope: scope.map(normalize_lexically),
        visited: HashSet::from([file.clone()]),
        read,
        warnings: Vec::new(),
    };
    let dir = file.parent().unwrap_or(Path::new(""));
    let text = expander.expand(text, dir, 0);
    Expansion {
        text,
        warnings: expander.warnings,
    }
}

/// The state of one expansion.
struct Expander<'a> {
    home: Option<&'a Path>,
    scope: Option<PathBuf>,
    visited: HashSet<PathBuf>,
    read: &'a mut dyn FnMut(&Path) -> Result<String, ReadError>,
    warnings: Vec<String>,
}

impl Expander<'_> {
    /// Expands `text`, found at import depth `depth` in a file of directory `dir`.
    fn expand(&mut self, text: &str, dir: &Path, depth: usize) -> String {
        if depth >= MAX_IMPORT_DEPTH {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut fence: Option<(char, usize)> = None;
        for line in text.split_inclusive('\n') {
            match (fence, fence_run(line)) {
                (None, Some(opening)) => {
                    fence = Some(opening);
                    out.push_str(line);
                }
                (Some((open_char, open_len)), closing) => {
                    if closing.is_some_and(|(c, len)| c == open_char && len >= open_len) {
                        fence = None;
                    }
                    out.push_str(line);
                }
                (None, None) => self.expand_line(line, dir, depth, &mut out),
            }
        }
        out
    }

    /// Expands the imports of one line outside any fence, appending the result to `out`.
    fn expand_line(&mut self, line: &str, dir: &Path, depth: usize, out: &mut String) {
        let bytes = line.as_bytes();
        let mut copied = 0;
        let mut backtick_runs = 0usize;
        for (index, &byte) in bytes.iter().enumerate() {
            if byte == b'`' {
                if index == 0 || bytes[index - 1] != b'`' {
                    backtick_runs += 1;
                }
                continue;
            }
            let starts_token = byte == b'@'
                && index >= copied
                && backtick_runs.is_multiple_of(2)
                && (index == 0 || matches!(bytes[index - 1], b' ' | b'\t'));
            if !starts_token {
                continue;
            }
            let Some(token) = import_token(&line[index + 1..]) else {
                continue;
            };
            if let Some(content) = self.import(token, dir, depth) {
                out.push_str(&line[copied..index]);
                out.push_str(&content);
                copied = index + 1 + token.len();
            }
        }
        out.push_str(&line[copied..]);
    }

    /// Resolves and reads one import; `None` leaves the token literal.
    fn import(&mut self, token: &str, dir: &Path, depth: usize) -> Option<String> {
        if let Some(root) = &self.scope {
            let anchored = token.starts_with(['/', '~']);
            if anchored || !normalize_lexically(&dir.join(token)).starts_with(root) {
                let err = ReadError::Outside { root: root.clone() };
                self.warnings.push(format!(
                    "watchdog: import @{} left as is: {err}",
                    clip(token, SHOWN_CHARS)
                ));
                return None;
            }
        }
        let path = expand_tilde(token, self.home)?;
        let path = normalize_lexically(&dir.join(path));
        if self.visited.contains(&path) {
            return None;
        }
        match (self.read)(&path) {
            Ok(text) => {
                self.visited.insert(path.clone());
                let base = path.parent().unwrap_or(Path::new(""));
                Some(self.expand(&text, base, depth + 1))
            }
            Err(ReadError::Missing | ReadError::NotAFile | ReadError::OverBudget) => None,
            Err(err) => {
                self.warnings.push(format!(
                    "watchdog: import {} left as is: {err}",
                    clip(&path.display().to_string(), SHOWN_CHARS)
                ));
                None
            }
        }
    }
}

/// The import path right after an `@`, if the text there forms one: it starts with `.`,
/// `/`, `~`, `_`, `-` or a letter or digit and runs to the next whitespace, minus trailing
/// punctuation.
fn import_token(rest: &str) -> Option<&str> {
    let first = rest.chars().next()?;
    if !(matches!(first, '.' | '/' | '~' | '_' | '-') || first.is_alphanumeric()) {
        return None;
    }
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let token = rest[..end].trim_end_matches(TRAILING_PUNCTUATION);
    (!token.is_empty()).then_some(token)
}

/// The fence character and run length when the line's first non-blank run is three or more
/// backticks or tildes.
fn fence_run(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start();
    let first = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = trimmed.chars().take_while(|c| *c == first).count();
    (len >= 3).then_some((first, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Expands `text` as `/p/WATCHDOG.md` over an in-memory file map; home is `/home/u`.
    fn expand_with(files: &[(&str, &str)], text: &str) -> Expansion {
        let map: HashMap<PathBuf, String> = files
            .iter()
            .map(|(path, content)| (PathBuf::from(path), (*content).to_owned()))
            .collect();
        let mut read = |path: &Path| map.get(path).cloned().ok_or(ReadError::Missing);
        expand_imports(
            text,
            Path::new("/p/WATCHDOG.md"),
            Some(Path::new("/home/u")),
            &mut read,
        )
    }

    fn expand(files: &[(&str, &str)], text: &str) -> String {
        expand_with(files, text).text
    }

    #[test]
    fn w6_inline_import_replaces_token_in_place() {
        let files = [("/p/a.md", "AAA")];
        assert_eq!(expand(&files, "see @a.md now"), "see AAA now");
        assert_eq!(expand(&files, "@a.md"), "AAA");
        assert_eq!(expand(&files, "x\t@./a.md\n"), "x\tAAA\n");
    }

    #[test]
    fn w6_resolution_relative_absolute_tilde() {
        let files = [
            ("/p/sub/b.md", "B"),
            ("/abs/c.md", "C"),
            ("/home/u/d.md", "D"),
            ("/p/e.md", "E"),
        ];
        assert_eq!(expand(&files, "@sub/b.md"), "B");
        assert_eq!(expand(&files, "@/abs/c.md"), "C");
        assert_eq!(expand(&files, "@~/d.md"), "D");
        assert_eq!(expand(&files, "@sub/../e.md"), "E");
    }

    #[test]
    fn w6_tilde_without_home_stays_literal() {
        let mut read = |_: &Path| Ok(String::from("X"));
        let out = expand_imports("@~/d.md", Path::new("/p/W.md"), None, &mut read);
        assert_eq!(out.text, "@~/d.md");
    }

    #[test]
    fn w6_nested_import_resolves_from_the_importing_file() {
        let files = [("/p/sub/b.md", "[@c.md]\n"), ("/p/sub/c.md", "C")];
        assert_eq!(expand(&files, "@sub/b.md"), "[@c.md]\n");
        let files = [("/p/sub/b.md", "< @c.md >"), ("/p/sub/c.md", "C")];
        assert_eq!(expand(&files, "@sub/b.md"), "< C >");
    }

    #[test]
    fn w6_trailing_punctuation_stays_in_text() {
        let files = [("/p/a.md", "A")];
        for (input, expected) in [
            ("@a.md.", "A."),
            ("@a.md,", "A,"),
            ("(see @a.md)", "(see A)"),
            ("@a.md!?", "A!?"),
            ("@a.md\";", "A\";"),
            ("@a.md']}:", "A']}:"),
        ] {
            assert_eq!(expand(&files, input), expected, "{input}");
        }
    }

    #[test]
    fn w6_not_imports() {
        let files = [
            ("/p/example.com", "NO"),
            ("/p/host", "NO"),
            ("/p/a.md", "A"),
        ];
        for input in [
            "mail me@example.com",
            "ssh user@host",
            "x@a.md",
            "@ a.md",
            "@@a.md",
            "@*a.md",
            "@.",
            "@",
        ] {
            assert_eq!(expand(&files, input), input, "{input}");
        }
    }

    #[test]
    fn w6_backtick_fence_is_literal() {
        let files = [("/p/a.md", "A"), ("/p/b.md", "B")];
        let text = "@a.md\n```sh\n@b.md\n```\n@b.md\n";
        assert_eq!(expand(&files, text), "A\n```sh\n@b.md\n```\nB\n");
    }

    #[test]
    fn w6_tilde_fence_is_literal_and_needs_same_char_to_close() {
        let files = [("/p/a.md", "A")];
        let text = "  ~~~~\n@a.md\n```\n@a.md\n~~~\n@a.md\n~~~~~\n@a.md\n";
        assert_eq!(
            expand(&files, text),
            "  ~~~~\n@a.md\n```\n@a.md\n~~~\n@a.md\n~~~~~\nA\n"
        );
    }

    #[test]
    fn w6_unclosed_fence_runs_to_the_end() {
        let files = [("/p/a.md", "A")];
        assert_eq!(
            expand(&files, "@a.md\n````\n@a.md\n```\n@a.md"),
            "A\n````\n@a.md\n```\n@a.md"
        );
    }

    #[test]
    fn w6_fence_in_imported_file_does_not_leak() {
        let files = [("/p/a.md", "```\n@b.md\n"), ("/p/b.md", "B")];
        assert_eq!(expand(&files, "@a.md\n@b.md\n"), "```\n@b.md\n\nB\n");
    }

    #[test]
    fn w6_inline_code_span_is_literal() {
        let files = [("/p/a.md", "A")];
        assert_eq!(expand(&files, "run `@a.md` here"), "run `@a.md` here");
        assert_eq!(expand(&files, "`x` @a.md"), "`x` A");
        assert_eq!(expand(&files, "``x `` @a.md"), "``x `` A");
        assert_eq!(expand(&files, "``x @a.md``"), "``x @a.md``");
        assert_eq!(expand(&files, "`open @a.md"), "`open @a.md");
    }

    #[test]
    fn w6_depth_five_is_inlined_unexpanded() {
        let files = [
            ("/p/1.md", "1 @2.md"),
            ("/p/2.md", "2 @3.md"),
            ("/p/3.md", "3 @4.md"),
            ("/p/4.md", "4 @5.md"),
            ("/p/5.md", "5 @6.md"),
            ("/p/6.md", "6"),
        ];
        assert_eq!(expand(&files, "0 @1.md"), "0 1 2 3 4 5 @6.md");
    }

    #[test]
    fn w6_cycle_stays_literal() {
        let files = [("/p/a.md", "a @b.md"), ("/p/b.md", "b @a.md @WATCHDOG.md")];
        assert_eq!(expand(&files, "@a.md"), "a b @a.md @WATCHDOG.md");
    }

    #[test]
    fn w6_repeated_import_stays_literal() {
        let files = [("/p/a.md", "A"), ("/p/b.md", "B @a.md")];
        assert_eq!(expand(&files, "@a.md @a.md @./a.md"), "A @a.md @./a.md");
        assert_eq!(expand(&files, "@a.md @b.md"), "A B @a.md");
    }

    #[test]
    fn w6_missing_import_stays_literal_without_warning() {
        let out = expand_with(&[], "see @nothing.md.");
        assert_eq!(out.text, "see @nothing.md.");
        assert!(out.warnings.is_empty());
    }

    #[test]
    fn w6_unreadable_import_stays_literal_with_warning() {
        let mut read = |_: &Path| Err(ReadError::NotUtf8);
        let out = expand_imports("@bin.md", Path::new("/p/W.md"), None, &mut read);
        assert_eq!(out.text, "@bin.md");
        assert_eq!(out.warnings.len(), 1);
        assert!(out.warnings[0].contains("/p/bin.md"));
        assert!(out.warnings[0].contains("UTF-8"));
    }

    fn expand_in_project(files: &[(&str, &str)], text: &str) -> Expansion {
        let map: HashMap<PathBuf, String> = files
            .iter()
            .map(|(path, content)| (PathBuf::from(path), (*content).to_owned()))
            .collect();
        let mut read = |path: &Path| map.get(path).cloned().ok_or(ReadError::Missing);
        expand_imports_within(
            text,
            Path::new("/p/sub/WATCHDOG.md"),
            Some(Path::new("/home/u")),
            Some(Path::new("/p")),
            &mut read,
        )
    }

    #[test]
    fn w6_project_imports_stay_inside_the_root() {
        let files = [
            ("/p/sub/a.md", "A @../b.md"),
            ("/p/b.md", "B"),
            ("/etc/shadow", "root:secret"),
            ("/proc/self/environ", "KEY=v"),
            ("/home/u/notes.md", "N"),
            ("/outside.md", "O"),
        ];
        let out = expand_in_project(
            &files,
            "@a.md @/etc/shadow @/proc/self/environ @~/notes.md @../../outside.md @/p/b.md",
        );
        assert_eq!(
            out.text,
            "A B @/etc/shadow @/proc/self/environ @~/notes.md @../../outside.md @/p/b.md"
        );
        assert_eq!(out.warnings.len(), 5, "{:?}", out.warnings);
        assert_eq!(
            out.warnings[0],
            "watchdog: import @/etc/shadow left as is: a project WATCHDOG file may only \
             import files inside /p"
        );
        assert!(out.warnings[3].contains("@../../outside.md"));
    }

    #[test]
    fn w6_long_import_paths_are_cut_in_warnings() {
        let token = "x".repeat(5000);
        let out = expand_in_project(&[], &format!("@/{token}"));
        assert_eq!(out.warnings.len(), 1);
        assert!(out.warnings[0].len() < 400, "{}", out.warnings[0]);
    }

    #[test]
    fn w6_non_ascii_text_around_imports() {
        let files = [("/p/é.md", "É")];
        assert_eq!(expand(&files, "ü @é.md ü"), "ü É ü");
        assert_eq!(expand(&files, "ü@é.md"), "ü@é.md");
    }
}
