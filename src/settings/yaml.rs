//! One settings file (K1): oh-my-pi's `config.yml`, of which the advisor reads
//! `modelRoles.advisor`, the `advisor:` block and the backup-reviewer keys of `retry:` (P6).
//!
//! The file is shared with the agent, so other top-level keys are none of our business and
//! are ignored silently, and so are the agent's other model roles (`modelRoles.default`,
//! `modelRoles.smol`, …) — except a role name that looks like a misspelt `advisor`
//! (`Advisor`, `advsior`), which is reported. Every unknown key under `advisor:` is reported
//! with its full path. A key with an empty value (`policy:` alone, YAML null) counts as not
//! set. A value of the wrong kind or outside the allowed set is an error naming the key, the
//! file and the allowed values.
//!
//! The keys are the fields of [`SettingsLayer`], derived with serde: each field's
//! `deserialize_with` function checks its value and names the allowed values,
//! `serde_path_to_error` supplies the key's path for errors, `serde_ignored` reports the
//! keys no field took, and the field list (read from the derived code) gives the
//! suggestions.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_norway::Value;

use super::depth::{too_deep, MAX_YAML_DEPTH};
use super::{
    AdvisorSettings, DeliveryPolicy, RetryLayer, ReviewMode, SettingsError, SyncBacklog,
    MAX_REVIEW_INTERVAL, MAX_TOOL_BUDGET,
};
use crate::regular_file::{clip, SHOWN_CHARS};
use crate::render::TranscriptView;

mod fields;

use fields::{
    advisor_block, compaction, gate_fail_mode, gate_mode, invalid_in, judge_threshold,
    lenient_cadence_keys, model_roles, policy, refused, retry_block, review_mode, role,
    spend_ratio, sync_backlog, transcript, whole, U32_MAX,
};
pub(super) use fields::{chains, flag, revert_policy};

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
    /// A cadence key has a value outside its allowed set (CA5, CA9): the default is used
    /// instead and the session runs.
    BadValue {
        /// The file.
        file: PathBuf,
        /// The key's full path, e.g. `advisor.reviewInterval`.
        key: &'static str,
        /// The value as written, cut to about 200 characters.
        value: String,
        /// The allowed values.
        allowed: &'static str,
        /// The value used instead.
        used: &'static str,
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
            SettingsWarning::BadValue {
                file,
                key,
                value,
                allowed,
                used,
            } => write!(
                f,
                "{}: invalid value `{value}` for {key} (allowed: {allowed}); {used} is used",
                file.display()
            ),
        }
    }
}

/// What one settings file sets; `None` leaves the key to the layer below (or the default).
/// The fields are the keys of the `advisor:` block (camelCase in the file), plus the model
/// role from `modelRoles.advisor`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SettingsLayer {
    /// `modelRoles.advisor`.
    #[serde(skip)]
    pub advisor_role: Option<String>,
    /// Every role of `modelRoles:` that names a model as text (`slow`, `default`, …): what
    /// a role alias `@slow` resolves through (CA25). The agent's other values are left
    /// alone.
    #[serde(skip)]
    pub model_roles: BTreeMap<String, String>,
    /// The top-level `disabledProviders:` list (CA22): providers no advisor may use.
    #[serde(skip)]
    pub disabled_providers: Option<Vec<String>>,
    /// `advisor.enabled`.
    #[serde(deserialize_with = "flag")]
    pub enabled: Option<bool>,
    /// `advisor.syncBacklog` (a bad value is a warning, `off` used: CA9).
    #[serde(deserialize_with = "sync_backlog")]
    pub sync_backlog: Option<SyncBacklog>,
    /// `advisor.reviewMode` (CA1; a bad value is a warning, `turn` used: CA5).
    #[serde(deserialize_with = "review_mode")]
    pub review_mode: Option<ReviewMode>,
    /// `advisor.reviewInterval` (CA2; a bad value is a warning, 1 used: CA5).
    #[serde(deserialize_with = "whole::<_, _, 1, MAX_REVIEW_INTERVAL>")]
    pub review_interval: Option<u64>,
    /// `advisor.subagents`.
    #[serde(deserialize_with = "flag")]
    pub subagents: Option<bool>,
    /// `advisor.policy`.
    #[serde(deserialize_with = "policy")]
    pub policy: Option<DeliveryPolicy>,
    /// `advisor.transcript`.
    #[serde(deserialize_with = "transcript")]
    pub transcript: Option<TranscriptView>,
    /// `advisor.immuneTurns`.
    #[serde(deserialize_with = "whole::<_, _, 0, U32_MAX>")]
    pub immune_turns: Option<u32>,
    /// `advisor.maxNotesPerUpdate`.
    #[serde(deserialize_with = "whole::<_, _, 1, U32_MAX>")]
    pub max_notes_per_update: Option<usize>,
    /// `advisor.maxOutputTokens`.
    #[serde(deserialize_with = "whole::<_, _, 1, U32_MAX>")]
    pub max_output_tokens: Option<u32>,
    /// `advisor.compaction.thresholdTokens`.
    #[serde(rename = "compaction", deserialize_with = "compaction")]
    pub compact_threshold_tokens: Option<u64>,
    /// `advisor.contextPromotion`.
    #[serde(deserialize_with = "role")]
    pub context_promotion: Option<String>,
    /// `advisor.redactSecrets`.
    #[serde(deserialize_with = "flag")]
    pub redact_secrets: Option<bool>,
    /// `advisor.maxNoteChars`.
    #[serde(deserialize_with = "whole::<_, _, 1, 1_000_000>")]
    pub max_note_chars: Option<usize>,
    /// `advisor.requestTimeoutSecs`.
    #[serde(deserialize_with = "whole::<_, _, 1, 86_400>")]
    pub request_timeout_secs: Option<u64>,
    /// `advisor.maxConcurrentReviews`.
    #[serde(deserialize_with = "whole::<_, _, 1, 4096>")]
    pub max_concurrent_reviews: Option<usize>,
    /// `advisor.consult`.
    #[serde(deserialize_with = "flag")]
    pub consult: Option<bool>,
    /// The backup-reviewer keys of the top-level `retry:` block (P6).
    #[serde(skip)]
    pub retry: RetryLayer,
    /// `advisor.evictStaleResults`.
    #[serde(deserialize_with = "flag")]
    pub evict_stale_results: Option<bool>,
    /// `advisor.toolBudget` (SP1).
    #[serde(deserialize_with = "whole::<_, _, 0, { MAX_TOOL_BUDGET as u64 }>")]
    pub tool_budget: Option<u32>,
    /// `advisor.maxSpendRatio` (SP6).
    #[serde(deserialize_with = "spend_ratio")]
    pub max_spend_ratio: Option<Decimal>,
    /// `advisor.judgeGate` (SP9).
    #[serde(deserialize_with = "flag")]
    pub judge_gate: Option<bool>,
    /// `advisor.judgeThreshold` (SP9).
    #[serde(deserialize_with = "judge_threshold")]
    pub judge_threshold: Option<Decimal>,
    /// `modelRoles.judge` (SP9).
    #[serde(skip)]
    pub judge_role: Option<String>,
    /// `advisor.spendControls` (SP1–SP3 together).
    #[serde(deserialize_with = "flag")]
    pub spend_controls: Option<bool>,
    /// `advisor.gate` (GT1).
    #[serde(deserialize_with = "gate_mode")]
    pub gate: Option<super::GateMode>,
    /// `advisor.gateTimeoutMs` (GT4).
    #[serde(deserialize_with = "whole::<_, _, 100, 600_000>")]
    pub gate_timeout_ms: Option<u64>,
    /// `advisor.gateFailMode` (GT5).
    #[serde(deserialize_with = "gate_fail_mode")]
    pub gate_fail_mode: Option<super::GateFailMode>,
    /// `advisor.hookTimeoutMs` (H9).
    #[serde(deserialize_with = "whole::<_, _, 50, 600_000>")]
    pub hook_timeout_ms: Option<u64>,
    /// `advisor.hookIdleMinutes` (H4).
    #[serde(deserialize_with = "whole::<_, _, 0, 10_080>")]
    pub hook_idle_minutes: Option<u64>,
}

/// A checked decimal setting (SP6's ratio, SP9's threshold): finite, so it compares as
/// equal to itself.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Decimal(pub f64);

impl Eq for Decimal {}

/// The file as the advisor reads it; every other top-level key is the agent's.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Document {
    #[serde(rename = "modelRoles", deserialize_with = "model_roles")]
    model_roles: Option<Roles>,
    #[serde(deserialize_with = "advisor_block")]
    advisor: Option<SettingsLayer>,
    #[serde(deserialize_with = "retry_block")]
    retry: Option<RetryLayer>,
    #[serde(rename = "disabledProviders", deserialize_with = "provider_list")]
    disabled_providers: Option<Vec<String>>,
}

/// `modelRoles:`; the agent's other roles are ignored.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Roles {
    #[serde(deserialize_with = "role")]
    advisor: Option<String>,
    #[serde(deserialize_with = "role")]
    judge: Option<String>,
}

/// `advisor.compaction:`.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Compaction {
    #[serde(deserialize_with = "whole::<_, _, 1, { u64::MAX }>")]
    threshold_tokens: Option<u64>,
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
        let mut value: Value =
            serde_norway::from_str(text).map_err(|e| SettingsError::NotYaml {
                file: file.to_path_buf(),
                message: clip(&e.to_string(), SHOWN_CHARS).into_owned(),
            })?;
        match &value {
            Value::Null => return Ok((Self::default(), Vec::new())),
            Value::Mapping(_) => {}
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
        let mut bad_values = lenient_cadence_keys(file, &mut value);
        let model_roles = role_texts(&value);
        let mut ignored = Vec::new();
        let document: Document = serde_path_to_error::deserialize(
            serde_ignored::Deserializer::new(value, &mut |path: serde_ignored::Path<'_>| {
                ignored.push(keys_of(&path))
            }),
        )
        .map_err(|err| invalid_in(file, &err))?;
        let mut warnings: Vec<SettingsWarning> = ignored
            .iter()
            .filter_map(|keys| unknown_key(file, keys))
            .collect();
        warnings.append(&mut bad_values);
        let mut layer = document.advisor.unwrap_or_default();
        let roles = document.model_roles.unwrap_or_default();
        layer.advisor_role = roles.advisor;
        layer.judge_role = roles.judge;
        layer.model_roles = model_roles;
        if let Some(role) = &layer.advisor_role {
            layer
                .model_roles
                .insert("advisor".to_string(), role.clone());
        }
        layer.disabled_providers = document.disabled_providers;
        layer.retry = document.retry.unwrap_or_default();
        Ok((layer, warnings))
    }

    /// This layer over `base`: every key this layer sets wins, the rest comes from `base`.
    pub fn over(self, base: Self) -> Self {
        Self {
            advisor_role: self.advisor_role.or(base.advisor_role),
            model_roles: {
                let mut roles = base.model_roles;
                roles.extend(self.model_roles);
                roles
            },
            disabled_providers: self.disabled_providers.or(base.disabled_providers),
            enabled: self.enabled.or(base.enabled),
            sync_backlog: self.sync_backlog.or(base.sync_backlog),
            review_mode: self.review_mode.or(base.review_mode),
            review_interval: self.review_interval.or(base.review_interval),
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
            retry: self.retry.over(base.retry),
            evict_stale_results: self.evict_stale_results.or(base.evict_stale_results),
            tool_budget: self.tool_budget.or(base.tool_budget),
            max_spend_ratio: self.max_spend_ratio.or(base.max_spend_ratio),
            judge_gate: self.judge_gate.or(base.judge_gate),
            judge_threshold: self.judge_threshold.or(base.judge_threshold),
            judge_role: self.judge_role.or(base.judge_role),
            spend_controls: self.spend_controls.or(base.spend_controls),
            gate: self.gate.or(base.gate),
            gate_timeout_ms: self.gate_timeout_ms.or(base.gate_timeout_ms),
            gate_fail_mode: self.gate_fail_mode.or(base.gate_fail_mode),
            hook_timeout_ms: self.hook_timeout_ms.or(base.hook_timeout_ms),
            hook_idle_minutes: self.hook_idle_minutes.or(base.hook_idle_minutes),
        }
    }

    /// Writes the keys this layer sets into `settings` (the model role is not a setting of
    /// the runtime; the caller uses it to build the model).
    pub fn apply_to(&self, settings: &mut AdvisorSettings) {
        self.apply_review_keys(settings);
        self.apply_limit_keys(settings);
    }

    /// The keys of what is reviewed and how notes are delivered.
    fn apply_review_keys(&self, settings: &mut AdvisorSettings) {
        if let Some(v) = self.enabled {
            settings.enabled = v;
        }
        if let Some(v) = self.sync_backlog {
            settings.sync_backlog = v;
        }
        if let Some(v) = self.review_mode {
            settings.review_mode = v;
        }
        if let Some(v) = self.review_interval {
            settings.review_interval = v;
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
    }

    /// The keys of limits, spend, the backup reviewer, the gate and the hook host.
    fn apply_limit_keys(&self, settings: &mut AdvisorSettings) {
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
        self.retry.apply_to(&mut settings.retry);
        if let Some(v) = self.evict_stale_results {
            settings.evict_stale_results = v;
        }
        if let Some(v) = self.tool_budget {
            settings.tool_budget = v;
        }
        if let Some(v) = &self.disabled_providers {
            settings.disabled_providers = v.clone();
        }
        if let Some(v) = self.max_spend_ratio {
            settings.max_spend_ratio = Some(v.0);
        }
        if let Some(v) = self.judge_gate {
            settings.judge_gate = v;
        }
        if let Some(v) = self.judge_threshold {
            settings.judge_threshold = v.0;
        }
        if let Some(v) = &self.judge_role {
            settings.judge_role = Some(v.clone());
        }
        if let Some(v) = self.spend_controls {
            settings.spend_controls = v;
        }
        if let Some(v) = self.gate {
            settings.gate.mode = v;
        }
        if let Some(v) = self.gate_timeout_ms {
            settings.gate.timeout = std::time::Duration::from_millis(v);
        }
        if let Some(v) = self.gate_fail_mode {
            settings.gate.fail_mode = Some(v);
        }
        if let Some(v) = self.hook_timeout_ms {
            settings.hook_timeout_ms = v;
        }
        if let Some(v) = self.hook_idle_minutes {
            settings.hook_idle_minutes = v;
        }
    }
}

/// The roles of `modelRoles:` given as text, trimmed, blank ones left out (CA25): what a
/// role alias resolves through. Values of another kind belong to the agent and are skipped
/// here (`modelRoles.advisor` itself is checked by its field).
fn role_texts(document: &Value) -> BTreeMap<String, String> {
    let Some(Value::Mapping(roles)) = document.get("modelRoles") else {
        return BTreeMap::new();
    };
    roles
        .iter()
        .filter_map(|(name, role)| {
            let (Value::String(name), Value::String(role)) = (name, role) else {
                return None;
            };
            let role = role.trim();
            (!role.is_empty() && name != "advisor").then(|| (name.clone(), role.to_string()))
        })
        .collect()
}

const PROVIDERS_ALLOWED: &str = "a list of provider names";

/// `disabledProviders`: a list of provider names (a single name is a list of one), trimmed,
/// blank ones left out; null is "not set"; anything else is an error naming the key (K1).
fn provider_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let Some(value) = Option::<Value>::deserialize(d)? else {
        return Ok(None);
    };
    let items = match value {
        Value::String(one) => vec![Value::String(one)],
        Value::Sequence(list) => list,
        other => return Err(refused(kind(&other), PROVIDERS_ALLOWED)),
    };
    let mut providers = Vec::with_capacity(items.len());
    for item in items {
        let Value::String(name) = item else {
            return Err(refused(kind(&item), PROVIDERS_ALLOWED));
        };
        let name = name.trim();
        if !name.is_empty() {
            providers.push(name.to_string());
        }
    }
    Ok(Some(providers))
}

/// The map keys along an ignored value's path (`["advisor", "polcy"]`).
fn keys_of(path: &serde_ignored::Path<'_>) -> Vec<String> {
    let mut keys = Vec::new();
    let mut at = path;
    loop {
        at = match at {
            serde_ignored::Path::Root => break,
            serde_ignored::Path::Map { parent, key } => {
                keys.push(key.clone());
                parent
            }
            serde_ignored::Path::Seq { parent, .. }
            | serde_ignored::Path::Some { parent }
            | serde_ignored::Path::NewtypeStruct { parent }
            | serde_ignored::Path::NewtypeVariant { parent } => parent,
        };
    }
    keys.reverse();
    keys
}

/// The warning for a key no field took: every one under `advisor:`, and a role under
/// `modelRoles:` that looks like a misspelt `advisor`; the rest belongs to the agent.
fn unknown_key(file: &Path, keys: &[String]) -> Option<SettingsWarning> {
    let suggestion = match keys {
        [top, name] if top == "modelRoles" => {
            if !looks_like(name, "advisor") {
                return None;
            }
            Some("modelRoles.advisor".to_string())
        }
        [top, name] if top == "advisor" => {
            near(name, fields_of::<SettingsLayer>()).map(|k| format!("advisor.{k}"))
        }
        // `retry:` is shared with the agent: only a near miss of one of our keys is reported.
        [top, name] if top == "retry" => {
            let known = near(name, fields_of::<RetryLayer>())?;
            if known == *name {
                return None;
            }
            Some(format!("retry.{known}"))
        }
        [top, block, name] if top == "advisor" && block == "compaction" => {
            near(name, fields_of::<Compaction>()).map(|k| format!("advisor.compaction.{k}"))
        }
        _ => return None,
    };
    let key = keys
        .iter()
        .map(|k| clip(k, SHOWN_CHARS).into_owned())
        .collect::<Vec<_>>()
        .join(".");
    Some(SettingsWarning::UnknownKey {
        file: file.to_path_buf(),
        key,
        suggestion,
    })
}

/// The first known key `name` resembles.
fn near(name: &str, known: &[&str]) -> Option<String> {
    known
        .iter()
        .find(|k| looks_like(name, k))
        .map(|k| (*k).to_string())
}

/// The keys of a derived struct, as the file spells them: what serde's derived code hands
/// to `deserialize_struct`.
fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Fields<'a>(&'a mut &'static [&'static str]);

    impl<'de> Deserializer<'de> for Fields<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("fields only"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields only"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

/// What kind of YAML value `value` is, for messages ("a string", "a list").
pub(crate) fn kind(value: &Value) -> &'static str {
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
pub(crate) fn looks_like(name: &str, known: &str) -> bool {
    let (a, b) = (name.to_lowercase(), known.to_lowercase());
    a == b || (a.chars().count() >= 5 && strsim::levenshtein(&a, &b) <= 2)
}

#[cfg(test)]
mod tests {
    use super::super::FallbackRevert;
    use super::*;

    fn parse(text: &str) -> Result<(SettingsLayer, Vec<SettingsWarning>), SettingsError> {
        SettingsLayer::parse(Path::new("/agent/config.yml"), text)
    }

    fn error(text: &str) -> String {
        parse(text).expect_err(text).to_string()
    }

    /// What `k1_every_key_is_read`'s file sets.
    fn every_key_layer() -> SettingsLayer {
        SettingsLayer {
            advisor_role: Some("anthropic/claude-sonnet-4-5:high".into()),
            model_roles: [
                (
                    "advisor".to_string(),
                    "anthropic/claude-sonnet-4-5:high".to_string(),
                ),
                ("default".to_string(), "x/y".to_string()),
                ("judge".to_string(), "a/j".to_string()),
            ]
            .into(),
            disabled_providers: None,
            enabled: Some(false),
            sync_backlog: Some(SyncBacklog::Below(3)),
            review_mode: None,
            review_interval: None,
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
            retry: RetryLayer::default(),
            evict_stale_results: Some(false),
            tool_budget: Some(7),
            max_spend_ratio: Some(Decimal(0.5)),
            judge_gate: Some(true),
            judge_threshold: Some(Decimal(0.3)),
            judge_role: Some("a/j".into()),
            spend_controls: None,
            gate: Some(super::super::GateMode::Risky),
            gate_timeout_ms: Some(5000),
            gate_fail_mode: Some(super::super::GateFailMode::Closed),
            hook_timeout_ms: Some(400),
            hook_idle_minutes: Some(0),
        }
    }

    #[test]
    fn k1_every_key_is_read() {
        let (layer, warnings) = parse(
            "modelRoles:\n  advisor: anthropic/claude-sonnet-4-5:high\n  default: x/y\n  judge: a/j\n\
             advisor:\n  enabled: false\n  syncBacklog: 3\n  subagents: true\n  policy: reconfirm\n\
             \x20 transcript: full\n  immuneTurns: 0\n  maxNotesPerUpdate: 4\n  maxOutputTokens: 8000\n\
             \x20 compaction:\n    thresholdTokens: 90000\n  contextPromotion: openrouter/big/model\n\
             \x20 redactSecrets: false\n  maxNoteChars: 500\n  requestTimeoutSecs: 60\n\
             \x20 maxConcurrentReviews: 4\n  consult: false\n  evictStaleResults: false\n  toolBudget: 7\n\
             \x20 maxSpendRatio: 0.5\n  judgeGate: true\n  judgeThreshold: 0.3\n\
             \x20 gate: risky\n  gateTimeoutMs: 5000\n  gateFailMode: closed\n\
             \x20 hookTimeoutMs: 400\n  hookIdleMinutes: 0\n\
             theme: dark\nhooks: [a, b]\n",
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(layer, every_key_layer());
        let mut settings = AdvisorSettings::default();
        layer.apply_to(&mut settings);
        assert_eq!(
            settings.gate,
            super::super::GateSettings {
                mode: super::super::GateMode::Risky,
                timeout: std::time::Duration::from_millis(5000),
                fail_mode: Some(super::super::GateFailMode::Closed),
            },
            "GT1, GT4, GT5"
        );
        assert!(!settings.enabled && settings.subagents && !settings.redact_secrets);
        assert!(
            !settings.evict_stale_results,
            "P4: evictStaleResults is read"
        );
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
        assert_eq!(settings.tool_budget, 7, "SP1: toolBudget is read");
        assert_eq!(settings.max_spend_ratio, Some(0.5), "SP6");
        assert!(settings.judge_gate, "SP9");
        assert_eq!(settings.judge_threshold, 0.3, "SP9");
    }

    #[test]
    fn sp6_max_spend_ratio_is_a_number_from_0_01_to_10_default_none() {
        assert_eq!(AdvisorSettings::default().max_spend_ratio, None);
        for (text, ratio) in [("0.01", 0.01), ("10", 10.0), ("1.5", 1.5), ("2", 2.0)] {
            let (layer, _) = parse(&format!("advisor:\n  maxSpendRatio: {text}\n")).unwrap();
            assert_eq!(layer.max_spend_ratio, Some(Decimal(ratio)), "{text}");
        }
        let (layer, _) = parse("advisor:\n  maxSpendRatio:\n").unwrap();
        assert_eq!(layer.max_spend_ratio, None, "an empty value sets nothing");
        assert_eq!(
            error("advisor:\n  maxSpendRatio: 11\n"),
            "invalid value `11` for advisor.maxSpendRatio in /agent/config.yml: allowed values \
             are a number from 0.01 to 10"
        );
        for bad in [
            "0.001", "0", "-1", ".nan", ".inf", "'2'", "lots", "[1]", "true",
        ] {
            let message = error(&format!("advisor:\n  maxSpendRatio: {bad}\n"));
            assert!(
                message.contains("advisor.maxSpendRatio in /agent/config.yml")
                    && message.ends_with("a number from 0.01 to 10"),
                "{bad}: {message}"
            );
        }
    }

    #[test]
    fn gt1_gt4_gt5_gate_keys_take_their_words_and_a_bounded_timeout() {
        let (layer, _) = parse("advisor:\n  gate: off\n  gateFailMode: ASK\n").unwrap();
        assert_eq!(layer.gate, Some(super::super::GateMode::Off), "YAML's off");
        assert_eq!(layer.gate_fail_mode, Some(super::super::GateFailMode::Ask));
        for (key, bad, allowed) in [
            ("gate", "sometimes", "off, risky, all"),
            ("gate", "true", "off, risky, all"),
            ("gateFailMode", "maybe", "open, closed, ask"),
            ("gateTimeoutMs", "50", "a whole number from 100 to 600000"),
            (
                "gateTimeoutMs",
                "'15000'",
                "a whole number from 100 to 600000",
            ),
        ] {
            let message = error(&format!("advisor:\n  {key}: {bad}\n"));
            assert!(
                message.contains(&format!("advisor.{key} in /agent/config.yml"))
                    && message.ends_with(allowed),
                "{key} {bad}: {message}"
            );
        }
    }

    #[test]
    fn sp9_judge_gate_is_a_flag_and_judge_threshold_a_number_from_0_to_1_default_0_2() {
        let defaults = AdvisorSettings::default();
        assert!(!defaults.judge_gate, "off by default");
        assert_eq!(defaults.judge_threshold, 0.2);
        let (layer, _) = parse("advisor:\n  judgeThreshold: 0\n  judgeGate: false\n").unwrap();
        assert_eq!(
            (layer.judge_threshold, layer.judge_gate),
            (Some(Decimal(0.0)), Some(false))
        );
        for bad in ["1.01", "-0.1", "'0.5'", "high", ".nan"] {
            let message = error(&format!("advisor:\n  judgeThreshold: {bad}\n"));
            assert!(
                message.contains("advisor.judgeThreshold in /agent/config.yml")
                    && message.ends_with("a number from 0 to 1"),
                "{bad}: {message}"
            );
        }
        for bad in ["yes please", "1", "[true]"] {
            let message = error(&format!("advisor:\n  judgeGate: {bad}\n"));
            assert!(
                message.contains("advisor.judgeGate in /agent/config.yml")
                    && message.ends_with("true, false"),
                "{bad}: {message}"
            );
        }
    }

    #[test]
    fn p6_the_retry_block_s_backup_keys_are_read_and_the_agent_s_retry_keys_ignored() {
        let (layer, warnings) = parse(
            "retry:\n  enabled: true\n  maxRetries: 4\n  modelFallback: false\n  \
             fallbackRevertPolicy: never\n  fallbackChains:\n    advisor: [a/one, 'b/two:high']\n    \
             anthropic/claude-sonnet-4-5: c/three\n  fallbackChain: {}\n",
        )
        .unwrap();
        assert_eq!(layer.retry.model_fallback, Some(false));
        assert_eq!(
            layer.retry.fallback_revert_policy,
            Some(FallbackRevert::Never)
        );
        let chains = layer.retry.fallback_chains.clone().expect("chains");
        assert_eq!(chains["advisor"], ["a/one", "b/two:high"]);
        assert_eq!(chains["anthropic/claude-sonnet-4-5"], ["c/three"]);
        let lines: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            ["/agent/config.yml: unknown key `retry.fallbackChain` (ignored; did you mean `retry.fallbackChains`?)"]
        );
        let mut settings = AdvisorSettings::default();
        layer.apply_to(&mut settings);
        assert!(!settings.retry.model_fallback);
        for (text, key, allowed) in [
            (
                "retry:\n  fallbackRevertPolicy: sometimes\n",
                "retry.fallbackRevertPolicy",
                "cooldown-expiry, never",
            ),
            (
                "retry:\n  modelFallback: 1\n",
                "retry.modelFallback",
                "true, false",
            ),
            (
                "retry:\n  fallbackChains: [a/b]\n",
                "retry.fallbackChains",
                "lists of provider/model-id",
            ),
            (
                "retry:\n  fallbackChains:\n    advisor: [7]\n",
                "retry.fallbackChains",
                "lists of provider/model-id",
            ),
            ("retry: 3\n", "retry", "mapping"),
        ] {
            let message = error(text);
            assert!(
                message.contains(&format!(
                    " for {key} in /agent/config.yml: allowed values are "
                )) && message.contains(allowed),
                "{text:?}: {message}"
            );
        }
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
            let (mut layer, warnings) = parse(text).unwrap();
            // The agent's other roles are kept only as what a role alias names (CA25).
            layer.model_roles.remove("smol");
            assert_eq!(layer, SettingsLayer::default(), "{text:?}");
            assert!(warnings.is_empty(), "{text:?}: {warnings:?}");
        }
    }

    #[test]
    fn ca5_ca9_bad_cadence_values_warn_naming_the_key_and_use_the_default() {
        let (layer, warnings) = parse(
            "advisor:\n  reviewMode: every-step\n  reviewInterval: 2.5\n  syncBacklog: 2\n  \
             policy: interrupt\n",
        )
        .unwrap();
        assert_eq!(layer.review_mode, Some(ReviewMode::Turn));
        assert_eq!(layer.review_interval, Some(1));
        assert_eq!(layer.sync_backlog, Some(SyncBacklog::Off));
        assert_eq!(
            layer.policy,
            Some(DeliveryPolicy::Interrupt),
            "the file is used"
        );
        let lines: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "/agent/config.yml: invalid value `\"every-step\"` for advisor.reviewMode (allowed: turn, agent-end); turn is used",
                "/agent/config.yml: invalid value `2.5` for advisor.reviewInterval (allowed: a whole number from 1 to 9007199254740991); 1 is used",
                "/agent/config.yml: invalid value `2` for advisor.syncBacklog (allowed: off, 1, 3, 5, strict); off is used",
            ]
        );
        for bad in [
            "0",
            "-1",
            "\"3\"",
            ".nan",
            ".inf",
            "9007199254740992",
            "true",
        ] {
            let (layer, warnings) = parse(&format!("advisor:\n  reviewInterval: {bad}\n")).unwrap();
            assert_eq!(layer.review_interval, Some(1), "{bad}");
            assert!(
                warnings.len() == 1 && warnings[0].to_string().contains("advisor.reviewInterval"),
                "{bad}: {warnings:?}"
            );
        }
        let (layer, warnings) = parse(
            "advisor:\n  reviewMode: agent-end\n  reviewInterval: 9007199254740991\n  \
             syncBacklog: strict\n",
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(layer.review_mode, Some(ReviewMode::AgentEnd));
        assert_eq!(layer.review_interval, Some(MAX_REVIEW_INTERVAL));
        assert_eq!(layer.sync_backlog, Some(SyncBacklog::Strict));
    }

    #[test]
    fn ca22_disabled_providers_is_a_list_of_names_and_anything_else_an_error_naming_it() {
        let (layer, warnings) =
            parse("disabledProviders: [openai, ' anthropic ', '']\nadvisor:\n  enabled: true\n")
                .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            layer.disabled_providers,
            Some(vec!["openai".to_string(), "anthropic".to_string()])
        );
        let mut settings = AdvisorSettings::default();
        layer.apply_to(&mut settings);
        assert!(settings.provider_disabled("OpenAI") && !settings.provider_disabled("ollama"));
        let (one, _) = parse("disabledProviders: openai\n").unwrap();
        assert_eq!(one.disabled_providers, Some(vec!["openai".to_string()]));
        for bad in [
            "disabledProviders: 3\n",
            "disabledProviders: [openai, [x]]\n",
            "disabledProviders: {a: b}\n",
        ] {
            let err = parse(bad).expect_err(bad).to_string();
            assert!(
                err.contains("disabledProviders") && err.contains("a list of provider names"),
                "{bad}: {err}"
            );
        }
        // A later file's list replaces an earlier one's.
        let (user, _) = parse("disabledProviders: [openai]\n").unwrap();
        let (project, _) = parse("disabledProviders: []\n").unwrap();
        assert_eq!(project.over(user).disabled_providers, Some(Vec::new()));
    }

    #[test]
    fn ca25_every_text_role_of_model_roles_is_kept_for_role_aliases() {
        let (user, warnings) =
            parse("modelRoles:\n  advisor: a/adv\n  slow: s/slow\n  smol: ' '\n  odd: 7\n")
                .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let roles: Vec<_> = user
            .model_roles
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(roles, [("advisor", "a/adv"), ("slow", "s/slow")]);
        let (project, _) = parse("modelRoles:\n  slow: p/slow\n").unwrap();
        let merged = project.over(user);
        assert_eq!(merged.model_roles["slow"], "p/slow");
        assert_eq!(merged.model_roles["advisor"], "a/adv");
    }

    #[test]
    fn ca19_immune_turns_off_at_zero_or_less_fractions_truncated_a_non_number_warns_and_uses_3() {
        for (written, turns) in [
            ("0", 0),
            ("-1", 0),
            ("-2.5", 0),
            ("2.9", 2),
            ("5", 5),
            (".inf", U32_MAX as u32),
            ("99999999999", U32_MAX as u32),
        ] {
            let (layer, warnings) =
                parse(&format!("advisor:\n  immuneTurns: {written}\n")).unwrap();
            assert!(warnings.is_empty(), "{written}: {warnings:?}");
            assert_eq!(layer.immune_turns, Some(turns), "{written}");
        }
        for bad in ["\"3\"", "three", "true", ".nan", "[1]"] {
            let (layer, warnings) = parse(&format!("advisor:\n  immuneTurns: {bad}\n")).unwrap();
            assert_eq!(layer.immune_turns, Some(3), "{bad}");
            let lines: Vec<String> = warnings.iter().map(ToString::to_string).collect();
            assert!(
                lines.len() == 1
                    && lines[0].contains("advisor.immuneTurns")
                    && lines[0].ends_with("3 is used"),
                "{bad}: {lines:?}"
            );
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
    fn sp1_sp2_sp3_spend_controls_is_a_flag_default_on_and_a_bad_value_names_the_key() {
        assert!(AdvisorSettings::default().spend_controls);
        for (text, on) in [("true", true), ("false", false)] {
            let (layer, _) = parse(&format!("advisor:\n  spendControls: {text}\n")).unwrap();
            assert_eq!(layer.spend_controls, Some(on), "{text}");
            let mut settings = AdvisorSettings::default();
            layer.apply_to(&mut settings);
            assert_eq!(settings.spend_controls, on, "{text}");
        }
        for bad in ["off", "0", "[true]", "maybe"] {
            let message = error(&format!("advisor:\n  spendControls: {bad}\n"));
            assert!(
                message.contains("advisor.spendControls in /agent/config.yml")
                    && message.ends_with("true, false"),
                "{bad}: {message}"
            );
        }
    }

    #[test]
    fn sp1_tool_budget_is_a_whole_number_from_0_to_50_default_3() {
        assert_eq!(AdvisorSettings::default().tool_budget, 3);
        for (text, budget) in [("0", 0), ("50", 50), ("12", 12)] {
            let (layer, _) = parse(&format!("advisor:\n  toolBudget: {text}\n")).unwrap();
            assert_eq!(layer.tool_budget, Some(budget), "{text}");
        }
        let (layer, _) = parse("advisor:\n  toolBudget:\n").unwrap();
        assert_eq!(layer.tool_budget, None, "an empty value sets nothing");
        assert_eq!(
            error("advisor:\n  toolBudget: 51\n"),
            "invalid value `51` for advisor.toolBudget in /agent/config.yml: allowed values are \
             a whole number from 0 to 50"
        );
        for bad in ["2.5", "-3", "lots", "[3]", "true"] {
            let message = error(&format!("advisor:\n  toolBudget: {bad}\n"));
            assert!(
                message.contains("advisor.toolBudget in /agent/config.yml")
                    && message.ends_with("a whole number from 0 to 50"),
                "{bad}: {message}"
            );
        }
    }

    /// Invalid values: the text, the key the error names, and part of its allowed values.
    const INVALID_VALUES: [(&str, &str, &str); 16] = [
        (
            "advisor:\n  policy: loud\n",
            "advisor.policy",
            "interrupt, reconfirm",
        ),
        (
            "advisor:\n  transcript: short\n",
            "advisor.transcript",
            "expanded, compact, full",
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
        (
            "advisor:\n  toolBudget: 51\n",
            "advisor.toolBudget",
            "a whole number from 0 to 50",
        ),
        (
            "advisor:\n  toolBudget: -1\n",
            "advisor.toolBudget",
            "a whole number from 0 to 50",
        ),
        (
            "advisor:\n  toolBudget: three\n",
            "advisor.toolBudget",
            "a whole number from 0 to 50",
        ),
        ("modelRoles: fast\n", "modelRoles", "mapping"),
        ("advisor: on\n", "advisor", "mapping"),
    ];

    #[test]
    fn k1_invalid_values_name_the_key_the_file_and_the_allowed_values() {
        for (text, key, allowed) in INVALID_VALUES {
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
             defer, interrupt, reconfirm"
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
    fn k1_deep_nesting_is_refused_before_parsing_naming_the_file() {
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
    fn k1_values_and_keys_in_notices_are_cut_to_about_200_characters() {
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
    fn k1_suggestions_come_from_the_derived_keys() {
        assert!(fields_of::<SettingsLayer>().contains(&"maxConcurrentReviews"));
        assert!(!fields_of::<SettingsLayer>().contains(&"advisorRole"));
        let (_, warnings) = parse(
            "advisor:\n  maxNoteChar: 5\n  compaction:\n    thresholdToken: 5\n  requestTimeout: 1\n",
        )
        .unwrap();
        let suggestions: Vec<Option<String>> = warnings
            .into_iter()
            .map(|w| match w {
                SettingsWarning::UnknownKey { suggestion, .. } => suggestion,
                SettingsWarning::BlankPrompt { .. } | SettingsWarning::BadValue { .. } => None,
            })
            .collect();
        assert_eq!(
            suggestions,
            [
                Some("advisor.maxNoteChars".to_string()),
                Some("advisor.compaction.thresholdTokens".to_string()),
                None,
            ]
        );
    }

    #[test]
    fn k1_a_key_that_is_not_text_is_an_error_at_its_path() {
        let message = error("advisor:\n  1: true\n");
        assert!(
            message.starts_with("/agent/config.yml is not a valid settings file: advisor: "),
            "{message}"
        );
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
