//! A scripted in-process model: answers requests from a queue and records what it was sent.
//! Used by tests and by `ADVISOR_NO_REVIEW`-style dry runs; it never touches the network.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::{
    AssistantPart, ModelClient, ModelError, ModelFuture, ModelInfo, ModelRequest, ModelResponse,
    StopReason, Usage,
};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum ScriptedReply {
    /// Answer with this response.
    Respond(ModelResponse),
    /// Fail with this error.
    Fail(ModelError),
}

impl ScriptedReply {
    /// A plain text answer with no tool calls.
    pub fn text(text: &str) -> Self {
        Self::Respond(ModelResponse {
            parts: vec![AssistantPart::Text {
                text: text.to_string(),
            }],
            usage: Usage::default(),
            stop: StopReason::EndTurn,
        })
    }

    /// An answer calling one tool.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Self {
        Self::tool_calls(&[(id, name, arguments)])
    }

    /// An answer calling several tools.
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Self {
        Self::Respond(ModelResponse {
            parts: calls
                .iter()
                .map(|(id, name, args)| AssistantPart::ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: args.clone(),
                })
                .collect(),
            usage: Usage::default(),
            stop: StopReason::ToolUse,
        })
    }

    /// An answer calling `advise` with this note and severity.
    pub fn advise(id: &str, note: &str, severity: Option<&str>) -> Self {
        let mut args = serde_json::Map::new();
        args.insert("note".into(), Value::String(note.into()));
        if let Some(s) = severity {
            args.insert("severity".into(), Value::String(s.into()));
        }
        Self::tool_call(id, "advise", Value::Object(args))
    }

    /// The same reply with this usage.
    pub fn with_usage(self, usage: Usage) -> Self {
        match self {
            Self::Respond(mut r) => {
                r.usage = usage;
                Self::Respond(r)
            }
            other => other,
        }
    }
}

#[derive(Default)]
struct ScriptState {
    replies: VecDeque<ScriptedReply>,
    requests: Vec<ModelRequest>,
}

/// A model that plays back scripted replies in order; when the script runs out it answers
/// with an empty text turn (the advisor stays silent).
#[derive(Clone)]
pub struct ScriptedModel {
    state: Arc<Mutex<ScriptState>>,
    info: ModelInfo,
}

impl ScriptedModel {
    /// A scripted model with a 200k window.
    pub fn new(replies: impl IntoIterator<Item = ScriptedReply>) -> Self {
        Self {
            state: Arc::new(Mutex::new(ScriptState {
                replies: replies.into_iter().collect(),
                requests: Vec::new(),
            })),
            info: ModelInfo {
                id: "scripted/test".to_string(),
                context_window: 200_000,
                max_output: 4096,
                reasoning: false,
            },
        }
    }

    /// The same model reporting another context window.
    pub fn with_context_window(mut self, window: u64) -> Self {
        self.info.context_window = window;
        self
    }

    /// The same model reporting another id (`provider/model`), e.g. a backup model (P6).
    pub fn with_id(mut self, id: &str) -> Self {
        self.info.id = id.to_string();
        self
    }

    /// Appends replies to the script.
    pub fn push(&self, reply: ScriptedReply) {
        self.state.lock().replies.push_back(reply);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.state.lock().requests.clone()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        self.state.lock().requests.len()
    }
}

impl ModelClient for ScriptedModel {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        let reply = {
            let mut state = self.state.lock();
            state.requests.push(request);
            state.replies.pop_front()
        };
        Box::pin(async move {
            match reply {
                Some(ScriptedReply::Respond(r)) => Ok(r),
                Some(ScriptedReply::Fail(e)) => Err(e),
                None => Ok(ModelResponse {
                    parts: Vec::new(),
                    usage: Usage::default(),
                    stop: StopReason::EndTurn,
                }),
            }
        })
    }

    fn info(&self) -> ModelInfo {
        self.info.clone()
    }
}
