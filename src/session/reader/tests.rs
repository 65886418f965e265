//! The session reader (SPEC L1): formats, branches, bad input, and the first pass's
//! shortcut against a first pass that checks every line.

use super::*;
use crate::domain::transcript::RawJson;
use serde_json::json;
use std::io::{Cursor, Read, SeekFrom};

fn read(lines: &[Value]) -> SessionBranch {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    read_text(&text)
}

fn read_text(text: &str) -> SessionBranch {
    read_session_from(Cursor::new(text.as_bytes().to_vec()), Path::new("t.jsonl"))
        .expect("a session")
}

fn header(version: Option<u32>) -> Value {
    let mut h = json!({"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"});
    if let Some(v) = version {
        h["version"] = json!(v);
    }
    h
}

fn msg(id: Option<&str>, parent: Option<&str>, message: Value) -> Value {
    let mut e = json!({"type":"message","message":message});
    if let Some(id) = id {
        e["id"] = json!(id);
        e["parentId"] = json!(parent);
    }
    e
}

fn user(text: &str) -> Value {
    json!({"role":"user","content":text})
}

fn texts(branch: &SessionBranch) -> Vec<String> {
    branch
        .entries
        .iter()
        .map(|e| match e {
            BranchEntry::Message(m) => match m.as_ref() {
                TranscriptMessage::User(u) => u.content.joined_text("", false),
                m => m.role().to_string(),
            },
            BranchEntry::Compaction { first_kept, .. } => format!("compaction>{first_kept}"),
            BranchEntry::ResetBoundary => "reset".to_string(),
        })
        .collect()
}

fn read_capped(text: &[u8], max_line_bytes: usize) -> SessionBranch {
    let limits = ReadLimits {
        max_line_bytes,
        ..ReadLimits::default()
    };
    read_session_from_with(Cursor::new(text.to_vec()), Path::new("t.jsonl"), &limits)
        .expect("a session")
}

/// A reader that hands out at most `step` bytes per call, as a pipe does.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.data.len().min(self.step).min(out.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn l1_version1_is_a_linear_chain() {
    let b = read(&[
        header(None),
        msg(None, None, user("a")),
        json!({"type":"model_change","provider":"p","modelId":"m"}),
        msg(None, None, user("b")),
    ]);
    assert_eq!(b.header.version, 1);
    assert_eq!(b.header.id.as_deref(), Some("s1"));
    assert_eq!(texts(&b), ["a", "b"]);
    assert_eq!(b.diagnostics.skipped.get("model_change"), Some(&1));
    assert_eq!(b.diagnostics.off_branch, 0);
}

#[test]
fn l1_version1_compaction_index_counts_the_header_as_entry_zero() {
    // Entries: 0 header, 1 "a", 2 thinking change, 3 "b", 4 "c", 5 compaction → keep from 3.
    let b = read(&[
        header(None),
        msg(None, None, user("a")),
        json!({"type":"thinking_level_change","thinkingLevel":"high"}),
        msg(None, None, user("b")),
        msg(None, None, user("c")),
        json!({"type":"compaction","summary":"s","firstKeptEntryIndex":3,"tokensBefore":9}),
        msg(None, None, user("d")),
    ]);
    assert_eq!(texts(&b), ["a", "b", "c", "compaction>1", "d"]);
    match &b.entries[3] {
        BranchEntry::Compaction {
            summary,
            tokens_before,
            ..
        } => {
            assert_eq!(summary, "s");
            assert_eq!(*tokens_before, Some(9));
        }
        other => panic!("not a compaction: {other:?}"),
    }
}

#[test]
fn l1_version1_compaction_index_skips_blank_and_broken_lines_but_counts_typeless_json() {
    // Line 3 is broken (not counted), line 4 is JSON without a type (counted, as pi
    // counted every line JSON.parse accepted): entries 0 header, 1 "a", 2 typeless,
    // 3 "b", 4 compaction → keep from "b".
    let text = format!(
        "{}\n{}\n{{oops\n{}\n\n{}\n{}\n",
        header(None),
        msg(None, None, user("a")),
        json!({"note":"no type"}),
        msg(None, None, user("b")),
        json!({"type":"compaction","summary":"s","firstKeptEntryIndex":3}),
    );
    let b = read_text(&text);
    assert_eq!(texts(&b), ["a", "b", "compaction>1"]);
    let lines: Vec<usize> = b.diagnostics.malformed.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [3, 4]);
}

#[test]
fn l1_version1_compaction_pointing_at_the_header_keeps_nothing() {
    let b = read(&[
        header(None),
        msg(None, None, user("a")),
        json!({"type":"compaction","summary":"s","firstKeptEntryIndex":0}),
    ]);
    assert_eq!(texts(&b), ["a", "compaction>1"]);
}

#[test]
fn l1_tree_branch_is_the_path_from_the_last_entry_to_the_root() {
    let b = read(&[
        header(Some(3)),
        msg(Some("r"), None, user("root")),
        msg(Some("x"), Some("r"), user("abandoned 1")),
        msg(Some("y"), Some("x"), user("abandoned 2")),
        msg(Some("z"), Some("r"), user("kept")),
        json!({"type":"label","id":"l","parentId":"z","targetId":"r","label":"start"}),
    ]);
    assert_eq!(texts(&b), ["root", "kept"]);
    assert_eq!(b.diagnostics.off_branch, 2);
    assert_eq!(b.diagnostics.skipped.get("label"), Some(&1));
}

#[test]
fn l1_tree_compaction_by_id_resolves_to_a_branch_index() {
    let b = read(&[
        header(Some(2)),
        msg(Some("1"), None, user("a")),
        json!({"type":"model_change","id":"2","parentId":"1","provider":"p","modelId":"m"}),
        msg(Some("3"), Some("2"), user("b")),
        json!({"type":"compaction","id":"4","parentId":"3","summary":"s","firstKeptEntryId":"2"}),
        msg(Some("5"), Some("4"), user("c")),
    ]);
    // The kept entry is a model change (no message): keeping starts at the next entry.
    assert_eq!(texts(&b), ["a", "b", "compaction>1", "c"]);
}

#[test]
fn l1_tree_compaction_kept_ids_are_matched_as_read_escapes_and_all() {
    // The second pass remembers only the ids compactions name (the ids the first pass collected); an id
    // written with an escape on either side is the same id.
    let text = format!(
        "{}\n{}\n{}\n{}\n{}\n{}\n",
        header(Some(3)),
        msg(Some("k1"), None, user("a")),
        r#"{"type":"message","id":"k\u0032","parentId":"k1","message":{"role":"user","content":"b"}}"#,
        msg(Some("k3"), Some("k2"), user("c")),
        r#"{"type":"compaction","id":"k4","parentId":"k3","summary":"s","firstKeptEntryId":"\u006b3"}"#,
        r#"{"type":"compaction","id":"k5","parentId":"k4","summary":"t","firstKeptEntryId":"k2"}"#,
    );
    let b = read_text(&text);
    assert_eq!(texts(&b), ["a", "b", "c", "compaction>2", "compaction>1"]);
}

#[test]
fn l1_tree_compaction_whose_kept_entry_is_off_the_branch_keeps_nothing() {
    let b = read(&[
        header(Some(3)),
        msg(Some("1"), None, user("a")),
        msg(Some("2"), Some("1"), user("side")),
        json!({"type":"compaction","id":"3","parentId":"1","summary":"s","firstKeptEntryId":"2"}),
    ]);
    assert_eq!(texts(&b), ["a", "compaction>1"]);
}

#[test]
fn l1_malformed_lines_are_reported_with_their_line_number_and_skipped() {
    let text = format!(
        "{}\n{}\nnot json at all\n{}\n{}\n{}\n",
        header(Some(3)),
        msg(Some("1"), None, user("a")),
        json!({"id":"2","parentId":"1"}),
        json!({"type":"message","parentId":"1","message":user("no id")}),
        msg(Some("3"), Some("1"), user("b")),
    );
    let b = read_text(&text);
    assert_eq!(texts(&b), ["a", "b"]);
    let m = &b.diagnostics.malformed;
    assert_eq!(m.len(), 3, "{m:?}");
    assert_eq!(m[0].0, 3);
    assert!(m[0].1.contains("invalid JSON"), "{}", m[0].1);
    assert_eq!(m[1], (4, "entry has no \"type\"".to_string()));
    assert_eq!(m[2], (5, "entry has no \"id\"".to_string()));
}

/// The odd values no `Value` holds: a number past `f64`'s range, a lone surrogate
/// escape, a raw byte that is not UTF-8.
const ODD_VALUES: [&[u8]; 3] = [b"1e400", b"\"\\ud800\"", b"\"a\xffb\""];

#[test]
fn l1_an_unknown_header_field_never_refuses_the_file() {
    for odd in ODD_VALUES {
        for version in [1u32, 3] {
            let mut text = br#"{"type":"title","v":1,"title":"T","x":"#.to_vec();
            text.extend_from_slice(odd);
            text.extend_from_slice(b"}\n");
            text.extend_from_slice(
                format!(r#"{{"type":"session","version":{version},"id":"s","cwd":"/w","x":"#)
                    .as_bytes(),
            );
            text.extend_from_slice(odd);
            text.extend_from_slice(b"}\n");
            text.extend_from_slice(format!("{}\n", pi_user("a1", None, "hi")).as_bytes());
            let (fast, checked, _) = fast_and_checked(&text, &ReadLimits::default());
            let odd = String::from_utf8_lossy(odd);
            assert_eq!(texts(&fast), ["hi"], "{odd} v{version}");
            assert_eq!(fast.header.cwd.as_deref(), Some("/w"), "{odd}");
            assert_eq!(fast.header.title.as_deref(), Some("T"), "{odd}");
            assert!(fast.diagnostics.malformed.is_empty(), "{odd}");
            assert_eq!(texts(&checked), texts(&fast), "{odd}");
        }
    }
}

#[test]
fn l1_an_unknown_field_never_refuses_an_entry_line() {
    for odd in ODD_VALUES {
        let mut lines = vec![format!("{}", header(Some(3))).into_bytes()];
        let mut user_line = pi_user("a1", None, "hi").into_bytes();
        user_line.pop();
        user_line.extend_from_slice(b",\"x\":");
        user_line.extend_from_slice(odd);
        user_line.push(b'}');
        lines.push(user_line);
        let mut skipped = br#"{"type":"model_change","id":"a2","parentId":"a1","x":"#.to_vec();
        skipped.extend_from_slice(odd);
        skipped.push(b'}');
        lines.push(skipped);
        lines.push(pi_user("a3", Some("a2"), "there").into_bytes());
        let text = lines.join(&b'\n');
        let (fast, checked, _) = fast_and_checked(&text, &ReadLimits::default());
        let odd = String::from_utf8_lossy(odd);
        assert_eq!(texts(&fast), ["hi", "there"], "{odd}");
        assert!(
            fast.diagnostics.malformed.is_empty(),
            "{odd}: {:?}",
            fast.diagnostics
        );
        assert_eq!(texts(&checked), texts(&fast), "{odd}");
    }
}

#[test]
fn l1_a_used_field_no_value_holds_is_a_malformed_line_reported_by_number() {
    // Tool-call arguments are read as a value (the transcript's types hold them), so a
    // number past f64's range there makes the line unreadable: reported and skipped,
    // the lines around it read, in every way the reader reads a line.
    let call = r#"{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{"n":1e400}}],"stopReason":"toolUse"}"#;
    let text = lines_of(&[
        header(Some(3)).to_string(),
        pi_user("a1", None, "hi"),
        pi_line("message", "a2", Some("a1"), &format!(r#""message":{call}"#)),
        pi_user("a3", Some("a2"), "there"),
    ]);
    let (fast, checked, _) = fast_and_checked(&text, &ReadLimits::default());
    for branch in [&fast, &checked] {
        assert_eq!(texts(branch), ["hi", "there"]);
        let m = &branch.diagnostics.malformed;
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0].0, 3, "{m:?}");
    }
}

#[test]
fn l1_a_truncated_last_line_is_malformed() {
    let full = msg(Some("2"), Some("1"), user("cut off")).to_string();
    let text = format!(
        "{}\n{}\n{}",
        header(Some(3)),
        msg(Some("1"), None, user("a")),
        &full[..full.len() / 2]
    );
    let b = read_text(&text);
    assert_eq!(texts(&b), ["a"]);
    assert_eq!(b.diagnostics.malformed.len(), 1);
    assert_eq!(b.diagnostics.malformed[0].0, 3);
    assert!(b.diagnostics.malformed[0].1.starts_with("truncated JSON"));
}

#[test]
fn l1_an_entry_of_the_wrong_shape_on_the_branch_is_malformed() {
    let b = read(&[
        header(Some(3)),
        msg(Some("1"), None, user("a")),
        json!({"type":"compaction","id":"2","parentId":"1","summary":42}),
        msg(Some("3"), Some("2"), json!("not an object")),
        msg(Some("4"), Some("3"), user("b")),
    ]);
    assert_eq!(texts(&b), ["a", "b"]);
    let lines: Vec<usize> = b.diagnostics.malformed.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [3, 4]);
}

#[test]
fn l1_every_recorded_line_the_fast_way_reads_it_reads_as_the_general_way_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixtures").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 10, "{files:?}");
    let (mut fast, mut total) = (0usize, 0usize);
    let mut scratch = Scratch::default();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a fixture");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            total += 1;
            let general = serde_json::from_str::<RawEntry>(line)
                .ok()
                .and_then(general);
            if let Some(entry) = fast_entry(line.as_bytes(), &mut scratch) {
                fast += 1;
                assert_eq!(Some(entry), general, "{}: {line}", path.display());
            }
        }
    }
    // Nearly every line is of a shape the fast way knows.
    assert!(
        fast * 100 >= total * 95,
        "{fast} of {total} lines read the fast way"
    );
}

#[test]
fn l1_oh_my_pi_title_slot_precedes_the_header() {
    let b = read(&[
        json!({"type":"title","v":1,"title":"Fix flaky test","pad":"    "}),
        header(Some(3)),
        json!({"type":"mode_change","id":"1","parentId":null,"mode":"plan"}),
        json!({"type":"ttsr_injection","id":"2","parentId":"1","injectedRules":["r"]}),
        msg(Some("3"), Some("2"), user("go")),
    ]);
    assert_eq!(b.header.title.as_deref(), Some("Fix flaky test"));
    assert_eq!(texts(&b), ["go"]);
    assert_eq!(b.diagnostics.skipped.get("mode_change"), Some(&1));
    assert_eq!(b.diagnostics.skipped.get("ttsr_injection"), Some(&1));
}

#[test]
fn l1_extension_entries_become_messages_or_are_skipped() {
    let b = read(&[
        header(Some(3)),
        json!({"type":"custom_message","id":"1","parentId":null,"customType":"note",
               "content":[{"type":"text","text":"hi"}],"display":true,"details":{"k":1}}),
        json!({"type":"custom","id":"2","parentId":"1","customType":"state","data":{}}),
        json!({"type":"branch_summary","id":"3","parentId":"2","fromId":"9","summary":"tried X"}),
        json!({"type":"branch_summary","id":"4","parentId":"3","fromId":"9","summary":""}),
        json!({"type":"session_info","id":"5","parentId":"4","name":"work"}),
        json!({"type":"brand_new_kind","id":"6","parentId":"5"}),
    ]);
    assert_eq!(b.entries.len(), 2);
    match b.entries[0].message() {
        Some(TranscriptMessage::Custom(c)) => {
            assert_eq!(c.custom_type, "note");
            assert_eq!(c.content.joined_text("", false), "hi");
            assert!(c.display);
            assert_eq!(
                c.details.as_ref().map(RawJson::to_value),
                Some(json!({"k":1}))
            );
        }
        other => panic!("not a custom message: {other:?}"),
    }
    match b.entries[1].message() {
        Some(TranscriptMessage::BranchSummary(s)) => {
            assert_eq!(s.summary, "tried X");
            assert_eq!(s.from_id, "9");
        }
        other => panic!("not a branch summary: {other:?}"),
    }
    let skipped = std::collections::BTreeMap::from(
        [
            ("branch_summary", 1),
            ("brand_new_kind", 1),
            ("custom", 1),
            ("session_info", 1),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    );
    assert_eq!(b.diagnostics.skipped, skipped);
}

#[test]
fn l1_version2_hook_message_role_is_read_as_custom() {
    let b = read(&[
        header(Some(2)),
        msg(
            Some("1"),
            None,
            json!({"role":"hookMessage","customType":"reminder","content":"x","display":false}),
        ),
    ]);
    match b.entries[0].message() {
        Some(TranscriptMessage::Custom(c)) => {
            assert_eq!(c.custom_type, "reminder")
        }
        other => panic!("not custom: {other:?}"),
    }
}

#[test]
fn l1_unknown_roles_are_kept_opaque() {
    let b = read(&[
        header(Some(3)),
        msg(Some("1"), None, json!({"role":"hologram","x":1})),
    ]);
    assert!(matches!(
        b.entries[0].message(),
        Some(TranscriptMessage::Unknown { role, .. }) if role == "hologram"
    ));
}

#[test]
fn l1_a_parent_cycle_does_not_hang() {
    let b = read(&[
        header(Some(3)),
        msg(Some("a"), Some("b"), user("one")),
        msg(Some("b"), Some("a"), user("two")),
    ]);
    assert_eq!(texts(&b), ["one", "two"]);
}

#[test]
fn l1_crlf_and_blank_lines_are_tolerated() {
    let text = format!(
        "\r\n{}\r\n\r\n{}\r\n",
        header(Some(3)),
        msg(Some("1"), None, user("a"))
    );
    let b = read_text(&text);
    assert_eq!(texts(&b), ["a"]);
    assert!(b.diagnostics.malformed.is_empty());
}

#[test]
fn l1_empty_and_headerless_files_are_errors() {
    let err = |text: &str| {
        read_session_from(Cursor::new(text.as_bytes().to_vec()), Path::new("x.jsonl"))
            .expect_err("an error")
            .to_string()
    };
    assert_eq!(err(""), "x.jsonl is empty");
    assert_eq!(err("\n  \n"), "x.jsonl is empty");
    assert_eq!(
        err("{\"type\":\"message\"}\n"),
        "x.jsonl is not a session file (no session header in its first lines)"
    );
    assert_eq!(
        err("hello world\n"),
        "x.jsonl is not a session file (no session header in its first lines)"
    );
}

#[test]
fn l1_missing_file_names_the_path() {
    let e = read_session(Path::new("/nonexistent/dir/s.jsonl")).expect_err("an error");
    assert!(e
        .to_string()
        .starts_with("cannot read /nonexistent/dir/s.jsonl: "));
}

#[test]
fn l1_newer_versions_are_read_as_trees() {
    let b = read(&[
        header(Some(7)),
        msg(Some("1"), None, user("a")),
        msg(Some("2"), None, user("b")),
    ]);
    assert_eq!(b.header.version, NEWEST_VERSION);
    assert_eq!(texts(&b), ["b"]);
}

/// A buffered source that counts its seeks: each pass after the first starts with one.
struct CountedSeeks {
    inner: Cursor<Vec<u8>>,
    seeks: std::rc::Rc<std::cell::Cell<usize>>,
}

impl Read for CountedSeeks {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.inner.read(out)
    }
}

impl BufRead for CountedSeeks {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.inner.consume(n)
    }
}

impl Seek for CountedSeeks {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.seeks.set(self.seeks.get() + 1);
        self.inner.seek(to)
    }
}

/// The file read as the reader reads it, and with every line checked in full by the
/// first pass; how many times the first read rewound.
fn fast_and_checked(
    text: impl AsRef<[u8]>,
    limits: &ReadLimits,
) -> (SessionBranch, SessionBranch, usize) {
    let text = text.as_ref();
    let seeks = std::rc::Rc::new(std::cell::Cell::new(0));
    let source = CountedSeeks {
        inner: Cursor::new(text.to_vec()),
        seeks: seeks.clone(),
    };
    let path = Path::new("t.jsonl");
    let fast = read_from(source, path, limits, true).expect("a session");
    let checked = read_from(Cursor::new(text.to_vec()), path, limits, false).expect("a session");
    (fast, checked, seeks.get())
}

fn lines_of(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// An entry line as pi writes it: type, id and parent first.
fn pi_line(kind: &str, id: &str, parent: Option<&str>, rest: &str) -> String {
    format!(
        r#"{{"type":"{kind}","id":"{id}","parentId":{},{rest}}}"#,
        json!(parent)
    )
}

fn pi_user(id: &str, parent: Option<&str>, text: &str) -> String {
    pi_line(
        "message",
        id,
        parent,
        &format!(r#""message":{}"#, user(text)),
    )
}

/// A branched file written the way pi writes it, with everything the first pass and the
/// second have to record: malformed lines, a compaction by id, skipped entries.
fn pi_tree() -> Vec<String> {
    vec![
        header(Some(3)).to_string(),
        pi_user("a", None, "one"),
        "{not json".to_string(),
        pi_user("b", Some("a"), "two"),
        pi_user("x", Some("b"), "abandoned"),
        pi_line("model_change", "c", Some("b"), r#""provider":"p""#),
        pi_line("message", "d", Some("c"), r#""message":5"#),
        pi_line(
            "compaction",
            "e",
            Some("d"),
            r#""summary":"s","firstKeptEntryId":"b","tokensBefore":3"#,
        ),
        json!({"type":"message","id":"f","parentId":"e","message":user("odd order")}).to_string(),
        pi_user("g", Some("f"), "three"),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    /// Trees written the way pi writes them, with the odd misleading, broken or
    /// reordered line: taken at their leading keys, they read as checked in full.
    #[test]
    fn l1_leading_keys_never_change_what_is_read(
        steps in proptest::collection::vec((0u8..24, 0u8..8, 0u8..8), 0..24)
    ) {
        let mut lines = vec![header(Some(3)).to_string()];
        for (n, (kind, a, b)) in steps.into_iter().enumerate() {
            let id = if kind == 23 { format!("e{a}") } else { format!("e{n}") };
            let parent = match (n, b) {
                (0, _) | (_, 0) => None,
                (_, 1..=5) => Some(format!("e{}", n - 1)),
                _ => Some(format!("e{a}")),
            };
            let p = parent.as_deref();
            let line = match kind {
                16 => pi_line("compaction", &id, p, &format!(r#""summary":"s","firstKeptEntryId":"e{a}""#)),
                17 => "[1,".to_string(),
                18 => pi_line("message", &id, p, r#""message":{"#),
                19 => pi_line("message", &id, p, &format!(r#""id":"e{a}","message":{{"role":"user","content":"d"}}"#)),
                20 => pi_line("message", &id, p, &format!(r#""parentId":"e{a}","message":{{"role":"user","content":"d"}}"#)),
                21 => pi_line("label", &id, p, r#""label":"\x""#),
                22 => json!({"type":"message","id":id,"parentId":parent,"message":user("r")}).to_string(),
                _ => pi_user(&id, p, &format!("t{n}")),
            };
            lines.push(line);
        }
        let (fast, checked, _) = fast_and_checked(lines_of(&lines), &ReadLimits::default());
        proptest::prop_assert_eq!(fast, checked);
    }
}

mod limits;
