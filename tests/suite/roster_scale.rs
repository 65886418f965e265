//! A roster at scale (RO24): the per-provider call limit (`advisor.maxConcurrentReviews`,
//! A6) counts every advisor's calls. The memory and thread bounds of idle sessions with three
//! advisors are in `tests/memory.rs`, which runs alone in its process; the sessions bench
//! measures them and the load.

use std::collections::BTreeMap;
use std::time::Duration;

use advisor::domain::transcript::Transcript;
use advisor::settings::SyncBacklog;
use advisor::{AdvisorRuntime, RuntimeOptions};

use crate::support::roster::{self, slug_in};
use crate::support::runtime::config;
use crate::support::sse_server::{self, BodyPart, ScriptedResponse};
use crate::support::wire::Dialect;

/// How long each answer of the server takes: long enough that calls let through together
/// would be answered together.
const ANSWER_TAKES: Duration = Duration::from_millis(300);

#[tokio::test]
async fn ro24_a6_three_advisors_on_one_provider_with_limit_one_never_call_at_once() {
    let dialect = Dialect::OpenAi;
    let server = sse_server::start(Vec::new()).await;
    for _ in 0..3 {
        let mut answer = ScriptedResponse::sse(&dialect.answer(""));
        answer.body.insert(0, BodyPart::Pause(ANSWER_TAKES));
        server.push(answer);
    }
    let rt = AdvisorRuntime::new(RuntimeOptions {
        arbiters: 2,
        max_concurrent_reviews: Some(1),
        ..RuntimeOptions::default()
    })
    .expect("runtime starts");
    let spec = dialect.spec(&server, Duration::from_secs(10), Duration::from_secs(30));
    let model = rt.shared().build_client(&spec, &|_| None).expect("client");
    let (provider, id) = dialect.role().split_once('/').expect("provider/model");
    let (handle, _events) = rt.open(config(model.clone(), SyncBacklog::Below(1), |cfg| {
        cfg.primary_session_id = "limited".into();
        cfg.settings.max_concurrent_reviews = 1;
        cfg.roster = Some(roster::setup(roster::three(provider, id), model));
    }));

    // One update that every advisor reviews (it touches a migration): three calls to one
    // provider, and the turn end waits until all three reviewed (S1, the largest backlog).
    let transcript = Transcript::from_messages(roster::turn(
        "call-1",
        "Add the orders table.",
        "migrations/0001_orders.sql",
    ));
    tokio::time::timeout(Duration::from_secs(30), handle.turn_end(&transcript))
        .await
        .expect("the three reviews end")
        .expect("turn_end");

    let mut callers = BTreeMap::new();
    for request in server.requests() {
        let system = request.json()["messages"][0].to_string();
        let slug = slug_in(&system).unwrap_or("(unnamed)").to_string();
        *callers.entry(slug).or_insert(0) += 1;
    }
    assert_eq!(
        callers,
        BTreeMap::from([
            ("architecture".to_string(), 1),
            ("migrations".to_string(), 1),
            ("security".to_string(), 1),
        ]),
        "one review by each advisor"
    );
    assert_eq!(
        server.peak_in_flight(),
        1,
        "the server never answered two advisors at once"
    );
    let calls = rt.calls();
    assert_eq!(calls.len(), 1, "one provider: {calls:?}");
    assert_eq!(
        (
            calls[0].provider.as_str(),
            calls[0].limit,
            calls[0].peak,
            calls[0].started
        ),
        (provider, 1, 1, 3),
        "the limit saw every advisor's call"
    );
    handle.dispose().await.expect("dispose");
}
