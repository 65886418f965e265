//! The streaming HTTP call both dialects share: POST a JSON body, classify a failed status,
//! then feed the SSE stream to a dialect's decoder, with an idle timeout on every read and
//! a total limit on the whole call (M4, `advisor.requestTimeoutSecs`).
//!
//! What a model sends is capped before it is buffered: the SSE event being assembled (see
//! [`SseParser::limit`]) and the reply accumulated by the decoder ([`reply_cap`]). Past
//! either cap the call ends as an output-limit stop ([`StopReason::MaxTokens`], G5
//! reactive) with the text cut.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
use tracing::Instrument;

use super::error::{classify_status, describe_transport, parse_retry_after, MAX_RETRY_AFTER};
use super::sse::{SseEvent, SseParser};
use crate::model::{ModelError, ModelResponse, Usage};

/// Most bytes of an error body kept for classification and messages.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Reply bytes allowed per output token: generous (English averages about 4 bytes a token,
/// reasoning may arrive twice under two field names), so only a runaway reply reaches it.
const REPLY_BYTES_PER_TOKEN: usize = 32;

/// The smallest reply cap, whatever the output bound.
const MIN_REPLY_CAP: usize = 64 * 1024;

/// The most reply bytes (text, reasoning, tool-call arguments) one call may accumulate
/// under an output bound of `output_tokens`: a generous multiple of the bound.
pub fn reply_cap(output_tokens: u32) -> usize {
    (output_tokens as usize)
        .saturating_mul(REPLY_BYTES_PER_TOKEN)
        .max(MIN_REPLY_CAP)
}

/// The cap on one SSE event under a reply cap: room for the whole reply in one event with
/// every character JSON-escaped, plus the envelope.
pub fn event_cap(reply_cap: usize) -> usize {
    reply_cap.saturating_mul(6).saturating_add(64 * 1024)
}

/// A dialect's stream state: fed one SSE event at a time, then asked for the answer.
pub(crate) trait StreamDecoder {
    /// Takes one event; an error ends the call.
    fn on_event(&mut self, event: SseEvent) -> Result<(), ModelError>;
    /// Whether the dialect's end marker was seen (reading stops there).
    fn is_done(&self) -> bool;
    /// Bytes of reply accumulated so far (text, reasoning, tool calls).
    fn reply_bytes(&self) -> usize;
    /// What the call used so far: the figures the stream reported, the rest estimated
    /// (characters / 4, G4) and then marked estimated.
    fn partial_usage(&self) -> Usage;
    /// The assembled answer once the end marker was seen; a stream that ended before it
    /// is a retryable failure carrying [`StreamDecoder::partial_usage`] (F1).
    fn finish(self) -> Result<ModelResponse, ModelError>;
    /// Ends the call early because the reply passed its cap: an output-limit stop whose
    /// visible text is cut to at most `cap` bytes; tool calls and reasoning are dropped.
    fn cut(self, cap: usize) -> ModelResponse;
}

/// One prepared request.
struct StreamCall<'a> {
    /// The shared HTTP client (connect timeout set, no total timeout of its own).
    pub client: &'a reqwest::Client,
    /// Full endpoint URL.
    pub url: String,
    /// Headers, secrets marked sensitive.
    pub headers: HeaderMap,
    /// The JSON body.
    pub body: Vec<u8>,
    /// Longest wait for the response head and for each body chunk.
    pub idle: Duration,
    /// Longest the whole call may take.
    pub total: Duration,
    /// Most reply bytes accumulated before the call is cut.
    pub reply_cap: usize,
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

/// Which limit a wait ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expired {
    /// Nothing arrived for the idle timeout.
    Idle,
    /// The call's total limit passed.
    Total,
}

/// The clock of one call: the idle timeout per wait and the deadline of the whole call.
#[derive(Debug, Clone, Copy)]
struct Limits {
    idle: Duration,
    total: Duration,
    deadline: Instant,
}

impl Limits {
    fn start(idle: Duration, total: Duration) -> Self {
        Self {
            idle,
            total,
            deadline: Instant::now() + total,
        }
    }

    /// Awaits `fut` for at most the idle timeout and never past the deadline.
    async fn wait<F: std::future::Future>(&self, fut: F) -> Result<F::Output, Expired> {
        let idle_end = Instant::now() + self.idle;
        let (end, which) = if idle_end < self.deadline {
            (idle_end, Expired::Idle)
        } else {
            (self.deadline, Expired::Total)
        };
        tokio::time::timeout_at(end, fut).await.map_err(|_| which)
    }

    /// The retryable failure for `expired`; `what` names the wait for an idle timeout.
    fn error(&self, what: &str, expired: Expired) -> ModelError {
        let message = match expired {
            Expired::Idle => format!("{what}: nothing received for {} s", self.idle.as_secs_f64()),
            Expired::Total => format!(
                "the model call passed its total limit of {} s (advisor.requestTimeoutSecs)",
                self.total.as_secs_f64()
            ),
        };
        ModelError::Retryable {
            usage: None,
            message,
            retry_after: None,
        }
    }
}

/// The delay a failed answer asks for: `retry-after-ms` (OpenAI) or `Retry-After`, as
/// given (only an absurd value is cut, to [`MAX_RETRY_AFTER`]).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(
            (ms / 1000.0).min(MAX_RETRY_AFTER.as_secs_f64()),
        ));
    }
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()))
}

/// Sends the request and drives `decoder` over the answer. Every failure after the
/// answer's head arrived carries what the call used so far.
async fn run_stream<D: StreamDecoder>(
    call: StreamCall<'_>,
    mut decoder: D,
) -> Result<ModelResponse, ModelError> {
    let limits = Limits::start(call.idle, call.total);
    let reply_cap = call.reply_cap;
    let mut stream = send_request(call, &limits).await?.bytes_stream();
    let mut parser = SseParser::with_limit(event_cap(reply_cap));
    loop {
        let next = match limits.wait(stream.next()).await {
            Err(expired) => {
                let err = limits.error("stream stalled", expired);
                return Err(err.with_usage(decoder.partial_usage()));
            }
            Ok(n) => n,
        };
        match next {
            None => break,
            Some(Err(e)) => {
                let err = ModelError::Retryable {
                    usage: None,
                    message: format!("stream interrupted: {}", describe_transport(&e)),
                    retry_after: None,
                };
                return Err(err.with_usage(decoder.partial_usage()));
            }
            Some(Ok(bytes)) => {
                for event in parser.feed(&bytes) {
                    if let Err(err) = decoder.on_event(event) {
                        return Err(err.with_usage(decoder.partial_usage()));
                    }
                    if decoder.is_done() {
                        drain_to_end(&mut stream, limits.deadline).await;
                        return decoder.finish();
                    }
                    if decoder.reply_bytes() > reply_cap {
                        tracing::warn!(cap = reply_cap, "model reply passed its cap: cut");
                        return Ok(decoder.cut(reply_cap));
                    }
                }
                if parser.overflowed() {
                    tracing::warn!(
                        cap = parser.limit(),
                        "model stream event passed its cap: cut"
                    );
                    return Ok(decoder.cut(reply_cap));
                }
            }
        }
    }
    if let Some(event) = parser.finish() {
        if let Err(err) = decoder.on_event(event) {
            return Err(err.with_usage(decoder.partial_usage()));
        }
    }
    decoder.finish()
}

/// Sends the request and waits for the answer's head: the response when its status is a
/// success, else the error its status (and body) make.
async fn send_request(
    call: StreamCall<'_>,
    limits: &Limits,
) -> Result<reqwest::Response, ModelError> {
    let send = call
        .client
        .post(&call.url)
        .headers(call.headers)
        .body(call.body)
        .send();
    let response = match limits.wait(send).await {
        Err(expired) => return Err(limits.error("no response", expired)),
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
    if status.is_success() {
        return Ok(response);
    }
    let delay = retry_after(response.headers());
    let body = read_error_body(response, limits).await;
    tracing::debug!(status = status.as_u16(), "model request failed");
    Err(classify_status(status.as_u16(), delay, &body))
}

/// How long a call goes on reading after its end marker for the provider to end the
/// response (A6).
const DRAIN_AFTER_END: Duration = Duration::from_secs(1);

/// The most bytes read after the end marker (A6).
const DRAIN_AFTER_END_BYTES: usize = 64 * 1024;

/// Reads what follows a stream's end marker until the provider ends the response, for at
/// most [`DRAIN_AFTER_END`] (never past the call's `deadline`) and
/// [`DRAIN_AFTER_END_BYTES`] (A6): the call keeps its provider slot until the provider is
/// done with the request, so the next caller's request never overlaps it and the provider
/// never sees more than `advisor.maxConcurrentReviews` at once.
async fn drain_to_end<S>(stream: &mut S, deadline: Instant)
where
    S: futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin,
{
    let until = deadline.min(Instant::now() + DRAIN_AFTER_END);
    let mut read = 0;
    while read <= DRAIN_AFTER_END_BYTES {
        match tokio::time::timeout_at(until, stream.next()).await {
            Ok(Some(Ok(bytes))) => read += bytes.len(),
            _ => return,
        }
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub(crate) fn cut_text(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
}

/// Reads an error body, bounded in size, by the idle timeout and by the call's deadline;
/// whatever arrived is kept.
async fn read_error_body(response: reqwest::Response, limits: &Limits) -> String {
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_LIMIT {
        match limits.wait(stream.next()).await {
            Ok(Some(Ok(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(ERROR_BODY_LIMIT);
    String::from_utf8_lossy(&body).into_owned()
}

/// One request as a dialect prepared it.
pub(crate) struct Outgoing<'a> {
    /// The dialect's name, for the tracing span.
    pub api: &'static str,
    /// The endpoint path under the base URL.
    pub path: &'a str,
    /// Headers the dialect always sends.
    pub fixed: &'a [(&'a str, &'a str)],
    /// The auth header, if a key is configured (marked sensitive).
    pub auth: Option<(&'static str, String)>,
    /// The JSON body.
    pub body: &'a serde_json::Value,
    /// The request's output bound in tokens (sets the reply cap).
    pub output_bound: u32,
}

/// The request field that carries the output bound in the `openai-completions` dialect (P10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundField {
    /// `max_completion_tokens`: what OpenAI's own endpoint honours (its reasoning models
    /// refuse `max_tokens`).
    MaxCompletionTokens,
    /// `max_tokens`: what every other OpenAI-compatible server honours (llama.cpp's,
    /// llama-cpp-python's, vLLM, Ollama, OpenRouter).
    MaxTokens,
}

impl BoundField {
    /// The field's name in the request body.
    pub fn name(self) -> &'static str {
        match self {
            Self::MaxCompletionTokens => "max_completion_tokens",
            Self::MaxTokens => "max_tokens",
        }
    }

    /// The other field.
    pub fn other(self) -> Self {
        match self {
            Self::MaxCompletionTokens => Self::MaxTokens,
            Self::MaxTokens => Self::MaxCompletionTokens,
        }
    }

    fn bit(self, refused: bool) -> u8 {
        match (self, refused) {
            (Self::MaxCompletionTokens, true) => 1,
            (Self::MaxTokens, true) => 2,
            (Self::MaxCompletionTokens, false) => 4,
            (Self::MaxTokens, false) => 8,
        }
    }
}

/// What an endpoint was found to refuse or ignore, learnt from its answers and kept for
/// every later request to it (P10). One per base URL: the sessions of a process share it
/// through [`crate::runtime::SharedResources`].
#[derive(Debug, Default)]
pub struct EndpointQuirks {
    /// [`BoundField::bit`] flags: which bound fields were refused (a 400 naming the field)
    /// and which were ignored (a reply longer than the bound asked for).
    bound_fields: AtomicU8,
}

impl EndpointQuirks {
    /// The field to send the output bound in: `preferred` unless the endpoint refused or
    /// ignored it and the other is not known to fail too; when both failed, the one that was
    /// only ignored (it costs a long reply, a refused one costs the call), else `preferred`.
    pub fn bound_field(&self, preferred: BoundField) -> BoundField {
        let flags = self.bound_fields.load(Ordering::Relaxed);
        let failed = |f: BoundField| flags & (f.bit(true) | f.bit(false)) != 0;
        let refused = |f: BoundField| flags & f.bit(true) != 0;
        let other = preferred.other();
        if !failed(preferred) {
            preferred
        } else if !failed(other) || (refused(preferred) && !refused(other)) {
            other
        } else {
            preferred
        }
    }

    /// Remembers that the endpoint answered 400 to `field`.
    pub fn note_refused(&self, field: BoundField) {
        self.bound_fields
            .fetch_or(field.bit(true), Ordering::Relaxed);
    }

    /// Remembers that the endpoint answered with more output than `field` asked for.
    pub fn note_ignored(&self, field: BoundField) {
        self.bound_fields
            .fetch_or(field.bit(false), Ordering::Relaxed);
    }
}

/// A configured endpoint: the configuration, its HTTP client and what it was found to
/// refuse. Both dialect clients wrap one in an `Arc`.
#[derive(Debug)]
pub(crate) struct Transport {
    /// The configuration.
    pub config: super::ProviderConfig,
    http: reqwest::Client,
    /// What the endpoint refused so far (P10).
    pub quirks: Arc<EndpointQuirks>,
}

impl Transport {
    /// An endpoint for `config` (the HTTP client has the connect timeout; the idle timeout
    /// and the total limit apply per call).
    pub fn new(config: super::ProviderConfig) -> Result<Self, super::ProviderError> {
        let http = config.http_client()?;
        Ok(Self::shared(config, http, Arc::default()))
    }

    /// An endpoint for `config` over a given HTTP client (one connection pool shared by
    /// many sessions, A6) and the endpoint's `quirks`, shared with the other clients of
    /// the same base URL (P10).
    pub fn shared(
        config: super::ProviderConfig,
        http: reqwest::Client,
        quirks: Arc<EndpointQuirks>,
    ) -> Self {
        Self {
            config,
            http,
            quirks,
        }
    }

    /// Posts the request's body to its path with the content type, its fixed headers, the
    /// configured extra headers and its auth header (marked sensitive), inside a tracing
    /// span naming the dialect and the model (never the key), and decodes the stream, its
    /// reply capped by the request's output bound ([`reply_cap`]).
    pub async fn send<D: StreamDecoder>(
        &self,
        request: Outgoing<'_>,
        decoder: D,
    ) -> Result<ModelResponse, ModelError> {
        let Outgoing {
            api,
            path,
            fixed,
            auth,
            body,
            output_bound,
        } = request;
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
                total: config.request_timeout,
                reply_cap: reply_cap(output_bound),
            };
            let result = run_stream(call, decoder).await;
            match &result {
                Ok(r) => tracing::debug!(
                    stop = ?r.stop,
                    estimated = r.usage.estimated,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p10_the_bound_field_moves_off_a_failed_field_and_prefers_an_ignored_one_to_a_refused_one() {
        use BoundField::{MaxCompletionTokens as Completion, MaxTokens as Legacy};
        let fresh = EndpointQuirks::default();
        assert_eq!(fresh.bound_field(Completion), Completion);
        assert_eq!(fresh.bound_field(Legacy), Legacy);

        let ignores = EndpointQuirks::default();
        ignores.note_ignored(Legacy);
        assert_eq!(ignores.bound_field(Legacy), Completion);
        assert_eq!(ignores.bound_field(Completion), Completion);
        // Both ignored: nothing better to send than the flavor's own.
        ignores.note_ignored(Completion);
        assert_eq!(ignores.bound_field(Legacy), Legacy);

        let refuses = EndpointQuirks::default();
        refuses.note_refused(Completion);
        assert_eq!(refuses.bound_field(Completion), Legacy);
        // Refused one, ignored the other: the ignored one still gets an answer.
        refuses.note_ignored(Legacy);
        assert_eq!(refuses.bound_field(Completion), Legacy);
        assert_eq!(refuses.bound_field(Legacy), Legacy);
    }
}
