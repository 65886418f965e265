//! The advisor's tools (SPEC §9): the read-only workspace tools and `advise`.
//!
//! Tool bodies are plain synchronous functions over a [`ToolSession`]; the ToolExecutor actor
//! runs them on the blocking pool, never on an actor thread. A tool error is text the model
//! reads ([`ToolError`]'s `Display`), never a failed review.

pub(crate) mod advise;
mod args;
mod confine;
pub mod find;
mod read;
pub mod search;
mod walk;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use crate::model::ToolSchema;

/// Why a tool call failed; its text goes back to the model as the tool result (T7).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// Missing or mistyped arguments, a bad selector, an invalid regex.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The path resolves outside the workspace root (T2).
    #[error("{0}")]
    OutsideWorkspace(String),
    /// The path does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// Any other failure, already phrased for the model.
    #[error("{0}")]
    Failed(String),
    /// The tool is not one the advisor has.
    #[error("unknown tool `{0}`: the advisor has read, search, find and advise")]
    UnknownTool(String),
}

/// Per-session state of the workspace tools (T1): the record of ranges read, caches.
/// Cleared when the advisor context is reset or compacted.
#[derive(Debug, Default)]
pub struct ToolSessionState {
    /// Ranges already read, by canonical path: `(content hash, start line, end line)`.
    pub reads: BTreeMap<PathBuf, Vec<(u64, usize, usize)>>,
}

/// The advisor's isolated tool session (T1): id `<primary-id>-advisor`, workspace root,
/// and its own state.
#[derive(Debug)]
pub struct ToolSession {
    id: String,
    root: PathBuf,
    state: Mutex<ToolSessionState>,
}

impl ToolSession {
    /// A tool session for the primary session `primary_id`, confined to `root`.
    pub fn for_primary(primary_id: &str, root: impl Into<PathBuf>) -> Self {
        Self {
            id: format!("{primary_id}-advisor"),
            root: root.into(),
            state: Mutex::new(ToolSessionState::default()),
        }
    }

    /// The tool session of the named advisor `slug` of the primary session `primary_id`
    /// (RO13): id `<primary-id>-advisor.<slug>`; `None` is the unnamed advisor's (T1).
    pub fn for_member(primary_id: &str, slug: Option<&str>, root: impl Into<PathBuf>) -> Self {
        let mut session = Self::for_primary(primary_id, root);
        if let Some(slug) = slug {
            session.id = format!("{}.{slug}", session.id);
        }
        session
    }

    /// The session id (`<primary-id>-advisor`, or `<primary-id>-advisor.<slug>`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The workspace root every path must resolve inside.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Locks the session state.
    pub fn state(&self) -> parking_lot::MutexGuard<'_, ToolSessionState> {
        self.state.lock()
    }

    /// Forgets everything read (context reset or compaction).
    pub fn clear(&self) {
        *self.state.lock() = ToolSessionState::default();
    }
}

/// A workspace tool the advisor can call.
pub trait WorkspaceTool: Send + Sync {
    /// The tool's name as the model sees it.
    fn name(&self) -> &'static str;
    /// The schema the model sees.
    fn schema(&self) -> ToolSchema;
    /// Runs the tool. Blocking: call it from the blocking pool.
    fn run(&self, args: &Value, session: &ToolSession) -> Result<String, ToolError>;
}

/// The set of workspace tools, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<&'static str, Arc<dyn WorkspaceTool>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The advisor's workspace tools: `read`, `search`, `find` (T1).
    pub fn workspace() -> Self {
        let mut registry = Self::empty();
        registry.register(Arc::new(read::ReadTool));
        registry.register(Arc::new(search::SearchTool));
        registry.register(Arc::new(find::FindTool));
        registry
    }

    /// The tools of this registry whose names are in `names` (a roster entry's grant, RO9);
    /// an empty list leaves none (`advise` is always offered).
    pub fn only(&self, names: &[&str]) -> Self {
        let tools = self
            .tools
            .iter()
            .filter(|(name, _)| names.contains(name))
            .map(|(name, tool)| (*name, Arc::clone(tool)))
            .collect();
        Self { tools }
    }

    /// Adds a tool.
    pub fn register(&mut self, tool: Arc<dyn WorkspaceTool>) {
        self.tools.insert(tool.name(), tool);
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn WorkspaceTool>> {
        self.tools.get(name).cloned()
    }

    /// Names of the registered tools.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.keys().copied().collect()
    }

    /// Schemas of the workspace tools followed by `advise`: what the model is offered.
    pub fn schemas_with_advise(&self) -> Vec<ToolSchema> {
        let mut out: Vec<ToolSchema> = self.tools.values().map(|t| t.schema()).collect();
        out.push(advise::schema());
        out
    }
}
