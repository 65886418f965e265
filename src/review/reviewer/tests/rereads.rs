//! Re-reads of unchanged files as pointers (SP2).

use super::*;

/// A port whose files give `fingerprint`, answering reads with `body`, as review `review`.
fn files(fingerprint: u64, body: &str, review: u64) -> StubPort {
    StubPort {
        body: Some(body.to_string()),
        fingerprint: Rc::new(std::cell::Cell::new(Some(fingerprint))),
        review,
        ..StubPort::default()
    }
}

#[test]
fn sp2_a_repeated_read_over_unchanged_files_is_a_pointer_to_the_earlier_call() {
    let read = |path: &str| ScriptedReply::tool_call("c", "read", json!({ "path": path }));
    let model = ScriptedModel::new([
        read("src/lib.rs"),
        read("src/main.rs"),
        ScriptedReply::text("ok"),
        read("src/lib.rs"),
        read("src/lib.rs:2"),
        ScriptedReply::text("ok"),
    ]);
    let mut engine = engine(&model);
    engine.limits.evict_stale_results = false;
    let port = files(42, "1|fn main() {}", 4);
    let first = review(engine.clone(), &port, AdvisorContext::new(), "one");
    let port = StubPort {
        log: Rc::clone(&port.log),
        review: 5,
        ..port
    };
    let second = review(engine, &port, first.context, "two");
    let got = results(&second.context.messages);
    assert_eq!(
        got[2],
        "[Not sent again: this is the same call as call 1 of review 4, and the files it covers \
         are unchanged since, so its result (14 bytes) is still above in your context.]"
    );
    assert_eq!(got[3], "1|fn main() {}", "other arguments run as usual");
    assert_eq!(
        (
            second.tool_spend.rereads_saved,
            second.tool_spend.reread_bytes_saved
        ),
        (1, 14)
    );
    let log = port.log.borrow();
    assert_eq!(log.since, [None, None, Some(42), None]);
    assert_eq!(log.tool_calls.len(), 3, "the re-read was not run");
}

#[test]
fn sp2_a_changed_file_is_read_again_in_full() {
    let read = || ScriptedReply::tool_call("c", "read", json!({"path": "a.rs"}));
    let model = ScriptedModel::new([
        read(),
        ScriptedReply::text("ok"),
        read(),
        ScriptedReply::text("ok"),
    ]);
    let mut engine = engine(&model);
    engine.limits.evict_stale_results = false;
    let port = files(42, "1|old", 1);
    let first = review(engine.clone(), &port, AdvisorContext::new(), "one");
    port.fingerprint.set(Some(43));
    let second = review(engine, &port, first.context, "two");
    assert_eq!(results(&second.context.messages), ["1|old", "1|old"]);
    assert_eq!(second.tool_spend.rereads_saved, 0);
    assert_eq!(
        port.log.borrow().since,
        [None, Some(42)],
        "asked, and it had changed"
    );
}

/// The defect SP2 fixes: while a read's result is in the context the same read is a
/// pointer; once P4 evicted it, the read is run again and its lines sent, never answered
/// "already in your context".
#[test]
fn sp2_p4_after_an_eviction_the_same_read_runs_and_its_lines_are_sent_again() {
    let body: String = (1..=200).map(|i| format!("{i}|line {i}\n")).collect();
    let read = || ScriptedReply::tool_call("c", "read", json!({"path": "big.rs"}));
    let ok = || ScriptedReply::text("ok");
    let model = ScriptedModel::new([read(), ok(), read(), ok(), read(), ok()]);
    let port = files(42, &body, 1);
    let first = review(engine(&model), &port, AdvisorContext::new(), "one");
    let second = review(engine(&model), &port, first.context, "two");
    assert_eq!(
        second.maintenance.evictions, 0,
        "the first result is not stale yet"
    );
    assert_eq!(second.tool_spend.rereads_saved, 1);
    assert!(results(&second.context.messages)[1].starts_with("[Not sent again"));
    let third = review(engine(&model), &port, second.context, "three");
    assert_eq!(third.maintenance.evictions, 1, "P4 elided the first result");
    let got = results(&third.context.messages);
    assert!(got[0].starts_with("[Stale result elided"), "{}", got[0]);
    assert_eq!(got[2], body, "the lines are sent again");
    assert_eq!(third.tool_spend.rereads_saved, 0);
    assert_eq!(
        port.log.borrow().since,
        [None, Some(42), None],
        "after the eviction there is no earlier result to point at"
    );
}

#[test]
fn sp2_a_compaction_or_a_promotion_starts_a_new_context_for_re_reads() {
    let messages = vec![
        user("old"),
        ChatMessage::Assistant {
            parts: vec![AssistantPart::ToolCall {
                id: "c".into(),
                name: "read".into(),
                arguments: json!({"path": "a.rs"}),
            }],
        },
        ChatMessage::ToolResult {
            call_id: "c".into(),
            name: "read".into(),
            text: "1|a".into(),
            is_error: false,
        },
        answer("fine"),
    ];
    let remembered = || {
        let mut context = measured(messages.clone(), 900);
        let record = ReadRecord::new("read", json!({"path": "a.rs"}), 42, (1, 1), 2, "1|a");
        context.rereads.record(record);
        assert!(context
            .rereads
            .earlier("read", &json!({"path": "a.rs"}), &context.messages)
            .is_some());
        context
    };
    // A promotion keeps the history but not the re-read ledger.
    let small = ScriptedModel::new([]).with_context_window(1_000);
    let large = ScriptedModel::new([
        ScriptedReply::tool_call("d", "read", json!({"path": "a.rs"})),
        ScriptedReply::text("ok"),
    ])
    .with_context_window(10_000);
    let mut engine = engine(&small);
    engine.promotion = Some(Arc::new(large.clone()));
    let port = files(42, "1|a", 2);
    let run = review(engine, &port, remembered(), "next");
    assert_eq!(run.maintenance.promotions, 1);
    assert_eq!(
        port.log.borrow().since,
        [None],
        "the read runs after a promotion"
    );
    assert_eq!(results(&run.context.messages), ["1|a", "1|a"]);
    // A compaction replaces the history: nothing earlier is pointed at.
    let mut context = remembered();
    context.compact(1, summary_message("sum"), 10);
    assert!(context
        .rereads
        .earlier("read", &json!({"path": "a.rs"}), &context.messages)
        .is_none());
}
