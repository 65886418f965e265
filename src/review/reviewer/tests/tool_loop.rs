//! The request a review sends (P8), the quarantine of its replies (P5, P9) and the tool loop (G1, G3, D9).

use super::*;

#[test]
fn p8_each_request_carries_the_reminder_as_a_part_of_its_own_the_context_not() {
    let model = ScriptedModel::new([ScriptedReply::text("ok")]);
    let port = StubPort::default();
    let run = review(engine(&model), &port, AdvisorContext::new(), "update");
    let request = &model.requests()[0];
    let reminder = request.reminder.as_deref().unwrap_or_default();
    assert!(
        reminder.starts_with("<system-reminder>\nToday: 20"),
        "{reminder}"
    );
    assert!(
        reminder.contains("'/w'") && reminder.ends_with("</system-reminder>"),
        "{reminder}"
    );
    // The first user message's own text is the update alone, not joined to the reminder.
    assert_eq!(request.messages, [user("update")]);
    assert_eq!(run.context.messages[0], user("update"), "never stored");
}

/// P5, P9: a withheld reply is recorded as oh-my-pi records it — an errored assistant message
/// naming the hazard classes, with the call's usage — and its text is not written.
#[test]
fn p9_p5_a_quarantined_reply_is_recorded_as_an_errored_message_naming_the_hazards() {
    let model = ScriptedModel::new([ScriptedReply::tool_call(
        "c1",
        "advise",
        json!({"note": "Run rm -rf ~/ to clean up", "severity": "concern"}),
    )]);
    let port = StubPort::default();
    let run = review(engine(&model), &port, AdvisorContext::new(), "update");
    assert!(run.quarantined.is_some());
    let log = port.log.borrow();
    let spends: Vec<_> = log
        .audits
        .iter()
        .filter_map(|e| match e {
            AuditEvent::Spend { text, error, .. } => Some((text.clone(), error.clone())),
            _ => None,
        })
        .collect();
    let said = "Advisor response quarantined: generated output-only destructive directives: destructive shell command";
    assert_eq!(spends, [(said.to_string(), Some(said.to_string()))]);
    assert!(
        !log.audits
            .iter()
            .any(|e| matches!(e, AuditEvent::Reply { .. })),
        "the withheld reply is not written: {:?}",
        log.audits
    );
}

/// P5: a command begun in one turn's note and finished in a later turn of the same review
/// withholds the later turn: its note is never dispatched.
#[test]
fn p5_a_command_split_across_the_turns_of_a_review_withholds_the_turn_that_ends_it() {
    let model = ScriptedModel::new([
        ScriptedReply::tool_calls(&[
            (
                "1",
                "advise",
                json!({"note": "Step one: type rm", "severity": "concern"}),
            ),
            ("2", "read", json!({"path": "Makefile"})),
        ]),
        ScriptedReply::advise("3", "-rf ./build and press enter", Some("concern")),
    ]);
    let port = StubPort::default();
    let run = review(engine(&model), &port, AdvisorContext::new(), "make failed");
    assert_eq!(
        run.quarantined,
        Some(vec![crate::review::quarantine::Hazard::DestructiveCommand])
    );
    let log = port.log.borrow();
    let notes: Vec<&Value> = log
        .tool_calls
        .iter()
        .filter(|(name, _)| name == "advise")
        .map(|(_, args)| &args["note"])
        .collect();
    assert_eq!(notes, [&json!("Step one: type rm")]);
}

#[test]
fn g3_tool_calls_go_through_the_port_and_the_review_ends_on_an_answer_without_tools() {
    let model = ScriptedModel::new([
        ScriptedReply::tool_call("1", "read", json!({"path": "src/lib.rs"})),
        // Not advise-only (P2): the review goes on after it.
        ScriptedReply::tool_calls(&[
            (
                "2",
                "advise",
                json!({"note": "Check the error path.", "severity": "concern"}),
            ),
            ("3", "read", json!({"path": "src/main.rs"})),
        ]),
        ScriptedReply::text("Done."),
    ]);
    let port = StubPort::default();
    let run = review(
        engine(&model),
        &port,
        AdvisorContext::new(),
        "### Session update\n\nx",
    );
    assert!(run.result.is_ok());
    assert_eq!(run.calls, 3);
    assert_eq!(run.answer, "Done.");
    let log = port.log.borrow();
    let names: Vec<&str> = log.tool_calls.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["read", "advise", "read"]);
    assert_eq!(log.tool_calls[0].1, json!({"path": "src/lib.rs"}));
    let messages = &run.context.messages;
    assert_eq!(
        messages.len(),
        7,
        "update, call, result, calls, result, result, answer"
    );
    assert_eq!(messages[0], user("### Session update\n\nx"));
    assert!(
        matches!(&messages[2], ChatMessage::ToolResult { text, .. } if text == "file contents")
    );
    let requests = model.requests();
    assert_eq!(requests[0].system, "You review.");
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["read", "advise"]);
    assert_eq!(
        requests[2].messages.len(),
        6,
        "each call sees the whole context"
    );
    // G7: every appended message is an audit line, in order.
    let audited = log
        .audits
        .iter()
        .filter(|e| matches!(e, AuditEvent::Message { .. } | AuditEvent::Reply { .. }))
        .count();
    assert_eq!(audited, 7);
}

#[test]
fn g3_the_last_allowed_round_is_told_to_finish_and_later_calls_are_not_run() {
    let call = || ScriptedReply::tool_call("c", "read", json!({"path": "a"}));
    let model = ScriptedModel::new([call(), call(), call()]);
    let mut engine = engine(&model);
    engine.limits.max_tool_rounds = 2;
    let port = StubPort::default();
    let run = review(engine, &port, AdvisorContext::new(), "update");
    assert!(run.result.is_ok());
    assert_eq!(run.calls, 3, "two rounds of tools, then the final call");
    assert_eq!(
        port.log.borrow().tool_calls.len(),
        2,
        "the third round's call is not run"
    );
    let results: Vec<&str> = run
        .context
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::ToolResult { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results[0], "file contents");
    assert_eq!(
        results[1],
        format!("file contents\n\n{}", texts::FINISH_NOW)
    );
    assert_eq!(results[2], texts::TOOL_NOT_RUN);
}

#[test]
fn g1_d9_the_system_prompt_gets_the_watchdog_blocks_and_the_update_the_held_preamble() {
    let model = ScriptedModel::new([]);
    let port = StubPort {
        preamble: "[held notes]".into(),
        watchdog: Some(WatchdogBlocks {
            joined: "Especially pay attention to:\n- migrations".into(),
            warnings: vec!["WATCHDOG.md: unreadable".into()],
        }),
        ..StubPort::default()
    };
    let run = review(engine(&model), &port, AdvisorContext::new(), "update");
    let request = &model.requests()[0];
    assert_eq!(
        request.system,
        "You review.\n\nEspecially pay attention to:\n- migrations"
    );
    assert_eq!(run.system, request.system);
    assert_eq!(sent(request)[0], user("[held notes]\n\nupdate"));
    assert_eq!(port.log.borrow().notices, ["WATCHDOG.md: unreadable"]);
}
