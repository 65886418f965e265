//! ToolExecutor: runs the advisor's tool calls under its isolated tool session (T1), by the
//! kind of the registry's tool: the workspace tools on the blocking pool, `advise` through
//! the DeliveryRouter (T6, G3).

use std::sync::Arc;

use actix::{Actor, Context, Handler, Recipient, ResponseFuture, Supervised};
use tracing::Instrument;

use crate::actors::delivery_router::raise_advice;
use crate::delivery::ReviewRef;
use crate::domain::advice::AdvisorLabel;
use crate::messages::delivery::RaiseAdvice;
use crate::messages::tools::{ExecuteTool, ToolOutput};
use crate::redact::Redactor;
use crate::tools::{advise, ToolError, ToolKind, ToolRegistry, ToolSession, WorkspaceTool};

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

impl Supervised for ToolExecutor {}

fn error_output(err: ToolError) -> ToolOutput {
    ToolOutput {
        text: err.to_string(),
        is_error: true,
        fingerprint: None,
        unchanged: false,
    }
}

impl Handler<ExecuteTool> for ToolExecutor {
    type Result = ResponseFuture<ToolOutput>;

    fn handle(&mut self, msg: ExecuteTool, _ctx: &mut Context<Self>) -> Self::Result {
        let span = tracing::info_span!("tool_call", tool = %msg.name, session = %self.session.id());
        match self.registry.tool(&msg.name) {
            Some(ToolKind::Workspace(tool)) => Box::pin(
                run_blocking(tool, msg, Arc::clone(&self.session), self.redactor.clone())
                    .instrument(span),
            ),
            Some(ToolKind::Advise) => Box::pin(
                raise(
                    msg,
                    self.router.clone(),
                    self.advisor.clone(),
                    self.max_notes,
                )
                .instrument(span),
            ),
            // SP7: `check_in` is answered by the review engine and never sent here.
            Some(ToolKind::CheckIn) | None => {
                let out = error_output(ToolError::UnknownTool(msg.name));
                Box::pin(async move { out })
            }
        }
    }
}

/// Runs a workspace tool on the blocking pool, its result redacted (X5). The files the call
/// covers are fingerprinted first (SP2): when they still give the fingerprint of the earlier
/// call the review names, the tool is not run and the output says the files are unchanged.
async fn run_blocking(
    tool: Arc<dyn WorkspaceTool>,
    msg: ExecuteTool,
    session: Arc<ToolSession>,
    redactor: Option<Redactor>,
) -> ToolOutput {
    let joined = tokio::task::spawn_blocking(move || {
        let fingerprint = tool.fingerprint(&msg.arguments, &session);
        if fingerprint.is_some() && fingerprint == msg.unchanged_since {
            return ToolOutput {
                text: String::new(),
                is_error: false,
                fingerprint,
                unchanged: true,
            };
        }
        match tool.run(&msg.arguments, &session) {
            Ok(text) => ToolOutput {
                text: match &redactor {
                    Some(r) => r.redact(&text).into_owned(),
                    None => text,
                },
                is_error: false,
                fingerprint,
                unchanged: false,
            },
            Err(e) => error_output(e),
        }
    })
    .await;
    joined.unwrap_or_else(|e| error_output(ToolError::Failed(format!("the tool crashed: {e}"))))
}

/// Raises an `advise` call at the router (T6, G3), labelled with the named advisor (RO13,
/// RO18), and answers what became of the note within `max_notes` (D8).
async fn raise(
    msg: ExecuteTool,
    router: Recipient<RaiseAdvice>,
    advisor: Option<AdvisorLabel>,
    max_notes: usize,
) -> ToolOutput {
    let advisory = match advise::parse(&msg.arguments) {
        Ok(a) => a,
        Err(e) => return error_output(e),
    };
    let mut advisory = match &advisor {
        Some(label) => advisory.with_advisor(label.name.as_ref()),
        None => advisory,
    };
    // SP8: the note names the model that wrote it.
    advisory.model = msg.model;
    let raise = RaiseAdvice {
        review: ReviewRef {
            advisor,
            id: msg.review,
        },
        advisory,
    };
    match raise_advice(&router, raise).await {
        Ok(outcome) => ToolOutput {
            text: outcome.tool_text(max_notes),
            is_error: outcome.is_error(),
            fingerprint: None,
            unchanged: false,
        },
        Err(restarting) => error_output(ToolError::Failed(restarting.into())),
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

#[cfg(test)]
mod tests {
    use actix::{Actor, Context, Handler};
    use serde_json::json;

    use super::*;
    use crate::delivery::{RaiseOutcome, ReviewId};

    /// Stands in for the DeliveryRouter: keeps each raise and records the note.
    #[derive(Default)]
    struct Router {
        raised: Vec<RaiseAdvice>,
    }

    impl Actor for Router {
        type Context = Context<Self>;
    }

    impl Handler<RaiseAdvice> for Router {
        type Result = actix::MessageResult<RaiseAdvice>;

        fn handle(&mut self, msg: RaiseAdvice, _ctx: &mut Context<Self>) -> Self::Result {
            self.raised.push(msg);
            actix::MessageResult(RaiseOutcome::Recorded)
        }
    }

    #[derive(actix::Message)]
    #[rtype(result = "Vec<RaiseAdvice>")]
    struct GetRaised;

    impl Handler<GetRaised> for Router {
        type Result = actix::MessageResult<GetRaised>;

        fn handle(&mut self, _msg: GetRaised, _ctx: &mut Context<Self>) -> Self::Result {
            actix::MessageResult(self.raised.clone())
        }
    }

    fn call(name: &str, arguments: serde_json::Value) -> ExecuteTool {
        ExecuteTool {
            review: ReviewId {
                epoch: 3,
                number: 7,
            },
            name: name.into(),
            arguments,
            unchanged_since: None,
            model: Some("prov/advisor-model".into()),
        }
    }

    #[actix::test]
    async fn ro9_t6_the_executor_runs_the_granted_tools_and_always_advise() {
        let root = std::env::temp_dir();
        let router = Router::default().start();
        let session = Arc::new(ToolSession::for_primary("p", root));
        let registry = ToolRegistry::workspace().only(&["find"]);
        let executor = ToolExecutor::new(registry, session, router.clone().recipient(), 4)
            .with_advisor(Some(AdvisorLabel::new("db", "DB Migrations")))
            .start();

        let read = executor
            .send(call("read", json!({"path": "Cargo.toml"})))
            .await
            .expect("the executor answers");
        assert!(read.is_error);
        assert!(
            read.text.starts_with("unknown tool `read`"),
            "{}",
            read.text
        );

        let advise = executor
            .send(call("advise", json!({"note": "add a down migration"})))
            .await
            .expect("the executor answers");
        assert_eq!(
            advise,
            ToolOutput {
                text: "Recorded.".into(),
                is_error: false,
                fingerprint: None,
                unchanged: false,
            }
        );
        let raised = router.send(GetRaised).await.expect("the router answers");
        assert_eq!(raised.len(), 1);
        assert_eq!(
            (raised[0].review.epoch(), raised[0].review.number()),
            (3, 7)
        );
        assert_eq!(raised[0].advisory.note, "add a down migration");
        assert_eq!(raised[0].advisory.advisor.as_deref(), Some("DB Migrations"));
        assert_eq!(
            raised[0].review.advisor.as_ref().map(|l| &*l.slug),
            Some("db")
        );
        // SP8: the note names the model that made the call.
        assert_eq!(
            raised[0].advisory.model.as_deref(),
            Some("prov/advisor-model")
        );
    }
}
