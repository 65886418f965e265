//! Context maintenance past the threshold: compaction, re-prime, promotion (G5).

use super::*;

#[test]
fn g5_past_the_threshold_the_older_history_is_summarised_and_the_recent_review_kept() {
    // Window 1000, threshold 800, verbatim budget 200 tokens: the last review fits, the
    // first (1000 tokens of text) is summarised.
    let model = ScriptedModel::new([
        ScriptedReply::text("- the agent refactors the parser"),
        ScriptedReply::text("ok"),
    ])
    .with_context_window(1_000);
    let mut engine = engine(&model);
    engine.tools = Vec::new().into();
    let port = StubPort::default();
    let big = "x".repeat(4_000);
    let old = measured(
        vec![
            user(&big),
            answer("first"),
            user("second update"),
            answer("second"),
        ],
        900,
    );
    let run = review(engine, &port, old, "third update");
    assert!(run.result.is_ok());
    assert_eq!(run.maintenance.compactions, 1);
    assert_eq!(run.maintenance.reprimes, 0);
    let requests = model.requests();
    assert_eq!(requests[0].system, texts::SUMMARY_INSTRUCTION);
    assert!(requests[0].tools.is_empty());
    let ChatMessage::User { text } = &requests[0].messages[0] else {
        panic!("the summary input is one user message");
    };
    assert!(text.contains("[update to the reviewer]\nxxxx") && !text.contains("second update"));
    assert_eq!(
        sent(&requests[1]),
        [
            summary_message("- the agent refactors the parser"),
            user("second update"),
            answer("second"),
            user("third update"),
        ]
    );
    assert_eq!(run.calls, 2, "the summary call counts (G4)");
    let log = port.log.borrow();
    assert!(log.audits.iter().any(|e| matches!(
        e,
        AuditEvent::Maintenance {
            kind: MaintenanceKind::Compaction,
            summary: Some(_),
            ..
        }
    )));
}

#[test]
fn g5_with_nothing_to_summarise_the_context_is_reprimed() {
    let model = ScriptedModel::new([ScriptedReply::text("ok")]).with_context_window(1_000);
    let port = StubPort::default();
    let old = measured(vec![user("small"), answer("fine")], 900);
    let run = review(engine(&model), &port, old, "next");
    assert_eq!(run.maintenance.reprimes, 1);
    assert_eq!(model.request_count(), 1, "no summary call");
    assert_eq!(sent(&model.requests()[0]), [user("next")]);
}

#[test]
fn g5_promotion_to_a_larger_window_is_enough_when_it_brings_the_estimate_under() {
    let small = ScriptedModel::new([]).with_context_window(1_000);
    let large = ScriptedModel::new([ScriptedReply::text("ok")]).with_context_window(10_000);
    let mut engine = engine(&small);
    engine.promotion = Some(Arc::new(large.clone()));
    let port = StubPort::default();
    let old = measured(vec![user("small"), answer("fine")], 900);
    let run = review(engine, &port, old, "next");
    assert_eq!(run.maintenance.promotions, 1);
    assert_eq!(run.maintenance.reprimes + run.maintenance.compactions, 0);
    assert!(run.promoted.is_some());
    assert_eq!(small.request_count(), 0);
    assert_eq!(large.requests()[0].messages.len(), 3, "the history is kept");
}
