//! The emission guard through the host handle (D8, D10, T6): the note
//! cap, the note budget per session update a review covers, and what the host, the advisor
//! model and status see.

use crate::support::runtime as support;

use std::sync::Arc;

use advisor::domain::advice::Channel;
use advisor::domain::host::HostEvent;
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ChatMessage, ModelRequest};
use advisor::settings::SyncBacklog;
use advisor::BacklogWait;
use advisor::DropReason;
use serde_json::json;
use support::*;

/// The tool results of a request with their error flags, in order.
fn tool_results_with_flags(request: &ModelRequest) -> Vec<(String, bool)> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::ToolResult { text, is_error, .. } => Some((text.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[actix::test]
async fn d10_a_100_kb_note_is_refused_with_a_tool_error_and_counted_too_long() {
    let huge = "The loop never terminates. ".repeat(4000);
    assert!(huge.len() > 100_000);
    let model = ScriptedModel::new([
        ScriptedReply::advise("a", &huge, Some("blocker")),
        ScriptedReply::text(""),
    ]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |_| {});
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    // The primary gets nothing: no steer, no aside, no event.
    assert!(h.step_boundary().await.unwrap().is_empty());
    h.run_state(false).await.unwrap();
    let status = h.status().await.unwrap();
    assert!(drain(&mut rx).is_empty());
    assert_eq!(
        status.deliveries.dropped.get(&DropReason::TooLong),
        Some(&1)
    );
    assert_eq!(status.deliveries.delivered(), 0);
    assert_eq!(status.deliveries.raised(), 1);
    let shown = status.render();
    assert!(shown.contains("dropped: tooLong 1\n"), "{shown}");
    // The advisor reads a tool error asking for a shorter note.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results_with_flags(&requests[1]);
    assert_eq!(results.len(), 1);
    let (text, is_error) = &results[0];
    assert!(is_error, "a tool error: {text}");
    assert!(text.contains("longer than 2000 characters"), "{text}");
    assert!(text.contains("shorter note"), "{text}");
    assert!(text.len() < 500, "the answer does not echo the note");
    h.dispose().await.unwrap();
}

#[actix::test]
async fn d8_g2_a_review_of_two_coalesced_updates_gets_twice_the_budget_and_blockers_always_pass() {
    let advise = |id: &str, note: &str, severity: &str| {
        (
            id.to_string(),
            json!({ "note": note, "severity": severity }),
        )
    };
    let calls = [
        advise("1", "tidy nit one", "nit"),
        advise("2", "tidy nit two", "nit"),
        advise("3", "tidy nit three", "nit"),
        advise("4", "tidy nit four", "nit"),
        advise("5", "tidy nit five", "nit"),
        advise("6", "The migration drops a column.", "blocker"),
        advise("7", "The loop never ends on empty input.", "concern"),
    ];
    // Not advise-only, so the model is called again and its last request shows every
    // answer (an advise-only turn would end the review, P2).
    let find = ("8".to_string(), json!({"pattern": "*.nothing"}));
    let mut calls: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "advise", args.clone()))
        .collect();
    calls.push((find.0.as_str(), "find", find.1.clone()));
    let (model, mut arrivals, gate) = GatedModel::new(
        vec![
            // Review 1 (turn 1): silent.
            ScriptedReply::text(""),
            // Review 2 (turns 2 and 3, coalesced): seven notes, then done.
            ScriptedReply::tool_calls(&calls),
            ScriptedReply::text(""),
        ],
        true,
    );
    let gate = gate.expect("gated");
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Off, |cfg| {
        cfg.settings.max_notes_per_update = 2;
        cfg.settings.immune_turns = 0;
    });
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    h.turn_end(&t).await.unwrap();
    // Review 1 holds turn 1 alone; turns 2 and 3 queue behind it and coalesce (G2).
    next_request(&mut arrivals).await;
    t.push(TranscriptMessage::user("next"));
    h.turn_end(&t).await.unwrap();
    t.push(TranscriptMessage::user("more"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(h.status().await.unwrap().agent.backlog, 3);
    gate.add_permits(3);
    assert_eq!(h.await_drain().await.unwrap(), BacklogWait::Drained);
    let requests = model.script.requests();
    assert_eq!(
        requests.len(),
        3,
        "two reviews, the second with a tool round"
    );
    assert!(
        last_user_text(&requests[1])
            .matches("### Session update")
            .count()
            == 2,
        "review 2 covers two updates"
    );
    // Budget 2 × 2: four nits pass, the fifth is over; the blocker is never counted; the
    // concern over budget displaces the newest nit the host has not taken.
    let results: Vec<String> = tool_results_with_flags(&requests[2])
        .into_iter()
        .take(7)
        .map(|(text, _)| text)
        .collect();
    let over = "Advice ignored: at most 2 notes per update. Finish the review.";
    assert_eq!(
        results,
        [
            "Recorded.",
            "Recorded.",
            "Recorded.",
            "Recorded.",
            over,
            "Recorded.",
            "Recorded."
        ]
    );
    let step = h.step_boundary().await.unwrap();
    let aside: Vec<String> = step
        .aside
        .expect("the nits")
        .notes
        .into_iter()
        .map(|a| a.note)
        .collect();
    assert_eq!(aside, ["tidy nit one", "tidy nit two", "tidy nit three"]);
    let steers: Vec<(Channel, String)> = step
        .steers
        .iter()
        .map(|d| (d.channel, d.notes[0].note.clone()))
        .collect();
    assert_eq!(
        steers,
        [
            (Channel::Steer, "The migration drops a column.".to_string()),
            (
                Channel::Steer,
                "The loop never ends on empty input.".to_string()
            )
        ]
    );
    let status = h.status().await.unwrap();
    assert_eq!(
        status.deliveries.dropped.get(&DropReason::OverBudget),
        Some(&2)
    );
    assert_eq!(status.deliveries.raised(), 7);
    assert!(drain(&mut rx)
        .iter()
        .all(|e| matches!(e, HostEvent::SteerReady)));
    h.dispose().await.unwrap();
}
