//! One served session: its runtime handle, the transcript the server keeps from the
//! messages the host appends (V2), the last `leaf` seen, and the task that turns the
//! runtime's host events into notifications.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::mpsc::Sender;

use super::params::ParsedMessages;
use super::protocol::{notification_line, RpcError, SESSION_ERROR};
use crate::config::RuntimeConfig;
use crate::domain::advice::{notes_models, Delivery};
use crate::domain::host::HostEvent;
use crate::domain::transcript::Transcript;
use crate::handle::AdvisorHandle;
use crate::runtime::AdvisorRuntime;

/// Where lines for the client go: the one writer task reads the other end (V1). Bounded
/// ([`super::MAX_QUEUED_LINES`]): a sender waits while it is full, and the reader reads no
/// input meanwhile (backpressure, V4).
pub type Outbox = Sender<String>;

/// What the server knows of the host's cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeafState {
    /// The host opened with messages but named no leaf: the next `base` is taken as is.
    Unknown,
    /// The last leaf the host sent (`None`: nothing sent yet, `base` must be null).
    Known(Option<String>),
}

/// The default budget for the transcripts one serve process holds for its sessions.
pub const DEFAULT_HELD_BYTES: usize = 1 << 30;

/// The budget for the transcripts a serve process holds, across its sessions (V4): each
/// message counts its JSON bytes plus [`super::params::MESSAGE_OVERHEAD_BYTES`].
#[derive(Debug)]
pub struct HeldBudget {
    limit: usize,
    used: Mutex<usize>,
}

impl HeldBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            used: Mutex::new(0),
        }
    }

    /// Bytes held now.
    #[cfg(test)]
    pub fn used(&self) -> usize {
        *self.used.lock()
    }

    /// Exchanges `old` held bytes for `new` ones, unless that would pass the budget: then
    /// nothing changes and the error says so (-32000 with `data {reason: "heldBudget"}`).
    pub fn exchange(&self, old: usize, new: usize) -> Result<(), RpcError> {
        let mut used = self.used.lock();
        let after = used.saturating_sub(old).saturating_add(new);
        if new > old && after > self.limit {
            let size = |b: usize| match b {
                b if b >= 1 << 20 => format!("{} MiB", b.div_ceil(1 << 20)),
                b => format!("{} KiB", b.div_ceil(1 << 10)),
            };
            return Err(RpcError {
                data: Some(json!({
                    "reason": "heldBudget",
                    "budgetBytes": self.limit,
                    "heldBytes": *used,
                    "neededBytes": new - old,
                })),
                ..RpcError::new(
                    SESSION_ERROR,
                    format!(
                        "refused: the server already holds {} of transcripts and these \
                         messages need {} more, past its budget of {} for held \
                         transcripts; nothing was appended (close sessions that are done, \
                         or send fewer messages)",
                        size(*used),
                        size(new - old),
                        size(self.limit)
                    ),
                )
            });
        }
        *used = after;
        Ok(())
    }
}

/// The session's transcript as the server keeps it: a shared [`Transcript`] the runtime
/// reads (appends are O(delta), V2/X1), the `base`/`leaf` check, and what it costs the
/// process's [`HeldBudget`] (given back when the log is dropped).
#[derive(Debug)]
pub struct TranscriptLog {
    transcript: Transcript,
    leaf: Mutex<(LeafState, usize)>,
    budget: Arc<HeldBudget>,
}

impl Drop for TranscriptLog {
    fn drop(&mut self) {
        let held = self.leaf.get_mut().1;
        let _ = self.budget.exchange(held, 0);
    }
}

impl TranscriptLog {
    /// A log holding `messages`, at `leaf` when the host named one, if `budget` has room
    /// for them.
    pub fn new(
        messages: ParsedMessages,
        leaf: Option<String>,
        budget: Arc<HeldBudget>,
    ) -> Result<Self, RpcError> {
        budget.exchange(0, messages.cost)?;
        let state = match leaf {
            Some(leaf) => LeafState::Known(Some(leaf)),
            None if messages.messages.is_empty() => LeafState::Known(None),
            None => LeafState::Unknown,
        };
        Ok(Self {
            transcript: Transcript::from_messages(messages.messages),
            leaf: Mutex::new((state, messages.cost)),
            budget,
        })
    }

    /// The shared transcript.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// The last leaf seen.
    #[cfg(test)]
    pub fn leaf(&self) -> LeafState {
        self.leaf.lock().0.clone()
    }

    /// `session/turnEnd`'s bookkeeping: checks `base` against the last leaf (-32010 with
    /// `data {expected}` when it differs, nothing appended) and the held budget (-32000,
    /// nothing appended), then appends `messages` and moves to `leaf`. Check and append are
    /// one step, so concurrent calls cannot interleave.
    pub fn append(
        &self,
        base: Option<&str>,
        leaf: String,
        messages: ParsedMessages,
    ) -> Result<(), RpcError> {
        let mut guard = self.leaf.lock();
        let (state, held) = &mut *guard;
        if let LeafState::Known(expected) = &*state {
            if expected.as_deref() != base {
                return Err(RpcError::base_mismatch(expected.as_deref(), base));
            }
        }
        self.budget.exchange(*held, *held + messages.cost)?;
        *held += messages.cost;
        for message in messages.messages {
            self.transcript.push(message);
        }
        *state = LeafState::Known(Some(leaf));
        Ok(())
    }

    /// `session/rewrite`'s bookkeeping: the whole current branch replaces the transcript,
    /// if the held budget has room for it (else -32000 and the old transcript stays).
    pub fn replace(&self, leaf: Option<String>, messages: ParsedMessages) -> Result<(), RpcError> {
        let mut guard = self.leaf.lock();
        let (state, held) = &mut *guard;
        self.budget.exchange(*held, messages.cost)?;
        *held = messages.cost;
        self.transcript.replace(messages.messages);
        *state = LeafState::Known(leaf);
        Ok(())
    }
}

/// A served session: one entry of the dispatcher's table, opened by `session/open`.
pub struct ServedSession {
    /// The runtime's handle.
    pub handle: AdvisorHandle,
    /// The transcript and cursor.
    pub log: TranscriptLog,
    /// Why the server disposed of it, once it did: what an ask it ended says (G8).
    pub ended_by: Mutex<Option<&'static str>>,
}

impl ServedSession {
    /// A served session of `handle` keeping `log`.
    pub fn new(handle: AdvisorHandle, log: TranscriptLog) -> Self {
        Self {
            handle,
            log,
            ended_by: Mutex::new(None),
        }
    }

    /// Disposes the served session's primary session (R2), recording `why` for an ask it ends.
    pub async fn dispose(&self, why: &'static str) {
        self.ended_by.lock().get_or_insert(why);
        let _ = self.handle.dispose().await;
    }
}

/// Opens a session on the serve process's shared runtime (A6): its actors go to the least
/// loaded arbiter of the pool, its models through the providers' call limits, and a task
/// hands its host events to the writer as notifications, in the order raised, until the
/// session is closed. Starts no thread.
pub fn open_on(
    runtime: &AdvisorRuntime,
    config: RuntimeConfig,
    session_id: &str,
    out: Outbox,
) -> AdvisorHandle {
    let (handle, mut events) = runtime.open(config);
    let session_id = session_id.to_string();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            // A writer that is gone means the server is ending; the event has nobody to go to.
            if out.send(event_line(&session_id, &event)).await.is_err() {
                return;
            }
        }
    });
    handle
}

/// A card or delivery as the client sees it: `{channel, content, model?, notes: [{severity,
/// note, advisor?, model?, turnsAgo?}]}` with `severity` null when the advisor gave none,
/// `advisor` the name of the named advisor that raised the note (names comma-joined for a note
/// two raised, RO22), absent for the unnamed advisor (RO12, RO23), `model` the model that
/// produced the note, after fallback (SP8; the card's: its notes' models, each once), absent
/// for a note no model wrote (`/advisor test`), and `turnsAgo` on every note of a merged
/// final-boundary delivery (CA14: 0 for the newest turn), absent on a live one.
pub fn delivery_json(delivery: &Delivery) -> Value {
    let notes: Vec<Value> = delivery
        .notes
        .iter()
        .map(|n| {
            let mut note = json!({ "severity": n.severity.map(|s| s.as_str()), "note": n.note });
            if let Some(advisor) = &n.advisor {
                note["advisor"] = json!(advisor);
            }
            if let Some(turns_ago) = n.turns_ago {
                note["turnsAgo"] = json!(turns_ago);
            }
            if let Some(model) = &n.model {
                note["model"] = json!(model);
            }
            note
        })
        .collect();
    let mut card = json!({
        "channel": delivery.channel.as_str(),
        "content": delivery.content,
        "notes": notes,
    });
    if let Some(models) = notes_models(&delivery.notes) {
        card["model"] = json!(models);
    }
    card
}

/// The notification line for a host event of session `session_id` (V2).
pub fn event_line(session_id: &str, event: &HostEvent) -> String {
    match event {
        HostEvent::Wake { card } => notification_line(
            "session/wake",
            json!({ "sessionId": session_id, "card": delivery_json(card) }),
        ),
        HostEvent::Card { card } => notification_line(
            "session/card",
            json!({ "sessionId": session_id, "card": delivery_json(card) }),
        ),
        HostEvent::Notice { text, advisor } => {
            let mut params = json!({ "sessionId": session_id, "text": text });
            if let Some(advisor) = advisor {
                params["advisor"] = json!(advisor);
            }
            notification_line("session/notice", params)
        }
        HostEvent::SteerReady => {
            notification_line("session/steerReady", json!({ "sessionId": session_id }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::advice::{Advisory, Channel, Severity};
    use crate::domain::transcript::TranscriptMessage;

    fn user(t: &str) -> TranscriptMessage {
        TranscriptMessage::user(t)
    }

    /// Messages costing 100 bytes each.
    fn msgs(messages: Vec<TranscriptMessage>) -> ParsedMessages {
        ParsedMessages {
            cost: 100 * messages.len(),
            messages,
        }
    }

    fn new_log(messages: Vec<TranscriptMessage>, leaf: Option<String>) -> TranscriptLog {
        TranscriptLog::new(msgs(messages), leaf, Arc::new(HeldBudget::new(1 << 20))).unwrap()
    }

    #[test]
    fn v4_the_held_budget_refuses_the_call_that_would_pass_it_and_keeps_what_is_held() {
        let budget = Arc::new(HeldBudget::new(500));
        let a = TranscriptLog::new(msgs(vec![user("1"), user("2")]), None, Arc::clone(&budget))
            .unwrap();
        let b = TranscriptLog::new(msgs(vec![user("3")]), None, Arc::clone(&budget)).unwrap();
        assert_eq!(budget.used(), 300);
        let e = a
            .append(
                Some("x"),
                "y".into(),
                msgs(vec![user("4"), user("5"), user("6")]),
            )
            .unwrap_err();
        assert_eq!(e.code, SESSION_ERROR);
        assert_eq!(e.data.as_ref().unwrap()["reason"], "heldBudget");
        assert!(e.message.contains("past its budget"), "{}", e.message);
        assert_eq!(a.transcript().len(), 2, "nothing appended, nothing lost");
        assert_eq!(budget.used(), 300);
        // A rewrite counts the new branch instead of the old one.
        assert!(a.replace(None, msgs(vec![user("s")])).is_ok());
        assert_eq!(budget.used(), 200);
        assert!(b.replace(None, msgs(vec![user("t"); 5])).is_err());
        assert_eq!(b.transcript().len(), 1, "the old branch stays");
        drop(a);
        drop(b);
        assert_eq!(budget.used(), 0, "closing gives it back");
        assert!(TranscriptLog::new(msgs(vec![user("u"); 6]), None, budget).is_err());
    }

    #[test]
    fn v2_base_must_be_the_last_leaf_and_a_mismatch_appends_nothing() {
        let log = new_log(Vec::new(), None);
        let e = log
            .append(Some("x"), "a".into(), msgs(vec![user("1")]))
            .unwrap_err();
        assert_eq!(e.data, Some(json!({"expected": null})));
        assert_eq!(log.transcript().len(), 0);
        log.append(None, "a".into(), msgs(vec![user("1"), user("2")]))
            .unwrap();
        log.append(Some("a"), "b".into(), msgs(vec![user("3")]))
            .unwrap();
        let e = log
            .append(Some("a"), "c".into(), msgs(vec![user("4")]))
            .unwrap_err();
        assert_eq!(e.code, super::super::protocol::BASE_MISMATCH);
        assert_eq!(e.data, Some(json!({"expected": "b"})));
        assert_eq!(log.transcript().len(), 3);
        assert_eq!(log.leaf(), LeafState::Known(Some("b".into())));
    }

    #[test]
    fn v2_open_with_messages_and_no_leaf_takes_the_first_base_as_is() {
        let log = new_log(vec![user("old")], None);
        assert_eq!(log.leaf(), LeafState::Unknown);
        log.append(Some("whatever"), "n".into(), msgs(vec![user("new")]))
            .unwrap();
        assert!(log
            .append(Some("whatever"), "m".into(), msgs(vec![]))
            .is_err());
        let log = new_log(vec![user("old")], Some("L".into()));
        assert!(log.append(None, "n".into(), msgs(vec![])).is_err());
        log.append(Some("L"), "n".into(), msgs(vec![])).unwrap();
    }

    #[test]
    fn r1_rewrite_replaces_the_transcript_in_place_and_sets_the_leaf() {
        let log = new_log(vec![user("a"), user("b")], Some("b".into()));
        let shared = log.transcript().clone();
        log.replace(Some("z".into()), msgs(vec![user("summary")]))
            .unwrap();
        assert_eq!(shared.len(), 1, "the runtime's clone sees the new branch");
        log.append(Some("z"), "y".into(), msgs(vec![user("c")]))
            .unwrap();
        log.replace(None, msgs(Vec::new())).unwrap();
        log.append(None, "q".into(), msgs(vec![])).unwrap();
    }

    #[test]
    fn v2_notifications_carry_the_session_id_and_the_card_shape() {
        let card = Delivery::new(
            Channel::Wake,
            vec![Advisory::new("Stop & check", Some(Severity::Blocker))],
            None,
        );
        let v: Value =
            serde_json::from_str(&event_line("s1", &HostEvent::Wake { card: card.clone() }))
                .unwrap();
        assert_eq!(v["method"], "session/wake");
        assert_eq!(v["params"]["sessionId"], "s1");
        assert_eq!(v["params"]["card"]["channel"], "wake");
        assert_eq!(
            v["params"]["card"]["notes"],
            json!([{"severity": "blocker", "note": "Stop & check"}])
        );
        assert!(v["params"]["card"]["content"]
            .as_str()
            .unwrap()
            .contains("Stop &amp; check"));
        assert!(v.get("id").is_none());
        let v: Value = serde_json::from_str(&event_line("s1", &HostEvent::notice("hi"))).unwrap();
        assert_eq!(v["params"], json!({"sessionId": "s1", "text": "hi"}));
        let v: Value = serde_json::from_str(&event_line("s2", &HostEvent::SteerReady)).unwrap();
        assert_eq!(v["method"], "session/steerReady");
        let nit = Delivery::new(Channel::Card, vec![Advisory::new("n", None)], None);
        assert_eq!(
            delivery_json(&nit)["notes"],
            json!([{"severity": null, "note": "n"}])
        );
    }

    #[test]
    fn ca14_the_notes_of_a_merged_card_carry_turns_ago() {
        let mut late = Advisory::new("old", Some(Severity::Concern));
        late.turns_ago = Some(2);
        let mut now = Advisory::new("new", Some(Severity::Blocker));
        now.turns_ago = Some(0);
        let card = Delivery::new(Channel::Wake, vec![now, late], None);
        let v: Value = serde_json::from_str(&event_line("s1", &HostEvent::Wake { card })).unwrap();
        assert_eq!(
            v["params"]["card"]["notes"],
            json!([{"severity": "blocker", "note": "new", "turnsAgo": 0},
                {"severity": "concern", "note": "old", "turnsAgo": 2}])
        );
    }

    #[test]
    fn ro23_cards_and_notices_name_their_advisor_and_the_unnamed_ones_do_not() {
        let card = Delivery::new(
            Channel::Card,
            vec![
                Advisory::new("Split the module", Some(Severity::Concern))
                    .with_advisor("Architecture"),
                Advisory::new("Same note", Some(Severity::Nit))
                    .with_advisor("Architecture, Security"),
            ],
            None,
        );
        let v: Value = serde_json::from_str(&event_line("s1", &HostEvent::Card { card })).unwrap();
        assert_eq!(
            v["params"]["card"]["notes"],
            json!([
                {"severity": "concern", "note": "Split the module", "advisor": "Architecture"},
                {"severity": "nit", "note": "Same note", "advisor": "Architecture, Security"},
            ])
        );
        assert!(v["params"]["card"]["content"]
            .as_str()
            .unwrap()
            .contains("<advisory advisor=\"Architecture\""));
        let notice = HostEvent::Notice {
            text: "advisor: paused".into(),
            advisor: Some("Security".into()),
        };
        let v: Value = serde_json::from_str(&event_line("s1", &notice)).unwrap();
        assert_eq!(
            v["params"],
            json!({"sessionId": "s1", "text": "advisor: paused", "advisor": "Security"})
        );
        let v: Value = serde_json::from_str(&event_line("s1", &HostEvent::notice("x"))).unwrap();
        assert!(v["params"].get("advisor").is_none(), "{v}");
    }
}
