//! Model providers over reqwest (SPEC §10): the `openai-completions` dialect (OpenAI,
//! OpenRouter, llama.cpp, vLLM, Ollama) and the `anthropic-messages` dialect, both
//! streaming, with usage normalised into one shape (G4) and failures classified (M4).
//!
//! Build a client from the advisor's role string with [`build_client`]:
//!
//! ```no_run
//! use advisor::providers::{build_client, Catalog, ModelSpec};
//! let catalog = Catalog::builtin().expect("built-in catalog");
//! let spec = ModelSpec::role("openrouter/z-ai/glm-5.2:high");
//! let lookup = |name: &str| std::env::var(name).ok();
//! let client = build_client(&spec, &catalog, &lookup).expect("client");
//! ```

mod anthropic;
mod catalog;
mod error;
mod fallback;
mod http;
mod openai;
mod resolve;
mod sse;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

pub use catalog::{Catalog, CatalogEntry, Prices, MAX_CATALOG_BYTES};
pub use error::{ErrorSource, ProviderError};
pub use fallback::build_fallbacks;
pub use http::{event_cap, reply_cap, BoundField, EndpointQuirks};
pub(crate) use resolve::resolve_role;
pub use resolve::{
    advisor_role_from_modes, advisor_role_from_modes_file, expand_role_alias, modes_candidates,
    MAX_MODES_BYTES,
};

use crate::model::{ModelClient, ModelFuture, ModelInfo, ModelRequest, ThinkingLevel, Usage};

/// Default bound on output tokens per request (`advisor.maxOutputTokens`).
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 4096;
/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Default idle-read timeout: the longest silence tolerated between two body chunks.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(180);
/// Default total limit of one model call (`advisor.requestTimeoutSecs`).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// The wire dialect a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiKind {
    /// OpenAI Chat Completions (`POST {base}/chat/completions`).
    OpenAiCompletions,
    /// Anthropic Messages (`POST {base}/messages`).
    AnthropicMessages,
}

impl ApiKind {
    /// The name used in settings and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAiCompletions => "openai-completions",
            Self::AnthropicMessages => "anthropic-messages",
        }
    }
}

impl FromStr for ApiKind {
    type Err = ProviderError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "openai-completions" => Ok(Self::OpenAiCompletions),
            "anthropic-messages" => Ok(Self::AnthropicMessages),
            other => Err(ProviderError::UnknownApi(other.to_string())),
        }
    }
}

impl fmt::Display for ApiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything one client needs. The key is never logged and `Debug` redacts it (and every
/// extra header value).
#[derive(Clone)]
pub struct ProviderConfig {
    /// The dialect.
    pub api: ApiKind,
    /// The provider name (`openrouter`, `openai`, `anthropic`, `ollama`, …); selects
    /// provider-specific request fields.
    pub provider: String,
    /// Base URL, e.g. `https://openrouter.ai/api/v1` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// The API key, if the server wants one.
    pub api_key: Option<String>,
    /// The model id sent on the wire (without the provider prefix).
    pub model_id: String,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Reasoning effort used when a request does not say otherwise.
    pub thinking: ThinkingLevel,
    /// Cap on output tokens per request (`advisor.maxOutputTokens`).
    pub max_output_tokens: u32,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Idle-read timeout (per chunk).
    pub idle_timeout: Duration,
    /// Total limit of one call, from sending the request to the end of the stream
    /// (`advisor.requestTimeoutSecs`); passing it is a retryable failure (F1).
    pub request_timeout: Duration,
    /// Catalog facts (id = `provider/model`).
    pub info: ModelInfo,
    /// Catalog prices, used when the provider reports no cost.
    pub prices: Prices,
}

impl ProviderConfig {
    /// A configuration with defaults: no key, no extra headers, `medium` thinking, a 4096
    /// output cap, the default timeouts and limit and the unknown-model catalog facts.
    pub fn new(api: ApiKind, provider: &str, base_url: &str, model_id: &str) -> Self {
        let resolved = Catalog::empty().resolve(&format!("{provider}/{model_id}"), false);
        Self {
            api,
            provider: provider.to_string(),
            base_url: base_url.to_string(),
            api_key: None,
            model_id: model_id.to_string(),
            headers: Vec::new(),
            thinking: ThinkingLevel::Medium,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            info: resolved.info,
            prices: resolved.prices,
        }
    }

    /// The output bound of one request: the smallest non-zero of what the request asks,
    /// the configured cap and the model's maximum output.
    pub fn output_bound(&self, requested: u32) -> u32 {
        let model_max = u32::try_from(self.info.max_output).unwrap_or(u32::MAX);
        [requested, self.max_output_tokens, model_max]
            .into_iter()
            .filter(|n| *n > 0)
            .min()
            .unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS)
    }

    /// `base_url` joined with an endpoint path.
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}/{}", self.base_url.trim_end_matches('/'), path)
    }

    /// The facts reported through [`ModelClient::info`]: the catalog's, with the output
    /// bound lowered to the configured cap.
    pub fn reported_info(&self) -> ModelInfo {
        let mut info = self.info.clone();
        info.max_output = info.max_output.min(u64::from(self.max_output_tokens));
        info
    }

    fn http_client(&self) -> Result<reqwest::Client, ProviderError> {
        reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .build()
            .map_err(|e| ProviderError::Http(ErrorSource::new(e)))
    }
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, _)| (k.as_str(), "[redacted]"))
            .collect();
        f.debug_struct("ProviderConfig")
            .field("api", &self.api)
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("model_id", &self.model_id)
            .field("headers", &headers)
            .field("thinking", &self.thinking)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("info", &self.info)
            .field("prices", &self.prices)
            .finish()
    }
}

/// What the configuration and the command line say about the advisor model.
#[derive(Clone, Default)]
pub struct ModelSpec {
    /// The role string `provider/model-id[:thinking]` (`modelRoles.advisor`, `--model`).
    pub role: Option<String>,
    /// Base URL override (`--base-url`); with it, any provider name works and no key is
    /// required.
    pub base_url: Option<String>,
    /// Dialect override (`--api`).
    pub api: Option<ApiKind>,
    /// `advisor.maxOutputTokens` (default 4096).
    pub max_output_tokens: Option<u32>,
    /// A key from the settings; wins over the environment.
    pub api_key: Option<String>,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Connect timeout override.
    pub connect_timeout: Option<Duration>,
    /// Idle-read timeout override.
    pub idle_timeout: Option<Duration>,
    /// Total limit per call (`advisor.requestTimeoutSecs`; default 300 s).
    pub request_timeout: Option<Duration>,
    /// `disabledProviders` (CA22): a role of one of these does not resolve, and its key is
    /// never looked up.
    pub disabled_providers: Vec<String>,
}

impl ModelSpec {
    /// A spec with only a role string.
    pub fn role(role: &str) -> Self {
        Self {
            role: Some(role.to_string()),
            ..Self::default()
        }
    }
}

impl fmt::Debug for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelSpec")
            .field("role", &self.role)
            .field("base_url", &self.base_url)
            .field("api", &self.api)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("disabled_providers", &self.disabled_providers)
            .finish()
    }
}

/// Built-in endpoints: provider, dialect, base URL, whether a key is required.
const KNOWN_PROVIDERS: &[(&str, ApiKind, &str, bool)] = &[
    (
        "openrouter",
        ApiKind::OpenAiCompletions,
        "https://openrouter.ai/api/v1",
        true,
    ),
    (
        "openai",
        ApiKind::OpenAiCompletions,
        "https://api.openai.com/v1",
        true,
    ),
    (
        "anthropic",
        ApiKind::AnthropicMessages,
        "https://api.anthropic.com/v1",
        true,
    ),
    (
        "ollama",
        ApiKind::OpenAiCompletions,
        "http://127.0.0.1:11434/v1",
        false,
    ),
    (
        "llamacpp",
        ApiKind::OpenAiCompletions,
        "http://127.0.0.1:8080/v1",
        false,
    ),
    (
        "vllm",
        ApiKind::OpenAiCompletions,
        "http://127.0.0.1:8000/v1",
        false,
    ),
];

/// The environment variable holding a provider's key: `OPENROUTER_API_KEY`,
/// `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, and `<PROVIDER>_API_KEY` for any other.
pub(crate) fn key_env_var(provider: &str) -> String {
    let mut name: String = provider
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    name.push_str("_API_KEY");
    name
}

/// Resolves a [`ModelSpec`] into a [`ProviderConfig`] (M1, M2, M3): the role string is
/// split into a catalog id and a trailing `:level` of thinking, if any; the dialect and
/// base URL come from the overrides or the provider's defaults; the key from the spec or `key_lookup(<PROVIDER>_API_KEY)`
/// (required only for a hosted provider at its default URL); window, output bound and
/// prices from the catalog (an unknown model gets the defaults and a warning).
pub fn resolve_config(
    spec: &ModelSpec,
    catalog: &Catalog,
    key_lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ProviderConfig, ProviderError> {
    let role = spec.role.as_deref().unwrap_or("").trim();
    if role.is_empty() {
        return Err(ProviderError::NoModel);
    }
    let resolved = resolve_role(role, catalog)?;
    // CA22: checked before anything else of the provider is looked at, its key included.
    if crate::settings::provider_listed(&spec.disabled_providers, &resolved.provider) {
        return Err(ProviderError::DisabledProvider(resolved.provider));
    }
    let known = KNOWN_PROVIDERS
        .iter()
        .find(|(name, ..)| *name == resolved.provider);
    let base_override = spec
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let (base_url, key_required) = match (base_override, known) {
        (Some(url), _) => (url.to_string(), false),
        (None, Some((_, _, url, required))) => (url.to_string(), *required),
        (None, None) => return Err(ProviderError::UnknownProvider(resolved.provider)),
    };
    let api = spec
        .api
        .or(known.map(|(_, api, ..)| *api))
        .unwrap_or(ApiKind::OpenAiCompletions);
    let env_var = key_env_var(&resolved.provider);
    let api_key = spec
        .api_key
        .clone()
        .or_else(|| key_lookup(&env_var))
        .filter(|k| !k.trim().is_empty());
    if key_required && api_key.is_none() {
        return Err(ProviderError::MissingKey {
            provider: resolved.provider,
            env_var,
        });
    }
    let facts = catalog.resolve(&resolved.id(), true);
    Ok(ProviderConfig {
        api,
        provider: resolved.provider.clone(),
        base_url,
        api_key,
        model_id: resolved.model.clone(),
        headers: spec.headers.clone(),
        thinking: resolved.thinking,
        max_output_tokens: spec
            .max_output_tokens
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
        connect_timeout: spec.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT),
        idle_timeout: spec.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT),
        request_timeout: spec
            .request_timeout
            .filter(|d| !d.is_zero())
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT),
        info: facts.info,
        prices: facts.prices,
    })
}

/// A streaming model client for either dialect: the configuration, one HTTP client, and
/// the dialect's request body, headers and stream decoder chosen by `config.api`.
#[derive(Debug, Clone)]
pub struct StreamingClient {
    transport: Arc<http::Transport>,
}

impl StreamingClient {
    /// A client for `config` (its HTTP client has a connect timeout; each call has the
    /// configured idle timeout and total limit).
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        Ok(Self {
            transport: Arc::new(http::Transport::new(config)?),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.transport.config
    }

    /// A client for `config` that sends over `http`, an HTTP client (and its connection
    /// pool) shared with other sessions (A6).
    pub fn with_http(config: ProviderConfig, http: reqwest::Client) -> Self {
        Self::with_endpoint(config, http, Arc::default())
    }

    /// A client for `config` over a shared `http` client that also shares what its
    /// endpoint was found to refuse (`quirks`, P10) with the other clients of that endpoint.
    pub fn with_endpoint(
        config: ProviderConfig,
        http: reqwest::Client,
        quirks: Arc<EndpointQuirks>,
    ) -> Self {
        Self {
            transport: Arc::new(http::Transport::shared(config, http, quirks)),
        }
    }
}

impl ModelClient for StreamingClient {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        let transport = Arc::clone(&self.transport);
        Box::pin(async move {
            match transport.config.api {
                ApiKind::OpenAiCompletions => openai::send(&transport, &request).await,
                ApiKind::AnthropicMessages => anthropic::send(&transport, &request).await,
            }
        })
    }

    fn info(&self) -> ModelInfo {
        self.transport.config.reported_info()
    }

    fn thinking(&self) -> ThinkingLevel {
        self.transport.config.thinking
    }
}

/// Builds a client for `config`'s dialect.
pub fn client_for(config: ProviderConfig) -> Result<Arc<dyn ModelClient>, ProviderError> {
    Ok(Arc::new(StreamingClient::new(config)?))
}

/// Resolves `spec` ([`resolve_config`]) and builds the client. This is what the CLI's
/// `--model`, `--base-url` and `--api` flags feed.
pub fn build_client(
    spec: &ModelSpec,
    catalog: &Catalog,
    key_lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ModelClient>, ProviderError> {
    client_for(resolve_config(spec, catalog, key_lookup)?)
}

/// Completes a usage record: the provider's cost when it reported one, else the catalog's
/// prices times the token counts (G4).
pub(crate) fn priced(mut usage: Usage, reported_cost: Option<f64>, prices: &Prices) -> Usage {
    usage.cost = match reported_cost {
        Some(c) if c.is_finite() && c >= 0.0 => c,
        _ => prices.cost(&usage),
    };
    usage
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_keys(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn m2_api_kind_parses_and_prints() {
        assert_eq!(
            "openai-completions".parse::<ApiKind>().unwrap(),
            ApiKind::OpenAiCompletions
        );
        assert_eq!(
            "anthropic-messages".parse::<ApiKind>().unwrap(),
            ApiKind::AnthropicMessages
        );
        assert!("grpc".parse::<ApiKind>().is_err());
        assert_eq!(ApiKind::AnthropicMessages.to_string(), "anthropic-messages");
    }

    #[test]
    fn m2_key_env_var_names() {
        assert_eq!(key_env_var("openrouter"), "OPENROUTER_API_KEY");
        assert_eq!(key_env_var("anthropic"), "ANTHROPIC_API_KEY");
        assert_eq!(key_env_var("openai"), "OPENAI_API_KEY");
        assert_eq!(key_env_var("my-lab"), "MY_LAB_API_KEY");
    }

    #[test]
    fn m1_no_model_error_names_the_settings_and_the_key_and_no_flag() {
        let err = resolve_config(&ModelSpec::default(), &Catalog::empty(), &no_keys).unwrap_err();
        let text = err.to_string();
        for needle in ["OPENROUTER_API_KEY", "modelRoles.advisor", "ADVISOR_MODEL"] {
            assert!(text.contains(needle), "{text}");
        }
        assert!(!text.contains("--"), "only the CLI speaks of flags: {text}");
        assert!(!text.contains('\n'));
    }

    /// M1, V4: the library's errors reach embedders and `advisor serve`'s clients,
    /// who have no command line; none of them tells to pass a flag, and the underlying
    /// errors stay reachable as `source()`.
    #[test]
    fn m1_v4_library_errors_name_no_cli_flag_and_keep_their_source() {
        let errors = [
            ProviderError::NoModel,
            ProviderError::MissingKey {
                provider: "openrouter".into(),
                env_var: "OPENROUTER_API_KEY".into(),
            },
            ProviderError::BadModelId("gpt".into()),
            ProviderError::UnknownProvider("advfake".into()),
            ProviderError::UnknownApi("grpc".into()),
        ];
        for error in errors {
            let text = error.to_string();
            assert!(!text.contains("--") && !text.contains("pass "), "{text}");
        }
        let broken = Catalog::from_json("test catalog", "{").unwrap_err();
        let source = std::error::Error::source(&broken).expect("the JSON error is kept");
        assert!(
            broken.to_string().ends_with(&source.to_string()),
            "{broken}"
        );
    }

    #[test]
    fn m2_missing_key_error_names_key_and_flags() {
        let catalog = Catalog::builtin().unwrap();
        let err = resolve_config(
            &ModelSpec::role("openrouter/z-ai/glm-5.2"),
            &catalog,
            &no_keys,
        )
        .unwrap_err();
        assert_eq!(
            err,
            ProviderError::MissingKey {
                provider: "openrouter".into(),
                env_var: "OPENROUTER_API_KEY".into()
            }
        );
        let text = err.to_string();
        assert!(text.contains("OPENROUTER_API_KEY"), "{text}");
        assert!(!text.contains("--"), "{text}");
    }

    #[test]
    fn m2_hosted_provider_defaults_and_key_lookup() {
        let catalog = Catalog::builtin().unwrap();
        let lookup = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-test".to_string());
        let cfg = resolve_config(
            &ModelSpec::role("anthropic/claude-sonnet-4-5:high"),
            &catalog,
            &lookup,
        )
        .unwrap();
        assert_eq!(cfg.api, ApiKind::AnthropicMessages);
        assert_eq!(cfg.base_url, "https://api.anthropic.com/v1");
        assert_eq!(cfg.model_id, "claude-sonnet-4-5");
        assert_eq!(cfg.api_key.as_deref(), Some("sk-ant-test"));
        assert_eq!(cfg.thinking, ThinkingLevel::High);
        assert_eq!(cfg.info.context_window, 200_000);
        assert_eq!(cfg.max_output_tokens, 4096);
        assert_eq!(cfg.output_bound(100_000), 4096);
        assert_eq!(cfg.reported_info().max_output, 4096);
    }

    #[test]
    fn m2_explicit_base_url_needs_no_key_and_no_catalog_entry() {
        let spec = ModelSpec {
            role: Some("local/qwen3-coder-30b".into()),
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            max_output_tokens: Some(1000),
            ..ModelSpec::default()
        };
        let cfg = resolve_config(&spec, &Catalog::builtin().unwrap(), &no_keys).unwrap();
        assert_eq!(cfg.api, ApiKind::OpenAiCompletions);
        assert_eq!(cfg.api_key, None);
        assert_eq!(cfg.model_id, "qwen3-coder-30b");
        assert_eq!(cfg.info.context_window, 128_000);
        assert_eq!(cfg.output_bound(4096), 1000);
        assert_eq!(
            cfg.endpoint("chat/completions"),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
    }

    #[test]
    fn ca22_a_disabled_provider_does_not_resolve_and_its_key_is_never_read() {
        let looked_up = std::cell::RefCell::new(Vec::new());
        let lookup = |name: &str| {
            looked_up.borrow_mut().push(name.to_string());
            Some("sk-test".to_string())
        };
        let spec = ModelSpec {
            role: Some("openai/gpt-5".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            disabled_providers: vec!["OpenAI".into()],
            ..ModelSpec::default()
        };
        let err = resolve_config(&spec, &Catalog::builtin().unwrap(), &lookup).unwrap_err();
        assert_eq!(err, ProviderError::DisabledProvider("openai".into()));
        assert_eq!(
            err.to_string(),
            "provider `openai` is disabled by the settings (disabledProviders)"
        );
        assert!(looked_up.borrow().is_empty(), "no credential read");
        let other = ModelSpec {
            role: Some("anthropic/claude-sonnet-4-5".into()),
            ..spec
        };
        assert!(resolve_config(&other, &Catalog::builtin().unwrap(), &lookup).is_ok());
        assert_eq!(*looked_up.borrow(), ["ANTHROPIC_API_KEY"]);
    }

    #[test]
    fn m2_unknown_provider_without_base_url_is_an_error() {
        let err = resolve_config(&ModelSpec::role("acme/model"), &Catalog::empty(), &no_keys)
            .unwrap_err();
        assert_eq!(err, ProviderError::UnknownProvider("acme".into()));
        assert!(err.to_string().contains("base URL"), "{err}");
    }

    #[test]
    fn m2_settings_key_wins_and_debug_redacts_it() {
        let spec = ModelSpec {
            role: Some("openai/gpt-5".into()),
            api_key: Some("sk-settings-secret".into()),
            headers: vec![("x-extra".into(), "hdr-secret".into())],
            ..ModelSpec::default()
        };
        let lookup = |_: &str| Some("sk-env-secret".to_string());
        let cfg = resolve_config(&spec, &Catalog::builtin().unwrap(), &lookup).unwrap();
        assert_eq!(cfg.api_key.as_deref(), Some("sk-settings-secret"));
        let shown = format!("{cfg:?} {spec:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("[redacted]"));
    }

    #[test]
    fn g4_reported_cost_wins_over_prices() {
        let prices = Prices {
            input: 1.0,
            output: 1.0,
            cache_read: 1.0,
            cache_write: 1.0,
        };
        let u = Usage {
            input: 1_000_000,
            ..Usage::default()
        };
        assert_eq!(priced(u, Some(0.25), &prices).cost, 0.25);
        assert_eq!(priced(u, None, &prices).cost, 1.0);
    }
}
