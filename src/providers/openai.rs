//! The `openai-completions` dialect: OpenAI Chat Completions with SSE streaming, spoken by
//! OpenAI, OpenRouter and OpenAI-compatible local servers (llama.cpp, vLLM, Ollama).
//!
//! Request choices:
//! - `stream: true` with `stream_options.include_usage` so the last chunk carries usage;
//! - the output bound goes in `max_completion_tokens` (OpenAI's reasoning models reject
//!   `max_tokens`), and `store: false` asks the provider not to keep the exchange (P10); an
//!   endpoint that answers 400 naming `max_completion_tokens` is asked again at once with
//!   `max_tokens`, and every later request to that endpoint uses `max_tokens`
//!   ([`super::EndpointQuirks`], shared by the sessions of a process);
//! - for models the catalog marks as reasoning: `reasoning: {effort}` on OpenRouter,
//!   `reasoning_effort` elsewhere (`xhigh` is sent as `high`); `off` sends nothing, leaving
//!   the model's default, except on OpenAI where it asks for `minimal`;
//! - reasoning that came back (`reasoning`, `reasoning_content`, `reasoning_details`) is
//!   kept per field in [`AssistantPart::Thinking::details`] and sent back under the same
//!   field names on the next request.
//!
//! Stream rules: the stream's end marker is `data: [DONE]`; a stream that ends before it is
//! a retryable failure even when `finish_reason` came (F1). A server that streams no usage
//! (or only zeros) gets an estimate, marked as such (G4). `finish_reason`
//! `model_context_window_exceeded` (passed through by proxies in front of Anthropic) is a
//! context overflow carrying the call's usage (G5 reactive), as in the Anthropic dialect.

use serde_json::{json, Map, Value};

use super::catalog::Prices;
use super::error::classify_stream_error;
use super::http::{cut_text, Outgoing, StreamDecoder, Transport};
use super::sse::SseEvent;
use super::{priced, ProviderConfig};
use crate::model::{
    AssistantPart, ChatMessage, ModelError, ModelRequest, ModelResponse, StopReason, ThinkingLevel,
    ToolSchema, Usage,
};

/// Reasoning fields of an assistant message, in the order they are sent back.
const REASONING_TEXT_FIELDS: [&str; 2] = ["reasoning", "reasoning_content"];

/// Which server family: decides the output-bound and reasoning fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    OpenAi,
    OpenRouter,
    Generic,
}

impl Flavor {
    fn of(config: &ProviderConfig) -> Self {
        match config.provider.as_str() {
            "openai" => Self::OpenAi,
            "openrouter" => Self::OpenRouter,
            _ => Self::Generic,
        }
    }
}

/// Sends one request in the `openai-completions` dialect over `transport` and decodes the
/// stream (the shared [`super::StreamingClient`] calls it).
pub(crate) async fn send(
    transport: &Transport,
    request: &ModelRequest,
) -> Result<ModelResponse, ModelError> {
    let legacy = transport.quirks.legacy_max_tokens();
    match send_once(transport, request, legacy).await {
        Err(err) if !legacy && refuses_completion_tokens(&err) => {
            // P10: remembered for the endpoint, so this costs one extra request per process.
            tracing::info!(
                base_url = %transport.config.base_url,
                "the endpoint refuses max_completion_tokens: asking with max_tokens"
            );
            transport.quirks.note_legacy_max_tokens();
            send_once(transport, request, true).await
        }
        other => other,
    }
}

async fn send_once(
    transport: &Transport,
    request: &ModelRequest,
    legacy_max_tokens: bool,
) -> Result<ModelResponse, ModelError> {
    let config = &transport.config;
    let body = body_for(config, request, legacy_max_tokens);
    let auth = config
        .api_key
        .as_ref()
        .map(|key| ("authorization", format!("Bearer {key}")));
    let decoder = OpenAiStream::new(config.prices, request.char_len());
    let outgoing = Outgoing {
        api: "openai-completions",
        path: "chat/completions",
        fixed: &[],
        auth,
        body: &body,
        output_bound: config.output_bound(request.max_tokens),
    };
    transport.send(outgoing, decoder).await
}

/// Whether a failed call is an endpoint's 400 refusing the `max_completion_tokens` field
/// (OpenAI's own shape: `{"error": {"message": "Unsupported parameter:
/// 'max_completion_tokens' …", "param": "max_completion_tokens", "code":
/// "unsupported_parameter"}}`; older servers say "Unrecognized request argument").
fn refuses_completion_tokens(err: &ModelError) -> bool {
    let message = match err {
        ModelError::Retryable { message, .. }
        | ModelError::Permanent { message }
        | ModelError::ContextOverflow { message, .. } => message,
    };
    message.starts_with("HTTP 400") && message.contains("max_completion_tokens")
}

/// The JSON body of one request (deterministic: same request, same bytes), with the output
/// bound in `max_completion_tokens` (P10).
#[cfg(test)]
pub fn request_body(config: &ProviderConfig, request: &ModelRequest) -> Value {
    body_for(config, request, false)
}

/// The JSON body with the output bound in `max_tokens` when `legacy_max_tokens`, else in
/// `max_completion_tokens`.
fn body_for(config: &ProviderConfig, request: &ModelRequest, legacy_max_tokens: bool) -> Value {
    let flavor = Flavor::of(config);
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model_id));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    body.insert("store".into(), json!(false));
    let bound = config.output_bound(request.max_tokens);
    let bound_field = if legacy_max_tokens {
        "max_tokens"
    } else {
        "max_completion_tokens"
    };
    body.insert(bound_field.into(), json!(bound));
    if config.info.reasoning {
        let effort = match request.thinking {
            ThinkingLevel::Off if flavor == Flavor::OpenAi => Some("minimal"),
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => Some("minimal"),
            ThinkingLevel::Low => Some("low"),
            ThinkingLevel::Medium => Some("medium"),
            ThinkingLevel::High | ThinkingLevel::Xhigh => Some("high"),
        };
        if let Some(effort) = effort {
            if flavor == Flavor::OpenRouter {
                body.insert("reasoning".into(), json!({ "effort": effort }));
            } else {
                body.insert("reasoning_effort".into(), json!(effort));
            }
        }
    }
    if !request.tools.is_empty() {
        body.insert("tools".into(), tools_json(&request.tools));
    }
    // Messages last: a request that extends the previous one repeats its bytes up to the
    // end of the previous message list (M5).
    body.insert(
        "messages".into(),
        Value::Array(messages_json(
            &request.system,
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
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect(),
    )
}

/// The wire message list: the system prompt, then one message per conversation message;
/// the first user message's content is two text parts, `reminder` and its own text, when
/// there is a reminder (P8). Each message's JSON depends only on that message (and the
/// reminder, fixed per context), so a conversation that extends another serialises to a
/// list that extends the other's (M5).
pub fn messages_json(system: &str, messages: &[ChatMessage], reminder: Option<&str>) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    out.push(json!({"role": "system", "content": system}));
    let mut reminder = reminder;
    for message in messages {
        match (message, reminder) {
            (ChatMessage::User { text }, Some(first)) => {
                reminder = None;
                let parts = [first, text].map(|t| json!({"type": "text", "text": t}));
                out.push(json!({"role": "user", "content": parts}));
            }
            _ => out.push(message_json(message)),
        }
    }
    out
}

fn message_json(message: &ChatMessage) -> Value {
    match message {
        ChatMessage::User { text } => json!({"role": "user", "content": text}),
        ChatMessage::ToolResult { call_id, text, .. } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": text})
        }
        ChatMessage::Assistant { parts } => {
            let mut text = String::new();
            let mut reasoning = Map::new();
            let mut calls = Vec::new();
            for part in parts {
                match part {
                    AssistantPart::Text { text: t } => text.push_str(t),
                    AssistantPart::Thinking { details, .. } => {
                        if let Some(Value::Object(fields)) = details {
                            for (k, v) in fields {
                                reasoning.insert(k.clone(), v.clone());
                            }
                        }
                    }
                    AssistantPart::ToolCall {
                        id,
                        name,
                        arguments,
                    } => {
                        let args = match arguments {
                            Value::String(raw) => raw.clone(),
                            other => other.to_string(),
                        };
                        calls.push(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": args},
                        }));
                    }
                }
            }
            let mut m = Map::new();
            m.insert("role".into(), json!("assistant"));
            let content = if text.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            };
            m.insert("content".into(), content);
            m.extend(reasoning);
            if !calls.is_empty() {
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(m)
        }
    }
}

/// A tool call being assembled from deltas.
#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u64>,
    id: String,
    name: String,
    args: String,
}

/// The state of one Chat Completions stream.
#[derive(Debug)]
pub struct OpenAiStream {
    prices: Prices,
    /// Characters of the request, for the usage estimate.
    sent_chars: usize,
    /// Reply bytes appended so far, every field counted (the reply cap).
    received: usize,
    text: String,
    /// `reasoning` / `reasoning_content` text, per field, in arrival order.
    reasoning_text: Map<String, Value>,
    /// `reasoning_details` items, fragments of one item merged.
    reasoning_details: Vec<Value>,
    calls: Vec<PartialCall>,
    finish: Option<String>,
    usage: Option<Value>,
    done: bool,
}

impl OpenAiStream {
    /// A fresh stream state; `prices` price the usage when the server reports no cost;
    /// `sent_chars` is the size of the request, for the estimate when it reports no usage.
    pub fn new(prices: Prices, sent_chars: usize) -> Self {
        Self {
            prices,
            sent_chars,
            received: 0,
            text: String::new(),
            reasoning_text: Map::new(),
            reasoning_details: Vec::new(),
            calls: Vec::new(),
            finish: None,
            usage: None,
            done: false,
        }
    }

    fn on_chunk(&mut self, chunk: &Value) -> Result<(), ModelError> {
        if let Some(err) = chunk.get("error").filter(|e| !e.is_null()) {
            let kind = err
                .get("code")
                .or_else(|| err.get("type"))
                .map(|c| match c {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .unwrap_or_default();
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            return Err(classify_stream_error(&kind, &message));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| reports_tokens(u)) {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            self.on_delta(delta);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            if reason == "error" {
                return Err(ModelError::Retryable {
                    usage: None,
                    message: "the provider ended the stream with finish_reason \"error\"".into(),
                    retry_after: None,
                });
            }
            self.finish = Some(reason.to_string());
        }
        Ok(())
    }

    fn on_delta(&mut self, delta: &Value) {
        if let Some(t) = delta.get("content").and_then(Value::as_str) {
            self.received += t.len();
            self.text.push_str(t);
        }
        for field in REASONING_TEXT_FIELDS {
            if let Some(t) = delta.get(field).and_then(Value::as_str) {
                if t.is_empty() {
                    continue;
                }
                self.received += t.len();
                let slot = self
                    .reasoning_text
                    .entry(field.to_string())
                    .or_insert_with(|| Value::String(String::new()));
                if let Value::String(s) = slot {
                    s.push_str(t);
                }
            }
        }
        if let Some(items) = delta.get("reasoning_details").and_then(Value::as_array) {
            for item in items {
                self.merge_detail(item);
            }
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.merge_call(call);
            }
        }
    }

    fn merge_detail(&mut self, item: &Value) {
        let Value::Object(new) = item else {
            return;
        };
        self.received += new
            .values()
            .filter_map(Value::as_str)
            .map(str::len)
            .sum::<usize>();
        let same_slot = |old: &Value| {
            new.get("index").is_some()
                && old.get("index") == new.get("index")
                && old.get("type") == new.get("type")
        };
        match self.reasoning_details.last_mut() {
            Some(Value::Object(old)) if same_slot(&Value::Object(old.clone())) => {
                for (k, v) in new {
                    match (old.get_mut(k), v) {
                        (Some(Value::String(acc)), Value::String(more))
                            if matches!(k.as_str(), "text" | "summary" | "data" | "signature") =>
                        {
                            acc.push_str(more)
                        }
                        (Some(slot), v) if !v.is_null() => *slot = v.clone(),
                        (None, v) => {
                            old.insert(k.clone(), v.clone());
                        }
                        _ => {}
                    }
                }
            }
            _ => self.reasoning_details.push(item.clone()),
        }
    }

    fn merge_call(&mut self, delta: &Value) {
        let index = delta.get("index").and_then(Value::as_u64);
        let id = delta
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let function = delta.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
        let args = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str);
        // Find the call this delta continues: by id when it carries one (some servers reuse
        // index 0 for every call), else the latest call with the same index.
        let slot = match id {
            Some(id) => match self.calls.iter().position(|c| c.id == id) {
                Some(i) => Some(i),
                None => self
                    .calls
                    .iter()
                    .rposition(|c| c.index == index && c.id.is_empty()),
            },
            None => self
                .calls
                .iter()
                .rposition(|c| c.index == index)
                .or(if index.is_none() {
                    self.calls.len().checked_sub(1)
                } else {
                    None
                }),
        };
        let slot = match slot {
            Some(i) => i,
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if let Some(id) = id {
            call.id = id.to_string();
        }
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            if call.name.is_empty() {
                call.name = n.to_string();
            } else if call.name != n {
                call.name.push_str(n);
            }
        }
        if let Some(a) = args {
            call.args.push_str(a);
        }
        self.received += name.map_or(0, str::len) + args.map_or(0, str::len);
    }

    /// Characters of the reply as assembled (reasoning counted once), for the estimate.
    fn received_chars(&self) -> usize {
        let reasoning = self
            .reasoning_text
            .values()
            .filter_map(Value::as_str)
            .map(str::len)
            .max()
            .unwrap_or(0);
        let details: usize = self
            .reasoning_details
            .iter()
            .filter_map(|d| d.get("text").or_else(|| d.get("summary")))
            .filter_map(Value::as_str)
            .map(str::len)
            .sum();
        let calls: usize = self.calls.iter().map(|c| c.name.len() + c.args.len()).sum();
        self.text.len() + reasoning.max(details) + calls
    }

    /// The usage the server reported, or the estimate when it reported none (G4).
    fn normalised_usage(&self) -> Usage {
        let Some(u) = &self.usage else {
            let estimate = Usage::estimate(self.sent_chars, self.received_chars());
            return priced(estimate, None, &self.prices);
        };
        let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
        let details = u.get("prompt_tokens_details");
        let prompt = n(u.get("prompt_tokens"));
        let cached = n(details.and_then(|d| d.get("cached_tokens")))
            .max(n(u.get("prompt_cache_hit_tokens")));
        let written = n(details.and_then(|d| d.get("cache_write_tokens")));
        let usage = Usage {
            estimated: false,
            input: prompt.saturating_sub(cached + written),
            output: n(u.get("completion_tokens")),
            cache_read: cached,
            cache_write: written,
            cost: 0.0,
        };
        priced(usage, u.get("cost").and_then(Value::as_f64), &self.prices)
    }

    fn thinking_part(&self) -> Option<AssistantPart> {
        if self.reasoning_text.is_empty() && self.reasoning_details.is_empty() {
            return None;
        }
        let mut text = self
            .reasoning_text
            .values()
            .find_map(|v| v.as_str().filter(|s| !s.is_empty()))
            .unwrap_or("")
            .to_string();
        if text.is_empty() {
            for d in &self.reasoning_details {
                if let Some(t) = d
                    .get("text")
                    .or_else(|| d.get("summary"))
                    .and_then(Value::as_str)
                {
                    text.push_str(t);
                }
            }
        }
        let mut details = self.reasoning_text.clone();
        if !self.reasoning_details.is_empty() {
            details.insert(
                "reasoning_details".into(),
                Value::Array(self.reasoning_details.clone()),
            );
        }
        Some(AssistantPart::Thinking {
            text,
            signature: None,
            redacted: None,
            details: Some(Value::Object(details)),
        })
    }
}

/// Whether a `usage` object reports any tokens (some servers send `null`, an empty object or
/// zeros when they count nothing; those are estimated instead, G4).
fn reports_tokens(usage: &Value) -> bool {
    ["prompt_tokens", "completion_tokens", "total_tokens"]
        .iter()
        .any(|k| usage.get(*k).and_then(Value::as_u64).is_some_and(|n| n > 0))
}

/// Parses assembled tool-call arguments: `{}` for none, the object when it parses, else the
/// raw text (the tool answers it as invalid input, T7).
fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

impl StreamDecoder for OpenAiStream {
    fn on_event(&mut self, event: SseEvent) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| ModelError::Retryable {
            usage: None,
            message: format!("malformed stream chunk: {e}"),
            retry_after: None,
        })?;
        self.on_chunk(&chunk)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn reply_bytes(&self) -> usize {
        self.received
    }

    fn partial_usage(&self) -> Usage {
        self.normalised_usage()
    }

    fn cut(mut self, cap: usize) -> ModelResponse {
        let usage = self.normalised_usage();
        cut_text(&mut self.text, cap);
        let parts = if self.text.is_empty() {
            Vec::new()
        } else {
            vec![AssistantPart::Text { text: self.text }]
        };
        ModelResponse {
            parts,
            usage,
            stop: StopReason::MaxTokens,
        }
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        let truncated = |what: &str| ModelError::Retryable {
            usage: Some(self.normalised_usage()),
            message: format!("the stream ended {what}"),
            retry_after: None,
        };
        if !self.done {
            return Err(truncated("before data: [DONE]"));
        }
        let Some(reason) = self.finish.clone() else {
            return Err(truncated("before the model finished"));
        };
        let usage = self.normalised_usage();
        // G5 reactive, as in the Anthropic dialect: a proxy passing Anthropic's stop reason
        // through says the context did not fit; the call's usage still counts (G4).
        if reason == "model_context_window_exceeded" {
            return Err(ModelError::ContextOverflow {
                usage: Some(usage),
                message: "finish_reason model_context_window_exceeded".into(),
            });
        }
        let mut parts = Vec::new();
        parts.extend(self.thinking_part());
        if !self.text.is_empty() {
            parts.push(AssistantPart::Text {
                text: self.text.clone(),
            });
        }
        let mut stop = match reason.as_str() {
            "stop" | "end_turn" => StopReason::EndTurn,
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "length" => StopReason::MaxTokens,
            "content_filter" => StopReason::Refusal,
            other => StopReason::Other(other.to_string()),
        };
        if stop == StopReason::MaxTokens {
            if !self.calls.is_empty() {
                tracing::debug!(
                    calls = self.calls.len(),
                    "output bound hit: partial tool calls discarded"
                );
            }
        } else {
            for (n, call) in self.calls.into_iter().enumerate() {
                if call.name.is_empty() {
                    continue;
                }
                let id = if call.id.is_empty() {
                    format!("call_{n}")
                } else {
                    call.id
                };
                parts.push(AssistantPart::ToolCall {
                    id,
                    name: call.name,
                    arguments: parse_arguments(&call.args),
                });
            }
            let has_calls = parts
                .iter()
                .any(|p| matches!(p, AssistantPart::ToolCall { .. }));
            if has_calls && stop == StopReason::EndTurn {
                stop = StopReason::ToolUse;
            }
        }
        Ok(ModelResponse { parts, usage, stop })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p8_the_reminder_is_a_text_part_of_its_own_in_the_first_user_message() {
        let msgs = [
            ChatMessage::User { text: "u1".into() },
            ChatMessage::User { text: "u2".into() },
        ];
        let out = messages_json("s", &msgs, Some("<system-reminder>\nr\n</system-reminder>"));
        assert_eq!(
            out[1]["content"],
            json!([
                {"type": "text", "text": "<system-reminder>\nr\n</system-reminder>"},
                {"type": "text", "text": "u1"}
            ])
        );
        assert_eq!(
            out[2]["content"],
            json!("u2"),
            "the first user message only"
        );
        assert_eq!(messages_json("s", &msgs, None)[1]["content"], json!("u1"));
    }

    fn stream(chunks: &[Value]) -> Result<OpenAiStream, ModelError> {
        let mut s = OpenAiStream::new(Prices::default(), 400);
        for c in chunks {
            s.on_event(SseEvent {
                event: None,
                data: c.to_string(),
            })?;
        }
        Ok(s)
    }

    fn done(s: &mut OpenAiStream) {
        s.on_event(SseEvent {
            event: None,
            data: "[DONE]".into(),
        })
        .unwrap();
    }

    /// The chunks, then `[DONE]`.
    fn feed(chunks: &[Value]) -> Result<ModelResponse, ModelError> {
        let mut s = stream(chunks)?;
        done(&mut s);
        s.finish()
    }

    fn delta(d: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": d, "finish_reason": null}]})
    }

    fn finish(reason: &str) -> Value {
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    }

    #[test]
    fn m2_tool_calls_reusing_index_zero_are_split_by_id() {
        let r = feed(&[
            delta(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "read", "arguments": "{\"path\":"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"x\"}"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "find", "arguments": "{}"}}]})),
            finish("tool_calls"),
        ])
        .unwrap();
        let calls: Vec<_> = r.tool_calls().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0], ("a", "read", &json!({"path": "x"})));
        assert_eq!(calls[1], ("b", "find", &json!({})));
    }

    #[test]
    fn m2_stop_with_tool_calls_is_tool_use_and_missing_ids_are_numbered() {
        let r = feed(&[
            delta(json!({"tool_calls": [{"index": 0, "function": {"name": "read", "arguments": "{}"}}]})),
            finish("stop"),
        ])
        .unwrap();
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(r.tool_calls().next().unwrap().0, "call_0");
    }

    #[test]
    fn m2_reasoning_details_fragments_merge_by_index() {
        let r = feed(&[
            delta(json!({"reasoning": "Let ", "reasoning_details": [{"type": "reasoning.text", "index": 0, "text": "Let "}]})),
            delta(json!({"reasoning": "me", "reasoning_details": [{"type": "reasoning.text", "index": 0, "text": "me", "signature": "sig"}]})),
            delta(json!({"content": "ok"})),
            finish("stop"),
        ])
        .unwrap();
        let AssistantPart::Thinking { text, details, .. } = &r.parts[0] else {
            panic!("{:?}", r.parts)
        };
        assert_eq!(text, "Let me");
        assert_eq!(
            details.as_ref().unwrap(),
            &json!({"reasoning": "Let me", "reasoning_details": [{"type": "reasoning.text", "index": 0, "text": "Let me", "signature": "sig"}]})
        );
        let back = message_json(&ChatMessage::Assistant { parts: r.parts });
        assert_eq!(back["reasoning"], json!("Let me"));
        assert_eq!(back["reasoning_details"][0]["signature"], json!("sig"));
        assert_eq!(back["content"], json!("ok"));
    }

    #[test]
    fn g4_usage_excludes_cached_tokens_from_input() {
        let r = feed(&[
            delta(json!({"content": "hi"})),
            finish("stop"),
            json!({"choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 50,
                "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 100},
                "completion_tokens_details": {"reasoning_tokens": 20}}}),
        ])
        .unwrap();
        assert_eq!(
            r.usage,
            Usage {
                estimated: false,
                input: 300,
                output: 50,
                cache_read: 600,
                cache_write: 100,
                cost: 0.0
            }
        );
    }

    #[test]
    fn m4_stream_without_finish_is_retryable() {
        assert!(matches!(
            feed(&[delta(json!({"content": "par"}))]),
            Err(ModelError::Retryable { .. })
        ));
    }

    #[test]
    fn f1_finish_reason_without_done_is_a_failure_with_estimated_usage() {
        let s = stream(&[delta(json!({"content": "x".repeat(40)})), finish("stop")]).unwrap();
        match s.finish() {
            Err(ModelError::Retryable {
                usage: Some(u),
                message,
                ..
            }) => {
                assert!(message.contains("[DONE]"), "{message}");
                assert_eq!((u.input, u.output, u.estimated), (100, 10, true));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn g4_no_usage_or_zero_usage_is_estimated_never_zero() {
        let text = delta(
            json!({"content": "y".repeat(80), "reasoning": "z".repeat(20),
            "reasoning_content": "z".repeat(20)}),
        );
        for tail in [
            vec![],
            vec![json!({"choices": [], "usage": null})],
            vec![
                json!({"choices": [], "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}),
            ],
        ] {
            let mut chunks = vec![text.clone(), finish("stop")];
            chunks.extend(tail);
            let r = feed(&chunks).unwrap();
            // 400 characters sent, 80 + 20 received (reasoning counted once).
            assert_eq!(
                (r.usage.input, r.usage.output, r.usage.estimated),
                (100, 25, true)
            );
        }
    }

    #[test]
    fn m2_cut_keeps_at_most_the_cap_and_no_tool_calls() {
        let s = stream(&[
            delta(json!({"content": "\u{e9}".repeat(100)})),
            delta(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "read", "arguments": "{}"}}]})),
        ])
        .unwrap();
        assert_eq!(s.reply_bytes(), 200 + 4 + 2);
        let r = s.cut(51);
        assert_eq!(r.stop, StopReason::MaxTokens);
        assert_eq!(
            r.parts,
            vec![AssistantPart::Text {
                text: "\u{e9}".repeat(25)
            }]
        );
        assert!(r.usage.estimated);
    }

    #[test]
    fn m2_openai_proper_uses_max_completion_tokens_and_effort() {
        let mut cfg = ProviderConfig::new(
            super::super::ApiKind::OpenAiCompletions,
            "openai",
            "http://x",
            "gpt-5",
        );
        cfg.info.reasoning = true;
        cfg.info.max_output = 128_000;
        let req = ModelRequest {
            system: "s".into(),
            messages: vec![],
            tools: vec![],
            max_tokens: 100_000,
            thinking: ThinkingLevel::Xhigh,
            reminder: None,
        };
        let b = request_body(&cfg, &req);
        assert_eq!(b["max_completion_tokens"], json!(4096));
        assert_eq!(b["store"], json!(false));
        assert_eq!(b["reasoning_effort"], json!("high"));
        assert!(b.get("max_tokens").is_none());
        cfg.provider = "openrouter".into();
        let b = request_body(&cfg, &req);
        assert_eq!(
            b["max_completion_tokens"],
            json!(4096),
            "P10: every endpoint"
        );
        assert_eq!(b["reasoning"], json!({"effort": "high"}));
        let b = body_for(&cfg, &req, true);
        assert_eq!(b["max_tokens"], json!(4096));
        assert!(b.get("max_completion_tokens").is_none());
        cfg.provider = "llamacpp".into();
        cfg.info.reasoning = false;
        let b = request_body(&cfg, &req);
        assert!(b.get("reasoning_effort").is_none() && b.get("reasoning").is_none());
    }
}
