//! `session/open` (V2): from the params and the files a session's cwd leads to, the
//! runtime configuration — settings (K1 files, then the params' `advisor:` keys, then the
//! environment), the model (a role string, M1, or a resolved endpoint object), the prompt
//! override (G1), WATCHDOG.md discovery from the cwd (W1), the audit file (G7) and the
//! roster of named advisors (RO23), built with the session setup `advisor replay` shares
//! ([`crate::SessionSetup`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::protocol::{kind, MessagesParam, Params, RpcError, SESSION_ERROR};
use crate::domain::transcript::TranscriptMessage;
use crate::model::{ModelClient, ThinkingLevel};
use crate::providers::{
    resolve_config, resolve_role, ApiKind, Catalog, Prices, ProviderConfig, ProviderError,
};
use crate::roster::{ModelChoice, RosterSetup};
use crate::session::advisor_file_path;
use crate::settings::{
    load_settings, AdvisorSettings, DeliveryPolicy, LoadedSettings, SettingsEnv, SettingsLayer,
};
use crate::setup::{
    provider_spec, session_role, KeyLookup, ModelSource, SessionModel, SessionPrepared,
    SessionSetup,
};
use crate::shared::SharedResources;
use crate::texts::notice;
use crate::watchdog::{bound_context_files, ContextFile};
use serde_json::value::RawValue;

/// What the server applies to sessions that name less themselves.
#[derive(Clone)]
pub struct ServeDefaults {
    /// `--model`: the role for sessions whose `session/open` names no model.
    pub model: Option<String>,
    /// `--base-url`, for roles that do not come from the params.
    pub base_url: Option<String>,
    /// `--api`, likewise.
    pub api: Option<ApiKind>,
    /// The environment's settings (K1: `ADVISOR_MODEL`, `ADVISOR_NO_REVIEW`, agent dir…).
    pub env: SettingsEnv,
    /// Provider keys.
    pub keys: KeyLookup,
    /// The model catalog, read once for every session (A6).
    pub catalog: Arc<Catalog>,
    /// A model every session uses instead of resolving one (tests, benchmarks, embedders).
    pub fixed_model: Option<Arc<dyn ModelClient>>,
}

impl ServeDefaults {
    /// Defaults with no flags, an empty environment, no keys and the built-in catalog.
    pub fn new(catalog: Arc<Catalog>) -> Self {
        Self {
            model: None,
            base_url: None,
            api: None,
            env: SettingsEnv::default(),
            keys: Arc::new(|_| None),
            catalog,
            fixed_model: None,
        }
    }

    /// How a session's models are reached: the catalog, the keys, `--base-url` and `--api`,
    /// over the process's shared HTTP clients (A6).
    pub fn model_source(&self, shared: &Arc<SharedResources>) -> ModelSource {
        ModelSource {
            base_url: self.base_url.clone(),
            api: self.api,
            shared: Some(Arc::clone(shared)),
            ..ModelSource::new(Arc::clone(&self.catalog), Arc::clone(&self.keys))
        }
    }
}

/// The model a session names.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelParam {
    /// `provider/id[:thinking]`, resolved through the catalog (M1).
    Role(String),
    /// An endpoint the host resolved itself.
    Endpoint(Endpoint),
}

/// A resolved endpoint: `{id, baseUrl, api, apiKey?, contextWindow?, maxTokens?, thinking?,
/// cost?}`, plus `provider?`, `headers?` and `reasoning?` when the host has them.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The model id sent on the wire.
    pub id: String,
    /// The provider's name (selects provider-specific request fields; default `custom`).
    pub provider: String,
    /// Base URL.
    pub base_url: String,
    /// Wire dialect.
    pub api: ApiKind,
    /// The key, if any.
    pub api_key: Option<String>,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Context window in tokens.
    pub context_window: Option<u64>,
    /// Maximum output tokens of the model.
    pub max_tokens: Option<u64>,
    /// Reasoning level.
    pub thinking: Option<ThinkingLevel>,
    /// Whether the model reasons.
    pub reasoning: Option<bool>,
    /// Prices per million tokens (pi's `cost` object: input, output, cacheRead, cacheWrite).
    pub cost: Option<Prices>,
}

/// The parsed params of `session/open`.
#[derive(Debug, Clone)]
pub struct OpenParams {
    /// The session id.
    pub session_id: String,
    /// Workspace root; where settings and WATCHDOG.md are found.
    pub cwd: PathBuf,
    /// The agent directory, over the environment's.
    pub agent_dir: Option<PathBuf>,
    /// The host's session file: the audit file goes beside it (G7).
    pub session_file: Option<PathBuf>,
    /// The model, if named.
    pub model: Option<ModelParam>,
    /// The `advisor:` keys, as a settings layer.
    pub settings: SettingsLayer,
    /// Unknown keys in `settings` (shown as notices).
    pub settings_warnings: Vec<String>,
    /// The transcript so far (seeded, X4).
    pub messages: ParsedMessages,
    /// The id of the newest entry of `messages`, when the host names it.
    pub leaf: Option<String>,
    /// The host's own instruction files (`contextFiles`: `[{path, content}]`), replacing
    /// the discovery of AGENTS.md and the rest (P8).
    pub context_files: Option<Vec<ContextFile>>,
    /// Other models the host resolved itself (`providers`: endpoint objects, each naming its
    /// `provider`): a roster entry naming one's provider is reached there (RO8, RO23).
    pub providers: Vec<Endpoint>,
}

/// The most endpoints `providers` may hold (V4).
pub const MAX_PROVIDER_ENDPOINTS: usize = 256;

/// The most files `contextFiles` may hold (V4).
pub const MAX_CONTEXT_FILES: usize = 64;

/// The longest path, in bytes, of a file in `contextFiles` (V4).
pub const MAX_CONTEXT_PATH_BYTES: usize = 4 * 1024;

/// Where the settings of the params are said to come from, in messages.
const PARAMS_SOURCE: &str = "session/open settings";

impl OpenParams {
    /// Reads the params (nothing on disk yet); failures are -32602 naming the field.
    pub fn parse(params: &mut Params) -> Result<Self, RpcError> {
        let session_id = params.string("sessionId")?;
        let cwd = PathBuf::from(params.string("cwd")?);
        let agent_dir = params.opt_string("agentDir")?.map(PathBuf::from);
        let session_file = params.opt_string("sessionFile")?.map(PathBuf::from);
        let leaf = params.opt_string("leaf")?;
        let model = match params.take("model") {
            None => None,
            Some(Value::String(role)) if role.trim().is_empty() => None,
            Some(Value::String(role)) => Some(ModelParam::Role(role)),
            Some(Value::Object(obj)) => Some(ModelParam::Endpoint(parse_endpoint(&obj, "model")?)),
            Some(other) => {
                return Err(RpcError::invalid_params(
                    "model",
                    format!(
                        "must be a role string or an endpoint object, not {}",
                        kind(&other)
                    ),
                ))
            }
        };
        let (settings, settings_warnings) = match params.take("settings") {
            None => (SettingsLayer::default(), Vec::new()),
            Some(Value::Object(obj)) => settings_layer(obj)?,
            Some(other) => {
                return Err(RpcError::invalid_params(
                    "settings",
                    format!("must be an object, not {}", kind(&other)),
                ))
            }
        };
        let messages = match params.take_messages() {
            None => ParsedMessages::default(),
            Some(param) => parse_messages(param, "messages")?,
        };
        let context_files = match params.take("contextFiles") {
            None => None,
            Some(value) => Some(parse_context_files(value)?),
        };
        let providers = match params.take("providers") {
            None => Vec::new(),
            Some(value) => parse_providers(value)?,
        };
        Ok(Self {
            session_id,
            cwd,
            agent_dir,
            session_file,
            model,
            settings,
            settings_warnings,
            messages,
            leaf,
            context_files,
            providers,
        })
    }
}

/// `contextFiles`: a list of at most [`MAX_CONTEXT_FILES`] `{path, content}` objects, each
/// path at most [`MAX_CONTEXT_PATH_BYTES`] long, else -32602 naming `contextFiles`; kept only
/// as far as the `<project-context>` block uses them (each content cut at 32 KiB, all of
/// them, paths included, at 128 KiB; P8).
fn parse_context_files(value: Value) -> Result<Vec<ContextFile>, RpcError> {
    let invalid = |why: String| RpcError::invalid_params("contextFiles", why);
    match &value {
        Value::Array(items) if items.len() > MAX_CONTEXT_FILES => {
            return Err(invalid(format!(
                "holds more than {MAX_CONTEXT_FILES} files"
            )));
        }
        _ => {}
    }
    let files = serde_json::from_value::<Vec<ContextFile>>(value)
        .map_err(|e| invalid(format!("must be a list of {{path, content}} objects: {e}")))?;
    if let Some(i) = files
        .iter()
        .position(|f| f.path.len() > MAX_CONTEXT_PATH_BYTES)
    {
        return Err(invalid(format!(
            "the path of file {i} is longer than {MAX_CONTEXT_PATH_BYTES} bytes"
        )));
    }
    Ok(bound_context_files(files))
}

/// `providers`: a list of at most [`MAX_PROVIDER_ENDPOINTS`] endpoint objects, each naming
/// its `provider`; a bad one is -32602 naming it (`providers[2].api`).
fn parse_providers(value: Value) -> Result<Vec<Endpoint>, RpcError> {
    let Value::Array(items) = value else {
        return Err(RpcError::invalid_params(
            "providers",
            format!("must be a list of endpoint objects, not {}", kind(&value)),
        ));
    };
    if items.len() > MAX_PROVIDER_ENDPOINTS {
        return Err(RpcError::invalid_params(
            "providers",
            format!("holds more than {MAX_PROVIDER_ENDPOINTS} endpoints"),
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let field = format!("providers[{i}]");
            let Value::Object(obj) = item else {
                return Err(RpcError::invalid_params(
                    &field,
                    format!("must be an endpoint object, not {}", kind(&item)),
                ));
            };
            let named = obj.get("provider").and_then(Value::as_str);
            if named.is_none_or(|p| p.trim().is_empty()) {
                return Err(RpcError::invalid_params(
                    &format!("{field}.provider"),
                    "must name the provider",
                ));
            }
            parse_endpoint(&obj, &field)
        })
        .collect()
}

/// What a held message costs the serve process's budget for held transcripts besides its
/// JSON bytes (V4): more than its shared slot in a transcript and its fixed-size part take
/// (`v4_a_held_message_costs_at_most_a_small_constant_plus_its_bytes` checks it).
pub const MESSAGE_OVERHEAD_BYTES: usize = 256;

/// Messages of a call with what holding them costs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedMessages {
    /// The messages.
    pub messages: Vec<TranscriptMessage>,
    /// Their JSON bytes plus [`MESSAGE_OVERHEAD_BYTES`] each.
    pub cost: usize,
}

/// Transcript messages (SPEC §2 shapes); an entry that is not an object is -32602 naming it.
/// Raw JSON is read an entry at a time (no JSON tree of the whole array is built).
pub fn parse_messages(param: MessagesParam, field: &str) -> Result<ParsedMessages, RpcError> {
    let not_array = |value: &Value| {
        RpcError::invalid_params(
            field,
            format!("must be an array of messages, not {}", kind(value)),
        )
    };
    let one = |i: usize, text: &str| {
        serde_json::from_str::<TranscriptMessage>(text)
            .map_err(|e| RpcError::invalid_params(&format!("{field}[{i}]"), e))
    };
    let mut parsed = ParsedMessages::default();
    match param {
        MessagesParam::Raw(raw) => {
            let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(raw.get()) else {
                let value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                return Err(not_array(&value));
            };
            parsed.messages.reserve_exact(items.len());
            for (i, item) in items.into_iter().enumerate() {
                parsed.messages.push(one(i, item.get())?);
                parsed.cost += item.get().len() + MESSAGE_OVERHEAD_BYTES;
            }
        }
        MessagesParam::Value(Value::Array(items)) => {
            for (i, item) in items.into_iter().enumerate() {
                let text = item.to_string();
                parsed.messages.push(one(i, &text)?);
                parsed.cost += text.len() + MESSAGE_OVERHEAD_BYTES;
            }
        }
        MessagesParam::Value(other) => return Err(not_array(&other)),
    }
    Ok(parsed)
}

/// The params' `advisor:` keys through the settings-file parser (JSON is YAML), so the
/// keys, values and errors are exactly K1's.
fn settings_layer(obj: Map<String, Value>) -> Result<(SettingsLayer, Vec<String>), RpcError> {
    let text = json!({ "advisor": Value::Object(obj) }).to_string();
    let (layer, warnings) = SettingsLayer::parse(Path::new(PARAMS_SOURCE), &text)
        .map_err(|e| RpcError::invalid_params("settings", format!("is not valid: {e}")))?;
    Ok((layer, warnings.iter().map(ToString::to_string).collect()))
}

fn parse_endpoint(obj: &Map<String, Value>, field: &str) -> Result<Endpoint, RpcError> {
    let p = Params::nested(obj.clone(), field);
    let id = p.string("id")?;
    let base_url = p.string("baseUrl")?;
    let api_name = p.string("api")?;
    let api = api_name.parse::<ApiKind>().map_err(|_| {
        p.invalid(
            "api",
            format!("`{api_name}` is not supported (openai-completions, anthropic-messages)"),
        )
    })?;
    let api_key = p.opt_string("apiKey")?.filter(|k| !k.trim().is_empty());
    let provider = p
        .opt_string("provider")?
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "custom".to_string());
    let count = |name: &str| -> Result<Option<u64>, RpcError> {
        match p.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| p.invalid(name, "must be a positive integer")),
        }
    };
    let context_window = count("contextWindow")?;
    let max_tokens = count("maxTokens")?;
    let thinking = match p.opt_string("thinking")? {
        None => None,
        Some(level) => Some(ThinkingLevel::parse(level.trim()).ok_or_else(|| {
            p.invalid(
                "thinking",
                "must be one of off, minimal, low, medium, high, xhigh",
            )
        })?),
    };
    let reasoning = match p.get("reasoning") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(p.invalid("reasoning", "must be a boolean")),
    };
    let cost = match p.get("cost") {
        None => None,
        Some(v) => Some(
            serde_json::from_value::<Prices>(v.clone())
                .map_err(|e| p.invalid("cost", format!("is not a price object: {e}")))?,
        ),
    };
    let headers = match p.get("headers") {
        None => Vec::new(),
        Some(Value::Object(h)) => h
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(p.invalid(&format!("headers.{k}"), "must be a string")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(p.invalid("headers", "must be an object of strings")),
    };
    Ok(Endpoint {
        id,
        provider,
        base_url,
        api,
        api_key,
        headers,
        context_window,
        max_tokens,
        thinking,
        reasoning,
        cost,
    })
}

/// The provider configuration of an endpoint: the catalog's facts for `provider/id` when it
/// knows the model, overridden by what the endpoint says; output capped by
/// `advisor.maxOutputTokens`.
pub fn endpoint_config(ep: &Endpoint, catalog: &Catalog, max_output_tokens: u32) -> ProviderConfig {
    let mut config = ProviderConfig::new(ep.api, &ep.provider, &ep.base_url, &ep.id);
    let facts = catalog.resolve(&format!("{}/{}", ep.provider, ep.id), false);
    config.info = facts.info;
    config.prices = facts.prices;
    if let Some(window) = ep.context_window {
        config.info.context_window = window;
    }
    if let Some(max) = ep.max_tokens {
        config.info.max_output = max;
    }
    if let Some(reasoning) = ep.reasoning {
        config.info.reasoning = reasoning;
    }
    if let Some(cost) = ep.cost {
        config.prices = cost;
    }
    if let Some(thinking) = ep.thinking {
        config.thinking = thinking;
    }
    config.api_key = ep.api_key.clone();
    config.headers = ep.headers.clone();
    config.max_output_tokens = max_output_tokens.max(1);
    config
}

/// A session's settings: the files, then the params' keys, then the environment. The
/// session is enabled unless the params, or the files when the params do not say, set
/// `enabled: false` in so many words (V2: the host owns on/off).
pub fn session_settings(
    loaded: &LoadedSettings,
    params: &SettingsLayer,
    env: &SettingsEnv,
) -> AdvisorSettings {
    let mut settings = loaded.settings.clone();
    params.apply_to(&mut settings);
    settings.enabled = match params.enabled {
        Some(on) => on,
        None => loaded.disabled_by.is_none(),
    };
    settings.with_env(env)
}

/// The advisor transcript file of a session file given by a client (P9): derived and
/// checked by [`advisor_file_path`], a relative path taken from the session's `cwd`. A path
/// that is refused (V4, P9) keeps no file and is one notice.
pub fn audit_path(session_file: &Path, cwd: &Path) -> Result<PathBuf, String> {
    advisor_file_path(session_file, cwd)
        .map_err(|e| notice("noTranscriptFile", &[("error", &e.to_string())]))
}

/// Reads the session's files and builds its configuration with the session setup both
/// hosts share ([`SessionSetup`]). Blocking (files): run it off the actor thread. Models
/// are built over the HTTP clients of `shared` (one per endpoint for every session of the
/// process, A6) with the session's `advisor.requestTimeoutSecs` and
/// `advisor.maxOutputTokens`. A bad settings file is -32000; a model named in the params
/// that cannot be built is -32602 naming `model`; one from the files or defaults that
/// cannot be built (a modes.json that is not a regular file, say) leaves the session
/// without a model, with a notice (K2).
pub fn prepare(
    open: OpenParams,
    defaults: &ServeDefaults,
    shared: &Arc<SharedResources>,
) -> Result<SessionPrepared, RpcError> {
    let cwd = session_cwd(&open.cwd)?;
    let mut env = defaults.env.clone();
    if let Some(dir) = &open.agent_dir {
        env.agent_dir = Some(dir.display().to_string());
    }
    let watchdog = env.watchdog_config(&cwd);
    let agent_dir = watchdog.agent_dir.clone();
    let loaded = load_settings(agent_dir.as_deref(), &cwd)
        .map_err(|e| RpcError::new(SESSION_ERROR, format!("settings: {e}")))?;
    let mut notices = warning_notices(&loaded.warnings, &open.settings_warnings);
    let settings = session_settings(&loaded, &open.settings, &env);
    let mut models = defaults.model_source(shared);
    models.endpoints = open
        .providers
        .iter()
        .map(|ep| endpoint_config(ep, &defaults.catalog, settings.max_output_tokens))
        .collect();
    let dirs = (cwd.as_path(), agent_dir.as_deref());
    let (model, model_notice) =
        session_model(&open, defaults, &settings, &models, &env, &loaded, dirs)?;
    notices.extend(model_notice);
    let (audit_path, audit_notice) = match open.session_file.as_deref().map(|f| audit_path(f, &cwd))
    {
        Some(Ok(path)) => (Some(path), None),
        Some(Err(notice)) => (None, Some(notice)),
        None => (None, None),
    };
    let setup = SessionSetup {
        session_id: open.session_id,
        root: cwd,
        watchdog: Some(watchdog),
        loaded,
        settings,
        host_layer: Some((PathBuf::from(PARAMS_SOURCE), open.settings)),
        model,
        models,
        context_files: open.context_files.map(Arc::from),
        audit_path,
    };
    let prepared = setup.build();
    notices.extend(prepared.notices);
    notices.extend(audit_notice);
    Ok(SessionPrepared {
        config: prepared.config,
        notices,
    })
}

/// The session's model (M1): the fixed one, else the one named in the params (a role, or
/// an endpoint the host resolved), else the role the flags, environment and files name
/// (`agent_dir` and `cwd` locate modes.json). A model named in the params that cannot be
/// built is -32602 naming `model`; one from the files that cannot be built leaves the
/// session without a model, with a notice saying why (K2).
fn session_model(
    open: &OpenParams,
    defaults: &ServeDefaults,
    settings: &AdvisorSettings,
    models: &ModelSource,
    env: &SettingsEnv,
    loaded: &LoadedSettings,
    dirs: (&Path, Option<&Path>),
) -> Result<(SessionModel, Option<String>), RpcError> {
    let (cwd, agent_dir) = dirs;
    let Some(param) = open
        .model
        .as_ref()
        .filter(|_| defaults.fixed_model.is_none())
    else {
        if let Some(fixed) = &defaults.fixed_model {
            return Ok((SessionModel::Fixed(Arc::clone(fixed)), None));
        }
        let role = defaults.model.as_deref();
        let built = session_role(role, env, loaded, cwd, agent_dir)
            .and_then(|role| Ok((models.build(&models.spec(role.clone(), settings))?, role)));
        return Ok(match built {
            Ok((model, selector)) => (SessionModel::Own { model, selector }, None),
            Err(ProviderError::NoModel) => (SessionModel::None, None),
            Err(e) => (
                SessionModel::None,
                Some(notice("noModel", &[("error", &e.to_string())])),
            ),
        });
    };
    // CA22: a model of a provider the settings disable leaves the session without one, the
    // notice naming the provider; nothing of the provider is looked up.
    let provider = match param {
        ModelParam::Endpoint(ep) => Some(ep.provider.clone()),
        ModelParam::Role(role) => resolve_role(role, &defaults.catalog)
            .ok()
            .map(|r| r.provider),
    };
    if let Some(provider) = provider.filter(|p| settings.provider_disabled(p)) {
        let error = ProviderError::DisabledProvider(provider).to_string();
        return Ok((
            SessionModel::None,
            Some(notice("noModel", &[("error", &error)])),
        ));
    }
    let config = model_config(param, defaults, settings)
        .map_err(|e| RpcError::invalid_params("model", e))?;
    let model = models
        .client(config.clone())
        .map_err(|e| RpcError::invalid_params("model", e))?;
    Ok((
        match param {
            // The advisor's model selector, for its backup chain (P6).
            ModelParam::Role(role) => SessionModel::Own {
                model,
                selector: Some(role.clone()),
            },
            ModelParam::Endpoint(_) => SessionModel::Endpoint {
                model,
                config: Box::new(config),
            },
        },
        None,
    ))
}

/// The roster of a session as `session/open` reports it (RO23): each advisor in roster
/// order — `name`, `slug`, `enabled`, `model` (`provider/id`) with `thinking`, or `noModel`
/// (why not), `policy` (its own, else the session's), `maxSeverity`, `when` (`{paths}`,
/// absent when it reviews every update) — and the warnings, one text line each.
pub fn roster_json(setup: &RosterSetup, session_policy: DeliveryPolicy) -> Value {
    let advisors: Vec<Value> = setup
        .roster
        .advisors
        .iter()
        .map(|advisor| {
            let policy = match advisor.policy.value {
                Some(own) => json!(own.as_str()),
                None => json!(session_policy),
            };
            let mut entry = json!({
                "name": advisor.name,
                "slug": advisor.slug,
                "enabled": advisor.enabled.value,
                "policy": policy,
                "maxSeverity": advisor.max_severity.value.as_str(),
            });
            match &advisor.model.value {
                ModelChoice::Resolved {
                    provider,
                    model,
                    thinking,
                    ..
                } => {
                    entry["model"] = json!(format!("{provider}/{model}"));
                    entry["thinking"] = json!(thinking.as_str());
                }
                ModelChoice::NoModel { reason, .. } => entry["noModel"] = json!(reason),
            }
            if let Some(when) = &advisor.when.value {
                entry["when"] = json!({ "paths": when.patterns() });
            }
            entry
        })
        .collect();
    let warnings: Vec<String> = setup
        .roster
        .warnings
        .iter()
        .map(|w| w.to_string())
        .collect();
    json!({ "advisors": advisors, "warnings": warnings })
}

/// The session's working directory, which must be one (V2), made canonical where it can be.
fn session_cwd(cwd: &Path) -> Result<PathBuf, RpcError> {
    if !cwd.is_dir() {
        return Err(RpcError::invalid_params(
            "cwd",
            format!("`{}` is not a directory", cwd.display()),
        ));
    }
    Ok(std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf()))
}

/// The notices of the settings files' warnings, then of the params' own settings.
fn warning_notices(
    files: &[impl std::fmt::Display],
    params: &[impl std::fmt::Display],
) -> Vec<String> {
    files
        .iter()
        .map(|w| w.to_string())
        .chain(params.iter().map(|w| w.to_string()))
        .map(|w| notice("warning", &[("warning", &w)]))
        .collect()
}

/// The provider configuration of a model the params name, with the session's
/// `advisor.maxOutputTokens` and `advisor.requestTimeoutSecs` (M4).
pub fn model_config(
    param: &ModelParam,
    defaults: &ServeDefaults,
    settings: &AdvisorSettings,
) -> Result<ProviderConfig, ProviderError> {
    match param {
        ModelParam::Endpoint(ep) => {
            let mut config = endpoint_config(ep, &defaults.catalog, settings.max_output_tokens);
            config.request_timeout = settings.request_timeout;
            Ok(config)
        }
        ModelParam::Role(role) => {
            let spec = provider_spec(Some(role.clone()), settings);
            resolve_config(&spec, &defaults.catalog, &*defaults.keys)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_a_held_message_costs_at_most_a_small_constant_plus_its_bytes() {
        use std::mem::size_of;
        use std::sync::Arc;
        // Its shared allocation (two counts and the message), its slot in the transcript,
        // and an allocator's rounding; the rest of its heap is its own text, which its JSON
        // bytes bound.
        let fixed = 2 * size_of::<usize>()
            + size_of::<TranscriptMessage>()
            + size_of::<Arc<TranscriptMessage>>()
            + 32;
        assert!(
            fixed <= MESSAGE_OVERHEAD_BYTES,
            "a message's fixed part is {fixed} bytes"
        );
        let raw: Box<RawValue> = serde_json::from_str(
            r#"[{"role":"user","content":""},{"role":"user","content":"hi"}]"#,
        )
        .unwrap();
        let parsed = parse_messages(MessagesParam::Raw(raw), "messages").unwrap();
        assert_eq!(parsed.messages.len(), 2);
        assert_eq!(parsed.cost, 28 + 30 + 2 * MESSAGE_OVERHEAD_BYTES);
    }
    use crate::settings::{DeliveryPolicy, SyncBacklog};

    fn params(v: Value) -> Params {
        Params::new(v.as_object().cloned().unwrap())
    }

    #[test]
    fn v2_open_params_read_a_role_or_an_endpoint_and_name_bad_fields() {
        let mut p = params(json!({"sessionId": "s", "cwd": "/tmp", "model": "openrouter/x:high"}));
        let open = OpenParams::parse(&mut p).unwrap();
        assert_eq!(
            open.model,
            Some(ModelParam::Role("openrouter/x:high".into()))
        );
        let mut p = params(json!({"sessionId": "s", "cwd": "/tmp", "model": {
            "id": "m", "baseUrl": "http://h/v1", "api": "openai-completions", "apiKey": "k",
            "contextWindow": 1000, "maxTokens": 50, "thinking": "low",
            "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0.5, "cacheWrite": 0}}}));
        let Some(ModelParam::Endpoint(ep)) = OpenParams::parse(&mut p).unwrap().model else {
            panic!("an endpoint")
        };
        let cfg = endpoint_config(&ep, &Catalog::empty(), 4096);
        assert_eq!(cfg.base_url, "http://h/v1");
        assert_eq!(cfg.model_id, "m");
        assert_eq!(cfg.api_key.as_deref(), Some("k"));
        assert_eq!(cfg.info.context_window, 1000);
        assert_eq!(cfg.info.max_output, 50);
        assert_eq!(cfg.thinking, ThinkingLevel::Low);
        assert_eq!(cfg.prices.cache_read, 0.5);
        for (bad, field) in [
            (json!({"cwd": "/"}), "sessionId"),
            (json!({"sessionId": "s"}), "cwd"),
            (json!({"sessionId": "s", "cwd": 3}), "cwd"),
            (json!({"sessionId": "s", "cwd": "/", "model": 5}), "model"),
            (
                json!({"sessionId": "s", "cwd": "/", "model": {"id": "m", "api": "openai-completions"}}),
                "model.baseUrl",
            ),
            (
                json!({"sessionId": "s", "cwd": "/", "model": {"id": "m", "baseUrl": "u", "api": "google"}}),
                "model.api",
            ),
            (
                json!({"sessionId": "s", "cwd": "/", "model": {"id": "m", "baseUrl": "u", "api": "openai-completions", "contextWindow": "big"}}),
                "model.contextWindow",
            ),
            (
                json!({"sessionId": "s", "cwd": "/", "settings": {"policy": "loud"}}),
                "settings",
            ),
            (
                json!({"sessionId": "s", "cwd": "/", "settings": []}),
                "settings",
            ),
            (
                json!({"sessionId": "s", "cwd": "/", "messages": [{"role": "user", "content": "a"}, 7]}),
                "messages[1]",
            ),
        ] {
            let e = OpenParams::parse(&mut params(bad.clone())).unwrap_err();
            assert_eq!(e.data, Some(json!({"field": field})), "{bad} → {e:?}");
        }
    }

    #[test]
    fn v2_k1_params_settings_layer_over_the_files_and_enabled_is_the_hosts() {
        let mut p = params(json!({"sessionId": "s", "cwd": "/", "settings": {
            "syncBacklog": "off", "policy": "reconfirm", "immuneTurns": 1, "polcy": "x"}}));
        let open = OpenParams::parse(&mut p).unwrap();
        assert_eq!(open.settings_warnings.len(), 1);
        assert!(
            open.settings_warnings[0].contains("advisor.polcy"),
            "{:?}",
            open.settings_warnings
        );
        let files = LoadedSettings {
            settings: AdvisorSettings {
                sync_backlog: SyncBacklog::Below(3),
                immune_turns: 7,
                enabled: false,
                ..AdvisorSettings::default()
            },
            ..LoadedSettings::default()
        };
        let env = SettingsEnv::default();
        let s = session_settings(&files, &open.settings, &env);
        assert_eq!(s.sync_backlog, SyncBacklog::Off);
        assert_eq!(s.policy, DeliveryPolicy::Reconfirm);
        assert_eq!(s.immune_turns, 1);
        assert!(s.enabled, "no file said enabled: false in so many words");
        let disabled = LoadedSettings {
            disabled_by: Some(PathBuf::from("/x/.omp/config.yml")),
            ..files.clone()
        };
        assert!(!session_settings(&disabled, &open.settings, &env).enabled);
        let on = SettingsLayer {
            enabled: Some(true),
            ..SettingsLayer::default()
        };
        assert!(session_settings(&disabled, &on, &env).enabled);
        let off = SettingsLayer {
            enabled: Some(false),
            ..SettingsLayer::default()
        };
        assert!(!session_settings(&files, &off, &env).enabled);
    }

    #[test]
    fn m4_the_sessions_request_timeout_reaches_the_model_it_names() {
        let defaults = ServeDefaults::new(Arc::new(Catalog::empty()));
        let settings = AdvisorSettings {
            request_timeout: std::time::Duration::from_secs(7),
            max_output_tokens: 900,
            ..AdvisorSettings::default()
        };
        let ep = ModelParam::Endpoint(Endpoint {
            id: "m".into(),
            provider: "custom".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            api: ApiKind::OpenAiCompletions,
            api_key: None,
            headers: Vec::new(),
            context_window: None,
            max_tokens: None,
            thinking: None,
            reasoning: None,
            cost: None,
        });
        let role = ModelParam::Role("ollama/qwen3:low".into());
        for param in [ep, role] {
            let config = model_config(&param, &defaults, &settings).unwrap();
            assert_eq!(config.request_timeout.as_secs(), 7, "{param:?}");
            assert_eq!(config.max_output_tokens, 900, "{param:?}");
        }
    }

    #[test]
    fn a6_sessions_calling_one_endpoint_share_its_http_client() {
        let shared = Arc::new(SharedResources::new(None));
        let defaults = ServeDefaults::new(Arc::new(Catalog::empty()));
        let dir = tempfile::tempdir().unwrap();
        let open = |id: &str, port: u16| {
            let mut p = params(json!({"sessionId": id, "cwd": dir.path(), "model": {
                "id": "m", "baseUrl": format!("http://127.0.0.1:{port}/v1"),
                "api": "openai-completions"}}));
            OpenParams::parse(&mut p).unwrap()
        };
        for (id, port) in [("a", 9), ("b", 9), ("c", 10)] {
            let prepared = prepare(open(id, port), &defaults, &shared).unwrap();
            assert!(prepared.config.model.is_some());
        }
        assert_eq!(shared.http_clients(), 2, "one client per endpoint");
    }

    #[test]
    fn ca22_a_session_model_of_a_disabled_provider_is_no_model_with_a_notice_naming_it() {
        let shared = Arc::new(SharedResources::new(None));
        let defaults = ServeDefaults::new(Arc::new(Catalog::empty()));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".omp")).unwrap();
        std::fs::write(
            dir.path().join(".omp/config.yml"),
            "disabledProviders: [Ollama]\n",
        )
        .unwrap();
        for model in [
            json!("ollama/llama3:high"),
            json!({"id": "llama3", "provider": "ollama", "baseUrl": "http://127.0.0.1:9/v1",
                   "api": "openai-completions"}),
        ] {
            let mut p = params(json!({"sessionId": "a", "cwd": dir.path(),
                "agentDir": dir.path().join("agent"), "model": model}));
            let prepared = prepare(OpenParams::parse(&mut p).unwrap(), &defaults, &shared).unwrap();
            assert!(prepared.config.model.is_none(), "{model}");
            assert!(
                prepared.notices.iter().any(|n| n
                    == "advisor: no advisor model: provider `ollama` is disabled by the settings (disabledProviders)"),
                "{model}: {:?}",
                prepared.notices
            );
        }
    }

    #[test]
    fn p6_a_session_gets_the_backups_of_its_chain_that_can_be_built() {
        let shared = Arc::new(SharedResources::new(None));
        let defaults = ServeDefaults::new(Arc::new(Catalog::empty()));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".omp")).unwrap();
        std::fs::write(
            dir.path().join(".omp/config.yml"),
            "retry:\n  fallbackChains:\n    ollama/llama3: [ollama/qwen3:low, openai/gpt-5]\n",
        )
        .unwrap();
        let mut p = params(json!({"sessionId": "a", "cwd": dir.path(),
            "agentDir": dir.path().join("agent"), "model": "ollama/llama3:high"}));
        let prepared = prepare(OpenParams::parse(&mut p).unwrap(), &defaults, &shared).unwrap();
        let backups: Vec<String> = prepared
            .config
            .fallback_models
            .iter()
            .map(|m| m.info().id)
            .collect();
        assert_eq!(backups, ["ollama/qwen3"]);
        assert!(
            prepared
                .notices
                .iter()
                .any(|n| n.starts_with("advisor: backup model openai/gpt-5 is off: no API key")),
            "{:?}",
            prepared.notices
        );
    }

    #[test]
    fn ro8_ro14_an_entry_without_a_model_takes_the_endpoint_and_says_where_from() {
        use crate::roster::{ModelChoice, Source};
        let shared = Arc::new(SharedResources::new(None));
        let defaults = ServeDefaults::new(Arc::new(Catalog::empty()));
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent");
        std::fs::create_dir_all(dir.path().join(".omp")).unwrap();
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::write(
            dir.path().join(".omp/WATCHDOG.yml"),
            "advisors:\n  - name: Plain\n",
        )
        .unwrap();
        let model_of = |role_in_files: Option<&str>| {
            let config = agent.join("config.yml");
            match role_in_files {
                Some(role) => std::fs::write(&config, format!("modelRoles:\n  advisor: {role}\n")),
                None => std::fs::write(&config, ""),
            }
            .unwrap();
            let mut p = params(
                json!({"sessionId": "s", "cwd": dir.path(), "agentDir": agent,
                "model": {"provider": "hostprov", "id": "m", "baseUrl": "http://127.0.0.1:9/v1",
                    "api": "openai-completions", "thinking": "low"}}),
            );
            let prepared = prepare(OpenParams::parse(&mut p).unwrap(), &defaults, &shared).unwrap();
            let setup = prepared.config.roster.expect("a roster");
            setup.roster.advisors[0].model.clone()
        };
        let endpoint = ModelChoice::Resolved {
            role: "hostprov/m:low".into(),
            provider: "hostprov".into(),
            model: "m".into(),
            thinking: ThinkingLevel::Low,
        };
        let from_host = model_of(None);
        assert_eq!(from_host.value, endpoint);
        assert_eq!(
            from_host.source.to_string(),
            "setting modelRoles.advisor in session/open model"
        );
        let other = model_of(Some("elsewhere/x"));
        assert_eq!(other.value, endpoint, "the session's model, not the files'");
        let same = model_of(Some("hostprov/m:low"));
        assert!(
            matches!(&same.source, Source::Setting { file: Some(f), .. } if f.ends_with("config.yml")),
            "the file that names the same model: {:?}",
            same.source
        );
    }

    #[test]
    fn p8_context_files_param_replaces_discovery_and_a_bad_shape_names_the_field() {
        let shared = Arc::new(SharedResources::new(None));
        let defaults = ServeDefaults::new(Arc::new(Catalog::empty()));
        let dir = tempfile::tempdir().unwrap();
        let mut p = params(json!({"sessionId": "s", "cwd": dir.path(),
            "contextFiles": [{"path": "/r/AGENTS.md", "content": "Keep it small."}]}));
        let prepared = prepare(OpenParams::parse(&mut p).unwrap(), &defaults, &shared).unwrap();
        let files = prepared.config.context_files.expect("the host's list");
        assert_eq!(
            &files[..],
            [ContextFile {
                path: "/r/AGENTS.md".into(),
                content: "Keep it small.".into()
            }]
        );
        let mut p = params(json!({"sessionId": "s", "cwd": dir.path(), "contextFiles": ["x"]}));
        let err = OpenParams::parse(&mut p).unwrap_err();
        assert!(format!("{err:?}").contains("contextFiles"), "{err:?}");
    }

    #[test]
    fn v4_context_files_are_capped_in_number_and_path_length() {
        let dir = tempfile::tempdir().unwrap();
        let entry = |path: String| json!({"path": path, "content": "x"});
        let too_many: Vec<Value> = (0..=MAX_CONTEXT_FILES)
            .map(|i| entry(format!("/r/{i}.md")))
            .collect();
        let long_path = vec![entry(format!("/{}", "p".repeat(MAX_CONTEXT_PATH_BYTES)))];
        for files in [too_many, long_path] {
            let mut p = params(json!({"sessionId": "s", "cwd": dir.path(), "contextFiles": files}));
            let err = OpenParams::parse(&mut p).unwrap_err();
            assert_eq!(err.code, -32602, "{err:?}");
            assert!(err.message.contains("contextFiles"), "{err:?}");
        }
        let at_caps: Vec<Value> = (0..MAX_CONTEXT_FILES)
            .map(|i| entry(format!("/{i}/{}", "p".repeat(MAX_CONTEXT_PATH_BYTES - 8))))
            .collect();
        let mut p = params(json!({"sessionId": "s", "cwd": dir.path(), "contextFiles": at_caps}));
        assert!(OpenParams::parse(&mut p).is_ok());
    }

    #[test]
    fn v4_context_files_contents_are_cut_when_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<Value> = (0..MAX_CONTEXT_FILES)
            .map(|i| json!({"path": format!("/r/{i}.md"), "content": format!("{i}").repeat(1 << 20)}))
            .collect();
        let mut p = params(json!({"sessionId": "s", "cwd": dir.path(), "contextFiles": files}));
        let kept = OpenParams::parse(&mut p).unwrap().context_files.unwrap();
        let bytes: usize = kept.iter().map(|f| f.content.len()).sum();
        assert!(bytes <= 128 * 1024 + 32 * 1024 + 16, "{bytes} bytes kept");
        assert!(kept.iter().all(|f| f.content.len() <= 32 * 1024 + 4));
        assert_eq!(kept[0].path, "/r/0.md");
    }

    #[test]
    fn p9_the_transcript_file_is_in_the_session_artifacts_directory() {
        assert_eq!(
            audit_path(Path::new("/s/2026-01-01_abc.jsonl"), Path::new("/w")),
            Ok(PathBuf::from("/s/2026-01-01_abc/__advisor.jsonl"))
        );
    }

    #[test]
    fn v4_bad_session_file_paths_are_one_notice_and_no_file() {
        let shared = Arc::new(SharedResources::new(None));
        let defaults = ServeDefaults::new(Arc::new(Catalog::empty()));
        let dir = tempfile::tempdir().unwrap();
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        let open = |file: &str| {
            let mut p = params(json!({"sessionId": "s", "cwd": cwd, "sessionFile": file}));
            prepare(OpenParams::parse(&mut p).unwrap(), &defaults, &shared).unwrap()
        };
        for (file, why) in [
            ("/", "`/` is not a regular session file path"),
            (
                "/dev/null",
                "`/dev/null` is not a regular session file path",
            ),
            ("..", "`..` is not a regular session file path"),
            (
                "../x.jsonl",
                "`../x.jsonl` is outside where a session file should be",
            ),
        ] {
            let prepared = open(file);
            assert_eq!(prepared.config.audit_path, None, "{file}");
            let notices: Vec<_> = prepared
                .notices
                .iter()
                .filter(|n| n.contains("transcript"))
                .collect();
            assert_eq!(
                notices,
                [&format!(
                    "advisor: no advisor transcript file is kept: {why}"
                )],
                "{file}"
            );
        }
        // Relative: from the session's cwd, not the server's.
        let prepared = open("sessions/run.jsonl");
        assert_eq!(
            prepared.config.audit_path,
            Some(cwd.join("sessions/run/__advisor.jsonl"))
        );
    }
}
