//! The backup reviewer (P6): when a review fails, the failing model cools down and the same
//! batch is retried at once on the first model of the chain that is not cooling down; the
//! advisor returns to its own model before a later review once that model's cooldown has
//! ended (`retry.fallbackRevertPolicy: cooldown-expiry`), or stays (`never`).
//!
//! Plain state, driven by the agent with the current instant: [`Fallback::on_failure`]
//! decides a switch, [`Fallback::revert_due`] a return. The chain's models were built by the
//! host (only those with a key), each behind its provider's call limit (A6); at most
//! [`MAX_BACKUPS`] of them are tried. An error retrying cannot fix (F3: 401/403, an unknown
//! model, an exhausted quota) on a backup ends the walk down the chain: the advisor pauses,
//! and the one notice of the pause names the chain ([`Fallback::explained`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::model::{ModelClient, ModelError};
use crate::regular_file::{clip, SHOWN_CHARS};
use crate::settings::{FallbackRevert, MAX_BACKUPS};

/// Why a model failed, for its cooldown (P6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// Quota or credits exhausted, a usage limit reached.
    Quota,
    /// Rate limited (429).
    RateLimit,
    /// Overloaded (529, 503, "overloaded").
    Overload,
    /// Another server error (5xx).
    Server,
    /// Anything else (transport errors, timeouts, refusals, 4xx).
    Other,
}

impl FailureClass {
    /// Classifies a failed call from its error's words (the providers put the HTTP status
    /// first: `HTTP 429: …`; stream errors name their type).
    pub fn of(error: &ModelError) -> Self {
        let message = match error {
            ModelError::Retryable { message, .. }
            | ModelError::Permanent { message }
            | ModelError::ContextOverflow { message, .. } => message.to_ascii_lowercase(),
        };
        let status = message
            .strip_prefix("http ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse::<u16>().ok());
        let has = |words: &[&str]| words.iter().any(|w| message.contains(w));
        if has(&[
            "quota",
            "insufficient credits",
            "credit balance",
            "usage limit",
            "usage_limit",
        ]) {
            Self::Quota
        } else if status == Some(429) || has(&["rate limit", "rate_limit"]) {
            Self::RateLimit
        } else if matches!(status, Some(503 | 529)) || has(&["overload"]) {
            Self::Overload
        } else if status.is_some_and(|s| (500..600).contains(&s)) {
            Self::Server
        } else {
            Self::Other
        }
    }

    /// How long a model failing this way cools down when the provider named no wait.
    pub fn cooldown(self) -> Duration {
        Duration::from_secs(match self {
            Self::Quota => 30 * 60,
            Self::RateLimit => 30,
            Self::Overload => 60,
            Self::Server => 20,
            Self::Other => 5 * 60,
        })
    }
}

/// The cooldown of a model that failed with `error`: the provider's `Retry-After`, else by
/// class (P6).
pub fn cooldown_for(error: &ModelError) -> Duration {
    match error {
        ModelError::Retryable {
            retry_after: Some(wait),
            ..
        } => *wait,
        other => FailureClass::of(other).cooldown(),
    }
}

/// A switch to a backup model.
pub struct Switch {
    /// The model to review with now.
    pub model: Arc<dyn ModelClient>,
    /// The model that failed.
    pub from: String,
    /// Why: the failure.
    pub reason: String,
}

/// Which model reviews and why (status, C3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FallbackStatus {
    /// The backup model in use.
    pub model: String,
    /// The advisor's own model.
    pub instead_of: String,
    /// Why the switch happened.
    pub reason: String,
}

/// The notice of a switch to a backup model (P6).
pub fn switch_notice(from: &str, to: &str, reason: &str) -> String {
    crate::texts::notice(
        "switched",
        &[("from", from), ("to", to), ("reason", reason)],
    )
}

/// The notice of the return to the advisor's own model (P6).
pub fn revert_notice(own: &str) -> String {
    crate::texts::notice("reverted", &[("own", own)])
}

/// The backup reviewer's state; see the module docs.
pub struct Fallback {
    own: Arc<dyn ModelClient>,
    chain: Vec<Arc<dyn ModelClient>>,
    revert: FallbackRevert,
    cooldowns: HashMap<String, Instant>,
    active: Option<FallbackStatus>,
    switches: u64,
}

impl Fallback {
    /// The state of an advisor whose own model is `own`, with the backup `chain` in order
    /// (empty: no fallback; past [`MAX_BACKUPS`] left out) and the revert policy.
    pub fn new(
        own: Arc<dyn ModelClient>,
        mut chain: Vec<Arc<dyn ModelClient>>,
        revert: FallbackRevert,
    ) -> Self {
        chain.truncate(MAX_BACKUPS);
        Self {
            own,
            chain,
            revert,
            cooldowns: HashMap::new(),
            active: None,
            switches: 0,
        }
    }

    /// A review on `current` failed with `error` at `now`: `current` cools down, and the
    /// first chain model after it that is neither cooling down nor `current` itself is the
    /// switch, if any. Context overflows never switch, and neither does an error retrying
    /// cannot fix on a backup (F3): the walk ends there.
    pub fn on_failure(
        &mut self,
        current: &dyn ModelClient,
        error: &ModelError,
        now: Instant,
    ) -> Option<Switch> {
        if self.chain.is_empty() || matches!(error, ModelError::ContextOverflow { .. }) {
            return None;
        }
        let from = current.info().id;
        self.cooldowns
            .insert(from.clone(), now + cooldown_for(error));
        if matches!(error, ModelError::Permanent { .. }) && from != self.own.info().id {
            return None;
        }
        let start = self
            .chain
            .iter()
            .position(|m| m.info().id == from)
            .map_or(0, |i| i + 1);
        let model = self.chain[start..]
            .iter()
            .find(|m| {
                let id = m.info().id;
                id != from && !self.cooling(&id, now)
            })?
            .clone();
        let reason = error.to_string();
        self.active = Some(FallbackStatus {
            model: model.info().id,
            instead_of: self.own.info().id,
            reason: reason.clone(),
        });
        self.switches += 1;
        Some(Switch {
            model,
            from,
            reason,
        })
    }

    /// `error` of a review on `current` as the failure policy is given it when no backup
    /// takes the batch: an error retrying cannot fix (F3) names the chain, so the one notice
    /// of the pause says which models there are besides the one that failed.
    pub fn explained(&self, current: &dyn ModelClient, error: ModelError) -> ModelError {
        match error {
            ModelError::Permanent { message } if !self.chain.is_empty() => {
                let id = |m: &Arc<dyn ModelClient>| clip(&m.info().id, SHOWN_CHARS).into_owned();
                let mut models = vec![id(&self.own)];
                models.extend(self.chain.iter().map(id));
                ModelError::Permanent {
                    message: format!(
                        "{} failed: {message} (backup chain: {})",
                        current.info().id,
                        models.join(" → ")
                    ),
                }
            }
            other => other,
        }
    }

    /// Before a review at `now`: the advisor's own model when it is on a backup, the
    /// policy is `cooldown-expiry` and the own model's cooldown has ended.
    pub fn revert_due(&mut self, now: Instant) -> Option<Arc<dyn ModelClient>> {
        if self.active.is_none() || self.revert == FallbackRevert::Never {
            return None;
        }
        if self.cooling(&self.own.info().id, now) {
            return None;
        }
        self.active = None;
        Some(Arc::clone(&self.own))
    }

    /// The advisor's own model became `model` (a promotion, G5): it is the one to return to,
    /// and it is in use now.
    pub fn own_model_changed(&mut self, model: Arc<dyn ModelClient>) {
        self.own = model;
        self.active = None;
    }

    /// `/advisor on` resumed a paused advisor: every cooldown ends, so the own model is
    /// back before the next review (unless the policy is `never`) and the whole chain is
    /// there again should it fail (P6).
    pub fn clear_cooldowns(&mut self) {
        self.cooldowns.clear();
    }

    /// The backup in use and why, when on one.
    pub fn status(&self) -> Option<&FallbackStatus> {
        self.active.as_ref()
    }

    /// Switches to a backup so far.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    fn cooling(&self, id: &str, now: Instant) -> bool {
        self.cooldowns.get(id).is_some_and(|until| *until > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::scripted::ScriptedModel;

    fn model(id: &str) -> Arc<dyn ModelClient> {
        Arc::new(ScriptedModel::new([]).with_id(id))
    }

    fn error(message: &str, retry_after: Option<u64>) -> ModelError {
        ModelError::Retryable {
            message: message.into(),
            retry_after: retry_after.map(Duration::from_secs),
            usage: None,
        }
    }

    #[test]
    fn p6_cooldowns_follow_retry_after_else_the_failure_class() {
        let cases = [
            (error("HTTP 500: boom", None), 20),
            (error("HTTP 502: bad gateway", None), 20),
            (error("HTTP 529: overloaded", None), 60),
            (error("stream error overloaded_error: Overloaded", None), 60),
            (error("HTTP 429: slow down", None), 30),
            (error("HTTP 429: slow down", Some(7)), 7),
            (error("request failed: connection refused", None), 300),
            (
                ModelError::Permanent {
                    message: "HTTP 429: insufficient_quota".into(),
                },
                1800,
            ),
        ];
        for (err, secs) in cases {
            assert_eq!(cooldown_for(&err), Duration::from_secs(secs), "{err}");
        }
    }

    #[test]
    fn p6_a_failure_switches_to_the_first_chain_model_not_cooling_down_and_reverts_after() {
        let own = model("a/own");
        let chain = vec![model("b/one"), model("c/two")];
        let mut f = Fallback::new(Arc::clone(&own), chain, FallbackRevert::CooldownExpiry);
        let t0 = Instant::now();
        let s = f
            .on_failure(&*own, &error("HTTP 500: x", None), t0)
            .expect("a switch");
        assert_eq!(
            (s.model.info().id.as_str(), s.from.as_str()),
            ("b/one", "a/own")
        );
        let status = f.status().expect("on a backup");
        assert_eq!(status.instead_of, "a/own");
        assert!(status.reason.contains("HTTP 500"));
        // The backup fails too: the next one after it.
        let s = f
            .on_failure(&*s.model, &error("HTTP 529: overloaded", None), t0)
            .expect("the next backup");
        assert_eq!(s.model.info().id, "c/two");
        // The last one fails: nothing left that is not cooling down.
        assert!(f
            .on_failure(&*s.model, &error("HTTP 500", None), t0)
            .is_none());
        assert_eq!(f.switches(), 2);
        // The own model cooled down 20 s.
        assert!(f.revert_due(t0 + Duration::from_secs(19)).is_none());
        let back = f.revert_due(t0 + Duration::from_secs(20)).expect("revert");
        assert_eq!(back.info().id, "a/own");
        assert!(f.status().is_none());
        // Once the backups have cooled down they serve again.
        let later = t0 + Duration::from_secs(61);
        let s = f
            .on_failure(&*own, &error("HTTP 500", None), later)
            .expect("switch");
        assert_eq!(s.model.info().id, "b/one");
    }

    #[test]
    fn p6_never_stays_and_overflows_or_empty_chains_never_switch() {
        let own = model("a/own");
        let mut f = Fallback::new(
            Arc::clone(&own),
            vec![model("b/one")],
            FallbackRevert::Never,
        );
        let t0 = Instant::now();
        let overflow = ModelError::ContextOverflow {
            message: "too long".into(),
            usage: None,
        };
        assert!(f.on_failure(&*own, &overflow, t0).is_none());
        assert!(f.on_failure(&*own, &error("HTTP 500", None), t0).is_some());
        assert!(f.revert_due(t0 + Duration::from_secs(3600)).is_none());
        let mut none = Fallback::new(Arc::clone(&own), vec![], FallbackRevert::CooldownExpiry);
        assert!(none
            .on_failure(&*own, &error("HTTP 500", None), t0)
            .is_none());
        // A chain holding the own model skips it.
        let mut f = Fallback::new(
            Arc::clone(&own),
            vec![model("a/own"), model("b/one")],
            FallbackRevert::CooldownExpiry,
        );
        let s = f
            .on_failure(&*own, &error("HTTP 500", None), t0)
            .expect("switch");
        assert_eq!(s.model.info().id, "b/one");
    }

    #[test]
    fn p6_f3_a_permanent_error_on_a_backup_ends_the_walk_and_the_pause_names_the_chain() {
        let own = model("a/own");
        let chain: Vec<Arc<dyn ModelClient>> =
            (0..1000).map(|i| model(&format!("b/{i}"))).collect();
        let mut f = Fallback::new(Arc::clone(&own), chain, FallbackRevert::CooldownExpiry);
        let t0 = Instant::now();
        let unauthorized = || ModelError::Permanent {
            message: "HTTP 401: invalid key".into(),
        };
        // The own model's permanent error still hands the batch to the first backup (P6).
        let s = f.on_failure(&*own, &unauthorized(), t0).expect("a switch");
        assert_eq!(s.model.info().id, "b/0");
        // The backup's ends the walk: no second backup is asked.
        assert!(f.on_failure(&*s.model, &unauthorized(), t0).is_none());
        assert_eq!(f.switches(), 1);
        let ModelError::Permanent { message } = f.explained(&*s.model, unauthorized()) else {
            panic!("still permanent");
        };
        let eight: Vec<String> = (0..MAX_BACKUPS).map(|i| format!("b/{i}")).collect();
        assert_eq!(
            message,
            format!(
                "b/0 failed: HTTP 401: invalid key (backup chain: a/own → {})",
                eight.join(" → ")
            ),
            "the chain named, cut at {MAX_BACKUPS} backups"
        );
        // A retryable error walks on, but never past the cap.
        let mut f = Fallback::new(
            Arc::clone(&own),
            (0..20).map(|i| model(&format!("c/{i}"))).collect(),
            FallbackRevert::CooldownExpiry,
        );
        let mut current = Arc::clone(&own);
        let mut calls = 1;
        while let Some(s) = f.on_failure(&*current, &error("HTTP 500", None), t0) {
            current = s.model;
            calls += 1;
        }
        assert_eq!(calls, 1 + MAX_BACKUPS);
        // Without a chain the error is the policy's as it was.
        let none = Fallback::new(Arc::clone(&own), vec![], FallbackRevert::CooldownExpiry);
        assert_eq!(
            none.explained(&*own, unauthorized()).to_string(),
            unauthorized().to_string()
        );
    }
}
