//! What the advisor spends, and the rules over it, in one place: a review's tool budget and
//! what the spend controls saved (SP1, SP2), the tool calls of reviews and the silent
//! advisor (SP4, SP5), the spend beside the primary's and its ratio (SP5), and the spend
//! ceiling (SP6). Plain code; the agents count, the supervisor keeps the tallies and asks.

pub mod ceiling;
pub mod ratio;
pub mod silence;
pub mod tools;

pub use silence::{SilenceWatch, ToolCallCounts};
pub use tools::{ToolBudget, ToolSpendCounts};
