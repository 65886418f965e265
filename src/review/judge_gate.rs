//! The optional triage gate (SP9): before a work-in-progress update is reviewed, a cheap
//! judge model answers four yes/no questions about it with probabilities; when none reaches
//! `advisor.judgeThreshold` the update is held for the next review instead. Plain code: the
//! request, the reading of the answer, the decision and the counters; the supervisor asks
//! the judge and carries the decision out. A judge that fails, answers nonsense or takes
//! longer than [`JUDGE_TIMEOUT`] never holds an update back.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{AssistantPart, ChatMessage, ModelClient, ModelRequest, ThinkingLevel, Usage};

/// How long the judge may take before the update is reviewed anyway (SP9).
pub const JUDGE_TIMEOUT: Duration = Duration::from_secs(10);

/// The most characters of an update the judge is shown: the newest part is kept.
pub const MAX_JUDGE_UPDATE_CHARS: usize = 32_000;

/// The output bound of the judge's answer: one small JSON object.
pub const JUDGE_MAX_TOKENS: u32 = 256;

/// The most characters of the judge's answer that are read.
const MAX_ANSWER_CHARS: usize = 4_096;

/// The judge's system text (`config/prompts/judge-gate-system.md`).
const JUDGE_SYSTEM: &str = include_str!("../../config/prompts/judge-gate-system.md");

/// The judge's question (`config/prompts/judge-gate-question.md`), with `{update}`.
const JUDGE_QUESTION: &str = include_str!("../../config/prompts/judge-gate-question.md");

/// The four questions, as the keys of the judge's JSON answer.
pub const QUESTIONS: [&str; 4] = ["destructive", "guessing", "looping", "hidingFailure"];

/// Why the judge's answer does not count (every case reviews the update now).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JudgeError {
    /// The model call failed.
    #[error("the judge's call failed: {0}")]
    Failed(String),
    /// No answer within [`JUDGE_TIMEOUT`].
    #[error("the judge did not answer within {} s", JUDGE_TIMEOUT.as_secs())]
    TimedOut,
    /// The answer is not the JSON object asked for.
    #[error("the judge's answer is malformed: {0}")]
    Malformed(String),
}

/// The judge's probabilities, one per question, each from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JudgeVerdict {
    /// One per [`QUESTIONS`] entry, in that order.
    pub probabilities: [f64; 4],
}

impl JudgeVerdict {
    /// The largest probability.
    pub fn highest(&self) -> f64 {
        self.probabilities.iter().copied().fold(0.0, f64::max)
    }
}

/// Reads the judge's answer: the JSON object in it (a code fence or words around it are
/// skipped), with a number from 0 to 1 under each of [`QUESTIONS`]; anything else is
/// malformed.
pub fn parse_verdict(answer: &str) -> Result<JudgeVerdict, JudgeError> {
    let answer: String = answer.chars().take(MAX_ANSWER_CHARS).collect();
    let (Some(open), Some(close)) = (answer.find('{'), answer.rfind('}')) else {
        return Err(JudgeError::Malformed("no JSON object".into()));
    };
    if close < open {
        return Err(JudgeError::Malformed("no JSON object".into()));
    }
    let object: Value = serde_json::from_str(&answer[open..=close])
        .map_err(|e| JudgeError::Malformed(e.to_string()))?;
    let mut probabilities = [0.0; 4];
    for (slot, key) in probabilities.iter_mut().zip(QUESTIONS) {
        *slot = object
            .get(key)
            .and_then(Value::as_f64)
            .filter(|p| (0.0..=1.0).contains(p))
            .ok_or_else(|| JudgeError::Malformed(format!("`{key}` is not a number from 0 to 1")))?;
    }
    Ok(JudgeVerdict { probabilities })
}

/// What the gate decided for one update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateDecision {
    /// Review it now.
    ReviewNow,
    /// Hold it for the next review.
    Hold,
}

/// The decision for a judge's outcome under `threshold` (SP9): any probability at or above
/// it, or no usable answer at all, reviews the update now.
pub fn decide(outcome: &Result<JudgeVerdict, JudgeError>, threshold: f64) -> GateDecision {
    match outcome {
        Ok(verdict) if verdict.highest() < threshold => GateDecision::Hold,
        _ => GateDecision::ReviewNow,
    }
}

/// The judge's request about `update` (the rendered update the review would send); a long
/// update is cut to its last [`MAX_JUDGE_UPDATE_CHARS`] characters.
pub fn judge_request(update: &str) -> ModelRequest {
    let skip = update
        .chars()
        .count()
        .saturating_sub(MAX_JUDGE_UPDATE_CHARS);
    let shown: String = update.chars().skip(skip).collect();
    let text = crate::texts::fill_in_one_pass(JUDGE_QUESTION.trim_end(), &[("update", &shown)]);
    ModelRequest {
        system: JUDGE_SYSTEM.trim_end().into(),
        messages: vec![ChatMessage::User { text }],
        tools: Vec::new(),
        max_tokens: JUDGE_MAX_TOKENS,
        thinking: ThinkingLevel::Off,
        reminder: None,
    }
}

/// One run of the judge: its outcome and what it spent.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeRun {
    /// Its verdict, or why there is none.
    pub outcome: Result<JudgeVerdict, JudgeError>,
    /// What its call spent (nothing known when it failed or timed out).
    pub usage: Usage,
}

/// Asks `judge` about `update`, giving up after [`JUDGE_TIMEOUT`].
pub async fn ask_judge(judge: &dyn ModelClient, update: &str) -> JudgeRun {
    let call = judge.complete(judge_request(update));
    match tokio::time::timeout(JUDGE_TIMEOUT, call).await {
        Err(_) => JudgeRun {
            outcome: Err(JudgeError::TimedOut),
            usage: Usage::default(),
        },
        Ok(Err(error)) => JudgeRun {
            outcome: Err(JudgeError::Failed(error.to_string())),
            usage: Usage::default(),
        },
        Ok(Ok(response)) => {
            let text: String = response
                .parts
                .iter()
                .filter_map(|p| match p {
                    AssistantPart::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            JudgeRun {
                outcome: parse_verdict(&text),
                usage: response.usage,
            }
        }
    }
}

/// The gate's counters (SP9), the judge's spend apart from the advisors'.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GateCounts {
    /// Updates the judge let wait for the next review.
    pub gate_held: u64,
    /// Updates reviewed at once: a probability at or above the threshold, or no usable
    /// answer.
    pub gate_passed: u64,
    /// Calls of the judge.
    pub judge_requests: u64,
    /// Calls that failed, timed out or answered nonsense (each reviewed at once).
    pub judge_failures: u64,
    /// The judge's input tokens (cached or not).
    pub judge_input_tokens: u64,
    /// The judge's output tokens.
    pub judge_output_tokens: u64,
    /// The judge's cost in dollars; `None` when unpriced.
    pub judge_cost: Option<f64>,
}

impl GateCounts {
    /// Counts one run of the judge and its decision.
    pub fn record(&mut self, run: &JudgeRun, decision: GateDecision) {
        self.judge_requests += 1;
        self.judge_failures += u64::from(run.outcome.is_err());
        match decision {
            GateDecision::Hold => self.gate_held += 1,
            GateDecision::ReviewNow => self.gate_passed += 1,
        }
        self.judge_input_tokens += run.usage.prompt_tokens();
        self.judge_output_tokens += run.usage.output;
        if run.usage.cost > 0.0 {
            self.judge_cost = Some(self.judge_cost.unwrap_or(0.0) + run.usage.cost);
        }
    }

    /// Adds another session's counters (the eval's total over its runs).
    pub fn add(&mut self, other: &GateCounts) {
        self.gate_held += other.gate_held;
        self.gate_passed += other.gate_passed;
        self.judge_requests += other.judge_requests;
        self.judge_failures += other.judge_failures;
        self.judge_input_tokens += other.judge_input_tokens;
        self.judge_output_tokens += other.judge_output_tokens;
        self.judge_cost = match (self.judge_cost, other.judge_cost) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sp9_the_judge_s_json_is_read_with_a_fence_or_words_around_it() {
        let verdict = parse_verdict(
            "Here you go:\n```json\n{\"destructive\": 0.05, \"guessing\": 0.3, \"looping\": 0, \
             \"hidingFailure\": 1}\n```",
        )
        .unwrap();
        assert_eq!(verdict.probabilities, [0.05, 0.3, 0.0, 1.0]);
        assert_eq!(verdict.highest(), 1.0);
    }

    #[test]
    fn sp9_nonsense_a_missing_key_or_a_probability_out_of_range_is_malformed() {
        for bad in [
            "yes",
            "",
            "} {",
            "{\"destructive\": 0.1}",
            "{\"destructive\": 0.1, \"guessing\": 0.1, \"looping\": 0.1, \"hidingFailure\": 1.5}",
            "{\"destructive\": \"low\", \"guessing\": 0, \"looping\": 0, \"hidingFailure\": 0}",
            "{\"destructive\": -0.1, \"guessing\": 0, \"looping\": 0, \"hidingFailure\": 0}",
            "{not json}",
        ] {
            assert!(
                matches!(parse_verdict(bad), Err(JudgeError::Malformed(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn sp9_any_probability_at_the_threshold_reviews_now_all_below_hold_no_answer_reviews_now() {
        let verdict = |p: [f64; 4]| Ok(JudgeVerdict { probabilities: p });
        assert_eq!(
            decide(&verdict([0.1, 0.19, 0.0, 0.05]), 0.2),
            GateDecision::Hold
        );
        assert_eq!(
            decide(&verdict([0.0, 0.0, 0.2, 0.0]), 0.2),
            GateDecision::ReviewNow
        );
        assert_eq!(
            decide(&verdict([0.0, 0.0, 0.0, 0.9]), 0.2),
            GateDecision::ReviewNow
        );
        for failed in [
            JudgeError::TimedOut,
            JudgeError::Failed("500".into()),
            JudgeError::Malformed("x".into()),
        ] {
            assert_eq!(decide(&Err(failed), 0.2), GateDecision::ReviewNow);
        }
        // Threshold 0: every answer reviews now.
        assert_eq!(decide(&verdict([0.0; 4]), 0.0), GateDecision::ReviewNow);
    }

    #[test]
    fn sp9_the_request_carries_the_update_and_the_four_questions_and_is_bounded() {
        let request = judge_request("ran `rm -rf build/`");
        let ChatMessage::User { text } = &request.messages[0] else {
            unreachable!()
        };
        assert!(
            text.contains("<update>\nran `rm -rf build/`\n</update>"),
            "{text}"
        );
        for key in QUESTIONS {
            assert!(text.contains(&format!("- {key}:")), "{key}");
        }
        assert!(request.tools.is_empty() && !request.system.is_empty());
        let long = format!("{}END", "x".repeat(100_000));
        let ChatMessage::User { text } = &judge_request(&long).messages[0] else {
            unreachable!()
        };
        assert!(text.len() < MAX_JUDGE_UPDATE_CHARS + 2_000 && text.contains("xEND"));
    }

    #[test]
    fn sp9_the_counters_keep_the_judge_s_tokens_apart() {
        let mut counts = GateCounts::default();
        let held = JudgeRun {
            outcome: Ok(JudgeVerdict {
                probabilities: [0.0; 4],
            }),
            usage: Usage {
                input: 300,
                cache_read: 100,
                output: 20,
                cost: 0.001,
                ..Usage::default()
            },
        };
        counts.record(&held, GateDecision::Hold);
        let failed = JudgeRun {
            outcome: Err(JudgeError::TimedOut),
            usage: Usage::default(),
        };
        counts.record(&failed, GateDecision::ReviewNow);
        assert_eq!(
            counts,
            GateCounts {
                gate_held: 1,
                gate_passed: 1,
                judge_requests: 2,
                judge_failures: 1,
                judge_input_tokens: 400,
                judge_output_tokens: 20,
                judge_cost: Some(0.001),
            }
        );
    }
}
