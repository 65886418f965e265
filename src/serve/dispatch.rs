//! The method table of `advisor serve` (V2) and the table of served sessions. Each call
//! is one async function of the params; the I/O loop runs each in its own task (V3).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::{Notify, RwLock};

use super::open::{prepare, roster_json, ServeDefaults};
use super::params::{parse_messages, OpenParams, ParsedMessages};
use super::protocol::{notification_line, Params, RpcError, PROTOCOL_VERSION, SESSION_ERROR};
use super::served::{delivery_json, open_on, HeldBudget, Outbox, ServedSession, TranscriptLog};
use crate::domain::host::RewriteKind;
use crate::handle::{AskEnd, AskError, HandleError, TurnEndOptions, MAX_QUESTION_CHARS};
use crate::runtime::AdvisorRuntime;
use crate::status::AdvisorStatus;

/// The longest advisor name `session/ask` takes (RO20); a longer one is `-32602`.
const MAX_ADVISOR_NAME_CHARS: usize = 1024;

/// The longest tool name `session/gate` takes (GT11).
const MAX_GATE_TOOL_CHARS: usize = 200;

/// What an ask ended by `session/close` says (G8).
const ENDED_BY_CLOSE: &str = "the session was closed (session/close)";
/// What an ask ended by a `session/open` of the same id says.
const ENDED_BY_REOPEN: &str = "the session was opened again (session/open with the same sessionId)";
/// What an ask ended by `shutdown` or the end of input says.
const ENDED_BY_SHUTDOWN: &str = "the server is shutting down";

/// How long disposing every session may take at the end (V1: exit within 2 s).
pub const DISPOSE_TIMEOUT: Duration = Duration::from_millis(700);

/// A served session of the table: still opening, open, or failed to open.
#[derive(Clone)]
enum SlotState {
    Opening,
    Open(Arc<ServedSession>),
    Failed,
}

/// The table entry of one session id. It is in the table from the moment `session/open`
/// is read, write-locked until the session has started, so calls sent right behind the
/// open (before its reply) wait for it, in the order they came (the lock is fair), instead
/// of finding no session.
type Slot = Arc<RwLock<SlotState>>;

/// The server's state: the defaults, the shared runtime the sessions run on (A6), the
/// table of served sessions, the outbox to the client.
pub struct Dispatcher {
    defaults: ServeDefaults,
    runtime: AdvisorRuntime,
    table: Mutex<HashMap<String, Slot>>,
    out: Outbox,
    shutdown: Notify,
    shutting_down: Mutex<bool>,
    held: Arc<HeldBudget>,
}

impl Dispatcher {
    /// A dispatcher opening its sessions on `runtime` and writing notifications to `out`,
    /// holding at most `max_held_bytes` of transcripts for them (V4, [`HeldBudget`]).
    pub fn new(
        defaults: ServeDefaults,
        runtime: AdvisorRuntime,
        out: Outbox,
        max_held_bytes: usize,
    ) -> Self {
        Self {
            defaults,
            runtime,
            table: Mutex::new(HashMap::new()),
            out,
            shutdown: Notify::new(),
            shutting_down: Mutex::new(false),
            held: Arc::new(HeldBudget::new(max_held_bytes)),
        }
    }

    /// Runs one call (V2). Unknown methods are -32601.
    pub async fn call(&self, method: &str, params: Params) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(initialize()),
            "session/open" => self.open(params).await,
            "session/turnEnd" => self.turn_end(params).await,
            "session/stepBoundary" => self.step_boundary(params).await,
            "session/runState" => {
                let (s, p) = self.served(params).await?;
                s.handle
                    .run_state(p.boolean("running")?)
                    .await
                    .map_err(gone)?;
                Ok(json!({}))
            }
            "session/interrupt" => {
                let (s, p) = self.served(params).await?;
                s.handle
                    .interrupt(p.boolean("byUser")?)
                    .await
                    .map_err(gone)?;
                Ok(json!({}))
            }
            "session/userPrompt" => {
                let (s, _) = self.served(params).await?;
                s.handle.user_prompt().await.map_err(gone)?;
                Ok(json!({}))
            }
            "session/rewrite" => self.rewrite(params).await,
            "session/transition" => {
                let (s, p) = self.served(params).await?;
                s.handle
                    .session_transition(p.boolean("preparing")?)
                    .await
                    .map_err(gone)?;
                Ok(json!({}))
            }
            "session/modelsChanged" => {
                let (s, _) = self.served(params).await?;
                s.handle.model_catalog_changed().await.map_err(gone)?;
                Ok(json!({}))
            }
            "session/command" => {
                let (s, p) = self.served(params).await?;
                // Unlike `Params::string`, an empty line is a command: it answers the usage (C1).
                let line = match p.get("line") {
                    Some(Value::String(line)) => line.clone(),
                    _ => p.string("line")?,
                };
                let text = s.handle.command(&line).await.map_err(gone)?;
                Ok(json!({ "text": text }))
            }
            "session/ask" => self.ask(params).await,
            "session/gate" => self.gate(params).await,
            "session/status" => {
                let (s, _) = self.served(params).await?;
                let status = s.handle.status().await.map_err(gone)?;
                Ok(status_json(&status))
            }
            "session/close" => self.close(params).await,
            "shutdown" => {
                self.dispose_all().await;
                self.shutdown.notify_one();
                Ok(json!({}))
            }
            other => Err(RpcError::method_not_found(other)),
        }
    }

    /// Resolves once `shutdown` was called.
    pub async fn shutdown_requested(&self) {
        self.shutdown.notified().await
    }

    /// Disposes every session (audits flushed, R2, G7), all at once, bounded by
    /// [`DISPOSE_TIMEOUT`]. Later opens are refused.
    pub async fn dispose_all(&self) {
        *self.shutting_down.lock() = true;
        let slots: Vec<Slot> = self.table.lock().drain().map(|(_, s)| s).collect();
        let all = futures_util::future::join_all(slots.into_iter().map(|slot| async move {
            if let Some(session) = settled(&slot).await {
                session.dispose(ENDED_BY_SHUTDOWN).await;
            }
        }));
        if tokio::time::timeout(DISPOSE_TIMEOUT, all).await.is_err() {
            tracing::warn!("serve: disposing the sessions took too long; exiting anyway");
        }
    }

    /// The open session `params` name, and the params back (taken by value: a call's raw
    /// `messages` is never copied). A call that waited on an open which failed looks again:
    /// a failed re-open puts the session it would have replaced back.
    async fn served(&self, params: Params) -> Result<(Arc<ServedSession>, Params), RpcError> {
        let id = params.string("sessionId")?;
        let not_open = || params.invalid("sessionId", format!("`{id}` is not an open session"));
        let lookup = || self.table.lock().get(&id).cloned().ok_or_else(not_open);
        let slot = lookup()?;
        let session = match settled(&slot).await {
            Some(session) => session,
            None => {
                let now = lookup()?;
                if Arc::ptr_eq(&now, &slot) {
                    return Err(not_open());
                }
                settled(&now).await.ok_or_else(not_open)?
            }
        };
        Ok((session, params))
    }

    async fn open(&self, mut params: Params) -> Result<Value, RpcError> {
        let mut open = OpenParams::parse(&mut params)?;
        let session_id = open.session_id.clone();
        // In the table before the first await: calls behind this one wait for it (V3).
        let slot: Slot = Arc::new(RwLock::new(SlotState::Opening));
        let mut opening = Arc::clone(&slot)
            .try_write_owned()
            .map_err(|_| RpcError::internal("a new session slot was locked"))?;
        let mut previous = self
            .table
            .lock()
            .insert(session_id.clone(), Arc::clone(&slot));
        let opened = self.start_served(&mut open).await;
        *opening = match &opened {
            Ok((session, _)) => SlotState::Open(Arc::clone(session)),
            Err(_) => {
                // A failed re-open leaves the session it would have replaced running, unless
                // a later open of the id has replaced this one meanwhile.
                let mut table = self.table.lock();
                if table
                    .get(&session_id)
                    .is_some_and(|s| Arc::ptr_eq(s, &slot))
                {
                    match previous.take() {
                        Some(previous) => table.insert(session_id.clone(), previous),
                        None => table.remove(&session_id),
                    };
                }
                SlotState::Failed
            }
        };
        drop(opening);
        // Opening an id that is open replaces that session (a host reloading).
        if let Some(previous) = previous {
            if let Some(old) = settled(&previous).await {
                old.dispose(ENDED_BY_REOPEN).await;
            }
        }
        let (session, roster) = opened?;
        let status = session.handle.status().await.map_err(gone)?;
        let mut result = status_json(&status);
        if let Value::Object(map) = &mut result {
            // D5, RO15: whether a turn end may hold the host (it bounds its wait by it).
            map.insert(
                "turnEndWaits".into(),
                session.handle.turn_end_may_wait().into(),
            );
            if let Some(roster) = roster {
                map.insert("roster".into(), roster);
            }
        }
        Ok(result)
    }

    /// Prepares and starts a served session; with it, its roster as the open's result reports it
    /// (RO23), `None` without a roster file.
    async fn start_served(
        &self,
        open: &mut OpenParams,
    ) -> Result<(Arc<ServedSession>, Option<Value>), RpcError> {
        let session_id = open.session_id.clone();
        let messages = std::mem::take(&mut open.messages);
        let leaf = open.leaf.clone();
        let defaults = self.defaults.clone();
        let shared = Arc::clone(self.runtime.shared());
        let params = open.clone();
        // A6: discovery on a bounded share of the blocking pool, however many opens wait.
        let discovery = Arc::clone(&shared);
        let prepared = discovery
            .discover(move || prepare(params, &defaults, &shared))
            .await
            .ok_or_else(|| RpcError::internal("session setup failed"))??;
        if *self.shutting_down.lock() {
            return Err(RpcError::internal("the server is shutting down"));
        }
        for notice in &prepared.notices {
            let line = notification_line(
                "session/notice",
                json!({ "sessionId": session_id, "text": notice }),
            );
            let _ = self.out.send(line).await;
        }
        let log = TranscriptLog::new(messages, leaf, Arc::clone(&self.held))?;
        let mut config = prepared.config;
        let roster = config
            .roster
            .as_ref()
            .filter(|setup| setup.found())
            .map(|setup| roster_json(setup, config.settings.policy));
        // X4: the cursor starts at the end of what the host already has.
        config.initial_transcript =
            (!log.transcript().is_empty()).then(|| log.transcript().clone());
        let handle = open_on(&self.runtime, config, &session_id, self.out.clone());
        Ok((Arc::new(ServedSession::new(handle, log)), roster))
    }

    async fn turn_end(&self, params: Params) -> Result<Value, RpcError> {
        let (s, mut p) = self.served(params).await?;
        let base = p.opt_string("base")?;
        let leaf = p.string("leaf")?;
        let messages = take_messages(&mut p)?;
        let will_continue = p.opt_bool("willContinue")?;
        s.log.append(base.as_deref(), leaf, messages)?;
        let options = TurnEndOptions { will_continue };
        s.handle
            .turn_end_with(s.log.transcript(), options)
            .await
            .map_err(gone)?;
        Ok(json!({}))
    }

    async fn step_boundary(&self, params: Params) -> Result<Value, RpcError> {
        let (s, _) = self.served(params).await?;
        let advice = s.handle.step_boundary().await.map_err(gone)?;
        let deliveries: Vec<Value> = advice.deliveries().map(delivery_json).collect();
        Ok(json!({ "deliveries": deliveries }))
    }

    async fn rewrite(&self, params: Params) -> Result<Value, RpcError> {
        let (s, mut p) = self.served(params).await?;
        let kind_name = p.string("kind")?;
        let kind = rewrite_kind(&kind_name).ok_or_else(|| {
            p.invalid(
                "kind",
                format!(
                    "`{kind_name}` is not one of compaction, switch, new, resume, fork, tree, \
                     rewind, prune"
                ),
            )
        })?;
        let leaf = p.opt_string("leaf")?;
        let messages = take_messages(&mut p)?;
        s.log.replace(leaf, messages)?;
        s.handle.rewrite(kind).await.map_err(gone)?;
        Ok(json!({}))
    }

    /// `session/ask` (G8): the advisor's answer to the primary's question. It runs in its
    /// own task like every call (V3), so other calls on the pipe go on while it waits its
    /// turn behind the reviews; the handle bounds it (the drain wait plus one request
    /// timeout) and refuses it at once while the advisor is paused or failing.
    /// The optional `advisor` param names the roster's advisor to ask (RO20); one the
    /// session does not have is the ask error with reason `unknownAdvisor`.
    /// `session/gate` (GT11): a proposed tool call put to the action gate before it runs.
    /// `canAsk` (default false) says whether the client can ask a person.
    async fn gate(&self, params: Params) -> Result<Value, RpcError> {
        let (s, mut p) = self.served(params).await?;
        let tool = p.string("tool")?;
        let chars = tool.chars().count();
        if chars == 0 || chars > MAX_GATE_TOOL_CHARS {
            return Err(p.invalid(
                "tool",
                format!("must be 1 to {MAX_GATE_TOOL_CHARS} characters, it has {chars}"),
            ));
        }
        let cwd = p.opt_string("cwd")?.map(std::path::PathBuf::from);
        let can_ask = p.opt_bool("canAsk")?.unwrap_or(false);
        let input = p.take("input").unwrap_or(Value::Null);
        let action = crate::gate::ProposedAction { tool, input, cwd };
        let options = crate::gate::GateOptions {
            can_ask,
            model_deadline: None,
        };
        let verdict = s.handle.gate_with(action, options).await.map_err(gone)?;
        Ok(json!({
            "decision": verdict.decision.as_str(),
            "risk": verdict.risk.as_str(),
            "reason": verdict.reason,
            "source": verdict.source.as_str(),
        }))
    }

    async fn ask(&self, params: Params) -> Result<Value, RpcError> {
        let (s, p) = self.served(params).await?;
        let question = p.string("question")?;
        // A blank name is no name (RO20); a name is bounded before it is looked up or
        // echoed in an error.
        let advisor = p.opt_string("advisor")?.filter(|a| !a.trim().is_empty());
        if let Some(chars) = advisor.as_deref().map(|a| a.chars().count()) {
            if chars > MAX_ADVISOR_NAME_CHARS {
                return Err(p.invalid(
                    "advisor",
                    format!("must be at most {MAX_ADVISOR_NAME_CHARS} characters, it has {chars}"),
                ));
            }
        }
        match s.handle.ask_advisor(&question, advisor.as_deref()).await {
            Ok(answer) => Ok(json!({ "answer": answer })),
            Err(HandleError::Ask(AskError::BadQuestion(chars))) => Err(p.invalid(
                "question",
                format!("must be 1 to {MAX_QUESTION_CHARS} characters, it has {chars}"),
            )),
            Err(HandleError::Ask(e @ AskError::Ended(AskEnd::Disposed))) => {
                let why = s.ended_by.lock().unwrap_or(ENDED_BY_CLOSE);
                let mut error = ask_error(&e);
                error.message = format!("the advisor could not answer: the ask was ended: {why}");
                Err(error)
            }
            Err(HandleError::Ask(e)) => Err(ask_error(&e)),
            Err(e) => Err(gone(e)),
        }
    }

    async fn close(&self, params: Params) -> Result<Value, RpcError> {
        let (session, params) = self.served(params).await?;
        let id = params.string("sessionId")?;
        {
            let mut table = self.table.lock();
            let same = table.get(&id).is_some_and(|slot| {
                matches!(slot.try_read().as_deref(), Ok(SlotState::Open(s)) if Arc::ptr_eq(s, &session))
            });
            if same {
                table.remove(&id);
            }
        }
        session.dispose(ENDED_BY_CLOSE).await;
        Ok(json!({}))
    }
}

/// The required `messages` param, parsed.
fn take_messages(p: &mut Params) -> Result<ParsedMessages, RpcError> {
    match p.take_messages() {
        Some(param) => parse_messages(param, "messages"),
        None => Err(p.invalid("messages", "is missing")),
    }
}

/// `initialize`'s result.
fn initialize() -> Value {
    json!({
        "serverInfo": { "name": "advisor", "version": env!("CARGO_PKG_VERSION") },
        "protocolVersion": PROTOCOL_VERSION,
    })
}

/// The status (C3) as JSON, with its rendering as `text`.
pub fn status_json(status: &AdvisorStatus) -> Value {
    let mut v = serde_json::to_value(status).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut v {
        map.insert("text".into(), Value::String(status.render()));
    }
    v
}

/// The rewrite kinds of V2, read by their words ([`RewriteKind::word`]; `resume` is also
/// a session switch). `detected` is the feed's own and not a host's to send.
pub fn rewrite_kind(name: &str) -> Option<RewriteKind> {
    use RewriteKind::*;
    if name == "resume" {
        return Some(SessionSwitch);
    }
    [
        Compaction,
        SessionSwitch,
        NewSession,
        Branch,
        TreeNavigation,
        Rewind,
        Prune,
    ]
    .into_iter()
    .find(|kind| kind.word() == name)
}

/// The served session of a slot once it has finished opening; `None` when the open failed.
async fn settled(slot: &Slot) -> Option<Arc<ServedSession>> {
    match &*slot.read().await {
        SlotState::Open(session) => Some(Arc::clone(session)),
        SlotState::Opening | SlotState::Failed => None,
    }
}

/// An ask the advisor could not answer: -32000 with the reason as `data {reason}` (one of
/// `disabled`, `notRunning`, `noReview`, `badQuestion`, `paused`, `failing`, `model`,
/// `quarantined`, `unknownAdvisor`, `noAnswer`, `timedOut`, `released`, `ended`) and the
/// handle's sentence as the message; an ended ask also names its `cause` (`rewritten`,
/// `turnedOff`, `closed`, `quarantined`). `session/ask` answers a bad question as -32602
/// naming `question` instead.
pub fn ask_error(e: &AskError) -> RpcError {
    let reason = match e {
        AskError::Disabled => "disabled",
        AskError::NotRunning | AskError::MemberNotRunning(_) => "notRunning",
        AskError::NoReview => "noReview",
        AskError::BadQuestion(_) => "badQuestion",
        AskError::Paused(_) => "paused",
        AskError::Failing => "failing",
        AskError::Model(_) => "model",
        AskError::Quarantined(_) => "quarantined",
        AskError::UnknownAdvisor(_) => "unknownAdvisor",
        AskError::NoAnswer => "noAnswer",
        AskError::TimedOut(_) => "timedOut",
        AskError::Released => "released",
        AskError::Ended(_) => "ended",
    };
    let mut data = json!({ "reason": reason });
    if let AskError::Ended(cause) = e {
        data["cause"] = json!(cause.code());
    }
    RpcError {
        data: Some(data),
        ..RpcError::new(SESSION_ERROR, HandleError::Ask(e.clone()).to_string())
    }
}

fn gone(e: HandleError) -> RpcError {
    RpcError::internal(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_every_rewrite_kind_maps_and_others_are_refused() {
        let kinds = [
            ("compaction", RewriteKind::Compaction),
            ("switch", RewriteKind::SessionSwitch),
            ("resume", RewriteKind::SessionSwitch),
            ("new", RewriteKind::NewSession),
            ("fork", RewriteKind::Branch),
            ("tree", RewriteKind::TreeNavigation),
            ("rewind", RewriteKind::Rewind),
            ("prune", RewriteKind::Prune),
        ];
        for (name, kind) in kinds {
            assert_eq!(rewrite_kind(name), Some(kind), "{name}");
            assert_eq!(rewrite_kind(kind.word()), Some(kind), "{name}");
        }
        assert_eq!(rewrite_kind("detected"), None);
        assert_eq!(rewrite_kind("Compaction"), None);
    }

    #[test]
    fn c3_status_json_carries_the_fields_and_the_rendering() {
        let status = AdvisorStatus {
            enabled: true,
            model: Some("p/m".into()),
            ..AdvisorStatus::default()
        };
        let v = status_json(&status);
        assert_eq!(v["enabled"], true);
        assert_eq!(v["model"], "p/m");
        assert_eq!(v["text"], status.render());
        assert!(v["agent"].is_object());
    }

    #[test]
    fn p5_p6_status_json_counts_quarantines_and_names_the_backup_in_use() {
        let mut status = AdvisorStatus {
            enabled: true,
            model: Some("b/backup".into()),
            ..AdvisorStatus::default()
        };
        status.agent.quarantines = 2;
        status.agent.fallbacks = 1;
        status.agent.fallback = Some(crate::review::fallback::FallbackStatus {
            model: "b/backup".into(),
            instead_of: "a/own".into(),
            reason: "HTTP 529: overloaded".into(),
        });
        let v = status_json(&status);
        assert_eq!(v["agent"]["quarantines"], 2);
        assert_eq!(v["agent"]["fallbacks"], 1);
        assert_eq!(
            v["agent"]["fallback"],
            json!({"model": "b/backup", "insteadOf": "a/own", "reason": "HTTP 529: overloaded"})
        );
        let text = v["text"].as_str().unwrap();
        assert!(text.contains("quarantined reviews: 2\n"), "{text}");
        assert!(
            text.contains(
                "fallback: reviewing with b/backup instead of a/own (HTTP 529: overloaded)\n"
            ),
            "{text}"
        );
        status.agent.fallback = None;
        assert_eq!(status_json(&status)["agent"]["fallback"], Value::Null);
    }

    #[test]
    fn ro23_status_json_lists_the_named_advisors_and_leaves_them_out_without_a_roster() {
        use crate::status::{AdvisorState, NamedAdvisorStatus};
        let mut status = AdvisorStatus {
            enabled: true,
            ..AdvisorStatus::default()
        };
        assert!(status_json(&status).get("advisors").is_none());
        status.advisors.push(NamedAdvisorStatus {
            name: "Security".into(),
            slug: "security".into(),
            state: AdvisorState::NoModel,
            reason: Some("no API key".into()),
            model: None,
            policy: crate::settings::DeliveryPolicy::Defer,
            skipped_updates: 3,
            cadence: crate::status::CadenceStatus::default(),
            deliveries: crate::status::DeliveryCounts::default(),
            agent: crate::status::AgentStatus::default(),
            spend: Default::default(),
        });
        let v = status_json(&status);
        let named = &v["advisors"][0];
        assert_eq!(named["name"], "Security");
        assert_eq!(named["slug"], "security");
        assert_eq!(named["state"], "noModel");
        assert_eq!(named["reason"], "no API key");
        assert_eq!(named["policy"], "defer");
        assert_eq!(named["skippedUpdates"], 3);
        assert!(named["deliveries"].is_object() && named["agent"].is_object());
        assert!(named.get("model").is_none());
    }
}
