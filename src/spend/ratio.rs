//! Spend in status (SP5): what each advisor and all of them spent, what the primary spent as
//! its session's assistant messages record it, and the ratio of the two. Plain code; the
//! supervisor keeps a [`PrimaryTally`] and fills the status's `SessionSpend` with these.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ToolCallCounts;
use crate::domain::transcript::TranscriptMessage;
use crate::model::Usage;
use crate::texts::{fill, STATUS};

/// What one advisor, or the session's advisors together, spent (SP5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdvisorSpend {
    /// Model calls (requests), reviews, asks and summaries alike.
    pub requests: u64,
    /// Reviews finished.
    pub reviews: u64,
    /// Input tokens not read from the cache (cache writes included).
    pub input_uncached: u64,
    /// Input tokens read from the cache.
    pub input_cached: u64,
    /// Output tokens.
    pub output: u64,
    /// The cost in dollars; `None` when the model's calls were not priced (no catalog
    /// prices, no cost reported).
    pub cost: Option<f64>,
    /// Calls of tools other than `advise`.
    pub tool_calls: u64,
    /// `advise` calls.
    pub advise_calls: u64,
    /// Tool calls (`advise` included) per finished review; `None` before the first.
    pub tool_calls_per_review: Option<f64>,
    /// This spend divided by the primary's; `None` when it is unknown (the session's
    /// messages carry no usage), never 0 for want of figures.
    pub ratio: Option<SpendRatio>,
    /// Its spend ceiling and what it did (SP6); `None` without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<CeilingStatus>,
}

impl AdvisorSpend {
    /// The spend of `requests` model calls and `reviews` reviews that used `usage` and
    /// made `calls`, with no ratio yet.
    pub fn from_parts(requests: u64, reviews: u64, usage: &Usage, calls: &ToolCallCounts) -> Self {
        let all_calls = calls.tool_calls + calls.advise_calls;
        Self {
            requests,
            reviews,
            input_uncached: usage.input + usage.cache_write,
            input_cached: usage.cache_read,
            output: usage.output,
            cost: (usage.cost > 0.0).then_some(usage.cost),
            tool_calls: calls.tool_calls,
            advise_calls: calls.advise_calls,
            tool_calls_per_review: (reviews > 0).then(|| all_calls as f64 / reviews as f64),
            ratio: None,
            ceiling: None,
        }
    }

    /// All input tokens, cached or not.
    pub fn input_total(&self) -> u64 {
        self.input_uncached.saturating_add(self.input_cached)
    }

    /// With the ratio to `primary` filled in (SP5): by cost when both sides are priced,
    /// else by input tokens; unknown when the primary has no figures.
    pub fn against(mut self, primary: Option<&PrimarySpend>) -> Self {
        self.ratio = primary.and_then(|p| SpendRatio::between(&self, p));
        self
    }
}

/// What the primary spent, from the usage its session's assistant messages carry (SP5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrimarySpend {
    /// Assistant messages that carried usage.
    pub messages: u64,
    /// Input tokens not read from the cache (cache writes included).
    pub input_uncached: u64,
    /// Input tokens read from the cache.
    pub input_cached: u64,
    /// Output tokens.
    pub output: u64,
    /// The cost in dollars; `None` when no message was priced.
    pub cost: Option<f64>,
}

impl PrimarySpend {
    /// All input tokens, cached or not.
    pub fn input_total(&self) -> u64 {
        self.input_uncached.saturating_add(self.input_cached)
    }

    /// Adds another session's figures (the eval's total over its runs).
    pub fn add(&mut self, other: &PrimarySpend) {
        self.messages += other.messages;
        self.input_uncached += other.input_uncached;
        self.input_cached += other.input_cached;
        self.output += other.output;
        self.cost = match (self.cost, other.cost) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

/// What a spend ratio divides (SP5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RatioBasis {
    /// Dollars: both sides were priced.
    Cost,
    /// Input tokens, cached or not: one side has no prices.
    InputTokens,
}

/// Advisor ÷ primary (SP5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendRatio {
    /// What is divided.
    pub basis: RatioBasis,
    /// The quotient.
    pub value: f64,
}

impl SpendRatio {
    /// `advisor ÷ primary`: by cost when both are priced, else by input tokens; `None`
    /// when the primary has spent nothing to divide by.
    pub fn between(advisor: &AdvisorSpend, primary: &PrimarySpend) -> Option<Self> {
        if let (Some(mine), Some(theirs)) = (advisor.cost, primary.cost) {
            if theirs > 0.0 {
                return Some(Self {
                    basis: RatioBasis::Cost,
                    value: mine / theirs,
                });
            }
        }
        let theirs = primary.input_total();
        (theirs > 0).then(|| Self {
            basis: RatioBasis::InputTokens,
            value: advisor.input_total() as f64 / theirs as f64,
        })
    }
}

/// Where an advisor stands against its ceiling (SP6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CeilingState {
    /// Under it, or not yet judged.
    #[default]
    Under,
    /// It ran past the ceiling: it reviews only at the end of a run for the rest of the
    /// session.
    AgentEnd,
    /// It ran past twice the ceiling and was paused until `/advisor on`.
    Paused,
}

/// The ceiling part of an advisor's spend in status (SP6).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CeilingStatus {
    /// The ceiling in effect: advisor ÷ primary.
    pub max_spend_ratio: f64,
    /// What it did to the advisor.
    pub state: CeilingState,
}

/// Adds up the primary's usage as the transcript grows (SP5): at each turn end the
/// assistant messages past the last one counted. A rewrite (compaction, branch change)
/// keeps what was counted; after it, a message with a timestamp counts only when it is
/// newer than every one counted before (the messages a compaction keeps are not counted
/// twice), and one without a timestamp counts only once it is past the transcript's
/// length at the first turn end after the rewrite.
#[derive(Debug, Clone, Default)]
pub struct PrimaryTally {
    spend: PrimarySpend,
    priced: bool,
    /// Messages already looked at.
    seen: usize,
    /// The newest timestamp counted.
    newest: Option<u64>,
    /// A rewrite happened since the last turn end.
    rewritten: bool,
    /// Implausible usage fields ignored so far (SP5).
    ignored: u64,
    /// Whether the ignored fields were already told (once per session).
    told: bool,
}

impl PrimaryTally {
    /// Looks at the messages of a turn end's transcript.
    pub fn observe(&mut self, messages: &[Arc<TranscriptMessage>]) {
        let after_rewrite = std::mem::take(&mut self.rewritten) || messages.len() < self.seen;
        let start = if after_rewrite { 0 } else { self.seen };
        for message in messages.iter().skip(start) {
            let TranscriptMessage::Assistant(assistant) = &**message else {
                continue;
            };
            let Some(usage) = &assistant.usage else {
                continue;
            };
            match assistant.timestamp {
                Some(at) if self.newest.is_some_and(|newest| at <= newest) => continue,
                Some(at) => self.newest = Some(at),
                // Kept across the rewrite, or new: without a timestamp nothing tells.
                None if after_rewrite => continue,
                None => {}
            }
            self.ignored += u64::from(usage.ignored);
            let s = &mut self.spend;
            s.messages += 1;
            s.input_uncached = s
                .input_uncached
                .saturating_add(usage.input + usage.cache_write);
            s.input_cached = s.input_cached.saturating_add(usage.cache_read);
            s.output = s.output.saturating_add(usage.output);
            if let Some(cost) = usage.cost {
                s.cost = Some(s.cost.unwrap_or(0.0) + cost);
                self.priced = true;
            }
        }
        self.seen = messages.len();
    }

    /// The transcript was rewritten (R1): what was counted stays.
    pub fn rewritten(&mut self) {
        self.rewritten = true;
    }

    /// How many implausible usage fields were ignored, the first time there are any (SP5:
    /// told once per session); `None` after that, or while there are none.
    pub fn take_ignored(&mut self) -> Option<u64> {
        if self.told || self.ignored == 0 {
            return None;
        }
        self.told = true;
        Some(self.ignored)
    }

    /// The figures; `None` while no message carried usage.
    pub fn spend(&self) -> Option<PrimarySpend> {
        (self.spend.messages > 0).then_some(self.spend)
    }
}

/// A spend ratio with two decimals and its basis, or `unknown` (SP5: never 0 for want of
/// figures).
pub(crate) fn ratio_text(ratio: Option<&SpendRatio>) -> String {
    match ratio {
        Some(r) => {
            let key = match r.basis {
                RatioBasis::Cost => "ratioCost",
                RatioBasis::InputTokens => "ratioTokens",
            };
            fill(STATUS.get(key), &[("value", &format!("{:.2}", r.value))])
        }
        None => STATUS.get("ratioUnknown").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::transcript::{AssistantMessage, MessageUsage};
    use crate::review::AgentStatus;

    fn assistant(input: u64, cost: Option<f64>, at: Option<u64>) -> Arc<TranscriptMessage> {
        let mut message = AssistantMessage::new(Vec::new(), Some("stop".into()));
        message.usage = Some(MessageUsage {
            input,
            output: 10,
            cache_read: 100,
            cache_write: 0,
            cost,
            ignored: 0,
        });
        message.timestamp = at;
        Arc::new(TranscriptMessage::Assistant(message))
    }

    fn user() -> Arc<TranscriptMessage> {
        Arc::new(TranscriptMessage::user("go"))
    }

    #[test]
    fn sp5_primary_usage_of_a_real_pi_session_adds_up() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/pi-sessions/before-compaction.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let messages: Vec<Arc<TranscriptMessage>> = text
            .lines()
            .filter_map(|line| {
                let entry: serde_json::Value = serde_json::from_str(line).ok()?;
                (entry["type"] == "message")
                    .then(|| Arc::new(serde_json::from_value(entry["message"].clone()).unwrap()))
            })
            .collect();
        let mut tally = PrimaryTally::default();
        tally.observe(&messages[..10]);
        tally.observe(&messages);
        let spend = tally.spend().unwrap();
        // Summed independently from the file: 484 assistant messages with usage.
        assert_eq!(spend.messages, 484);
        assert_eq!(spend.input_uncached, 3_689 + 1_685_320);
        assert_eq!(spend.input_cached, 54_693_675);
        assert_eq!(spend.output, 187_895);
        let cost = spend.cost.unwrap();
        assert!((cost - 42.5959075).abs() < 1e-6, "{cost}");
    }

    #[test]
    fn sp5_the_session_reader_keeps_the_usage_of_a_real_pi_session() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pi-sessions/before-compaction.jsonl");
        let branch = crate::session::read_session(&path).unwrap();
        let with_usage = branch
            .messages()
            .filter(|m| matches!(m, TranscriptMessage::Assistant(a) if a.usage.is_some() && a.timestamp.is_some()))
            .count();
        assert!(with_usage > 0, "the lean reader drops no usage");
        let first = branch
            .messages()
            .find_map(|m| match m {
                TranscriptMessage::Assistant(a) => a.usage,
                _ => None,
            })
            .unwrap();
        assert_eq!((first.input, first.output), (2775, 141));
        assert!((first.cost.unwrap() - 0.0174).abs() < 1e-9);
    }

    #[test]
    fn sp5_a_compaction_does_not_count_kept_messages_twice() {
        let mut tally = PrimaryTally::default();
        let (a, b) = (
            assistant(1000, Some(0.5), Some(1)),
            assistant(2000, Some(1.0), Some(2)),
        );
        tally.observe(&[user(), a, user(), b.clone()]);
        assert_eq!(tally.spend().unwrap().messages, 2);
        tally.rewritten();
        // The compacted transcript keeps b and adds c.
        let c = assistant(500, Some(0.25), Some(3));
        tally.observe(&[user(), b, c]);
        let spend = tally.spend().unwrap();
        assert_eq!(spend.messages, 3);
        assert_eq!(spend.input_uncached, 3500);
        assert_eq!(spend.cost, Some(1.75));
    }

    #[test]
    fn sp5_implausible_usage_fields_are_ignored_one_by_one_and_told_once() {
        let message = |usage: serde_json::Value, at: u64| {
            let message: AssistantMessage = serde_json::from_value(
                serde_json::json!({"content": [], "usage": usage, "timestamp": at}),
            )
            .unwrap();
            Arc::new(TranscriptMessage::Assistant(message))
        };
        let mut tally = PrimaryTally::default();
        tally.observe(&[
            message(
                serde_json::json!({"input": 300_000, "output": 10,
                    "cacheRead": 18446744073709551615_u64, "cacheWrite": 1_000_000_001_u64}),
                1,
            ),
            // Every field junk: the message still names its usage, and counts nothing.
            message(
                serde_json::json!({"input": -5, "output": 1.5, "cacheRead": "7",
                    "cacheWrite": 1e308, "cost": 1e308}),
                2,
            ),
            // One bad field leaves the others.
            message(
                serde_json::json!({"input": "x", "output": 20, "cacheRead": 1_000}),
                3,
            ),
        ]);
        let spend = tally.spend().expect("the session carries usage");
        assert_eq!(
            (spend.input_uncached, spend.input_cached, spend.output),
            (300_000, 1_000, 30)
        );
        assert_eq!(spend.cost, None);
        assert_eq!(tally.take_ignored(), Some(8), "2 + 5 + 1 fields, told once");
        tally.observe(&[message(serde_json::json!({"input": -1}), 4)]);
        assert_eq!(tally.take_ignored(), None, "once per session");
        assert_eq!(tally.spend().unwrap().input_total(), 301_000);
    }

    #[test]
    fn sp5_messages_without_usage_leave_the_primary_and_the_ratio_unknown() {
        let mut tally = PrimaryTally::default();
        tally.observe(&[
            user(),
            Arc::new(TranscriptMessage::test_assistant("ok", false, Some("stop"))),
        ]);
        assert_eq!(tally.spend(), None);
        let agent = AgentStatus {
            lifetime: Usage {
                input: 5000,
                cost: 0.1,
                ..Usage::default()
            },
            model_calls: 3,
            reviews: 2,
            ..AgentStatus::default()
        };
        let spend = agent.spend().against(tally.spend().as_ref());
        assert_eq!(spend.ratio, None, "unknown, never 0");
    }

    #[test]
    fn sp5_the_ratio_is_by_cost_when_both_are_priced_else_by_input_tokens() {
        let agent = AgentStatus {
            lifetime: Usage {
                input: 3000,
                cache_read: 1000,
                output: 50,
                cost: 0.5,
                ..Usage::default()
            },
            model_calls: 4,
            reviews: 2,
            tool_calls: crate::spend::ToolCallCounts {
                tool_calls: 5,
                advise_calls: 1,
            },
            ..AgentStatus::default()
        };
        let advisor = agent.spend();
        assert_eq!(advisor.tool_calls_per_review, Some(3.0));
        let priced = PrimarySpend {
            messages: 1,
            input_uncached: 10_000,
            input_cached: 30_000,
            output: 100,
            cost: Some(2.0),
        };
        let ratio = advisor.clone().against(Some(&priced)).ratio.unwrap();
        assert_eq!((ratio.basis, ratio.value), (RatioBasis::Cost, 0.25));
        let unpriced = PrimarySpend {
            cost: None,
            ..priced
        };
        let ratio = advisor.clone().against(Some(&unpriced)).ratio.unwrap();
        assert_eq!((ratio.basis, ratio.value), (RatioBasis::InputTokens, 0.1));
        let free = AgentStatus {
            lifetime: Usage {
                cost: 0.0,
                ..agent.lifetime
            },
            ..agent
        };
        let advisor = free.spend();
        assert_eq!(advisor.cost, None, "no prices: the cost is unknown");
        let ratio = advisor.against(Some(&priced)).ratio.unwrap();
        assert_eq!(ratio.basis, RatioBasis::InputTokens);
    }
}
