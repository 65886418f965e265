//! Filtering and formatting of JSON log lines.

pub mod filter;
pub mod output;
pub mod parse;
