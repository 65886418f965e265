//! Golden tests of the two transcript renderers (SPEC §3), through the public API the
//! transcript feed uses.

use std::sync::Arc;

use advisor::domain::transcript::TranscriptMessage;
use advisor::{render_delta, TranscriptView};
use serde_json::{json, Value};

fn msg(value: Value) -> Arc<TranscriptMessage> {
    Arc::new(serde_json::from_value(value).expect("test message parses"))
}

fn compact(messages: &[Arc<TranscriptMessage>]) -> String {
    render_delta(TranscriptView::Compact, messages)
}

fn full(messages: &[Arc<TranscriptMessage>]) -> String {
    render_delta(TranscriptView::Full, messages)
}

fn user(text: &str) -> Arc<TranscriptMessage> {
    msg(json!({"role": "user", "content": text}))
}

fn assistant(blocks: Value) -> Arc<TranscriptMessage> {
    msg(json!({"role": "assistant", "content": blocks, "stopReason": "toolUse"}))
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments})
}

fn result(id: &str, name: &str, body: &str, is_error: bool) -> Arc<TranscriptMessage> {
    msg(json!({
        "role": "toolResult", "toolCallId": id, "toolName": name,
        "content": [{"type": "text", "text": body}], "isError": is_error
    }))
}

/// The compact tool line of a single call with `arguments` and no result.
fn tool_line(arguments: Value) -> String {
    compact(&[assistant(json!([call("c1", "tool", arguments)]))])
}

fn bash(
    command: &str,
    output: &str,
    exit: Value,
    cancelled: bool,
    excluded: bool,
) -> Arc<TranscriptMessage> {
    msg(json!({
        "role": "bashExecution", "command": command, "output": output, "exitCode": exit,
        "cancelled": cancelled, "truncated": false, "excludeFromContext": excluded
    }))
}

// ---------------------------------------------------------------------------------------
// Compact view
// ---------------------------------------------------------------------------------------

#[test]
fn compact_spec_example() {
    let delta = [
        user("Fix the null check"),
        assistant(json!([
            {"type": "thinking", "thinking": "The bug…"},
            text("Check callers.\nLet me look."),
            call("r1", "read", json!({"path": "src/parser.ts:10-40", "_i": "Inspect parse()"})),
        ])),
        result("r1", "read", "one\ntwo\nthree", false),
        assistant(json!([call(
            "b1",
            "bash",
            json!({"command": "cargo test parser"})
        )])),
        result("b1", "bash", "FAIL parser\nexpected Some(_)", true),
    ];
    let expected = "**user**:\nFix the null check\n\n**agent**:\n_thinking:_ The bug…\nCheck callers.\nLet me look.\n// Inspect parse()\n→ read(src/parser.ts:10-40) ⇒ ok · 3 lines\n\n→ bash(cargo test parser) ⇒ error · 2 lines — FAIL parser\n";
    assert_eq!(compact(&delta), expected);
}

#[test]
fn compact_labels_collapse_for_consecutive_agent_messages() {
    let delta = [
        assistant(json!([text("first")])),
        assistant(json!([text("second")])),
    ];
    assert_eq!(compact(&delta), "**agent**:\nfirst\n\nsecond\n");
}

#[test]
fn compact_labels_repeat_after_orphan_execution_and_custom() {
    let delta = [
        assistant(json!([text("a")])),
        result("gone", "search", "hit", false),
        assistant(json!([text("b")])),
        bash("ls", "x", json!(0), false, false),
        assistant(json!([text("c")])),
        msg(json!({"role": "custom", "customType": "note", "content": "hello", "display": true})),
        assistant(json!([text("d")])),
    ];
    assert_eq!(
        compact(&delta),
        "**agent**:\na\n\n→ search() ⇒ ok · 1 line\n\n**agent**:\nb\n\n→ bash! ls ⇒ ok · 1 line\n\n**agent**:\nc\n\n[note] hello\n\n**agent**:\nd\n"
    );
}

#[test]
fn compact_label_changes_between_roles() {
    let delta = [
        user("u1"),
        msg(json!({"role": "developer", "content": "dev"})),
        user("u2"),
    ];
    assert_eq!(
        compact(&delta),
        "**user**:\nu1\n\n**developer**:\ndev\n\n**user**:\nu2\n"
    );
}

#[test]
fn compact_intent_short_and_cut_at_80() {
    let short = tool_line(json!({"path": "a.rs", "_i": "  look   here "}));
    assert_eq!(short, "**agent**:\n// look here\n→ tool(a.rs) ⇒ pending\n");
    let long_intent = "x".repeat(100);
    let out = tool_line(json!({"path": "a.rs", "_i": long_intent}));
    let intent_line = out.lines().nth(1).expect("intent line");
    assert_eq!(intent_line, format!("// {}…", "x".repeat(79)));
    assert_eq!(intent_line.chars().count(), 3 + 80);
    let blank = tool_line(json!({"path": "a.rs", "_i": "   "}));
    assert_eq!(blank, "**agent**:\n→ tool(a.rs) ⇒ pending\n");
}

#[test]
fn compact_orphan_result_line() {
    let delta = [result("x", "search", "one match", false)];
    assert_eq!(compact(&delta), "→ search() ⇒ ok · 1 line\n");
}

#[test]
fn compact_result_line_counts() {
    let status = |body: &str, is_error: bool| {
        compact(&[
            assistant(json!([call("c", "read", json!({"path": "f"}))])),
            result("c", "read", body, is_error),
        ])
    };
    assert_eq!(status("", false), "**agent**:\n→ read(f) ⇒ ok · 0 lines\n");
    assert_eq!(
        status("one", false),
        "**agent**:\n→ read(f) ⇒ ok · 1 line\n"
    );
    assert_eq!(
        status("a\nb", false),
        "**agent**:\n→ read(f) ⇒ ok · 2 lines\n"
    );
    assert_eq!(
        status("  No such   file \nmore", true),
        "**agent**:\n→ read(f) ⇒ error · 2 lines — No such file\n"
    );
    assert_eq!(
        status("\nboom", true),
        "**agent**:\n→ read(f) ⇒ error · 2 lines\n"
    );
    assert_eq!(
        status("", true),
        "**agent**:\n→ read(f) ⇒ error · 0 lines\n"
    );
}

#[test]
fn compact_error_first_line_cut_at_120() {
    let first = "e".repeat(200);
    let out = compact(&[
        assistant(json!([call("c", "bash", json!({"command": "x"}))])),
        result("c", "bash", &first, true),
    ]);
    assert_eq!(
        out,
        format!(
            "**agent**:\n→ bash(x) ⇒ error · 1 line — {}…\n",
            "e".repeat(119)
        )
    );
}

#[test]
fn compact_result_after_its_call_renders_nothing() {
    let out = compact(&[
        assistant(json!([call("c", "read", json!({"path": "f"}))])),
        result("c", "read", "x", false),
        result("c", "read", "duplicate", false),
    ]);
    assert_eq!(out, "**agent**:\n→ read(f) ⇒ ok · 1 line\n");
}

#[test]
fn compact_pending_without_result() {
    assert_eq!(
        tool_line(json!({"command": "make"})),
        "**agent**:\n→ tool(make) ⇒ pending\n"
    );
}

#[test]
fn compact_arg_path_before_command() {
    let line = tool_line(json!({"command": "cat x", "path": "src/lib.rs"}));
    assert_eq!(line, "**agent**:\n→ tool(src/lib.rs) ⇒ pending\n");
}

#[test]
fn compact_arg_known_key_order() {
    let line = tool_line(json!({"id": "7", "query": "needle", "pattern": "ne+dle"}));
    assert_eq!(line, "**agent**:\n→ tool(ne+dle) ⇒ pending\n");
    let empty_path = tool_line(json!({"path": "", "url": "https://x.test"}));
    assert_eq!(empty_path, "**agent**:\n→ tool(https://x.test) ⇒ pending\n");
}

#[test]
fn compact_arg_array_joined() {
    let line = tool_line(json!({"path": ["a.rs", "b.rs"]}));
    assert_eq!(line, "**agent**:\n→ tool(a.rs, b.rs) ⇒ pending\n");
    let mixed = tool_line(json!({"path": ["a.rs", 3], "note": "fallback"}));
    assert_eq!(mixed, "**agent**:\n→ tool(fallback) ⇒ pending\n");
}

#[test]
fn compact_arg_first_string_in_own_order() {
    let line =
        tool_line(json!({"_i": "intent", "limit": 3, "zeta": "", "beta": "b", "alpha": "a"}));
    assert_eq!(line, "**agent**:\n// intent\n→ tool(b) ⇒ pending\n");
}

#[test]
fn compact_arg_json_fallback_keeps_key_order_without_intent() {
    let line = tool_line(json!({"zed": 1, "_i": "why", "alpha": [1, 2], "m": {"k": null}}));
    assert_eq!(
        line,
        "**agent**:\n// why\n→ tool({\"zed\":1,\"alpha\":[1,2],\"m\":{\"k\":null}}) ⇒ pending\n"
    );
}

#[test]
fn compact_arg_empty() {
    assert_eq!(tool_line(json!({})), "**agent**:\n→ tool() ⇒ pending\n");
    assert_eq!(
        tool_line(json!({"_i": "only intent"})),
        "**agent**:\n// only intent\n→ tool() ⇒ pending\n"
    );
}

#[test]
fn compact_arg_one_line_and_cut_at_120() {
    let line = tool_line(json!({"command": "cat <<EOF\nhello\n  world\nEOF"}));
    assert_eq!(
        line,
        "**agent**:\n→ tool(cat <<EOF hello world EOF) ⇒ pending\n"
    );
    let long = "p".repeat(150);
    let line = tool_line(json!({ "path": long }));
    assert_eq!(
        line,
        format!("**agent**:\n→ tool({}…) ⇒ pending\n", "p".repeat(119))
    );
}

#[test]
fn compact_bash_execution_ok_error_cancelled_excluded() {
    assert_eq!(
        compact(&[bash("  ls   -la ", "a\nb\nc", json!(0), false, false)]),
        "→ bash! ls -la ⇒ ok · 3 lines\n"
    );
    assert_eq!(
        compact(&[bash("false", "", json!(2), false, false)]),
        "→ bash! false ⇒ error · exit 2 · 0 lines\n"
    );
    assert_eq!(
        compact(&[bash("sleep 9", "z", Value::Null, true, false)]),
        "→ bash! sleep 9 ⇒ cancelled · 1 line\n"
    );
    assert_eq!(compact(&[bash("secret", "x", json!(0), false, true)]), "");
}

#[test]
fn compact_python_execution() {
    let m = msg(json!({
        "role": "pythonExecution", "code": "print(1)\nprint(2)", "output": "1\n2",
        "exitCode": 0, "cancelled": false, "truncated": false
    }));
    assert_eq!(
        compact(&[m]),
        "→ python! print(1) print(2) ⇒ ok · 2 lines\n"
    );
}

#[test]
fn compact_custom_branch_and_compaction_summaries() {
    let delta = [
        msg(
            json!({"role": "custom", "customType": "todo", "content": [{"type": "text", "text": "step 1\n  step 2"}], "display": true}),
        ),
        msg(json!({"role": "branchSummary", "summary": "Tried a\nrefactor", "fromId": "e42"})),
        msg(json!({"role": "compactionSummary", "summary": "Earlier:   work", "tokensBefore": 9})),
    ];
    assert_eq!(
        compact(&delta),
        "[todo] step 1 step 2\n\n[branch] from e42: Tried a refactor\n\n[compaction] Earlier: work\n"
    );
}

#[test]
fn compact_one_liners_cut_at_120() {
    let summary = "word ".repeat(60);
    let out = compact(&[msg(
        json!({"role": "compactionSummary", "summary": summary}),
    )]);
    let line = out.trim_end();
    assert_eq!(line.chars().count(), "[compaction] ".len() + 120);
    assert!(line.ends_with('…'));
}

#[test]
fn compact_user_images_as_placeholder() {
    let m = msg(json!({"role": "user", "content": [
        {"type": "text", "text": "look at this"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "text", "text": "  and this  "}
    ]}));
    assert_eq!(
        compact(&[m]),
        "**user**:\nlook at this\n[image]\n  and this\n"
    );
    let only_image = msg(json!({"role": "user", "content": [{"type": "image", "data": "AAAA"}]}));
    assert_eq!(compact(&[only_image]), "**user**:\n[image]\n");
}

#[test]
fn compact_user_text_kept_as_is_inside() {
    let out = compact(&[user("line 1\n\n    indented"), user("next")]);
    assert_eq!(out, "**user**:\nline 1\n\n    indented\n\nnext\n");
}

#[test]
fn compact_blank_user_message_renders_nothing() {
    assert_eq!(compact(&[user("  \n\t ")]), "");
    let out = compact(&[user("a"), user("   "), assistant(json!([text("b")]))]);
    assert_eq!(out, "**user**:\na\n\n**agent**:\nb\n");
}

#[test]
fn compact_redacted_thinking_only_renders_nothing() {
    let only_redacted = assistant(json!([{"type": "redactedThinking", "data": "opaque"}]));
    assert_eq!(compact(std::slice::from_ref(&only_redacted)), "");
    let blank = assistant(json!([text("  "), {"type": "thinking", "thinking": "\n"}]));
    assert_eq!(compact(&[blank]), "");
    let out = compact(&[user("hi"), only_redacted, user("again")]);
    assert_eq!(out, "**user**:\nhi\n\nagain\n");
}

#[test]
fn compact_unknown_blocks_skipped_unknown_role_shown() {
    let out = compact(&[
        assistant(json!([{"type": "sparkle", "v": 1}, text("visible")])),
        msg(json!({"role": "hologram", "payload": 1})),
        assistant(json!([text("after")])),
    ]);
    assert_eq!(
        out,
        "**agent**:\nvisible\n\n[hologram]\n\n**agent**:\nafter\n"
    );
}

#[test]
fn compact_empty_delta_is_blank() {
    assert_eq!(compact(&[]), "");
    assert_eq!(full(&[]), "");
}

#[test]
fn compact_advisory_text_from_primary_is_rendered() {
    // X2 filters by type upstream; text that looks like advice is reviewed like any other.
    let out = compact(&[assistant(json!([text("<advisory>hi</advisory>")]))]);
    assert_eq!(out, "**agent**:\n<advisory>hi</advisory>\n");
}

// ---------------------------------------------------------------------------------------
// Full view
// ---------------------------------------------------------------------------------------

#[test]
fn full_r_golden_argument_tree() {
    let args =
        json!({"command": "ls\npwd", "timeout": 5, "opts": {"a": [1, "two\nlines", {}], "b": []}});
    let out = full(&[assistant(json!([call("c", "bash", args)]))]);
    assert_eq!(
        out,
        "#### Assistant\n\n→ tool `bash`:\ncommand:\nls\npwd\ntimeout: 5\nopts:\n  a:\n    - [0] 1\n    - [1]\ntwo\nlines\n    - [2] {}\n  b: []"
    );
}

#[test]
fn full_user_thinking_and_text() {
    let out = full(&[
        user("  Please fix it  \n"),
        assistant(json!([
            {"type": "thinking", "thinking": "\n  Think first.\n"},
            {"type": "redactedThinking"},
            text("  Done.  "),
        ])),
    ]);
    assert_eq!(
        out,
        "#### User\n\nPlease fix it\n\n#### Assistant\n\n<thinking>\nThink first.\n</thinking>\n\nDone."
    );
}

#[test]
fn full_user_blocks_joined_and_blank_skipped() {
    // SPEC §3 full: blocks joined by `\n`, each image as `[image]`, trimmed.
    let m = msg(json!({"role": "user", "content": [
        {"type": "text", "text": " one"}, {"type": "image", "data": "AA"}, {"type": "text", "text": "two "}
    ]}));
    assert_eq!(full(&[m, user("  ")]), "#### User\n\none\n[image]\ntwo");
    let empty_assistant = assistant(json!([{"type": "redactedThinking"}]));
    assert_eq!(full(&[empty_assistant]), "");
}

#[test]
fn l3_full_view_shows_images_of_user_and_developer_messages() {
    let image = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
    let only_image = msg(json!({"role": "user", "content": [image]}));
    assert_eq!(full(&[only_image]), "#### User\n\n[image]");
    let dev = msg(json!({"role": "developer", "content": [
        {"type": "text", "text": "Match this mock-up:"}, image, image
    ]}));
    assert_eq!(
        full(&[dev, user("go")]),
        "#### Developer\n\nMatch this mock-up:\n[image]\n[image]\n\n#### User\n\ngo"
    );
    // A block of an unknown type still shows nothing.
    let unknown = msg(json!({"role": "user", "content": [{"type": "hologram"}]}));
    assert_eq!(full(&[unknown]), "");
}

#[test]
fn full_developer_message_gets_its_own_section() {
    let dev = msg(json!({"role": "developer", "content": " Use tabs. "}));
    assert_eq!(
        full(&[dev, user("ok")]),
        "#### Developer\n\nUse tabs.\n\n#### User\n\nok"
    );
}

#[test]
fn full_heredoc_argument_stays_multi_line() {
    let command = "cat > f.txt <<'EOF'\nline one\n  line two\nEOF";
    let out = full(&[assistant(json!([call(
        "c",
        "bash",
        json!({"command": command})
    )]))]);
    assert_eq!(
        out,
        format!("#### Assistant\n\n→ tool `bash`:\ncommand:\n{command}")
    );
    assert!(!out.contains("\\n"));
}

#[test]
fn full_edit_with_diff_has_compact_header_and_diff_body() {
    let diff = "  10 same\n- 11 old line\n+ 11 new line\n  12 same";
    let delta = [
        assistant(json!([call(
            "e",
            "edit",
            json!({
                "path": "NOTES.md",
                "edits": [{"oldText": "old line", "newText": "new line"}, {"oldText": "x", "newText": "y"}]
            })
        )])),
        msg(json!({
            "role": "toolResult", "toolCallId": "e", "toolName": "edit",
            "content": [{"type": "text", "text": "Successfully replaced 2 block(s)."}],
            "details": {"diff": diff}, "isError": false
        })),
    ];
    let out = full(&delta);
    assert_eq!(
        out,
        format!(
            "#### Assistant\n\n→ tool `edit`(NOTES.md) — 2 block(s); diff in tool result\n\n#### Tool result: `edit`\n\n{diff}"
        )
    );
    assert!(!out.contains("oldText"));
    assert!(!out.contains("Successfully replaced"));
}

#[test]
fn full_edit_without_path_uses_question_mark() {
    let delta = [
        assistant(json!([call(
            "e",
            "edit",
            json!({"edits": [{"oldText": "a", "newText": "b"}]})
        )])),
        msg(json!({
            "role": "toolResult", "toolCallId": "e", "toolName": "edit",
            "content": [], "details": {"diff": "- a\n+ b"}, "isError": false
        })),
    ];
    assert!(full(&delta).contains("→ tool `edit`(?) — 1 block(s); diff in tool result"));
}

#[test]
fn full_failed_edit_keeps_args_and_marks_error() {
    let delta = [
        assistant(json!([call(
            "e",
            "edit",
            json!({
                "path": "f.py", "edits": [{"oldText": "needle that did not match", "newText": "x"}]
            })
        )])),
        result("e", "edit", "Error: oldText not found", true),
    ];
    assert_eq!(
        full(&delta),
        "#### Assistant\n\n→ tool `edit`:\npath: f.py\nedits:\n  - [0]\n    oldText: needle that did not match\n    newText: x\n\n#### Tool result: `edit` (error)\n\nError: oldText not found"
    );
}

#[test]
fn full_large_output_not_truncated() {
    let body: String = (0..1200)
        .map(|i| format!("line {i:05} of output\n"))
        .collect();
    assert!(body.len() >= 25 * 1000);
    let out = full(&[result("r", "bash", &body, false)]);
    assert_eq!(out, format!("#### Tool result: `bash`\n\n{body}"));
}

#[test]
fn full_empty_args_render_as_bare_tool() {
    let out = full(&[assistant(json!([
        call("a", "todo_read", json!({})),
        {"type": "toolCall", "id": "b", "name": "ping"},
    ]))]);
    assert_eq!(out, "#### Assistant\n\n→ tool `todo_read`\n\n→ tool `ping`");
}

#[test]
fn full_no_text_output() {
    let image_only = msg(json!({
        "role": "toolResult", "toolCallId": "r", "toolName": "read",
        "content": [{"type": "image", "data": "AA", "mimeType": "image/png"}], "isError": false
    }));
    assert_eq!(
        full(&[image_only]),
        "#### Tool result: `read`\n\n(no text output)"
    );
    let empty_error = result("r", "bash", "", true);
    assert_eq!(
        full(&[empty_error]),
        "#### Tool result: `bash` (error)\n\n(no text output)"
    );
}

#[test]
fn full_result_text_blocks_concatenated_without_separator() {
    let m = msg(json!({
        "role": "toolResult", "toolCallId": "r", "toolName": "read",
        "content": [{"type": "text", "text": "ab"}, {"type": "text", "text": "cd"}], "isError": false
    }));
    assert_eq!(full(&[m]), "#### Tool result: `read`\n\nabcd");
}

#[test]
fn full_other_messages_use_compact_one_liners() {
    let delta = [
        bash("make", "ok", json!(0), false, false),
        bash("hidden", "", json!(0), false, true),
        msg(json!({"role": "custom", "customType": "todo", "content": "a  b"})),
        msg(json!({"role": "branchSummary", "summary": "s", "fromId": "e1"})),
        msg(json!({"role": "compactionSummary", "summary": "c"})),
        msg(json!({"role": "hologram"})),
    ];
    assert_eq!(
        full(&delta),
        "→ bash! make ⇒ ok · 1 line\n\n[todo] a b\n\n[branch] from e1: s\n\n[compaction] c\n\n[hologram]"
    );
}

// ---------------------------------------------------------------------------------------
// A real session
// ---------------------------------------------------------------------------------------

fn fixture(name: &str) -> Option<String> {
    let path = crate::support::fixtures::pi_fixture(name)?;
    Some(std::fs::read_to_string(&path).expect("vendored fixture readable"))
}

fn session_messages(text: &str) -> Vec<Arc<TranscriptMessage>> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| {
            let entry: Value = serde_json::from_str(line).expect("fixture line is JSON");
            if entry.get("type").and_then(Value::as_str) != Some("message") {
                return None;
            }
            let message = entry.get("message")?.clone();
            Some(Arc::new(
                serde_json::from_value(message).expect("message parses"),
            ))
        })
        .collect()
}

#[test]
fn renders_every_turn_delta_of_before_compaction_session() {
    let Some(text) = fixture("before-compaction.jsonl") else {
        return;
    };
    let messages = session_messages(&text);
    assert!(messages.len() > 100, "fixture holds a real session");
    // Cut the session into turn deltas: each assistant message plus the results after it.
    let mut deltas: Vec<&[Arc<TranscriptMessage>]> = Vec::new();
    let mut start = 0;
    for (i, m) in messages.iter().enumerate().skip(1) {
        if matches!(m.as_ref(), TranscriptMessage::Assistant(_)) {
            deltas.push(&messages[start..i]);
            start = i;
        }
    }
    deltas.push(&messages[start..]);
    let mut non_blank = 0;
    for delta in &deltas {
        for view in [TranscriptView::Compact, TranscriptView::Full] {
            let out = render_delta(view, delta);
            if !out.is_empty() {
                non_blank += 1;
                assert_eq!(out.trim_start(), out, "{view} rendering starts trimmed");
            }
        }
        let out = render_delta(TranscriptView::Compact, delta);
        assert!(out.is_empty() || (out.ends_with('\n') && !out.ends_with("\n\n")));
        assert!(!out.contains("⇒ pending") || delta.iter().any(|m| m.role() == "assistant"));
    }
    assert!(non_blank > deltas.len(), "most deltas render in both views");
    // The whole session as one delta (the post-reset replay) renders too.
    let whole = render_delta(TranscriptView::Compact, &messages);
    assert!(whole.starts_with("**user**:\n"));
}
