//! A roster built in code (RO23, RO24), for the scale tests and the sessions bench: named
//! advisors given as values instead of a `WATCHDOG.yml`, all on one model client. Shared as
//! a file (`#[path]`) by `tests/all.rs`, `tests/memory.rs` and `benches/sessions.rs`.

#![allow(dead_code)]

use std::sync::Arc;

use serde_json::json;

use advisor::domain::transcript::{
    AssistantBlock, AssistantMessage, Content, ToolResultMessage, TranscriptMessage,
};
use advisor::model::{ModelClient, ThinkingLevel};
use advisor::roster::{
    ModelChoice, PathFilter, Roster, RosterAdvisor, RosterModels, RosterSetup, Sourced,
};

/// Every advisor of the roster calls the same client: one provider, one call limit.
pub struct OneModel(pub Arc<dyn ModelClient>);

impl RosterModels for OneModel {
    fn build(&self, _advisor: &RosterAdvisor) -> Result<Arc<dyn ModelClient>, String> {
        Ok(Arc::clone(&self.0))
    }
}

/// Each roster entry's client from a map, by slug (an entry without one is not built).
pub struct PerSlug(pub std::collections::HashMap<String, Arc<dyn ModelClient>>);

impl RosterModels for PerSlug {
    fn build(&self, entry: &RosterAdvisor) -> Result<Arc<dyn ModelClient>, String> {
        self.0
            .get(&entry.slug)
            .cloned()
            .ok_or_else(|| format!("no model for {}", entry.slug))
    }
}

/// The text each advisor's instructions carry, followed by its slug and a full stop: a
/// server tells from a request's system prompt which advisor sent it (RO11 puts the
/// entry's instructions last in it).
pub const MARKER: &str = "You are the bench reviewer ";

/// The slug in a system prompt written from [`MARKER`], if there is one.
pub fn slug_in(system: &str) -> Option<&str> {
    let rest = &system[system.find(MARKER)? + MARKER.len()..];
    rest.split('.').next().filter(|slug| !slug.is_empty())
}

/// One advisor on `provider/model` (thinking off), its instructions naming it
/// ([`MARKER`]), with `when` paths when given (RO17), every other field at its default.
/// `name` is its own slug, so give a lower-case word.
pub fn advisor(name: &str, provider: &str, model: &str, when: Option<&[&str]>) -> RosterAdvisor {
    let mut advisor = RosterAdvisor::new(
        name,
        ModelChoice::resolved(provider, model, ThinkingLevel::Off),
    );
    advisor.instructions = Sourced::default_value(Some(format!("{MARKER}{name}.")));
    advisor.when = Sourced::default_value(when.map(|globs| {
        PathFilter::new(globs.iter().map(|g| g.to_string()).collect()).expect("valid globs")
    }));
    advisor
}

/// The paths the `migrations` advisor of [`three`] reviews (RO17).
pub const MIGRATIONS: &[&str] = &["migrations/**"];

/// The three-advisor roster of RO24 on `provider/model`: `architecture` and `security`
/// review every update, `migrations` only those touching [`MIGRATIONS`].
pub fn three(provider: &str, model: &str) -> Roster {
    Roster {
        advisors: vec![
            advisor("architecture", provider, model, None),
            advisor("security", provider, model, None),
            advisor("migrations", provider, model, Some(MIGRATIONS)),
        ],
        ..Roster::default()
    }
}

/// `roster` run on `model` for every advisor, fixed for the session's life.
pub fn setup(roster: Roster, model: Arc<dyn ModelClient>) -> RosterSetup {
    RosterSetup {
        roster,
        models: Arc::new(OneModel(model)),
        reload: None,
    }
}

/// One whole turn of the primary: the user's `text`, an `edit` of `path` (relative to the
/// workspace root) as call `id` and its result, then the agent's closing answer. The
/// `edit`'s path is what `when` looks at (RO17).
pub fn turn(id: &str, text: &str, path: &str) -> [TranscriptMessage; 4] {
    [
        TranscriptMessage::user(text),
        TranscriptMessage::Assistant(AssistantMessage::new(
            vec![AssistantBlock::ToolCall {
                id: id.into(),
                name: "edit".into(),
                arguments: json!({"path": path, "oldText": "a", "newText": "b"}).into(),
            }],
            Some("toolUse".into()),
        )),
        TranscriptMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "edit".into(),
            content: Content::Text(format!("Edited {path}.")),
            is_error: false,
            details: None,
        }),
        TranscriptMessage::Assistant(AssistantMessage::new(
            vec![AssistantBlock::Text {
                text: "Done.".into(),
            }],
            Some("stop".into()),
        )),
    ]
}
