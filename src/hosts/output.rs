//! What the advisor has for a hook session, mapped to hook output (SPEC H6–H8): a plain
//! struct that takes the runtime's deliveries in and answers each hook event with the JSON
//! the CLI reads.
//!
//! - Asides (nits, D3) → `hookSpecificOutput.additionalContext` at the next `PostToolUse`,
//!   `UserPromptSubmit` or `SessionStart`; never a reason to continue.
//! - Steering cards and wakes (concerns, blockers, the merged final-boundary message when it
//!   asks for a continuation, CA16) → additionalContext at the next `PostToolUse` or
//!   `UserPromptSubmit`; at `Stop` one `{"decision":"block","reason":…}`: at most one block
//!   per batch, none while `stop_hook_active` (the agent is already continuing for a
//!   block), and at most [`WAKE_CAP`] per user prompt (SP3). What is not sent as a block
//!   waits for the next prompt's context.
//! - Cards (P1, CA16: a note on a terminal answer, a merged batch asking no continuation) →
//!   `systemMessage` for the user at the next `UserPromptSubmit` or `Stop`, and their XML for
//!   the model at the next `UserPromptSubmit`. A card carrying a concern or blocker waiting at
//!   `Stop` is that Stop's block instead (the CLIs pass a Stop hook's additionalContext to no
//!   model), under the same limits as steering cards. Notices → `systemMessage` only.

use serde_json::{json, Map, Value};

use crate::domain::advice::{Delivery, Severity};
use crate::domain::host::{HostEvent, StepAdvice};

use super::protocol::Outcome;

/// Stop blocks allowed per user prompt: SP3's two advisor-started wakes.
pub const WAKE_CAP: u32 = 2;

/// The hook event being answered, as far as delivery cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPoint {
    /// `SessionStart`.
    SessionStart,
    /// `UserPromptSubmit`.
    UserPromptSubmit,
    /// `PreToolUse` (the gate answers these; delivery adds nothing).
    PreToolUse,
    /// `PostToolUse`.
    PostToolUse,
    /// `Stop`.
    Stop {
        /// The agent is already continuing because a Stop hook blocked.
        stop_hook_active: bool,
    },
    /// Any other event: answered empty.
    Other,
}

impl HookPoint {
    /// The `hookEventName` of additionalContext replies.
    fn event_name(self) -> &'static str {
        match self {
            HookPoint::SessionStart => "SessionStart",
            HookPoint::UserPromptSubmit => "UserPromptSubmit",
            HookPoint::PreToolUse => "PreToolUse",
            HookPoint::PostToolUse => "PostToolUse",
            HookPoint::Stop { .. } => "Stop",
            HookPoint::Other => "",
        }
    }
}

/// A hook's answer: what to print and the outcome to log.
#[derive(Debug, Clone, PartialEq)]
pub struct HookReply {
    /// The JSON to print; `None` prints nothing.
    pub stdout: Option<Value>,
    /// The outcome.
    pub outcome: Outcome,
}

impl HookReply {
    /// Nothing to print.
    pub fn empty() -> Self {
        Self {
            stdout: None,
            outcome: Outcome::Empty,
        }
    }
}

/// What waits for one host session's next hook calls.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DeliveryState {
    /// Aside messages (nits), XML content.
    asides: Vec<String>,
    /// Steering cards and wakes, XML content.
    urgent: Vec<String>,
    /// Cards carrying a concern or blocker, not yet shown: (XML content, lines for the user).
    steering_cards: Vec<(String, Vec<String>)>,
    /// XML of cards already shown to the user, for the model at the next prompt.
    prompt_context: Vec<String>,
    /// Lines for the user.
    user: Vec<String>,
    /// Stop blocks sent since the last user prompt.
    blocks_since_prompt: u32,
}

impl DeliveryState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether anything waits.
    pub fn is_empty(&self) -> bool {
        self.asides.is_empty()
            && self.urgent.is_empty()
            && self.steering_cards.is_empty()
            && self.prompt_context.is_empty()
            && self.user.is_empty()
    }

    /// Takes in a host event of the runtime.
    pub fn absorb_event(&mut self, event: HostEvent) {
        match event {
            HostEvent::Wake { card } => self.urgent.push(card.content),
            HostEvent::SteerReady => {}
            HostEvent::Card { card } => {
                let steering = card.notes.iter().any(|note| {
                    matches!(note.severity, Some(Severity::Concern | Severity::Blocker))
                });
                if steering {
                    self.steering_cards
                        .push((card.content.clone(), card_lines(&card)));
                } else {
                    self.user.extend(card_lines(&card));
                    self.prompt_context.push(card.content);
                }
            }
            HostEvent::Notice { text, advisor } => self.user.push(match advisor {
                Some(name) => format!("advisor ({name}): {text}"),
                None => text,
            }),
        }
    }

    /// Takes in what a step boundary handed over.
    pub fn absorb_step(&mut self, advice: StepAdvice) {
        if let Some(aside) = advice.aside {
            self.asides.push(aside.content);
        }
        self.urgent
            .extend(advice.steers.into_iter().map(|steer| steer.content));
    }

    /// A line for the user at the next prompt or stop.
    pub fn push_user_line(&mut self, line: impl Into<String>) {
        self.user.push(line.into());
    }

    /// Puts a reply that never reached the hook back in front of what waits, so the next
    /// call delivers it.
    pub fn restore(&mut self, lost: DeliveryState) {
        let DeliveryState {
            mut asides,
            mut urgent,
            mut steering_cards,
            mut prompt_context,
            mut user,
            ..
        } = lost;
        asides.append(&mut self.asides);
        urgent.append(&mut self.urgent);
        steering_cards.append(&mut self.steering_cards);
        prompt_context.append(&mut self.prompt_context);
        user.append(&mut self.user);
        self.asides = asides;
        self.urgent = urgent;
        self.steering_cards = steering_cards;
        self.prompt_context = prompt_context;
        self.user = user;
    }

    /// Answers a hook at `point`: takes what it delivers and returns the reply, with the
    /// part taken (for [`DeliveryState::restore`] when the reply is lost).
    pub fn reply(&mut self, point: HookPoint) -> (HookReply, DeliveryState) {
        let mut taken = DeliveryState::default();
        match point {
            HookPoint::PreToolUse | HookPoint::Other => return (HookReply::empty(), taken),
            HookPoint::UserPromptSubmit => self.blocks_since_prompt = 0,
            _ => {}
        }
        let mut out = Map::new();
        let mut outcome = Outcome::Empty;
        if let HookPoint::Stop { stop_hook_active } = point {
            let waiting = self.urgent.len() + self.steering_cards.len();
            if waiting > 0 {
                if !stop_hook_active && self.blocks_since_prompt < WAKE_CAP {
                    taken.urgent = std::mem::take(&mut self.urgent);
                    taken.steering_cards = std::mem::take(&mut self.steering_cards);
                    self.blocks_since_prompt += 1;
                    let reason: Vec<&str> = taken
                        .urgent
                        .iter()
                        .chain(taken.steering_cards.iter().map(|(content, _)| content))
                        .map(String::as_str)
                        .collect();
                    out.insert("decision".into(), json!("block"));
                    out.insert("reason".into(), json!(reason.join("\n")));
                    outcome = Outcome::Block;
                } else {
                    self.show_steering_cards();
                    self.user.push(format!(
                        "advisor: {waiting} note(s) held for your next prompt (the agent \
                         already continued once for the advisor)"
                    ));
                }
            }
        } else {
            self.show_steering_cards();
            taken.asides = std::mem::take(&mut self.asides);
            taken.urgent = std::mem::take(&mut self.urgent);
            if point == HookPoint::UserPromptSubmit {
                taken.prompt_context = std::mem::take(&mut self.prompt_context);
            }
            let context: Vec<&str> = taken
                .prompt_context
                .iter()
                .chain(taken.asides.iter())
                .chain(taken.urgent.iter())
                .map(String::as_str)
                .collect();
            if !context.is_empty() {
                out.insert(
                    "hookSpecificOutput".into(),
                    json!({"hookEventName": point.event_name(), "additionalContext": context.join("\n")}),
                );
                outcome = Outcome::Context;
            }
        }
        if matches!(point, HookPoint::UserPromptSubmit | HookPoint::Stop { .. })
            && !self.user.is_empty()
        {
            taken.user = std::mem::take(&mut self.user);
            out.insert("systemMessage".into(), json!(taken.user.join("\n")));
            if outcome == Outcome::Empty {
                outcome = Outcome::Context;
            }
        }
        let stdout = (!out.is_empty()).then_some(Value::Object(out));
        (HookReply { stdout, outcome }, taken)
    }

    /// Steering cards no Stop took become ordinary cards: their lines for the user, their
    /// XML for the model at the next prompt (P1).
    fn show_steering_cards(&mut self) {
        for (content, lines) in std::mem::take(&mut self.steering_cards) {
            self.user.extend(lines);
            self.prompt_context.push(content);
        }
    }
}

/// A card as lines for the user: `advisor (NAME) · SEVERITY: note`.
fn card_lines(card: &Delivery) -> Vec<String> {
    card.notes
        .iter()
        .map(|note| {
            let who = match &note.advisor {
                Some(name) => format!("advisor ({name})"),
                None => "advisor".to_string(),
            };
            match note.severity {
                Some(sev) => format!("{who} · {}: {}", sev.as_str(), note.note),
                None => format!("{who}: {}", note.note),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::advice::{Advisory, Channel};

    fn delivery(channel: Channel, note: &str, sev: Severity) -> Delivery {
        Delivery::new(channel, vec![Advisory::new(note, Some(sev))], None)
    }

    fn card(note: &str, sev: Severity) -> HostEvent {
        HostEvent::Card {
            card: delivery(Channel::Card, note, sev),
        }
    }

    fn aside(note: &str) -> StepAdvice {
        StepAdvice {
            aside: Some(delivery(Channel::Aside, note, Severity::Nit)),
            steers: vec![],
        }
    }

    fn context_of(reply: &HookReply) -> Option<&str> {
        reply.stdout.as_ref()?["hookSpecificOutput"]["additionalContext"].as_str()
    }

    #[test]
    fn h6_a_concern_steer_goes_out_as_context_at_the_next_post_tool_use() {
        let mut s = DeliveryState::new();
        assert_eq!(s.reply(HookPoint::PostToolUse).0, HookReply::empty());
        s.absorb_step(StepAdvice {
            aside: None,
            steers: vec![delivery(
                Channel::Steer,
                "check the migration",
                Severity::Concern,
            )],
        });
        let (reply, _) = s.reply(HookPoint::PostToolUse);
        assert_eq!(reply.outcome, Outcome::Context);
        let out = reply.stdout.as_ref().unwrap();
        assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PostToolUse");
        assert!(context_of(&reply).unwrap().contains("severity=\"concern\""));
        assert!(context_of(&reply).unwrap().contains("check the migration"));
        assert_eq!(s.reply(HookPoint::PostToolUse).0, HookReply::empty());
    }

    #[test]
    fn h6_nothing_is_delivered_at_pre_tool_use_and_it_stays_for_later() {
        let mut s = DeliveryState::new();
        s.absorb_step(aside("rename x"));
        assert_eq!(s.reply(HookPoint::PreToolUse).0, HookReply::empty());
        let (reply, _) = s.reply(HookPoint::UserPromptSubmit);
        assert_eq!(
            reply.stdout.as_ref().unwrap()["hookSpecificOutput"]["hookEventName"],
            "UserPromptSubmit"
        );
        assert!(context_of(&reply).unwrap().contains("rename x"));
    }

    #[test]
    fn h7_a_blocker_at_stop_blocks_once_and_the_continued_stop_passes() {
        let mut s = DeliveryState::new();
        s.absorb_event(HostEvent::Wake {
            card: delivery(Channel::Wake, "the tests were never run", Severity::Blocker),
        });
        let (reply, _) = s.reply(HookPoint::Stop {
            stop_hook_active: false,
        });
        assert_eq!(reply.outcome, Outcome::Block);
        let out = reply.stdout.unwrap();
        assert_eq!(out["decision"], "block");
        assert!(out["reason"]
            .as_str()
            .unwrap()
            .contains("the tests were never run"));
        // A second blocker arrives while the agent continues: no second block.
        s.absorb_event(HostEvent::Wake {
            card: delivery(Channel::Wake, "and the lint fails", Severity::Blocker),
        });
        let (reply, _) = s.reply(HookPoint::Stop {
            stop_hook_active: true,
        });
        assert_ne!(reply.outcome, Outcome::Block);
        let out = reply.stdout.unwrap();
        assert!(out.get("decision").is_none());
        assert!(out["systemMessage"]
            .as_str()
            .unwrap()
            .contains("held for your next prompt"));
        // …and it reaches the model at the next prompt.
        let (reply, _) = s.reply(HookPoint::UserPromptSubmit);
        assert!(context_of(&reply).unwrap().contains("and the lint fails"));
    }

    #[test]
    fn h7_sp3_no_more_than_two_blocks_per_user_prompt() {
        let mut s = DeliveryState::new();
        let stop = HookPoint::Stop {
            stop_hook_active: false,
        };
        for i in 0..3 {
            s.absorb_event(HostEvent::Wake {
                card: delivery(Channel::Wake, &format!("blocker {i}"), Severity::Blocker),
            });
            let (reply, _) = s.reply(stop);
            assert_eq!(reply.outcome == Outcome::Block, i < 2, "stop {i}");
        }
        s.reply(HookPoint::UserPromptSubmit);
        s.absorb_event(HostEvent::Wake {
            card: delivery(Channel::Wake, "blocker again", Severity::Blocker),
        });
        assert_eq!(s.reply(stop).0.outcome, Outcome::Block);
    }

    #[test]
    fn h7_nits_never_block_a_stop() {
        let mut s = DeliveryState::new();
        s.absorb_step(aside("a nit"));
        let (reply, _) = s.reply(HookPoint::Stop {
            stop_hook_active: false,
        });
        assert_eq!(reply, HookReply::empty());
        assert!(!s.is_empty());
    }

    #[test]
    fn h8_cards_and_notices_go_to_the_user_at_the_next_prompt_or_stop() {
        let mut s = DeliveryState::new();
        s.absorb_event(card("consider a test", Severity::Nit));
        s.absorb_event(HostEvent::notice("advisor: paused"));
        assert_eq!(s.reply(HookPoint::PostToolUse).0, HookReply::empty());
        let (reply, _) = s.reply(HookPoint::Stop {
            stop_hook_active: false,
        });
        assert_eq!(reply.outcome, Outcome::Context);
        let out = reply.stdout.unwrap();
        assert_eq!(
            out["systemMessage"],
            "advisor · nit: consider a test\nadvisor: paused"
        );
        assert!(
            out.get("hookSpecificOutput").is_none(),
            "no context at Stop"
        );
        // The card enters the model's context at the next prompt (P1); the notice does not.
        let (reply, _) = s.reply(HookPoint::UserPromptSubmit);
        let text = context_of(&reply).unwrap();
        assert!(text.contains("consider a test"));
        assert!(!text.contains("paused"));
        assert!(s.is_empty());
    }

    fn stop(stop_hook_active: bool) -> HookPoint {
        HookPoint::Stop { stop_hook_active }
    }

    /// The output of a Stop that neither blocked nor sent context (H7).
    fn passed_stop(reply: HookReply) -> Value {
        assert_ne!(reply.outcome, Outcome::Block);
        let out = reply.stdout.unwrap();
        assert!(out.get("decision").is_none());
        assert!(
            out.get("hookSpecificOutput").is_none(),
            "no context at Stop"
        );
        out
    }

    #[test]
    fn h7_defer_p1_ca16_a_concern_pending_at_stop_blocks_under_defer() {
        // Under `defer` a concern on a terminal answer (P1), or a merged final-boundary batch
        // that asks no continuation (CA16), reaches the host as a card.
        let mut s = DeliveryState::new();
        s.absorb_event(HostEvent::Card {
            card: delivery(
                Channel::Card,
                "the migration is untested",
                Severity::Concern,
            ),
        });
        let (reply, _) = s.reply(stop(false));
        assert_eq!(reply.outcome, Outcome::Block);
        let out = reply.stdout.unwrap();
        assert_eq!(out["decision"], "block");
        assert!(out["reason"]
            .as_str()
            .unwrap()
            .contains("the migration is untested"));
        assert!(
            out.get("hookSpecificOutput").is_none(),
            "no context at Stop"
        );
        assert!(s.is_empty(), "sent once, not again at the next prompt");
        // The continued stop passes, even with another concern waiting; that one is kept.
        s.absorb_event(card("and the docs", Severity::Concern));
        let out = passed_stop(s.reply(stop(true)).0);
        let lines = out["systemMessage"].as_str().unwrap();
        assert!(lines.contains("advisor · concern: and the docs"), "{lines}");
        assert!(lines.contains("held for your next prompt"), "{lines}");
        let (reply, _) = s.reply(HookPoint::UserPromptSubmit);
        assert!(context_of(&reply).unwrap().contains("and the docs"));
        assert!(s.is_empty());
    }

    #[test]
    fn h7_sp3_a_concern_card_past_the_wake_cap_is_kept_for_the_next_prompt() {
        let mut s = DeliveryState::new();
        for i in 0..3 {
            s.absorb_event(card(&format!("concern {i}"), Severity::Concern));
            let (reply, _) = s.reply(stop(false));
            assert_eq!(reply.outcome == Outcome::Block, i < 2, "stop {i}");
        }
        let (reply, _) = s.reply(HookPoint::UserPromptSubmit);
        assert!(context_of(&reply).unwrap().contains("concern 2"));
    }

    #[test]
    fn h7_p1_a_nit_pending_at_stop_is_kept_for_the_next_prompt() {
        let mut s = DeliveryState::new();
        s.absorb_step(aside("rename x"));
        s.absorb_event(card("trim the log line", Severity::Nit));
        let out = passed_stop(s.reply(stop(false)).0);
        assert_eq!(out["systemMessage"], "advisor · nit: trim the log line");
        let (reply, _) = s.reply(HookPoint::UserPromptSubmit);
        let text = context_of(&reply).unwrap();
        assert!(text.contains("rename x") && text.contains("trim the log line"));
        assert!(s.is_empty());
    }

    #[test]
    fn h6_a_lost_stop_block_is_delivered_by_the_next_call() {
        let mut s = DeliveryState::new();
        s.absorb_event(card("lost concern", Severity::Concern));
        let (_, taken) = s.reply(stop(false));
        s.restore(taken);
        let (reply, _) = s.reply(HookPoint::UserPromptSubmit);
        assert!(context_of(&reply).unwrap().contains("lost concern"));
    }

    #[test]
    fn h6_a_lost_reply_is_delivered_by_the_next_call() {
        let mut s = DeliveryState::new();
        s.absorb_step(aside("first"));
        let (_, taken) = s.reply(HookPoint::PostToolUse);
        s.absorb_step(aside("second"));
        s.restore(taken);
        let (reply, _) = s.reply(HookPoint::PostToolUse);
        let text = context_of(&reply).unwrap();
        assert!(text.find("first").unwrap() < text.find("second").unwrap());
    }
}
