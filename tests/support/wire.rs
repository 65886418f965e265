//! Answers in either dialect's wire format, piece by piece, for tests that break a stream at
//! a chosen point (the limits of M4, G4 and G5): the head of an answer, text deltas, a tool
//! call, and the end of the answer with or without usage.

use std::time::Duration;

use std::sync::Arc;

use advisor::model::ModelClient;
use advisor::providers::{build_client, ApiKind, Catalog, ModelSpec};
use serde_json::{json, Value};

use super::sse_server::{sse_event, ScriptedResponse, SseServer};

/// A client of the catalog model `role` speaking `api`, pointed at `server`, with timeouts
/// long enough that virtual time never trips them.
pub fn client(server: &SseServer, role: &str, api: ApiKind) -> Arc<dyn ModelClient> {
    let spec = ModelSpec {
        role: Some(role.into()),
        base_url: Some(server.base_url()),
        api: Some(api),
        connect_timeout: Some(Duration::from_secs(3600)),
        idle_timeout: Some(Duration::from_secs(3600)),
        ..ModelSpec::default()
    };
    let catalog = Catalog::builtin().expect("the built-in catalog");
    build_client(&spec, &catalog, &|_| None).expect("a client for the test server")
}

/// The two wire dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `openai-completions`.
    OpenAi,
    /// `anthropic-messages`.
    Anthropic,
}

/// Both dialects, for tests that run once per dialect.
pub const DIALECTS: [Dialect; 2] = [Dialect::OpenAi, Dialect::Anthropic];

/// Input tokens the answers built here report.
pub const REPORTED_INPUT: u64 = 150;
/// Output tokens the answers built here report.
pub const REPORTED_OUTPUT: u64 = 12;

impl Dialect {
    /// A catalog model of this dialect (same prices in both).
    pub fn role(self) -> &'static str {
        match self {
            Dialect::OpenAi => "openrouter/anthropic/claude-sonnet-4.5",
            Dialect::Anthropic => "anthropic/claude-sonnet-4-5",
        }
    }

    /// The dialect's API kind.
    pub fn api(self) -> ApiKind {
        match self {
            Dialect::OpenAi => ApiKind::OpenAiCompletions,
            Dialect::Anthropic => ApiKind::AnthropicMessages,
        }
    }

    /// A spec for this dialect pointed at `server`, with the given idle timeout and total
    /// limit.
    pub fn spec(self, server: &SseServer, idle: Duration, total: Duration) -> ModelSpec {
        ModelSpec {
            role: Some(self.role().into()),
            base_url: Some(server.base_url()),
            api: Some(self.api()),
            idle_timeout: Some(idle),
            request_timeout: Some(total),
            ..ModelSpec::default()
        }
    }

    fn named(kind: &str, mut data: Value) -> String {
        data["type"] = json!(kind);
        sse_event(Some(kind), &data.to_string())
    }

    fn chunk(delta: Value, finish: Option<&str>) -> String {
        sse_event(
            None,
            &json!({"id": "c1", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
        )
    }

    /// The start of an answer whose first block is text. Anthropic's `message_start`
    /// reports [`REPORTED_INPUT`] when `usage` is set.
    pub fn head(self, usage: bool) -> String {
        match self {
            Dialect::OpenAi => Self::chunk(json!({"role": "assistant", "content": ""}), None),
            Dialect::Anthropic => {
                let mut message = json!({"id": "msg_1", "type": "message", "role": "assistant",
                    "content": [], "model": "claude-sonnet-4-5", "stop_reason": null});
                if usage {
                    message["usage"] = json!({"input_tokens": REPORTED_INPUT,
                        "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
                        "output_tokens": 1});
                }
                [
                    Self::named("message_start", json!({ "message": message })),
                    Self::named(
                        "content_block_start",
                        json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
                    ),
                ]
                .concat()
            }
        }
    }

    /// One event adding `text` to the answer's text.
    pub fn text(self, text: &str) -> String {
        match self {
            Dialect::OpenAi => Self::chunk(json!({ "content": text }), None),
            Dialect::Anthropic => Self::named(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "text_delta", "text": text}}),
            ),
        }
    }

    /// The bytes that open a text event whose text never ends (no closing quote, no
    /// newline): what follows is all taken as text.
    pub fn open_text_line(self) -> String {
        match self {
            Dialect::OpenAi => {
                r#"data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":""#
                    .to_string()
            }
            Dialect::Anthropic => {
                r#"event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""#
                    .to_string()
            }
        }
    }

    /// A complete `advise` tool call with `arguments`, as block 1 (Anthropic) or call 0
    /// (OpenAI), closing the text block first on Anthropic.
    pub fn advise(self, id: &str, arguments: &Value) -> String {
        self.tool_call(id, "advise", arguments)
    }

    /// A complete call of tool `name` with `arguments`, placed as [`Dialect::advise`]'s.
    pub fn tool_call(self, id: &str, name: &str, arguments: &Value) -> String {
        let args = arguments.to_string();
        match self {
            Dialect::OpenAi => Self::chunk(
                json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                    "function": {"name": name, "arguments": args}}]}),
                None,
            ),
            Dialect::Anthropic => [
                Self::named("content_block_stop", json!({"index": 0})),
                Self::named(
                    "content_block_start",
                    json!({"index": 1, "content_block": {"type": "tool_use", "id": id,
                        "name": name, "input": {}}}),
                ),
                Self::named(
                    "content_block_delta",
                    json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": args}}),
                ),
                Self::named("content_block_stop", json!({"index": 1})),
            ]
            .concat(),
        }
    }

    /// The model's stop: OpenAI's `finish_reason` chunk, Anthropic's `message_delta`
    /// (closing the text block when `close_text`). `tools` picks the tool-use reason.
    pub fn stop(self, tools: bool, close_text: bool) -> String {
        match self {
            Dialect::OpenAi => {
                Self::chunk(json!({}), Some(if tools { "tool_calls" } else { "stop" }))
            }
            Dialect::Anthropic => {
                let mut out = String::new();
                if close_text {
                    out.push_str(&Self::named("content_block_stop", json!({"index": 0})));
                }
                out.push_str(&Self::named(
                    "message_delta",
                    json!({"delta": {"stop_reason": if tools { "tool_use" } else { "end_turn" },
                        "stop_sequence": null}, "usage": {"output_tokens": REPORTED_OUTPUT}}),
                ));
                out
            }
        }
    }

    /// What comes after the stop: OpenAI's usage chunk (when `usage`) and `[DONE]`;
    /// Anthropic's `message_stop`.
    pub fn end(self, usage: bool) -> String {
        match self {
            Dialect::OpenAi => {
                let mut out = String::new();
                if usage {
                    out.push_str(&sse_event(
                        None,
                        &json!({"id": "c1", "object": "chat.completion.chunk", "choices": [],
                            "usage": {"prompt_tokens": REPORTED_INPUT,
                                "completion_tokens": REPORTED_OUTPUT,
                                "total_tokens": REPORTED_INPUT + REPORTED_OUTPUT}})
                        .to_string(),
                    ));
                }
                out.push_str("data: [DONE]\n\n");
                out
            }
            Dialect::Anthropic => Self::named("message_stop", json!({})),
        }
    }

    /// A whole text answer with reported usage.
    pub fn answer(self, text: &str) -> String {
        [
            self.head(true),
            self.text(text),
            self.stop(false, true),
            self.end(true),
        ]
        .concat()
    }

    /// A whole answer calling `advise` with reported usage.
    pub fn advise_answer(self, id: &str, arguments: &Value) -> String {
        self.tool_answer(id, "advise", arguments)
    }

    /// A whole answer calling tool `name` with reported usage.
    pub fn tool_answer(self, id: &str, name: &str, arguments: &Value) -> String {
        [
            self.head(true),
            self.tool_call(id, name, arguments),
            self.stop(true, false),
            self.end(true),
        ]
        .concat()
    }

    /// The dialect's `429 Too Many Requests` answer (without `Retry-After`).
    pub fn rate_limited(self) -> ScriptedResponse {
        let body = match self {
            Dialect::OpenAi => r#"{"error":{"message":"Rate limit exceeded","code":429}}"#,
            Dialect::Anthropic => {
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#
            }
        };
        ScriptedResponse::json(429, body)
    }
}
