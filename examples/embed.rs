//! Embedding the advisor in a small host loop (SPEC A3, A4).
//!
//! A toy "primary agent" runs three turns; after each one the host hands the transcript to
//! the advisor, polls advice at the step boundary, and prints what it would fold in. The
//! advisor model here is scripted, so the example runs offline:
//!
//! ```text
//! cargo run --example embed
//! ```
//!
//! A real host builds the model with `advisor::providers::build_client` instead.

use std::sync::Arc;

use advisor::domain::host::HostEvent;
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::settings::SyncBacklog;
use advisor::{AdvisorHandle, RuntimeConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedModel::new([
        ScriptedReply::text(""),
        ScriptedReply::advise(
            "1",
            "The test only checks the happy path; add an empty-input case.",
            Some("nit"),
        ),
        ScriptedReply::text(""),
        ScriptedReply::advise(
            "2",
            "You deleted the migration the user asked to keep.",
            Some("blocker"),
        ),
        ScriptedReply::text(""),
    ]);
    let mut config = RuntimeConfig::new(
        "demo-session",
        std::env::current_dir()?,
        Some(Arc::new(model)),
    );
    // Wait for each review so the output below is deterministic.
    config.settings.sync_backlog = SyncBacklog::Below(1);
    let (advisor, mut events) = AdvisorHandle::spawn(config).await?;

    let transcript = Transcript::new();
    transcript.push(TranscriptMessage::user(
        "Add input validation to parse_config and test it.",
    ));
    advisor.run_state(true).await?;
    for turn in [
        "I added a check for missing keys.",
        "I wrote a test for a valid file.",
        "I removed the old migration to simplify.",
    ] {
        transcript.push(serde_json::from_value(serde_json::json!({
            "role": "assistant",
            "content": [{"type": "text", "text": turn}],
            "stopReason": "stop"
        }))?);
        advisor.turn_end(&transcript).await?;
        let step = advisor.step_boundary().await?;
        for delivery in step.deliveries() {
            println!("[{}] {}", delivery.channel.as_str(), delivery.content);
            transcript.push(delivery.to_message());
        }
    }
    advisor.run_state(false).await?;
    advisor.turn_end(&transcript).await?;
    while let Ok(event) = events.try_recv() {
        match event {
            HostEvent::Wake { card } | HostEvent::Card { card } => {
                println!("[{}] {}", card.channel.as_str(), card.content)
            }
            HostEvent::Notice { text, .. } => eprintln!("notice: {text}"),
            HostEvent::SteerReady => {}
        }
    }
    println!("{}", advisor.status().await?.render());
    advisor.dispose().await?;
    Ok(())
}
