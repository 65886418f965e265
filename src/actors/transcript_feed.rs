//! TranscriptFeed: holds the cursor over the primary transcript (X1–X4) and captures each
//! turn end's delta at once, as the primary saw it then (CA3), with whether it touched a
//! path the advisor's `when: { paths }` matches (RO17, CA4). The supervisor decides from
//! the advisor's cadence whether it is reviewed now or held.

use actix::{Actor, Context, Handler, Supervised};

use crate::feed::{FeedCursor, FeedOutcome, Update};
use crate::messages::feed::{ObserveTurn, RewindCursor, SeedCursor, TurnObserved};

/// The feed actor: a thin shell over [`FeedCursor`].
pub struct TranscriptFeed {
    fresh: FeedCursor,
    cursor: FeedCursor,
}

impl TranscriptFeed {
    /// A feed over `cursor`.
    pub fn new(cursor: FeedCursor) -> Self {
        Self {
            fresh: cursor.clone(),
            cursor,
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
        let update = match self.cursor.observe_turn(&msg.transcript, Some(msg.wip)) {
            FeedOutcome::Delta(prompt) => Some(Update::Text(prompt)),
            FeedOutcome::Turn(turn) => Some(Update::Turn(turn)),
            FeedOutcome::Blank => None,
            FeedOutcome::Rewrite => return actix::MessageResult(TurnObserved::Rewrite),
            FeedOutcome::Superseded => return actix::MessageResult(TurnObserved::Superseded),
        };
        actix::MessageResult(TurnObserved::Captured {
            update,
            paths_match: self.cursor.paths_matched(),
        })
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use actix::Actor;
    use serde_json::json;

    use super::*;
    use crate::domain::transcript::{Transcript, TranscriptMessage};
    use crate::render::TranscriptView;
    use crate::roster::PathFilter;

    fn read(path: &str) -> TranscriptMessage {
        serde_json::from_value(json!({
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "read",
                         "arguments": {"path": path}}],
            "stopReason": "toolUse"
        }))
        .expect("an assistant message")
    }

    fn text(observed: TurnObserved) -> (String, bool) {
        match observed {
            TurnObserved::Captured {
                update: Some(Update::Text(text)),
                paths_match,
            } => (text, paths_match),
            other => panic!("expected a captured text delta, got {other:?}"),
        }
    }

    #[actix::test]
    async fn ca4_ro17_every_update_is_captured_at_once_and_marked_whether_its_paths_match() {
        let filter = PathFilter::new(vec!["migrations/**".into()]).expect("a valid glob");
        let cursor = FeedCursor::new(TranscriptView::Compact, None)
            .with_when(Some(filter), Path::new("/repo"));
        let feed = TranscriptFeed::new(cursor).start();
        let observe = |t: &Transcript| ObserveTurn {
            transcript: t.mark(),
            wip: false,
        };

        let t = Transcript::from_messages([TranscriptMessage::user("tidy the parser")]);
        t.push(read("src/parser.rs"));
        let (first, matched) = text(feed.send(observe(&t)).await.expect("answered"));
        assert!(!matched && first.contains("src/parser.rs"), "{first}");
        t.push(TranscriptMessage::user("now the migration"));
        t.push(read("/repo/migrations/0042_users.sql"));
        let (second, matched) = text(feed.send(observe(&t)).await.expect("answered"));
        assert!(matched, "{second}");
        assert!(
            second.contains("0042_users.sql") && !second.contains("tidy the parser"),
            "the earlier update was captured with its own turn: {second}"
        );
    }
}
