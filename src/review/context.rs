//! The advisor's context and its maintenance (G5): the estimate, the threshold, where a
//! compaction cuts, the summary call's input and the message a summary becomes.

use serde::{Deserialize, Serialize};

use super::rereads::ReadLedger;
use super::texts::{fill, REMINDER, SUMMARY_HEADING, SUMMARY_INTRO};
use crate::model::{AssistantPart, ChatMessage, Usage};

/// The advisor's own conversation: append-only between maintenance events (M5), with the
/// usage needed for the context estimate (G5).
#[derive(Debug, Default, Clone)]
pub struct AdvisorContext {
    /// The messages, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Prompt tokens the last response reported (input + cache read + cache write).
    last_prompt_tokens: u64,
    /// Number of messages that last report covered.
    covered: usize,
    /// The date and working directory reminder of this context (P8), fixed when its first
    /// request is built so the cached prefix stays the same; a fresh context gets a new one.
    reminder: Option<String>,
    /// The read/search/find calls whose results this context holds (SP2).
    pub rereads: ReadLedger,
}

impl AdvisorContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a response's usage: the context up to `covered` messages is now measured.
    pub fn record_usage(&mut self, usage: &Usage, covered: usize) {
        self.last_prompt_tokens = usage.prompt_tokens();
        self.covered = covered.min(self.messages.len());
    }

    /// G5's estimate of the context with `incoming` appended: the last reported prompt
    /// plus characters / 4 of everything after it.
    pub fn estimate_with(&self, incoming: &str) -> u64 {
        let after: usize = self.messages[self.covered.min(self.messages.len())..]
            .iter()
            .map(ChatMessage::char_len)
            .sum();
        self.last_prompt_tokens + ((after + incoming.len()) / 4) as u64
    }

    /// The reminder of the next request (P8): today's date and the working directory
    /// `cwd`, sent as a text part of its own before the first user message's text
    /// ([`crate::model::ModelRequest::reminder`]); `None` while the context has no user
    /// message. It is never stored in the context, so the system prompt and the messages
    /// stay byte-stable (M5), and it is made once per context, so a new day does not
    /// rewrite the cached prefix.
    pub fn request_reminder(&mut self, today: &str, cwd: &str) -> Option<String> {
        if !self
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::User { .. }))
        {
            return None;
        }
        let reminder = self
            .reminder
            .get_or_insert_with(|| fill(REMINDER, &[("date", today), ("cwd", cwd)]));
        Some(reminder.clone())
    }

    /// Clears the history (re-prime, reset).
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Replaces the messages before `cut` by `summary` (G5 compaction): the context becomes
    /// the summary followed by the kept messages. Nothing of the new context has been
    /// measured by a provider yet, so the estimate restarts from `overhead_tokens` (the
    /// system prompt and tool schemas) plus characters / 4 of every message.
    pub fn compact(&mut self, cut: usize, summary: ChatMessage, overhead_tokens: u64) {
        let cut = cut.min(self.messages.len());
        let kept = self.messages.split_off(cut);
        self.messages.clear();
        self.messages.push(summary);
        self.messages.extend(kept);
        self.last_prompt_tokens = overhead_tokens;
        self.covered = 0;
        self.reminder = None;
        // SP2: a compacted context is a new one; nothing earlier is pointed at.
        self.rereads.clear();
    }

    /// P4: replaces the stale results of the advisor's own `read`/`search`/`find` calls by
    /// placeholders when that pays (see [`plan_eviction`]); what was done, `None` when
    /// nothing was worth evicting. The saved tokens come off the measured part of the
    /// estimate (G5), since the next request no longer sends them.
    pub fn evict_stale_results(&mut self) -> Option<Eviction> {
        let plan = plan_eviction(&self.messages)?;
        for &i in &plan.indices {
            if let Some(ChatMessage::ToolResult { text, .. }) = self.messages.get_mut(i) {
                *text = stale_placeholder(text_tokens(text));
            }
        }
        let eviction = Eviction {
            evicted: plan.indices.len() as u64,
            tokens_saved: plan.tokens_saved,
        };
        if plan.cut < self.covered {
            self.last_prompt_tokens = self.last_prompt_tokens.saturating_sub(plan.tokens_saved);
        }
        Some(eviction)
    }

    /// The newest messages whose characters add up to at most `max_chars`, oldest first
    /// (the newest one always, however long): the part of this context another reader (the
    /// action gate, GT3) is shown, bounded before it is copied.
    pub fn newest(&self, max_chars: usize) -> &[ChatMessage] {
        newest_messages(&self.messages, max_chars)
    }

    /// Rolls back to `len` messages (a failed review leaves no trace).
    pub fn truncate(&mut self, len: usize) {
        self.messages.truncate(len);
        self.covered = self.covered.min(len);
        self.rereads.truncate(len);
    }
}

/// The newest of `messages` whose characters add up to at most `max_chars`, oldest first;
/// the last one always, however long ([`AdvisorContext::newest`]).
pub fn newest_messages(messages: &[ChatMessage], max_chars: usize) -> &[ChatMessage] {
    let mut total = 0usize;
    let mut start = messages.len();
    for (i, message) in messages.iter().enumerate().rev() {
        total = total.saturating_add(message.char_len());
        if total > max_chars && start < messages.len() {
            break;
        }
        start = i;
    }
    &messages[start..]
}

/// The context threshold in tokens (G5): an absolute setting wins, else a percentage of the
/// window.
pub fn context_threshold(window: u64, percent: u8, absolute: Option<u64>) -> u64 {
    absolute.unwrap_or(window * u64::from(percent) / 100)
}

/// Whether the context needs maintenance before `incoming` is appended (G5): it is not
/// empty and the estimate passes `threshold`. An empty context has nothing to shed.
pub fn needs_maintenance(context: &AdvisorContext, incoming: &str, threshold: u64) -> bool {
    !context.messages.is_empty() && context.estimate_with(incoming) > threshold
}

/// Why a call that stopped at a limit (`length`, `max_tokens`) stopped (G5 reactive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitStop {
    /// The context is full: the call's prompt and reply reach the threshold, or the reply
    /// stayed under the output bound, so the bound is not what stopped it.
    ContextFull,
    /// The reply used the whole output bound while the context still had room.
    OutputCap,
}

/// Tells a context overflow from a reply cut at its output bound (G5): the context is full
/// when the call's prompt plus output reach `threshold`, or when the provider reported an
/// output below `bound` (something other than the bound stopped it); otherwise, including
/// an estimated usage (the provider reported none) and a reply far past the bound (a server
/// that ignores the bound, cut by the reply-size cap), the reply was cut at an output cap and
/// is kept: only a full context takes the reactive path.
pub fn limit_stop(usage: &Usage, bound: u32, threshold: u64) -> LimitStop {
    let used = usage.prompt_tokens() + usage.output;
    if used >= threshold || (!usage.estimated && usage.output < u64::from(bound)) {
        LimitStop::ContextFull
    } else {
        LimitStop::OutputCap
    }
}

/// About how many tokens of recent history a compaction keeps verbatim (G5).
pub const COMPACTION_KEEP_TOKENS: u64 = 20_000;

/// The verbatim part a compaction keeps for a context threshold of `threshold` tokens:
/// [`COMPACTION_KEEP_TOKENS`], but never more than a quarter of the threshold, so a small
/// window still has room for the summary and the next batch.
pub fn keep_budget(threshold: u64) -> u64 {
    COMPACTION_KEEP_TOKENS.min(threshold / 4)
}

/// The message a summary becomes: the first user message of the compacted context.
pub fn summary_message(summary: &str) -> ChatMessage {
    ChatMessage::User {
        text: format!("{SUMMARY_HEADING}\n\n{SUMMARY_INTRO}\n\n{}", summary.trim()),
    }
}

/// The token size the compaction cut uses for one message (characters / 4, rounded up).
fn message_tokens(message: &ChatMessage) -> u64 {
    (message.char_len() as u64).div_ceil(4)
}

/// Where a compaction cuts the history (G5): the messages before the returned index are
/// summarised, the rest are kept verbatim. The kept part is the longest suffix of at most
/// `keep_tokens` that starts where a review starts: at a user message that does not follow
/// another one, the summary of an earlier compaction aside (user messages only open a
/// review, one or several of them: the expanded view sends one per transcript message), so a tool call is never separated from its result
/// nor a review's update split. When even the last review is larger than the
/// budget nothing is kept. `None` when there is nothing to summarise: the whole history
/// fits the budget (or is empty), so compaction cannot make it smaller.
pub fn compaction_cut(messages: &[ChatMessage], keep_tokens: u64) -> Option<usize> {
    let mut kept = 0u64;
    let mut cut = messages.len();
    for (i, message) in messages.iter().enumerate().rev() {
        kept += message_tokens(message);
        if kept > keep_tokens {
            break;
        }
        let opens_review = matches!(message, ChatMessage::User { .. })
            && !matches!(
                i.checked_sub(1).and_then(|p| messages.get(p)),
                Some(ChatMessage::User { text }) if !text.starts_with(SUMMARY_HEADING)
            );
        if opens_review {
            cut = i;
        }
    }
    (cut > 0).then_some(cut)
}

/// The tools whose results may go stale and be evicted (P4): the advisor's own reads and
/// searches. `advise` answers, other tools' results, updates and notes are never touched.
pub const EVICTABLE_TOOLS: [&str; 3] = ["read", "search", "find"];

/// The smallest result worth evicting, in tokens (P4).
pub const EVICT_MIN_TOKENS: u64 = 50;

/// What replaces an evicted result (P4): the fixed wording oh-my-pi's advisor uses, so a
/// transcript reads the same to tools that know it.
pub fn stale_placeholder(tokens: u64) -> String {
    format!("[Stale result elided - {tokens} tokens]")
}

/// Tokens of a text (characters / 4, rounded up).
fn text_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// What one eviction did (P4), counted in the status (C3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Eviction {
    /// Results replaced by a placeholder.
    pub evicted: u64,
    /// Tokens saved: the results' tokens minus their placeholders'.
    pub tokens_saved: u64,
}

/// The eviction [`plan_eviction`] chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvictionPlan {
    /// The first message whose cached prefix the eviction invalidates.
    pub cut: usize,
    /// The tool results to replace, in order.
    pub indices: Vec<usize>,
    /// Tokens saved (results minus placeholders).
    pub tokens_saved: u64,
    /// The net gain that chose this cut (always positive).
    pub gain: i64,
}

/// The boundary of P4: the last user message of the context, which before a review is the
/// last message of the previous review's update (an update may be several user messages;
/// all of them come before that review's tool calls). Results before it are stale.
fn stale_boundary(messages: &[ChatMessage]) -> usize {
    messages
        .iter()
        .rposition(|m| matches!(m, ChatMessage::User { .. }))
        .unwrap_or(0)
}

/// The tokens a result would save and its placeholder's, when it may be evicted (P4): a
/// `read`/`search`/`find` result of at least [`EVICT_MIN_TOKENS`] that is not a placeholder
/// already.
fn evictable(message: &ChatMessage) -> Option<(u64, u64)> {
    let ChatMessage::ToolResult { name, text, .. } = message else {
        return None;
    };
    let tokens = text_tokens(text);
    if !EVICTABLE_TOOLS.contains(&name.as_str()) || tokens < EVICT_MIN_TOKENS {
        return None;
    }
    let placeholder = text_tokens(&stale_placeholder(tokens));
    Some((tokens, placeholder))
}

/// P4's cache-aware choice. Evicting a message invalidates the provider's prompt cache from
/// it onward, so each candidate cut (an evictable result before the boundary, walking back)
/// is scored: tokens saved by every eviction from the cut to the boundary, minus what must
/// then be sent uncached after the cut (the other messages, the placeholders included). The
/// cut with the largest positive gain wins; `None` when no cut gains.
pub fn plan_eviction(messages: &[ChatMessage]) -> Option<EvictionPlan> {
    let boundary = stale_boundary(messages);
    let mut resent: u64 = messages[boundary..].iter().map(message_tokens).sum();
    let (mut saved, mut placeholders) = (0u64, 0u64);
    let mut best: Option<(usize, u64, i64)> = None;
    for (i, message) in messages[..boundary].iter().enumerate().rev() {
        let Some((tokens, placeholder)) = evictable(message) else {
            resent += message_tokens(message);
            continue;
        };
        saved += tokens.saturating_sub(placeholder);
        placeholders += placeholder;
        let gain = saved as i64 - (resent + placeholders) as i64;
        if gain > best.map_or(0, |(_, _, g)| g) {
            best = Some((i, saved, gain));
        }
    }
    let (cut, tokens_saved, gain) = best?;
    let indices = (cut..boundary)
        .filter(|&i| evictable(&messages[i]).is_some())
        .collect();
    Some(EvictionPlan {
        cut,
        indices,
        tokens_saved,
        gain,
    })
}

/// How many characters of one tool result the summary call is shown.
const SUMMARY_TOOL_RESULT_CHARS: usize = 2_000;

/// Cuts `text` to at most `max` bytes at a character boundary, marking the cut.
fn cut_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let rest = text[end..].chars().count();
    format!("{}… [{rest} more characters]", &text[..end])
}

/// The part of the history a compaction summarises, rendered as text for the summary call:
/// the updates as they were sent, the reviewer's visible answers and tool calls, and the
/// tool results cut to a couple of thousand characters. Thinking is left out.
pub fn render_for_summary(messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for message in messages {
        match message {
            ChatMessage::User { text } => {
                out.push_str("[update to the reviewer]\n");
                out.push_str(text.trim_end());
            }
            ChatMessage::Assistant { parts } => {
                out.push_str("[reviewer]");
                for part in parts {
                    match part {
                        AssistantPart::Text { text } if !text.trim().is_empty() => {
                            out.push('\n');
                            out.push_str(text.trim_end());
                        }
                        AssistantPart::ToolCall {
                            name, arguments, ..
                        } => {
                            out.push_str(&format!("\n→ {name} {arguments}"));
                        }
                        _ => {}
                    }
                }
            }
            ChatMessage::ToolResult {
                name,
                text,
                is_error,
                ..
            } => {
                let flag = if *is_error { " (error)" } else { "" };
                out.push_str(&format!("[{name} result{flag}]\n"));
                out.push_str(&cut_text(text.trim_end(), SUMMARY_TOOL_RESULT_CHARS));
            }
        }
        out.push_str("\n\n");
    }
    out.trim_end().to_string()
}

/// What G5's context maintenance did (one event each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MaintenanceKind {
    /// Switched to the larger-window model (`advisor.contextPromotion`).
    Promotion,
    /// Replaced the older history by a model-written summary.
    Compaction,
    /// Cleared the history; the batch starts a fresh context.
    Reprime,
}

impl MaintenanceKind {
    /// The name used in tracing and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            MaintenanceKind::Promotion => "promotion",
            MaintenanceKind::Compaction => "compaction",
            MaintenanceKind::Reprime => "reprime",
        }
    }
}

/// Counts of maintenance events (C3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceCounts {
    /// Model promotions.
    pub promotions: u64,
    /// Compactions (a summary replaced the older history).
    pub compactions: u64,
    /// Re-primes (the history was cleared).
    pub reprimes: u64,
    /// Stale results replaced by a placeholder (P4).
    #[serde(default)]
    pub evictions: u64,
    /// Tokens those evictions saved (P4).
    #[serde(default)]
    pub evicted_tokens: u64,
}

impl MaintenanceCounts {
    /// Counts one event.
    pub fn record(&mut self, kind: MaintenanceKind) {
        match kind {
            MaintenanceKind::Promotion => self.promotions += 1,
            MaintenanceKind::Compaction => self.compactions += 1,
            MaintenanceKind::Reprime => self.reprimes += 1,
        }
    }

    /// Counts one eviction (P4).
    pub fn record_eviction(&mut self, eviction: &Eviction) {
        self.evictions += eviction.evicted;
        self.evicted_tokens += eviction.tokens_saved;
    }

    /// Adds another set of counts.
    pub fn add(&mut self, other: &MaintenanceCounts) {
        self.promotions += other.promotions;
        self.compactions += other.compactions;
        self.reprimes += other.reprimes;
        self.evictions += other.evictions;
        self.evicted_tokens += other.evicted_tokens;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gt3_the_newest_messages_within_a_bound_and_always_the_last() {
        let mut context = AdvisorContext::new();
        for text in ["a".repeat(10), "b".repeat(10), "c".repeat(10)] {
            context.messages.push(ChatMessage::User { text });
        }
        assert_eq!(context.newest(25).len(), 2, "the two newest fit in 25");
        assert_eq!(context.newest(30).len(), 3);
        let newest = context.newest(3);
        assert_eq!(
            newest,
            &context.messages[2..],
            "the last one even past the bound"
        );
        assert!(AdvisorContext::new().newest(100).is_empty());
    }

    #[test]
    fn g5_a_reply_far_past_its_bound_is_an_output_cap_unless_the_context_is_full() {
        let usage = |input, output, estimated| Usage {
            input,
            output,
            estimated,
            ..Usage::default()
        };
        // About its bound (estimates run high): the bound cut it.
        assert_eq!(
            limit_stop(&usage(1_000, 60, true), 48, 100_000),
            LimitStop::OutputCap
        );
        // Far past it (a server ignoring the bound, cut by the reply-size cap), estimated or
        // reported, with room left in the context: still a cut reply, kept.
        for estimated in [true, false] {
            assert_eq!(
                limit_stop(&usage(2_555, 32_875, estimated), 4_096, 102_400),
                LimitStop::OutputCap
            );
        }
        // The context is full: the reactive path.
        assert_eq!(
            limit_stop(&usage(90_000, 32_875, true), 4_096, 102_400),
            LimitStop::ContextFull
        );
        // The provider reported stopping below the bound: not the bound.
        assert_eq!(
            limit_stop(&usage(1_000, 10, false), 48, 100_000),
            LimitStop::ContextFull
        );
    }

    #[test]
    fn sp2_p4_re_reads_are_saved_for_the_tools_whose_results_are_evicted() {
        assert_eq!(EVICTABLE_TOOLS, super::super::rereads::REREADABLE_TOOLS);
    }

    #[test]
    fn g5_estimate_adds_chars_after_the_last_report() {
        let mut c = AdvisorContext::new();
        c.messages.push(ChatMessage::User {
            text: "x".repeat(400),
        });
        c.record_usage(
            &Usage {
                input: 1000,
                cache_read: 500,
                ..Usage::default()
            },
            1,
        );
        c.messages.push(ChatMessage::User {
            text: "y".repeat(400),
        });
        assert_eq!(c.estimate_with(&"z".repeat(400)), 1500 + 200);
        assert_eq!(context_threshold(100_000, 80, None), 80_000);
        assert_eq!(context_threshold(100_000, 80, Some(5)), 5);
    }

    fn user(chars: usize) -> ChatMessage {
        ChatMessage::User {
            text: "u".repeat(chars),
        }
    }

    fn call(id: &str) -> ChatMessage {
        ChatMessage::Assistant {
            parts: vec![AssistantPart::ToolCall {
                id: id.into(),
                name: "read".into(),
                arguments: serde_json::json!({"path": "src/lib.rs"}),
            }],
        }
    }

    fn result(id: &str, chars: usize) -> ChatMessage {
        ChatMessage::ToolResult {
            call_id: id.into(),
            name: "read".into(),
            text: "r".repeat(chars),
            is_error: false,
        }
    }

    fn answer(text: &str) -> ChatMessage {
        ChatMessage::Assistant {
            parts: vec![AssistantPart::Text { text: text.into() }],
        }
    }

    #[test]
    fn g5_maintenance_needs_a_non_empty_context_past_the_threshold() {
        let mut c = AdvisorContext::new();
        assert!(!needs_maintenance(&c, &"x".repeat(400_000), 10));
        c.messages.push(user(40));
        c.record_usage(
            &Usage {
                input: 900,
                ..Usage::default()
            },
            1,
        );
        assert!(needs_maintenance(&c, "", 800));
        assert!(!needs_maintenance(&c, "", 900));
        assert!(needs_maintenance(&c, "abcd", 900), "the batch counts");
    }

    #[test]
    fn g5_keep_budget_is_20k_tokens_or_a_quarter_of_a_small_threshold() {
        assert_eq!(keep_budget(160_000), 20_000);
        assert_eq!(keep_budget(80_000), 20_000);
        assert_eq!(keep_budget(8_000), 2_000);
    }

    #[test]
    fn g5_compaction_cut_never_splits_the_parts_of_one_review() {
        let user = |t: &str| ChatMessage::User { text: t.into() };
        let answer = || ChatMessage::Assistant {
            parts: vec![AssistantPart::Text { text: "ok".into() }],
        };
        // Review 1: two parts and an answer; review 2: three parts and an answer.
        let messages = vec![
            user(&"a".repeat(400)),
            user(&"b".repeat(400)),
            answer(),
            user(&"c".repeat(400)),
            user(&"d".repeat(40)),
            user(&"e".repeat(40)),
            answer(),
        ];
        // Room for the last two parts of review 2 only: they are not kept apart from its
        // first part, so everything is summarised.
        assert_eq!(compaction_cut(&messages, 30), Some(7));
        // Room for review 2 whole: the cut is at its first part.
        assert_eq!(compaction_cut(&messages, 150), Some(3));
        // After a compaction, the first kept review still opens right after the summary.
        let mut compacted = vec![summary_message("earlier")];
        compacted.extend(messages[3..].iter().cloned());
        assert_eq!(compaction_cut(&compacted, 150), Some(1));
    }

    #[test]
    fn g5_compaction_cut_keeps_recent_reviews_and_starts_at_a_user_message() {
        // Three reviews of 10k tokens each (40k characters), with a tool round in the middle.
        let messages = vec![
            user(40_000),
            answer(""),
            user(36_000),
            call("a"),
            result("a", 4_000),
            answer("ok"),
            user(40_000),
            answer(""),
        ];
        // 20k tokens: the last two reviews would be 20k + a few tokens; only the last fits.
        assert_eq!(compaction_cut(&messages, 20_000), Some(6));
        // 21k tokens: the last two reviews fit; the cut is at the second review's update,
        // never between the tool call and its result.
        assert_eq!(compaction_cut(&messages, 21_000), Some(2));
        // Everything fits: nothing to summarise.
        assert_eq!(compaction_cut(&messages, 40_000), None);
        assert_eq!(compaction_cut(&[], 20_000), None);
        // The last review alone is larger than the budget: everything is summarised.
        assert_eq!(compaction_cut(&messages, 5_000), Some(messages.len()));
    }

    #[test]
    fn g5_compact_puts_the_summary_first_and_restarts_the_estimate() {
        let mut c = AdvisorContext::new();
        c.messages = vec![user(4_000), answer("old"), user(400), answer("new")];
        c.record_usage(
            &Usage {
                input: 90_000,
                ..Usage::default()
            },
            4,
        );
        c.compact(2, summary_message("- the agent fixes the parser"), 1_000);
        assert_eq!(c.messages.len(), 3);
        match &c.messages[0] {
            ChatMessage::User { text } => {
                assert!(text.starts_with(SUMMARY_HEADING), "{text}");
                assert!(text.ends_with("- the agent fixes the parser"), "{text}");
            }
            other => panic!("expected the summary, got {other:?}"),
        }
        assert_eq!(c.messages[1], user(400));
        let chars: usize = c.messages.iter().map(ChatMessage::char_len).sum();
        assert_eq!(c.estimate_with("zzzz"), 1_000 + ((chars + 4) / 4) as u64);
    }

    #[test]
    fn g5_summary_input_shows_updates_answers_calls_and_cut_results_without_thinking() {
        let messages = vec![
            ChatMessage::User {
                text: "### Session update\n\nfix the parser".into(),
            },
            ChatMessage::Assistant {
                parts: vec![
                    AssistantPart::Thinking {
                        text: "secret musing".into(),
                        signature: None,
                        redacted: None,
                        details: None,
                    },
                    AssistantPart::Text {
                        text: "Checking.".into(),
                    },
                    AssistantPart::ToolCall {
                        id: "a".into(),
                        name: "advise".into(),
                        arguments: serde_json::json!({"note": "n", "severity": "concern"}),
                    },
                ],
            },
            ChatMessage::ToolResult {
                call_id: "a".into(),
                name: "read".into(),
                text: "é".repeat(3_000),
                is_error: true,
            },
        ];
        let text = render_for_summary(&messages);
        assert!(text.starts_with("[update to the reviewer]\n### Session update"));
        assert!(text.contains("[reviewer]\nChecking.\n→ advise {"), "{text}");
        assert!(text.contains("\"severity\":\"concern\""), "{text}");
        assert!(!text.contains("secret musing"));
        assert!(text.contains("[read result (error)]\n"));
        assert!(
            text.ends_with("… [2000 more characters]"),
            "{}",
            &text[text.len() - 60..]
        );
    }

    fn tool_result(name: &str, chars: usize) -> ChatMessage {
        ChatMessage::ToolResult {
            call_id: "c".into(),
            name: name.into(),
            text: "r".repeat(chars),
            is_error: false,
        }
    }

    fn result_text(message: &ChatMessage) -> &str {
        match message {
            ChatMessage::ToolResult { text, .. } => text,
            other => panic!("expected a tool result, got {other:?}"),
        }
    }

    #[test]
    fn p4_a_big_read_of_an_earlier_review_becomes_a_placeholder() {
        let mut c = AdvisorContext::new();
        c.messages = vec![
            user(400),
            call("a"),
            result("a", 40_000),
            answer("ok"),
            user(400),
            answer(""),
        ];
        c.record_usage(
            &Usage {
                input: 10_300,
                ..Usage::default()
            },
            6,
        );
        let before = c.estimate_with("");
        let eviction = c.evict_stale_results().expect("it pays");
        assert_eq!(
            result_text(&c.messages[2]),
            "[Stale result elided - 10000 tokens]"
        );
        assert_eq!(eviction.evicted, 1);
        let placeholder = text_tokens("[Stale result elided - 10000 tokens]");
        assert_eq!(eviction.tokens_saved, 10_000 - placeholder);
        assert_eq!(c.estimate_with(""), before - eviction.tokens_saved);
        assert_eq!(c.messages.len(), 6, "nothing else changes");
        assert!(
            c.evict_stale_results().is_none(),
            "a placeholder is not evicted again"
        );
    }

    #[test]
    fn p4_results_of_the_latest_review_and_other_messages_are_never_touched() {
        // The latest review: everything after its update (the last user message) stays.
        let messages = vec![user(400), call("a"), result("a", 40_000), answer("ok")];
        assert_eq!(plan_eviction(&messages), None);
        // Small results, other tools, `advise` answers, updates and notes stay.
        let messages = vec![
            user(40_000),
            tool_result("read", 196),
            tool_result("advise", 40_000),
            tool_result("bash", 40_000),
            answer(&"n".repeat(40_000)),
            user(40),
        ];
        assert_eq!(plan_eviction(&messages), None);
        // 200 characters (50 tokens) is the smallest result that may go.
        let messages = vec![user(4), tool_result("find", 200), user(4)];
        let plan = plan_eviction(&messages).expect("50 tokens, tiny suffix");
        assert_eq!(plan.indices, [1]);
    }

    #[test]
    fn p4_no_positive_gain_no_eviction() {
        // Saving 60 tokens would re-send a 1000-token update uncached.
        let messages = vec![user(40), tool_result("read", 240), user(4_000)];
        assert_eq!(plan_eviction(&messages), None);
    }

    #[test]
    fn p4_the_cut_is_where_the_gain_is_largest() {
        // An early small search, a large update after it, then a large read: evicting the
        // search as well would re-send the large update uncached, so only the read goes.
        let messages = vec![
            user(40),
            tool_result("search", 800),
            user(8_000),
            tool_result("read", 40_000),
            answer("ok"),
            user(40),
            answer(""),
        ];
        let plan = plan_eviction(&messages).expect("the read pays");
        assert_eq!((plan.cut, plan.indices.clone()), (3, vec![3]));
        assert!(plan.gain > 0);
        // Two big reads in a row: both go, from the earlier one.
        let messages = vec![
            user(40),
            tool_result("search", 20_000),
            tool_result("read", 40_000),
            user(40),
        ];
        let plan = plan_eviction(&messages).expect("both pay");
        assert_eq!((plan.cut, plan.indices), (1, vec![1, 2]));
    }

    #[test]
    fn p4_an_update_of_several_user_messages_is_one_boundary() {
        // The previous review's update in three parts (the expanded view): the boundary is
        // its last part, and nothing between or after the parts is a candidate.
        let messages = vec![
            user(40),
            tool_result("read", 40_000),
            answer(""),
            user(40),
            user(40),
            user(40),
            answer(""),
        ];
        let plan = plan_eviction(&messages).expect("the read pays");
        assert_eq!(plan.indices, [1]);
        let mut c = AdvisorContext::new();
        c.messages = messages.clone();
        c.evict_stale_results();
        for (i, (after, before)) in c.messages.iter().zip(&messages).enumerate() {
            assert_eq!(after == before, i != 1, "only message 1 changes ({i})");
        }
    }

    #[test]
    fn c3_maintenance_counts_add_up() {
        let mut a = MaintenanceCounts::default();
        a.record(MaintenanceKind::Compaction);
        a.record(MaintenanceKind::Reprime);
        let mut b = MaintenanceCounts::default();
        b.record(MaintenanceKind::Promotion);
        b.add(&a);
        assert_eq!((b.promotions, b.compactions, b.reprimes), (1, 1, 1));
        a.record_eviction(&Eviction {
            evicted: 2,
            tokens_saved: 900,
        });
        b.add(&a);
        assert_eq!((b.evictions, b.evicted_tokens), (2, 900));
    }
}
