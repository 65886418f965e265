//! Opening a host session's advisor in the background process (SPEC H2, H11): its settings
//! (the user's and the project's files, loaded once per project), its model, WATCHDOG.md,
//! the advisor's transcript file, and the transcript seeded at its current end (X4).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::config::RuntimeConfig;
use crate::handle::AdvisorHandle;
use crate::session::ReadLimits;
use crate::settings::{
    load_config_files, read_prompt_override, LoadedSettings, SettingsEnv, SettingsError,
};
use crate::setup::{session_role, KeyLookup, ModelSource, SessionModel, SessionSetup};
use crate::shared::SharedResources;

use super::daemon::{Daemon, DaemonOptions};
use super::host_session::{FeedState, HostSession, SessionJob, TranscriptSource};
use super::output::{HookPoint, HookReply};
use super::paths::{config_files, ensure_private_dir};
use super::payload::{HookEvent, HookHost, HookPayload, StartSource};
use super::turns::TranscriptError;

/// The settings of a session working in `cwd` (H2): the user's `config.yml`, the project's
/// `.advisor/config.yml` over it, and the prompt override of the settings directory.
/// Blocking.
pub fn load_host_settings(config_dir: &Path, cwd: &Path) -> Result<LoadedSettings, SettingsError> {
    let mut loaded = load_config_files(&config_files(config_dir, cwd))?;
    let (prompt, warning) = read_prompt_override(config_dir)?;
    loaded.system_prompt_override = prompt;
    loaded.warnings.extend(warning);
    Ok(loaded)
}

/// A session ready to be opened on the runtime.
pub(crate) struct Prepared {
    config: RuntimeConfig,
    loaded: Arc<LoadedSettings>,
    cwd: PathBuf,
    notices: Vec<String>,
    feed: FeedState,
    source: TranscriptSource,
}

/// Prepares the session of `first`'s host session (blocking: files).
pub(crate) fn prepare(
    options: &DaemonOptions,
    shared: &Arc<SharedResources>,
    cached: Option<Arc<LoadedSettings>>,
    first: &HookPayload,
) -> Result<Prepared, String> {
    let lookup = |name: &str| options.env.get(name).cloned();
    let home = lookup("HOME").map(PathBuf::from);
    let cwd = first
        .cwd
        .clone()
        .or_else(|| home.clone())
        .unwrap_or_else(|| PathBuf::from("/"));
    let config_dir = &options.paths.config_dir;
    let loaded = match cached {
        Some(loaded) => loaded,
        None => Arc::new(load_host_settings(config_dir, &cwd).map_err(|e| e.to_string())?),
    };
    let mut env = SettingsEnv::from_lookup(&lookup);
    env.agent_dir = Some(config_dir.display().to_string());
    let mut settings = loaded.settings.clone();
    // Installing the hook is the opt-in; only a file saying `enabled: false` turns it off.
    settings.enabled = loaded.disabled_by.is_none();
    let settings = settings.with_env(&env);
    let source = TranscriptSource {
        path: first.transcript_path.clone(),
        cwd: first.cwd.clone(),
        home,
        limits: ReadLimits::default(),
    };
    let messages = match source.read() {
        Ok(messages) => messages,
        Err(TranscriptError::Missing(_)) => Vec::new(),
        Err(e) => {
            tracing::warn!(error = %e, "hook session: transcript not read");
            Vec::new()
        }
    };
    let feed = FeedState::seeded(&messages);
    let keys: KeyLookup = {
        let env = Arc::clone(&options.env);
        Arc::new(move |name: &str| env.get(name).cloned())
    };
    let models = ModelSource {
        shared: Some(Arc::clone(shared)),
        // H19: the endpoint of a proxy, a local server or a test's scripted model.
        base_url: lookup("ADVISOR_BASE_URL").filter(|url| !url.trim().is_empty()),
        ..ModelSource::new(Arc::clone(&options.catalog), keys)
    };
    let mut notices = Vec::new();
    let model = match &options.model {
        Some(model) => SessionModel::Fixed(Arc::clone(model)),
        None => {
            let found = session_role(None, &env, &loaded, &cwd, Some(config_dir))
                .and_then(|role| Ok((models.build(&models.spec(role.clone(), &settings))?, role)));
            match found {
                Ok((model, selector)) => SessionModel::Own { model, selector },
                Err(e) => {
                    notices.push(format!("advisor: no review model for this session ({e})"));
                    SessionModel::None
                }
            }
        }
    };
    let host = first.host.as_str();
    let audit = options.paths.advisor_transcript(host, &first.session_id);
    let audit_path = audit
        .parent()
        .and_then(|dir| ensure_private_dir(dir, options.uid).ok())
        .map(|()| audit.clone());
    let prepared = SessionSetup {
        session_id: format!("{host}-{}", first.session_id),
        root: cwd.clone(),
        watchdog: Some(env.watchdog_config(&cwd)),
        loaded: (*loaded).clone(),
        settings,
        host_layer: None,
        model,
        models,
        context_files: None,
        audit_path,
    }
    .build();
    let mut config = prepared.config;
    config.initial_transcript = Some(feed.transcript.clone());
    notices.extend(prepared.notices);
    let fresh = matches!(
        first.event,
        HookEvent::SessionStart {
            source: StartSource::Startup
        }
    );
    if !fresh && feed.fed_len > 0 {
        notices.push(
            "advisor: joined this session mid-way; it reviews what happens from here on".into(),
        );
    }
    Ok(Prepared {
        config,
        loaded,
        cwd,
        notices,
        feed,
        source,
    })
}

/// The worker of one host session: opens it, then serves its jobs in order.
pub(crate) struct Worker {
    pub(crate) daemon: Weak<Daemon>,
    pub(crate) key: (HookHost, String),
    pub(crate) options: DaemonOptions,
    pub(crate) shared: Arc<SharedResources>,
    pub(crate) cached: Option<Arc<LoadedSettings>>,
    pub(crate) handle: Arc<Mutex<Option<AdvisorHandle>>>,
}

impl Worker {
    /// Runs until the session ends or the process drops its queue.
    pub(crate) async fn run(self, first: HookPayload, mut queue: mpsc::Receiver<SessionJob>) {
        let options = self.options.clone();
        let shared = Arc::clone(&self.shared);
        let cached = self.cached.clone();
        let prepared =
            tokio::task::spawn_blocking(move || prepare(&options, &shared, cached, &first)).await;
        let prepared = match prepared {
            Ok(Ok(prepared)) => prepared,
            Ok(Err(e)) => return self.failed(e, queue).await,
            Err(e) => return self.failed(e.to_string(), queue).await,
        };
        let Some(daemon) = self.daemon.upgrade() else {
            return;
        };
        daemon.remember_settings(&prepared.cwd, Arc::clone(&prepared.loaded));
        let (handle, events) = daemon.runtime().open(prepared.config);
        drop(daemon);
        *self.handle.lock() = Some(handle.clone());
        let mut session = HostSession::new(
            handle,
            events,
            prepared.feed,
            prepared.source,
            prepared.notices,
        );
        while let Some(job) = queue.recv().await {
            if session.serve(job).await {
                break;
            }
        }
        self.forget();
    }

    /// A session that cannot be set up: every job is answered empty, and the user is told
    /// why once, at the first prompt or stop.
    async fn failed(self, error: String, mut queue: mpsc::Receiver<SessionJob>) {
        tracing::warn!(error = %error, "hook session: not opened");
        let mut told = false;
        while let Some(job) = queue.recv().await {
            let point = super::host_session::point_of(&job.payload.event);
            let tell =
                !told && matches!(point, HookPoint::UserPromptSubmit | HookPoint::Stop { .. });
            let reply = if tell {
                told = true;
                HookReply {
                    stdout: Some(serde_json::json!({
                        "systemMessage": format!("advisor: not running for this session: {error}")
                    })),
                    outcome: super::protocol::Outcome::Error,
                }
            } else {
                HookReply::empty()
            };
            let _ = job.reply.send(reply);
            if matches!(job.payload.event, HookEvent::SessionEnd { .. }) {
                break;
            }
        }
        self.forget();
    }

    fn forget(&self) {
        if let Some(daemon) = self.daemon.upgrade() {
            daemon.forget(&self.key);
        }
    }
}
