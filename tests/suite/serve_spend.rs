//! `advisor serve` in process, spend rules (SP3, SP8): what a client sees of the bounded
//! blocker lane — wakes, cards, the status counters — and the model on every note.

use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use serde_json::{json, Value};

use super::serve_client::{assistant, user};
use super::serve_dispatch::{open, start};

/// One review raising, in order: two blockers, a rewording of the first, a note of seven
/// characters, and a third blocker.
fn blocker_loop() -> ScriptedModel {
    let advise =
        |id: &'static str, note: &str| (id, "advise", json!({"note": note, "severity": "blocker"}));
    ScriptedModel::new([
        ScriptedReply::tool_calls(&[
            advise(
                "1",
                "Stop: the migration drops the users table before the backup runs",
            ),
            advise(
                "2",
                "The deploy script deletes the release directory it runs from",
            ),
            advise(
                "3",
                "the migration drops the users table before the backup runs. STOP",
            ),
            advise("4", "stop it"),
            advise(
                "5",
                "The tests are skipped in CI, so the green build means nothing",
            ),
        ]),
        ScriptedReply::text(""),
    ])
}

fn notes_of(n: &Value) -> Vec<String> {
    n["params"]["card"]["notes"]
        .as_array()
        .map(|notes| {
            notes
                .iter()
                .map(|x| x["note"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[actix::test]
async fn sp3_sp8_v2_an_idle_blocker_loop_wakes_twice_then_cards_and_each_note_names_its_model() {
    let (mut c, _server) = start(blocker_loop());
    let dir = tempfile::tempdir().unwrap();
    // syncBacklog off: the turn end returns before the review ends, so its notes route one by
    // one (CA13: no window holds them) and the wake limit, not the merged batch, bounds them.
    let settings = json!({"syncBacklog": "off", "policy": "interrupt"});
    open(&mut c, "s1", dir.path(), settings).await;
    c.call("session/userPrompt", json!({"sessionId": "s1"}))
        .await;
    c.call(
        "session/runState",
        json!({"sessionId": "s1", "running": false}),
    )
    .await;
    c.call(
        "session/turnEnd",
        json!({"sessionId": "s1", "base": null, "leaf": "e2",
            "messages": [user("Migrate the users table"), assistant("Done, migration written.")]}),
    )
    .await;
    let first = c.notification("session/wake").await;
    let second = c.notification("session/wake").await;
    let card = c.notification("session/card").await;
    assert_eq!(
        notes_of(&first),
        ["Stop: the migration drops the users table before the backup runs"]
    );
    assert_eq!(
        notes_of(&second),
        ["The deploy script deletes the release directory it runs from"]
    );
    assert_eq!(
        notes_of(&card),
        ["The tests are skipped in CI, so the green build means nothing"]
    );
    assert_eq!(card["params"]["card"]["channel"], "card");
    // SP8: every card and note names the model that produced it.
    for event in [&first, &second, &card] {
        assert_eq!(event["params"]["card"]["model"], "scripted/test", "{event}");
        assert_eq!(
            event["params"]["card"]["notes"][0]["model"], "scripted/test",
            "{event}"
        );
    }
    let status = c.call("session/status", json!({"sessionId": "s1"})).await;
    let wakes = c
        .notifications_now()
        .into_iter()
        .filter(|n| n["method"] == "session/wake")
        .count();
    assert_eq!(wakes, 0, "no third wake");
    let d = &status["deliveries"];
    assert_eq!(d["wake"], 2, "{status}");
    assert_eq!(d["card"], 1, "{status}");
    assert_eq!(d["wakesRefused"], 1, "{status}");
    assert_eq!(d["dropped"]["nearDuplicate"], 1, "{status}");
    assert_eq!(d["dropped"]["tooShort"], 1, "{status}");
    let text = status["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("dropped: nearDuplicate 1, tooShort 1\n")
            && text.contains("wakes refused: 1 (past 2 per user prompt; sent as cards)"),
        "{text}"
    );
    // The next user prompt allows two wakes again.
    c.call("session/userPrompt", json!({"sessionId": "s1"}))
        .await;
    c.call(
        "session/command",
        json!({"sessionId": "s1", "line": "test blocker Check the rollback path first"}),
    )
    .await;
    let woke = c.notification("session/wake").await;
    assert_eq!(notes_of(&woke), ["Check the rollback path first"]);
    assert!(
        woke["params"]["card"].get("model").is_none(),
        "a note no model wrote names none: {woke}"
    );
}
