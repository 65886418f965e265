//! The advisor's tools (SPEC §9): the read-only workspace tools, `advise` and `check_in`
//! (SP7).
//!
//! Tool bodies are plain synchronous functions over a [`ToolSession`]; the ToolExecutor actor
//! runs them on the blocking pool, never on an actor thread. A tool error is text the model
//! reads ([`ToolError`]'s `Display`), never a failed review.

pub(crate) mod advise;
mod args;
pub mod check_in;
mod confine;
pub mod find;
pub(crate) mod read;
pub mod search;
mod walk;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    #[error("unknown tool `{0}`: the advisor has read, search, find, advise and check_in")]
    UnknownTool(String),
}

/// The advisor's isolated tool session (T1): id `<primary-id>-advisor` and workspace root.
/// It keeps no record of what the tools showed: what is still in the advisor's context is
/// the context's to say (SP2).
#[derive(Debug)]
pub struct ToolSession {
    id: String,
    root: PathBuf,
}

impl ToolSession {
    /// A tool session for the primary session `primary_id`, confined to `root`.
    pub fn for_primary(primary_id: &str, root: impl Into<PathBuf>) -> Self {
        Self {
            id: format!("{primary_id}-advisor"),
            root: root.into(),
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
}

/// A workspace tool the advisor can call.
pub trait WorkspaceTool: Send + Sync {
    /// The tool's name as the model sees it.
    fn name(&self) -> &'static str;
    /// The schema the model sees.
    fn schema(&self) -> ToolSchema;
    /// Runs the tool. Blocking: call it from the blocking pool.
    fn run(&self, args: &Value, session: &ToolSession) -> Result<String, ToolError>;
    /// A digest of the size and modification time of every file and directory this call's
    /// result depends on, taken without opening a file (SP2): the same digest later means
    /// the same call would answer the same. `None` (the default) when the call cannot be
    /// fingerprinted — bad arguments, a tree too large — and is then always run. Blocking:
    /// call it from the blocking pool.
    fn fingerprint(&self, _args: &Value, _session: &ToolSession) -> Option<u64> {
        None
    }
}

/// What a registered tool is, which decides how the ToolExecutor runs it.
#[derive(Clone)]
pub(crate) enum ToolKind {
    /// A read-only workspace tool (T1–T5): synchronous, run on the blocking pool.
    Workspace(Arc<dyn WorkspaceTool>),
    /// `advise` (T6): asynchronous; the executor parses the call (`tools::advise::parse`) and
    /// raises the advisory at the delivery router with the advisor's label and note budget,
    /// which it holds.
    Advise,
    /// `check_in` (SP7): answered by the review engine itself, which hands what it asks for
    /// to the advisor's cadence; it never reaches the executor.
    CheckIn,
}

impl ToolKind {
    /// The schema the model sees.
    pub fn schema(&self) -> ToolSchema {
        match self {
            ToolKind::Workspace(tool) => tool.schema(),
            ToolKind::Advise => advise::schema(),
            ToolKind::CheckIn => check_in::schema(),
        }
    }
}

/// The advisor's tools by name: the workspace tools it was granted and `advise`, which is
/// always there (RO9).
#[derive(Clone)]
pub struct ToolRegistry {
    tools: BTreeMap<&'static str, ToolKind>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::empty()
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    /// A registry without workspace tools: `advise` alone.
    pub fn empty() -> Self {
        Self {
            tools: BTreeMap::from([(advise::NAME, ToolKind::Advise)]),
        }
    }

    /// The advisor's workspace tools: `read`, `search`, `find` (T1), `advise` and
    /// `check_in` (SP7: granted by default).
    pub fn workspace() -> Self {
        let mut registry = Self::empty();
        registry.tools.insert(check_in::NAME, ToolKind::CheckIn);
        registry.register(Arc::new(read::ReadTool));
        registry.register(Arc::new(search::SearchTool));
        registry.register(Arc::new(find::FindTool));
        registry
    }

    /// The registry with only the tools named in `names` (unknown names are ignored):
    /// workspace tools and `check_in` (SP7, granted like them); `advise` is always kept
    /// (RO9).
    pub fn only(&self, names: &[&str]) -> Self {
        let tools = self
            .tools
            .iter()
            .filter(|(name, kind)| matches!(kind, ToolKind::Advise) || names.contains(name))
            .map(|(name, kind)| (*name, kind.clone()))
            .collect();
        Self { tools }
    }

    /// Adds a workspace tool; one named `advise` or `check_in` is not added (the name is
    /// taken).
    pub fn register(&mut self, tool: Arc<dyn WorkspaceTool>) {
        let name = tool.name();
        if name != advise::NAME && name != check_in::NAME {
            self.tools.insert(name, ToolKind::Workspace(tool));
        }
    }

    /// The tool called `name`, of either kind: what the executor dispatches on.
    pub(crate) fn tool(&self, name: &str) -> Option<ToolKind> {
        self.tools.get(name).cloned()
    }

    /// The workspace tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn WorkspaceTool>> {
        match self.tools.get(name)? {
            ToolKind::Workspace(tool) => Some(Arc::clone(tool)),
            ToolKind::Advise | ToolKind::CheckIn => None,
        }
    }

    /// Names of the workspace tools.
    pub fn names(&self) -> Vec<&'static str> {
        self.workspace_tools().map(|(name, _)| name).collect()
    }

    /// Whether `check_in` is granted (SP7).
    pub fn has_check_in(&self) -> bool {
        self.tools.contains_key(check_in::NAME)
    }

    /// Schemas of the workspace tools followed by `advise` and, when granted, `check_in`
    /// (SP7): what the model is offered.
    pub fn schemas_with_advise(&self) -> Vec<ToolSchema> {
        let advise = self
            .tools
            .values()
            .filter(|kind| matches!(kind, ToolKind::Advise));
        let check_in = self
            .tools
            .values()
            .filter(|kind| matches!(kind, ToolKind::CheckIn));
        let advise = advise.chain(check_in);
        self.workspace_tools()
            .map(|(_, kind)| kind)
            .chain(advise)
            .map(ToolKind::schema)
            .collect()
    }

    /// The workspace tools, by name.
    fn workspace_tools(&self) -> impl Iterator<Item = (&'static str, &ToolKind)> {
        self.tools
            .iter()
            .filter(|(_, kind)| matches!(kind, ToolKind::Workspace(_)))
            .map(|(name, kind)| (*name, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_names(registry: &ToolRegistry) -> Vec<String> {
        registry
            .schemas_with_advise()
            .into_iter()
            .map(|s| s.name)
            .collect()
    }

    #[test]
    fn ro9_a_subset_of_the_tools_keeps_advise() {
        let all = ToolRegistry::workspace();
        let some = all.only(&["read", "find", "bash"]);
        assert_eq!(some.names(), ["find", "read"]);
        assert_eq!(schema_names(&some), ["find", "read", "advise"]);
        assert!(some.get("search").is_none() && some.tool("search").is_none());
        let none = all.only(&[]);
        assert!(none.names().is_empty());
        assert_eq!(schema_names(&none), ["advise"]);
        assert!(matches!(none.tool(advise::NAME), Some(ToolKind::Advise)));
        assert!(
            none.get(advise::NAME).is_none(),
            "advise is no workspace tool"
        );
    }

    #[test]
    fn sp7_check_in_is_granted_by_default_and_granted_or_denied_like_the_workspace_tools() {
        let all = ToolRegistry::workspace();
        assert_eq!(all.names(), ["find", "read", "search"], "no workspace tool");
        assert!(all.has_check_in());
        assert_eq!(
            schema_names(&all),
            ["find", "read", "search", "advise", "check_in"]
        );
        assert!(matches!(all.tool("check_in"), Some(ToolKind::CheckIn)));
        assert!(all.get("check_in").is_none());
        let granted = all.only(&["read", "check_in"]);
        assert_eq!(schema_names(&granted), ["read", "advise", "check_in"]);
        let denied = all.only(&["read"]);
        assert!(!denied.has_check_in());
        assert_eq!(schema_names(&denied), ["read", "advise"]);
        assert!(!ToolRegistry::empty().has_check_in());
    }
}
