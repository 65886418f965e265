//! The streaming HTTP call both dialects share: POST a JSON body, classify a failed status,
//! then feed the SSE stream to a dialect's decoder, with an idle timeout on every read
//! (never a total timeout, M4).

use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tracing::Instrument;

use super::error::{classify_status, describe_transport, parse_retry_after};
use super::sse::{SseEvent, SseParser};
use crate::model::{ModelError, ModelResponse};

/// Most bytes of an error body kept for classification and messages.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// A dialect's stream state: fed one SSE event at a time, then asked for the answer.
pub(crate) trait StreamDecoder {
    /// Takes one event; an error ends the call.
    fn on_event(&mut self, event: SseEvent) -> Result<(), ModelError>;
    /// Whether the final event was seen (reading stops there).
    fn is_done(&self) -> bool;
    /// The assembled answer once the body ended; a stream that ended without its final
    /// event is a retryable failure.
    fn finish(self) -> Result<ModelResponse, ModelError>;
}

/// One prepared request.
struct StreamCall<'a> {
    /// The shared HTTP client (connect timeout set, no total timeout).
    pub client: &'a reqwest::Client,
    /// Full endpoint URL.
    pub url: String,
    /// Headers, secrets marked sensitive.
    pub headers: HeaderMap,
    /// The JSON body.
    pub body: Vec<u8>,
    /// Longest wait for the response head and for each body chunk.
    pub idle: Duration,
}

/// Builds a header map from name/value pairs; `sensitive` names are marked so that they
/// never show in debug output. Invalid pairs are skipped with a warning naming only the
/// header.
fn header_map(pairs: &[(String, String)], sensitive: &[&str]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
            tracing::warn!(header = %name, "invalid header name skipped");
            continue;
        };
        let Ok(mut value) = HeaderValue::from_str(value) else {
            tracing::warn!(header = %name, "invalid header value skipped");
            continue;
        };
        if sensitive
            .iter()
            .any(|s| name.as_str().eq_ignore_ascii_case(s))
        {
            value.set_sensitive(true);
        }
        map.insert(name, value);
    }
    map
}

fn idle_error(what: &str, idle: Duration) -> ModelError {
    ModelError::Retryable {
        usage: None,
        message: format!("{what}: nothing received for {} s", idle.as_secs_f64()),
        retry_after: None,
    }
}

/// The delay a failed answer asks for: `retry-after-ms` (OpenAI) or `Retry-After`.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms.min(86_400_000.0) / 1000.0));
    }
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()))
}

/// Sends the request and drives `decoder` over the answer.
async fn run_stream<D: StreamDecoder>(
    call: StreamCall<'_>,
    mut decoder: D,
) -> Result<ModelResponse, ModelError> {
    let idle = call.idle;
    let send = call
        .client
        .post(&call.url)
        .headers(call.headers)
        .body(call.body)
        .send();
    let response = match tokio::time::timeout(idle, send).await {
        Err(_) => return Err(idle_error("no response", idle)),
        Ok(Err(e)) => {
            return Err(ModelError::Retryable {
                usage: None,
                message: format!("request failed: {}", describe_transport(&e)),
                retry_after: None,
            })
        }
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    let mut stream = if status.is_success() {
        response.bytes_stream()
    } else {
        let delay = retry_after(response.headers());
        let body = read_error_body(response, idle).await;
        tracing::debug!(status = status.as_u16(), "model request failed");
        return Err(classify_status(status.as_u16(), delay, &body));
    };
    let mut parser = SseParser::new();
    loop {
        let next = match tokio::time::timeout(idle, stream.next()).await {
            Err(_) => return Err(idle_error("stream stalled", idle)),
            Ok(n) => n,
        };
        match next {
            None => break,
            Some(Err(e)) => {
                return Err(ModelError::Retryable {
                    usage: None,
                    message: format!("stream interrupted: {}", describe_transport(&e)),
                    retry_after: None,
                })
            }
            Some(Ok(bytes)) => {
                for event in parser.feed(&bytes) {
                    decoder.on_event(event)?;
                    if decoder.is_done() {
                        return decoder.finish();
                    }
                }
            }
        }
    }
    if let Some(event) = parser.finish() {
        decoder.on_event(event)?;
    }
    decoder.finish()
}

/// Reads an error body, bounded in size and by the idle timeout; whatever arrived is kept.
async fn read_error_body(response: reqwest::Response, idle: Duration) -> String {
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_LIMIT {
        match tokio::time::timeout(idle, stream.next()).await {
            Ok(Some(Ok(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(ERROR_BODY_LIMIT);
    String::from_utf8_lossy(&body).into_owned()
}

/// A configured endpoint: the configuration plus its HTTP client. Both dialect clients
/// wrap one in an `Arc`.
#[derive(Debug)]
pub(crate) struct Transport {
    /// The configuration.
    pub config: super::ProviderConfig,
    http: reqwest::Client,
}

impl Transport {
    /// An endpoint for `config` (connect timeout set, no total timeout).
    pub fn new(config: super::ProviderConfig) -> Result<Self, super::ProviderError> {
        let http = config.http_client()?;
        Ok(Self { config, http })
    }

    /// An endpoint for `config` over a given HTTP client (one connection pool shared by
    /// many sessions, A6).
    pub fn with_http(config: super::ProviderConfig, http: reqwest::Client) -> Self {
        Self { config, http }
    }

    /// Posts `body` to `path` with the content type, `fixed` headers, the configured
    /// extra headers and `auth` (marked sensitive), inside a tracing span naming the
    /// dialect and the model (never the key), and decodes the stream.
    pub async fn send<D: StreamDecoder>(
        &self,
        api: &'static str,
        path: &str,
        fixed: &[(&str, &str)],
        auth: Option<(&'static str, String)>,
        body: &serde_json::Value,
        decoder: D,
    ) -> Result<ModelResponse, ModelError> {
        let config = &self.config;
        let span = tracing::info_span!("model_request", api, model = %config.info.id);
        async {
            let mut pairs = vec![("content-type".to_string(), "application/json".to_string())];
            pairs.extend(fixed.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            let mut sensitive = vec!["authorization", "x-api-key"];
            if let Some((name, value)) = auth {
                pairs.push((name.to_string(), value));
                sensitive.push(name);
            }
            pairs.extend(config.headers.iter().cloned());
            let call = StreamCall {
                client: &self.http,
                url: config.endpoint(path),
                headers: header_map(&pairs, &sensitive),
                body: serde_json::to_vec(body).unwrap_or_default(),
                idle: config.idle_timeout,
            };
            let result = run_stream(call, decoder).await;
            match &result {
                Ok(r) => tracing::debug!(
                    stop = ?r.stop,
                    input = r.usage.input,
                    cache_read = r.usage.cache_read,
                    output = r.usage.output,
                    "model answered"
                ),
                Err(e) => tracing::debug!(error = %e, "model call failed"),
            }
            result
        }
        .instrument(span)
        .await
    }
}
