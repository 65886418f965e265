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

/// The `ask_advisor` tool a primary request offers, and its `advisor` argument's description.
fn ask_tool(request: &Value) -> (Value, String) {
    let tool = request["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["function"]["name"] == "ask_advisor"))
        .cloned()
        .expect("the primary is offered ask_advisor");
    let described = tool["function"]["parameters"]["properties"]["advisor"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (tool, described)
}

/// How the roster's advisors reach their model (`modelRoles.advisor`, a provider only pi's
/// `models.json` knows).
#[derive(Clone, Copy)]
enum Reach {
    /// As pi resolves the session's advisor model: the extension passes the endpoint pi's
    /// registry holds to `session/open`, and `advisor serve`, which does not know the
    /// provider, builds the roster's entries from it.
    PiRegistry,
    /// `advisor serve` started with `--base-url` and `--api` for the scripted server (an
    /// `ADVISOR_BIN` wrapper), which its roster entries' clients use.
    ServeFlags,
}

/// An `ADVISOR_BIN` in `dir` that runs the `advisor` under test with `--base-url` and `--api`
/// for `server` after the arguments the extension passes.
fn serve_with_base_url(dir: &std::path::Path, server: &ModelServer) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("advisor-with-base-url");
    let script = format!(
        "#!/bin/sh\nexec '{}' \"$@\" --base-url '{}' --api openai-completions\n",
        env!("CARGO_BIN_EXE_advisor"),
        server.base_url()
    );
    std::fs::write(&path, script).expect("write the wrapper");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// The acceptance scenario of issue 20 on one pi line.
fn two_advisors_through_pi(line: Line, reach: Reach) {
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
    let wrapper = match reach {
        Reach::PiRegistry => None,
        Reach::ServeFlags => Some(serve_with_base_url(&setup.work, &advisor_srv)),
    };
    let env: Vec<(&str, &str)> = wrapper
        .iter()
        .map(|w| ("ADVISOR_BIN", w.to_str().expect("utf-8 path")))
        .collect();
    let mut pi = setup.start(&tools, true, &env);

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

    // pi 0.73 shows advice handed over mid-run as a notice, naming the advisor.
    if let Line::Legacy = line {
        for (who, _) in ADVISORS {
            let shown = format!("advisor {who} (nit): {who} note on ROUND-1");
            assert_eq!(pi.notices_holding(0, &shown).len(), 1, "{shown}");
        }
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
    let (tool, described) = ask_tool(&requests[before]);
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
    let mut pi = setup.start(&tools, true, &env);
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
    two_advisors_through_pi(Line::Current, Reach::ServeFlags);
}

/// The same on pi 0.73.1 (advice mid-run through the `context` hook).
#[test]
fn ro18_ro19_ro23_on_pi_073_each_advisor_is_named_and_off_name_pauses_one() {
    two_advisors_through_pi(Line::Legacy, Reach::ServeFlags);
}

/// The same with the advisor model as a pi user names it: only pi's registry knows its
/// provider. The extension hands `advisor serve` the session model's endpoint, and the roster's
/// entries, which name no model, review with it (RO8).
#[test]
fn ro23_on_pi_16_roster_advisors_reach_the_model_pi_resolved() {
    two_advisors_through_pi(Line::Current, Reach::PiRegistry);
}

/// The same on pi 0.73.1.
#[test]
fn ro23_on_pi_073_roster_advisors_reach_the_model_pi_resolved() {
    two_advisors_through_pi(Line::Legacy, Reach::PiRegistry);
}

/// Architecture with the session's advisor model, Security naming a model of another provider
/// that only pi's `models.json` has.
const SIDE_ROSTER: &str = "\
advisors:
  - name: Architecture
    instructions: You are ARCH-REVIEWER; weigh the structure of each change.
  - name: Security
    model: sideprov/side-model
    instructions: You are SEC-REVIEWER; weigh each change for security problems.
";

/// RO8/RO23 on one pi line: a roster entry naming a model of a provider only pi's registry
/// knows (not the session's advisor model) reviews with it: the extension passes pi's
/// endpoints of such providers to `session/open`, and serve reaches the entry there.
fn entry_naming_another_pi_only_provider(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(roster_advisor));
    let setup = Setup::new(
        &primary_srv,
        &advisor_srv,
        &format!("{ENABLED_SYNC}  policy: interrupt\n"),
        "the parser ignores empty lines\n",
    );
    std::fs::write(setup.work.join("WATCHDOG.yml"), SIDE_ROSTER).expect("WATCHDOG.yml");
    let models_path = setup.agent.join("models.json");
    let mut models: Value =
        serde_json::from_str(&std::fs::read_to_string(&models_path).expect("models.json"))
            .expect("models.json is JSON");
    let mut side = models["providers"]["advisorprov"].clone();
    side["apiKey"] = json!("side-secret");
    side["models"][0]["id"] = json!("side-model");
    side["models"][0]["name"] = json!("side-model");
    models["providers"]["sideprov"] = side;
    std::fs::write(&models_path, models.to_string()).expect("models.json");
    let mut pi = setup.start(&tools, true, &[]);

    prompt_settled(
        &mut pi,
        line,
        "Round one. ROUND-1 [read:notes.txt] [say:round-one-done]",
    );
    let after_read = request_text(&primary_requests(&primary_srv)[1]);
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
    for (who, model) in [
        ("Architecture", "advisor-model"),
        ("Security", "side-model"),
    ] {
        let called: Vec<Value> = requests_of(&advisor_srv, who)
            .iter()
            .map(|b| b["model"].clone())
            .collect();
        assert!(
            called.iter().all(|m| m == model),
            "{who} calls {model}: {called:?}"
        );
    }
    pi.quit();
}

/// RO8/RO23 on pi 1.6.0: an entry naming another provider only pi knows reaches it.
#[test]
fn ro8_ro23_on_pi_16_an_entry_naming_another_pi_only_provider_reaches_it() {
    entry_naming_another_pi_only_provider(Line::Current);
}

/// The same on pi 0.73.1.
#[test]
fn ro8_ro23_on_pi_073_an_entry_naming_another_pi_only_provider_reaches_it() {
    entry_naming_another_pi_only_provider(Line::Legacy);
}

// ---------------------------------------------------------------------------------------------
// The extension's side alone, against a scripted `advisor serve`

/// A scripted `advisor serve` (Node, on the PATH pi runs with): it logs every request as a
/// JSON line to `$FAKE_SERVE_LOG`, opens sessions with a two-advisor roster and one roster
/// warning, hands out at the first step boundary one aside carrying both advisors' nits, echoes
/// commands (`scripted: LINE`) and answers an ask with the advisor it was addressed to.
const SCRIPTED_SERVE: &str = r#"#!/usr/bin/env node
const fs = require("node:fs");
const log = process.env.FAKE_SERVE_LOG;
let handed = false;
let buffer = "";
const reply = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
const aside = {
  channel: "aside",
  content: '<advisory advisor="Architecture" severity="nit">SCRIPTED-ARCH keep the parser pure</advisory>\n<advisory advisor="Security" severity="nit">SCRIPTED-SEC check the path</advisory>',
  notes: [
    { severity: "nit", note: "SCRIPTED-ARCH keep the parser pure", advisor: "Architecture" },
    { severity: "nit", note: "SCRIPTED-SEC check the path", advisor: "Security" },
  ],
};
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let nl;
  while ((nl = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    fs.appendFileSync(log, JSON.stringify({ method: msg.method, params: msg.params }) + "\n");
    const p = msg.params || {};
    switch (msg.method) {
      case "initialize": reply(msg.id, { protocolVersion: 1 }); break;
      case "session/open": reply(msg.id, {
        enabled: true, policy: "interrupt",
        roster: {
          advisors: [
            { name: "Architecture", slug: "architecture", enabled: true, model: "advisorprov/advisor-model" },
            { name: "Security", slug: "security", enabled: true, model: "advisorprov/advisor-model" },
          ],
          warnings: ['WATCHDOG.yml: advisor "Broken": `maxNotesPerUpdate` must be a whole number from 1 to 32, not 0; entry skipped'],
        },
      }); break;
      case "session/stepBoundary":
        reply(msg.id, { deliveries: handed ? [] : [aside] });
        handed = true;
        break;
      case "session/command": reply(msg.id, { text: "scripted: " + p.line }); break;
      case "session/ask": reply(msg.id, { answer: "answered by " + (p.advisor || "the default advisor") }); break;
      default: reply(msg.id, {});
    }
  }
});
process.stdin.on("end", () => process.exit(0));
"#;

/// The scripted serve in `dir`, executable.
fn scripted_serve(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("scripted-serve");
    std::fs::write(&path, SCRIPTED_SERVE).expect("write the scripted serve");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// The requests the scripted serve logged, as (method, params).
fn serve_log(path: &std::path::Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            (
                v["method"].as_str().unwrap_or_default().to_string(),
                v["params"].clone(),
            )
        })
        .collect()
}

/// The `session/command` lines the scripted serve received.
fn command_lines(path: &std::path::Path) -> Vec<String> {
    serve_log(path)
        .into_iter()
        .filter(|(m, _)| m == "session/command")
        .map(|(_, p)| p["line"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// RO19, RO20, RO23 in the extension, on one pi line: the names of an aside's notes land in
/// `details.advisor`; the roster warning is shown once; `/advisor dump NAME raw` and
/// `/advisor off NAME` reach `session/command` word for word, the pause is not written to the
/// state file, and a new advisor process reopening the session is told it again;
/// `ask_advisor` lists the names and passes the one the primary chose as `advisor`.
fn extension_roster_side(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let unused = ModelServer::start(&rt, Arc::new(roster_advisor));
    let setup = Setup::new(
        &primary_srv,
        &unused,
        ENABLED_SYNC,
        "the parser ignores empty lines\n",
    );
    let bin = scripted_serve(&setup.work);
    let log = setup.work.join("serve.log");
    let env = [
        ("ADVISOR_BIN", bin.to_str().expect("utf-8 path")),
        ("FAKE_SERVE_LOG", log.to_str().expect("utf-8 path")),
    ];
    let mut pi = setup.start(&tools, true, &env);
    prompt_settled(&mut pi, line, "One. [read:notes.txt] [say:one]");

    let requests = primary_requests(&primary_srv);
    let after_read = request_text(&requests[1]);
    assert!(
        after_read.contains("SCRIPTED-ARCH") && after_read.contains("SCRIPTED-SEC"),
        "the aside reaches the next request: {after_read}"
    );
    let file = session_file(&mut pi);
    let saved = advisor_entries(&file);
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(
        saved[0]["details"]["advisor"], "Architecture, Security",
        "{saved:?}"
    );
    assert_eq!(saved[0]["details"]["notes"][1]["advisor"], "Security");
    let warned = pi.notices_holding(0, "\"Broken\"");
    assert_eq!(warned.len(), 1, "{warned:?}");

    let dump = advisor_command(&mut pi, "dump Security raw");
    assert_eq!(dump, "scripted: dump Security raw");
    let off = advisor_command(&mut pi, "off Security");
    assert_eq!(off, "scripted: off Security");
    assert!(
        !std::fs::read_to_string(setup.agent.join("advisor-extension.json"))
            .unwrap_or_default()
            .to_lowercase()
            .contains("security"),
        "a per-advisor pause is not persisted"
    );

    // ask_advisor: re-registered with the names; the chosen advisor goes to session/ask.
    let before = primary_requests(&primary_srv).len();
    prompt_settled(
        &mut pi,
        line,
        "Two. [ask:Is the path check enough?] [asking:Security] [say:two]",
    );
    let requests = primary_requests(&primary_srv);
    let (tool, described) = ask_tool(&requests[before]);
    assert!(
        described.contains("\"Architecture\"") && described.contains("\"Security\""),
        "{tool}"
    );
    assert_eq!(
        tool["function"]["parameters"]["required"],
        json!(["question"]),
        "{tool}"
    );
    let asks: Vec<Value> = serve_log(&log)
        .into_iter()
        .filter(|(m, _)| m == "session/ask")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(asks.len(), 1, "{asks:?}");
    assert_eq!(asks[0]["advisor"], "Security");
    let results = tool_messages(requests.last().expect("requests"));
    assert!(
        results.iter().any(|r| r.contains("answered by Security")),
        "{results:?}"
    );

    // The advisor process dies: the new one reopens the session and Security is paused again.
    let child = super::pi_e2e::the_child(&pi);
    let mark = pi.len();
    super::pi_e2e::signal(child, "KILL");
    pi.wait_notice(mark, "stopped");
    let killed = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(1100).saturating_sub(killed.elapsed()));
    prompt_settled(&mut pi, line, "Three. [say:three]");
    eventually("the pause sent to the new process", || {
        let log = serve_log(&log);
        let reopened = log
            .iter()
            .rposition(|(m, _)| m == "session/open")
            .expect("an open");
        log[reopened..]
            .iter()
            .any(|(m, p)| m == "session/command" && p["line"] == "off security")
    });
    assert_eq!(
        pi.notices_holding(0, "\"Broken\"").len(),
        1,
        "the warning is shown once per pi process"
    );
    assert_eq!(
        command_lines(&log),
        ["dump Security raw", "off Security", "off security"],
        "nothing else was sent as a command"
    );

    // A bare `/advisor on` acts on the whole roster: nothing stays paused.
    advisor_command(&mut pi, "on");
    assert_eq!(command_lines(&log).last().map(String::as_str), Some("on"));
    pi.quit();
}

/// RO19/RO20/RO23, the extension's part on pi 1.6.0, against a scripted `advisor serve`.
#[test]
fn ro19_ro20_ro23_on_pi_16_the_extension_names_pauses_for_the_session_and_asks_by_name() {
    extension_roster_side(Line::Current);
}

/// The same on pi 0.73.1.
#[test]
fn ro19_ro20_ro23_on_pi_073_the_extension_names_pauses_for_the_session_and_asks_by_name() {
    extension_roster_side(Line::Legacy);
}
