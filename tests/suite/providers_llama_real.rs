//! The `openai-completions` client against a real llama.cpp server (P10): llama-cpp-python's,
//! serving Gemma 3 270M, as `scripts/llama-server.sh start` installs and starts it. These tests
//! are `#[ignore]`d (the install compiles llama.cpp); run them with
//!
//! ```sh
//! scripts/llama-server.sh start
//! cargo test --test all suite::providers_llama_real -- --ignored --nocapture
//! scripts/llama-server.sh stop
//! ```
//!
//! `ADVISOR_LLAMA_BASE_URL` names another server (default `http://127.0.0.1:18080/v1`).

use std::time::{Duration, Instant};

use advisor::model::{ChatMessage, ModelClient, ModelRequest, ThinkingLevel};
use advisor::providers::{resolve_config, Catalog, ModelSpec, StreamingClient};

const DEFAULT_BASE_URL: &str = "http://127.0.0.1:18080/v1";

fn base_url() -> String {
    std::env::var("ADVISOR_LLAMA_BASE_URL").unwrap_or_else(|_| DEFAULT_BASE_URL.to_string())
}

/// A client for the real server under `provider` (OpenAI's flavor starts with
/// `max_completion_tokens`, every other with `max_tokens`).
fn client(provider: &str) -> StreamingClient {
    let spec = ModelSpec {
        role: Some(format!("{provider}/gemma-3-270m")),
        base_url: Some(base_url()),
        request_timeout: Some(Duration::from_secs(300)),
        ..ModelSpec::default()
    };
    let config = resolve_config(&spec, &Catalog::builtin().unwrap(), &|_| None).unwrap();
    StreamingClient::new(config).unwrap()
}

/// A request that makes the model write on and on, asking for `max_tokens`.
fn counting(max_tokens: u32) -> ModelRequest {
    ModelRequest {
        system: "You are a helpful assistant.".into(),
        messages: vec![ChatMessage::User {
            text: "Count from 1 to 1000, one number per line.".into(),
        }],
        tools: vec![],
        max_tokens,
        thinking: ThinkingLevel::Off,
        reminder: None,
    }
}

async fn answers() -> bool {
    let url = format!("{}/models", base_url());
    let call = reqwest::Client::new()
        .get(&url)
        .timeout(Duration::from_secs(2))
        .send();
    matches!(call.await, Ok(r) if r.status().is_success())
}

async fn require_server() {
    assert!(
        answers().await,
        "no llama.cpp server at {}: run `scripts/llama-server.sh start` first",
        base_url()
    );
}

#[tokio::test]
#[ignore = "needs the real llama.cpp server: scripts/llama-server.sh start"]
async fn p10_real_llama_server_a_reply_asked_for_8_tokens_stays_near_8() {
    require_server().await;
    let started = Instant::now();
    let r = client("llamacpp").complete(counting(8)).await.unwrap();
    let took = started.elapsed();
    eprintln!(
        "llama-cpp-python, 8 tokens asked: {} output tokens (estimated: {}), stop {:?}, {:.1} s",
        r.usage.output,
        r.usage.estimated,
        r.stop,
        took.as_secs_f64()
    );
    assert!(r.usage.output <= 8 + 16, "{:?}", r.usage);
    assert!(took < Duration::from_secs(120), "{took:?}");
}

#[tokio::test]
#[ignore = "needs the real llama.cpp server: scripts/llama-server.sh start"]
async fn p10_real_llama_server_ignoring_max_completion_tokens_is_found_out_and_switched() {
    require_server().await;
    // OpenAI's flavor sends max_completion_tokens first, which this server ignores.
    let client = client("openai");
    for n in 1..=2 {
        let started = Instant::now();
        let r = client.complete(counting(8)).await.unwrap();
        let took = started.elapsed();
        eprintln!(
            "request {n}: {} output tokens (estimated: {}), stop {:?}, {:.1} s",
            r.usage.output,
            r.usage.estimated,
            r.stop,
            took.as_secs_f64()
        );
        assert!(r.usage.output <= 8 + 16 + 8, "request {n}: {:?}", r.usage);
        assert!(took < Duration::from_secs(120), "request {n}: {took:?}");
    }
}
