//! The model abstraction the AdvisorAgent calls (SPEC §10).
//!
//! A [`ModelClient`] takes a [`ModelRequest`] (system prompt, the advisor's conversation,
//! tool schemas, an output bound) and answers with a [`ModelResponse`] (the assistant turn
//! assembled from the stream, normalised usage, stop reason) or a classified [`ModelError`].
//! The HTTP providers live in [`crate::providers`]; tests drive the agent with
//! [`scripted::ScriptedModel`].

pub mod limit;
pub mod scripted;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Reasoning effort requested from the model (M1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning.
    Off,
    /// Minimal reasoning.
    Minimal,
    /// Low reasoning.
    Low,
    /// Medium reasoning (the default).
    #[default]
    Medium,
    /// High reasoning.
    High,
    /// Extra-high reasoning.
    Xhigh,
}

impl ThinkingLevel {
    /// Parses a level name (`off, minimal, low, medium, high, xhigh`).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "off" => Self::Off,
            "minimal" => Self::Minimal,
            "low" => Self::Low,
            "medium" => Self::Medium,
            "high" => Self::High,
            "xhigh" => Self::Xhigh,
            _ => return None,
        })
    }

    /// The level's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
        }
    }
}

/// A tool the model may call: name, description, JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// Tool name.
    pub name: String,
    /// Description written for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// One part of an assistant turn in the advisor's own conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantPart {
    /// Visible text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning, kept so it can be sent back unchanged.
    Thinking {
        /// The reasoning text (may be empty when only a signature or details exist).
        text: String,
        /// Anthropic's signature, sent back unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Anthropic redacted thinking data, sent back unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redacted: Option<String>,
        /// Provider-specific reasoning payload (OpenRouter's `reasoning_details`), sent back
        /// unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    /// A tool call.
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Parsed arguments (an object; `{}` when the model sent none).
        arguments: Value,
    },
}

/// One message of the advisor's conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum ChatMessage {
    /// A user message (session updates, reminders).
    User {
        /// Its text.
        text: String,
    },
    /// A model turn.
    Assistant {
        /// Its parts, in order.
        parts: Vec<AssistantPart>,
    },
    /// The result of a tool call.
    ToolResult {
        /// The call id it answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The text the model sees.
        text: String,
        /// Whether the tool failed.
        is_error: bool,
    },
}

impl ChatMessage {
    /// A rough size of the message in characters (for the chars / 4 estimate of G5).
    pub fn char_len(&self) -> usize {
        match self {
            ChatMessage::User { text } => text.len(),
            ChatMessage::ToolResult { text, .. } => text.len() + 32,
            ChatMessage::Assistant { parts } => parts
                .iter()
                .map(|p| match p {
                    AssistantPart::Text { text } => text.len(),
                    AssistantPart::Thinking { text, .. } => text.len(),
                    AssistantPart::ToolCall {
                        name, arguments, ..
                    } => name.len() + arguments.to_string().len(),
                })
                .sum(),
        }
    }
}

/// A request to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation so far (append-only between maintenance events, M5).
    pub messages: Vec<ChatMessage>,
    /// The tools the model may call.
    pub tools: Vec<ToolSchema>,
    /// Upper bound on output tokens.
    pub max_tokens: u32,
    /// Reasoning effort.
    pub thinking: ThinkingLevel,
    /// A text sent as its own part before the text of the first user message (P8: the
    /// date and working directory `<system-reminder>`, as oh-my-pi sends it); never part of
    /// the stored conversation.
    pub reminder: Option<String>,
}

impl ModelRequest {
    /// A rough size in characters of everything the request sends: the system prompt, the
    /// messages and the tool schemas (for the characters / 4 estimate of G4).
    pub fn char_len(&self) -> usize {
        let tools: usize = self
            .tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
            .sum();
        self.system.len()
            + self.reminder.as_ref().map_or(0, String::len)
            + self
                .messages
                .iter()
                .map(ChatMessage::char_len)
                .sum::<usize>()
            + tools
    }
}

/// Tokens estimated from characters: characters / 4, rounded up (G4, G5).
pub fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// Token usage of one response, normalised across providers (G4).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    pub input: u64,
    /// Output tokens (reasoning included).
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// Cost in dollars.
    pub cost: f64,
    /// True when the provider reported no usage and these figures are estimated
    /// (characters / 4 of what was sent and received, G4).
    #[serde(default)]
    pub estimated: bool,
}

impl Usage {
    /// The estimate for a call whose provider reported no usage (G4): characters / 4 of
    /// what was sent (input) and received (output), no cost, marked estimated.
    pub fn estimate(sent_chars: usize, received_chars: usize) -> Self {
        Self {
            input: estimate_tokens(sent_chars),
            output: estimate_tokens(received_chars),
            estimated: true,
            ..Self::default()
        }
    }

    /// Adds another usage to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.cost += other.cost;
        self.estimated |= other.estimated;
    }

    /// The whole prompt as the provider saw it: input + cache read + cache write.
    pub fn prompt_tokens(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants its tool calls run.
    ToolUse,
    /// The output bound was hit (partial tool calls were discarded).
    MaxTokens,
    /// The context window was exceeded.
    ContextOverflow,
    /// The model refused.
    Refusal,
    /// Something else the provider reported.
    Other(String),
}

/// A complete model answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelResponse {
    /// The assistant turn.
    pub parts: Vec<AssistantPart>,
    /// Usage, normalised, with cost.
    pub usage: Usage,
    /// Why it stopped.
    pub stop: StopReason,
}

impl ModelResponse {
    /// The tool calls of the answer, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.parts.iter().filter_map(|p| match p {
            AssistantPart::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments)),
            _ => None,
        })
    }
}

/// A classified model-call failure (M4).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// Worth retrying: 429, 5xx, 529, timeouts, resets, truncated streams, error events.
    #[error("model call failed (retryable): {message}")]
    Retryable {
        /// What happened.
        message: String,
        /// The delay the server asked for (`Retry-After`), if any.
        retry_after: Option<Duration>,
        /// What the failed call used before it failed (reported or estimated, G4), if anything.
        usage: Option<Usage>,
    },
    /// The request did not fit the model's context window (G5's reactive path).
    #[error("context window exceeded: {message}")]
    ContextOverflow {
        /// What the provider said.
        message: String,
        /// What the overflowing call used (reported or estimated, G4), if anything.
        usage: Option<Usage>,
    },
    /// Retrying cannot fix it: 401/403, unknown model, quota (F3).
    #[error("model call failed permanently: {message}")]
    Permanent {
        /// What happened.
        message: String,
    },
}

impl ModelError {
    /// What the failed call used, when the error carries it.
    pub fn usage(&self) -> Option<&Usage> {
        match self {
            ModelError::Retryable { usage, .. } | ModelError::ContextOverflow { usage, .. } => {
                usage.as_ref()
            }
            ModelError::Permanent { .. } => None,
        }
    }

    /// The same error carrying `used` when it carries no usage yet (a permanent error
    /// carries none).
    pub fn with_usage(mut self, used: Usage) -> Self {
        if let ModelError::Retryable { usage, .. } | ModelError::ContextOverflow { usage, .. } =
            &mut self
        {
            usage.get_or_insert(used);
        }
        self
    }
}

/// Static facts about a model (M3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// `provider/model-id`.
    pub id: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Maximum output tokens.
    pub max_output: u64,
    /// Whether the model reasons.
    pub reasoning: bool,
}

/// A boxed future returned by [`ModelClient::complete`].
pub type ModelFuture = Pin<Box<dyn Future<Output = Result<ModelResponse, ModelError>> + Send>>;

/// Something that answers advisor requests: an HTTP provider or a scripted test model.
pub trait ModelClient: Send + Sync {
    /// Sends one request and returns the assembled answer.
    fn complete(&self, request: ModelRequest) -> ModelFuture;

    /// Facts about the model (window, output bound).
    fn info(&self) -> ModelInfo;

    /// The thinking level requests use.
    fn thinking(&self) -> ThinkingLevel {
        ThinkingLevel::Medium
    }
}
