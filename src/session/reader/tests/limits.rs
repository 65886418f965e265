//! Caps, standard input, file kinds and parent loops (L1).

use super::*;

#[test]
fn l1_a_line_over_the_cap_is_skipped_with_its_number_in_every_format() {
    let long = format!("\"{}\"", "x".repeat(5_000));
    for version in [None, Some(3)] {
        let (id1, id2, id3) = if version.is_some() {
            (Some("1"), Some("2"), Some("3"))
        } else {
            (None, None, None)
        };
        let big = msg(id2, id1, json!({"role":"user","content":long}));
        let text = format!(
            "{}\n{}\n{}\n{}\n",
            header(version),
            msg(id1, None, user("a")),
            big,
            msg(id3, id1, user("b")),
        );
        let b = read_capped(text.as_bytes(), 1024);
        assert_eq!(texts(&b), ["a", "b"], "version {version:?}");
        assert_eq!(
            b.diagnostics.malformed,
            [(
                3,
                "line longer than 1024 bytes, discarded unread".to_string()
            )],
            "version {version:?}"
        );
    }
}

#[test]
fn l1_a_line_exactly_at_the_cap_is_read() {
    let line = msg(None, None, user(&format!("fits{}", " ".repeat(100)))).to_string();
    let text = format!("{}\n{line}\n", header(None));
    let b = read_capped(text.as_bytes(), line.len());
    assert_eq!(texts(&b), [format!("fits{}", " ".repeat(100))]);
    let b = read_capped(text.as_bytes(), line.len() - 1);
    assert!(texts(&b).is_empty());
    assert_eq!(b.diagnostics.malformed.len(), 1);
}

#[test]
fn l1_an_endless_line_is_discarded_in_chunks_not_buffered() {
    // A source with no newline at all (`/dev/zero` through a pipe): the line buffer
    // never grows past the cap while the reader skips it.
    let header = format!("{}\n", header(None));
    let zeros = vec![0u8; 4 << 20];
    let source = Cursor::new([header.as_bytes(), &zeros].concat());
    let mut lines = Lines::new(BufReader::with_capacity(4096, source), 1000);
    assert!(matches!(lines.next_line(), Ok(Some((1, Line::Text(_))))));
    assert!(matches!(lines.next_line(), Ok(Some((2, Line::TooLong)))));
    assert!(
        lines.buffer_capacity() <= 4096,
        "{}",
        lines.buffer_capacity()
    );
    assert!(matches!(lines.next_line(), Ok(None)));
}

#[test]
fn l1_a_header_over_the_cap_is_not_a_session() {
    let text = format!("{}\n", header(Some(3)));
    let limits = ReadLimits {
        max_line_bytes: 10,
        ..ReadLimits::default()
    };
    let err = read_session_from_with(Cursor::new(text.into_bytes()), Path::new("h"), &limits)
        .expect_err("an error");
    assert!(matches!(err, SessionError::NotASession { .. }), "{err}");
}

#[test]
fn l1_stdin_spool_cuts_long_lines_and_keeps_the_rest() {
    let long = "y".repeat(300);
    let input = format!(
        "{}\n{}\n{long}\n{}",
        header(Some(3)),
        msg(Some("1"), None, user("a")),
        msg(Some("2"), Some("1"), user("b")),
    );
    let limits = ReadLimits {
        max_line_bytes: 200,
        ..ReadLimits::default()
    };
    let trickle = Trickle {
        data: input.as_bytes(),
        step: 7,
    };
    let mut file = spool(trickle, &limits, Path::new(STDIN_NAME)).expect("spooled");
    let mut spooled = String::new();
    file.read_to_string(&mut spooled).expect("readable");
    let lines: Vec<&str> = spooled.split('\n').collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[2].len(), 201, "cut one byte past the cap");
    assert_eq!(lines[3], msg(Some("2"), Some("1"), user("b")).to_string());
    file.seek(SeekFrom::Start(0)).expect("seekable");
    let b = read_session_from_with(BufReader::new(file), Path::new(STDIN_NAME), &limits)
        .expect("a session");
    assert_eq!(texts(&b), ["a", "b"]);
    assert_eq!(b.diagnostics.malformed.len(), 1);
    assert_eq!(b.diagnostics.malformed[0].0, 3);
}

#[test]
fn l1_stdin_past_its_cap_is_an_error() {
    let limits = ReadLimits {
        max_line_bytes: 100,
        max_stdin_bytes: 1000,
        ..ReadLimits::default()
    };
    let endless = io::repeat(0);
    let err = spool(endless, &limits, Path::new(STDIN_NAME)).expect_err("an error");
    assert_eq!(err.to_string(), "standard input holds more than 1000 bytes");
}

#[test]
fn l1_only_regular_files_are_opened() {
    let dir = std::env::temp_dir();
    let err = read_session(&dir).expect_err("a directory is refused");
    assert!(matches!(err, SessionError::NotAFile { .. }), "{err}");
    assert!(err.to_string().contains("is not a regular file"), "{err}");
    #[cfg(unix)]
    {
        let err = read_session(Path::new("/dev/zero")).expect_err("a device is refused");
        assert_eq!(
            err.to_string(),
            "/dev/zero is not a regular file (sessions are read from regular files, or `-` for standard input)"
        );
    }
}

#[test]
fn l1_a_parent_loop_after_a_clean_branch_is_reported_and_the_clean_branch_read() {
    // Lines: 1 header, 2 e1, 3 e2 → e1, 4 e3 → e4, 5 e4 → e3.
    let b = read(&[
        header(Some(3)),
        msg(Some("e1"), None, user("one")),
        msg(Some("e2"), Some("e1"), user("two")),
        msg(Some("e3"), Some("e4"), user("looped a")),
        msg(Some("e4"), Some("e3"), user("looped b")),
    ]);
    assert_eq!(texts(&b), ["one", "two"]);
    assert_eq!(b.diagnostics.off_branch, 2);
    assert_eq!(
        b.diagnostics.malformed,
        [(
            4,
            "parentId loop: line 4 → line 5 → line 4; the loop is skipped and the latest \
             well-formed branch read"
                .to_string()
        )]
    );
}

#[test]
fn l1_entries_hanging_below_a_loop_are_not_well_formed_either() {
    // e5's way up runs into the loop e3 ↔ e4: the branch falls back to e2's.
    let b = read(&[
        header(Some(3)),
        msg(Some("e1"), None, user("one")),
        msg(Some("e2"), Some("e1"), user("two")),
        msg(Some("e3"), Some("e4"), user("x")),
        msg(Some("e4"), Some("e3"), user("y")),
        msg(Some("e5"), Some("e4"), user("z")),
    ]);
    assert_eq!(texts(&b), ["one", "two"]);
    assert_eq!(b.diagnostics.malformed.len(), 1);
    assert!(b.diagnostics.malformed[0]
        .1
        .starts_with("parentId loop: line 4 → line 5 → line 4;"));
}

#[test]
fn l1_a_byte_order_mark_opens_a_session_file() {
    let text = format!(
        "\u{feff}{}\n{}\n",
        header(Some(3)),
        msg(Some("1"), None, user("a"))
    );
    let b = read_text(&text);
    assert_eq!(b.header.version, 3);
    assert_eq!(texts(&b), ["a"]);
    assert!(b.diagnostics.malformed.is_empty());
    // Also before oh-my-pi's title slot, and in a version 1 file.
    let text = format!(
        "\u{feff}{}\n{}\n{}\n",
        json!({"type":"title","v":1,"title":"T","pad":" "}),
        header(None),
        msg(None, None, user("b"))
    );
    let b = read_text(&text);
    assert_eq!(b.header.title.as_deref(), Some("T"));
    assert_eq!(texts(&b), ["b"]);
}

#[test]
fn r1_reset_boundary_is_an_entry_of_the_branch_not_a_skipped_type() {
    let b = read(&[
        header(Some(3)),
        msg(Some("1"), None, user("before")),
        json!({"type":"reset_boundary","id":"2","parentId":"1","timestamp":"t"}),
        msg(Some("3"), Some("2"), user("after")),
    ]);
    assert_eq!(texts(&b), ["before", "reset", "after"]);
    assert!(
        b.diagnostics.skipped.is_empty(),
        "{:?}",
        b.diagnostics.skipped
    );
    assert_eq!(b.messages().count(), 2);
}

#[test]
fn l1_lines_taken_at_their_leading_keys_read_as_lines_checked_in_full() {
    let (fast, checked, seeks) = fast_and_checked(lines_of(&pi_tree()), &ReadLimits::default());
    assert_eq!(seeks, 1, "two passes, no third");
    assert_eq!(fast, checked);
    assert_eq!(
        texts(&fast),
        ["one", "two", "compaction>1", "odd order", "three"]
    );
    assert_eq!(fast.diagnostics.off_branch, 1);
    let lines: Vec<usize> = fast.diagnostics.malformed.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [3, 7], "{:?}", fast.diagnostics.malformed);
}

#[test]
fn l1_a_line_whose_leading_keys_mislead_is_read_again_checked_in_full() {
    let limits = ReadLimits::default();
    let misleading = [
        // The rest of the line is not JSON: on the branch, and off it.
        (pi_line("message", "h", Some("g"), r#""message":{"#), true),
        (pi_line("message", "h", Some("b"), r#""message":{"#), false),
        // A second id or parent further on.
        (
            pi_line(
                "message",
                "h",
                Some("g"),
                r#""id":"z","message":{"role":"user","content":"x"}"#,
            ),
            true,
        ),
        (pi_line("label", "h", Some("b"), r#""parentId":"a""#), false),
        // A type written twice.
        (
            pi_line("message", "h", Some("g"), r#""type":"label""#),
            true,
        ),
    ];
    // An id that is not UTF-8, on the branch and off it.
    for last in [true, false] {
        let mut text = lines_of(&pi_tree()).into_bytes();
        text.extend_from_slice(b"{\"type\":\"message\",\"id\":\"\xff\",\"parentId\":\"g\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n");
        if !last {
            text.extend_from_slice(pi_user("i", Some("g"), "last").as_bytes());
        }
        let (fast, checked, seeks) = fast_and_checked(&text, &limits);
        assert_eq!(seeks, 3, "read again, in two passes");
        assert_eq!(fast, checked);
    }
    for (line, on_branch) in misleading {
        let mut lines = pi_tree();
        lines.push(line.clone());
        if !on_branch {
            lines.push(pi_user("i", Some("g"), "last"));
        }
        let (fast, checked, seeks) = fast_and_checked(lines_of(&lines), &limits);
        assert_eq!(seeks, 3, "{line}: read again, in two passes");
        assert_eq!(fast, checked, "{line}");
        assert!(!fast.diagnostics.malformed.is_empty());
    }
}

#[test]
fn l1_every_recorded_tree_reads_the_same_taken_at_its_leading_keys() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut trees = 0;
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.expect("a readable tree");
        if entry.path().extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).expect("readable");
        let (fast, checked, _) = match read_session_from(Cursor::new(text.clone()), Path::new("f"))
        {
            Ok(b) if b.header.version >= 2 => fast_and_checked(&text, &ReadLimits::default()),
            _ => continue,
        };
        assert_eq!(fast, checked, "{}", entry.path().display());
        trees += 1;
    }
    assert!(trees >= 10, "{trees} recorded trees");
}
