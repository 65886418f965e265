//! One settings file (K1): oh-my-pi's `config.yml`, of which the advisor reads
//! `modelRoles.advisor` and the `advisor:` block.
//!
//! The file is shared with the agent, so other top-level keys are none of our business and
//! are ignored silently, and so are the agent's other model roles (`modelRoles.default`,
//! `modelRoles.smol`, …) — except a role name that looks like a misspelt `advisor`
//! (`Advisor`, `advsior`), which is reported. Every unknown key under `advisor:` is reported
//! with its full path. A key with an empty value (`policy:` alone, YAML null) counts as not
//! set. A value of the wrong kind or outside the allowed set is an error naming the key, the
//! file and the allowed values.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_norway::{Mapping, Value};

use super::depth::{too_deep, MAX_YAML_DEPTH};
use super::{AdvisorSettings, DeliveryPolicy, SettingsError, SyncBacklog};
use crate::regular_file::{clip, SHOWN_CHARS};
use crate::render::TranscriptView;

/// The keys of the `advisor:` block, as written in the file.
const ADVISOR_KEYS: &[&str] = &[
    "enabled",
    "syncBacklog",
    "subagents",
    "policy",
    "transcript",
    "immuneTurns",
    "maxNotesPerUpdate",
    "maxOutputTokens",
    "compaction",
    "contextPromotion",
    "redactSecrets",
    "maxNoteChars",
    "requestTimeoutSecs",
    "maxConcurrentReviews",
    "consult",
];

/// The keys of the `advisor.compaction:` block.
const COMPACTION_KEYS: &[&str] = &["thresholdTokens"];

const ROLE_ALLOWED: &str = "a model role such as provider/model-id[:thinking]";

/// Something in a settings file that is not an error but deserves a line to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsWarning {
    /// A key the advisor does not know; it is ignored.
    UnknownKey {
        /// The file.
        file: PathBuf,
        /// The key's full path, e.g. `advisor.polcy`.
        key: String,
        /// A known key it resembles, if any.
        suggestion: Option<String>,
    },
    /// The prompt override file is blank; the built-in prompt is kept.
    BlankPrompt {
        /// The file.
        file: PathBuf,
    },
}

impl fmt::Display for SettingsWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsWarning::UnknownKey {
                file,
                key,
                suggestion,
            } => {
                write!(f, "{}: unknown key `{key}` (ignored", file.display())?;
                if let Some(known) = suggestion {
                    write!(f, "; did you mean `{known}`?")?;
                }
                f.write_str(")")
            }
            SettingsWarning::BlankPrompt { file } => write!(
                f,
                "{}: the prompt override is blank; using the built-in prompt",
                file.display()
            ),
        }
    }
}

/// What one settings file sets; `None` leaves the key to the layer below (or the default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsLayer {
    /// `modelRoles.advisor`.
    pub advisor_role: Option<String>,
    /// `advisor.enabled`.
    pub enabled: Option<bool>,
    /// `advisor.syncBacklog`.
    pub sync_backlog: Option<SyncBacklog>,
    /// `advisor.subagents`.
    pub subagents: Option<bool>,
    /// `advisor.policy`.
    pub policy: Option<DeliveryPolicy>,
    /// `advisor.transcript`.
    pub transcript: Option<TranscriptView>,
    /// `advisor.immuneTurns`.
    pub immune_turns: Option<u32>,
    /// `advisor.maxNotesPerUpdate`.
    pub max_notes_per_update: Option<usize>,
    /// `advisor.maxOutputTokens`.
    pub max_output_tokens: Option<u32>,
    /// `advisor.compaction.thresholdTokens`.
    pub compact_threshold_tokens: Option<u64>,
    /// `advisor.contextPromotion`.
    pub context_promotion: Option<String>,
    /// `advisor.redactSecrets`.
    pub redact_secrets: Option<bool>,
    /// `advisor.maxNoteChars`.
    pub max_note_chars: Option<usize>,
    /// `advisor.requestTimeoutSecs`.
    pub request_timeout_secs: Option<u64>,
    /// `advisor.maxConcurrentReviews`.
    pub max_concurrent_reviews: Option<usize>,
    /// `advisor.consult`.
    pub consult: Option<bool>,
}

impl SettingsLayer {
    /// Parses the text of the settings file `file` (named in errors and warnings). A
    /// document nested deeper than [`MAX_YAML_DEPTH`] levels is refused before it is parsed.
    /// Values and keys quoted in errors and warnings are cut to about 200 characters.
    pub fn parse(file: &Path, text: &str) -> Result<(Self, Vec<SettingsWarning>), SettingsError> {
        if let Some(line) = too_deep(text) {
            return Err(SettingsError::NotYaml {
                file: file.to_path_buf(),
                message: format!("nested more than {MAX_YAML_DEPTH} levels deep (line {line})"),
            });
        }
        let value: Value = serde_norway::from_str(text).map_err(|e| SettingsError::NotYaml {
            file: file.to_path_buf(),
            message: clip(&e.to_string(), SHOWN_CHARS).into_owned(),
        })?;
        let mut parser = Parser {
            file,
            layer: Self::default(),
            warnings: Vec::new(),
        };
        match &value {
            Value::Null => {}
            Value::Mapping(top) => parser.top(top)?,
            other => {
                return Err(SettingsError::NotYaml {
                    file: file.to_path_buf(),
                    message: format!(
                        "expected a mapping of keys at the top, found {}",
                        kind(other)
                    ),
                })
            }
        }
        Ok((parser.layer, parser.warnings))
    }

    /// This layer over `base`: every key this layer sets wins, the rest comes from `base`.
    pub fn over(self, base: Self) -> Self {
        Self {
            advisor_role: self.advisor_role.or(base.advisor_role),
            enabled: self.enabled.or(base.enabled),
            sync_backlog: self.sync_backlog.or(base.sync_backlog),
            subagents: self.subagents.or(base.subagents),
            policy: self.policy.or(base.policy),
            transcript: self.transcript.or(base.transcript),
            immune_turns: self.immune_turns.or(base.immune_turns),
            max_notes_per_update: self.max_notes_per_update.or(base.max_notes_per_update),
            max_output_tokens: self.max_output_tokens.or(base.max_output_tokens),
            compact_threshold_tokens: self
                .compact_threshold_tokens
                .or(base.compact_threshold_tokens),
            context_promotion: self.context_promotion.or(base.context_promotion),
            redact_secrets: self.redact_secrets.or(base.redact_secrets),
            max_note_chars: self.max_note_chars.or(base.max_note_chars),
            request_timeout_secs: self.request_timeout_secs.or(base.request_timeout_secs),
            max_concurrent_reviews: self.max_concurrent_reviews.or(base.max_concurrent_reviews),
            consult: self.consult.or(base.consult),
        }
    }

    /// Writes the keys this layer sets into `settings` (the model role is not a setting of
    /// the runtime; the caller uses it to build the model).
    pub fn apply_to(&self, settings: &mut AdvisorSettings) {
        if let Some(v) = self.enabled {
            settings.enabled = v;
        }
        if let Some(v) = self.sync_backlog {
            settings.sync_backlog = v;
        }
        if let Some(v) = self.subagents {
            settings.subagents = v;
        }
        if let Some(v) = self.policy {
            settings.policy = v;
        }
        if let Some(v) = self.transcript {
            settings.transcript = v;
        }
        if let Some(v) = self.immune_turns {
            settings.immune_turns = v;
        }
        if let Some(v) = self.max_notes_per_update {
            settings.max_notes_per_update = v;
        }
        if let Some(v) = self.max_output_tokens {
            settings.max_output_tokens = v;
        }
        if let Some(v) = self.compact_threshold_tokens {
            settings.compact_threshold_tokens = Some(v);
        }
        if let Some(v) = &self.context_promotion {
            settings.context_promotion = Some(v.clone());
        }
        if let Some(v) = self.redact_secrets {
            settings.redact_secrets = v;
        }
        if let Some(v) = self.max_note_chars {
            settings.max_note_chars = v;
        }
        if let Some(v) = self.request_timeout_secs {
            settings.request_timeout = std::time::Duration::from_secs(v);
        }
        if let Some(v) = self.max_concurrent_reviews {
            settings.max_concurrent_reviews = v;
        }
        if let Some(v) = self.consult {
            settings.consult = v;
        }
    }
}

struct Parser<'a> {
    file: &'a Path,
    layer: SettingsLayer,
    warnings: Vec<SettingsWarning>,
}

impl Parser<'_> {
    fn top(&mut self, top: &Mapping) -> Result<(), SettingsError> {
        for (key, value) in top {
            match key.as_str() {
                Some("modelRoles") => self.model_roles(value)?,
                Some("advisor") => self.advisor(value)?,
                // The rest of the file belongs to the agent.
                _ => {}
            }
        }
        Ok(())
    }

    fn model_roles(&mut self, value: &Value) -> Result<(), SettingsError> {
        let roles = match value {
            Value::Null => return Ok(()),
            Value::Mapping(roles) => roles,
            other => return Err(self.invalid("modelRoles", other, "a mapping of role names")),
        };
        for (key, value) in roles {
            let Some(name) = key.as_str() else { continue };
            if name == "advisor" {
                self.layer.advisor_role = self.role("modelRoles.advisor", value)?;
            } else if looks_like(name, "advisor") {
                self.unknown(format!("modelRoles.{name}"), Some("modelRoles.advisor"));
            }
        }
        Ok(())
    }

    fn advisor(&mut self, value: &Value) -> Result<(), SettingsError> {
        let block = match value {
            Value::Null => return Ok(()),
            Value::Mapping(block) => block,
            other => return Err(self.invalid("advisor", other, "a mapping of advisor settings")),
        };
        for (key, value) in block {
            let name = key_text(key);
            let path = format!("advisor.{name}");
            if value.is_null() {
                if !ADVISOR_KEYS.contains(&name.as_str()) {
                    self.unknown_near(&path, &name, ADVISOR_KEYS, "advisor.");
                }
                continue;
            }
            let file = self.file;
            let layer = &mut self.layer;
            match name.as_str() {
                "enabled" => layer.enabled = Some(boolean(file, &path, value)?),
                "subagents" => layer.subagents = Some(boolean(file, &path, value)?),
                "redactSecrets" => layer.redact_secrets = Some(boolean(file, &path, value)?),
                "consult" => layer.consult = Some(boolean(file, &path, value)?),
                "maxNoteChars" => {
                    layer.max_note_chars = Some(whole(file, &path, value, 1, 1_000_000)? as usize)
                }
                "requestTimeoutSecs" => {
                    layer.request_timeout_secs = Some(whole(file, &path, value, 1, 86_400)?)
                }
                "maxConcurrentReviews" => {
                    layer.max_concurrent_reviews =
                        Some(whole(file, &path, value, 1, 4096)? as usize)
                }
                "syncBacklog" => layer.sync_backlog = Some(sync_backlog(file, value)?),
                "policy" => {
                    layer.policy = Some(parse_word(
                        file,
                        &path,
                        value,
                        "interrupt, reconfirm",
                        |s| s.parse::<DeliveryPolicy>().ok(),
                    )?)
                }
                "transcript" => {
                    layer.transcript = Some(parse_word(file, &path, value, "compact, full", |s| {
                        s.parse::<TranscriptView>().ok()
                    })?)
                }
                "immuneTurns" => {
                    layer.immune_turns = Some(whole(file, &path, value, 0, u32::MAX.into())? as u32)
                }
                "maxNotesPerUpdate" => {
                    layer.max_notes_per_update =
                        Some(whole(file, &path, value, 1, u32::MAX.into())? as usize)
                }
                "maxOutputTokens" => {
                    layer.max_output_tokens =
                        Some(whole(file, &path, value, 1, u32::MAX.into())? as u32)
                }
                "contextPromotion" => {
                    self.layer.context_promotion = self.role(&path, value)?;
                }
                "compaction" => self.compaction(value)?,
                _ => self.unknown_near(&path, &name, ADVISOR_KEYS, "advisor."),
            }
        }
        Ok(())
    }

    fn compaction(&mut self, value: &Value) -> Result<(), SettingsError> {
        let block = match value {
            Value::Mapping(block) => block,
            other => {
                return Err(self.invalid(
                    "advisor.compaction",
                    other,
                    "a mapping with thresholdTokens",
                ))
            }
        };
        for (key, value) in block {
            let name = key_text(key);
            let path = format!("advisor.compaction.{name}");
            match name.as_str() {
                "thresholdTokens" if value.is_null() => {}
                "thresholdTokens" => {
                    self.layer.compact_threshold_tokens =
                        Some(whole(self.file, &path, value, 1, u64::MAX)?)
                }
                _ => self.unknown_near(&path, &name, COMPACTION_KEYS, "advisor.compaction."),
            }
        }
        Ok(())
    }

    /// A model role string; blank or null means not set.
    fn role(&self, key: &str, value: &Value) -> Result<Option<String>, SettingsError> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) if s.trim().is_empty() => Ok(None),
            Value::String(s) => Ok(Some(s.trim().to_string())),
            other => Err(self.invalid(key, other, ROLE_ALLOWED)),
        }
    }

    fn invalid(&self, key: &str, value: &Value, allowed: &str) -> SettingsError {
        invalid(self.file, key, value, allowed)
    }

    fn unknown(&mut self, key: String, suggestion: Option<&str>) {
        self.warnings.push(SettingsWarning::UnknownKey {
            file: self.file.to_path_buf(),
            key,
            suggestion: suggestion.map(str::to_string),
        });
    }

    fn unknown_near(&mut self, path: &str, name: &str, known: &[&str], prefix: &str) {
        let suggestion = known
            .iter()
            .find(|k| looks_like(name, k))
            .map(|k| format!("{prefix}{k}"));
        self.unknown(path.to_string(), suggestion.as_deref());
    }
}

fn invalid(file: &Path, key: &str, value: &Value, allowed: &str) -> SettingsError {
    SettingsError::InvalidInFile {
        file: file.to_path_buf(),
        key: key.to_string(),
        value: shown(value),
        allowed: allowed.to_string(),
    }
}

fn boolean(file: &Path, key: &str, value: &Value) -> Result<bool, SettingsError> {
    value
        .as_bool()
        .ok_or_else(|| invalid(file, key, value, "true, false"))
}

fn sync_backlog(file: &Path, value: &Value) -> Result<SyncBacklog, SettingsError> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(false) => "off".to_string(),
        _ => String::new(),
    };
    text.parse::<SyncBacklog>()
        .map_err(|_| invalid(file, "advisor.syncBacklog", value, "off, 1, 3, 5"))
}

fn parse_word<T>(
    file: &Path,
    key: &str,
    value: &Value,
    allowed: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<T, SettingsError> {
    value
        .as_str()
        .and_then(|s| parse(&s.trim().to_ascii_lowercase()))
        .ok_or_else(|| invalid(file, key, value, allowed))
}

fn whole(file: &Path, key: &str, value: &Value, min: u64, max: u64) -> Result<u64, SettingsError> {
    value
        .as_u64()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            let allowed = if max == u64::from(u32::MAX) || max == u64::MAX {
                format!("a whole number, {min} or more")
            } else {
                format!("a whole number from {min} to {max}")
            };
            invalid(file, key, value, &allowed)
        })
}

/// A key as text: strings as they are, other scalars as YAML would print them.
fn key_text(key: &Value) -> String {
    match key {
        Value::String(s) => clip(s, SHOWN_CHARS).into_owned(),
        other => shown(other),
    }
}

/// A value as the user wrote it, for error messages, cut to about 200 characters.
fn shown(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => clip(s, SHOWN_CHARS).into_owned(),
        other => kind(other).to_string(),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// Whether `name` is probably a misspelling of `known`: equal ignoring case, or at most two
/// single-character edits apart (for names of five characters or more).
fn looks_like(name: &str, known: &str) -> bool {
    let a: Vec<char> = name.to_lowercase().chars().collect();
    let b: Vec<char> = known.to_lowercase().chars().collect();
    if a == b {
        return true;
    }
    a.len() >= 5 && edit_distance(&a, &b) <= 2
}

fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<(SettingsLayer, Vec<SettingsWarning>), SettingsError> {
        SettingsLayer::parse(Path::new("/agent/config.yml"), text)
    }

    fn error(text: &str) -> String {
        parse(text).expect_err(text).to_string()
    }

    #[test]
    fn k1_every_key_is_read() {
        let (layer, warnings) = parse(
            "modelRoles:\n  advisor: anthropic/claude-sonnet-4-5:high\n  default: x/y\n\
             advisor:\n  enabled: false\n  syncBacklog: 3\n  subagents: true\n  policy: reconfirm\n\
             \x20 transcript: full\n  immuneTurns: 0\n  maxNotesPerUpdate: 4\n  maxOutputTokens: 8000\n\
             \x20 compaction:\n    thresholdTokens: 90000\n  contextPromotion: openrouter/big/model\n\
             \x20 redactSecrets: false\n  maxNoteChars: 500\n  requestTimeoutSecs: 60\n\
             \x20 maxConcurrentReviews: 4\n  consult: false\n\
             theme: dark\nhooks: [a, b]\n",
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            layer,
            SettingsLayer {
                advisor_role: Some("anthropic/claude-sonnet-4-5:high".into()),
                enabled: Some(false),
                sync_backlog: Some(SyncBacklog::Below(3)),
                subagents: Some(true),
                policy: Some(DeliveryPolicy::Reconfirm),
                transcript: Some(TranscriptView::Full),
                immune_turns: Some(0),
                max_notes_per_update: Some(4),
                max_output_tokens: Some(8000),
                compact_threshold_tokens: Some(90_000),
                context_promotion: Some("openrouter/big/model".into()),
                redact_secrets: Some(false),
                max_note_chars: Some(500),
                request_timeout_secs: Some(60),
                max_concurrent_reviews: Some(4),
                consult: Some(false),
            }
        );
        let mut settings = AdvisorSettings::default();
        layer.apply_to(&mut settings);
        assert!(!settings.enabled && settings.subagents && !settings.redact_secrets);
        assert_eq!(settings.sync_backlog, SyncBacklog::Below(3));
        assert_eq!(settings.policy, DeliveryPolicy::Reconfirm);
        assert_eq!(settings.transcript, TranscriptView::Full);
        assert_eq!(settings.immune_turns, 0);
        assert_eq!(settings.max_notes_per_update, 4);
        assert_eq!(settings.max_output_tokens, 8000);
        assert_eq!(settings.compact_threshold_tokens, Some(90_000));
        assert_eq!(
            settings.context_promotion.as_deref(),
            Some("openrouter/big/model")
        );
        assert_eq!(settings.max_note_chars, 500);
        assert_eq!(settings.request_timeout, std::time::Duration::from_secs(60));
        assert_eq!(settings.max_concurrent_reviews, 4);
        assert!(!settings.consult);
    }

    #[test]
    fn k1_sync_backlog_accepts_off_in_every_spelling() {
        for text in ["off", "'off'", "false", "OFF", "\"1\"", "5"] {
            let (layer, _) = parse(&format!("advisor:\n  syncBacklog: {text}\n")).unwrap();
            assert!(layer.sync_backlog.is_some(), "{text}");
        }
        let (layer, _) = parse("advisor:\n  syncBacklog: off\n").unwrap();
        assert_eq!(layer.sync_backlog, Some(SyncBacklog::Off));
    }

    #[test]
    fn k1_empty_file_empty_values_and_foreign_keys_set_nothing() {
        for text in [
            "",
            "# only a comment\n",
            "theme: dark\nmodelRoles:\n  smol: a/b\n",
            "advisor:\n",
            "advisor:\n  policy:\n  compaction:\n    thresholdTokens:\n",
            "modelRoles:\n  advisor: '  '\n",
        ] {
            let (layer, warnings) = parse(text).unwrap();
            assert_eq!(layer, SettingsLayer::default(), "{text:?}");
            assert!(warnings.is_empty(), "{text:?}: {warnings:?}");
        }
    }

    #[test]
    fn k1_unknown_keys_are_warnings_with_their_full_path() {
        let (layer, warnings) = parse(
            "advisor:\n  polcy: reconfirm\n  colour: red\n  compaction:\n    threshold: 5\n  \
             enabled: true\nmodelRoles:\n  advsior: a/b\n  Advisor: c/d\n  slow: e/f\n",
        )
        .unwrap();
        assert_eq!(layer.enabled, Some(true));
        let lines: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "/agent/config.yml: unknown key `advisor.polcy` (ignored; did you mean `advisor.policy`?)",
                "/agent/config.yml: unknown key `advisor.colour` (ignored)",
                "/agent/config.yml: unknown key `advisor.compaction.threshold` (ignored)",
                "/agent/config.yml: unknown key `modelRoles.advsior` (ignored; did you mean `modelRoles.advisor`?)",
                "/agent/config.yml: unknown key `modelRoles.Advisor` (ignored; did you mean `modelRoles.advisor`?)",
            ]
        );
    }

    #[test]
    fn k1_invalid_values_name_the_key_the_file_and_the_allowed_values() {
        let cases = [
            (
                "advisor:\n  policy: loud\n",
                "advisor.policy",
                "interrupt, reconfirm",
            ),
            (
                "advisor:\n  syncBacklog: 2\n",
                "advisor.syncBacklog",
                "off, 1, 3, 5",
            ),
            (
                "advisor:\n  syncBacklog: true\n",
                "advisor.syncBacklog",
                "off, 1, 3, 5",
            ),
            (
                "advisor:\n  transcript: short\n",
                "advisor.transcript",
                "compact, full",
            ),
            (
                "advisor:\n  enabled: maybe\n",
                "advisor.enabled",
                "true, false",
            ),
            (
                "advisor:\n  subagents: 1\n",
                "advisor.subagents",
                "true, false",
            ),
            (
                "advisor:\n  redactSecrets: yes\n",
                "advisor.redactSecrets",
                "true, false",
            ),
            (
                "advisor:\n  immuneTurns: -1\n",
                "advisor.immuneTurns",
                "0 or more",
            ),
            (
                "advisor:\n  maxNotesPerUpdate: 0\n",
                "advisor.maxNotesPerUpdate",
                "1 or more",
            ),
            (
                "advisor:\n  maxOutputTokens: 1.5\n",
                "advisor.maxOutputTokens",
                "1 or more",
            ),
            (
                "advisor:\n  compaction:\n    thresholdTokens: lots\n",
                "advisor.compaction.thresholdTokens",
                "1 or more",
            ),
            (
                "advisor:\n  compaction: 5\n",
                "advisor.compaction",
                "thresholdTokens",
            ),
            (
                "advisor:\n  contextPromotion: [a]\n",
                "advisor.contextPromotion",
                "provider/model-id",
            ),
            (
                "modelRoles:\n  advisor: 7\n",
                "modelRoles.advisor",
                "provider/model-id",
            ),
            ("modelRoles: fast\n", "modelRoles", "mapping"),
            ("advisor: on\n", "advisor", "mapping"),
        ];
        for (text, key, allowed) in cases {
            let message = error(text);
            assert!(
                message.contains(&format!(
                    " for {key} in /agent/config.yml: allowed values are "
                )) && message.contains(allowed),
                "{text:?}: {message}"
            );
        }
        assert_eq!(
            error("advisor:\n  policy: loud\n"),
            "invalid value `loud` for advisor.policy in /agent/config.yml: allowed values are \
             interrupt, reconfirm"
        );
    }

    #[test]
    fn k1_text_that_is_not_yaml_or_not_a_mapping_is_an_error_with_the_path() {
        for text in [
            "advisor: [unclosed\n",
            "{ \"a\": \n",
            "- a\n- b\n",
            "just words\n",
        ] {
            let message = error(text);
            assert!(
                message.starts_with("/agent/config.yml is not a valid settings file: "),
                "{text:?}: {message}"
            );
        }
    }

    #[test]
    fn issue10_8_deep_nesting_is_refused_before_parsing_naming_the_file() {
        for text in [
            "[".repeat(100_000),
            format!("advisor:\n  policy: {}", "{a: ".repeat(100_000)),
        ] {
            let message = error(&text);
            assert!(
                message.starts_with("/agent/config.yml is not a valid settings file: nested more than 64 levels deep (line "),
                "{message}"
            );
        }
    }

    #[test]
    fn issue10_4_values_and_keys_in_notices_are_cut_to_about_200_characters() {
        let long = "x".repeat(10_000);
        let message = error(&format!("advisor:\n  policy: {long}\n"));
        assert!(message.len() < 400, "{message}");
        assert!(
            message.contains(&format!("`{}…`", "x".repeat(200))),
            "{message}"
        );
        let key = "k".repeat(1000);
        let (_, warnings) = parse(&format!("advisor:\n  {key}: 1\n")).unwrap();
        let line = warnings[0].to_string();
        assert!(line.len() < 400 && line.contains("…"), "{line}");
    }

    #[test]
    fn k1_a_later_layer_wins_key_by_key() {
        let (agent, _) = parse(
            "modelRoles:\n  advisor: a/one\nadvisor:\n  policy: reconfirm\n  immuneTurns: 5\n",
        )
        .unwrap();
        let (project, _) = parse("advisor:\n  immuneTurns: 1\n  enabled: false\n").unwrap();
        let merged = project.over(agent);
        assert_eq!(merged.advisor_role.as_deref(), Some("a/one"));
        assert_eq!(merged.policy, Some(DeliveryPolicy::Reconfirm));
        assert_eq!(merged.immune_turns, Some(1));
        assert_eq!(merged.enabled, Some(false));
    }

    #[test]
    fn k1_misspelling_detection_is_conservative() {
        assert!(looks_like("polcy", "policy"));
        assert!(looks_like("ADVISOR", "advisor"));
        assert!(looks_like("adviser", "advisor"));
        assert!(!looks_like("default", "advisor"));
        assert!(!looks_like("plan", "advisor"));
        assert!(!looks_like("smol", "enabled"));
    }
}
