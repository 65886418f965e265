//! Helpers shared by the integration tests.

#![allow(dead_code, unused_imports)]

pub mod binary;
pub mod fixtures;
pub mod hosts;
pub mod npm;
pub mod roster;
pub mod runtime;
pub mod sse_server;
pub mod virtual_clock;
pub mod wire;

pub use binary::advisor_bin;

/// The text of a user message as an OpenAI-style request sent it, without P8's reminder:
/// a string as it is, or the text parts after the `<system-reminder>` part the first user
/// message of each request opens with.
pub fn wire_user_text(content: &serde_json::Value) -> String {
    match content {
        serde_json::Value::String(text) => without_reminder(text).to_string(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .filter(|t| !t.starts_with("<system-reminder>"))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A user message's text without the date and working directory reminder the advisor
/// prepends to the first user message of each request (P8).
pub fn without_reminder(text: &str) -> &str {
    match text.split_once("</system-reminder>\n\n") {
        Some((reminder, rest)) if reminder.starts_with("<system-reminder>\n") => rest,
        _ => text,
    }
}

/// Every string inside a JSON value, depth first, each followed by a line break: what a
/// request carried, as one text to search.
pub fn strings_in(value: &serde_json::Value) -> String {
    fn collect(v: &serde_json::Value, out: &mut String) {
        match v {
            serde_json::Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| collect(x, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    collect(value, &mut out);
    out
}
