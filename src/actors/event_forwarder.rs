//! EventForwarder: hands host events to a tokio channel, for hosts that are not actix
//! programs (A3).

use actix::{Actor, Context, Handler};
use tokio::sync::mpsc::UnboundedSender;

use crate::domain::host::HostEvent;

/// Forwards every [`HostEvent`] into an unbounded channel.
pub struct EventForwarder {
    tx: UnboundedSender<HostEvent>,
}

impl EventForwarder {
    /// A forwarder into `tx`.
    pub fn new(tx: UnboundedSender<HostEvent>) -> Self {
        Self { tx }
    }
}

impl Actor for EventForwarder {
    type Context = Context<Self>;
}

impl Handler<HostEvent> for EventForwarder {
    type Result = ();

    fn handle(&mut self, msg: HostEvent, _ctx: &mut Context<Self>) {
        // A host that dropped its receiver no longer wants events.
        let _ = self.tx.send(msg);
    }
}
