//! The `tools` grant of one roster entry (RO9): names, oh-my-pi's aliases, the default set
//! (with `check_in`, SP7), and the mutating tools this advisor never gets.

use serde::Serialize;

/// A tool an advisor may be granted: a workspace tool (T1) or `check_in` (SP7); `advise`
/// is always there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RosterTool {
    /// `read` (T3).
    Read,
    /// `search` (T4); oh-my-pi calls it `grep`.
    Search,
    /// `find` (T5); oh-my-pi's `glob`.
    Find,
    /// `check_in` (SP7): the advisor schedules its next review.
    #[serde(rename = "check_in")]
    CheckIn,
}

impl RosterTool {
    /// What an omitted `tools` gives, and what a list left empty by dropping falls back to.
    pub const DEFAULT_SET: [RosterTool; 4] = [
        RosterTool::Read,
        RosterTool::Search,
        RosterTool::Find,
        RosterTool::CheckIn,
    ];

    /// The tool's name as the advisor's model sees it.
    pub fn as_str(self) -> &'static str {
        match self {
            RosterTool::Read => "read",
            RosterTool::Search => "search",
            RosterTool::Find => "find",
            RosterTool::CheckIn => "check_in",
        }
    }

    /// The tool a grant names: our names and oh-my-pi's aliases, any case.
    fn named(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "read" => Some(RosterTool::Read),
            "search" | "grep" => Some(RosterTool::Search),
            "find" | "glob" => Some(RosterTool::Find),
            "check_in" => Some(RosterTool::CheckIn),
            _ => None,
        }
    }
}

/// Tool names oh-my-pi can grant that change files, run commands or change state; this
/// advisor never mutates, so a grant naming one is refused with a warning saying so.
const MUTATING: &[&str] = &[
    "bash",
    "edit",
    "write",
    "ast_edit",
    "eval",
    "checkpoint",
    "rewind",
    "task",
    "todo",
    "memory_edit",
    "retain",
    "learn",
    "manage_skill",
    "github",
    "python",
    "notebook",
];

/// What became of one name in a grant that is not granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// A mutating tool: refused.
    Mutating(String),
    /// A name this advisor has no tool for: dropped.
    Unknown(String),
}

/// A resolved grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    /// The tools granted, in the order first named, without repeats.
    pub(crate) tools: Vec<RosterTool>,
    /// The names that were not granted, in order.
    pub(crate) rejected: Vec<Rejected>,
    /// Whether the list named tools but none survived, so the default set is used.
    pub(crate) fell_back: bool,
}

/// Resolves the names of a `tools:` list (RO9): `[]` grants nothing; `grep` and `glob` are
/// `search` and `find`; `advise` is always granted and changes nothing; a mutating name is
/// refused, any other unknown name dropped; a list that named tools of which none survived
/// falls back to the default set.
pub(crate) fn resolve_grant(names: &[String]) -> Grant {
    let mut tools = Vec::new();
    let mut rejected = Vec::new();
    for raw in names {
        let name = raw.trim();
        if name.eq_ignore_ascii_case("advise") {
            continue;
        }
        match RosterTool::named(name) {
            Some(tool) if !tools.contains(&tool) => tools.push(tool),
            Some(_) => {}
            None if MUTATING.contains(&name.to_ascii_lowercase().as_str()) => {
                rejected.push(Rejected::Mutating(name.to_string()))
            }
            None => rejected.push(Rejected::Unknown(name.to_string())),
        }
    }
    let fell_back = tools.is_empty() && !rejected.is_empty();
    if fell_back {
        tools = RosterTool::DEFAULT_SET.to_vec();
    }
    Grant {
        tools,
        rejected,
        fell_back,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(names: &[&str]) -> Grant {
        resolve_grant(&names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn ro9_aliases_name_search_and_find_without_repeats() {
        let got = grant(&["grep", "Read", "glob", "search"]);
        assert_eq!(
            got.tools,
            [RosterTool::Search, RosterTool::Read, RosterTool::Find]
        );
        assert!(got.rejected.is_empty() && !got.fell_back);
    }

    #[test]
    fn sp7_check_in_is_in_the_default_set_and_granted_or_left_out_like_the_others() {
        assert!(RosterTool::DEFAULT_SET.contains(&RosterTool::CheckIn));
        let got = grant(&["read", "Check_In"]);
        assert_eq!(got.tools, [RosterTool::Read, RosterTool::CheckIn]);
        assert_eq!(
            grant(&["read"]).tools,
            [RosterTool::Read],
            "not named: denied"
        );
        assert_eq!(RosterTool::CheckIn.as_str(), "check_in");
        assert_eq!(
            serde_json::to_value(RosterTool::CheckIn).unwrap(),
            serde_json::json!("check_in")
        );
    }

    #[test]
    fn ro9_empty_list_grants_nothing() {
        let got = grant(&[]);
        assert!(got.tools.is_empty() && !got.fell_back);
        let advise_only = grant(&["advise"]);
        assert!(advise_only.tools.is_empty() && !advise_only.fell_back);
    }

    #[test]
    fn ro9_unknown_dropped_and_mutating_refused() {
        let got = grant(&["read", "lsp", "bash", "Edit"]);
        assert_eq!(got.tools, [RosterTool::Read]);
        assert_eq!(
            got.rejected,
            [
                Rejected::Unknown("lsp".into()),
                Rejected::Mutating("bash".into()),
                Rejected::Mutating("Edit".into()),
            ]
        );
        assert!(!got.fell_back);
    }

    #[test]
    fn ro9_list_emptied_by_dropping_falls_back_to_default_set() {
        let got = grant(&["write", "web_search"]);
        assert_eq!(got.tools, RosterTool::DEFAULT_SET);
        assert!(got.fell_back);
        assert_eq!(got.rejected.len(), 2);
    }
}
