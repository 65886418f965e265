//! The Supervisor's decisions, without actix: each test drives [`Members`] as the actor
//! does and reads the changes it answers.

use std::sync::Arc;

use super::*;
use crate::config::members::tests::{entry, Models};
use crate::domain::advice::AdvisorLabel;
use crate::domain::transcript::TranscriptMessage;
use crate::feed::Update;
use crate::model::scripted::ScriptedModel;
use crate::providers::Catalog;
use crate::review::AskError;
use crate::roster::{RosterAdvisor, RosterReload, RosterSettings, RosterSetup, Sourced};
use crate::settings::{AdvisorSettings, DeliveryPolicy, ReviewMode, SyncBacklog};
use crate::status::{AdvisorState, PrimarySpend};
use crate::watchdog::WatchdogConfig;

fn config() -> RuntimeConfig {
    RuntimeConfig::new("p", "/w", Some(Arc::new(ScriptedModel::new([]))))
}

/// A session of `entries`, the roster reloaded at turn ends when `reload`.
fn roster_config(entries: Vec<RosterAdvisor>, reload: bool) -> RuntimeConfig {
    let mut config = config();
    let reload = reload.then(|| RosterReload {
        watchdog: WatchdogConfig {
            cwd: "/w".into(),
            agent_dir: None,
            home: None,
            instructions: Default::default(),
        },
        settings: RosterSettings::default(),
        catalog: Arc::new(Catalog::empty()),
        cache: None,
    });
    config.roster = Some(RosterSetup {
        roster: Roster::in_code(entries, None),
        models: Arc::new(Models),
        reload,
    });
    config
}

fn transcript(len: usize) -> Transcript {
    Transcript::from_messages((0..len).map(|i| TranscriptMessage::user(format!("m{i}"))))
}

fn name(slug: &Option<String>) -> &str {
    slug.as_deref().unwrap_or("-")
}

/// A change in a few words, so a test reads as the list of what the actor does.
fn show(change: &MemberChange) -> String {
    match change {
        MemberChange::Start { slug, seed } => {
            let at = seed
                .as_ref()
                .map_or("none".into(), |(_, len)| len.to_string());
            format!("start {} at {at}", name(slug))
        }
        MemberChange::Stop { slug, epoch, .. } => format!("stop {} to {epoch}", name(slug)),
        MemberChange::Remove { slug } => format!("remove {}", name(slug)),
        MemberChange::Register { slug } => format!("register {slug}"),
        MemberChange::RegisterUnnamed { max_notes } => format!("register - budget {max_notes}"),
        MemberChange::PauseAtRouter { slug } => format!("pause {slug}"),
        MemberChange::Resume { slug } => format!("resume {}", name(slug)),
        MemberChange::Rewind {
            slug,
            epoch,
            end_halt,
            ..
        } => format!("rewind {} to {epoch} halt {end_halt}", name(slug)),
        MemberChange::ResetDelivery {
            epoch,
            branch,
            conversation,
        } => format!("reset delivery {epoch} branch {branch} conversation {conversation}"),
        MemberChange::SetDeliveryEnabled(on) => format!("delivery {on}"),
        MemberChange::Queue {
            slug, updates, wip, ..
        } => {
            let parts: Vec<String> = updates
                .iter()
                .map(|u| match u {
                    Update::Text(t) => t.clone(),
                    Update::Turn(_) => "turn".into(),
                })
                .collect();
            format!("queue {} [{}] wip {wip}", name(slug), parts.join(","))
        }
        MemberChange::Notice(text) => format!("notice {text}"),
    }
}

fn shown(changes: &[MemberChange]) -> Vec<String> {
    changes.iter().map(show).collect()
}

/// A reload in which the entry Sec's budget changed (RO21: a rebuild).
fn sec_changed(members: &mut Members) -> Vec<MemberChange> {
    let mut changed = entry("Sec");
    changed.max_notes_per_update = Sourced::default_value(9);
    members
        .roster_checked(Some(Roster::in_code(vec![changed], None)))
        .0
}

fn started(config: RuntimeConfig) -> Members {
    let mut members = Members::new(config);
    members.started();
    members
}

fn capture(slug: Option<&str>, text: &str) -> Captured {
    Captured {
        slug: slug.map(str::to_string),
        update: Some(text.into()),
        paths_match: true,
    }
}

#[test]
fn ro12_without_a_roster_the_unnamed_advisor_starts_alone_at_the_initial_transcript() {
    let mut config = config();
    config.initial_transcript = Some(transcript(4));
    let mut members = Members::new(config);
    members.seed_initial_at(Some(3));
    assert_eq!(shown(&members.started()), ["start - at 3"]);
    assert!(members.reviewing());
    let off = {
        let mut config = self::config();
        config.settings.enabled = false;
        Members::new(config)
    };
    let mut off = off;
    assert!(off.started().is_empty(), "off: nothing starts");
}

#[test]
fn ro13_ro8_each_enabled_entry_with_a_model_starts_in_roster_order() {
    let mut paused = entry("Paused");
    paused.enabled = Sourced::default_value(false);
    let entries = vec![entry("Sec"), paused, entry("Broken"), entry("Arch")];
    let mut members = Members::new(roster_config(entries, false));
    assert_eq!(
        shown(&members.started()),
        ["start sec at none", "start arch at none"]
    );
    let states: Vec<AdvisorState> = members.iter().map(|m| m.state(true, None).0).collect();
    assert_eq!(
        states,
        [
            AdvisorState::Running,
            AdvisorState::Paused,
            AdvisorState::NoModel,
            AdvisorState::Running
        ]
    );
}

#[test]
fn ro8_ro19_a_members_state_says_why_it_does_not_run() {
    let member = |model: Result<(), &str>, enabled: bool| {
        let mut plan = config().unnamed_plan();
        plan.label = Some(AdvisorLabel::new("sec", "Sec"));
        plan.enabled = enabled;
        if let Err(reason) = model {
            plan.model = Err(reason.to_string());
        }
        Member::new(plan)
    };
    let state = |m: &Member, on: bool, paused: Option<&str>| m.state(on, paused).0;
    assert_eq!(
        member(Err("no key for acme"), true).state(true, None),
        (AdvisorState::NoModel, Some("no key for acme".into()))
    );
    assert_eq!(
        state(&member(Ok(()), false), true, None),
        AdvisorState::Paused
    );
    let mut held = member(Ok(()), true);
    held.held_off = true;
    assert_eq!(
        held.state(true, None),
        (AdvisorState::Paused, Some("paused by /advisor off".into()))
    );
    assert_eq!(state(&member(Ok(()), true), false, None), AdvisorState::Off);
    assert_eq!(
        member(Ok(()), true).state(true, Some("invalid key")),
        (AdvisorState::Failing, Some("invalid key".into()))
    );
    assert_eq!(
        state(&member(Ok(()), true), true, None),
        AdvisorState::Running
    );
    assert!(!member(Err("x"), true).runnable() && member(Ok(()), true).runnable());
}

#[test]
fn ro19_off_name_pauses_one_member_at_the_router_and_stops_it_the_session_epoch_stays() {
    let mut members = started(roster_config(vec![entry("Sec"), entry("Arch")], false));
    let (line, changes) = members.member_off("SEC");
    assert_eq!(line, "advisor Sec: off");
    assert_eq!(shown(&changes), ["pause sec", "stop sec to 1"]);
    assert_eq!(members.epoch(), 0, "the others' reviews go on");
    let sec = members.get(Some("sec")).unwrap();
    assert!(sec.held_off() && !sec.running());
    assert!(members.get(Some("arch")).unwrap().running());
    assert_eq!(
        members.member_off("nobody").0,
        "advisor: no advisor named \"nobody\"; the advisors are: Sec, Arch"
    );
}

#[test]
fn ro19_on_name_starts_a_paused_member_at_the_transcript_end_and_not_a_disabled_entry() {
    let mut disabled = entry("Idle");
    disabled.enabled = Sourced::default_value(false);
    let mut members = started(roster_config(vec![entry("Sec"), disabled], false));
    members.turn_ended(&transcript(5));
    members.member_off("sec");
    let (line, changes) = members.member_on("sec");
    assert_eq!(line, "advisor Sec: on");
    assert_eq!(shown(&changes), ["start sec at 5"], "X4: at the end");
    assert_eq!(
        shown(&members.member_on("sec").1),
        ["resume sec"],
        "running already: its reviews resume"
    );
    let (line, changes) = members.member_on("idle");
    assert!(changes.is_empty());
    assert_eq!(line, notice("memberNotEnabled", &[("name", "Idle")]));
}

#[test]
fn ro19_c1_advisor_on_resumes_the_members_paused_by_name_without_a_reset() {
    let mut members = started(roster_config(vec![entry("Sec"), entry("Arch")], false));
    members.member_off("arch");
    let (_, changes) = members.enable();
    assert_eq!(shown(&changes), ["resume sec", "start arch at none"]);
    assert_eq!(members.epoch(), 0);
}

#[test]
fn c1_off_stops_every_member_in_a_new_epoch_and_on_starts_them_at_the_transcript_end() {
    let mut members = started(roster_config(vec![entry("Sec"), entry("Arch")], false));
    members.turn_ended(&transcript(3));
    let (line, changes) = members.disable(AskEnd::TurnedOff);
    assert_eq!(line, notice("off", &[]));
    assert_eq!(
        shown(&changes),
        ["stop sec to 1", "stop arch to 1", "delivery false"]
    );
    assert!(!members.reviewing());
    let (line, changes) = members.toggle();
    assert_eq!(line, notice("on", &[]));
    assert_eq!(
        shown(&changes),
        [
            "delivery true",
            "reset delivery 2 branch false conversation false",
            "start sec at 3",
            "start arch at 3"
        ]
    );
}

#[test]
fn c1_on_without_any_model_says_so_and_starts_nothing() {
    let mut config = config();
    config.model = None;
    config.settings.enabled = false;
    let mut members = Members::new(config);
    let (line, changes) = members.enable();
    assert_eq!(line, notice("noModelAssigned", &[]));
    assert!(changes.is_empty() && members.enabled());
}

#[test]
fn r1_ca8_p3_a_reset_rewinds_every_running_member_and_drops_held_updates() {
    let mut config = roster_config(vec![entry("Sec")], false);
    config.roster.as_mut().unwrap().roster.advisors[0].review_mode =
        Sourced::default_value(ReviewMode::AgentEnd);
    let mut members = started(config);
    // A work-in-progress boundary: held, not eligible under agent-end (CA1).
    members.on_boundary(vec![capture(Some("sec"), "one")], true, false);
    members.on_boundary(vec![capture(Some("sec"), "two")], false, false);
    let held = |m: &Members| {
        m.get(Some("sec"))
            .unwrap()
            .cadence_status(&m.config.settings)
    };
    assert_eq!(held(&members).eligible_updates, 1);
    members.on_boundary(vec![capture(Some("sec"), "three")], true, false);
    assert_eq!(held(&members).held_updates, 1);

    let changes = members.reset(RewriteKind::Compaction);
    assert_eq!(
        shown(&changes),
        [
            "reset delivery 1 branch false conversation false",
            "rewind sec to 1 halt false"
        ]
    );
    assert_eq!(
        (held(&members).held_updates, held(&members).eligible_updates),
        (0, 1),
        "CA8: held dropped, counter kept"
    );
    assert!(!members.take_seed_guard(), "no branch change");

    let changes = members.reset(RewriteKind::NewSession);
    assert_eq!(
        shown(&changes),
        [
            "reset delivery 2 branch true conversation true",
            "rewind sec to 2 halt true"
        ]
    );
    assert_eq!(held(&members).eligible_updates, 0, "another conversation");
    assert!(
        members.take_seed_guard(),
        "P3: the next turn end seeds the guard"
    );
    assert!(!members.take_seed_guard(), "once");
}

#[test]
fn ro21_a_reset_makes_a_member_rebuilt_before_the_next_turn_end_read_from_0() {
    let mut members = started(roster_config(vec![entry("Sec")], false));
    members.turn_ended(&transcript(4));
    assert!(sec_changed(&mut members).is_empty());
    members.reset(RewriteKind::Detected);
    let changes = members.turn_ended(&transcript(2));
    assert_eq!(shown(&changes), ["stop sec to 2", "start sec at 0"]);
}

#[test]
fn ro21_an_added_entry_starts_at_the_last_turn_end_and_a_removed_one_is_stopped_and_forgotten() {
    let mut members = started(roster_config(vec![entry("Sec"), entry("Arch")], false));
    members.turn_ended(&transcript(6));
    let fresh = Roster::in_code(vec![entry("Ops"), entry("Sec")], None);
    let (changes, again) = members.roster_checked(Some(fresh));
    assert!(!again);
    assert_eq!(
        shown(&changes),
        ["stop arch to 1", "remove arch", "start ops at 6"]
    );
    let order: Vec<_> = members.iter().map(|m| m.slug().unwrap()).collect();
    assert_eq!(order, ["ops", "sec"], "RO2: roster order");
    assert_eq!(members.epoch(), 0, "the others' reviews go on");
}

#[test]
fn ro21_a_changed_entry_is_rebuilt_at_the_next_turn_end_reading_from_the_one_before() {
    let mut members = started(roster_config(vec![entry("Sec")], false));
    members.turn_ended(&transcript(4));
    let changes = sec_changed(&mut members);
    assert!(changes.is_empty(), "nothing until the next turn end");
    let changes = members.turn_ended(&transcript(7));
    assert_eq!(
        shown(&changes),
        ["stop sec to 1", "start sec at 4"],
        "this turn is the rebuilt advisor's first"
    );
    assert_eq!(members.get(Some("sec")).unwrap().plan().max_notes, 9);
    assert!(
        members.turn_ended(&transcript(8)).is_empty(),
        "rebuilt once"
    );
}

#[test]
fn ro21_ca7_a_cadence_only_edit_is_registered_again_and_keeps_the_counter() {
    let mut members = started(roster_config(vec![entry("Sec")], false));
    members.on_boundary(vec![capture(Some("sec"), "one")], false, false);
    let mut retuned = entry("Sec");
    retuned.review_mode = Sourced::default_value(ReviewMode::AgentEnd);
    let (changes, _) = members.roster_checked(Some(Roster::in_code(vec![retuned], None)));
    assert_eq!(shown(&changes), ["register sec"]);
    let sec = members.get(Some("sec")).unwrap();
    assert_eq!(
        sec.cadence_status(&members.config.settings)
            .eligible_updates,
        1
    );
    assert_eq!(sec.plan().review_mode, Some(ReviewMode::AgentEnd));
    assert!(members.turn_ended(&transcript(2)).is_empty(), "no rebuild");
}

#[test]
fn ro21_ro12_the_first_entry_replaces_the_unnamed_advisor_and_the_last_one_brings_it_back() {
    let mut members = started(roster_config(Vec::new(), true));
    members.turn_ended(&transcript(2));
    let (changes, _) = members.roster_checked(Some(Roster::in_code(vec![entry("Sec")], None)));
    assert_eq!(
        shown(&changes),
        ["stop - to 1", "remove -", "start sec at 2"]
    );
    let (changes, _) = members.roster_checked(Some(Roster::in_code(Vec::new(), None)));
    let budget = members.config.settings.max_notes_per_update;
    assert_eq!(
        shown(&changes),
        [
            "stop sec to 1".to_string(),
            "remove sec".into(),
            format!("register - budget {budget}"),
            "start - at 2".into()
        ]
    );
}

#[test]
fn ro21_ro12_new_shared_settings_rebuild_the_unnamed_advisor_and_give_the_router_its_budget() {
    let mut members = started(roster_config(Vec::new(), true));
    let mut shared = Roster::in_code(Vec::new(), Some("Watch the migrations."));
    shared.max_notes_per_update = Some(Sourced::default_value(7));
    let (changes, _) = members.roster_checked(Some(shared));
    assert_eq!(shown(&changes), ["register - budget 7"]);
    let changes = members.turn_ended(&transcript(1));
    assert_eq!(shown(&changes), ["stop - to 1", "start - at none"]);
}

#[test]
fn ro21_a_check_runs_only_with_reloads_and_a_turn_end_while_it_runs_asks_for_one_more() {
    let mut fixed = Members::new(roster_config(vec![entry("Sec")], false));
    assert!(!fixed.roster_check_due(), "the host asked for no reloads");
    let mut members = Members::new(roster_config(vec![entry("Sec")], true));
    assert!(members.roster_check_due());
    assert!(!members.roster_check_due(), "one check at a time");
    assert!(!members.roster_check_due());
    let (changes, again) = members.roster_checked(None);
    assert!(changes.is_empty());
    assert!(again, "a turn ended while it ran: check again");
    assert!(members.roster_check_due());
    assert!(!members.roster_checked(None).1, "asked for once");
}

#[test]
fn s1_d5_ro15_a_turn_end_may_wait_under_a_threshold_or_reconfirm_of_any_member() {
    let settings = AdvisorSettings::default();
    let mut plan = config().unnamed_plan();
    assert!(!turn_end_may_wait(&settings, [&plan]));
    assert!(!turn_end_may_wait(&settings, []));
    plan.policy = Some(DeliveryPolicy::Reconfirm);
    assert!(turn_end_may_wait(&settings, [&plan]), "D5 under reconfirm");
    plan.policy = None;
    plan.sync_backlog = Some(SyncBacklog::Below(1));
    assert!(turn_end_may_wait(&settings, [&plan]), "S1, CA9: its own");
    let mut reconfirm = settings.clone();
    reconfirm.policy = DeliveryPolicy::Reconfirm;
    assert!(turn_end_may_wait(&reconfirm, []), "the session's");
    plan.sync_backlog = None;
    let mut own = plan.clone();
    own.policy = Some(DeliveryPolicy::Defer);
    assert!(
        !turn_end_may_wait(&reconfirm, [&own]),
        "an entry's own policy beats the session's"
    );
}

#[test]
fn ro15_ro21_the_wait_follows_the_members_a_rebuild_waiting_included() {
    let mut members = started(roster_config(vec![entry("Sec")], false));
    assert!(!members.turn_end_may_wait());
    assert!(
        members.config().turn_end_may_wait(),
        "a roster may bring reconfirm at any turn end"
    );
    let mut strict = entry("Sec");
    strict.policy = Sourced::default_value(Some(crate::roster::PolicyChoice::Reconfirm));
    members.roster_checked(Some(Roster::in_code(vec![strict], None)));
    assert!(members.turn_end_may_wait(), "the rebuild waiting counts");
    members.turn_ended(&transcript(1));
    assert!(members.turn_end_may_wait());
    members.roster_checked(Some(Roster::in_code(Vec::new(), None)));
    assert!(
        !members.turn_end_may_wait(),
        "the unnamed advisor under defer"
    );
    let mut plain = config();
    assert!(!plain.turn_end_may_wait());
    plain.settings.sync_backlog = SyncBacklog::Strict;
    assert!(plain.turn_end_may_wait() && Members::new(plain).turn_end_may_wait());
}

#[test]
fn ca1_ca2_ca3_ca9_a_boundary_schedules_each_member_by_its_own_cadence() {
    let mut config = roster_config(vec![entry("Sec"), entry("Arch")], false);
    let arch = &mut config.roster.as_mut().unwrap().roster.advisors[1];
    arch.review_mode = Sourced::default_value(ReviewMode::AgentEnd);
    arch.sync_backlog = Sourced::default_value(Some(SyncBacklog::Strict));
    let mut members = started(config);
    let both = |text: &str| vec![capture(Some("sec"), text), capture(Some("arch"), text)];
    let (changes, scheduled) = members.on_boundary(both("one"), true, false);
    assert_eq!(shown(&changes), ["queue sec [one] wip true"]);
    assert_eq!(
        scheduled,
        [Scheduled {
            slug: Some("sec".into()),
            sync: SyncBacklog::Off
        }],
        "CA9: only the scheduled member is waited on"
    );
    let (changes, scheduled) = members.on_boundary(both("two"), false, false);
    assert_eq!(
        shown(&changes),
        [
            "queue sec [two] wip false",
            "queue arch [one,two] wip false"
        ],
        "CA3: what it held and this delta, as one review"
    );
    assert_eq!(scheduled[1].sync, SyncBacklog::Strict);
}

#[test]
fn ca4_ca17_ro17_a_continuation_or_an_unmatched_update_is_held_and_an_unmatched_one_counted() {
    let mut members = started(roster_config(vec![entry("Sec")], false));
    let (changes, scheduled) = members.on_boundary(vec![capture(Some("sec"), "cont")], false, true);
    assert!(changes.is_empty() && scheduled.is_empty(), "CA17");
    let mut unmatched = capture(Some("sec"), "docs");
    unmatched.paths_match = false;
    let (changes, _) = members.on_boundary(vec![unmatched], false, false);
    assert!(changes.is_empty());
    let sec = members.get(Some("sec")).unwrap();
    assert_eq!(sec.skipped_updates(), 1, "RO17: counted");
    let (changes, _) = members.on_boundary(vec![capture(Some("sec"), "code")], false, false);
    assert_eq!(
        shown(&changes),
        ["queue sec [cont,docs,code] wip false"],
        "RO17: it never reviews with a hole"
    );
}

#[test]
fn ca4_ca21_held_updates_go_out_once_for_an_ask_or_the_drain_counter_unchanged() {
    let mut config = config();
    config.settings.review_mode = ReviewMode::AgentEnd;
    let mut members = started(config);
    members.on_boundary(vec![capture(None, "one")], true, false);
    let sent = members.send_held(None).map(|c| show(&c));
    assert_eq!(sent.as_deref(), Some("queue - [one] wip true"));
    assert!(members.send_held(None).is_none(), "sent once");
    members.on_boundary(vec![capture(None, "two")], true, false);
    assert_eq!(shown(&members.drain()), ["queue - [two] wip true"]);
    let status = members
        .get(None)
        .unwrap()
        .cadence_status(&members.config.settings);
    assert_eq!(status.eligible_updates, 0);
    members.disable(AskEnd::TurnedOff);
    assert!(members.drain().is_empty(), "off: nothing to drain");
}

#[test]
fn ca7_pausing_or_turning_off_drops_held_updates_and_restarts_the_counter() {
    let mut members = started(roster_config(vec![entry("Sec")], false));
    members.on_boundary(vec![capture(Some("sec"), "one")], false, false);
    members.member_off("sec");
    let status = |m: &Members| {
        m.get(Some("sec"))
            .unwrap()
            .cadence_status(&m.config.settings)
    };
    assert_eq!(status(&members).eligible_updates, 0);
    members.member_on("sec");
    members.on_boundary(vec![capture(Some("sec"), "two")], false, false);
    members.disable(AskEnd::TurnedOff);
    assert_eq!(status(&members).eligible_updates, 0);
}

#[test]
fn ro20_an_ask_goes_to_the_named_else_the_unnamed_else_the_first_running_else_the_first_enabled() {
    let mut members = started(roster_config(vec![entry("Sec"), entry("Arch")], false));
    assert_eq!(
        members.asked(Some("arch")).unwrap().as_deref(),
        Some("arch")
    );
    assert_eq!(members.asked(None).unwrap().as_deref(), Some("sec"));
    members.member_off("sec");
    assert_eq!(members.asked(None).unwrap().as_deref(), Some("arch"));
    members.member_off("arch");
    assert_eq!(
        members.asked(None),
        Err(AskError::MemberNotRunning("Sec".into()))
    );
    assert_eq!(
        members.asked(Some("ops")),
        Err(AskError::UnknownAdvisor("ops".into()))
    );
    let mut unnamed = started(config());
    unnamed.disable(AskEnd::TurnedOff);
    assert_eq!(unnamed.asked(None), Err(AskError::NotRunning));
}

#[test]
fn c3_a_failure_counts_for_its_member_in_the_current_epoch_only() {
    let mut members = started(roster_config(vec![entry("Sec"), entry("Arch")], false));
    let sec = AdvisorLabel::new("sec", "Sec");
    members.review_failed(0, Some(&sec));
    members.reset(RewriteKind::Compaction);
    members.review_failed(0, Some(&sec));
    let failures: Vec<u64> = members.iter().map(Member::failures).collect();
    assert_eq!(failures, [1, 0]);
}

#[test]
fn sp7_a_check_in_holds_its_own_member_s_reviews_and_a_stale_one_or_a_user_prompt_does_not() {
    let mut members = started(roster_config(vec![entry("Sec"), entry("Arch")], false));
    let both = |text: &str| vec![capture(Some("sec"), text), capture(Some("arch"), text)];
    let slugs = |scheduled: &[Scheduled]| -> Vec<String> {
        scheduled
            .iter()
            .map(|s| name(&s.slug).to_string())
            .collect()
    };
    let (changes, scheduled) = members.on_boundary(both("one"), true, false);
    assert_eq!(slugs(&scheduled), ["sec", "arch"]);
    assert!(matches!(changes[0], MemberChange::Queue { turn: 1, .. }));
    let sec = AdvisorLabel::new("sec", "Sec");
    // A report from before a reset changes nothing.
    members.checked_in(members.epoch() + 1, Some(&sec), (1, 3), (vec![], false));
    let (_, scheduled) = members.on_boundary(both("two"), true, false);
    assert_eq!(slugs(&scheduled), ["sec", "arch"]);
    // Sec's review of turn 2 asks for turn end 4: turn end 3 schedules Arch alone (CA9:
    // Sec is not waited on).
    members.checked_in(members.epoch(), Some(&sec), (2, 2), (vec![], false));
    let (changes, scheduled) = members.on_boundary(both("three"), true, false);
    assert_eq!(slugs(&scheduled), ["arch"]);
    assert_eq!(shown(&changes), ["queue arch [three] wip true"]);
    let (changes, _) = members.on_boundary(both("four"), true, false);
    assert_eq!(
        shown(&changes),
        [
            "queue sec [three,four] wip true",
            "queue arch [four] wip true"
        ]
    );
    let counts = members.get(Some("sec")).unwrap().check_in_counts();
    assert_eq!(
        (counts.check_ins, counts.turns_skipped),
        (1, 1),
        "the stale report is not counted"
    );
    // A user prompt (or an abort) ends the wait.
    members.checked_in(members.epoch(), Some(&sec), (4, 5), (vec![], false));
    members.end_check_in_waits();
    let (_, scheduled) = members.on_boundary(both("five"), true, false);
    assert_eq!(slugs(&scheduled), ["sec", "arch"]);
}

#[test]
fn sp6_an_entry_past_its_own_ceiling_reviews_at_agent_end_and_past_twice_it_is_paused() {
    let mut sec = entry("Sec");
    sec.max_spend_ratio = Sourced::default_value(Some(0.5));
    let mut members = started(roster_config(vec![sec, entry("Arch")], false));
    members.turn_ended(&transcript(1));
    let usage = |input| crate::model::Usage {
        input,
        ..crate::model::Usage::default()
    };
    let sec_label = AdvisorLabel::new("sec", "Sec");
    members.spent(Some(&sec_label), &usage(300_000));
    members.spent(Some(&AdvisorLabel::new("arch", "Arch")), &usage(900_000));
    let primary = PrimarySpend {
        messages: 1,
        input_uncached: 400_000,
        ..PrimarySpend::default()
    };
    // Sec: 0.75× past its 0.5; Arch has no ceiling (none in the settings either).
    let (lines, changes) = members.check_spend_ceilings(Some(&primary));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0].0.as_ref().map(|l| &*l.slug), Some("sec"));
    assert!(
        lines[0].1.contains("spend ratio 0.75× by input tokens"),
        "{lines:?}"
    );
    assert_eq!(
        shown(&changes),
        ["register sec"],
        "CA16, CA18: its mode changed"
    );
    let settings = members.config().settings.clone();
    let mode = |m: &Members, slug| m.get(Some(slug)).unwrap().cadence_in_effect(&settings).mode;
    assert_eq!(mode(&members, "sec"), ReviewMode::AgentEnd);
    assert_eq!(mode(&members, "arch"), ReviewMode::Turn);
    let (queued, _) = members.on_boundary(
        vec![capture(Some("sec"), "d1"), capture(Some("arch"), "d1")],
        true,
        false,
    );
    assert_eq!(
        shown(&queued),
        ["queue arch [d1] wip true"],
        "Sec holds its WIP round"
    );
    // Past twice its ceiling: paused as /advisor off NAME pauses, told once.
    members.spent(Some(&sec_label), &usage(200_000));
    let (lines, changes) = members.check_spend_ceilings(Some(&primary));
    assert_eq!(lines.len(), 1);
    assert_eq!(shown(&changes), ["pause sec", "stop sec to 1"]);
    let (state, reason) = members.get(Some("sec")).unwrap().state(true, None);
    assert_eq!(
        (state, reason.as_deref()),
        (AdvisorState::Paused, Some("paused by the spend ceiling"))
    );
    assert!(members.check_spend_ceilings(Some(&primary)).0.is_empty());
}

#[test]
fn c3_ro19_the_status_takes_each_named_advisor_s_agent_and_deliveries_in_member_order() {
    let members = started(roster_config(vec![entry("Sec")], false));
    let parts = members.status_parts(SessionCounts::default());
    let slugs: Vec<_> = members
        .iter()
        .map(|m| m.slug().map(str::to_string))
        .collect();
    let agents = slugs
        .iter()
        .map(|slug| {
            slug.as_ref().map(|_| crate::review::AgentStatus {
                paused: Some("rate limited".into()),
                model: Some("m2".into()),
                reviews: 3,
                ..Default::default()
            })
        })
        .collect();
    let mut delivery = crate::status::DeliveryStatus::default();
    let counts = crate::status::DeliveryCounts {
        aside: 2,
        ..Default::default()
    };
    delivery.per_advisor.insert("sec".into(), counts.clone());
    let status = parts.assemble(Some(delivery), agents);
    assert_eq!(status.advisors.len(), 1, "{status:?}");
    let sec = &status.advisors[0];
    assert_eq!(sec.slug, "sec");
    // Enabled and not paused by the user, its agent paused: failing, with the agent's reason.
    assert_eq!(sec.state, AdvisorState::Failing);
    assert_eq!(sec.reason.as_deref(), Some("rate limited"));
    assert_eq!(sec.model.as_deref(), Some("m2"));
    assert_eq!(sec.deliveries, counts);
    assert_eq!(
        status.agent.reviews, 3,
        "the roster's totals are its advisors'"
    );
}

#[test]
fn sp9_gt8_the_status_shows_the_gates_counters_only_while_they_are_on_or_saw_a_call() {
    let members = started(config());
    let mut counts = SessionCounts::default();
    counts.gate.judge_requests = 1;
    let status = members
        .status_parts(counts.clone())
        .assemble(None, vec![None]);
    assert_eq!(
        status.spend.gate, None,
        "no judge model: the triage gate is off"
    );
    assert_eq!(status.spend.action_gate, None, "off and no call seen");
    counts.action_gate.proposed = 1;
    let status = members.status_parts(counts).assemble(None, vec![None]);
    assert_eq!(status.spend.action_gate.map(|c| c.proposed), Some(1));
}

#[test]
fn c1_c2_c4_a_command_line_is_answered_here_or_handed_to_the_actor() {
    let mut members = started(config());
    let CommandRun::Answered(line, _) = members.run_command("/advisor off") else {
        panic!("off is answered here");
    };
    assert_eq!(line, notice("off", &[]));
    assert!(!members.enabled());
    assert!(matches!(
        members.run_command("/advisor status"),
        CommandRun::Status
    ));
    assert!(matches!(
        members.run_command("/advisor dump raw"),
        CommandRun::Dump {
            raw: true,
            advisor: None
        }
    ));
    let CommandRun::Test { nth, advisory, .. } = members.run_command("/advisor test nit Look")
    else {
        panic!("a test is the actor's to inject");
    };
    assert_eq!((nth, advisory.note.as_str()), (1, "Look"));
    let CommandRun::Answered(usage, changes) = members.run_command("/advisor frobnicate") else {
        panic!("the usage line");
    };
    assert_eq!(usage, crate::command::USAGE);
    assert!(changes.is_empty());
}

#[test]
fn p5_ca8_a_quarantine_drops_what_the_member_held_and_answers_what_a_reprime_reads() {
    let mut members = started(config());
    members.turn_ended(&transcript(3));
    members.hold_back(None, vec![Update::Text("held".into())]);
    let turn = members.get(None).map(Member::turn);
    let (read, at) = members.quarantined(None);
    assert_eq!(read.map(|t| t.len()), Some(3), "the last transcript");
    assert_eq!(Some(at), turn);
    assert!(
        members.send_held(None).is_none(),
        "CA8: what it held is dropped, the re-prime covers it"
    );
    let stranger = AdvisorLabel::new("nobody", "Nobody");
    assert_eq!(
        members.quarantined(Some(&stranger)).1,
        0,
        "no member: turn 0"
    );
}
