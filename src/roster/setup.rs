//! What a session starts a roster with (RO13, RO21, RO23): the resolved [`Roster`], how a
//! model client is built for an entry, and where to look when the files change.

use std::fmt;
use std::sync::Arc;

use crate::model::ModelClient;
use crate::providers::Catalog;
use crate::roster::{Roster, RosterAdvisor, RosterSettings};
use crate::watchdog::WatchdogConfig;

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

impl fmt::Debug for RosterSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RosterSetup")
            .field("roster", &self.roster)
            .field("reload", &self.reload.is_some())
            .finish_non_exhaustive()
    }
}
