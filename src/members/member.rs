//! One member of the session ([`Member`]) and the changes the actor carries out for
//! [`super::Members`]' decisions ([`MemberChange`]), with the turn-end rules over members.

use crate::config::MemberPlan;
use crate::domain::advice::AdvisorLabel;
use crate::domain::host::RewriteKind;
use crate::domain::transcript::Transcript;
use crate::feed::Update;
use crate::review::cadence::{AdvisorCadence, Cadence};
use crate::review::check_in::{CheckInCounts, CheckInWait};
use crate::review::AskEnd;
use crate::settings::{AdvisorSettings, ReviewMode, SyncBacklog};
use crate::status::{AdvisorState, CadenceStatus, CeilingStatus, SpendCeiling};
use crate::texts::notice;

/// What the actor carries out for a decision of [`Members`], in order. A member is named by
/// its slug (`None`: the unnamed advisor).
#[derive(Debug, Clone)]
pub enum MemberChange {
    /// Start the member's actors at the session's epoch, reading the transcript from `seed`
    /// (X4); a named member is registered with the router first (RO10, RO15, RO16).
    Start {
        /// The member.
        slug: Option<String>,
        /// The transcript and the length to read it from.
        seed: Option<(Transcript, usize)>,
    },
    /// Stop the member's actors: its waiters released, its ask ended with `cause` and a
    /// review still running cancelled; its agent moves to `epoch` (RO19, RO21).
    Stop {
        /// The member.
        slug: Option<String>,
        /// The epoch its agent moves to.
        epoch: u64,
        /// Why its ask ends.
        cause: AskEnd,
    },
    /// Forget the member (stopped before): the router drops its undelivered notes and what
    /// its reviews still raise (`removed`, D10); its transcript file is closed.
    Remove {
        /// The member.
        slug: Option<String>,
    },
    /// Tell the router a named member's delivery fields again (CA16, CA18: its review mode
    /// changed).
    Register {
        /// The member.
        slug: String,
    },
    /// The router takes the unnamed advisor's raises with this budget (RO12).
    RegisterUnnamed {
        /// Its D8 budget per update.
        max_notes: usize,
    },
    /// The router drops what the paused named member raises (RO19).
    PauseAtRouter {
        /// The member.
        slug: String,
    },
    /// The member's agent resumes its reviews (C1, RO19).
    Resume {
        /// The member.
        slug: Option<String>,
    },
    /// R1 for one running member: its agent reset to `epoch` (ended with `cause`), its halt
    /// ended when `end_halt` (P7: a new session), its feed rewound.
    Rewind {
        /// The member.
        slug: Option<String>,
        /// The session's new epoch.
        epoch: u64,
        /// Why its ask ends.
        cause: AskEnd,
        /// Whether its halt ends too.
        end_halt: bool,
    },
    /// The router resets its delivery state (R1, CA8).
    ResetDelivery {
        /// The session's new epoch.
        epoch: u64,
        /// The rewrite moved to another branch (P3).
        branch: bool,
        /// Another conversation began (CA8).
        conversation: bool,
    },
    /// The router delivers, or not (C1).
    SetDeliveryEnabled(bool),
    /// One review to the member's agent (CA3, CA12), or what it held sent at once (CA4,
    /// CA21).
    Queue {
        /// The member.
        slug: Option<String>,
        /// The session's epoch.
        epoch: u64,
        /// The parts of the one review, oldest first.
        updates: Vec<Update>,
        /// Whether the review is work in progress (P1).
        wip: bool,
        /// The member's turn end it was scheduled at: a `check_in` of the review counts
        /// from it (SP7).
        turn: u64,
    },
    /// Tell the user, naming no advisor.
    Notice(String),
}

/// One member's capture of a turn end (CA3), as its feed answered it.
#[derive(Debug, Clone, PartialEq)]
pub struct Captured {
    /// The member.
    pub slug: Option<String>,
    /// Its delta; `None` when blank (X3).
    pub update: Option<Update>,
    /// Whether its `when` matched (RO17).
    pub paths_match: bool,
}

/// A member whose review a boundary scheduled, and the catch-up it is waited on with (CA9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduled {
    /// The member.
    pub slug: Option<String>,
    /// Its catch-up in effect.
    pub sync: SyncBacklog,
}

/// One advisor of the session and what is decided about it.
pub struct Member {
    pub(super) plan: MemberPlan,
    /// Its actors run.
    pub(super) running: bool,
    /// Paused by `/advisor off NAME` (RO19).
    pub(super) held_off: bool,
    /// Its failed reviews so far (C3).
    pub(super) failures: u64,
    /// Its entry changed on disk: the new plan, swapped in before its next review (RO21).
    pub(super) rebuild: Option<MemberPlan>,
    /// The updates its `when` did not match (RO17, CA4), over every run: a pause or rebuild
    /// never restarts the count.
    pub(super) skipped_updates: u64,
    /// Its eligible-update counter and held updates (CA2, CA3): kept across a rebuild
    /// (CA7), dropped by a reset (CA8) or a pause.
    pub(super) cadence: AdvisorCadence,
    /// Its turn ends counted and the wait its last `check_in` asked for (SP7): kept across
    /// a rebuild like the cadence; the wait ended by a reset, a pause, a user prompt or an
    /// abort.
    pub(super) check_in: CheckInWait,
    /// Its spend over the session and what its ceiling did to it (SP6).
    pub(super) ceiling: SpendCeiling,
    /// The transcript's length at its newest turn ends, oldest first (GT3: what a review
    /// covering up to that turn end has seen).
    pub(super) turn_lens: std::collections::VecDeque<(u64, usize)>,
}

/// How many of a member's turn ends keep their transcript length (GT3).
const KEPT_TURN_LENS: usize = 64;

impl Member {
    /// Keeps the transcript's length `len` at this turn end (GT3), the newest
    /// [`KEPT_TURN_LENS`] only.
    pub(super) fn remember_turn_len(&mut self, len: usize) {
        if self.turn_lens.len() == KEPT_TURN_LENS {
            self.turn_lens.pop_front();
        }
        self.turn_lens.push_back((self.check_in.turn(), len));
    }

    /// A member of `plan`, not started.
    pub fn new(plan: MemberPlan) -> Self {
        Self {
            plan,
            running: false,
            held_off: false,
            failures: 0,
            rebuild: None,
            skipped_updates: 0,
            cadence: AdvisorCadence::new(),
            check_in: CheckInWait::new(),
            ceiling: SpendCeiling::default(),
            turn_lens: std::collections::VecDeque::new(),
        }
    }

    /// Its check-ins and the turn ends they held back (SP7).
    pub fn check_in_counts(&self) -> CheckInCounts {
        self.check_in.counts()
    }

    /// Its current turn end: what a review queued for it now covers up to (SP7).
    pub fn turn(&self) -> u64 {
        self.check_in.turn()
    }

    /// What it runs with.
    pub fn plan(&self) -> &MemberPlan {
        &self.plan
    }

    /// Its slug (`None`: the unnamed advisor).
    pub fn slug(&self) -> Option<&str> {
        self.plan.slug()
    }

    /// Whether its actors run.
    #[cfg(test)]
    pub fn running(&self) -> bool {
        self.running
    }

    /// Whether `/advisor off NAME` paused it (RO19).
    pub fn held_off(&self) -> bool {
        self.held_off
    }

    /// Its failed reviews so far (C3).
    pub fn failures(&self) -> u64 {
        self.failures
    }

    /// The updates its `when` did not match (RO17).
    pub fn skipped_updates(&self) -> u64 {
        self.skipped_updates
    }

    /// Whether it may run: enabled in its entry, not paused by the user, with a model.
    pub fn runnable(&self) -> bool {
        self.plan.enabled && !self.held_off && self.plan.model.is_ok()
    }

    /// Whether this is the member `advisor` names (`None`: the unnamed advisor).
    pub fn is(&self, advisor: Option<&AdvisorLabel>) -> bool {
        self.plan.slug() == advisor.map(|l| &*l.slug)
    }

    /// Its cadence in effect under `settings` (CA5): its plan's, at `agent-end` once its
    /// spend ceiling switched it (SP6).
    pub fn cadence_in_effect(&self, settings: &AdvisorSettings) -> Cadence {
        let mut cadence = self.plan.cadence(settings);
        if self.ceiling.forces_agent_end() {
            cadence.mode = ReviewMode::AgentEnd;
        }
        cadence
    }

    /// Its action gate's settings (GT10): its entry's `gate` and `gateFailMode` over the
    /// session's.
    pub fn gate_settings(&self, settings: &AdvisorSettings) -> crate::settings::GateSettings {
        crate::settings::GateSettings {
            mode: self.plan.gate.unwrap_or(settings.gate.mode),
            fail_mode: self.plan.gate_fail_mode.or(settings.gate.fail_mode),
            ..settings.gate
        }
    }

    /// Its spend ceiling in effect (SP6): its entry's, else `advisor.maxSpendRatio`.
    pub fn spend_limit(&self, settings: &AdvisorSettings) -> Option<f64> {
        self.plan.max_spend_ratio.or(settings.max_spend_ratio)
    }

    /// Its ceiling as status shows it under `settings` (SP6), and whether the ceiling
    /// paused it.
    pub fn ceiling_status(&self, settings: &AdvisorSettings) -> (Option<CeilingStatus>, bool) {
        let status = self.ceiling.status(self.spend_limit(settings));
        (status, self.held_off && self.ceiling.paused())
    }

    /// Its cadence in effect under `settings`, held updates and counter (CA12).
    pub fn cadence_status(&self, settings: &AdvisorSettings) -> CadenceStatus {
        let cadence = self.cadence_in_effect(settings);
        CadenceStatus {
            review_mode: cadence.mode,
            review_interval: cadence.interval,
            sync_backlog: cadence.sync,
            held_updates: self.cadence.held_updates(),
            eligible_updates: self.cadence.eligible_updates(),
            dropped_updates: self.cadence.dropped_total(),
        }
    }

    /// Its state and why (RO8, RO19) in a session that is `enabled`, with its agent's pause.
    pub fn state(&self, enabled: bool, paused: Option<&str>) -> (AdvisorState, Option<String>) {
        match &self.plan.model {
            Err(reason) => return (AdvisorState::NoModel, Some(reason.clone())),
            Ok(_) if !self.plan.enabled => {
                return (AdvisorState::Paused, Some(notice("reasonNotEnabled", &[])));
            }
            Ok(_) => {}
        }
        if self.held_off && self.ceiling.paused() {
            (AdvisorState::Paused, Some(notice("reasonCeiling", &[])))
        } else if self.held_off {
            (AdvisorState::Paused, Some(notice("reasonHeldOff", &[])))
        } else if !enabled {
            (AdvisorState::Off, None)
        } else if let Some(reason) = paused {
            (AdvisorState::Failing, Some(reason.to_string()))
        } else {
            (AdvisorState::Running, None)
        }
    }

    pub(super) fn slug_owned(&self) -> Option<String> {
        self.plan.slug().map(str::to_string)
    }
}

/// Whether a rewrite moves the advisor to another branch (P3's seed), as opposed to a
/// rewrite within the branch (compaction, pruning, one the feed detected).
pub(super) fn changes_branch(kind: RewriteKind) -> bool {
    begins_conversation(kind) || kind == RewriteKind::Rewind
}

/// Whether a rewrite begins another conversation (CA8): the counters restart. Compaction,
/// pruning, a rewrite the feed detected and a rewind keep them.
pub fn begins_conversation(kind: RewriteKind) -> bool {
    matches!(
        kind,
        RewriteKind::SessionSwitch
            | RewriteKind::NewSession
            | RewriteKind::Branch
            | RewriteKind::TreeNavigation
    )
}
