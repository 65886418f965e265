//! Argument plumbing shared by the workspace tools: parsing a model's JSON arguments into a
//! typed struct (serde errors become [`ToolError::InvalidArguments`] the model can act on),
//! generating the JSON Schema the model sees from the same struct, and the `paths` argument
//! that accepts one string or a list of strings.

use std::fmt;

use schemars::gen::SchemaSettings;
use schemars::schema::{InstanceType, Schema, SchemaObject, SubschemaValidation};
use schemars::JsonSchema;
use serde::de::{self, DeserializeOwned, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::model::ToolSchema;
use crate::tools::ToolError;

/// Parses `args` into `T`; any mismatch is an [`ToolError::InvalidArguments`] naming the tool
/// and what was wrong (missing field, wrong type, unknown field).
pub fn parse<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, ToolError> {
    if !args.is_object() {
        return Err(ToolError::InvalidArguments(format!(
            "{tool} takes a JSON object of arguments, got {}",
            crate::texts::json_kind(args)
        )));
    }
    T::deserialize(args).map_err(|e| ToolError::InvalidArguments(format!("{tool}: {e}")))
}

/// The schema the model sees for a tool whose arguments are `T`: a self-contained JSON Schema
/// object (no `$ref`s, no nullable types), with each field's doc comment as its description.
pub fn schema_of<T: JsonSchema>(name: &str, description: &str) -> ToolSchema {
    let generator = SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.option_add_null_type = false;
            s.option_nullable = false;
            s.meta_schema = None;
        })
        .into_generator();
    let root = generator.into_root_schema_for::<T>();
    let mut parameters = serde_json::to_value(&root.schema)
        .unwrap_or_else(|_| serde_json::json!({ "type": "object" }));
    if let Some(obj) = parameters.as_object_mut() {
        // The struct's own doc comment is for Rust readers; the tool description is separate.
        obj.remove("title");
        obj.remove("description");
    }
    ToolSchema {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    }
}

/// `true`: the serde default of flags that are on unless the model turns them off.
pub fn yes() -> bool {
    true
}

/// One path or pattern, or several: the model may pass `"src"` or `["src", "tests"]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PathList(pub Vec<String>);

impl PathList {
    /// The entries in the order given.
    pub fn items(&self) -> &[String] {
        &self.0
    }
}

impl<'de> Deserialize<'de> for PathList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PathListVisitor;

        impl<'de> Visitor<'de> for PathListVisitor {
            type Value = PathList;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of strings")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<PathList, E> {
                Ok(PathList(vec![v.to_string()]))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PathList, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    out.push(item);
                }
                Ok(PathList(out))
            }
        }

        deserializer.deserialize_any(PathListVisitor)
    }
}

impl JsonSchema for PathList {
    fn schema_name() -> String {
        "PathList".to_string()
    }

    fn json_schema(gen: &mut schemars::gen::SchemaGenerator) -> Schema {
        let one = SchemaObject {
            instance_type: Some(InstanceType::String.into()),
            ..Default::default()
        };
        let many = gen.subschema_for::<Vec<String>>();
        Schema::Object(SchemaObject {
            subschemas: Some(Box::new(SubschemaValidation {
                any_of: Some(vec![Schema::Object(one), many]),
                ..Default::default()
            })),
            ..Default::default()
        })
    }

    fn is_referenceable() -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Arguments of a test tool.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Demo {
        /// What to look at.
        path: String,
        /// Where else.
        paths: Option<PathList>,
        /// A flag.
        #[serde(default = "yes")]
        flag: bool,
    }

    #[test]
    fn t7_missing_wrong_and_unknown_fields_are_tool_errors() {
        let e = parse::<Demo>("demo", &json!({})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid arguments: demo: missing field `path`"
        );
        let e = parse::<Demo>("demo", &json!({"path": 5})).unwrap_err();
        assert!(e.to_string().contains("expected a string"), "{e}");
        let e = parse::<Demo>("demo", &json!({"path": "a", "offset": 3})).unwrap_err();
        assert!(e.to_string().contains("unknown field `offset`"), "{e}");
        let e = parse::<Demo>("demo", &json!("a")).unwrap_err();
        assert!(e.to_string().contains("JSON object"), "{e}");
    }

    #[test]
    fn t4_paths_accept_a_string_or_a_list() {
        let d: Demo = parse("demo", &json!({"path": "a", "paths": "src"})).unwrap();
        assert_eq!(d.path, "a");
        assert!(d.flag);
        assert_eq!(d.paths.unwrap().items(), ["src"]);
        let d: Demo = parse("demo", &json!({"path": "a", "paths": ["a", "b"]})).unwrap();
        assert_eq!(d.paths.unwrap().items(), ["a", "b"]);
        let e = parse::<Demo>("demo", &json!({"path": "a", "paths": 3})).unwrap_err();
        assert!(
            e.to_string().contains("a string or an array of strings"),
            "{e}"
        );
    }

    #[test]
    fn t1_schema_is_inline_with_field_descriptions() {
        let s = schema_of::<Demo>("demo", "A demo tool.");
        let p = &s.parameters;
        assert_eq!(p["type"], "object");
        assert_eq!(p["properties"]["path"]["description"], "What to look at.");
        assert_eq!(p["required"], json!(["path"]));
        assert_eq!(p["additionalProperties"], false);
        assert!(p["properties"]["paths"]["anyOf"].is_array());
        assert_eq!(p["properties"]["flag"]["default"], true);
        let text = p.to_string();
        assert!(!text.contains("$ref") && !text.contains("null"), "{text}");
    }
}
