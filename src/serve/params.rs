//! The params of `session/open` (V2) as they come over the wire: read and checked into
//! [`OpenParams`] (a field that is not right is -32602 naming it), bounded as V4 says, and
//! nothing on disk read yet; `open.rs` makes a session of them.

use std::path::{Path, PathBuf};

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::protocol::{kind, MessagesParam, Params, RpcError};
use crate::domain::transcript::TranscriptMessage;
use crate::model::ThinkingLevel;
use crate::providers::{ApiKind, Prices};
use crate::settings::SettingsLayer;
use crate::watchdog::{bound_context_files, ContextFile};

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
pub(super) const PARAMS_SOURCE: &str = "session/open settings";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::Catalog;
    use crate::serve::open::endpoint_config;

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
        let cfg = endpoint_config(&ep, &Catalog::empty());
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
}
