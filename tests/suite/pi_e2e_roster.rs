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
pub(super) fn system_text(body: &Value) -> String {
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
        crate::support::advisor_bin().display(),
        server.base_url()
    );
    std::fs::write(&path, script).expect("write the wrapper");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// pi's tools of one line, the scripted primary and advisors, and a workspace whose
/// `WATCHDOG.yml` is `roster` (D3's routing: a nit raised mid-run is an aside in the very next
/// request); the runtime keeps the servers running. A `let` pattern binds every field (a
/// field it leaves out is dropped at once, and a dropped server stops).
struct RosterWorld {
    tools: super::pi_e2e::PiTools,
    primary: ModelServer,
    advisor: ModelServer,
    setup: Setup,
    _rt: tokio::runtime::Runtime,
}

/// The `RosterWorld` of `line` with `roster`; `None` when that pi is not installed.
fn roster_world(line: Line, roster: &str) -> Option<RosterWorld> {
    let tools = pi_of(line.version())?;
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(roster_advisor));
    let setup = Setup::new(
        &primary_srv,
        &advisor_srv,
        &format!("{ENABLED_SYNC}  policy: interrupt\n"),
        "the parser ignores empty lines\n",
    );
    std::fs::write(setup.work.join("WATCHDOG.yml"), roster).expect("WATCHDOG.yml");
    Some(RosterWorld {
        tools,
        primary: primary_srv,
        advisor: advisor_srv,
        setup,
        _rt: rt,
    })
}

/// Adds provider `name` to pi's `models.json`: a copy of the advisor's provider, as `edit`
/// changes it.
pub(super) fn add_provider(setup: &Setup, name: &str, edit: impl FnOnce(&mut Value)) {
    let models_path = setup.agent.join("models.json");
    let mut models: Value =
        serde_json::from_str(&std::fs::read_to_string(&models_path).expect("models.json"))
            .expect("models.json is JSON");
    let mut copy = models["providers"]["advisorprov"].clone();
    edit(&mut copy);
    models["providers"][name] = copy;
    std::fs::write(&models_path, models.to_string()).expect("models.json");
}

/// Both roster advisors raise the same concern about an update holding `SAME-CONCERN` (the
/// same words but for case and the full stop, RO22's "the same"); silence otherwise.
fn same_concern_advisor(body: &Value) -> Reply {
    let silence = || Reply::now(text_sse(""));
    let Some(who) = reviewer(body) else {
        return silence();
    };
    let msgs = messages(body);
    if msgs.last().is_none_or(|m| m["role"] != "user")
        || !update_text(&msgs).contains("SAME-CONCERN")
    {
        return silence();
    }
    let note = match who {
        "Architecture" => "The parser drops the last line when it has no newline",
        _ => "the parser drops the last line when it has no newline.",
    };
    let args = json!({"severity": "concern", "note": note});
    Reply::now(tool_sse("call_advise", "advise", args))
}

/// RO22 on one pi line, under the default policy (`defer`) and without syncBacklog: both
/// advisors raise the same concern about the final answer; after it a concern is a card, and
/// the session gets one card naming both, not one per advisor.
fn same_concern_is_one_card(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let advisor_srv = ModelServer::start(&rt, Arc::new(same_concern_advisor));
    let setup = Setup::new(
        &primary_srv,
        &advisor_srv,
        super::pi_e2e::ENABLED_ASYNC,
        "the parser ignores empty lines\n",
    );
    std::fs::write(setup.work.join("WATCHDOG.yml"), ROSTER).expect("WATCHDOG.yml");
    let mut pi = setup.start(&tools, true, &[]);
    prompt_settled(&mut pi, line, "Finish up. SAME-CONCERN [say:all-done]");
    wait_reviewed(&advisor_srv, &["Architecture", "Security"], "ALL-DONE");
    let file = session_file(&mut pi);
    eventually("the card saved", || !advisor_entries(&file).is_empty());
    // Both reviews answered; give a second card, if one were coming, the time to land.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let saved = advisor_entries(&file);
    assert_eq!(saved.len(), 1, "one card, not one per advisor: {saved:#?}");
    // Both names, in the order the two reviews happened to raise it.
    let names = saved[0]["details"]["advisor"].as_str().unwrap_or_default();
    let mut sorted: Vec<&str> = names.split(", ").collect();
    sorted.sort_unstable();
    assert_eq!(sorted, ["Architecture", "Security"], "{names}");
    let content = message_text(&saved[0]);
    assert_eq!(
        content.matches("drops the last line").count(),
        1,
        "{content}"
    );
    assert!(
        content.contains(&format!("advisor=\"{names}\" severity=\"concern\"")),
        "{content}"
    );
    pi.quit();
}

/// RO22 on pi 1.6.0: the same concern of two advisors about the final answer is one card.
#[test]
fn ro22_on_pi_16_the_same_concern_of_two_advisors_is_one_card() {
    same_concern_is_one_card(Line::Current);
}

/// The same on pi 0.73.1.
#[test]
fn ro22_on_pi_073_the_same_concern_of_two_advisors_is_one_card() {
    same_concern_is_one_card(Line::Legacy);
}

/// The roster's scenario on one pi line: two named advisors, their notes and an ask.
fn two_advisors_through_pi(line: Line, reach: Reach) {
    let Some(RosterWorld {
        tools,
        primary: primary_srv,
        advisor: advisor_srv,
        setup,
        _rt,
    }) = roster_world(line, ROSTER)
    else {
        return;
    };
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

/// The roster's scenario on pi 1.6.0: two advisors' advice reaches the primary named, and
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
    let Some(RosterWorld {
        tools,
        primary: primary_srv,
        advisor: advisor_srv,
        setup,
        _rt,
    }) = roster_world(line, SIDE_ROSTER)
    else {
        return;
    };
    add_provider(&setup, "sideprov", |side| {
        side["apiKey"] = json!("side-secret");
        side["models"][0]["id"] = json!("side-model");
        side["models"][0]["name"] = json!("side-model");
    });
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
/// JSON line to `$FAKE_SERVE_LOG` (with the time it arrived, `at`, in ms), opens sessions with a
/// two-advisor roster and one roster warning (fields of `$FAKE_OPEN_RESULT`, a JSON object,
/// replace the result's), hands out at the first step boundary one aside carrying both
/// advisors' nits, answers `session/turnEnd` after `$FAKE_TURN_END_HOLD_MS` (logging
/// `answered session/turnEnd` then), lists the opened
/// roster's advisors in `session/status`, echoes commands
/// (`scripted: LINE`) and answers an ask with the advisor it was addressed to.
const SCRIPTED_SERVE: &str = r#"#!/usr/bin/env node
const fs = require("node:fs");
const log = process.env.FAKE_SERVE_LOG;
let handed = false;
let buffer = "";
const openExtra = JSON.parse(process.env.FAKE_OPEN_RESULT || "{}");
const hold = Number(process.env.FAKE_TURN_END_HOLD_MS || 0);
let opened = {};
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
    fs.appendFileSync(log, JSON.stringify({ method: msg.method, params: msg.params, at: Date.now() }) + "\n");
    const p = msg.params || {};
    switch (msg.method) {
      case "initialize": reply(msg.id, { protocolVersion: 1 }); break;
      case "session/open": reply(msg.id, opened = {
        enabled: true, policy: "interrupt",
        roster: {
          advisors: [
            { name: "Architecture", slug: "architecture", enabled: true, model: "advisorprov/advisor-model" },
            { name: "Security", slug: "security", enabled: true, model: "advisorprov/advisor-model" },
          ],
          warnings: ['WATCHDOG.yml: advisor "Broken": `maxNotesPerUpdate` must be a whole number from 1 to 32, not 0; entry skipped'],
        },
        ...openExtra,
      }); break;
      case "session/turnEnd": setTimeout(() => {
        fs.appendFileSync(log, JSON.stringify({ method: "answered session/turnEnd", at: Date.now() }) + "\n");
        reply(msg.id, {});
      }, hold); break;
      case "session/status": reply(msg.id, { enabled: true, policy: opened.policy, advisors: opened.roster?.advisors ?? [] }); break;
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

/// pi with the extension against the scripted serve (its log at `log`); the primary's server
/// and what keeps the servers running are kept with it (a `let` pattern binds every field).
struct Scripted {
    pi: super::pi_e2e::Pi,
    primary: ModelServer,
    setup: Setup,
    log: std::path::PathBuf,
    _unused: ModelServer,
    _rt: tokio::runtime::Runtime,
}

/// Starts pi on `line` with `settings` and the scripted serve, which also gets `env`; `None`
/// when that pi is not installed.
fn scripted_pi(line: Line, settings: &str, env: &[(&str, &str)]) -> Option<Scripted> {
    let tools = pi_of(line.version())?;
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let unused = ModelServer::start(&rt, Arc::new(roster_advisor));
    let setup = Setup::new(
        &primary_srv,
        &unused,
        settings,
        "the parser ignores empty lines\n",
    );
    let bin = scripted_serve(&setup.work);
    let log = setup.work.join("serve.log");
    let mut all = vec![
        ("ADVISOR_BIN", bin.to_str().expect("utf-8 path")),
        ("FAKE_SERVE_LOG", log.to_str().expect("utf-8 path")),
    ];
    all.extend_from_slice(env);
    let pi = setup.start(&tools, true, &all);
    Some(Scripted {
        pi,
        primary: primary_srv,
        setup,
        log,
        _unused: unused,
        _rt: rt,
    })
}

/// RO19, RO20, RO23 in the extension, on one pi line: the names of an aside's notes land in
/// `details.advisor`; the roster warning is shown once; `/advisor dump NAME raw` and
/// `/advisor off NAME` reach `session/command` word for word, the pause is not written to the
/// state file, and a new advisor process reopening the session is told it again;
/// `ask_advisor` lists the names and passes the one the primary chose as `advisor`.
fn extension_roster_side(line: Line) {
    let Some(Scripted {
        mut pi,
        primary: primary_srv,
        setup,
        log,
        _unused,
        _rt,
    }) = scripted_pi(line, ENABLED_SYNC, &[])
    else {
        return;
    };
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

// ---------------------------------------------------------------------------------------------
// A turn end the server holds (S1, D5, RO23): the scripted serve answers `session/turnEnd`
// only after `HELD_TURN_END`, longer than the 10 s a call nobody waits on may take.

/// How long the scripted serve holds each `session/turnEnd`.
const HELD_TURN_END: std::time::Duration = std::time::Duration::from_secs(11);

/// The requests the scripted serve logged, as (method, when it arrived in ms).
fn serve_times(path: &std::path::Path) -> Vec<(String, u64)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            (
                v["method"].as_str().unwrap_or_default().to_string(),
                v["at"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

/// One run of one turn on pi 1.6.0 with settings that turn neither syncBacklog nor reconfirm
/// on, against a scripted serve whose open result has `open_result`'s fields and which holds
/// the turn end: the extension waits for it when `waits` (the step boundary goes out after its
/// answer; else at once), the advisor process is not failed for it, and the run ends.
fn held_turn_end(open_result: Value, waits: bool) {
    let open = open_result.to_string();
    let hold = HELD_TURN_END.as_millis().to_string();
    let env = [
        ("FAKE_OPEN_RESULT", open.as_str()),
        ("FAKE_TURN_END_HOLD_MS", hold.as_str()),
    ];
    let Some(Scripted {
        mut pi,
        log,
        primary: _primary,
        setup: _setup,
        _unused,
        _rt,
    }) = scripted_pi(Line::Current, super::pi_e2e::ENABLED_ASYNC, &env)
    else {
        return;
    };
    // The open is answered before the turn ends (what it said decides how the turn end waits).
    eventually("the session opened", || {
        serve_log(&log).iter().any(|(m, _)| m == "session/open")
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    let mark = pi.len();
    pi.call(json!({"type": "prompt", "message": "One. [say:one]"}));
    pi.wait_within(
        mark,
        "the run's end",
        HELD_TURN_END + std::time::Duration::from_secs(30),
        |v| v["type"] == Line::Current.settled(),
    );
    let times = serve_times(&log);
    let turn_end = times
        .iter()
        .find(|(m, _)| m == "session/turnEnd")
        .map(|(_, at)| *at)
        .expect("a turn end");
    let boundary = times
        .iter()
        .find(|(m, at)| m == "session/stepBoundary" && *at >= turn_end)
        .map(|(_, at)| *at)
        .expect("a step boundary after the turn end");
    let held = HELD_TURN_END.as_millis() as u64 - 200;
    assert_eq!(
        boundary - turn_end >= held,
        waits,
        "the turn end was waited for ({waits}): the step boundary came {} ms after it",
        boundary - turn_end
    );
    // The held answer came: the process was not ended before it (a failed one would be).
    eventually("the held turn end answered", || {
        serve_log(&log)
            .iter()
            .any(|(m, _)| m == "answered session/turnEnd")
    });
    let failed = pi.notices_holding(0, "did not answer");
    assert!(failed.is_empty(), "the advisor was not failed: {failed:?}");
    let opens = times.iter().filter(|(m, _)| m == "session/open").count();
    assert_eq!(opens, 1, "one advisor process, never restarted");
    pi.quit();
}

/// RO23, D5: a roster entry with the reconfirm policy (the session's own is `interrupt`, and
/// the open says nothing of `turnEndWaits`) makes the turn end one that may wait for the
/// catch-up; a server that holds it past 10 s is waited for, not failed.
#[test]
fn ro23_d5_on_pi_16_a_reconfirm_roster_entry_makes_the_turn_end_wait() {
    held_turn_end(
        json!({
            "roster": {
                "advisors": [
                    {"name": "Architecture", "slug": "architecture", "enabled": true, "policy": "interrupt"},
                    {"name": "Security", "slug": "security", "enabled": true, "policy": "reconfirm"},
                ],
                "warnings": [],
            },
        }),
        true,
    );
}

/// S1, D5: the open's `turnEndWaits: true` decides, whatever the extension reads in the
/// settings (here: syncBacklog off, no roster): the held turn end is waited for, not failed.
#[test]
fn s1_d5_on_pi_16_the_opens_turn_end_waits_decides_and_a_long_hold_is_waited_for() {
    held_turn_end(json!({ "roster": null, "turnEndWaits": true }), true);
}

/// S2, F4: a turn end the extension does not wait for (no syncBacklog, no reconfirm anywhere,
/// an open that does not say) but the server holds past 10 s anyway does not get the advisor
/// process failed: its deadline covers the server's longest wait by design.
#[test]
fn s2_on_pi_16_a_turn_end_nobody_waits_for_may_be_held_past_ten_seconds() {
    held_turn_end(json!({}), false);
}

/// Architecture alone, then Security added by a reload (RO21).
const ONE_ADVISOR: &str = "\
advisors:
  - name: Architecture
    instructions: You are ARCH-REVIEWER; weigh the structure of each change.
";

/// RO21/RO23 on one pi line with the real `advisor serve`: an advisor added to WATCHDOG.yml
/// during the session is, once a run has ended, listed in `ask_advisor`'s `advisor` argument
/// and asked by name.
fn added_advisor_is_listed_after_a_run(line: Line) {
    let Some(RosterWorld {
        tools,
        primary: primary_srv,
        advisor: advisor_srv,
        setup,
        _rt,
    }) = roster_world(line, ONE_ADVISOR)
    else {
        return;
    };
    let wrapper = serve_with_base_url(&setup.work, &advisor_srv);
    let env = [("ADVISOR_BIN", wrapper.to_str().expect("utf-8 path"))];
    let mut pi = setup.start(&tools, true, &env);

    prompt_settled(
        &mut pi,
        line,
        "Round one. ROUND-1 [read:notes.txt] [say:round-one-done]",
    );
    wait_reviewed(&advisor_srv, &["Architecture"], "ROUND-ONE-DONE");
    let before = primary_requests(&primary_srv).len();
    prompt_settled(&mut pi, line, "Round two. [say:round-two-done]");
    let (_, described) = ask_tool(&primary_requests(&primary_srv)[before]);
    assert!(
        described.contains("\"Architecture\"") && !described.contains("Security"),
        "{described}"
    );
    wait_reviewed(&advisor_srv, &["Architecture"], "ROUND-TWO-DONE");

    // Security joins: the reload at the next turn end starts it (RO21).
    std::fs::write(setup.work.join("WATCHDOG.yml"), ROSTER).expect("WATCHDOG.yml");
    prompt_settled(
        &mut pi,
        line,
        "Round three. ROUND-3 [read:notes.txt] [say:round-three-done]",
    );
    wait_reviewed(&advisor_srv, &["Architecture"], "ROUND-THREE-DONE");
    prompt_settled(&mut pi, line, "Round four. [say:round-four-done]");
    wait_reviewed(&advisor_srv, &["Security"], "ROUND-FOUR-DONE");

    // After those runs ask_advisor lists Security, and the primary asks it by name.
    let before = primary_requests(&primary_srv).len();
    prompt_settled(
        &mut pi,
        line,
        "Round five. [ask:Is the path check enough?] [asking:Security] [say:asked]",
    );
    let requests = primary_requests(&primary_srv);
    let (tool, described) = ask_tool(&requests[before]);
    for (who, _) in ADVISORS {
        assert!(
            described.contains(&format!("\"{who}\"")),
            "the advisor argument lists {who}: {tool}"
        );
    }
    let results = tool_messages(requests.last().expect("requests"));
    assert!(
        results
            .iter()
            .any(|r| r.contains(&format!("Security answers: {ASK_ANSWER}"))),
        "the added advisor answered: {results:?}"
    );
    pi.quit();
}

/// RO21/RO23 on pi 1.6.0: an advisor added mid-session is listed after a run.
#[test]
fn ro21_ro23_on_pi_16_an_advisor_added_mid_session_is_listed_after_a_run() {
    added_advisor_is_listed_after_a_run(Line::Current);
}

/// The same on pi 0.73.1.
#[test]
fn ro21_ro23_on_pi_073_an_advisor_added_mid_session_is_listed_after_a_run() {
    added_advisor_is_listed_after_a_run(Line::Legacy);
}

/// RO8/RO23 on pi 1.6.0: a model of `models.json` that `advisor serve` would refuse as a
/// `providers` endpoint (a `contextWindow` that is no whole number, which pi takes) is left out of the open, so the advisor does
/// not become unavailable for it: the roster's advisors review as without it.
#[test]
fn ro8_ro23_on_pi_16_a_models_json_model_serve_would_refuse_does_not_disable_the_advisor() {
    let line = Line::Current;
    let Some(RosterWorld {
        tools,
        primary: primary_srv,
        setup,
        advisor: _advisor,
        _rt,
    }) = roster_world(line, ROSTER)
    else {
        return;
    };
    add_provider(&setup, "badprov", |bad| {
        bad["models"][0]["id"] = json!("odd-window");
        bad["models"][0]["name"] = json!("odd-window");
        bad["models"][0]["contextWindow"] = json!(1000.5);
    });
    let mut pi = setup.start(&tools, true, &[]);

    prompt_settled(
        &mut pi,
        line,
        "Round one. ROUND-1 [read:notes.txt] [say:round-one-done]",
    );
    let unavailable = pi.notices_holding(0, "unavailable");
    assert!(unavailable.is_empty(), "{unavailable:?}");
    let after_read = request_text(&primary_requests(&primary_srv)[1]);
    for (who, _) in ADVISORS {
        assert!(
            after_read.contains(&format!("{who} note on ROUND-1")),
            "{who}'s nit reaches the request after the read: {after_read}"
        );
    }
    pi.quit();
}

/// G8 on pi 1.6.0: `ask_advisor` counts a question's characters as the server does (code
/// points, not UTF-16 units): 5000 characters outside the basic plane are asked, not refused.
#[test]
fn g8_on_pi_16_a_question_is_measured_in_characters() {
    let line = Line::Current;
    let Some(Scripted {
        mut pi,
        primary: primary_srv,
        log,
        setup: _setup,
        _unused,
        _rt,
    }) = scripted_pi(line, ENABLED_SYNC, &[])
    else {
        return;
    };
    eventually("the session opened", || {
        serve_log(&log).iter().any(|(m, _)| m == "session/open")
    });
    let question = "\u{1F50D}".repeat(5000);
    prompt_settled(&mut pi, line, &format!("Ask. [ask:{question}] [say:asked]"));
    let asks: Vec<Value> = serve_log(&log)
        .into_iter()
        .filter(|(m, _)| m == "session/ask")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(asks.len(), 1, "the question was asked");
    assert_eq!(
        asks[0]["question"].as_str().map(|q| q.chars().count()),
        Some(5000)
    );
    let results = tool_messages(primary_requests(&primary_srv).last().expect("requests"));
    assert!(
        results
            .iter()
            .any(|r| r.contains("answered by the default advisor")),
        "{results:?}"
    );
    pi.quit();
}
