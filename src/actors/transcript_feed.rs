//! TranscriptFeed: holds the cursor over the primary transcript (X1–X4) and queues each
//! non-blank delta for the AdvisorAgent.

use actix::{Actor, Context, Handler, Recipient, Supervised};

use crate::feed::{FeedCursor, FeedOutcome};
use crate::messages::feed::{ObserveTurn, RewindCursor, SeedCursor, TurnObserved};
use crate::messages::review::QueueDelta;

/// The feed actor: a thin shell over [`FeedCursor`].
pub struct TranscriptFeed {
    fresh: FeedCursor,
    cursor: FeedCursor,
    advisor: Recipient<QueueDelta>,
}

impl TranscriptFeed {
    /// A feed queuing deltas to `advisor`.
    pub fn new(cursor: FeedCursor, advisor: Recipient<QueueDelta>) -> Self {
        Self {
            fresh: cursor.clone(),
            cursor,
            advisor,
        }
    }
}

impl Actor for TranscriptFeed {
    type Context = Context<Self>;
}

impl Supervised for TranscriptFeed {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.cursor = self.fresh.clone();
    }
}

impl Handler<ObserveTurn> for TranscriptFeed {
    type Result = actix::MessageResult<ObserveTurn>;

    fn handle(&mut self, msg: ObserveTurn, _ctx: &mut Context<Self>) -> Self::Result {
        let observed = match self.cursor.observe_at(&msg.transcript) {
            FeedOutcome::Delta(prompt) => {
                self.advisor.do_send(QueueDelta {
                    epoch: msg.epoch,
                    prompt,
                    wip: msg.wip,
                });
                TurnObserved::Queued
            }
            FeedOutcome::Blank => TurnObserved::Blank,
            FeedOutcome::Rewrite => TurnObserved::Rewrite,
            FeedOutcome::Superseded => TurnObserved::Superseded,
        };
        actix::MessageResult(observed)
    }
}

impl Handler<SeedCursor> for TranscriptFeed {
    type Result = ();

    fn handle(&mut self, msg: SeedCursor, _ctx: &mut Context<Self>) {
        self.cursor.seed_at(&msg.transcript, msg.len);
    }
}

impl Handler<RewindCursor> for TranscriptFeed {
    type Result = ();

    fn handle(&mut self, _msg: RewindCursor, _ctx: &mut Context<Self>) {
        self.cursor.reset();
    }
}
