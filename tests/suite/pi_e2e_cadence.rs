//! Review cadence through the real pi, on both pi lines (SPEC CA1, CA2, CA14, CA16, CA17; the
//! acceptance test of the review modes): an `agent-end` advisor (`advisor.reviewMode: agent-end`)
//! reviews a two-turn run once, at its final answer; its concern comes back as one merged
//! advisor message after that answer (guidance and note in the content, the note with
//! `turnsAgo` in `details`); the continuation it starts — a WIP turn, then a final one — is
//! not reviewed; the user's next prompt is, and that review carries the continuation's turns.
//! The scripted servers and the RPC driver are `pi_e2e`'s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::pi_e2e::{
    advisor_entries, agent_starts, is_advisory, message_text, messages, primary_requests,
    request_text, reviews, runtime, session_entries, session_file, text_sse, tool_sse, update_text,
    ModelServer, Pi, Reply, Setup, ENABLED_SYNC,
};
use super::pi_e2e_lines::{advisor_command, pi_of, prompt_settled, Line};

/// The first prompt's cue: its run reads the notes, then answers [`RUN_ANSWER`].
const RUN_CUE: &str = "RUN-ONE";
const RUN_ANSWER: &str = "finished; RUN-ONE-ANSWER";
/// The continuation's final answer (after a WIP turn that reads the notes again).
const CONTINUATION_ANSWER: &str = "fixed; CONTINUATION-DONE";
const NEXT_ANSWER: &str = "finished; NEXT-ANSWER";
const CONCERN: &str = "concern: the notes were read but the empty-line case was never checked";

/// The primary. After the user's last prompt: a prompt holding [`RUN_CUE`] reads notes.txt
/// (WIP), then answers [`RUN_ANSWER`]; any other prompt answers [`NEXT_ANSWER`] at once. After
/// an advisory (the advisor's continuation): one more read (WIP), then
/// [`CONTINUATION_ANSWER`]. A request without tools (a compaction summary) gets a summary.
fn cadence_primary(body: &Value) -> Reply {
    if body["tools"].as_array().is_none_or(Vec::is_empty) {
        return Reply::now(text_sse("SUMMARY-MARKER"));
    }
    let msgs = messages(body);
    let Some(at) = msgs
        .iter()
        .rposition(|m| m["role"] == "user" && !is_advisory(m))
    else {
        return Reply::now(text_sse("noted"));
    };
    let answered = |from: usize| {
        msgs[from..]
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count()
    };
    let read = |id: &str| Reply::now(tool_sse(id, "read", json!({"path": "notes.txt"})));
    match msgs[at..].iter().rposition(is_advisory) {
        Some(advisory) => match answered(at + advisory) {
            0 => read("call_fix"),
            _ => Reply::now(text_sse(CONTINUATION_ANSWER)),
        },
        None if message_text(&msgs[at]).contains(RUN_CUE) => match answered(at) {
            0 => read("call_read"),
            _ => Reply::now(text_sse(RUN_ANSWER)),
        },
        None => Reply::now(text_sse(NEXT_ANSWER)),
    }
}

/// The advisor: a concern about an update holding [`RUN_ANSWER`], silence otherwise (and
/// after the `advise` result).
fn agent_end_advisor(body: &Value) -> Reply {
    let msgs = messages(body);
    let reviewing = msgs.last().is_some_and(|m| m["role"] == "user");
    if reviewing && update_text(&msgs).contains(RUN_ANSWER) {
        let args = json!({"severity": "concern", "note": CONCERN});
        return Reply::now(tool_sse("call_advise", "advise", args));
    }
    Reply::now(text_sse(""))
}

/// Waits (bounded) until pi has made `n` primary requests and is idle again.
fn wait_idle_after(pi: &mut Pi, primary: &ModelServer, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let idle = pi.state()["isStreaming"] == false;
        if primary_requests(primary).len() >= n && idle {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "pi made {} of {n} primary requests",
            primary_requests(primary).len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn agent_end_reviews_each_run_once(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let rt = runtime();
    let primary = ModelServer::start(&rt, Arc::new(cadence_primary));
    let advisor = ModelServer::start(&rt, Arc::new(agent_end_advisor));
    let config = format!("{ENABLED_SYNC}  reviewMode: agent-end\n");
    let setup = Setup::new(
        &primary,
        &advisor,
        &config,
        "the parser ignores empty lines\n",
    );
    let mut pi = setup.start(&tools, true, &[]);
    let mark = pi.len();
    prompt_settled(&mut pi, line, &format!("Read the notes. {RUN_CUE}"));
    // The run (read, answer) and the continuation the concern starts (read, answer).
    wait_idle_after(&mut pi, &primary, 4);
    // Had a continuation boundary been reviewed, its request would be out by now.
    std::thread::sleep(Duration::from_millis(1500));

    // CA1, CA2: one review for the two-turn run, carrying both turns.
    let bodies = advisor.bodies();
    assert_eq!(
        bodies.len(),
        1,
        "one advisor request for the run and its continuation"
    );
    let review = update_text(&messages(&bodies[0]));
    assert!(
        review.contains("read(notes.txt)") && review.contains(RUN_ANSWER),
        "the review carries the WIP turn and the final answer: {review}"
    );
    assert!(!review.contains(CONTINUATION_ANSWER), "{review}");

    // CA14, CA16: one merged message after the final answer, the note in `details`.
    let file = session_file(&mut pi);
    let entries = advisor_entries(&file);
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    let content = entry["content"].to_string();
    assert!(
        content.contains("These findings come from other models")
            && content.contains("severity=\\\"concern\\\"")
            && content.contains(CONCERN)
            && !content.contains("turns_ago"),
        "{content}"
    );
    assert_eq!(entry["display"], true);
    let notes = entry["details"]["notes"].as_array().expect("details.notes");
    assert_eq!(notes.len(), 1, "{entry}");
    assert_eq!(notes[0]["note"], CONCERN);
    assert_eq!(notes[0]["severity"], "concern");
    assert_eq!(notes[0]["turnsAgo"], 0, "{entry}");
    // The run still took steering at its final boundary (CA16): pi 1.6 continues that run;
    // pi 0.73's `turn_end` cannot, so the extension starts a run with the steer.
    assert_eq!(entry["details"]["channel"], "steer", "{entry}");
    let runs = match line {
        Line::Current => 1,
        Line::Legacy => 2,
    };
    assert_eq!(agent_starts(&pi.events_since(mark)), runs);
    let texts: Vec<String> = session_entries(&file)
        .iter()
        .filter(|e| e["type"] == "message" || e["type"] == "custom_message")
        .map(|e| e.to_string())
        .collect();
    let position = |needle: &str| {
        texts
            .iter()
            .position(|t| t.contains(needle))
            .unwrap_or_else(|| panic!("no entry holds {needle}: {texts:#?}"))
    };
    assert!(
        position(RUN_ANSWER) < position(CONCERN)
            && position(CONCERN) < position(CONTINUATION_ANSWER),
        "answer, advice, continuation: {texts:#?}"
    );
    let requests = primary_requests(&primary);
    assert_eq!(
        requests.len(),
        4,
        "read, answer, continuation read, its answer"
    );
    assert!(
        request_text(&requests[2]).contains(CONCERN),
        "the continuation carries it"
    );

    // CA17: the user's next prompt is reviewed, with the continuation's turns held for it.
    prompt_settled(&mut pi, line, "Next, tidy up.");
    let deadline = Instant::now() + Duration::from_secs(60);
    while advisor.bodies().len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the next prompt was never reviewed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let next = reviews(&advisor);
    assert_eq!(next.len(), 2, "one review per run");
    let update = update_text(&messages(&next[1]));
    assert!(
        update.contains(CONTINUATION_ANSWER)
            && update.contains("Next, tidy up.")
            && update.contains(NEXT_ANSWER),
        "the held continuation and the new run: {update}"
    );
    assert!(!update.contains(RUN_ANSWER), "reviewed once: {update}");
    let status = advisor_command(&mut pi, "status");
    assert!(status.contains("agent-end"), "{status}");
    pi.quit();
}

#[test]
fn ca2_ca17_on_pi_16_an_agent_end_advisor_reviews_each_run_once_and_not_its_continuation() {
    agent_end_reviews_each_run_once(Line::Current);
}

#[test]
fn ca2_ca17_on_pi_073_an_agent_end_advisor_reviews_each_run_once_and_not_its_continuation() {
    agent_end_reviews_each_run_once(Line::Legacy);
}
