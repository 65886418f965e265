//! The expanded view against what oh-my-pi 18.3.4 sent its own advisor (SPEC §3 Expanded).
//!
//! Each folder of `tests/fixtures/omp/` is one scripted session run through oh-my-pi 18.3.4
//! headless with its built-in advisor on: `scenario.json` is the script (files, prompts,
//! the primary model's steps, the advisor's delay), `session.jsonl` the session file
//! oh-my-pi wrote, and `sent.json` the user messages its advisor model received per review
//! (`parts`), with `before_turn_end`: how many primary turn ends had happened when that
//! review's request arrived (from the run's event times), which says which turns a slow
//! advisor coalesced into one batch.
//!
//! Each review's batch, rendered by `batch_parts` from the session file, must equal what
//! oh-my-pi sent, part for part and byte for byte. oh-my-pi's own `<system-reminder>`
//! block (date and working directory) rides in the first user message of a session; it is
//! not part of the transcript view and was set aside when the fixtures were recorded.

use std::path::{Path, PathBuf};

use advisor::session::{read_session_arg, ReadLimits, SessionDriver};
use advisor::TurnPrompts;
use advisor::{batch_parts, FeedUpdate};
use advisor::{ExpandedMemory, TranscriptView};
use serde_json::Value;

fn scenario_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/omp")
        .join(name);
    assert!(dir.is_dir(), "fixture {} is missing", dir.display());
    dir
}

fn sent(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("sent.json")).expect("sent.json reads");
    let value: Value = serde_json::from_str(&text).expect("sent.json parses");
    value["reviews"].as_array().expect("reviews").clone()
}

fn updates(dir: &Path) -> Vec<(usize, FeedUpdate)> {
    let branch = read_session_arg(&dir.join("session.jsonl"), &ReadLimits::default())
        .expect("the session reads");
    let mut prompts = TurnPrompts::new(SessionDriver::new(branch), TranscriptView::Expanded);
    std::iter::from_fn(|| prompts.next_update()).collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_str().expect("a string").to_string())
        .collect()
}

/// A tool result oh-my-pi pruned in its session file after sending it: in review `review`
/// it sent `sent`; the file, which is all a replay has, now holds `now` there.
struct Pruned {
    review: u64,
    sent: &'static str,
    now: &'static str,
}

/// What oh-my-pi sent in `review`, with the results it pruned afterwards as its session
/// file now holds them.
fn expected_parts(name: &str, review: &Value, pruned: &[Pruned]) -> Vec<String> {
    let mut parts = strings(&review["parts"]);
    for p in pruned.iter().filter(|p| review["review"] == p.review) {
        let joined = parts.join("\n");
        assert!(
            joined.contains(p.sent),
            "{name}: review {} did not send {:?}",
            p.review,
            p.sent
        );
        parts = parts
            .iter()
            .map(|part| part.replace(p.sent, p.now))
            .collect();
    }
    parts
}

/// Renders every review of scenario `name` as its batch and compares it with what
/// oh-my-pi sent. Returns the turns each review covered.
fn assert_matches_omp(name: &str) -> Vec<Vec<usize>> {
    assert_matches_omp_pruned(name, &[])
}

/// [`assert_matches_omp`] where oh-my-pi pruned results after sending them.
fn assert_matches_omp_pruned(name: &str, pruned: &[Pruned]) -> Vec<Vec<usize>> {
    let dir = scenario_dir(name);
    let mut pending = updates(&dir).into_iter().peekable();
    let mut memory = ExpandedMemory::default();
    let mut covered = Vec::new();
    for review in sent(&dir) {
        let before = review["before_turn_end"].as_u64().expect("a count") as usize;
        let mut batch = Vec::new();
        let mut turns = Vec::new();
        while let Some((turn, _)) = pending.peek() {
            if *turn > before {
                break;
            }
            let (turn, update) = pending.next().expect("peeked");
            turns.push(turn);
            batch.push(update);
        }
        assert!(
            !batch.is_empty(),
            "{name}: review {} has no turn of ours",
            review["review"]
        );
        let ours = batch_parts(&batch, &mut memory);
        let theirs = expected_parts(name, &review, pruned);
        assert_eq!(
            ours, theirs,
            "{name}: review {} (turns {turns:?}) differs from what oh-my-pi sent",
            review["review"]
        );
        covered.push(turns);
    }
    assert!(
        pending.peek().is_none(),
        "{name}: turns left that oh-my-pi did not review: {:?}",
        pending.map(|(t, _)| t).collect::<Vec<_>>()
    );
    covered
}

/// `advisor render` prints each turn as its own review: for turns oh-my-pi reviewed alone,
/// its `parts` and `prompt` are what oh-my-pi sent.
fn assert_cli_matches(name: &str, covered: &[Vec<usize>]) {
    assert_cli_matches_pruned(name, covered, &[]);
}

fn assert_cli_matches_pruned(name: &str, covered: &[Vec<usize>], pruned: &[Pruned]) {
    let dir = scenario_dir(name);
    let out = std::process::Command::new(crate::support::advisor_bin())
        .arg("render")
        .arg(dir.join("session.jsonl"))
        .args(["--transcript", "expanded"])
        .output()
        .expect("advisor runs");
    assert!(out.status.success());
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    for (review, turns) in sent(&dir).iter().zip(covered) {
        let [turn] = turns[..] else { continue };
        let row = rows
            .iter()
            .find(|r| r["turn"] == turn)
            .unwrap_or_else(|| panic!("{name}: no row for turn {turn}"));
        let theirs = expected_parts(name, review, pruned);
        assert_eq!(strings(&row["parts"]), theirs, "{name}: turn {turn}");
        assert_eq!(row["prompt"].as_str(), Some(theirs.join("\n").as_str()));
        let wip = theirs
            .last()
            .is_some_and(|p| p.ends_with("[in progress — more steps follow]"));
        assert_eq!(row["wip"].as_bool(), Some(wip), "{name}: turn {turn}");
    }
}

#[test]
fn expanded_abort_a_cut_turn_goes_into_the_next_review() {
    // The second prompt's tool turn ran `sleep` and was aborted: no reply followed it
    // before the next user message, so it is reviewed with that message's turn.
    let covered = assert_matches_omp("abort");
    assert_eq!(covered.len(), 3);
    assert_cli_matches("abort", &covered);
}

#[test]
fn expanded_g2_a_slow_advisor_coalesces_turns_under_one_heading() {
    let covered = assert_matches_omp("coalesce");
    assert!(covered.iter().any(|turns| turns.len() > 1), "{covered:?}");
    assert_cli_matches("coalesce", &covered);
}

#[test]
fn expanded_big_edit_shows_the_diff_excerpt_and_the_result() {
    let covered = assert_matches_omp("big_edit");
    assert_cli_matches("big_edit", &covered);
}

#[test]
fn expanded_long_outputs_thinking_errors_and_tool_args_match_omp() {
    // A 301-line read, a 203-line output, twenty 700-byte lines (the byte budget binds),
    // a failing script, grep and glob arguments, a call with only an intent (`{}`), an
    // output with backtick runs (a longer fence) and thinking far over 120 characters.
    let covered = assert_matches_omp("long_output");
    assert_cli_matches("long_output", &covered);
}

#[test]
fn expanded_r1_after_a_compaction_the_whole_kept_transcript_is_sent() {
    let covered = assert_matches_omp("compaction");
    assert_cli_matches("compaction", &covered);
    let sent = sent(&scenario_dir("compaction"));
    assert!(sent
        .iter()
        .any(|r| strings(&r["parts"])[0].starts_with("### Session update\n\n[compaction] ")));
}

#[test]
fn expanded_r1_a_result_pruned_after_it_was_sent_differs_only_there() {
    // The agent read notes.txt, appended a line and read it again: oh-my-pi then replaced
    // the first read's result in its session file by a placeholder (no reset: R1 amended).
    // Review 1 sent the original body; the file holds only the placeholder, so a replay of
    // the file shows that in its place. Everything else is what oh-my-pi sent.
    let pruned = [Pruned {
        review: 1,
        sent: "→ read(notes.txt) ⇒ ok · 3 lines\nTool result:\n```text\n[notes.txt#F9EC]\n\
               1:first line\n2:second line\n```",
        now: "→ read(notes.txt) ⇒ ok · 1 line\nTool result:\n```text\n\
              [Superseded by a newer read of this file]\n```",
    }];
    let covered = assert_matches_omp_pruned("prune", &pruned);
    assert_cli_matches_pruned("prune", &covered, &pruned);
}

#[test]
fn expanded_user_bang_commands_show_under_the_user_label_without_a_body() {
    // The user ran `ls`, a failing `cat … && false` and `wc -l` themselves (oh-my-pi's RPC
    // `bash`) before prompting: each is a line under `**user**:`, with its status.
    let covered = assert_matches_omp("user_bash");
    assert_cli_matches("user_bash", &covered);
    let first = strings(&sent(&scenario_dir("user_bash"))[0]["parts"]);
    assert_eq!(
        first[1],
        "→ user-bash! cat a.txt && false ⇒ error · exit 1 · 3 lines\n"
    );
}

/// The user messages ending each request the advisor's model got, in order.
fn sent_parts(server: &advisor::providers::testing::SseServer) -> Vec<Vec<String>> {
    server
        .requests()
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).expect("a JSON body");
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            let start = messages
                .iter()
                .rposition(|m| m["role"] != "user")
                .map_or(0, |i| i + 1);
            messages[start..]
                .iter()
                // P8's reminder is a part of its own in the context's first user message.
                .map(|m| crate::support::wire_user_text(&m["content"]))
                .collect()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expanded_l2_a_replay_sends_what_omp_sent_and_merges_the_cut_turn() {
    // Through the binary and the whole runtime (one review per turn, syncBacklog 1): the
    // aborted run's tool turn sends no review of its own, a compaction resets the advisor
    // and the next review carries the kept transcript, and every review's user messages are
    // what oh-my-pi 18.3.4 sent. (`coalesce` depends on the advisor's speed, `prune` on
    // what was sent before the file changed: both are covered above.)
    for name in [
        "abort",
        "long_output",
        "big_edit",
        "compaction",
        "user_bash",
    ] {
        let dir = scenario_dir(name);
        let reviews = sent(&dir);
        let silent = crate::suite::replay_e2e::silent;
        let server =
            advisor::providers::testing::SseServer::start((0..reviews.len() + 2).map(|_| silent()))
                .await
                .expect("bind");
        let root = tempfile::tempdir().expect("a temporary root");
        let out = tokio::process::Command::new(crate::support::advisor_bin())
            .arg("replay")
            .arg(dir.join("session.jsonl"))
            .args(["--model", "local/test", "--api", "openai-completions"])
            .args(["--base-url", &server.base_url()])
            .arg("--root")
            .arg(root.path())
            .args(["--transcript", "expanded", "--no-watchdog"])
            .env_remove("ADVISOR_MODEL")
            .env_remove("ADVISOR_NO_REVIEW")
            .kill_on_drop(true)
            .output()
            .await
            .expect("the advisor binary runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs: Vec<Vec<String>> = reviews.iter().map(|r| strings(&r["parts"])).collect();
        assert_eq!(sent_parts(&server), theirs, "{name}");
    }
}

/// P1 and P2 against where oh-my-pi 18.3.4's advice went (`defer_concern`): its advisor
/// raised a concern at review 2, while the agent was mid-work; oh-my-pi held it and wrote
/// it as a visible advisor message after the final answer, starting no run and putting it
/// in no primary request, and its advisor made one request per review (5) — no follow-up
/// after the advise. A replay of the same session with an advisor that says the same at the
/// same review (the default settings: the expanded view and `defer`) must deliver it the
/// same way: one card, at the last turn, after the final answer, and 5 model calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p1_p2_a_concern_raised_mid_work_lands_where_omp_put_it() {
    use crate::suite::replay_e2e::{advise, json_lines, silent};
    let dir = scenario_dir("defer_concern");
    let theirs: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("delivered.json")).expect("delivered.json reads"),
    )
    .expect("delivered.json parses");
    let delivered = theirs["deliveries"].as_array().expect("deliveries");
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0]["after"], "assistant", "after the final answer");
    let note = delivered[0]["notes"][0]["note"].as_str().expect("a note");
    let severity = delivered[0]["notes"][0]["severity"].as_str();
    let server = advisor::providers::testing::SseServer::start([
        silent(),
        advise(note, severity),
        silent(),
        silent(),
        silent(),
        silent(),
    ])
    .await
    .expect("bind");
    let root = tempfile::tempdir().expect("a temporary root");
    let out = tokio::process::Command::new(crate::support::advisor_bin())
        .arg("replay")
        .arg(dir.join("session.jsonl"))
        .args(["--model", "local/test", "--api", "openai-completions"])
        .args(["--base-url", &server.base_url()])
        .arg("--root")
        .arg(root.path())
        .args(["--no-watchdog", "--json"])
        .env_remove("ADVISOR_MODEL")
        .env_remove("ADVISOR_NO_REVIEW")
        .kill_on_drop(true)
        .output()
        .await
        .expect("the advisor binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&String::from_utf8_lossy(&out.stdout));
    let notes: Vec<&Value> = lines.iter().filter(|l| l.get("note").is_some()).collect();
    assert_eq!(notes.len(), 1, "{lines:?}");
    assert_eq!(notes[0]["channel"], "card", "visible, starts no run");
    assert_eq!(notes[0]["note"], note);
    assert_eq!(notes[0]["severity"].as_str(), severity);
    let turns = lines.iter().filter_map(|l| l["turn"].as_u64()).max();
    assert_eq!(turns, Some(5), "at the final answer's turn end");
    let status = &lines.last().expect("a status line")["status"];
    assert_eq!(
        status["agent"]["modelCalls"], theirs["advisor_requests"],
        "one advisor request per review, as oh-my-pi"
    );
}
