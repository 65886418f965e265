//! ToolExecutor: runs the advisor's tool calls under its isolated tool session (T1), the
//! workspace tools on the blocking pool, `advise` through the DeliveryRouter (T6, G3).

use std::sync::Arc;

use actix::{Actor, Context, Handler, Recipient, ResponseFuture, Supervised};
use tracing::Instrument;

use crate::actors::delivery_router::raise_advice;
use crate::domain::advice::AdvisorLabel;
use crate::messages::delivery::RaiseAdvice;
use crate::messages::tools::{ClearToolSession, ExecuteTool, ToolOutput};
use crate::redact::Redactor;
use crate::tools::{advise, ToolError, ToolRegistry, ToolSession};

/// The executor actor.
pub struct ToolExecutor {
    registry: ToolRegistry,
    session: Arc<ToolSession>,
    router: Recipient<RaiseAdvice>,
    max_notes: usize,
    redactor: Option<Redactor>,
    /// The named advisor whose tools these are (RO13); its advice carries the label.
    advisor: Option<AdvisorLabel>,
}

impl ToolExecutor {
    /// An executor running `registry`'s tools in `session`, sending advice to `router`.
    pub fn new(
        registry: ToolRegistry,
        session: Arc<ToolSession>,
        router: Recipient<RaiseAdvice>,
        max_notes: usize,
    ) -> Self {
        Self {
            registry,
            session,
            router,
            max_notes,
            redactor: None,
            advisor: None,
        }
    }

    /// Redacts credentials from workspace tool results before the model sees them (X5).
    pub fn with_redactor(mut self, redactor: Option<Redactor>) -> Self {
        self.redactor = redactor;
        self
    }

    /// The executor of the named advisor `advisor` (RO13): its `advise` calls are raised
    /// with the label, and the advisory names it (RO18).
    pub fn with_advisor(mut self, advisor: Option<AdvisorLabel>) -> Self {
        self.advisor = advisor;
        self
    }
}

impl Actor for ToolExecutor {
    type Context = Context<Self>;
}

impl Supervised for ToolExecutor {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.session.clear();
    }
}

fn error_output(err: ToolError) -> ToolOutput {
    ToolOutput {
        text: err.to_string(),
        is_error: true,
    }
}

impl Handler<ExecuteTool> for ToolExecutor {
    type Result = ResponseFuture<ToolOutput>;

    fn handle(&mut self, msg: ExecuteTool, _ctx: &mut Context<Self>) -> Self::Result {
        let span = tracing::info_span!("tool_call", tool = %msg.name, session = %self.session.id());
        if msg.name == advise::NAME {
            let router = self.router.clone();
            let max_notes = self.max_notes;
            let advisor = self.advisor.clone();
            return Box::pin(
                async move {
                    let advisory = match advise::parse(&msg.arguments) {
                        Ok(a) => a,
                        Err(e) => return error_output(e),
                    };
                    let advisory = match &advisor {
                        Some(label) => advisory.with_advisor(label.name.as_ref()),
                        None => advisory,
                    };
                    let raise = RaiseAdvice {
                        epoch: msg.epoch,
                        review: msg.review,
                        advisory,
                        advisor,
                    };
                    match raise_advice(&router, raise).await {
                        Ok(outcome) => ToolOutput {
                            text: outcome.tool_text(max_notes),
                            is_error: outcome.is_error(),
                        },
                        Err(restarting) => error_output(ToolError::Failed(restarting.into())),
                    }
                }
                .instrument(span),
            );
        }
        let Some(tool) = self.registry.get(&msg.name) else {
            let out = error_output(ToolError::UnknownTool(msg.name));
            return Box::pin(async move { out });
        };
        let session = Arc::clone(&self.session);
        let redactor = self.redactor.clone();
        Box::pin(
            async move {
                let joined = tokio::task::spawn_blocking(move || {
                    tool.run(&msg.arguments, &session)
                        .map(|text| match &redactor {
                            Some(r) => r.redact(&text).into_owned(),
                            None => text,
                        })
                })
                .await;
                match joined {
                    Ok(Ok(text)) => ToolOutput {
                        text,
                        is_error: false,
                    },
                    Ok(Err(e)) => error_output(e),
                    Err(e) => error_output(ToolError::Failed(format!("the tool crashed: {e}"))),
                }
            }
            .instrument(span),
        )
    }
}

impl Handler<ClearToolSession> for ToolExecutor {
    type Result = ();

    fn handle(&mut self, _msg: ClearToolSession, _ctx: &mut Context<Self>) {
        self.session.clear();
    }
}

/// Stops the executor as a crash would; its supervisor restarts it (F5). Test-only.
#[cfg(test)]
#[derive(actix::Message)]
#[rtype(result = "()")]
pub(crate) struct HaltForTest;

#[cfg(test)]
impl Handler<HaltForTest> for ToolExecutor {
    type Result = ();

    fn handle(&mut self, _msg: HaltForTest, ctx: &mut Context<Self>) {
        use actix::ActorContext;
        ctx.stop();
    }
}
