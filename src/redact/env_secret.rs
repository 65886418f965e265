//! The plausibility checks of secret redaction (X5): what tells a credential assigned to a
//! name (`API_KEY=…`, `password: …`) or held in a URL from code, references and masks.

use std::ops::Range;

use regex::Captures;

use super::rules::{Check, Rule};
use super::{SecretKind, PLACEHOLDER_OPEN};

/// The kind and byte range to replace when `caps` passes its rule's check.
pub(super) fn accept(
    rule: &Rule,
    caps: &Captures<'_>,
    text: &str,
) -> Option<(SecretKind, Range<usize>)> {
    let value = caps.name("v").or_else(|| caps.name("q"))?;
    let mut kind = rule.kind;
    let mut range = value.range();
    let ok = match rule.check {
        Check::None => true,
        Check::Random => caps.name("b").is_some_and(|b| looks_random(b.as_str())),
        Check::Env => {
            let suffix = caps.name("n")?;
            // A lower-case suffix is a configuration key (`db_password: …`).
            let name = if suffix
                .as_str()
                .starts_with(|c: char| c.is_ascii_lowercase())
            {
                kind = SecretKind::ConfigSecret;
                config_name(text, suffix.range())
            } else {
                env_name(text, suffix.range())
            }?;
            let name_start = suffix.end() - name.len();
            let op = caps.name("op").map_or("=", |m| m.as_str());
            let quoted = caps.name("q").is_some();
            let colon = op.trim_start().starts_with(':') && !op.contains(":=");
            let tight = op == "=";
            let start = statement_start(text, name_start);
            // An assignment that starts a line takes the rest of the line when that is
            // plain words (`DB_PASSWORD=correct horse battery staple`,
            // YAML's `password: correct horse battery staple`).
            if !quoted && (tight || colon) && start == Start::Line {
                range.end = words_to_line_end(text, range.start, range.end);
            }
            let rest = &text[range.end..];
            let shape = ValueShape {
                quoted,
                colon,
                tight,
                config_key: kind == SecretKind::ConfigSecret,
                ends_line: ends_line(rest),
                starts_line: start != Start::Inside,
                followed_by_comma: rest.starts_with(','),
            };
            // A bare value right before `(`, `<`, `{` or `[` is a call, a generic type or a
            // literal of code (`hashlib.sha256(…)`, `OnceLock<String>`), not a secret.
            let code =
                !shape.quoted && matches!(rest.as_bytes().first(), Some(b'(' | b'<' | b'{' | b'['));
            let name = name.to_ascii_uppercase();
            !code && plausible_env_secret(&name, &text[range.clone()], shape)
        }
        Check::Url => plausible_url_password(value.as_str()),
    };
    (ok && !value.as_str().starts_with(PLACEHOLDER_OPEN)).then_some((kind, range))
}

/// Where an assignment's name stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    /// At the start of a line, possibly after `export`, `ENV`, `set` or a YAML list's `-`:
    /// a `.env`, YAML or Dockerfile line, whose bare value may hold spaces.
    Line,
    /// At the start of a shell command elsewhere: after `;`, `&&`, `$`, `env`, `sudo`,
    /// `-e`/`--env`, another `NAME=value` of the same command, or in a rendered tool
    /// call (`bash(NAME=…)`, `command: NAME=…`).
    Command,
    /// Anywhere else: inside code or prose.
    Inside,
}

/// Words that may stand before an assignment at the start of a line.
pub(super) const LINE_PREFIXES: &[&str] = &["export", "ENV", "set", "setenv", "-"];

/// Words that may stand before an assignment at the start of a shell command.
pub(super) const COMMAND_PREFIXES: &[&str] = &["env", "sudo", "-e", "--env", "--build-arg", "$"];

/// Where the name starting at `at` stands (see [`Start`]).
pub(super) fn statement_start(text: &str, at: usize) -> Start {
    let mut before = text[..at].trim_end_matches([' ', '\t']);
    let mut start = Start::Line;
    // At most a few steps back: a prefix word, or an earlier `NAME=value` of the same
    // command (`DB_USER=app DB_PASSWORD=…`).
    for _ in 0..4 {
        if before.is_empty() || before.ends_with(['\n', '\r']) || before.ends_with("\\n") {
            return start;
        }
        if before.ends_with(';')
            || before.ends_with("&&")
            || before.ends_with("bash(")
            || before.ends_with("command:")
        {
            return Start::Command;
        }
        let word_start = before
            .rfind([' ', '\t', '\n', '\r', '(', ';'])
            .map_or(0, |i| i + 1);
        let word = &before[word_start..];
        let assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        });
        if COMMAND_PREFIXES.contains(&word) {
            return Start::Command;
        }
        if assignment {
            start = Start::Command;
        } else if !LINE_PREFIXES.contains(&word) {
            return Start::Inside;
        }
        before = before[..word_start].trim_end_matches([' ', '\t']);
    }
    Start::Inside
}

/// Where a bare value that starts at `start` and ends at `end` ends when it and the rest of
/// its line are words of letters (a passphrase such as `correct horse battery staple`): the
/// end of the line's last word; otherwise `end`.
pub(super) fn words_to_line_end(text: &str, start: usize, end: usize) -> usize {
    let letters = |word: &[u8]| word.iter().all(u8::is_ascii_alphabetic);
    if !letters(&text.as_bytes()[start..end]) {
        return end;
    }
    let mut at = end;
    let mut last = end;
    let bytes = text.as_bytes();
    loop {
        let rest = &text[at..];
        if ends_line(rest) {
            return last;
        }
        let blanks = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        if blanks == 0 {
            return end;
        }
        let word_start = at + blanks;
        let word_len = bytes[word_start..]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
        if word_len == 0 {
            return end;
        }
        at = word_start + word_len;
        last = at;
    }
}

/// The whole environment-style name that ends with the suffix at `suffix`: the run of
/// upper-case letters, digits and underscores before it, which must start a word (a
/// lower-case letter before it makes it an identifier such as `myAPI_KEY`, not a name).
pub(super) fn env_name(text: &str, suffix: Range<usize>) -> Option<&str> {
    name_ending_at(
        text,
        suffix,
        |b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_',
        |b| b.is_ascii_alphanumeric() || b == b'_',
    )
}

/// The whole lower-case key that ends with the word at `suffix`: the run of lower-case
/// letters, digits, `_` and `-` before it, which must start a word (an upper-case letter or
/// a digit before it makes it part of something else, such as `DB_password`).
pub(super) fn config_name(text: &str, suffix: Range<usize>) -> Option<&str> {
    name_ending_at(
        text,
        suffix,
        |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-',
        |b| b.is_ascii_alphanumeric(),
    )
}

/// The run of `part` bytes before `suffix`, with the suffix; `None` when the byte before the
/// run `joins` it to something longer.
pub(super) fn name_ending_at(
    text: &str,
    suffix: Range<usize>,
    part: impl Fn(u8) -> bool,
    joins: impl Fn(u8) -> bool,
) -> Option<&str> {
    let before = text.get(..suffix.start)?;
    let start = before.bytes().rposition(|b| !part(b)).map_or(0, |i| i + 1);
    if before
        .as_bytes()
        .get(start.wrapping_sub(1))
        .is_some_and(|b| joins(*b))
    {
        return None;
    }
    text.get(start..suffix.end)
}

/// Whether the password part of a URL holds a value rather than a reference or a mask.
pub(super) fn plausible_url_password(value: &str) -> bool {
    if value.starts_with(['$', '{', '<']) || (value.starts_with('%') && value.ends_with('%')) {
        return false;
    }
    let mut chars = value.chars();
    match chars.next() {
        Some(first) => first.is_ascii_alphanumeric() || !chars.all(|c| c == first),
        None => false,
    }
}

/// Whether `body` looks machine-generated rather than like words: it mixes lower case,
/// upper case and digits, or holds a run of ten or more letters and digits that mixes two
/// of those classes (`sk-learn-0-24-compatible-estimator` does neither).
pub(super) fn looks_random(body: &str) -> bool {
    let mut all = Classes::default();
    let mut run = Classes::default();
    let mut run_len = 0usize;
    let mut long_mixed_run = false;
    for c in body.chars() {
        if c.is_ascii_alphanumeric() {
            run.add(c);
            all.add(c);
            run_len += 1;
            if run_len >= 10 && run.count() >= 2 {
                long_mixed_run = true;
            }
        } else {
            run = Classes::default();
            run_len = 0;
        }
    }
    all.count() == 3 || long_mixed_run
}

#[derive(Default, Clone, Copy)]
pub(super) struct Classes {
    lower: bool,
    upper: bool,
    digit: bool,
}

impl Classes {
    fn add(&mut self, c: char) {
        self.lower |= c.is_ascii_lowercase();
        self.upper |= c.is_ascii_uppercase();
        self.digit |= c.is_ascii_digit();
    }

    fn count(self) -> u8 {
        u8::from(self.lower) + u8::from(self.upper) + u8::from(self.digit)
    }
}

/// Names that end like secrets but conventionally hold public or structural values.
pub(super) const NON_SECRET_NAME_PARTS: &[&str] = &["PUBLIC", "PUBLISHABLE"];
pub(super) const NON_SECRET_NAME_ENDS: &[&str] = &[
    "CACHE_KEY",
    "STORAGE_KEY",
    "SORT_KEY",
    "PRIMARY_KEY",
    "FOREIGN_KEY",
    "PARTITION_KEY",
    "ROUTING_KEY",
];

/// Markers of a value that refers to a secret instead of holding one, or stands in for it.
pub(super) const REFERENCE_MARKERS: &[&str] = &[
    "process.env",
    "os.environ",
    "env::var",
    "getenv",
    "env[",
    "your",
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "xxxx",
    "...",
];

/// How a value is written after its name: what tells configuration from code.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ValueShape {
    /// In quotes (then anything long enough counts).
    pub(super) quoted: bool,
    /// After `:` (YAML, a type annotation) rather than `=`.
    pub(super) colon: bool,
    /// `NAME=value` with no space: a shell or `.env` assignment, where a value is text.
    pub(super) tight: bool,
    /// The name is a lower-case configuration key (`password`, `api_key`).
    pub(super) config_key: bool,
    /// Nothing but blanks or a comment follows it on its line.
    pub(super) ends_line: bool,
    /// The assignment starts a line or a shell command (see [`Start`]).
    pub(super) starts_line: bool,
    /// A `,` follows it: an argument or a field of code.
    pub(super) followed_by_comma: bool,
}

/// Whether `rest` (what follows a value) ends the line: blanks, then the end of the text,
/// a line break (real or JSON-escaped) or a `#` comment.
pub(super) fn ends_line(rest: &str) -> bool {
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.is_empty() || rest.starts_with(['\n', '\r', '#']) || rest.starts_with("\\n")
}

/// Whether `value`, assigned to `name` in `shape`, should be redacted.
pub(super) fn plausible_env_secret(name: &str, value: &str, shape: ValueShape) -> bool {
    if NON_SECRET_NAME_PARTS.iter().any(|part| name.contains(part))
        || NON_SECRET_NAME_ENDS.iter().any(|end| name.ends_with(end))
    {
        return false;
    }
    let value = value.trim();
    if value.chars().count() < 8 {
        return false;
    }
    // References and templates: `${TOKEN}`, `$TOKEN`, `%TOKEN%`, `{{ token }}`, `<key>`.
    if value.starts_with(['$', '%', '<', '{', '@']) {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    if REFERENCE_MARKERS
        .iter()
        .any(|marker| lower.contains(marker))
    {
        return false;
    }
    // Masks: `********`, `--------`, `••••••••`.
    let mut chars = value.chars();
    if let Some(first) = chars.next() {
        if !first.is_ascii_alphanumeric() && chars.all(|c| c == first) {
            return false;
        }
    }
    if shape.quoted {
        return true;
    }
    // Words that name the key itself refer to it (`password=new_password`, YAML
    // `token: the access token`).
    let words_only = value
        .chars()
        .all(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '.' | ':' | '-' | ' ' | '\t'));
    if words_only && names_the_key(name, value) {
        return false;
    }
    // Digits or other symbols: not a word or an identifier.
    let code_like = value
        .chars()
        .all(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '.' | ':'));
    if !code_like {
        return true;
    }
    // Letters and `_ . :` only: a bare identifier, path or type (`compute_key`,
    // `settings.api_key`, `CancellationToken::new`, `OTHER_API_KEY`, `None`) is code — but
    // a passphrase is letters too (`CorrectHorseBatteryStaple`, `SG.abc.def`).
    let upper = value.chars().any(|c| c.is_ascii_uppercase());
    let lower = value.chars().any(|c| c.is_ascii_lowercase());
    let constant = !lower; // `OTHER_API_KEY`, `NONE`
    if constant {
        return false;
    }
    let letters_only = value.chars().all(|c| c.is_ascii_alphabetic());
    if letters_only && upper {
        // Mixed case: a passphrase after `=`; after `:` a type name (`PASSWORD:
        // PasswordHash,`) unless it ends the line of a lower-case configuration key (YAML
        // `password: CorrectHorseBatteryStaple`).
        return !shape.colon || (shape.config_key && shape.ends_line);
    }
    if !upper {
        // Lower case only: a passphrase where a shell assignment or configuration is
        // written (`SMTP_PASSWORD=correcthorsebatterystaple`, YAML `token: …` ending its
        // line), an identifier or a path where code is (`password=new_password,`,
        // `API_KEY=settings.api_key`, `token: crate::auth::token`).
        if value.contains("::") {
            return false;
        }
        return shape.starts_line
            && ((shape.tight && !shape.followed_by_comma) || (shape.colon && shape.ends_line));
    }
    // `NAME=Value.Path` in a shell or `.env` file is text, not code.
    shape.tight && !shape.config_key
}

/// Whether `value` names the secret it is assigned to rather than holding it: its first or
/// its last word (split at `.`, `_`, `-`, `:`, blanks and where lower case turns upper) is the
/// last word of `name`, alone or as a short compound (`password=new_password`, `password`,
/// `API_KEY=settings.api_key`, `token: next_token`, `hashedpassword`, `tokenizer`). The word
/// inside a value (`SummerPasswordHorse`, `mypasswordishorsey`) is a passphrase's.
pub(super) fn names_the_key(name: &str, value: &str) -> bool {
    let last = name.rsplit(['_', '-']).next().unwrap_or(name);
    let forms: &[&str] =
        if last.eq_ignore_ascii_case("password") || last.eq_ignore_ascii_case("passwd") {
            &["password", "passwd"]
        } else {
            &[last]
        };
    let mut words = value_words(value);
    let first = words.next();
    let last_word = words.last().or(first);
    [first, last_word]
        .into_iter()
        .flatten()
        .any(|word| forms.iter().any(|form| is_form_of(word, form)))
}

/// The words of `value`: runs of letters and digits, also cut where lower case turns upper.
pub(super) fn value_words(value: &str) -> impl Iterator<Item = &str> {
    let bytes = value.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && !bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        if at >= bytes.len() {
            return None;
        }
        let start = at;
        at += 1;
        while at < bytes.len()
            && bytes[at].is_ascii_alphanumeric()
            && !(bytes[at].is_ascii_uppercase() && bytes[at - 1].is_ascii_lowercase())
        {
            at += 1;
        }
        value.get(start..at)
    })
}

/// Whether `word` is `form` (any case), or a compound of it with at most six letters before
/// it (`hashedpassword`, `newtoken`) or four after it (`tokenizer`, `passwords`).
pub(super) fn is_form_of(word: &str, form: &str) -> bool {
    let (w, f) = (word.len(), form.len());
    if w < f || form.is_empty() {
        return false;
    }
    let starts = word
        .get(..f)
        .is_some_and(|head| head.eq_ignore_ascii_case(form));
    let ends = word
        .get(w - f..)
        .is_some_and(|tail| tail.eq_ignore_ascii_case(form));
    (starts && w - f <= 4) || (ends && w - f <= 6)
}
