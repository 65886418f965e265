//! A roster file's YAML as a [`Value`] tree, where a whole number too large for 64 bits is
//! a number like any other (RO5).
//!
//! `serde_norway`'s own `Value` refuses such a number while parsing (it hands a `u128` to a
//! visitor that takes none), so one `maxNotesPerUpdate: 99999999999999999999999` in one
//! entry would make the whole file "not valid YAML" and cost the healthy entries beside
//! it. Here it becomes a float (`1e23`), which the field's check then refuses for that
//! entry alone.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess};
use serde_norway::value::{Tag, TaggedValue};
use serde_norway::{Mapping, Value};

/// Parses `source` as one YAML document.
pub(crate) fn from_str(source: &str) -> Result<Value, serde_norway::Error> {
    serde_norway::from_str::<Lenient>(source).map(|tree| tree.0)
}

/// A [`Value`] built by [`LenientVisitor`].
struct Lenient(Value);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LenientVisitor).map(Lenient)
    }
}

/// Builds a [`Value`] as `serde_norway` does, taking 128-bit integers as floats.
struct LenientVisitor;

impl<'de> de::Visitor<'de> for LenientVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Number(i.into()))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        Ok(Value::Number(u.into()))
    }

    // Out of 64 bits: kept as the nearest float, a number all the same.
    #[allow(clippy::cast_precision_loss)]
    fn visit_u128<E>(self, u: u128) -> Result<Value, E> {
        Ok(Value::Number((u as f64).into()))
    }

    #[allow(clippy::cast_precision_loss)]
    fn visit_i128<E>(self, i: i128) -> Result<Value, E> {
        Ok(Value::Number((i as f64).into()))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Number(f.into()))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Lenient::deserialize(deserializer).map(|tree| tree.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut sequence = Vec::with_capacity(items.size_hint().unwrap_or(0).min(1024));
        while let Some(Lenient(item)) = items.next_element()? {
            sequence.push(item);
        }
        Ok(Value::Sequence(sequence))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Value, A::Error> {
        let mut mapping = Mapping::new();
        while let Some(Lenient(key)) = entries.next_key()? {
            if mapping.contains_key(&key) {
                let shown = serde_norway::to_string(&key).unwrap_or_default();
                return Err(de::Error::custom(format_args!(
                    "duplicate entry with key {}",
                    shown.trim_end()
                )));
            }
            let Lenient(value) = entries.next_value()?;
            mapping.insert(key, value);
        }
        Ok(Value::Mapping(mapping))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (tag, contents) = data.variant::<String>()?;
        let Lenient(value) = contents.newtype_variant()?;
        Ok(Value::Tagged(Box::new(TaggedValue {
            tag: Tag::new(tag),
            value,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ro5_the_tree_is_serde_norways_but_for_huge_integers() {
        let text = "a: [1, -2, 2.5, true, ~, text, !tag x]\nb: {c: d}\n";
        assert_eq!(
            from_str(text).unwrap(),
            serde_norway::from_str::<Value>(text).unwrap()
        );
        assert!(serde_norway::from_str::<Value>("n: 99999999999999999999999\n").is_err());
        let tree = from_str("n: 99999999999999999999999\nm: -99999999999999999999999\n").unwrap();
        assert_eq!(tree["n"].as_f64(), Some(1e23));
        assert_eq!(tree["m"].as_f64(), Some(-1e23));
        assert!(from_str("a: 1\na: 2\n")
            .unwrap_err()
            .to_string()
            .contains("duplicate entry with key a"));
    }
}
