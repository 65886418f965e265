//! The `check_in` tool (SP7): the advisor says after how many turn ends it wants its next
//! review. The review engine answers it itself (nothing runs in the workspace); what the
//! call asks for is carried out by the advisor's cadence (`review::check_in`).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::model::ToolSchema;
use crate::texts::{fill, Table};
use crate::tools::args::schema_of;
use crate::tools::ToolError;

/// The tool's name.
pub const NAME: &str = "check_in";

/// The fewest turn ends a check-in may ask for.
pub const MIN_AFTER_TURNS: u8 = 1;

/// The most turn ends a check-in may ask for.
pub const MAX_AFTER_TURNS: u8 = 5;

/// The description the model is offered, from `config/prompts/tool-check_in.md`.
const DESCRIPTION: &str = include_str!("../../config/prompts/tool-check_in.md").trim_ascii_end();

/// What the tool answers the model: its results and argument errors.
pub(crate) const RESULTS: Table = Table(include_str!(
    "../../config/prompts/tool-check_in-results.txt"
));

/// Arguments of `check_in`, as the model sees them (the schema is derived from this struct;
/// [`parse`] reads them with messages of its own).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct CheckInArgs {
    /// After how many more turn ends of the agent your next review starts, 1 to 5.
    #[schemars(range(min = 1, max = 5))]
    after_turns: u8,
    /// Why you wait, in a few words (kept in your transcript only).
    reason: Option<String>,
}

/// What a valid call asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckIn {
    /// After how many turn ends the next review starts, 1–5.
    pub after_turns: u8,
    /// The model's reason, when it gave one.
    pub reason: Option<String>,
}

/// The schema the model sees.
pub fn schema() -> ToolSchema {
    schema_of::<CheckInArgs>(NAME, DESCRIPTION)
}

/// An argument error the model reads, its text from the results file.
fn invalid(text: String) -> ToolError {
    ToolError::InvalidArguments(text)
}

/// Parses the tool's arguments; bad input (a missing, fractional, quoted or out-of-range
/// `afterTurns`, an unknown key) is a tool error the model reads, never a failure.
pub fn parse(args: &Value) -> Result<CheckIn, ToolError> {
    let obj = args
        .as_object()
        .ok_or_else(|| invalid(RESULTS.get("notAnObject").to_string()))?;
    if let Some(key) = obj.keys().find(|k| *k != "afterTurns" && *k != "reason") {
        return Err(invalid(RESULTS.line("unknownArgument", &[("name", key)])));
    }
    let after_turns = match obj.get("afterTurns") {
        None | Some(Value::Null) => {
            return Err(invalid(RESULTS.get("afterTurnsMissing").to_string()))
        }
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if (u64::from(MIN_AFTER_TURNS)..=u64::from(MAX_AFTER_TURNS)).contains(&v) => {
                v as u8
            }
            Some(_) => {
                return Err(invalid(
                    RESULTS.line("afterTurnsOutOfRange", &[("value", &n.to_string())]),
                ))
            }
            None if n.as_i64().is_some() => {
                return Err(invalid(
                    RESULTS.line("afterTurnsOutOfRange", &[("value", &n.to_string())]),
                ))
            }
            None => return Err(invalid(RESULTS.get("afterTurnsNotANumber").to_string())),
        },
        Some(_) => return Err(invalid(RESULTS.get("afterTurnsNotANumber").to_string())),
    };
    let reason = match obj.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(invalid(RESULTS.get("reasonNotAString").to_string())),
    };
    Ok(CheckIn {
        after_turns,
        reason,
    })
}

/// "at the next turn end" / "after 3 turn ends".
fn after_text(after_turns: u8) -> String {
    if after_turns == 1 {
        RESULTS.get("afterOne").to_string()
    } else {
        fill(
            RESULTS.get("afterMany"),
            &[("turns", &after_turns.to_string())],
        )
    }
}

/// The answer to the call that scheduled the next review.
pub fn scheduled_text(after_turns: u8) -> String {
    RESULTS.line("scheduled", &[("after", &after_text(after_turns))])
}

/// The answer to a later call of the same review: the first one counts.
pub fn already_scheduled_text(after_turns: u8) -> String {
    RESULTS.line("alreadyScheduled", &[("after", &after_text(after_turns))])
}

/// The answer to a call made while answering a question (G8), which schedules nothing.
pub fn in_ask_text() -> &'static str {
    RESULTS.get("inAsk")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sp7_every_check_in_text_key_is_in_its_file() {
        for key in [
            "scheduled",
            "afterOne",
            "afterMany",
            "alreadyScheduled",
            "notAnObject",
            "afterTurnsMissing",
            "afterTurnsNotANumber",
            "afterTurnsOutOfRange",
            "reasonNotAString",
            "unknownArgument",
            "inAsk",
        ] {
            assert!(RESULTS.lookup(key).is_some(), "{key}");
        }
    }

    #[test]
    fn sp7_the_schema_is_derived_with_our_description() {
        let s = schema();
        assert_eq!(s.name, "check_in");
        assert!(s.description.starts_with("Say when you want to look again"));
        assert!(s
            .description
            .contains("It costs nothing of your tool budget."));
        let p = &s.parameters;
        assert_eq!(p["required"], json!(["afterTurns"]));
        assert_eq!(p["additionalProperties"], json!(false));
        assert_eq!(p["properties"]["afterTurns"]["type"], json!("integer"));
        assert_eq!(p["properties"]["afterTurns"]["minimum"], json!(1.0));
        assert_eq!(p["properties"]["afterTurns"]["maximum"], json!(5.0));
        assert_eq!(p["properties"]["reason"]["type"], json!("string"));
        assert!(!p.to_string().contains("$ref"), "{p}");
    }

    #[test]
    fn sp7_valid_calls_parse() {
        assert_eq!(
            parse(&json!({"afterTurns": 2})).unwrap(),
            CheckIn {
                after_turns: 2,
                reason: None
            }
        );
        let with_reason = parse(&json!({"afterTurns": 5, "reason": "tests running"})).unwrap();
        assert_eq!(with_reason.after_turns, 5);
        assert_eq!(with_reason.reason.as_deref(), Some("tests running"));
        assert_eq!(parse(&json!({"afterTurns": 1})).unwrap().after_turns, 1);
    }

    #[test]
    fn sp7_bad_arguments_are_tool_errors_the_model_reads() {
        let text = |args: Value| parse(&args).unwrap_err().to_string();
        assert!(text(json!({"afterTurns": 0})).contains("0 is outside that range"));
        assert!(text(json!({"afterTurns": 6})).contains("6 is outside that range"));
        assert!(text(json!({"afterTurns": -1})).contains("-1 is outside that range"));
        assert!(text(json!({"afterTurns": 2.5})).contains("must be a whole number"));
        assert!(text(json!({"afterTurns": "2"})).contains("not text"));
        assert!(text(json!({})).contains("`afterTurns` is required"));
        assert!(text(json!({"afterTurns": null})).contains("`afterTurns` is required"));
        assert!(text(json!([2])).contains("takes an object"));
        assert!(text(json!({"afterTurns": 2, "reason": 3})).contains("`reason` must be"));
        assert!(text(json!({"afterTurns": 2, "when": 1})).contains("not `when`"));
        assert!(text(json!({"afterTurns": 99999999999u64})).contains("outside that range"));
    }

    #[test]
    fn sp7_the_answers_say_when_the_next_review_starts() {
        assert!(scheduled_text(1).contains("at the next turn end"));
        assert!(scheduled_text(3).contains("after 3 turn ends"));
        assert!(already_scheduled_text(2).contains("only the first call counts"));
    }
}
