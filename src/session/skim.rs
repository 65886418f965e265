//! The first pass's fast way over one line of a version 2/3 file (SPEC L1): checks that the
//! line is JSON and reads its `type`, `id` and `parentId`, without serde.
//!
//! The first pass has to look at every byte of the file (a line that is not JSON is
//! reported and is no entry of the tree), while it keeps only three short strings of each
//! line. serde_json's skipping of the values it ignores is general; this scanner only
//! checks the grammar, a byte table at a time. It answers only for lines serde_json reads
//! the same way — an object whose `type` is a string; whose `type`, `id` and `parentId`,
//! where present, are strings without escapes or `null`, each written once; whose keys have
//! no escapes — and leaves every other line (and every line it finds fault with) to
//! serde_json, so that the verdict and the wording of a malformed-line report never change.

/// What the fast way read of a line: its type, id and parent, borrowed from it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Skimmed<'a> {
    pub(super) kind: &'a str,
    pub(super) id: Option<&'a str>,
    pub(super) parent: Option<&'a str>,
}

/// Bytes that end the plain run of a string: the closing quote, an escape, and the control
/// characters JSON forbids inside strings.
const STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// Deepest nesting the scanner follows; deeper lines are left to serde_json.
const MAX_DEPTH: usize = 64;

/// The containers open around the scanner, as bits (1 for an object), with no allocation.
#[derive(Default)]
struct Open {
    kinds: u64,
    depth: usize,
}

impl Open {
    fn push(&mut self, object: bool) -> Option<()> {
        if self.depth == MAX_DEPTH {
            return None;
        }
        self.kinds = (self.kinds << 1) | u64::from(object);
        self.depth += 1;
        Some(())
    }

    fn pop(&mut self) {
        self.kinds >>= 1;
        self.depth = self.depth.saturating_sub(1);
    }

    fn last(&self) -> Option<bool> {
        (self.depth > 0).then_some(self.kinds & 1 == 1)
    }
}

/// Reads `line`'s type, id and parent when it is JSON of the shape the module describes;
/// `None` otherwise (the caller then asks serde_json).
pub(super) fn skim(line: &str) -> Option<Skimmed<'_>> {
    let mut s = Scanner {
        text: line,
        bytes: line.as_bytes(),
        at: 0,
    };
    s.ws();
    s.eat(b'{')?;
    let (mut kind, mut id, mut parent) = (None, None, None);
    s.ws();
    if s.peek() == Some(b'}') {
        s.at += 1;
    } else {
        loop {
            s.ws();
            s.eat(b'"')?;
            let key = s.plain_string()?;
            s.ws();
            s.eat(b':')?;
            s.ws();
            let slot = match key {
                "type" => Some(&mut kind),
                "id" => Some(&mut id),
                "parentId" => Some(&mut parent),
                _ => None,
            };
            match slot {
                Some(slot) => {
                    if slot.is_some() {
                        return None;
                    }
                    *slot = Some(s.string_or_null()?);
                }
                None => s.value()?,
            }
            s.ws();
            match s.next()? {
                b',' => continue,
                b'}' => break,
                _ => return None,
            }
        }
    }
    s.ws();
    if s.at != s.bytes.len() {
        return None;
    }
    Some(Skimmed {
        kind: kind.flatten()?,
        id: id.flatten(),
        parent: parent.flatten(),
    })
}

/// The type, id and parent of an entry line as its leading keys spell them: the bytes
/// between the quotes, not yet known to be UTF-8.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Leading<'a> {
    pub(super) kind: &'a [u8],
    pub(super) id: &'a [u8],
    pub(super) parent: Option<&'a [u8]>,
}

/// The leading keys as pi writes them, each up to its value (a string value's opening quote
/// included); each string value is followed by its closing quote.
const TYPE_KEY: &[u8] = br#"{"type":""#;
const ID_KEY: &[u8] = br#","id":""#;
const PARENT_KEY: &[u8] = br#","parentId":"#;

impl Leading<'_> {
    /// Where the leading keys end in the line: the offset of the comma after them.
    pub(super) fn end(&self) -> usize {
        self.parent_at() + self.parent.map_or(4, |p| p.len() + 1)
    }

    /// The type, id and parent as slices of `line`, the text they were read from once it is
    /// known to be UTF-8 (`None` for another text).
    pub(super) fn in_text<'t>(&self, line: &'t str) -> Option<(&'t str, &'t str, Option<&'t str>)> {
        let kind_at = TYPE_KEY.len();
        let id_at = kind_at + self.kind.len() + 1 + ID_KEY.len();
        let kind = line.get(kind_at..kind_at + self.kind.len())?;
        let id = line.get(id_at..id_at + self.id.len())?;
        let parent = match self.parent {
            Some(parent) => Some(line.get(self.parent_at()..self.parent_at() + parent.len())?),
            None => None,
        };
        let same = kind.as_bytes() == self.kind
            && id.as_bytes() == self.id
            && parent.map(str::as_bytes) == self.parent;
        same.then_some((kind, id, parent))
    }

    /// Where the parent's text starts (past its opening quote; where `null` starts when
    /// there is none).
    fn parent_at(&self) -> usize {
        TYPE_KEY.len()
            + self.kind.len()
            + 1
            + ID_KEY.len()
            + self.id.len()
            + 1
            + PARENT_KEY.len()
            + usize::from(self.parent.is_some())
    }

    /// Whether a whole read of the line found this type, id and parent.
    pub(super) fn is(&self, kind: &str, id: Option<&str>, parent: Option<&str>) -> bool {
        self.kind == kind.as_bytes()
            && id.map(str::as_bytes) == Some(self.id)
            && parent.map(str::as_bytes) == self.parent
    }
}

/// Reads the type, id and parent of a line that starts the way pi and oh-my-pi write an
/// entry — `{"type":"…","id":"…","parentId":"…"|null,` with no whitespace and no escape or
/// control character in the three strings — without looking at the rest of the line (not
/// even whether those strings are UTF-8). The caller must have the whole line checked
/// later (by [`skim`] or by the full parse, which compare what they read with [`Leading::is`])
/// before it relies on the answer.
pub(super) fn leading(line: &[u8]) -> Option<Leading<'_>> {
    /// A string's plain run up to its closing quote, and what follows the quote.
    fn plain(rest: &[u8]) -> Option<(&[u8], &[u8])> {
        let end = rest.iter().position(|&b| STOP[b as usize])?;
        let (text, rest) = rest.split_at(end);
        Some((text, rest.strip_prefix(b"\"")?))
    }
    let (kind, rest) = plain(line.strip_prefix(TYPE_KEY)?)?;
    let (id, rest) = plain(rest.strip_prefix(ID_KEY)?)?;
    let rest = rest.strip_prefix(PARENT_KEY)?;
    let (parent, rest) = match rest.strip_prefix(b"null") {
        Some(rest) => (None, rest),
        None => {
            let (parent, rest) = plain(rest.strip_prefix(b"\"")?)?;
            (Some(parent), rest)
        }
    };
    rest.starts_with(b",")
        .then_some(Leading { kind, id, parent })
}

/// A cursor over one line's JSON that checks its grammar as serde_json does (also used by
/// [`super::direct`], which reads typed values with it).
pub(super) struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pub(super) at: usize,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `text`.
    pub(super) fn new(text: &'a str) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    /// The text from byte `start` to the scanner (`None` off a character boundary).
    pub(super) fn since(&self, start: usize) -> Option<&'a str> {
        self.text.get(start..self.at)
    }

    /// Whether nothing is left of the line.
    pub(super) fn at_end(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// The byte at the scanner, if any.
    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// The byte at the scanner, stepping past it.
    pub(super) fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    /// Steps past `want`; `None` when another byte (or nothing) is there.
    pub(super) fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// JSON's whitespace.
    pub(super) fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Past the plain run of a string, at the byte that ends it (or the end): eight bytes
    /// at a time, each word tested for a quote, a backslash or a control character at once.
    pub(super) fn run(&mut self) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        let mut at = self.at;
        while let Some(word) = self.bytes.get(at..at + 8) {
            let Ok(word) = <[u8; 8]>::try_from(word) else {
                break;
            };
            let w = u64::from_le_bytes(word);
            let quote = w ^ (ONES * u64::from(b'"'));
            let slash = w ^ (ONES * u64::from(b'\\'));
            // The lowest marked byte is the first stop (a borrow only marks bytes above it).
            let stops = (quote.wrapping_sub(ONES) & !quote)
                | (slash.wrapping_sub(ONES) & !slash)
                | (w.wrapping_sub(ONES * 0x20) & !w);
            let stops = stops & HIGH;
            if stops != 0 {
                self.at = at + (stops.trailing_zeros() / 8) as usize;
                return;
            }
            at += 8;
        }
        while let Some(&b) = self.bytes.get(at) {
            if STOP[b as usize] {
                break;
            }
            at += 1;
        }
        self.at = at;
    }

    /// The rest of a string (its opening quote eaten) that has no escape, borrowed.
    pub(super) fn plain_string(&mut self) -> Option<&'a str> {
        let start = self.at;
        self.run();
        self.eat(b'"')?;
        // The run stopped at an ASCII quote: a character boundary of the line.
        self.text.get(start..self.at - 1)
    }

    /// A string without escapes (`Some`), or `null` (`None`).
    pub(super) fn string_or_null(&mut self) -> Option<Option<&'a str>> {
        match self.next()? {
            b'"' => self.plain_string().map(Some),
            b'n' => self.literal(b"ull").map(|()| None),
            _ => None,
        }
    }

    /// The rest of a string (its opening quote eaten), escapes checked as serde_json checks
    /// the strings it skips.
    fn skip_string(&mut self) -> Option<()> {
        loop {
            self.run();
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            if !self.next()?.is_ascii_hexdigit() {
                                return None;
                            }
                        }
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// Steps past `rest` (the remainder of `null`, `true` or `false`).
    pub(super) fn literal(&mut self, rest: &[u8]) -> Option<()> {
        let end = self.at + rest.len();
        (self.bytes.get(self.at..end)? == rest).then(|| self.at = end)
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        self.at - start
    }

    /// A number, by JSON's grammar.
    pub(super) fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    /// Any JSON value, checked and skipped.
    pub(super) fn value(&mut self) -> Option<()> {
        // Open containers, innermost last: `true` for an object.
        let mut open = Open::default();
        loop {
            // A value starts here.
            self.ws();
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    self.skip_string()?;
                }
                b'-' | b'0'..=b'9' => self.number()?,
                b'n' => {
                    self.at += 1;
                    self.literal(b"ull")?;
                }
                b't' => {
                    self.at += 1;
                    self.literal(b"rue")?;
                }
                b'f' => {
                    self.at += 1;
                    self.literal(b"alse")?;
                }
                b @ (b'[' | b'{') => {
                    self.at += 1;
                    let object = b == b'{';
                    open.push(object)?;
                    self.ws();
                    let close = if object { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.at += 1;
                        open.pop();
                    } else {
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                }
                _ => return None,
            }
            // A value ended: close what ends here, or go on to the next member.
            loop {
                let Some(object) = open.last() else {
                    return Some(());
                };
                self.ws();
                match self.next()? {
                    b',' => {
                        if object {
                            self.key()?;
                        }
                        break;
                    }
                    b'}' if object => {
                        open.pop();
                    }
                    b']' if !object => {
                        open.pop();
                    }
                    _ => return None,
                }
            }
        }
    }

    /// An object member's key and its colon.
    fn key(&mut self) -> Option<()> {
        self.ws();
        self.eat(b'"')?;
        self.skip_string()?;
        self.ws();
        self.eat(b':')
    }
}

/// `base` cut at `at` (modulo its length), or with the byte there replaced by `byte`;
/// `None` when that leaves no UTF-8.
#[cfg(test)]
pub(super) fn mutated(base: &str, at: usize, byte: u8, cut: bool) -> Option<String> {
    let mut bytes = base.as_bytes().to_vec();
    let at = at % bytes.len().max(1);
    if cut {
        bytes.truncate(at);
    } else if let Some(slot) = bytes.get_mut(at) {
        *slot = byte;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::tree::Skim;
    use proptest::prelude::*;

    /// Whenever the fast way answers, serde_json answers the same.
    fn agrees(line: &str) -> bool {
        let Some(fast) = skim(line) else {
            return true;
        };
        match serde_json::from_str::<Skim<'_>>(line) {
            Ok(r) => {
                r.kind.as_deref() == Some(fast.kind)
                    && r.id.as_deref() == fast.id
                    && r.parent_id.as_deref() == fast.parent
            }
            Err(_) => false,
        }
    }

    #[test]
    fn l1_the_fast_way_reads_what_pi_writes() {
        let line = r#"{"type":"message","id":"a1","parentId":"a0","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"x \"q\" \u00e9 é"},{"type":"toolCall","arguments":{"n":-1.5e+3,"ok":true,"no":false,"v":null,"e":[],"o":{}}}],"usage":{"input":1}}}"#;
        assert_eq!(
            skim(line),
            Some(Skimmed {
                kind: "message",
                id: Some("a1"),
                parent: Some("a0")
            })
        );
        assert_eq!(
            skim(r#" { "type" : "label" , "id" : "x" , "parentId" : null } "#),
            Some(Skimmed {
                kind: "label",
                id: Some("x"),
                parent: None
            })
        );
        assert!(agrees(line));
    }

    #[test]
    fn l1_the_fast_way_leaves_every_doubtful_line_to_serde() {
        for line in [
            // Not JSON, or not all of it.
            r#"{"type":"message","id":"a""#,
            r#"{"type":"message"} x"#,
            r#"{"type":"message","n":01}"#,
            r#"{"type":"message","n":1.}"#,
            r#"{"type":"message","n":1e}"#,
            r#"{"type":"message","n":-}"#,
            r#"{"type":"message","s":"\x"}"#,
            r#"{"type":"message","s":"\u12g4"}"#,
            "{\"type\":\"message\",\"s\":\"tab\there\"}",
            r#"{"type":"message","a":[1,]}"#,
            r#"{"type":"message","a":{"k" 1}}"#,
            r#"{"type":"message","a":{1:2}}"#,
            r#"{"type":"message","a":nul}"#,
            r#"{"type":"message","a":[}"#,
            // JSON, but serde_json decides: escapes where it reads strings, repeats,
            // other types, no type, not an object.
            r#"{"type":"mess\u0061ge"}"#,
            r#"{"typ\u0065":"message"}"#,
            r#"{"type":"message","id":"a","id":"b"}"#,
            r#"{"type":"message","parentId":5}"#,
            r#"{"type":null}"#,
            r#"{"id":"a"}"#,
            r#"["message","a","b"]"#,
        ] {
            assert_eq!(skim(line), None, "{line}");
        }
        // Deep nesting is left to serde_json too.
        let deep = format!(r#"{{"type":"m","a":{}{}}}"#, "[".repeat(70), "]".repeat(70));
        assert_eq!(skim(&deep), None);
        let fine = format!(r#"{{"type":"m","a":{}{}}}"#, "[".repeat(60), "]".repeat(60));
        assert!(skim(&fine).is_some());
    }

    #[test]
    fn l1_the_word_at_a_time_scan_stops_at_the_first_stop_byte() {
        for filler in ["a", "é", "\u{7f}", " ", "~"] {
            for stop in ["\"", "\\", "\u{0}", "\u{1f}", "\n"] {
                for before in 0..20 {
                    let text = format!("{}{stop}{}", filler.repeat(before), "\"x".repeat(3));
                    let mut s = Scanner {
                        text: &text,
                        bytes: text.as_bytes(),
                        at: 0,
                    };
                    s.run();
                    assert_eq!(s.at, filler.len() * before, "{text:?}");
                }
                let text = filler.repeat(13);
                let mut s = Scanner {
                    text: &text,
                    bytes: text.as_bytes(),
                    at: 0,
                };
                s.run();
                assert_eq!(s.at, text.len());
            }
        }
    }

    #[test]
    fn l1_leading_keys_are_read_only_in_the_shape_pi_writes() {
        assert_eq!(
            leading(br#"{"type":"message","id":"a1","parentId":"a0","message":"#),
            Some(Leading {
                kind: b"message",
                id: b"a1",
                parent: Some(b"a0")
            })
        );
        assert_eq!(
            leading("{\"type\":\"label\",\"id\":\"é\",\"parentId\":null,".as_bytes()),
            Some(Leading {
                kind: b"label",
                id: "é".as_bytes(),
                parent: None
            })
        );
        for line in [
            r#"{"type": "message","id":"a","parentId":null,"#,
            r#"{"type":"message","id":"a\"b","parentId":null,"#,
            r#"{"type":"message","id":"a","parentId":null}"#,
            r#"{"type":"message","id":"a","message":{}}"#,
            r#"{"id":"a","type":"message","parentId":null,"#,
            r#"{"type":"message","id":"a","parentId":nul,"#,
            r#"{"type":"message","id":"a","parentId":5,"#,
            "{\"type\":\"message\",\"id\":\"a\tb\",\"parentId\":null,",
        ] {
            assert_eq!(leading(line.as_bytes()), None, "{line}");
        }
        // Not even UTF-8 is checked here: the whole line's check comes later.
        assert_eq!(
            leading(b"{\"type\":\"m\",\"id\":\"\xff\",\"parentId\":null,"),
            Some(Leading {
                kind: b"m",
                id: b"\xff",
                parent: None
            })
        );
    }

    /// Lines built from pieces that are often valid and sometimes subtly not.
    fn line() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just(r#""type":"message""#.to_string()),
            Just(r#""id":"a""#.to_string()),
            Just(r#""parentId":null"#.to_string()),
            Just(r#""parentId":"p""#.to_string()),
            Just(r#""x":[1,{"y":"\u0041\n"},-0.5e-2,true]"#.to_string()),
            Just(r#""x":{}"#.to_string()),
            Just(r#""s":"é\"""#.to_string()),
            "[ -~]{0,12}".prop_map(|s| format!(r#""k":{s}"#)),
            "[ -~\t]{0,8}".prop_map(|s| format!(r#""s":"{s}""#)),
            // Escapes, well formed or not.
            "(\\\\[ -~]|[a-z\"0-9]){0,6}".prop_map(|s| format!(r#""e":"{s}""#)),
            "[\"\\\\a-z0-9:,{}\\[\\] .eE+-]{0,12}",
        ];
        // Mostly with a type first, so that the rest of the line decides.
        (
            proptest::bool::weighted(0.8),
            proptest::collection::vec(piece, 0..6),
        )
            .prop_map(|(typed, mut ps)| {
                if typed {
                    ps.insert(0, r#""type":"m""#.to_string());
                }
                format!("{{{}}}", ps.join(","))
            })
    }

    proptest! {
        // Cheap cases, and a wrong answer hides in few of them: many.
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn l1_the_fast_way_never_answers_otherwise_than_serde(line in line()) {
            prop_assert!(agrees(&line), "{}", line);
        }

        #[test]
        fn l1_the_fast_way_agrees_on_any_mutation_of_a_pi_line(
            at in 0usize..200, byte in 0u8..128, cut in proptest::bool::ANY
        ) {
            let base = r#"{"type":"message","id":"a1","parentId":"a0","message":{"role":"user","content":[{"type":"text","text":"hi \"x\" \u00e9"}],"n":[1.5,-2e3,true,null]}}"#;
            if let Some(line) = mutated(base, at, byte, cut) {
                prop_assert!(agrees(&line), "{}", line);
            }
        }
    }
}
