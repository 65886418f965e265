//! Delivery policy (SPEC D1–D3, D6, D8, D10): what happens to each advisory the advisor
//! raises. Pure logic; the DeliveryRouter actor wraps it and forwards the host events.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

use crate::messages::advice::{Advisory, Channel, Delivery};
use crate::messages::host::{HostEvent, StepAdvice};
use crate::settings::DeliveryPolicy;

/// Why an advisory was dropped (D10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DropReason {
    /// Same note already delivered at the same or a higher severity in this epoch (D8).
    Duplicate,
    /// "lgtm", "looks good", "all clear", "done" and the like (D8).
    ContentFree,
    /// More than `maxNotesPerUpdate` notes in one review (D8).
    OverBudget,
    /// Raised by a review of an epoch that a reset ended (R1).
    StaleEpoch,
    /// The advisor was disabled or disposed.
    Disabled,
}

impl DropReason {
    /// The camelCase name used in status output.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Duplicate => "duplicate",
            DropReason::ContentFree => "contentFree",
            DropReason::OverBudget => "overBudget",
            DropReason::StaleEpoch => "staleEpoch",
            DropReason::Disabled => "disabled",
        }
    }
}

/// How the `advise` tool call was answered, and what the advisor model is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RaiseOutcome {
    /// Accepted for delivery.
    Recorded,
    /// Dropped, with the reason.
    Dropped(DropReason),
}

impl RaiseOutcome {
    /// The tool result text the advisor model reads (D8).
    pub fn tool_text(&self, max_notes: usize) -> String {
        match self {
            RaiseOutcome::Recorded => "Recorded.".to_string(),
            RaiseOutcome::Dropped(DropReason::Duplicate) => "Duplicate advice ignored.".to_string(),
            RaiseOutcome::Dropped(DropReason::ContentFree) => {
                "Advice ignored: it says nothing the agent can act on. Stay silent instead."
                    .to_string()
            }
            RaiseOutcome::Dropped(DropReason::OverBudget) => {
                format!("Advice ignored: at most {max_notes} notes per update. Finish the review.")
            }
            RaiseOutcome::Dropped(DropReason::StaleEpoch) => {
                "Advice discarded: the session was reset while you reviewed it.".to_string()
            }
            RaiseOutcome::Dropped(DropReason::Disabled) => {
                "Advice discarded: the advisor is disabled.".to_string()
            }
        }
    }
}

/// Outcome counters (D10), shown in status (C3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryCounts {
    /// Notes delivered as asides (batched nits).
    pub aside: u64,
    /// Notes delivered as steering cards.
    pub steer: u64,
    /// Notes delivered as wakes.
    pub wake: u64,
    /// Notes delivered as visible cards.
    pub card: u64,
    /// Notes held (reconfirm policy).
    pub held: u64,
    /// Notes dropped, by reason.
    pub dropped: HashMap<DropReason, u64>,
    /// Notes accepted but not yet taken by the host (queued nits, outbox steers).
    pub pending: u64,
}

impl DeliveryCounts {
    /// Notes delivered on any channel.
    pub fn delivered(&self) -> u64 {
        self.aside + self.steer + self.wake + self.card
    }

    /// Notes dropped for any reason.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }

    /// Every advisory raised so far: delivered + held + dropped + pending.
    pub fn raised(&self) -> u64 {
        self.delivered() + self.held + self.dropped_total() + self.pending
    }

    fn deliver(&mut self, channel: Channel, n: u64) {
        match channel {
            Channel::Aside => self.aside += n,
            Channel::Steer => self.steer += n,
            Channel::Wake => self.wake += n,
            Channel::Card => self.card += n,
        }
    }
}

/// Normalises a note for deduplication (D8): NFKC, whitespace runs collapsed, trimmed.
pub fn normalize_note(note: &str) -> String {
    let nfkc: String = note.nfkc().collect();
    nfkc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// True for notes that carry no advice ("lgtm", "looks good", "all clear", "done"…).
pub fn is_content_free(note: &str) -> bool {
    let lowered = normalize_note(note).to_lowercase();
    let core = lowered.trim_matches(|c: char| !c.is_alphanumeric());
    matches!(
        core,
        "" | "lgtm"
            | "looks good"
            | "looks good to me"
            | "all clear"
            | "all good"
            | "done"
            | "ok"
            | "no issues"
            | "nothing to add"
            | "no concerns"
    )
}

/// The router's state: outbox, aside queue, latch, dedupe memory and counters.
#[derive(Debug)]
pub struct RouterState {
    policy: DeliveryPolicy,
    max_notes_per_update: usize,
    epoch: u64,
    running: bool,
    suppressed: bool,
    enabled: bool,
    asides: Vec<Advisory>,
    steers: Vec<Delivery>,
    delivered_rank: HashMap<String, u8>,
    review_budget: (u64, usize),
    counts: DeliveryCounts,
}

impl RouterState {
    /// A router for `policy`, allowing `max_notes_per_update` notes per review.
    pub fn new(policy: DeliveryPolicy, max_notes_per_update: usize) -> Self {
        Self {
            policy,
            max_notes_per_update,
            epoch: 0,
            running: false,
            suppressed: false,
            enabled: true,
            asides: Vec::new(),
            steers: Vec::new(),
            delivered_rank: HashMap::new(),
            review_budget: (u64::MAX, 0),
            counts: DeliveryCounts::default(),
        }
    }

    /// The delivery policy in force.
    pub fn policy(&self) -> DeliveryPolicy {
        self.policy
    }

    /// The counters (D10).
    pub fn counts(&self) -> &DeliveryCounts {
        &self.counts
    }

    /// The notes-per-review bound (D8).
    pub fn max_notes_per_update(&self) -> usize {
        self.max_notes_per_update
    }

    /// Whether the user-interrupt latch is set (D6).
    pub fn suppressed(&self) -> bool {
        self.suppressed
    }

    fn drop_note(&mut self, reason: DropReason) -> RaiseOutcome {
        *self.counts.dropped.entry(reason).or_default() += 1;
        tracing::info!(reason = reason.as_str(), "advisory dropped");
        RaiseOutcome::Dropped(reason)
    }

    /// Routes one advisory raised by review `review` of `epoch`. Returns what the advisor is
    /// told and the events for the host.
    pub fn raise(
        &mut self,
        epoch: u64,
        review: u64,
        advisory: Advisory,
    ) -> (RaiseOutcome, Vec<HostEvent>) {
        if !self.enabled {
            return (self.drop_note(DropReason::Disabled), Vec::new());
        }
        if epoch != self.epoch {
            return (self.drop_note(DropReason::StaleEpoch), Vec::new());
        }
        if is_content_free(&advisory.note) {
            return (self.drop_note(DropReason::ContentFree), Vec::new());
        }
        let key = normalize_note(&advisory.note);
        let rank = advisory.effective_severity().rank();
        if self.delivered_rank.get(&key).is_some_and(|&r| r >= rank) {
            return (self.drop_note(DropReason::Duplicate), Vec::new());
        }
        if self.review_budget.0 != review {
            self.review_budget = (review, 0);
        }
        if self.review_budget.1 >= self.max_notes_per_update {
            return (self.drop_note(DropReason::OverBudget), Vec::new());
        }
        self.review_budget.1 += 1;
        self.delivered_rank.insert(key, rank);
        let events = self.route(advisory);
        (RaiseOutcome::Recorded, events)
    }

    fn route(&mut self, advisory: Advisory) -> Vec<HostEvent> {
        let severity = advisory.effective_severity();
        if !severity.interrupts() {
            tracing::info!(severity = severity.as_str(), "nit queued as aside");
            self.asides.push(advisory);
            self.counts.pending += 1;
            return Vec::new();
        }
        let channel = if self.suppressed {
            Channel::Card
        } else if self.running {
            Channel::Steer
        } else {
            Channel::Wake
        };
        let card = Delivery::new(channel, vec![advisory], None);
        tracing::info!(
            severity = severity.as_str(),
            channel = channel.as_str(),
            "advisory routed"
        );
        match channel {
            Channel::Steer => {
                self.steers.push(card);
                self.counts.pending += 1;
                vec![HostEvent::SteerReady]
            }
            Channel::Card => {
                self.counts.deliver(Channel::Card, 1);
                vec![HostEvent::Card { card }]
            }
            _ => {
                self.counts.deliver(Channel::Wake, 1);
                vec![HostEvent::Wake { card }]
            }
        }
    }

    /// The host is about to call its model: all queued nits as one aside message, plus the
    /// steering cards in the outbox (D3).
    pub fn step_boundary(&mut self) -> StepAdvice {
        let aside = if self.asides.is_empty() {
            None
        } else {
            let notes = std::mem::take(&mut self.asides);
            let n = notes.len() as u64;
            self.counts.pending -= n;
            self.counts.deliver(Channel::Aside, n);
            Some(Delivery::new(Channel::Aside, notes, None))
        };
        let steers = std::mem::take(&mut self.steers);
        let n = steers.len() as u64;
        self.counts.pending -= n;
        self.counts.deliver(Channel::Steer, n);
        StepAdvice { aside, steers }
    }

    /// The primary started or went idle. Going idle turns outbox steers into wakes (or
    /// cards while the latch is set, A5); queued nits wait for the next run.
    pub fn run_state(&mut self, running: bool) -> Vec<HostEvent> {
        self.running = running;
        if running {
            return Vec::new();
        }
        let channel = if self.suppressed {
            Channel::Card
        } else {
            Channel::Wake
        };
        self.flush_steers(channel)
    }

    fn flush_steers(&mut self, channel: Channel) -> Vec<HostEvent> {
        let steers = std::mem::take(&mut self.steers);
        let n = steers.len() as u64;
        self.counts.pending -= n;
        self.counts.deliver(channel, n);
        steers
            .into_iter()
            .map(|mut card| {
                card.channel = channel;
                match channel {
                    Channel::Wake => HostEvent::Wake { card },
                    _ => HostEvent::Card { card },
                }
            })
            .collect()
    }

    /// The host aborted the run (D6): a user interrupt latches suppression and turns outbox
    /// steers into visible cards; another interrupt keeps auto-resume.
    pub fn interrupt(&mut self, by_user: bool) -> Vec<HostEvent> {
        if !by_user {
            return Vec::new();
        }
        self.suppressed = true;
        self.flush_steers(Channel::Card)
    }

    /// A user prompt clears the latch (D6).
    pub fn user_prompt(&mut self) {
        self.suppressed = false;
    }

    /// A reset (R1): a new epoch; the dedupe memory of the old one is forgotten. Advice
    /// already accepted stays in the outbox: it was raised before the rewrite.
    pub fn reset(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.delivered_rank.clear();
        self.review_budget = (u64::MAX, 0);
    }

    /// Enables or disables delivery; disabling drops what is queued (reason `disabled`).
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
        if !enabled {
            let n = (self.asides.len() + self.steers.len()) as u64;
            self.asides.clear();
            self.steers.clear();
            self.counts.pending -= n;
            if n > 0 {
                *self.counts.dropped.entry(DropReason::Disabled).or_default() += n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::advice::Severity;
    use proptest::prelude::*;

    fn router() -> RouterState {
        RouterState::new(DeliveryPolicy::Interrupt, 2)
    }

    fn adv(note: &str, sev: Option<Severity>) -> Advisory {
        Advisory::new(note, sev)
    }

    #[test]
    fn d3_two_nits_in_one_step_become_one_message() {
        let mut r = router();
        r.run_state(true);
        assert_eq!(
            r.raise(0, 1, adv("rename x", Some(Severity::Nit))).0,
            RaiseOutcome::Recorded
        );
        assert_eq!(
            r.raise(0, 1, adv("drop the clone", None)).0,
            RaiseOutcome::Recorded
        );
        let step = r.step_boundary();
        let aside = step.aside.expect("one aside");
        assert_eq!(aside.notes.len(), 2);
        assert_eq!(aside.content.matches("<advisory").count(), 2);
        assert!(aside.content.contains("</advisory>\n<advisory"));
        assert!(step.steers.is_empty());
        assert!(r.step_boundary().is_empty());
        assert_eq!(r.counts().aside, 2);
    }

    #[test]
    fn d3_nits_never_wake_an_idle_primary() {
        let mut r = router();
        let (_, events) = r.raise(0, 1, adv("tidy", None));
        assert!(events.is_empty());
        assert!(r.run_state(false).is_empty());
        assert_eq!(r.counts().pending, 1);
    }

    #[test]
    fn d3_concern_steers_while_running_and_wakes_while_idle() {
        let mut r = router();
        r.run_state(true);
        let (_, events) = r.raise(0, 1, adv("wrong file", Some(Severity::Concern)));
        assert_eq!(events, vec![HostEvent::SteerReady]);
        let step = r.step_boundary();
        assert_eq!(step.steers.len(), 1);
        assert_eq!(step.steers[0].channel, Channel::Steer);
        r.run_state(false);
        let (_, events) = r.raise(0, 2, adv("tests never ran", Some(Severity::Blocker)));
        match &events[..] {
            [HostEvent::Wake { card }] => assert!(card.content.contains("severity=\"blocker\"")),
            other => panic!("expected a wake, got {other:?}"),
        }
    }

    #[test]
    fn a5_outbox_steer_becomes_a_wake_when_the_primary_goes_idle() {
        let mut r = router();
        r.run_state(true);
        r.raise(0, 1, adv("stop", Some(Severity::Concern)));
        let events = r.run_state(false);
        assert!(matches!(&events[..], [HostEvent::Wake { card }] if card.channel == Channel::Wake));
        assert_eq!(r.counts().wake, 1);
        assert_eq!(r.counts().pending, 0);
    }

    #[test]
    fn d6_user_interrupt_turns_outbox_steers_into_cards_until_user_prompt() {
        let mut r = router();
        r.run_state(true);
        r.raise(0, 1, adv("steer me", Some(Severity::Concern)));
        let events = r.interrupt(true);
        assert!(matches!(&events[..], [HostEvent::Card { card }] if card.channel == Channel::Card));
        assert!(r.step_boundary().steers.is_empty());
        r.run_state(false);
        let (_, events) = r.raise(0, 2, adv("another", Some(Severity::Blocker)));
        assert!(
            matches!(&events[..], [HostEvent::Card { .. }]),
            "suppressed: no wake"
        );
        r.user_prompt();
        let (_, events) = r.raise(0, 3, adv("third", Some(Severity::Blocker)));
        assert!(matches!(&events[..], [HostEvent::Wake { .. }]));
    }

    #[test]
    fn d6_non_user_interrupt_keeps_auto_resume() {
        let mut r = router();
        r.run_state(true);
        r.raise(0, 1, adv("steer me", Some(Severity::Concern)));
        assert!(r.interrupt(false).is_empty());
        assert!(matches!(&r.run_state(false)[..], [HostEvent::Wake { .. }]));
    }

    #[test]
    fn d8_repeats_dropped_escalation_passes() {
        let mut r = router();
        r.run_state(true);
        assert_eq!(
            r.raise(0, 1, adv("check  the\tnull case", None)).0,
            RaiseOutcome::Recorded
        );
        assert_eq!(
            r.raise(0, 2, adv("check the null case", None)).0,
            RaiseOutcome::Dropped(DropReason::Duplicate)
        );
        assert_eq!(
            r.raise(0, 3, adv("check the null case", Some(Severity::Concern)))
                .0,
            RaiseOutcome::Recorded
        );
        assert_eq!(
            r.raise(0, 4, adv("check the null case", Some(Severity::Nit)))
                .0,
            RaiseOutcome::Dropped(DropReason::Duplicate)
        );
        assert_eq!(
            RaiseOutcome::Dropped(DropReason::Duplicate).tool_text(2),
            "Duplicate advice ignored."
        );
    }

    #[test]
    fn d8_content_free_and_over_budget_are_dropped() {
        let mut r = router();
        assert_eq!(
            r.raise(0, 1, adv("LGTM!", None)).0,
            RaiseOutcome::Dropped(DropReason::ContentFree)
        );
        assert_eq!(r.raise(0, 1, adv("one", None)).0, RaiseOutcome::Recorded);
        assert_eq!(r.raise(0, 1, adv("two", None)).0, RaiseOutcome::Recorded);
        assert_eq!(
            r.raise(0, 1, adv("three", None)).0,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
        assert_eq!(r.raise(0, 2, adv("three", None)).0, RaiseOutcome::Recorded);
    }

    #[test]
    fn r1_stale_epoch_advice_is_dropped() {
        let mut r = router();
        r.reset(1);
        assert_eq!(
            r.raise(0, 1, adv("old", Some(Severity::Blocker))).0,
            RaiseOutcome::Dropped(DropReason::StaleEpoch)
        );
        assert_eq!(r.raise(1, 2, adv("new", None)).0, RaiseOutcome::Recorded);
    }

    #[test]
    fn d10_every_advisory_is_counted_exactly_once() {
        let mut r = router();
        r.run_state(true);
        let notes = [
            ("a", Some(Severity::Nit)),
            ("a", Some(Severity::Nit)),
            ("lgtm", None),
            ("b", Some(Severity::Concern)),
            ("c", Some(Severity::Blocker)),
        ];
        for (i, (n, s)) in notes.iter().enumerate() {
            r.raise(0, i as u64, adv(n, *s));
        }
        r.step_boundary();
        let c = r.counts();
        assert_eq!(c.raised(), notes.len() as u64);
        assert_eq!(c.pending, 0);
        assert_eq!((c.aside, c.steer, c.dropped_total()), (1, 2, 2));
    }

    proptest! {
        #[test]
        fn d2_no_note_can_break_the_advisory_element(note in ".*", sev in 0u8..4) {
            let severity = match sev { 0 => None, 1 => Some(Severity::Nit), 2 => Some(Severity::Concern), _ => Some(Severity::Blocker) };
            let xml = Advisory::new(note.clone(), severity).to_xml(None);
            prop_assert_eq!(xml.matches('<').count(), 2);
            prop_assert_eq!(xml.matches('>').count(), 2);
            prop_assert!(xml.starts_with("<advisory"));
            prop_assert!(xml.ends_with("\n</advisory>"));
            let body_start = xml.find(">\n").map(|i| i + 2).unwrap_or(0);
            let body = &xml[body_start..xml.len() - "\n</advisory>".len()];
            let unescaped = body.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
            prop_assert_eq!(unescaped, note);
        }
    }
}
