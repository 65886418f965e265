//! Properties both dialects share: usage normalised to one shape (G4), append-only requests
//! whose previous message list is a prefix of the next (M5), keys never logged or shown,
//! and clients built from a role string (M1, M2).

use crate::support::sse_server;

use std::io::Write;
use std::sync::Arc;

use advisor::model::{AssistantPart, ChatMessage, ModelClient, ModelRequest, ThinkingLevel};
use advisor::providers::testing::{prefix_reuse_ratio, strip_cache_markers};
use advisor::providers::{
    build_client, client_for, resolve_config, ApiKind, Catalog, ModelSpec, ProviderConfig,
};
use parking_lot::Mutex;
use serde_json::{json, Value};
use sse_server::{sse_event, start, ScriptedResponse, SseServer};

const OR_KEY: &str = "sk-or-v1-secretsecretsecret";
const ANT_KEY: &str = "sk-ant-api03-secretsecretsecret";

fn lookup(name: &str) -> Option<String> {
    match name {
        "OPENROUTER_API_KEY" => Some(OR_KEY.into()),
        "ANTHROPIC_API_KEY" => Some(ANT_KEY.into()),
        _ => None,
    }
}

fn config(server: &SseServer, role: &str) -> ProviderConfig {
    let spec = ModelSpec {
        role: Some(role.into()),
        base_url: Some(server.base_url()),
        ..ModelSpec::default()
    };
    resolve_config(&spec, &Catalog::builtin().unwrap(), &lookup).unwrap()
}

fn openai_text(text: &str, usage: Value) -> String {
    [
        sse_event(
            None,
            &json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]})
                .to_string(),
        ),
        sse_event(None, &json!({"choices": [], "usage": usage}).to_string()),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat()
}

fn anthropic_text(text: &str, usage: Value) -> String {
    let ev = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        sse_event(Some(kind), &data.to_string())
    };
    [
        ev("message_start", json!({"message": {"usage": usage}})),
        ev(
            "content_block_start",
            json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        ev("content_block_stop", json!({"index": 0})),
        ev(
            "message_delta",
            json!({"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 50}}),
        ),
        ev("message_stop", json!({})),
    ]
    .concat()
}

fn request(messages: Vec<ChatMessage>) -> ModelRequest {
    ModelRequest {
        system: "You are the advisor. Workspace: /work/project.".into(),
        messages,
        tools: vec![],
        max_tokens: 4096,
        thinking: ThinkingLevel::Medium,
        reminder: None,
    }
}

/// The key-logging test captures tracing with a scoped subscriber. Tracing caches per
/// callsite whether anyone listens, and a request in a parallel test can settle that cache
/// while no subscriber is set, hiding the span the capture looks for. Tests that make
/// requests therefore share this lock; the capture test takes it alone.
static TRACING: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

#[tokio::test]
async fn g4_usage_normalised_identically_across_dialects() {
    let _shared = TRACING.read().await;
    let openai_usage = json!({"prompt_tokens": 1000, "completion_tokens": 50,
        "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 100}});
    let anthropic_usage = json!({"input_tokens": 300, "cache_read_input_tokens": 600,
        "cache_creation_input_tokens": 100, "output_tokens": 1});
    let server = start(vec![
        ScriptedResponse::sse(&openai_text("a", openai_usage)),
        ScriptedResponse::sse(&anthropic_text("a", anthropic_usage)),
    ])
    .await;
    let anthropic = config(&server, "anthropic/claude-sonnet-4-5");
    let mut openai = config(&server, "openrouter/anthropic/claude-sonnet-4.5");
    assert_eq!(openai.prices, anthropic.prices);
    openai.prices = anthropic.prices;
    let a = client_for(openai)
        .unwrap()
        .complete(request(vec![ChatMessage::User { text: "u".into() }]))
        .await
        .unwrap();
    let b = client_for(anthropic)
        .unwrap()
        .complete(request(vec![ChatMessage::User { text: "u".into() }]))
        .await
        .unwrap();
    assert_eq!(a.usage, b.usage);
    assert_eq!(
        (
            a.usage.input,
            a.usage.output,
            a.usage.cache_read,
            a.usage.cache_write
        ),
        (300, 50, 600, 100)
    );
    let want = (300.0 * 3.0 + 50.0 * 15.0 + 600.0 * 0.3 + 100.0 * 3.75) / 1e6;
    assert!((a.usage.cost - want).abs() < 1e-12);
}

/// A session update of realistic size.
fn update(n: usize) -> String {
    let mut s =
        format!("### Session update\n\n**user**:\nStep {n}: fix the parser\n\n**agent**:\n");
    for i in 0..30 {
        s.push_str(&format!(
            "→ read(src/module_{n}/file_{i}.rs:1-80) ⇒ ok · 80 lines\n"
        ));
    }
    s
}

/// Runs `reviews` reviews through `client`, each appending the answer and the next update,
/// with one tool round in every third review; returns the recorded bodies.
async fn run_reviews(
    server: &SseServer,
    client: Arc<dyn ModelClient>,
    reviews: usize,
) -> Vec<Vec<u8>> {
    let mut messages = Vec::new();
    for n in 0..reviews {
        messages.push(ChatMessage::User { text: update(n) });
        let r = client.complete(request(messages.clone())).await.unwrap();
        messages.push(ChatMessage::Assistant { parts: r.parts });
        if n % 3 == 2 {
            // A tool round: the model called `read`, the result is appended.
            messages.push(ChatMessage::Assistant {
                parts: vec![AssistantPart::ToolCall {
                    id: format!("call_{n}"),
                    name: "read".into(),
                    arguments: json!({"path": format!("src/module_{n}/file_0.rs")}),
                }],
            });
            messages.push(ChatMessage::ToolResult {
                call_id: format!("call_{n}"),
                name: "read".into(),
                text: "1|fn parse() {}\n2|".repeat(20),
                is_error: false,
            });
            let r = client.complete(request(messages.clone())).await.unwrap();
            messages.push(ChatMessage::Assistant { parts: r.parts });
        }
    }
    let _ = server;
    server.requests().into_iter().map(|r| r.body).collect()
}

fn message_list(body: &[u8]) -> Vec<String> {
    let v: Value = serde_json::from_slice(body).unwrap();
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect()
}

#[tokio::test]
async fn m5_openai_each_request_begins_with_the_previous_one() {
    let _shared = TRACING.read().await;
    let server = start(
        (0..20)
            .map(|i| ScriptedResponse::sse(&openai_text(&format!("quiet {i}"), json!({}))))
            .collect(),
    )
    .await;
    let client = client_for(config(&server, "openrouter/z-ai/glm-5.2")).unwrap();
    let bodies = run_reviews(&server, client, 12).await;
    assert_eq!(bodies.len(), 16);
    for pair in bodies.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        let (pm, nm) = (message_list(prev), message_list(next));
        assert!(nm.len() > pm.len());
        assert_eq!(pm[..], nm[..pm.len()], "message list prefix");
        // The whole previous body, minus its closing `]}`, starts the next body.
        assert!(next.starts_with(&prev[..prev.len() - 2]));
    }
    // Every byte of the previous request is reused: the ratio is the best this session's
    // growth allows.
    let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
    let ratio = prefix_reuse_ratio(&refs).unwrap();
    let best = best_ratio(&refs);
    println!("openai prefix reuse {ratio:.4} (best possible {best:.4})");
    assert!(
        (ratio - best).abs() < 1e-12,
        "prefix reuse {ratio} < {best}"
    );
}

/// The ratio when each request repeats all of the previous one but its closing `]}`.
fn best_ratio(bodies: &[&[u8]]) -> f64 {
    let shared: usize = bodies.windows(2).map(|w| w[0].len() - 2).sum();
    let total: usize = bodies[1..].iter().map(|b| b.len()).sum();
    shared as f64 / total as f64
}

#[tokio::test]
async fn m5_anthropic_each_request_begins_with_the_previous_one_and_carries_breakpoints() {
    let _shared = TRACING.read().await;
    let usage = json!({"input_tokens": 10, "output_tokens": 1});
    let server = start(
        (0..20)
            .map(|i| ScriptedResponse::sse(&anthropic_text(&format!("quiet {i}"), usage.clone())))
            .collect(),
    )
    .await;
    let client = client_for(config(&server, "anthropic/claude-sonnet-4-5")).unwrap();
    let bodies = run_reviews(&server, client, 12).await;
    assert_eq!(bodies.len(), 16);
    let marker = json!({"type": "ephemeral"});
    for pair in bodies.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        // Content: the previous message list is a byte-identical prefix once the moving
        // cache markers are set aside.
        let (pm, nm) = (
            message_list(&strip_cache_markers(prev)),
            message_list(&strip_cache_markers(next)),
        );
        assert_eq!(pm[..], nm[..pm.len()], "message list prefix");
        // The previous request's last message, breakpoint included, is repeated byte for
        // byte, so the cache entry it wrote is read back.
        let (pm_raw, nm_raw) = (message_list(prev), message_list(next));
        let last = pm_raw.len() - 1;
        assert_eq!(pm_raw[last], nm_raw[last]);
        let v: Value = serde_json::from_slice(next).unwrap();
        assert_eq!(v["system"][0]["cache_control"], marker);
        let msgs = v["messages"].as_array().unwrap();
        let last_block = msgs.last().unwrap()["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap();
        assert_eq!(last_block["cache_control"], marker);
        let markers = String::from_utf8_lossy(next)
            .matches("cache_control")
            .count();
        assert!(markers <= 4, "at most four breakpoints, got {markers}");
    }
    let stripped: Vec<Vec<u8>> = bodies.iter().map(|b| strip_cache_markers(b)).collect();
    let refs: Vec<&[u8]> = stripped.iter().map(Vec::as_slice).collect();
    let content_ratio = prefix_reuse_ratio(&refs).unwrap();
    let best = best_ratio(&refs);
    assert!(
        (content_ratio - best).abs() < 1e-12,
        "content prefix reuse {content_ratio} < {best}"
    );
    let raw: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
    let raw_ratio = prefix_reuse_ratio(&raw).unwrap();
    println!(
        "anthropic prefix reuse: raw {raw_ratio:.4}, markers set aside {content_ratio:.4} (best possible {best:.4})"
    );
    assert!(raw_ratio >= 0.8 * best, "raw prefix reuse {raw_ratio}");
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn m2_keys_are_never_logged_nor_shown() {
    let _alone = TRACING.write().await;
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // Callsites first met while no subscriber was set are re-asked.
    tracing::callsite::rebuild_interest_cache();

    let server = start(vec![
        ScriptedResponse::sse(&openai_text("a", json!({}))),
        ScriptedResponse::json(401, r#"{"error":{"message":"bad key","code":401}}"#),
        ScriptedResponse::sse(&anthropic_text("a", json!({}))),
        ScriptedResponse::json(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        ),
    ])
    .await;
    let mut shown = String::new();
    for role in ["openrouter/z-ai/glm-5.2", "anthropic/claude-sonnet-4-5"] {
        let cfg = config(&server, role);
        shown.push_str(&format!("{cfg:?}\n"));
        let client = client_for(cfg.clone()).unwrap();
        client
            .complete(request(vec![ChatMessage::User { text: "u".into() }]))
            .await
            .unwrap();
        let err = client
            .complete(request(vec![ChatMessage::User { text: "u".into() }]))
            .await
            .unwrap_err();
        shown.push_str(&format!("{err}\n{err:?}\n"));
        shown.push_str(&format!(
            "{:?}",
            advisor::providers::StreamingClient::new(cfg).unwrap()
        ));
    }
    let spec = ModelSpec {
        role: Some("openai/gpt-5".into()),
        api_key: Some("sk-proj-settingssecret".into()),
        ..ModelSpec::default()
    };
    shown.push_str(&format!("{spec:?}"));
    let logs = String::from_utf8_lossy(&captured.0.lock()).into_owned();
    // The capture works: the request spans name the model.
    assert!(logs.contains("model_request"), "{logs}");
    assert!(logs.contains("claude-sonnet-4-5"), "{logs}");
    for key in [OR_KEY, ANT_KEY, "sk-proj-settingssecret", "secretsecret"] {
        assert!(!logs.contains(key), "key in logs");
        assert!(!shown.contains(key), "key shown: {shown}");
    }
    // The keys did travel, in the headers.
    let reqs = server.requests();
    let expected = format!("Bearer {OR_KEY}");
    assert_eq!(reqs[0].header("authorization"), Some(expected.as_str()));
    assert_eq!(reqs[2].header("x-api-key"), Some(ANT_KEY));
}

#[tokio::test]
async fn m1_build_client_from_role_string_with_overrides() {
    let _shared = TRACING.read().await;
    let server = start(vec![
        ScriptedResponse::sse(&openai_text("a", json!({}))),
        ScriptedResponse::sse(&anthropic_text("b", json!({}))),
    ])
    .await;
    let catalog = Catalog::builtin().unwrap();
    let spec = ModelSpec {
        role: Some("openrouter/z-ai/glm-5.2:high".into()),
        base_url: Some(server.base_url()),
        max_output_tokens: Some(2000),
        ..ModelSpec::default()
    };
    let client = build_client(&spec, &catalog, &lookup).unwrap();
    assert_eq!(client.thinking(), ThinkingLevel::High);
    assert_eq!(client.info().id, "openrouter/z-ai/glm-5.2");
    assert_eq!(client.info().context_window, 202_752);
    assert_eq!(client.info().max_output, 2000);
    let mut req = request(vec![ChatMessage::User { text: "u".into() }]);
    req.thinking = client.thinking();
    client.complete(req).await.unwrap();

    // Any provider name works with an explicit base URL and API kind.
    let spec = ModelSpec {
        role: Some("mylab/claude-proxy".into()),
        base_url: Some(server.base_url()),
        api: Some(ApiKind::AnthropicMessages),
        ..ModelSpec::default()
    };
    let client = build_client(&spec, &catalog, &lookup).unwrap();
    client
        .complete(request(vec![ChatMessage::User { text: "u".into() }]))
        .await
        .unwrap();

    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    let b = reqs[0].json();
    assert_eq!(b["model"], "z-ai/glm-5.2");
    assert_eq!(b["max_tokens"], 2000, "P10: OpenRouter takes max_tokens");
    assert_eq!(b["reasoning"], json!({"effort": "high"}));
    assert_eq!(reqs[1].path, "/v1/messages");
    assert_eq!(reqs[1].json()["model"], "claude-proxy");
    assert_eq!(reqs[1].header("x-api-key"), None);
}
