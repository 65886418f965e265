//! A roster through the real pi (SPEC RO18, RO19, RO20, RO23; the acceptance test of issue
//! 20): a workspace whose `WATCHDOG.yml` names two advisors, Architecture and Security, each
//! with instructions of its own, so the scripted advisor server can tell by a request's system
//! prompt which advisor sends it. pi (both API lines, installed by `scripts/pi-e2e-setup.sh`)
//! runs turns with `integrations/pi/advisor.ts`; the tests assert what reaches the primary's
//! requests, the session file, the notices, and which advisor the advisor server hears from.
//! The scripted primary and the RPC driver are `pi_e2e`'s.

use std::sync::Arc;

use serde_json::{json, Value};

use super::pi_e2e::{
    advisor_entries, eventually, message_text, messages, primary, primary_requests, request_text,
    runtime, session_file, text_sse, tool_messages, tool_sse, update_text, ModelServer, Reply,
    Setup, ASK_ANSWER, ENABLED_SYNC,
};
use super::pi_e2e_lines::{advisor_command, pi_of, prompt_settled, Line};

/// Two healthy advisors with instructions the scripted server recognises, and one malformed
/// entry (RO10: `maxNotesPerUpdate: 0`) that is skipped with a warning.
const ROSTER: &str = "\
advisors:
  - name: Architecture
    instructions: You are ARCH-REVIEWER; weigh the structure of each change.
  - name: Security
    instructions: You are SEC-REVIEWER; weigh each change for security problems.
  - name: Broken
    maxNotesPerUpdate: 0
";

const ADVISORS: [(&str, &str); 2] = [
    ("Architecture", "ARCH-REVIEWER"),
    ("Security", "SEC-REVIEWER"),
];

/// The system prompt of a request.
fn system_text(body: &Value) -> String {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "system" || m["role"] == "developer")
        .map(message_text)
        .collect()
}

/// Which roster advisor sent a request, by the instructions in its system prompt.
fn reviewer(body: &Value) -> Option<&'static str> {
    let system = system_text(body);
    ADVISORS
        .iter()
        .find(|(_, marker)| system.contains(marker))
        .map(|(name, _)| *name)
}

/// The advisors: each answers a question from the agent with `<Name> answers: ASK_ANSWER`,
/// and a session update holding `ROUND-n` with a nit `<Name> note on ROUND-n`; anything
/// else (and the call after an `advise` result) is silence.
fn roster_advisor(body: &Value) -> Reply {
    let silence = || Reply::now(text_sse(""));
    let Some(who) = reviewer(body) else {
        return silence();
    };
    let msgs = messages(body);
    if msgs.last().is_none_or(|m| m["role"] != "user") {
        return silence();
    }
    let update = update_text(&msgs);
    if update.contains("Question from the agent") {
        return Reply::now(text_sse(&format!("{who} answers: {ASK_ANSWER}")));
    }
    let Some(round) = (1..=9)
        .rev()
        .find(|n| update.contains(&format!("ROUND-{n}")))
    else {
        return silence();
    };
    let args = json!({"severity": "nit", "note": format!("{who} note on ROUND-{round}")});
    Reply::now(tool_sse("call_advise", "advise", args))
}

/// The requests advisor `who` has sent so far.
fn requests_of(server: &ModelServer, who: &str) -> Vec<Value> {
    server
        .bodies()
        .into_iter()
        .filter(|b| reviewer(b) == Some(who))
        .collect()
}

/// Whether advisor `who` has reviewed an update holding `needle`.
fn has_reviewed(server: &ModelServer, who: &str, needle: &str) -> bool {
    requests_of(server, who)
        .iter()
        .any(|b| update_text(&messages(b)).contains(needle))
}

/// Waits until both advisors (or the one named) reviewed the run's final answer, so that no
/// review of it is still on its way when the test counts requests.
fn wait_reviewed(server: &ModelServer, who: &[&str], answer: &str) {
    for name in who {
        eventually(&format!("{name} reviewing {answer}"), || {
            has_reviewed(server, name, answer)
        });
    }
}

/// The acceptance scenario of issue 20 on one pi line.
fn two_advisors_through_pi(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(roster_advisor));
    // D3's routing: a nit raised mid-run is an aside in the very next request.
    let setup = Setup::new(
        &primary_srv,
        &advisor_srv,
        &format!("{ENABLED_SYNC}  policy: interrupt\n"),
        "the parser ignores empty lines\n",
    );
    std::fs::write(setup.work.join("WATCHDOG.yml"), ROSTER).expect("WATCHDOG.yml");
    let mut pi = setup.start(&tools, true, &[]);

    // Round one: each advisor's nit on the read reaches the next request, named (RO18).
    prompt_settled(
        &mut pi,
        line,
        "Round one. ROUND-1 [read:notes.txt] [say:round-one-done]",
    );
    let requests = primary_requests(&primary_srv);
    let after_read = request_text(&requests[1]);
    for (who, _) in ADVISORS {
        assert!(
            after_read.contains(&format!("<advisory advisor=\"{who}\""))
                && after_read.contains(&format!("{who} note on ROUND-1")),
            "{who}'s nit reaches the request after the read, named: {after_read}"
        );
    }
    wait_reviewed(
        &advisor_srv,
        &["Architecture", "Security"],
        "ROUND-ONE-DONE",
    );

    // The session file keeps who said it in the custom message's details (RO23).
    let file = session_file(&mut pi);
    let named: Vec<String> = advisor_entries(&file)
        .iter()
        .map(|e| {
            e["details"]["advisor"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    for (who, _) in ADVISORS {
        assert!(
            named.iter().any(|n| n.split(", ").any(|part| part == who)),
            "an advisor message names {who} in details.advisor: {named:?}"
        );
    }

    // The malformed entry's warning is shown once.
    let broken = pi.notices_holding(0, "Broken");
    assert_eq!(broken.len(), 1, "one roster warning notice: {broken:?}");

    // Status and dump per advisor (RO19): the names reach the server.
    let status = advisor_command(&mut pi, "status");
    for (who, _) in ADVISORS {
        assert!(
            status.contains(who),
            "/advisor status names {who}: {status}"
        );
    }
    let dump = advisor_command(&mut pi, "dump Security raw");
    assert!(
        dump.contains("SEC-REVIEWER") && !dump.contains("ARCH-REVIEWER"),
        "/advisor dump Security raw shows Security's context only: {dump}"
    );

    // `/advisor off Security` pauses Security alone, for this session only.
    let off = advisor_command(&mut pi, "off Security");
    assert!(!off.starts_with("usage"), "{off}");
    let state = std::fs::read_to_string(setup.agent.join("advisor-extension.json"))
        .unwrap_or_default()
        .to_lowercase();
    assert!(
        !state.contains("security"),
        "a per-advisor pause is not persisted: {state}"
    );
    let architecture_before = requests_of(&advisor_srv, "Architecture").len();
    let security_before = requests_of(&advisor_srv, "Security").len();
    let before = primary_requests(&primary_srv).len();
    prompt_settled(
        &mut pi,
        line,
        "Round two. ROUND-2 [read:notes.txt] [say:round-two-done]",
    );
    wait_reviewed(&advisor_srv, &["Architecture"], "ROUND-TWO-DONE");
    let requests = primary_requests(&primary_srv);
    let after_read = request_text(&requests[before + 1]);
    assert!(
        after_read.contains("<advisory advisor=\"Architecture\"")
            && after_read.contains("Architecture note on ROUND-2"),
        "Architecture still advises: {after_read}"
    );
    let last = request_text(requests.last().expect("requests"));
    assert!(!last.contains("Security note on ROUND-2"), "{last}");
    assert!(requests_of(&advisor_srv, "Architecture").len() > architecture_before);
    assert_eq!(
        requests_of(&advisor_srv, "Security").len(),
        security_before,
        "a paused advisor gets no more requests"
    );

    // ask_advisor lists the names and asks the one named (RO20).
    let before = primary_requests(&primary_srv).len();
    prompt_settled(
        &mut pi,
        line,
        "Round three. [ask:Is notes.txt safe to overwrite?] [asking:Architecture] [say:asked]",
    );
    let requests = primary_requests(&primary_srv);
    let tool = requests[before]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["function"]["name"] == "ask_advisor"))
        .cloned()
        .expect("the primary is offered ask_advisor");
    let described = tool["function"]["parameters"]["properties"]["advisor"]["description"]
        .as_str()
        .unwrap_or_default();
    for (who, _) in ADVISORS {
        assert!(
            described.contains(who),
            "the advisor argument lists {who}: {tool}"
        );
    }
    let results = tool_messages(requests.last().expect("requests"));
    assert!(
        results
            .iter()
            .any(|r| r.contains(&format!("Architecture answers: {ASK_ANSWER}"))),
        "the named advisor answered: {results:?}"
    );
    assert_eq!(
        requests_of(&advisor_srv, "Security").len(),
        security_before,
        "the ask went to Architecture alone"
    );
    pi.quit();

    // A new pi process: the pause was this session's; Security reviews again.
    let mut pi = setup.start(&tools, true, &[]);
    prompt_settled(
        &mut pi,
        line,
        "Round four. ROUND-4 [read:notes.txt] [say:round-four-done]",
    );
    wait_reviewed(&advisor_srv, &["Security"], "ROUND-4");
    pi.quit();
}

/// Issue 20's acceptance on pi 1.6.0: two advisors' advice reaches the primary named, and
/// `/advisor off Security` stops Security's requests while Architecture goes on.
#[test]
fn ro18_ro19_ro23_on_pi_16_each_advisor_is_named_and_off_name_pauses_one() {
    two_advisors_through_pi(Line::Current);
}

/// The same on pi 0.73.1 (advice mid-run through the `context` hook).
#[test]
fn ro18_ro19_ro23_on_pi_073_each_advisor_is_named_and_off_name_pauses_one() {
    two_advisors_through_pi(Line::Legacy);
}
