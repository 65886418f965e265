//! Messages of the ToolExecutor (T1–T7).

use actix::Message as ActixMessage;
use serde_json::Value;

use crate::delivery::ReviewId;

/// Runs one of the advisor's tool calls.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "ToolOutput")]
pub struct ExecuteTool {
    /// The review that called it: its epoch (advice of a stale epoch is dropped) and its
    /// number (bounds notes per review, D8).
    pub review: ReviewId,
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
    /// SP2: the fingerprint of an earlier call with the same arguments whose result is still
    /// in the advisor's context. When the files the call covers still give it, the tool is
    /// not run and the output says so ([`ToolOutput::unchanged`]).
    pub unchanged_since: Option<u64>,
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
    /// The fingerprint of the files a workspace tool's call covered, taken before it ran
    /// (SP2); `None` for `advise`, a failed call or a tree too large to fingerprint.
    pub fingerprint: Option<u64>,
    /// SP2: the files still give [`ExecuteTool::unchanged_since`]; the tool was not run and
    /// `text` is empty.
    pub unchanged: bool,
}
