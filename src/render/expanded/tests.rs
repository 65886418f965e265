use super::*;
use serde_json::json;

fn msg(value: Value) -> Arc<TranscriptMessage> {
    Arc::new(serde_json::from_value(value).expect("a message"))
}

fn parts(messages: &[Arc<TranscriptMessage>], wip: bool) -> Vec<String> {
    render_batch(messages, wip, &mut ExpandedMemory::default())
}

#[test]
fn expanded_parts_share_the_label_and_the_heading_is_on_the_first() {
    let batch = [
        msg(json!({"role":"user","content":"Fix it"})),
        msg(json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"Look first."},
            {"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.py","i":"Read a.py"}}]})),
        msg(
            json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x = 1"}]}),
        ),
        msg(
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c2","name":"bash","arguments":{"command":"false"}}]}),
        ),
        msg(
            json!({"role":"toolResult","toolCallId":"c2","toolName":"bash","isError":true,"content":"boom\nmore"}),
        ),
    ];
    let got = parts(&batch, true);
    assert_eq!(
        got,
        vec![
            "### Session update\n\n**user**:\nFix it\n".to_string(),
            "**agent**:\n_thinking:_ Look first.\n// Read a.py\n→ read(a.py) ⇒ ok · 1 line\nTool result:\n```text\nx = 1\n```\n".into(),
            "→ bash(false) ⇒ error · 2 lines — boom\nTool result:\n```text\nboom\nmore\n```\n\n\n---\n\n[in progress — more steps follow]".into(),
        ]
    );
}

#[test]
fn expanded_a_result_whose_call_was_in_an_earlier_review_stands_alone() {
    let batch = [
        msg(
            json!({"role":"toolResult","toolCallId":"old","toolName":"edit","content":"done",
            "details":{"diff":"-a\n+b"}}),
        ),
        msg(json!({"role":"assistant","content":[{"type":"text","text":"Next."}]})),
    ];
    assert_eq!(
        parts(&batch, false),
        vec![
            "### Session update\n\n→ edit() ⇒ ok · 1 line\n```diff\n-a\n+b\n```\nTool result:\n```text\ndone\n```\n".to_string(),
            "**agent**:\nNext.\n".into(),
        ]
    );
}

#[test]
fn expanded_a_pending_call_and_arg_extensions() {
    let cases = [
        (
            "advise",
            json!({"severity":"concern","note":"Check it"}),
            "concern: Check it",
        ),
        ("advise", json!({"note":"Only a note"}), "Only a note"),
        (
            "grep",
            json!({"pattern":"TODO","paths":["a","b"]}),
            "TODO @ a, b",
        ),
        ("grep", json!({"path":"src"}), "src"),
        ("glob", json!({"pattern":"*.rs","paths":["src"]}), "src"),
        ("note", json!({"note":"remember","message":"m"}), "remember"),
        ("todo", json!({"i":"Check the list"}), "{}"),
        ("todo", json!({"_i":"old intent","n":1}), "{\"n\":1}"),
        ("x", json!({"n":1,"s":"text"}), "text"),
    ];
    for (name, args, arg) in cases {
        let batch = [msg(json!({"role":"assistant","content":[
            {"type":"toolCall","id":"c","name":name,"arguments":args}]}))];
        let got = parts(&batch, false).join("\n");
        assert!(
            got.contains(&format!("→ {name}({arg}) ⇒ pending\n")),
            "{name}: {got}"
        );
    }
}

#[test]
fn expanded_intent_prefers_i_then_underscore_i() {
    let batch = [msg(json!({"role":"assistant","content":[
        {"type":"toolCall","id":"a","name":"read","arguments":{"path":"p","_i":"old"}},
        {"type":"toolCall","id":"b","name":"read","arguments":{"path":"q","i":"new","_i":"old"}}]}))];
    let got = parts(&batch, false).join("");
    assert!(got.contains("// old\n→ read(p)"), "{got}");
    assert!(got.contains("// new\n→ read(q)"), "{got}");
}

#[test]
fn expanded_thinking_is_shown_in_full() {
    let long = "t".repeat(5000);
    let batch = [msg(
        json!({"role":"assistant","content":[{"type":"thinking","thinking":long}]}),
    )];
    assert!(parts(&batch, false)[0].contains(&format!("_thinking:_ {long}\n")));
}

#[test]
fn expanded_ask_input_comes_before_the_result() {
    let batch = [
        msg(
            json!({"role":"assistant","content":[{"type":"toolCall","id":"q","name":"ask",
            "arguments":{"question":"Which?","options":["a","b"],"i":"Ask the user"}}]}),
        ),
        msg(json!({"role":"toolResult","toolCallId":"q","toolName":"ask","content":"a"})),
    ];
    let got = parts(&batch, false).join("");
    assert!(got.contains(
        "// Ask the user\n→ ask(Which?) ⇒ ok · 1 line\nAsk input:\n```json\n{\n  \"question\": \"Which?\",\n  \"options\": [\n    \"a\",\n    \"b\"\n  ]\n}\n```\nTool result:\n```text\na\n```\n"
    ), "{got}");
}

#[test]
fn expanded_ask_result_standing_alone_shows_the_questions_of_its_details() {
    let batch = [msg(
        json!({"role":"toolResult","toolCallId":"q","toolName":"ask",
        "content":"yes","details":{"results":[{"question":"Go on?"}]}}),
    )];
    let got = parts(&batch, false).join("");
    assert!(
        got.contains(
            "Ask input:\n```json\n{\n  \"questions\": [\n    \"Go on?\"\n  ]\n}\n```\nTool result:"
        ),
        "{got}"
    );
}

#[test]
fn expanded_standing_context_is_verbatim_then_unchanged_until_cleared() {
    let plan = || {
        msg(
            json!({"role":"custom","customType":"plan-mode-context","content":"Plan <A> & B","display":false}),
        )
    };
    let mut memory = ExpandedMemory::default();
    let first = render_batch(&[plan()], false, &mut memory);
    assert_eq!(
        first,
        vec!["### Session update\n\n<primary-context kind=\"plan-mode-context\">\nPlan &lt;A&gt; &amp; B\n</primary-context>\n"]
    );
    let again = render_batch(&[plan()], false, &mut memory);
    assert!(
        again[0].contains(&format!("\n{UNCHANGED_CONTEXT}\n")),
        "{again:?}"
    );
    memory.clear();
    assert_eq!(render_batch(&[plan()], false, &mut memory), first);
}

#[test]
fn expanded_custom_kinds_and_hidden_ones() {
    let cases = [
        (
            json!({"customType":"async-result","content":"x","display":true,
            "details":{"jobs":[{"label":"tests"},{"jobId":"j2"},{}]}}),
            Some("[async-result] tests, j2, job"),
        ),
        (
            json!({"customType":"irc:incoming","content":"x","display":true,
            "details":{"from":"bob","message":"hi  there"}}),
            Some("[irc] bob → me: hi there"),
        ),
        (
            json!({"customType":"irc:relay","content":"x","display":true,
            "details":{"body":"b"}}),
            Some("[irc] ? → ?: b"),
        ),
        (
            json!({"customType":"irc:workpool","content":"x","display":true,
            "details":{"pool":"p","to":"t","body":"b"}}),
            Some("[pool] p → t: b"),
        ),
        (
            json!({"customType":"note","content":"a\nb","display":true}),
            Some("[note] a b"),
        ),
        (
            json!({"customType":"reminder","content":"hidden","display":false}),
            None,
        ),
        (
            json!({"customType":"image-attachment-description","content":"a cat","display":false}),
            Some("[image-attachment-description] a cat"),
        ),
    ];
    for (mut value, expected) in cases {
        value["role"] = json!("custom");
        let got = parts(&[msg(value)], false);
        match expected {
            Some(line) => assert_eq!(got, vec![format!("{UPDATE_HEADING}{line}\n")]),
            None => assert!(got.is_empty(), "{got:?}"),
        }
    }
}

#[test]
fn expanded_user_commands_summaries_and_file_mentions() {
    let batch = [
        msg(json!({"role":"bashExecution","command":"ls -la","output":"a\nb","exitCode":0})),
        msg(json!({"role":"pythonExecution","code":"1/0","output":"","exitCode":1})),
        msg(
            json!({"role":"bashExecution","command":"secret","output":"","excludeFromContext":true}),
        ),
        msg(json!({"role":"compactionSummary","summary":"## Goal\nFix it."})),
        msg(json!({"role":"branchSummary","fromId":"ab12","summary":"Tried X."})),
        msg(json!({"role":"fileMention","files":[{"path":"a.rs"},{"path":"b.rs"}]})),
    ];
    assert_eq!(
        parts(&batch, false),
        vec![
            "### Session update\n\n**user**:\n→ user-bash! ls -la ⇒ ok · 2 lines\n".to_string(),
            "→ user-python! 1/0 ⇒ error · exit 1 · 0 lines\n".into(),
            "[compaction] ## Goal Fix it.\n".into(),
            "[branch] from ab12: Tried X.\n".into(),
            "[file-mention] a.rs, b.rs\n".into(),
        ]
    );
}

#[test]
fn expanded_blank_messages_make_no_part() {
    let batch = [
        msg(json!({"role":"user","content":"  "})),
        msg(json!({"role":"assistant","content":[],"stopReason":"aborted"})),
    ];
    assert!(parts(&batch, true).is_empty());
}
