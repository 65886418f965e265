//! Review cadence (SPEC §16, CA1–CA12, CA21) through `AdvisorHandle` mailboxes: the
//! scenarios CA-S1, CA-S2 (its cadence part), CA-S7 and CA-S9, with virtual time for the
//! 30 s caps.

use crate::support::roster::advisor;
use crate::support::runtime as support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use advisor::domain::host::RewriteKind;
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ModelClient, ModelError};
use advisor::roster::{Roster, RosterAdvisor, RosterModels, RosterSetup, Sourced};
use advisor::settings::{ReviewMode, SyncBacklog};
use advisor::{AdvisorHandle, TurnEndOptions};
use support::*;

/// Ends turn `n` of `t` (a user line `turn n`), work in progress or final.
pub(super) async fn turn(h: &AdvisorHandle, t: &Transcript, n: usize, wip: bool) {
    t.push(TranscriptMessage::user(format!("turn {n}")));
    let options = TurnEndOptions {
        will_continue: Some(wip),
    };
    h.turn_end_with(t, options).await.expect("the session runs");
}

/// The `turn N` lines a review's prompt carries, in order.
pub(super) fn turns_in(text: &str) -> Vec<usize> {
    text.lines()
        .filter_map(|l| l.split("turn ").nth(1))
        .filter_map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

#[actix::test]
async fn ca_s1_interval_three_reviews_at_3_and_6_holds_7_and_the_drain_sends_it() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.review_interval = 3;
    });
    let t = Transcript::from_messages([]);
    for n in 1..=6 {
        turn(&h, &t, n, true).await;
    }
    turn(&h, &t, 7, false).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "reviews at TurnEnd 3 and 6 only");
    assert_eq!(turns_in(&last_user_text(&requests[0])), [1, 2, 3]);
    assert_eq!(turns_in(&last_user_text(&requests[1])), [4, 5, 6]);
    let status = h.status().await.unwrap();
    assert_eq!(status.cadence.held_updates, 1);
    assert_eq!(status.cadence.eligible_updates, 7);
    assert_eq!(
        status.agent.backlog, 0,
        "held updates are no backlog (CA12)"
    );
    // CA21: the drain sends what is held as one review, the counter unchanged.
    h.await_drain().await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(turns_in(&last_user_text(&requests[2])), [7]);
    let status = h.status().await.unwrap();
    assert_eq!(
        (status.cadence.held_updates, status.cadence.eligible_updates),
        (0, 7)
    );
}

#[actix::test]
async fn ca_s2_ca10_agent_end_strict_reviews_the_run_once_and_turn_end_waits_for_it() {
    tokio::time::pause();
    let (model, mut arrivals, gate) = GatedModel::new(vec![], true);
    let gate = gate.expect("gated");
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Strict, |cfg| {
        cfg.settings.review_mode = ReviewMode::AgentEnd;
    });
    let t = Transcript::from_messages([]);
    for n in 1..=3 {
        turn(&h, &t, n, true).await;
    }
    assert!(arrivals.try_recv().is_err(), "no review before TurnEnd 4");
    assert_eq!(h.status().await.unwrap().cadence.held_updates, 3);
    t.push(TranscriptMessage::user("turn 4"));
    let ending = {
        let (h, t) = (h.clone(), t.clone());
        tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            let options = TurnEndOptions {
                will_continue: Some(false),
            };
            h.turn_end_with(&t, options)
                .await
                .expect("the session runs");
            started.elapsed()
        })
    };
    let review = next_request(&mut arrivals).await;
    assert_eq!(turns_in(&last_user_text(&review)), [1, 2, 3, 4]);
    assert_eq!(
        h.status().await.unwrap().agent.backlog,
        1,
        "one backlog unit"
    );
    // Strict: no wall-clock cap; ten virtual minutes later TurnEnd 4 still waits.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(!ending.is_finished(), "strict has no 30 s cap");
    gate.add_permits(1);
    let waited = ending.await.expect("the turn end returns");
    assert!(waited >= Duration::from_secs(600), "{waited:?}");
}

#[actix::test]
async fn ca_s7_ca8_a_compaction_keeps_the_counter_and_a_session_switch_restarts_it() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.review_interval = 3;
    });
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, false).await;
    turn(&h, &t, 2, false).await;
    h.rewrite(RewriteKind::Compaction).await.unwrap();
    let status = h.status().await.unwrap();
    assert_eq!(
        (status.cadence.held_updates, status.cadence.eligible_updates),
        (0, 2),
        "held updates dropped, counter kept"
    );
    turn(&h, &t, 3, false).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let text = last_user_text(&requests[0]);
    assert_eq!(turns_in(&text), [1, 2, 3], "the bounded replay: {text}");
    assert_eq!(
        text.matches("### Session update").count(),
        1,
        "one part, no separate held ones: {text}"
    );

    // With a session switch instead, the counter restarts: the next TurnEnd is held.
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.review_interval = 3;
    });
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, false).await;
    turn(&h, &t, 2, false).await;
    h.rewrite(RewriteKind::SessionSwitch).await.unwrap();
    turn(&h, &t, 3, false).await;
    assert_eq!(model.request_count(), 0, "TurnEnd 3 counts 1 of 3 now");
    assert_eq!(h.status().await.unwrap().cadence.eligible_updates, 1);
}

/// Builds each roster entry's client from the test's map, by slug.
struct PerSlug(HashMap<String, Arc<dyn ModelClient>>);

impl RosterModels for PerSlug {
    fn build(&self, entry: &RosterAdvisor) -> Result<Arc<dyn ModelClient>, String> {
        self.0
            .get(&entry.slug)
            .cloned()
            .ok_or_else(|| format!("no model for {}", entry.slug))
    }
}

fn entry(name: &str, sync: SyncBacklog, interval: u64) -> RosterAdvisor {
    let mut entry = advisor(name, "openai", "gpt-5", None);
    entry.sync_backlog = Sourced::default_value(Some(sync));
    entry.review_interval = Sourced::default_value(interval);
    entry
}

fn retryable() -> ScriptedReply {
    ScriptedReply::Fail(ModelError::Retryable {
        usage: None,
        message: "HTTP 500".into(),
        retry_after: None,
    })
}

#[actix::test]
async fn ca_s9_ca11_each_scheduled_advisor_waits_under_its_own_value_the_others_not_at_all() {
    tokio::time::pause();
    // A: strict, failing (a retry pending) → released at once. B: 3, its reviews never
    // answer → released by 30 s. C: 1, every 2nd update, also never answering → not waited
    // on at TurnEnd 5, where it schedules nothing.
    let failing = ScriptedModel::new((0..50).map(|_| retryable()));
    let (b_model, _b_arrivals, b_gate) = GatedModel::new(vec![], true);
    let (c_model, _c_arrivals, _c_gate) = GatedModel::new(vec![], true);
    let models: HashMap<String, Arc<dyn ModelClient>> = [
        ("a".to_string(), Arc::new(failing) as Arc<dyn ModelClient>),
        ("b".to_string(), Arc::new(b_model)),
        ("c".to_string(), Arc::new(c_model)),
    ]
    .into();
    let roster = Roster {
        advisors: vec![
            entry("a", SyncBacklog::Strict, 1),
            entry("b", SyncBacklog::Below(3), 1),
            entry("c", SyncBacklog::Below(1), 2),
        ],
        ..Roster::default()
    };
    let (h, _rx) = runtime(Arc::new(ScriptedModel::new([])), SyncBacklog::Off, |cfg| {
        cfg.roster = Some(RosterSetup {
            roster,
            models: Arc::new(PerSlug(models)),
            reload: None,
        });
    });
    assert!(
        h.turn_end_waits(),
        "entries with their own catch-up may hold a turn end"
    );
    let t = Transcript::from_messages([]);
    // TurnEnds 1–4: B's backlog grows (each waits at most 30 s once it reaches 3); C
    // schedules at 2 and 4.
    for n in 1..=4 {
        turn(&h, &t, n, false).await;
    }
    let status = h.status().await.unwrap();
    let backlog = |slug: &str| {
        status
            .advisors
            .iter()
            .find(|a| a.slug == slug)
            .map(|a| a.agent.backlog)
    };
    assert_eq!(backlog("b"), Some(4), "B's reviews never finish");
    assert_eq!(backlog("c"), Some(2), "C scheduled at 2 and 4");
    let started = tokio::time::Instant::now();
    turn(&h, &t, 5, false).await;
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(30) && waited < Duration::from_secs(31),
        "B's 30 s cap, A released at once, C not waited on: {waited:?}"
    );
    // An interrupt releases every wait at once.
    t.push(TranscriptMessage::user("turn 6"));
    let ending = {
        let (h, t) = (h.clone(), t.clone());
        tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            h.turn_end_with(&t, TurnEndOptions::default())
                .await
                .expect("the session runs");
            started.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    h.interrupt(true).await.unwrap();
    let waited = ending.await.expect("the turn end returns");
    assert!(waited < Duration::from_secs(30), "{waited:?}");
    drop(b_gate);
}

#[actix::test]
async fn ca4_an_ask_first_sends_the_held_updates_as_one_review_counter_unchanged() {
    let model = ScriptedModel::new([]);
    let (h, _rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.review_interval = 3;
    });
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, false).await;
    turn(&h, &t, 2, false).await;
    assert_eq!(model.request_count(), 0, "both held");
    // The review of what was held answers first, then the question.
    model.push(ScriptedReply::text("Reviewed."));
    model.push(ScriptedReply::text("Turns 1 and 2 look fine."));
    h.ask("How does it look?").await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(turns_in(&last_user_text(&requests[0])), [1, 2]);
    let status = h.status().await.unwrap();
    assert_eq!(
        (status.cadence.held_updates, status.cadence.eligible_updates),
        (0, 2)
    );
    turn(&h, &t, 3, false).await;
    assert_eq!(
        model.request_count(),
        3,
        "the count went on: 3 is scheduled"
    );
}
