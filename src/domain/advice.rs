//! Advice types (SPEC D1, D2): severities, advisories, and the XML the primary receives.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How strongly the advisor wants the primary to react (D1). Ordered by rank:
/// `Nit < Concern < Blocker`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Cleanup, simplification, a low-risk edge case: folded in at the next step boundary.
    Nit,
    /// Material risk or likely wrong direction: the agent decides.
    Concern,
    /// Continuing clearly wastes the turn or produces broken output.
    Blocker,
}

impl Severity {
    /// The lowercase name used in XML and in the `advise` tool.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Nit => "nit",
            Severity::Concern => "concern",
            Severity::Blocker => "blocker",
        }
    }

    /// Rank for deduplication (D8): nit 1, concern 2, blocker 3.
    pub fn rank(self) -> u8 {
        match self {
            Severity::Nit => 1,
            Severity::Concern => 2,
            Severity::Blocker => 3,
        }
    }

    /// True for severities that steer or wake the primary (concern, blocker).
    pub fn interrupts(self) -> bool {
        self >= Severity::Concern
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for a severity name that is none of `nit`, `concern`, `blocker`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown severity `{0}`: use nit, concern or blocker")]
pub struct UnknownSeverity(pub String);

impl FromStr for Severity {
    type Err = UnknownSeverity;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "nit" => Ok(Severity::Nit),
            "concern" => Ok(Severity::Concern),
            "blocker" => Ok(Severity::Blocker),
            _ => Err(UnknownSeverity(s.to_string())),
        }
    }
}

/// One piece of advice: a note and an optional severity (omitted = nit for routing, D1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advisory {
    /// The advice text, as the advisor wrote it.
    pub note: String,
    /// The severity, when the advisor gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// The named advisor (or advisors, comma-joined, RO22) that raised it; `None` for the
    /// unnamed advisor of a session without a roster (RO12: no `advisor` attribute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advisor: Option<String>,
    /// How many primary turns ago the turn its review covered ended (CA14): set on the
    /// notes of a merged final-boundary delivery (0 for the newest turn), `None` on a
    /// delivery of one note routed live.
    #[serde(default, rename = "turnsAgo", skip_serializing_if = "Option::is_none")]
    pub turns_ago: Option<u64>,
    /// The model that produced it (`provider/id`, after fallback, P6; SP8), models
    /// comma-joined for a note two advisors raised (RO22); `None` for a note no model wrote
    /// (`/advisor test`, C2). Not part of the XML the primary reads (D2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl Advisory {
    /// A new advisory.
    pub fn new(note: impl Into<String>, severity: Option<Severity>) -> Self {
        Self {
            note: note.into(),
            severity,
            advisor: None,
            turns_ago: None,
            model: None,
        }
    }

    /// The same advisory, produced by the model `model` (SP8).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The same advisory, raised by the named advisor `name` (RO18).
    pub fn with_advisor(mut self, name: impl Into<String>) -> Self {
        self.advisor = Some(name.into());
        self
    }

    /// Adds `model` to the models of a note two advisors raised (RO22, SP8): comma-joined,
    /// in raise order, each once.
    pub fn add_model(&mut self, model: Option<&str>) {
        let Some(model) = model else { return };
        match &mut self.model {
            Some(models) if models.split(", ").any(|m| m == model) => {}
            Some(models) => {
                models.push_str(", ");
                models.push_str(model);
            }
            None => self.model = Some(model.to_string()),
        }
    }

    /// The severity used for routing: the given one, or nit.
    pub fn effective_severity(&self) -> Severity {
        self.severity.unwrap_or(Severity::Nit)
    }

    /// The `<advisory>` element for this note (D2), with an optional extra `context`
    /// attribute. Attributes in this order, absent ones left out (CA14): `advisor`,
    /// `severity`, `turns_ago` (exactly when it is above 0), `guidance`, `context`.
    pub fn to_xml(&self, context: Option<&str>) -> String {
        let mut out = String::with_capacity(self.note.len() + 80);
        out.push_str("<advisory");
        if let Some(name) = &self.advisor {
            out.push_str(" advisor=\"");
            out.push_str(&crate::xml::attribute(name));
            out.push('"');
        }
        if let Some(sev) = self.severity {
            out.push_str(" severity=\"");
            out.push_str(sev.as_str());
            out.push('"');
        }
        if let Some(n) = self.turns_ago.filter(|n| *n > 0) {
            out.push_str(" turns_ago=\"");
            out.push_str(&n.to_string());
            out.push('"');
        }
        out.push_str(" guidance=\"weigh, don't blindly obey\"");
        if let Some(ctx) = context {
            out.push_str(" context=\"");
            out.push_str(&crate::xml::attribute(ctx));
            out.push('"');
        }
        out.push_str(">\n");
        out.push_str(&escape_xml_text(&self.note));
        out.push_str("\n</advisory>");
        out
    }
}

/// Which named advisor of the roster something comes from (RO7, RO13): its slug (the id
/// that keys its state) and its display name (what the primary and the user see).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdvisorLabel {
    /// The slug (RO7).
    pub slug: std::sync::Arc<str>,
    /// The display name (RO7).
    pub name: std::sync::Arc<str>,
}

impl AdvisorLabel {
    /// A label of `name` with slug `slug`.
    pub fn new(slug: impl Into<std::sync::Arc<str>>, name: impl Into<std::sync::Arc<str>>) -> Self {
        Self {
            slug: slug.into(),
            name: name.into(),
        }
    }
}

/// Escapes `&`, `<` and `>` so a note can neither close nor open an element (D2).
pub fn escape_xml_text(s: &str) -> String {
    crate::xml::text(s)
}

/// The distinct models of `notes` in order, comma-joined (SP8: a card's or an aside's
/// `model`); `None` when no note names one.
pub fn notes_models(notes: &[Advisory]) -> Option<String> {
    let mut models: Vec<&str> = Vec::new();
    for model in notes
        .iter()
        .filter_map(|n| n.model.as_deref())
        .flat_map(|m| m.split(", "))
    {
        if !models.contains(&model) {
            models.push(model);
        }
    }
    (!models.is_empty()).then(|| models.join(", "))
}

/// The XML of several notes delivered as one message: elements joined by `\n` (D2).
pub fn advisories_to_xml(notes: &[Advisory], context: Option<&str>) -> String {
    notes
        .iter()
        .map(|n| n.to_xml(context))
        .collect::<Vec<_>>()
        .join("\n")
}

/// How a delivery reaches the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// Folded in at the next step boundary; no interruption.
    Aside,
    /// A steering card taken at the next step boundary of a running primary.
    Steer,
    /// Starts a turn of an idle primary.
    Wake,
    /// Appended visibly; triggers no turn.
    Card,
}

impl Channel {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Aside => "aside",
            Channel::Steer => "steer",
            Channel::Wake => "wake",
            Channel::Card => "card",
        }
    }
}

/// One message the host injects into the primary's transcript: a custom message with
/// `customType: "advisor"`, `display: true`, the XML as content and the notes as details.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// How it reaches the primary.
    pub channel: Channel,
    /// The notes it carries (one for steers, wakes and cards; one or more for asides).
    pub notes: Vec<Advisory>,
    /// The XML content the primary receives.
    pub content: String,
}

impl Delivery {
    /// Builds a delivery and its XML content.
    pub fn new(channel: Channel, notes: Vec<Advisory>, context: Option<&str>) -> Self {
        let content = advisories_to_xml(&notes, context);
        Self {
            channel,
            notes,
            content,
        }
    }

    /// The custom message the host appends to the primary's transcript (D2).
    pub fn to_message(&self) -> crate::domain::transcript::TranscriptMessage {
        use crate::domain::transcript::{Content, CustomMessage, TranscriptMessage};
        TranscriptMessage::Custom(CustomMessage {
            custom_type: "advisor".to_string(),
            content: Content::Text(self.content.clone()),
            display: true,
            details: serde_json::to_value(&self.notes).ok().map(Into::into),
            attribution: Some("agent".to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d2_p9_a_saved_delivery_is_an_agent_attributed_advisor_message() {
        let card = Delivery::new(Channel::Card, vec![Advisory::new("x", None)], None);
        let saved = serde_json::to_value(card.to_message()).unwrap();
        assert_eq!(saved["role"], "custom");
        assert_eq!(saved["customType"], "advisor");
        assert_eq!(saved["display"], true);
        assert_eq!(saved["attribution"], "agent");
    }

    #[test]
    fn d2_xml_without_severity_has_no_attribute() {
        let a = Advisory::new("be tidy", None);
        assert_eq!(
            a.to_xml(None),
            "<advisory guidance=\"weigh, don't blindly obey\">\nbe tidy\n</advisory>"
        );
    }

    #[test]
    fn d2_xml_escapes_note() {
        let a = Advisory::new("<note> &", Some(Severity::Blocker));
        let xml = a.to_xml(None);
        assert_eq!(xml.matches("severity=\"blocker\"").count(), 1);
        assert!(xml.contains("\n&lt;note&gt; &amp;\n"));
    }

    #[test]
    fn ro18_an_advisor_name_is_escaped_to_well_formed_xml() {
        let name = "Ctl\u{1b}[31mRED\u{7}\u{202e} \"q\" <a> & b\nnext\u{ffff}";
        let xml = Advisory::new("note", None).with_advisor(name).to_xml(None);
        let attribute = xml
            .strip_prefix("<advisory advisor=\"")
            .and_then(|rest| rest.split(" guidance=").next())
            .unwrap();
        assert_eq!(
            attribute,
            "Ctl\u{fffd}[31mRED\u{fffd}\u{202e} &quot;q&quot; &lt;a&gt; &amp; b&#10;next\u{fffd}\""
        );
        let forbidden = |c: char| matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}');
        assert!(!xml.chars().any(forbidden), "{xml:?}");
    }

    #[test]
    fn sp8_models_are_kept_per_note_out_of_the_xml_and_joined_once_per_card() {
        let a = Advisory::new("check the null case", None).with_model("openai/gpt-5");
        assert!(
            !a.to_xml(None).contains("gpt-5"),
            "the primary reads no model"
        );
        let mut merged = a.clone();
        merged.add_model(Some("anthropic/claude"));
        merged.add_model(Some("openai/gpt-5"));
        merged.add_model(None);
        assert_eq!(
            merged.model.as_deref(),
            Some("openai/gpt-5, anthropic/claude")
        );
        let notes = [a, Advisory::new("from /advisor test", None), merged];
        assert_eq!(
            notes_models(&notes).as_deref(),
            Some("openai/gpt-5, anthropic/claude")
        );
        assert_eq!(notes_models(&notes[1..2]), None);
        let saved = serde_json::to_value(&notes[0]).unwrap();
        assert_eq!(saved["model"], "openai/gpt-5");
        assert!(serde_json::to_value(&notes[1])
            .unwrap()
            .get("model")
            .is_none());
    }

    #[test]
    fn severity_parses_case_insensitively() {
        assert_eq!("BLOCKER".parse::<Severity>(), Ok(Severity::Blocker));
        assert!("urgent".parse::<Severity>().is_err());
    }
}
