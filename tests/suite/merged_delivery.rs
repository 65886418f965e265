//! The merged final-boundary delivery through the handle's mailbox (CA13–CA19): the
//! scenarios CA-S4 (one advisor), CA-S5 and CA-S6 of SPEC §16, in virtual time.

use crate::support::runtime as support;

use std::sync::Arc;
use std::time::Duration;

use advisor::domain::host::{HostEvent, RewriteKind};
use advisor::domain::transcript::{Transcript, TranscriptMessage};
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::replay::merged_guidance;
use advisor::settings::{DeliveryPolicy, SyncBacklog};
use serde_json::json;
use support::*;

use super::review_core::{final_answer, tool_call_turn, tool_output};

/// The element CA14 prescribes for the unnamed advisor's note.
fn element(severity: &str, ago: u64, note: &str) -> String {
    let ago = if ago > 0 {
        format!(" turns_ago=\"{ago}\"")
    } else {
        String::new()
    };
    format!("<advisory severity=\"{severity}\"{ago} guidance=\"weigh, don't blindly obey\">\n{note}\n</advisory>")
}

/// One model turn raising each `(note, severity)` with `advise` (P2: the review ends there).
fn advising(notes: &[(&str, &str)]) -> ScriptedReply {
    let calls: Vec<(String, serde_json::Value)> = notes
        .iter()
        .enumerate()
        .map(|(i, (note, sev))| (format!("a{i}"), json!({"note": note, "severity": sev})))
        .collect();
    let calls: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "advise", args.clone()))
        .collect();
    ScriptedReply::tool_calls(&calls)
}

/// CA-S4 with one advisor: its review of WIP `TurnEnd` 2 defers nit n2; at the final
/// `TurnEnd` 4 it raises concern cA and blocker bB: one message — guidance, bB, cA, then n2
/// with `turns_ago="2"` — as exactly one continuation (a steer: the run still takes
/// steering).
#[actix::test]
async fn ca14_ca16_ca_s4_the_final_turn_end_sends_one_merged_continuation() {
    tokio::time::pause();
    let model = ScriptedModel::new([
        ScriptedReply::text(""),
        advising(&[("nit n2: tidy the imports", "nit")]),
        ScriptedReply::text(""),
        advising(&[
            ("concern cA: the route lacks auth", "concern"),
            ("blocker bB: the migration drops data", "blocker"),
        ]),
    ]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |c| {
        c.settings.policy = DeliveryPolicy::Defer;
        c.settings.immune_turns = 3;
    });
    h.user_prompt().await.unwrap();
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("add the endpoint")]);
    for step in 1..=3 {
        t.push(tool_call_turn(&format!("step {step}")));
        t.push(tool_output("ok"));
        h.turn_end(&t).await.unwrap();
        assert!(drain(&mut rx).is_empty(), "turn {step}: nothing yet");
    }
    t.push(final_answer("The endpoint is added."));
    h.turn_end(&t).await.unwrap();
    // The turn end returned after the window closed: one continuation, nothing else.
    assert_eq!(drain(&mut rx), vec![HostEvent::SteerReady]);
    let step = h.step_boundary().await.unwrap();
    assert!(step.aside.is_none());
    assert_eq!(step.steers.len(), 1, "one message");
    let expected = [
        merged_guidance().to_string(),
        element("blocker", 0, "blocker bB: the migration drops data"),
        element("concern", 0, "concern cA: the route lacks auth"),
        element("nit", 2, "nit n2: tidy the imports"),
    ]
    .join("\n");
    assert_eq!(step.steers[0].content, expected);
    let status = h.status().await.unwrap();
    assert_eq!(status.deliveries.steer, 3);
    assert_eq!(model.request_count(), 4);
    h.dispose().await.unwrap();
}

/// CA-S5: merged deliveries at T = 6, 30, 56, 57 — only 6 and 56 carry the guidance text;
/// after a new session the next merged delivery (T = 3) carries it again.
#[actix::test]
async fn ca15_ca_s5_the_guidance_text_comes_first_then_every_fifty_turns() {
    tokio::time::pause();
    let model = ScriptedModel::new([]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |c| {
        c.settings.policy = DeliveryPolicy::Defer;
    });
    let t = Transcript::from_messages([TranscriptMessage::user("go")]);
    let mut carried = Vec::new();
    for turn in 1..=57u64 {
        let merged = [6, 30, 56, 57].contains(&turn);
        if merged {
            model.push(advising(&[(&format!("tidy the imports at {turn}"), "nit")]));
            t.push(final_answer(&format!("answer {turn}")));
        } else {
            model.push(ScriptedReply::text(""));
            t.push(tool_call_turn(&format!("step {turn}")));
            t.push(tool_output("ok"));
        }
        h.turn_end(&t).await.unwrap();
        if merged {
            match drain(&mut rx).as_slice() {
                [HostEvent::Card { card }] => {
                    carried.push((turn, card.content.starts_with(merged_guidance())))
                }
                other => panic!("turn {turn}: expected one card, got {other:?}"),
            }
        }
    }
    assert_eq!(carried, [(6, true), (30, false), (56, true), (57, false)]);
    // `/new`: another conversation, whose third turn end delivers.
    h.rewrite(RewriteKind::NewSession).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("new task")]);
    for turn in 1..=2 {
        model.push(ScriptedReply::text(""));
        t.push(tool_call_turn(&format!("new step {turn}")));
        t.push(tool_output("ok"));
        h.turn_end(&t).await.unwrap();
    }
    model.push(advising(&[("tidy again", "nit")]));
    t.push(final_answer("done"));
    h.turn_end(&t).await.unwrap();
    match drain(&mut rx).as_slice() {
        [HostEvent::Card { card }] => assert!(card.content.starts_with(merged_guidance())),
        other => panic!("expected one card, got {other:?}"),
    }
    h.dispose().await.unwrap();
}

/// CA-S6 (turn mode): sync off, turn 1 final, its review's note arriving after `TurnEnd`
/// returned: a concern is one card, a blocker one wake; after the host started a same-run
/// continuation (turn 2) the concern steers into it.
#[actix::test]
async fn ca18_ca_s6_a_late_note_after_a_terminal_answer() {
    tokio::time::pause();
    for (severity, continued, expected) in [
        ("concern", false, "card"),
        ("blocker", false, "wake"),
        ("concern", true, "steerReady"),
    ] {
        let (gated, mut arrivals, gate) =
            GatedModel::new(vec![advising(&[("late note", severity)])], true);
        let (h, mut rx) = runtime(Arc::new(gated), SyncBacklog::Off, |c| {
            c.settings.policy = DeliveryPolicy::Defer;
            c.settings.immune_turns = 0;
        });
        h.user_prompt().await.unwrap();
        h.run_state(true).await.unwrap();
        let t = Transcript::from_messages([TranscriptMessage::user("go"), final_answer("Done.")]);
        h.turn_end(&t).await.unwrap();
        next_request(&mut arrivals).await;
        // The run ends, or the host starts turn 2 of the same run.
        h.run_state(continued).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(drain(&mut rx).is_empty(), "the window closed empty");
        gate.expect("gated").add_permits(1);
        let kind = match next_event(&mut rx).await {
            HostEvent::Card { card } => {
                assert_eq!(card.notes[0].turns_ago, None, "a live delivery");
                "card"
            }
            HostEvent::Wake { .. } => "wake",
            HostEvent::SteerReady => "steerReady",
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(kind, expected, "{severity} continued={continued}");
        h.dispose().await.unwrap();
    }
}

/// CA-S11: immune turns 3 and a live steer sent at T = 5 (K = 5): concerns raised at T = 6,
/// 7, 8 (WIP rounds) are asides, the one at T = 9 steers. A live steer starts no
/// continuation (CA17), so the rounds after it are reviewed as usual; a wake's continuation
/// turns would not be (CA4).
#[actix::test]
async fn ca19_ca_s11_the_immune_turns_count_every_boundary_from_the_continuation() {
    tokio::time::pause();
    let model = ScriptedModel::new([]);
    let (h, mut rx) = runtime(Arc::new(model.clone()), SyncBacklog::Below(1), |c| {
        c.settings.policy = DeliveryPolicy::Interrupt;
        c.settings.immune_turns = 3;
    });
    h.user_prompt().await.unwrap();
    h.run_state(true).await.unwrap();
    let t = Transcript::from_messages([TranscriptMessage::user("migrate the schema")]);
    for step in 1..=4 {
        model.push(ScriptedReply::text(""));
        t.push(tool_call_turn(&format!("step {step}")));
        t.push(tool_output("ok"));
        h.turn_end(&t).await.unwrap();
    }
    model.push(advising(&[(
        "The migration drops the users table.",
        "blocker",
    )]));
    t.push(tool_call_turn("step 5"));
    t.push(tool_output("ok"));
    h.turn_end(&t).await.unwrap();
    assert_eq!(drain(&mut rx), vec![HostEvent::SteerReady]);
    assert_eq!(
        h.step_boundary().await.unwrap().steers.len(),
        1,
        "sent at T = 5"
    );
    for turn in 6..=9u64 {
        model.push(advising(&[(&format!("concern at {turn}"), "concern")]));
        t.push(tool_call_turn(&format!("step {turn}")));
        t.push(tool_output("ok"));
        h.turn_end(&t).await.unwrap();
        let step = h.step_boundary().await.unwrap();
        if turn < 9 {
            assert!(drain(&mut rx).is_empty(), "T = {turn}: no steer");
            let aside = step.aside.expect("an aside");
            assert_eq!(aside.notes[0].note, format!("concern at {turn}"));
        } else {
            assert_eq!(drain(&mut rx), vec![HostEvent::SteerReady], "T = 9 steers");
            assert_eq!(step.steers.len(), 1);
        }
    }
    h.dispose().await.unwrap();
}
