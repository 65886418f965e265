//! A tokio host serving many sessions through one shared runtime (SPEC A6).
//!
//! The process creates one [`AdvisorRuntime`] at start-up: a fixed pool of arbiters (one
//! per core) plus what every session shares (secret patterns, model catalog, one HTTP
//! client per provider endpoint, one call limit per provider, WATCHDOG.md results). Each
//! incoming session is then `open`ed on it; no thread is started per session. Here 500
//! toy sessions run five turns each, concurrently, as tasks of the host's own runtime:
//!
//! ```text
//! cargo run --example many_sessions
//! ```
//!
//! The advisor model is scripted so the example runs offline; a real host builds it once
//! per provider with `runtime.shared().build_client(&spec, &key_lookup)` and hands every
//! session a clone of the `Arc`.

use std::sync::Arc;

use advisor::domain::host::HostEvent;
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::RuntimeConfig;
use advisor::{AdvisorRuntime, RuntimeOptions};

const SESSIONS: usize = 500;
const TURNS: usize = 5;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = AdvisorRuntime::new(RuntimeOptions {
        // At most eight model calls at once across all sessions, per provider.
        max_concurrent_reviews: Some(8),
        ..RuntimeOptions::default()
    })?;

    let mut sessions = Vec::with_capacity(SESSIONS);
    for i in 0..SESSIONS {
        let runtime = runtime.clone();
        sessions.push(tokio::spawn(
            async move { serve_session(&runtime, i).await },
        ));
    }
    let mut delivered = 0;
    for session in sessions {
        delivered += session.await??;
    }

    println!(
        "{SESSIONS} sessions x {TURNS} turns on {} arbiters: {delivered} notes delivered",
        runtime.arbiters()
    );
    for calls in runtime.calls() {
        println!(
            "provider {}: {} calls, at most {} at once (limit {})",
            calls.provider, calls.started, calls.peak, calls.limit
        );
    }
    println!("sessions still open: {}", runtime.sessions());
    Ok(())
}

/// One session's life: open, a few turns with a step boundary after each, close.
async fn serve_session(runtime: &AdvisorRuntime, i: usize) -> Result<usize, advisor::HandleError> {
    // Every third review raises a nit; the others stay silent.
    let replies = (0..TURNS).map(|turn| {
        if turn.is_multiple_of(3) {
            ScriptedReply::advise(
                &format!("{i}-{turn}"),
                &format!("Session {i}: add a test for step {turn}."),
                Some("nit"),
            )
        } else {
            ScriptedReply::text("")
        }
    });
    let model = ScriptedModel::new(replies.collect::<Vec<_>>());
    let mut config = RuntimeConfig::new(format!("session-{i}"), ".", Some(Arc::new(model)));
    config.settings.sync_backlog = advisor::settings::SyncBacklog::Below(1);
    let (advisor, mut events) = runtime.open(config);

    let transcript = Transcript::from_messages([TranscriptMessage::user("Tidy up the parser")]);
    let mut delivered = 0;
    advisor.run_state(true).await?;
    for turn in 0..TURNS {
        transcript.push(TranscriptMessage::user(format!("step {turn}")));
        advisor.turn_end(&transcript).await?;
        let advice = advisor.step_boundary().await?;
        delivered += advice.deliveries().map(|d| d.notes.len()).sum::<usize>();
    }
    advisor.run_state(false).await?;
    advisor.dispose().await?;
    while let Ok(event) = events.try_recv() {
        if let HostEvent::Notice { text, .. } = event {
            println!("session {i}: {text}");
        }
    }
    Ok(delivered)
}
