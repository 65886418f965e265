//! What a provider may send, bounded (M2, M4, F1, G4): the reply and the SSE event being
//! assembled are capped (G5 reactive: past the cap the call is an output-limit stop), each
//! call has a total limit beside the idle timeout (M4, F1), a stream that ends before its
//! dialect's end marker fails the same way in both dialects with its partial usage (F1,
//! G4), a server that reports no usage gets an estimate (G4), `Retry-After` is passed on as
//! given, and `model_context_window_exceeded` is an overflow that keeps its usage (G5).
//! Every test runs a real client against the in-process server, once per dialect where
//! both apply.

use crate::support::sse_server;
use crate::support::virtual_clock::VirtualClock;
use crate::support::wire::{Dialect, DIALECTS, REPORTED_INPUT};

use std::sync::Arc;
use std::time::Duration;

use advisor::model::{estimate_tokens, AssistantPart, ModelClient, ModelError, StopReason};
use advisor::providers::{build_client, event_cap, reply_cap, Catalog};
use serde_json::json;
use sse_server::{request, sse_event, start, user, BodyPart, ScriptedResponse, SseServer};

/// Generous timeouts: only the test's own limit matters.
const IDLE: Duration = Duration::from_secs(10);
const TOTAL: Duration = Duration::from_secs(600);

/// At most this many body bytes may have left the server when the client stops reading
/// early: the client's cap plus what the loopback socket buffers hold.
const WRITTEN_AT_MOST: u64 = 24 << 20;

fn client(
    server: &SseServer,
    dialect: Dialect,
    idle: Duration,
    total: Duration,
) -> Arc<dyn ModelClient> {
    let spec = dialect.spec(server, idle, total);
    build_client(&spec, &Catalog::builtin().unwrap(), &|_| None).unwrap()
}

fn text_of(parts: &[AssistantPart]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            AssistantPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn m2_a_50_mb_streamed_reply_ends_as_a_length_stop_with_the_text_cut() {
    let cap = reply_cap(4096);
    for dialect in DIALECTS {
        let piece = dialect.text(&"x".repeat(8192));
        let response = ScriptedResponse::sse(&dialect.head(true))
            .then(BodyPart::Repeat {
                bytes: piece.into_bytes(),
                times: 6400,
            })
            .then(BodyPart::Chunk(
                [dialect.stop(false, true), dialect.end(true)]
                    .concat()
                    .into_bytes(),
            ));
        let server = start(vec![response]).await;
        let r = client(&server, dialect, IDLE, TOTAL)
            .complete(request(vec![user("review this")]))
            .await
            .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
        assert_eq!(
            r.stop,
            StopReason::MaxTokens,
            "{dialect:?}: a length stop (G5)"
        );
        let text = text_of(&r.parts);
        assert!(
            text.len() <= cap && text.len() > cap / 2,
            "{dialect:?}: {} bytes of text kept, cap {cap}",
            text.len()
        );
        assert!(r.tool_calls().next().is_none());
        assert!(
            r.usage.estimated && r.usage.output > 0,
            "{dialect:?}: {:?}",
            r.usage
        );
        let written = server.body_bytes_sent()[0];
        assert!(
            written < WRITTEN_AT_MOST,
            "{dialect:?}: the client read on: {written} bytes written"
        );
    }
}

#[tokio::test]
async fn m2_a_300_mb_sse_line_without_newline_is_never_buffered_whole() {
    for dialect in DIALECTS {
        let response = ScriptedResponse::sse(
            &[dialect.head(true), dialect.open_text_line()].concat(),
        )
        .then(BodyPart::Repeat {
            bytes: vec![b'x'; 64 * 1024],
            times: 4800,
        });
        let server = start(vec![response]).await;
        let r = client(&server, dialect, IDLE, TOTAL)
            .complete(request(vec![user("review this")]))
            .await
            .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
        assert_eq!(r.stop, StopReason::MaxTokens, "{dialect:?}");
        assert_eq!(
            text_of(&r.parts),
            "",
            "{dialect:?}: the unfinished line is dropped"
        );
        let written = server.body_bytes_sent()[0];
        assert!(
            written < WRITTEN_AT_MOST && written as usize >= event_cap(reply_cap(4096)),
            "{dialect:?}: {written} bytes written"
        );
    }
}

#[tokio::test]
async fn m4_a_slow_drip_ends_at_the_total_limit_as_a_retryable_failure() {
    tokio::time::pause();
    let total = Duration::from_secs(60);
    for dialect in DIALECTS {
        let response = ScriptedResponse::sse(
            &[dialect.head(true), dialect.text("Looking")].concat(),
        )
        .then(BodyPart::Drip {
            bytes: b": keep-alive\n\n".to_vec(),
            every: Duration::from_secs(3),
        });
        let server = Arc::new(start(vec![response]).await);
        let _clock = VirtualClock::start(Arc::clone(&server));
        let c = client(&server, dialect, IDLE, total);
        let began = tokio::time::Instant::now();
        let outcome =
            tokio::time::timeout(total * 2, c.complete(request(vec![user("review this")])))
                .await
                .unwrap_or_else(|_| {
                    panic!("{dialect:?}: the call was still open after {:?}", total * 2)
                });
        let took = began.elapsed();
        match outcome {
            Err(ModelError::Retryable {
                message,
                usage: Some(usage),
                retry_after: None,
            }) => {
                assert!(
                    message.contains("total limit of 60 s")
                        && message.contains("advisor.requestTimeoutSecs"),
                    "{dialect:?}: {message}"
                );
                assert!(
                    usage.estimated && usage.output > 0,
                    "{dialect:?}: {usage:?}"
                );
            }
            other => panic!("{dialect:?}: {other:?}"),
        }
        assert!(
            took >= total && took < total + Duration::from_secs(1),
            "{dialect:?}: ended after {took:?}"
        );
    }
}

#[tokio::test]
async fn f1_a_stream_ended_before_its_end_marker_fails_in_both_dialects_with_partial_usage() {
    let req = request(vec![user("review this")]);
    let sent = estimate_tokens(req.char_len());
    for dialect in DIALECTS {
        // OpenAI: cut after finish_reason, before usage and [DONE]. Anthropic: cut after a
        // complete tool call, before message_delta and message_stop.
        let body = match dialect {
            Dialect::OpenAi => [
                dialect.head(true),
                dialect.text("All fine."),
                dialect.stop(false, true),
            ]
            .concat(),
            Dialect::Anthropic => [
                dialect.head(true),
                dialect.advise("toolu_1", &json!({"note": "check the null case"})),
            ]
            .concat(),
        };
        for cut in [false, true] {
            let mut response = ScriptedResponse::sse(&body);
            if cut {
                response = response.then(BodyPart::Cut);
            }
            let server = start(vec![response]).await;
            let e = client(&server, dialect, IDLE, TOTAL)
                .complete(req.clone())
                .await
                .expect_err("a truncated stream is a failure (F1)");
            let ModelError::Retryable {
                message,
                usage: Some(usage),
                ..
            } = &e
            else {
                panic!("{dialect:?} cut={cut}: {e:?}");
            };
            assert!(
                message.contains("ended") || message.contains("interrupted"),
                "{message}"
            );
            assert!(
                usage.estimated && usage.output > 0,
                "{dialect:?}: {usage:?}"
            );
            let input = match dialect {
                Dialect::OpenAi => sent,
                Dialect::Anthropic => REPORTED_INPUT,
            };
            assert_eq!(
                usage.input, input,
                "{dialect:?}: reported where the stream said"
            );
            assert!(usage.cost > 0.0, "{dialect:?}: priced from the catalog");
        }
    }
}

#[tokio::test]
async fn g4_a_server_that_streams_no_usage_gets_an_estimate_never_zero() {
    let dialect = Dialect::OpenAi;
    let body = [
        dialect.head(false),
        dialect.text(&"y".repeat(400)),
        dialect.stop(false, true),
        dialect.end(false),
    ]
    .concat();
    let server = start(vec![ScriptedResponse::sse(&body)]).await;
    let req = request(vec![user("review this")]);
    let r = client(&server, dialect, IDLE, TOTAL)
        .complete(req.clone())
        .await
        .unwrap();
    assert_eq!(r.stop, StopReason::EndTurn);
    assert!(r.usage.estimated);
    assert_eq!(r.usage.input, estimate_tokens(req.char_len()));
    assert_eq!(r.usage.output, 100);
    assert!(r.usage.cost > 0.0);
}

#[tokio::test]
async fn g5_model_context_window_exceeded_is_an_overflow_that_keeps_its_usage() {
    let dialect = Dialect::Anthropic;
    let body = [
        dialect.head(true),
        dialect.text("Reading"),
        sse_event(
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": 0}).to_string(),
        ),
        sse_event(
            Some("message_delta"),
            &json!({"type": "message_delta", "delta": {"stop_reason": "model_context_window_exceeded",
                "stop_sequence": null}, "usage": {"output_tokens": 7}})
            .to_string(),
        ),
        dialect.end(true),
    ]
    .concat();
    let server = start(vec![ScriptedResponse::sse(&body)]).await;
    let e = client(&server, dialect, IDLE, TOTAL)
        .complete(request(vec![user("review this")]))
        .await
        .unwrap_err();
    match e {
        ModelError::ContextOverflow {
            usage: Some(usage), ..
        } => {
            assert_eq!((usage.input, usage.output), (REPORTED_INPUT, 7));
            assert!(!usage.estimated);
            assert!(usage.cost > 0.0);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn m4_retry_after_100000_is_passed_on_whole() {
    for dialect in DIALECTS {
        let server = start(vec![
            ScriptedResponse::json(429, r#"{"error":{"message":"slow down"}}"#)
                .with_header("retry-after", "100000"),
            ScriptedResponse::json(503, r#"{"error":{"message":"busy"}}"#)
                .with_header("retry-after-ms", "100000000"),
        ])
        .await;
        let c = client(&server, dialect, IDLE, TOTAL);
        for _ in 0..2 {
            let e = c.complete(request(vec![user("u")])).await.unwrap_err();
            assert!(
                matches!(e, ModelError::Retryable { retry_after: Some(d), .. } if d == Duration::from_secs(100_000)),
                "{dialect:?}: {e:?}"
            );
        }
    }
}
