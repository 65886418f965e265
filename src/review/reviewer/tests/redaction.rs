//! Redaction of every path to the model (X5), against the real OpenAI client.

use super::*;
use crate::domain::transcript::{Transcript, TranscriptMessage};
use crate::feed::{FeedCursor, FeedOutcome};
use crate::providers::testing::{sse_event, ScriptedResponse, SseServer};
use crate::providers::{build_client, Catalog, ModelSpec};
use crate::render::TranscriptView;

/// A streamed reply in the OpenAI wire format: `delta`, the `finish` reason, the usage.
fn reply(delta: Value, finish: &str, prompt_tokens: u64) -> ScriptedResponse {
    let chunk = |delta: Value, finish: Option<&str>| {
        sse_event(
            None,
            &json!({"id": "g", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
        )
    };
    let usage = sse_event(
        None,
        &json!({"id": "g", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5,
                "total_tokens": prompt_tokens + 5}})
        .to_string(),
    );
    ScriptedResponse::sse(
        &[
            chunk(delta, None),
            chunk(json!({}), Some(finish)),
            usage,
            "data: [DONE]\n\n".into(),
        ]
        .concat(),
    )
}

/// A reply answering `t` with `tokens` prompt tokens.
fn text(t: &str, tokens: u64) -> ScriptedResponse {
    reply(json!({"role": "assistant", "content": t}), "stop", tokens)
}

/// A reply calling `read` on `config.yml`.
fn read_call() -> ScriptedResponse {
    reply(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "c1", "type": "function",
            "function": {"name": "read", "arguments": "{\"path\":\"config.yml\"}"}}]}),
        "tool_calls",
        100,
    )
}

/// The secrets, one per path, each of a kind the redactor knows.
struct Secrets([(&'static str, String); 7]);

impl Secrets {
    fn new() -> Self {
        let key = format!("sk-proj-{}", "Xf93kLm2Qp8Zr7Tt4Vb1Nc6Hd0Jw5Ys".repeat(2));
        Self([
            ("delta", "DB_PASSWORD=DeltaHorseBatteryStaple".to_string()),
            ("watchdog", "MY_SECRET=WatchdogMixedCaseValue".to_string()),
            (
                "held preamble",
                "MY_SECRET=HeldNoteMixedCaseValue".to_string(),
            ),
            ("tool result", "password: ToolResultHorseStaple".to_string()),
            ("question", format!("OPENAI_API_KEY={key}")),
            (
                "summary",
                "DB_PASSWORD=SummaryHorseBatteryStaple".to_string(),
            ),
            ("replay", "MY_SECRET=ReplayMixedCaseValue".to_string()),
        ])
    }

    /// The secret of `path`, as the text carries it.
    fn secret(&self, path: &str) -> String {
        self.0.iter().find(|(p, _)| *p == path).unwrap().1.clone()
    }

    /// The value of `path`'s secret, the part that must never reach the model.
    fn raw_value(&self, path: &str) -> String {
        self.secret(path)
            .split(['=', ':'])
            .nth(1)
            .unwrap()
            .trim()
            .to_string()
    }
}

/// Where each path's text reaches the model first.
const FIRST_REQUEST: [(&str, usize); 7] = [
    ("delta", 0),
    ("watchdog", 0),
    ("held preamble", 0),
    ("tool result", 1),
    ("question", 2),
    ("summary", 4),
    ("replay", 5),
];

/// The real OpenAI client against `base_url`, redacting with `redactor`, compacting past
/// 4,000 tokens.
fn redacting_engine(base_url: String, redactor: &Redactor) -> ReviewEngine {
    let spec = ModelSpec {
        role: Some("openrouter/anthropic/claude-sonnet-4.5".into()),
        base_url: Some(base_url),
        api_key: Some("test-key".into()),
        ..ModelSpec::default()
    };
    let model = build_client(&spec, &Catalog::builtin().unwrap(), &|_| None).unwrap();
    ReviewEngine {
        model,
        promotion: None,
        tools: vec![read_schema(), advise::schema()].into(),
        base_prompt: "You review.".into(),
        instructions: None,
        cwd: "/w".into(),
        limits: ReviewLimits {
            max_tool_rounds: 8,
            max_output_tokens: 4096,
            compact_at_percent: 80,
            compact_threshold_tokens: Some(4_000),
            max_note_chars: 2000,
            // P4 would elide the stale read before the third review and so spare the
            // compaction this test needs to reach the summary path.
            evict_stale_results: false,
            tool_budget: 50,
            spend_controls: true,
        },
        guard: None,
        redactor: Some(redactor.clone()),
    }
}

/// The stub port, its tool answering with a long file that holds a password.
#[derive(Clone)]
struct FilePort(StubPort, String);

impl ReviewPort for FilePort {
    async fn execute_tool(
        &self,
        name: &str,
        arguments: Value,
        unchanged_since: Option<u64>,
        model: &str,
    ) -> Option<ToolReply> {
        self.0
            .execute_tool(name, arguments, unchanged_since, model)
            .await?;
        Some(ToolReply::plain(self.1.clone(), false))
    }
    fn review_number(&self) -> u64 {
        self.0.review_number()
    }
    async fn held_preamble(&self) -> String {
        self.0.held_preamble().await
    }
    async fn discard_attempt(&self, attempt: u32) {
        self.0.discard_attempt(attempt).await
    }
    async fn watchdog(&self) -> Option<WatchdogBlocks> {
        self.0.watchdog().await
    }
    fn audits(&self) -> bool {
        true
    }
    fn audit(&self, event: AuditEvent) {
        self.0.audit(event)
    }
    fn notice(&self, text: String) {
        self.0.notice(text)
    }
}

/// The session: a review of a delta from the feed cursor as a session uses it, a question,
/// a second review that compacts, and the replay after a reset (R1).
async fn run_session(engine: ReviewEngine, port: FilePort, redactor: Redactor, s: &Secrets) {
    let transcript = Transcript::from_messages([TranscriptMessage::user(format!(
        "deploy with {}",
        s.secret("delta")
    ))]);
    let mut feed = FeedCursor::with_redactor(TranscriptView::Compact, None, Some(redactor));
    let FeedOutcome::Delta(delta) = feed.observe(&transcript) else {
        panic!("a delta");
    };
    let run = Reviewer::new(engine.clone(), port.clone(), AdvisorContext::new())
        .review(crate::review::ReviewPrompt::single(delta))
        .await;
    assert!(run.result.is_ok(), "{:?}", run.result.err());
    let question = format!("Is it fine that I committed {}?", s.secret("question"));
    let run = Reviewer::new(engine.clone(), port.clone(), run.context)
        .ask(&question)
        .await;
    assert_eq!(run.answer, "No, rotate it.");
    transcript.push(TranscriptMessage::user(format!(
        "then {}",
        s.secret("replay")
    )));
    let FeedOutcome::Delta(delta) = feed.observe(&transcript) else {
        panic!("a delta");
    };
    let run = Reviewer::new(engine.clone(), port.clone(), run.context)
        .review(crate::review::ReviewPrompt::single(delta))
        .await;
    assert_eq!(run.maintenance.compactions, 1, "the summary path ran");
    // A reset (R1): the feed replays the whole branch into a fresh context.
    feed.reset();
    let FeedOutcome::Delta(replay) = feed.observe(&transcript) else {
        panic!("a replay");
    };
    Reviewer::new(engine, port, AdvisorContext::new())
        .review(crate::review::ReviewPrompt::single(replay))
        .await;
}

/// X5: every path by which text leaves the process for the model goes
/// through redaction — deltas, the WATCHDOG.md blocks, the held-note preamble, tool results,
/// questions, compaction summaries and the replay after a reset — as the real OpenAI
/// client sends it to the in-process server; and the audit log gets the redacted text too.
#[tokio::test]
async fn x5_every_path_to_the_model_is_redacted_in_the_request_body() {
    let s = Secrets::new();
    let server = SseServer::start([
        read_call(),                   // 0: review 1
        text("ok", 100),               // 1: review 1, after the tool
        text("No, rotate it.", 5_000), // 2: the question
        text(
            &format!("- the agent deploys; {}", s.secret("summary")),
            100,
        ), // 3: summary
        text("ok", 100),               // 4: review 2
        text("ok", 100),               // 5: the replay
    ])
    .await
    .unwrap();
    let redactor = Redactor::new().unwrap();
    let engine = redacting_engine(server.base_url(), &redactor);
    let stub = StubPort {
        preamble: format!("Held notes: {}", s.secret("held preamble")),
        watchdog: Some(WatchdogBlocks {
            joined: format!("Especially pay attention to:\n- {}", s.secret("watchdog")),
            warnings: Vec::new(),
        }),
        ..StubPort::default()
    };
    let file = format!(
        "{}\n{}\n",
        "# filler\n".repeat(700),
        s.secret("tool result")
    );
    run_session(engine, FilePort(stub.clone(), file), redactor, &s).await;

    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(bodies.len(), 6);
    for (path, index) in FIRST_REQUEST {
        let raw = s.raw_value(path);
        for (i, body) in bodies.iter().enumerate() {
            assert!(!body.contains(&raw), "{path}: request {i} holds the secret");
        }
        let name = s.secret(path).split(['=', ':']).next().unwrap().to_string();
        let redacted = bodies[index].split(&name).skip(1).any(|after| {
            after
                .trim_start_matches([':', '=', ' '])
                .starts_with("[redacted:")
        });
        assert!(redacted, "{path}: request {index} lacks `{name}` redacted");
    }
    // The audit log (G7) keeps what the model was sent.
    let audits = format!("{:?}", stub.log.borrow().audits);
    for (path, _) in FIRST_REQUEST {
        assert!(!audits.contains(&s.raw_value(path)), "{path} in the audit");
    }
}
