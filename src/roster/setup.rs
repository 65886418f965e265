//! What a session starts a roster with (RO13, RO21, RO23): the resolved [`Roster`], how a
//! model client is built for an entry, and where to look when the files change.

use std::fmt;
use std::sync::Arc;

use crate::model::ModelClient;
use crate::providers::Catalog;
use crate::redact::Redactor;
use crate::roster::{
    load, refresh_by, Roster, RosterAdvisor, RosterCache, RosterRefresh, RosterSettings,
};
use crate::watchdog::{Fingerprint, WatchdogConfig};

/// Builds the model client of one roster entry (RO8). The host owns the keys and the
/// environment, so it supplies this; `Err` is the reason the advisor shows `no model`
/// (unknown provider, missing key) while the others run.
pub trait RosterModels: Send + Sync {
    /// The client for `advisor`'s resolved model.
    fn build(&self, advisor: &RosterAdvisor) -> Result<Arc<dyn ModelClient>, String>;
}

/// Where the roster files are looked for again before each review (RO21, as W8 does for
/// WATCHDOG.md), and what their entries fall back to.
#[derive(Clone)]
pub struct RosterReload {
    /// The discovery settings (working directory, agent directory, stop).
    pub watchdog: WatchdogConfig,
    /// What the settings say the roster falls back to (RO8, RO10).
    pub settings: RosterSettings,
    /// The model catalog entries resolve against, shared with the process's other sessions
    /// (A6, RO24): a roster session holds a pointer, never its own copy.
    pub catalog: Arc<Catalog>,
    /// The process's roster loads (RO24): the sessions of one project read and compile
    /// its files once; `None` loads for this session alone.
    pub cache: Option<Arc<RosterCache>>,
}

impl RosterReload {
    /// The roster again when the files changed since `previous` (RO21), through the cache
    /// when there is one. Blocking.
    pub fn refresh(&self, redactor: Option<&Redactor>, previous: &Fingerprint) -> RosterRefresh {
        refresh_by(&self.watchdog, Some(previous), || self.load(redactor))
    }

    /// The roster as the files say now, through the cache when there is one. Blocking.
    pub fn load(&self, redactor: Option<&Redactor>) -> Roster {
        match &self.cache {
            Some(cache) => cache.load(&self.watchdog, &self.settings, &self.catalog, redactor),
            None => load(&self.watchdog, &self.settings, &self.catalog, redactor),
        }
    }
}

/// A roster as a session runs it: the resolved advisors, the model builder and, when the
/// host wants hot reload, where the files are.
#[derive(Clone)]
pub struct RosterSetup {
    /// The roster as resolved at open (its warnings are reported by the host, RO23).
    pub roster: Roster,
    /// Builds each entry's model client.
    pub models: Arc<dyn RosterModels>,
    /// `None`: the roster is fixed for the session's life.
    pub reload: Option<RosterReload>,
}

impl RosterSetup {
    /// The roster found where WATCHDOG.md is found by `watchdog` (RO1), its entries falling
    /// back to `settings` and resolved against `catalog`, their instructions redacted by
    /// `redactor` (RO11), their clients built by `models`, reloaded before each review when
    /// the files change (RO21). With no roster file the roster is empty and the session runs
    /// its one unnamed advisor (RO12), but the files are still watched: a `WATCHDOG.yml`
    /// written later starts its advisors at the next turn end, as a new WATCHDOG.md is read
    /// (W8). Blocking (it reads the files): run it off the actor thread.
    pub fn discover(
        watchdog: WatchdogConfig,
        settings: RosterSettings,
        catalog: Arc<Catalog>,
        redactor: Option<&Redactor>,
        models: Arc<dyn RosterModels>,
    ) -> Self {
        let reload = RosterReload {
            watchdog,
            settings,
            catalog,
            cache: None,
        };
        Self::discover_with(reload, redactor, models)
    }

    /// [`RosterSetup::discover`] where `reload` says, through its cache when it has one
    /// (RO24: the sessions of one project share a load and its compiled globs). Blocking.
    pub fn discover_with(
        reload: RosterReload,
        redactor: Option<&Redactor>,
        models: Arc<dyn RosterModels>,
    ) -> Self {
        let roster = reload.load(redactor);
        Self {
            roster,
            models,
            reload: Some(reload),
        }
    }

    /// Whether any roster file was found or reported on (a session without one runs the
    /// unnamed advisor and reports no roster, RO12, RO23).
    pub fn found(&self) -> bool {
        !self.roster.files.is_empty() || !self.roster.warnings.is_empty()
    }
}

impl fmt::Debug for RosterSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RosterSetup")
            .field("roster", &self.roster)
            .field("reload", &self.reload.is_some())
            .finish_non_exhaustive()
    }
}
