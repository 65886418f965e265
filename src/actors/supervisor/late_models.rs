//! Late models (CA23): the host reports that its model catalog changed, and
//! [`crate::members::Members::models_changed`] decides which advisors without a model now
//! have one; the actor starts them.

use actix::{Context, Handler};

use super::Supervisor;
use crate::messages::host::ModelCatalogChanged;

impl Handler<ModelCatalogChanged> for Supervisor {
    type Result = ();

    fn handle(&mut self, _msg: ModelCatalogChanged, ctx: &mut Context<Self>) {
        let changes = self.members.models_changed();
        if changes.is_empty() {
            return;
        }
        self.carry_out(ctx, changes);
        self.update_turn_end_flag();
    }
}
