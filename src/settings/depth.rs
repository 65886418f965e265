//! The nesting limit of settings files (K1): the YAML parser takes quadratic
//! time on deeply nested input before it reports its own recursion limit, so a linear scan
//! refuses documents nested deeper than [`MAX_YAML_DEPTH`] before they are parsed.
//!
//! The scan counts open flow collections (`[`, `{`) and block levels (indentation and
//! compact `- ` entries). It knows enough YAML to leave valid files alone: brackets inside
//! quoted strings, comments, block scalars (`|`, `>`) and the middle of plain text do not
//! count. It can only over-count by a level here and there on odd but valid input, far below
//! the limit, and it never looks at a byte twice.

/// The deepest nesting a settings file may have.
pub const MAX_YAML_DEPTH: usize = 64;

/// The 1-based line where `text` first nests deeper than [`MAX_YAML_DEPTH`], if it does.
pub fn too_deep(text: &str) -> Option<usize> {
    let mut scan = Scan::default();
    for (index, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line).as_bytes();
        if scan.line(line) {
            return Some(index + 1);
        }
    }
    None
}

#[derive(Default)]
struct Scan {
    /// Open flow collections.
    flow: usize,
    /// The columns of the enclosing block levels, innermost last.
    blocks: Vec<usize>,
    /// The quote of a quoted scalar still open at the end of the previous line.
    quote: Option<u8>,
    /// While inside a block scalar: the column of the block level holding it.
    block_scalar: Option<usize>,
    /// Whether the next character would start a value (where `[`, `{` and quotes count).
    value_start: bool,
}

fn indentation(line: &[u8]) -> usize {
    line.iter().take_while(|b| **b == b' ').count()
}

fn blank_after(line: &[u8], at: usize) -> bool {
    line.get(at).is_none_or(|b| b.is_ascii_whitespace())
}

impl Scan {
    fn depth(&self) -> usize {
        self.blocks.len() + self.flow
    }

    /// Scans one line; `true` when the nesting passes the limit on it.
    fn line(&mut self, line: &[u8]) -> bool {
        let indent = indentation(line);
        if let Some(parent) = self.block_scalar {
            if indent == line.len() || indent > parent {
                return false;
            }
            self.block_scalar = None;
        }
        let mut at = 0;
        if self.quote.is_none() && self.flow == 0 {
            let rest = &line[indent..];
            if rest.iter().all(u8::is_ascii_whitespace) || rest[0] == b'#' {
                return false;
            }
            at = indent;
            if indent == 0 && (rest.starts_with(b"---") || rest.starts_with(b"...")) {
                if blank_after(rest, 3) {
                    self.blocks.clear();
                    at = 3;
                }
            } else {
                while self.blocks.last().is_some_and(|col| *col > indent) {
                    self.blocks.pop();
                }
                if self.blocks.last() != Some(&indent) {
                    self.blocks.push(indent);
                }
                // Compact entries (`- - a`, `? a`) open a level each on the same line.
                while matches!(line.get(at), Some(b'-' | b'?')) && blank_after(line, at + 1) {
                    at += 1;
                    at += indentation(&line[at..]);
                    if at >= line.len() || line[at] == b'#' {
                        break;
                    }
                    self.blocks.push(at);
                    if self.depth() > MAX_YAML_DEPTH {
                        return true;
                    }
                }
            }
            if self.depth() > MAX_YAML_DEPTH {
                return true;
            }
            self.value_start = true;
        }
        self.chars(line, at)
    }

    /// The column a block scalar starting at `at` must be indented past: the level holding
    /// it, which for an entry of its own (`- |`) is the level around that entry.
    fn scalar_parent(&self, at: usize) -> usize {
        match self.blocks.as_slice() {
            [.., outer, inner] if *inner == at => *outer,
            [.., inner] if *inner != at => *inner,
            _ => 0,
        }
    }

    /// Scans the characters of `line` from `at`; `true` when the nesting passes the limit.
    fn chars(&mut self, line: &[u8], mut at: usize) -> bool {
        while at < line.len() {
            let byte = line[at];
            if let Some(quote) = self.quote {
                if quote == b'"' && byte == b'\\' {
                    at += 1;
                } else if byte == quote {
                    if quote == b'\'' && line.get(at + 1) == Some(&b'\'') {
                        at += 1;
                    } else {
                        self.quote = None;
                        self.value_start = false;
                    }
                }
                at += 1;
                continue;
            }
            match byte {
                b' ' | b'\t' => {}
                b'#' if at == 0 || matches!(line[at - 1], b' ' | b'\t') => return false,
                b'"' | b'\'' if self.value_start => self.quote = Some(byte),
                b'[' | b'{' if self.value_start || self.flow > 0 => {
                    self.flow += 1;
                    if self.depth() > MAX_YAML_DEPTH {
                        return true;
                    }
                    self.value_start = true;
                }
                b']' | b'}' if self.flow > 0 => {
                    self.flow -= 1;
                    self.value_start = false;
                }
                b',' if self.flow > 0 => self.value_start = true,
                b':' if self.flow > 0 || blank_after(line, at + 1) => self.value_start = true,
                b'-' | b'?' if self.value_start && blank_after(line, at + 1) => {}
                // Anchors and tags come before the value they name.
                b'&' | b'!' if self.value_start => {
                    while at + 1 < line.len() && !line[at + 1].is_ascii_whitespace() {
                        at += 1;
                    }
                }
                b'|' | b'>' if self.value_start && self.flow == 0 => {
                    if block_scalar_header(&line[at + 1..]) {
                        self.block_scalar = Some(self.scalar_parent(at));
                        return false;
                    }
                    self.value_start = false;
                }
                _ => self.value_start = false,
            }
            at += 1;
        }
        false
    }
}

/// Whether what follows a `|` or `>` is a block scalar header: chomping and indentation
/// indicators, then nothing but blanks and a comment.
fn block_scalar_header(rest: &[u8]) -> bool {
    let indicators = rest
        .iter()
        .take_while(|b| matches!(b, b'-' | b'+' | b'0'..=b'9'))
        .count();
    let rest = &rest[indicators..];
    let blanks = rest
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count();
    let rest = &rest[blanks..];
    rest.is_empty() || (blanks > 0 && rest[0] == b'#')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parses(text: &str) -> bool {
        serde_norway::from_str::<serde_norway::Value>(text).is_ok()
    }

    #[test]
    fn k1_deep_flow_and_compact_nesting_is_refused_on_its_line() {
        assert_eq!(too_deep(&"[".repeat(100_000)), Some(1));
        assert_eq!(
            too_deep(&format!("a: 1\nb: {}", "{a: ".repeat(100_000))),
            Some(2)
        );
        assert_eq!(
            too_deep(&format!("x:\n  {}", "- ".repeat(100_000))),
            Some(2)
        );
        // The top level counts as one block level, so the 64th line passes the limit.
        let spread = "[\n".repeat(70);
        assert_eq!(too_deep(&spread), Some(MAX_YAML_DEPTH));
        // Tabs are blanks, not a way around the count.
        assert_eq!(too_deep(&format!("\t{}", "[".repeat(100))), Some(1));
        assert_eq!(too_deep(&format!("a:\t{}", "{".repeat(100))), Some(1));
    }

    #[test]
    fn k1_deep_indentation_is_refused() {
        let mut text = String::new();
        for level in 0..70 {
            text.push_str(&format!("{}k{level}:\n", " ".repeat(level)));
        }
        assert_eq!(too_deep(&text), Some(MAX_YAML_DEPTH + 1));
    }

    #[test]
    fn k1_nesting_up_to_the_limit_is_kept() {
        let flow = format!("a: {}1{}\n", "[".repeat(63), "]".repeat(63));
        assert_eq!(too_deep(&flow), None);
        assert!(parses(&flow));
        let mut block = String::new();
        for level in 0..MAX_YAML_DEPTH {
            block.push_str(&format!("{}k{level}:\n", " ".repeat(level)));
        }
        assert_eq!(too_deep(&block), None);
        assert!(parses(&block));
        // Depth does not add up across siblings.
        let siblings = "a: [[[1]]]\n".repeat(1000);
        assert_eq!(too_deep(&siblings), None);
    }

    #[test]
    fn k1_brackets_in_strings_comments_text_and_block_scalars_do_not_count() {
        let many = "[".repeat(200);
        let texts = [
            format!("a: '{many}'\n"),
            format!("a: \"{many}\\\" {many}\"\n"),
            format!("a: 'it''s {many}'\n"),
            format!("a: \"multi\n  line {many}\"\nb: 1\n"),
            format!("a: 1 # {many}\n"),
            format!("# {many}\na: 1\n"),
            format!("a: see {many}\n"),
            format!("a: don't{many}\n"),
            format!("a: |\n  {many}\n  {many}\n\n  more\nb: 1\n"),
            format!("a: >-\n    {many}\nb: [1, 2]\n"),
            format!("- |2\n  {many}\n- x\n"),
            format!("- a: |\n    {many}\n  b: [1]\n"),
            format!("a: &anchor\n  b: !!str '{many}'\nc: *anchor\n"),
            format!("a: [x, '{many}', \"{many}\", {{b: c}}]\n"),
        ];
        for text in &texts {
            assert_eq!(too_deep(text), None, "{text}");
            assert!(parses(text), "{text}");
        }
    }
}
