//! The Reviewer driven with the scripted model and a recording port, synchronously: every
//! future involved is ready at once, so `now_or_never` runs a whole review.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use futures_util::FutureExt;
use serde_json::{json, Value};

use super::*;
use crate::model::scripted::{ScriptedModel, ScriptedReply};
use crate::review::context::summary_message;

mod budget;
mod check_in;
mod limits;
mod maintenance;
mod questions;
mod redaction;
mod rereads;
mod tool_loop;

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
