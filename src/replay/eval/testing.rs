//! A known advisor for proving the scorer (EV9) and timing the runner: a scripted model
//! that raises exactly the notes it is told to, at the reviews it is told to, and a
//! [`CasePreparer`] that sets each case up with it; and a [`SpendingAdvisor`] that spends
//! the way oh-my-pi's users report (SP1–SP3 measured). Built for tests, benches and
//! examples only (`cfg(test)` or the `test-support` feature).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::domain::advice::Severity;
use crate::model::{
    AssistantPart, ChatMessage, ModelClient, ModelFuture, ModelInfo, ModelRequest, ModelResponse,
    StopReason, Usage,
};
use crate::providers::Catalog;
use crate::render::TranscriptView;
use crate::replay::ReplayOptions;
use crate::runtime::SharedResources;
use crate::settings::{AdvisorSettings, DeliveryPolicy, SettingsEnv, SyncBacklog};
use crate::setup::{ModelSource, RequestedModel, SessionBasics, SessionInputs, SessionSetup};

use super::corpus::Case;
use super::run::{CasePreparer, PreparedCase};

/// A note the known advisor raises at its `review`-th review (counted from 1).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedNote {
    /// The review that raises it.
    pub review: usize,
    /// The note.
    pub note: String,
    /// Its severity.
    pub severity: Option<Severity>,
}

/// What every answer of the known advisor reports as its usage.
pub const KNOWN_USAGE: Usage = Usage {
    input: 1000,
    output: 50,
    cache_read: 200,
    cache_write: 0,
    cost: 0.001,
    estimated: false,
};

/// Usage sized by the request: its system prompt and messages at G5's estimate of four
/// characters a token as uncached input, nothing cached, [`KNOWN_USAGE`]'s output. A
/// scripted advisor reporting this costs what its context costs.
pub fn sized_usage(request: &ModelRequest) -> Usage {
    let chars = request.system.len()
        + request
            .messages
            .iter()
            .map(ChatMessage::char_len)
            .sum::<usize>();
    Usage {
        input: (chars / 4) as u64,
        cache_read: 0,
        cost: 0.0,
        ..KNOWN_USAGE
    }
}

/// A model that plays a known advisor: a request ending in a user message starts a review;
/// the planned notes of that review are raised with one `advise` call each, in one answer,
/// after [`KnownAdvisor::with_reads`] `read` calls when set (each of another file, so a tool
/// budget, SP1, has calls to refuse); any other request (the tools' results came back) ends
/// the review with no text.
pub struct KnownAdvisor {
    plan: Vec<PlannedNote>,
    reviews: Mutex<usize>,
    reads: usize,
    sized: bool,
}

impl KnownAdvisor {
    /// An advisor raising `plan`.
    pub fn new(plan: Vec<PlannedNote>) -> Self {
        Self {
            plan,
            reviews: Mutex::new(0),
            reads: 0,
            sized: false,
        }
    }

    /// The same advisor reporting [`sized_usage`] instead of [`KNOWN_USAGE`].
    pub fn with_sized_usage(mut self) -> Self {
        self.sized = true;
        self
    }

    /// The same advisor making `reads` `read` calls before its notes in every review.
    pub fn with_reads(mut self, reads: usize) -> Self {
        self.reads = reads;
        self
    }

    /// Reviews started so far.
    pub fn reviews(&self) -> usize {
        *self.reviews.lock()
    }
}

impl ModelClient for KnownAdvisor {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        let starts_review = matches!(request.messages.last(), Some(ChatMessage::User { .. }));
        let parts = if starts_review {
            let review = {
                let mut n = self.reviews.lock();
                *n += 1;
                *n
            };
            let reads = (0..self.reads).map(|i| AssistantPart::ToolCall {
                id: format!("r{review}-read{i}"),
                name: "read".into(),
                arguments: json!({ "path": format!("notes-{i}.md") }),
            });
            let notes = self
                .plan
                .iter()
                .filter(|p| p.review == review)
                .enumerate()
                .map(|(i, p)| {
                    let mut args = json!({ "note": p.note });
                    if let Some(s) = p.severity {
                        args["severity"] = Value::String(s.as_str().into());
                    }
                    AssistantPart::ToolCall {
                        id: format!("r{review}-{i}"),
                        name: "advise".into(),
                        arguments: args,
                    }
                });
            reads.chain(notes).collect()
        } else {
            Vec::new()
        };
        let usage = if self.sized {
            sized_usage(&request)
        } else {
            KNOWN_USAGE
        };
        answer(parts, usage)
    }

    fn info(&self) -> ModelInfo {
        ModelInfo {
            id: "scripted/known-advisor".into(),
            context_window: 400_000,
            max_output: 4096,
            reasoning: false,
        }
    }
}

/// An answer of `parts`: tool use when there are any, else the end of the review.
fn answer(parts: Vec<AssistantPart>, usage: Usage) -> ModelFuture {
    let stop = if parts.is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    };
    Box::pin(async move { Ok(ModelResponse { parts, usage, stop }) })
}

/// The wordings of [`SpendingAdvisor`]'s blocker: the same words in another order, as a
/// model rewording itself does.
const SPENDER_BLOCKERS: [&str; 3] = [
    "Stop here: the tests were never run, so nothing shows the change works yet.",
    "Nothing shows the change works yet: stop here, the tests were never run.",
    "The tests were never run, so stop here: nothing shows the change works yet.",
];

/// A model that spends as oh-my-pi's users report (SP1–SP3): every review opens with a
/// blocker whose wording changes from review to review and a read of the same file, then
/// calls `find` round after round until a tool result says a call was not run (the tool
/// budget, SP1, or the last round, G3), and ends the review. Reports [`sized_usage`].
pub struct SpendingAdvisor {
    file: String,
    reviews: Mutex<usize>,
}

impl SpendingAdvisor {
    /// An advisor rereading `file` (relative to the workspace root) every review.
    pub fn new(file: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            reviews: Mutex::new(0),
        }
    }
}

impl ModelClient for SpendingAdvisor {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        let usage = sized_usage(&request);
        let start = request
            .messages
            .iter()
            .rposition(|m| matches!(m, ChatMessage::User { .. }))
            .unwrap_or(0);
        let review = &request.messages[start..];
        let rounds = review
            .iter()
            .filter(|m| matches!(m, ChatMessage::Assistant { .. }))
            .count();
        let results = || {
            review.iter().rev().map_while(|m| match m {
                ChatMessage::ToolResult { name, is_error, .. } => Some((name, *is_error)),
                _ => None,
            })
        };
        let n = {
            let mut n = self.reviews.lock();
            if rounds == 0 {
                *n += 1;
            }
            *n
        };
        let call = |name: &str, arguments: Value| AssistantPart::ToolCall {
            id: format!("r{n}-{rounds}"),
            name: name.into(),
            arguments,
        };
        let parts = if rounds == 0 {
            let note = SPENDER_BLOCKERS[n % SPENDER_BLOCKERS.len()];
            let blocker = json!({ "note": note, "severity": Severity::Blocker.as_str() });
            vec![
                call("advise", blocker),
                AssistantPart::ToolCall {
                    id: format!("r{n}-read"),
                    name: "read".into(),
                    arguments: json!({ "path": self.file }),
                },
            ]
        } else if results().any(|(_, refused)| refused) {
            Vec::new()
        } else {
            vec![call("find", json!({ "paths": "*", "limit": rounds }))]
        };
        answer(parts, usage)
    }

    fn info(&self) -> ModelInfo {
        ModelInfo {
            id: "scripted/spending-advisor".into(),
            context_window: 400_000,
            max_output: 4096,
            reasoning: false,
        }
    }
}

/// A change to every case's settings.
pub type SettingsTune = Arc<dyn Fn(&mut AdvisorSettings) + Send + Sync>;

/// Sets each case up with the session setup every host shares ([`SessionSetup::load`]),
/// as `advisor replay` would with default settings (no agent directory; the settings files
/// of the case's workspace, if any, are read but do not change the settings), its model a
/// [`KnownAdvisor`] playing the plan for the case's id.
pub struct ScriptedPreparer {
    plans: HashMap<String, Vec<PlannedNote>>,
    policy: DeliveryPolicy,
    catalog: Arc<Catalog>,
    reads: usize,
    tool_budget: Option<u32>,
    tune: Option<SettingsTune>,
    spender: bool,
    sized: bool,
}

impl ScriptedPreparer {
    /// A preparer playing `plans` (by case id; a case without one gets a silent advisor)
    /// under `policy`.
    pub fn new(
        plans: HashMap<String, Vec<PlannedNote>>,
        policy: DeliveryPolicy,
    ) -> Result<Self, String> {
        Ok(Self {
            plans,
            policy,
            catalog: Arc::new(Catalog::builtin().map_err(|e| e.to_string())?),
            reads: 0,
            tool_budget: None,
            tune: None,
            spender: false,
            sized: false,
        })
    }

    /// Every case's advisor makes `reads` `read` calls before its notes in each review
    /// ([`KnownAdvisor::with_reads`]).
    pub fn with_reads(mut self, reads: usize) -> Self {
        self.reads = reads;
        self
    }

    /// Every case's settings changed by `tune` after the preparer's own.
    pub fn with_settings(mut self, tune: SettingsTune) -> Self {
        self.tune = Some(tune);
        self
    }

    /// Every case's advisor a [`SpendingAdvisor`] rereading the first file (by name) at
    /// the top of the case's workspace, in place of the known advisor.
    pub fn with_spender(mut self) -> Self {
        self.spender = true;
        self
    }

    /// The known advisor reports [`sized_usage`] ([`KnownAdvisor::with_sized_usage`]).
    pub fn with_sized_usage(mut self) -> Self {
        self.sized = true;
        self
    }

    /// `advisor.toolBudget` for every case (SP1); unset, the default applies.
    pub fn with_tool_budget(mut self, budget: u32) -> Self {
        self.tool_budget = Some(budget);
        self
    }
}

impl CasePreparer for ScriptedPreparer {
    fn prepare(
        &self,
        case: &Case,
        root: &Path,
        shared: &Arc<SharedResources>,
    ) -> Result<PreparedCase, String> {
        let driver = case.driver()?;
        let plan = self.plans.get(&case.spec.id).cloned().unwrap_or_default();
        let defaults = AdvisorSettings::default();
        let mut settings = AdvisorSettings {
            sync_backlog: SyncBacklog::Below(1),
            enabled: true,
            policy: self.policy,
            tool_budget: self.tool_budget.unwrap_or(defaults.tool_budget),
            ..defaults
        };
        if let Some(tune) = &self.tune {
            tune(&mut settings);
        }
        let model: Arc<dyn ModelClient> = if self.spender {
            Arc::new(SpendingAdvisor::new(first_file(root)))
        } else {
            let known = KnownAdvisor::new(plan).with_reads(self.reads);
            Arc::new(if self.sized {
                known.with_sized_usage()
            } else {
                known
            })
        };
        let loaded = SessionSetup::load(SessionInputs {
            basics: SessionBasics::new(
                case.spec.id.clone(),
                root.to_path_buf(),
                ModelSource {
                    shared: Some(Arc::clone(shared)),
                    ..ModelSource::new(Arc::clone(&self.catalog), Arc::new(|_: &str| None))
                },
            ),
            env: SettingsEnv::default(),
            watchdog: true,
            stop_when_disabled: false,
            settings: &|_, _| settings.clone(),
            model: RequestedModel::Fixed(model),
        })
        .map_err(|e| e.to_string())?;
        let mut config = loaded.prepared.config;
        config.hold_wait_through_retries = true;
        let options = ReplayOptions {
            merge_cut_turns: config.settings.transcript == TranscriptView::Expanded,
            ..ReplayOptions::default()
        };
        Ok(PreparedCase {
            config,
            options,
            driver,
        })
    }
}

/// The first regular file by name at the top of `root`; `README.md` when there is none.
fn first_file(root: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
        .into_iter()
        .next()
        .unwrap_or_else(|| "README.md".into())
}

/// The tokens every model call of [`KnownGate`] reports.
pub const KNOWN_GATE_TOKENS: u64 = 1240;

/// The latency every model call of [`KnownGate`] adds.
pub const KNOWN_GATE_LATENCY: std::time::Duration = std::time::Duration::from_millis(150);

/// A known gate for proving the gate table (GT14), as [`KnownAdvisor`] proves the scorer:
/// it denies an action whose input one of its case's evidence patterns matches (the plant
/// as `case_actions` picks it) and allows every other; each call costs
/// [`KNOWN_GATE_TOKENS`] and [`KNOWN_GATE_LATENCY`].
pub struct KnownGate;

impl super::gate::CaseGate for KnownGate {
    fn decide(
        &self,
        case: &Case,
        action: &super::gate::CaseAction,
        _reading: &crate::gate::ActionReading,
    ) -> super::gate::GateCall {
        let input = action.action.input.to_string();
        let planted = case.spec.plant.as_ref().is_some_and(|p| p.matches(&input));
        super::gate::GateCall {
            decision: if planted {
                crate::gate::GateDecision::Deny
            } else {
                crate::gate::GateDecision::Allow
            },
            tokens: KNOWN_GATE_TOKENS,
            latency: KNOWN_GATE_LATENCY,
            failed: false,
        }
    }
}
