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

/// A JSON value kept as its compact text (see the [module documentation](self)).
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

/// Whether `text`, a valid JSON text, is exactly what serde_json prints for the `Value` it
/// parses to: no whitespace between tokens; strings escaped only as serde_json escapes
/// (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00xx` in lower case for the other
/// control characters); integers only, of at most 18 digits (so they fit both `i64` and
/// `u64`), never `-0`; no object with a key twice or with serde_json's raw-value key.
pub(crate) fn is_canonical(text: &[u8]) -> bool {
    // Keys of the objects open on the way down, each object's from its `frames` entry on.
    let mut keys: Vec<&[u8]> = Vec::new();
    // Per open container: `Some(first key index)` for an object, `None` for an array.
    let mut frames: Vec<Option<usize>> = Vec::new();
    let mut at = 0usize;
    // Whether the next string is an object key.
    let mut expect_key = false;
    while at < text.len() {
        match text[at] {
            b'{' => {
                frames.push(Some(keys.len()));
                expect_key = true;
                at += 1;
            }
            b'[' => {
                frames.push(None);
                expect_key = false;
                at += 1;
            }
            b'}' | b']' => {
                if let Some(Some(start)) = frames.pop() {
                    keys.truncate(start);
                }
                expect_key = false;
                at += 1;
            }
            b',' => {
                expect_key = matches!(frames.last(), Some(Some(_)));
                at += 1;
            }
            b':' => {
                expect_key = false;
                at += 1;
            }
            b'"' => {
                let Some(end) = string_end(text, at + 1) else {
                    return false;
                };
                if expect_key {
                    let key = &text[at + 1..end];
                    let start = frames.last().copied().flatten().unwrap_or(0);
                    if key == RAW_VALUE_TOKEN || keys[start..].contains(&key) {
                        return false;
                    }
                    keys.push(key);
                    expect_key = false;
                }
                at = end + 1;
            }
            b'-' | b'0'..=b'9' => {
                let end = text[at..]
                    .iter()
                    .position(|b| !matches!(b, b'-' | b'0'..=b'9'))
                    .map_or(text.len(), |i| at + i);
                let number = &text[at..end];
                let digits = number.strip_prefix(b"-").unwrap_or(number);
                let fraction = matches!(text.get(end), Some(b'.' | b'e' | b'E'));
                if fraction || digits.len() > 18 || number == b"-0" {
                    return false;
                }
                at = end;
            }
            b't' | b'f' | b'n' => {
                while at < text.len() && text[at].is_ascii_lowercase() {
                    at += 1;
                }
            }
            // Whitespace between tokens, or anything unexpected.
            _ => return false,
        }
    }
    true
}

/// The index of the quote closing the string whose contents start at `from`, when every
/// escape in it is one serde_json writes.
fn string_end(text: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let next = at
            + text
                .get(at..)?
                .iter()
                .position(|b| matches!(b, b'"' | b'\\'))?;
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
            " 1",
            r#"{"a":1,"a":2}"#,
            r#"{"b":{"a":1},"a":{"a":2,"a":3}}"#,
            r#""\/""#,
            r#""\u0041""#,
            r#""\u000a""#,
            r#""\u001F""#,
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
            "[a-c\"\\\\/\u{0}-\u{1f}é\u{7f}]{0,6}".prop_map(Value::String),
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
