//! The Supervisor carries out its members' changes (RO13): what starts, stops or is removed
//! is decided by [`Members`]; here its [`MemberChange`]s become messages to the router and
//! to each member's actors, which [`SupervisorLinks`](crate::actors::links::SupervisorLinks)
//! keeps.

use actix::{Addr, AsyncContext, Context};

use super::Supervisor;
use crate::actors::advisor_agent::AdvisorAgent;
use crate::actors::links::MemberStart;
use crate::actors::wiring::AgentReports;
use crate::domain::transcript::Transcript;
use crate::members::{Member, MemberChange, Members};
use crate::messages::delivery::{
    PauseAdvisor, RegisterAdvisor, RegisterUnnamedAdvisor, RemoveAdvisor, ResetDelivery,
    SetDeliveryEnabled,
};
use crate::messages::review::{QueueDelta, ResumeReviews};

impl Supervisor {
    /// The agents of the running members, in member order.
    pub(super) fn agents(&self) -> Vec<Addr<AdvisorAgent>> {
        let members = self.members.iter();
        members
            .filter_map(|m| self.links.agent_of(m.slug()))
            .collect()
    }

    /// Carries out what [`Members`] decided, in order; then the turn-end wait flag follows
    /// the members as they are now (S1, D5, RO15, RO21).
    pub(super) fn carry_out(&mut self, ctx: &mut Context<Self>, changes: Vec<MemberChange>) {
        for change in changes {
            self.carry_out_one(ctx, change);
        }
        self.update_turn_end_flag();
    }

    fn carry_out_one(&mut self, ctx: &mut Context<Self>, change: MemberChange) {
        match change {
            MemberChange::Start { slug, seed } => self.start_member(ctx, slug, seed),
            MemberChange::Stop { slug, epoch, cause } => self.links.stop(&slug, epoch, cause),
            MemberChange::Remove { slug } => {
                self.links.remove(&slug);
                let advisor = slug.map(Into::into);
                self.router().do_send(RemoveAdvisor { advisor });
            }
            MemberChange::Register { slug } => {
                if let Some(register) = RegisterAdvisor::of(&self.members, Some(&slug)) {
                    self.router().do_send(register);
                }
            }
            MemberChange::RegisterUnnamed { max_notes } => {
                self.router().do_send(RegisterUnnamedAdvisor { max_notes });
            }
            MemberChange::PauseAtRouter { slug } => {
                let slug = slug.into();
                self.router().do_send(PauseAdvisor { slug, paused: true });
            }
            MemberChange::Resume { slug } => {
                if let Some(agent) = self.links.agent_of(slug.as_deref()) {
                    agent.do_send(ResumeReviews);
                }
            }
            MemberChange::Rewind {
                slug,
                epoch,
                cause,
                end_halt,
            } => self.links.rewind(&slug, epoch, cause, end_halt),
            MemberChange::ResetDelivery {
                epoch,
                branch,
                conversation,
            } => self.router().do_send(ResetDelivery {
                epoch,
                branch,
                conversation,
            }),
            MemberChange::SetDeliveryEnabled(enabled) => {
                self.router().do_send(SetDeliveryEnabled { enabled });
            }
            MemberChange::Queue {
                slug,
                epoch,
                updates,
                wip,
                turn,
            } => {
                if let Some(agent) = self.links.agent_of(slug.as_deref()) {
                    agent.do_send(QueueDelta {
                        epoch,
                        updates,
                        wip,
                        turn,
                    });
                }
            }
            MemberChange::Notice(text) => self.links.notice_about(None, text),
        }
    }

    /// Starts the actors of the member `slug`, reading from `seed` (X4); a named one is
    /// registered with the router first (RO10, RO15, RO16).
    fn start_member(
        &mut self,
        ctx: &mut Context<Self>,
        slug: Option<String>,
        seed: Option<(Transcript, usize)>,
    ) {
        let router = self.router();
        let members: &Members = &self.members;
        self.links
            .watchdog(members.config(), ctx.address().recipient());
        if let Some(register) = RegisterAdvisor::of(members, slug.as_deref()) {
            router.do_send(register);
        }
        let Some(plan) = members.get(slug.as_deref()).map(Member::plan) else {
            return;
        };
        let Ok(model) = plan.model.clone() else {
            return;
        };
        if let Some(audit) = self.links.open_audit(&slug, members.config(), plan) {
            // SP6, P9: the ratio counts what the file recorded before.
            super::ceiling::restore_spend(ctx, slug.clone(), &audit);
        }
        let start = MemberStart {
            config: members.config(),
            plan,
            model,
            epoch: members.epoch(),
            seed,
            reports: AgentReports::to(&ctx.address()),
        };
        self.links.start(slug, start);
    }
}
