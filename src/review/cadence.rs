//! Review cadence (SPEC §16, CA1–CA4, CA7, CA8, CA12): which boundaries an advisor counts,
//! at which of them its review is scheduled, and the deltas it holds back in between.
//!
//! Plain code, one [`AdvisorCadence`] per advisor, kept in its member of the Supervisor's
//! `Members` (`members/`) beside its other state, so a rebuild hands it on
//! (CA7). At every boundary each
//! running advisor's delta is captured at once (CA3) and handed here with the boundary's
//! kind; the answer says whether a review goes out now (with everything held, as one
//! review and one backlog unit, CA12) or the delta is held.

use crate::feed::Update;
use crate::settings::{describe_cadence, ReviewMode, SyncBacklog};

/// The most updates one advisor holds (CA3): past it the oldest held update is dropped, so
/// an `agent-end` advisor over a run of thousands of tool rounds keeps a bounded memory.
pub const MAX_HELD_UPDATES: usize = 512;

/// The most characters of rendered text one advisor holds (CA3), for the same reason.
pub const MAX_HELD_CHARS: usize = 8 << 20;

/// The notice told once per batch when held updates start being dropped past
/// [`MAX_HELD_UPDATES`] or [`MAX_HELD_CHARS`] (CA3: never silent), naming the advisor
/// `name` (`None`: the unnamed advisor).
pub fn held_dropped_notice(name: Option<&str>) -> String {
    let text = crate::texts::notice(
        "heldDropped",
        &[
            ("updates", &MAX_HELD_UPDATES.to_string()),
            ("mib", &(MAX_HELD_CHARS >> 20).to_string()),
        ],
    );
    match name {
        None => crate::texts::notice("unnamed", &[("text", &text)]),
        Some(name) => crate::texts::notice("named", &[("name", name), ("text", &text)]),
    }
}

/// An advisor's cadence settings in effect at a boundary (CA1, CA2, CA5, CA9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cadence {
    /// Which boundaries are eligible (CA1).
    pub mode: ReviewMode,
    /// Every how many eligible updates a review is scheduled (CA2), 1 or more.
    pub interval: u64,
    /// How far the primary waits for a review scheduled here (CA9).
    pub sync: SyncBacklog,
}

impl Default for Cadence {
    fn default() -> Self {
        Self {
            mode: ReviewMode::Turn,
            interval: 1,
            sync: SyncBacklog::Off,
        }
    }
}

impl Cadence {
    /// What `advisor roster` and status say of it: `turn · every update`,
    /// `agent-end · every 3 eligible updates` (CA6).
    pub fn describe(&self) -> String {
        describe_cadence(self.mode, self.interval)
    }
}

/// What one boundary is, for the cadence (CA1, CA4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Boundary {
    /// A final boundary: not work in progress (P1).
    pub final_boundary: bool,
    /// A boundary of a run an advisor delivery started (CA17): never eligible (CA4).
    pub continuation: bool,
    /// The advisor's `when: { paths }` matches the update, or it has none (RO17): an
    /// update it does not match is never eligible (CA4).
    pub paths_match: bool,
}

/// What the cadence decided at a boundary.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The review is scheduled here (CA2): the held updates, oldest first, then this
    /// boundary's delta, as one review (CA3). `updates` is empty when nothing was held and
    /// the boundary's delta is blank: nothing to send, but the advisor is still the one
    /// this boundary waits on (CA9).
    Scheduled {
        /// The parts of the one review.
        updates: Vec<Update>,
        /// Whether the review is work in progress: exactly when its last part is (P1).
        wip: bool,
    },
    /// Not scheduled: the delta (if not blank) is held for the next scheduled review.
    Held,
}

#[cfg(test)]
impl Decision {
    /// Whether the boundary scheduled this advisor's review (CA9: only then is it waited on).
    pub fn scheduled(&self) -> bool {
        matches!(self, Decision::Scheduled { .. })
    }
}

/// One held delta.
#[derive(Debug, Clone, PartialEq)]
struct Held {
    update: Update,
    wip: bool,
}

/// One advisor's cadence state: its count of eligible updates and its held deltas.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdvisorCadence {
    /// Eligible updates counted since the conversation began (CA2, CA8).
    eligible: u64,
    /// Deltas captured where nothing was scheduled, oldest first (CA3).
    held: Vec<Held>,
    /// Characters of rendered text in `held`.
    held_chars: usize,
    /// Held updates dropped past the caps since the last scheduled review.
    dropped: u64,
    /// Held updates dropped past the caps since the conversation began (status).
    dropped_total: u64,
    /// A drop happened that the user was not yet told of (one notice per batch).
    drop_unreported: bool,
}

impl AdvisorCadence {
    /// A fresh advisor's state: counter 0, nothing held (CA7: an added entry).
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one boundary: counts it when eligible (CA1, CA4) and schedules the review
    /// when the count reaches a multiple of the interval (CA2); `delta` is the advisor's
    /// capture of this boundary (CA3), `None` when blank (X3), and `wip` whether it is work
    /// in progress.
    pub fn on_boundary(
        &mut self,
        cadence: Cadence,
        boundary: Boundary,
        delta: Option<Update>,
        wip: bool,
    ) -> Decision {
        let eligible = !boundary.continuation
            && boundary.paths_match
            && (cadence.mode == ReviewMode::Turn || boundary.final_boundary);
        if let Some(update) = delta {
            self.hold(update, wip);
        }
        if !eligible {
            return Decision::Held;
        }
        self.eligible += 1;
        if !self.eligible.is_multiple_of(cadence.interval.max(1)) {
            return Decision::Held;
        }
        let (updates, last_wip) = self.drain();
        Decision::Scheduled {
            updates,
            wip: last_wip.unwrap_or(wip),
        }
    }

    /// Sends what is held as one review without moving the counter (CA4's consult, CA21's
    /// drain): the parts and whether the last is work in progress; `None` when nothing is
    /// held.
    pub fn take_held(&mut self) -> Option<(Vec<Update>, bool)> {
        let (updates, wip) = self.drain();
        wip.map(|wip| (updates, wip))
    }

    /// Puts the parts of a review that was not sent back in front of what is held (SP9:
    /// the triage gate held them; SP7: a check-in held them back), each as work in progress
    /// when `wip`; they go with the next scheduled review. The counter stays.
    pub fn hold_back(&mut self, updates: Vec<Update>, wip: bool) {
        let mut back: Vec<Held> = updates
            .into_iter()
            .map(|update| Held { update, wip })
            .collect();
        self.held_chars += back.iter().map(|h| chars(&h.update)).sum::<usize>();
        back.append(&mut self.held);
        self.held = back;
        self.trim();
    }

    /// Drops every held update (CA8: an R1 reset; the bounded replay covers them). The
    /// counter stays.
    pub fn drop_held(&mut self) {
        self.held.clear();
        self.held_chars = 0;
        self.dropped = 0;
        self.drop_unreported = false;
    }

    /// Starts over: nothing held, counter 0 (CA8: another conversation began; CA7: the
    /// advisor was paused).
    pub fn restart(&mut self) {
        *self = Self::default();
    }

    /// How many updates are held (CA12's status).
    pub fn held_updates(&self) -> usize {
        self.held.len()
    }

    /// The eligible updates counted so far (CA12's status).
    pub fn eligible_updates(&self) -> u64 {
        self.eligible
    }

    /// Held updates dropped past [`MAX_HELD_UPDATES`] or [`MAX_HELD_CHARS`] since the last
    /// review that sent the held ones.
    #[cfg(test)]
    pub fn dropped_updates(&self) -> u64 {
        self.dropped
    }

    /// Held updates dropped past [`MAX_HELD_UPDATES`] or [`MAX_HELD_CHARS`] since the
    /// conversation began (status shows it; a drop is never silent).
    pub fn dropped_total(&self) -> u64 {
        self.dropped_total
    }

    /// Whether held updates were dropped since the batch began and the user was not told
    /// yet: answers `true` once per batch (the first drop after a review sent the held
    /// ones), so the host gets one notice, not one per boundary.
    pub fn take_drop_notice(&mut self) -> bool {
        std::mem::take(&mut self.drop_unreported)
    }

    fn hold(&mut self, update: Update, wip: bool) {
        self.held_chars += chars(&update);
        self.held.push(Held { update, wip });
        self.trim();
    }

    /// Drops the oldest held updates past [`MAX_HELD_UPDATES`] or [`MAX_HELD_CHARS`].
    fn trim(&mut self) {
        while self.held.len() > 1
            && (self.held.len() > MAX_HELD_UPDATES || self.held_chars > MAX_HELD_CHARS)
        {
            let oldest = self.held.remove(0);
            self.held_chars -= chars(&oldest.update);
            if self.dropped == 0 {
                self.drop_unreported = true;
            }
            self.dropped += 1;
            self.dropped_total += 1;
        }
    }

    fn drain(&mut self) -> (Vec<Update>, Option<bool>) {
        let last = self.held.last().map(|h| h.wip);
        let updates = self.held.drain(..).map(|h| h.update).collect();
        self.held_chars = 0;
        self.dropped = 0;
        (updates, last)
    }
}

/// The rendered characters an update holds (the expanded view's messages are shared with
/// the transcript and cost nothing extra).
fn chars(update: &Update) -> usize {
    match update {
        Update::Text(text) => text.len(),
        Update::Turn(_) => 0,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn cadence(mode: ReviewMode, interval: u64) -> Cadence {
        Cadence {
            mode,
            interval,
            sync: SyncBacklog::Off,
        }
    }

    /// A work-in-progress boundary, eligible, its paths matched.
    pub(in crate::review) const WIP: Boundary = Boundary {
        final_boundary: false,
        continuation: false,
        paths_match: true,
    };
    /// A final boundary, eligible, its paths matched.
    pub(in crate::review) const FINAL: Boundary = Boundary {
        final_boundary: true,
        ..WIP
    };

    /// The texts of a scheduled review's parts; none when the delta was held.
    pub(in crate::review) fn texts(decision: &Decision) -> Vec<String> {
        match decision {
            Decision::Scheduled { updates, .. } => updates
                .iter()
                .map(|u| match u {
                    Update::Text(t) => t.clone(),
                    Update::Turn(_) => "turn".into(),
                })
                .collect(),
            Decision::Held => Vec::new(),
        }
    }

    fn step(c: &mut AdvisorCadence, cad: Cadence, b: Boundary, text: &str) -> Decision {
        c.on_boundary(cad, b, Some(text.into()), !b.final_boundary)
    }

    #[test]
    fn ca1_turn_mode_reviews_every_boundary_wip_rounds_included() {
        let mut c = AdvisorCadence::new();
        let turn = cadence(ReviewMode::Turn, 1);
        assert_eq!(texts(&step(&mut c, turn, WIP, "1")), ["1"]);
        assert_eq!(texts(&step(&mut c, turn, FINAL, "2")), ["2"]);
        assert_eq!(c.eligible_updates(), 2);
    }

    #[test]
    fn ca1_agent_end_holds_the_runs_wip_deltas_and_reviews_them_at_its_final_boundary() {
        let mut c = AdvisorCadence::new();
        let end = cadence(ReviewMode::AgentEnd, 1);
        for d in ["1", "2", "3"] {
            assert_eq!(step(&mut c, end, WIP, d), Decision::Held);
        }
        assert_eq!(c.held_updates(), 3);
        assert_eq!(c.eligible_updates(), 0, "WIP rounds are not eligible");
        let review = step(&mut c, end, FINAL, "4");
        assert_eq!(texts(&review), ["1", "2", "3", "4"]);
        assert!(matches!(review, Decision::Scheduled { wip: false, .. }));
        assert_eq!((c.held_updates(), c.eligible_updates()), (0, 1));
        // A run resumed by a user prompt ends in a final boundary of its own.
        assert_eq!(texts(&step(&mut c, end, FINAL, "5")), ["5"]);
    }

    #[test]
    fn ca2_interval_three_schedules_the_3rd_and_6th_eligible_update_never_the_1st() {
        let mut c = AdvisorCadence::new();
        let every3 = cadence(ReviewMode::Turn, 3);
        let scheduled: Vec<bool> = (1..=7)
            .map(|i| step(&mut c, every3, WIP, &i.to_string()).scheduled())
            .collect();
        assert_eq!(scheduled, [false, false, true, false, false, true, false]);
        // With agent-end the interval counts completed runs.
        let mut runs = AdvisorCadence::new();
        let end2 = cadence(ReviewMode::AgentEnd, 2);
        assert!(!step(&mut runs, end2, WIP, "a").scheduled());
        assert!(!step(&mut runs, end2, FINAL, "b").scheduled());
        assert!(!step(&mut runs, end2, WIP, "c").scheduled());
        assert_eq!(
            texts(&step(&mut runs, end2, FINAL, "d")),
            ["a", "b", "c", "d"]
        );
    }

    #[test]
    fn ca3_held_deltas_go_oldest_first_a_blank_holds_nothing_and_a_blank_scheduled_boundary_sends_them(
    ) {
        let mut c = AdvisorCadence::new();
        let every2 = cadence(ReviewMode::Turn, 2);
        assert_eq!(c.on_boundary(every2, WIP, None, true), Decision::Held);
        assert_eq!(c.held_updates(), 0, "a blank delta holds nothing (X3)");
        let review = c.on_boundary(every2, FINAL, None, false);
        assert_eq!(
            review,
            Decision::Scheduled {
                updates: Vec::new(),
                wip: false
            },
            "scheduled with nothing to send"
        );
        assert!(!step(&mut c, every2, WIP, "held").scheduled());
        let review = c.on_boundary(every2, FINAL, None, false);
        assert_eq!(texts(&review), ["held"]);
        assert!(
            matches!(review, Decision::Scheduled { wip: true, .. }),
            "WIP exactly when its last part is"
        );
    }

    #[test]
    fn ca4_continuation_boundaries_and_unmatched_paths_are_held_and_never_counted() {
        let mut c = AdvisorCadence::new();
        let turn = cadence(ReviewMode::Turn, 1);
        let continuation = Boundary {
            continuation: true,
            ..FINAL
        };
        let unmatched = Boundary {
            paths_match: false,
            ..WIP
        };
        assert_eq!(step(&mut c, turn, continuation, "c"), Decision::Held);
        assert_eq!(step(&mut c, turn, unmatched, "u"), Decision::Held);
        assert_eq!((c.eligible_updates(), c.held_updates()), (0, 2));
        assert_eq!(texts(&step(&mut c, turn, FINAL, "n")), ["c", "u", "n"]);
    }

    #[test]
    fn ca4_ca21_taking_the_held_updates_keeps_the_counter() {
        let mut c = AdvisorCadence::new();
        let every3 = cadence(ReviewMode::Turn, 3);
        step(&mut c, every3, WIP, "1");
        step(&mut c, every3, FINAL, "2");
        assert_eq!(
            c.take_held(),
            Some((vec![Update::from("1"), Update::from("2")], false))
        );
        assert_eq!((c.held_updates(), c.eligible_updates()), (0, 2));
        assert_eq!(c.take_held(), None);
        assert!(
            step(&mut c, every3, WIP, "3").scheduled(),
            "the count goes on"
        );
    }

    #[test]
    fn ca8_a_reset_drops_the_held_updates_and_keeps_the_counter_a_new_conversation_restarts_it() {
        let mut c = AdvisorCadence::new();
        let every3 = cadence(ReviewMode::Turn, 3);
        step(&mut c, every3, WIP, "1");
        step(&mut c, every3, WIP, "2");
        c.drop_held();
        assert_eq!((c.held_updates(), c.eligible_updates()), (0, 2));
        assert_eq!(texts(&step(&mut c, every3, WIP, "3")), ["3"]);
        step(&mut c, every3, WIP, "4");
        c.restart();
        assert_eq!((c.held_updates(), c.eligible_updates()), (0, 0));
        assert!(!step(&mut c, every3, WIP, "5").scheduled());
    }

    #[test]
    fn ca3_held_updates_are_bounded_oldest_dropped_first() {
        let mut c = AdvisorCadence::new();
        let end = cadence(ReviewMode::AgentEnd, 1);
        for i in 0..MAX_HELD_UPDATES + 3 {
            step(&mut c, end, WIP, &i.to_string());
        }
        assert_eq!(c.held_updates(), MAX_HELD_UPDATES);
        assert_eq!(c.dropped_updates(), 3);
        let sent = texts(&step(&mut c, end, FINAL, "last"));
        assert_eq!(sent.len(), MAX_HELD_UPDATES);
        assert_eq!(
            sent.first().map(String::as_str),
            Some("4"),
            "the oldest went first"
        );
        assert_eq!(sent.last().map(String::as_str), Some("last"));
        assert_eq!(c.dropped_updates(), 0);
    }

    #[test]
    fn ca3_dropping_held_updates_is_told_once_per_batch_and_counted_for_status() {
        let mut c = AdvisorCadence::new();
        let end = cadence(ReviewMode::AgentEnd, 1);
        for i in 0..MAX_HELD_UPDATES {
            step(&mut c, end, WIP, &i.to_string());
        }
        assert!(!c.take_drop_notice(), "nothing dropped at the cap itself");
        step(&mut c, end, WIP, "over");
        assert!(c.take_drop_notice(), "the first drop is told");
        step(&mut c, end, WIP, "over again");
        assert!(!c.take_drop_notice(), "once per batch");
        assert_eq!(c.dropped_total(), 2);
        step(&mut c, end, FINAL, "sent");
        for i in 0..=MAX_HELD_UPDATES {
            step(&mut c, end, WIP, &i.to_string());
        }
        assert!(c.take_drop_notice(), "a new batch is told again");
        // One more went when "sent" was held past the cap, one in the new batch.
        assert_eq!(c.dropped_total(), 4, "the total runs on");
        // One huge update past the character cap drops the ones before it.
        let mut big = AdvisorCadence::new();
        step(&mut big, end, WIP, "small");
        let huge = "x".repeat(MAX_HELD_CHARS);
        step(&mut big, end, WIP, &huge);
        assert!(big.take_drop_notice());
        assert_eq!((big.held_updates(), big.dropped_total()), (1, 1));
        big.restart();
        assert_eq!(big.dropped_total(), 0, "a new conversation starts over");
    }

    #[test]
    fn sp9_updates_held_back_by_the_gate_go_first_with_the_next_review() {
        let mut c = AdvisorCadence::new();
        let turn = cadence(ReviewMode::Turn, 1);
        let Decision::Scheduled { updates, wip } = step(&mut c, turn, WIP, "1") else {
            panic!("scheduled")
        };
        c.hold_back(updates, wip);
        assert_eq!((c.held_updates(), c.eligible_updates()), (1, 1));
        let review = step(&mut c, turn, FINAL, "2");
        assert_eq!(texts(&review), ["1", "2"]);
        assert!(matches!(review, Decision::Scheduled { wip: false, .. }));
    }

    #[test]
    fn ca6_the_cadence_describes_itself_as_advisor_roster_prints_it() {
        assert_eq!(
            cadence(ReviewMode::AgentEnd, 3).describe(),
            "agent-end · every 3 eligible updates"
        );
        assert_eq!(
            cadence(ReviewMode::Turn, 1).describe(),
            "turn · every update"
        );
        assert_eq!(
            cadence(ReviewMode::AgentEnd, 1).describe(),
            "agent-end · every run"
        );
    }
}
