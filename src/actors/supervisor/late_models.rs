//! Late models (CA23): a named advisor at `no model` because its model could not be built
//! yet (a provider the host registers later, models it discovers) is resolved once more
//! when the host reports that its model catalog changed. Quietly: no notice either way. One
//! that resolves starts at the transcript's end (X4), as an advisor added by a reload.

use actix::{Context, Handler};

use super::Supervisor;
use crate::messages::host::ModelCatalogChanged;

impl Handler<ModelCatalogChanged> for Supervisor {
    type Result = ();

    fn handle(&mut self, _msg: ModelCatalogChanged, ctx: &mut Context<Self>) {
        let seed = self.seed_at_end();
        let mut resolved = Vec::new();
        for index in 0..self.members.len() {
            let member = &self.members[index];
            if member.plan.model.is_ok() {
                continue;
            }
            let Some(slug) = member.plan.slug().map(str::to_string) else {
                continue;
            };
            let Some(plan) = self.plan_of(&slug).filter(|plan| plan.model.is_ok()) else {
                continue;
            };
            let member = &mut self.members[index];
            member.plan = plan;
            // CA23: nothing it could not review is held or counted for it.
            member.cadence.restart();
            resolved.push(index);
        }
        if resolved.is_empty() {
            return;
        }
        tracing::info!(advisors = resolved.len(), "late models resolved");
        self.update_turn_end_waits();
        if self.enabled {
            for index in resolved {
                self.start_member(ctx, index, seed.clone());
            }
        }
    }
}
