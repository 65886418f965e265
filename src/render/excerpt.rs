//! Head-and-tail excerpts and fenced blocks of the expanded view (SPEC §3 Expanded,
//! "Excerpts"): a body within both limits is kept whole; otherwise whole lines are taken
//! from the start and from the end, and a marker says what was left out.
//!
//! All budgets are UTF-8 bytes; every cut falls on a character boundary, so the output is
//! always valid UTF-8. Work is linear in the body, and only the kept windows are copied.

use std::fmt::Write as _;

/// A fenced block is at most this many bytes, its fences and info string included.
pub const BLOCK_MAX_BYTES: usize = 8192;
/// Lines a tool result (or the ask input) keeps.
pub const RESULT_MAX_LINES: usize = 80;
/// Lines a diff keeps.
pub const DIFF_MAX_LINES: usize = 300;
/// Bytes each string value of the ask input keeps.
pub const ASK_STRING_MAX_BYTES: usize = 2048;
/// Lines each string value of the ask input keeps.
pub const ASK_STRING_MAX_LINES: usize = 20;
/// A body whose longest backtick run is longer than this is indented instead of fenced.
pub const LONGEST_FENCEABLE_RUN: usize = 2048;
/// The line that precedes an indented body when it was cut.
pub const INDENTED_CUT_NOTICE: &str = "[…content elided to fit advisor context…]";

/// What a one-sided window took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    /// Byte offset where the window starts (tail) or ends (head) in the body.
    at: usize,
    /// Whole lines taken (a partial line counts one, see `partial`).
    lines: usize,
    /// Bytes taken, the newlines between taken lines included.
    bytes: usize,
    /// The window ends with part of a line too long for it (tail side only).
    partial: bool,
}

/// Number of `\n`-separated lines of `s` (an empty string is one line).
fn line_count(s: &str) -> usize {
    s.bytes().filter(|b| *b == b'\n').count() + 1
}

/// The largest character boundary of `s` at or below `at`.
fn floor_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary of `s` at or above `at`.
fn ceil_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The first at most `max` bytes of `s`, cut at a character boundary.
fn head_bytes(s: &str, max: usize) -> &str {
    &s[..floor_boundary(s, max)]
}

/// The last at most `max` bytes of `s`, cut at a character boundary.
fn tail_bytes(s: &str, max: usize) -> &str {
    &s[ceil_boundary(s, s.len().saturating_sub(max))..]
}

/// Whole lines from the start: at most `max_lines`, at most `max_bytes`. `None` when the
/// first line alone is larger than `max_bytes`.
fn head_window(s: &str, max_bytes: usize, max_lines: usize) -> Option<Window> {
    let mut taken = Window {
        at: 0,
        lines: 0,
        bytes: 0,
        partial: false,
    };
    let mut start = 0usize;
    while taken.lines < max_lines {
        let end = s[start..].find('\n').map_or(s.len(), |i| start + i);
        let sep = usize::from(taken.lines > 0);
        let len = end - start;
        if taken.bytes + sep + len > max_bytes {
            if taken.lines == 0 {
                return None;
            }
            break;
        }
        taken.bytes += sep + len;
        taken.lines += 1;
        taken.at = end;
        if end == s.len() {
            break;
        }
        start = end + 1;
    }
    Some(taken)
}

/// Lines from the end: at most `max_lines`, at most `max_bytes`. A line longer than the
/// whole budget contributes its final bytes (as many as still fit) and ends the window.
fn tail_window(s: &str, max_bytes: usize, max_lines: usize) -> Window {
    let mut taken = Window {
        at: s.len(),
        lines: 0,
        bytes: 0,
        partial: false,
    };
    let mut end = s.len();
    while taken.lines < max_lines {
        let start = s[..end].rfind('\n').map_or(0, |i| i + 1);
        let sep = usize::from(taken.lines > 0);
        let Some(room) = max_bytes.checked_sub(taken.bytes + sep) else {
            break;
        };
        let len = end - start;
        if len <= room {
            taken.bytes += sep + len;
            taken.lines += 1;
            taken.at = start;
            if start == 0 {
                break;
            }
            end = start - 1;
            continue;
        }
        if len > max_bytes {
            // A line larger than the whole tail keeps its final bytes.
            let part = tail_bytes(&s[start..end], room);
            if !part.is_empty() || taken.lines == 0 {
                if !part.is_empty() {
                    taken.bytes += sep + part.len();
                    taken.lines += 1;
                    taken.partial = true;
                    taken.at = end - part.len();
                }
                return taken;
            }
        }
        break;
    }
    taken
}

/// `[…Nln elided…]`, or `[…NB elided…]` when at most one line was left out.
fn push_marker(out: &mut String, lines: usize, bytes: usize) {
    // Writing into a String cannot fail.
    let _ = if lines <= 1 {
        write!(out, "[…{bytes}B elided…]")
    } else {
        write!(out, "[…{lines}ln elided…]")
    };
}

/// The excerpt of `body` within `max_bytes` and `max_lines` (SPEC §3 Expanded): whole when
/// within both, else `HEAD\n[…marker…]\nTAIL`. Returns the text and whether it was cut.
pub fn excerpt(body: &str, max_bytes: usize, max_lines: usize) -> (String, bool) {
    let total_bytes = body.len();
    let total_lines = line_count(body);
    if total_bytes <= max_bytes && total_lines <= max_lines {
        return (body.to_string(), false);
    }
    let head_budget = max_bytes / 2;
    let tail_budget = max_bytes - head_budget;
    let head_lines = (max_lines / 2).max(1);
    let tail_lines = max_lines.saturating_sub(head_lines);
    let head = head_window(body, head_budget, head_lines).filter(|h| h.lines > 0);
    let tail = tail_window(body, tail_budget, tail_lines);
    match head {
        Some(head) if tail.lines > 0 => {
            if head.lines + tail.lines >= total_lines && !tail.partial {
                return (body.to_string(), false);
            }
            let elided_lines = total_lines - head.lines - tail.lines;
            let elided_bytes = total_bytes.saturating_sub(head.bytes + tail.bytes);
            let mut out = String::with_capacity(head.bytes + tail.bytes + 32);
            out.push_str(&body[..head.at]);
            out.push('\n');
            push_marker(&mut out, elided_lines, elided_bytes);
            out.push('\n');
            out.push_str(&body[tail.at..]);
            (out, true)
        }
        _ => byte_excerpt(body, head, head_budget, tail_budget, tail_lines),
    }
}

/// The excerpt when a window took no whole line: the side without one is cut by bytes, and
/// the marker counts bytes.
fn byte_excerpt(
    body: &str,
    head: Option<Window>,
    head_budget: usize,
    tail_budget: usize,
    tail_lines: usize,
) -> (String, bool) {
    let total = body.len();
    let head_text = match head {
        Some(h) => &body[..h.at],
        None => head_bytes(body, head_budget.min(total)),
    };
    let left = total - head_text.len();
    let tail_room = tail_budget.min(left);
    let lines_tail = tail_window(body, tail_room, tail_lines);
    let tail_text = if lines_tail.lines == 0 {
        tail_bytes(body, tail_room)
    } else {
        &body[lines_tail.at..]
    };
    let elided = total.saturating_sub(head_text.len() + tail_text.len());
    if elided == 0 {
        return (body.to_string(), false);
    }
    let mut out = String::with_capacity(head_text.len() + tail_text.len() + 32);
    out.push_str(head_text);
    out.push('\n');
    push_marker(&mut out, 0, elided);
    out.push('\n');
    out.push_str(tail_text);
    (out, true)
}

/// The longest run of backticks in `s`.
fn longest_backtick_run(s: &str) -> usize {
    let (mut best, mut run) = (0usize, 0usize);
    for b in s.bytes() {
        if b == b'`' {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

/// Appends `body` as a block of at most [`BLOCK_MAX_BYTES`]: fenced with `info` (the fence
/// one backtick longer than the longest run inside the kept text, at least three), or, when
/// the body holds a backtick run longer than [`LONGEST_FENCEABLE_RUN`], indented by four
/// spaces under [`INDENTED_CUT_NOTICE`] (when cut). `max_lines` bounds the kept lines.
pub fn push_block(out: &mut String, body: &str, info: &str, max_lines: usize) {
    let run = longest_backtick_run(body);
    if run > LONGEST_FENCEABLE_RUN {
        let budget = BLOCK_MAX_BYTES - INDENTED_CUT_NOTICE.len() - 2;
        let (kept, cut) = excerpt(body, budget, max_lines);
        let mut first = true;
        let notice = cut.then_some(INDENTED_CUT_NOTICE);
        for line in notice.into_iter().chain(kept.split('\n')) {
            if !first {
                out.push('\n');
            }
            first = false;
            out.push_str("    ");
            out.push_str(line);
        }
        return;
    }
    let fence_len = (run + 1).max(3);
    let budget = BLOCK_MAX_BYTES
        .saturating_sub(2 * fence_len + info.len() + 2)
        .max(1);
    let (kept, _) = excerpt(body, budget, max_lines);
    let fence = "`".repeat((longest_backtick_run(&kept) + 1).max(3));
    out.push_str(&fence);
    out.push_str(info);
    out.push('\n');
    out.push_str(&kept);
    out.push('\n');
    out.push_str(&fence);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn expanded_excerpt_keeps_a_body_within_both_limits_whole() {
        let body = numbered(80);
        assert_eq!(excerpt(&body, 8192, 80), (body.clone(), false));
        assert_eq!(excerpt("", 10, 1), (String::new(), false));
    }

    #[test]
    fn expanded_excerpt_of_301_lines_keeps_40_and_40() {
        let body = numbered(301);
        let (text, cut) = excerpt(&body, 8180, 80);
        assert!(cut);
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines.len(), 81);
        assert_eq!(lines[39], "line 40");
        assert_eq!(lines[40], "[…221ln elided…]");
        assert_eq!(lines[41], "line 262");
        assert_eq!(lines[80], "line 301");
    }

    #[test]
    fn expanded_excerpt_byte_budget_binds_before_the_line_limit() {
        let body = (0..20)
            .map(|i| format!("{i}:{}", "w".repeat(700)))
            .collect::<Vec<_>>()
            .join("\n");
        let (text, _) = excerpt(&body, 8180, 80);
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines.len(), 11);
        assert_eq!(lines[5], "[…10ln elided…]");
        assert!(lines[4].starts_with("4:") && lines[6].starts_with("15:"));
    }

    #[test]
    fn expanded_excerpt_one_elided_line_is_counted_in_bytes() {
        // 5 lines, 4 kept: the marker names the bytes left out, the line and both of the
        // newlines around it.
        let body = "a\nb\nccc\nd\ne";
        let (text, cut) = excerpt(body, 100, 4);
        assert!(cut);
        assert_eq!(text, "a\nb\n[…5B elided…]\nd\ne");
    }

    #[test]
    fn expanded_excerpt_first_line_too_long_cuts_by_bytes() {
        let body = format!("{}\nshort", "x".repeat(100));
        let (text, cut) = excerpt(&body, 20, 80);
        assert!(cut);
        // Head: 10 bytes; tail: the last line whole, then the final bytes of the long one
        // in the room left.
        assert_eq!(text, "xxxxxxxxxx\n[…86B elided…]\nxxxx\nshort");
    }

    #[test]
    fn expanded_excerpt_single_huge_line_cuts_both_sides_by_bytes() {
        let body = "é".repeat(50); // 100 bytes, one line
        let (text, cut) = excerpt(&body, 21, 80);
        assert!(cut);
        let mut parts = text.split('\n');
        let head = parts.next().unwrap();
        let marker = parts.next().unwrap();
        let tail = parts.next().unwrap();
        assert_eq!(head, "é".repeat(5)); // 10 bytes, boundary-safe
        assert_eq!(tail, "é".repeat(5)); // 11 bytes budget → 10
        assert_eq!(marker, "[…80B elided…]");
    }

    #[test]
    fn expanded_excerpt_last_line_larger_than_the_tail_keeps_its_final_bytes() {
        let body = format!("a\nb\nc\n{}", "0123456789".repeat(5));
        let (text, cut) = excerpt(&body, 20, 80);
        assert!(cut);
        // Head: 3 whole lines fit 10 bytes; tail: the last 10 bytes of the long line.
        assert_eq!(
            text,
            format!("a\nb\nc\n[…{}B elided…]\n0123456789", 56 - 5 - 10)
        );
    }

    #[test]
    fn expanded_fence_is_one_longer_than_the_longest_run() {
        let mut out = String::new();
        push_block(&mut out, "a ```` b", "text", 80);
        assert_eq!(out, "`````text\na ```` b\n`````");
        let mut out = String::new();
        push_block(&mut out, "plain", "diff", 300);
        assert_eq!(out, "```diff\nplain\n```");
    }

    #[test]
    fn expanded_block_stays_within_8192_bytes() {
        let body = "y".repeat(20_000);
        let mut out = String::new();
        push_block(&mut out, &body, "text", 80);
        assert!(out.len() <= BLOCK_MAX_BYTES + 32, "{}", out.len());
        assert!(out.starts_with("```text\n") && out.ends_with("\n```"));
    }

    #[test]
    fn expanded_long_backtick_run_is_indented_not_fenced() {
        let body = format!("start\n{}\nend", "`".repeat(2049));
        let mut out = String::new();
        push_block(&mut out, &body, "text", 80);
        assert!(out.starts_with("    start\n    ````"), "{out:.40}");
        assert!(out.ends_with("\n    end"));
        let long = format!("{}\n{}", "`".repeat(2049), "z\n".repeat(9000));
        let mut out = String::new();
        push_block(&mut out, &long, "text", 80);
        assert!(out.starts_with(&format!("    {INDENTED_CUT_NOTICE}\n    ``")));
        assert!(out.lines().all(|l| l.starts_with("    ")));
    }

    #[test]
    fn expanded_indented_notice_is_45_bytes() {
        assert_eq!(INDENTED_CUT_NOTICE.len(), 45);
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        /// Bodies of short and long lines, some multi-byte, no `[` (so the marker is
        /// unambiguous).
        fn body() -> impl Strategy<Value = String> {
            prop::collection::vec("[a-zé€ `]{0,40}|[x]{100,300}", 0..60).prop_map(|l| l.join("\n"))
        }

        proptest! {
            #[test]
            fn expanded_excerpt_is_whole_or_head_marker_tail_within_the_budget(
                text in body(),
                max_bytes in 8usize..600,
                max_lines in 1usize..30,
            ) {
                let (out, cut) = excerpt(&text, max_bytes, max_lines);
                let lines = text.split('\n').count();
                if text.len() <= max_bytes && lines <= max_lines {
                    prop_assert!(!cut);
                }
                if !cut {
                    prop_assert_eq!(&out, &text);
                    return Ok(());
                }
                let marker_at = out.find("\n[…").expect("a marker line");
                let head = &out[..marker_at];
                let rest = &out[marker_at + 1..];
                let marker_end = rest.find("…]").expect("marker end") + "…]".len();
                let marker = &rest[..marker_end];
                prop_assert!(rest[marker_end..].starts_with('\n'));
                let tail = &rest[marker_end + 1..];
                prop_assert!(text.starts_with(head), "head is a prefix");
                prop_assert!(text.ends_with(tail), "tail is a suffix");
                prop_assert!(head.len() + tail.len() < text.len());
                prop_assert!(head.len() <= max_bytes / 2);
                prop_assert!(tail.len() <= max_bytes - max_bytes / 2);
                let elided_bytes = text.len() - head.len() - tail.len();
                if let Some(n) = marker.strip_prefix("[…").and_then(|m| m.strip_suffix("ln elided…]")) {
                    let n: usize = n.parse().expect("a count");
                    prop_assert!(n >= 2);
                    let kept = head.split('\n').count() + tail.split('\n').count();
                    prop_assert!(kept <= max_lines.max(2));
                    prop_assert_eq!(n, lines - head.split('\n').count() - tail.split('\n').count());
                } else {
                    let n = marker
                        .strip_prefix("[…")
                        .and_then(|m| m.strip_suffix("B elided…]"))
                        .expect("a byte marker");
                    prop_assert_eq!(n.parse::<usize>().expect("a count"), elided_bytes);
                }
            }

            #[test]
            fn expanded_block_never_exceeds_its_budget_by_more_than_the_marker(
                text in body(),
                info in "text|diff|json",
            ) {
                let mut out = String::new();
                push_block(&mut out, &text.repeat(20), &info, RESULT_MAX_LINES);
                prop_assert!(out.len() <= BLOCK_MAX_BYTES + 32, "{}", out.len());
            }
        }
    }
}
