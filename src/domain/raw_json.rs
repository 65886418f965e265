//! [`RawJson`]: a JSON value the transcript only passes along (a tool call's arguments, a
//! tool result's details), kept as its compact text instead of a `serde_json::Value` tree.
//!
//! A `Value` object with `preserve_order` costs about a hundred bytes per key before its
//! strings; the text costs its own length. Readers parse it when they need it
//! ([`RawJson::to_value`]), which gives back exactly the `Value` the text was read from, so
//! whatever is rendered from it is byte for byte what the tree gave.
//!
//! The text is always what `serde_json` prints for that `Value` (`Value::to_string`). A
//! value holding a fraction or exponent is kept as a tree instead: serde_json's float
//! parsing is not guaranteed to read its own output back to the same bits.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A JSON value the transcript only passes along (a tool call's arguments, a tool result's
/// details), kept as its compact text — what `Value::to_string` prints — instead of a
/// `serde_json::Value` tree; a value holding a fraction or exponent is kept as a tree.
/// [`RawJson::to_value`] gives back exactly the `Value` it was read from.
#[derive(Clone)]
pub struct RawJson(Repr);

#[derive(Clone)]
enum Repr {
    /// The value's compact text, as `Value::to_string` prints it.
    Text(Box<str>),
    /// A value holding a float (rare in tool arguments), kept as it was read.
    Tree(Box<Value>),
}

/// The key serde_json reserves for raw values in its own token stream: an object that uses
/// it reads as something else than it looks, so its text is never kept as is.
const RAW_VALUE_TOKEN: &[u8] = b"$serde_json::private::RawValue";

impl RawJson {
    /// JSON `null`.
    pub fn null() -> Self {
        RawJson(Repr::Text("null".into()))
    }

    /// The value as a `serde_json::Value`, equal to the one it was made from.
    pub fn to_value(&self) -> Value {
        match &self.0 {
            // The text is serde_json's own printing of an integer-and-string value, so it
            // parses back; `Null` is never reached.
            Repr::Text(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            Repr::Tree(value) => (**value).clone(),
        }
    }

    /// The compact text, when the value is kept as text (no float inside).
    pub fn as_text(&self) -> Option<&str> {
        match &self.0 {
            Repr::Text(text) => Some(text),
            Repr::Tree(_) => None,
        }
    }

    /// Whether the value is JSON `null`.
    pub fn is_null(&self) -> bool {
        match &self.0 {
            Repr::Text(text) => &**text == "null",
            Repr::Tree(value) => value.is_null(),
        }
    }

    /// The value of `text`, a complete JSON text as serde_json validated it (a raw value
    /// borrowed from the input): kept as it is when it is already serde_json's compact
    /// printing of itself, else read as a `Value` first. `None` when it does not parse.
    pub fn from_json_text(text: &str) -> Option<Self> {
        if is_canonical(text.as_bytes()) {
            return Some(RawJson(Repr::Text(text.into())));
        }
        serde_json::from_str::<Value>(text).ok().map(RawJson::from)
    }
}

impl Default for RawJson {
    fn default() -> Self {
        RawJson::null()
    }
}

impl From<Value> for RawJson {
    fn from(value: Value) -> Self {
        if holds_float(&value) {
            RawJson(Repr::Tree(Box::new(value)))
        } else {
            RawJson(Repr::Text(value.to_string().into()))
        }
    }
}

impl From<RawJson> for Value {
    fn from(raw: RawJson) -> Self {
        match raw.0 {
            Repr::Text(_) => raw.to_value(),
            Repr::Tree(value) => *value,
        }
    }
}

impl PartialEq for RawJson {
    /// Equal as `Value`s are (an object's key order does not count).
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Text(a), Repr::Text(b)) if a == b => true,
            _ => self.to_value() == other.to_value(),
        }
    }
}

impl PartialEq<Value> for RawJson {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_value(), f)
    }
}

impl fmt::Display for RawJson {
    /// The compact JSON text, as `Value`'s `Display` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Text(text) => f.write_str(text),
            Repr::Tree(value) => fmt::Display::fmt(value, f),
        }
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(RawJson::from)
    }
}

/// Whether `value` holds a number that is not an integer.
fn holds_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(holds_float),
        Value::Object(map) => map.values().any(holds_float),
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

/// How many keys of the objects open at once, and how many containers nested, the canonical
/// check follows (on the stack, with no allocation); a text that needs more is read as a
/// `Value` instead, which prints it the same way.
const MAX_OPEN_KEYS: usize = 32;
const MAX_DEPTH: usize = 16;

/// A frame of an open array (an object's frame is the index of its first key).
const ARRAY: u32 = u32::MAX;

/// Whether `text`, a valid JSON text, is exactly what serde_json prints for the `Value` it
/// parses to: no whitespace between tokens; strings escaped only as serde_json escapes
/// (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00xx` in lower case for the other
/// control characters); integers only, of at most 18 digits (so they fit both `i64` and
/// `u64`), never `-0`; no object with a key twice or with serde_json's raw-value key.
///
/// `false` also for a text nested deeper than `MAX_DEPTH` or with more than
/// `MAX_OPEN_KEYS` keys open at once: the caller then reads it as a `Value`.
pub(crate) fn is_canonical(text: &[u8]) -> bool {
    if u32::try_from(text.len()).is_err() {
        return false;
    }
    // The keys (start and end in `text`) of the objects open on the way down, each
    // object's from its frame on.
    let mut keys = [(0u32, 0u32); MAX_OPEN_KEYS];
    let mut key_count = 0usize;
    // Per open container: its first key's index in `keys` for an object, `ARRAY` for an
    // array.
    let mut frames = [ARRAY; MAX_DEPTH];
    let mut depth = 0usize;
    // Whether the next string is an object key.
    let mut expect_key = false;
    let mut at = 0usize;
    while let Some(&byte) = text.get(at) {
        at += 1;
        match byte {
            b'{' | b'[' => {
                let Some(frame) = frames.get_mut(depth) else {
                    return false;
                };
                expect_key = byte == b'{';
                *frame = if expect_key { key_count as u32 } else { ARRAY };
                depth += 1;
            }
            b'}' | b']' => {
                let Some(d) = depth.checked_sub(1) else {
                    return false;
                };
                depth = d;
                if frames[d] != ARRAY {
                    key_count = frames[d] as usize;
                }
                expect_key = false;
            }
            b',' => expect_key = depth > 0 && frames[depth - 1] != ARRAY,
            b':' => expect_key = false,
            b'"' => {
                let Some(end) = string_end(text, at) else {
                    return false;
                };
                if expect_key {
                    let key = &text[at..end];
                    let first = match depth.checked_sub(1).map(|d| frames[d]) {
                        Some(first) if first != ARRAY => first as usize,
                        _ => return false,
                    };
                    let seen = keys[first..key_count]
                        .iter()
                        .any(|&(s, e)| &text[s as usize..e as usize] == key);
                    if seen || key == RAW_VALUE_TOKEN || key_count == MAX_OPEN_KEYS {
                        return false;
                    }
                    keys[key_count] = (at as u32, end as u32);
                    key_count += 1;
                    expect_key = false;
                    // A key is followed by its colon, with no space between.
                    if text.get(end + 1) != Some(&b':') {
                        return false;
                    }
                    at = end + 2;
                    continue;
                }
                at = end + 1;
            }
            b'-' | b'0'..=b'9' => {
                let Some(end) = integer_end(text, at - 1) else {
                    return false;
                };
                at = end;
            }
            b't' | b'f' | b'n' => {
                while text.get(at).is_some_and(u8::is_ascii_lowercase) {
                    at += 1;
                }
            }
            // Whitespace between tokens, or anything unexpected.
            _ => return false,
        }
    }
    true
}

/// The end of the number starting at `start` (a `-` or a digit) when it is printed as
/// serde_json prints it: an integer of at most 18 digits, no fraction or exponent, never
/// `-0`; `None` otherwise.
#[inline]
fn integer_end(text: &[u8], start: usize) -> Option<usize> {
    let at = start + 1;
    let end = text[at..]
        .iter()
        .position(|b| !b.is_ascii_digit())
        .map_or(text.len(), |i| at + i);
    let number = &text[start..end];
    let digits = number.strip_prefix(b"-").unwrap_or(number);
    let fraction = matches!(text.get(end), Some(b'.' | b'e' | b'E'));
    let canonical = !fraction && digits.len() <= 18 && number != b"-0";
    canonical.then_some(end)
}

/// The index of the first `"` or `\\` in `bytes`: the first bytes are looked through eight
/// at a time in a word, the rest of a long string with `memchr`.
fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    const WORDS: usize = 4;
    // A byte of `word` equal to `b` sets that byte's high bit (and maybe ones above it,
    // never below: the lowest set bit is the first such byte).
    fn matches(word: u64, b: u8) -> u64 {
        let x = word ^ (ONES * u64::from(b));
        x.wrapping_sub(ONES) & !x & HIGH
    }
    let mut at = 0;
    for chunk in bytes.chunks_exact(8).take(WORDS) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let found = matches(word, b'"') | matches(word, b'\\');
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    let rest = &bytes[at..];
    if rest.len() < 8 {
        return rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\')
            .map(|i| at + i);
    }
    memchr::memchr2(b'"', b'\\', rest).map(|i| at + i)
}

/// The index of the quote closing the string whose contents start at `from`, when every
/// escape in it is one serde_json writes.
fn string_end(text: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let next = at + quote_or_backslash(text.get(at..)?)?;
        if text[next] == b'"' {
            return Some(next);
        }
        match text.get(next + 1)? {
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => at = next + 2,
            b'u' => {
                let hex = text.get(next + 2..next + 6)?;
                let lower = hex
                    .iter()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
                let code = std::str::from_utf8(hex)
                    .ok()
                    .and_then(|h| u32::from_str_radix(h, 16).ok())?;
                let short = matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
                if !lower || code >= 0x20 || short {
                    return None;
                }
                at = next + 6;
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// What the tree would print: the reference every text must equal.
    fn printed(text: &str) -> String {
        serde_json::from_str::<Value>(text)
            .expect("valid JSON")
            .to_string()
    }

    #[test]
    fn l1_canonical_texts_are_kept_and_read_back_equal() {
        for text in [
            r#"{"path":"src/a.rs","oldText":"fn a()\n{\"x\"}\t\\","n":-12,"m":[1,true,null,{}],"e":""}"#,
            r#"{"c":"\u0001\u001f","u":"é ✓ 𝄞","z":[]}"#,
            r#"[{"a":1},{"a":2}]"#,
            r#"{"long":"0123456789abcdefghij\"klmnopqrstuvwxyz0123456789\\tail\n","k":"0123456789abcdefghijklmnop"}"#,
            "null",
            "\"plain\"",
            "123456789012345678",
        ] {
            assert!(is_canonical(text.as_bytes()), "{text}");
            assert_eq!(printed(text), text);
            let raw = RawJson::from_json_text(text).expect("parses");
            assert_eq!(raw.as_text(), Some(text));
            assert_eq!(raw.to_value(), serde_json::from_str::<Value>(text).unwrap());
        }
    }

    #[test]
    fn l1_texts_serde_json_would_print_otherwise_are_read_as_values() {
        for text in [
            r#"{"a": 1}"#,
            r#"{"a" :1}"#,
            " 1",
            r#"{"a":1,"a":2}"#,
            r#"{"b":{"a":1},"a":{"a":2,"a":3}}"#,
            r#""\/""#,
            r#""\u0041""#,
            r#""\u000a""#,
            r#""\u001F""#,
            r#""0123456789abcdefghij\/""#,
            r#"{"0123456789abcdefghij":1,"0123456789abcdefghij":2}"#,
            "-0",
            "1234567890123456789",
            "1.5",
            "1e3",
            r#"{"$serde_json::private::RawValue":"1"}"#,
        ] {
            assert!(!is_canonical(text.as_bytes()), "{text}");
            let raw = RawJson::from_json_text(text).expect("parses");
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(raw.to_value(), value, "{text}");
            assert_eq!(raw.to_string(), value.to_string(), "{text}");
        }
        // Keys repeated only across sibling objects are fine.
        assert!(is_canonical(br#"[{"a":1},{"a":1,"b":{"a":1}}]"#));
    }

    #[test]
    fn l1_texts_wider_or_deeper_than_followed_are_read_as_values_printing_the_same() {
        let wide = format!(
            "{{{}}}",
            (0..MAX_OPEN_KEYS + 1)
                .map(|i| format!("\"k{i}\":{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        // Just within the limits, the text is kept as it is.
        let narrow = format!(
            "{{{}}}",
            (0..MAX_OPEN_KEYS)
                .map(|i| format!("\"k{i}\":{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let shallow = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        for (text, kept) in [
            (wide, false),
            (deep, false),
            (narrow, true),
            (shallow, true),
        ] {
            assert_eq!(is_canonical(text.as_bytes()), kept, "{text}");
            let raw = RawJson::from_json_text(&text).expect("parses");
            assert_eq!(raw.to_string(), text);
            assert_eq!(
                raw.to_value(),
                serde_json::from_str::<Value>(&text).unwrap()
            );
        }
        // Keys of closed objects no longer count towards the limit.
        let siblings = format!("[{}]", vec![narrow_object(); 3].join(","));
        assert!(is_canonical(siblings.as_bytes()));
    }

    fn narrow_object() -> String {
        format!(
            "{{{}}}",
            (0..MAX_OPEN_KEYS)
                .map(|i| format!("\"k{i}\":\"v\\n{i}\""))
                .collect::<Vec<_>>()
                .join(",")
        )
    }

    #[test]
    fn l1_the_first_quote_or_backslash_is_found_at_any_position() {
        for len in 0..80 {
            for (at, b) in (0..len).flat_map(|i| [(i, b'"'), (i, b'\\')]) {
                let mut bytes = vec![b'a'; len];
                bytes[at] = b;
                // A later match, and bytes that differ from the sought ones by one bit
                // or one step, never hide the first.
                if at + 2 < len {
                    bytes[at + 2] = b'"';
                }
                if at > 0 {
                    bytes[at - 1] = b'#';
                }
                assert_eq!(quote_or_backslash(&bytes), Some(at), "{len} {at}");
            }
            let plain: Vec<u8> = (0..len).map(|i| [b'#', b'!', 0xdc, b']'][i % 4]).collect();
            assert_eq!(quote_or_backslash(&plain), None, "{len}");
        }
    }

    #[test]
    fn l1_floats_are_kept_as_trees_and_compare_as_values() {
        let value = json!({"x": 0.1, "y": [1e300, -2.5]});
        let raw = RawJson::from(value.clone());
        assert_eq!(raw.as_text(), None);
        assert_eq!(raw.to_value(), value);
        assert_eq!(RawJson::from(json!({"a":1,"b":2})), json!({"b":2,"a":1}));
        assert!(RawJson::default().is_null());
        assert_eq!(
            format!("{:?}", RawJson::from(json!({"a":[1]}))),
            format!("{:?}", json!({"a":[1]}))
        );
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|n| json!(n)),
            "[a-c\"\\\\/\u{0}-\u{1f}é\u{7f}]{0,24}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[abc]{0,2}", inner), 0..4)
                    .prop_map(|pairs| { Value::Object(pairs.into_iter().collect()) }),
            ]
        })
    }

    proptest! {
        /// Whatever text a value is written as — compact, pretty, with repeated keys —
        /// the kept value prints and reads back as the tree does.
        #[test]
        fn l1_raw_json_equals_the_tree_of_any_text(value in arb_value(), dup in any::<bool>()) {
            let mut texts = vec![value.to_string(), serde_json::to_string_pretty(&value).unwrap()];
            if dup {
                if let Some(inner) = value.to_string().strip_prefix('{') {
                    if inner != "}" {
                        texts.push(format!("{{\"a\":7,{inner}"));
                        texts.push(format!("{{\"a\":7,\"a\":8,{inner}"));
                    }
                }
            }
            for text in texts {
                let tree: Value = serde_json::from_str(&text).unwrap();
                let raw = RawJson::from_json_text(&text).expect("parses");
                prop_assert_eq!(raw.to_string(), tree.to_string());
                prop_assert_eq!(raw.to_value(), tree.clone());
                if is_canonical(text.as_bytes()) {
                    prop_assert_eq!(printed(&text), text.clone());
                }
            }
        }
    }
}
