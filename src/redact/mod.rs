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

use regex::Regex;

mod env_secret;
mod rules;

use env_secret::accept;
use rules::{rule_sources, Rule, SECOND_GROUP};

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

#[cfg(test)]
mod tests {
    use super::env_secret::*;
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
