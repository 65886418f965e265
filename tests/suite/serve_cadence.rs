//! `advisor serve` in process, review cadence and merged delivery (SPEC §16): the scenarios
//! CA-S2, CA-S4 and CA-S6 as a client sees them — the one merged message with `turnsAgo` on
//! its notes, the wake, card or steer it takes, and each advisor's cadence in
//! `session/status`. The mailbox versions are `cadence` and `merged_delivery`.

use std::path::Path;
use std::sync::Arc;

use advisor::model::scripted::{ScriptedModel, ScriptedReply};
use advisor::model::{ModelClient, ModelFuture, ModelInfo, ModelRequest};
use advisor::replay::merged_guidance;
use advisor::serve::MAX_LINE_BYTES;
use serde_json::{json, Value};

use super::serve_client::{assistant, user};
use super::serve_dispatch::{open, start_with, Client};
use crate::support::runtime::{last_user_text, next_request, GatedModel};

/// One model for every advisor of a session, answering each request from the script of the
/// roster entry whose instructions (in the system prompt) hold its marker.
struct BySystem(Vec<(&'static str, ScriptedModel)>);

impl ModelClient for BySystem {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        match self.0.iter().find(|(m, _)| request.system.contains(m)) {
            Some((_, model)) => model.complete(request),
            None => panic!("a request of no known advisor: {}", request.system),
        }
    }

    fn info(&self) -> ModelInfo {
        self.0[0].1.info()
    }
}

/// A roster file in `dir/.omp/` (a temporary directory's name starts with `.`, W2). Each
/// entry names a model of the catalog so that it resolves; the server's fixed model answers
/// for every one.
fn roster_in(dir: &Path, text: &str) {
    std::fs::create_dir_all(dir.join(".omp")).unwrap();
    std::fs::write(dir.join(".omp/WATCHDOG.yml"), text).unwrap();
}

/// The `session/turnEnd` params of turn `n` of session `s`: turn 1 brings the user's one
/// prompt, every turn an answer `turn n`, work in progress (`wip`) or final. Only the first
/// turn has a user message: a user line per turn would be a new prompt each time (CA17).
fn turn_params(s: &str, n: usize, wip: bool) -> Value {
    let base = (n > 1).then(|| format!("e{}", n - 1));
    let mut messages = Vec::new();
    if n == 1 {
        messages.push(user("Add the endpoint and its migration."));
    }
    messages.push(assistant(&format!("turn {n}")));
    json!({"sessionId": s, "base": base, "leaf": format!("e{n}"), "willContinue": wip,
        "messages": messages})
}

async fn turn_end(c: &mut Client, s: &str, n: usize, wip: bool) {
    let r = c.call("session/turnEnd", turn_params(s, n, wip)).await;
    assert_eq!(r, json!({}));
}

/// The `turn N` lines a review's prompt carries, in order.
fn turns_in(text: &str) -> Vec<usize> {
    text.lines()
        .filter_map(|l| l.split("turn ").nth(1))
        .filter_map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

async fn status(c: &mut Client, s: &str) -> Value {
    c.call("session/status", json!({"sessionId": s})).await
}

/// The named advisor `name` of a status result.
fn named<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["advisors"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["name"] == name))
        .unwrap_or_else(|| panic!("no advisor {name}: {status}"))
}

/// An advisor's `(heldUpdates, eligibleUpdates)` as status shows them (CA12).
fn counters(cadence: &Value) -> (u64, u64) {
    let n = |k: &str| {
        cadence[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {cadence}"))
    };
    (n("heldUpdates"), n("eligibleUpdates"))
}

/// The element CA14 prescribes for a note.
fn element(advisor: Option<&str>, severity: &str, ago: u64, note: &str) -> String {
    let advisor = advisor.map_or(String::new(), |a| format!(" advisor=\"{a}\""));
    let ago = if ago > 0 {
        format!(" turns_ago=\"{ago}\"")
    } else {
        String::new()
    };
    format!("<advisory{advisor} severity=\"{severity}\"{ago} guidance=\"weigh, don't blindly obey\">\n{note}\n</advisory>")
}

/// The notifications of the session delivery kinds received so far, by method.
fn deliveries_now(c: &Client) -> Vec<String> {
    c.notifications_now()
        .into_iter()
        .filter_map(|n| n["method"].as_str().map(str::to_string))
        .filter(|m| ["session/wake", "session/card", "session/steerReady"].contains(&m.as_str()))
        .collect()
}

const FINAL: &str =
    "advisors:\n  - name: Final\n    model: openai/gpt-5\n    instructions: FINAL-REVIEWER\n    \
    reviewMode: agent-end\n    syncBacklog: strict\n";

/// CA-S2: entry `Final` (`agent-end`, `strict`): WIP turns 1–3 hold their deltas and start no
/// review; the final turn 4 sends one review of 1–4 as one backlog unit, its `turnEnd`
/// answers only after that review, and the concern comes back as one wake: the guidance, then
/// `<advisory advisor="Final" severity="concern" …>` without `turns_ago`, `turnsAgo` 0.
#[actix::test]
async fn ca_s2_ca10_ca14_through_serve_an_agent_end_strict_entry_reviews_once_and_wakes_once() {
    let concern = "The retry loop in fetch() never gives up on a 500.";
    let (gated, mut arrivals, gate) = GatedModel::new(
        vec![ScriptedReply::advise("1", concern, Some("concern"))],
        true,
    );
    let gate = gate.expect("gated");
    let (mut c, _server) = start_with(Some(Arc::new(gated)), MAX_LINE_BYTES);
    let dir = tempfile::tempdir().unwrap();
    roster_in(dir.path(), FINAL);
    let opened = open(&mut c, "s", dir.path(), json!({})).await;
    assert_eq!(opened["turnEndWaits"], true, "a strict entry: {opened}");
    for n in 1..=3 {
        turn_end(&mut c, "s", n, true).await;
    }
    assert!(arrivals.try_recv().is_err(), "no review before TurnEnd 4");
    let st = status(&mut c, "s").await;
    let cadence = &named(&st, "Final")["cadence"];
    assert_eq!(cadence["reviewMode"], "agent-end", "{st}");
    assert_eq!(cadence["syncBacklog"], "strict", "{st}");
    assert_eq!(counters(cadence), (3, 0), "three held, none counted: {st}");
    let text = st["text"].as_str().unwrap_or_default();
    assert!(text.contains("3 held update(s)"), "{text}");

    let ending = c
        .request("session/turnEnd", turn_params("s", 4, false))
        .await;
    let review = next_request(&mut arrivals).await;
    assert_eq!(turns_in(&last_user_text(&review)), [1, 2, 3, 4]);
    // A round trip while the review is held: the turn end still waits (strict).
    let st = status(&mut c, "s").await;
    assert!(
        c.reply_now(&ending).is_none(),
        "turnEnd 4 waits for the review"
    );
    let final_advisor = named(&st, "Final");
    assert_eq!(
        final_advisor["agent"]["backlog"], 1,
        "one backlog unit: {st}"
    );
    assert_eq!(counters(&final_advisor["cadence"]), (0, 1), "{st}");
    assert!(
        deliveries_now(&c).is_empty(),
        "nothing before the review ends"
    );

    gate.add_permits(1);
    let reply = c.reply(&ending).await;
    assert_eq!(reply["result"], json!({}), "{reply}");
    let wake = c.notification("session/wake").await;
    let card = &wake["params"]["card"];
    assert_eq!(card["channel"], "wake");
    let expected = format!(
        "{}\n{}",
        merged_guidance(),
        element(Some("Final"), "concern", 0, concern)
    );
    assert_eq!(card["content"], expected.as_str(), "{card}");
    assert_eq!(
        card["notes"],
        json!([{"severity": "concern", "note": concern, "advisor": "Final", "turnsAgo": 0,
            "model": "scripted/test"}])
    );
    let st = status(&mut c, "s").await;
    assert!(deliveries_now(&c).is_empty(), "one message");
    assert_eq!(st["deliveries"]["wake"], 1, "{st}");
}

const TWO: &str = "advisors:\n  - name: A\n    model: openai/gpt-5\n    instructions: A-REVIEWER\n    syncBacklog: strict\n  \
    - name: B\n    model: openai/gpt-5\n    instructions: B-REVIEWER\n    reviewMode: agent-end\n    syncBacklog: strict\n";

/// CA-S4 through serve: `A` (turn, strict) defers nit n2 at WIP turn 2; at the final turn 4
/// A raises concern cA and B (agent-end, strict) blocker bB then nit nB. The client gets one
/// steer: guidance, bB, cA, nB, then n2 with `turns_ago="2"` (`turnsAgo` 2). The steer is the
/// run's continuation (CA17): its turns 5–7 are held by both advisors, not reviewed; and
/// CA19 is armed with K = 4, so a concern at T = 5 is an aside and one at T = 8 steers.
#[actix::test]
async fn ca_s4_ca14_ca16_ca17_ca19_through_serve_two_advisors_one_merged_steer() {
    let a = ScriptedModel::new([
        ScriptedReply::text(""),
        ScriptedReply::advise("1", "nit n2: tidy the imports", Some("nit")),
        ScriptedReply::text(""),
        ScriptedReply::advise("1", "concern cA: the route lacks auth", Some("concern")),
    ]);
    let b = ScriptedModel::new([ScriptedReply::tool_calls(&[
        (
            "1",
            "advise",
            json!({"note": "blocker bB: the migration drops data", "severity": "blocker"}),
        ),
        (
            "2",
            "advise",
            json!({"note": "nit nB: name the migration", "severity": "nit"}),
        ),
    ])]);
    let model = BySystem(vec![("A-REVIEWER", a.clone()), ("B-REVIEWER", b.clone())]);
    let (mut c, _server) = start_with(Some(Arc::new(model)), MAX_LINE_BYTES);
    let dir = tempfile::tempdir().unwrap();
    roster_in(dir.path(), TWO);
    open(
        &mut c,
        "s",
        dir.path(),
        json!({"policy": "defer", "immuneTurns": 3}),
    )
    .await;
    c.call("session/userPrompt", json!({"sessionId": "s"}))
        .await;
    c.call(
        "session/runState",
        json!({"sessionId": "s", "running": true}),
    )
    .await;
    for n in 1..=3 {
        turn_end(&mut c, "s", n, true).await;
        assert!(deliveries_now(&c).is_empty(), "turn {n}: nothing yet");
    }
    let st = status(&mut c, "s").await;
    assert_eq!(counters(&named(&st, "A")["cadence"]), (0, 3), "{st}");
    assert_eq!(counters(&named(&st, "B")["cadence"]), (3, 0), "{st}");
    turn_end(&mut c, "s", 4, false).await;
    // Notifications are not ordered against replies (docs/SERVE.md): wait for the one
    // continuation, then check that nothing else came with it.
    c.notification("session/steerReady").await;
    assert!(deliveries_now(&c).is_empty(), "one continuation");
    let r = c
        .call("session/stepBoundary", json!({"sessionId": "s"}))
        .await;
    let deliveries = r["deliveries"].as_array().expect("deliveries");
    assert_eq!(deliveries.len(), 1, "one message: {r}");
    let steer = &deliveries[0];
    assert_eq!(steer["channel"], "steer");
    let expected = [
        merged_guidance().to_string(),
        element(
            Some("B"),
            "blocker",
            0,
            "blocker bB: the migration drops data",
        ),
        element(Some("A"), "concern", 0, "concern cA: the route lacks auth"),
        element(Some("B"), "nit", 0, "nit nB: name the migration"),
        element(Some("A"), "nit", 2, "nit n2: tidy the imports"),
    ]
    .join("\n");
    assert_eq!(steer["content"], expected.as_str(), "{steer}");
    let notes: Vec<(&str, u64)> = steer["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .map(|n| {
            (
                n["advisor"].as_str().unwrap(),
                n["turnsAgo"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(notes, [("B", 0), ("A", 0), ("B", 0), ("A", 2)]);
    assert_eq!((a.request_count(), b.request_count()), (4, 1));

    // The steer's turns (5–7, WIP) are the advisors' continuation: held, never reviewed.
    for n in 5..=7 {
        turn_end(&mut c, "s", n, true).await;
        if n == 5 {
            // CA19: K = 4, so a concern at T = 5 is an aside.
            let line = "/advisor test concern Check the rollback path at five";
            c.call("session/command", json!({"sessionId": "s", "line": line}))
                .await;
            let r = c
                .call("session/stepBoundary", json!({"sessionId": "s"}))
                .await;
            assert_eq!(r["deliveries"][0]["channel"], "aside", "{r}");
        }
    }
    assert_eq!(
        (a.request_count(), b.request_count()),
        (4, 1),
        "no review of the continuation"
    );
    let st = status(&mut c, "s").await;
    assert_eq!(counters(&named(&st, "A")["cadence"]), (3, 4), "{st}");
    assert_eq!(counters(&named(&st, "B")["cadence"]), (3, 1), "{st}");
    turn_end(&mut c, "s", 8, true).await;
    let line = "/advisor test concern Check the rollback path at eight";
    c.call("session/command", json!({"sessionId": "s", "line": line}))
        .await;
    let steered = c.notification("session/steerReady").await;
    assert_eq!(steered["params"]["sessionId"], "s");
}

/// CA-S6 through serve (sync off): the review of the final turn 1 ends after `turnEnd`
/// answered. A turn-mode concern is one card (no `turnsAgo`: a live delivery); under
/// `advisor.reviewMode: agent-end` the concern is one wake; a blocker is one wake; and once
/// the host started turn 2 of the same run, the concern steers into it.
#[actix::test]
async fn ca_s6_ca18_through_serve_a_late_note_after_a_terminal_answer() {
    for (severity, mode, continued, expected) in [
        ("concern", "turn", false, "session/card"),
        ("concern", "agent-end", false, "session/wake"),
        ("blocker", "turn", false, "session/wake"),
        ("concern", "turn", true, "session/steerReady"),
    ] {
        let case = format!("{severity} {mode} continued={continued}");
        let note = format!("The {severity} arrives late ({mode}).");
        let (gated, mut arrivals, gate) = GatedModel::new(
            vec![ScriptedReply::advise("1", &note, Some(severity))],
            true,
        );
        let gate = gate.expect("gated");
        let (mut c, _server) = start_with(Some(Arc::new(gated)), MAX_LINE_BYTES);
        let dir = tempfile::tempdir().unwrap();
        let settings = json!({"syncBacklog": "off", "policy": "defer", "immuneTurns": 0,
            "reviewMode": mode});
        open(&mut c, "s", dir.path(), settings).await;
        c.call("session/userPrompt", json!({"sessionId": "s"}))
            .await;
        c.call(
            "session/runState",
            json!({"sessionId": "s", "running": true}),
        )
        .await;
        turn_end(&mut c, "s", 1, false).await;
        next_request(&mut arrivals).await;
        // The run ends, or the host starts turn 2 of the same run.
        c.call(
            "session/runState",
            json!({"sessionId": "s", "running": continued}),
        )
        .await;
        let st = status(&mut c, "s").await;
        assert_eq!(st["cadence"]["reviewMode"], mode, "{case}: {st}");
        assert_eq!(counters(&st["cadence"]), (0, 1), "{case}: {st}");
        assert!(
            deliveries_now(&c).is_empty(),
            "{case}: the window closed empty"
        );
        gate.add_permits(1);
        let event = c.notification(expected).await;
        match expected {
            "session/steerReady" => {
                let r = c
                    .call("session/stepBoundary", json!({"sessionId": "s"}))
                    .await;
                assert_eq!(r["deliveries"][0]["channel"], "steer", "{case}: {r}");
                assert_eq!(r["deliveries"][0]["notes"][0]["note"], note.as_str());
            }
            _ => {
                let card = &event["params"]["card"];
                assert_eq!(card["notes"][0]["note"], note.as_str(), "{case}");
                assert!(
                    card["notes"][0].get("turnsAgo").is_none(),
                    "{case}: a live delivery: {card}"
                );
                assert!(
                    !card["content"]
                        .as_str()
                        .unwrap_or_default()
                        .starts_with(merged_guidance()),
                    "{case}: no guidance on a live delivery"
                );
            }
        }
        let st = status(&mut c, "s").await;
        assert!(deliveries_now(&c).is_empty(), "{case}: one delivery");
        let kind = expected.trim_start_matches("session/");
        let counted = if kind == "steerReady" { "steer" } else { kind };
        assert_eq!(st["deliveries"][counted], 1, "{case}: {st}");
    }
}
