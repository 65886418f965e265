//! Opening a host session's advisor in the background process (SPEC H2, H11): its settings
//! (the user's and the project's files, loaded once per project), its model, WATCHDOG.md,
//! the advisor's transcript file, and the transcript seeded at its current end (X4).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::config::RuntimeConfig;
use crate::model::ModelClient;
use crate::providers::Catalog;
use crate::runtime::RuntimeOptions;
use crate::session::ReadLimits;
use crate::settings::{AdvisorSettings, LoadedSettings, SettingsEnv};
use crate::setup::{KeyLookup, ModelSource, SessionBasics, SessionModel, SessionSetup};
use crate::shared::SharedResources;

use super::gate_hook::{gate_switch, roster_gates};
use super::host_session::{FeedState, TranscriptSource};
use super::paths::{ensure_private_dir, HostPaths};
use super::payload::{HookEvent, HookPayload, StartSource};
use super::protocol::is_session_var;
use super::settings::{host_model, host_settings, host_watchdog_config};
use super::turns::TranscriptError;

/// What the background process starts with.
#[derive(Clone)]
pub struct DaemonOptions {
    /// The places.
    pub paths: HostPaths,
    /// The effective user id (peers of another user are refused).
    pub uid: u32,
    /// The environment it inherited from the first hook: `HOME`, `XDG_*`, and the provider
    /// keys and `ADVISOR_MODEL` of sessions whose hook sent none of its own (H32). Read
    /// through this map only.
    pub env: Arc<BTreeMap<String, String>>,
    /// One model for every session instead of the one the settings name (tests, benches).
    pub model: Option<Arc<dyn ModelClient>>,
    /// The model catalog.
    pub catalog: Arc<Catalog>,
    /// The shared runtime's options.
    pub runtime: RuntimeOptions,
    /// End after this long with no session open (`None`: never).
    pub idle: Option<Duration>,
    /// A session with no hook event for this long is closed (Codex sends no SessionEnd).
    pub session_expiry: Duration,
}

/// A session ready to be opened on the runtime.
pub(crate) struct Prepared {
    pub(crate) config: RuntimeConfig,
    pub(crate) loaded: Arc<LoadedSettings>,
    pub(crate) cwd: PathBuf,
    pub(crate) notices: Vec<String>,
    pub(crate) feed: FeedState,
    pub(crate) source: TranscriptSource,
    /// Whether the session's action gate is on as it opens (GT10, H33).
    pub(crate) gate_on: bool,
}

/// The environment a session reads (H32): the process's own, its session variables (provider
/// keys, `ADVISOR_MODEL`, `ADVISOR_BASE_URL`) replaced by those of the hook that opened the
/// session when that hook sent them — a key the hook's environment lacks is not taken from
/// an older hook's.
pub(crate) fn session_env(
    process: &BTreeMap<String, String>,
    hook: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let Some(hook) = hook else {
        return process.clone();
    };
    process
        .iter()
        .filter(|(name, _)| !is_session_var(name))
        .chain(hook.iter().filter(|(name, _)| is_session_var(name)))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// Prepares the session of `first`'s host session (blocking: files); `None` for a
/// sub-agent's session while `advisor.subagents` is off (W7, H30): it gets no advisor.
pub(crate) fn prepare(
    options: &DaemonOptions,
    shared: &Arc<SharedResources>,
    cached: Option<Arc<LoadedSettings>>,
    first: &HookPayload,
    hook_env: Option<&BTreeMap<String, String>>,
) -> Result<Option<Prepared>, String> {
    let session_env = Arc::new(session_env(&options.env, hook_env));
    let lookup = |name: &str| session_env.get(name).cloned();
    let home = lookup("HOME").map(PathBuf::from);
    let cwd = first
        .cwd
        .clone()
        .or_else(|| home.clone())
        .unwrap_or_else(|| PathBuf::from("/"));
    let config_dir = &options.paths.config_dir;
    let loaded = match cached {
        Some(loaded) => loaded,
        None => {
            Arc::new(host_settings(first.host, &options.paths, &cwd).map_err(|e| e.to_string())?)
        }
    };
    let mut env = SettingsEnv::from_lookup(&lookup);
    env.agent_dir = Some(config_dir.display().to_string());
    // Installing the hook is the opt-in; only a file saying `enabled: false` turns it off
    // (H21, done by `host_settings`).
    let settings = loaded.settings.clone().with_env(&env);
    let subagent = first.agent_id.is_some();
    if subagent && !settings.subagents {
        return Ok(None);
    }
    let (source, feed) = transcript_feed(first, home, &settings);
    let models = model_source(options, shared, &session_env);
    let mut notices = Vec::new();
    let model = session_model(
        options,
        &session_env,
        first,
        (&loaded, &settings),
        &models,
        &mut notices,
    );
    let host = first.host.as_str();
    let basics = SessionBasics {
        audit_path: audit_path(options, first),
        ..SessionBasics::new(format!("{host}-{}", first.session_id), cwd.clone(), models)
    };
    let prepared = SessionSetup {
        basics,
        watchdog: Some(host_watchdog_config(
            first.host,
            &options.paths,
            &cwd,
            &lookup,
        )),
        loaded: (*loaded).clone(),
        settings,
        model,
    }
    .build();
    let mut config = prepared.config;
    config.initial_transcript = Some(feed.transcript.clone());
    let entries = config.roster.as_ref().map(|setup| &setup.roster);
    let gate_on = gate_switch(
        config.settings.gate.mode,
        entries.into_iter().flat_map(roster_gates),
    )
    .is_some();
    notices.extend(prepared.notices);
    notices.extend(joined_notice(first, &feed));
    Ok(Some(Prepared {
        config,
        loaded,
        cwd,
        notices,
        feed,
        source,
        gate_on,
    }))
}

/// The notice of a session the advisor joins after its start, with turns it will not
/// review (X4).
fn joined_notice(first: &HookPayload, feed: &FeedState) -> Option<String> {
    let fresh = matches!(
        first.event,
        HookEvent::SessionStart {
            source: StartSource::Startup
        }
    );
    (!fresh && feed.fed_len > 0).then(|| {
        "advisor: joined this session mid-way; it reviews what happens from here on".into()
    })
}

/// Where `first`'s transcript is read from and the feed seeded from it (X4).
fn transcript_feed(
    first: &HookPayload,
    home: Option<PathBuf>,
    settings: &AdvisorSettings,
) -> (TranscriptSource, FeedState) {
    let subagent = first.agent_id.is_some();
    let source = TranscriptSource {
        path: first.transcript_path.clone(),
        cwd: first.cwd.clone(),
        home,
        // The CLI may be writing its last line: a partial one is not malformed (L6); the
        // user's `advisor.subagents` decides whether sub-agents' turns are read (W7).
        limits: ReadLimits {
            growing: true,
            include_subagents: settings.subagents,
            ..ReadLimits::default()
        },
        tail: Arc::default(),
    };
    let messages = match source.read() {
        Ok(messages) => messages,
        Err(TranscriptError::Missing(_)) => Vec::new(),
        Err(e) => {
            tracing::warn!(error = %e, "hook session: transcript not read");
            Vec::new()
        }
    };
    // A sub-agent's session is reviewed from its start, whenever its first event comes.
    let feed = if subagent {
        FeedState::default()
    } else {
        FeedState::seeded(&messages)
    };
    (source, feed)
}

/// How a session reaches its models: the keys and `ADVISOR_BASE_URL` of its environment
/// (`session_env`, H32), the background process's shared HTTP clients (A6).
fn model_source(
    options: &DaemonOptions,
    shared: &Arc<SharedResources>,
    session_env: &Arc<BTreeMap<String, String>>,
) -> ModelSource {
    let lookup = |name: &str| session_env.get(name).cloned();
    let keys: KeyLookup = {
        let env = Arc::clone(session_env);
        Arc::new(move |name: &str| env.get(name).cloned())
    };
    ModelSource {
        shared: Some(Arc::clone(shared)),
        // H14: the endpoint of a proxy, a local server or a test's scripted model.
        base_url: lookup("ADVISOR_BASE_URL").filter(|url| !url.trim().is_empty()),
        ..ModelSource::new(Arc::clone(&options.catalog), keys)
    }
}

/// The session's model: the one for every session, else the one the host's settings name
/// (H22); none, with a notice, when it cannot be built.
fn session_model(
    options: &DaemonOptions,
    session_env: &BTreeMap<String, String>,
    first: &HookPayload,
    (loaded, settings): (&LoadedSettings, &AdvisorSettings),
    models: &ModelSource,
    notices: &mut Vec<String>,
) -> SessionModel {
    let lookup = |name: &str| session_env.get(name).cloned();
    match &options.model {
        Some(model) => SessionModel::Fixed(Arc::clone(model)),
        None => {
            // H22: ADVISOR_MODEL, else modelRoles.advisor, else the host's default for the
            // key the environment holds.
            let found = host_model(first.host, loaded, &lookup)
                .map(|m| m.role)
                .ok_or(crate::providers::ProviderError::NoModel)
                .and_then(|role| {
                    let spec = models.spec(Some(role.clone()), settings);
                    Ok((models.build(&spec)?, Some(role)))
                });
            match found {
                Ok((model, selector)) => SessionModel::Own { model, selector },
                Err(e) => {
                    notices.push(format!("advisor: no review model for this session ({e})"));
                    SessionModel::None
                }
            }
        }
    }
}

/// The advisor's transcript file of `first`'s session (P9), when its directory can be made
/// private.
fn audit_path(options: &DaemonOptions, first: &HookPayload) -> Option<PathBuf> {
    let audit = options
        .paths
        .advisor_transcript(first.host.as_str(), &first.session_id);
    audit
        .parent()
        .and_then(|dir| ensure_private_dir(dir, options.uid).ok())
        .map(|()| audit.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn h32_a_session_reads_the_keys_of_the_hook_that_opened_it() {
        let process = map(&[
            ("HOME", "/home/u"),
            ("ANTHROPIC_API_KEY", "sk-first-hook"),
            ("ADVISOR_MODEL", "anthropic/claude-sonnet-4-5"),
        ]);
        // The hook's own key and model replace the process's; its lack of a key is kept.
        let hook = map(&[("OPENAI_API_KEY", "sk-this-hook"), ("PATH", "/bin")]);
        let env = session_env(&process, Some(&hook));
        assert_eq!(
            env,
            map(&[("HOME", "/home/u"), ("OPENAI_API_KEY", "sk-this-hook")])
        );
        // A client that sends no variables: the process's own.
        assert_eq!(session_env(&process, None), process);
    }
}
