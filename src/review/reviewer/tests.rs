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
    /// The `unchanged_since` of each tool call (SP2).
    since: Vec<Option<u64>>,
    audits: Vec<AuditEvent>,
    notices: Vec<String>,
}

/// A port answering every workspace tool with `body` (`file contents` when unset) and
/// `advise` with `Recorded.`, recording everything. Its files give `fingerprint` (SP2):
/// a call whose `unchanged_since` matches it is answered unchanged, not run.
#[derive(Clone, Default)]
struct StubPort {
    log: Rc<RefCell<Log>>,
    preamble: String,
    watchdog: Option<WatchdogBlocks>,
    body: Option<String>,
    fingerprint: Rc<std::cell::Cell<Option<u64>>>,
    review: u64,
}

impl ReviewPort for StubPort {
    async fn execute_tool(
        &self,
        name: &str,
        arguments: Value,
        unchanged_since: Option<u64>,
        _model: &str,
    ) -> Option<ToolReply> {
        let mut log = self.log.borrow_mut();
        log.since.push(unchanged_since);
        if name == advise::NAME {
            log.tool_calls.push((name.to_string(), arguments));
            return Some(ToolReply::plain("Recorded.", false));
        }
        let fingerprint = self.fingerprint.get();
        if fingerprint.is_some() && fingerprint == unchanged_since {
            return Some(ToolReply {
                text: String::new(),
                is_error: false,
                fingerprint,
                unchanged: true,
            });
        }
        log.tool_calls.push((name.to_string(), arguments));
        let text = self.body.as_deref().unwrap_or("file contents");
        Some(ToolReply {
            text: text.to_string(),
            is_error: false,
            fingerprint,
            unchanged: false,
        })
    }

    fn review_number(&self) -> u64 {
        self.review
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

/// What a request sent as its conversation (the date/cwd reminder is a part of its own, P8).
fn sent(request: &ModelRequest) -> Vec<ChatMessage> {
    request.messages.clone()
}

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
        instructions: None,
        cwd: "/w".into(),
        limits: ReviewLimits {
            max_tool_rounds: 8,
            max_output_tokens: 4096,
            compact_at_percent: 80,
            compact_threshold_tokens: None,
            max_note_chars: 2000,
            evict_stale_results: true,
            // SP1 has tests of its own; these count on every call running.
            tool_budget: 50,
            spend_controls: true,
        },
        guard: crate::review::quarantine::OutputGuard::new()
            .ok()
            .map(Arc::new),
        redactor: None,
    }
}

fn review(
    engine: ReviewEngine,
    port: &StubPort,
    context: AdvisorContext,
    prompt: &str,
) -> ReviewRun {
    Reviewer::new(engine, port.clone(), context)
        .review(crate::review::ReviewPrompt::single(prompt.to_string()))
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

/// X5: every path by which text leaves the process for the model goes
/// through redaction — deltas, the WATCHDOG.md blocks, the held-note preamble, tool results,
/// questions, compaction summaries and the replay after a reset — as the real OpenAI
/// client sends it to the in-process server; and the audit log gets the redacted text too.
#[tokio::test]
async fn x5_every_path_to_the_model_is_redacted_in_the_request_body() {
    use crate::domain::transcript::{Transcript, TranscriptMessage};
    use crate::feed::{FeedCursor, FeedOutcome};
    use crate::providers::testing::{sse_event, ScriptedResponse, SseServer};
    use crate::providers::{build_client, Catalog, ModelSpec};
    use crate::redact::Redactor;
    use crate::render::TranscriptView;

    fn reply(delta: Value, finish: &str, prompt_tokens: u64) -> ScriptedResponse {
        let chunk = |delta: Value, finish: Option<&str>| {
            sse_event(
                None,
                &json!({"id": "g", "object": "chat.completion.chunk", "model": "m",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                .to_string(),
            )
        };
        let usage = sse_event(
            None,
            &json!({"id": "g", "object": "chat.completion.chunk", "choices": [],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5,
                    "total_tokens": prompt_tokens + 5}})
            .to_string(),
        );
        ScriptedResponse::sse(
            &[
                chunk(delta, None),
                chunk(json!({}), Some(finish)),
                usage,
                "data: [DONE]\n\n".into(),
            ]
            .concat(),
        )
    }
    let text = |t: &str, tokens| reply(json!({"role": "assistant", "content": t}), "stop", tokens);
    let read_call = reply(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "c1", "type": "function",
            "function": {"name": "read", "arguments": "{\"path\":\"config.yml\"}"}}]}),
        "tool_calls",
        100,
    );
    // The secrets, one per path, each of a kind the redactor knows.
    let key = format!("sk-proj-{}", "Xf93kLm2Qp8Zr7Tt4Vb1Nc6Hd0Jw5Ys".repeat(2));
    let paths = [
        ("delta", "DB_PASSWORD=DeltaHorseBatteryStaple".to_string()),
        ("watchdog", "MY_SECRET=WatchdogMixedCaseValue".to_string()),
        (
            "held preamble",
            "MY_SECRET=HeldNoteMixedCaseValue".to_string(),
        ),
        ("tool result", "password: ToolResultHorseStaple".to_string()),
        ("question", format!("OPENAI_API_KEY={key}")),
        (
            "summary",
            "DB_PASSWORD=SummaryHorseBatteryStaple".to_string(),
        ),
        ("replay", "MY_SECRET=ReplayMixedCaseValue".to_string()),
    ];
    let secret = |path: &str| paths.iter().find(|(p, _)| *p == path).unwrap().1.clone();
    let raw_value = |path: &str| {
        secret(path)
            .split(['=', ':'])
            .nth(1)
            .unwrap()
            .trim()
            .to_string()
    };

    let server = SseServer::start([
        read_call,                                                         // 0: review 1
        text("ok", 100),               // 1: review 1, after the tool
        text("No, rotate it.", 5_000), // 2: the question
        text(&format!("- the agent deploys; {}", secret("summary")), 100), // 3: summary
        text("ok", 100),               // 4: review 2
        text("ok", 100),               // 5: the replay
    ])
    .await
    .unwrap();
    let spec = ModelSpec {
        role: Some("openrouter/anthropic/claude-sonnet-4.5".into()),
        base_url: Some(server.base_url()),
        api_key: Some("test-key".into()),
        ..ModelSpec::default()
    };
    let model = build_client(&spec, &Catalog::builtin().unwrap(), &|_| None).unwrap();
    let redactor = Redactor::new().unwrap();
    let engine = ReviewEngine {
        model,
        promotion: None,
        tools: vec![read_schema(), advise::schema()].into(),
        base_prompt: "You review.".into(),
        instructions: None,
        cwd: "/w".into(),
        limits: ReviewLimits {
            max_tool_rounds: 8,
            max_output_tokens: 4096,
            compact_at_percent: 80,
            compact_threshold_tokens: Some(4_000),
            max_note_chars: 2000,
            // P4 would elide the stale read before the third review and so spare the
            // compaction this test needs to reach the summary path.
            evict_stale_results: false,
            tool_budget: 50,
            spend_controls: true,
        },
        guard: None,
        redactor: Some(redactor.clone()),
    };
    /// The stub port, its tool answering with a long file that holds a password.
    #[derive(Clone)]
    struct FilePort(StubPort, String);
    impl ReviewPort for FilePort {
        async fn execute_tool(
            &self,
            name: &str,
            arguments: Value,
            unchanged_since: Option<u64>,
            model: &str,
        ) -> Option<ToolReply> {
            self.0
                .execute_tool(name, arguments, unchanged_since, model)
                .await?;
            Some(ToolReply::plain(self.1.clone(), false))
        }
        fn review_number(&self) -> u64 {
            self.0.review_number()
        }
        async fn held_preamble(&self) -> String {
            self.0.held_preamble().await
        }
        async fn discard_attempt(&self, attempt: u32) {
            self.0.discard_attempt(attempt).await
        }
        async fn watchdog(&self) -> Option<WatchdogBlocks> {
            self.0.watchdog().await
        }
        fn audits(&self) -> bool {
            true
        }
        fn audit(&self, event: AuditEvent) {
            self.0.audit(event)
        }
        fn notice(&self, text: String) {
            self.0.notice(text)
        }
    }
    let stub = StubPort {
        preamble: format!("Held notes: {}", secret("held preamble")),
        watchdog: Some(WatchdogBlocks {
            joined: format!("Especially pay attention to:\n- {}", secret("watchdog")),
            warnings: Vec::new(),
        }),
        ..StubPort::default()
    };
    let file = format!("{}\n{}\n", "# filler\n".repeat(700), secret("tool result"));
    let port = FilePort(stub.clone(), file);

    // Deltas come from the feed cursor as a session uses it.
    let transcript = Transcript::from_messages([TranscriptMessage::user(format!(
        "deploy with {}",
        secret("delta")
    ))]);
    let mut feed = FeedCursor::with_redactor(TranscriptView::Compact, None, Some(redactor));
    let FeedOutcome::Delta(delta) = feed.observe(&transcript) else {
        panic!("a delta");
    };
    let run = Reviewer::new(engine.clone(), port.clone(), AdvisorContext::new())
        .review(crate::review::ReviewPrompt::single(delta))
        .await;
    assert!(run.result.is_ok(), "{:?}", run.result.err());
    let question = format!("Is it fine that I committed {}?", secret("question"));
    let run = Reviewer::new(engine.clone(), port.clone(), run.context)
        .ask(&question)
        .await;
    assert_eq!(run.answer, "No, rotate it.");
    transcript.push(TranscriptMessage::user(format!(
        "then {}",
        secret("replay")
    )));
    let FeedOutcome::Delta(delta) = feed.observe(&transcript) else {
        panic!("a delta");
    };
    let run = Reviewer::new(engine.clone(), port.clone(), run.context)
        .review(crate::review::ReviewPrompt::single(delta))
        .await;
    assert_eq!(run.maintenance.compactions, 1, "the summary path ran");
    // A reset (R1): the feed replays the whole branch into a fresh context.
    feed.reset();
    let FeedOutcome::Delta(replay) = feed.observe(&transcript) else {
        panic!("a replay");
    };
    Reviewer::new(engine, port, AdvisorContext::new())
        .review(crate::review::ReviewPrompt::single(replay))
        .await;

    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(bodies.len(), 6);
    // Where each path's text reaches the model first.
    let first_request = [
        ("delta", 0),
        ("watchdog", 0),
        ("held preamble", 0),
        ("tool result", 1),
        ("question", 2),
        ("summary", 4),
        ("replay", 5),
    ];
    for (path, index) in first_request {
        let raw = raw_value(path);
        for (i, body) in bodies.iter().enumerate() {
            assert!(!body.contains(&raw), "{path}: request {i} holds the secret");
        }
        let name = secret(path).split(['=', ':']).next().unwrap().to_string();
        let redacted = bodies[index].split(&name).skip(1).any(|after| {
            after
                .trim_start_matches([':', '=', ' '])
                .starts_with("[redacted:")
        });
        assert!(redacted, "{path}: request {index} lacks `{name}` redacted");
    }
    // The audit log (G7) keeps what the model was sent.
    let audits = format!("{:?}", stub.log.borrow().audits);
    for (path, _) in first_request {
        assert!(!audits.contains(&raw_value(path)), "{path} in the audit");
    }
}

/// The texts of the tool results in `messages`, in order.
fn results(messages: &[ChatMessage]) -> Vec<&str> {
    messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::ToolResult { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn budgeted(model: &ScriptedModel, budget: u32) -> ReviewEngine {
    let mut engine = engine(model);
    engine.limits.tool_budget = budget;
    engine
}

#[test]
fn sp1_parallel_calls_past_the_budget_are_not_run_and_the_model_is_told_to_advise_or_end() {
    let read = |id: &str, path: &str| (id.to_string(), json!({ "path": path }));
    let calls: Vec<(String, Value)> = vec![
        read("1", "a"),
        read("2", "b"),
        read("3", "c"),
        read("4", "d"),
        read("5", "e"),
    ];
    let mut parallel: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "read", args.clone()))
        .collect();
    parallel.insert(2, ("n", "advise", json!({"note": "Check the error path."})));
    parallel.push(("x", "unknown_tool", json!({})));
    let model = ScriptedModel::new([
        ScriptedReply::tool_calls(&parallel),
        ScriptedReply::text("done"),
    ]);
    let port = StubPort::default();
    let run = review(budgeted(&model, 3), &port, AdvisorContext::new(), "update");
    assert!(run.result.is_ok());
    let log = port.log.borrow();
    let ran: Vec<(&str, &Value)> = log
        .tool_calls
        .iter()
        .map(|(n, a)| (n.as_str(), a))
        .collect();
    assert_eq!(
        ran,
        [
            ("read", &json!({"path": "a"})),
            ("read", &json!({"path": "b"})),
            ("advise", &json!({"note": "Check the error path."})),
            ("read", &json!({"path": "c"})),
            ("unknown_tool", &json!({})),
        ],
        "three reads and advise ran (advise is never counted), and the unknown tool went to \
         the executor to be refused there (T7), uncounted"
    );
    let spent = texts::fill(texts::BUDGET_SPENT, &[("calls", "3 tool calls")]);
    assert_eq!(
        spent,
        "Not run: this review's budget of 3 tool calls is spent. Advise now with what you have, \
         or end the review."
    );
    let got = results(&run.context.messages);
    assert_eq!(got[4], spent);
    assert_eq!(got[5], spent);
    assert_eq!(run.tool_spend.budget_refused, 2);
    // The refusal reaches the model's next request.
    let next = &model.requests()[1];
    assert_eq!(
        results(&next.messages)
            .iter()
            .filter(|t| **t == spent)
            .count(),
        2
    );
}

#[test]
fn sp1_the_budget_runs_over_the_rounds_of_one_review_and_starts_again_at_the_next() {
    let call = |path: &str| ScriptedReply::tool_call("c", "read", json!({ "path": path }));
    let model = ScriptedModel::new([
        call("a"),
        call("b"),
        call("c"),
        ScriptedReply::text("done"),
        call("d"),
        ScriptedReply::text("done"),
    ]);
    let port = StubPort::default();
    let first = review(budgeted(&model, 2), &port, AdvisorContext::new(), "one");
    assert_eq!(first.tool_spend.budget_refused, 1);
    assert_eq!(
        results(&first.context.messages)[2],
        texts::fill(texts::BUDGET_SPENT, &[("calls", "2 tool calls")])
    );
    let second = review(budgeted(&model, 2), &port, first.context, "two");
    assert_eq!(
        second.tool_spend.budget_refused, 0,
        "a new review, a new budget"
    );
    assert_eq!(port.log.borrow().tool_calls.len(), 3, "a, b, then d");
}

#[test]
fn sp1_g3_a_call_of_the_round_past_the_cap_is_g3_s_and_costs_no_budget() {
    // Budget 0: every workspace call is refused by SP1, except in the round past G3's
    // cap, where G3's own text answers and nothing is counted as refused by the budget.
    let call = || ScriptedReply::tool_call("c", "read", json!({"path": "a"}));
    let model = ScriptedModel::new([call(), call()]);
    let mut engine = budgeted(&model, 0);
    engine.limits.max_tool_rounds = 1;
    let port = StubPort::default();
    let run = review(engine, &port, AdvisorContext::new(), "update");
    let got = results(&run.context.messages);
    assert_eq!(
        got[0],
        format!(
            "{}\n\n{}",
            texts::fill(texts::BUDGET_SPENT, &[("calls", "0 tool calls")]),
            texts::FINISH_NOW
        )
    );
    assert_eq!(got[1], texts::TOOL_NOT_RUN);
    assert_eq!(run.tool_spend.budget_refused, 1);
    assert!(port.log.borrow().tool_calls.is_empty());
}

/// A port whose files give `fingerprint`, answering reads with `body`, as review `review`.
fn files(fingerprint: u64, body: &str, review: u64) -> StubPort {
    StubPort {
        body: Some(body.to_string()),
        fingerprint: Rc::new(std::cell::Cell::new(Some(fingerprint))),
        review,
        ..StubPort::default()
    }
}

#[test]
fn sp2_a_repeated_read_over_unchanged_files_is_a_pointer_to_the_earlier_call() {
    let read = |path: &str| ScriptedReply::tool_call("c", "read", json!({ "path": path }));
    let model = ScriptedModel::new([
        read("src/lib.rs"),
        read("src/main.rs"),
        ScriptedReply::text("ok"),
        read("src/lib.rs"),
        read("src/lib.rs:2"),
        ScriptedReply::text("ok"),
    ]);
    let mut engine = engine(&model);
    engine.limits.evict_stale_results = false;
    let port = files(42, "1|fn main() {}", 4);
    let first = review(engine.clone(), &port, AdvisorContext::new(), "one");
    let port = StubPort {
        log: Rc::clone(&port.log),
        review: 5,
        ..port
    };
    let second = review(engine, &port, first.context, "two");
    let got = results(&second.context.messages);
    assert_eq!(
        got[2],
        "[Not sent again: this is the same call as call 1 of review 4, and the files it covers \
         are unchanged since, so its result (14 bytes) is still above in your context.]"
    );
    assert_eq!(got[3], "1|fn main() {}", "other arguments run as usual");
    assert_eq!(
        (
            second.tool_spend.rereads_saved,
            second.tool_spend.reread_bytes_saved
        ),
        (1, 14)
    );
    let log = port.log.borrow();
    assert_eq!(log.since, [None, None, Some(42), None]);
    assert_eq!(log.tool_calls.len(), 3, "the re-read was not run");
}

#[test]
fn sp2_a_changed_file_is_read_again_in_full() {
    let read = || ScriptedReply::tool_call("c", "read", json!({"path": "a.rs"}));
    let model = ScriptedModel::new([
        read(),
        ScriptedReply::text("ok"),
        read(),
        ScriptedReply::text("ok"),
    ]);
    let mut engine = engine(&model);
    engine.limits.evict_stale_results = false;
    let port = files(42, "1|old", 1);
    let first = review(engine.clone(), &port, AdvisorContext::new(), "one");
    port.fingerprint.set(Some(43));
    let second = review(engine, &port, first.context, "two");
    assert_eq!(results(&second.context.messages), ["1|old", "1|old"]);
    assert_eq!(second.tool_spend.rereads_saved, 0);
    assert_eq!(
        port.log.borrow().since,
        [None, Some(42)],
        "asked, and it had changed"
    );
}

/// The defect SP2 fixes: while a read's result is in the context the same read is a
/// pointer; once P4 evicted it, the read is run again and its lines sent, never answered
/// "already in your context".
#[test]
fn sp2_p4_after_an_eviction_the_same_read_runs_and_its_lines_are_sent_again() {
    let body: String = (1..=200).map(|i| format!("{i}|line {i}\n")).collect();
    let read = || ScriptedReply::tool_call("c", "read", json!({"path": "big.rs"}));
    let ok = || ScriptedReply::text("ok");
    let model = ScriptedModel::new([read(), ok(), read(), ok(), read(), ok()]);
    let port = files(42, &body, 1);
    let first = review(engine(&model), &port, AdvisorContext::new(), "one");
    let second = review(engine(&model), &port, first.context, "two");
    assert_eq!(
        second.maintenance.evictions, 0,
        "the first result is not stale yet"
    );
    assert_eq!(second.tool_spend.rereads_saved, 1);
    assert!(results(&second.context.messages)[1].starts_with("[Not sent again"));
    let third = review(engine(&model), &port, second.context, "three");
    assert_eq!(third.maintenance.evictions, 1, "P4 elided the first result");
    let got = results(&third.context.messages);
    assert!(got[0].starts_with("[Stale result elided"), "{}", got[0]);
    assert_eq!(got[2], body, "the lines are sent again");
    assert_eq!(third.tool_spend.rereads_saved, 0);
    assert_eq!(
        port.log.borrow().since,
        [None, Some(42), None],
        "after the eviction there is no earlier result to point at"
    );
}

#[test]
fn sp2_a_compaction_or_a_promotion_starts_a_new_context_for_re_reads() {
    let messages = vec![
        user("old"),
        ChatMessage::Assistant {
            parts: vec![AssistantPart::ToolCall {
                id: "c".into(),
                name: "read".into(),
                arguments: json!({"path": "a.rs"}),
            }],
        },
        ChatMessage::ToolResult {
            call_id: "c".into(),
            name: "read".into(),
            text: "1|a".into(),
            is_error: false,
        },
        answer("fine"),
    ];
    let remembered = || {
        let mut context = measured(messages.clone(), 900);
        let record = ReadRecord::new("read", json!({"path": "a.rs"}), 42, (1, 1), 2, "1|a");
        context.rereads.record(record);
        assert!(context
            .rereads
            .earlier("read", &json!({"path": "a.rs"}), &context.messages)
            .is_some());
        context
    };
    // A promotion keeps the history but not the re-read ledger.
    let small = ScriptedModel::new([]).with_context_window(1_000);
    let large = ScriptedModel::new([
        ScriptedReply::tool_call("d", "read", json!({"path": "a.rs"})),
        ScriptedReply::text("ok"),
    ])
    .with_context_window(10_000);
    let mut engine = engine(&small);
    engine.promotion = Some(Arc::new(large.clone()));
    let port = files(42, "1|a", 2);
    let run = review(engine, &port, remembered(), "next");
    assert_eq!(run.maintenance.promotions, 1);
    assert_eq!(
        port.log.borrow().since,
        [None],
        "the read runs after a promotion"
    );
    assert_eq!(results(&run.context.messages), ["1|a", "1|a"]);
    // A compaction replaces the history: nothing earlier is pointed at.
    let mut context = remembered();
    context.compact(1, summary_message("sum"), 10);
    assert!(context
        .rereads
        .earlier("read", &json!({"path": "a.rs"}), &context.messages)
        .is_none());
}

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
