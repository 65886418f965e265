//! pi end to end on both API lines (SPEC V5): the same scenarios run on pi 0.73.1
//! (`@mariozechner/pi-coding-agent`, whose `turn_end` cannot add entries or continue a run) and
//! on pi 1.6.0 (`@earendil-works/pi-coding-agent`), each installed by
//! `scripts/pi-e2e-setup.sh`, with `integrations/pi/advisor.ts` choosing its adapter at load
//! time. A pi older than the oldest tested (0.72.1) gets one notice. The scripted primary and
//! advisor servers and the RPC driver are `pi_e2e`'s.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::pi_e2e::{
    advisor_entries, agent_starts, assert_fresh_replay, assert_one_wait_for_a_stopped_child,
    eventually, fork_before, is_notify, message_text, messages, primary_requests, request_text,
    reviews, serve_children, session_file, signal, the_child, tool_messages, tools, world,
    KillOnDrop, Pi, PiTools, World, ASK_ANSWER, ENABLED_ASYNC, ENABLED_SYNC, UNNAMED_ASYNC,
};

#[derive(Clone, Copy, Debug)]
pub(super) enum Line {
    /// `@mariozechner/pi-coding-agent` 0.73.1.
    Legacy,
    /// `@earendil-works/pi-coding-agent` 1.6.0.
    Current,
}

impl Line {
    pub(super) fn version(self) -> &'static str {
        match self {
            Line::Legacy => "0.73.1",
            Line::Current => "1.6.0",
        }
    }

    /// The RPC event that ends a run.
    pub(super) fn settled(self) -> &'static str {
        match self {
            Line::Legacy => "agent_end",
            Line::Current => "agent_settled",
        }
    }
}

/// Node and the pi of `version`, or `None` when the tests skip (no npm outside CI).
pub(super) fn pi_of(version: &str) -> Option<PiTools> {
    let all = tools()?;
    let pi = all
        .by_version
        .iter()
        .find(|(v, _)| v == version)
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| panic!("the setup script installs pi {version}"));
    Some(PiTools {
        node_bin: all.node_bin.clone(),
        pi,
        by_version: Vec::new(),
    })
}

/// Prompts and waits for the end of the run it starts; returns that event's index.
pub(super) fn prompt_settled(pi: &mut Pi, line: Line, text: &str) -> usize {
    let mark = pi.len();
    pi.call(json!({"type": "prompt", "message": text}));
    pi.wait_from(mark, line.settled(), |v| v["type"] == line.settled())
        .0
}

/// Whether the run that ended at event `v` was aborted.
fn aborted(line: Line, v: &Value) -> bool {
    match line {
        Line::Current => v["aborted"] == true,
        Line::Legacy => v["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
            .is_some_and(|m| m["stopReason"] == "aborted"),
    }
}

/// `/advisor ARGS` and the text it showed (0.73's RPC reply to a command has no disposition).
pub(super) fn advisor_command(pi: &mut Pi, args: &str) -> String {
    let mark = pi.len();
    pi.call(json!({"type": "prompt", "message": format!("/advisor {args}")}));
    let (_, note) = pi.wait_from(mark, "the command's notice", is_notify);
    note["message"].as_str().unwrap_or_default().to_string()
}

fn occurrences(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

// ---------------------------------------------------------------------------------------------
// P8: the project's instruction files in oh-my-pi's order

/// The first advisor request holds the user's `<agentDir>/AGENTS.md` first, then the
/// project's from the repository root (farthest) to the working directory (nearest), as live
/// oh-my-pi 18.3.4 sends them.
fn project_files_come_in_oh_my_pis_order(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let w = world(ENABLED_SYNC, "the parser ignores empty lines\n");
    let root = w.setup.work.parent().expect("the scenario's directory");
    std::fs::create_dir_all(root.join(".git")).expect("a repository around the workspace");
    let files = [
        (
            w.setup.agent.join("AGENTS.md"),
            "USER-RULES answer in British English",
        ),
        (root.join("AGENTS.md"), "FARTHEST-RULES keep the changelog"),
        (
            w.setup.work.join("AGENTS.md"),
            "NEAREST-RULES add no dependencies",
        ),
    ];
    for (path, text) in &files {
        std::fs::write(path, format!("{text}\n")).expect("an instruction file");
    }
    let mut pi = w.setup.start(&tools, true, &[]);
    prompt_settled(&mut pi, line, "Read the notes. [read:notes.txt] [say:done]");
    eventually("the first review", || !reviews(&w.advisor).is_empty());
    let first = w.advisor.bodies().into_iter().next().expect("a request");
    let system = messages(&first)
        .first()
        .map(message_text)
        .unwrap_or_default();
    let at: Vec<usize> = files
        .iter()
        .map(|(path, text)| {
            let tagged = format!("<file path=\"{}\">\n{text}\n</file>", path.display());
            system
                .find(&tagged)
                .unwrap_or_else(|| panic!("{tagged} in the system prompt: {system}"))
        })
        .collect();
    assert!(
        at[0] < at[1] && at[1] < at[2],
        "the user's file, then farthest to nearest: {system}"
    );
    pi.quit();
}

#[test]
fn p8_on_pi_073_project_files_come_in_oh_my_pis_order() {
    project_files_come_in_oh_my_pis_order(Line::Legacy);
}

#[test]
fn p8_on_pi_16_project_files_come_in_oh_my_pis_order() {
    project_files_come_in_oh_my_pis_order(Line::Current);
}

// ---------------------------------------------------------------------------------------------
// An advisory about the user's request reaches the primary's next request and the session file

/// A nit raised on the first (tool) turn is in the very next model request, right after that
/// turn's tool result, and saved as an advisor `custom_message`; a concern raised on the final
/// turn steers the primary (1.6: one more call in the same run; 0.73, whose `turn_end` cannot
/// continue a run: a new run); the next prompt's request carries each advisory exactly once;
/// `/advisor status` names the model, the pi and, on 0.73, what that API cannot honour.
fn advisory_reaches_the_next_request(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    // D3's routing (policy `interrupt`; P1's `defer`, the default, is covered in pi_e2e).
    let w = world(
        &format!("{ENABLED_SYNC}  policy: interrupt\n"),
        "the parser ignores empty lines\n",
    );
    let mut pi = w.setup.start(&tools, true, &[]);
    let mark = pi.len();
    prompt_settled(
        &mut pi,
        line,
        "Read the notes. CUE-NIT [read:notes.txt] [say:cue-concern]",
    );
    let nit = "nit note raised on CUE-NIT";
    let concern = "concern note raised on CUE-CONCERN";
    let requests = primary_requests(&w.primary);
    // CA13, CA16: the terminal turn's concern (a turn-mode advisor's) is one card: no call.
    assert_eq!(requests.len(), 2, "read and final answer");
    assert!(!request_text(&requests[0]).contains("<advisory"));
    let second = messages(&requests[1]);
    let tool_at = second
        .iter()
        .position(|m| m["role"] == "tool")
        .expect("the read's result");
    let nit_at = second
        .iter()
        .position(|m| message_text(m).contains(nit))
        .unwrap_or_else(|| panic!("turn 2's request carries turn 1's nit: {second:?}"));
    assert!(nit_at > tool_at, "the nit follows the turn it is about");
    assert!(message_text(&second[nit_at]).contains("severity=\"nit\""));
    assert!(!request_text(&requests[1]).contains(concern));
    assert_eq!(
        agent_starts(&pi.events_since(mark)),
        1,
        "the card starts no run"
    );

    let file = session_file(&mut pi);
    let saved = advisor_entries(&file);
    assert_eq!(saved.len(), 2, "both advisories are saved: {saved:?}");
    assert!(saved[0]["content"].to_string().contains(nit));
    assert!(saved[1]["content"].to_string().contains(concern));
    assert_eq!(saved[0]["display"], true);

    // The next prompt's request carries each advisory exactly once.
    prompt_settled(&mut pi, line, "Next. [say:next]");
    let requests = primary_requests(&w.primary);
    let last = request_text(requests.last().expect("a request"));
    assert_eq!(occurrences(&last, nit), 1, "{last}");
    assert_eq!(occurrences(&last, concern), 1, "{last}");

    if let Line::Legacy = line {
        // Handed over mid-run, the nit is also shown at once, as a notice.
        let shown = pi.notices_holding(mark, "advisor (nit): nit note raised on CUE-NIT");
        assert_eq!(shown.len(), 1, "{shown:?}");
    }

    let status = advisor_command(&mut pi, "status");
    assert!(
        status.contains("advisor-model"),
        "names the model: {status}"
    );
    assert!(
        status.contains(&format!("pi {}", line.version())),
        "{status}"
    );
    match line {
        Line::Legacy => assert!(
            status.contains("@mariozechner/pi-coding-agent")
                && status.contains("on pi 0.73: turn_end cannot continue a run")
                && status.contains("syncBacklog"),
            "status says what 0.73 cannot honour: {status}"
        ),
        Line::Current => assert!(!status.contains("on pi "), "{status}"),
    }
    let warnings: Vec<Value> = pi
        .events_since(0)
        .into_iter()
        .filter(|v| is_notify(v) && v["notifyType"] != "info")
        .collect();
    assert!(warnings.is_empty(), "no warnings: {warnings:?}");
    advisor_command(&mut pi, "off");
    let status = advisor_command(&mut pi, "status");
    assert!(status.contains("off"), "{status}");
    pi.quit();
}

#[test]
fn v5_d3_on_pi_073_an_advisory_reaches_the_next_request_and_the_session_file() {
    advisory_reaches_the_next_request(Line::Legacy);
}

#[test]
fn v5_d3_on_pi_16_an_advisory_reaches_the_next_request_and_the_session_file() {
    advisory_reaches_the_next_request(Line::Current);
}

// ---------------------------------------------------------------------------------------------
// A user abort turns a pending concern into a card

/// D6: the concern raised about turn 1 is still pending when the user aborts the stalled second
/// call; it becomes a card — saved, no new run — and the next prompt's request carries it. The
/// advisor model is named only by pi's `modes.json` here (M1, V5).
fn user_abort_makes_a_card(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    // D3's routing: under P1's `defer` a concern about a tool turn waits for the final
    // answer, which the abort never lets come.
    let w = world(
        &format!("{UNNAMED_ASYNC}  policy: interrupt\n"),
        "the cache is never invalidated\n",
    );
    let modes =
        json!({"modes": {"advisor": {"provider": "advisorprov", "modelId": "advisor-model"}}});
    std::fs::write(w.setup.agent.join("modes.json"), modes.to_string()).expect("modes.json");
    let mut pi = w.setup.start(&tools, true, &[]);
    let mark = pi.len();
    pi.call(json!({"type": "prompt", "message": "Read, then think long. CUE-LATE-CONCERN [read:notes.txt] [slow]"}));
    eventually("the stalled second call", || w.primary.bodies().len() >= 2);
    pi.call(json!({"type": "abort"}));
    let (ended, v) = pi.wait_from(mark, line.settled(), |v| v["type"] == line.settled());
    assert!(aborted(line, &v), "{v}");
    let concern = "concern note raised on CUE-LATE-CONCERN";
    let file = session_file(&mut pi);
    eventually("the card in the session file", || {
        advisor_entries(&file)
            .iter()
            .any(|e| e.to_string().contains(concern))
    });
    assert_eq!(
        pi.state()["isStreaming"],
        false,
        "no run after a user abort"
    );
    assert_eq!(agent_starts(&pi.events_since(ended + 1)), 0);
    assert_eq!(primary_requests(&w.primary).len(), 2);
    prompt_settled(&mut pi, line, "Go on. [say:resumed]");
    let requests = primary_requests(&w.primary);
    assert_eq!(requests.len(), 3);
    assert_eq!(occurrences(&request_text(&requests[2]), concern), 1);
    pi.quit();
}

#[test]
fn v5_d6_on_pi_073_a_user_abort_turns_a_pending_concern_into_a_card() {
    user_abort_makes_a_card(Line::Legacy);
}

#[test]
fn v5_d6_on_pi_16_a_user_abort_turns_a_pending_concern_into_a_card() {
    user_abort_makes_a_card(Line::Current);
}

// ---------------------------------------------------------------------------------------------
// syncBacklog holds the next request, and the user's abort cuts the wait short

/// S1: with syncBacklog 1 the next model request waits for the review of the turn before it
/// (1.6: in `turn_end`; 0.73: in the `context` hook); the review stalls, the user aborts, and
/// the abort is answered at once, no further model request is made, and the run ends aborted.
fn abort_cuts_the_sync_wait_short(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let w = world(ENABLED_SYNC, "notes\n");
    let mut pi = w.setup.start(&tools, true, &[]);
    let mark = pi.len();
    pi.call(json!({"type": "prompt", "message": "Read. CUE-STALL [read:notes.txt] [say:x]"}));
    eventually("the stalled review", || w.advisor.bodies().len() == 1);
    // Held while the review runs (S1): without the hold the run would be over by now, not
    // aborted, with two requests made.
    let quick = Duration::from_secs(10);
    let before_abort = pi.len();
    let asked = Instant::now();
    pi.send(&json!({"type": "abort", "id": "abort-1"}));
    pi.wait_within(before_abort, "the reply to abort", quick, |v| {
        v["type"] == "response" && v["id"] == "abort-1"
    });
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    let (_, ended) = pi.wait_within(mark, line.settled(), quick, |v| v["type"] == line.settled());
    assert!(aborted(line, &ended), "the run ended by the abort: {ended}");
    assert_eq!(
        primary_requests(&w.primary).len(),
        1,
        "no model call after the abort"
    );
    pi.quit();
}

#[test]
fn v5_s1_on_pi_073_the_next_request_waits_for_the_review_and_an_abort_cuts_it_short() {
    abort_cuts_the_sync_wait_short(Line::Legacy);
}

#[test]
fn v5_s1_on_pi_16_the_next_request_waits_for_the_review_and_an_abort_cuts_it_short() {
    abort_cuts_the_sync_wait_short(Line::Current);
}

// ---------------------------------------------------------------------------------------------
// A wedged advisor process costs pi at most the wait budget (S2, F4)

/// S2 / F4: with syncBacklog on, an `advisor serve` that stops answering (SIGSTOP) costs a
/// three-turn run one wait of at most the budget (1.6: in `turn_end`; 0.73: in the `context`
/// hook, which waits for `turn_end`'s work); one notice says why, and the child is ended.
fn wedged_child_costs_one_budget(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let w = world(ENABLED_SYNC, "notes\n");
    let mut pi = w.setup.start(&tools, true, &[]);
    prompt_settled(&mut pi, line, "Warm up. [say:warm]");
    assert_eq!(reviews(&w.advisor).len(), 1, "healthy before it is stopped");
    let child = the_child(&pi);
    let _guard = KillOnDrop(child);
    signal(child, "STOP");
    let mark = pi.len();
    let started = Instant::now();
    prompt_settled(
        &mut pi,
        line,
        "Three turns. [read:notes.txt,notes.txt] [say:done]",
    );
    assert_one_wait_for_a_stopped_child(&pi, &w.primary, mark, started.elapsed(), child);
    pi.quit();
}

#[test]
fn s2_on_pi_073_a_wedged_child_costs_one_wait_budget() {
    wedged_child_costs_one_budget(Line::Legacy);
}

#[test]
fn s2_on_pi_16_a_wedged_child_costs_one_wait_budget() {
    wedged_child_costs_one_budget(Line::Current);
}

// ---------------------------------------------------------------------------------------------
// Consulting, and compaction, a new session and a fork resetting the advisor

/// G8: `ask_advisor` answers the primary; R1: after `compact` the next review is a fresh context
/// holding the summary and the new turn; after `new_session` (which pi 0.73's RPC mode starts
/// twice) it holds nothing old; after a fork, only the branch kept; one `advisor serve` serves
/// every session.
fn compaction_and_new_session_reset(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let notes = format!(
        "OLD-NOTES-MARKER\n{}",
        "a line of filler text\n".repeat(200)
    );
    let w: World = world(ENABLED_SYNC, &notes);
    let mut pi = w.setup.start(&tools, true, &[]);
    eventually("advisor serve started", || {
        !serve_children(pi.pid()).is_empty()
    });
    let child = serve_children(pi.pid());
    prompt_settled(
        &mut pi,
        line,
        "First run. [read:notes.txt] [ask:Is overwriting notes.txt safe?] [say:FIRST-RUN-MARKER]",
    );
    let requests = primary_requests(&w.primary);
    assert_eq!(requests.len(), 3, "read, ask, final answer");
    let answers = tool_messages(&requests[2]);
    assert!(
        answers.iter().any(|r| r.contains(ASK_ANSWER)),
        "the advisor's answer is the tool result: {answers:?}"
    );
    let before = reviews(&w.advisor).len();
    assert_eq!(before, 3, "every turn reviewed");

    pi.call(json!({"type": "compact"}));
    prompt_settled(&mut pi, line, "Second run. [say:SECOND-RUN-MARKER]");
    let after = reviews(&w.advisor);
    assert_eq!(after.len(), before + 1);
    assert_fresh_replay(
        &after[before],
        &["SUMMARY-MARKER", "SECOND-RUN-MARKER"],
        &[],
    );

    pi.call(json!({"type": "new_session"}));
    prompt_settled(&mut pi, line, "Third run. [say:THIRD-RUN-MARKER]");
    let after = reviews(&w.advisor);
    assert_eq!(
        after.len(),
        before + 2,
        "one review for the new session's turn"
    );
    assert_fresh_replay(
        &after[before + 1],
        &["THIRD-RUN-MARKER"],
        &["SUMMARY-MARKER", "FIRST-RUN-MARKER", "SECOND-RUN-MARKER"],
    );

    // A fork from the fourth prompt: the advisor starts over on the branch before it.
    prompt_settled(&mut pi, line, "Fourth run. [say:FOURTH-RUN-MARKER]");
    fork_before(&mut pi, "Fourth run");
    prompt_settled(&mut pi, line, "Fifth run. [say:FIFTH-RUN-MARKER]");
    let after = reviews(&w.advisor);
    assert_eq!(after.len(), before + 4);
    assert_fresh_replay(
        &after[before + 3],
        &["THIRD-RUN-MARKER", "FIFTH-RUN-MARKER"],
        &["FOURTH-RUN-MARKER"],
    );
    assert_eq!(serve_children(pi.pid()), child, "one advisor serve");
    pi.quit();
}

#[test]
fn v5_g8_r1_on_pi_073_consult_and_compaction_new_session_fork_resets() {
    compaction_and_new_session_reset(Line::Legacy);
}

#[test]
fn v5_g8_r1_on_pi_16_consult_and_compaction_new_session_fork_resets() {
    compaction_and_new_session_reset(Line::Current);
}

/// G8 on both lines: an `ask_advisor` call that fails (here: consulting is off) is recorded as
/// an error tool result — pi 0.73 flags one only when the tool throws — with the text that
/// says why, and the run goes on.
fn a_failed_ask_is_an_error_result(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let w = world(&format!("{ENABLED_SYNC}  consult: false\n"), "notes\n");
    let mut pi = w.setup.start(&tools, true, &[]);
    prompt_settled(
        &mut pi,
        line,
        "Check first. [ask:Should I delete the build dir?] [say:went on]",
    );
    let requests = primary_requests(&w.primary);
    assert_eq!(requests.len(), 2, "ask, then the final answer");
    let file = session_file(&mut pi);
    let saved = super::pi_e2e::tool_results_in(&file, "ask_advisor");
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(
        saved[0].0.contains("consulting the advisor is turned off"),
        "the primary reads why: {saved:?}"
    );
    assert!(saved[0].1, "saved as an error result: {saved:?}");
    pi.quit();
}

#[test]
fn g8_v5_on_pi_073_a_failed_ask_advisor_is_an_error_tool_result() {
    a_failed_ask_is_an_error_result(Line::Legacy);
}

#[test]
fn g8_v5_on_pi_16_a_failed_ask_advisor_is_an_error_tool_result() {
    a_failed_ask_is_an_error_result(Line::Current);
}

// ---------------------------------------------------------------------------------------------
// A pi older than the oldest tested gets one notice

/// V5: pi 0.72.1 is older than the extension supports: one notice at start says so and what to
/// do, no advisor process starts, nothing is reviewed, `/advisor` repeats the notice.
#[test]
fn v5_an_unsupported_pi_gets_one_notice_instead_of_a_silent_advisor() {
    let Some(tools) = pi_of("0.72.1") else {
        return;
    };
    let w = world(ENABLED_SYNC, "CUE-NIT\n");
    let mut pi = w.setup.start(&tools, true, &[]);
    let (_, notice) = pi.wait_from(0, "the unsupported-pi notice", is_notify);
    let text = notice["message"].as_str().unwrap_or_default().to_string();
    assert!(
        text.contains("pi 0.72.1")
            && text.contains("older than 0.73.0")
            && text.contains("advisor is off")
            && text.contains("npm install -g"),
        "{text}"
    );
    assert_eq!(notice["notifyType"], "warning");
    prompt_settled(
        &mut pi,
        Line::Legacy,
        "Go. CUE-NIT [read:notes.txt] [say:done]",
    );
    assert!(serve_children(pi.pid()).is_empty(), "no advisor process");
    assert_eq!(w.advisor.bodies().len(), 0, "nothing reviewed");
    let notices = pi.notices_holding(0, "0.72.1");
    assert_eq!(notices.len(), 1, "one notice: {notices:?}");
    let reply = advisor_command(&mut pi, "status");
    assert_eq!(reply, text, "/advisor repeats it");
    pi.quit();
}

// ---------------------------------------------------------------------------------------------
// Measurement (not a timed test: run it on purpose and read the figures)
//
//   cargo test --test all suite::pi_e2e_lines::measure_turn_overhead_per_line -- --ignored --nocapture
//
// `PI_MEASURE_ADVISOR_BIN=target/release/advisor` measures a release build of the server
// instead of the debug binary under test. The figures also go to `target/pi-e2e/turn-overhead.txt`.

/// Per line: a 50-turn run (one read per turn) with and without the extension; the
/// difference in wall time per turn is the extension's overhead on pi's loop, and
/// `ADVISOR_PI_TIMINGS` gives the time it held the loop inside (1.6: the `turn_end` handler;
/// 0.73: the wait in the `context` hook before a request).
#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn measure_turn_overhead_per_line() {
    let bin = std::env::var("PI_MEASURE_ADVISOR_BIN")
        .unwrap_or_else(|_| crate::support::advisor_bin().display().to_string());
    let mut report = format!("advisor serve: {bin}\n");
    for line in [Line::Legacy, Line::Current] {
        let Some(tools) = pi_of(line.version()) else {
            return;
        };
        let w = world(ENABLED_ASYNC, "short notes\n");
        let reads = vec!["notes.txt"; 50].join(",");
        let prompt = format!("Read it fifty times. [read:{reads}] [say:done]");
        let timings = w.setup.agent.join("turn-ms.txt");
        let mut per_turn = Vec::new();
        for extension in [false, true] {
            let env = [
                ("ADVISOR_PI_TIMINGS", timings.to_str().unwrap_or_default()),
                ("ADVISOR_BIN", bin.as_str()),
            ];
            let mut pi = w.setup.start(&tools, extension, &env);
            prompt_settled(&mut pi, line, "Warm up. [read:notes.txt] [say:warm]");
            let _ = std::fs::remove_file(&timings);
            let mut runs = Vec::new();
            for _ in 0..5 {
                let started = Instant::now();
                prompt_settled(&mut pi, line, &prompt);
                runs.push(started.elapsed());
            }
            runs.sort();
            let median: Duration = runs[2];
            per_turn.push(median.as_secs_f64() * 1000.0 / 51.0);
            if extension {
                let mut inside: Vec<f64> = std::fs::read_to_string(&timings)
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect();
                inside.sort_by(f64::total_cmp);
                report.push_str(&format!(
                    "pi {}: the extension held the loop {} times, p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, max {:.2} ms\n",
                    line.version(),
                    inside.len(),
                    super::pi_e2e::percentile(&inside, 50.0),
                    super::pi_e2e::percentile(&inside, 95.0),
                    super::pi_e2e::percentile(&inside, 99.0),
                    inside.last().copied().unwrap_or(f64::NAN)
                ));
            }
            pi.quit();
        }
        report.push_str(&format!(
            "pi {}: per turn {:.2} ms without the extension, {:.2} ms with it: overhead {:.2} ms/turn (median of 5 runs of 51 turns)\n",
            line.version(),
            per_turn[0],
            per_turn[1],
            per_turn[1] - per_turn[0]
        ));
    }
    eprintln!("{report}");
    let _ = std::fs::write(
        super::pi_e2e::cache_dir().join("turn-overhead.txt"),
        &report,
    );
}
