//! Overflows and length stops (G5, F1) and the usage of a failed call (G4).

use super::*;

#[test]
fn g5_an_overflow_is_discarded_and_the_batch_replayed_once_into_a_fresh_context() {
    let model = ScriptedModel::new([overflow(), ScriptedReply::text("ok")]);
    let port = StubPort::default();
    let old = measured(vec![user("old update"), answer("old answer")], 100);
    let run = review(engine(&model), &port, old, "new update");
    assert!(run.result.is_ok());
    assert_eq!(run.context.messages, [user("new update"), answer("ok")]);
    assert_eq!(run.maintenance.reprimes, 1);
    let log = port.log.borrow();
    assert_eq!(
        log.discarded,
        [1],
        "the router rolls back the attempt's holds"
    );
    assert!(log
        .audits
        .iter()
        .any(|e| matches!(e, AuditEvent::AttemptDiscarded { attempt: 1, .. })));
    let requests = model.requests();
    assert_eq!(
        requests[0].messages.len(),
        3,
        "first try on the old context"
    );
    assert_eq!(sent(&requests[1]), [user("new update")], "replayed alone");
}

#[test]
fn f1_a_second_overflow_fails_the_review_and_leaves_no_trace() {
    let model = ScriptedModel::new([overflow(), overflow()]);
    let port = StubPort::default();
    let run = review(engine(&model), &port, AdvisorContext::new(), "update");
    assert!(matches!(
        run.result,
        Err(ModelError::ContextOverflow { .. })
    ));
    assert!(run.context.messages.is_empty());
    assert_eq!(port.log.borrow().discarded, [1, 2]);
    assert_eq!(run.calls, 2);
}

/// A reply that stopped at a length limit after `output` tokens of `prompt` (reported, or
/// estimated when `estimated`), carrying a tool call the cut may have left partial.
fn length_stop(prompt: u64, output: u64, estimated: bool) -> ScriptedReply {
    ScriptedReply::Respond(ModelResponse {
        parts: vec![
            AssistantPart::Text {
                text: "half an ans".into(),
            },
            AssistantPart::ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: json!({"path": "src/li"}),
            },
        ],
        usage: Usage {
            input: prompt,
            output,
            estimated,
            ..Usage::default()
        },
        stop: StopReason::MaxTokens,
    })
}

#[test]
fn g5_a_length_stop_under_the_output_bound_counts_as_an_overflow() {
    // 100 of the 4096 output tokens: the bound did not stop it, the context did.
    let model = ScriptedModel::new([length_stop(1_000, 100, false), ScriptedReply::text("short")]);
    let port = StubPort::default();
    let run = review(engine(&model), &port, AdvisorContext::new(), "update");
    assert!(run.result.is_ok());
    assert_eq!(run.maintenance.reprimes, 1);
    assert_eq!(run.context.messages, [user("update"), answer("short")]);
}

#[test]
fn g5_a_length_stop_with_the_context_full_counts_as_an_overflow_even_at_the_bound() {
    // 200,000-token window, threshold 160,000: 158,000 + 4,096 reach it.
    let model = ScriptedModel::new([
        length_stop(158_000, 4_096, false),
        ScriptedReply::text("short"),
    ]);
    let port = StubPort::default();
    let run = review(engine(&model), &port, AdvisorContext::new(), "update");
    assert!(run.result.is_ok());
    assert_eq!(run.maintenance.reprimes, 1);
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn g5_a_reply_cut_at_its_output_bound_is_kept_and_ends_the_review_without_maintenance() {
    for (output, estimated) in [(4_096, false), (1_500, true)] {
        let model = ScriptedModel::new([
            length_stop(1_000, output, estimated),
            ScriptedReply::text("never asked"),
        ]);
        let port = StubPort::default();
        let run = review(engine(&model), &port, AdvisorContext::new(), "update");
        assert!(run.result.is_ok(), "{output}: {:?}", run.result);
        assert_eq!(run.maintenance, MaintenanceCounts::default(), "{output}");
        assert_eq!(
            model.requests().len(),
            1,
            "{output}: no replay, no next round"
        );
        // The text that arrived stays; the possibly partial tool call is neither kept nor run.
        assert_eq!(
            run.context.messages,
            [user("update"), answer("half an ans")]
        );
        let log = port.log.borrow();
        assert!(log.tool_calls.is_empty() && log.discarded.is_empty());
    }
}

#[test]
fn g4_a_failed_call_s_usage_counts_and_stays_marked_estimated() {
    let spent = Usage {
        input: 1200,
        output: 30,
        estimated: true,
        ..Usage::default()
    };
    let model = ScriptedModel::new([ScriptedReply::Fail(ModelError::Retryable {
        message: "stream cut".into(),
        retry_after: None,
        usage: Some(spent),
    })]);
    let port = StubPort::default();
    let run = review(engine(&model), &port, AdvisorContext::new(), "update");
    assert!(matches!(run.result, Err(ModelError::Retryable { .. })));
    assert_eq!(run.usage, spent);
    assert!(run.usage.estimated);
    assert_eq!(run.calls, 1);
}
