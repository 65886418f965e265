//! A known advisor for proving the scorer (EV9) and timing the runner: a scripted model
//! that raises exactly the notes it is told to, at the reviews it is told to, and a
//! [`CasePreparer`] that sets each case up with it. Built for tests, benches and examples
//! only (`cfg(test)` or the `test-support` feature).

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
use crate::setup::{ModelSource, RequestedModel, SessionInputs, SessionSetup};

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

/// A model that plays a known advisor: a request ending in a user message starts a review;
/// the planned notes of that review are raised with one `advise` call each, in one answer,
/// after [`KnownAdvisor::with_reads`] `read` calls when set (each of another file, so a tool
/// budget, SP1, has calls to refuse); any other request (the tools' results came back) ends
/// the review with no text.
pub struct KnownAdvisor {
    plan: Vec<PlannedNote>,
    reviews: Mutex<usize>,
    reads: usize,
}

impl KnownAdvisor {
    /// An advisor raising `plan`.
    pub fn new(plan: Vec<PlannedNote>) -> Self {
        Self {
            plan,
            reviews: Mutex::new(0),
            reads: 0,
        }
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
        let stop = if parts.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        };
        Box::pin(async move {
            Ok(ModelResponse {
                parts,
                usage: KNOWN_USAGE,
                stop,
            })
        })
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
        })
    }

    /// Every case's advisor makes `reads` `read` calls before its notes in each review
    /// ([`KnownAdvisor::with_reads`]).
    pub fn with_reads(mut self, reads: usize) -> Self {
        self.reads = reads;
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
        let settings = AdvisorSettings {
            sync_backlog: SyncBacklog::Below(1),
            enabled: true,
            policy: self.policy,
            tool_budget: self.tool_budget.unwrap_or(defaults.tool_budget),
            ..defaults
        };
        let loaded = SessionSetup::load(SessionInputs {
            session_id: case.spec.id.clone(),
            root: root.to_path_buf(),
            env: SettingsEnv::default(),
            watchdog: true,
            stop_when_disabled: false,
            host_layer: None,
            settings: &|_, _| settings.clone(),
            model: RequestedModel::Fixed(Arc::new(KnownAdvisor::new(plan).with_reads(self.reads))),
            models: ModelSource {
                shared: Some(Arc::clone(shared)),
                ..ModelSource::new(Arc::clone(&self.catalog), Arc::new(|_: &str| None))
            },
            context_files: None,
            audit_path: None,
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
