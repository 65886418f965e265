//! Questions (G8) and a panicked run (F5).

use super::*;

#[test]
fn g8_an_ask_offers_no_advise_refuses_a_call_to_it_and_answers_in_text() {
    let model = ScriptedModel::new([
        ScriptedReply::advise("1", "sneaky advice", Some("blocker")),
        ScriptedReply::tool_call("2", "read", json!({"path": "Cargo.toml"})),
        ScriptedReply::text("Yes: the cache is keyed by path."),
    ]);
    let port = StubPort::default();
    let context = measured(vec![user("### Session update\n\nrename"), answer("")], 10);
    let run = Reviewer::new(engine(&model), port.clone(), context)
        .ask("Is the cache invalidated on rename?")
        .now_or_never()
        .expect("completes at once");
    assert!(run.result.is_ok());
    assert_eq!(run.answer, "Yes: the cache is keyed by path.");
    let requests = model.requests();
    assert!(requests
        .iter()
        .all(|r| r.tools.iter().all(|t| t.name != advise::NAME)));
    assert_eq!(requests[0].tools.len(), 1, "read only");
    let names: Vec<String> = port
        .log
        .borrow()
        .tool_calls
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    assert_eq!(names, ["read"], "advise never reached the executor");
    let messages = &run.context.messages;
    assert_eq!(
        messages[0],
        user("### Session update\n\nrename"),
        "old context kept"
    );
    assert_eq!(
        messages[2],
        user(&ask::ask_prompt("Is the cache invalidated on rename?"))
    );
    assert!(
        matches!(&messages[4], ChatMessage::ToolResult { text, is_error: true, .. } if text == texts::ASK_NO_ADVISE)
    );
    assert_eq!(
        messages.last(),
        Some(&answer("Yes: the cache is keyed by path."))
    );
}

#[test]
fn g8_a_failed_ask_is_one_attempt_and_leaves_the_context_as_it_was() {
    let model = ScriptedModel::new([overflow()]);
    let port = StubPort::default();
    let context = measured(vec![user("update"), answer("")], 10);
    let run = Reviewer::new(engine(&model), port.clone(), context)
        .ask("why?")
        .now_or_never()
        .expect("completes at once");
    assert!(matches!(
        run.result,
        Err(ModelError::ContextOverflow { .. })
    ));
    assert_eq!(run.context.messages, [user("update"), answer("")]);
    assert_eq!(model.request_count(), 1, "no replay for an ask");
    assert!(
        port.log.borrow().discarded.is_empty(),
        "an ask holds nothing"
    );
}

#[test]
fn f5_a_panicked_run_is_a_retryable_failure_with_a_fresh_context() {
    let payload: Box<dyn std::any::Any + Send> = Box::new("the model client blew up");
    let run = ReviewRun::panicked(payload.as_ref());
    match &run.result {
        Err(ModelError::Retryable {
            message,
            retry_after: None,
            ..
        }) => assert_eq!(
            message,
            "the review ended abnormally: the model client blew up"
        ),
        other => panic!("expected a retryable failure, got {other:?}"),
    }
    assert!(run.context.messages.is_empty());
    let payload: Box<dyn std::any::Any + Send> = Box::new(String::from("index out of range"));
    let run = ReviewRun::panicked(payload.as_ref());
    assert!(format!("{:?}", run.result).contains("index out of range"));
    let payload: Box<dyn std::any::Any + Send> = Box::new(7_u8);
    let run = ReviewRun::panicked(payload.as_ref());
    assert!(format!("{:?}", run.result).contains("abnormally: a panic"));
}
