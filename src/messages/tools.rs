//! Messages of the ToolExecutor (T1–T7).

use actix::Message as ActixMessage;
use serde_json::Value;

/// Runs one of the advisor's tool calls.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "ToolOutput")]
pub struct ExecuteTool {
    /// The epoch of the review that called it (advice of a stale epoch is dropped).
    pub epoch: u64,
    /// The review's number (bounds notes per review, D8).
    pub review: u64,
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
    /// The model that made the call (`provider/id`, after fallback, P6); an `advise` note
    /// carries it to the primary (SP8). `None` when no model made it (tests, tools run by
    /// hand).
    pub model: Option<String>,
}

/// What the model sees as the tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text.
    pub text: String,
    /// Whether it is an error.
    pub is_error: bool,
}

/// Forgets the tool session's read record and caches (context reset or compaction, T3).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct ClearToolSession;
