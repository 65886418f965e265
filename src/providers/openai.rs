//! The `openai-completions` dialect: OpenAI Chat Completions with SSE streaming, spoken by
//! OpenAI, OpenRouter and OpenAI-compatible local servers (llama.cpp, vLLM, Ollama).
//!
//! Request choices:
//! - `stream: true` with `stream_options.include_usage` so the last chunk carries usage;
//! - `store: false` asks the provider not to keep the exchange, and the output bound goes in
//!   the field the endpoint honours (P10): `max_completion_tokens` on OpenAI's own endpoint
//!   (its reasoning models refuse `max_tokens`), `max_tokens` everywhere else (llama.cpp's
//!   and llama-cpp-python's servers, among others, ignore `max_completion_tokens`). What an
//!   endpoint shows is remembered for it ([`super::EndpointQuirks`], shared by the sessions
//!   of a process) and later requests send the other field: a 400 refusing the field sent is
//!   asked again at once with the other; a reply longer than the bound (the reported
//!   `completion_tokens`, or more streamed pieces than the bound allows, where the stream is
//!   also ended) proves the endpoint ignored the field;
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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::catalog::Prices;
use super::error::classify_stream_error;
use super::http::{cut_text, BoundField, Outgoing, StreamDecoder, Transport};
use super::sse::SseEvent;
use super::{priced, ProviderConfig};
use crate::model::{
    AssistantPart, ChatMessage, ModelError, ModelRequest, ModelResponse, StopReason, ThinkingLevel,
    ToolSchema, Usage,
};

/// Streamed pieces allowed past the output bound before a reply counts as ignoring it: a
/// piece (a chunk carrying reply text) is one token on every server seen, the slack covers
/// one that splits a token.
const OVERRUN_SLACK_PIECES: u64 = 16;

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

    /// The output-bound field sent until the endpoint shows otherwise (P10).
    fn bound_field(self) -> BoundField {
        match self {
            Self::OpenAi => BoundField::MaxCompletionTokens,
            Self::OpenRouter | Self::Generic => BoundField::MaxTokens,
        }
    }
}

/// Sends one request in the `openai-completions` dialect over `transport` and decodes the
/// stream (the shared [`super::StreamingClient`] calls it).
pub(crate) async fn send(
    transport: &Transport,
    request: &ModelRequest,
) -> Result<ModelResponse, ModelError> {
    let preferred = Flavor::of(&transport.config).bound_field();
    let field = transport.quirks.bound_field(preferred);
    let result = match send_once(transport, request, field).await {
        Err(err) if refuses_field(&err, field) => {
            // P10: remembered for the endpoint, so this costs one extra request per process.
            transport.quirks.note_refused(field);
            let next = transport.quirks.bound_field(preferred);
            if next == field {
                return Err(err);
            }
            tracing::info!(
                base_url = %transport.config.base_url,
                refused = field.name(),
                "the endpoint refuses the output-bound field: asking with {}",
                next.name()
            );
            send_once(transport, request, next)
                .await
                .map(|sent| (sent, next))
        }
        other => other.map(|sent| (sent, field)),
    };
    let (Sent { response, overran }, field) = result?;
    if overran {
        // P10: the reply ran past the bound, so the endpoint ignores this field.
        transport.quirks.note_ignored(field);
        tracing::warn!(
            base_url = %transport.config.base_url,
            ignored = field.name(),
            next = transport.quirks.bound_field(preferred).name(),
            "the endpoint ignored the output bound: later requests send the other field"
        );
    }
    Ok(response)
}

/// An answer and whether its stream proved the endpoint ignored the output bound.
struct Sent {
    response: ModelResponse,
    overran: bool,
}

async fn send_once(
    transport: &Transport,
    request: &ModelRequest,
    field: BoundField,
) -> Result<Sent, ModelError> {
    let config = &transport.config;
    let body = body_for(config, request, field);
    let auth = config
        .api_key
        .as_ref()
        .map(|key| ("authorization", format!("Bearer {key}")));
    let bound = config.output_bound(request.max_tokens);
    let decoder = OpenAiStream::new(config.prices, request.char_len()).watching(bound);
    let overran = decoder.overran_flag();
    let outgoing = Outgoing {
        api: "openai-completions",
        path: "chat/completions",
        fixed: &[],
        auth,
        body: &body,
        output_bound: bound,
    };
    let response = transport.send(outgoing, decoder).await?;
    Ok(Sent {
        response,
        overran: overran.load(Ordering::Relaxed),
    })
}

/// Words with which servers refuse a request field they do not take (OpenAI: "Unsupported
/// parameter", older servers: "Unrecognized request argument", pydantic: "Extra inputs are
/// not permitted").
const REFUSAL_WORDS: [&str; 6] = [
    "unsupported",
    "not supported",
    "unrecognized",
    "unknown",
    "not permitted",
    "extra",
];

/// Whether a failed call is an endpoint's 400 (or 422) refusing `field` (OpenAI's own shape:
/// `{"error": {"message": "Unsupported parameter: 'max_completion_tokens' …", "param":
/// "max_completion_tokens", "code": "unsupported_parameter"}}`). A 400 that names the field
/// for its value (too large for the context) is not a refusal of the field.
fn refuses_field(err: &ModelError, field: BoundField) -> bool {
    let message = match err {
        ModelError::Retryable { message, .. }
        | ModelError::Permanent { message }
        | ModelError::ContextOverflow { message, .. } => message,
    };
    let lower = message.to_ascii_lowercase();
    (lower.starts_with("http 400") || lower.starts_with("http 422"))
        && names_field(&lower, field.name())
        && REFUSAL_WORDS.iter().any(|w| lower.contains(w))
}

/// Whether `text` names `field` as a whole word (`max_tokens` is not named by
/// `max_completion_tokens`, nor by `max_tokens_per_call`).
fn names_field(text: &str, field: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(field).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + field.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// The JSON body of one request (deterministic: same request, same bytes), with the output
/// bound in the field the endpoint's flavor starts with (P10).
#[cfg(test)]
pub fn request_body(config: &ProviderConfig, request: &ModelRequest) -> Value {
    body_for(config, request, Flavor::of(config).bound_field())
}

/// The JSON body with the output bound in `field`.
fn body_for(config: &ProviderConfig, request: &ModelRequest, field: BoundField) -> Value {
    let flavor = Flavor::of(config);
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model_id));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    body.insert("store".into(), json!(false));
    let bound = config.output_bound(request.max_tokens);
    body.insert(field.name().into(), json!(bound));
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
    /// The output bound the request asked for, when watched (P10).
    bound: Option<u32>,
    /// Chunks that carried reply text, reasoning or tool-call fragments.
    pieces: u64,
    /// Set when the stream proved the endpoint ignored the bound: more pieces than the bound
    /// allows (the stream then ends), or a reported `completion_tokens` above it.
    overran: Arc<AtomicBool>,
    /// Whether the stream was ended for having more pieces than the bound allows.
    cut_short: bool,
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
            bound: None,
            pieces: 0,
            overran: Arc::default(),
            cut_short: false,
        }
    }

    /// Watches the reply against the output bound the request asked for (P10): a stream with
    /// more pieces than `bound` (plus [`OVERRUN_SLACK_PIECES`]) ends there as an output-limit
    /// stop, as if the server had honoured the bound.
    pub fn watching(mut self, bound: u32) -> Self {
        self.bound = Some(bound);
        self
    }

    /// The flag set when the stream proves the endpoint ignored the bound; readable after
    /// the stream is consumed.
    fn overran_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.overran)
    }

    /// Checks the pieces so far and the reported usage against the bound.
    fn check_bound(&mut self) {
        let Some(bound) = self.bound.map(u64::from) else {
            return;
        };
        let reported = self
            .usage
            .as_ref()
            .and_then(|u| u.get("completion_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if self.pieces > bound + OVERRUN_SLACK_PIECES {
            self.cut_short = true;
        }
        if self.cut_short || reported > bound {
            self.overran.store(true, Ordering::Relaxed);
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
            let before = self.received;
            self.on_delta(delta);
            if self.received > before {
                self.pieces += 1;
            }
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
        self.on_chunk(&chunk)?;
        self.check_bound();
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done || self.cut_short
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
        if self.cut_short {
            // P10: the endpoint ignored the bound; what an endpoint honouring it would have
            // sent (about `bound` tokens, an output-limit stop) is kept, the rest never read.
            tracing::debug!(pieces = self.pieces, "reply passed its output bound: ended");
            let usage = self.normalised_usage();
            let mut parts = Vec::new();
            parts.extend(self.thinking_part());
            if !self.text.is_empty() {
                parts.push(AssistantPart::Text { text: self.text });
            }
            return Ok(ModelResponse {
                parts,
                usage,
                stop: StopReason::MaxTokens,
            });
        }
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
    fn p10_a_refusal_names_the_field_as_a_word_with_a_refusal_word() {
        let err = |m: &str| ModelError::Permanent { message: m.into() };
        let completion = BoundField::MaxCompletionTokens;
        let legacy = BoundField::MaxTokens;
        let openai = err("HTTP 400: Unsupported parameter: 'max_completion_tokens' is not supported with this model. Use 'max_tokens' instead.");
        assert!(refuses_field(&openai, completion));
        let pydantic =
            err("HTTP 422: body.max_tokens: Extra inputs are not permitted (extra_forbidden)");
        assert!(refuses_field(&pydantic, legacy));
        let value = err("HTTP 400: 'max_tokens' is too large: 4096");
        assert!(!refuses_field(&value, legacy));
        let server = err("HTTP 500: unknown parameter max_tokens");
        assert!(!refuses_field(&server, legacy));
        assert!(!names_field("max_completion_tokens", "max_tokens"));
        assert!(!names_field("max_tokens_per_call", "max_tokens"));
        assert!(names_field("'max_tokens'", "max_tokens"));
    }

    #[test]
    fn p10_more_pieces_than_the_bound_end_the_stream_as_a_length_stop() {
        let mut s = OpenAiStream::new(Prices::default(), 400).watching(4);
        let flag = s.overran_flag();
        let mut fed = 0;
        while !s.is_done() && fed < 100 {
            s.on_event(SseEvent {
                event: None,
                data: delta(json!({"content": "x"})).to_string(),
            })
            .unwrap();
            fed += 1;
        }
        assert_eq!(fed, 4 + OVERRUN_SLACK_PIECES + 1);
        assert!(flag.load(Ordering::Relaxed));
        let r = s.finish().unwrap();
        assert_eq!(r.stop, StopReason::MaxTokens);
        assert_eq!(
            r.parts,
            vec![AssistantPart::Text {
                text: "x".repeat(fed as usize)
            }]
        );
    }

    #[test]
    fn p10_a_reply_within_the_bound_is_not_flagged() {
        let mut s = OpenAiStream::new(Prices::default(), 400).watching(8);
        let flag = s.overran_flag();
        for c in [
            delta(json!({"content": "ok"})),
            finish("stop"),
            json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 8}}),
        ] {
            s.on_event(SseEvent {
                event: None,
                data: c.to_string(),
            })
            .unwrap();
        }
        done(&mut s);
        assert_eq!(s.finish().unwrap().stop, StopReason::EndTurn);
        assert!(!flag.load(Ordering::Relaxed));
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
            b["max_tokens"],
            json!(4096),
            "P10: OpenRouter takes max_tokens"
        );
        assert!(b.get("max_completion_tokens").is_none());
        assert_eq!(b["reasoning"], json!({"effort": "high"}));
        let b = body_for(&cfg, &req, BoundField::MaxCompletionTokens);
        assert_eq!(b["max_completion_tokens"], json!(4096));
        assert!(b.get("max_tokens").is_none());
        cfg.provider = "llamacpp".into();
        cfg.info.reasoning = false;
        let b = request_body(&cfg, &req);
        assert!(b.get("reasoning_effort").is_none() && b.get("reasoning").is_none());
    }
}
