//! One session's runtime configuration, as `advisor replay` and `advisor serve` both build
//! it: the settings the host worked out, the model and the models beside it (the
//! `advisor.contextPromotion` model, G5; the backups of `retry.fallbackChains`, P6), the
//! prompt override (G1), WATCHDOG.md discovery (W1), the project's instruction files (P8),
//! the advisor's transcript file (P9) and the roster of named advisors found where
//! WATCHDOG.md is found (§15, RO1, RO23).
//!
//! A host says what is its own — its root and environment, how its flags or params lay
//! over the settings files, the model it names or leaves to discovery — as
//! [`SessionInputs`], and [`SessionSetup::load`] does the rest: it reads the settings files
//! (K1), picks and builds the session's model (M1), and builds the configuration
//! ([`SessionSetup::build`]). Its failures are one [`SetupError`], which each host words in
//! its own terms (a command-line error, a JSON-RPC code).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::config::RuntimeConfig;
use crate::model::{ModelClient, ThinkingLevel};
use crate::providers::{
    advisor_role_from_modes_file, build_fallbacks, client_for, expand_role_alias, modes_candidates,
    resolve_config, resolve_role, ApiKind, Catalog, ModelSpec, ProviderConfig, ProviderError,
};
use crate::redact::Redactor;
use crate::regular_file::{clip, SHOWN_CHARS};
use crate::roster::{
    ModelChoice, RosterAdvisor, RosterModels, RosterReload, RosterSettings, RosterSetup, Source,
    Sourced,
};
use crate::settings::{
    config_files, load_settings, read_config_layers, AdvisorSettings, LoadedSettings, SettingsEnv,
    SettingsError, SettingsLayer, SettingsWarning, MAX_BACKUPS,
};
use crate::shared::SharedResources;
use crate::texts::notice;
use crate::watchdog::{ContextFile, WatchdogConfig};

/// A model client, shared.
type Model = Arc<dyn ModelClient>;

/// A lookup of provider keys (`OPENROUTER_API_KEY`, …), read at the program's edge.
pub type KeyLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// How a session's models are reached: the catalog, the provider keys, the host's own
/// `--base-url` and `--api`, and the HTTP clients the sessions of a process share (A6).
#[derive(Clone)]
pub struct ModelSource {
    /// The model catalog.
    pub catalog: Arc<Catalog>,
    /// Provider keys.
    pub keys: KeyLookup,
    /// The base URL for roles the host resolves itself (`--base-url`).
    pub base_url: Option<String>,
    /// The wire dialect for those roles (`--api`).
    pub api: Option<ApiKind>,
    /// The process's shared HTTP clients; `None` builds one client per model.
    pub shared: Option<Arc<SharedResources>>,
    /// Models the host resolved itself beside the session's own (serve's `providers`): a
    /// roster entry naming one's provider is reached at its endpoint (RO8, RO23).
    pub endpoints: Arc<[ProviderConfig]>,
}

impl fmt::Debug for ModelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelSource")
            .field("base_url", &self.base_url)
            .field("api", &self.api)
            .field("shared", &self.shared.is_some())
            .field("endpoints", &self.endpoints.len())
            .finish_non_exhaustive()
    }
}

impl ModelSource {
    /// Models from `catalog` with `keys`, at their providers' own endpoints, each with
    /// its own HTTP client.
    pub fn new(catalog: Arc<Catalog>, keys: KeyLookup) -> Self {
        Self {
            catalog,
            keys,
            base_url: None,
            api: None,
            shared: None,
            endpoints: Arc::from(Vec::new()),
        }
    }

    /// The spec of a role the host resolves (the session's own model, its promotion model
    /// and the roster's models): the host's `--base-url` and `--api` apply, with the
    /// session's output cap and request timeout (M4).
    pub fn spec(&self, role: Option<String>, settings: &AdvisorSettings) -> ModelSpec {
        ModelSpec {
            base_url: self.base_url.clone(),
            api: self.api,
            ..provider_spec(role, settings)
        }
    }

    /// The client of a resolved provider configuration, over the shared HTTP client of its
    /// endpoint when there is one.
    pub fn client(&self, config: ProviderConfig) -> Result<Model, ProviderError> {
        match &self.shared {
            Some(shared) => shared.client_for(config),
            None => client_for(config),
        }
    }

    /// Resolves `spec` (M1) and builds its client.
    pub fn build(&self, spec: &ModelSpec) -> Result<Model, ProviderError> {
        self.client(resolve_config(spec, &self.catalog, &*self.keys)?)
    }
}

/// The spec of a role reached at its provider's own endpoint (a role a client names), with
/// the session's output cap and request timeout (M4).
pub fn provider_spec(role: Option<String>, settings: &AdvisorSettings) -> ModelSpec {
    ModelSpec {
        role,
        max_output_tokens: Some(settings.max_output_tokens),
        request_timeout: Some(settings.request_timeout),
        disabled_providers: settings.disabled_providers.clone(),
        ..ModelSpec::default()
    }
}

/// The advisor's model role when the host names none itself (M1): `flag` (the host's
/// `--model`), else `ADVISOR_MODEL`, else `modelRoles.advisor` from the files, else
/// `modes.advisor` from `<cwd>/.pi/modes.json`, then `<agentDir>/modes.json` (only the
/// project's file when the agent directory is unknown). Blocking (modes.json).
pub fn session_role(
    flag: Option<&str>,
    env: &SettingsEnv,
    loaded: &LoadedSettings,
    cwd: &Path,
    agent_dir: Option<&Path>,
) -> Result<Option<String>, ProviderError> {
    if let Some(role) = flag
        .or(env.model.as_deref())
        .or(loaded.advisor_role.as_deref())
    {
        // CA25: a role alias (`@slow`) resolves through `modelRoles`.
        let role = expand_role_alias(role, &loaded.model_roles, loaded.advisor_role.as_deref())?;
        return Ok(Some(role.to_string()));
    }
    let [project, user] = modes_candidates(cwd, agent_dir.unwrap_or(cwd));
    let candidates = match agent_dir {
        Some(_) => vec![project, user],
        None => vec![project],
    };
    for path in candidates {
        if let Some(role) = advisor_role_from_modes_file(&path)? {
            return Ok(Some(role));
        }
    }
    Ok(None)
}

/// The session's own model, as the host resolved it.
#[derive(Clone)]
pub enum SessionModel {
    /// No model (K2): the session runs without reviews.
    None,
    /// One model for everything (tests, benchmarks, embedders): no promotion or backup
    /// model is built, and every named advisor reviews with it too.
    Fixed(Model),
    /// The session's own model; `selector` is its role string when it has one (the key of
    /// its backup chain, P6, and the model of roster entries that name none, RO8).
    Own {
        /// The client.
        model: Model,
        /// `provider/id[:thinking]`, when the model was named by one.
        selector: Option<String>,
    },
    /// A model the host resolved itself (serve's endpoint object): its backup chain (P6) is
    /// the one keyed by its `provider/id[:thinking]`; roster entries that name no model
    /// review with it, and an entry or backup naming its provider and id is reached at its
    /// endpoint (RO8).
    Endpoint {
        /// The client.
        model: Model,
        /// Its configuration: provider, id, base URL, dialect, key, headers, thinking.
        config: Box<ProviderConfig>,
    },
    /// No model yet: the role the settings name cannot be built now (its provider unknown,
    /// its key missing). The session runs without reviews by the unnamed advisor until a
    /// catalog change builds it (CA23, [`RuntimeConfig::late_model`]).
    Late {
        /// `provider/id[:thinking]`.
        selector: String,
    },
}

impl SessionModel {
    fn client(&self) -> Option<Model> {
        match self {
            SessionModel::None | SessionModel::Late { .. } => None,
            SessionModel::Fixed(model)
            | SessionModel::Own { model, .. }
            | SessionModel::Endpoint { model, .. } => Some(Arc::clone(model)),
        }
    }

    /// The role string roster entries without a `model` use when the host resolved the
    /// session's model itself: `provider/id`, with `:thinking` when it is not the default.
    fn endpoint_role(&self) -> Option<String> {
        let SessionModel::Endpoint { config, .. } = self else {
            return None;
        };
        let role = format!("{}/{}", config.provider, config.model_id);
        Some(match config.thinking {
            ThinkingLevel::Medium => role,
            level => format!("{role}:{}", level.as_str()),
        })
    }
}

/// What a host says of a session that its setup keeps as it is: its id and root, the host's
/// own settings keys, how models are reached, the instruction files and the transcript file.
/// Both a host's [`SessionInputs`] and the [`SessionSetup`] made from them carry it.
pub struct SessionBasics {
    /// The primary session's id.
    pub session_id: String,
    /// The workspace root (the session's working directory): where `.omp/config.yml`,
    /// WATCHDOG.md and `.pi/modes.json` are looked up.
    pub root: PathBuf,
    /// The host's own settings keys beside the files (serve's `settings` param) and the
    /// name they go by; a `modelRoles.advisor` among them is the files' role (M1), and the
    /// roster's fallbacks read them after the files (RO8, RO10).
    pub host_layer: Option<(PathBuf, SettingsLayer)>,
    /// How the models are reached.
    pub models: ModelSource,
    /// The host's instruction files (P8); `None` discovers them.
    pub context_files: Option<Arc<[ContextFile]>>,
    /// The advisor's transcript file (P9), if one is kept.
    pub audit_path: Option<PathBuf>,
}

impl SessionBasics {
    /// Session `session_id` at `root`, its models reached through `models`; no host keys,
    /// instruction files discovered, no transcript file.
    pub fn new(session_id: String, root: PathBuf, models: ModelSource) -> Self {
        Self {
            session_id,
            root,
            host_layer: None,
            models,
            context_files: None,
            audit_path: None,
        }
    }
}

/// What a host worked out for a session, to be made into its [`RuntimeConfig`].
pub struct SessionSetup {
    /// The session's id, root, host keys, model source, instruction and transcript files.
    pub basics: SessionBasics,
    /// WATCHDOG.md discovery from the root; `None` turns it off, and with it the project's
    /// instruction files (P8) and the roster (RO1: the roster is found where WATCHDOG.md is).
    pub watchdog: Option<WatchdogConfig>,
    /// What the settings files said (the prompt override, G1).
    pub loaded: LoadedSettings,
    /// The session's settings, as the host made them from the files, its own keys and the
    /// environment.
    pub settings: AdvisorSettings,
    /// The session's model.
    pub model: SessionModel,
}

/// A session's configuration and the lines to tell its user.
pub struct SessionPrepared {
    /// The runtime configuration.
    pub config: RuntimeConfig,
    /// Notices: a promotion or backup model that cannot be built (G5, P6).
    pub notices: Vec<String>,
}

impl SessionSetup {
    /// Builds the configuration: the side models (only for a session's own model), the
    /// roster when WATCHDOG.md discovery is on (watched for files written later, RO21; empty
    /// without a roster file, RO12; `None` with discovery off), and the rest as the host gave it. Blocking (the roster files, the
    /// settings files for the roster's sources): run it off the actor thread.
    pub fn build(self) -> SessionPrepared {
        let mut notices = Vec::new();
        let host_models = HostModels::new(&self.model, &self.basics.models, &self.settings);
        let selector = match &self.model {
            SessionModel::Own { selector, .. } => Some(selector.clone()),
            SessionModel::Endpoint { .. } => Some(self.model.endpoint_role()),
            SessionModel::None | SessionModel::Fixed(_) | SessionModel::Late { .. } => None,
        };
        let (promotion_model, fallback_models) = match (selector, self.model.client()) {
            (Some(selector), Some(own)) => {
                let own = SideModels {
                    selector: selector.as_deref(),
                    id: &own.info().id,
                };
                side_models(&self.settings, own, &host_models, &mut notices)
            }
            _ => (None, Vec::new()),
        };
        let mut config = RuntimeConfig::new(
            self.basics.session_id,
            self.basics.root,
            self.model.client(),
        );
        if let SessionModel::Late { selector } = &self.model {
            // CA23: built once more when the host's catalog changes.
            let (models, role) = (host_models.clone(), selector.clone());
            config.late_model = Some(Arc::new(move || models.build_role(&role).ok()));
        }
        config.promotion_model = promotion_model;
        config.judge_model = judge_model(&self.settings, &host_models, &mut notices);
        config.fallback_models = fallback_models;
        config.settings = self.settings;
        config.system_prompt_override = self.loaded.system_prompt_override.clone();
        config.context_files = self.basics.context_files;
        config.audit_path = self.basics.audit_path;
        if let Some(watchdog) = self.watchdog {
            let redactor = match &self.basics.models.shared {
                Some(shared) if config.settings.redact_secrets => shared.redactor(),
                _ => config.redactor(),
            };
            let discovery = RosterDiscovery {
                watchdog: &watchdog,
                loaded: &self.loaded,
                host_layer: self.basics.host_layer.as_ref(),
                settings: &config.settings,
                model: &self.model,
                models: &self.basics.models,
                host_models,
            };
            config.roster = Some(discovery.setup(redactor.as_ref()));
            config.watchdog = Some(watchdog);
        }
        SessionPrepared { config, notices }
    }
}

/// The model a host asks for ([`SessionInputs::model`]).
pub enum RequestedModel {
    /// One model for everything ([`SessionModel::Fixed`]).
    Fixed(Model),
    /// A role the host's client named (serve's `model` string): resolved at its provider's
    /// own endpoint with the session's output cap and request timeout (M1, M4); it cannot
    /// be built: [`SetupError::Model`].
    Role(String),
    /// An endpoint the host resolved itself (serve's endpoint object); its output cap and
    /// request timeout are set to the session's here (M4). It cannot be built:
    /// [`SetupError::Model`].
    Endpoint(Box<ProviderConfig>),
    /// The role the host's flag names, else the environment, the files and modes.json
    /// ([`session_role`], M1), reached through the host's `--base-url` and `--api`. None
    /// found, or none that can be built, leaves the session without a model
    /// ([`SessionLoaded::no_model`] says why).
    Discover(Option<String>),
}

impl RequestedModel {
    /// The provider of a model the host's client named (`Role`, `Endpoint`); `None` for the
    /// others or a role that does not resolve.
    fn provider(&self, catalog: &Catalog) -> Option<String> {
        match self {
            RequestedModel::Role(role) => resolve_role(role, catalog).ok().map(|r| r.provider),
            RequestedModel::Endpoint(config) => Some(config.provider.clone()),
            RequestedModel::Fixed(_) | RequestedModel::Discover(_) => None,
        }
    }

    /// The provider configuration of a model the host's client named (`Role`, `Endpoint`),
    /// with the session's `advisor.maxOutputTokens` and `advisor.requestTimeoutSecs` (M4);
    /// `None` for the others.
    pub fn named_config(
        &self,
        catalog: &Catalog,
        keys: &KeyLookup,
        settings: &AdvisorSettings,
    ) -> Option<Result<ProviderConfig, ProviderError>> {
        match self {
            RequestedModel::Role(role) => {
                let spec = provider_spec(Some(role.clone()), settings);
                Some(resolve_config(&spec, catalog, &**keys))
            }
            RequestedModel::Endpoint(config) => {
                Some(Ok(session_caps((**config).clone(), settings)))
            }
            RequestedModel::Fixed(_) | RequestedModel::Discover(_) => None,
        }
    }
}

/// `config` with the session's output cap and request timeout (M4).
fn session_caps(mut config: ProviderConfig, settings: &AdvisorSettings) -> ProviderConfig {
    config.max_output_tokens = settings.max_output_tokens.max(1);
    config.request_timeout = settings.request_timeout;
    config
}

/// How a host makes the session's settings from the files it read and the environment.
pub type HostSettings<'a> = &'a dyn Fn(&LoadedSettings, &SettingsEnv) -> AdvisorSettings;

/// What a host brings to a session's setup ([`SessionSetup::load`]).
pub struct SessionInputs<'a> {
    /// The session's id, root, host keys, model source, instruction and transcript files.
    pub basics: SessionBasics,
    /// The environment's settings, the host's agent directory over it.
    pub env: SettingsEnv,
    /// WATCHDOG.md discovery (and with it the project's instruction files and the roster).
    pub watchdog: bool,
    /// A file's `advisor.enabled: false` stops the setup ([`SetupError::Disabled`], K2).
    pub stop_when_disabled: bool,
    /// The session's settings from the files and the environment, the host's way.
    pub settings: HostSettings<'a>,
    /// The session's model.
    pub model: RequestedModel,
}

/// A session set up from a host's inputs.
pub struct SessionLoaded {
    /// The configuration and the notices of its side models.
    pub prepared: SessionPrepared,
    /// The settings files' warnings (unknown keys and the like), in order.
    pub warnings: Vec<SettingsWarning>,
    /// Why a session whose model was left to discovery has none: none named
    /// ([`ProviderError::NoModel`]), its key missing, or the role or client that failed.
    pub no_model: Option<ProviderError>,
}

/// Why a session cannot be set up; each host words it its own way.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SetupError {
    /// A settings file cannot be used (K1).
    #[error("{0}")]
    Settings(#[from] SettingsError),
    /// A settings file disables the advisor and the host asked to stop then (K2).
    #[error("the advisor is disabled (advisor.enabled: false in {})", file.display())]
    Disabled {
        /// The file that says so.
        file: PathBuf,
    },
    /// The model the host's client named cannot be built (M1).
    #[error("{0}")]
    Model(ProviderError),
}

impl SessionSetup {
    /// Sets a session up from what its host brings: reads the settings files from the agent
    /// directory and the root (K1), makes the settings the host's way, picks and builds the
    /// session's model (M1), then builds the configuration ([`SessionSetup::build`]).
    /// Blocking (files): run it off the actor thread.
    pub fn load(inputs: SessionInputs<'_>) -> Result<SessionLoaded, SetupError> {
        let SessionInputs {
            mut basics,
            env,
            watchdog,
            stop_when_disabled,
            settings,
            model,
        } = inputs;
        let discovery = env.watchdog_config(&basics.root);
        let agent_dir = discovery.agent_dir.clone();
        let mut loaded = read_settings(&basics.models, agent_dir.as_deref(), &basics.root)?;
        if let Some(file) = loaded.disabled_by.clone().filter(|_| stop_when_disabled) {
            return Err(SetupError::Disabled { file });
        }
        let settings = settings(&loaded, &env);
        if let Some(role) = basics
            .host_layer
            .as_ref()
            .and_then(|(_, l)| l.advisor_role.clone())
        {
            loaded.advisor_role = Some(role);
        }
        basics.models.endpoints = basics
            .models
            .endpoints
            .iter()
            .map(|e| session_caps(e.clone(), &settings))
            .collect();
        let lookup = ModelLookup {
            env: &env,
            loaded: &loaded,
            root: &basics.root,
            agent_dir: agent_dir.as_deref(),
            settings: &settings,
            models: &basics.models,
        };
        let (model, no_model) = lookup.session_model(model)?;
        let warnings = std::mem::take(&mut loaded.warnings);
        let setup = SessionSetup {
            basics,
            watchdog: watchdog.then_some(discovery),
            loaded,
            settings,
            model,
        };
        Ok(SessionLoaded {
            prepared: setup.build(),
            warnings,
            no_model,
        })
    }
}

/// The settings files of the agent directory and `root` (K1); the sessions of one project
/// share one read of them when the process shares its resources (A6).
fn read_settings(
    models: &ModelSource,
    agent_dir: Option<&Path>,
    root: &Path,
) -> Result<LoadedSettings, SettingsError> {
    Ok(match &models.shared {
        Some(shared) => shared
            .settings_cache()
            .load(agent_dir, root)?
            .loaded
            .clone(),
        None => load_settings(agent_dir, root)?,
    })
}

/// What a session's model is picked and built with (M1).
struct ModelLookup<'a> {
    env: &'a SettingsEnv,
    loaded: &'a LoadedSettings,
    root: &'a Path,
    agent_dir: Option<&'a Path>,
    settings: &'a AdvisorSettings,
    models: &'a ModelSource,
}

impl ModelLookup<'_> {
    /// The session's model for `requested`, and why a session has none when it has none.
    fn session_model(
        &self,
        requested: RequestedModel,
    ) -> Result<(SessionModel, Option<ProviderError>), SetupError> {
        let catalog = &self.models.catalog;
        Ok(match requested {
            RequestedModel::Fixed(model) => (SessionModel::Fixed(model), None),
            RequestedModel::Discover(flag) => self.discover(flag.as_deref()),
            // CA22: a named model of a provider the settings disable leaves the session
            // without one (the notice names the provider); nothing of it is looked up.
            named
                if named
                    .provider(catalog)
                    .is_some_and(|p| self.settings.provider_disabled(&p)) =>
            {
                let provider = named.provider(catalog).unwrap_or_default();
                let disabled = ProviderError::DisabledProvider(provider);
                (SessionModel::None, Some(disabled))
            }
            named => (self.named(named)?, None),
        })
    }

    /// The role the host's flag names, else the environment's, the files' or modes.json's
    /// ([`session_role`]), built; why not when it cannot be.
    fn discover(&self, flag: Option<&str>) -> (SessionModel, Option<ProviderError>) {
        let role = session_role(flag, self.env, self.loaded, self.root, self.agent_dir);
        let models = self.models;
        let found = role.clone().and_then(|role| {
            Ok((
                models.build(&models.spec(role.clone(), self.settings))?,
                role,
            ))
        });
        match (found, role) {
            (Ok((model, selector)), _) => (SessionModel::Own { model, selector }, None),
            // CA23: a named role that does not build yet may later.
            (Err(e), Ok(Some(selector))) => (SessionModel::Late { selector }, Some(e)),
            (Err(e), _) => (SessionModel::None, Some(e)),
        }
    }

    /// The model the host's client named (a role or an endpoint), which must build (M1).
    fn named(&self, named: RequestedModel) -> Result<SessionModel, SetupError> {
        let models = self.models;
        let config = named
            .named_config(&models.catalog, &models.keys, self.settings)
            .unwrap_or(Err(ProviderError::NoModel))
            .map_err(SetupError::Model)?;
        let client = models.client(config.clone()).map_err(SetupError::Model)?;
        Ok(match named {
            // The role is the model's selector, for its backup chain (P6).
            RequestedModel::Role(role) => SessionModel::Own {
                model: client,
                selector: Some(role),
            },
            _ => SessionModel::Endpoint {
                model: client,
                config: Box::new(config),
            },
        })
    }
}

/// The models beside the session's own: the larger-window model of
/// `advisor.contextPromotion` (G5) and the backups of `retry.fallbackChains` for the own
/// model's selector, the own model left out (P6), both reached as roster entries are ([`HostModels`]): at an endpoint the host
/// resolved for their provider (serve's `providers`, the session's own endpoint), else with
/// the host's keys, `--base-url` and `--api`. A chain longer than [`MAX_BACKUPS`] is cut
/// with one notice naming its key; a model that cannot be built is a notice.
fn side_models(
    settings: &AdvisorSettings,
    own: SideModels<'_>,
    models: &HostModels,
    notices: &mut Vec<String>,
) -> (Option<Model>, Vec<Model>) {
    let promotion_model = settings.context_promotion.as_ref().and_then(|role| {
        models
            .build_role(role)
            .map_err(|e| {
                notices.push(notice(
                    "promotionOff",
                    &[("role", role.as_str()), ("error", &e.to_string())],
                ))
            })
            .ok()
    });
    let Some((key, chain)) = settings.retry.chain_entry(own.selector) else {
        return (promotion_model, Vec::new());
    };
    // The advisor's own model is no backup of itself.
    let chain: Vec<String> = chain
        .iter()
        .filter(|role| {
            resolve_role(role, &models.source.catalog).map_or(true, |r| r.id() != own.id)
        })
        .cloned()
        .collect();
    if chain.len() > MAX_BACKUPS {
        notices.push(notice(
            "backupsCapped",
            &[
                ("key", &clip(key, SHOWN_CHARS)),
                ("count", &chain.len().to_string()),
                ("max", &MAX_BACKUPS.to_string()),
            ],
        ));
    }
    let chain = &chain[..chain.len().min(MAX_BACKUPS)];
    let (fallback_models, lines) = build_fallbacks(chain, |role| models.build_role(role));
    notices.extend(lines);
    (promotion_model, fallback_models)
}

/// The judge of the triage gate (SP9) when `advisor.judgeGate` is on: `modelRoles.judge`
/// built as the other side models are; without the role, or when it cannot be built, the
/// gate is off with one notice.
fn judge_model(
    settings: &AdvisorSettings,
    models: &HostModels,
    notices: &mut Vec<String>,
) -> Option<Model> {
    if !settings.judge_gate {
        return None;
    }
    let Some(role) = &settings.judge_role else {
        notices.push(notice("judgeGateNoRole", &[]));
        return None;
    };
    models
        .build_role(role)
        .map_err(|e| {
            let vars = [("role", role.as_str()), ("error", &e.to_string())];
            notices.push(notice("judgeGateOff", &vars));
        })
        .ok()
}

/// The session's own model, for its side models: the selector its backup chain is found by
/// (P6), and its id, which the chain skips.
#[derive(Clone, Copy)]
struct SideModels<'a> {
    selector: Option<&'a str>,
    id: &'a str,
}

/// What the roster of a session is looked up with.
struct RosterDiscovery<'a> {
    watchdog: &'a WatchdogConfig,
    loaded: &'a LoadedSettings,
    host_layer: Option<&'a (PathBuf, SettingsLayer)>,
    settings: &'a AdvisorSettings,
    model: &'a SessionModel,
    models: &'a ModelSource,
    host_models: HostModels,
}

impl RosterDiscovery<'_> {
    /// The roster found where WATCHDOG.md is (RO1), with a model builder for its entries
    /// and reload (RO21). Without a roster file it is empty (the session runs its unnamed
    /// advisor, RO12) and still watched, so a roster file written later is read (W8).
    fn setup(&self, redactor: Option<&Redactor>) -> RosterSetup {
        let reload = RosterReload {
            watchdog: self.watchdog.clone(),
            settings: self.roster_settings(),
            catalog: Arc::clone(&self.models.catalog),
            cache: self.models.shared.as_ref().map(|s| s.roster_cache()),
        };
        RosterSetup::discover_with(reload, redactor, Arc::new(self.host_models.clone()))
    }

    /// The roster's fallbacks (RO8, RO10): the settings files (with where each key is set),
    /// then the host's own keys; an entry without a `model` uses the session's own role when
    /// the host named one beside the files (`--model`, `ADVISOR_MODEL`, a role in the
    /// params, modes.json), or the session's model when the host resolved it itself (an
    /// endpoint: its provider and id, said to come from [`ENDPOINT_SOURCE`]).
    fn roster_settings(&self) -> RosterSettings {
        let (agent_dir, cwd) = (self.watchdog.agent_dir.as_deref(), &self.watchdog.cwd);
        let layers = match &self.models.shared {
            Some(shared) => shared
                .settings_cache()
                .load(agent_dir, cwd)
                .map(|files| files.layers.clone()),
            None => read_config_layers(&config_files(agent_dir, cwd)),
        };
        let mut settings = match layers {
            Ok(mut layers) => {
                if let Some((name, layer)) = self.host_layer {
                    layers.push((name.clone(), layer.clone(), Vec::new()));
                }
                RosterSettings::from_layers(&layers)
            }
            // The files changed since the settings were read: the values in effect.
            Err(_) => RosterSettings::from_values(self.loaded.advisor_role.clone(), self.settings),
        };
        if let SessionModel::Own {
            selector: Some(role),
            ..
        } = self.model
        {
            if settings.advisor_role.as_ref().map(|r| &r.value) != Some(role) {
                let source = Source::Setting {
                    key: "modelRoles.advisor",
                    file: None,
                };
                settings.advisor_role = Some(Sourced::new(role.clone(), source));
            }
        }
        if let Some(role) = self.model.endpoint_role() {
            let catalog = &self.models.catalog;
            let same = |named: &Sourced<String>| {
                let ours = resolve_role(&role, catalog).ok();
                ours.is_some() && resolve_role(&named.value, catalog).ok() == ours
            };
            if !settings.advisor_role.as_ref().is_some_and(same) {
                let source = Source::Setting {
                    key: "modelRoles.advisor",
                    file: Some(PathBuf::from(ENDPOINT_SOURCE)),
                };
                settings.advisor_role = Some(Sourced::new(role, source));
            }
        }
        settings
    }
}

/// Where a roster entry's model is said to come from when it is the session's model as the
/// host resolved it (serve's endpoint object, RO8, RO14).
const ENDPOINT_SOURCE: &str = "session/open model";

/// Builds the clients of the models a session's settings name beside its own — each roster
/// entry's (RO8), the backups (P6), the promotion model (G5) — like the session's own model:
/// at the endpoint the host resolved for their provider and id (the session's own, then the
/// host's `providers`; one of the same provider lends its base URL, dialect, key and headers
/// to another id), else with the host's keys, `--base-url` and `--api`; always with the named
/// thinking level and the session's output cap and request timeout. A fixed model serves
/// every entry.
#[derive(Clone)]
struct HostModels {
    source: ModelSource,
    endpoints: Vec<ProviderConfig>,
    max_output_tokens: u32,
    request_timeout: Duration,
    fixed: Option<Model>,
    /// `disabledProviders` (CA22).
    disabled: Vec<String>,
}

impl RosterModels for HostModels {
    fn build(&self, advisor: &RosterAdvisor) -> Result<Model, String> {
        if let Some(fixed) = &self.fixed {
            return Ok(Arc::clone(fixed));
        }
        match &advisor.model.value {
            ModelChoice::NoModel { reason, .. } => Err(reason.clone()),
            ModelChoice::Resolved {
                role,
                provider,
                model,
                thinking,
            } => self
                .build_resolved(role, provider, model, *thinking)
                .map_err(|e| e.to_string()),
        }
    }
}

impl HostModels {
    /// The models of a session whose own model is `model`, reached through `source`.
    fn new(model: &SessionModel, source: &ModelSource, settings: &AdvisorSettings) -> Self {
        let mut endpoints: Vec<ProviderConfig> = Vec::new();
        if let SessionModel::Endpoint { config, .. } = model {
            endpoints.push((**config).clone());
        }
        endpoints.extend(source.endpoints.iter().cloned());
        Self {
            source: source.clone(),
            endpoints,
            max_output_tokens: settings.max_output_tokens,
            request_timeout: settings.request_timeout,
            disabled: settings.disabled_providers.clone(),
            fixed: match model {
                SessionModel::Fixed(model) => Some(Arc::clone(model)),
                _ => None,
            },
        }
    }

    /// The client of a role string (`provider/id[:thinking]`, M1).
    fn build_role(&self, role: &str) -> Result<Model, ProviderError> {
        let resolved = resolve_role(role, &self.source.catalog)?;
        self.build_resolved(role, &resolved.provider, &resolved.model, resolved.thinking)
    }

    /// The client of `role`, resolved as `provider`, `model` and `thinking`.
    fn build_resolved(
        &self,
        role: &str,
        provider: &str,
        model: &str,
        thinking: ThinkingLevel,
    ) -> Result<Model, ProviderError> {
        // CA22: not even a host's endpoint of a disabled provider is used.
        if crate::settings::provider_listed(&self.disabled, provider) {
            return Err(ProviderError::DisabledProvider(provider.to_string()));
        }
        let config = match self.endpoint_config(provider, model) {
            Some(mut config) => {
                config.thinking = thinking;
                config.max_output_tokens = self.max_output_tokens.max(1);
                config.request_timeout = self.request_timeout;
                config
            }
            None => {
                let spec = ModelSpec {
                    role: Some(role.to_string()),
                    base_url: self.source.base_url.clone(),
                    api: self.source.api,
                    max_output_tokens: Some(self.max_output_tokens),
                    request_timeout: Some(self.request_timeout),
                    disabled_providers: self.disabled.clone(),
                    ..ModelSpec::default()
                };
                resolve_config(&spec, &self.source.catalog, &*self.source.keys)?
            }
        };
        self.source.client(config)
    }

    /// The host's endpoint of `provider/model`; else, when the host resolved another model of
    /// `provider`, that endpoint for `model`, with the catalog's facts about it.
    fn endpoint_config(&self, provider: &str, model: &str) -> Option<ProviderConfig> {
        let of_provider = || self.endpoints.iter().filter(|e| e.provider == provider);
        if let Some(exact) = of_provider().find(|e| e.model_id == model) {
            return Some(exact.clone());
        }
        let mut config = of_provider().next()?.clone();
        let facts = self
            .source
            .catalog
            .resolve(&format!("{provider}/{model}"), false);
        config.model_id = model.to_string();
        config.info = facts.info;
        config.prices = facts.prices;
        Some(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modes(dir: &Path, provider: &str, id: &str) {
        std::fs::create_dir_all(dir).unwrap();
        let text =
            format!(r#"{{"modes":{{"advisor":{{"provider":"{provider}","modelId":"{id}"}}}}}}"#);
        std::fs::write(dir.join("modes.json"), text).unwrap();
    }

    /// A session of the own model `local/own` under `settings`, its side models reached at
    /// a base URL as `advisor replay --base-url` gives one (`local` has no built-in endpoint).
    fn local_setup(settings: AdvisorSettings) -> SessionSetup {
        use crate::model::scripted::ScriptedModel;
        let own: Model = Arc::new(ScriptedModel::new([]).with_id("local/own"));
        let models = ModelSource {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..ModelSource::new(Arc::new(Catalog::empty()), Arc::new(|_| None))
        };
        SessionSetup {
            basics: SessionBasics::new("s".into(), std::env::temp_dir(), models),
            watchdog: None,
            loaded: LoadedSettings::default(),
            settings,
            model: SessionModel::Own {
                model: own,
                selector: Some("local/own".into()),
            },
        }
    }

    #[test]
    fn p6_backups_are_reached_through_the_hosts_base_url_and_a_long_chain_is_cut_at_eight() {
        let mut settings = AdvisorSettings::default();
        let chain: Vec<String> = std::iter::once("local/own".to_string())
            .chain((0..10).map(|i| format!("local/backup-{i}")))
            .collect();
        settings.retry.chains = [("local/own".to_string(), chain)].into();
        let prepared = local_setup(settings).build();
        let ids: Vec<String> = prepared
            .config
            .fallback_models
            .iter()
            .map(|m| m.info().id)
            .collect();
        let expected: Vec<String> = (0..8).map(|i| format!("local/backup-{i}")).collect();
        assert_eq!(ids, expected, "the own model skipped, the chain cut at 8");
        assert_eq!(
            prepared.notices,
            ["advisor: retry.fallbackChains.local/own lists 10 backups; only the first 8 are tried"]
        );
    }

    #[test]
    fn ca22_p6_a_backup_or_promotion_model_of_a_disabled_provider_is_skipped() {
        use crate::model::scripted::ScriptedModel;
        let mut settings = AdvisorSettings::default();
        let chain = vec!["off/backup".to_string(), "local/backup".to_string()];
        settings.retry.chains = [("local/own".to_string(), chain)].into();
        settings.context_promotion = Some("off/big".into());
        settings.disabled_providers = vec!["off".into()];
        let own: Model = Arc::new(ScriptedModel::new([]).with_id("local/own"));
        let asked = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
        let keys = Arc::clone(&asked);
        let models = ModelSource {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..ModelSource::new(
                Arc::new(Catalog::empty()),
                Arc::new(move |name| {
                    keys.lock().push(name.to_string());
                    None
                }),
            )
        };
        let setup = SessionSetup {
            basics: SessionBasics::new("s".into(), std::env::temp_dir(), models),
            watchdog: None,
            loaded: LoadedSettings::default(),
            settings,
            model: SessionModel::Own {
                model: own,
                selector: Some("local/own".into()),
            },
        };
        let prepared = setup.build();
        let ids: Vec<String> = prepared
            .config
            .fallback_models
            .iter()
            .map(|m| m.info().id)
            .collect();
        assert_eq!(ids, ["local/backup"]);
        assert!(prepared.config.promotion_model.is_none());
        assert!(
            prepared.notices.iter().any(|n| n.contains("off/backup")
                && n.contains("provider `off` is disabled by the settings")),
            "{:?}",
            prepared.notices
        );
        assert!(
            !asked.lock().iter().any(|k| k == "OFF_API_KEY"),
            "{asked:?}"
        );
    }

    #[test]
    fn ca25_the_session_role_may_be_a_role_alias() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = LoadedSettings {
            advisor_role: Some("@slow".into()),
            model_roles: [
                ("advisor".to_string(), "@slow".to_string()),
                ("slow".to_string(), "s/slow".to_string()),
            ]
            .into(),
            ..LoadedSettings::default()
        };
        let bare = SettingsEnv::default();
        let pick = |flag| session_role(flag, &bare, &loaded, dir.path(), None);
        assert_eq!(pick(None).unwrap().as_deref(), Some("s/slow"));
        assert_eq!(pick(Some("@advisor")).unwrap().as_deref(), Some("s/slow"));
        assert_eq!(
            pick(Some("@fast")).unwrap_err(),
            ProviderError::UnknownRoleAlias("fast".into())
        );
    }

    #[test]
    fn sp9_the_gate_without_a_judge_role_is_off_with_one_notice_and_a_role_builds_the_judge() {
        let setup = |judge_role: Option<&str>| {
            let settings = AdvisorSettings {
                judge_gate: true,
                judge_role: judge_role.map(str::to_string),
                ..AdvisorSettings::default()
            };
            local_setup(settings).build()
        };
        let off = setup(None);
        assert!(off.config.judge_model.is_none());
        assert_eq!(
            off.notices,
            ["advisor: the triage gate (advisor.judgeGate) is off: no modelRoles.judge is set"]
        );
        let on = setup(Some("local/judge"));
        assert_eq!(
            on.config.judge_model.map(|m| m.info().id).as_deref(),
            Some("local/judge")
        );
        assert!(on.notices.is_empty(), "{:?}", on.notices);
    }

    #[test]
    fn m1_model_comes_from_flag_then_env_then_file_then_modes() {
        let dir = tempfile::tempdir().unwrap();
        modes(&dir.path().join(".pi"), "m", "modes");
        let env = SettingsEnv {
            model: Some("e/env".into()),
            ..SettingsEnv::default()
        };
        let file = LoadedSettings {
            advisor_role: Some("c/file".into()),
            ..LoadedSettings::default()
        };
        let none = LoadedSettings::default();
        let bare = SettingsEnv::default();
        let pick = |flag, env, loaded| session_role(flag, env, loaded, dir.path(), None).unwrap();
        assert_eq!(pick(Some("f/flag"), &env, &file).as_deref(), Some("f/flag"));
        assert_eq!(pick(None, &env, &file).as_deref(), Some("e/env"));
        assert_eq!(pick(None, &bare, &file).as_deref(), Some("c/file"));
        assert_eq!(pick(None, &bare, &none).as_deref(), Some("m/modes"));
    }

    #[test]
    fn m1_modes_json_is_read_from_the_root_then_the_agent_dir() {
        let dir = tempfile::tempdir().unwrap();
        let (root, agent) = (dir.path().join("root"), dir.path().join("agent"));
        std::fs::create_dir_all(root.join(".pi")).unwrap();
        std::fs::create_dir_all(&agent).unwrap();
        let (env, loaded) = (SettingsEnv::default(), LoadedSettings::default());
        let role =
            |agent_dir: Option<&Path>| session_role(None, &env, &loaded, &root, agent_dir).unwrap();
        assert_eq!(role(Some(&agent)), None);
        modes(&agent, "a", "agent");
        assert_eq!(role(Some(&agent)).as_deref(), Some("a/agent"));
        assert_eq!(role(None), None);
        modes(&root.join(".pi"), "p", "root");
        assert_eq!(role(Some(&agent)).as_deref(), Some("p/root"));
        assert_eq!(role(None).as_deref(), Some("p/root"));
    }

    #[test]
    fn ro24_sessions_opened_on_one_project_share_its_compiled_globs() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(
            repo.join("WATCHDOG.yml"),
            "advisors:\n  - name: Migrations\n    when: {paths: [\"db/**\"]}\n",
        )
        .unwrap();
        let shared = Arc::new(SharedResources::with_catalog(Catalog::empty(), None, None));
        let catalog = Arc::new(Catalog::empty());
        let open = |id: &str| {
            let mut models = ModelSource::new(Arc::clone(&catalog), Arc::new(|_: &str| None));
            models.shared = Some(Arc::clone(&shared));
            let setup = SessionSetup {
                basics: SessionBasics::new(id.into(), repo.clone(), models),
                watchdog: Some(WatchdogConfig {
                    cwd: repo.clone(),
                    agent_dir: Some(dir.path().join("agent")),
                    home: Some(dir.path().to_path_buf()),
                    instructions: Default::default(),
                }),
                loaded: LoadedSettings::default(),
                settings: AdvisorSettings::default(),
                model: SessionModel::None,
            };
            let roster = setup.build().config.roster.unwrap().roster;
            roster.advisors[0].when.value.clone().unwrap()
        };
        let (first, second) = (open("a"), open("b"));
        assert!(
            first.shares_compiled_globs(&second),
            "the second session reuses the first one's load"
        );
        assert_eq!(shared.roster_cache().stats().loads, 1);
    }

    #[test]
    fn k2_m1_load_stops_on_a_disabling_file_when_asked_and_takes_the_hosts_role() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join(".omp")).unwrap();
        let file = root.join(".omp/config.yml");
        std::fs::write(&file, "advisor:\n  enabled: false\n").unwrap();
        let host_layer = SettingsLayer {
            advisor_role: Some("local/from-host".into()),
            ..SettingsLayer::default()
        };
        let inputs = |stop_when_disabled| SessionInputs {
            basics: SessionBasics {
                host_layer: Some((PathBuf::from("host"), host_layer.clone())),
                ..SessionBasics::new(
                    "s".into(),
                    root.clone(),
                    ModelSource {
                        base_url: Some("http://127.0.0.1:9/v1".into()),
                        ..ModelSource::new(Arc::new(Catalog::empty()), Arc::new(|_| None))
                    },
                )
            },
            env: SettingsEnv::default(),
            watchdog: false,
            stop_when_disabled,
            settings: &|loaded, _| loaded.settings.clone(),
            model: RequestedModel::Discover(None),
        };
        let stopped = SessionSetup::load(inputs(true)).err();
        assert_eq!(stopped, Some(SetupError::Disabled { file }));
        let loaded = SessionSetup::load(inputs(false)).unwrap();
        assert_eq!(loaded.no_model, None);
        let model = loaded.prepared.config.model.expect("the host's role");
        assert_eq!(model.info().id, "local/from-host");
        assert!(!loaded.prepared.config.settings.enabled, "the host's way");
    }
}
