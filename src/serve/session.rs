//! One served session: its runtime handle, the transcript the server keeps from the
//! messages the host appends (V2), the last `leaf` seen, and the task that turns the
//! runtime's host events into notifications.

use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::mpsc::Sender;

use super::protocol::{notification_line, RpcError};
use crate::domain::advice::Delivery;
use crate::domain::host::HostEvent;
use crate::domain::transcript::{Transcript, TranscriptMessage};
use crate::handle::AdvisorHandle;
use crate::runtime::AdvisorRuntime;
use crate::RuntimeConfig;

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

/// The session's transcript as the server keeps it: a shared [`Transcript`] the runtime
/// reads (appends are O(delta), V2/X1) and the `base`/`leaf` check.
#[derive(Debug)]
pub struct TranscriptLog {
    transcript: Transcript,
    leaf: Mutex<LeafState>,
}

impl TranscriptLog {
    /// A log holding `messages`, at `leaf` when the host named one.
    pub fn new(messages: Vec<TranscriptMessage>, leaf: Option<String>) -> Self {
        let state = match leaf {
            Some(leaf) => LeafState::Known(Some(leaf)),
            None if messages.is_empty() => LeafState::Known(None),
            None => LeafState::Unknown,
        };
        Self {
            transcript: Transcript::from_messages(messages),
            leaf: Mutex::new(state),
        }
    }

    /// The shared transcript.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// The last leaf seen.
    pub fn leaf(&self) -> LeafState {
        self.leaf.lock().clone()
    }

    /// `session/turnEnd`'s bookkeeping: checks `base` against the last leaf (-32010 with
    /// `data {expected}` when it differs, nothing appended), then appends `messages` and
    /// moves to `leaf`. Check and append are one step, so concurrent calls cannot interleave.
    pub fn append(
        &self,
        base: Option<&str>,
        leaf: String,
        messages: Vec<TranscriptMessage>,
    ) -> Result<(), RpcError> {
        let mut state = self.leaf.lock();
        if let LeafState::Known(expected) = &*state {
            if expected.as_deref() != base {
                return Err(RpcError::base_mismatch(expected.as_deref(), base));
            }
        }
        for message in messages {
            self.transcript.push(message);
        }
        *state = LeafState::Known(Some(leaf));
        Ok(())
    }

    /// `session/rewrite`'s bookkeeping: the whole current branch replaces the transcript.
    pub fn replace(&self, leaf: Option<String>, messages: Vec<TranscriptMessage>) {
        let mut state = self.leaf.lock();
        self.transcript.replace(messages);
        *state = LeafState::Known(leaf);
    }
}

/// A session of the table.
pub struct Session {
    /// The runtime's handle.
    pub handle: AdvisorHandle,
    /// The transcript and cursor.
    pub log: TranscriptLog,
    /// Why the server disposed of it, once it did: what an ask it ended says (G8).
    pub ended_by: Mutex<Option<&'static str>>,
}

impl Session {
    /// A session of `handle` keeping `log`.
    pub fn new(handle: AdvisorHandle, log: TranscriptLog) -> Self {
        Self {
            handle,
            log,
            ended_by: Mutex::new(None),
        }
    }

    /// Disposes the session (R2), recording `why` for an ask it ends.
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

/// A card or delivery as the client sees it: `{channel, content, notes: [{severity, note}]}`
/// with `severity` null when the advisor gave none.
pub fn delivery_json(delivery: &Delivery) -> Value {
    let notes: Vec<Value> = delivery
        .notes
        .iter()
        .map(|n| json!({ "severity": n.severity.map(|s| s.as_str()), "note": n.note }))
        .collect();
    json!({
        "channel": delivery.channel.as_str(),
        "content": delivery.content,
        "notes": notes,
    })
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
        HostEvent::Notice { text } => notification_line(
            "session/notice",
            json!({ "sessionId": session_id, "text": text }),
        ),
        HostEvent::SteerReady => {
            notification_line("session/steerReady", json!({ "sessionId": session_id }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::advice::{Advisory, Channel, Severity};

    fn user(t: &str) -> TranscriptMessage {
        TranscriptMessage::user(t)
    }

    #[test]
    fn v2_base_must_be_the_last_leaf_and_a_mismatch_appends_nothing() {
        let log = TranscriptLog::new(Vec::new(), None);
        let e = log
            .append(Some("x"), "a".into(), vec![user("1")])
            .unwrap_err();
        assert_eq!(e.data, Some(json!({"expected": null})));
        assert_eq!(log.transcript().len(), 0);
        log.append(None, "a".into(), vec![user("1"), user("2")])
            .unwrap();
        log.append(Some("a"), "b".into(), vec![user("3")]).unwrap();
        let e = log
            .append(Some("a"), "c".into(), vec![user("4")])
            .unwrap_err();
        assert_eq!(e.code, super::super::protocol::BASE_MISMATCH);
        assert_eq!(e.data, Some(json!({"expected": "b"})));
        assert_eq!(log.transcript().len(), 3);
        assert_eq!(log.leaf(), LeafState::Known(Some("b".into())));
    }

    #[test]
    fn v2_open_with_messages_and_no_leaf_takes_the_first_base_as_is() {
        let log = TranscriptLog::new(vec![user("old")], None);
        assert_eq!(log.leaf(), LeafState::Unknown);
        log.append(Some("whatever"), "n".into(), vec![user("new")])
            .unwrap();
        assert!(log.append(Some("whatever"), "m".into(), vec![]).is_err());
        let log = TranscriptLog::new(vec![user("old")], Some("L".into()));
        assert!(log.append(None, "n".into(), vec![]).is_err());
        log.append(Some("L"), "n".into(), vec![]).unwrap();
    }

    #[test]
    fn r1_rewrite_replaces_the_transcript_in_place_and_sets_the_leaf() {
        let log = TranscriptLog::new(vec![user("a"), user("b")], Some("b".into()));
        let shared = log.transcript().clone();
        log.replace(Some("z".into()), vec![user("summary")]);
        assert_eq!(shared.len(), 1, "the runtime's clone sees the new branch");
        log.append(Some("z"), "y".into(), vec![user("c")]).unwrap();
        log.replace(None, Vec::new());
        log.append(None, "q".into(), vec![]).unwrap();
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
        let v: Value =
            serde_json::from_str(&event_line("s1", &HostEvent::Notice { text: "hi".into() }))
                .unwrap();
        assert_eq!(v["params"], json!({"sessionId": "s1", "text": "hi"}));
        let v: Value = serde_json::from_str(&event_line("s2", &HostEvent::SteerReady)).unwrap();
        assert_eq!(v["method"], "session/steerReady");
        let nit = Delivery::new(Channel::Card, vec![Advisory::new("n", None)], None);
        assert_eq!(
            delivery_json(&nit)["notes"],
            json!([{"severity": null, "note": "n"}])
        );
    }
}
