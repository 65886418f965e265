//! The in-process SSE server for integration tests: `#[path = "support/sse_server.rs"] mod
//! sse_server;`. It lives in the library (`advisor::providers::testing`) so benchmarks and
//! end-to-end replays can use it too; this file only re-exports it with a few helpers.

#![allow(dead_code, unused_imports)]

use std::time::Duration;

use advisor::model::{ChatMessage, ModelRequest, ThinkingLevel, ToolSchema};
pub use advisor::providers::testing::{
    sse_event, BodyPart, RecordedRequest, Responder, ScriptedResponse, SseServer,
};
use advisor::providers::{resolve_config, Catalog, ModelSpec, ProviderConfig};
use serde_json::json;

/// Starts a server playing `responses` (panics if the loopback socket cannot be bound).
pub async fn start(responses: Vec<ScriptedResponse>) -> SseServer {
    SseServer::start(responses)
        .await
        .expect("bind 127.0.0.1:0 for the test server")
}

/// Splits `text` into pieces of `size` bytes (the last may be shorter).
pub fn fragments(text: &str, size: usize) -> Vec<String> {
    text.chars()
        .collect::<Vec<_>>()
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// The configuration of `role` pointed at `server`, with `key` found under `key_var` and a
/// 10 s idle timeout.
pub fn config_for(server: &SseServer, role: &str, key_var: &str, key: &str) -> ProviderConfig {
    let spec = ModelSpec {
        role: Some(role.into()),
        base_url: Some(server.base_url()),
        idle_timeout: Some(Duration::from_secs(10)),
        ..ModelSpec::default()
    };
    let lookup = |name: &str| (name == key_var).then(|| key.to_string());
    resolve_config(&spec, &Catalog::builtin().unwrap(), &lookup).unwrap()
}

/// A review request offering the `read` tool.
pub fn request(messages: Vec<ChatMessage>) -> ModelRequest {
    ModelRequest {
        system: "You review a coding agent.".into(),
        messages,
        tools: vec![ToolSchema {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_tokens: 4096,
        thinking: ThinkingLevel::Medium,
        reminder: None,
    }
}

/// A user message.
pub fn user(text: &str) -> ChatMessage {
    ChatMessage::User { text: text.into() }
}
