//! Provider errors: configuration failures ([`ProviderError`]) and the classification of
//! HTTP and stream failures into [`ModelError`] (M4, F1, F3, G5).

use std::time::{Duration, SystemTime};

use crate::model::ModelError;

/// Why a model client could not be built from the configuration. The messages speak to
/// any caller — an embedding host, a protocol client, the CLI — in terms of settings and
/// environment variables; naming command-line flags is the CLI's job (it adds them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// No advisor model is configured anywhere.
    #[error(
        "no advisor model configured: name one as provider/model-id (modelRoles.advisor in \
         the settings, or ADVISOR_MODEL; a local server also needs its base URL), and set \
         OPENROUTER_API_KEY for openrouter models"
    )]
    NoModel,
    /// A hosted provider needs a key and none was found.
    #[error(
        "no API key for {provider}: set {env_var} (OPENROUTER_API_KEY for openrouter models), \
         or choose another provider or a local server's base URL"
    )]
    MissingKey {
        /// The provider (`openrouter`, `openai`, `anthropic`).
        provider: String,
        /// The environment variable that would hold the key.
        env_var: String,
    },
    /// The model string has no `provider/` prefix.
    #[error("model `{0}` is not of the form provider/model-id")]
    BadModelId(String),
    /// The provider has no default endpoint and no base URL was given.
    #[error(
        "unknown provider `{0}`: it has no built-in endpoint, so using it needs its base URL \
         and API (openai-completions or anthropic-messages)"
    )]
    UnknownProvider(String),
    /// The settings disable the provider (`disabledProviders`, CA22): no advisor uses it
    /// and no key of it is read.
    #[error("provider `{0}` is disabled by the settings (disabledProviders)")]
    DisabledProvider(String),
    /// A role alias (`@slow`, CA25) that `modelRoles` does not set.
    #[error("model role `@{0}` is not set (modelRoles.{0})")]
    UnknownRoleAlias(String),
    /// An API kind that is neither dialect.
    #[error("unknown API `{0}`: expected openai-completions or anthropic-messages")]
    UnknownApi(String),
    /// The model catalog could not be read or parsed.
    #[error("model catalog {source_name}: {source}")]
    Catalog {
        /// Where the catalog came from.
        source_name: String,
        /// What went wrong.
        source: ErrorSource,
    },
    /// A `modes.json` file could not be parsed.
    #[error("{path}: {message}")]
    Modes {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The HTTP client could not be created.
    #[error("cannot create the HTTP client: {0}")]
    Http(#[source] ErrorSource),
}

/// The underlying error of a [`ProviderError`], kept as its `source()`: shared, so the error
/// stays `Clone`, and compared by its text.
#[derive(Debug, Clone)]
pub struct ErrorSource(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl ErrorSource {
    /// Keeps `error`.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(error))
    }

    /// A cause that is only a sentence.
    pub fn message(text: impl Into<String>) -> Self {
        #[derive(Debug, thiserror::Error)]
        #[error("{0}")]
        struct Text(String);
        Self::new(Text(text.into()))
    }
}

impl std::fmt::Display for ErrorSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ErrorSource {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for ErrorSource {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for ErrorSource {}

/// The longest `Retry-After` taken as given (30 days): a guard against overflow, not a
/// policy. Whether a long wait pauses the advisor is the agent's decision.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30 * 86_400);

/// Parses a `Retry-After` value: delay seconds (decimals accepted) or an HTTP-date
/// relative to `now`. A date in the past gives a zero delay; anything longer than
/// [`MAX_RETRY_AFTER`] is cut to it.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Some(Duration::from_secs_f64(
                secs.min(MAX_RETRY_AFTER.as_secs_f64()),
            ));
        }
        return None;
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(MAX_RETRY_AFTER),
    )
}

/// Whether a provider's error text says the prompt did not fit the context window.
pub fn mentions_context_overflow(text: &str) -> bool {
    const PHRASES: [&str; 13] = [
        "context_length",
        "context length",
        "context_window",
        "context window",
        "context size",
        "maximum context",
        "prompt is too long",
        "prompt too long",
        "input is too long",
        "too many tokens",
        "too many input tokens",
        "exceed_context",
        "reduce the length",
    ];
    let t = text.to_ascii_lowercase();
    PHRASES.iter().any(|p| t.contains(p))
}

/// Whether an error text says the account is out of quota or credits.
fn mentions_quota(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("insufficient_quota")
        || t.contains("exceeded your current quota")
        || t.contains("insufficient credits")
        || t.contains("credit balance is too low")
}

/// Whether an error text says the model does not exist.
fn mentions_unknown_model(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("model_not_found")
        || t.contains("not a valid model")
        || t.contains("model not found")
        || t.contains("does not exist")
        || t.contains("no endpoints found")
        || t.contains("unknown model")
}

/// Cuts an error body to a readable length for messages.
pub fn excerpt(text: &str) -> String {
    let t = text.trim();
    let mut out: String = t.chars().take(400).collect();
    if out.len() < t.len() {
        out.push('…');
    }
    out
}

/// Classifies a non-success HTTP answer (M4):
/// - 400/413 whose body mentions the context length → [`ModelError::ContextOverflow`];
/// - 401, 402, 403, 404, an unknown model or an exhausted quota → [`ModelError::Permanent`]
///   (retrying cannot fix them; F3 pauses the advisor);
/// - 408, 409, 425, 429, 5xx and 529 → [`ModelError::Retryable`] with `Retry-After`;
/// - any other 4xx → [`ModelError::Retryable`] without a delay: the request itself may be at
///   fault, so it counts as a failure (F1) and three of them drop the batch (F2), instead of
///   pausing the advisor for good.
pub fn classify_status(status: u16, retry_after: Option<Duration>, body: &str) -> ModelError {
    let message = format!("HTTP {status}: {}", excerpt(body));
    if matches!(status, 400 | 413 | 422) && mentions_context_overflow(body) {
        return ModelError::ContextOverflow {
            usage: None,
            message,
        };
    }
    if matches!(status, 401..=404) || mentions_quota(body) {
        return ModelError::Permanent { message };
    }
    if matches!(status, 400 | 422) && mentions_unknown_model(body) {
        return ModelError::Permanent { message };
    }
    ModelError::Retryable {
        usage: None,
        message,
        retry_after,
    }
}

/// Classifies an error reported inside a 200 stream (an OpenAI-style `{"error":…}` chunk
/// or an Anthropic `error` event) from its type/code and message.
pub fn classify_stream_error(kind: &str, message: &str) -> ModelError {
    let text = format!("stream error {kind}: {}", excerpt(message));
    let both = format!("{kind} {message}");
    if mentions_context_overflow(&both) {
        return ModelError::ContextOverflow {
            usage: None,
            message: text,
        };
    }
    let permanent_kinds = [
        "authentication_error",
        "permission_error",
        "not_found_error",
        "invalid_api_key",
        "401",
        "402",
        "403",
        "404",
    ];
    if permanent_kinds.contains(&kind) || mentions_quota(&both) || mentions_unknown_model(message) {
        return ModelError::Permanent { message: text };
    }
    ModelError::Retryable {
        usage: None,
        message: text,
        retry_after: None,
    }
}

/// Renders a transport error with its source chain (no key ever appears: keys travel in
/// headers, and reqwest errors name only the URL).
pub fn describe_transport(err: &reqwest::Error) -> String {
    let mut out = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn date(text: &str) -> SystemTime {
        httpdate::parse_http_date(text).unwrap()
    }

    #[test]
    fn m4_retry_after_seconds() {
        let now = UNIX_EPOCH;
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after(" 1.5 ", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_retry_after("-3", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("inf", now), None);
    }

    #[test]
    fn m4_retry_after_100000_is_passed_through_uncapped() {
        assert_eq!(
            parse_retry_after("100000", UNIX_EPOCH),
            Some(Duration::from_secs(100_000))
        );
        // Only an absurd value is cut, to the 30-day overflow guard.
        assert_eq!(
            parse_retry_after("1e300", UNIX_EPOCH),
            Some(MAX_RETRY_AFTER)
        );
        let now = date("Wed, 21 Oct 2015 07:28:00 GMT");
        assert_eq!(
            parse_retry_after("Fri, 23 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(2 * 86_400))
        );
        assert_eq!(
            parse_retry_after("Sat, 21 Oct 2045 07:28:00 GMT", now),
            Some(MAX_RETRY_AFTER)
        );
    }

    #[test]
    fn m4_retry_after_http_date() {
        let now = date("Wed, 21 Oct 2015 07:28:00 GMT");
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        // The obsolete formats HTTP still allows are read too.
        assert_eq!(
            parse_retry_after("Wednesday, 21-Oct-15 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Thu, 29 Foo 2024 00:00:00 GMT", now),
            None
        );
    }

    #[test]
    fn m4_status_classes() {
        let retry = Some(Duration::from_secs(2));
        assert!(matches!(
            classify_status(429, retry, "slow down"),
            ModelError::Retryable { retry_after, .. } if retry_after == retry
        ));
        for s in [500, 502, 503, 529] {
            assert!(matches!(
                classify_status(s, None, ""),
                ModelError::Retryable { .. }
            ));
        }
        for s in [401, 403, 402, 404] {
            assert!(matches!(
                classify_status(s, None, "nope"),
                ModelError::Permanent { .. }
            ));
        }
        assert!(matches!(
            classify_status(429, None, r#"{"error":{"code":"insufficient_quota"}}"#),
            ModelError::Permanent { .. }
        ));
        assert!(matches!(
            classify_status(
                400,
                None,
                r#"{"error":{"message":"The model `x` does not exist"}}"#
            ),
            ModelError::Permanent { .. }
        ));
    }

    #[test]
    fn g5_context_overflow_bodies() {
        for body in [
            r#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 128000 tokens"}}"#,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
        ] {
            assert!(
                matches!(
                    classify_status(400, None, body),
                    ModelError::ContextOverflow { .. }
                ),
                "{body}"
            );
        }
        assert!(matches!(
            classify_status(413, None, "context length exceeded"),
            ModelError::ContextOverflow { .. }
        ));
        assert!(matches!(
            classify_status(400, None, "bad field"),
            ModelError::Retryable {
                retry_after: None,
                ..
            }
        ));
    }

    #[test]
    fn f1_stream_error_kinds() {
        assert!(matches!(
            classify_stream_error("overloaded_error", "Overloaded"),
            ModelError::Retryable { .. }
        ));
        assert!(matches!(
            classify_stream_error("authentication_error", "bad key"),
            ModelError::Permanent { .. }
        ));
        assert!(matches!(
            classify_stream_error("invalid_request_error", "prompt is too long"),
            ModelError::ContextOverflow { .. }
        ));
    }
}
