//! The spend ceiling (SP6): what an advisor whose spend ratio (SP5) runs past
//! `maxSpendRatio` is made to do. Plain code, one [`SpendCeiling`] per advisor, kept by the
//! supervisor beside the advisor's other member state; the supervisor adds up what the
//! advisor spent over the whole session (its transcript file's totals on resume, P9, then
//! every model call) and asks at each turn end.

use super::ratio::{AdvisorSpend, CeilingState, CeilingStatus, PrimarySpend, SpendRatio};
use super::ToolCallCounts;
use crate::model::Usage;

/// The input tokens the primary must have used before a ceiling acts (SP6): early in a
/// session the ratio says little.
pub const MIN_PRIMARY_INPUT: u64 = 200_000;

/// What a check of the ceiling decided; each happens once and comes with a notice naming
/// the ratio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CeilingAction {
    /// From now on the advisor reviews only at the end of a run (CA1 `agent-end`).
    SwitchToAgentEnd {
        /// The ratio that ran past the ceiling.
        ratio: SpendRatio,
        /// The ceiling.
        limit: f64,
    },
    /// Pause the advisor until `/advisor on` (twice the ceiling).
    Pause {
        /// The ratio that ran past twice the ceiling.
        ratio: SpendRatio,
        /// The ceiling.
        limit: f64,
    },
}

impl CeilingAction {
    /// The notice telling the user (a data file line); the supervisor names the advisor.
    pub fn notice(&self) -> String {
        let (key, ratio, limit) = match self {
            CeilingAction::SwitchToAgentEnd { ratio, limit } => ("ceilingAgentEnd", ratio, limit),
            CeilingAction::Pause { ratio, limit } => ("ceilingPaused", ratio, limit),
        };
        crate::texts::notice(
            key,
            &[
                ("ratio", &super::ratio::ratio_text(Some(ratio))),
                ("limit", &format!("{limit}")),
                ("twice", &format!("{}", limit * 2.0)),
            ],
        )
    }
}

/// One advisor's spend over the session and what its ceiling did to it (SP6).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpendCeiling {
    /// What its transcript file recorded before this process (P9).
    restored: Usage,
    /// What its model calls spent in this process, over every run of it: a pause, a
    /// rebuild or a compaction never starts it again.
    spent: Usage,
    /// It reviews only at the end of a run, for the rest of the session.
    agent_end: bool,
    /// The ceiling paused it and it was not resumed yet.
    paused: bool,
    /// A pause may come: false after a resume until the ratio is back at or under twice
    /// the ceiling, so `/advisor on` is not undone at the next turn end (our choice).
    disarmed: bool,
}

impl SpendCeiling {
    /// Takes in the totals the advisor's transcript file recorded before (P9: a resumed
    /// session restores them).
    pub fn restored(&mut self, usage: &Usage) {
        self.restored = *usage;
    }

    /// Takes in what one of its model runs spent.
    pub fn spent(&mut self, usage: &Usage) {
        self.spent.add(usage);
    }

    /// What the advisor spent over the session, for the ratio.
    pub fn advisor_spend(&self) -> AdvisorSpend {
        let mut total = self.restored;
        total.add(&self.spent);
        AdvisorSpend::from_parts(0, 0, &total, &ToolCallCounts::default())
    }

    /// Whether it reviews only at the end of a run (CA1's `agent-end`) whatever its
    /// cadence says.
    pub fn forces_agent_end(&self) -> bool {
        self.agent_end
    }

    /// Whether the ceiling paused it and it was not resumed since.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Its state for status under the ceiling `limit` (`None`: no ceiling, nothing shown).
    pub fn status(&self, limit: Option<f64>) -> Option<CeilingStatus> {
        let state = if self.paused {
            CeilingState::Paused
        } else if self.agent_end {
            CeilingState::AgentEnd
        } else {
            CeilingState::Under
        };
        limit.map(|max_spend_ratio| CeilingStatus {
            max_spend_ratio,
            state,
        })
    }

    /// Checks the ceiling `limit` at a turn end against the primary's spend; `held_off`
    /// says whether the advisor is paused now (a pause of ours that is no longer held off
    /// was resumed by the user). Answers what to do, in order: nothing while there is no
    /// ceiling, the primary has used less than [`MIN_PRIMARY_INPUT`] input tokens, or the
    /// ratio is unknown.
    pub fn check(
        &mut self,
        limit: Option<f64>,
        primary: Option<&PrimarySpend>,
        held_off: bool,
    ) -> Vec<CeilingAction> {
        if self.paused && !held_off {
            // Resumed by `/advisor on`: the ceiling still applies, the pause waits for the
            // ratio to come back under twice the ceiling and run past it again.
            self.paused = false;
            self.disarmed = true;
        }
        let mut actions = Vec::new();
        let (Some(limit), Some(primary)) = (limit, primary) else {
            return actions;
        };
        if primary.input_total() < MIN_PRIMARY_INPUT {
            return actions;
        }
        let Some(ratio) = SpendRatio::between(&self.advisor_spend(), primary) else {
            return actions;
        };
        if ratio.value > limit && !self.agent_end {
            self.agent_end = true;
            actions.push(CeilingAction::SwitchToAgentEnd { ratio, limit });
        }
        if ratio.value <= 2.0 * limit {
            self.disarmed = false;
        } else if !self.disarmed && !self.paused && !held_off {
            self.paused = true;
            actions.push(CeilingAction::Pause { ratio, limit });
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spend::ratio::RatioBasis;

    fn primary(input: u64) -> PrimarySpend {
        PrimarySpend {
            messages: 1,
            input_uncached: input,
            ..PrimarySpend::default()
        }
    }

    fn spent(input: u64) -> Usage {
        Usage {
            input,
            ..Usage::default()
        }
    }

    fn kinds(actions: &[CeilingAction]) -> Vec<&'static str> {
        actions
            .iter()
            .map(|a| match a {
                CeilingAction::SwitchToAgentEnd { .. } => "agent-end",
                CeilingAction::Pause { .. } => "pause",
            })
            .collect()
    }

    #[test]
    fn sp6_past_the_ceiling_switches_to_agent_end_once_with_the_ratio() {
        let mut c = SpendCeiling::default();
        c.spent(&spent(100_000));
        // 100k ÷ 400k = 0.25: under a ceiling of 0.3.
        assert!(c
            .check(Some(0.3), Some(&primary(400_000)), false)
            .is_empty());
        c.spent(&spent(40_000));
        let actions = c.check(Some(0.3), Some(&primary(400_000)), false);
        assert_eq!(kinds(&actions), ["agent-end"]);
        let CeilingAction::SwitchToAgentEnd { ratio, limit } = actions[0] else {
            unreachable!()
        };
        assert_eq!(
            (ratio.basis, ratio.value, limit),
            (RatioBasis::InputTokens, 0.35, 0.3)
        );
        assert!(
            actions[0].notice().contains("0.35"),
            "{}",
            actions[0].notice()
        );
        assert!(c.forces_agent_end());
        // For the rest of the session, whatever the ratio does; said once.
        assert!(c
            .check(Some(0.3), Some(&primary(4_000_000)), false)
            .is_empty());
        assert!(c.forces_agent_end());
        assert_eq!(
            c.status(Some(0.3)).map(|s| s.state),
            Some(CeilingState::AgentEnd)
        );
    }

    #[test]
    fn sp6_nothing_before_the_primary_used_200k_input_tokens_or_without_a_ceiling() {
        let mut c = SpendCeiling::default();
        c.spent(&spent(1_000_000));
        assert!(c
            .check(Some(0.5), Some(&primary(199_999)), false)
            .is_empty());
        assert!(c.check(None, Some(&primary(400_000)), false).is_empty());
        assert!(!c.forces_agent_end());
        assert_eq!(c.status(None), None);
        assert_eq!(
            kinds(&c.check(Some(0.5), Some(&primary(200_000)), false)),
            ["agent-end", "pause"]
        );
    }

    #[test]
    fn sp6_an_unknown_ratio_does_nothing() {
        let mut c = SpendCeiling::default();
        c.spent(&spent(1_000_000));
        assert!(c.check(Some(0.1), None, false).is_empty());
        assert!(!c.forces_agent_end() && !c.paused());
    }

    #[test]
    fn sp6_past_twice_the_ceiling_pauses_and_a_resume_is_not_undone_at_once() {
        let mut c = SpendCeiling::default();
        c.spent(&spent(260_000));
        // 0.65 > 2 × 0.3: switched and paused at once.
        let actions = c.check(Some(0.3), Some(&primary(400_000)), false);
        assert_eq!(kinds(&actions), ["agent-end", "pause"]);
        assert!(
            actions[1].notice().contains("0.65"),
            "{}",
            actions[1].notice()
        );
        assert!(c.paused());
        // Still held off: nothing more.
        assert!(c.check(Some(0.3), Some(&primary(400_000)), true).is_empty());
        // `/advisor on`: resumed, the ceiling still applies (agent-end), no pause at once.
        assert!(c
            .check(Some(0.3), Some(&primary(400_000)), false)
            .is_empty());
        assert!(!c.paused() && c.forces_agent_end());
        // Back under twice the ceiling, then past it again: paused again.
        assert!(c
            .check(Some(0.3), Some(&primary(1_000_000)), false)
            .is_empty());
        c.spent(&spent(500_000));
        assert_eq!(
            kinds(&c.check(Some(0.3), Some(&primary(1_000_000)), false)),
            ["pause"]
        );
    }

    #[test]
    fn sp6_the_ratio_is_over_the_whole_session_restored_totals_included() {
        let mut c = SpendCeiling::default();
        // A resumed session: its transcript file had 150k; this process spent 10k more.
        c.restored(&spent(150_000));
        c.spent(&spent(10_000));
        let actions = c.check(Some(0.5), Some(&primary(300_000)), false);
        assert_eq!(kinds(&actions), ["agent-end"], "160k ÷ 300k > 0.5");
        // Priced on both sides: by cost.
        let mut priced = SpendCeiling::default();
        priced.spent(&Usage {
            input: 10,
            cost: 3.0,
            ..Usage::default()
        });
        let primary = PrimarySpend {
            cost: Some(2.0),
            ..primary(300_000)
        };
        let actions = priced.check(Some(1.0), Some(&primary), false);
        let CeilingAction::SwitchToAgentEnd { ratio, .. } = actions[0] else {
            unreachable!()
        };
        assert_eq!((ratio.basis, ratio.value), (RatioBasis::Cost, 1.5));
    }
}
