//! `session/open` (V2): from its params (`params.rs`) and the files a session's cwd leads
//! to, the runtime configuration — settings (K1 files, then the params' `advisor:` keys,
//! then the environment), the model (a role string, M1, or a resolved endpoint object),
//! the prompt override (G1), WATCHDOG.md discovery from the cwd (W1), the audit file (G7)
//! and the roster of named advisors (RO23) — set up by the session setup every host shares
//! ([`SessionSetup::load`]), its failures worded as JSON-RPC errors.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::params::{Endpoint, ModelParam, OpenParams, PARAMS_SOURCE};
use super::protocol::{RpcError, SESSION_ERROR};
use crate::model::ModelClient;
use crate::providers::{ApiKind, Catalog, ProviderConfig, ProviderError};
use crate::roster::{ModelChoice, RosterSetup};
use crate::session::advisor_file_path;
use crate::settings::{
    AdvisorSettings, DeliveryPolicy, LoadedSettings, SettingsEnv, SettingsLayer,
};
use crate::setup::{
    KeyLookup, ModelSource, RequestedModel, SessionBasics, SessionInputs, SessionPrepared,
    SessionSetup, SetupError,
};
use crate::shared::SharedResources;
use crate::texts::notice;

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

/// The provider configuration of an endpoint: the catalog's facts for `provider/id` when it
/// knows the model, overridden by what the endpoint says. The session's output cap and
/// request timeout (M4) are set when its settings are known ([`RequestedModel::Endpoint`]).
pub fn endpoint_config(ep: &Endpoint, catalog: &Catalog) -> ProviderConfig {
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

/// Sets the session up with the setup every host shares ([`SessionSetup::load`]).
/// Blocking (files): run it off the actor thread. Models are built over the HTTP clients of
/// `shared` (one per endpoint for every session of the process, A6) with the session's
/// `advisor.requestTimeoutSecs` and `advisor.maxOutputTokens`. A bad settings file is
/// -32000; a model named in the params that cannot be built is -32602 naming `model`; the
/// model is the fixed one, else the params', else the role the flags, environment and
/// files name (M1), and one of those that cannot be built (a modes.json that is not a
/// regular file, say) leaves the session without a model, with a notice (K2).
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
    let (audit_path, audit_notice) = match open.session_file.as_deref().map(|f| audit_path(f, &cwd))
    {
        Some(Ok(path)) => (Some(path), None),
        Some(Err(notice)) => (None, Some(notice)),
        None => (None, None),
    };
    let mut models = defaults.model_source(shared);
    models.endpoints = open
        .providers
        .iter()
        .map(|ep| endpoint_config(ep, &defaults.catalog))
        .collect();
    let params = &open.settings;
    let loaded = SessionSetup::load(SessionInputs {
        basics: SessionBasics {
            session_id: open.session_id,
            root: cwd,
            host_layer: Some((PathBuf::from(PARAMS_SOURCE), params.clone())),
            models,
            context_files: open.context_files.map(Arc::from),
            audit_path,
        },
        env,
        watchdog: true,
        stop_when_disabled: false,
        settings: &|loaded, env| session_settings(loaded, params, env),
        model: model_request(open.model.as_ref(), defaults),
    })
    .map_err(|e| match e {
        SetupError::Model(e) => RpcError::invalid_params("model", e),
        other => RpcError::new(SESSION_ERROR, format!("settings: {other}")),
    })?;
    let mut notices = warning_notices(&loaded.warnings, &open.settings_warnings);
    notices.extend(
        loaded
            .no_model
            .filter(|e| !matches!(e, ProviderError::NoModel))
            .map(|e| notice("noModel", &[("error", &e.to_string())])),
    );
    notices.extend(loaded.prepared.notices);
    notices.extend(audit_notice);
    Ok(SessionPrepared {
        config: loaded.prepared.config,
        notices,
    })
}

/// The model a session asks for (M1): the fixed one, else the one named in the params (a
/// role, or an endpoint the host resolved), else the role the server's `--model`, the
/// environment and the files name.
fn model_request(param: Option<&ModelParam>, defaults: &ServeDefaults) -> RequestedModel {
    if let Some(fixed) = &defaults.fixed_model {
        return RequestedModel::Fixed(Arc::clone(fixed));
    }
    match param {
        Some(ModelParam::Role(role)) => RequestedModel::Role(role.clone()),
        Some(ModelParam::Endpoint(ep)) => {
            RequestedModel::Endpoint(Box::new(endpoint_config(ep, &defaults.catalog)))
        }
        None => RequestedModel::Discover(defaults.model.clone()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::ThinkingLevel;
    use crate::serve::protocol::Params;
    use crate::settings::SyncBacklog;
    use crate::watchdog::ContextFile;

    fn params(v: Value) -> Params {
        Params::new(v.as_object().cloned().unwrap())
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
            let config = model_request(Some(&param), &defaults)
                .named_config(&defaults.catalog, &defaults.keys, &settings)
                .unwrap()
                .unwrap();
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
    fn k1_a6_sessions_opening_on_one_project_read_its_settings_files_once() {
        let shared = Arc::new(SharedResources::new(None));
        let defaults = ServeDefaults::new(Arc::new(Catalog::empty()));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".omp")).unwrap();
        let file = dir.path().join(".omp/config.yml");
        std::fs::write(&file, "advisor:\n  reviewInterval: 2\n").unwrap();
        let open = |id: &str| {
            let mut p = params(json!({"sessionId": id, "cwd": dir.path(), "model": {
                "id": "m", "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions"}}));
            prepare(OpenParams::parse(&mut p).unwrap(), &defaults, &shared).unwrap()
        };
        for i in 0..8 {
            let prepared = open(&format!("s{i}"));
            assert_eq!(prepared.config.settings.review_interval, 2);
        }
        let stats = shared.settings_cache().stats();
        assert_eq!(stats.loads, 1, "read once for eight opens: {stats:?}");
        // An edit is read by the next session to open.
        std::fs::write(&file, "advisor:\n  reviewInterval: 3\n").unwrap();
        assert_eq!(open("late").config.settings.review_interval, 3);
        assert_eq!(shared.settings_cache().stats().loads, 2);
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
