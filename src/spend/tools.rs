//! What a review's tool calls may spend (SP1) and what the spend controls saved (SP1, SP2).

use serde::{Deserialize, Serialize};

use crate::tools::{advise, check_in};

/// The tools whose calls the budget never counts: `advise` and `check_in` (SP1, SP7).
pub const UNBUDGETED_TOOLS: [&str; 2] = [advise::NAME, check_in::NAME];

/// The tool budget of one review (SP1): the calls of granted tools other than those in
/// [`UNBUDGETED_TOOLS`], counted one by one in the order the model made them (parallel calls
/// of one answer included). A call past the budget is not run. The budget is
/// `advisor.toolBudget` or the roster entry's `toolBudget`, default
/// [`crate::settings::DEFAULT_TOOL_BUDGET`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolBudget {
    budget: u32,
    used: u32,
}

impl ToolBudget {
    /// A review's budget of `budget` calls, none used.
    pub fn new(budget: u32) -> Self {
        Self { budget, used: 0 }
    }

    /// The budget.
    pub fn budget(&self) -> u32 {
        self.budget
    }

    /// Takes the next call, of the tool `name`; `granted` when the advisor has that tool
    /// (a call of another is an unknown tool, T7, and costs nothing). Answers whether it
    /// may run: false when it is past the budget.
    pub fn admit(&mut self, name: &str, granted: bool) -> bool {
        if !granted || UNBUDGETED_TOOLS.contains(&name) {
            return true;
        }
        if self.used >= self.budget {
            return false;
        }
        self.used += 1;
        true
    }
}

/// What the spend controls of the tool loop did (SP1, SP2), per review and in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ToolSpendCounts {
    /// Calls past the tool budget, not run (SP1).
    pub budget_refused: u64,
    /// Calls answered with a pointer to an earlier result still in the context (SP2).
    pub rereads_saved: u64,
    /// The bytes of those earlier results, not sent again (SP2).
    pub reread_bytes_saved: u64,
}

impl ToolSpendCounts {
    /// Adds another set of counts.
    pub fn add(&mut self, other: &ToolSpendCounts) {
        self.budget_refused += other.budget_refused;
        self.rereads_saved += other.rereads_saved;
        self.reread_bytes_saved += other.reread_bytes_saved;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::DEFAULT_TOOL_BUDGET;

    #[test]
    fn sp1_the_budget_counts_granted_tools_one_by_one_and_never_advise_or_check_in() {
        let mut budget = ToolBudget::new(DEFAULT_TOOL_BUDGET);
        let calls = [
            ("read", true),
            ("advise", true),
            ("search", true),
            ("check_in", true),
            ("bash", false),
            ("find", true),
            ("read", true),
            ("advise", true),
            ("find", true),
        ];
        let admitted: Vec<bool> = calls
            .iter()
            .map(|(name, granted)| budget.admit(name, *granted))
            .collect();
        assert_eq!(
            admitted,
            [true, true, true, true, true, true, false, true, false]
        );
    }

    #[test]
    fn sp1_a_budget_of_zero_refuses_every_workspace_call() {
        let mut budget = ToolBudget::new(0);
        assert!(!budget.admit("read", true));
        assert!(budget.admit("advise", true));
        assert_eq!(budget.budget(), 0);
    }

    #[test]
    fn sp1_sp2_counts_add_up() {
        let mut total = ToolSpendCounts::default();
        let one = ToolSpendCounts {
            budget_refused: 2,
            rereads_saved: 1,
            reread_bytes_saved: 400,
        };
        total.add(&one);
        total.add(&one);
        assert_eq!(
            total,
            ToolSpendCounts {
                budget_refused: 4,
                rereads_saved: 2,
                reread_bytes_saved: 800
            }
        );
    }
}
