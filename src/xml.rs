//! XML escaping, written once: element text (D2's notes, the expanded view's text), quoted
//! values (a file's path in a `<file path="…">` fence, the eval chart's labels) and the
//! strict attribute form an advisory's attributes take (RO18, D4), and its inverse for the
//! advisor's own notes read back from a transcript.

/// Pushes `text` with `&`, `<` and `>` escaped, so it can neither open nor close an element.
pub fn push_text(out: &mut String, text: &str) {
    text.chars().for_each(|c| push_text_char(out, c));
}

/// `text` with `&`, `<` and `>` escaped (see [`push_text`]).
pub fn text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_text(&mut out, text);
    out
}

/// `value` for a double-quoted place: [`text`]'s escapes and `"`.
pub fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '"' => out.push_str("&quot;"),
            c => push_text_char(&mut out, c),
        }
    }
    out
}

/// An attribute value that stays well-formed whatever it holds: [`quoted`]'s escapes; tab,
/// newline and carriage return as character references (a parser would turn them into
/// spaces); every other character XML 1.0 forbids (controls below U+0020, U+FFFE, U+FFFF)
/// as U+FFFD.
pub fn attribute(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => push_text_char(&mut out, c),
        }
    }
    out
}

/// Undoes [`text`] and [`quoted`]: `&lt;`, `&gt;`, `&quot;`, then `&amp;`.
pub fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

fn push_text_char(out: &mut String, c: char) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d2_text_quoted_and_attribute_escape_what_each_place_needs_and_unescape_inverts() {
        let raw = "a < b & \"c\" > d\tend";
        assert_eq!(text(raw), "a &lt; b &amp; \"c\" &gt; d\tend");
        assert_eq!(quoted(raw), "a &lt; b &amp; &quot;c&quot; &gt; d\tend");
        assert_eq!(
            attribute("x\"\t\n\r\u{1}\u{fffe}&"),
            "x&quot;&#9;&#10;&#13;\u{fffd}\u{fffd}&amp;"
        );
        assert_eq!(unescape(&quoted(raw)), raw);
        assert_eq!(
            unescape("&amp;lt;"),
            "&lt;",
            "an escaped entity comes back as written"
        );
    }
}
