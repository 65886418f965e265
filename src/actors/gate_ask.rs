//! How the action gate's model is asked off the supervisor's mailbox (GT3, GT12): the
//! project's rules from the WATCHDOG.md loader and the asked advisor's own context are
//! gathered, the conversation shaped ([`GateTranscript::conversation`]), and the request
//! sent, bounded as a whole by the gate's timeout.

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;

use crate::actors::advisor_agent::AdvisorAgent;
use crate::actors::watchdog_loader::WatchdogLoader;
use crate::domain::transcript::TranscriptMessage;
use crate::gate::request::GateTranscript;
use crate::gate::verdict::MAX_CONVERSATION_CHARS;
use crate::gate::verdict::{ask_gate, gate_request, GateError, GatePrompt, GateRun};
use crate::messages::review::{AdvisorContextTail, GetAdvisorContext};
use crate::messages::watchdog::GetWatchdogPrompt;
use crate::model::{ModelClient, Usage};
use crate::redact::Redactor;

/// Where one gate request's parts come from, gathered off the mailbox (GT3).
pub struct GateSources {
    /// The WATCHDOG.md loader: the project's rules.
    pub watchdog: Option<Addr<WatchdogLoader>>,
    /// The agent of the advisor the gate asks (GT10): its own context is the conversation.
    pub agent: Option<Addr<AdvisorAgent>>,
    /// The newest messages of the transcript the host last handed over, as they were when
    /// the call was proposed: the conversation when the advisor has no context yet.
    pub recent: Vec<Arc<TranscriptMessage>>,
    /// The transcript the host last handed over and what of it the advisor has seen.
    pub transcript: GateTranscript,
    /// The session's redaction (X5).
    pub redactor: Option<Redactor>,
}

impl GateSources {
    /// Gathers the rules and the conversation into `prompt` and asks `model`, the whole cut
    /// at `timeout` (a timed-out run is a failure, GT5).
    pub async fn ask(
        self,
        prompt: GatePrompt,
        model: Arc<dyn ModelClient>,
        timeout: Duration,
    ) -> GateRun {
        tokio::time::timeout(timeout, self.gather_and_ask(prompt, model, timeout))
            .await
            .unwrap_or_else(|_| GateRun {
                outcome: Err(GateError::TimedOut(timeout.as_millis())),
                usage: Usage::default(),
            })
    }

    async fn gather_and_ask(
        self,
        mut prompt: GatePrompt,
        model: Arc<dyn ModelClient>,
        timeout: Duration,
    ) -> GateRun {
        if let Some(loader) = self.watchdog {
            if let Ok(rules) = loader.send(GetWatchdogPrompt).await {
                prompt.rules = rules.joined();
            }
        }
        let own = match self.agent {
            Some(agent) => agent
                .send(GetAdvisorContext {
                    max_chars: MAX_CONVERSATION_CHARS,
                })
                .await
                .unwrap_or_default(),
            None => AdvisorContextTail::default(),
        };
        let (turn, recent) = (own.turn, &self.recent);
        prompt.conversation = self.transcript.conversation(&own.messages, turn, recent);
        let request = gate_request(&prompt, self.redactor.as_ref());
        ask_gate(&*model, request, timeout).await
    }
}
