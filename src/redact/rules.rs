//! The built-in rules of secret redaction (X5): each kind's pattern, the check its
//! candidates pass, and the prefilter group that clears text of it.

use std::sync::OnceLock;

use regex::Regex;

use super::SecretKind;

/// How a rule's candidate is checked before it is redacted.
#[derive(Debug, Clone, Copy)]
pub(super) enum Check {
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

pub(super) struct Rule {
    pub(super) kind: SecretKind,
    /// The rule's own pattern, compiled the first time its prefilter lets text through:
    /// compiling every rule costs more than reading a small session, and text without
    /// secrets never needs them.
    pub(super) pattern: String,
    pub(super) regex: OnceLock<Result<Regex, regex::Error>>,
    pub(super) check: Check,
    /// The prefilter ([`Compiled::any`]) that clears text of this rule.
    pub(super) group: usize,
}

impl Rule {
    /// The rule's compiled pattern; `None` (and an error logged once) if it does not
    /// compile, which the tests rule out for the built-in patterns.
    pub(super) fn regex(&self) -> Option<&Regex> {
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
pub(super) const SECOND_GROUP: &[SecretKind] = &[
    SecretKind::ConfigSecret,
    SecretKind::UrlPassword,
    SecretKind::CliPassword,
];

/// A line break inside a private key block: real whitespace or a JSON-escaped `\n`/`\r`.
pub(super) const PEM_SEP: &str = r"(?:[ \t\r\n]|\\[nr])";

/// The built-in rules, most specific first: when two candidates replace the same bytes,
/// the earlier rule names the placeholder. The rules whose shape is built from parts come
/// first, then the fixed token formats.
pub(super) fn rule_sources() -> Vec<(SecretKind, String, Check)> {
    let mut rules = shaped_rules();
    rules.extend(
        TOKEN_RULES
            .iter()
            .map(|(kind, pattern, check)| (*kind, pattern.to_string(), *check)),
    );
    rules
}

/// The rules built from parts: private keys, assignments, URL and command-line passwords.
pub(super) fn shaped_rules() -> Vec<(SecretKind, String, Check)> {
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
pub(super) const TOKEN_RULES: [(SecretKind, &str, Check); 16] = [
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
