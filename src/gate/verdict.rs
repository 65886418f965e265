//! The gate's model call (GT3, GT4): the request — the project's rules, the recent
//! conversation, the proposed call, all redacted (X5) and bounded — and the strict reading
//! of the answer, one JSON object `{"decision", "risk", "reason"}`. A call that fails, takes
//! longer than `advisor.gateTimeoutMs` or answers anything else is a [`GateError`]; the
//! fail mode decides then (GT5).

use std::time::Duration;

use serde::Deserialize;

use crate::model::{AssistantPart, ChatMessage, ModelClient, ModelRequest, ThinkingLevel, Usage};
use crate::redact::Redactor;

use super::{GateDecision, GateRisk, RiskKind};

/// The gate's system text (`config/prompts/gate-system.md`).
const GATE_SYSTEM: &str = include_str!("../../config/prompts/gate-system.md");

/// The gate's question (`config/prompts/gate-question.md`).
const GATE_QUESTION: &str = include_str!("../../config/prompts/gate-question.md");

/// The output bound of the gate's answer: one small JSON object.
pub const GATE_MAX_TOKENS: u32 = 400;

/// The most characters of the answer that are read; a longer answer is malformed (GT9).
pub const MAX_ANSWER_CHARS: usize = 8 * 1024;

/// The most characters of a reason kept.
pub const MAX_REASON_CHARS: usize = 600;

/// The most characters of the proposed call's input shown to the model (head and tail).
pub const MAX_INPUT_CHARS: usize = 16 * 1024;

/// The most characters of the conversation shown (its newest part).
pub const MAX_CONVERSATION_CHARS: usize = 24 * 1024;

/// The transcript messages the gate is shown before a call: the newest ones (GT3). The
/// gate keeps no copy of its own; it renders these from the transcript the host shares.
pub const GATE_RECENT_MESSAGES: usize = 12;

/// The most characters of the project's rules shown (their first part).
pub const MAX_RULES_CHARS: usize = 16 * 1024;

/// Why there is no usable verdict (every case goes to the fail mode, GT5).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// The model call failed.
    #[error("the gate's model call failed: {0}")]
    Failed(String),
    /// No answer within `advisor.gateTimeoutMs`.
    #[error("the gate's model did not answer within {0} ms")]
    TimedOut(u128),
    /// The answer is not the JSON object asked for.
    #[error("the gate's answer is malformed: {0}")]
    Malformed(String),
    /// The session has no model to ask.
    #[error("the gate has no model")]
    NoModel,
}

/// The model's verdict, as it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateAnswer {
    /// Allow, deny or ask.
    pub decision: GateDecision,
    /// How risky.
    pub risk: GateRisk,
    /// Why (control characters removed, at most [`MAX_REASON_CHARS`]).
    pub reason: String,
}

/// One gate call: its answer or why there is none, and what it spent.
#[derive(Debug, Clone, PartialEq)]
pub struct GateRun {
    /// The verdict, or why there is none.
    pub outcome: Result<GateAnswer, GateError>,
    /// What the call spent (nothing known when it failed or timed out).
    pub usage: Usage,
}

/// What the gate is shown about one call, each part already rendered.
#[derive(Debug, Clone, Default)]
pub struct GatePrompt {
    /// The project's rules (WATCHDOG.md blocks, AGENTS.md and the like, P8).
    pub rules: String,
    /// The recent conversation, rendered.
    pub conversation: String,
    /// The tool's name.
    pub tool: String,
    /// The tool's input, as JSON text.
    pub input: String,
    /// The working directory.
    pub cwd: String,
    /// What the classifier found.
    pub risks: Vec<RiskKind>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswer {
    decision: String,
    risk: String,
    reason: String,
}

/// Reads the gate's answer strictly (GT4): the whole answer, trimmed (a ```json fence
/// around it is allowed), must be one JSON object with exactly `decision` (`allow`, `deny`,
/// `ask`), `risk` (`low`, `medium`, `high`) and a non-blank `reason`; anything else,
/// including an answer longer than [`MAX_ANSWER_CHARS`], is malformed.
pub fn parse_verdict(answer: &str) -> Result<GateAnswer, GateError> {
    if answer.len() > MAX_ANSWER_CHARS {
        return Err(GateError::Malformed(format!(
            "the answer is longer than {MAX_ANSWER_CHARS} bytes"
        )));
    }
    let mut text = answer.trim();
    if let Some(inner) = text.strip_prefix("```") {
        let inner = inner.strip_prefix("json").unwrap_or(inner);
        text = inner.strip_suffix("```").unwrap_or(inner).trim();
    }
    let raw: RawAnswer =
        serde_json::from_str(text).map_err(|e| GateError::Malformed(e.to_string()))?;
    let decision = match raw.decision.as_str() {
        "allow" => GateDecision::Allow,
        "deny" => GateDecision::Deny,
        "ask" => GateDecision::Ask,
        other => return Err(bad("decision", other)),
    };
    let risk = match raw.risk.as_str() {
        "low" => GateRisk::Low,
        "medium" => GateRisk::Medium,
        "high" => GateRisk::High,
        other => return Err(bad("risk", other)),
    };
    let reason = clean_reason(&raw.reason);
    if reason.is_empty() {
        return Err(GateError::Malformed("the reason is blank".into()));
    }
    Ok(GateAnswer {
        decision,
        risk,
        reason,
    })
}

fn bad(key: &str, value: &str) -> GateError {
    let shown: String = value.chars().take(40).collect();
    GateError::Malformed(format!("`{key}` is `{shown}`"))
}

/// `reason` on one line without control characters, at most [`MAX_REASON_CHARS`].
pub fn clean_reason(reason: &str) -> String {
    let line: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_REASON_CHARS)
        .collect();
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to its first and last parts when longer than `max` characters.
pub fn head_and_tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let half = max / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(count - half).collect();
    format!(
        "{head}\n[… {} characters left out …]\n{tail}",
        count - 2 * half
    )
}

/// `text`'s last `max` characters.
pub fn newest(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}

/// The advisor's own context as the gate is shown it (GT3): the updates it was sent, its
/// answers and tool calls, tool results shortened, as the compaction's summary input reads
/// them. The caller bounds the messages ([`MAX_CONVERSATION_CHARS`]) before copying them.
pub fn advisor_conversation(messages: &[ChatMessage]) -> String {
    crate::review::context::render_for_summary(messages)
}

/// The gate's request about `prompt`, every part redacted by `redactor` when there is one
/// (X5) and bounded.
pub fn gate_request(prompt: &GatePrompt, redactor: Option<&Redactor>) -> ModelRequest {
    let redact = |s: &str| match redactor {
        Some(r) => r.redact(s).into_owned(),
        None => s.to_string(),
    };
    let risks = if prompt.risks.is_empty() {
        "nothing in particular".to_string()
    } else {
        let words: Vec<&str> = prompt.risks.iter().map(|r| r.as_str()).collect();
        words.join(", ")
    };
    let rules = if prompt.rules.trim().is_empty() {
        "(none given)".to_string()
    } else {
        head_and_tail(&prompt.rules, MAX_RULES_CHARS)
    };
    let conversation = newest(&prompt.conversation, MAX_CONVERSATION_CHARS);
    let input = head_and_tail(&prompt.input, MAX_INPUT_CHARS);
    let tool: String = clean_reason(&prompt.tool).chars().take(80).collect();
    let text = crate::texts::fill_in_one_pass(
        GATE_QUESTION.trim_end(),
        &[
            ("rules", &redact(&rules)),
            ("conversation", &redact(&conversation)),
            ("cwd", &redact(&prompt.cwd)),
            ("tool", &tool),
            ("input", &redact(&input)),
            ("risks", &risks),
        ],
    );
    ModelRequest {
        system: GATE_SYSTEM.trim_end().into(),
        messages: vec![ChatMessage::User { text }],
        tools: Vec::new(),
        max_tokens: GATE_MAX_TOKENS,
        thinking: ThinkingLevel::Off,
        reminder: None,
    }
}

/// Asks `model` with `request`, giving up after `timeout` (GT4).
pub async fn ask_gate(
    model: &dyn ModelClient,
    request: ModelRequest,
    timeout: Duration,
) -> GateRun {
    match tokio::time::timeout(timeout, model.complete(request)).await {
        Err(_) => GateRun {
            outcome: Err(GateError::TimedOut(timeout.as_millis())),
            usage: Usage::default(),
        },
        Ok(Err(error)) => GateRun {
            usage: error.usage().cloned().unwrap_or_default(),
            outcome: Err(GateError::Failed(error.to_string())),
        },
        Ok(Ok(response)) => {
            let mut text = String::new();
            for part in &response.parts {
                if let AssistantPart::Text { text: t } = part {
                    if text.len() + t.len() > MAX_ANSWER_CHARS + 1 {
                        text.push_str(&t[..t.len().min(MAX_ANSWER_CHARS + 1)]);
                        break;
                    }
                    text.push_str(t);
                }
            }
            GateRun {
                outcome: parse_verdict(&text),
                usage: response.usage,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gt4_a_strict_answer_is_read() {
        let got = parse_verdict(
            r#"{"decision":"deny","risk":"high","reason":"Deletes the user's data."}"#,
        )
        .unwrap();
        assert_eq!(got.decision, GateDecision::Deny);
        assert_eq!(got.risk, GateRisk::High);
        assert_eq!(got.reason, "Deletes the user's data.");
        let fenced = "```json\n{\"decision\":\"allow\",\"risk\":\"low\",\"reason\":\"ok\"}\n```";
        assert_eq!(parse_verdict(fenced).unwrap().decision, GateDecision::Allow);
    }

    #[test]
    fn gt4_anything_but_the_strict_object_is_malformed() {
        for answer in [
            "",
            "allow",
            "Sure! {\"decision\":\"allow\",\"risk\":\"low\",\"reason\":\"x\"}",
            r#"{"decision":"Allow","risk":"low","reason":"x"}"#,
            r#"{"decision":"allow","risk":"none","reason":"x"}"#,
            r#"{"decision":"allow","risk":"low","reason":"  "}"#,
            r#"{"decision":"allow","risk":"low"}"#,
            r#"{"decision":"allow","risk":"low","reason":"x","override":true}"#,
            r#"{"decision":"allow","risk":"low","reason":"x"} {"decision":"deny"}"#,
            r#"[{"decision":"allow","risk":"low","reason":"x"}]"#,
        ] {
            assert!(
                matches!(parse_verdict(answer), Err(GateError::Malformed(_))),
                "{answer:?}"
            );
        }
        let flood = format!(
            "{{\"decision\":\"allow\",\"risk\":\"low\",\"reason\":\"{}\"}}",
            "a".repeat(MAX_ANSWER_CHARS)
        );
        assert!(matches!(
            parse_verdict(&flood),
            Err(GateError::Malformed(_))
        ));
    }

    #[test]
    fn gt4_the_reason_loses_control_characters_and_is_cut() {
        let answer = format!(
            "{{\"decision\":\"deny\",\"risk\":\"high\",\"reason\":\"a\\u001b[31mb\\nc{}\"}}",
            "x".repeat(2000)
        );
        let got = parse_verdict(&answer).unwrap();
        assert!(got.reason.starts_with("a [31mb c"), "{}", got.reason);
        assert!(got.reason.chars().count() <= MAX_REASON_CHARS);
    }

    #[test]
    fn gt3_the_request_is_redacted_bounded_and_names_the_call() {
        let redactor = Redactor::new().unwrap();
        let prompt = GatePrompt {
            rules: "Never touch migrations/.".into(),
            conversation: format!("{}user: clean the build", "old ".repeat(20_000)),
            tool: "bash".into(),
            input: format!(
                "{{\"command\":\"curl -H 'Authorization: Bearer ghp_{}' x {}\"}}",
                "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
                "y".repeat(40_000)
            ),
            cwd: "/work".into(),
            risks: vec![RiskKind::Network],
        };
        let request = gate_request(&prompt, Some(&redactor));
        let ChatMessage::User { text } = &request.messages[0] else {
            panic!("one user message");
        };
        assert!(text.contains("Never touch migrations/."));
        assert!(text.contains("user: clean the build"));
        assert!(text.contains("<call tool=\"bash\">"));
        assert!(text.contains("flagged it as: network"));
        assert!(
            !text.contains(&format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")),
            "X5"
        );
        assert!(text.len() < MAX_INPUT_CHARS + MAX_CONVERSATION_CHARS + 4_000);
        assert_eq!(request.max_tokens, GATE_MAX_TOKENS);
        assert!(request.tools.is_empty());
    }
}
