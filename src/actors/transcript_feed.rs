//! TranscriptFeed: holds the cursor over the primary transcript (X1–X4) and queues each
//! non-blank delta for the AdvisorAgent; with a `when: { paths }` filter it skips the
//! updates that touched no matching path and counts them (RO17).

use actix::{Actor, Context, Handler, Recipient, Supervised};

use crate::feed::{FeedCursor, FeedOutcome, Update};
use crate::messages::feed::{
    GetSkippedUpdates, ObserveTurn, RewindCursor, SeedCursor, TurnObserved,
};
use crate::messages::review::QueueDelta;

/// The feed actor: a thin shell over [`FeedCursor`].
pub struct TranscriptFeed {
    fresh: FeedCursor,
    cursor: FeedCursor,
    advisor: Recipient<QueueDelta>,
    /// Updates skipped for the cursor's `when: { paths }` (RO17), kept across restarts.
    skipped: u64,
}

impl TranscriptFeed {
    /// A feed queuing deltas to `advisor`.
    pub fn new(cursor: FeedCursor, advisor: Recipient<QueueDelta>) -> Self {
        Self {
            fresh: cursor.clone(),
            cursor,
            advisor,
            skipped: 0,
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
        let observed = match self.cursor.observe_turn(&msg.transcript, Some(msg.wip)) {
            FeedOutcome::Delta(prompt) => {
                self.advisor.do_send(QueueDelta {
                    epoch: msg.epoch,
                    update: Update::Text(prompt),
                    wip: msg.wip,
                });
                TurnObserved::Queued
            }
            FeedOutcome::Turn(turn) => {
                self.advisor.do_send(QueueDelta {
                    epoch: msg.epoch,
                    update: Update::Turn(turn),
                    wip: msg.wip,
                });
                TurnObserved::Queued
            }
            FeedOutcome::Blank => TurnObserved::Blank,
            FeedOutcome::Rewrite => TurnObserved::Rewrite,
            FeedOutcome::Superseded => TurnObserved::Superseded,
            FeedOutcome::Skipped => {
                self.skipped += 1;
                TurnObserved::Skipped
            }
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

impl Handler<GetSkippedUpdates> for TranscriptFeed {
    type Result = u64;

    fn handle(&mut self, _msg: GetSkippedUpdates, _ctx: &mut Context<Self>) -> u64 {
        self.skipped
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use actix::{Actor, Context, Handler};
    use serde_json::json;

    use super::*;
    use crate::domain::transcript::{Transcript, TranscriptMessage};
    use crate::render::TranscriptView;
    use crate::roster::PathFilter;

    /// Stands in for the AdvisorAgent: keeps every queued update's text.
    #[derive(Default)]
    struct Recorder {
        queued: Vec<String>,
    }

    impl Actor for Recorder {
        type Context = Context<Self>;
    }

    impl Handler<QueueDelta> for Recorder {
        type Result = ();

        fn handle(&mut self, msg: QueueDelta, _ctx: &mut Context<Self>) {
            if let Update::Text(text) = msg.update {
                self.queued.push(text);
            }
        }
    }

    #[derive(actix::Message)]
    #[rtype(result = "Vec<String>")]
    struct GetQueued;

    impl Handler<GetQueued> for Recorder {
        type Result = actix::MessageResult<GetQueued>;

        fn handle(&mut self, _msg: GetQueued, _ctx: &mut Context<Self>) -> Self::Result {
            actix::MessageResult(self.queued.clone())
        }
    }

    fn read(path: &str) -> TranscriptMessage {
        serde_json::from_value(json!({
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "read",
                         "arguments": {"path": path}}],
            "stopReason": "toolUse"
        }))
        .expect("an assistant message")
    }

    #[actix::test]
    async fn ro17_feed_queues_nothing_for_a_skipped_update_and_counts_it() {
        let recorder = Recorder::default().start();
        let filter = PathFilter::new(vec!["migrations/**".into()]).expect("a valid glob");
        let cursor = FeedCursor::new(TranscriptView::Compact, None)
            .with_when(Some(filter), Path::new("/repo"));
        let feed = TranscriptFeed::new(cursor, recorder.clone().recipient()).start();
        let observe = |t: &Transcript| ObserveTurn {
            transcript: t.mark(),
            epoch: 0,
            wip: false,
        };

        let t = Transcript::from_messages([TranscriptMessage::user("tidy the parser")]);
        t.push(read("src/parser.rs"));
        assert_eq!(feed.send(observe(&t)).await, Ok(TurnObserved::Skipped));
        t.push(TranscriptMessage::user("and the README"));
        t.push(read("/repo/README.md"));
        assert_eq!(feed.send(observe(&t)).await, Ok(TurnObserved::Skipped));
        assert_eq!(feed.send(GetSkippedUpdates).await, Ok(2));
        assert_eq!(recorder.send(GetQueued).await, Ok(Vec::new()));

        t.push(TranscriptMessage::user("now the migration"));
        t.push(read("/repo/migrations/0042_users.sql"));
        assert_eq!(feed.send(observe(&t)).await, Ok(TurnObserved::Queued));
        let queued = recorder
            .send(GetQueued)
            .await
            .expect("the recorder answers");
        assert_eq!(queued.len(), 1, "one update, carrying the skipped ones");
        for part in [
            "tidy the parser",
            "src/parser.rs",
            "and the README",
            "now the migration",
            "0042_users.sql",
        ] {
            assert!(
                queued[0].contains(part),
                "{part} missing from {}",
                queued[0]
            );
        }
        assert_eq!(feed.send(GetSkippedUpdates).await, Ok(2));
    }
}
