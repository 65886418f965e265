//! Secret redaction (SPEC X5): before a delta leaves the process, values that look like
//! credentials are replaced by a placeholder naming their kind, such as
//! `[redacted:openai-key]`.
//!
//! A [`Redactor`] is compiled once (per feed cursor) and cheap to clone. Text that holds
//! nothing secret costs one pass of a combined pattern set and comes back borrowed,
//! unchanged. Each kind of secret is recognised by a pattern plus a plausibility check, so
//! that ordinary code (`let key = compute_key();`, `sk-learn`, `TOKEN=${TOKEN}`,
//! `process.env.API_KEY`, `<your-key-here>`, `***`) is left alone for the reviewer to read.
//!
//! ```
//! use advisor::Redactor;
//!
//! let redactor = Redactor::new().expect("built-in patterns compile");
//! let line = "export OPENAI_API_KEY=sk-proj-Xf93kLm2Qp8Zr7Tt4Vb1Nc6Hd0Jw5Ys";
//! assert_eq!(redactor.redact(line), "export OPENAI_API_KEY=[redacted:env-secret]");
//! assert_eq!(redactor.redact("let key = compute_key();"), "let key = compute_key();");
//! ```

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use regex::{Captures, Regex};

/// The kind of credential a redaction replaced; it names the placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecretKind {
    /// A PEM or PGP private key block (`-----BEGIN … PRIVATE KEY-----`).
    PrivateKey,
    /// The value assigned to an environment-style name ending in `_KEY`, `_TOKEN`,
    /// `_SECRET`, `PASSWORD` or `_KEY_BASE`.
    EnvSecret,
    /// The value of a lower-case key ending in `password`, `passwd`, `secret`, `token`,
    /// `api_key` or `apikey` in YAML, `.env`, INI or TOML text (`password: …`,
    /// `db_password=…`, `client-secret = "…"`, `api_key: …`).
    ConfigSecret,
    /// A password given on a command line: `curl -u user:pass`, `mysql -pPASS`.
    CliPassword,
    /// The password of credentials inside a URL (`https://user:pass@host`); the user name
    /// stays.
    UrlPassword,
    /// An AWS secret access key (`aws_secret_access_key = …`).
    AwsSecretKey,
    /// The token of an `Authorization: Bearer …` header or a `Bearer <token>` mention.
    BearerToken,
    /// The credentials of an `Authorization: Basic …` header.
    BasicAuth,
    /// A JSON Web Token (`eyJ….eyJ….…`).
    Jwt,
    /// An Anthropic API key (`sk-ant-…`).
    AnthropicKey,
    /// An OpenRouter API key (`sk-or-v1-…`).
    OpenRouterKey,
    /// An OpenAI API key (`sk-…`, `sk-proj-…`).
    OpenAiKey,
    /// A GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    GitHubToken,
    /// A Stripe secret, restricted or webhook key (`sk_live_`, `rk_live_`, `whsec_`…).
    StripeKey,
    /// A Slack token (`xoxb-…` and the other `xox?-` forms).
    SlackToken,
    /// A Google API key (`AIza…`).
    GoogleApiKey,
    /// An AWS access key id (`AKIA…`, `ASIA…`).
    AwsAccessKeyId,
    /// A GitLab personal access token (`glpat-…`).
    GitLabToken,
    /// A Hugging Face token (`hf_…`).
    HuggingFaceToken,
    /// An npm access token (`npm_…`).
    NpmToken,
    /// A SendGrid API key (`SG.….…`).
    SendGridKey,
}

impl SecretKind {
    /// The kind's name as it appears in the placeholder.
    pub fn as_str(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private-key",
            SecretKind::EnvSecret => "env-secret",
            SecretKind::ConfigSecret => "config-secret",
            SecretKind::CliPassword => "cli-password",
            SecretKind::UrlPassword => "url-password",
            SecretKind::AwsSecretKey => "aws-secret-key",
            SecretKind::BearerToken => "bearer-token",
            SecretKind::BasicAuth => "basic-auth",
            SecretKind::Jwt => "jwt",
            SecretKind::AnthropicKey => "anthropic-key",
            SecretKind::OpenRouterKey => "openrouter-key",
            SecretKind::OpenAiKey => "openai-key",
            SecretKind::GitHubToken => "github-token",
            SecretKind::StripeKey => "stripe-key",
            SecretKind::SlackToken => "slack-token",
            SecretKind::GoogleApiKey => "google-api-key",
            SecretKind::AwsAccessKeyId => "aws-access-key-id",
            SecretKind::GitLabToken => "gitlab-token",
            SecretKind::HuggingFaceToken => "huggingface-token",
            SecretKind::NpmToken => "npm-token",
            SecretKind::SendGridKey => "sendgrid-key",
        }
    }

    /// The text that replaces a secret of this kind: `[redacted:KIND]`.
    pub fn placeholder(self) -> String {
        format!("{PLACEHOLDER_OPEN}{}]", self.as_str())
    }
}

impl fmt::Display for SecretKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One secret found in a text: its kind and the byte range that the placeholder replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    /// What was recognised.
    pub kind: SecretKind,
    /// The replaced bytes (for an assignment, only the value).
    pub range: Range<usize>,
}

/// A built-in pattern failed to compile (a bug in this module, reported rather than
/// panicking; the feed then sends deltas unredacted and logs the error).
#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    /// One rule's pattern was rejected by the regex engine.
    #[error("secret pattern `{kind}` does not compile: {source}")]
    Pattern {
        /// The rule whose pattern failed.
        kind: SecretKind,
        /// The engine's error.
        source: regex::Error,
    },
    /// The alternation of all patterns (the prefilter) was rejected.
    #[error("combined secret patterns do not compile: {0}")]
    Combined(#[source] regex::Error),
}

/// The start of every placeholder; a value that starts with it is never redacted again.
const PLACEHOLDER_OPEN: &str = "[redacted:";

/// How a rule's candidate is checked before it is redacted.
#[derive(Debug, Clone, Copy)]
enum Check {
    /// The pattern alone is specific enough.
    None,
    /// The `b` group (the random part after the prefix) must look machine-generated.
    Random,
    /// An environment-style assignment: the value must not be a reference, a placeholder,
    /// a mask, an identifier or too short, and the name must not be a well-known non-secret.
    Env,
    /// A URL's password: anything but a reference (`${PASS}`, `{password}`, `<pass>`) or a
    /// mask (`***`).
    Url,
}

struct Rule {
    kind: SecretKind,
    /// The rule's own pattern, compiled the first time its prefilter lets text through:
    /// compiling every rule costs more than reading a small session, and text without
    /// secrets never needs them.
    pattern: String,
    regex: OnceLock<Result<Regex, regex::Error>>,
    check: Check,
    /// The prefilter ([`Compiled::any`]) that clears text of this rule.
    group: usize,
}

impl Rule {
    /// The rule's compiled pattern; `None` (and an error logged once) if it does not
    /// compile, which the tests rule out for the built-in patterns.
    fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| {
                Regex::new(&self.pattern).inspect_err(|error| {
                    tracing::error!(kind = %self.kind, %error, "secret pattern does not compile");
                })
            })
            .as_ref()
            .ok()
    }
}

/// The rules whose patterns go into the second prefilter: their leading literals are
/// common words (`password`, `secret`, `://`), and one alternation of every rule with so
/// many literals loses the engine's fast literal search (measured: the no-secret path
/// became several times slower), so they are cleared by a small alternation of their own.
const SECOND_GROUP: &[SecretKind] = &[
    SecretKind::ConfigSecret,
    SecretKind::UrlPassword,
    SecretKind::CliPassword,
];

/// A line break inside a private key block: real whitespace or a JSON-escaped `\n`/`\r`.
const PEM_SEP: &str = r"(?:[ \t\r\n]|\\[nr])";

/// The built-in rules, most specific first: when two candidates replace the same bytes,
/// the earlier rule names the placeholder. The rules whose shape is built from parts come
/// first, then the fixed token formats.
fn rule_sources() -> Vec<(SecretKind, String, Check)> {
    let mut rules = shaped_rules();
    rules.extend(
        TOKEN_RULES
            .iter()
            .map(|(kind, pattern, check)| (*kind, pattern.to_string(), *check)),
    );
    rules
}

/// The rules built from parts: private keys, assignments, URL and command-line passwords.
fn shaped_rules() -> Vec<(SecretKind, String, Check)> {
    let s = PEM_SEP;
    let pem_label = r"-----(?:BEGIN|END)[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----";
    let begin = pem_label.replace("(?:BEGIN|END)", "BEGIN");
    let end = pem_label.replace("(?:BEGIN|END)", "END");
    let pem = format!(
        r"(?P<v>{begin}(?:{s}*(?:Proc-Type|DEK-Info|Version|Comment):[ \t]*[A-Za-z0-9,.\-]+)*(?:{s}*[A-Za-z0-9+/=]{{16,}})+(?:{s}*[A-Za-z0-9+/=]{{1,15}})?(?:{s}*{end})?)"
    );
    // The pattern starts at the name's suffix, a literal the engine searches for quickly;
    // the rest of the (upper-case) name is read backwards in `env_name`. The value is
    // either quoted (`q`, may hold spaces) or a bare run of characters (`v`).
    // `op` is the assignment with its spacing: its shape tells code from configuration.
    let env = r#"(?P<n>_KEY_BASE|_KEY|_TOKEN|_SECRET|PASSWORD)(?-u:\b)\\?["']?(?P<op>[ \t]*(?::=|[:=])[ \t]*)(?:\\?["'](?P<q>[^"'\\\r\n…]+)|(?P<v>[^\s"'`\\,;(){}<>\[\]…]+))"#;
    // Credentials in a URL: `scheme://user:password@host`, the user possibly empty, both
    // made of the characters a URL's user part may hold (RFC 3986), so the classes stay
    // small and ASCII.
    let url = r"://[A-Za-z0-9._~%!$&'()*+,;=\-]*:(?P<v>[A-Za-z0-9._~%!$&'()*+,;=:\-]+)@";
    // Lower-case keys (`password: …` in YAML, `db_password=…`): the same shape, anchored on
    // the key's last word, which must end there (`secrets:`, `password_hash:` are other
    // keys).
    let config = env.replace(
        "(?P<n>_KEY_BASE|_KEY|_TOKEN|_SECRET|PASSWORD)",
        "(?P<n>password|passwd|secret|token|api_key|apikey)",
    );
    // Passwords on a command line: `curl -u user:pass` (the user stays) and the MySQL
    // clients' `-pPASS` (a bare `-p` asks for it and holds nothing).
    let curl = r#"(?-u:\b)curl(?-u:\b)[^\n|;&]*?[ \t](?:-u|--user)(?:[ \t]+|=)['"]?[^\s:'"`\[\]]*:(?P<v>[^\s'"`\[\]]+)"#;
    let mysql = r#"(?-u:\b)(?:mysql|mysqldump|mysqladmin|mariadb)(?-u:\b)[^\n|;&]*?[ \t]-p(?P<v>[^\s'"`]+)"#;
    vec![
        (SecretKind::PrivateKey, pem, Check::None),
        (SecretKind::EnvSecret, env.to_string(), Check::Env),
        (SecretKind::ConfigSecret, config, Check::Env),
        (SecretKind::UrlPassword, url.to_string(), Check::Url),
        (SecretKind::CliPassword, curl.to_string(), Check::Url),
        (SecretKind::CliPassword, mysql.to_string(), Check::Url),
    ]
}

/// The fixed token formats: a prefix or a key name, then the random body (`b`) checked.
const TOKEN_RULES: [(SecretKind, &str, Check); 16] = [
    (
        SecretKind::AwsSecretKey,
        r#"(?i:aws_secret_access_key)\\?["']?[ \t]*(?::=|[:=])[ \t]*\\?["']?(?P<v>(?P<b>[A-Za-z0-9/+=]{20,}))"#,
        Check::Random,
    ),
    (
        SecretKind::BearerToken,
        r"(?-u:\b)(?i:bearer)[ \t]+(?P<v>(?P<b>[A-Za-z0-9._~+/\-]{16,}=*))",
        Check::Random,
    ),
    (
        SecretKind::BasicAuth,
        r#"(?i:authorization)\\?[":\s=]+(?i:basic)[ \t]+(?P<v>(?P<b>[A-Za-z0-9+/]{12,}=*))"#,
        Check::Random,
    ),
    (
        SecretKind::Jwt,
        r"(?-u:\b)(?P<v>(?P<b>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]+)?))",
        Check::Random,
    ),
    (
        SecretKind::AnthropicKey,
        r"(?-u:\b)(?P<v>sk-ant-(?P<b>[A-Za-z0-9_\-]{20,}))",
        Check::Random,
    ),
    (
        SecretKind::OpenRouterKey,
        r"(?-u:\b)(?P<v>sk-or-v1-(?P<b>[A-Za-z0-9]{20,}))",
        Check::Random,
    ),
    (
        SecretKind::OpenAiKey,
        r"(?-u:\b)(?P<v>sk-(?P<b>[A-Za-z0-9_\-]{20,}))",
        Check::Random,
    ),
    (
        SecretKind::GitHubToken,
        r"(?-u:\b)(?P<v>(?:gh[pousr]_|github_pat_)(?P<b>[A-Za-z0-9_]{20,}))",
        Check::Random,
    ),
    (
        SecretKind::StripeKey,
        r"(?-u:\b)(?P<v>(?:(?:sk|rk)_(?:live|test)_|whsec_)(?P<b>[A-Za-z0-9]{16,}))",
        Check::Random,
    ),
    (
        SecretKind::SlackToken,
        r"(?-u:\b)(?P<v>xox[abprs]-(?P<b>[A-Za-z0-9\-]{10,}))",
        Check::Random,
    ),
    (
        SecretKind::GoogleApiKey,
        r"(?-u:\b)(?P<v>AIza(?P<b>[A-Za-z0-9_\-]{30,}))",
        Check::Random,
    ),
    (
        SecretKind::AwsAccessKeyId,
        r"(?-u:\b)(?P<v>(?:AKIA|ASIA)[A-Z0-9]{16})(?-u:\b)",
        Check::None,
    ),
    (
        SecretKind::GitLabToken,
        r"(?-u:\b)(?P<v>glpat-(?P<b>[A-Za-z0-9_\-]{20,}))",
        Check::Random,
    ),
    (
        SecretKind::HuggingFaceToken,
        r"(?-u:\b)(?P<v>hf_(?P<b>[A-Za-z0-9]{30,}))",
        Check::Random,
    ),
    (
        SecretKind::NpmToken,
        r"(?-u:\b)(?P<v>npm_(?P<b>[A-Za-z0-9]{36,}))",
        Check::Random,
    ),
    (
        SecretKind::SendGridKey,
        r"(?-u:\b)(?P<v>SG\.(?P<b>[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}))",
        Check::Random,
    ),
];

struct Compiled {
    /// The rule patterns as two alternations (see [`SECOND_GROUP`]): the passes that clear
    /// secret-free text. Every alternative starts with (or, for names, is anchored on) a
    /// literal, so the engine skips between literal hits instead of running an automaton
    /// over every byte.
    any: [Regex; 2],
    rules: Vec<Rule>,
}

/// Replaces credentials in text by `[redacted:KIND]` placeholders (SPEC X5).
///
/// Built once and shared: cloning is an `Arc` bump. Redaction never panics, keeps the text
/// valid UTF-8, and is idempotent (redacting redacted text changes nothing).
#[derive(Clone)]
pub struct Redactor {
    inner: Arc<Compiled>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("rules", &self.inner.rules.len())
            .finish()
    }
}

/// At most this many passes: a pass that replaces something is followed by another so
/// that the result is a fixed point (in practice the second pass finds nothing).
const MAX_PASSES: usize = 4;

impl Redactor {
    /// Compiles the built-in patterns' prefilters; each rule's own pattern is compiled when
    /// text first reaches it (see [`Redactor::compile_rules`]).
    pub fn new() -> Result<Self, RedactError> {
        let sources = rule_sources();
        let group_of = |kind: &SecretKind| usize::from(SECOND_GROUP.contains(kind));
        let [first, second] = [0, 1].map(|group| {
            let alternation = sources
                .iter()
                .filter(|(kind, _, _)| group_of(kind) == group)
                .map(|(_, pattern, _)| format!("(?:{})", unnamed(pattern)))
                .collect::<Vec<_>>()
                .join("|");
            Regex::new(&alternation).map_err(RedactError::Combined)
        });
        let any = [first?, second?];
        let rules = sources
            .into_iter()
            .map(|(kind, pattern, check)| Rule {
                kind,
                pattern,
                regex: OnceLock::new(),
                check,
                group: group_of(&kind),
            })
            .collect();
        Ok(Self {
            inner: Arc::new(Compiled { any, rules }),
        })
    }

    /// Compiles every rule's own pattern now rather than when text first reaches it; the
    /// first pattern that does not compile is the error.
    pub fn compile_rules(&self) -> Result<(), RedactError> {
        for rule in &self.inner.rules {
            if let Err(source) = rule.regex.get_or_init(|| Regex::new(&rule.pattern)) {
                return Err(RedactError::Pattern {
                    kind: rule.kind,
                    source: source.clone(),
                });
            }
        }
        Ok(())
    }

    /// `text` with every recognised secret replaced by its placeholder; borrowed and
    /// unchanged when nothing is found.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut current: Cow<'a, str> = Cow::Borrowed(text);
        for _ in 0..MAX_PASSES {
            let found = self.find(&current);
            if found.is_empty() {
                break;
            }
            let next = replace(&current, &found);
            current = Cow::Owned(next);
        }
        current
    }

    /// The secrets in `text`, in order and non-overlapping: what one pass of
    /// [`Redactor::redact`] replaces.
    pub fn find(&self, text: &str) -> Vec<Redaction> {
        let hit = self.inner.any.each_ref().map(|any| any.is_match(text));
        if !hit.contains(&true) {
            return Vec::new();
        }
        let mut candidates: Vec<(Redaction, usize)> = Vec::new();
        for (index, rule) in self.inner.rules.iter().enumerate() {
            if !hit[rule.group] {
                continue;
            }
            let Some(regex) = rule.regex() else { continue };
            for caps in regex.captures_iter(text) {
                if let Some((kind, range)) = accept(rule, &caps, text) {
                    candidates.push((Redaction { kind, range }, index));
                }
            }
        }
        // Earliest first; at the same start the longer span, then the earlier rule.
        candidates.sort_by(|(a, ai), (b, bi)| {
            a.range
                .start
                .cmp(&b.range.start)
                .then(b.range.end.cmp(&a.range.end))
                .then(ai.cmp(bi))
        });
        let mut kept: Vec<Redaction> = Vec::with_capacity(candidates.len());
        for (candidate, _) in candidates {
            if kept
                .last()
                .is_none_or(|last| candidate.range.start >= last.range.end)
            {
                kept.push(candidate);
            }
        }
        kept
    }
}

/// The kind and byte range to replace when `caps` passes its rule's check.
fn accept(rule: &Rule, caps: &Captures<'_>, text: &str) -> Option<(SecretKind, Range<usize>)> {
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
enum Start {
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
const LINE_PREFIXES: &[&str] = &["export", "ENV", "set", "setenv", "-"];

/// Words that may stand before an assignment at the start of a shell command.
const COMMAND_PREFIXES: &[&str] = &["env", "sudo", "-e", "--env", "--build-arg", "$"];

/// Where the name starting at `at` stands (see [`Start`]).
fn statement_start(text: &str, at: usize) -> Start {
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
fn words_to_line_end(text: &str, start: usize, end: usize) -> usize {
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
fn env_name(text: &str, suffix: Range<usize>) -> Option<&str> {
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
fn config_name(text: &str, suffix: Range<usize>) -> Option<&str> {
    name_ending_at(
        text,
        suffix,
        |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-',
        |b| b.is_ascii_alphanumeric(),
    )
}

/// The run of `part` bytes before `suffix`, with the suffix; `None` when the byte before the
/// run `joins` it to something longer.
fn name_ending_at(
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
fn plausible_url_password(value: &str) -> bool {
    if value.starts_with(['$', '{', '<']) || (value.starts_with('%') && value.ends_with('%')) {
        return false;
    }
    let mut chars = value.chars();
    match chars.next() {
        Some(first) => first.is_ascii_alphanumeric() || !chars.all(|c| c == first),
        None => false,
    }
}

/// `pattern` with its named groups made non-capturing (names may repeat across rules, so
/// the alternation of all rules carries none).
fn unnamed(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(at) = rest.find("(?P<") {
        out.push_str(&rest[..at]);
        out.push_str("(?:");
        let after = &rest[at + 4..];
        rest = after.find('>').map_or(after, |end| &after[end + 1..]);
    }
    out.push_str(rest);
    out
}

/// Copies `text` with each (sorted, non-overlapping) redaction replaced by its placeholder.
fn replace(text: &str, found: &[Redaction]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for redaction in found {
        let (Some(before), true) = (
            text.get(at..redaction.range.start),
            text.is_char_boundary(redaction.range.end),
        ) else {
            continue;
        };
        out.push_str(before);
        out.push_str(&redaction.kind.placeholder());
        at = redaction.range.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    out
}

/// Whether `body` looks machine-generated rather than like words: it mixes lower case,
/// upper case and digits, or holds a run of ten or more letters and digits that mixes two
/// of those classes (`sk-learn-0-24-compatible-estimator` does neither).
pub fn looks_random(body: &str) -> bool {
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
struct Classes {
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
const NON_SECRET_NAME_PARTS: &[&str] = &["PUBLIC", "PUBLISHABLE"];
const NON_SECRET_NAME_ENDS: &[&str] = &[
    "CACHE_KEY",
    "STORAGE_KEY",
    "SORT_KEY",
    "PRIMARY_KEY",
    "FOREIGN_KEY",
    "PARTITION_KEY",
    "ROUTING_KEY",
];

/// Markers of a value that refers to a secret instead of holding one, or stands in for it.
const REFERENCE_MARKERS: &[&str] = &[
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
struct ValueShape {
    /// In quotes (then anything long enough counts).
    quoted: bool,
    /// After `:` (YAML, a type annotation) rather than `=`.
    colon: bool,
    /// `NAME=value` with no space: a shell or `.env` assignment, where a value is text.
    tight: bool,
    /// The name is a lower-case configuration key (`password`, `api_key`).
    config_key: bool,
    /// Nothing but blanks or a comment follows it on its line.
    ends_line: bool,
    /// The assignment starts a line or a shell command (see [`Start`]).
    starts_line: bool,
    /// A `,` follows it: an argument or a field of code.
    followed_by_comma: bool,
}

/// Whether `rest` (what follows a value) ends the line: blanks, then the end of the text,
/// a line break (real or JSON-escaped) or a `#` comment.
fn ends_line(rest: &str) -> bool {
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.is_empty() || rest.starts_with(['\n', '\r', '#']) || rest.starts_with("\\n")
}

/// Whether `value`, assigned to `name` in `shape`, should be redacted.
fn plausible_env_secret(name: &str, value: &str, shape: ValueShape) -> bool {
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
fn names_the_key(name: &str, value: &str) -> bool {
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
fn value_words(value: &str) -> impl Iterator<Item = &str> {
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
fn is_form_of(word: &str, form: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        match Redactor::new() {
            Ok(r) => r,
            Err(err) => panic!("{err}"),
        }
    }

    #[test]
    fn x5_every_builtin_pattern_compiles() {
        let redactor = redactor();
        assert_eq!(redactor.inner.rules.len(), rule_sources().len());
        // The rules' own patterns are compiled on first use; all of them compile.
        assert!(redactor.inner.rules.iter().all(|r| r.regex.get().is_none()));
        if let Err(err) = redactor.compile_rules() {
            panic!("{err}");
        }
        assert!(redactor.inner.rules.iter().all(|r| r.regex().is_some()));
    }

    #[test]
    fn x5_looks_random_separates_keys_from_words() {
        assert!(looks_random("proj-Xf93kLm2Qp8Zr7Tt4Vb1"));
        assert!(looks_random("0123456789abcdef0123"));
        assert!(!looks_random("learn-0-24-compatible-estimator"));
        assert!(!looks_random("authentication-required"));
    }

    #[test]
    fn x5_env_check_rejects_references_and_masks() {
        let bare = ValueShape::default();
        assert!(plausible_env_secret("API_KEY", "a8f3k2m9x7", bare));
        for value in [
            "${TOKEN}",
            "$TOKEN_VALUE",
            "process.env.API_KEY",
            "********",
            "compute_key",
            "OTHER_API_KEY",
            "short",
            "<your-key-here>",
        ] {
            assert!(!plausible_env_secret("API_KEY", value, bare), "{value}");
        }
        assert!(!plausible_env_secret(
            "STRIPE_PUBLISHABLE_KEY",
            "pk_live_123456789",
            bare
        ));
        let quoted = ValueShape {
            quoted: true,
            ..bare
        };
        assert!(plausible_env_secret("PASSWORD", "correct horse", quoted));
    }

    #[test]
    fn x5_env_name_reads_the_whole_upper_case_name_back_from_its_suffix() {
        let text = "export OPENAI_API_KEY=v; myAPI_KEY=v; PASSWORD=v";
        let at = |needle: &str| {
            let start = text.find(needle).unwrap_or_default();
            start..start + needle.len()
        };
        let suffix = at("_KEY=v;").start..at("_KEY=v;").start + 4;
        assert_eq!(env_name(text, suffix), Some("OPENAI_API_KEY"));
        let mine = at("I_KEY=v; P").start + 1;
        assert_eq!(env_name(text, mine..mine + 4), None);
        assert_eq!(env_name(text, at("PASSWORD")), Some("PASSWORD"));
    }

    #[test]
    fn x5_config_name_reads_a_lower_case_key_back_from_its_last_word() {
        let text = "db_password: x; --password=x; DB_password: x; my-client-secret: x";
        let at = |needle: &str| {
            let start = text.find(needle).unwrap_or_default();
            start..start + needle.len()
        };
        let first = at("password");
        assert_eq!(config_name(text, first), Some("db_password"));
        let flag = text.find("--password").unwrap_or_default() + 2;
        assert_eq!(config_name(text, flag..flag + 8), Some("--password"));
        let mixed = text.find("B_password").unwrap_or_default() + 2;
        assert_eq!(config_name(text, mixed..mixed + 8), None);
        assert_eq!(config_name(text, at("secret")), Some("my-client-secret"));
    }

    #[test]
    fn x5_url_passwords_exclude_references_and_masks() {
        for value in ["pass", "x", "s3cr3t%40x", "a*b"] {
            assert!(plausible_url_password(value), "{value}");
        }
        for value in ["$PASS", "%PASS%", "***", "----", ""] {
            assert!(!plausible_url_password(value), "{value}");
        }
    }

    #[test]
    fn x5_unnamed_strips_group_names_only() {
        assert_eq!(unnamed("a(?P<v>b(?P<q>c))(?:d)"), "a(?:b(?:c))(?:d)");
    }

    #[test]
    fn x5_overlapping_candidates_keep_the_earliest_longest() {
        let r = redactor();
        let key = "sk-ant-api03-Xf93kLm2Qp8Zr7Tt4Vb1Nc6Hd0Jw5Ys";
        let found = r.find(&format!("key {key} end"));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, SecretKind::AnthropicKey);
        assert_eq!(found[0].range, 4..4 + key.len());
    }

    #[test]
    fn x5_replace_skips_a_range_off_a_char_boundary() {
        let text = "é secret";
        let bad = [Redaction {
            kind: SecretKind::Jwt,
            range: 1..3,
        }];
        assert_eq!(replace(text, &bad), text);
    }
}
