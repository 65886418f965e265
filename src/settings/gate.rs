//! The action gate's settings (SPEC §20, GT1–GT3): `advisor.gate`, `advisor.gateTimeoutMs`
//! and `advisor.gateFailMode`, and the values a roster entry may override them with.

use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::SettingsError;

/// The default of `advisor.gateTimeoutMs` (GT4): how long the gate's model may take.
pub const DEFAULT_GATE_TIMEOUT: Duration = Duration::from_millis(15_000);

/// The least and most `advisor.gateTimeoutMs` takes.
pub const GATE_TIMEOUT_MS_RANGE: (u64, u64) = (100, 600_000);

/// `advisor.gate` (GT1): which proposed tool calls are put to the gate before they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateMode {
    /// No call is gated (the default).
    #[default]
    Off,
    /// Calls the local classifier finds risky go to the gate's model; the rest pass (GT2).
    Risky,
    /// Every call goes to the gate's model.
    All,
}

impl GateMode {
    /// The word the settings use for it.
    pub fn as_str(self) -> &'static str {
        match self {
            GateMode::Off => "off",
            GateMode::Risky => "risky",
            GateMode::All => "all",
        }
    }
}

impl FromStr for GateMode {
    type Err = SettingsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" => Ok(Self::Off),
            "risky" => Ok(Self::Risky),
            "all" => Ok(Self::All),
            _ => Err(SettingsError::Invalid {
                key: "advisor.gate",
                value: s.to_string(),
                allowed: GATE_ALLOWED,
            }),
        }
    }
}

/// The values `advisor.gate` takes.
pub const GATE_ALLOWED: &str = "off, risky, all";

/// The values `advisor.gateFailMode` takes.
pub const GATE_FAIL_MODE_ALLOWED: &str = "open, closed, ask";

/// `advisor.gateFailMode` (GT5): what a gated call gets when the gate's model fails, times
/// out or answers something that is not the verdict asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateFailMode {
    /// The call runs.
    Open,
    /// The call is denied.
    Closed,
    /// A person is asked (where the host cannot ask: see [`GateFailMode::effective`]).
    Ask,
}

impl GateFailMode {
    /// What a failure gives on a host that can (`can_ask`) or cannot ask a person: the
    /// setting, or without one `ask` where a person can be asked and `open` elsewhere; an
    /// explicit `ask` on a host that cannot ask is `closed` (nothing the user asked to be
    /// confirmed runs unconfirmed).
    pub fn effective(setting: Option<GateFailMode>, can_ask: bool) -> GateFailMode {
        match (setting, can_ask) {
            (None, true) => GateFailMode::Ask,
            (None, false) => GateFailMode::Open,
            (Some(GateFailMode::Ask), false) => GateFailMode::Closed,
            (Some(mode), _) => mode,
        }
    }

    /// The word the settings use for it.
    pub fn as_str(self) -> &'static str {
        match self {
            GateFailMode::Open => "open",
            GateFailMode::Closed => "closed",
            GateFailMode::Ask => "ask",
        }
    }
}

impl FromStr for GateFailMode {
    type Err = SettingsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "open" => Ok(Self::Open),
            "closed" => Ok(Self::Closed),
            "ask" => Ok(Self::Ask),
            _ => Err(SettingsError::Invalid {
                key: "advisor.gateFailMode",
                value: s.to_string(),
                allowed: GATE_FAIL_MODE_ALLOWED,
            }),
        }
    }
}

/// The gate's settings as one value: the session's, or a roster entry's over them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateSettings {
    /// `advisor.gate`.
    pub mode: GateMode,
    /// `advisor.gateTimeoutMs`.
    pub timeout: Duration,
    /// `advisor.gateFailMode`; `None`: the host's default (GT5).
    pub fail_mode: Option<GateFailMode>,
}

impl Default for GateSettings {
    fn default() -> Self {
        Self {
            mode: GateMode::Off,
            timeout: DEFAULT_GATE_TIMEOUT,
            fail_mode: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gt1_gate_mode_words_parse_in_any_case_and_others_are_refused() {
        assert_eq!("RISKY".parse::<GateMode>().unwrap(), GateMode::Risky);
        assert_eq!(" all ".parse::<GateMode>().unwrap(), GateMode::All);
        assert_eq!("off".parse::<GateMode>().unwrap(), GateMode::Off);
        assert!("sometimes".parse::<GateMode>().is_err());
        assert_eq!(
            GateSettings::default().mode,
            GateMode::Off,
            "off by default"
        );
        assert_eq!(GateSettings::default().timeout, Duration::from_secs(15));
    }

    #[test]
    fn gt5_fail_mode_defaults_to_ask_where_a_person_can_be_asked_else_open() {
        assert_eq!(GateFailMode::effective(None, true), GateFailMode::Ask);
        assert_eq!(GateFailMode::effective(None, false), GateFailMode::Open);
        let closed = Some(GateFailMode::Closed);
        assert_eq!(GateFailMode::effective(closed, true), GateFailMode::Closed);
        let ask = Some(GateFailMode::Ask);
        assert_eq!(
            GateFailMode::effective(ask, false),
            GateFailMode::Closed,
            "an ask nobody can answer never becomes an allow"
        );
        let open = Some(GateFailMode::Open);
        assert_eq!(GateFailMode::effective(open, true), GateFailMode::Open);
    }
}
