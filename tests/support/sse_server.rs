//! The in-process SSE server for integration tests: `#[path = "support/sse_server.rs"] mod
//! sse_server;`. It lives in the library (`advisor::providers::testing`) so benchmarks and
//! end-to-end replays can use it too; this file only re-exports it with a few helpers.

#![allow(dead_code, unused_imports)]

pub use advisor::providers::testing::{
    sse_event, BodyPart, RecordedRequest, ScriptedResponse, SseServer,
};

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
