//! Review cadence (SPEC §16, CA1–CA12, CA17, CA20, CA21) through `AdvisorHandle` mailboxes:
//! the scenarios CA-S1, CA-S2 (its cadence part), CA-S3, CA-S7, CA-S8, CA-S9 and CA-S12, with
//! virtual time for the 30 s caps.

use crate::support::roster::{advisor, PerSlug};
use crate::support::runtime as support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use advisor::domain::host::{HostEvent, RewriteKind};
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ModelClient, ModelError};
use advisor::replay::merged_guidance;
use advisor::roster::{
    ModelChoice, Roster, RosterAdvisor, RosterModels, RosterReload, RosterSettings, RosterSetup,
    Sourced,
};
use advisor::settings::{DeliveryPolicy, ReviewMode, SyncBacklog};
use advisor::watchdog::WatchdogConfig;
use advisor::{AdvisorHandle, AdvisorState, TurnEndOptions};
use support::*;

use super::review_core::{final_answer, tool_call_turn, tool_output};

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

/// Ends turn `n` of `t` without a user message (one prompt's run goes on): a WIP round is
/// a tool call `turn n` and its output, a final one the answer `turn n`.
async fn agent_turn(h: &AdvisorHandle, t: &Transcript, n: usize, wip: bool) {
    if wip {
        t.push(tool_call_turn(&format!("turn {n}")));
        t.push(tool_output("ok"));
    } else {
        t.push(final_answer(&format!("turn {n}")));
    }
    let options = TurnEndOptions {
        will_continue: Some(wip),
    };
    h.turn_end_with(t, options).await.expect("the session runs");
}

/// The `turn N` lines each request of `model` carries, request by request.
fn reviewed(model: &ScriptedModel) -> Vec<Vec<usize>> {
    model
        .requests()
        .iter()
        .map(|r| turns_in(&last_user_text(r)))
        .collect()
}

/// CA-S2 then CA-S3: entry `Final` (agent-end, strict) reviews the user's run 1–4 once and
/// its concern goes out as one wake; the woken run (5 WIP, 6 final) is its continuation
/// (CA17): held, neither reviewed nor waited on; the user's next prompt ends turn 7, whose
/// final boundary sends one review carrying 5–7.
#[actix::test]
async fn ca_s3_ca17_the_woken_run_is_held_and_the_next_prompt_reviews_it_with_its_own_turn() {
    let model = ScriptedModel::new([ScriptedReply::advise(
        "1",
        "concern: the route lacks auth",
        Some("concern"),
    )]);
    let mut final_entry = advisor("Final", "openai", "gpt-5", None);
    final_entry.review_mode = Sourced::default_value(ReviewMode::AgentEnd);
    final_entry.sync_backlog = Sourced::default_value(Some(SyncBacklog::Strict));
    let roster = Roster {
        advisors: vec![final_entry],
        ..Roster::default()
    };
    let models: HashMap<String, Arc<dyn ModelClient>> = [(
        "final".to_string(),
        Arc::new(model.clone()) as Arc<dyn ModelClient>,
    )]
    .into();
    let (h, mut rx) = runtime(Arc::new(ScriptedModel::new([])), SyncBacklog::Off, |cfg| {
        cfg.model = None;
        cfg.roster = Some(RosterSetup {
            roster,
            models: Arc::new(PerSlug(models)),
            reload: None,
        });
    });
    h.user_prompt().await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("add the endpoint")]);
    for n in 1..=3 {
        agent_turn(&h, &t, n, true).await;
    }
    assert_eq!(model.request_count(), 0, "no review before TurnEnd 4");
    agent_turn(&h, &t, 4, false).await;
    assert_eq!(reviewed(&model), [vec![1, 2, 3, 4]], "CA-S2: one review");
    let expected = [
        merged_guidance().to_string(),
        "<advisory advisor=\"Final\" severity=\"concern\" guidance=\"weigh, don't blindly \
         obey\">\nconcern: the route lacks auth\n</advisory>"
            .to_string(),
    ]
    .join("\n");
    match drain(&mut rx).as_slice() {
        [HostEvent::Wake { card }] => assert_eq!(card.content, expected),
        other => panic!("CA-S2: expected one wake, got {other:?}"),
    }

    // The woken run: its turns are the continuation's, held, and nothing is waited on (a
    // review would be strict's to wait for).
    h.run_state(true).await.unwrap();
    agent_turn(&h, &t, 5, true).await;
    agent_turn(&h, &t, 6, false).await;
    h.run_state(false).await.unwrap();
    assert_eq!(model.request_count(), 1, "nothing reviewed at 5 and 6");
    let status = h.status().await.unwrap();
    let cadence = &status
        .advisors
        .iter()
        .find(|a| a.slug == "final")
        .expect("Final")
        .cadence;
    assert_eq!(
        (cadence.held_updates, cadence.eligible_updates),
        (2, 1),
        "held, not eligible (CA4)"
    );
    assert!(drain(&mut rx).is_empty(), "no second continuation");

    // The user's next prompt: its final turn 7 sends one review of 5–7.
    h.user_prompt().await.unwrap();
    h.run_state(true).await.unwrap();
    t.push(TranscriptMessage::user("now the tests"));
    agent_turn(&h, &t, 7, false).await;
    assert_eq!(reviewed(&model), [vec![1, 2, 3, 4], vec![5, 6, 7]]);
}

/// CA-S12: the unnamed advisor, interval 2, policy `defer`. The review scheduled at WIP
/// `TurnEnd` 2 raises a concern, deferred; the final `TurnEnd` 3 (count 3, not scheduled)
/// releases it (CA20) as one card with `turns_ago="1"` and the guidance; turn 3's delta is
/// held, and the drain (CA21) reviews it.
#[actix::test]
async fn ca_s12_ca20_ca21_a_deferred_note_is_released_at_an_unscheduled_final_turn_end() {
    let model = ScriptedModel::new([ScriptedReply::advise(
        "1",
        "concern: the loop never ends",
        Some("concern"),
    )]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |cfg| {
        cfg.settings.review_interval = 2;
        cfg.settings.policy = DeliveryPolicy::Defer;
    });
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, true).await;
    turn(&h, &t, 2, true).await;
    assert_eq!(reviewed(&model), [vec![1, 2]]);
    assert!(drain(&mut rx).is_empty(), "deferred at a WIP boundary");
    turn(&h, &t, 3, false).await;
    assert_eq!(model.request_count(), 1, "TurnEnd 3 is not scheduled");
    let expected = [
        merged_guidance().to_string(),
        "<advisory severity=\"concern\" turns_ago=\"1\" guidance=\"weigh, don't blindly \
         obey\">\nconcern: the loop never ends\n</advisory>"
            .to_string(),
    ]
    .join("\n");
    match drain(&mut rx).as_slice() {
        [HostEvent::Card { card }] => {
            assert_eq!(card.content, expected);
            assert_eq!(card.notes.len(), 1);
            assert_eq!(card.notes[0].turns_ago, Some(1));
        }
        other => panic!("expected one card, got {other:?}"),
    }
    let status = h.status().await.unwrap();
    assert_eq!(
        (status.cadence.held_updates, status.cadence.eligible_updates),
        (1, 3)
    );
    h.await_drain().await.unwrap();
    assert_eq!(
        reviewed(&model),
        [vec![1, 2], vec![3]],
        "the drain reviews turn 3"
    );
    assert_eq!(h.status().await.unwrap().cadence.held_updates, 0);
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
        h.turn_end_may_wait(),
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

/// Each entry's client by its `provider/model`; every client built is numbered, and each
/// request records the number of the client that served it: a member that was rebuilt is
/// served by a later client than the one it started with.
#[derive(Clone, Default)]
struct ByModel {
    models: HashMap<String, Arc<dyn ModelClient>>,
    builds: Arc<parking_lot::Mutex<Vec<String>>>,
    served: Arc<parking_lot::Mutex<Vec<usize>>>,
}

impl RosterModels for ByModel {
    fn build(&self, entry: &RosterAdvisor) -> Result<Arc<dyn ModelClient>, String> {
        let ModelChoice::Resolved {
            provider, model, ..
        } = &entry.model.value
        else {
            return Err("no model".into());
        };
        let id = format!("{provider}/{model}");
        let inner = self.models.get(&id).cloned().ok_or_else(|| id.clone())?;
        let mut builds = self.builds.lock();
        builds.push(id);
        Ok(Arc::new(Numbered {
            inner,
            number: builds.len(),
            served: Arc::clone(&self.served),
        }))
    }
}

/// A client that records its number at each request.
struct Numbered {
    inner: Arc<dyn ModelClient>,
    number: usize,
    served: Arc<parking_lot::Mutex<Vec<usize>>>,
}

impl ModelClient for Numbered {
    fn complete(&self, request: advisor::model::ModelRequest) -> advisor::model::ModelFuture {
        self.served.lock().push(self.number);
        self.inner.complete(request)
    }

    fn info(&self) -> advisor::model::ModelInfo {
        self.inner.info()
    }
}

/// A project (its `.git` marks the root where roster files are found) whose WATCHDOG.yml
/// holds entry `E` with `fields`, and a `Broken` entry when `broken`: its warning tells the
/// test that a reload was applied.
fn write_e(repo: &std::path::Path, fields: &str, broken: bool) {
    let mut text = format!("advisors:\n  - name: E\n{fields}");
    if broken {
        text.push_str("  - name: Broken\n    model: openai/gpt-5\n    reviewMode: every-step\n");
    }
    std::fs::write(repo.join("WATCHDOG.yml"), text).unwrap();
}

/// A session on the roster files of a fresh project holding `fields` for `E`, checked
/// again at each turn end (RO21).
fn reloading_e(
    fields: &str,
    models: &ByModel,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    advisor::RuntimeConfig,
) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    write_e(&repo, fields, false);
    let watchdog = WatchdogConfig {
        cwd: repo.clone(),
        agent_dir: Some(dir.path().join("agent")),
        home: Some(dir.path().to_path_buf()),
        instructions: Default::default(),
    };
    let settings = RosterSettings::default();
    let catalog = Arc::new(advisor::providers::Catalog::builtin().unwrap());
    let roster = advisor::roster::load(&watchdog, &settings, &catalog, None);
    assert!(roster.warnings.is_empty(), "{:?}", roster.warnings);
    assert_eq!(roster.advisors.len(), 1);
    let cfg = config(
        Arc::new(ScriptedModel::new([])),
        SyncBacklog::Below(1),
        |cfg| {
            cfg.model = None;
            cfg.roster = Some(RosterSetup {
                roster,
                models: Arc::new(models.clone()),
                reload: Some(RosterReload {
                    watchdog,
                    settings,
                    catalog,
                    cache: None,
                }),
            });
        },
    );
    (dir, repo, cfg)
}

/// Waits (at most a minute: the check runs on the blocking pool) for the notice of the
/// `Broken` entry's warning: the reload that wrote it was applied.
async fn reload_applied(rx: &mut tokio::sync::mpsc::UnboundedReceiver<HostEvent>) {
    let mut seen = Vec::new();
    let applied = async {
        loop {
            let event = next_event(rx).await;
            if let HostEvent::Notice { text, .. } = &event {
                if text.contains("every-step") {
                    return;
                }
            }
            seen.push(format!("{event:?}"));
        }
    };
    let waited = tokio::time::timeout(Duration::from_secs(60), applied).await;
    assert!(waited.is_ok(), "the reload was never applied: {seen:?}");
}

#[actix::test]
async fn ca_s8_ca7_a_model_change_rebuilds_e_with_its_held_updates_an_interval_edit_rebuilds_nothing(
) {
    let old = ScriptedModel::new([]);
    let new = ScriptedModel::new([]);
    let models = ByModel {
        models: [
            (
                "openai/gpt-5".to_string(),
                Arc::new(old.clone()) as Arc<dyn ModelClient>,
            ),
            ("openai/gpt-5-mini".to_string(), Arc::new(new.clone())),
        ]
        .into(),
        ..ByModel::default()
    };
    let (_dir, repo, cfg) =
        reloading_e("    model: openai/gpt-5\n    reviewInterval: 3\n", &models);
    let (h, mut rx) = start(cfg);
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, false).await;
    // E's model changes; the check that sees it may end before TurnEnd 2 or after it.
    write_e(
        &repo,
        "    model: openai/gpt-5-mini\n    reviewInterval: 3\n",
        true,
    );
    turn(&h, &t, 2, false).await;
    reload_applied(&mut rx).await;
    turn(&h, &t, 3, false).await;
    assert_eq!(old.request_count(), 0, "TurnEnds 1 and 2 were held");
    let requests = new.requests();
    assert_eq!(requests.len(), 1, "one review at TurnEnd 3");
    assert_eq!(
        turns_in(&last_user_text(&requests[0])),
        [1, 2, 3],
        "the rebuilt E sends what its predecessor held"
    );
    assert_eq!(*models.builds.lock(), ["openai/gpt-5", "openai/gpt-5-mini"]);
    assert_eq!(*models.served.lock(), [2], "served by the rebuilt E");
    h.dispose().await.unwrap();

    // Only reviewInterval 3 → 2 after TurnEnd 1: nothing rebuilds, TurnEnd 2 sends 1–2.
    let same = ScriptedModel::new([]);
    let models = ByModel {
        models: [(
            "openai/gpt-5".to_string(),
            Arc::new(same.clone()) as Arc<dyn ModelClient>,
        )]
        .into(),
        ..ByModel::default()
    };
    let (_dir, repo, cfg) =
        reloading_e("    model: openai/gpt-5\n    reviewInterval: 3\n", &models);
    let (h, mut rx) = start(cfg);
    let t = Transcript::from_messages([]);
    // The edit is seen by the check TurnEnd 1 starts and applies from the next boundary
    // (TurnEnd 1 counts 1 under either interval).
    write_e(
        &repo,
        "    model: openai/gpt-5\n    reviewInterval: 2\n",
        true,
    );
    turn(&h, &t, 1, false).await;
    reload_applied(&mut rx).await;
    let status = h.status().await.unwrap();
    let e = status.advisors.iter().find(|a| a.slug == "e").expect("E");
    assert_eq!(
        (
            e.cadence.review_interval,
            e.cadence.held_updates,
            e.cadence.eligible_updates
        ),
        (2, 1, 1),
        "the new interval applies, the counter and held update kept"
    );
    turn(&h, &t, 2, false).await;
    let requests = same.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(turns_in(&last_user_text(&requests[0])), [1, 2]);
    assert_eq!(
        *models.served.lock(),
        [1],
        "nothing rebuilt: served by the client E started with"
    );
}

/// Ends turn `n` of `t` (final) on a task of its own: the turn end may wait.
fn ending(h: &AdvisorHandle, t: &Transcript, n: usize) -> tokio::task::JoinHandle<()> {
    t.push(TranscriptMessage::user(format!("turn {n}")));
    let (h, t) = (h.clone(), t.clone());
    tokio::spawn(async move {
        let options = TurnEndOptions {
            will_continue: Some(false),
        };
        h.turn_end_with(&t, options)
            .await
            .expect("the session runs");
    })
}

#[actix::test]
async fn ca11_a_session_transition_releases_the_waits_and_new_ones_return_at_once_until_it_ends() {
    tokio::time::pause();
    let (model, mut arrivals, gate) = GatedModel::new(vec![], true);
    let gate = gate.expect("gated");
    let (h, _rx) = runtime(Arc::new(model), SyncBacklog::Strict, |_| {});
    let t = Transcript::from_messages([]);
    let first = ending(&h, &t, 1);
    next_request(&mut arrivals).await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(!first.is_finished(), "strict waits for the review");
    // A switch is being prepared: the wait is released, and a new one returns at once.
    h.session_transition(true).await.unwrap();
    first.await.expect("released");
    let second = ending(&h, &t, 2);
    tokio::time::timeout(Duration::from_secs(1), second)
        .await
        .expect("a turn end during the transition does not wait")
        .unwrap();
    // Cancelled: waits are back.
    h.session_transition(false).await.unwrap();
    let third = ending(&h, &t, 3);
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(!third.is_finished(), "the transition was cancelled");
    // Prepared again, then the switch: the new conversation waits again.
    h.session_transition(true).await.unwrap();
    third.await.expect("released");
    h.rewrite(RewriteKind::SessionSwitch).await.unwrap();
    let fourth = ending(&h, &t, 4);
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(!fourth.is_finished(), "the switch ended the pause");
    gate.add_permits(100);
    fourth.await.expect("the review ended");
}

/// Builds `late`'s client only once `known` is set (its provider registered late); every
/// other entry's at once.
struct LateModels {
    known: Arc<std::sync::atomic::AtomicBool>,
    models: HashMap<String, Arc<dyn ModelClient>>,
}

impl RosterModels for LateModels {
    fn build(&self, entry: &RosterAdvisor) -> Result<Arc<dyn ModelClient>, String> {
        if entry.slug == "late" && !self.known.load(std::sync::atomic::Ordering::SeqCst) {
            return Err("unknown provider `later`".into());
        }
        self.models
            .get(&entry.slug)
            .cloned()
            .ok_or_else(|| format!("no model for {}", entry.slug))
    }
}

#[actix::test]
async fn ca23_an_advisor_without_a_model_is_resolved_again_when_the_catalog_changes() {
    let early = ScriptedModel::new([]);
    let late = ScriptedModel::new([]);
    let known = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let models = LateModels {
        known: Arc::clone(&known),
        models: [
            (
                "early".to_string(),
                Arc::new(early.clone()) as Arc<dyn ModelClient>,
            ),
            ("late".to_string(), Arc::new(late.clone())),
        ]
        .into(),
    };
    let roster = Roster {
        advisors: vec![
            advisor("Early", "openai", "gpt-5", None),
            advisor("Late", "later", "model", None),
        ],
        ..Roster::default()
    };
    let (h, mut rx) = runtime(
        Arc::new(ScriptedModel::new([])),
        SyncBacklog::Below(1),
        |cfg| {
            cfg.model = None;
            cfg.roster = Some(RosterSetup {
                roster,
                models: Arc::new(models),
                reload: None,
            });
        },
    );
    let state = |status: &advisor::AdvisorStatus| {
        status
            .advisors
            .iter()
            .find(|a| a.slug == "late")
            .map(|a| (a.state.clone(), a.reason.clone()))
    };
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, false).await;
    assert_eq!(
        state(&h.status().await.unwrap()),
        Some((
            AdvisorState::NoModel,
            Some("unknown provider `later`".to_string())
        ))
    );
    // A change that does not make it known leaves it as it was, quietly.
    h.model_catalog_changed().await.unwrap();
    assert_eq!(
        state(&h.status().await.unwrap()).map(|s| s.0),
        Some(AdvisorState::NoModel)
    );
    known.store(true, std::sync::atomic::Ordering::SeqCst);
    h.model_catalog_changed().await.unwrap();
    assert_eq!(
        state(&h.status().await.unwrap()),
        Some((AdvisorState::Running, None))
    );
    turn(&h, &t, 2, false).await;
    let reviewed: Vec<Vec<usize>> = late
        .requests()
        .iter()
        .map(|r| turns_in(&last_user_text(r)))
        .collect();
    assert_eq!(reviewed, [vec![2]], "X4: it starts at the transcript's end");
    assert_eq!(early.request_count(), 2);
    let notices: Vec<_> = drain(&mut rx)
        .into_iter()
        .filter(|e| matches!(e, HostEvent::Notice { .. }))
        .collect();
    assert!(notices.is_empty(), "quietly: {notices:?}");
}

#[actix::test]
async fn ca23_the_unnamed_advisor_without_a_model_is_resolved_again_when_the_catalog_changes() {
    let late = ScriptedModel::new([]).with_id("later/model");
    let known = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (h, mut rx) = runtime(
        Arc::new(ScriptedModel::new([])),
        SyncBacklog::Below(1),
        |cfg| {
            cfg.model = None;
            let (known, late) = (Arc::clone(&known), late.clone());
            cfg.late_model = Some(Arc::new(move || {
                known
                    .load(std::sync::atomic::Ordering::SeqCst)
                    .then(|| Arc::new(late.clone()) as Arc<dyn ModelClient>)
            }));
        },
    );
    let t = Transcript::from_messages([]);
    turn(&h, &t, 1, false).await;
    assert_eq!(h.status().await.unwrap().model, None);
    // A change that does not make it known leaves it as it was, quietly.
    h.model_catalog_changed().await.unwrap();
    turn(&h, &t, 2, false).await;
    assert_eq!(h.status().await.unwrap().model, None);
    assert_eq!(late.request_count(), 0);
    known.store(true, std::sync::atomic::Ordering::SeqCst);
    h.model_catalog_changed().await.unwrap();
    assert_eq!(
        h.status().await.unwrap().model.as_deref(),
        Some("later/model")
    );
    turn(&h, &t, 3, false).await;
    let reviewed: Vec<Vec<usize>> = late
        .requests()
        .iter()
        .map(|r| turns_in(&last_user_text(r)))
        .collect();
    assert_eq!(reviewed, [vec![3]], "X4: it starts at the transcript's end");
    let notices: Vec<_> = drain(&mut rx)
        .into_iter()
        .filter(|e| matches!(e, HostEvent::Notice { .. }))
        .collect();
    assert!(notices.is_empty(), "quietly: {notices:?}");
}

#[actix::test]
async fn ca3_dropping_held_updates_past_the_cap_is_one_notice_and_a_status_counter() {
    let model = ScriptedModel::new([]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |cfg| {
        cfg.settings.review_mode = ReviewMode::AgentEnd;
    });
    let t = Transcript::from_messages([]);
    // The most updates one advisor holds (CA3).
    let cap = 512;
    for n in 1..=cap + 2 {
        turn(&h, &t, n, true).await;
    }
    let status = h.status().await.unwrap();
    assert_eq!(status.cadence.held_updates, cap);
    assert_eq!(status.cadence.dropped_updates, 2);
    assert!(
        status
            .render()
            .contains("2 held update(s) dropped past the cap"),
        "{}",
        status.render()
    );
    let notices: Vec<String> = drain(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            HostEvent::Notice { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(
        notices,
        [
            "advisor: more than 512 updates or 8 MiB held for the next scheduled review; the \
          oldest are dropped until it runs (see /advisor status)"
        ],
        "one notice for the batch"
    );
    assert_eq!(model.request_count(), 0, "nothing reviewed yet");
}
