//! The `advise` tool (T6): the advisor's only way to speak to the primary.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::domain::advice::{Advisory, Severity};
use crate::model::ToolSchema;
use crate::texts::exceeds_chars;
use crate::texts::{fill, Table};
use crate::tools::args::schema_of;
use crate::tools::ToolError;

/// The `advise` tool's answers and argument errors (D8, D9, D10, T6, T7); delivery fills
/// the outcome answers.
pub(crate) const TOOL_RESULTS: Table = Table(include_str!(
    "../../config/prompts/delivery-tool-results.txt"
));

/// The tool's name.
pub const NAME: &str = "advise";

/// The description the model is offered, from `config/prompts/tool-advise.md`.
const DESCRIPTION: &str = include_str!("../../config/prompts/tool-advise.md").trim_ascii_end();

/// Arguments of `advise`, as the model sees them (the schema is derived from this struct;
/// [`parse`] reads them with messages of its own).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct AdviseArgs {
    /// The advice: one concrete, terse, actionable point.
    note: String,
    /// How strongly the agent should react; omit for nit.
    severity: Option<SeverityArg>,
}

/// The severities the model may name (no doc comments on the variants: with them the
/// schema would be a `oneOf` of single-value enums instead of one plain `enum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum SeverityArg {
    Nit,
    Concern,
    Blocker,
}

/// The schema the model sees.
pub fn schema() -> ToolSchema {
    schema_of::<AdviseArgs>(NAME, DESCRIPTION)
}

/// An argument error the model reads, its text from the tool-results file (T7).
fn invalid(key: &'static str) -> ToolError {
    ToolError::InvalidArguments(TOOL_RESULTS.get(key).to_string())
}

/// Parses the tool's arguments into an advisory; bad input is a tool error the model sees.
pub fn parse(args: &Value) -> Result<Advisory, ToolError> {
    let obj = args.as_object().ok_or_else(|| invalid("notAnObject"))?;
    let note = match obj.get("note") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) => return Err(invalid("noteEmpty")),
        Some(_) => return Err(invalid("noteNotAString")),
        None => return Err(invalid("noteMissing")),
    };
    let severity = match obj.get("severity") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            s.parse::<Severity>()
                .map_err(|e| ToolError::InvalidArguments(e.to_string()))?,
        ),
        Some(_) => return Err(invalid("severityNotAString")),
    };
    Ok(Advisory::new(note, severity))
}

/// How many characters of a refused note the advisor's context keeps at most.
const KEPT_NOTE_CHARS: usize = 200;

/// The arguments of an `advise` call as the advisor's context keeps them. A note longer
/// than `max_chars` characters is refused (D10 `tooLong`), so only its first characters
/// (at most 200) are kept, with a marker saying how much was left out: the refused text
/// never rides the advisor's later requests whole (T6). `None` when the
/// arguments are kept as they are.
pub(crate) fn kept_arguments(arguments: &Value, max_chars: usize) -> Option<Value> {
    let note = arguments.get("note")?.as_str()?;
    if !exceeds_chars(note, max_chars) {
        return None;
    }
    let keep = max_chars.min(KEPT_NOTE_CHARS);
    let at = note
        .char_indices()
        .nth(keep)
        .map_or(note.len(), |(at, _)| at);
    let marker = fill(
        TOOL_RESULTS.get("noteCut"),
        &[("cut", &note[at..].chars().count().to_string())],
    );
    let mut kept = arguments.clone();
    kept["note"] = Value::String(format!("{}{marker}", &note[..at]));
    Some(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_advise_argument_error_key_is_in_its_file() {
        for key in [
            "notAnObject",
            "noteEmpty",
            "noteNotAString",
            "noteMissing",
            "severityNotAString",
            "noteCut",
            "routerRestarting",
        ] {
            assert!(TOOL_RESULTS.lookup(key).is_some(), "{key}");
        }
    }

    #[test]
    fn t6_advise_schema_is_derived_and_says_what_it_said() {
        let s = schema();
        assert_eq!(s.name, "advise");
        assert!(s.description.starts_with("Send one piece of advice"));
        assert!(s.description.contains("Omitting severity means nit."));
        let p = &s.parameters;
        assert_eq!(p["type"], json!("object"));
        assert_eq!(p["required"], json!(["note"]));
        assert_eq!(p["additionalProperties"], json!(false));
        assert_eq!(p["properties"]["note"]["type"], json!("string"));
        assert_eq!(
            p["properties"]["note"]["description"],
            json!("The advice: one concrete, terse, actionable point.")
        );
        let severity = &p["properties"]["severity"];
        assert_eq!(severity["enum"], json!(["nit", "concern", "blocker"]));
        assert_eq!(
            severity["description"],
            json!("How strongly the agent should react; omit for nit.")
        );
        assert!(!p.to_string().contains("$ref"), "{p}");
        assert!(!p.to_string().contains("definitions"), "{p}");
    }

    #[test]
    fn t6_parses_note_and_severity() {
        let a = parse(&json!({"note":"x","severity":"concern"})).unwrap();
        assert_eq!(a.severity, Some(Severity::Concern));
        assert_eq!(parse(&json!({"note":"x"})).unwrap().severity, None);
    }

    #[test]
    fn t6_unknown_severity_is_a_tool_error() {
        let err = parse(&json!({"note":"x","severity":"urgent"})).unwrap_err();
        assert!(err.to_string().contains("nit, concern or blocker"), "{err}");
        assert!(parse(&json!({})).is_err());
        assert!(parse(&json!({"note": 5})).is_err());
    }

    #[test]
    fn t7_bad_arguments_are_answered_with_the_texts_of_the_data_file() {
        let text = |args: Value| parse(&args).unwrap_err().to_string();
        assert!(text(json!([])).contains("advise takes an object with `note`"));
        assert!(text(json!({"note": "  "})).contains("`note` is empty"));
        assert!(text(json!({"note": 5})).contains("`note` must be a string"));
        assert!(text(json!({})).contains("`note` is required"));
        assert!(text(json!({"note": "x", "severity": 2})).contains("one of nit, concern, blocker"));
    }

    #[test]
    fn t6_a_refused_note_is_kept_cut_with_a_marker() {
        let note = "é".repeat(5000);
        let args = json!({"note": note, "severity": "blocker"});
        let kept = kept_arguments(&args, 2000).expect("cut");
        assert_eq!(kept["severity"], json!("blocker"));
        let kept_note = kept["note"].as_str().unwrap();
        assert!(kept_note.starts_with(&"é".repeat(200)), "{kept_note}");
        assert!(!kept_note.starts_with(&"é".repeat(201)), "{kept_note}");
        assert!(
            kept_note
                .ends_with("… [4800 more characters not kept: this note was refused as too long]"),
            "{kept_note}"
        );
        // A note within the cap, or arguments without a note, are kept as they are.
        assert_eq!(
            kept_arguments(&json!({"note": "é".repeat(2000)}), 2000),
            None
        );
        assert_eq!(kept_arguments(&json!({"note": 5}), 2000), None);
        assert_eq!(kept_arguments(&json!([]), 2000), None);
        // A cap under 200 keeps no more than the cap.
        let kept = kept_arguments(&json!({"note": "abcdef"}), 3).expect("cut");
        assert!(kept["note"].as_str().unwrap().starts_with("abc… [3 more"));
    }
}
