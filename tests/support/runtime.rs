//! Shared helpers for the runtime's mailbox tests: the one builder that starts a session on
//! a model ([`runtime`], over [`config`] and [`start`]), a recorder actor for host events and
//! a model whose answers can be held back until the test releases them.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Context, Handler};
use advisor::domain::host::HostEvent;
use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ModelClient, ModelFuture, ModelInfo, ModelRequest};
use advisor::settings::SyncBacklog;
use advisor::TranscriptView;
use advisor::{AdvisorHandle, RuntimeConfig};
use tokio::sync::{mpsc, Semaphore};

/// The configuration a mailbox test starts from: session `primary-1` on `model`, the temp
/// dir as its workspace root, `sync` as `advisor.syncBacklog` (`Below(1)`: each `turn_end`
/// returns after its review; `Off`: at once), the compact transcript view (one user message
/// per review, which these tests read), policy `interrupt` (these tests were written for D3's
/// routing, the default before P1 made `defer` the default; the P1 tests set their policy
/// themselves), the other settings at their defaults — then `tune` adjusts whatever the test
/// needs (session id, policy, workspace root, the expanded view…).
pub fn config(
    model: Arc<dyn ModelClient>,
    sync: SyncBacklog,
    tune: impl FnOnce(&mut RuntimeConfig),
) -> RuntimeConfig {
    let mut cfg = RuntimeConfig::new("primary-1", std::env::temp_dir(), Some(model));
    cfg.settings.sync_backlog = sync;
    cfg.settings.transcript = TranscriptView::Compact;
    cfg.settings.policy = advisor::settings::DeliveryPolicy::Interrupt;
    tune(&mut cfg);
    cfg
}

/// Starts a handle on `cfg` in the current actix system; its host events arrive on the
/// receiver.
pub fn start(cfg: RuntimeConfig) -> (AdvisorHandle, mpsc::UnboundedReceiver<HostEvent>) {
    let (rec, rx) = recorder();
    (AdvisorHandle::start(cfg, rec.recipient()), rx)
}

/// Starts a handle on [`config`]`(model, sync, tune)`: the one way the mailbox tests start a
/// session on a model.
pub fn runtime(
    model: Arc<dyn ModelClient>,
    sync: SyncBacklog,
    tune: impl FnOnce(&mut RuntimeConfig),
) -> (AdvisorHandle, mpsc::UnboundedReceiver<HostEvent>) {
    start(config(model, sync, tune))
}

/// Collects every host event the runtime sends.
pub struct Recorder {
    tx: mpsc::UnboundedSender<HostEvent>,
}

impl Actor for Recorder {
    type Context = Context<Self>;
}

impl Handler<HostEvent> for Recorder {
    type Result = ();
    fn handle(&mut self, msg: HostEvent, _ctx: &mut Context<Self>) {
        let _ = self.tx.send(msg);
    }
}

/// Starts a recorder; events arrive on the receiver.
pub fn recorder() -> (actix::Addr<Recorder>, mpsc::UnboundedReceiver<HostEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Recorder { tx }.start(), rx)
}

/// Waits for the next host event (bounded, so a missing event fails instead of hanging).
pub async fn next_event(rx: &mut mpsc::UnboundedReceiver<HostEvent>) -> HostEvent {
    tokio::time::timeout(Duration::from_secs(600), rx.recv())
        .await
        .expect("a host event")
        .expect("recorder alive")
}

/// Drains the events already delivered, without waiting.
pub fn drain(rx: &mut mpsc::UnboundedReceiver<HostEvent>) -> Vec<HostEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

/// A scripted model that can hold every answer until the test adds a permit, and reports
/// each request as it arrives.
#[derive(Clone)]
pub struct GatedModel {
    pub script: ScriptedModel,
    gate: Option<Arc<Semaphore>>,
    arrivals: mpsc::UnboundedSender<ModelRequest>,
}

impl GatedModel {
    /// A model answering from `replies`; with `gated`, each answer waits for a permit.
    pub fn new(
        replies: Vec<ScriptedReply>,
        gated: bool,
    ) -> (
        Self,
        mpsc::UnboundedReceiver<ModelRequest>,
        Option<Arc<Semaphore>>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let gate = gated.then(|| Arc::new(Semaphore::new(0)));
        (
            Self {
                script: ScriptedModel::new(replies),
                gate: gate.clone(),
                arrivals: tx,
            },
            rx,
            gate,
        )
    }
}

impl ModelClient for GatedModel {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        let _ = self.arrivals.send(request.clone());
        let answer = self.script.complete(request);
        let gate = self.gate.clone();
        Box::pin(async move {
            if let Some(gate) = gate {
                if let Ok(permit) = gate.acquire().await {
                    permit.forget();
                }
            }
            answer.await
        })
    }

    fn info(&self) -> ModelInfo {
        self.script.info()
    }
}

/// Counts the calls that run at once; each waits for the gated model's permit.
#[derive(Clone)]
pub struct Counting {
    pub gated: GatedModel,
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Counting {
    /// Counts the calls `gated` answers.
    pub fn new(gated: GatedModel) -> Self {
        Self {
            gated,
            now: Arc::new(AtomicUsize::new(0)),
            most: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The most calls that ever ran at once.
    pub fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }
}

impl ModelClient for Counting {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        let (now, most) = (self.now.clone(), self.most.clone());
        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
        most.fetch_max(n, Ordering::SeqCst);
        let answer = self.gated.complete(request);
        Box::pin(async move {
            let out = answer.await;
            now.fetch_sub(1, Ordering::SeqCst);
            out
        })
    }
    fn info(&self) -> ModelInfo {
        self.gated.info()
    }
}

/// Waits for the next model request.
pub async fn next_request(rx: &mut mpsc::UnboundedReceiver<ModelRequest>) -> ModelRequest {
    tokio::time::timeout(Duration::from_secs(600), rx.recv())
        .await
        .expect("a model request")
        .expect("model alive")
}

/// The text of the user messages that end a request (one for the compact view).
pub fn last_user_text(request: &ModelRequest) -> String {
    // The expanded view sends a review as several user messages (one per transcript
    // message): the text is the run of user messages that ends the request, joined by
    // `\n` (the single-string form `advisor render` prints as `prompt`).
    let texts: Vec<&str> = request
        .messages
        .iter()
        .rev()
        .skip_while(|m| !matches!(m, advisor::model::ChatMessage::User { .. }))
        .map_while(|m| match m {
            advisor::model::ChatMessage::User { text } => Some(super::without_reminder(text)),
            _ => None,
        })
        .collect();
    texts.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// The texts of every tool result in a request, in order.
pub fn tool_results(request: &ModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            advisor::model::ChatMessage::ToolResult { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// A model turn that raises `note` with `advise` and also reads a file that is not there,
/// so the review goes on to a follow-up call (P2 ends a review at a turn of `advise` calls
/// only). For the tests written before P2 that look at what the model was told in the
/// follow-up request.
pub fn advise_then_look(id: &str, note: &str, severity: Option<&str>) -> ScriptedReply {
    let mut args = serde_json::Map::new();
    args.insert("note".into(), serde_json::Value::String(note.into()));
    if let Some(s) = severity {
        args.insert("severity".into(), serde_json::Value::String(s.into()));
    }
    let look = format!("{id}-look");
    ScriptedReply::tool_calls(&[
        (id, "advise", serde_json::Value::Object(args)),
        (
            look.as_str(),
            "read",
            serde_json::json!({"path": "no-such-file-for-the-test"}),
        ),
    ])
}

/// The answers of the `advise` calls in a request, in order (the other tools' left out).
pub fn advise_results(request: &ModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            advisor::model::ChatMessage::ToolResult { text, name, .. } if name == "advise" => {
                Some(text.clone())
            }
            _ => None,
        })
        .collect()
}
