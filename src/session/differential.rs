//! The differential check of the reader's fast way against its general way (SPEC L1), for
//! the tests and the fuzz target (`fuzz/`, built with the `fuzzing` feature): whatever bytes
//! a line holds, the hand-written reader (`session::direct`) either gives up or reads what
//! the general way (`session::entry`) reads, from the line's start as from after its
//! leading keys, and the first pass's grammar check (`session::skim`) reads what serde_json
//! reads; whatever bytes a file holds, reading it with the first pass's shortcut gives what
//! reading it with every line checked gives. A disagreement is an `Err` naming it.

use std::io::Cursor;
use std::path::Path;

use super::diagnostics::ReadLimits;
use super::direct::{self, Scratch};
use super::entry::EntryFields;
use super::skim::{leading, skim};
use super::tree::Skim;

/// How the fast way fared with one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Read by hand, as the general way reads it.
    Agreed,
    /// Read by hand where the general way refuses the line, for a value inside the message
    /// that its tree of the message cannot hold in a member the reader does not use (a
    /// number past `f64`, a lone surrogate escape): skipped unread, as SPEC L1 says.
    Skipped,
    /// Left to the general way.
    GaveUp,
}

/// Checks one line (no line break in it) both ways; `Err` says how they disagree.
pub fn check_line(bytes: &[u8]) -> Result<Verdict, String> {
    check_skim(bytes)?;
    // One scratch for both reads: what the first leaves behind must not change the second.
    let mut scratch = Scratch::default();
    let fast = direct::entry(bytes, &mut scratch);
    if let Some(lead) = leading(bytes) {
        if bytes.get(lead.end()) != Some(&b',') {
            return Err("the leading keys end elsewhere than at a comma".into());
        }
        let after = direct::entry_after(bytes, &lead, &mut scratch);
        if after != fast {
            return Err(format!(
                "from after the leading keys: {after:?}; from the start: {fast:?}"
            ));
        }
    }
    let Some((entry, parent)) = fast else {
        return Ok(Verdict::GaveUp);
    };
    let general = match serde_json::from_slice::<EntryFields>(bytes) {
        Ok(fields) => fields.into_entry(),
        Err(e) if skipped_unread(bytes, &e) => return Ok(Verdict::Skipped),
        Err(e) => {
            return Err(format!(
                "the general way refuses it ({e}); by hand: {entry:?}"
            ))
        }
    };
    if general.as_ref() != Some(&entry) {
        return Err(format!("by hand: {entry:?}; the general way: {general:?}"));
    }
    let tree = serde_json::from_slice::<Skim>(bytes).map_err(|e| e.to_string())?;
    if tree.parent_id.as_deref() != parent.as_deref() {
        return Err(format!(
            "parent by hand {parent:?}, by serde {:?}",
            tree.parent_id
        ));
    }
    Ok(Verdict::Agreed)
}

/// Whether the general way's refusal `e` is one the fast way may overrule: the line is
/// JSON, and the refusal is of a value serde_json's tree cannot hold.
fn skipped_unread(bytes: &[u8], e: &serde_json::Error) -> bool {
    let message = e.to_string();
    let value_refused = [
        "number out of range",
        "surrogate",
        "hex escape",
        "invalid unicode code point",
    ]
    .iter()
    .any(|m| message.contains(m));
    value_refused && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// Whenever the first pass's grammar check answers, serde_json reads the same type, id
/// and parent.
fn check_skim(bytes: &[u8]) -> Result<(), String> {
    let Some(fast) = std::str::from_utf8(bytes).ok().and_then(skim) else {
        return Ok(());
    };
    match serde_json::from_slice::<Skim>(bytes) {
        Ok(r)
            if r.kind.as_deref() == Some(fast.kind)
                && r.id.as_deref() == fast.id
                && r.parent_id.as_deref() == fast.parent =>
        {
            Ok(())
        }
        Ok(_) => Err(format!("skimmed {fast:?}, serde reads otherwise")),
        Err(e) => Err(format!("skimmed {fast:?}, serde refuses: {e}")),
    }
}

/// Reads `text` as a session file twice, taking lines at their leading keys and checking
/// every line in the first pass; `Err` when the two differ. A file that is no session
/// (no header) is fine either way, as long as both ways say so.
pub fn check_file(text: &[u8]) -> Result<(), String> {
    let path = Path::new("fuzz.jsonl");
    let limits = ReadLimits::default();
    let fast = super::reader::read_from(Cursor::new(text), path, &limits, true);
    let checked = super::reader::read_from(Cursor::new(text), path, &limits, false);
    match (fast, checked) {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        (Err(a), Err(b)) if a.to_string() == b.to_string() => Ok(()),
        (a, b) => Err(format!("taken at leading keys: {a:?}; checked: {b:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Lines as pi and oh-my-pi write them, one of each shape the reader knows.
    const LINES: [&str; 9] = [
        r#"{"type":"message","id":"a1","parentId":"a0","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"hi \"x\" \u00e9 \ud83d\ude00\n"},{"type":"image","data":"AAA","mimeType":"image/png"}],"timestamp":1}}"#,
        r#"{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"thinking","thinking":"t\tu","thinkingSignature":"s"},{"type":"text","text":"a"},{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"a","n":[1,2.5,-3e2,null,true],"o":{}}}],"api":"x","usage":{"input":3,"output":4,"cacheRead":5,"cacheWrite":6,"totalTokens":18,"cost":{"input":0.1,"total":0.30000000000000004}},"stopReason":"toolUse","timestamp":1767225600000}}"#,
        r#"{"type":"message","id":"a3","parentId":"a2","message":{"role":"toolResult","toolCallId":"c1","toolName":"edit","content":[{"type":"text","text":"ok"}],"details":{"diff":"-1 a\n+1 b"},"isError":false,"timestamp":3}}"#,
        r#"{"type":"message","id":"a4","parentId":"a3","message":{"role":"bashExecution","command":"ls","output":"a","exitCode":0,"cancelled":false,"truncated":false}}"#,
        r#"{"type":"compaction","id":"a5","parentId":"a4","summary":"s","firstKeptEntryId":"a2","tokensBefore":5}"#,
        r#"{"type":"custom_message","id":"a6","parentId":"a5","customType":"advisor","content":"x","display":true,"details":{"k":[1]}}"#,
        r#"{"type":"branch_summary","id":"a7","parentId":"a6","summary":"s","fromId":"a1"}"#,
        r#"{"type":"model_change","id":"a8","parentId":"a7","provider":"p","modelId":"m"}"#,
        r#"{"type":"message","id":"a9","parentId":"a8","message":{"role":"developer","content":"d"}}"#,
    ];

    /// Values that are odd in one way or another: huge numbers, wrong types, escapes serde
    /// refuses, bytes that are not UTF-8, deep nesting.
    fn odd_value() -> impl Strategy<Value = Vec<u8>> {
        let fixed: Vec<&[u8]> = vec![
            b"1e400",
            b"-1e400",
            b"18446744073709551615",
            b"18446744073709551616",
            b"123456789012345678901234567890",
            b"-0",
            b"1.5",
            b"0.1e-400",
            b"null",
            b"true",
            b"\"\"",
            b"\"\\ud800\"",
            b"\"\\udc00\"",
            b"\"\\ud83d\\ude00\"",
            b"\"\\u0000\"",
            b"\"\xff\"",
            b"\"\xc3\"",
            b"[]",
            b"{}",
            b"[1,{\"type\":\"text\",\"text\":\"t\"}]",
            b"{\"role\":\"user\"}",
            b"{\"total\":1e400}",
        ];
        prop_oneof![
            proptest::sample::select(fixed).prop_map(<[u8]>::to_vec),
            (1usize..140, proptest::bool::ANY).prop_map(|(depth, object)| {
                let (open, close) = if object {
                    (r#"{"a":"#, "}")
                } else {
                    ("[", "]")
                };
                format!("{}0{}", open.repeat(depth), close.repeat(depth)).into_bytes()
            }),
            proptest::collection::vec(any::<u8>(), 0..6),
        ]
    }

    /// One change to a line.
    #[derive(Debug, Clone)]
    enum Mutation {
        /// Cut the line at this offset.
        Truncate(usize),
        /// Set the byte at this offset.
        Byte(usize, u8),
        /// Put this value in place of the value after the n-th colon.
        Value(usize, Vec<u8>),
        /// Put these bytes in at this offset.
        Insert(usize, Vec<u8>),
    }

    fn mutation() -> impl Strategy<Value = Mutation> {
        prop_oneof![
            (0usize..400).prop_map(Mutation::Truncate),
            (0usize..400, any::<u8>()).prop_map(|(at, b)| Mutation::Byte(at, b)),
            (0usize..40, odd_value()).prop_map(|(n, v)| Mutation::Value(n, v)),
            (0usize..400, odd_value()).prop_map(|(at, v)| Mutation::Insert(at, v)),
        ]
    }

    fn apply(line: &mut Vec<u8>, mutation: &Mutation) {
        let len = line.len().max(1);
        match mutation {
            Mutation::Truncate(at) => line.truncate(at % len),
            Mutation::Byte(at, b) => {
                if let Some(slot) = line.get_mut(at % len) {
                    *slot = *b;
                }
            }
            Mutation::Insert(at, bytes) => {
                let at = at % (line.len() + 1);
                line.splice(at..at, bytes.iter().copied());
            }
            Mutation::Value(n, bytes) => {
                let colons: Vec<usize> = (1..line.len())
                    .filter(|&i| line[i] == b':' && line[i - 1] == b'"')
                    .collect();
                let Some(&colon) = colons.get(n % colons.len().max(1)) else {
                    return;
                };
                let start = colon + 1;
                // The value up to the next comma or closing bracket (a container's first
                // member only: a broken line is a mutation too).
                let end = line[start..]
                    .iter()
                    .position(|&b| matches!(b, b',' | b'}' | b']'))
                    .map_or(line.len(), |i| start + i);
                line.splice(start..end, bytes.iter().copied());
            }
        }
    }

    #[test]
    fn l1_every_shape_pi_writes_is_read_by_hand_as_the_general_way_reads_it() {
        let mut by_hand = 0;
        for line in LINES {
            let verdict = check_line(line.as_bytes()).unwrap_or_else(|e| panic!("{line}\n{e}"));
            by_hand += usize::from(verdict == Verdict::Agreed);
        }
        assert_eq!(by_hand, LINES.len());
    }

    #[test]
    fn l1_a_value_the_message_tree_cannot_hold_is_skipped_unread_by_hand() {
        // An unused member of the message holding a number past f64: skipped by hand,
        // refused by the general way's tree of the message; in a used member, both refuse.
        let skipped = r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x","x":1e400}}"#;
        assert_eq!(check_line(skipped.as_bytes()), Ok(Verdict::Skipped));
        for message in [
            r#"{"role":"custom","customType":"x","content":[{"type":"text","text":"t","x":"\ud800"}]}"#,
            r#"{"role":"bashExecution","command":"ls","x":[-1e400]}"#,
            r#"{"role":"branchSummary","summary":"s","x":{"y":"\udc00"}}"#,
            r#"{"role":"compactionSummary","summary":"s","x":1e999}"#,
        ] {
            let line =
                format!(r#"{{"type":"message","id":"a","parentId":null,"message":{message}}}"#);
            assert_eq!(check_line(line.as_bytes()), Ok(Verdict::Skipped), "{line}");
        }
        let used = r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{"n":1e400}}]}}"#;
        assert_eq!(check_line(used.as_bytes()), Ok(Verdict::GaveUp));
        // A disagreement is reported, not hidden: a line the general way refuses for
        // another reason is no skipped value.
        let cut = b"[1e400";
        let refused = serde_json::from_slice::<serde_json::Value>(cut).expect_err("refused");
        assert!(
            refused.to_string().contains("number out of range"),
            "{refused}"
        );
        assert!(!skipped_unread(cut, &refused));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Lines pi writes, cut, with bytes changed (not UTF-8 included), values put in
        /// the place of others (wrong types, huge numbers, lone surrogates, deep nesting)
        /// or bytes put in: the hand-written reader never panics and never reads a line
        /// otherwise than the general way.
        #[test]
        fn l1_mutated_pi_lines_read_by_hand_as_the_general_way_reads_them(
            which in 0usize..LINES.len(),
            mutations in proptest::collection::vec(mutation(), 1..4),
        ) {
            let mut line = LINES[which].as_bytes().to_vec();
            for m in &mutations {
                apply(&mut line, m);
            }
            line.retain(|&b| b != b'\n');
            if let Err(e) = check_line(&line) {
                return Err(TestCaseError::fail(format!("{}\n{e}", String::from_utf8_lossy(&line))));
            }
        }

        /// Any bytes at all, as a line and as a file after a header.
        #[test]
        fn l1_arbitrary_bytes_never_split_the_two_ways(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let line: Vec<u8> = bytes.iter().copied().filter(|&b| b != b'\n').collect();
            prop_assert!(check_line(&line).is_ok(), "{:?}", check_line(&line));
            let mut file = br#"{"type":"session","version":3,"id":"s","cwd":"/w"}"#.to_vec();
            file.push(b'\n');
            file.extend_from_slice(&bytes);
            prop_assert!(check_file(&file).is_ok(), "{:?}", check_file(&file));
        }

        /// Files of mutated lines: read taken at the leading keys as checked in full.
        #[test]
        fn l1_files_of_mutated_lines_read_alike_both_ways(
            lines in proptest::collection::vec(
                (0usize..LINES.len(), proptest::collection::vec(mutation(), 0..2)),
                1..8,
            ),
        ) {
            let mut file = br#"{"type":"session","version":3,"id":"s","cwd":"/w"}"#.to_vec();
            for (which, mutations) in lines {
                let mut line = LINES[which].as_bytes().to_vec();
                for m in &mutations {
                    apply(&mut line, m);
                }
                line.retain(|&b| b != b'\n');
                file.push(b'\n');
                file.extend_from_slice(&line);
            }
            prop_assert!(check_file(&file).is_ok(), "{:?}", check_file(&file));
        }
    }
}
