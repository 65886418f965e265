//! Many sessions, one process (SPEC A6): sessions on a shared runtime stay apart, share
//! what does not depend on the session, go through one FIFO call limit per provider, and
//! free everything when disposed.

use crate::support::runtime as support;
use crate::support::sse_server::{self, ScriptedResponse};
use crate::support::virtual_clock::VirtualClock;
use crate::support::wire::Dialect;

use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use advisor::domain::host::{HostEvent, RewriteKind};
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::limit::{CallLimit, LimitedModel};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ModelClient, ModelFuture, ModelInfo, ModelRequest};
use advisor::providers::{build_client, Catalog};
use advisor::settings::{DeliveryPolicy, SyncBacklog};
use advisor::watchdog::WatchdogConfig;
use advisor::BacklogWait;
use advisor::HandleError;
use advisor::{AdvisorHandle, RuntimeConfig};
use advisor::{AdvisorRuntime, RuntimeOptions};
use serde_json::json;
use support::*;
use tokio::sync::mpsc::UnboundedReceiver;

fn runtime(arbiters: usize, limit: Option<usize>) -> AdvisorRuntime {
    AdvisorRuntime::new(RuntimeOptions {
        arbiters,
        max_concurrent_reviews: limit,
        ..RuntimeOptions::default()
    })
    .expect("runtime starts")
}

/// Names the session `id`: the sessions of a shared runtime each need their own.
fn named(id: impl Into<String>) -> impl FnOnce(&mut RuntimeConfig) {
    let id = id.into();
    move |cfg| cfg.primary_session_id = id
}

fn notes(advice: &advisor::domain::host::StepAdvice) -> Vec<String> {
    advice
        .aside
        .iter()
        .flat_map(|a| a.notes.iter().map(|n| n.note.clone()))
        .collect()
}

/// Waits until every actor holding the session's host events is gone: the channel closes
/// only when the supervisor, the router and every child holding a router link dropped.
async fn closed(events: &mut UnboundedReceiver<HostEvent>) {
    let end = tokio::time::timeout(Duration::from_secs(60), async {
        while events.recv().await.is_some() {}
    });
    end.await.expect("the session's actors are gone");
}

#[tokio::test]
async fn a6_two_sessions_on_one_arbiter_do_not_see_each_others_advice_resets_or_settings() {
    let rt = runtime(1, None);
    let model_a = ScriptedModel::new([
        ScriptedReply::advise("a1", "Session A: check the migration.", Some("nit")),
        ScriptedReply::text(""),
    ]);
    let model_b = ScriptedModel::new([
        ScriptedReply::advise("b1", "Session B: the test is skipped.", Some("nit")),
        ScriptedReply::text(""),
    ]);
    let (a, _ea) = rt.open(config(
        Arc::new(model_a.clone()),
        SyncBacklog::Below(1),
        named("a"),
    ));
    let (b, _eb) = rt.open(config(
        Arc::new(model_b.clone()),
        SyncBacklog::Below(1),
        |cfg| {
            cfg.primary_session_id = "b".into();
            cfg.settings.policy = DeliveryPolicy::Reconfirm;
        },
    ));
    assert_eq!(rt.load(), vec![2], "both sessions share the one arbiter");

    let ta = Transcript::from_messages([TranscriptMessage::user("session A first turn")]);
    let tb = Transcript::from_messages([TranscriptMessage::user("session B first turn")]);
    a.turn_end(&ta).await.unwrap();
    b.turn_end(&tb).await.unwrap();
    assert_eq!(
        notes(&a.step_boundary().await.unwrap()),
        ["Session A: check the migration."]
    );
    // B runs `reconfirm`: its nit goes out at once, tagged; A's never reaches it.
    assert_eq!(
        notes(&b.step_boundary().await.unwrap()),
        ["Session B: the test is skipped."]
    );
    assert_eq!(a.status().await.unwrap().policy, DeliveryPolicy::Interrupt);
    assert_eq!(b.status().await.unwrap().policy, DeliveryPolicy::Reconfirm);

    // A reset of A replays A's whole transcript; B's next review sees only its delta.
    a.rewrite(RewriteKind::Compaction).await.unwrap();
    ta.push(TranscriptMessage::user("session A second turn"));
    tb.push(TranscriptMessage::user("session B second turn"));
    a.turn_end(&ta).await.unwrap();
    b.turn_end(&tb).await.unwrap();
    let last_a = last_user_text(model_a.requests().last().unwrap());
    let last_b = last_user_text(model_b.requests().last().unwrap());
    assert!(last_a.contains("session A first turn") && last_a.contains("second turn"));
    assert!(last_b.contains("session B second turn") && !last_b.contains("first turn"));
    for request in model_a.requests() {
        assert!(!format!("{request:?}").contains("session B"));
    }
    a.dispose().await.unwrap();
    // B keeps working after A is closed.
    assert_eq!(b.status().await.unwrap().agent.reviews, 2);
    b.dispose().await.unwrap();
    assert_eq!(rt.sessions(), 0);
}

/// Panics on its first call, then answers from the script.
struct PanicsOnce {
    fired: AtomicBool,
    script: ScriptedModel,
}

impl ModelClient for PanicsOnce {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        let first = !self.fired.swap(true, Ordering::SeqCst);
        let answer = self.script.complete(request);
        Box::pin(async move {
            if first {
                panic!("the model client blew up");
            }
            answer.await
        })
    }
    fn info(&self) -> ModelInfo {
        self.script.info()
    }
}

#[tokio::test]
async fn f5_a_panic_in_one_session_leaves_the_others_on_its_arbiter_untouched() {
    // Model calls on the arbiter itself, and on the runtime's call pool.
    for call_threads in [0, 1] {
        let rt = AdvisorRuntime::new(RuntimeOptions {
            arbiters: 1,
            call_threads,
            ..RuntimeOptions::default()
        })
        .unwrap();
        panic_in_one_session(&rt).await;
    }
}

async fn panic_in_one_session(rt: &AdvisorRuntime) {
    // The panicking call takes the script's first answer; A's later reviews get the rest.
    let script = ScriptedModel::new([
        ScriptedReply::text(""),
        ScriptedReply::advise(
            "a1",
            "Session A is back: check the migration.",
            Some("concern"),
        ),
        ScriptedReply::text(""),
    ]);
    let broken = Arc::new(PanicsOnce {
        fired: AtomicBool::new(false),
        script: script.clone(),
    });
    let (a, mut ea) = rt.open(config(broken, SyncBacklog::Off, named("a")));
    a.run_state(false).await.unwrap();
    let healthy = ScriptedModel::new([
        ScriptedReply::advise("b1", "Still here.", Some("nit")),
        ScriptedReply::text(""),
    ]);
    let (b, _eb) = rt.open(config(
        Arc::new(healthy.clone()),
        SyncBacklog::Below(1),
        named("b"),
    ));
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    a.turn_end(&t).await.unwrap();
    // A's handle keeps answering after the panic inside its review.
    assert!(a.status().await.is_ok());
    b.turn_end(&t).await.unwrap();
    assert_eq!(notes(&b.step_boundary().await.unwrap()), ["Still here."]);
    assert_eq!(b.status().await.unwrap().agent.reviews, 1);

    // A recovers: its next turn is reviewed and its concern wakes the idle primary.
    t.push(TranscriptMessage::user("A's second turn"));
    a.turn_end(&t).await.unwrap();
    let card = loop {
        match next_event(&mut ea).await {
            HostEvent::Wake { card } => break card,
            HostEvent::Notice { .. } => continue,
            other => panic!("expected A's wake, got {other:?}"),
        }
    };
    assert_eq!(
        card.notes[0].note,
        "Session A is back: check the migration."
    );
    // The wake is raised inside the review; the review counts once it has finished.
    assert_eq!(a.await_drain().await.unwrap(), BacklogWait::Drained);
    // P7: the batch the panic failed is retried as it was, then the new turn is reviewed.
    let requests = script.requests();
    assert!(!last_user_text(&requests[1]).contains("A's second turn"));
    assert!(
        last_user_text(&requests[2]).contains("A's second turn"),
        "the restarted session reviewed the new turn"
    );
    assert!(a.status().await.unwrap().agent.reviews >= 1);
    // B saw nothing of A.
    assert!(healthy
        .requests()
        .iter()
        .all(|r| !format!("{r:?}").contains("A's second turn")));
    a.dispose().await.unwrap();
    b.dispose().await.unwrap();
}

#[tokio::test]
async fn a6_the_call_limit_holds_across_all_sessions_of_the_runtime() {
    let rt = runtime(2, Some(3));
    let (gated, mut arrivals, gate) = GatedModel::new(Vec::new(), true);
    let gate = gate.unwrap();
    let model = Counting::new(gated);
    let sessions: Vec<_> = (0..20)
        .map(|i| {
            rt.open(config(
                Arc::new(model.clone()),
                SyncBacklog::Below(1),
                named(format!("s{i}")),
            ))
        })
        .collect();
    let mut turns = Vec::new();
    for (handle, _) in &sessions {
        let handle = handle.clone();
        turns.push(tokio::spawn(async move {
            let t = Transcript::from_messages([TranscriptMessage::user("one turn")]);
            handle.turn_end(&t).await.unwrap();
        }));
    }
    // Three calls reach the model; the others queue for a slot.
    for _ in 0..3 {
        next_request(&mut arrivals).await;
    }
    let calls = &rt.calls()[0];
    assert_eq!(
        (calls.provider.as_str(), calls.limit, calls.in_flight),
        ("scripted", 3, 3)
    );
    // Then one more arrives for every call let through.
    for _ in 3..20 {
        gate.add_permits(1);
        next_request(&mut arrivals).await;
    }
    gate.add_permits(3);
    for turn in turns {
        turn.await.unwrap();
    }
    assert_eq!(model.most(), 3, "never more than the limit");
    let calls = &rt.calls()[0];
    assert_eq!((calls.in_flight, calls.waiting, calls.peak), (0, 0, 3));
    assert_eq!(calls.started, 20);
    let (handle, _) = &sessions[0];
    let status = handle.status().await.unwrap();
    assert_eq!(status.agent.reviews, 1);
    let shown = status
        .provider_calls
        .clone()
        .expect("C3 shows the provider's calls");
    assert_eq!((shown.limit, shown.in_flight, shown.waiting), (3, 0, 0));
    assert!(status
        .render()
        .contains("provider scripted: 0 of 3 calls in flight, 0 waiting"));
    for (handle, _) in &sessions {
        handle.dispose().await.unwrap();
    }
}

/// Answers after `delay` of (virtual) time.
#[derive(Clone)]
struct Slow {
    delay: Duration,
    script: ScriptedModel,
}

impl ModelClient for Slow {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        let delay = self.delay;
        let answer = self.script.complete(request);
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            answer.await
        })
    }
    fn info(&self) -> ModelInfo {
        self.script.info()
    }
}

#[actix::test]
async fn a6_a_busy_session_does_not_delay_another_sessions_review_beyond_its_turn_in_line() {
    tokio::time::pause();
    // One slot for both sessions, one second per call.
    let limit = Arc::new(CallLimit::new("scripted", 1));
    let slow = |script: &ScriptedModel| -> Arc<dyn ModelClient> {
        Arc::new(LimitedModel::new(
            Arc::new(Slow {
                delay: Duration::from_secs(1),
                script: script.clone(),
            }),
            limit.clone(),
        ))
    };
    let busy_script = ScriptedModel::new([]);
    let quiet_script = ScriptedModel::new([]);
    let (busy, _ra) = support::runtime(slow(&busy_script), SyncBacklog::Off, named("busy"));
    let (quiet, _rb) = support::runtime(slow(&quiet_script), SyncBacklog::Below(1), named("quiet"));
    let t = Transcript::from_messages([TranscriptMessage::user("busy turn 0")]);
    busy.turn_end(&t).await.unwrap();
    for i in 1..100 {
        t.push(TranscriptMessage::user(format!("busy turn {i}")));
        busy.turn_end(&t).await.unwrap();
    }
    assert_eq!(busy.status().await.unwrap().agent.backlog, 100);
    let started = tokio::time::Instant::now();
    let q = Transcript::from_messages([TranscriptMessage::user("quiet turn")]);
    quiet.turn_end(&q).await.unwrap();
    // In line behind at most the busy session's one running call: its other 99 turns wait
    // as one coalesced review, queued after the quiet one.
    // (Virtual time; the timer's 1 ms ticks add a little to each second.)
    let waited = started.elapsed();
    assert!(waited < Duration::from_millis(2100), "waited {waited:?}");
    assert_eq!(quiet.status().await.unwrap().agent.reviews, 1);
    assert_eq!(quiet_script.request_count(), 1);
    // The busy session is served too, and all of its turns are reviewed.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let status = busy.status().await.unwrap();
    assert_eq!(status.agent.backlog, 0);
    assert!(busy_script.request_count() <= 3, "coalesced reviews");
    assert_eq!(limit.counts().peak, 1);
}

#[actix::test]
async fn a6_s1_waiting_for_a_call_slot_is_not_a_failure_and_holds_the_sync_wait_like_a_slow_model()
{
    tokio::time::pause();
    const IDLE: Duration = Duration::from_secs(20);
    const TOTAL: Duration = Duration::from_secs(60);
    const NOTE: &str = "The fetcher retries without a delay.";
    let dialect = Dialect::OpenAi;
    let server = Arc::new(
        sse_server::start(vec![
            ScriptedResponse::sse(
                &dialect.advise_answer("call_1", &json!({"note": NOTE, "severity": "concern"})),
            ),
            ScriptedResponse::sse(&dialect.answer("")),
        ])
        .await,
    );
    // A real client with a 20 s idle timeout and a 60 s total limit, behind a limit of one
    // call (`advisor.maxConcurrentReviews: 1`).
    let spec = dialect.spec(&server, IDLE, TOTAL);
    let client = build_client(&spec, &Catalog::builtin().unwrap(), &|_| None).unwrap();
    let limit = Arc::new(CallLimit::new("openrouter", 1));
    let model = Arc::new(LimitedModel::new(client, limit.clone()));
    let (handle, mut events) = support::runtime(model, SyncBacklog::Below(1), |cfg| {
        cfg.primary_session_id = "waiting".into();
        cfg.settings.request_timeout = TOTAL;
        cfg.settings.max_concurrent_reviews = 1;
    });
    handle.run_state(false).await.unwrap();

    // Another session's call holds the only slot for 200 s, far past both timeouts.
    let held = limit.acquire().await;
    let t = Transcript::from_messages([TranscriptMessage::user("add retries to the fetcher")]);
    let started = tokio::time::Instant::now();
    handle.turn_end(&t).await.unwrap();
    // S1: the turn end waits its 30 s cap, as for a slow model; a failing advisor would
    // have released it at once (S2).
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(30) && waited < Duration::from_secs(31),
        "waited {waited:?}"
    );
    let counts = limit.counts();
    assert_eq!(
        (counts.in_flight, counts.waiting),
        (1, 1),
        "the review is in line"
    );
    tokio::time::sleep_until(started + Duration::from_secs(200)).await;
    let status = handle.status().await.unwrap();
    assert_eq!(
        (status.failures, status.consecutive_failures),
        (0, 0),
        "200 s in line is no failure"
    );
    assert!(!status.agent.failing && status.paused.is_none());
    assert_eq!(server.request_count(), 0, "nothing sent without a slot");
    // No failure notice either: only S1's word that the agent waits for the review.
    let said: Vec<HostEvent> = drain(&mut events);
    assert!(
        matches!(&said[..], [HostEvent::Notice { text, .. }] if text.contains("advisor.syncBacklog")),
        "{said:?}"
    );

    // The slot comes free: the queued review runs and its concern wakes the primary.
    let clock = VirtualClock::start(Arc::clone(&server));
    drop(held);
    match next_event(&mut events).await {
        HostEvent::Wake { card } => assert_eq!(card.notes[0].note, NOTE),
        other => panic!("expected the queued review's wake, got {other:?}"),
    }
    // A turn with nothing new waits for the drain (S1).
    handle.turn_end(&t).await.unwrap();
    let status = handle.status().await.unwrap();
    assert_eq!(
        (
            status.failures,
            status.consecutive_failures,
            status.agent.reviews,
            status.agent.backlog
        ),
        (0, 0, 1, 0),
        "failures, consecutive, reviews, backlog"
    );
    assert_eq!(status.deliveries.wake, 1);
    assert_eq!(
        server.request_count(),
        1,
        "its advise-only turn ends the review (P2)"
    );
    assert!(clock.arrival(0).await >= started + Duration::from_secs(200));
    assert_eq!(limit.counts().peak, 1);
    handle.dispose().await.unwrap();
}

#[tokio::test]
async fn a6_r2_dispose_answers_a_turn_end_still_waiting_before_the_session_closes() {
    let rt = runtime(1, None);
    let (gated, mut arrivals, gate) = GatedModel::new(Vec::new(), true);
    let (handle, mut events) = rt.open(config(Arc::new(gated), SyncBacklog::Below(1), named("s")));
    let waiting = {
        let handle = handle.clone();
        tokio::spawn(async move {
            let t = Transcript::from_messages([TranscriptMessage::user("held review")]);
            handle.turn_end(&t).await
        })
    };
    // The review is held by the model: the turn end waits on the backlog (S1).
    next_request(&mut arrivals).await;
    handle.dispose().await.unwrap();
    assert_eq!(
        waiting.await.unwrap(),
        Ok(()),
        "dispose releases the wait; the close does not drop its answer"
    );
    // The held model call ends; then nothing of the session is left.
    gate.expect("gated").add_permits(1);
    closed(&mut events).await;
    assert_eq!(rt.sessions(), 0);
}

/// A4, R2: a turn end that does not wait for the runtime (syncBacklog off) still tells the
/// host, from every clone of the handle, that a disposed session is closed, on a shared
/// runtime and on a dedicated thread alike.
#[tokio::test]
async fn a4_r2_a_turn_end_that_does_not_wait_says_a_disposed_session_is_closed() {
    let rt = runtime(1, None);
    let model: Arc<dyn ModelClient> = Arc::new(ScriptedModel::new([]));
    let t = Transcript::from_messages([TranscriptMessage::user("a turn")]);
    let (shared, _events) = rt.open(config(model.clone(), SyncBacklog::Off, named("open")));
    let (dedicated, _dedicated_events) =
        AdvisorHandle::spawn_dedicated(config(model, SyncBacklog::Off, named("own")))
            .await
            .unwrap();
    for h in [shared, dedicated] {
        let other = h.clone();
        h.turn_end(&t).await.unwrap();
        h.dispose().await.unwrap();
        assert_eq!(other.turn_end(&t).await, Err(HandleError::Stopped));
        assert_eq!(h.turn_end(&t).await, Err(HandleError::Stopped));
    }
}

#[tokio::test]
async fn a6_open_and_dispose_frees_everything_the_sessions_held() {
    // 1,000 sessions keep the debug-build test quick; tests/memory.rs opens and disposes
    // 10,000 and counts the heap, and the sessions bench measures RSS.
    const SESSIONS: usize = 1000;
    let rt = runtime(2, None);
    let model: Arc<dyn ModelClient> = Arc::new(ScriptedModel::new([]));
    let mut sessions = Vec::with_capacity(SESSIONS);
    for i in 0..SESSIONS {
        sessions.push(rt.open(config(
            model.clone(),
            SyncBacklog::Off,
            named(format!("s{i}")),
        )));
    }
    assert_eq!(rt.sessions(), SESSIONS);
    assert_eq!(rt.load(), vec![SESSIONS / 2; 2], "placed evenly");
    let t = Transcript::from_messages([TranscriptMessage::user("a turn")]);
    for (handle, _) in sessions.iter().take(50) {
        handle.turn_end(&t).await.unwrap();
    }
    for (handle, _) in &sessions {
        handle.dispose().await.unwrap();
    }
    assert_eq!(rt.sessions(), 0);
    for (handle, mut events) in sessions {
        drop(handle);
        closed(&mut events).await;
    }
    // Nothing of any session still holds the model: every config and agent is gone.
    assert_eq!(Arc::strong_count(&model), 1);
}

#[tokio::test]
async fn a6_sessions_in_one_repository_share_one_watchdog_load() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    fs::create_dir_all(repo.join(".git")).unwrap();
    fs::write(repo.join("WATCHDOG.md"), "Never touch the vendored SDK.").unwrap();
    let rt = runtime(2, None);
    let mut scripts = Vec::new();
    let mut handles = Vec::new();
    for i in 0..3 {
        let script = ScriptedModel::new([]);
        let cfg = config(Arc::new(script.clone()), SyncBacklog::Below(1), |cfg| {
            cfg.primary_session_id = format!("w{i}");
            cfg.watchdog = Some(WatchdogConfig {
                cwd: repo.clone(),
                agent_dir: Some(dir.path().join("agent")),
                home: Some(dir.path().to_path_buf()),
                instructions: Default::default(),
            });
        });
        scripts.push(script);
        handles.push(rt.open(cfg));
    }
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    for (handle, _) in &handles {
        handle.turn_end(&t).await.unwrap();
    }
    for script in &scripts {
        let system = &script.requests()[0].system;
        assert!(system.contains("Never touch the vendored SDK."), "{system}");
    }
    let stats = rt.shared().watchdog_cache().stats();
    assert_eq!((stats.loads, stats.files_read, stats.shared), (1, 1, 2));
    for (handle, _) in &handles {
        handle.dispose().await.unwrap();
    }
}

#[tokio::test]
async fn x5_sessions_on_the_shared_runtime_redact_with_the_shared_patterns() {
    let rt = runtime(1, None);
    let script = ScriptedModel::new([]);
    let (h, _e) = rt.open(config(
        Arc::new(script.clone()),
        SyncBacklog::Below(1),
        named("x"),
    ));
    let t = Transcript::from_messages([TranscriptMessage::user(
        "export OPENAI_API_KEY=sk-proj-Xf93kLm2Qp8Zr7Tt4Vb1Nc6Hd0Jw5Ys",
    )]);
    h.turn_end(&t).await.unwrap();
    let sent = last_user_text(&script.requests()[0]);
    assert!(sent.contains("[redacted:"), "{sent}");
    assert!(!sent.contains("Xf93kLm2Qp8Zr7Tt4Vb1Nc6Hd0Jw5Ys"));
    h.dispose().await.unwrap();
}

#[tokio::test]
async fn a6_spawn_opens_on_the_default_runtime_and_dispose_closes_the_session() {
    let script = ScriptedModel::new([ScriptedReply::advise("1", "Via spawn.", Some("nit"))]);
    let (h, mut events) =
        AdvisorHandle::spawn(config(Arc::new(script), SyncBacklog::Below(1), named("sp")))
            .await
            .unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    assert_eq!(notes(&h.step_boundary().await.unwrap()), ["Via spawn."]);
    assert!(
        !h.provider_calls().is_empty(),
        "it runs behind the call limits"
    );
    h.dispose().await.unwrap();
    assert!(h.status().await.is_err(), "a disposed session is closed");
    drop(h);
    closed(&mut events).await;
}

#[tokio::test]
async fn a6_dropping_the_last_handle_closes_the_session() {
    let rt = runtime(1, None);
    let model: Arc<dyn ModelClient> = Arc::new(ScriptedModel::new([]));
    let (h, mut events) = rt.open(config(model.clone(), SyncBacklog::Below(1), named("d")));
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    let clone = h.clone();
    drop(h);
    assert_eq!(rt.sessions(), 1, "a clone still holds it");
    drop(clone);
    assert_eq!(rt.sessions(), 0);
    closed(&mut events).await;
    assert_eq!(Arc::strong_count(&model), 1);
}
