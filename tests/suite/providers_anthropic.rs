//! The `anthropic-messages` client against an in-process server streaming real SSE bytes
//! (M2, M4, M5, G4, G5, F1, F3).

use crate::support::sse_server;

use std::time::Duration;

use advisor::model::{
    AssistantPart, ChatMessage, ModelClient, ModelError, StopReason, ThinkingLevel, Usage,
};
use advisor::providers::{ProviderConfig, StreamingClient};
use serde_json::{json, Value};
use sse_server::{
    config_for, fragments, request, sse_event, start, user, ScriptedResponse, SseServer,
};

const KEY: &str = "sk-ant-test-key-9876543210";

fn config(server: &SseServer) -> ProviderConfig {
    config_for(
        server,
        "anthropic/claude-sonnet-4-5",
        "ANTHROPIC_API_KEY",
        KEY,
    )
}

fn client(server: &SseServer) -> StreamingClient {
    StreamingClient::new(config(server)).unwrap()
}

fn ev(kind: &str, data: Value) -> String {
    let mut data = data;
    data["type"] = json!(kind);
    sse_event(Some(kind), &data.to_string())
}

fn message_start(usage: Value) -> String {
    ev(
        "message_start",
        json!({"message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5", "stop_reason": null, "usage": usage}}),
    )
}

fn start_usage() -> Value {
    json!({"input_tokens": 120, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1})
}

fn block_start(index: u64, block: Value) -> String {
    ev(
        "content_block_start",
        json!({"index": index, "content_block": block}),
    )
}

fn delta(index: u64, d: Value) -> String {
    ev("content_block_delta", json!({"index": index, "delta": d}))
}

fn block_stop(index: u64) -> String {
    ev("content_block_stop", json!({"index": index}))
}

fn message_delta(stop: &str, output: u64) -> String {
    ev(
        "message_delta",
        json!({"delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}}),
    )
}

fn message_stop() -> String {
    ev("message_stop", json!({}))
}

fn ping() -> String {
    ev("ping", json!({}))
}

fn text_answer(text: &str) -> String {
    [
        message_start(start_usage()),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": text})),
        block_stop(0),
        message_delta("end_turn", 5),
        message_stop(),
    ]
    .concat()
}

#[tokio::test]
async fn m2_anthropic_text_only_answer() {
    let body = [
        message_start(start_usage()),
        ping(),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "Check the "})),
        ping(),
        delta(0, json!({"type": "text_delta", "text": "null case."})),
        block_stop(0),
        message_delta("end_turn", 8),
        message_stop(),
    ]
    .concat()
    .replace('\n', "\r\n");
    let server = start(vec![ScriptedResponse::sse_split(&body, 9)]).await;
    let r = client(&server)
        .complete(request(vec![user("### Session update\n\nhello")]))
        .await
        .unwrap();
    assert_eq!(
        r.parts,
        vec![AssistantPart::Text {
            text: "Check the null case.".into()
        }]
    );
    assert_eq!(r.stop, StopReason::EndTurn);
    assert_eq!((r.usage.input, r.usage.output), (120, 8));
    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(reqs[0].header("x-api-key"), Some(KEY));
    assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(reqs[0].header("authorization"), None);
    let b = reqs[0].json();
    assert_eq!(b["model"], "claude-sonnet-4-5");
    assert_eq!(b["max_tokens"], 4096);
    assert_eq!(b["stream"], true);
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 3072})
    );
    assert!(b.get("temperature").is_none());
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "You review a coding agent.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(
        b["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "### Session update\n\nhello", "cache_control": {"type": "ephemeral"}}]}])
    );
}

#[tokio::test]
async fn m2_anthropic_tool_call_arguments_in_many_fragments() {
    let args = r#"{"path": "src/parser.rs:10-40", "note": "café \"quoted\""}"#;
    let mut body = vec![
        message_start(start_usage()),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "Reading."})),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_01", "name": "read", "input": {}}),
        ),
        delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
    ];
    for piece in fragments(args, 4) {
        body.push(delta(
            1,
            json!({"type": "input_json_delta", "partial_json": piece}),
        ));
    }
    body.extend([block_stop(1), message_delta("tool_use", 40), message_stop()]);
    let server = start(vec![ScriptedResponse::sse_split(&body.concat(), 13)]).await;
    let r = client(&server)
        .complete(request(vec![user("go")]))
        .await
        .unwrap();
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(
        r.tool_calls().collect::<Vec<_>>(),
        vec![(
            "toolu_01",
            "read",
            &json!({"path": "src/parser.rs:10-40", "note": "café \"quoted\""})
        )]
    );
    assert_eq!(
        r.parts[0],
        AssistantPart::Text {
            text: "Reading.".into()
        }
    );
}

#[tokio::test]
async fn m2_anthropic_two_parallel_tool_calls() {
    let body = [
        message_start(start_usage()),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_a", "name": "read", "input": {}}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"path\":\"a.rs\"}"}),
        ),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_b", "name": "find", "input": {}}),
        ),
        block_stop(1),
        message_delta("tool_use", 30),
        message_stop(),
    ]
    .concat();
    let server = start(vec![ScriptedResponse::sse(&body)]).await;
    let r = client(&server)
        .complete(request(vec![user("go")]))
        .await
        .unwrap();
    assert_eq!(
        r.tool_calls().collect::<Vec<_>>(),
        vec![
            ("toolu_a", "read", &json!({"path": "a.rs"})),
            ("toolu_b", "find", &json!({})),
        ]
    );
}

#[tokio::test]
async fn m2_anthropic_thinking_blocks_are_sent_back_unchanged() {
    let body = [
        message_start(start_usage()),
        block_start(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        delta(
            0,
            json!({"type": "thinking_delta", "thinking": "The user "}),
        ),
        delta(0, json!({"type": "thinking_delta", "thinking": "asked."})),
        delta(
            0,
            json!({"type": "signature_delta", "signature": "EqQBCkYIARgCKkCsig=="}),
        ),
        block_stop(0),
        block_start(
            1,
            json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}),
        ),
        block_stop(1),
        block_start(
            2,
            json!({"type": "tool_use", "id": "toolu_r", "name": "read", "input": {}}),
        ),
        delta(
            2,
            json!({"type": "input_json_delta", "partial_json": "{\"path\":\"x\"}"}),
        ),
        block_stop(2),
        message_delta("tool_use", 50),
        message_stop(),
    ]
    .concat();
    let server = start(vec![
        ScriptedResponse::sse_split(&body, 6),
        ScriptedResponse::sse(&text_answer("ok")),
    ])
    .await;
    let c = client(&server);
    let first = c.complete(request(vec![user("u1")])).await.unwrap();
    assert_eq!(
        first.parts[0],
        AssistantPart::Thinking {
            text: "The user asked.".into(),
            signature: Some("EqQBCkYIARgCKkCsig==".into()),
            redacted: None,
            details: None
        }
    );
    c.complete(request(vec![
        user("u1"),
        ChatMessage::Assistant {
            parts: first.parts.clone(),
        },
        ChatMessage::ToolResult {
            call_id: "toolu_r".into(),
            name: "read".into(),
            text: "1|fn main() {}".into(),
            is_error: false,
        },
    ]))
    .await
    .unwrap();
    let sent = server.requests()[1].json();
    assert_eq!(
        sent["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The user asked.", "signature": "EqQBCkYIARgCKkCsig=="},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "tool_use", "id": "toolu_r", "name": "read", "input": {"path": "x"}}
        ]})
    );
    assert_eq!(
        sent["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_r", "content": "1|fn main() {}", "cache_control": {"type": "ephemeral"}}
        ]})
    );
}

#[tokio::test]
async fn g4_anthropic_usage_is_cumulative_and_priced_from_the_catalog() {
    let body = [
        message_start(
            json!({"input_tokens": 300, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 600, "output_tokens": 1}),
        ),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "x"})),
        block_stop(0),
        ev(
            "message_delta",
            json!({"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 20}}),
        ),
        ev(
            "message_delta",
            json!({"delta": {}, "usage": {"output_tokens": 50}}),
        ),
        message_stop(),
    ]
    .concat();
    let server = start(vec![ScriptedResponse::sse(&body)]).await;
    let r = client(&server)
        .complete(request(vec![user("u")]))
        .await
        .unwrap();
    // claude-sonnet-4-5 list prices: 3 / 15 / 0.30 / 3.75 per million.
    let cost = (300.0 * 3.0 + 50.0 * 15.0 + 600.0 * 0.3 + 100.0 * 3.75) / 1e6;
    assert_eq!(
        (
            r.usage.input,
            r.usage.output,
            r.usage.cache_read,
            r.usage.cache_write
        ),
        (300, 50, 600, 100)
    );
    assert!((r.usage.cost - cost).abs() < 1e-12, "{:?}", r.usage);
    assert_ne!(r.usage, Usage::default());
}

#[tokio::test]
async fn m4_anthropic_retry_after_is_parsed() {
    let server = start(vec![
        ScriptedResponse::json(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
        )
        .with_header("retry-after", "12"),
        ScriptedResponse::json(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
    ])
    .await;
    let c = client(&server);
    let e = c.complete(request(vec![user("u")])).await.unwrap_err();
    assert!(
        matches!(e, ModelError::Retryable { retry_after: Some(d), .. } if d == Duration::from_secs(12)),
        "{e:?}"
    );
    let e = c.complete(request(vec![user("u")])).await.unwrap_err();
    assert!(
        matches!(
            e,
            ModelError::Retryable {
                retry_after: None,
                ..
            }
        ),
        "{e:?}"
    );
}

#[tokio::test]
async fn m4_anthropic_500_then_success() {
    let server = start(vec![
        ScriptedResponse::json(
            500,
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
        ),
        ScriptedResponse::sse(&text_answer("fine")),
    ])
    .await;
    let c = client(&server);
    assert!(matches!(
        c.complete(request(vec![user("u")])).await.unwrap_err(),
        ModelError::Retryable { .. }
    ));
    let r = c.complete(request(vec![user("u")])).await.unwrap();
    assert_eq!(
        r.parts,
        vec![AssistantPart::Text {
            text: "fine".into()
        }]
    );
}

#[tokio::test]
async fn f3_anthropic_401_is_permanent() {
    let server = start(vec![ScriptedResponse::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )])
    .await;
    let e = client(&server)
        .complete(request(vec![user("u")]))
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::Permanent { .. }), "{e:?}");
    assert!(e.to_string().contains("invalid x-api-key"));
    assert!(!e.to_string().contains(KEY));
}

#[tokio::test]
async fn m4_anthropic_stream_cut_mid_body_is_retryable() {
    let parts = [
        message_start(start_usage()),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "half"})),
        block_stop(0),
        message_delta("end_turn", 5),
        message_stop(),
    ];
    let server = start(vec![ScriptedResponse::sse_chunks(
        parts.iter().map(|p| p.as_bytes().to_vec()),
    )
    .cut_after(3)])
    .await;
    let e = client(&server)
        .complete(request(vec![user("u")]))
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::Retryable { .. }), "{e:?}");
}

#[tokio::test]
async fn m4_anthropic_stream_without_message_stop_is_retryable() {
    let body = [
        message_start(start_usage()),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "half"})),
    ]
    .concat();
    let server = start(vec![ScriptedResponse::sse(&body)]).await;
    let e = client(&server)
        .complete(request(vec![user("u")]))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ModelError::Retryable { message, .. } if message.contains("message_stop")),
        "{e:?}"
    );
}

#[tokio::test]
async fn f1_anthropic_error_event_inside_200_stream() {
    let overloaded = [
        message_start(start_usage()),
        ev(
            "error",
            json!({"error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ]
    .concat();
    let too_long = ev(
        "error",
        json!({"error": {"type": "invalid_request_error", "message": "prompt is too long: 201000 tokens > 200000 maximum"}}),
    );
    let server = start(vec![
        ScriptedResponse::sse(&overloaded),
        ScriptedResponse::sse(&too_long),
    ])
    .await;
    let c = client(&server);
    let e = c.complete(request(vec![user("u")])).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Retryable { message, .. } if message.contains("Overloaded")),
        "{e:?}"
    );
    let e = c.complete(request(vec![user("u")])).await.unwrap_err();
    assert!(matches!(e, ModelError::ContextOverflow { .. }), "{e:?}");
}

#[tokio::test]
async fn g5_anthropic_max_tokens_stop_drops_half_written_tool_call() {
    let body = [
        message_start(start_usage()),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "Noting this."})),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_x", "name": "advise", "input": {}}),
        ),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"note\": \"The loop nev"}),
        ),
        message_delta("max_tokens", 4096),
        message_stop(),
    ]
    .concat();
    let server = start(vec![ScriptedResponse::sse(&body)]).await;
    let r = client(&server)
        .complete(request(vec![user("u")]))
        .await
        .unwrap();
    assert_eq!(r.stop, StopReason::MaxTokens);
    assert_eq!(r.tool_calls().count(), 0);
    assert_eq!(
        r.parts,
        vec![AssistantPart::Text {
            text: "Noting this.".into()
        }]
    );
}

#[tokio::test]
async fn g5_anthropic_context_overflow() {
    let window_stop = [
        message_start(start_usage()),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "cut"})),
        block_stop(0),
        message_delta("model_context_window_exceeded", 10),
        message_stop(),
    ]
    .concat();
    let server = start(vec![
        ScriptedResponse::json(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215304 tokens > 200000 maximum"}}"#,
        ),
        ScriptedResponse::sse(&window_stop),
    ])
    .await;
    let c = client(&server);
    for _ in 0..2 {
        let e = c.complete(request(vec![user("u")])).await.unwrap_err();
        assert!(matches!(e, ModelError::ContextOverflow { .. }), "{e:?}");
    }
}

#[tokio::test]
async fn m2_anthropic_refusal_is_reported() {
    let body = [
        message_start(start_usage()),
        message_delta("refusal", 3),
        message_stop(),
    ]
    .concat();
    let server = start(vec![ScriptedResponse::sse(&body)]).await;
    let r = client(&server)
        .complete(request(vec![user("u")]))
        .await
        .unwrap();
    assert_eq!(r.stop, StopReason::Refusal);
}

#[tokio::test]
async fn m2_anthropic_thinking_off_or_non_reasoning_sends_no_thinking() {
    let server = start(vec![
        ScriptedResponse::sse(&text_answer("a")),
        ScriptedResponse::sse(&text_answer("b")),
    ])
    .await;
    let c = client(&server);
    let mut req = request(vec![user("u")]);
    req.thinking = ThinkingLevel::Off;
    c.complete(req).await.unwrap();
    let mut cfg = config(&server);
    cfg.info.reasoning = false;
    StreamingClient::new(cfg)
        .unwrap()
        .complete(request(vec![user("u")]))
        .await
        .unwrap();
    for r in server.requests() {
        assert!(r.json().get("thinking").is_none());
    }
}
