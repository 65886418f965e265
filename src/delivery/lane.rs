//! The bounded blocker lane (SP3): the parts of the emission guard that keep an advisor from
//! looping on the primary. Plain data; the router asks and records.
//!
//! - [`MIN_NOTE_CHARS`]: a note shorter than this once trimmed is dropped `tooShort`;
//! - [`FREE_BLOCKERS`]: the blockers a review delivers before its blockers count against the
//!   D8 note budget (kept in `budget`);
//! - [`RecentNotes`]: one advisor's notes of the last [`NEAR_TURNS`] primary turns, so a
//!   reworded note whose words overlap one of them by [`NEAR_SHARE`] or more is dropped
//!   `nearDuplicate`;
//! - [`WakeLimit`]: at most [`WAKES_PER_PROMPT`] advisor-started wakes per user prompt;
//!   past that the note becomes a card, counted `wakesRefused`.

use std::collections::{BTreeSet, VecDeque};

/// A note with fewer characters than this once trimmed is dropped `tooShort` (SP3).
pub const MIN_NOTE_CHARS: usize = 8;

/// The blockers a review may deliver before each further one takes a place in its note
/// budget (SP3, amending D8's exemption).
pub const FREE_BLOCKERS: usize = 2;

/// How many primary turns back a note counts for the near-duplicate check: the turn in
/// progress and the 19 before it (SP3).
pub const NEAR_TURNS: u64 = 20;

/// The token-set Jaccard overlap at or above which a note is a near duplicate (SP3: 90%).
pub const NEAR_SHARE: f64 = 0.9;

/// The advisor-started wakes allowed per user prompt (SP3).
pub const WAKES_PER_PROMPT: u32 = 2;

/// The most notes one advisor's [`RecentNotes`] keeps, the oldest forgotten first: a bound
/// on memory and on the work of one check, whatever an advisor raises in 20 turns.
pub const RECENT_CAP: usize = 256;

/// Whether `note` is shorter than `min_chars` characters once trimmed (SP3 `tooShort`, with
/// [`MIN_NOTE_CHARS`]). Counts at most that many characters.
pub fn is_too_short(note: &str, min_chars: usize) -> bool {
    note.trim().chars().take(min_chars).count() < min_chars
}

/// One note an advisor delivered: the turn, its words (of the P3 dedupe key) and its rank.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RecentNote {
    turn: u64,
    key: String,
    words: BTreeSet<String>,
    rank: u8,
}

/// One advisor's notes of the last [`NEAR_TURNS`] primary turns (SP3), oldest first.
#[derive(Debug, Clone, Default)]
pub struct RecentNotes {
    notes: VecDeque<RecentNote>,
}

impl RecentNotes {
    /// Remembers the note of dedupe key `key` (P3), going out at `rank` in primary turn
    /// `turn`. The note of the same key already remembered is replaced (an escalation).
    pub fn record(&mut self, turn: u64, key: &str, rank: u8) {
        let rank = match self.notes.iter().position(|n| n.key == key) {
            Some(i) => self.notes.remove(i).map_or(rank, |old| old.rank.max(rank)),
            None => rank,
        };
        self.notes.push_back(RecentNote {
            turn,
            key: key.to_string(),
            words: words(key),
            rank,
        });
        while self.notes.len() > RECENT_CAP {
            self.notes.pop_front();
        }
    }

    /// Forgets the note `key` remembered at `rank` (it was displaced or dropped before it
    /// reached the primary).
    pub fn forget(&mut self, key: &str, rank: u8) {
        self.notes.retain(|n| !(n.key == key && n.rank == rank));
    }

    /// Forgets everything (a branch's seed, P3: the notes of another branch).
    pub fn clear(&mut self) {
        self.notes.clear();
    }

    /// Whether a note of key `key` at `rank`, raised in primary turn `turn`, is a near
    /// duplicate: its words overlap those of a remembered note of the last [`NEAR_TURNS`]
    /// turns, at the same or a higher rank, by [`NEAR_SHARE`] or more. An escalation is no
    /// duplicate (D8); an exact repeat is P3's `duplicate`, checked before. Notes older than
    /// the window are forgotten.
    pub fn near_duplicate(&mut self, turn: u64, key: &str, rank: u8) -> bool {
        let oldest = turn.saturating_sub(NEAR_TURNS - 1);
        self.notes.retain(|n| n.turn >= oldest);
        let mine = words(key);
        self.notes
            .iter()
            .any(|n| n.rank >= rank && jaccard(&mine, &n.words) >= NEAR_SHARE)
    }

    /// Notes remembered now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.notes.len()
    }
}

/// The words of a dedupe key (P3: already lower-cased, NFKC, one space between words).
fn words(key: &str) -> BTreeSet<String> {
    key.split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The token-set Jaccard index of `a` and `b`: shared words over all words; 0 for two
/// empty sets.
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let shared = a.intersection(b).count();
    let all = a.len() + b.len() - shared;
    if all == 0 {
        0.0
    } else {
        shared as f64 / all as f64
    }
}

/// The advisor-started wakes of the session since the last user prompt (SP3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WakeLimit {
    used: u32,
}

impl WakeLimit {
    /// Takes a wake: true when one of [`WAKES_PER_PROMPT`] is left (it is used now), false
    /// when the note must go as a card instead.
    pub fn take(&mut self) -> bool {
        if self.used >= WAKES_PER_PROMPT {
            return false;
        }
        self.used += 1;
        true
    }

    /// Whether no wake is left until the next user prompt.
    pub fn spent(&self) -> bool {
        self.used >= WAKES_PER_PROMPT
    }

    /// A user prompt: the wakes are allowed again.
    pub fn user_prompted(&mut self) {
        self.used = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::note::normalize_note;

    #[test]
    fn sp3_a_note_under_8_characters_once_trimmed_is_too_short() {
        for note in [
            "",
            "   ",
            "stop it",
            "  fix it!  ",
            "x\u{00e9}\u{00e9}\u{00e9}\u{00e9}\u{00e9}\u{00e9}",
        ] {
            assert!(is_too_short(note, MIN_NOTE_CHARS), "{note:?}");
        }
        for note in [
            "fix it!!",
            "  stop now  ",
            "\u{00e9}\u{00e9}\u{00e9}\u{00e9}\u{00e9}\u{00e9}\u{00e9}\u{00e9}",
        ] {
            assert!(!is_too_short(note, MIN_NOTE_CHARS), "{note:?}");
        }
    }

    #[test]
    fn sp3_jaccard_is_shared_words_over_all_words() {
        let set = |s: &str| words(&normalize_note(s));
        assert_eq!(jaccard(&set("a b c"), &set("a b c")), 1.0);
        assert_eq!(jaccard(&set("a b"), &set("b c")), 1.0 / 3.0);
        assert_eq!(jaccard(&set(""), &set("")), 0.0);
        assert_eq!(
            jaccard(&set("the the cat"), &set("cat the")),
            1.0,
            "a set: repeats count once"
        );
    }

    /// The same words in another order, case and punctuation: 100%; ten words, one of them
    /// left out: 9 of 10, a near duplicate; one of them changed: 9 shared of 11, not one.
    #[test]
    fn sp3_a_reworded_note_is_a_near_duplicate_at_90_percent_of_shared_words() {
        let key = normalize_note(
            "Stop: the migration drops the users table and every backup of it before copying",
        );
        let mut recent = RecentNotes::default();
        recent.record(3, &key, 3);
        let same_words = normalize_note(
            "before copying, the migration drops the USERS table and every backup of it — stop!",
        );
        assert!(recent.near_duplicate(4, &same_words, 3));
        let one_word_more = normalize_note(
            "Stop: the migration drops the users table and every backup of it before copying it",
        );
        assert!(
            recent.near_duplicate(4, &one_word_more, 3),
            "\"it\" was there: the same set"
        );
        let other = normalize_note("the migration keeps the users table; check the backup step");
        assert!(!recent.near_duplicate(4, &other, 3));
        let mut ten = RecentNotes::default();
        ten.record(1, "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10", 3);
        assert!(
            ten.near_duplicate(2, "w1 w2 w3 w4 w5 w6 w7 w8 w9", 3),
            "9 of 10: 90%"
        );
        assert!(
            !ten.near_duplicate(2, "w1 w2 w3 w4 w5 w6 w7 w8 w9 x10", 3),
            "9 of 11: under 90%"
        );
    }

    #[test]
    fn sp3_an_escalation_passes_and_a_lower_rank_repeat_does_not() {
        let mut recent = RecentNotes::default();
        recent.record(1, "the loop never ends on empty input", 2);
        assert!(!recent.near_duplicate(1, "the loop never ends on empty input", 3));
        assert!(recent.near_duplicate(1, "the loop never ends on empty input", 1));
        recent.record(1, "the loop never ends on empty input", 3);
        assert_eq!(recent.len(), 1, "the escalation replaced it");
        assert!(recent.near_duplicate(1, "the loop never ends on empty input", 3));
        recent.forget("the loop never ends on empty input", 3);
        assert!(!recent.near_duplicate(1, "the loop never ends on empty input", 1));
    }

    #[test]
    fn sp3_a_note_counts_for_the_turn_it_went_out_in_and_the_19_after() {
        let mut recent = RecentNotes::default();
        recent.record(5, "the build is broken since the last edit", 3);
        assert!(recent.near_duplicate(24, "the build is broken since the last edit", 3));
        assert!(!recent.near_duplicate(25, "the build is broken since the last edit", 3));
        assert_eq!(recent.len(), 0, "forgotten past the window");
    }

    #[test]
    fn sp3_recent_notes_keep_at_most_256() {
        let mut recent = RecentNotes::default();
        for i in 0..(RECENT_CAP + 10) {
            recent.record(1, &format!("note number {i}"), 1);
        }
        assert_eq!(recent.len(), RECENT_CAP);
        assert!(!recent.near_duplicate(1, "note number 0", 1), "oldest gone");
        assert!(recent.near_duplicate(1, "note number 265", 1));
    }

    #[test]
    fn sp3_two_wakes_per_user_prompt() {
        let mut wakes = WakeLimit::default();
        assert!(wakes.take() && wakes.take());
        assert!(wakes.spent());
        assert!(!wakes.take() && !wakes.take());
        wakes.user_prompted();
        assert!(!wakes.spent());
        assert!(wakes.take());
    }

    // SP3 through the router: what the advisor is told, what the host gets, what is counted.
    mod through_the_router {
        use crate::delivery::testing::{adv, rv};
        use crate::delivery::ReviewRef;
        use crate::delivery::{DropReason, RaiseOutcome, RouterState};
        use crate::domain::advice::{AdvisorLabel, Advisory, Channel, Severity};
        use crate::domain::host::HostEvent;
        use crate::settings::DeliveryPolicy;

        fn blocker(note: &str) -> Advisory {
            adv(note, Some(Severity::Blocker))
        }

        fn channels(events: &[HostEvent]) -> Vec<Channel> {
            events
                .iter()
                .filter_map(|e| match e {
                    HostEvent::Wake { card } | HostEvent::Card { card } => Some(card.channel),
                    _ => None,
                })
                .collect()
        }

        #[test]
        fn sp3_a_note_under_8_characters_is_dropped_too_short_whatever_its_severity() {
            let mut r = RouterState::new(DeliveryPolicy::Interrupt, 4);
            r.run_state(true);
            for sev in [None, Some(Severity::Concern), Some(Severity::Blocker)] {
                let (outcome, events) = r.raise(&rv(0, 1), adv("  fix it  ", sev));
                assert_eq!(outcome, RaiseOutcome::Dropped(DropReason::TooShort));
                assert!(events.is_empty());
            }
            assert_eq!(
                r.raise(&rv(0, 1), adv("fix it!!", Some(Severity::Blocker)))
                    .0,
                RaiseOutcome::Recorded
            );
            // Content-free and empty keep their own reasons.
            assert_eq!(
                r.raise(&rv(0, 1), adv("lgtm", None)).0,
                RaiseOutcome::Dropped(DropReason::ContentFree)
            );
            assert_eq!(
                r.raise(&rv(0, 1), adv("!!", None)).0,
                RaiseOutcome::Dropped(DropReason::Empty)
            );
            assert_eq!(r.counts().dropped.get(&DropReason::TooShort), Some(&3));
            let told = RaiseOutcome::Dropped(DropReason::TooShort).tool_text(4);
            assert!(told.contains("too short"), "{told}");
        }

        #[test]
        fn sp3_a_reworded_blocker_of_the_same_advisor_within_20_turns_is_a_near_duplicate() {
            let mut r = RouterState::new(DeliveryPolicy::Interrupt, 4);
            r.run_state(true);
            let first = "Stop: the migration drops the users table before the backup runs";
            let reworded = "the migration drops the users table before the backup runs, stop!";
            assert_eq!(r.raise(&rv(0, 1), blocker(first)).0, RaiseOutcome::Recorded);
            r.step_boundary();
            for turn in 1..=19u64 {
                r.turn_ended(false, true);
                let (outcome, events) = r.raise(&rv(0, turn + 1), blocker(reworded));
                assert_eq!(
                    outcome,
                    RaiseOutcome::Dropped(DropReason::NearDuplicate),
                    "turn {turn}"
                );
                assert!(events.is_empty());
            }
            assert_eq!(
                r.counts().dropped.get(&DropReason::NearDuplicate),
                Some(&19)
            );
            let told = RaiseOutcome::Dropped(DropReason::NearDuplicate).tool_text(4);
            assert!(told.contains("in other words"), "{told}");
            // Twenty turns on, it may be said again.
            r.turn_ended(false, true);
            assert_eq!(
                r.raise(&rv(0, 30), blocker(reworded)).0,
                RaiseOutcome::Recorded
            );
        }

        #[test]
        fn sp3_near_duplicates_are_per_advisor_and_an_escalation_passes() {
            let mut r = RouterState::new(DeliveryPolicy::Interrupt, 4).with_immune_turns(0);
            r.run_state(true);
            let arch = AdvisorLabel::new("arch", "Architecture");
            let note = "the loop never ends when the input file is empty";
            let reworded = "The loop never ends when the input file is empty.";
            let other = "when the input file is empty the loop never ends";
            assert_eq!(
                r.raise(&rv(0, 1), adv(note, Some(Severity::Nit))).0,
                RaiseOutcome::Recorded
            );
            // Another advisor's note in the same words is its own.
            let (outcome, _) = r.raise(
                &ReviewRef::new(Some(arch.clone()), 0, 1),
                adv(other, Some(Severity::Nit)),
            );
            assert_eq!(outcome, RaiseOutcome::Recorded);
            // A concern of the same words escalates: it passes; the same words again as a
            // nit do not.
            assert_eq!(
                r.raise(&rv(0, 2), adv(other, Some(Severity::Concern))).0,
                RaiseOutcome::Recorded
            );
            assert_eq!(
                r.raise(&rv(0, 3), adv(reworded, Some(Severity::Nit))).0,
                RaiseOutcome::Dropped(DropReason::Duplicate),
                "the same key is P3's duplicate"
            );
            assert_eq!(
                r.raise(
                    &rv(0, 3),
                    adv("the loop never ends when an input file is empty", None)
                )
                .0,
                RaiseOutcome::Dropped(DropReason::NearDuplicate)
            );
        }

        #[test]
        fn sp1_sp3_with_the_spend_controls_off_the_blocker_lane_is_unbounded() {
            let mut r = RouterState::new(DeliveryPolicy::Interrupt, 4).with_spend_controls(false);
            r.run_state(false);
            assert_eq!(
                r.raise(&rv(0, 1), blocker("drop db")).0,
                RaiseOutcome::Recorded
            );
            let first = "Stop: the migration drops the users table before the backup runs";
            let reworded = "the migration drops the users table before the backup runs, stop!";
            let mut seen = Vec::new();
            for (review, note) in [(2, first), (3, reworded), (4, first), (5, reworded)] {
                let (outcome, events) = r.raise(&rv(0, review), blocker(note));
                seen.push((outcome, channels(&events)));
            }
            // Exact repeats are still the emission guard's (P3); rewordings pass and wake.
            assert_eq!(seen[1], (RaiseOutcome::Recorded, vec![Channel::Wake]));
            assert_eq!(seen[2].0, RaiseOutcome::Dropped(DropReason::Duplicate));
            let c = r.counts();
            assert_eq!((c.wake, c.wakes_refused), (3, 0), "{c:?}");
            assert_eq!(c.dropped.get(&DropReason::NearDuplicate), None);
            assert_eq!(c.dropped.get(&DropReason::TooShort), None);
        }

        #[test]
        fn sp3_an_idle_blocker_loop_wakes_twice_then_goes_as_cards_until_the_user_prompts() {
            let mut r = RouterState::new(DeliveryPolicy::Interrupt, 4);
            r.run_state(false);
            let mut seen = Vec::new();
            for review in 1..=4u64 {
                let note = format!("blocker number {review}: the deploy script deletes {review}x");
                let (outcome, events) = r.raise(&rv(0, review), blocker(&note));
                assert_eq!(outcome, RaiseOutcome::Recorded);
                seen.extend(channels(&events));
            }
            assert_eq!(
                seen,
                [Channel::Wake, Channel::Wake, Channel::Card, Channel::Card]
            );
            let c = r.counts();
            assert_eq!((c.wake, c.card, c.wakes_refused), (2, 2, 2));
            assert_eq!(
                c.raised(),
                4,
                "a refused wake is a card, not a fifth outcome"
            );
            // A user prompt allows two wakes again; an outbox steer flushed when the primary
            // goes idle counts as a wake too.
            r.user_prompt();
            r.run_state(true);
            for i in 0..3 {
                let note = format!("steered blocker {i}: the migration is unsafe {i}y");
                r.raise(&rv(0, 10 + i), blocker(&note));
            }
            let flushed = r.run_state(false);
            assert_eq!(
                channels(&flushed),
                [Channel::Wake, Channel::Wake, Channel::Card]
            );
            assert_eq!(r.counts().wakes_refused, 3);
        }

        #[test]
        fn sp3_the_wake_limit_is_kept_across_a_router_restart_and_shown_in_undelivered() {
            let mut r = RouterState::new(DeliveryPolicy::Interrupt, 4);
            r.run_state(false);
            let (_, events) = r.raise(&rv(0, 1), blocker("first blocker: the tests are deleted"));
            assert_eq!(channels(&events), [Channel::Wake]);
            let mut restarted = r.restarted();
            let mut seen = Vec::new();
            for review in 2..=3u64 {
                let note = format!("blocker {review}: the release tag points at {review}w");
                seen.extend(channels(&restarted.raise(&rv(0, review), blocker(&note)).1));
            }
            assert_eq!(seen, [Channel::Wake, Channel::Card], "one wake was left");
            // A note kept back that would wake is listed as the card it would be.
            let mut deferred = RouterState::new(DeliveryPolicy::Defer, 4).with_immune_turns(0);
            deferred.run_state(false);
            deferred.review_batch(&rv(0, 1), 1, true);
            deferred.raise(
                &rv(0, 1),
                adv("the config is read twice", Some(Severity::Concern)),
            );
            assert_eq!(deferred.undelivered()[0].channel, Channel::Wake);
            for note in [
                "wake one: the schema is dropped",
                "wake two: the backups are gone",
            ] {
                let (_, events) = deferred.raise(&rv(0, 1), blocker(note));
                assert_eq!(channels(&events), [Channel::Wake]);
            }
            assert_eq!(deferred.undelivered()[0].channel, Channel::Card);
        }
    }
}
