//! What an advisor's reviews spend beside tokens (SP5: its tool calls) and the notice for
//! an advisor that spends without ever advising (SP4). Plain code; the agent counts and
//! asks.

use serde::{Deserialize, Serialize};

use crate::model::Usage;

/// Reviews an advisor must have finished without one `advise` call before it is told (SP4).
pub const SILENT_REVIEWS: u64 = 50;

/// Input tokens (cached or not) those reviews must have spent beyond (SP4).
pub const SILENT_INPUT_TOKENS: u64 = 100_000;

/// The tool calls of reviews (SP5): `advise` apart from the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallCounts {
    /// Calls of tools other than `advise`, run or refused.
    pub tool_calls: u64,
    /// `advise` calls.
    pub advise_calls: u64,
}

impl ToolCallCounts {
    /// Counts one call of the tool `name`.
    pub fn count(&mut self, name: &str) {
        if name == crate::tools::advise::NAME {
            self.advise_calls += 1;
        } else {
            self.tool_calls += 1;
        }
    }

    /// Adds `other` to these.
    pub fn add(&mut self, other: &ToolCallCounts) {
        self.tool_calls += other.tool_calls;
        self.advise_calls += other.advise_calls;
    }
}

/// The figures an SP4 notice names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SilentAdvisor {
    /// The model the reviews ran on.
    pub model: String,
    /// Reviews finished since the count began.
    pub reviews: u64,
    /// Their input tokens, cached or not.
    pub input_tokens: u64,
}

/// Watches one advisor's finished reviews for SP4: 50 reviews without one `advise` call
/// while spending more than 100k input tokens is told once; a model change starts the
/// count afresh and may tell again.
#[derive(Debug, Clone, Default)]
pub struct SilenceWatch {
    model: String,
    reviews: u64,
    advised: bool,
    input_tokens: u64,
    told: bool,
}

impl SilenceWatch {
    /// Takes in one finished review on `model` that spent `usage` and made `calls`; answers
    /// the figures to tell the user about when this review makes the advisor a silent one
    /// for the first time since the count began.
    pub fn review_finished(
        &mut self,
        model: &str,
        usage: &Usage,
        calls: &ToolCallCounts,
    ) -> Option<SilentAdvisor> {
        if self.model != model {
            // SP4: a model change resets the count and the once-only flag.
            *self = Self {
                model: model.to_string(),
                ..Self::default()
            };
        }
        self.reviews += 1;
        self.advised |= calls.advise_calls > 0;
        self.input_tokens += usage.prompt_tokens();
        let silent = !self.advised
            && self.reviews >= SILENT_REVIEWS
            && self.input_tokens > SILENT_INPUT_TOKENS;
        if !silent || self.told {
            return None;
        }
        self.told = true;
        Some(SilentAdvisor {
            model: self.model.clone(),
            reviews: self.reviews,
            input_tokens: self.input_tokens,
        })
    }
}

impl SilentAdvisor {
    /// The notice telling the user (SP4); the supervisor names the advisor.
    pub fn notice(&self) -> String {
        crate::texts::notice(
            "silentAdvisor",
            &[
                ("reviews", &self.reviews.to_string()),
                ("model", &self.model),
                ("tokens", &self.input_tokens.to_string()),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cache_read: u64) -> Usage {
        Usage {
            input,
            cache_read,
            ..Usage::default()
        }
    }

    const SILENT: ToolCallCounts = ToolCallCounts {
        tool_calls: 3,
        advise_calls: 0,
    };

    #[test]
    fn sp4_fifty_silent_reviews_over_100k_input_are_told_once() {
        let mut watch = SilenceWatch::default();
        for _ in 0..49 {
            assert_eq!(
                watch.review_finished("p/m", &usage(1000, 2000), &SILENT),
                None
            );
        }
        let told = watch.review_finished("p/m", &usage(1000, 2000), &SILENT);
        assert_eq!(
            told,
            Some(SilentAdvisor {
                model: "p/m".into(),
                reviews: 50,
                input_tokens: 150_000,
            })
        );
        for _ in 0..60 {
            assert_eq!(
                watch.review_finished("p/m", &usage(1000, 2000), &SILENT),
                None
            );
        }
    }

    #[test]
    fn sp4_one_advise_call_or_little_input_is_never_told() {
        let mut advised = SilenceWatch::default();
        let one = ToolCallCounts {
            tool_calls: 0,
            advise_calls: 1,
        };
        advised.review_finished("p/m", &usage(10_000, 0), &one);
        for _ in 0..100 {
            assert_eq!(
                advised.review_finished("p/m", &usage(10_000, 0), &SILENT),
                None
            );
        }
        let mut cheap = SilenceWatch::default();
        for _ in 0..100 {
            // 100 × 1000 = exactly 100k: not more than 100k.
            assert_eq!(cheap.review_finished("p/m", &usage(1000, 0), &SILENT), None);
        }
    }

    #[test]
    fn sp4_a_model_change_starts_the_count_again_and_may_tell_again() {
        let mut watch = SilenceWatch::default();
        let mut told = 0;
        for _ in 0..50 {
            told += usize::from(
                watch
                    .review_finished("p/a", &usage(5000, 0), &SILENT)
                    .is_some(),
            );
        }
        assert_eq!(told, 1);
        for i in 0..50 {
            let figures = watch.review_finished("p/b", &usage(5000, 0), &SILENT);
            assert_eq!(figures.is_some(), i == 49, "review {i} on the new model");
            if let Some(figures) = figures {
                assert_eq!(figures.model, "p/b");
                assert_eq!(figures.reviews, 50);
            }
        }
    }

    #[test]
    fn sp5_advise_is_counted_apart_from_the_other_tools() {
        let mut counts = ToolCallCounts::default();
        for name in ["read", "advise", "search", "find", "advise"] {
            counts.count(name);
        }
        assert_eq!(
            counts,
            ToolCallCounts {
                tool_calls: 3,
                advise_calls: 2
            }
        );
    }
}
