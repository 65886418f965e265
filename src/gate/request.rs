//! The action gate's request, shaped in plain code (GT3, GT12): the prompt of a proposed
//! call, how long its model may take, and the conversation it is shown — the asked
//! advisor's own context followed by the transcript's messages it has not been sent yet, or,
//! while it has none, the last rendered turns of the transcript the host last handed over.
//! The supervisor gathers the parts off its mailbox and asks (`actors/gate_ask.rs`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::classify::ActionReading;
use super::verdict::{advisor_conversation, GatePrompt, GATE_RECENT_MESSAGES};
use super::ProposedAction;
use crate::domain::transcript::{Transcript, TranscriptMessage};
use crate::model::ChatMessage;
use crate::render::{render_delta, TranscriptView};

/// The heading before the transcript's messages the advisor has not been sent yet (GT3).
pub const UNSEEN_HEADING: &str = "[newer in the session, not yet sent to the reviewer]\n";

/// At most this many of the transcript's newest messages are rendered as not yet seen (the
/// conversation's character bound cuts them further).
pub const MAX_UNSEEN_MESSAGES: usize = 256;

/// What the gate's conversation is made of beside the asked advisor's own context (GT3):
/// the transcript the host last handed over and the member's (turn end, length) pairs,
/// which together tell the messages past what the advisor's context covers.
#[derive(Debug, Clone, Default)]
pub struct GateTranscript {
    /// The transcript the host last handed over.
    pub transcript: Option<Transcript>,
    /// The transcript's length at the asked member's newest turn ends.
    pub turn_lens: Vec<(u64, usize)>,
}

impl GateTranscript {
    /// The newest [`GATE_RECENT_MESSAGES`] messages: the conversation while the advisor
    /// has no context yet.
    pub fn recent(&self) -> Vec<Arc<TranscriptMessage>> {
        (self.transcript.as_ref())
            .map(|t| t.tail(t.len().saturating_sub(GATE_RECENT_MESSAGES)))
            .unwrap_or_default()
    }

    /// The messages past turn end `turn` (the one the context's last review covered up to),
    /// newest [`MAX_UNSEEN_MESSAGES`] at most; none when the length there is not known.
    pub fn past(&self, turn: Option<u64>) -> Vec<Arc<TranscriptMessage>> {
        let (Some(turn), Some(transcript)) = (turn, &self.transcript) else {
            return Vec::new();
        };
        let Some(&(_, seen)) = self.turn_lens.iter().find(|(t, _)| *t == turn) else {
            return Vec::new();
        };
        let from = seen.max(transcript.len().saturating_sub(MAX_UNSEEN_MESSAGES));
        transcript.tail(from)
    }

    /// The conversation the gate is shown (GT3): the advisor's `own` context, covering up
    /// to its turn end `own_turn`, then the messages past that under [`UNSEEN_HEADING`];
    /// while `own` is empty, the `recent` transcript. The newest part wins the bound
    /// (`gate_request` keeps the newest characters).
    pub fn conversation(
        &self,
        own: &[ChatMessage],
        own_turn: Option<u64>,
        recent: &[Arc<TranscriptMessage>],
    ) -> String {
        if own.is_empty() {
            return render_delta(TranscriptView::Compact, recent);
        }
        let mut text = advisor_conversation(own);
        let newer = self.past(own_turn);
        if !newer.is_empty() {
            text.push_str("\n\n");
            text.push_str(UNSEEN_HEADING);
            text.push_str(&render_delta(TranscriptView::Compact, &newer));
        }
        text
    }
}

/// The prompt about `action` as `reading` read it, in the workspace `root`; its rules and
/// conversation are filled in once gathered.
pub fn action_prompt(action: &ProposedAction, reading: &ActionReading, root: &Path) -> GatePrompt {
    GatePrompt {
        rules: String::new(),
        conversation: String::new(),
        tool: action.tool.clone(),
        input: action.input.to_string(),
        cwd: workspace_text(action, root),
        risks: reading.risks.iter().copied().collect(),
    }
}

/// How long the gate's model may take (GT12): `timeout`, cut to what is left before a hook
/// host's `deadline` when that comes sooner.
pub fn gate_timeout(timeout: Duration, deadline: Option<tokio::time::Instant>) -> Duration {
    deadline.map_or(timeout, |due| {
        timeout.min(due.saturating_duration_since(tokio::time::Instant::now()))
    })
}

/// The call's working directory as the gate is shown it.
fn workspace_text(action: &ProposedAction, root: &Path) -> String {
    match &action.cwd {
        Some(cwd) if cwd.is_absolute() => cwd.display().to_string(),
        Some(cwd) => root.join(cwd).display().to_string(),
        None => root.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript(len: usize) -> Transcript {
        Transcript::from_messages((0..len).map(|i| TranscriptMessage::user(format!("m{i}"))))
    }

    fn texts(messages: &[Arc<TranscriptMessage>]) -> String {
        render_delta(TranscriptView::Compact, messages)
    }

    #[test]
    fn gt3_the_messages_past_the_advisor_s_turn_are_the_unseen_ones() {
        let view = GateTranscript {
            transcript: Some(transcript(5)),
            turn_lens: vec![(1, 2), (2, 4)],
        };
        assert_eq!(view.past(Some(2)).len(), 1);
        assert_eq!(view.past(Some(1)).len(), 3);
        assert!(view.past(Some(9)).is_empty(), "a turn end not kept: none");
        assert!(view.past(None).is_empty(), "no review yet: none");
    }

    #[test]
    fn gt3_at_most_the_newest_256_messages_count_as_unseen() {
        let view = GateTranscript {
            transcript: Some(transcript(MAX_UNSEEN_MESSAGES + 10)),
            turn_lens: vec![(1, 0)],
        };
        assert_eq!(view.past(Some(1)).len(), MAX_UNSEEN_MESSAGES);
    }

    #[test]
    fn gt3_the_conversation_is_the_advisor_s_context_then_what_it_has_not_seen() {
        let view = GateTranscript {
            transcript: Some(transcript(3)),
            turn_lens: vec![(1, 2)],
        };
        let recent = view.recent();
        assert_eq!(view.conversation(&[], Some(1), &recent), texts(&recent));
        let own = [ChatMessage::User {
            text: "review this".into(),
        }];
        let text = view.conversation(&own, Some(1), &recent);
        let unseen = texts(&view.past(Some(1)));
        assert_eq!(
            text,
            format!("{}\n\n{UNSEEN_HEADING}{unseen}", advisor_conversation(&own))
        );
        assert_eq!(
            view.conversation(&own, None, &recent),
            advisor_conversation(&own)
        );
    }

    #[test]
    fn gt3_gt12_the_prompt_shows_the_call_s_directory_and_the_deadline_cuts_the_timeout() {
        let action = ProposedAction {
            tool: "bash".into(),
            input: serde_json::json!({"command": "ls"}),
            cwd: Some("sub".into()),
        };
        let reading = super::super::classify(
            &action,
            &super::super::Workspace::new(Path::new("/w"), None),
        );
        let prompt = action_prompt(&action, &reading, Path::new("/w"));
        assert_eq!(
            (prompt.tool.as_str(), prompt.cwd.as_str()),
            ("bash", "/w/sub")
        );
        let absolute = ProposedAction {
            cwd: Some("/elsewhere".into()),
            ..action.clone()
        };
        let prompt = action_prompt(&absolute, &reading, Path::new("/w"));
        assert_eq!(prompt.cwd, "/elsewhere");
        let ten = Duration::from_secs(10);
        assert_eq!(gate_timeout(ten, None), ten);
        let soon = tokio::time::Instant::now() + Duration::from_secs(1);
        assert!(gate_timeout(ten, Some(soon)) <= Duration::from_secs(1));
    }
}
