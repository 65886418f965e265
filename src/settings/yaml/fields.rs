//! The checks of the settings file's values (K1): one `deserialize_with` function per kind
//! of key, each naming its allowed values when it refuses one, the blocks (`advisor:`,
//! `modelRoles:`, `retry:`), and the cadence keys whose bad values are warnings (CA5, CA9,
//! CA19).

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_norway::Value;

use super::super::{
    DeliveryPolicy, FallbackRevert, ReviewMode, SettingsError, SyncBacklog,
    JUDGE_THRESHOLD_ALLOWED, MAX_REVIEW_INTERVAL, MAX_SPEND_RATIO, MIN_SPEND_RATIO,
    SPEND_RATIO_ALLOWED, SYNC_BACKLOG_ALLOWED,
};
use super::{kind, Compaction, Decimal, RetryLayer, Roles, SettingsLayer, SettingsWarning};
use crate::regular_file::{clip, SHOWN_CHARS};
use crate::render::TranscriptView;

pub(super) const ROLE_ALLOWED: &str = "a model role such as provider/model-id[:thinking]";

/// Separates the shown value from the allowed values inside a serde error message, so the
/// error can be rebuilt with the key's path around it.
pub(super) const PARTS: char = '\u{1f}';

/// The error for a value a field refused; the message carries the shown value and the
/// allowed values.
pub(super) fn refused<E: de::Error>(shown: &str, allowed: &str) -> E {
    E::custom(format_args!("{shown}{PARTS}{allowed}"))
}

/// The settings error for a refused value, with its key's path and the file.
pub(super) fn invalid_in(
    file: &Path,
    err: &serde_path_to_error::Error<serde_norway::Error>,
) -> SettingsError {
    let message = err.inner().to_string();
    let key = err
        .path()
        .iter()
        .filter_map(|segment| match segment {
            serde_path_to_error::Segment::Map { key } => Some(clip(key, SHOWN_CHARS).into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(".");
    match message.split_once(PARTS) {
        Some((value, allowed)) => SettingsError::InvalidInFile {
            file: file.to_path_buf(),
            key,
            value: value.to_string(),
            allowed: allowed.to_string(),
        },
        // Not a refusal of ours (a key that is not text, say): the parser's words, at the
        // key's path.
        None => SettingsError::NotYaml {
            file: file.to_path_buf(),
            message: clip(&format!("{key}: {message}"), SHOWN_CHARS).into_owned(),
        },
    }
}

/// One scalar as the file gave it, or the kind of a collection.
pub(super) enum Scalar {
    Null,
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Text(String),
    Collection(&'static str),
}

impl Scalar {
    /// As the user wrote it, for messages, cut to about 200 characters.
    fn shown(&self) -> String {
        match self {
            Scalar::Null => "null".to_string(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Unsigned(n) => n.to_string(),
            Scalar::Signed(n) => n.to_string(),
            Scalar::Float(x) => x.to_string(),
            Scalar::Text(s) => clip(s, SHOWN_CHARS).into_owned(),
            Scalar::Collection(kind) => (*kind).to_string(),
        }
    }
}

/// Reads one value of a field: null is "not set" (`None`); anything else goes to `check`,
/// which gives the setting or `None` for a refused value (then an error naming `allowed`).
pub(super) struct FieldVisitor<T, F> {
    allowed: &'static str,
    check: F,
    out: PhantomData<T>,
}

impl<T, F: FnOnce(&Scalar) -> Option<T>> FieldVisitor<T, F> {
    fn take<E: de::Error>(self, scalar: Scalar) -> Result<Option<T>, E> {
        if matches!(scalar, Scalar::Null) {
            return Ok(None);
        }
        match (self.check)(&scalar) {
            Some(value) => Ok(Some(value)),
            None => Err(refused(&scalar.shown(), self.allowed)),
        }
    }
}

impl<'de, T, F: FnOnce(&Scalar) -> Option<T>> Visitor<'de> for FieldVisitor<T, F> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.allowed)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.take(Scalar::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.take(Scalar::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        self.take(Scalar::Bool(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.take(Scalar::Unsigned(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.take(Scalar::Signed(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.take(Scalar::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.take(Scalar::Text(v.to_string()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<Self::Value, A::Error> {
        self.take(Scalar::Collection("a list"))
    }

    fn visit_map<A: MapAccess<'de>>(self, _map: A) -> Result<Self::Value, A::Error> {
        self.take(Scalar::Collection("a mapping"))
    }
}

pub(super) fn field<'de, D, T>(
    d: D,
    allowed: &'static str,
    check: impl FnOnce(&Scalar) -> Option<T>,
) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
{
    d.deserialize_any(FieldVisitor {
        allowed,
        check,
        out: PhantomData,
    })
}

pub(in crate::settings) fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    field(d, "true, false", |v| match v {
        Scalar::Bool(b) => Some(*b),
        _ => None,
    })
}

pub(super) fn sync_backlog<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<SyncBacklog>, D::Error> {
    field(d, SYNC_BACKLOG_ALLOWED, |v| {
        let text = match v {
            Scalar::Text(s) => s.clone(),
            Scalar::Unsigned(_) | Scalar::Signed(_) | Scalar::Float(_) => v.shown(),
            Scalar::Bool(false) => "off".to_string(),
            _ => return None,
        };
        text.parse().ok()
    })
}

pub(super) fn review_mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ReviewMode>, D::Error> {
    word(d, "turn, agent-end")
}

/// A key of the `advisor:` block whose bad value is a warning, not an error (CA5, CA9).
pub(super) struct LenientKey {
    /// The key in the block.
    key: &'static str,
    /// Its full path, for the warning.
    path: &'static str,
    /// Its allowed values, for the warning.
    allowed: &'static str,
    /// The value used instead of a bad one, as written in a file.
    used: &'static str,
    /// Whether a value is allowed.
    valid: fn(&Value) -> bool,
}

/// The keys whose bad values are warnings (CA5, CA9, CA19).
pub(super) const LENIENT_KEYS: [LenientKey; 4] = [
    LenientKey {
        key: "reviewMode",
        path: "advisor.reviewMode",
        allowed: "turn, agent-end",
        used: "turn",
        valid: |v| {
            v.as_str()
                .is_some_and(|s| s.trim().to_ascii_lowercase().parse::<ReviewMode>().is_ok())
        },
    },
    LenientKey {
        key: "reviewInterval",
        path: "advisor.reviewInterval",
        allowed: "a whole number from 1 to 9007199254740991",
        used: "1",
        valid: |v| {
            matches!(v, Value::Number(n)
                if n.as_u64().is_some_and(|n| (1..=MAX_REVIEW_INTERVAL).contains(&n)))
        },
    },
    LenientKey {
        key: "syncBacklog",
        path: "advisor.syncBacklog",
        allowed: SYNC_BACKLOG_ALLOWED,
        used: "off",
        valid: |v| {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(false) => return true,
                _ => return false,
            };
            text.parse::<SyncBacklog>().is_ok()
        },
    },
    LenientKey {
        key: "immuneTurns",
        path: "advisor.immuneTurns",
        allowed: "a number; 0 or less turns it off",
        used: "3",
        valid: |v| matches!(v, Value::Number(n) if n.as_f64().is_some_and(|f| !f.is_nan())),
    },
];

/// `advisor.immuneTurns` as a number of turns (CA19): 0 or negative is 0 (off), a fraction
/// is truncated, past 2^32 − 1 is 2^32 − 1.
pub(super) fn immune_turns_value(value: &Value) -> Value {
    let turns = value
        .as_f64()
        .unwrap_or(0.0)
        .trunc()
        .clamp(0.0, U32_MAX as f64);
    Value::Number((turns as u64).into())
}

/// Checks the cadence keys of `document`'s `advisor:` block (CA5, CA9): each bad value is
/// replaced by its default and answered as a warning naming the key, so the file is still
/// used. Null stays "not set".
pub(super) fn lenient_cadence_keys(file: &Path, document: &mut Value) -> Vec<SettingsWarning> {
    let mut warnings = Vec::new();
    let Some(Value::Mapping(block)) = document.get_mut("advisor") else {
        return warnings;
    };
    for lenient in LENIENT_KEYS {
        let Some(value) = block.get_mut(lenient.key) else {
            continue;
        };
        if value.is_null() {
            continue;
        }
        if (lenient.valid)(value) {
            if lenient.key == "immuneTurns" {
                *value = immune_turns_value(value);
            }
            continue;
        }
        let shown = match &*value {
            Value::String(s) => format!("{s:?}"),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => kind(other).to_string(),
        };
        warnings.push(SettingsWarning::BadValue {
            file: file.to_path_buf(),
            key: lenient.path,
            value: clip(&shown, SHOWN_CHARS).into_owned(),
            allowed: lenient.allowed,
            used: lenient.used,
        });
        *value = match lenient.key {
            "reviewInterval" => Value::Number(1.into()),
            "immuneTurns" => Value::Number(3.into()),
            _ => Value::String(lenient.used.to_string()),
        };
    }
    warnings
}

pub(super) fn word<'de, D, T: std::str::FromStr>(
    d: D,
    allowed: &'static str,
) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
{
    field(d, allowed, |v| match v {
        Scalar::Text(s) => s.trim().to_ascii_lowercase().parse().ok(),
        _ => None,
    })
}

pub(super) fn policy<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DeliveryPolicy>, D::Error> {
    word(d, "defer, interrupt, reconfirm")
}

pub(in crate::settings) fn revert_policy<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<FallbackRevert>, D::Error> {
    word(d, "cooldown-expiry, never")
}

pub(super) const CHAINS_ALLOWED: &str =
    "a mapping of model selectors (or advisor, default) to lists of provider/model-id[:thinking]";

/// `retry.fallbackChains`: a mapping of keys to lists of model roles (a single role is a
/// list of one); null is "not set".
pub(in crate::settings) fn chains<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, Vec<String>>>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    let Some(value) = value else {
        return Ok(None);
    };
    let Value::Mapping(map) = value else {
        return Err(refused(kind(&value), CHAINS_ALLOWED));
    };
    let mut chains = BTreeMap::new();
    for (key, models) in map {
        let Value::String(key) = key else {
            return Err(refused(kind(&key), CHAINS_ALLOWED));
        };
        let models = match models {
            Value::Null => continue,
            Value::String(one) => vec![Value::String(one)],
            Value::Sequence(list) => list,
            other => return Err(refused(kind(&other), CHAINS_ALLOWED)),
        };
        let mut roles = Vec::with_capacity(models.len());
        for model in models {
            match model {
                Value::String(role) if !role.trim().is_empty() => {
                    roles.push(role.trim().to_string())
                }
                Value::String(_) => {}
                other => return Err(refused(kind(&other), CHAINS_ALLOWED)),
            }
        }
        chains.insert(key.trim().to_string(), roles);
    }
    Ok(Some(chains))
}

pub(super) fn retry_block<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RetryLayer>, D::Error> {
    block(d, "a mapping of retry settings")
}

/// `advisor.gate` (GT1); YAML's `off` read as `false` is `off`.
pub(super) fn gate_mode<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<super::super::GateMode>, D::Error> {
    field(d, super::super::GATE_ALLOWED, |v| match v {
        Scalar::Text(s) => s.parse().ok(),
        Scalar::Bool(false) => Some(super::super::GateMode::Off),
        _ => None,
    })
}

/// `advisor.gateFailMode` (GT5).
pub(super) fn gate_fail_mode<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<super::super::GateFailMode>, D::Error> {
    word(d, super::super::GATE_FAIL_MODE_ALLOWED)
}

pub(super) fn transcript<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<TranscriptView>, D::Error> {
    word(d, "expanded, compact, full")
}

pub(super) const U32_MAX: u64 = u32::MAX as u64;

/// A whole number from `MIN` to `MAX`.
pub(super) fn whole<'de, D, T, const MIN: u64, const MAX: u64>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    let allowed: &'static str = match (MIN, MAX) {
        (0, U32_MAX) => "a whole number, 0 or more",
        (1, U32_MAX) | (1, u64::MAX) => "a whole number, 1 or more",
        (1, 1_000_000) => "a whole number from 1 to 1000000",
        (1, 86_400) => "a whole number from 1 to 86400",
        (1, 4096) => "a whole number from 1 to 4096",
        (1, MAX_REVIEW_INTERVAL) => "a whole number from 1 to 9007199254740991",
        (0, 50) => "a whole number from 0 to 50",
        (100, 600_000) => "a whole number from 100 to 600000",
        _ => "a whole number",
    };
    field(d, allowed, |v| match v {
        Scalar::Unsigned(n) if (MIN..=MAX).contains(n) => T::try_from(*n).ok(),
        _ => None,
    })
}

/// A number (whole or not) within `range`, or nothing; a string, flag, collection or a
/// number outside it (NaN and infinities included) is refused naming `allowed`.
pub(super) fn decimal<'de, D: Deserializer<'de>>(
    d: D,
    range: std::ops::RangeInclusive<f64>,
    allowed: &'static str,
) -> Result<Option<Decimal>, D::Error> {
    field(d, allowed, |v| {
        let x = match v {
            Scalar::Unsigned(n) => *n as f64,
            Scalar::Signed(n) => *n as f64,
            Scalar::Float(x) => *x,
            _ => return None,
        };
        range.contains(&x).then_some(Decimal(x))
    })
}

/// `advisor.maxSpendRatio` (SP6).
pub(super) fn spend_ratio<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
    decimal(d, MIN_SPEND_RATIO..=MAX_SPEND_RATIO, SPEND_RATIO_ALLOWED)
}

/// `advisor.judgeThreshold` (SP9).
pub(super) fn judge_threshold<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Decimal>, D::Error> {
    decimal(d, 0.0..=1.0, JUDGE_THRESHOLD_ALLOWED)
}

/// A model role string; blank or null means not set.
pub(super) fn role<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let role = field(d, ROLE_ALLOWED, |v| match v {
        Scalar::Text(s) => Some(s.trim().to_string()),
        _ => None,
    })?;
    Ok(role.filter(|r| !r.is_empty()))
}

/// Reads a block (a mapping of keys) into `T`; null is "not set"; anything else is an
/// error naming `allowed`.
pub(super) struct BlockVisitor<T> {
    allowed: &'static str,
    out: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for BlockVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.allowed)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Err(refused(&v.to_string(), self.allowed))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Err(refused(&v.to_string(), self.allowed))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Err(refused(&v.to_string(), self.allowed))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Err(refused(&v.to_string(), self.allowed))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Err(refused(&clip(v, SHOWN_CHARS), self.allowed))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<Self::Value, A::Error> {
        Err(refused("a list", self.allowed))
    }
}

pub(super) fn block<'de, D, T>(d: D, allowed: &'static str) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    d.deserialize_any(BlockVisitor {
        allowed,
        out: PhantomData,
    })
}

pub(super) fn model_roles<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Roles>, D::Error> {
    block(d, "a mapping of role names")
}

pub(super) fn advisor_block<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<SettingsLayer>, D::Error> {
    block(d, "a mapping of advisor settings")
}

pub(super) fn compaction<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let block: Option<Compaction> = block(d, "a mapping with thresholdTokens")?;
    Ok(block.and_then(|b| b.threshold_tokens))
}
