//! The check-in a review hands back (SP7).

use super::*;

/// [`engine`] offering `check_in` too (SP7).
fn engine_with_check_in(model: &ScriptedModel) -> ReviewEngine {
    let mut engine = engine(model);
    engine.tools = vec![
        read_schema(),
        advise::schema(),
        crate::tools::check_in::schema(),
    ]
    .into();
    engine
}

#[test]
fn sp7_the_review_hands_back_its_first_check_in_and_a_thrown_away_attempt_hands_back_none() {
    let call =
        |after: u64| ScriptedReply::tool_call("c", "check_in", json!({ "afterTurns": after }));
    let model = ScriptedModel::new([call(3)]);
    let port = StubPort::default();
    let run = review(
        engine_with_check_in(&model),
        &port,
        AdvisorContext::new(),
        "u",
    );
    assert_eq!(run.check_in.map(|c| c.after_turns), Some(3));
    assert_eq!(
        model.requests().len(),
        1,
        "a check_in-only turn ends the review"
    );
    // G5: the attempt that called it overflowed and was replayed without it.
    let call_and_read = ScriptedReply::tool_calls(&[
        ("c", "check_in", json!({"afterTurns": 2})),
        ("r", "read", json!({"path": "a.rs"})),
    ]);
    let model = ScriptedModel::new([call_and_read, overflow(), ScriptedReply::text("")]);
    let run = review(
        engine_with_check_in(&model),
        &port,
        AdvisorContext::new(),
        "u",
    );
    assert!(run.result.is_ok());
    assert_eq!(run.maintenance.reprimes, 1, "the first attempt overflowed");
    assert_eq!(run.check_in, None);
    // Not granted: the executor answers it as an unknown tool, nothing is scheduled.
    let model = ScriptedModel::new([call(2), ScriptedReply::text("")]);
    let run = review(engine(&model), &port, AdvisorContext::new(), "u");
    assert_eq!(run.check_in, None);
}
