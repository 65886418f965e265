//! Mailbox tests of the Supervisor that need its internals (F5).

use std::sync::Arc;

use super::*;
use crate::actors::tool_executor::{HaltForTest, ToolExecutor};
use crate::messages::tools::ExecuteTool;
use crate::model::scripted::ScriptedModel;

struct Sink;
impl Actor for Sink {
    type Context = Context<Self>;
}
impl Handler<HostEvent> for Sink {
    type Result = ();
    fn handle(&mut self, _msg: HostEvent, _ctx: &mut Context<Self>) {}
}

/// Hands out the executor's address (test-only).
#[derive(actix::Message)]
#[rtype(result = "Option<Addr<ToolExecutor>>")]
struct GetExecutor;

impl Handler<GetExecutor> for Supervisor {
    type Result = Option<Addr<ToolExecutor>>;
    fn handle(&mut self, _msg: GetExecutor, _ctx: &mut Context<Self>) -> Self::Result {
        let first = self.members.iter().next()?.slug();
        let children = self.links.actors_of(first)?.children.as_ref()?;
        Some(children.executor.clone())
    }
}

#[actix::test]
async fn f5_a_stopped_actor_is_restarted_and_the_same_address_keeps_working() {
    let model = ScriptedModel::new([]);
    let config = RuntimeConfig::new("p", std::env::temp_dir(), Some(Arc::new(model)));
    let sup = Supervisor::new(config, Sink.start().recipient()).start();
    let executor = sup
        .send(GetExecutor)
        .await
        .unwrap()
        .expect("children started");
    executor.send(HaltForTest).await.unwrap();
    let out = executor
        .send(ExecuteTool {
            review: crate::delivery::ReviewId {
                epoch: 0,
                number: 1,
            },
            name: "advise".into(),
            arguments: serde_json::json!({"note": "still alive", "severity": "nit"}),
            unchanged_since: None,
            model: None,
        })
        .await
        .expect("the restarted executor answers");
    // The default policy's answer (P1).
    assert_eq!(out.text, "Delivered.");
}
