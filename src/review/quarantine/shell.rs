//! The shell side of the output quarantine (P5): text normalised the way a shell and a
//! reader would see it, cut into commands, and the hazardous commands found in it.
//!
//! Normalising undoes what hides a command from a keyword match without changing what a
//! shell runs or what a reader sees: zero-width and bidi-control characters are dropped,
//! Unicode compatibility forms folded (NFKC: full-width `ｒｍ` is `rm`), look-alike letters
//! from Cyrillic and Greek mapped to the Latin ones, dashes to `-`. Then the text is read
//! twice, and a command found in either reading counts:
//! - as a reader sees it ([`as_read`]): quotes removed (`r''m`, `"-rf"`), a backslash escape
//!   keeps its character (`r\m`, `\rm`), except that `\n` and `\t` as written by JSON are a
//!   line break and a space;
//! - as a shell runs it ([`as_run`]): quotes and escapes removed as a POSIX shell does (outside
//!   quotes a backslash quotes the next character, so `\rm` is `rm`, and backslash-newline
//!   joins lines; inside `"…"` it escapes only `$`, `` ` ``, `"`, `\` and a newline; inside
//!   `'…'` nothing), and bash's `$'…'` decoded (`$'\x72m'` is `rm`).
//!
//! In both, `${IFS}` becomes a space and everything is lower-cased.
//!
//! A command is then compared word by word, so options may come in any order and after the
//! operands (`rm -r ./build -f`).

use std::collections::BTreeSet;

use unicode_normalization::UnicodeNormalization;

/// What a hazardous command does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CommandClass {
    /// Deletes recursively and by force: `rm -rf`, `find … -delete`, `git clean -f`,
    /// `git reset --hard`.
    Destructive,
    /// Runs fetched or decoded text as a program: `curl … | sh`, `base64 -d | sh`.
    PipeToShell,
    /// Sends a private key or credentials file over the network: `curl -d @~/.ssh/id_rsa`.
    KeyExfiltration,
}

/// One hazardous command: its class and the words that say what it does (option groups of
/// `rm` and `git` split into single letters), compared as a set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HazardCommand {
    /// What it does.
    pub(crate) class: CommandClass,
    /// Its words from the command's name on.
    pub(crate) words: BTreeSet<String>,
}

impl HazardCommand {
    /// Whether `self` (found in the output) says nothing `other` (found in the input) does
    /// not: the same class and no word that `other` lacks. The advisor quoting the agent's
    /// command, whole or in part, is review; adding a target or an option is not.
    pub(super) fn covered_by(&self, other: &HazardCommand) -> bool {
        self.class == other.class && self.words.is_subset(&other.words)
    }
}

/// Zero-width, joiner, bidi-control and other invisible format characters.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
    )
}

/// The Latin letter or ASCII sign a look-alike stands for, when it is one.
fn confusable(c: char) -> Option<char> {
    Some(match c {
        // Cyrillic.
        'а' | 'ɑ' | 'α' => 'a',
        'е' | 'ё' | 'ε' => 'e',
        'о' | 'ο' | 'σ' => 'o',
        'р' | 'ρ' => 'p',
        'с' | 'ϲ' => 'c',
        'у' | 'γ' => 'y',
        'х' | 'χ' => 'x',
        'і' | 'ї' | 'ι' | 'ı' => 'i',
        'ј' => 'j',
        'ѕ' => 's',
        'ԁ' => 'd',
        'һ' => 'h',
        'ԛ' => 'q',
        'ԝ' => 'w',
        'к' | 'κ' => 'k',
        'м' => 'm',
        'т' | 'τ' => 't',
        'п' => 'n',
        'г' => 'r',
        'ν' => 'v',
        'А' | 'Α' => 'a',
        'В' | 'Β' => 'b',
        'Е' | 'Ε' => 'e',
        'К' | 'Κ' => 'k',
        'М' | 'Μ' => 'm',
        'Н' | 'Η' => 'h',
        'О' | 'Ο' => 'o',
        'Р' | 'Ρ' => 'p',
        'С' => 'c',
        'Т' | 'Τ' => 't',
        'Х' | 'Χ' => 'x',
        'І' | 'Ι' => 'i',
        'Ј' => 'j',
        'Ѕ' => 's',
        'Ζ' => 'z',
        'Ν' => 'n',
        'Υ' | 'Ү' => 'y',
        // Dashes and minus signs that NFKC leaves alone.
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' => '-',
        // Quotation marks a shell would not take, but a reader reads as quotes.
        '\u{2018}' | '\u{2019}' | '\u{201C}' | '\u{201D}' => '"',
        _ => return None,
    })
}

/// `text` with invisible characters dropped, compatibility forms folded and look-alikes
/// mapped: what both readings start from.
fn fold(text: &str) -> String {
    text.chars()
        .filter(|c| !invisible(*c))
        .nfkc()
        .filter(|c| !invisible(*c))
        .map(|c| confusable(c).unwrap_or(c))
        .collect()
}

/// `text` as a command about to run is read by callers outside the quarantine (the action
/// gate, GT2): both readings — as a shell runs it and as a reader sees it — one line after
/// the other, so a command either reading finds is found.
pub(crate) fn normalise(text: &str) -> String {
    let mut both = as_run(text);
    both.push('\n');
    both.push_str(&as_read(text));
    both
}

/// `text` as a reader sees it (see the module's documentation): quotes removed, a
/// backslash escape keeps its character except `\n` and `\t` as JSON writes them (a line
/// break, a space; `\r` before `\n` ends the line with it).
pub(super) fn as_read(text: &str) -> String {
    let folded = fold(text);
    let mut out = String::with_capacity(folded.len());
    let mut chars = folded.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {}
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push(' '),
                Some('r') if chars.clone().take(2).eq(['\\', 'n']) => {}
                Some('\n' | '"' | '\'') | None => {}
                Some(other) => out.extend(other.to_lowercase()),
            },
            '$' if folded_ifs(&mut chars) => out.push(' '),
            _ => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// Where a shell's quote removal stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quoting {
    /// Outside quotes: a backslash quotes the next character, backslash-newline joins lines.
    None,
    /// In `'…'`: nothing is special.
    Single,
    /// In `"…"`: a backslash escapes only `$`, `` ` ``, `"`, `\` and a newline.
    Double,
    /// In `$'…'` (ANSI-C quoting): backslash escapes are decoded (`\n`, `\x72`, `\162`).
    AnsiC,
}

/// `text` as a shell runs it (see the module's documentation): quotes removed and backslash
/// escapes undone as a POSIX shell (and bash's `$'…'`) does, `${IFS}` a space, lower case.
pub(super) fn as_run(text: &str) -> String {
    let folded = fold(text);
    let mut out = String::with_capacity(folded.len());
    let mut chars = folded.chars().peekable();
    let mut quoting = Quoting::None;
    while let Some(c) = chars.next() {
        match (quoting, c) {
            (Quoting::Single | Quoting::AnsiC, '\'') | (Quoting::Double, '"') => {
                quoting = Quoting::None
            }
            (Quoting::None, '\'') => quoting = Quoting::Single,
            (Quoting::None, '"') => quoting = Quoting::Double,
            (Quoting::None, '$') if chars.peek() == Some(&'\'') => {
                chars.next();
                quoting = Quoting::AnsiC;
            }
            (Quoting::None, '\\') => match chars.next() {
                Some('\n') | None => {}
                Some(other) => out.extend(other.to_lowercase()),
            },
            (Quoting::Double, '\\') => match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&next @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    out.push(next);
                }
                _ => out.push('\\'),
            },
            (Quoting::AnsiC, '\\') => {
                if let Some(decoded) = ansi_c_escape(&mut chars) {
                    out.extend(decoded.to_lowercase());
                }
            }
            (Quoting::None | Quoting::Double, '$') if folded_ifs(&mut chars) => out.push(' '),
            (_, c) => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// After a backslash in `$'…'`: the character its escape stands for, consuming it (`None`
/// for a backslash that ends the text).
fn ansi_c_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<char> {
    let c = *chars.peek()?;
    if c.is_digit(8) {
        return Some(char_code(chars, 8, 3));
    }
    chars.next();
    Some(match c {
        'n' => '\n',
        't' | 'v' | 'f' => ' ',
        'r' => '\r',
        'a' => '\u{7}',
        'b' => '\u{8}',
        'e' | 'E' => '\u{1b}',
        'x' => char_code(chars, 16, 2),
        'u' => char_code(chars, 16, 4),
        'U' => char_code(chars, 16, 8),
        other => other,
    })
}

/// Consumes up to `most` digits in `radix` and answers the character they code (U+FFFD when
/// they code none).
fn char_code(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    radix: u32,
    most: usize,
) -> char {
    let mut value = 0u32;
    for _ in 0..most {
        match chars.peek().and_then(|c| c.to_digit(radix)) {
            Some(digit) => {
                value = value.saturating_mul(radix).saturating_add(digit);
                chars.next();
            }
            None => break,
        }
    }
    char::from_u32(value).unwrap_or('\u{FFFD}')
}

/// After a `$`: consumes `IFS` or `{IFS}` (any case) and says so.
fn folded_ifs(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> bool {
    let ahead: String = chars.clone().take(6).collect();
    let ahead = ahead.to_ascii_lowercase();
    let taken = if ahead.starts_with("{ifs}") {
        5
    } else if ahead.starts_with("ifs")
        && !ahead[3..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        3
    } else {
        return false;
    };
    for _ in 0..taken {
        chars.next();
    }
    true
}

/// A pipeline: its commands (`a | b`), each a list of words.
pub(crate) type Pipeline = Vec<Vec<String>>;

/// The pipelines of normalised `text`: cut at line breaks, `;`, `&`, `&&`, `||`, backticks
/// and parentheses (so `$(…)` and `<(…)` stand alone); a single `|` joins commands.
pub(crate) fn pipelines(text: &str) -> Vec<Pipeline> {
    let mut out: Vec<Pipeline> = Vec::new();
    let mut pipeline: Pipeline = Vec::new();
    let mut command: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    let end_word = |word: &mut String, command: &mut Vec<String>| {
        if !word.is_empty() {
            command.push(without_stop(std::mem::take(word)));
        }
    };
    let end_command = |command: &mut Vec<String>, pipeline: &mut Pipeline| {
        if !command.is_empty() {
            pipeline.push(std::mem::take(command));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '|' if chars.peek() != Some(&'|') => {
                end_word(&mut word, &mut command);
                end_command(&mut command, &mut pipeline);
            }
            '\n' | ';' | '&' | '|' | '`' | '(' | ')' => {
                if c == '|' {
                    chars.next();
                }
                end_word(&mut word, &mut command);
                end_command(&mut command, &mut pipeline);
                if !pipeline.is_empty() {
                    out.push(std::mem::take(&mut pipeline));
                }
            }
            c if c.is_whitespace() => end_word(&mut word, &mut command),
            c => word.push(c),
        }
    }
    end_word(&mut word, &mut command);
    end_command(&mut command, &mut pipeline);
    if !pipeline.is_empty() {
        out.push(pipeline);
    }
    out
}

/// A word's command name: its last path component (`/bin/rm` is `rm`).
pub(crate) fn name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Programs that run the text they read when given no script.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "ash", "fish", "mksh", "busybox",
];
const INTERPRETERS: &[&str] = &["python", "python3", "perl", "ruby", "node", "php"];

/// Commands that can send data to another host.
pub(crate) const NETWORK: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "socat", "scp", "sftp", "rsync", "ftp", "telnet",
    "http", "https", "xh", "ssh",
];

/// Where private keys and credentials live.
pub(crate) const KEY_FILES: &[&str] = &[
    ".ssh/",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".aws/credentials",
    ".netrc",
    ".gnupg",
    ".pgpass",
    ".git-credentials",
    ".docker/config.json",
    ".kube/config",
    "/etc/shadow",
    ".config/gh/hosts.yml",
];

/// Commands whose words begin a pipeline's quoted form (the prose before them is dropped).
const SOURCES: &[&str] = &[
    "curl", "wget", "echo", "printf", "cat", "base64", "xxd", "openssl", "gzip", "zcat",
];

/// The hazardous commands in normalised `text`; `trim` drops the prose that follows a
/// command (for the advisor's output, which talks about commands in sentences).
pub(crate) fn hazards(text: &str, trim: bool) -> Vec<HazardCommand> {
    let mut found = Vec::new();
    for pipeline in pipelines(text) {
        for command in &pipeline {
            if let Some(words) = destructive(command) {
                found.push(HazardCommand {
                    class: CommandClass::Destructive,
                    words: collect(words, trim),
                });
            }
        }
        if let Some(words) = pipe_to_shell(&pipeline) {
            found.push(HazardCommand {
                class: CommandClass::PipeToShell,
                words: collect(words, trim),
            });
        }
    }
    for line in text.lines() {
        if let Some(words) = exfiltration(line) {
            found.push(HazardCommand {
                class: CommandClass::KeyExfiltration,
                words: collect(words, trim),
            });
        }
    }
    found
}

/// The words of a command from its name on, option groups of `rm` and `git` split
/// (`-rf` is `-r -f`, `--recursive` is `-r`, `--force` is `-f`).
fn collect(words: Vec<String>, trim: bool) -> BTreeSet<String> {
    let words = if trim { trim_prose(words) } else { words };
    words.into_iter().collect()
}

/// `word` without the punctuation a sentence puts after it (`dist.` is `dist`); a word of
/// dots alone (`..`) stays.
fn without_stop(word: String) -> String {
    let bare = word.trim_end_matches(['.', ',', ':', '!', '?']);
    if bare.chars().any(|c| c.is_alphanumeric()) && bare.len() < word.len() {
        bare.to_string()
    } else {
        word
    }
}

/// Words a sentence goes on with right after naming a command ("that rm -rf removed
/// db/migrations", "rm -rf is never needed here"): verbs and function words, never taken
/// for an operand.
const PROSE: &[&str] = &[
    "a",
    "again",
    "also",
    "an",
    "and",
    "at",
    "but",
    "by",
    "call",
    "can",
    "command",
    "could",
    "deleted",
    "deletes",
    "destroyed",
    "did",
    "does",
    "dropped",
    "erased",
    "for",
    "from",
    "here",
    "in",
    "is",
    "it",
    "killed",
    "may",
    "might",
    "must",
    "nuked",
    "of",
    "on",
    "or",
    "ran",
    "removed",
    "removes",
    "should",
    "step",
    "that",
    "the",
    "then",
    "there",
    "this",
    "to",
    "too",
    "was",
    "were",
    "which",
    "wiped",
    "wipes",
    "with",
    "without",
    "would",
];

/// `words` up to the first plain word (letters only, not a command) after an operand, or up
/// to a word of [`PROSE`]: what a sentence goes on with after naming a command ("rm -rf
/// dist without checking").
fn trim_prose(words: Vec<String>) -> Vec<String> {
    let mut kept = Vec::with_capacity(words.len());
    let mut operand = false;
    for (index, word) in words.into_iter().enumerate() {
        let plain = word.chars().all(|c| c.is_ascii_alphabetic());
        let command = SHELLS.contains(&word.as_str())
            || NETWORK.contains(&word.as_str())
            || SOURCES.contains(&word.as_str())
            || word == "|";
        if index > 0 && plain && !command && (operand || PROSE.contains(&word.as_str())) {
            break;
        }
        if index > 0 && !word.starts_with('-') && !command {
            operand = true;
        }
        kept.push(word);
    }
    kept
}

/// Splits the option groups of a command that takes single-letter options.
pub(crate) fn split_options(words: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    let mut options_end = false;
    for word in words {
        if options_end || !word.starts_with('-') || word == "-" {
            out.push(word.clone());
        } else if word == "--" {
            options_end = true;
        } else if let Some(long) = word.strip_prefix("--") {
            out.push(match long {
                "recursive" => "-r".to_string(),
                "force" => "-f".to_string(),
                _ => word.clone(),
            });
        } else {
            out.extend(word[1..].chars().map(|c| format!("-{c}")));
        }
    }
    out
}

/// A destructive command in `command`: `rm` with recursive and force options anywhere
/// after it, `find … -delete` (or `-exec rm`), `git clean` with a force option, `git reset
/// --hard`. Its words from the command's name on.
fn destructive(command: &[String]) -> Option<Vec<String>> {
    for (at, word) in command.iter().enumerate() {
        let rest = &command[at..];
        match name(word) {
            "rm" => {
                let words = split_options(rest);
                let has = |o: &str| words.iter().any(|w| w == o);
                if (has("-r") || has("-R")) && has("-f") {
                    return Some(words);
                }
            }
            "find" => {
                let deletes = rest.iter().enumerate().any(|(i, w)| {
                    w == "-delete"
                        || (matches!(w.as_str(), "-exec" | "-execdir" | "-ok")
                            && rest.get(i + 1).is_some_and(|next| name(next) == "rm"))
                });
                if deletes {
                    return Some(rest.to_vec());
                }
            }
            "git" => {
                let words = split_options(rest);
                let sub = words.iter().skip(1).find(|w| !w.starts_with('-'));
                let has = |o: &str| words.iter().any(|w| w == o);
                match sub.map(String::as_str) {
                    Some("clean") if has("-f") => return Some(words),
                    Some("reset") if has("--hard") => return Some(words),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    None
}

/// A pipeline whose later command is a shell (or an interpreter given no script): its
/// words from the first command's source (`curl`, `echo`…) to the shell and its options.
fn pipe_to_shell(pipeline: &[Vec<String>]) -> Option<Vec<String>> {
    let runner = pipeline.iter().skip(1).position(|command| {
        let mut words = command.iter().skip_while(|w| {
            matches!(w.as_str(), "sudo" | "env" | "exec" | "command") || w.starts_with('-')
        });
        match words.next().map(|w| name(w)) {
            Some(shell) if SHELLS.contains(&shell) => true,
            Some(interpreter) if INTERPRETERS.contains(&interpreter) => {
                words.next().is_none_or(|w| w.starts_with('-'))
            }
            _ => false,
        }
    })? + 1;
    let first = &pipeline[0];
    let from = first
        .iter()
        .rposition(|w| SOURCES.contains(&name(w)))
        .unwrap_or(0);
    let mut words: Vec<String> = first[from..].to_vec();
    for command in &pipeline[1..runner] {
        words.push("|".to_string());
        words.extend(command.iter().cloned());
    }
    words.push("|".to_string());
    let shell = &pipeline[runner];
    let name_at = shell
        .iter()
        .position(|w| SHELLS.contains(&name(w)) || INTERPRETERS.contains(&name(w)))
        .unwrap_or(0);
    words.extend(shell[..=name_at].iter().cloned());
    words.extend(
        shell[name_at + 1..]
            .iter()
            .take_while(|w| w.starts_with('-'))
            .cloned(),
    );
    Some(words)
}

/// A line that names a private key or credentials file and a command that sends data to
/// another host: its words from the first such command or source on. A key given to `ssh`
/// or `scp` as an identity (`-i ~/.ssh/id_rsa`) and a public key (`.pub`) do not count.
fn exfiltration(line: &str) -> Option<Vec<String>> {
    if !KEY_FILES.iter().any(|k| line.contains(k)) {
        return None;
    }
    let spaced = line.replace('|', " | ");
    let words: Vec<String> = spaced
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '(' | ')' | '`'))
        .filter(|w| !w.is_empty())
        .map(|w| without_stop(w.to_string()))
        .collect();
    let key = words.iter().enumerate().any(|(i, w)| {
        let identity = i > 0 && matches!(words[i - 1].as_str(), "-i" | "--identity" | "-o");
        KEY_FILES.iter().any(|k| w.contains(k))
            && !w.ends_with(".pub")
            && !identity
            && !w.starts_with("identityfile=")
    });
    // `ssh` sends only what is piped into it.
    let piped = words.iter().any(|w| w == "|");
    let sender = words.iter().any(|w| {
        let bare = name(w);
        NETWORK.contains(&bare) && (bare != "ssh" || piped)
    });
    if !(key && sender) {
        return None;
    }
    let from = words
        .iter()
        .position(|w| NETWORK.contains(&name(w)) || SOURCES.contains(&name(w)))
        .unwrap_or(0);
    Some(words[from..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p5_as_read_undoes_quotes_escapes_ifs_and_look_alikes() {
        for (text, expected) in [
            ("r''m -rf /", "rm -rf /"),
            ("rm${IFS}-rf /", "rm -rf /"),
            ("rm$IFS-rf /", "rm -rf /"),
            ("rm${Ifs}-rf /", "rm -rf /"),
            ("echo $IFSX", "echo $ifsx"),
            ("rm \"-rf\" /", "rm -rf /"),
            ("r\\m -rf /", "rm -rf /"),
            ("r\u{200B}m -rf /", "rm -rf /"),
            ("ｒｍ －ｒｆ /", "rm -rf /"),
            ("гm -rf /", "rm -rf /"),
            ("\u{0440}m", "pm"),
            ("RM \u{2013}RF", "rm -rf"),
            ("a\\nb", "a\nb"),
        ] {
            assert_eq!(as_read(text), expected, "{text:?}");
        }
    }

    #[test]
    fn p5_as_run_undoes_quotes_and_escapes_as_a_shell_does() {
        for (text, expected) in [
            // Outside quotes a backslash quotes the next character.
            ("\\rm -rf ./build", "rm -rf ./build"),
            ("r\\m -rf", "rm -rf"),
            ("\\nrm -rf", "nrm -rf"),
            ("rm \\-rf", "rm -rf"),
            ("rm \\\n-rf", "rm -rf"),
            ("a\\\\b", "a\\b"),
            // Single quotes keep everything; double quotes escape only $ ` " \ newline.
            ("'\\rm' -rf", "\\rm -rf"),
            ("\"r\\m\" -rf", "r\\m -rf"),
            ("\"\\$home \\\"x\\\"\"", "$home \"x\""),
            ("don't \\rm", "dont \\rm"),
            // ANSI-C quoting decodes its escapes.
            ("$'\\x72m' -rf", "rm -rf"),
            ("$'\\162\\155' -rf", "rm -rf"),
            ("$'\\u0072m' -rf", "rm -rf"),
            ("$'a\\nb'", "a\nb"),
            ("$'it\\'s'", "it's"),
            ("rm${IFS}-rf", "rm -rf"),
            ("RM -RF", "rm -rf"),
        ] {
            assert_eq!(as_run(text), expected, "{text:?}");
        }
    }

    #[test]
    fn p5_as_read_keeps_the_character_of_a_backslash_escape_but_json_breaks() {
        for (text, expected) in [
            ("\\rm -rf ./build", "rm -rf ./build"),
            ("\\nrm -rf", "\nrm -rf"),
            ("\\trm -rf", " rm -rf"),
            ("a\\r\\nrm", "a\nrm"),
            ("\\find . -delete", "find . -delete"),
        ] {
            assert_eq!(as_read(text), expected, "{text:?}");
        }
    }

    #[test]
    fn p5_pipelines_split_at_separators_and_keep_pipes_together() {
        let got = pipelines("a b | c; d && e || f\n`g` $(h)");
        let words = |p: &Pipeline| {
            p.iter()
                .map(|c| c.join(" "))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        let got: Vec<String> = got.iter().map(words).collect();
        assert_eq!(got, ["a b | c", "d", "e", "f", "g", "$", "h"]);
    }
}
