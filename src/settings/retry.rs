//! The `retry:` block of the settings (K1, P6): the backup reviewer's keys, which oh-my-pi
//! shares with the agent's own retries (`retry.enabled`, `retry.maxRetries`… are the agent's
//! and ignored here).
//!
//! ```yaml
//! retry:
//!   modelFallback: true                     # default true
//!   fallbackRevertPolicy: cooldown-expiry   # cooldown-expiry (default) | never
//!   fallbackChains:
//!     advisor: [openrouter/google/gemini-2.5-pro, anthropic/claude-sonnet-4-5:medium]
//! ```

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::Deserialize;

use super::SettingsError;

/// `retry.fallbackRevertPolicy` (P6): when the advisor goes back to its own model after a
/// switch to a backup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FallbackRevert {
    /// Before a later review, once the model's cooldown has ended (the default).
    #[default]
    CooldownExpiry,
    /// Never: the backup stays for the session.
    Never,
}

impl FallbackRevert {
    /// The value as the settings file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CooldownExpiry => "cooldown-expiry",
            Self::Never => "never",
        }
    }
}

impl FromStr for FallbackRevert {
    type Err = SettingsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cooldown-expiry" => Ok(Self::CooldownExpiry),
            "never" => Ok(Self::Never),
            _ => Err(SettingsError::Invalid {
                key: "retry.fallbackRevertPolicy",
                value: s.to_string(),
                allowed: "cooldown-expiry, never",
            }),
        }
    }
}

/// The backup reviewer's settings (P6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySettings {
    /// `retry.modelFallback`: whether a failing review switches to a backup model.
    pub model_fallback: bool,
    /// `retry.fallbackRevertPolicy`.
    pub revert: FallbackRevert,
    /// `retry.fallbackChains`: a model selector (or `advisor`, or `default`) → the models to
    /// try in order.
    pub chains: BTreeMap<String, Vec<String>>,
}

impl Default for RetrySettings {
    fn default() -> Self {
        Self {
            model_fallback: true,
            revert: FallbackRevert::CooldownExpiry,
            chains: BTreeMap::new(),
        }
    }
}

/// The most backups of one chain that are tried (P6): the rest of a longer chain is left
/// out, with one notice naming its key and length.
pub const MAX_BACKUPS: usize = 8;

impl RetrySettings {
    /// The chain for the advisor whose model selector is `selector`
    /// (`provider/model-id[:thinking]`): the key equal to the selector, else to it without
    /// its thinking suffix, else `provider/*`, else `advisor`, else `default`. Empty when
    /// fallback is off or no key applies.
    pub fn chain_for(&self, selector: Option<&str>) -> &[String] {
        self.chain_entry(selector).map_or(&[], |(_, chain)| chain)
    }

    /// The key and chain [`RetrySettings::chain_for`] finds; `None` when fallback is off or
    /// no key applies.
    pub fn chain_entry(&self, selector: Option<&str>) -> Option<(&str, &[String])> {
        if !self.model_fallback {
            return None;
        }
        let mut keys: Vec<String> = Vec::new();
        if let Some(selector) = selector.map(str::trim).filter(|s| !s.is_empty()) {
            keys.push(selector.to_string());
            if let Some((base, level)) = selector.rsplit_once(':') {
                if crate::model::ThinkingLevel::parse(level).is_some() {
                    keys.push(base.to_string());
                }
            }
            if let Some((provider, _)) = selector.split_once('/') {
                keys.push(format!("{provider}/*"));
            }
        }
        keys.push("advisor".to_string());
        keys.push("default".to_string());
        keys.iter()
            .find_map(|k| self.chains.get_key_value(k))
            .map(|(key, chain)| (key.as_str(), chain.as_slice()))
    }
}

/// What one settings file's `retry:` block sets; `None` leaves the key to the layer below.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RetryLayer {
    /// `retry.modelFallback`.
    #[serde(deserialize_with = "super::yaml::flag")]
    pub model_fallback: Option<bool>,
    /// `retry.fallbackRevertPolicy`.
    #[serde(deserialize_with = "super::yaml::revert_policy")]
    pub fallback_revert_policy: Option<FallbackRevert>,
    /// `retry.fallbackChains`.
    #[serde(deserialize_with = "super::yaml::chains")]
    pub fallback_chains: Option<BTreeMap<String, Vec<String>>>,
}

impl RetryLayer {
    /// This layer over `base`, key by key; chains merge per chain key, this layer winning.
    pub fn over(self, base: Self) -> Self {
        let fallback_chains = match (self.fallback_chains, base.fallback_chains) {
            (Some(mine), Some(mut theirs)) => {
                theirs.extend(mine);
                Some(theirs)
            }
            (mine, theirs) => mine.or(theirs),
        };
        Self {
            model_fallback: self.model_fallback.or(base.model_fallback),
            fallback_revert_policy: self.fallback_revert_policy.or(base.fallback_revert_policy),
            fallback_chains,
        }
    }

    /// Writes the keys this layer sets into `settings`.
    pub fn apply_to(&self, settings: &mut RetrySettings) {
        if let Some(v) = self.model_fallback {
            settings.model_fallback = v;
        }
        if let Some(v) = self.fallback_revert_policy {
            settings.revert = v;
        }
        if let Some(v) = &self.fallback_chains {
            settings.chains = v.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chains(pairs: &[(&str, &[&str])]) -> RetrySettings {
        RetrySettings {
            chains: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
                .collect(),
            ..RetrySettings::default()
        }
    }

    #[test]
    fn p6_the_chain_is_found_by_selector_then_base_then_provider_then_advisor_then_default() {
        let s = chains(&[
            ("default", &["d/1"]),
            ("advisor", &["a/1"]),
            ("anthropic/*", &["w/1"]),
            ("anthropic/claude-sonnet-4-5", &["b/1"]),
            ("anthropic/claude-sonnet-4-5:high", &["e/1"]),
        ]);
        assert_eq!(
            s.chain_for(Some("anthropic/claude-sonnet-4-5:high")),
            ["e/1"]
        );
        assert_eq!(
            s.chain_for(Some("anthropic/claude-sonnet-4-5:low")),
            ["b/1"]
        );
        assert_eq!(s.chain_for(Some("anthropic/claude-opus-4")), ["w/1"]);
        assert_eq!(s.chain_for(Some("openai/gpt-5")), ["a/1"]);
        assert_eq!(s.chain_for(None), ["a/1"]);
        let s = chains(&[("default", &["d/1"])]);
        assert_eq!(s.chain_for(Some("openai/gpt-5")), ["d/1"]);
        let off = RetrySettings {
            model_fallback: false,
            ..chains(&[("advisor", &["a/1"])])
        };
        assert!(off.chain_for(Some("x/y")).is_empty());
        assert!(RetrySettings::default().chain_for(Some("x/y")).is_empty());
    }

    #[test]
    fn p6_layers_merge_chains_per_key() {
        let base = RetryLayer {
            model_fallback: Some(false),
            fallback_chains: Some(
                [
                    ("advisor".to_string(), vec!["a/1".to_string()]),
                    ("default".to_string(), vec!["d/1".to_string()]),
                ]
                .into(),
            ),
            ..RetryLayer::default()
        };
        let project = RetryLayer {
            fallback_revert_policy: Some(FallbackRevert::Never),
            fallback_chains: Some([("advisor".to_string(), vec!["p/1".to_string()])].into()),
            ..RetryLayer::default()
        };
        let mut settings = RetrySettings::default();
        project.over(base).apply_to(&mut settings);
        assert!(!settings.model_fallback);
        assert_eq!(settings.revert, FallbackRevert::Never);
        assert_eq!(settings.chains["advisor"], ["p/1"]);
        assert_eq!(settings.chains["default"], ["d/1"]);
    }
}
