//! Reviews that must not be lost, through the real pi on both API lines (SPEC P6,
//! P7): a backup model named from pi's `models.json` reviews when the advisor's model fails
//! (the extension passes pi's providers to `session/open`, and the backups are reached there),
//! and a batch retried three times is dropped alone, so the final answer that arrived during its
//! retries is still reviewed. The scripted servers and the RPC driver are `pi_e2e`'s.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::pi_e2e::{
    eventually, messages, primary, primary_requests, request_text, reviews, runtime, text_sse,
    tool_sse, update_text, ModelServer, Reply, Setup,
};
use super::pi_e2e_lines::{pi_of, prompt_settled, Line};
use super::pi_e2e_roster::add_provider;

/// The advisor's model from pi's registry, its turns waited for (S1), notes mid-run as asides
/// (D3), and a backup chain naming a model only pi's `models.json` knows (P6).
const WITH_BACKUP: &str = "\
modelRoles:
  advisor: advisorprov/advisor-model
advisor:
  enabled: true
  syncBacklog: 1
  policy: interrupt
retry:
  fallbackChains:
    advisor: [advisorprov/advisor-model, backupprov/backup-model]
";

/// The note the backup raises on the first round.
const BACKUP_NOTE: &str = "BACKUP-NOTE: keep a copy of notes.txt";

/// The backup: a nit on an update holding `ROUND-1`, silence otherwise.
fn backup_advisor(body: &Value) -> Reply {
    let msgs = messages(body);
    if msgs.last().is_none_or(|m| m["role"] != "user") || !update_text(&msgs).contains("ROUND-1") {
        return Reply::now(text_sse(""));
    }
    let args = json!({"severity": "nit", "note": BACKUP_NOTE});
    Reply::now(tool_sse("call_advise", "advise", args))
}

/// P6 on one pi line: the advisor's model answers 500 to everything; the backup pi's registry
/// knows reviews the turn and its note reaches the primary's next request.
fn backup_from_models_json(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let failing = ModelServer::start(&rt, Arc::new(|_: &Value| Reply::error(500, Duration::ZERO)));
    let backup = ModelServer::start(&rt, Arc::new(backup_advisor));
    let setup = Setup::new(&primary_srv, &failing, WITH_BACKUP, "the notes\n");
    add_provider(&setup, "backupprov", |b| {
        b["baseUrl"] = json!(backup.base_url());
        b["apiKey"] = json!("backup-secret");
        b["models"][0]["id"] = json!("backup-model");
        b["models"][0]["name"] = json!("backup-model");
    });
    let mut pi = setup.start(&tools, true, &[]);
    prompt_settled(
        &mut pi,
        line,
        "Round one. ROUND-1 [read:notes.txt] [say:round-one-done]",
    );
    eventually("the backup reviewing round one", || {
        reviews(&backup)
            .iter()
            .any(|b| update_text(&messages(b)).contains("ROUND-1"))
    });
    assert!(
        !failing.bodies().is_empty(),
        "the advisor's own model was asked first"
    );
    let requests = primary_requests(&primary_srv);
    assert!(
        requests
            .iter()
            .any(|r| request_text(r).contains(BACKUP_NOTE)),
        "the backup's note reaches the primary"
    );
    let switched = pi.wait_notice(0, "reviewing with backupprov/backup-model");
    assert!(
        switched.contains("advisorprov/advisor-model failed"),
        "{switched}"
    );
    let off = pi.notices_holding(0, "is off");
    assert!(off.is_empty(), "no backup is said to be off: {off:?}");
    pi.quit();
}

#[test]
fn p6_ro23_on_pi_16_a_backup_named_from_models_json_reviews_when_the_model_fails() {
    backup_from_models_json(Line::Current);
}

#[test]
fn p6_ro23_on_pi_073_a_backup_named_from_models_json_reviews_when_the_model_fails() {
    backup_from_models_json(Line::Legacy);
}

/// The advisor's model from pi's registry; turn ends do not wait, so turns queue while a review
/// fails.
const ASYNC: &str = "\
modelRoles:
  advisor: advisorprov/advisor-model
advisor:
  enabled: true
  syncBacklog: off
";

/// P7 on one pi line: the advisor's first three review calls fail (each after 300 ms, so the
/// final answer arrives during the retries), then it is healthy. The batch that failed three
/// times is dropped alone; the final answer behind it is reviewed next.
fn final_answer_survives_three_failures(line: Line) {
    let Some(tools) = pi_of(line.version()) else {
        return;
    };
    let rt = runtime();
    let primary_srv = ModelServer::start(&rt, Arc::new(primary));
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let advisor = ModelServer::start(
        &rt,
        Arc::new(move |body: &Value| {
            let msgs = messages(body);
            if !update_text(&msgs).contains("Session update") {
                return Reply::now(text_sse(""));
            }
            if counted.fetch_add(1, Ordering::SeqCst) < 3 {
                Reply::error(500, Duration::from_millis(300))
            } else {
                Reply::now(text_sse(""))
            }
        }),
    );
    let setup = Setup::new(&primary_srv, &advisor, ASYNC, "the notes\n");
    let mut pi = setup.start(&tools, true, &[]);
    prompt_settled(
        &mut pi,
        line,
        "Round one. [read:notes.txt] [say:final-answer-here]",
    );
    let dropped = pi.wait_notice(0, "consecutive model failures");
    assert!(dropped.ends_with("skipped 1 turn of review"), "{dropped}");
    eventually("a healthy review of the final answer", || {
        reviews(&advisor)
            .iter()
            .skip(3)
            .any(|b| update_text(&messages(b)).contains("FINAL-ANSWER-HERE"))
    });
    let all = reviews(&advisor);
    let failed: Vec<String> = all
        .iter()
        .take(3)
        .map(|b| update_text(&messages(b)))
        .collect();
    assert!(
        failed
            .iter()
            .all(|u| u == &failed[0] && !u.contains("FINAL-ANSWER-HERE")),
        "the three attempts carry the same batch, without the final answer: {failed:?}"
    );
    pi.quit();
}

#[test]
fn p7_on_pi_16_the_final_answer_behind_a_dropped_batch_is_reviewed() {
    final_answer_survives_three_failures(Line::Current);
}

#[test]
fn p7_on_pi_073_the_final_answer_behind_a_dropped_batch_is_reviewed() {
    final_answer_survives_three_failures(Line::Legacy);
}
