//! The `anthropic-messages` dialect: Anthropic Messages with SSE streaming.
//!
//! Request choices:
//! - prompt caching (M5): `cache_control: {type: "ephemeral"}` on the system prompt and on
//!   the last block of the last two user-role messages. The newest breakpoint writes the
//!   whole conversation to the cache; the one before it sits where the previous request's
//!   newest breakpoint was, so the previous request's prefix is read from the cache and
//!   the previous request's message list stays a byte-identical prefix of this one's in
//!   the usual review-after-review case (three breakpoints of the four allowed);
//! - thinking: for models the catalog marks as reasoning, `thinking.budget_tokens` from
//!   the level (minimal 1024, low 4096, medium 10000, high 20000, xhigh 32000), lowered to
//!   leave at least 1024 tokens of the output bound for the answer (`max_tokens` must
//!   exceed the budget); below 1024 thinking is left off. No temperature is ever sent;
//! - thinking blocks come back with their signature (or as redacted data) and are sent
//!   back unchanged; reasoning from another dialect (no signature) is not sent.
//!
//! Stream rules: the end marker is `message_stop`; a stream that ends before it is a
//! retryable failure, whatever it completed (F1). `stop_reason:
//! model_context_window_exceeded` is a context overflow (G5 reactive) carrying the call's
//! usage. Usage the stream did not report is estimated and marked (G4).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::catalog::Prices;
use super::error::classify_stream_error;
use super::http::{cut_text, Outgoing, StreamDecoder, Transport};
use super::sse::SseEvent;
use super::{priced, ProviderConfig};
use crate::model::{
    estimate_tokens, AssistantPart, ChatMessage, ModelError, ModelRequest, ModelResponse,
    StopReason, ThinkingLevel, ToolSchema, Usage,
};

/// The API version header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Smallest thinking budget Anthropic accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

/// Sends one request in the `anthropic-messages` dialect over `transport` and decodes the
/// stream (the shared [`super::StreamingClient`] calls it).
pub(crate) async fn send(
    transport: &Transport,
    request: &ModelRequest,
) -> Result<ModelResponse, ModelError> {
    let config = &transport.config;
    let body = request_body(config, request);
    let auth = config
        .api_key
        .as_ref()
        .map(|key| ("x-api-key", key.clone()));
    let fixed = [("anthropic-version", ANTHROPIC_VERSION)];
    let decoder = AnthropicStream::new(config.prices, request.char_len());
    let outgoing = Outgoing {
        api: "anthropic-messages",
        path: "messages",
        fixed: &fixed,
        auth,
        body: &body,
        output_bound: config.output_bound(request.max_tokens),
    };
    transport.send(outgoing, decoder).await
}

/// The thinking budget for a level under an output bound, or `None` for no thinking.
pub fn thinking_budget(level: ThinkingLevel, max_tokens: u32) -> Option<u32> {
    let wanted = match level {
        ThinkingLevel::Off => return None,
        ThinkingLevel::Minimal => 1024,
        ThinkingLevel::Low => 4096,
        ThinkingLevel::Medium => 10_000,
        ThinkingLevel::High => 20_000,
        ThinkingLevel::Xhigh => 32_000,
    };
    let budget = wanted.min(max_tokens.saturating_sub(MIN_THINKING_BUDGET));
    (budget >= MIN_THINKING_BUDGET).then_some(budget)
}

/// The JSON body of one request (deterministic: same request, same bytes; the message list
/// comes last).
pub fn request_body(config: &ProviderConfig, request: &ModelRequest) -> Value {
    let max_tokens = config.output_bound(request.max_tokens);
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model_id));
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    if config.info.reasoning {
        if let Some(budget) = thinking_budget(request.thinking, max_tokens) {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
    }
    body.insert(
        "system".into(),
        json!([{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]),
    );
    if !request.tools.is_empty() {
        body.insert("tools".into(), tools_json(&request.tools));
    }
    body.insert(
        "messages".into(),
        Value::Array(messages_json(
            &request.messages,
            request.reminder.as_deref(),
        )),
    );
    Value::Object(body)
}

/// The tool definitions.
pub fn tools_json(tools: &[ToolSchema]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect(),
    )
}

/// The wire message list with cache breakpoints. Consecutive tool results share one user
/// message (they are always appended together, one round at a time). The first user
/// message opens with `reminder` as a text block of its own when there is one (P8).
pub fn messages_json(messages: &[ChatMessage], reminder: Option<&str>) -> Vec<Value> {
    let mut reminder = reminder;
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    let mut results: Vec<Value> = Vec::new();
    for message in messages {
        if let ChatMessage::ToolResult {
            call_id,
            text,
            is_error,
            ..
        } = message
        {
            let mut block = Map::new();
            block.insert("type".into(), json!("tool_result"));
            block.insert("tool_use_id".into(), json!(call_id));
            block.insert("content".into(), json!(text));
            if *is_error {
                block.insert("is_error".into(), json!(true));
            }
            results.push(Value::Object(block));
            continue;
        }
        if !results.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
        }
        match message {
            ChatMessage::User { text } => {
                let text = if text.is_empty() { "(empty)" } else { text };
                let mut content = Vec::with_capacity(2);
                if let Some(first) = reminder.take() {
                    content.push(json!({"type": "text", "text": first}));
                }
                content.push(json!({"type": "text", "text": text}));
                out.push(json!({"role": "user", "content": content}));
            }
            ChatMessage::Assistant { parts } => out.push(assistant_json(parts)),
            ChatMessage::ToolResult { .. } => {}
        }
    }
    if !results.is_empty() {
        out.push(json!({"role": "user", "content": results}));
    }
    let mut marked = 0;
    for message in out.iter_mut().rev() {
        if marked == 2 {
            break;
        }
        if message["role"] != "user" {
            continue;
        }
        if let Some(Value::Object(block)) = message
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .and_then(|c| c.last_mut())
        {
            block.insert("cache_control".into(), json!({"type": "ephemeral"}));
            marked += 1;
        }
    }
    out
}

fn assistant_json(parts: &[AssistantPart]) -> Value {
    let mut content = Vec::new();
    for part in parts {
        match part {
            AssistantPart::Text { text } if !text.is_empty() => {
                content.push(json!({"type": "text", "text": text}));
            }
            AssistantPart::Text { .. } => {}
            AssistantPart::Thinking {
                redacted: Some(data),
                ..
            } => content.push(json!({"type": "redacted_thinking", "data": data})),
            AssistantPart::Thinking {
                text,
                signature: Some(sig),
                ..
            } => content.push(json!({"type": "thinking", "thinking": text, "signature": sig})),
            AssistantPart::Thinking { .. } => {}
            AssistantPart::ToolCall {
                id,
                name,
                arguments,
            } => {
                let input = if arguments.is_object() {
                    arguments.clone()
                } else {
                    json!({})
                };
                content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
            }
        }
    }
    if content.is_empty() {
        content.push(json!({"type": "text", "text": "(no output)"}));
    }
    json!({"role": "assistant", "content": content})
}

/// One content block being assembled.
#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// The state of one Messages stream.
#[derive(Debug)]
pub struct AnthropicStream {
    prices: Prices,
    /// Characters of the request, for the usage estimate.
    sent_chars: usize,
    /// Reply bytes appended so far (the reply cap).
    received: usize,
    blocks: BTreeMap<u64, (Block, bool)>,
    usage: Usage,
    /// The stream reported input usage (`message_start`).
    input_reported: bool,
    /// The stream reported the final output count (`message_delta`).
    output_reported: bool,
    stop_reason: Option<String>,
    done: bool,
}

impl AnthropicStream {
    /// A fresh stream state; `prices` price the usage; `sent_chars` is the size of the
    /// request, for the estimate of what the stream does not report.
    pub fn new(prices: Prices, sent_chars: usize) -> Self {
        Self {
            prices,
            sent_chars,
            received: 0,
            blocks: BTreeMap::new(),
            usage: Usage::default(),
            input_reported: false,
            output_reported: false,
            stop_reason: None,
            done: false,
        }
    }

    /// Characters of the reply assembled so far, for the estimate.
    fn received_chars(&self) -> usize {
        self.blocks
            .values()
            .map(|(block, _)| match block {
                Block::Text(t) | Block::Redacted(t) => t.len(),
                Block::Thinking { text, .. } => text.len(),
                Block::ToolUse { name, json, .. } => name.len() + json.len(),
                Block::Other => 0,
            })
            .sum()
    }

    /// The usage so far: what the stream reported, the rest estimated (and then marked).
    fn usage_so_far(&self) -> Usage {
        let mut usage = self.usage;
        if !self.input_reported {
            usage = Usage::estimate(self.sent_chars, 0);
            usage.output = self.usage.output;
        }
        if !self.output_reported {
            usage.output = usage.output.max(estimate_tokens(self.received_chars()));
            usage.estimated = true;
        }
        priced(usage, None, &self.prices)
    }

    fn take_usage(&mut self, u: &Value, last: bool) {
        let get = |k: &str| u.get(k).and_then(Value::as_u64);
        if let Some(n) = get("input_tokens") {
            self.usage.input = n;
            self.input_reported = true;
        }
        if let Some(n) = get("output_tokens") {
            self.usage.output = n;
            self.output_reported |= last;
        }
        if let Some(n) = get("cache_read_input_tokens") {
            self.usage.cache_read = n;
        }
        if let Some(n) = get("cache_creation_input_tokens") {
            self.usage.cache_write = n;
        }
    }

    /// A new content block at `index` (`content_block_start`).
    fn start_block(&mut self, index: u64, data: &Value) {
        let b = data.get("content_block").cloned().unwrap_or(Value::Null);
        let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        self.received += ["text", "thinking", "signature", "data", "name"]
            .iter()
            .filter_map(|k| b.get(*k).and_then(Value::as_str))
            .map(str::len)
            .sum::<usize>();
        let block = match b.get("type").and_then(Value::as_str) {
            Some("text") => Block::Text(s("text")),
            Some("thinking") => Block::Thinking {
                text: s("thinking"),
                signature: s("signature"),
            },
            Some("redacted_thinking") => Block::Redacted(s("data")),
            Some("tool_use") => Block::ToolUse {
                id: s("id"),
                name: s("name"),
                json: String::new(),
            },
            _ => Block::Other,
        };
        self.blocks.insert(index, (block, false));
    }

    /// A delta of the content block at `index` (`content_block_delta`).
    fn extend_block(&mut self, index: u64, data: &Value) -> Result<(), ModelError> {
        let d = data.get("delta").cloned().unwrap_or(Value::Null);
        let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
        self.received += ["text", "thinking", "signature", "partial_json"]
            .iter()
            .map(|k| s(k).len())
            .sum::<usize>();
        let Some((block, _)) = self.blocks.get_mut(&index) else {
            return Err(ModelError::Retryable {
                usage: None,
                message: format!("stream delta for unknown content block {index}"),
                retry_after: None,
            });
        };
        match (block, d.get("type").and_then(Value::as_str)) {
            (Block::Text(t), Some("text_delta")) => t.push_str(s("text")),
            (Block::Thinking { text, .. }, Some("thinking_delta")) => text.push_str(s("thinking")),
            (Block::Thinking { signature, .. }, Some("signature_delta")) => {
                signature.push_str(s("signature"))
            }
            (Block::ToolUse { json, .. }, Some("input_json_delta")) => {
                json.push_str(s("partial_json"))
            }
            _ => {}
        }
        Ok(())
    }

    fn on_data(&mut self, kind: &str, data: &Value) -> Result<(), ModelError> {
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(u) = data.get("message").and_then(|m| m.get("usage")) {
                    self.take_usage(u, false);
                }
            }
            "content_block_start" => self.start_block(index, data),
            "content_block_delta" => self.extend_block(index, data)?,
            "content_block_stop" => {
                if let Some((_, complete)) = self.blocks.get_mut(&index) {
                    *complete = true;
                }
            }
            "message_delta" => {
                if let Some(r) = data
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(r.to_string());
                }
                if let Some(u) = data.get("usage") {
                    self.take_usage(u, true);
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let err = data.get("error").cloned().unwrap_or(Value::Null);
                let kind = err.get("type").and_then(Value::as_str).unwrap_or("error");
                let message = err.get("message").and_then(Value::as_str).unwrap_or("");
                return Err(classify_stream_error(kind, message));
            }
            // `ping` and event types added later.
            _ => {}
        }
        Ok(())
    }
}

impl StreamDecoder for AnthropicStream {
    fn on_event(&mut self, event: SseEvent) -> Result<(), ModelError> {
        let data: Value = serde_json::from_str(&event.data).map_err(|e| ModelError::Retryable {
            usage: None,
            message: format!("malformed stream event: {e}"),
            retry_after: None,
        })?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or(event.event)
            .unwrap_or_default();
        self.on_data(&kind, &data)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn reply_bytes(&self) -> usize {
        self.received
    }

    fn partial_usage(&self) -> Usage {
        self.usage_so_far()
    }

    fn cut(self, cap: usize) -> ModelResponse {
        let usage = self.usage_so_far();
        let mut room = cap;
        let mut parts = Vec::new();
        for (block, _) in self.blocks.into_values() {
            if let Block::Text(mut text) = block {
                cut_text(&mut text, room);
                room -= text.len();
                if !text.is_empty() {
                    parts.push(AssistantPart::Text { text });
                }
            }
        }
        ModelResponse {
            parts,
            usage,
            stop: StopReason::MaxTokens,
        }
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        if !self.done {
            return Err(ModelError::Retryable {
                usage: Some(self.usage_so_far()),
                message: "the stream ended before message_stop".into(),
                retry_after: None,
            });
        }
        let usage = self.usage_so_far();
        let stop = match self.stop_reason.as_deref() {
            None | Some("end_turn") | Some("stop_sequence") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some("refusal") => StopReason::Refusal,
            Some("model_context_window_exceeded") => {
                return Err(ModelError::ContextOverflow {
                    usage: Some(usage),
                    message: "stop_reason model_context_window_exceeded".into(),
                })
            }
            Some(other) => StopReason::Other(other.to_string()),
        };
        let mut parts = Vec::new();
        for (block, complete) in self.blocks.into_values() {
            match block {
                Block::Text(text) if !text.is_empty() => parts.push(AssistantPart::Text { text }),
                Block::Thinking { text, signature } if !signature.is_empty() => {
                    parts.push(AssistantPart::Thinking {
                        text,
                        signature: Some(signature),
                        redacted: None,
                        details: None,
                    })
                }
                Block::Redacted(data) => parts.push(AssistantPart::Thinking {
                    text: String::new(),
                    signature: None,
                    redacted: Some(data),
                    details: None,
                }),
                Block::ToolUse { id, name, json } if complete && stop != StopReason::MaxTokens => {
                    let arguments = if json.trim().is_empty() {
                        Value::Object(Map::new())
                    } else {
                        serde_json::from_str(&json).unwrap_or(Value::String(json))
                    };
                    parts.push(AssistantPart::ToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
                _ => {}
            }
        }
        Ok(ModelResponse { parts, usage, stop })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p8_the_reminder_is_a_text_block_of_its_own_in_the_first_user_message() {
        let msgs = [
            ChatMessage::User { text: "u1".into() },
            ChatMessage::User { text: "u2".into() },
        ];
        let out = messages_json(&msgs, Some("<system-reminder>r</system-reminder>"));
        let first = out[0]["content"].as_array().unwrap();
        assert_eq!(first.len(), 2);
        assert_eq!(first[0]["text"], "<system-reminder>r</system-reminder>");
        assert_eq!(first[1]["text"], "u1");
        assert_eq!(out[1]["content"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn m2_thinking_budget_leaves_room_for_the_answer() {
        assert_eq!(thinking_budget(ThinkingLevel::Off, 64_000), None);
        assert_eq!(thinking_budget(ThinkingLevel::Medium, 64_000), Some(10_000));
        assert_eq!(thinking_budget(ThinkingLevel::Medium, 4096), Some(3072));
        assert_eq!(thinking_budget(ThinkingLevel::Xhigh, 4096), Some(3072));
        assert_eq!(thinking_budget(ThinkingLevel::Minimal, 2048), Some(1024));
        assert_eq!(thinking_budget(ThinkingLevel::High, 2000), None);
        for max in [2048u32, 4096, 8192, 64_000] {
            for level in [ThinkingLevel::Low, ThinkingLevel::High] {
                if let Some(b) = thinking_budget(level, max) {
                    assert!(b < max && b >= 1024);
                }
            }
        }
    }

    #[test]
    fn m5_breakpoints_on_the_last_two_user_messages() {
        let msgs = vec![
            ChatMessage::User { text: "u1".into() },
            ChatMessage::Assistant {
                parts: vec![AssistantPart::ToolCall {
                    id: "t1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                }],
            },
            ChatMessage::ToolResult {
                call_id: "t1".into(),
                name: "read".into(),
                text: "1|x".into(),
                is_error: false,
            },
            ChatMessage::ToolResult {
                call_id: "t2".into(),
                name: "read".into(),
                text: "boom".into(),
                is_error: true,
            },
            ChatMessage::User { text: "u2".into() },
        ];
        let out = messages_json(&msgs, None);
        assert_eq!(out.len(), 4);
        assert!(out[0]["content"][0].get("cache_control").is_none());
        assert_eq!(out[2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(out[2]["content"][1]["is_error"], json!(true));
        assert_eq!(
            out[2]["content"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            out[3]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
    }

    #[test]
    fn m2_unsigned_reasoning_is_not_sent_to_anthropic() {
        let v = assistant_json(&[
            AssistantPart::Thinking {
                text: "from another model".into(),
                signature: None,
                redacted: None,
                details: None,
            },
            AssistantPart::Text { text: "hi".into() },
        ]);
        assert_eq!(v["content"], json!([{"type": "text", "text": "hi"}]));
    }
}
