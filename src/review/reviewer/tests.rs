//! The Reviewer driven with the scripted model and a recording port, synchronously: every
//! future involved is ready at once, so `now_or_never` runs a whole review.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use futures_util::FutureExt;
use serde_json::{json, Value};

use super::*;
use crate::model::scripted::{ScriptedModel, ScriptedReply};

/// What the reviewer did through its port.
#[derive(Default)]
struct Log {
    tool_calls: Vec<(String, Value)>,
    discarded: Vec<u32>,
    cleared: u32,
    audits: Vec<AuditEvent>,
    notices: Vec<String>,
}

/// A port answering every workspace tool with `file contents` and `advise` with
/// `Recorded.`, recording everything.
#[derive(Clone, Default)]
struct StubPort {
    log: Rc<RefCell<Log>>,
    preamble: String,
    watchdog: Option<WatchdogBlocks>,
}

impl ReviewPort for StubPort {
    async fn execute_tool(&self, name: &str, arguments: Value) -> Option<ToolReply> {
        self.log
            .borrow_mut()
            .tool_calls
            .push((name.to_string(), arguments));
        let text = if name == advise::NAME {
            "Recorded."
        } else {
            "file contents"
        };
        Some(ToolReply {
            text: text.to_string(),
            is_error: false,
        })
    }

    async fn held_preamble(&self) -> String {
        self.preamble.clone()
    }

    async fn discard_attempt(&self, attempt: u32) {
        self.log.borrow_mut().discarded.push(attempt);
    }

    async fn watchdog(&self) -> Option<WatchdogBlocks> {
        self.watchdog.clone()
    }

    fn clear_tool_session(&self) {
        self.log.borrow_mut().cleared += 1;
    }

    fn audits(&self) -> bool {
        true
    }

    fn audit(&self, event: AuditEvent) {
        self.log.borrow_mut().audits.push(event);
    }

    fn notice(&self, text: String) {
        self.log.borrow_mut().notices.push(text);
    }
}

fn read_schema() -> ToolSchema {
    ToolSchema {
        name: "read".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object"}),
    }
}

fn engine(model: &ScriptedModel) -> ReviewEngine {
    ReviewEngine {
        model: Arc::new(model.clone()),
        promotion: None,
        tools: vec![read_schema(), advise::schema()].into(),
        base_prompt: "You review.".into(),
        limits: ReviewLimits {
            max_tool_rounds: 8,
            max_output_tokens: 4096,
            compact_at_percent: 80,
            compact_threshold_tokens: None,
            max_note_chars: 2000,
        },
    }
}

fn review(
    engine: ReviewEngine,
    port: &StubPort,
    context: AdvisorContext,
    prompt: &str,
) -> ReviewRun {
    Reviewer::new(engine, port.clone(), context)
        .review(prompt.to_string())
        .now_or_never()
        .expect("a scripted review completes at once")
}

fn overflow() -> ScriptedReply {
    ScriptedReply::Fail(ModelError::ContextOverflow {
        usage: None,
        message: "prompt is too long".into(),
    })
}

fn user(text: &str) -> ChatMessage {
    ChatMessage::User { text: text.into() }
}

fn answer(text: &str) -> ChatMessage {
    ChatMessage::Assistant {
        parts: vec![AssistantPart::Text { text: text.into() }],
    }
}

/// A context of `messages` whose last response reported `input` prompt tokens.
fn measured(messages: Vec<ChatMessage>, input: u64) -> AdvisorContext {
    let mut context = AdvisorContext::new();
    context.messages = messages;
    let covered = context.messages.len();
    context.record_usage(
        &Usage {
            input,
            ..Usage::default()
        },
        covered,
    );
    context
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
        .filter(|e| matches!(e, AuditEvent::Message { .. }))
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
    assert_eq!(request.messages[0], user("[held notes]\n\nupdate"));
    assert_eq!(port.log.borrow().notices, ["WATCHDOG.md: unreadable"]);
}

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
    assert_eq!(log.cleared, 1, "T3: the reads are no longer in the context");
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
    assert_eq!(requests[1].messages, [user("new update")], "replayed alone");
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

#[test]
fn g5_stopping_at_the_output_bound_counts_as_an_overflow() {
    let stopped = ScriptedReply::Respond(ModelResponse {
        parts: vec![AssistantPart::Text {
            text: "half an ans".into(),
        }],
        usage: Usage::default(),
        stop: StopReason::MaxTokens,
    });
    let model = ScriptedModel::new([stopped, ScriptedReply::text("short")]);
    let port = StubPort::default();
    let run = review(engine(&model), &port, AdvisorContext::new(), "update");
    assert!(run.result.is_ok());
    assert_eq!(run.maintenance.reprimes, 1);
    assert_eq!(run.context.messages, [user("update"), answer("short")]);
}

#[test]
fn g4_issue10_10_a_failed_call_s_usage_counts_and_stays_marked_estimated() {
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
        requests[1].messages,
        [
            summary_message("- the agent refactors the parser"),
            user("second update"),
            answer("second"),
            user("third update"),
        ]
    );
    assert_eq!(run.calls, 2, "the summary call counts (G4)");
    let log = port.log.borrow();
    assert_eq!(log.cleared, 1);
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
    assert_eq!(model.requests()[0].messages, [user("next")]);
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
    assert_eq!(port.log.borrow().cleared, 0, "nothing was shed");
}

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
