//! The failure policy (F1–F3 as P7 amends them): what a failed review means for the backlog.
//!
//! A retryable failure is retried after the provider's `Retry-After` or the default delay;
//! a wait the server asks for that is longer than [`LONG_WAIT`] pauses the advisor until
//! then instead (F3), and it resumes by itself when the time is up. The third failure in a
//! row drops the batch in flight, not the pending turns (P7); the third batch dropped in a
//! row halts the advisor: a pause only the user, a new session or new settings end.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::model::{ModelError, Usage};
use crate::texts::{notice, plural};

/// A `Retry-After` longer than this pauses the advisor instead of holding a retry (F3).
pub const LONG_WAIT: Duration = Duration::from_secs(5 * 60);

/// What to do after a failed review (F1–F3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureAction {
    /// Put the batch back and retry after this delay.
    Retry(Duration),
    /// Third strike: drop the batch in flight, warn, let the primary go on (P7).
    DropBatch,
    /// The third batch dropped in a row: drop it and halt the advisor (P7).
    Halt,
    /// Retrying cannot fix it: pause with this reason (F3).
    Pause(String),
    /// The server asked for a wait longer than [`LONG_WAIT`]: pause with this reason and
    /// resume by itself after `wait` (F3).
    PauseFor {
        /// What the provider said.
        reason: String,
        /// The wait the provider asked for.
        wait: Duration,
    },
}

/// Batches dropped in a row that halt the advisor (P7).
pub const HALT_AFTER_DROPPED: u32 = 3;

/// Counts consecutive failures and dropped batches and decides what each failure means
/// (F1–F3, P7).
#[derive(Debug, Clone)]
pub struct FailurePolicy {
    consecutive: u32,
    limit: u32,
    dropped_in_row: u32,
    default_delay: Duration,
}

impl FailurePolicy {
    /// A policy dropping the batch in flight after `limit` consecutive failures (halting
    /// after [`HALT_AFTER_DROPPED`] dropped batches in a row), retrying after
    /// `default_delay` when the provider gave no `Retry-After`.
    pub fn new(limit: u32, default_delay: Duration) -> Self {
        Self {
            consecutive: 0,
            limit: limit.max(1),
            dropped_in_row: 0,
            default_delay,
        }
    }

    /// Consecutive failures so far.
    pub fn consecutive(&self) -> u32 {
        self.consecutive
    }

    /// Batches dropped since the last success (P7).
    #[cfg(test)]
    pub fn dropped_in_row(&self) -> u32 {
        self.dropped_in_row
    }

    /// A review succeeded: both counts start over.
    pub fn succeeded(&mut self) {
        self.consecutive = 0;
        self.dropped_in_row = 0;
    }

    /// A retry of the same batch that is not a strike (a switch to a backup model, P6):
    /// the consecutive count starts over, the dropped batches stay counted.
    pub fn retried_elsewhere(&mut self) {
        self.consecutive = 0;
    }

    /// A review failed with `error`: what to do.
    pub fn failed(&mut self, error: &ModelError) -> FailureAction {
        match error {
            ModelError::Permanent { message } => {
                self.consecutive = 0;
                return FailureAction::Pause(message.clone());
            }
            // P7: a usage limit pauses with the batch kept, until the provider's wait is over
            // when it named one.
            ModelError::Retryable {
                message,
                retry_after,
                ..
            } if is_usage_limit(message) => {
                self.consecutive = 0;
                return match retry_after {
                    Some(wait) => FailureAction::PauseFor {
                        reason: message.clone(),
                        wait: *wait,
                    },
                    None => FailureAction::Pause(message.clone()),
                };
            }
            ModelError::Retryable {
                message,
                retry_after: Some(wait),
                ..
            } if *wait > LONG_WAIT => {
                self.consecutive = 0;
                return FailureAction::PauseFor {
                    reason: message.clone(),
                    wait: *wait,
                };
            }
            _ => {}
        }
        self.consecutive += 1;
        if self.consecutive >= self.limit {
            self.consecutive = 0;
            self.dropped_in_row += 1;
            if self.dropped_in_row >= HALT_AFTER_DROPPED {
                self.dropped_in_row = 0;
                return FailureAction::Halt;
            }
            return FailureAction::DropBatch;
        }
        let delay = match error {
            ModelError::Retryable {
                retry_after: Some(d),
                ..
            } => *d,
            _ => self.default_delay,
        };
        FailureAction::Retry(delay)
    }
}

/// Whether a provider's error says a usage limit of the account was reached (P7); an
/// exhausted quota is already a permanent error (M4).
pub fn is_usage_limit(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["usage limit", "usage_limit", "usage-limit"]
        .iter()
        .any(|p| m.contains(p))
}

/// What a failed model call used before it failed, when the provider or the client could
/// tell (G4): it counts toward the lifetime totals like any response's usage.
pub fn failed_call_usage(error: &ModelError) -> Option<Usage> {
    match error {
        ModelError::Retryable { usage, .. } | ModelError::ContextOverflow { usage, .. } => *usage,
        ModelError::Permanent { .. } => None,
    }
}

/// The status line's reason for a pause until `resume_at` (F3 after a long `Retry-After`).
pub fn timed_pause_reason(reason: &str, resume_at: SystemTime) -> String {
    format!(
        "{reason} (the provider asked to wait until {})",
        utc_time(resume_at)
    )
}

/// The notice of a pause (F3): why, and how it ends — by itself when `timed` (the reason
/// says when), or by the user.
pub fn pause_notice(reason: &str, timed: bool) -> String {
    let key = if timed {
        "pausedTimed"
    } else {
        "pausedUntilFixed"
    };
    notice(key, &[("reason", reason)])
}

/// The notice of a pause's end when its time is up.
pub fn resumed_notice() -> String {
    notice("resumed", &[])
}

/// The notice of a dropped batch (P7).
pub fn dropped_notice(limit: u32, error: &str, turns: usize) -> String {
    let vars = [
        ("limit", limit.to_string()),
        ("turns", turns.to_string()),
        ("s", plural(turns).to_string()),
        ("error", error.to_string()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    notice("droppedBatch", &vars)
}

/// The notice of a second quarantine in a row (P5): the notes were withheld, the batch
/// dropped, and the advisor starts afresh.
pub fn quarantine_notice(labels: &str) -> String {
    notice("quarantined", &[("labels", labels)])
}

/// The status line's reason for a halt (P7): the pause lasts until `/advisor on`, new
/// settings or a new session.
pub fn halt_reason(error: &str) -> String {
    format!("halted after {HALT_AFTER_DROPPED} reviews in a row were dropped (last error: {error})")
}

/// `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc_time(at: SystemTime) -> String {
    let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01.
fn civil_date(days: u64) -> (u64, u64, u64) {
    // Count in 400-year eras from 0000-03-01, where leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error() -> ModelError {
        ModelError::Retryable {
            usage: None,
            message: "500".into(),
            retry_after: None,
        }
    }

    #[test]
    fn p7_three_strikes_drop_the_batch_then_count_resets() {
        let mut p = FailurePolicy::new(3, Duration::from_secs(1));
        let err = server_error();
        assert_eq!(p.failed(&err), FailureAction::Retry(Duration::from_secs(1)));
        assert_eq!(p.failed(&err), FailureAction::Retry(Duration::from_secs(1)));
        assert_eq!(p.failed(&err), FailureAction::DropBatch);
        assert_eq!((p.consecutive(), p.dropped_in_row()), (0, 1));
        assert_eq!(p.failed(&err), FailureAction::Retry(Duration::from_secs(1)));
        p.succeeded();
        assert_eq!((p.consecutive(), p.dropped_in_row()), (0, 0));
    }

    #[test]
    fn p7_the_third_dropped_batch_in_a_row_halts_and_a_success_in_between_starts_over() {
        let mut p = FailurePolicy::new(3, Duration::from_secs(1));
        let err = server_error();
        let mut actions = Vec::new();
        for _ in 0..9 {
            actions.push(p.failed(&err));
        }
        let ends: Vec<&FailureAction> = actions.iter().skip(2).step_by(3).collect();
        assert_eq!(
            ends,
            [
                &FailureAction::DropBatch,
                &FailureAction::DropBatch,
                &FailureAction::Halt
            ]
        );
        for _ in 0..5 {
            p.failed(&err);
        }
        assert_eq!(p.dropped_in_row(), 1);
        p.succeeded();
        for _ in 0..6 {
            p.failed(&err);
        }
        assert_eq!(p.dropped_in_row(), 2, "the success started the count over");
        p.retried_elsewhere();
        assert_eq!((p.consecutive(), p.dropped_in_row()), (0, 2));
    }

    #[test]
    fn f1_retry_after_is_honoured_and_f3_permanent_pauses() {
        let mut p = FailurePolicy::new(3, Duration::from_secs(1));
        let err = ModelError::Retryable {
            usage: None,
            message: "429".into(),
            retry_after: Some(Duration::from_secs(7)),
        };
        assert_eq!(p.failed(&err), FailureAction::Retry(Duration::from_secs(7)));
        let err = ModelError::Permanent {
            message: "401 unauthorized".into(),
        };
        assert_eq!(
            p.failed(&err),
            FailureAction::Pause("401 unauthorized".into())
        );
    }

    #[test]
    fn p7_a_usage_limit_pauses_at_once_not_as_a_strike() {
        let mut p = FailurePolicy::new(3, Duration::from_secs(1));
        p.failed(&server_error());
        let limit = |after: Option<u64>| ModelError::Retryable {
            usage: None,
            message: "HTTP 429: You have reached your usage limit for this period".into(),
            retry_after: after.map(Duration::from_secs),
        };
        assert_eq!(
            p.failed(&limit(None)),
            FailureAction::Pause(
                "HTTP 429: You have reached your usage limit for this period".into()
            )
        );
        assert_eq!(p.consecutive(), 0);
        assert!(matches!(
            p.failed(&limit(Some(60))),
            FailureAction::PauseFor { wait, .. } if wait == Duration::from_secs(60)
        ));
    }

    #[test]
    fn f3_a_retry_after_over_five_minutes_pauses_for_that_long() {
        let mut p = FailurePolicy::new(3, Duration::from_secs(1));
        let at_limit = ModelError::Retryable {
            usage: None,
            message: "429".into(),
            retry_after: Some(LONG_WAIT),
        };
        assert_eq!(p.failed(&at_limit), FailureAction::Retry(LONG_WAIT));
        let long = ModelError::Retryable {
            usage: None,
            message: "HTTP 429".into(),
            retry_after: Some(Duration::from_secs(100_000)),
        };
        assert_eq!(
            p.failed(&long),
            FailureAction::PauseFor {
                reason: "HTTP 429".into(),
                wait: Duration::from_secs(100_000)
            }
        );
        assert_eq!(p.consecutive(), 0, "a pause is not a strike");
    }

    #[test]
    fn f3_notices_say_how_the_pause_ends() {
        let at = UNIX_EPOCH + Duration::from_secs(1_764_592_496);
        assert_eq!(utc_time(at), "2025-12-01 12:34:56 UTC");
        assert_eq!(utc_time(UNIX_EPOCH), "1970-01-01 00:00:00 UTC");
        assert_eq!(
            utc_time(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29 00:00:00 UTC"
        );
        let reason = timed_pause_reason("HTTP 429", at);
        assert_eq!(
            reason,
            "HTTP 429 (the provider asked to wait until 2025-12-01 12:34:56 UTC)"
        );
        assert!(pause_notice(&reason, true).contains("It resumes by itself then"));
        assert!(pause_notice("HTTP 401", false).contains("run /advisor on to resume"));
        assert_eq!(
            dropped_notice(3, "HTTP 500", 1),
            "advisor: 3 consecutive model failures (HTTP 500); skipped 1 turn of review"
        );
    }

    #[test]
    fn g4_a_failed_call_s_usage_is_what_its_error_carries() {
        let usage = Usage {
            input: 10,
            estimated: true,
            ..Usage::default()
        };
        let err = ModelError::ContextOverflow {
            message: "too long".into(),
            usage: Some(usage),
        };
        assert_eq!(failed_call_usage(&err), Some(usage));
        let err = ModelError::Permanent {
            message: "401".into(),
        };
        assert_eq!(failed_call_usage(&err), None);
    }
}
